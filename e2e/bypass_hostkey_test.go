package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Host set-up: Claude Code files a directory's local-scope servers under
// the root of its git checkout (.claude.json projects[ROOT]), wherever in
// the checkout the session starts. A project-scope install run for a
// subdirectory (--project, or the working directory) registered the gate
// under projects[SUBDIRECTORY], which the real CLI never reads: in that
// subdirectory it started the project's own server and no gate.
func TestBypassHostProjectKeyIsCheckoutRoot(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	if out, err := exec.Command("git", "init", "-q", h.proj).CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	sub := filepath.Join(h.proj, "sub")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	h.run(t, claude, "mcp", "add", "--scope", "local", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "--scope", "project", "--project", sub, "claude-code")
	list := exec.Command(claude, "mcp", "list")
	list.Dir, list.Env = sub, h.env
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("claude mcp list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "gate:") || strings.Contains(string(out), "everything:") {
		t.Errorf("in %s after a project-scope install there, claude mcp list:\n%s", sub, out)
	}
}
