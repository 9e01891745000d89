package httpfront

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

func modernReq(t *testing.T, body string, hdr map[string]string) (*rpc.Message, func() string) {
	t.Helper()
	m, err := rpc.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	for k, v := range hdr {
		r.Header.Add(k, v)
	}
	return m, func() string { return checkModernHeaders(r, m) }
}

const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestCheckModernHeaders(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b",` + env + `}}`
	read := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x",` + env + `}}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + env + `}}`
	for _, c := range []struct {
		what, body string
		hdr        map[string]string
		bad        string // "" when accepted, else a word of the reason
	}{
		{"agree", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "a__b", "MCP-Protocol-Version": "2026-07-28"}, ""},
		{"ows", call, map[string]string{"Mcp-Method": " tools/call\t", "Mcp-Name": " a__b "}, ""},
		{"base64", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?YV9fYg==?="}, ""},
		{"list needs no name", list, map[string]string{"Mcp-Method": "tools/list"}, ""},
		{"uri", read, map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "file:///x"}, ""},
		{"uri other", read, map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "file:///y"}, "Mcp-Name"},
		{"name other", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "a__c"}, "Mcp-Name"},
		{"name missing", call, map[string]string{"Mcp-Method": "tools/call"}, "absent"},
		{"method missing", call, map[string]string{"Mcp-Name": "a__b"}, "absent"},
		{"method other", call, map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "a__b"}, "Mcp-Method"},
		{"method twice", call, map[string]string{"Mcp-Method": "tools/call", "mcp-method": "tools/call", "Mcp-Name": "a__b"}, "Mcp-Method"},
		{"version other", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "a__b", "MCP-Protocol-Version": "2025-11-25"}, "MCP-Protocol-Version"},
		{"bad base64", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?YV9fYg?="}, "invalid"},
		{"base64 of other", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?YV9fYw==?="}, "Mcp-Name"},
	} {
		_, check := modernReq(t, c.body, c.hdr)
		got := check()
		if (got == "") != (c.bad == "") || !strings.Contains(got, c.bad) {
			t.Errorf("%s: %q, want %q", c.what, got, c.bad)
		}
	}
}

func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{"a__b", "=?base64?YV9fYg==?=", "=?base64??=", "=?base64?", "=?base64?***?=", "=?base64?/w==?="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := decodeHeaderValue(v)
		if ok && strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= 11 && strings.Contains(d, "\uFFFD") && !strings.Contains(v, "\uFFFD") {
			t.Fatalf("%q decoded to invalid text %q", v, d)
		}
	})
}

// Close ends a 2026-07-28 request's session whose call is still running,
// as it ends the sessions of the older era.
func TestModernCloseEndsRequests(t *testing.T) {
	h, url := newTestServer(t, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"wait":true},` + env + `}}`
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "x")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for h.inflight.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { h.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		cancel() // lets the request, and so Close, end
		<-closed
		t.Fatal("Close waited for a 2026-07-28 call in flight until its client went away")
	}
	<-done
}

// A 2026-07-28 request in flight is a session for its duration: it counts
// against the per-user and total bounds, as 2025-11-25 sessions do, so one
// identity cannot hold any number of them (before, neither bound saw
// them).
func TestModernRequestsCountAgainstTheBounds(t *testing.T) {
	h, url := newTestServer(t, func(o *Options) {
		o.MaxSessionsPerUser = 1
		o.Auth = fakeAuth{"tok-alice": {Subject: "alice"}, "tok-bob": {Subject: "bob"}}
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"wait":true},` + env + `}}`
	hdr := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Mcp-Method": "tools/call", "Mcp-Name": "x"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr("tok-alice") {
			req.Header.Set(k, v)
		}
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		n := h.requestsTotal
		h.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's request never came in flight")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Bounded: a request let through would wait as the first does.
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr("tok-alice") {
		req.Header.Set(k, v)
	}
	if r, err := (&http.Client{Timeout: 5 * time.Second}).Do(req); err != nil {
		t.Errorf("alice's second request in flight was let in (no answer: %v)", err)
	} else if r.StatusCode != 503 || !strings.Contains(readAll(r), "alice holds the limit of 1 sessions per user") {
		t.Errorf("alice's second request in flight: %d", r.StatusCode)
	}
	alice := &client{t: t, url: url, token: "tok-alice"}
	if r := alice.do("POST", initMsg, nil); r.StatusCode != 503 {
		t.Errorf("a 2025 session for alice beside her request in flight: %d", r.StatusCode)
	}
	(&client{t: t, url: url, token: "tok-bob"}).init() // bob is not held back by alice
	cancel()
	deadline = time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		n, total := len(h.requests), h.requestsTotal
		h.mu.Unlock()
		if n == 0 && total == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request's count was not given back: %d identities, %d in all", n, total)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The host's text that a header mismatch names (the body's name or URI,
// a header's value, a name that is not a string) is rendered by
// guard.Quote, the gate's one renderer of untrusted text: strconv.Quote
// showed quote marks of other scripts as they came, and a name that is
// not a string was echoed raw and whole (its bidi controls, any length)
// into the error and the log's warning.
func TestCheckModernHeadersQuoteHostText(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, c := range []struct{ what, name, hdr string }{
		{"string", `"a\uff02 (approved) \uff02"`, "a__b"},
		{"header", `"a__b"`, "a\uff02 (approved)"},
		{"object", `{"k":"\u202e` + long + `"}`, "a__b"},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + c.name + `,` + env + `}}`
		_, check := modernReq(t, body, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": c.hdr})
		got := check()
		if got == "" {
			t.Fatalf("%s: accepted", c.what)
		}
		if strings.ContainsAny(got, "\uff02\u202e") || len(got) > 600 {
			t.Errorf("%s: the host's text stands raw in the reason (%d bytes): %.300q", c.what, len(got), got)
		}
	}
}
