package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 14 over HTTP: a client of protocol revision 2026-07-28 driven byte
// by byte against the real binary's Streamable HTTP front end, and a
// 2025-11-25 client on the same gate.

// modernHTTP is a raw 2026-07-28 HTTP client: every request a POST of its
// own, with the envelope and the mirrored headers.
type modernHTTP struct {
	t    *testing.T
	url  string
	caps string
	seq  atomic.Int64
}

func (c *modernHTTP) envelope() string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw-modern-http","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + c.caps + `}`
}

// headers are the ones a conforming client sends for method, name.
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// request POSTs method with params members and the envelope, headers
// mirroring it, and returns the status, the Mcp-Session-Id and the body.
func (c *modernHTTP) request(method, name, members string) (int, string) {
	c.t.Helper()
	id := c.seq.Add(1)
	if members != "" {
		members += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, members, c.envelope())
	resp, b := post(c.t, c.url, modernHeaders(method, name), body)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.t.Fatalf("a 2026-07-28 response carries a session id %q", sid)
	}
	return resp.StatusCode, b
}

// ok POSTs and fails unless the answer is 200 with a JSON body.
func (c *modernHTTP) ok(method, name, members string) string {
	c.t.Helper()
	status, b := c.request(method, name, members)
	if status != http.StatusOK {
		c.t.Fatalf("%s %s: status %d: %s", method, name, status, b)
	}
	return b
}

func TestModernHostHTTP(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, eraPolicy))
	url := g.serveHTTP(t)
	c := &modernHTTP{t: t, url: url, caps: formCaps}

	// Discover, list: complete, no session.
	d := modernResult(t, c.ok("server/discover", "", ""))
	if d["resultType"] != "complete" || fmt.Sprint(d["supportedVersions"]) != "[2026-07-28]" || d["capabilities"] == nil {
		t.Fatalf("discover: %v", d)
	}
	resp := c.ok("tools/list", "", "")
	if l := modernResult(t, resp); l["resultType"] != "complete" || !strings.Contains(resp, `"name":"honest__echo"`) {
		t.Fatalf("tools/list: %s", resp)
	}
	// An allowed call.
	if text, isErr := toolText(t, c.ok("tools/call", "honest__blob", `"name":"honest__blob","arguments":{"bytes":3}`)); isErr || text != "xxx" {
		t.Fatalf("allowed call: %q isError=%v", text, isErr)
	}
	// Asked and approved: two POSTs, the second carrying the answer and
	// the state minted while serving the first.
	state := inputRequired(t, c.ok("tools/call", "honest__echo", echoCall("approved")))
	if strings.Contains(readEvents(t, events), "echo approved") {
		t.Fatal("the asked call reached the upstream before the answer")
	}
	retry := echoCall("approved") + `,` + answer("accept", true) + `,"requestState":` + fmt.Sprintf("%q", state)
	if text, isErr := toolText(t, c.ok("tools/call", "honest__echo", retry)); isErr || text != "approved" {
		t.Fatalf("approved retry: %q isError=%v", text, isErr)
	}
	if text, isErr := toolText(t, c.ok("tools/call", "honest__echo", retry)); !isErr || !strings.Contains(text, "used before") {
		t.Fatalf("replayed state: %q isError=%v", text, isErr)
	}
	refused := func(what, args, ans, st, says string) {
		t.Helper()
		got, isErr := toolText(t, c.ok("tools/call", "honest__echo", echoCall(args)+`,`+ans+`,"requestState":`+fmt.Sprintf("%q", st)))
		if !isErr || !strings.Contains(got, says) {
			t.Fatalf("%s: %q isError=%v, want a refusal saying %q", what, got, isErr, says)
		}
		if strings.Contains(readEvents(t, events), "echo "+args) {
			t.Fatalf("%s: the call reached the upstream", what)
		}
	}
	refused("declined", "declined", answer("decline", false), inputRequired(t, c.ok("tools/call", "honest__echo", echoCall("declined"))), "declined by the user")
	st := inputRequired(t, c.ok("tools/call", "honest__echo", echoCall("harmless")))
	refused("re-targeted", "rm -rf", answer("accept", true), st, "issued for another call")
	st = inputRequired(t, c.ok("tools/call", "honest__echo", echoCall("tampered")))
	b := []byte(st)
	b[10] ^= 1
	refused("tampered", "tampered", answer("accept", true), string(b), "failed verification")
	st = inputRequired(t, c.ok("tools/call", "honest__echo", echoCall("late")))
	time.Sleep(2100 * time.Millisecond)
	refused("expired", "late", answer("accept", true), st, "expired")

	// Headers that disagree with the body, or are missing: 400, -32020,
	// and nothing served.
	mismatches := []struct {
		what   string
		hdr    map[string]string
		method string
		body   string
	}{
		{"Mcp-Name names another tool", modernHeaders("tools/call", "honest__blob"), "tools/call", echoCall("smuggled")},
		{"Mcp-Method names another method", modernHeaders("tools/list", "honest__echo"), "tools/call", echoCall("smuggled")},
		{"Mcp-Method missing", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": "honest__echo"}, "tools/call", echoCall("smuggled")},
		{"Mcp-Name missing", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, "tools/call", echoCall("smuggled")},
		{"MCP-Protocol-Version names another version", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "honest__echo"}, "tools/call", echoCall("smuggled")},
		{"Mcp-Name base64 of another tool", modernHeaders("tools/call", "=?base64?aG9uZXN0X19ibG9i?="), "tools/call", echoCall("smuggled")},
		{"Mcp-Name bad base64", modernHeaders("tools/call", "=?base64?***?="), "tools/call", echoCall("smuggled")},
	}
	for _, m := range mismatches {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":77,"method":%q,"params":{%s,%s}}`, m.method, m.body, c.envelope())
		r, b := post(t, url, m.hdr, body)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d %s, want 400", m.what, r.StatusCode, b)
			continue
		}
		if code, _, _ := rpcErrorOf(t, b); code != -32020 {
			t.Errorf("%s: %s, want -32020", m.what, b)
		}
	}
	// The base64 form of the right name is accepted.
	if _, b := post(t, url, modernHeaders("tools/call", "=?base64?aG9uZXN0X19ibG9i?="), fmt.Sprintf(`{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"honest__blob","arguments":{"bytes":2},%s}}`, c.envelope())); !strings.Contains(b, `"xx"`) {
		t.Errorf("a base64 Mcp-Name naming the body's tool: %s", b)
	}
	if strings.Contains(readEvents(t, events), "smuggled") {
		t.Fatal("a request whose headers disagree with its body was served")
	}
	// Envelope errors: 400 with the era's codes.
	r, eb := post(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":79,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if code, _, _ := rpcErrorOf(t, eb); r.StatusCode != 400 || code != -32602 {
		t.Errorf("missing capabilities: %d %s", r.StatusCode, eb)
	}
	r, eb = post(t, url, map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":80,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if code, _, _ := rpcErrorOf(t, eb); r.StatusCode != 400 || code != -32022 {
		t.Errorf("unsupported version: %d %s", r.StatusCode, eb)
	}
	bare := &modernHTTP{t: t, url: url, caps: `{}`}
	status, eb := bare.request("tools/call", "honest__echo", echoCall("x")+`,`+answer("accept", true)+`,"requestState":"x.y"`)
	if code, _, _ := rpcErrorOf(t, eb); status != 400 || code != -32021 {
		t.Errorf("retry without elicitation: %d %s", status, eb)
	}
	// The modern header on a body without the envelope.
	r, eb = post(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":81,"method":"tools/list","params":{}}`)
	if code, _, _ := rpcErrorOf(t, eb); r.StatusCode != 400 || code != -32602 {
		t.Errorf("modern header without envelope: %d %s", r.StatusCode, eb)
	}
	// No GET stream, no session to delete.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
			t.Errorf("%s by a 2026-07-28 client: %d Allow=%q, want 405 Allow=POST", method, res.StatusCode, res.Header.Get("Allow"))
		}
	}

	// A 2025-11-25 client on the same gate: a session, as before.
	// It declares form elicitation, which the gate declares upstream for
	// every 2026-07-28 request (its questions are parked for those).
	r, ib := post(t, url, nil, strings.Replace(initBody, `"capabilities":{}`, `"capabilities":{"elicitation":{"form":{}}}`, 1))
	sid := r.Header.Get("Mcp-Session-Id")
	if r.StatusCode != 200 || sid == "" || !strings.Contains(ib, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %s", r.StatusCode, ib)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, lb := post(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !strings.Contains(lb, `"honest__echo"`) || strings.Contains(lb, "resultType") {
		t.Fatalf("2025 tools/list: %s", lb)
	}
	_, cb := post(t, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"honest__blob","arguments":{"bytes":4}}}`)
	if !strings.Contains(cb, `"xxxx"`) {
		t.Fatalf("2025 call: %s", cb)
	}

	// The upstream was started once for all those requests.
	// (The 2025 session declared what the gate declares upstream for
	// 2026-07-28 requests, so it shares the principal's children too.)
	if n := countStderr(g.stderr, `msg="upstream started" server=honest`, 1); n != 1 {
		t.Errorf("upstream started %d times, want once:\n%s", n, g.stderr.String())
	}
	outcomes := map[string]int{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			outcomes[fmt.Sprint(l["outcome"])]++
		}
	}
	if outcomes["input_required"] != 5 || outcomes["approved"] != 1 || outcomes["invalid_state"] != 4 || outcomes["declined"] != 1 {
		t.Errorf("approval audit outcomes: %v", outcomes)
	}
}

// Closing the response of a 2026-07-28 call cancels it: the upstream gets
// the cancellation.
func TestModernHTTPCloseCancels(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow:\n  - mcp:honest:*\n"))
	url := g.serveHTTP(t)
	c := &modernHTTP{t: t, url: url, caps: formCaps}
	c.ok("tools/list", "", "")
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"honest__slow","arguments":{"steps":600,"ms":100},%s}}`, c.envelope())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range modernHeaders("tools/call", "honest__slow") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	waitFor(t, "the call to reach the upstream", 30*time.Second, func() bool { return strings.Contains(readEvents(t, events), "slow started") })
	cancel()
	<-done
	waitFor(t, "the upstream to see the cancellation", 30*time.Second, func() bool {
		return strings.Contains(readEvents(t, events), "cancelled slow")
	})
}

// Two users of one team gate over HTTP at 2026-07-28: each has its own
// upstream processes, and a requestState minted for one user's call does
// not redeem for the other's identical call.
func TestModernHTTPPrincipals(t *testing.T) {
	t.Parallel()
	aliceTok, bobTok := "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(file, []byte(aliceTok+": {sub: alice}\n"+bobTok+": {sub: bob}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, eraPolicy), "--auth-tokens", file)
	url := g.serveHTTP(t)
	as := func(tok, method, name, members string) string {
		t.Helper()
		c := &modernHTTP{t: t, url: url, caps: formCaps}
		if members != "" {
			members += ","
		}
		hdr := modernHeaders(method, name)
		hdr["Authorization"] = "Bearer " + tok
		r, b := post(t, url, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s%s}}`, method, members, c.envelope()))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", method, r.StatusCode, b)
		}
		return b
	}
	// Without a token: 401, as for the older era.
	if r, _ := post(t, url, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.StatusCode)
	}
	as(aliceTok, "tools/list", "", "")
	as(bobTok, "tools/list", "", "")
	st := inputRequired(t, as(aliceTok, "tools/call", "honest__echo", echoCall("alice's")))
	retry := echoCall("alice's") + `,` + answer("accept", true) + `,"requestState":` + fmt.Sprintf("%q", st)
	if text, isErr := toolText(t, as(bobTok, "tools/call", "honest__echo", retry)); !isErr || !strings.Contains(text, "issued for another call") {
		t.Fatalf("alice's state presented by bob: %q isError=%v", text, isErr)
	}
	if strings.Contains(readEvents(t, events), "echo alice's") {
		t.Fatal("bob ran a call on alice's approval")
	}
	// Alice's own round works.
	st = inputRequired(t, as(aliceTok, "tools/call", "honest__echo", echoCall("alice's")))
	retry = echoCall("alice's") + `,` + answer("accept", true) + `,"requestState":` + fmt.Sprintf("%q", st)
	if text, isErr := toolText(t, as(aliceTok, "tools/call", "honest__echo", retry)); isErr || text != "alice's" {
		t.Fatalf("alice's own retry: %q isError=%v", text, isErr)
	}
	if n := countStderr(g.stderr, `msg="upstream started" server=honest`, 2); n != 2 {
		t.Errorf("upstream started %d times, want once per user", n)
	}
}
