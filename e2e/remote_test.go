package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteToken is the secret the servers file takes from the environment
// (${REMOTE_TOKEN}); it must reach the server and nothing else.
const remoteToken = "rt-9f3c1e-never-logged"

// remoteGate prepares the gate with a servers file of raw entries (http and
// sse ones are not the harness's stdio shape) and REMOTE_TOKEN set.
func remoteGate(t *testing.T, entries map[string]any, flags ...string) *gate {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(map[string]any{"mcpServers": entries})
	if err != nil {
		t.Fatal(err)
	}
	servers := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(servers, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gate{stderr: &syncBuffer{}, audit: filepath.Join(dir, "audit.jsonl"), dir: dir}
	args := []string{"serve", "--servers", servers, "--audit-log", g.audit, "--start-timeout", "20s", "--log-level", "debug"}
	if !strings.Contains(strings.Join(flags, " "), "--policy") {
		wd, _ := os.Getwd()
		args = append(args, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"))
	}
	g.cmd = exec.Command(gateBin, append(args, flags...)...)
	g.cmd.Env = append(os.Environ(), append(userDirs(dir), "REMOTE_TOKEN="+remoteToken)...)
	g.cmd.Stderr = g.stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gate stderr:\n%s", g.stderr.String())
		}
	})
	return g
}

// noTokenLeak checks that the header's value reached neither the gate's
// stderr nor its audit log.
func noTokenLeak(t *testing.T, g *gate) {
	t.Helper()
	audit, _ := os.ReadFile(g.audit)
	if strings.Contains(g.stderr.String(), remoteToken) || strings.Contains(string(audit), remoteToken) {
		t.Errorf("the secret (a header value, a url query) reached the gate's stderr or audit log")
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs the reference server-everything in one of its
// HTTP modes on a loopback port and returns its address.
func startEverythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	needNode(t)
	port := freePort(t)
	wd, _ := os.Getwd()
	cmd := exec.Command("node", "--require", filepath.Join(wd, "testdata", "loopback.cjs"),
		filepath.Join(nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "GZIP_ALLOWED_DOMAINS=example.invalid")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "server-everything "+mode+" to listen", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr
}

const remotePolicy = `version: 1
fallback: deny
deny:
  - mcp:ev:get-sum
allow:
  - mcp:ev:echo
  - mcp:ev:get-tiny-image
  - mcp:ev:get-structured-content
`

// Issue #11: the reference server-everything over Streamable HTTP and over
// legacy SSE, through the real binary: its tools listed and called, the
// policy deciding, the header's secret kept out of every log.
func TestRemoteEverything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, typ, path string }{
		{"streamableHttp", "http", "/mcp"},
		{"sse", "sse", "/sse"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			base := startEverythingHTTP(t, tc.mode)
			g := remoteGate(t, map[string]any{"ev": map[string]any{
				"type": tc.typ, "url": base + tc.path,
				"headers": map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"},
			}}, "--policy", writePolicy(t, remotePolicy))
			sess := g.connect(t, nil)
			tools := toolNames(t, sess)
			if tools["ev__echo"] == nil || tools["ev__get-tiny-image"] == nil {
				t.Fatalf("server-everything's tools are not listed: %v", keys(tools))
			}
			if tools["ev__get-sum"] != nil {
				t.Error("ev__get-sum is listed although the policy denies it")
			}
			if got := resultText(call(t, sess, "ev__echo", map[string]any{"message": "over " + tc.mode})); !strings.Contains(got, "over "+tc.mode) {
				t.Errorf("echo: %q", got)
			}
			res := call(t, sess, "ev__get-sum", map[string]any{"a": 1, "b": 2})
			if !res.IsError || !strings.Contains(resultText(res), "deny[0]") {
				t.Errorf("a denied call: %v %q", res.IsError, resultText(res))
			}
			res = call(t, sess, "ev__get-env", map[string]any{})
			if !res.IsError || !strings.Contains(resultText(res), "fallback") {
				t.Errorf("an unmatched call: %v %q", res.IsError, resultText(res))
			}
			res = call(t, sess, "ev__get-tiny-image", map[string]any{})
			if res.IsError || len(res.Content) == 0 {
				t.Errorf("get-tiny-image: %+v", res)
			}
			sess.Close()
			noTokenLeak(t, g)
		})
	}
}

// startRemoteHostile runs the hostile HTTP server (testserver --mode
// remote) and returns its base URL and event file.
func startRemoteHostile(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events")
	cmd := exec.Command(testserverBin, append([]string{"--mode", "remote", "--events", events}, extra...)...)
	cmd.Env = append(os.Environ(), "REMOTE_EXPECT_AUTH=Bearer "+remoteToken)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the hostile server did not say where it listens: %v", err)
	}
	return strings.TrimSpace(line), events
}

// remoteCallErr calls a tool and returns what the host sees: the error text of a
// JSON-RPC error or of an isError result, or "" for a success.
func remoteCallErr(t *testing.T, sess *mcp.ClientSession, name string) (text string, failed bool) {
	t.Helper()
	res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return err.Error(), true
	}
	return resultText(res), res.IsError
}

// Issue #11: a hostile HTTP server costs the host one clear error per
// misbehaviour, never a hang or a crash, and the policy, the guard and the
// secrecy of the headers hold as for stdio servers.
func TestRemoteHostile(t *testing.T) {
	t.Parallel()
	base, events := startRemoteHostile(t, "--huge", "3000000")
	g := remoteGate(t, map[string]any{
		"hostile":  map[string]any{"type": "http", "url": base + "/mcp?k=${REMOTE_TOKEN}", "headers": map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		"badsid":   map[string]any{"type": "http", "url": base + "/badsid/mcp"},
		"changing": map[string]any{"type": "http", "url": base + "/changing/mcp"},
		"crossorg": map[string]any{"type": "sse", "url": base + "/sse?key=${REMOTE_TOKEN}", "headers": map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		"legacy":   map[string]any{"type": "sse", "url": base + "/sse-ok", "headers": map[string]string{"X-Api-Key": "${REMOTE_TOKEN}"}},
	}, "--max-message-bytes", "1000000")
	sess := g.connect(t, nil)
	tools := toolNames(t, sess)
	for _, n := range []string{"hostile__echo", "hostile__huge", "legacy__echo"} {
		if tools[n] == nil {
			t.Errorf("%s is not listed: %v", n, keys(tools))
		}
	}
	for _, tc := range []struct {
		tool, want string
		fails      bool
	}{
		{"hostile__whoami", "authorized=true", false},
		{"hostile__echo", "echo over http", false},
		{"hostile__slow", "slow but there", false},
		{"hostile__drop", "resumed after the drop", false},
		{"hostile__dropnoid", "with no event id to resume it from", true},
		{"hostile__huge", "exceeds the limit of 1000000 bytes", true},
		{"hostile__forge", "approval", true}, // the guard, as for stdio
		{"hostile__echo", "echo over http", false},
		{"hostile__expire", "ended the MCP session (HTTP 404", true},
		{"badsid__anything", "visible ASCII", true},
		{"changing__anything", "another session id", true},
		{"crossorg__anything", "another origin", true},
		{"legacy__echo", "echo over legacy sse", false},
	} {
		text, failed := remoteCallErr(t, sess, tc.tool)
		t.Logf("%s: %s", tc.tool, text)
		if failed != tc.fails || !strings.Contains(text, tc.want) {
			t.Errorf("%s: failed=%t %q; want failed=%t and %q", tc.tool, failed, text, tc.fails, tc.want)
		}
	}
	// After the expiry, a new session serves the next call.
	waitFor(t, "a new session after the expiry", 20*time.Second, func() bool {
		text, failed := remoteCallErr(t, sess, "hostile__echo")
		return !failed && strings.Contains(text, "echo over http")
	})
	b, _ := os.ReadFile(events)
	if !strings.Contains(string(b), "resumed from d-") {
		t.Errorf("the dropped stream was not resumed with Last-Event-ID: %s", b)
	}
	if !strings.Contains(string(b), "call forge") {
		t.Errorf("the forge call did not reach the server: %s", b)
	}
	sess.Close() // the gate exits, stopping its upstreams
	b, _ = os.ReadFile(events)
	if !strings.Contains(string(b), "delete true") {
		t.Errorf("no DELETE of the session at shutdown: %s", b)
	}
	noTokenLeak(t, g)
}

// Issue #11: the server's own requests (sampling, elicitation, roots) reach
// the host through a remote upstream, and the host's answers go back: over
// Streamable HTTP they come on the call's reply stream and are answered by
// POSTs; over legacy SSE they come on the session's stream.
func TestRemoteUpstreamRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, typ, path string }{
		{"streamableHttp", "http", "/mcp"},
		{"sse", "sse", "/sse"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			base := startEverythingHTTP(t, tc.mode)
			// The elicitation tool echoes the answer into its result, which
			// the guard refuses (see TestUpstreamRequestsRelayed): log-only.
			pol := writePolicy(t, "version: 1\nfallback: deny\nallow: [\"mcp:**\", \"sampling:**\"]\nguard:\n  log_only: [ev]\n")
			g := remoteGate(t, map[string]any{"ev": map[string]any{"type": tc.typ, "url": base + tc.path}}, "--policy", pol)
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ ctxType, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "check": true}}, nil
				},
				CreateMessageHandler: func(_ ctxType, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled!"}}, nil
				},
			})
			client.AddRoots(&mcp.Root{URI: "file:///e2e/root", Name: "e2e-root"})
			sess := g.connectClient(t, client)
			if got := resultText(call(t, sess, "ev__trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})); !strings.Contains(got, "e2e-model") {
				t.Errorf("sampling result: %q", got)
			}
			if got := resultText(call(t, sess, "ev__trigger-elicitation-request", map[string]any{})); !strings.Contains(got, "Name: Ada") {
				t.Errorf("elicitation result: %q", got)
			}
			if got := resultText(call(t, sess, "ev__get-roots-list", map[string]any{})); !strings.Contains(got, "file:///e2e/root") {
				t.Errorf("roots result: %q", got)
			}
		})
	}
}
