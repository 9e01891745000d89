package policy

import (
	"strings"
	"testing"
)

// A condition reads argument names the way the most lenient server does
// (Go's encoding/json matches them regardless of case, Unicode folding
// included), and the decision also holds for a server that reads them
// exactly: the most restrictive verdict of the two wins.
func TestArgumentNamesReadBothWays(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: deny
allow: [mcp:fs:read_file]
rules:
  - name: no-ssh
    match: mcp:fs:*
    when: '["path", "source"].exists(k, k in args && path.has_segment(args[k], [".ssh"]))'
    action: deny
  - name: no-ssh-has
    match: mcp:fs:stat
    when: 'has(args.path) && path.has_segment(args.path, [".ssh"])'
    action: deny
  - name: stat
    match: mcp:fs:stat
    action: allow
  - name: list-default
    match: mcp:fs:list
    when: '!("path" in args)'
    action: allow
  - name: write-ws
    match: mcp:fs:write
    when: 'args.path.startsWith("/ws/")'
    action: allow
`)
	for _, tt := range []struct {
		tool, args string
		want       Verdict
		why        string // in the reason, when the two readings differ
	}{
		{"read_file", `{"path":"/home/me/.ssh/id"}`, Deny, ""},
		{"read_file", `{"Path":"/home/me/.ssh/id"}`, Deny, "regardless of case"},
		{"read_file", `{"PATH":"/home/me/.ssh/id"}`, Deny, "regardless of case"},
		{"read_file", `{"ſource":"/home/me/.ssh/id"}`, Deny, "regardless of case"}, // U+017F folds to s
		{"read_file", `{"Path":"/home/me/notes"}`, Allow, ""},
		{"stat", `{"Path":"/home/me/.ssh"}`, Deny, "regardless of case"},
		{"stat", `{"path":"/home/me/notes"}`, Allow, ""},
		// The exact reading is the stricter one here: a server that reads
		// names exactly sees no path, and the fallback denies.
		{"list", `{"Path":"/etc"}`, Deny, ""},
		{"write", `{"Path":"/ws/x"}`, Deny, "exactly as written"},
		{"write", `{"path":"/ws/x"}`, Allow, ""},
		// Two spellings of one name are ambiguous: the condition fails, and
		// a failed condition counts as true for a deny rule.
		{"read_file", `{"path":"/home/me/notes","Path":"/home/me/.ssh/id"}`, Deny, ""},
	} {
		d := p.Decide(tool("fs", tt.tool, tt.args))
		if d.Verdict != tt.want {
			t.Errorf("%s %s: %s by %s (%s); want %s", tt.tool, tt.args, d.Verdict, d.Rule, d.Reason, tt.want)
		}
		if tt.why != "" && !strings.Contains(d.Reason, tt.why) {
			t.Errorf("%s %s: reason %q does not say %q", tt.tool, tt.args, d.Reason, tt.why)
		}
	}
}
