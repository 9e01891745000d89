package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 14 over HTTP: the real Claude Code (the pinned npm package), which
// speaks 2026-07-28 by default to HTTP servers, connects to the gate's
// Streamable HTTP front end and lists its tools without opening a
// 2025-11-25 session. No API key: `claude mcp list` connects and lists.
func TestClaudeCodeModernHTTP(t *testing.T) {
	// Not parallel (see harness_test.go): a real host: Claude Code is heavy on both CPUs.
	claude := filepath.Join(nodeModules, ".bin", "claude")
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned Claude Code is not installed (npm ci in e2e/): %v", err)
	}
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow:\n  - mcp:honest:*\n"))
	gateURL := g.serveHTTP(t)
	// A recording reverse proxy in front of the gate: what Claude Code
	// sent (method by its Mcp-Method header, or by body for initialize).
	target, _ := neturl.Parse(gateURL)
	rp := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	var mu sync.Mutex
	var methods []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Host = target.Host
		mu.Lock()
		m := r.Method + " " + r.Header.Get("Mcp-Method")
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			m += " initialize"
		}
		methods = append(methods, m)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	url := front.URL + target.Path
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
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
	run("mcp", "add", "-s", "user", "--transport", "http", "gate", url)
	listed := run("--debug=mcp", "mcp", "list")
	if !strings.Contains(listed, "gate: ") || !strings.Contains(listed, "Connected") {
		t.Fatalf("claude mcp list does not show the gate connected:\n%s\ngate stderr:\n%s", listed, g.stderr.String())
	}
	log := g.stderr.String()
	if !strings.Contains(log, "host session opened at protocol 2026-07-28") {
		t.Fatalf("no 2026-07-28 request reached the gate:\n%s\n%s", listed, log)
	}
	if strings.Contains(log, `msg="HTTP session started"`) {
		t.Fatalf("Claude Code opened a 2025-11-25 session (initialize) over HTTP:\n%s\n%s", listed, log)
	}
	mu.Lock()
	sent := strings.Join(methods, "\n")
	mu.Unlock()
	if !strings.Contains(sent, "POST server/discover") || !strings.Contains(sent, "POST tools/list") || strings.Contains(sent, "initialize") {
		t.Fatalf("Claude Code sent (want server/discover and tools/list at 2026-07-28, no initialize):\n%s", sent)
	}
}
