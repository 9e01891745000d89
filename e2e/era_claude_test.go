package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 14: the real Claude Code (the pinned npm package) connects to the
// gate over stdio at protocol 2026-07-28 and lists its tools. No API key:
// `claude mcp list` connects to every configured server, opening with
// server/discover, and fetches its tools. A transcript of the stdio bytes
// (tee on both sides of the gate) shows what it sent and what it got, and
// its debug log the era it settled on.
func TestClaudeCodeModernStdio(t *testing.T) {
	// Not parallel (see harness_test.go): a real host: Claude Code is heavy on both CPUs.
	claude := filepath.Join(nodeModules, ".bin", "claude")
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned Claude Code is not installed (npm ci in e2e/): %v", err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	servers := writeServers(t, dir, map[string]server{"honest": testserver("honest")})
	pol := writePolicy(t, "version: 1\nfallback: deny\nallow:\n  - mcp:honest:*\ndeny:\n  - mcp:honest:blob\n")
	in, out := filepath.Join(dir, "in.log"), filepath.Join(dir, "out.log")
	wrapper := filepath.Join(dir, "gate.sh")
	script := "#!/bin/sh\ntee -a '" + in + "' | '" + gateBin + "' serve --servers '" + servers + "' --policy '" + pol +
		"' --audit-log '" + filepath.Join(dir, "audit.jsonl") + "' 2>>'" + filepath.Join(dir, "gate.err") + "' | tee -a '" + out + "'\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	race := raceEnv(t) // the race reports of the gates Claude Code starts
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(claude, args...)
		cmd.Dir = home
		cmd.Env = append(os.Environ(), "HOME="+home, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ANTHROPIC_API_KEY=", claudeWaitsForMCP, race)
		done := make(chan struct{})
		var b []byte
		var err error
		go func() { b, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(120 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("claude %v did not finish", args)
		}
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	run("mcp", "add", "-s", "user", "gate", "--", wrapper)
	listed := run("--debug=mcp", "mcp", "list")
	if !strings.Contains(listed, "gate: ") || !strings.Contains(listed, "Connected") {
		gateErr, _ := os.ReadFile(filepath.Join(dir, "gate.err"))
		t.Fatalf("claude mcp list does not show the gate connected:\n%s\ngate stderr:\n%s", listed, gateErr)
	}
	sent, _ := os.ReadFile(in)
	got, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(sent)), "\n")
	if !strings.Contains(lines[0], `"method":"server/discover"`) || !strings.Contains(lines[0], `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
		t.Fatalf("Claude Code did not open with a 2026-07-28 server/discover:\n%s", sent)
	}
	if strings.Contains(string(sent), `"method":"initialize"`) {
		t.Fatalf("Claude Code fell back to initialize:\n%s\ngate answered:\n%s", sent, got)
	}
	if !strings.Contains(string(sent), `"method":"tools/list"`) {
		t.Fatalf("Claude Code did not list tools:\n%s", sent)
	}
	var listLine string
	for _, l := range strings.Split(string(got), "\n") {
		if strings.Contains(l, `"tools":[`) {
			listLine = l
		}
	}
	if !strings.Contains(listLine, `"name":"honest__echo"`) || !strings.Contains(listLine, `"resultType":"complete"`) || strings.Contains(listLine, `"honest__blob"`) {
		t.Fatalf("the gate's tools/list answer to Claude Code is not the policy's tools at 2026-07-28:\n%s", got)
	}
	// Its debug log says which era it settled on.
	logs, _ := filepath.Glob(filepath.Join(home, ".claude", "debug", "*.txt"))
	var debug strings.Builder
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		debug.Write(b)
	}
	if !strings.Contains(debug.String(), `"protocolEra":"modern"`) || !strings.Contains(debug.String(), `"negotiatedProtocolVersion":"2026-07-28"`) {
		t.Fatalf("Claude Code's debug log does not show a 2026-07-28 connection:\n%s", debug.String())
	}
	t.Logf("Claude Code sent:\n%s\nthe gate answered:\n%s", sent, got)
}
