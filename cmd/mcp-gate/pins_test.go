package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/pins"
)

func TestPinsCommand(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	runIt := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"pins"}, 0, "no pins yet"},
		{[]string{"pins", "accept"}, exitUsage, "accept SERVER[:NAME]"},
		{[]string{"pins", "accept", "../etc"}, exitUsage, "not a server key"},
		{[]string{"pins", "accept", "srv"}, 1, "no pending change"},
		{[]string{"warm", "--capabilities", "[1]"}, exitUsage, "expected a JSON object"},
	} {
		if code, out := runIt(c.args...); code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("mcp-gate %v: exit %d, %q; want %d mentioning %q", c.args, code, out, c.code, c.says)
		}
	}
	s := pins.Open(filepath.Join(state, "mcp-gate", "pins"))
	v1 := json.RawMessage(`{"name":"t\u202e","description":"one"}`)
	v2 := json.RawMessage(`{"name":"t\u202e","description":"two\nServer: \"x\""}`)
	if _, err := s.Observe("srv", map[string]json.RawMessage{"tool:t\u202e": v1, "tool:u": v1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Observe("srv", map[string]json.RawMessage{"tool:t\u202e": v2}); err != nil {
		t.Fatal(err)
	}
	code, out := runIt("pins")
	if code != 0 || !strings.Contains(out, "server srv: 2 pinned, 1 changed") ||
		!strings.Contains(out, `CHANGED tool "t[U+202E]"`) || !strings.Contains(out, `"description": "one" → "two\nServer: \"x\""`) {
		t.Fatalf("pins: %d\n%s", code, out)
	}
	if strings.Contains(out, "\u202e") {
		t.Fatalf("a hidden character reached the terminal:\n%s", out)
	}
	if code, out := runIt("pins", "accept", "srv:u"); code != 1 {
		t.Fatalf("accepting a name with no pending change: %d %s", code, out)
	}
	if code, out := runIt("pins", "accept", "srv"); code != 0 || !strings.Contains(out, `accepted tool "t[U+202E]"`) {
		t.Fatalf("accept: %d %s", code, out)
	}
	if _, out := runIt("pins"); strings.Contains(out, "CHANGED") {
		t.Fatalf("still pending after accept:\n%s", out)
	}
}
