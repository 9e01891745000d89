package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, _, err := Parse("p.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatalf("parse:\n%v\nsource:\n%s", err, src)
	}
	return p
}

func tool(server, name, args string) Call {
	c := Call{Kind: KindTool, Server: server, Name: name}
	if args != "" {
		c.Args = json.RawMessage(args)
	}
	return c
}

// permutations returns every order of the items.
func permutations[T any](items []T) [][]T {
	if len(items) <= 1 {
		return [][]T{append([]T(nil), items...)}
	}
	var out [][]T
	for i := range items {
		rest := make([]T, 0, len(items)-1)
		rest = append(rest, items[:i]...)
		rest = append(rest, items[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]T{items[i]}, p...))
		}
	}
	return out
}

// TestPrecedenceOrderIndependence renders the same rules in every order of
// the sections and of the lines within them, and checks that every call gets
// the same verdict, decided by a rule of that verdict's level.
func TestPrecedenceOrderIndependence(t *testing.T) {
	deny := []string{"mcp:github:delete_*"}
	ask := []string{"mcp:github:*_issue", "mcp:github:delete_draft"}
	allow := []string{"mcp:github:*", `"**"`}
	rules := []string{
		"  - {name: r-allow, match: mcp:github:delete_*, action: allow}\n",
		"  - {name: r-deny-cond, match: mcp:github:create_issue, when: args.x == 1, action: deny}\n",
		"  - {name: r-ask, match: \"mcp:payments:*\", action: ask}\n",
	}
	calls := []struct {
		call Call
		want Verdict
		rule string // the deciding rule, or its prefix for list entries whose index moves
	}{
		{tool("github", "delete_repo", ""), Deny, "deny["},
		{tool("github", "delete_draft", ""), Deny, "deny["},
		{tool("github", "create_issue", `{"x":1}`), Deny, "r-deny-cond"},
		{tool("github", "create_issue", `{"x":2}`), Ask, "ask["},
		{tool("github", "create_issue", `{}`), Deny, "r-deny-cond"}, // fails closed
		{tool("github", "get_me", ""), Allow, "allow["},
		{tool("payments", "send", ""), Ask, "r-ask"},
		{tool("other", "x", ""), Allow, "allow["},
		{Call{Kind: KindSampling, Server: "x"}, Allow, "allow["},
	}
	list := func(key string, items []string) string {
		var b strings.Builder
		b.WriteString(key + ":\n")
		for _, it := range items {
			b.WriteString("  - " + it + "\n")
		}
		return b.String()
	}
	n := 0
	for _, ao := range permutations(ask) {
		for _, lo := range permutations(allow) {
			for _, ro := range permutations(rules) {
				sections := []string{list("deny", deny), list("ask", ao), list("allow", lo), "rules:\n" + strings.Join(ro, "")}
				for _, so := range permutations(sections) {
					src := "version: 1\nfallback: deny\n" + strings.Join(so, "")
					p := mustParse(t, src)
					n++
					for _, c := range calls {
						d := p.Decide(c.call)
						if d.Verdict != c.want || !strings.HasPrefix(d.Rule, c.rule) {
							t.Fatalf("%s -> %s by %s; want %s by %s*\npolicy:\n%s", c.call.PolicyName(), d.Verdict, d.Rule, c.want, c.rule, src)
						}
					}
				}
			}
		}
	}
	if n != 2*2*6*24 {
		t.Fatalf("rendered %d orders; want %d", n, 2*2*6*24)
	}
}

// TestFirstRuleOfTheLevelExplains: among several matches of the winning
// level, the decision names the one that stands first in the file, whichever
// index list it sits in.
func TestFirstRuleOfTheLevelExplains(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: ask
rules:
  - {name: wild-server, match: "mcp:*:x", action: deny}
  - {name: exact, match: mcp:s:x, action: deny}
  - {name: name-glob, match: "mcp:s:*", action: deny}
  - {name: whole, match: "mcp:**", action: deny}
`)
	if d := p.Decide(tool("s", "x", "")); d.Rule != "wild-server" {
		t.Errorf("rule %s; want wild-server, the first in the file", d.Rule)
	}
	p = mustParse(t, `version: 1
fallback: ask
rules:
  - {name: whole, match: "mcp:**", action: deny}
  - {name: name-glob, match: "mcp:s:*", action: deny}
  - {name: exact, match: mcp:s:x, action: deny}
`)
	if d := p.Decide(tool("s", "x", "")); d.Rule != "whole" {
		t.Errorf("rule %s; want whole, the first in the file", d.Rule)
	}
}

func TestFailClosed(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: ask
rules:
  - name: deny-if
    match: mcp:s:deny
    when: args.n > 1
    action: deny
  - name: ask-if
    match: mcp:s:ask
    when: args.n > 1
    action: ask
  - name: allow-if
    match: [mcp:s:allow, mcp:s:deny, mcp:s:ask]
    when: args.n > 1
    action: allow
  - name: cost
    match: mcp:s:cost
    when: args.items.all(x, args.items.all(y, x + y >= 0))
    action: deny
  - name: cost-allow
    match: mcp:s:costly-allow
    when: args.items.all(x, args.items.all(y, x + y >= 0))
    action: allow
`)
	var big strings.Builder
	big.WriteString(`{"items":[`)
	for i := range 3000 {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprint(&big, i)
	}
	big.WriteString("]}")
	tests := []struct {
		call   Call
		want   Verdict
		rule   string
		reason string
	}{
		{tool("s", "deny", `{"n":2}`), Deny, "deny-if", "because its condition holds"},
		{tool("s", "deny", `{"n":0}`), Ask, "fallback", ""},
		{tool("s", "deny", `{}`), Deny, "deny-if", "its condition failed (no such key: \"n\")"},
		{tool("s", "deny", `{"n":"x"}`), Deny, "deny-if", "its condition failed"},
		{tool("s", "deny", `[1]`), Deny, "deny-if", "not a JSON object"},
		{tool("s", "deny", `"str"`), Deny, "deny-if", "not a JSON object"},
		{tool("s", "deny", `{"n":2} {}`), Deny, "deny-if", "data after the object"},
		{tool("s", "deny", `{"n":1e999}`), Deny, "deny-if", "out of range"},
		{tool("s", "ask", `{}`), Ask, "ask-if", "a failed condition counts as true for ask rules"},
		{tool("s", "allow", `{}`), Ask, "fallback", "the condition of the allow rule allow-if failed"},
		{tool("s", "allow", `{"n":5}`), Allow, "allow-if", ""},
		{tool("s", "allow", `{"n":18446744073709551615}`), Allow, "allow-if", ""},
		{tool("s", "allow", strings.Repeat("[", 600)), Ask, "fallback", "not a JSON object"},
		{tool("s", "allow", `{"a":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`,"n":5}`), Ask, "fallback", "nest deeper"},
		{tool("s", "cost", big.String()), Deny, "cost", "exceeded the cost limit"},
		{tool("s", "costly-allow", big.String()), Ask, "fallback", "exceeded the cost limit"},
		{tool("s", "cost", `{"items":[1,2]}`), Deny, "cost", "condition holds"},
	}
	for _, tt := range tests {
		d := p.Decide(tt.call)
		if d.Verdict != tt.want || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) {
			t.Errorf("%s %.40s -> %s by %s (%s); want %s by %s with %q", tt.call.PolicyName(), tt.call.Args, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule, tt.reason)
		}
	}
}

func TestHidden(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: ask
deny: [mcp:github:delete_*, prompt:github:secret, "resource:fs:file:///etc/**", "sampling:bad"]
ask: [mcp:github:create_*]
rules:
  - {match: mcp:github:push, when: args.force == true, action: deny}
`)
	tests := []struct {
		kind         Kind
		server, name string
		want         bool
	}{
		{KindTool, "github", "delete_repo", true},
		{KindTool, "github", "create_issue", false}, // ask is not hidden
		{KindTool, "github", "push", false},         // a conditional deny is not hidden
		{KindTool, "github", "get_me", false},
		{KindPrompt, "github", "secret", true},
		{KindPrompt, "github", "delete_repo", false},
		{KindResource, "fs", "file:///etc/passwd", true},
		{KindResource, "fs", "file:///home/x", false},
		{KindSampling, "bad", "", true},
		{Kind(9), "x", "y", true},
	}
	for _, tt := range tests {
		if got := p.Hidden(tt.kind, tt.server, tt.name); got != tt.want {
			t.Errorf("Hidden(%s, %q, %q) = %v; want %v", tt.kind, tt.server, tt.name, got, tt.want)
		}
	}
}

// TestColonsDoNotMoveSegments: an upstream chooses its tool names, so a
// colon in a name must not change which server or which rule a glob
// matches. The name of tool a:b of shell is mcp:shell:a:b, and the glob
// mcp:shell:* covers it (it once did not, while mcp:** did: the deny below
// was bypassed by the allow).
func TestColonsDoNotMoveSegments(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: ask
deny: ["mcp:shell:*", "mcp:a:b:*", "prompt:s:*", "resource:fs:*", "mcp:*:rm?rf", "mcp:s2:x:*:y"]
allow: ["mcp:**", "mcp:*:x", "mcp:a:*", "mcp:q*:*"]
`)
	tests := []struct {
		call Call
		want Verdict
		rule string
	}{
		{tool("shell", "a:b", ""), Deny, "deny[0]"},
		{tool("shell", "a:b:c", ""), Deny, "deny[0]"},
		{tool("shell", ":", ""), Deny, "deny[0]"},
		{tool("a", "b:c", ""), Deny, "deny[1]"}, // server a, name b:c
		{tool("a:b", "c", ""), Allow, "allow[0]"},
		{tool("a", "x", ""), Allow, "allow[0]"},
		{tool("q:r", "x", ""), Allow, "allow[0]"},
		{tool("zz", "rm:rf", ""), Deny, "deny[4]"}, // ? crosses a colon in the name
		{tool("s2", "x:a:b:y", ""), Deny, "deny[5]"},
		{Call{Kind: KindPrompt, Server: "s", Name: "p:q"}, Deny, "deny[2]"},
		{Call{Kind: KindResource, Server: "fs", Name: "file:///etc/passwd"}, Deny, "deny[3]"},
		{Call{Kind: KindResource, Server: "fs2", Name: "file:///etc/passwd"}, Allow, "default"},
	}
	for _, tt := range tests {
		if d := p.Decide(tt.call); d.Verdict != tt.want || d.Rule != tt.rule {
			t.Errorf("%s -> %s by %s; want %s by %s", tt.call.PolicyName(), d.Verdict, d.Rule, tt.want, tt.rule)
		}
		if tt.want == Deny && !p.Hidden(tt.call.Kind, tt.call.Server, tt.call.Name) {
			t.Errorf("%s is denied but not hidden", tt.call.PolicyName())
		}
	}
}

// TestColonNamesProperty: for random servers and names made of colons,
// glob characters and backslashes, ns:<server>:* matches every name of the
// server and ns:<other>:* none, and the printed name reads back and, as a
// glob, matches exactly its call.
func TestColonNamesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{":", "*", "?", "\\", "[", "]", "{", "}", ",", "a", "b", "/", "-", "**", "!"}
	word := func() string {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 5000 {
		checkNames(t, Kind(r.IntN(numKinds)), word(), word(), word())
	}
}

func TestUnknownKind(t *testing.T) {
	d := Default().Decide(Call{Kind: 7, Server: "a", Name: "b"})
	if d.Verdict != Deny || d.Rule != "default" || !strings.Contains(d.Reason, "unknown kind") {
		t.Errorf("decision %+v", d)
	}
}

// TestDecideDoesNotAllocate: a glob-only decision allocates nothing, and the
// arguments are not decoded when no conditional rule matches the name.
func TestDecideDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustParse(t, `version: 1
fallback: ask
deny: [mcp:github:delete_*, "mcp:*:drop_*"]
ask: [mcp:github:create_issue]
allow: [mcp:github:get_*, "mcp:docs:**", "sampling:github"]
rules:
  - {match: mcp:fs:write, when: args.x == 1, action: allow}
`)
	calls := []Call{
		tool("github", "delete_repo", `{"x":1}`),
		tool("github", "create_issue", `{"x":1}`),
		tool("github", "get_me", `{"x":1}`),
		tool("docs", "a:b", ""),
		tool("db", "drop_table", ""),
		tool("other", "x", `{"x":1}`),
		{Kind: KindSampling, Server: "github"},
		{Kind: KindPrompt, Server: "github", Name: "p"},
	}
	for _, c := range calls {
		if n := testing.AllocsPerRun(100, func() { p.Decide(c) }); n != 0 {
			t.Errorf("Decide(%s) allocates %v times; want 0", c.PolicyName(), n)
		}
		if n := testing.AllocsPerRun(100, func() { p.Hidden(c.Kind, c.Server, c.Name) }); n != 0 {
			t.Errorf("Hidden(%s) allocates %v times; want 0", c.PolicyName(), n)
		}
	}
}

// RuleReason gives the policy's own words and nothing of the call, even
// when the decision's reason carries a condition's error.
func TestRuleReasonIsPolicyText(t *testing.T) {
	p, _, err := Parse("t.yaml", []byte(`version: 1
fallback: deny
rules:
  - name: risky
    match: "mcp:s:run"
    when: int(args.n) > 3
    action: ask
    reason: Runs need a human.
  - name: plain
    match: "mcp:s:other"
    action: ask
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Decide(Call{Kind: KindTool, Server: "s", Name: "run", Args: []byte(`{"n":"secret-value"}`)})
	if d.Verdict != Ask || d.Rule != "risky" {
		t.Fatalf("got %+v", d)
	}
	if got := p.RuleReason(d.Rule); got != "Runs need a human." {
		t.Fatalf("RuleReason = %q", got)
	}
	if p.RuleReason("plain") != "" || p.RuleReason("nope") != "" {
		t.Fatal("a rule without a reason, or no rule, has no reason")
	}
}
