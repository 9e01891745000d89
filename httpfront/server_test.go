package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/auth"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// fakeSession is what a gate session does, reduced to what the transport
// must carry: initialize, whoami (the identity), tools/call with
// arguments.ask (a question to the client from the call's context, whose
// answer is the result) or arguments.progress (a progress notification
// sent from no call's context, routed by its token), and anything else
// echoed.
type fakeSession struct {
	conn *rpc.Conn
	id   proxy.Identity
}

func (f *fakeSession) HandleNotification(*rpc.Message) {}

func (f *fakeSession) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	switch req.Method {
	case "initialize":
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`), nil
	case "whoami":
		b, _ := json.Marshal(f.id.Subject)
		return b, nil
	case "tools/call":
		var p struct {
			Arguments struct {
				Ask      bool
				Progress bool
				Wait     bool
			}
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		json.Unmarshal(req.Params, &p)
		switch {
		case p.Arguments.Ask:
			return f.conn.Call(ctx, "elicitation/create", json.RawMessage(`{"message":"ok?"}`))
		case p.Arguments.Progress:
			params, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1})
			f.conn.Notify(context.Background(), "notifications/progress", params)
			return json.RawMessage(`{"done":true}`), nil
		case p.Arguments.Wait:
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return json.RawMessage(`{}`), nil
}

type fakeAuth map[string]auth.Principal

func (a fakeAuth) Authenticate(_ context.Context, tok string) (auth.Principal, error) {
	p, ok := a[tok]
	if !ok {
		return auth.Principal{}, errors.New("invalid token: unknown")
	}
	return p, nil
}

func (a fakeAuth) AuthorizationServers() []string { return []string{"https://issuer.test"} }

func newTestServer(t *testing.T, mod func(*Options)) (*Handler, string) {
	t.Helper()
	opts := Options{
		Logger: slog.New(slog.DiscardHandler),
		Serve: func(ctx context.Context, id proxy.Identity, tr rpc.Transport) error {
			f := &fakeSession{id: id}
			f.conn = rpc.New(tr, f, rpc.Options{Peer: "host", Logger: slog.New(slog.DiscardHandler), AnswerBadInput: true})
			return f.conn.Run(ctx)
		},
		Anonymous: proxy.Identity{Subject: "uid:test"},
	}
	if mod != nil {
		mod(&opts)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return h, srv.URL + "/mcp"
}

type client struct {
	t     *testing.T
	url   string
	sid   string
	token string
}

func (c *client) do(method, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set(HeaderSessionID, c.sid)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func readAll(r *http.Response) string {
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

func (c *client) init() {
	c.t.Helper()
	resp := c.do("POST", initMsg, nil)
	body := readAll(resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		c.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	c.sid = resp.Header.Get(HeaderSessionID)
}

// events reads SSE events from a response body.
func events(r io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- d
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return ""
}

func TestSessionLifecycle(t *testing.T) {
	_, url := newTestServer(t, nil)
	c := &client{t: t, url: url}
	c.init()
	if len(c.sid) != 32 {
		t.Fatalf("session id %q: want 32 hex digits", c.sid)
	}
	other := &client{t: t, url: url}
	other.init()
	if other.sid == c.sid {
		t.Fatal("two sessions got one id")
	}
	if body := readAll(c.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil)); body != `{"jsonrpc":"2.0","id":2,"result":"uid:test"}` {
		t.Fatalf("whoami: %s", body)
	}
	// A notification is accepted with 202.
	if r := c.do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); r.StatusCode != 202 {
		t.Errorf("notification: %d", r.StatusCode)
	}
	noSession := &client{t: t, url: url}
	if r := noSession.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil); r.StatusCode != 400 {
		t.Errorf("no session id: %d", r.StatusCode)
	}
	unknown := &client{t: t, url: url, sid: strings.Repeat("0", 32)}
	if r := unknown.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil); r.StatusCode != 404 {
		t.Errorf("unknown session id: %d", r.StatusCode)
	}
	if r := c.do("DELETE", "", nil); r.StatusCode != 204 {
		t.Errorf("DELETE: %d", r.StatusCode)
	}
	if r := c.do("POST", `{"jsonrpc":"2.0","id":3,"method":"whoami"}`, nil); r.StatusCode != 404 {
		t.Errorf("after DELETE: %d, want 404", r.StatusCode)
	}
	if r := other.do("POST", `{"jsonrpc":"2.0","id":3,"method":"whoami"}`, nil); r.StatusCode != 200 {
		t.Errorf("the other session after DELETE: %d", r.StatusCode)
	}
}

// A question asked from a call's context goes on that call's SSE stream,
// not on the GET stream, and the answer POSTed back completes the call.
func TestQuestionOnTheCallsStream(t *testing.T) {
	_, url := newTestServer(t, nil)
	c := &client{t: t, url: url}
	c.init()
	get := c.do("GET", "", nil)
	if get.StatusCode != 200 || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %s", get.StatusCode, get.Header.Get("Content-Type"))
	}
	defer get.Body.Close()
	getEvents := events(get.Body)
	if r := c.do("GET", "", nil); r.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream: %d, want 409", r.StatusCode)
	}
	// Another call in flight with its own stream: the question must still
	// find the stream of the call that asks it.
	waiting := c.do("POST", `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"arguments":{"wait":true}}}`, nil)
	defer waiting.Body.Close()
	resp := c.do("POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"ask":true}}}`, nil)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tools/call answered as %s, want an SSE stream", resp.Header.Get("Content-Type"))
	}
	defer resp.Body.Close()
	ev := events(resp.Body)
	q := next(t, ev)
	var m struct {
		ID     json.RawMessage
		Method string
	}
	json.Unmarshal([]byte(q), &m)
	if m.Method != "elicitation/create" {
		t.Fatalf("first event on the call's stream: %s", q)
	}
	if r := c.do("POST", `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"action":"accept"}}`, nil); r.StatusCode != 202 {
		t.Fatalf("the answer: %d", r.StatusCode)
	}
	if final := next(t, ev); final != `{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}` {
		t.Fatalf("the call's response: %s", final)
	}
	select {
	case e := <-getEvents:
		t.Errorf("the GET stream carried %s", e)
	case <-time.After(100 * time.Millisecond):
	}
}

// A progress notification sent outside any call's context goes to the
// stream of the request holding its token, among several in flight.
func TestProgressFollowsItsToken(t *testing.T) {
	_, url := newTestServer(t, nil)
	c := &client{t: t, url: url}
	c.init()
	get := c.do("GET", "", nil)
	defer get.Body.Close()
	// Another call in flight, with an SSE stream of its own.
	waiting := c.do("POST", `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"arguments":{"wait":true}}}`, nil)
	defer waiting.Body.Close()
	resp := c.do("POST", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":"tok-8"},"arguments":{"progress":true}}}`, nil)
	defer resp.Body.Close()
	ev := events(resp.Body)
	if p := next(t, ev); !strings.Contains(p, `"progressToken":"tok-8"`) {
		t.Fatalf("first event: %s", p)
	}
	if final := next(t, ev); final != `{"jsonrpc":"2.0","id":8,"result":{"done":true}}` {
		t.Fatalf("response: %s", final)
	}
}

// A question with no stream to travel on fails at once.
func TestQuestionWithoutAStreamFails(t *testing.T) {
	tr := newTransport(slog.New(slog.DiscardHandler), 4, time.Second)
	err := tr.Write(context.Background(), &rpc.Message{ID: json.RawMessage("1"), Method: "roots/list"})
	if !errors.Is(err, errNoStream) {
		t.Fatalf("Write: %v, want errNoStream", err)
	}
	// A notification is dropped, not an error.
	if err := tr.Write(context.Background(), &rpc.Message{Method: "notifications/tools/list_changed"}); err != nil {
		t.Fatalf("notification: %v", err)
	}
}

// A stream nobody reads ends its session once the write timeout passes
// with the queue full, instead of holding the writer forever.
func TestStalledStream(t *testing.T) {
	tr := newTransport(slog.New(slog.DiscardHandler), 1, 50*time.Millisecond)
	get, _ := tr.openGet()
	_ = get
	n := &rpc.Message{Method: "notifications/message", Params: json.RawMessage(`{}`)}
	if err := tr.Write(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	var se *rpc.StallError
	if err := tr.Write(context.Background(), n); !errors.As(err, &se) {
		t.Fatalf("second write to a full, unread stream: %v, want a StallError", err)
	}
}

func TestDNSRebindingAndProtocolVersion(t *testing.T) {
	_, url := newTestServer(t, func(o *Options) { o.AllowedHosts = []string{"gate.internal", "other.internal:8443"} })
	c := &client{t: t, url: url}
	for _, tc := range []struct {
		hdr  map[string]string
		code int
		says string
	}{
		{map[string]string{"Host": "evil.example"}, 403, `the Host header "evil.example" is not a name of this gate`},
		{map[string]string{"Host": "other.internal:9999"}, 403, "is not a name of this gate"},
		{map[string]string{"Origin": "https://evil.example"}, 403, `the Origin "https://evil.example" is not allowed`},
		{map[string]string{"Origin": "file://"}, 403, "not an http(s) origin"},
		{map[string]string{"Host": "gate.internal:8080", "Origin": "https://gate.internal"}, 200, ""},
		{map[string]string{"Host": "other.internal:8443"}, 200, ""},
		{map[string]string{"Host": "localhost:1", "Origin": "http://[::1]:3000"}, 200, ""},
		{map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, "unsupported Mcp-Protocol-Version"},
		{map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, 200, ""},
		{map[string]string{"Accept": "application/json"}, 406, "Accept"},
		{map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
	} {
		r := c.do("POST", initMsg, tc.hdr)
		body := readAll(r)
		if r.StatusCode != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%v: %d %q, want %d saying %q", tc.hdr, r.StatusCode, body, tc.code, tc.says)
		}
	}
}

func TestBadBodies(t *testing.T) {
	_, url := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 200 })
	c := &client{t: t, url: url}
	for _, tc := range []struct {
		body string
		code int
		says string
	}{
		{`{"jsonrpc":"2.0","id":1,`, 400, `"code":-32700`},
		{`[` + initMsg + `]`, 400, "batches are not supported"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`, 413, "exceeds the limit of 200 bytes"},
	} {
		r := c.do("POST", tc.body, nil)
		body := readAll(r)
		if r.StatusCode != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%.40s: %d %q, want %d saying %q", tc.body, r.StatusCode, body, tc.code, tc.says)
		}
	}
}

func TestLimitsAndExpiry(t *testing.T) {
	h, url := newTestServer(t, func(o *Options) { o.MaxSessions = 1; o.IdleTimeout = 100 * time.Millisecond })
	a := &client{t: t, url: url}
	a.init()
	b := &client{t: t, url: url}
	if r := b.do("POST", initMsg, nil); r.StatusCode != 503 || !strings.Contains(readAll(r), "limit of 1 sessions") {
		t.Errorf("a session over the limit: %d", r.StatusCode)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Sessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := a.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil); r.StatusCode != 404 {
		t.Errorf("an idle session: %d, want 404 after expiry", r.StatusCode)
	}
	b.init() // room again
}

func TestSessionsPerUser(t *testing.T) {
	_, url := newTestServer(t, func(o *Options) {
		o.MaxSessionsPerUser = 1
		o.Auth = fakeAuth{"tok-alice": {Subject: "alice"}, "tok-bob": {Subject: "bob"}}
	})
	(&client{t: t, url: url, token: "tok-alice"}).init()
	again := &client{t: t, url: url, token: "tok-alice"}
	if r := again.do("POST", initMsg, nil); r.StatusCode != 503 || !strings.Contains(readAll(r), "alice holds the limit of 1 sessions per user") {
		t.Errorf("alice's second session: %d", r.StatusCode)
	}
	(&client{t: t, url: url, token: "tok-bob"}).init() // bob is not held back by alice
}

// Sessions are bound to the identity that created them; requests need a
// valid bearer token and are refused with a challenge naming the metadata.
func TestAuthAndIdentityBinding(t *testing.T) {
	_, url := newTestServer(t, func(o *Options) {
		o.Auth = fakeAuth{"tok-alice": {Subject: "alice", Groups: []string{"dev"}}, "tok-bob": {Subject: "bob"}}
	})
	anon := &client{t: t, url: url}
	r := anon.do("POST", initMsg, nil)
	readAll(r)
	prm := strings.TrimSuffix(url, "/mcp") + PRMPath + "/mcp"
	if r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+prm+`"` {
		t.Errorf("no token: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	bad := &client{t: t, url: url, token: "tok-mallory"}
	r = bad.do("POST", initMsg, nil)
	if body := readAll(r); r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(body, "unknown") {
		t.Errorf("bad token: %d %q %q", r.StatusCode, r.Header.Get("WWW-Authenticate"), body)
	}
	alice := &client{t: t, url: url, token: "tok-alice"}
	alice.init()
	if body := readAll(alice.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil)); !strings.Contains(body, `"alice"`) {
		t.Errorf("alice's whoami: %s", body)
	}
	bobOnAlice := &client{t: t, url: url, token: "tok-bob", sid: alice.sid}
	if r := bobOnAlice.do("POST", `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, nil); r.StatusCode != 404 {
		t.Errorf("bob on alice's session: %d, want 404", r.StatusCode)
	}
	resp, err := http.Get(prm)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); !strings.Contains(body, `"authorization_servers":["https://issuer.test"]`) || !strings.Contains(body, `"resource":"`+url+`"`) {
		t.Errorf("protected resource metadata: %s", body)
	}
}

// Drain waits for the requests in flight and refuses new ones meanwhile.
func TestDrain(t *testing.T) {
	h, url := newTestServer(t, nil)
	c := &client{t: t, url: url}
	c.init()
	var wg sync.WaitGroup
	wg.Add(1)
	started := make(chan struct{})
	go func() {
		defer wg.Done()
		close(started)
		readAll(c.do("POST", `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"arguments":{"wait":true}}}`, nil))
	}()
	<-started
	deadline := time.Now().Add(5 * time.Second)
	for h.inflight.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := h.Drain(ctx); err == nil || !strings.Contains(err.Error(), "1 requests still in flight") {
		t.Errorf("Drain with a call in flight: %v", err)
	}
	if r := c.do("POST", `{"jsonrpc":"2.0","id":3,"method":"whoami"}`, nil); r.StatusCode != 503 {
		t.Errorf("a request while draining: %d, want 503", r.StatusCode)
	}
	h.Close()
	wg.Wait()
}

// Once the last call has answered, Drain gives an open session's client
// drainGrace to read that answer before its streams may be ended, unless
// its context ends first.
func TestDrainGrace(t *testing.T) {
	h, url := newTestServer(t, nil)
	c := &client{t: t, url: url}
	c.init()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < drainGrace {
		t.Errorf("Drain with a session open returned after %v, before the grace of %v", took, drainGrace)
	}
	// A drain whose context has ended returns all the same.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if err := h.Drain(done); err != nil {
		t.Fatal(err)
	}
}

// An idle GET stream gets keep-alive comments, so a vanished client is
// noticed.
func TestKeepAlive(t *testing.T) {
	_, url := newTestServer(t, func(o *Options) { o.KeepAlive = 20 * time.Millisecond })
	c := &client{t: t, url: url}
	c.init()
	get := c.do("GET", "", nil)
	defer get.Body.Close()
	buf := make([]byte, len(": keep-alive\n\n"))
	n, _ := io.ReadFull(get.Body, buf)
	if !strings.HasPrefix(string(buf[:n]), ": keep-alive") {
		t.Fatalf("GET stream: %q", buf[:n])
	}
}
