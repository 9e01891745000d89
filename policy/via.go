package policy

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The approval channels a policy can name in via (docs/approvals.md).
const (
	// ViaElicitation asks the person at the host through an MCP form
	// elicitation; it is available only where the host declared one.
	ViaElicitation = "elicitation"
	// ViaLocal asks on the gate's local approval surface (mcp-gate
	// approvals, its watch and its web page).
	ViaLocal = "local"
)

// DefaultVia is the channel order when the policy names none: the host's
// own dialog where it can ask, else the local surface.
var DefaultVia = []string{ViaElicitation, ViaLocal}

// ApprovalVia returns the channels, in order of preference, through which
// the ask of rule should reach a human when the host introduced itself as
// client (its clientInfo name). A rule's own via wins over the host's
// entry in approval.hosts, which wins over approval.via, which wins over
// DefaultVia. The slice is the policy's own: callers must not change it.
func (p *Policy) ApprovalVia(rule, client string) []string {
	for _, r := range p.rules {
		if r.name == rule && r.via != nil {
			return r.via
		}
	}
	if v, ok := p.hostVia[client]; ok && client != "" {
		return v
	}
	if p.via != nil {
		return p.via
	}
	return DefaultVia
}

// ViaNamed reports whether the policy itself names the channels of rule's
// asks for client (the rule's via, the host's entry in approval.hosts, or
// approval.via), rather than leaving them to DefaultVia. A team gate sends
// its users' questions to the local surface only where the policy names
// it (proxy, teamApprover).
func (p *Policy) ViaNamed(rule, client string) bool {
	for _, r := range p.rules {
		if r.name == rule && r.via != nil {
			return true
		}
	}
	if _, ok := p.hostVia[client]; ok && client != "" {
		return true
	}
	return p.via != nil
}

// approvalChannels reads approval.via and approval.hosts.
func (pr *parser) approvalChannels(fs map[string]field, pol *Policy) {
	ps := pr.ps
	if f, ok := fs["via"]; ok {
		pol.via = pr.via(f.value, "approval.via")
	}
	f, ok := fs["hosts"]
	if !ok {
		return
	}
	n := f.value
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "approval.hosts is %s; expected a mapping from a host's clientInfo name to its channels, such as {codex-mcp-client: {via: [local]}}", describe(n))
		return
	}
	pol.hostVia = map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name, ok := str(ps, k, "a key of approval.hosts")
		if !ok {
			continue
		}
		where := "approval.hosts." + name
		if strings.TrimSpace(name) == "" {
			ps.errorf(k.Line, k.Column, "approval.hosts has an empty host name; expected a host's clientInfo name, such as codex-mcp-client")
			continue
		}
		if _, dup := pol.hostVia[name]; dup {
			ps.errorf(k.Line, k.Column, "approval.hosts names %q twice; expected each host once", name)
			continue
		}
		if v.Kind != yaml.MappingNode {
			ps.errorf(v.Line, v.Column, "%s is %s; expected a mapping such as {via: [local]}", where, describe(v))
			continue
		}
		hf := fields(ps, v, where, "via")
		vf, ok := hf["via"]
		if !ok {
			ps.errorf(v.Line, v.Column, "%s has no via; expected {via: [local]} or another list of channels", where)
			continue
		}
		if via := pr.via(vf.value, where+".via"); via != nil {
			pol.hostVia[name] = via
		}
	}
}

// via reads one list of channels: elicitation and local, each at most
// once, at least one. It returns nil after reporting a problem.
func (pr *parser) via(n *yaml.Node, what string) []string {
	ps := pr.ps
	if n.Kind != yaml.SequenceNode {
		ps.errorf(n.Line, n.Column, "%s is %s; expected a list of channels such as [elicitation, local]", what, describe(n))
		return nil
	}
	if len(n.Content) == 0 {
		ps.errorf(n.Line, n.Column, "%s is empty; expected at least one of elicitation, local (to refuse without asking, write a deny rule)", what)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	bad := false
	for _, it := range n.Content {
		s, ok := str(ps, it, what+" entry")
		if !ok {
			bad = true
			continue
		}
		switch s {
		case ViaElicitation, ViaLocal:
		default:
			ps.errorf(it.Line, it.Column, "%s names the channel %q; expected elicitation or local", what, s)
			bad = true
			continue
		}
		if slices.Contains(out, s) {
			ps.errorf(it.Line, it.Column, "%s names %q twice; expected each channel once", what, s)
			bad = true
			continue
		}
		out = append(out, s)
	}
	if bad {
		return nil
	}
	return out
}
