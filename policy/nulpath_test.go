package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A path holding U+0000 (a JSON string may: "\u0000") names no file: the
// kernel refuses it. A server that reads strings as C strings (cJSON, Lua,
// a C library's fopen) opens the part before it, and everything else
// refuses it; the gate's readings took the component holding it for a
// missing one and went on, so "/etc/passwd\u0000/../../<workspace>/x" was
// decided as a write inside the workspace while such a server opened
// /etc/passwd. Every reading now fails closed on it.
func TestNulInPathFailsClosed(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tricky := "/etc/passwd\x00/../.." + ws + "/x"
	for _, r := range []reading{readKernel, readLexical} {
		if ok, err := pathWithin(tricky, ws, r); !errors.Is(err, errNulInPath) {
			t.Errorf("pathWithin under %s: %t, %v; want errNulInPath", r, ok, err)
		}
		if ok, err := pathHasSegment(tricky, []string{"x"}, r); !errors.Is(err, errNulInPath) {
			t.Errorf("pathHasSegment under %s: %t, %v; want errNulInPath", r, ok, err)
		}
	}
	pol := mustParse(t, `version: 1
fallback: deny
rules:
  - name: workspace
    match: mcp:fs:write
    when: 'path.within(args.path, "`+ws+`")'
    action: allow
  - name: no-etc
    match: mcp:fs:read
    when: 'path.within(args.path, "/etc")'
    action: deny
  - name: reads
    match: mcp:fs:read
    action: allow
`)
	if d := pol.Decide(Call{Server: "fs", Name: "write", Args: pathArgs("path", tricky)}); d.Verdict != Deny {
		t.Errorf("write of %q: %s by %s (%s); want deny", tricky, d.Verdict, d.Rule, d.Reason)
	}
	if d := pol.Decide(Call{Server: "fs", Name: "read", Args: pathArgs("path", tricky)}); d.Verdict != Deny || d.Rule != "no-etc" {
		t.Errorf("read of %q: %s by %s (%s); want deny by no-etc", tricky, d.Verdict, d.Rule, d.Reason)
	}
	if d := pol.Decide(Call{Server: "fs", Name: "write", Args: pathArgs("path", filepath.Join(ws, "x"))}); d.Verdict != Allow {
		t.Errorf("a plain write inside the workspace: %s (%s)", d.Verdict, d.Reason)
	}
}
