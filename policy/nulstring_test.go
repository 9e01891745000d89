package policy

import (
	"strings"
	"testing"
)

// A string argument holding U+0000 reads two ways: whole for a condition,
// up to the U+0000 for a server that reads C strings (cJSON, Lua, a C
// library). "x.env\u0000.txt" did not end with ".env" for a deny rule, and
// such a server opened x.env. A condition that reads such a string fails
// (closed: a deny or ask rule matches, an allow rule does not); one that
// reads other arguments is unaffected.
func TestNulInStringFailsClosed(t *testing.T) {
	pol := mustParse(t, `version: 1
fallback: deny
rules:
  - name: no-env
    match: mcp:fs:read
    when: 'args.path.endsWith(".env") || args.paths.exists(p, p.endsWith(".env"))'
    action: deny
  - name: reads
    match: mcp:fs:read
    action: allow
  - name: txt
    match: mcp:fs:write
    when: 'args.path.endsWith(".txt")'
    action: allow
`)
	for _, tc := range []struct {
		name, args string
		want       Verdict
		rule       string
	}{
		{"read", `{"path":"/w/x.env\u0000.txt","paths":[]}`, Deny, "no-env"},
		{"read", `{"path":"/w/a.txt","paths":["/w/b.txt","/w/x.env\u0000.txt"]}`, Deny, "no-env"},
		{"write", `{"path":"/w/x.env\u0000.txt"}`, Deny, "fallback"},
		// Not read by the condition: unaffected.
		{"write", `{"path":"/w/a.txt","content":"a\u0000b"}`, Allow, "txt"},
		{"read", `{"path":"/w/a.txt","paths":[],"content":"a\u0000b"}`, Allow, "reads"},
	} {
		d := pol.Decide(tool("fs", tc.name, tc.args))
		if d.Verdict != tc.want || d.Rule != tc.rule {
			t.Errorf("%s %s: %s by %s (%s); want %s by %s", tc.name, tc.args, d.Verdict, d.Rule, d.Reason, tc.want, tc.rule)
		}
		if d.Verdict != Allow && !strings.Contains(d.Reason, "U+0000") {
			t.Errorf("%s %s: the reason does not say why: %s", tc.name, tc.args, d.Reason)
		}
	}
}
