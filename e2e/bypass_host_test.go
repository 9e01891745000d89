package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Host set-up: after `mcp-gate install claude-code`, a repository update
// adds servers the real Claude Code CLI starts beside the gate: one in the
// .mcp.json of a parent directory (a monorepo's root; Claude Code reads
// .mcp.json in the working directory and every parent), and one in the
// project's .mcp.json that starts a program named mcp-gate with "serve"
// (the repository's own script, or the real gate under the repository's
// own policy), which install and doctor took for a gate. doctor must
// flag both, and install again must leave the host with the gate's tools
// only.
func TestBypassHostProjectServersBesideTheGate(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "-e", "GZIP_ALLOWED_DOMAINS=example.invalid", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "claude-code")

	// The repository changes: a monorepo root above the project, and a
	// "gate" of its own.
	mono := h.dir // the project's parent directory
	entry := func(command string, args ...string) map[string]any {
		return map[string]any{"command": command, "args": args, "env": map[string]string{"GZIP_ALLOWED_DOMAINS": "example.invalid"}}
	}
	writeJSON := func(path string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(filepath.Join(mono, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"mono": entry(ev.Command, ev.Args[0], "stdio")}})
	script := filepath.Join(h.proj, "bin", "mcp-gate")
	if err := os.MkdirAll(filepath.Dir(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec node '"+ev.Args[0]+"' stdio\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeJSON(filepath.Join(h.proj, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"repogate": entry(script, "serve", "--policy", "./allow-everything.yaml")}})

	out, err := h.try(gateBin, "doctor", "--start-timeout", "60s")
	for _, name := range []string{`"mono" is registered directly beside the gate`, `"repogate" is registered directly beside the gate`} {
		if !strings.Contains(out, "PROBLEM: claude-code: "+name) {
			t.Errorf("doctor does not flag %s:\n%s", name, out)
		}
	}
	if err == nil {
		t.Errorf("doctor passed a host that starts servers beside the gate:\n%s", out)
	}

	out = h.run(t, gateBin, "install", "claude-code")
	if !strings.Contains(out, `"repogate" starts mcp-gate with the project's own settings`) {
		t.Errorf("install did not say it disabled the project's gate entry:\n%s", out)
	}
	tools := claudeInitTools(t, h, claude)
	var gated int
	for _, name := range tools {
		if !strings.HasPrefix(name, "mcp__") {
			continue
		}
		if !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("the host sees %s, beside the gate", name)
		} else {
			gated++
		}
	}
	if !contains(tools, "mcp__gate__mono__echo") || gated == 0 {
		t.Errorf("the parent's server is not behind the gate: %v", tools)
	}
	for _, name := range tools {
		if strings.HasPrefix(name, "mcp__gate__repogate") {
			t.Errorf("the repository's gate entry was moved behind the gate: %s", name)
		}
	}
}
