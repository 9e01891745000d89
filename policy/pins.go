package policy

import (
	"regexp"
	"sync"

	"go.yaml.in/yaml/v3"
)

// pinPolicy is the pins: section: what a call to a tool, prompt or
// resource template gets when its definition differs from the one pinned
// (package pins). Absent, every server asks.
//
//	pins:
//	  default: ask          # ask | deny | allow
//	  servers:
//	    github: deny        # per server key
type pinPolicy struct {
	set     bool // the section is present
	def     Verdict
	servers map[string]Verdict
}

// PinAction is what a call to a changed definition of server gets: Ask (the
// human sees what changed and decides; the default), Deny (refused until
// the change is accepted with `mcp-gate pins accept`) or Allow (the change
// is pinned and the call goes on to the policy, with an audit line).
func (p *Policy) PinAction(server string) Verdict {
	if v, ok := p.pins.servers[server]; ok {
		return v
	}
	if p.pins.set {
		return p.pins.def
	}
	return Ask
}

// PinsSet reports whether the policy has a pins: section.
func (p *Policy) PinsSet() bool { return p.pins.set }

// pinServerKey is compiled on first need, a policy with a pins: section.
var pinServerKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })

func (pr *parser) pinsSection(n *yaml.Node) pinPolicy {
	ps := pr.ps
	out := pinPolicy{def: Ask, set: true}
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "pins is %s; expected a mapping such as {default: ask, servers: {github: deny}}", describe(n))
		return out
	}
	action := func(v *yaml.Node, what string) (Verdict, bool) {
		s, ok := str(ps, v, what)
		if !ok {
			return Ask, false
		}
		switch s {
		case "ask":
			return Ask, true
		case "deny":
			return Deny, true
		case "allow":
			return Allow, true
		}
		ps.errorf(v.Line, v.Column, "%s is %q; expected ask, deny or allow (what a call to a tool whose definition changed since it was pinned gets)", what, s)
		return Ask, false
	}
	fs := fields(ps, n, "pins", "default", "servers")
	if f, ok := fs["default"]; ok {
		if v, ok := action(f.value, "pins.default"); ok {
			out.def = v
		}
	}
	if f, ok := fs["servers"]; ok {
		m := f.value
		if m.Kind != yaml.MappingNode {
			ps.errorf(m.Line, m.Column, "pins.servers is %s; expected a mapping of server keys to ask, deny or allow", describe(m))
			return out
		}
		out.servers = map[string]Verdict{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind != yaml.ScalarNode || !pinServerKey().MatchString(k.Value) {
				ps.errorf(k.Line, k.Column, "pins.servers has the key %q; expected a server key (lower-case letters, digits and -)", k.Value)
				continue
			}
			if _, dup := out.servers[k.Value]; dup {
				ps.errorf(k.Line, k.Column, "pins.servers names %q twice", k.Value)
				continue
			}
			if pr.known != nil && !pr.known[k.Value] {
				ps.warnf(k.Line, k.Column, "pins.servers names the server %q, which the servers file does not list%s", k.Value, nearestHint(k.Value, pr.opts.KnownServers))
			}
			if a, ok := action(v, "pins.servers."+k.Value); ok {
				out.servers[k.Value] = a
			}
		}
	}
	return out
}
