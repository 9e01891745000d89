package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gobwas/glob"
)

// The property test writes random policies as YAML text, parses them with
// the real parser, and checks every decision against refDecide: a linear
// scan over the rules in file order with the generator's own parts of each
// glob compiled afresh (namespace, server segment, name part, so that the
// reference never splits a glob or a name itself), and conditions evaluated
// in Go.

type refCond struct {
	text string
	// eval returns the condition's value or an error for decoded args (nil
	// when the args are not an object).
	eval func(args map[string]any, server, tool string) (bool, bool)
}

var refConds = []refCond{
	{`args.n > 5`, func(a map[string]any, _, _ string) (bool, bool) {
		switch n := a["n"].(type) {
		case float64:
			return n > 5, true
		}
		return false, false
	}},
	{`has(args.n)`, func(a map[string]any, _, _ string) (bool, bool) {
		_, ok := a["n"]
		return ok, true
	}},
	{`args.s == "x"`, func(a map[string]any, _, _ string) (bool, bool) {
		s, ok := a["s"]
		if !ok {
			return false, false
		}
		return s == "x", true
	}},
	{`server == "a"`, func(_ map[string]any, server, _ string) (bool, bool) { return server == "a", true }},
	{`tool.startsWith("get")`, func(_ map[string]any, _, tool string) (bool, bool) { return strings.HasPrefix(tool, "get"), true }},
}

type refRule struct {
	name   string
	action Verdict
	pats   []refPat
	cond   *refCond
}

// refPat is a generated glob with the parts it was written from; ns is
// empty for `**`, and item is "**" for ns:**.
type refPat struct {
	text, ns, server, item string
}

// match is the reference meaning of a glob: the namespace, the server
// segment against the server, the name part against the name whole.
func (p refPat) match(c Call) bool {
	if p.ns == "" {
		return true
	}
	if p.ns != c.Kind.String() {
		return false
	}
	if p.server != "**" && !glob.MustCompile(p.server).Match(c.Server) {
		return false
	}
	return c.Kind == KindSampling || p.item == "**" || glob.MustCompile(p.item).Match(c.Name)
}

type refPolicy struct {
	fallback Verdict
	rules    []refRule // in file order
}

var (
	propServers = []string{"a", "b", "gh", "a-b", "*", "?", "g*", "{a,b}", "**", "[ab]", "*-b", "a\\:b", "a?b"}
	propItems   = []string{"get", "get_*", "*", "**", "x:y", "x:*", "?et", "{get,delete}", "[gd]*", "*e*", "delete", "?", "a\\*", "*:y", "x?y", "x:??"}
	propCallSrv = []string{"a", "b", "gh", "a-b", "zz", "a:b", "", "x:y", "axb"}
	propCallTl  = []string{"get", "get_me", "delete", "x:y", "x:z", "", "a*", "set", "zz", "x:y:z", "get:x", "a:b"}
	propArgs    = []string{"", "{}", `{"n":3}`, `{"n":9}`, `{"s":"x"}`, `{"n":9,"s":"y"}`, `[1]`, `{"n":"str"}`, "null", `{"n":1,"n":2}`}
)

func genPattern(r *rand.Rand, restricted bool) refPat {
	if r.IntN(25) == 0 {
		return refPat{text: "**"}
	}
	ns := []string{"mcp", "mcp", "mcp", "sampling", "prompt", "resource"}
	if restricted {
		ns = ns[:4]
	}
	n := ns[r.IntN(len(ns))]
	server := propServers[r.IntN(len(propServers))]
	if n == "sampling" {
		return refPat{"sampling:" + server, n, server, ""}
	}
	if r.IntN(15) == 0 {
		return refPat{n + ":**", n, "**", "**"}
	}
	item := propItems[r.IntN(len(propItems))]
	return refPat{n + ":" + server + ":" + item, n, server, item}
}

// genPolicy returns a random policy as YAML and as the reference sees it.
func genPolicy(r *rand.Rand) (string, refPolicy) {
	var ref refPolicy
	ref.fallback = []Verdict{Ask, Deny}[r.IntN(2)]
	type section struct {
		text  string
		rules []refRule
	}
	var sections []section
	for _, l := range []struct {
		key string
		v   Verdict
	}{{"deny", Deny}, {"ask", Ask}, {"allow", Allow}} {
		n := r.IntN(5)
		if n == 0 {
			continue
		}
		var s section
		s.text = l.key + ":\n"
		for i := range n {
			p := genPattern(r, l.v == Ask)
			s.text += fmt.Sprintf("  - %q\n", p.text)
			s.rules = append(s.rules, refRule{name: fmt.Sprintf("%s[%d]", l.key, i), action: l.v, pats: []refPat{p}})
		}
		sections = append(sections, s)
	}
	if n := r.IntN(5); n > 0 {
		var s section
		s.text = "rules:\n"
		for i := range n {
			rr := refRule{name: fmt.Sprintf("rules[%d]", i), action: Verdict(r.IntN(3))}
			if r.IntN(2) == 0 {
				rr.name = fmt.Sprintf("r%d", i)
				s.text += fmt.Sprintf("  - name: %s\n    ", rr.name)
			} else {
				s.text += "  - "
			}
			if r.IntN(2) == 0 {
				rr.cond = &refConds[r.IntN(len(refConds))]
			}
			restricted := rr.action == Ask || rr.cond != nil
			s.text += "match:\n"
			for range 1 + r.IntN(3) {
				p := genPattern(r, restricted)
				rr.pats = append(rr.pats, p)
				s.text += fmt.Sprintf("      - %q\n", p.text)
			}
			if rr.cond != nil {
				s.text += fmt.Sprintf("    when: %q\n", rr.cond.text)
			}
			s.text += fmt.Sprintf("    action: %s\n", rr.action)
			s.rules = append(s.rules, rr)
		}
		sections = append(sections, s)
	}
	r.Shuffle(len(sections), func(i, j int) { sections[i], sections[j] = sections[j], sections[i] })
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nfallback: %s\n", ref.fallback)
	for _, s := range sections {
		b.WriteString(s.text)
		ref.rules = append(ref.rules, s.rules...)
	}
	return b.String(), ref
}

// refArgs decodes arguments the way the reference understands them: an
// object without duplicate keys, else nil (an error for every condition).
func refArgs(raw string) map[string]any {
	switch raw {
	case "", "null":
		return map[string]any{}
	case `{"n":1,"n":2}`:
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	return m
}

func refDecide(ref refPolicy, c Call, args string) (Verdict, string) {
	matches := func(rr refRule) bool {
		for _, p := range rr.pats {
			if p.match(c) {
				return true
			}
		}
		return false
	}
	if c.Kind == KindPrompt || c.Kind == KindResource {
		for _, rr := range ref.rules {
			if rr.action == Deny && rr.cond == nil && matches(rr) {
				return Deny, rr.name
			}
		}
		return Allow, "default"
	}
	decoded := refArgs(args)
	best := -1
	var bestRule string
	for _, rr := range ref.rules {
		if !matches(rr) {
			continue
		}
		holds := true
		if rr.cond != nil {
			v, ok := false, false
			if decoded != nil {
				v, ok = rr.cond.eval(decoded, c.Server, c.Name)
			}
			holds = (ok && v) || (!ok && rr.action != Allow)
		}
		if holds && int(rr.action) > best {
			best, bestRule = int(rr.action), rr.name
		}
	}
	if best >= 0 {
		return Verdict(best), bestRule
	}
	if c.Kind == KindSampling {
		return Deny, "default"
	}
	return ref.fallback, "fallback"
}

// unmerged rebuilds a policy's index as if it were too large to merge.
func unmerged(p *Policy) *Policy {
	q := &Policy{source: p.source, revision: p.revision, fallback: p.fallback, timeout: p.timeout, rules: p.rules}
	q.build(0)
	return q
}

func TestPropertyAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	policies, decisions := 1500, 0
	if testing.Short() {
		policies = 200
	}
	for range policies {
		src, ref := genPolicy(r)
		p, _, err := Parse("random.yaml", []byte(src), Options{})
		if err != nil {
			t.Fatalf("a generated policy does not parse:\n%v\n%s", err, src)
		}
		// Half the time, index without merging the patterns over several
		// servers into the buckets, as a very large policy is.
		if r.IntN(2) == 0 {
			p = unmerged(p)
		}
		for range 60 {
			c := Call{Kind: Kind(r.IntN(int(numKinds))), Server: propCallSrv[r.IntN(len(propCallSrv))]}
			if c.Kind != KindSampling {
				c.Name = propCallTl[r.IntN(len(propCallTl))]
			}
			args := propArgs[r.IntN(len(propArgs))]
			if args != "" {
				c.Args = json.RawMessage(args)
			}
			decisions++
			wantV, wantRule := refDecide(ref, c, args)
			d := p.Decide(c)
			if d.Verdict != wantV || d.Rule != wantRule {
				t.Fatalf("%s args %s -> %s by %s (%s); the reference says %s by %s\npolicy:\n%s", c.PolicyName(), args, d.Verdict, d.Rule, d.Reason, wantV, wantRule, src)
			}
			hidden := p.Hidden(c.Kind, c.Server, c.Name)
			wantHidden := false
			for _, rr := range ref.rules {
				if rr.action == Deny && rr.cond == nil {
					for _, pat := range rr.pats {
						if pat.match(c) {
							wantHidden = true
						}
					}
				}
			}
			if hidden != wantHidden {
				t.Fatalf("Hidden(%s) = %v; the reference says %v\npolicy:\n%s", c.PolicyName(), hidden, wantHidden, src)
			}
		}
	}
	t.Logf("%d policies, %d decisions agree with the reference", policies, decisions)
}
