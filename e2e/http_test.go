package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP starts the gate with --http on a free loopback port and returns
// the endpoint's URL, read from the line the gate prints on stderr. The
// gate gets SIGTERM when the test ends.
func (g *gate) serveHTTP(t *testing.T) string {
	t.Helper()
	g.cmd.Args = append(g.cmd.Args, "--http", "127.0.0.1:0")
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { g.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			g.cmd.Process.Kill()
			<-exited
		}
	})
	re := regexp.MustCompile(`msg="serving Streamable HTTP" url=(\S+)`)
	var url string
	waitFor(t, "the gate to print its URL", 30*time.Second, func() bool {
		m := re.FindStringSubmatch(g.stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return url
}

// bearerClient is an HTTP client that sends a bearer token.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearerRT{token}}
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects a go-sdk client to the gate's endpoint.
func connectHTTP(t *testing.T, url string, hc *http.Client, opts *mcp.ClientOptions, noGET bool) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http-host", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: noGET, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// post sends one raw message and returns the response.
func post(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	// Bounded, so that a gate that never answers fails the test that
	// waits for it rather than hanging the package until go test's
	// timeout; no test waits on one POST for anywhere near this long.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ctx.Err() != nil {
		t.Fatalf("POST %s: no whole answer within the test's bound (%v); got %q", url, ctx.Err(), b)
	}
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Issue 12: the go-sdk client over Streamable HTTP against the real binary
// with server-everything behind it: list, call, and a session that ends on
// DELETE (the client's Close) and is unknown afterwards.
func TestHTTPGoSDKClient(t *testing.T) {
	t.Parallel()
	needNode(t)
	g := gateCommand(t, map[string]server{"everything": everything()})
	url := g.serveHTTP(t)
	sess := connectHTTP(t, url, nil, nil, false)
	tools := toolNames(t, sess)
	if tools["everything__echo"] == nil {
		t.Fatalf("no everything__echo in %v", tools)
	}
	res := call(t, sess, "everything__echo", map[string]any{"message": "over http"})
	if res.IsError || !strings.Contains(resultText(res), "Echo: over http") {
		t.Fatalf("echo: %q", resultText(res))
	}
	sid := sess.ID()
	if len(sid) != 32 {
		t.Errorf("session id %q: want 128 random bits in hex", sid)
	}
	sess.Close()
	resp, body := post(t, url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request on a deleted session: %d %s, want 404", resp.StatusCode, body)
	}
	// The user is the OS user in the audit log when no auth is configured.
	var users []any
	for _, l := range g.auditLines(t) {
		if l["event"] == "decision" {
			users = append(users, l["user"])
		}
	}
	if len(users) == 0 || users[0] != fmt.Sprintf("uid:%d", os.Getuid()) {
		t.Errorf("decision users %v, want uid:%d", users, os.Getuid())
	}
}

// Issue 12: the gate's approval question travels on the SSE stream of the
// call it is about. The client opens no GET stream, so the call's own
// stream is the only way the question can reach it.
func TestHTTPApprovalOnTheCallsStream(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, askEchoPolicy))
	url := g.serveHTTP(t)
	a := &asker{}
	a.set(reply("accept", map[string]any{"approve": true}))
	sess := connectHTTP(t, url, nil, &mcp.ClientOptions{ElicitationHandler: a.handler}, true)
	res := call(t, sess, "honest__echo", map[string]any{"text": "approved over sse"})
	if res.IsError || resultText(res) != "approved over sse" || a.asked.Load() != 1 {
		t.Fatalf("approved call: %q, asked %d times", resultText(res), a.asked.Load())
	}
	a.set(reply("decline", nil))
	res = call(t, sess, "honest__echo", map[string]any{"text": "declined"})
	if !res.IsError || !strings.Contains(resultText(res), "declined by the user") {
		t.Fatalf("declined call: %q", resultText(res))
	}
	b, _ := os.ReadFile(events)
	if !strings.Contains(string(b), "echo approved over sse") || strings.Contains(string(b), "echo declined") {
		t.Errorf("upstream saw:\n%s", b)
	}
}

// Issue 12: an upstream's own elicitation, relayed by the gate during a
// call, reaches an HTTP client that has no GET stream.
func TestHTTPUpstreamElicitation(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	a := &asker{}
	a.set(reply("accept", map[string]any{"name": "Ada"}))
	sess := connectHTTP(t, url, nil, &mcp.ClientOptions{ElicitationHandler: a.handler}, true)
	res := call(t, sess, "honest__ask", map[string]any{})
	if res.IsError || !strings.Contains(resultText(res), "Ada") {
		t.Fatalf("ask: %q (asked %d)", resultText(res), a.asked.Load())
	}
	if a.mu.Lock(); len(a.messages) != 1 || !strings.HasPrefix(a.messages[0], "[honest] ") {
		t.Errorf("the question: %q", a.messages)
	}
	a.mu.Unlock()
}

// Issue 12: the TypeScript SDK's client over Streamable HTTP.
func TestHTTPTypeScriptClient(t *testing.T) {
	t.Parallel()
	needNode(t)
	g := gateCommand(t, map[string]server{"everything": everything()})
	url := g.serveHTTP(t)
	out, err := runNodeClient(t, url, "everything__echo", `{"message":"from ts"}`, "")
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	var got struct {
		Tools  []string
		Result struct {
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &got); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}
	if !strings.Contains(strings.Join(got.Tools, ","), "everything__echo") || len(got.Result.Content) == 0 || got.Result.Content[0].Text != "Echo: from ts" {
		t.Fatalf("node client: %s", out)
	}
}

func runNodeClient(t *testing.T, url, tool, args, bearer string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeModules, ".bin", "node"), filepath.Join("testdata", "http_client.mjs"), url, tool, args, bearer)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Issue 12: DNS rebinding. A foreign Host or Origin gets 403 with the
// reason; loopback ones are served.
func TestHTTPForeignOriginAndHost(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	for _, c := range []struct {
		hdr  map[string]string
		code int
		says string
	}{
		{map[string]string{"Origin": "http://evil.example"}, 403, `the Origin "http://evil.example" is not allowed`},
		{map[string]string{"Host": "evil.example:80"}, 403, `the Host header "evil.example:80" is not a name of this gate`},
		{map[string]string{"Origin": "null"}, 403, `not an http(s) origin`},
		{map[string]string{"Origin": "http://localhost:1234"}, 200, ""},
		{map[string]string{}, 200, ""},
	} {
		resp, body := post(t, url, c.hdr, initBody)
		if resp.StatusCode != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%v: %d %q, want %d saying %q", c.hdr, resp.StatusCode, body, c.code, c.says)
		}
	}
}

// Issue 12: without authentication, the gate does not serve beyond
// loopback.
func TestHTTPNonLoopbackNeedsAuth(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--http", "0.0.0.0:0")
	err := g.cmd.Run()
	if err == nil || !strings.Contains(g.stderr.String(), "refusing to serve a non-loopback address without authentication") {
		t.Fatalf("exit %v; stderr:\n%s", err, g.stderr.String())
	}
}

// Issue 12: SIGTERM drains: a call in flight finishes and is answered, the
// gate exits 0, and no new connection is accepted meanwhile.
func TestHTTPDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	sess := connectHTTP(t, url, nil, nil, false)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := sess.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "honest__slow", Arguments: map[string]any{"steps": 4, "ms": 300}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	waitFor(t, "the slow call to start", 20*time.Second, func() bool { return strings.Contains(g.stderr.String(), `msg=decision`) || len(g.auditLines(t)) > 1 })
	time.Sleep(200 * time.Millisecond)
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.IsError || resultText(res) != "done" {
			t.Fatalf("the call in flight during the drain: %q", resultText(res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight was not answered")
	}
	waitFor(t, "the gate to stop", 30*time.Second, func() bool { return strings.Contains(g.stderr.String(), "msg=stopped") })
}

// Issue 12: the official conformance suite against serve --http with
// server-everything behind it. Scenarios that call the suite's own tool,
// prompt and resource names (which server-everything does not have, and
// which the gate prefixes with the server's name) are expected to fail and
// are listed in docs; every other scenario must pass.
func TestHTTPConformance(t *testing.T) {
	// Not parallel (see harness_test.go): the conformance suite is heavy on both CPUs.
	if os.Getenv("CI") != "true" {
		t.Skip("the conformance suite takes a minute; it runs when CI=true (CI=true go test -run TestHTTPConformance ./e2e/)")
	}
	needNode(t)
	g := gateCommand(t, map[string]server{"everything": everything()})
	url := g.serveHTTP(t)
	outDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeModules, ".bin", "node"), filepath.Join(nodeModules, ".bin", "conformance"), "server", "--url", url, "-o", outDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // it exits non-zero for the expected failures; the summary decides
	results := map[string]string{}
	re := regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed`)
	for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
		results[m[2]] = m[1]
	}
	mustPass := []string{"server-initialize", "logging-set-level", "ping", "tools-list", "resources-list", "prompts-list", "server-sse-multiple-streams", "dns-rebinding-protection", "resources-subscribe", "resources-unsubscribe"}
	for _, s := range mustPass {
		if results[s] != "✓" {
			t.Errorf("conformance scenario %s: %q, want it to pass", s, results[s])
		}
	}
	for s, r := range results {
		if r == "✓" && !contains(mustPass, s) {
			t.Logf("scenario %s now passes too: add it to mustPass and to the docs", s)
		}
	}
	// Every failure is one of the names the suite calls and server-everything
	// does not have: any other failure (a transport or protocol problem)
	// fails the test, whichever scenario it is in.
	// A test:// URI no server lists goes to the one server with resources
	// (issue 11's routing), whose own "not found" comes back.
	nameOnly := regexp.MustCompile(`unknown (tool|prompt) "test_|no upstream server lists "test://|Resource test://\S+ not found`)
	files, _ := filepath.Glob(filepath.Join(outDir, "*", "checks.json"))
	if len(files) < len(mustPass) {
		t.Errorf("the suite wrote %d result files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			if c.Status == "FAILURE" && !nameOnly.MatchString(c.ErrorMessage) {
				t.Errorf("%s: %s failed for a reason other than the suite's own names: %s", filepath.Base(filepath.Dir(f)), c.ID, c.ErrorMessage)
			}
		}
	}
	if len(results) < len(mustPass) || t.Failed() {
		t.Logf("conformance output:\n%s", out.String())
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
