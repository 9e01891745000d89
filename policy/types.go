package policy

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-gate/mcp-gate/naming"
)

// Verdict is what the policy says about a call. The numeric order is the
// order of restriction: a larger Verdict is more restrictive, and the most
// restrictive matching rule wins.
type Verdict uint8

const (
	// Allow lets the call through.
	Allow Verdict = iota
	// Ask sends the call to a human for approval.
	Ask
	// Deny refuses the call; the upstream never sees it.
	Deny
)

// String returns "allow", "ask" or "deny".
func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// ParseVerdict is the inverse of [Verdict.String].
func ParseVerdict(s string) (Verdict, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "ask":
		return Ask, nil
	case "deny":
		return Deny, nil
	}
	return 0, fmt.Errorf("verdict %q: expected allow, ask or deny", s)
}

// Kind is the namespace of a call's policy name.
type Kind uint8

const (
	// KindTool is a tool call, named mcp:<server>:<tool>.
	KindTool Kind = iota
	// KindPrompt is a prompt, named prompt:<server>:<prompt name>.
	KindPrompt
	// KindResource is a resource, named resource:<server>:<uri>.
	KindResource
	// KindSampling is an upstream's sampling request, named sampling:<server>.
	KindSampling

	numKinds = 4
)

// namespaces maps a Kind to the first segment of its policy names.
var namespaces = [numKinds]string{"mcp", "prompt", "resource", "sampling"}

// String returns the namespace of the kind: "mcp", "prompt", "resource" or
// "sampling".
func (k Kind) String() string {
	if k < numKinds {
		return namespaces[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Call is what the policy decides about.
type Call struct {
	Kind   Kind
	Server string
	// Name is the tool name, prompt name or resource URI, as the upstream
	// spells it; empty for sampling.
	Name string
	// Args is the raw JSON arguments object as received; nil, empty and
	// JSON null all mean "no arguments". It is decoded only when a rule with
	// a condition matches the call's name.
	Args json.RawMessage
	// User is who the call is made for, as conditions read it (user.sub,
	// user.email, user.groups).
	User User
}

// User is who a call is made for: the subject, email and groups of an HTTP
// session's token; in stdio mode the OS user (sub "uid:N"), with no email
// and no groups. Conditions read it as user.sub, user.email and
// user.groups; a typo in a field name is a load error.
type User struct {
	Sub    string   `cel:"sub"`
	Email  string   `cel:"email"`
	Groups []string `cel:"groups"`
}

// PolicyName returns the name the policy's globs match, such as
// mcp:github:create_issue or sampling:github. The glob meta characters of
// the server and the name are escaped with a backslash (a colon in the
// server too; see naming.SplitPolicyName), so the printed name, read as a
// glob, matches exactly this call, and [ParseName] reads it back.
func (c Call) PolicyName() string {
	return naming.FormatPolicyName(c.Kind.String(), c.Server, c.Name)
}

// ParseName splits a policy name (mcp:s:t, prompt:s:p, resource:s:uri or
// sampling:s) into a Call without arguments. The server is the segment up to
// the next unescaped colon; the rest, colons included, is the name, since
// tool names may hold colons and URIs carry colons of their own. Backslash
// escapes, as PolicyName writes them, are removed.
func ParseName(name string) (Call, error) {
	ns, server, item, hasItem, err := naming.SplitPolicyName(name)
	if err != nil {
		return Call{}, fmt.Errorf("%w; expected mcp:<server>:<tool>, prompt:<server>:<name>, resource:<server>:<uri> or sampling:<server>", err)
	}
	kind := Kind(numKinds)
	for k, s := range namespaces {
		if s == ns {
			kind = Kind(k)
		}
	}
	switch kind {
	case numKinds:
		return Call{}, fmt.Errorf("policy name %q starts with %q; expected one of the namespaces mcp, prompt, resource or sampling", name, ns)
	case KindSampling:
		if server == "" || hasItem {
			return Call{}, fmt.Errorf("policy name %q: expected sampling:<server> with a non-empty server and no name", name)
		}
		return Call{Kind: KindSampling, Server: server}, nil
	}
	if !hasItem || server == "" || item == "" {
		return Call{}, fmt.Errorf("policy name %q: expected %s:<server>:<name> with a non-empty server and name", name, ns)
	}
	return Call{Kind: kind, Server: server, Name: item}, nil
}

// Decision is the policy's answer about one call, with what an audit line
// and a refusal message need.
type Decision struct {
	Verdict Verdict
	// Rule names the rule that decided: "deny[0]", "allow[3]" and so on for
	// the lists, a rule's name (or "rules[i]"), "fallback" when no rule
	// matched a tool call, or "default" when no rule matched a prompt, a
	// resource or a sampling request.
	Rule string
	// Reason is the rule's own reason when it has one, else a generated one
	// such as "denied by deny[0] (mcp:github:delete_*)".
	Reason string
	// Revision identifies the snapshot that decided, "sha256:" and the first
	// 12 hex digits of the file's bytes.
	Revision string
}
