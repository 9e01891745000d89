package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseErrors: each malformed policy is refused with a problem at the
// right file:line:col that says what was found and what was expected.
func TestParseErrors(t *testing.T) {
	const head = "version: 1\nfallback: ask\n"
	tests := []struct {
		name string
		src  string
		want string // one of the problems, in full "file:line:col: message" or a prefix of it
	}{
		{"empty file", "", "p.yaml: the file is empty"},
		{"only a comment", "# nothing\n", "p.yaml: the file is empty"},
		{"not a mapping", "- a\n", "p.yaml:1:1: found a list; expected a policy"},
		{"syntax error", "version: 1\nfallback: [\n", "p.yaml:2:11: invalid YAML: did not find expected node content"},
		// The YAML library's own lines were off by one or two, with column
		// 1 or none: each position below was wrong before.
		{"unclosed flow list", head + "deny: [mcp:a:b\nallow: [x]\n", "p.yaml:3:8: invalid YAML: did not find expected ',' or ']'; expected well-formed YAML (a list or mapping opened with [ or { is not closed"},
		{"unclosed quote", head + "deny:\n  - \"mcp:a:b\n  - x\n", "p.yaml:4:5: invalid YAML: found unexpected end of stream; expected well-formed YAML (a quoted string is not closed)"},
		{"unquoted class in a flow list", head + "deny: [mcp:a:[b]\n", "p.yaml:3:8: invalid YAML: did not find expected ',' or ']'"},
		{"unquoted braces in a flow list", head + "deny: [mcp:日本:{b]\n", "p.yaml:3:8: invalid YAML: did not find expected ',' or ']'"},
		{"unquoted braces starting an item", head + "deny:\n  - {mcp:a,b}:x\n", "p.yaml:4:15: invalid YAML: did not find expected '-' indicator; expected well-formed YAML (a list or mapping opened with [ or { is not closed where it should be; a glob that starts with [ or {, or holds [ ] { } or , inside [...], must be quoted: quote the pattern)"},
		{"indented key", head + "  deny: x\n", "p.yaml:3:7: invalid YAML: mapping values are not allowed in this context"},
		{"tab indentation", head + "deny:\n\t- mcp:a:b\n", "p.yaml:4:1: invalid YAML: found character that cannot start any token; expected well-formed YAML (indent with spaces, not tabs"},
		{"unclosed nested list", head + "deny:\n  - [mcp:a:b\n", "p.yaml:4:6: invalid YAML: did not find expected ',' or ']'"},
		// An unquoted glob starting with * is an alias to YAML: it had no
		// position at all.
		{"unquoted *glob in a flow list", head + "deny: [*foo]\n", `p.yaml:3:8: found *foo, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern, e.g. "*foo"`},
		{"unquoted *glob in a block list", head + "deny:\n  - *foo\n", `p.yaml:4:5: found *foo, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern, e.g. "*foo"`},
		{"unquoted bare star", head + "deny:\n  - mcp:a:b\nallow:\n  - *\n", `p.yaml:6:5: found *, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern, e.g. "*"`},
		{"unquoted *glob as match", head + "rules:\n  - match: *x\n    action: deny\n", `p.yaml:4:12: found *x, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern`},
		{"unquoted *glob with a dot", head + "deny:\n  - *.env\n", `p.yaml:4:5: found *.env, which YAML reads as an alias or an anchor`},
		{"unquoted &glob", head + "deny:\n  - &.x\n", `p.yaml:4:5: found &.x, which YAML reads as an alias or an anchor`},
		{"star after a comment star", head + "# *a\ndeny: ['*b', *c]\n", `p.yaml:4:14: found *c, which YAML reads as an alias`},
		{"two documents", head + "---\nversion: 1\n", "p.yaml:3:1: found a second YAML document"},
		{"missing version", "fallback: ask\n", "p.yaml:1:1: the policy has no version; expected version: 1"},
		{"version 2", "version: 2\nfallback: ask\n", "p.yaml:1:10: version is the number 2; expected 1"},
		{"version as a string", "version: \"1\"\nfallback: ask\n", `p.yaml:1:10: version is "1"; expected 1`},
		{"missing fallback", "version: 1\n", "p.yaml:1:1: the policy has no fallback; expected fallback: ask or fallback: deny"},
		{"fallback allow", "version: 1\nfallback: allow\n", `p.yaml:2:11: fallback is "allow"; expected ask or deny: a policy never allows what it does not name, so list what you allow instead, e.g. allow: ["mcp:*:*"]`},
		{"fallback other", "version: 1\nfallback: maybe\n", `p.yaml:2:11: fallback is "maybe"; expected ask or deny`},
		{"fallback not a string", "version: 1\nfallback: true\n", "p.yaml:2:11: fallback is the boolean true; expected a string"},
		{"unknown key", head + "alow: [mcp:a:b]\n", `p.yaml:3:1: found the unknown key "alow" in the policy; expected one of: version, fallback, approval, deny, ask, allow, rules, guard`},
		{"duplicate key", head + "deny: [mcp:a:b]\ndeny: [mcp:a:c]\n", `p.yaml:4:1: found the key "deny" a second time in the policy (first at line 3); expected each key once`},
		{"non-string key", head + "1: x\n", "p.yaml:3:1: found the key the number 1 in the policy"},
		{"anchor", head + "deny: &d [mcp:a:b]\nask: *d\n", "p.yaml:3:7: found the anchor &d; expected plain YAML"},
		{"alias", head + "deny: &d [mcp:a:b]\nask: *d\n", "p.yaml:4:6: found the alias *d"},
		{"timeout not a duration", head + "approval: {timeout: soon}\n", `p.yaml:3:21: approval.timeout is "soon"; expected a duration such as 90s or 2m`},
		{"timeout too long", head + "approval:\n  timeout: 2h\n", "p.yaml:4:12: approval.timeout is 2h0m0s; expected a duration from 1s to 1h0m0s"},
		{"timeout too short", head + "approval:\n  timeout: 10ms\n", "p.yaml:4:12: approval.timeout is 10ms; expected a duration from 1s"},
		{"timeout a number", head + "approval:\n  timeout: 120\n", "p.yaml:4:12: approval.timeout is the number 120; expected a string"},
		{"approval unknown key", head + "approval:\n  timout: 1m\n", `p.yaml:4:3: found the unknown key "timout" in approval; expected one of: timeout`},
		{"approval not a mapping", head + "approval: 2m\n", `p.yaml:3:11: approval is "2m"; expected a mapping`},
		{"list not a list", head + "deny: {a: b}\n", "p.yaml:3:7: deny is a mapping; expected a list of strings or a single string"},
		{"list item not a string", head + "deny: [mcp:a:b, 3]\n", "p.yaml:3:17: deny[1] is the number 3; expected a string"},
		{"invalid glob", head + "deny: [\"mcp:a:{b\"]\n", `p.yaml:3:17: the glob "mcp:a:{b" is invalid (unclosed ` + "`{`" + ` at offset 8)`},
		{"invalid glob plain", head + "deny:\n  - mcp:a:[b\n", `p.yaml:4:13: the glob "mcp:a:[b" is invalid`},
		{"no namespace", head + "deny: [github:delete_*]\n", `p.yaml:3:8: the glob "github:delete_*" does not start with a namespace; expected mcp:<server>:<tool>`},
		{"unknown namespace", head + "deny: [\"tool:a:b\"]\n", `the glob "tool:a:b" does not start with a namespace`},
		{"bare star", head + "deny: [\"*\"]\n", `the glob "*" does not start with a namespace`},
		{"whitespace in a glob", head + "deny: [\"mcp:a:b c\"]\n", `p.yaml:3:16: the glob "mcp:a:b c" has whitespace (U+0020) at offset 7, so it matches no name as written; expected a glob without whitespace or invisible characters`},
		{"trailing whitespace in a glob", head + "deny: [\"mcp:a:b \"]\n", `p.yaml:3:16: the glob "mcp:a:b " has whitespace (U+0020) at offset 7`},
		{"tab in a glob", head + "deny: [\"mcp:a:\\tb\"]\n", `p.yaml:3:15: the glob "mcp:a:\tb" has whitespace (U+0009)`},
		{"zero-width space in a glob", head + "deny: [\"mcp:shell:\\u200brm\"]\n", `p.yaml:3:19: the glob "mcp:shell:\u200brm" has an invisible character (U+200B) at offset 10`},
		{"zero-width space written raw", head + "deny:\n  - mcp:日:\u200bx\n", `p.yaml:4:11: the glob "mcp:日:\u200bx" has an invisible character (U+200B) at offset 8`},
		{"soft hyphen in a glob", head + "deny: ['mcp:a''b:\u00adx']\n", `p.yaml:3:18: the glob "mcp:a'b:\u00adx" has an invisible character (U+00AD)`},
		{"bidi control in a glob", head + "deny: [\"mcp:a:\\u202eb\"]\n", `has an invisible character (U+202E)`},
		{"control character in a glob", head + "deny: [\"mcp:a:\\x01b\"]\n", `p.yaml:3:15: the glob "mcp:a:\x01b" has an invisible character (U+0001)`},
		{"not UTF-8 in a glob", head + "deny: [\"mcp:a:\xffb\"]\n", `invalid YAML`},
		{"whitespace folded from a second line", head + "deny: mcp:a:b\n  - x\n", `p.yaml:3:14: the glob "mcp:a:b - x" has whitespace (U+0020) at offset 7`},
		{"whitespace after a folded line", head + "deny: mcp:a:b\n  x y\n", `p.yaml:3:14: the glob "mcp:a:b x y" has whitespace (U+0020) at offset 7`},
		{"whitespace in a quoted glob over two lines", head + "deny: [\"mcp:a:b\n  c d\"]\n", `p.yaml:3:16: the glob "mcp:a:b c d" has whitespace (U+0020) at offset 7`},
		{"empty server segment", head + "deny: [\"mcp::x\"]\n", `p.yaml:3:13: the glob "mcp::x" has an empty server segment`},
		{"empty name part", head + "deny: [\"mcp:a:\"]\n", `p.yaml:3:15: the glob "mcp:a:" has an empty name part`},
		{"alternatives across segments", head + "deny: [\"mcp:{a:x,b:y}\"]\n", `the glob "mcp:{a:x,b:y}" has no name part`},
		{"sampling with a name", head + "allow: [\"sampling:a:b\"]\n", `p.yaml:3:20: the glob "sampling:a:b" has a second ':' at offset 10`},
		{"invalid glob in the server", head + "deny: [\"mcp:{a:x\"]\n", `the glob "mcp:{a:x" has no name part`},
		{"invalid class in the server", head + "deny: [\"mcp:[a:x\"]\n", `the glob "mcp:[a:x" has no name part`},
		{"no name part", head + "deny: [mcp:github]\n", `p.yaml:3:8: the glob "mcp:github" has no name part, so it can never match; expected mcp:<server>:<name>`},
		{"mcp:* has no name part", head + "allow: [\"mcp:*\"]\n", `the glob "mcp:*" has no name part`},
		{"empty sampling server", head + "allow: [\"sampling:\"]\n", `the glob "sampling:" has an empty server`},
		{"empty glob", head + "deny: [\"\"]\n", `the glob "" does not start with a namespace`},
		{"rules not a list", head + "rules: {a: 1}\n", "p.yaml:3:8: rules is a mapping; expected a list of rules"},
		{"rule not a mapping", head + "rules: [mcp:a:b]\n", `p.yaml:3:9: rules[0] is "mcp:a:b"; expected a mapping with match and action`},
		{"rule without match", head + "rules:\n  - action: deny\n", "p.yaml:4:5: rules[0] has no match; expected match: a non-empty list of globs"},
		{"rule with empty match", head + "rules:\n  - match: []\n    action: deny\n", "p.yaml:4:12: rules[0].match is an empty list; expected at least one glob"},
		{"rule without action", head + "rules:\n  - match: mcp:a:b\n", "p.yaml:4:5: rules[0] has no action; expected action: allow, ask or deny"},
		{"rule with bad action", head + "rules:\n  - match: mcp:a:b\n    action: block\n", `p.yaml:5:13: rules[0].action is "block"; expected allow, ask or deny`},
		{"rule unknown key", head + "rules:\n  - match: mcp:a:b\n    action: deny\n    if: true\n", `p.yaml:6:5: found the unknown key "if" in rules[0]; expected one of: name, match, when, action, reason`},
		{"rule duplicate key", head + "rules:\n  - match: mcp:a:b\n    action: deny\n    action: allow\n", `p.yaml:6:5: found the key "action" a second time in rules[0] (first at line 5)`},
		{"duplicate names", head + "rules:\n  - {name: x, match: mcp:a:b, action: deny}\n  - {name: x, match: mcp:a:c, action: deny}\n", `p.yaml:5:12: rules[1].name "x" is already the name of the rule at line 4; expected unique names`},
		{"name taken by a position", head + "rules:\n  - {name: \"rules[1]\", match: mcp:a:b, action: deny}\n  - {match: mcp:a:c, action: deny}\n", `p.yaml:4:12: rules[0].name is "rules[1]"; expected a name that is not of the form deny[i]`},
		{"name of a list entry", head + "rules:\n  - {name: \"deny[0]\", match: mcp:a:b, action: deny}\n", `rules[0].name is "deny[0]"; expected a name that is not of the form`},
		{"reserved name", head + "rules:\n  - {name: fallback, match: mcp:a:b, action: deny}\n", `p.yaml:4:12: rules[0].name is "fallback"; expected another name`},
		{"empty name", head + "rules:\n  - {name: \"\", match: mcp:a:b, action: deny}\n", `rules[0].name is empty`},
		{"when does not compile", head + "rules:\n  - match: mcp:a:b\n    when: args.x ==\n    action: deny\n", "p.yaml:5:20: rules[0].when: the condition does not compile: Syntax error"},
		{"when undeclared variable", head + "rules:\n  - match: mcp:a:b\n    when: arg.x == 1\n    action: deny\n", "p.yaml:5:11: rules[0].when: the condition does not compile: undeclared reference to 'arg'"},
		{"when quoted position", head + "rules:\n  - match: mcp:a:b\n    when: \"server == 1\"\n    action: deny\n", "p.yaml:5:19: rules[0].when: the condition does not compile: found no matching overload for '_==_'"},
		{"when in a literal block", head + "rules:\n  - match: mcp:a:b\n    when: |\n      server == \"a\" &&\n        nosuch\n    action: deny\n", "p.yaml:7:9: rules[0].when: the condition does not compile: undeclared reference to 'nosuch'"},
		{"when not boolean", head + "rules:\n  - match: mcp:a:b\n    when: args.x\n    action: deny\n", "p.yaml:5:11: rules[0].when: the condition is of type dyn; expected a boolean"},
		{"when a string", head + "rules:\n  - match: mcp:a:b\n    when: server + \"x\"\n    action: deny\n", "rules[0].when: the condition is of type string; expected a boolean"},
		{"when constant false", head + "rules:\n  - match: mcp:a:b\n    when: \"false\"\n    action: allow\n", "p.yaml:5:11: rules[0].when: the condition reads no variable and is always false, so the rule can never match"},
		{"when constant comparison", head + "rules:\n  - match: mcp:a:b\n    when: 1 == 2\n    action: allow\n", "rules[0].when: the condition reads no variable and is always false"},
		{"when constant error", head + "rules:\n  - match: mcp:a:b\n    when: 1 / 0 == 1\n    action: deny\n", "rules[0].when: the condition reads no variable and always fails"},
		{"when constant path", head + "rules:\n  - match: mcp:a:b\n    when: path.within(\"/etc\", \"/home\")\n    action: allow\n", "rules[0].when: the condition reads no variable and is always false"},
		{"when a boolean scalar", head + "rules:\n  - match: mcp:a:b\n    when: true\n    action: deny\n", "p.yaml:5:11: rules[0].when is the boolean true; expected a string"},
		{"when empty", head + "rules:\n  - match: mcp:a:b\n    when: \"\"\n    action: deny\n", "rules[0].when is empty"},
		{"when bad regex", head + "rules:\n  - match: mcp:a:b\n    when: tool.matches(\"[\")\n    action: deny\n", "rules[0].when: the condition does not compile"},
		{"ask on prompts", head + "ask: [prompt:github:x]\n", `p.yaml:3:7: the ask rule ask[0] matches "prompt:github:x", a prompt name; expected only deny or allow for prompts and resources: they are governed only by deny`},
		{"ask rule on resources", head + "rules:\n  - {match: \"resource:fs:**\", action: ask}\n", `the ask rule rules[0] matches "resource:fs:**", a resource name`},
		{"conditional deny on prompts", head + "rules:\n  - match: prompt:a:b\n    when: server == \"a\"\n    action: deny\n", `p.yaml:4:12: the conditional rule rules[0] matches "prompt:a:b", a prompt name; expected no condition on prompts and resources`},
		{"conditional allow on resources", head + "rules:\n  - match: [mcp:a:b, resource:a:b]\n    when: server == \"a\"\n    action: allow\n", `the conditional rule rules[0] matches "resource:a:b"`},
		{"guard not a mapping", head + "guard: [a]\n", "p.yaml:3:8: guard is a list; expected a mapping"},
		{"guard unknown key", head + "guard: {logonly: [a]}\n", `found the unknown key "logonly" in guard`},
		{"guard bad glob", head + "guard: {log_only: [\"[a\"]}\n", `guard.log_only has the invalid glob "[a"`},
		{"guard policy name", head + "guard: {log_only: [mcp:a:b]}\n", `guard.log_only has "mcp:a:b"; expected a server key`},
		{"guard invisible character", head + "guard: {log_only: [\"leg\\u200bacy\"]}\n", `p.yaml:3:24: guard.log_only: the glob "leg\u200bacy" has an invisible character (U+200B)`},
		{"too big", head + "#" + strings.Repeat("x", maxYAMLBytes) + "\n", "p.yaml: the file is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := Parse("p.yaml", []byte(tt.src), Options{})
			if err == nil {
				t.Fatalf("Parse succeeded; want an error containing %q", tt.want)
			}
			if p != nil {
				t.Error("Parse returned a policy with an error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T; want *ParseError", err)
			}
			found := false
			for _, pr := range pe.Problems {
				if strings.HasPrefix(pr.String(), tt.want) || (!strings.HasPrefix(tt.want, "p.yaml") && strings.Contains(pr.String(), tt.want)) {
					found = true
				}
				if !strings.Contains(pr.Msg, "expected") {
					t.Errorf("problem %q does not say what was expected", pr)
				}
			}
			if !found {
				t.Errorf("no problem %q in:\n%v", tt.want, err)
			}
		})
	}
}

// TestParseReportsAllProblems: one file with many mistakes reports each of
// them, in the order of the file.
func TestParseReportsAllProblems(t *testing.T) {
	src := `version: 2
fallback: allow
approval: {timeout: 2h}
deny: [mcp:github:delete_*, "mcp:{a", 12, foo:bar]
ask: [prompt:x:y]
rules:
  - name: a
    match: [mcp:x:y]
    when: args.x +
    action: allow
  - name: a
    match: []
    when: 1 == 2
    action: maybe
guard:
  log_only: [a:b]
deny: []
`
	_, _, err := Parse("bad.yaml", []byte(src), Options{})
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	wantLines := []int{1, 2, 3, 4, 4, 4, 5, 9, 11, 12, 13, 14, 16, 17}
	if len(pe.Problems) != len(wantLines) {
		t.Fatalf("%d problems; want %d:\n%v", len(pe.Problems), len(wantLines), err)
	}
	for i, pr := range pe.Problems {
		if pr.Line != wantLines[i] {
			t.Errorf("problem %d at line %d; want line %d (file order): %s", i, pr.Line, wantLines[i], pr)
		}
	}
}

func TestParseBoundsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nfallback: ask\ndeny:\n")
	for range maxProblems + 50 {
		b.WriteString("  - nonsense\n")
	}
	_, _, err := Parse("p.yaml", []byte(b.String()), Options{})
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	if len(pe.Problems) != maxProblems+1 || !strings.Contains(pe.Problems[maxProblems].Msg, "50 more problems") {
		t.Errorf("%d problems, last %q; want %d and a count of the rest", len(pe.Problems), pe.Problems[len(pe.Problems)-1], maxProblems+1)
	}
}

func TestParseWarnings(t *testing.T) {
	src := `version: 1
fallback: ask
deny: [mcp:github:delete_*, "mcp:*:drop_*", mcp:gitlab:x]
allow: [prompt:github:summarize, "sampling:jira"]
rules:
  - match: mcp:github:get_me
    when: "true"
    action: allow
guard:
  log_only: [legacy, legacy-*]
`
	p, warnings, err := Parse("p.yaml", []byte(src), Options{KnownServers: []string{"github"}})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(warnings))
	for i, w := range warnings {
		got[i] = w.String()
	}
	want := []string{
		`p.yaml:3:45: the glob "mcp:gitlab:x" names the server "gitlab", which the servers file does not list (the nearest is "github"); the rule applies only where that server exists`,
		`p.yaml:4:9: the allow rule allow[0] matches "prompt:github:summarize", which changes nothing: prompts are allowed unless a deny covers them`,
		`p.yaml:4:34: the glob "sampling:jira" names the server "jira", which the servers file does not list`,
		`p.yaml:7:11: rules[0].when reads no variable and is always true; drop when`,
		`p.yaml:10:14: guard.log_only names the server "legacy", which the servers file does not list (the nearest is "github")`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if len(p.Warnings()) != len(want) {
		t.Error("Policy.Warnings differs from Parse's")
	}
	// Without known servers, there is nothing to check against.
	_, warnings, _ = Parse("p.yaml", []byte(src), Options{})
	if len(warnings) != 2 {
		t.Errorf("warnings without known servers: %v; want only the two that do not depend on them", warnings)
	}
}

func TestParseAccessors(t *testing.T) {
	src := []byte(`version: 1
fallback: deny
approval:
  timeout: 90s
deny: mcp:a:b
guard:
  log_only: [legacy-*, old]
`)
	p, _, err := Parse("p.yaml", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.ApprovalTimeout() != 90*time.Second {
		t.Errorf("timeout %s", p.ApprovalTimeout())
	}
	if p.Fallback() != Deny {
		t.Errorf("fallback %s", p.Fallback())
	}
	if p.Source() != "p.yaml" {
		t.Errorf("source %q", p.Source())
	}
	if !strings.HasPrefix(p.Revision(), "sha256:") || len(p.Revision()) != len("sha256:")+12 {
		t.Errorf("revision %q", p.Revision())
	}
	p2, _, _ := Parse("other.yaml", append(src, '\n'), Options{})
	if p2.Revision() == p.Revision() {
		t.Error("different bytes, same revision")
	}
	for server, want := range map[string]bool{"legacy-a": true, "old": true, "older": false, "new": false} {
		if p.GuardLogOnly(server) != want {
			t.Errorf("GuardLogOnly(%q) = %v", server, !want)
		}
	}
	if d := p.Decide(Call{Server: "a", Name: "b"}); d.Revision != p.Revision() || d.Rule != "deny[0]" {
		t.Errorf("decision %+v", d)
	}
}

func TestParseName(t *testing.T) {
	good := map[string]Call{
		"mcp:github:create_issue":   {Kind: KindTool, Server: "github", Name: "create_issue"},
		"mcp:ns:a:b":                {Kind: KindTool, Server: "ns", Name: "a:b"},
		"prompt:github:summarize":   {Kind: KindPrompt, Server: "github", Name: "summarize"},
		"resource:fs:file:///etc/x": {Kind: KindResource, Server: "fs", Name: "file:///etc/x"},
		"sampling:github":           {Kind: KindSampling, Server: "github"},
	}
	for s, want := range good {
		got, err := ParseName(s)
		if err != nil || got.Kind != want.Kind || got.Server != want.Server || got.Name != want.Name {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if got.PolicyName() != s {
			t.Errorf("PolicyName() = %q; want %q", got.PolicyName(), s)
		}
	}
	for _, s := range []string{"", "mcp", "mcp:github", "mcp::x", "mcp:x:", "tool:a:b", "sampling:", "github__create_issue"} {
		if c, err := ParseName(s); err == nil {
			t.Errorf("ParseName(%q) = %+v; want an error", s, c)
		}
	}
	for _, s := range []string{"allow", "ask", "deny"} {
		v, err := ParseVerdict(s)
		if err != nil || v.String() != s {
			t.Errorf("ParseVerdict(%q) = %v, %v", s, v, err)
		}
	}
	if _, err := ParseVerdict("Allow"); err == nil {
		t.Error("ParseVerdict is case-insensitive; want exact")
	}
	if Deny <= Ask || Ask <= Allow {
		t.Error("verdicts are not ordered by restriction")
	}
}

// TestParseCatalogWarnings: with the names the servers list (check
// --strict), a glob that matches none of them is a warning naming the
// nearest listed name; servers that did not start are not judged.
func TestParseCatalogWarnings(t *testing.T) {
	src := `version: 1
fallback: ask
deny: [mcp:fs:read_fille, "mcp:fs:writ*", "mcp:fs:*", "mcp:*:delete_*", "mcp:f?:rm_*"]
allow: ["mcp:git:anything", "resource:fs:file:///nothing", "mcp:{fs,docs}:serch"]
rules:
  - match: prompt:fs:summarise
    action: deny
  - match: "prompt:fs:rev*"
    action: deny
`
	opts := Options{
		KnownServers: []string{"fs", "git", "docs"},
		Catalog: map[string]ServerNames{
			"fs":   {Tools: []string{"read_file", "write_file"}, Prompts: []string{"summarize", "review"}},
			"docs": {Tools: []string{"search"}},
		},
	}
	_, warnings, err := Parse("p.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(warnings))
	for i, w := range warnings {
		got[i] = w.String()
	}
	want := []string{
		`p.yaml:3:8: the glob "mcp:fs:read_fille" matches no tool that the server "fs" lists (the nearest is "read_file"); the rule never applies to them`,
		`p.yaml:3:73: the glob "mcp:f?:rm_*" matches no tool that the server "fs" lists (the nearest is "read_file"); the rule never applies to them`,
		`p.yaml:4:29: the allow rule allow[1] matches "resource:fs:file:///nothing", which changes nothing: resources are allowed unless a deny covers them`,
		`p.yaml:4:60: the glob "mcp:{fs,docs}:serch" matches no tool that the servers "docs", "fs" list (the nearest is "search"); the rule never applies to them`,
		`p.yaml:6:12: the glob "prompt:fs:summarise" matches no prompt that the server "fs" lists (the nearest is "summarize"); the rule never applies to them`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"read_fille", "read_file", 1}, {"日本", "日", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestParseInvalidServerKeyWarning: a glob naming a server that cannot be a
// server key never matches, servers file or not.
func TestParseInvalidServerKeyWarning(t *testing.T) {
	src := "version: 1\nfallback: ask\ndeny: [mcp:GitHub:x, 'mcp:a\\:b:c', sampling:Jira]\n"
	for _, tc := range []struct {
		known []string
		want  []string
	}{
		{nil, []string{
			`p.yaml:3:8: the glob "mcp:GitHub:x" names the server "GitHub", which is not a server key (^[a-z0-9][a-z0-9-]*$), so the glob can never match`,
			`p.yaml:3:22: the glob "mcp:a\\:b:c" names the server "a:b", which is not a server key (^[a-z0-9][a-z0-9-]*$), so the glob can never match`,
			`p.yaml:3:36: the glob "sampling:Jira" names the server "Jira", which is not a server key (^[a-z0-9][a-z0-9-]*$), so the glob can never match`,
		}},
		{[]string{"github", "jira"}, []string{
			`p.yaml:3:8: the glob "mcp:GitHub:x" names the server "GitHub", which is not a server key (^[a-z0-9][a-z0-9-]*$), so the glob can never match (the nearest is "github")`,
		}},
	} {
		_, warnings, err := Parse("p.yaml", []byte(src), Options{KnownServers: tc.known})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(warnings))
		for i, w := range warnings {
			got[i] = w.String()
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("known %v: no warning %q in:\n%s", tc.known, w, strings.Join(got, "\n"))
			}
		}
	}
}
