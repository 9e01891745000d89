package policy

// RuleReason returns the reason the policy file gives for the rule named
// name (its reason: field), or "" when the rule has none or there is no such
// rule. Unlike Decision.Reason, it is text the policy's authors wrote and
// nothing else: never a pattern generated from a call, an argument value or
// a condition's error, so it is safe to show a human as the gate's own word
// (the approval question's "why" line).
func (p *Policy) RuleReason(name string) string {
	for _, r := range p.rules {
		if r.name == name {
			return r.reason
		}
	}
	return ""
}
