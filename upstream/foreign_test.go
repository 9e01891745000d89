package upstream_test

import (
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/upstream"
)

func TestCheckServersForeignKeysAndEveryUnknownKey(t *testing.T) {
	r, err := upstream.CheckServers("s.json", []byte(`{"mcpServers": {
		"a": {"command": "x", "alwaysAllow": ["t"], "autoApprove": [], "disabledTools": [], "timeout": 5, "description": "d", "transportType": "stdio", "disabled": false},
		"b": {"command": "x", "disabled": true},
		"c": {"command": "x", "comand": "y", "argz": []},
		"d": {"comand": "y"},
		"e": {"command": "x", "disabled": "yes"}
	}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 1 || r.Servers[0].Name != "a" {
		t.Fatalf("servers %+v; want a alone", r.Servers)
	}
	if len(r.Disabled) != 1 || r.Disabled[0] != "b" {
		t.Fatalf("disabled %v", r.Disabled)
	}
	if len(r.Warnings) != 7 {
		t.Fatalf("%d warnings, want one per foreign key of a: %q", len(r.Warnings), r.Warnings)
	}
	for _, w := range r.Warnings {
		if !strings.Contains(w, `server "a"`) {
			t.Errorf("warning %q is not about a", w)
		}
	}
	all := ""
	for _, e := range r.Errors {
		all += e.Error() + "\n"
	}
	for _, want := range []string{`server "c": unknown field "argz"`, `server "c": unknown field "comand"`, `server "d": unknown field "comand"`,
		`server "d": a stdio server needs a non-empty "command"`, `server "e": "disabled" is a string; expected true or false`} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
	if len(r.Errors) != 3 {
		t.Errorf("%d entries refused, want 3 (c, d, e)", len(r.Errors))
	}
	// ParseServers keeps refusing a file with any bad entry.
	if _, err := upstream.ParseServers("s.json", []byte(`{"mcpServers": {"a": {"command": "x"}, "c": {"command": "x", "argz": 1}}}`), nil); err == nil {
		t.Fatal("ParseServers accepted a file with a bad entry")
	}
}
