package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// fake is a hand-written Streamable HTTP server whose tools misbehave in
// the ways a transport must survive.
type fake struct {
	mu         sync.Mutex
	sid        string // the live session id; "" after it expired
	inits      int
	lastIDs    []string // Last-Event-ID headers received
	dropID     json.RawMessage
	initSID    string // if set, the session id initialize returns
	initStatus int
	initHold   bool // answer initialize on an SSE stream and hold it open
	aborted    int  // hang calls whose stream the client dropped
	getStream  int  // GET streams to serve (each sends a notification, then ends with an id); then 405
	getEmpty   bool // answer every GET with an empty stream that asks for a retry in 1 ms
	getEmpties int  // such GETs served
	getRetry   int  // if set, the retry (ms) the empty GET streams ask for instead of 1
	loops      int  // resumptions of the idloop tool's stream
	gets       []string
	hugeBytes  int
	lingered   int  // reply streams held open after their answer, that the client dropped
	noteHold   bool // answer a notification's POST with an SSE stream held open
	noteSilent bool // never answer a notification's POST, not even its headers
	notesHeld  int  // such streams the client dropped
}

func (f *fake) reply(id json.RawMessage, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		le := r.Header.Get("Last-Event-ID")
		if f.getEmpty {
			f.getEmpties++
			sse(w)
			// A new event id each time, and no message.
			fmt.Fprintf(w, "id: empty-%d\nretry: %d\n\n", f.getEmpties, max(f.getRetry, 1))
			return
		}
		if strings.HasPrefix(le, "loop-") {
			f.loops++
			sse(w)
			fmt.Fprintf(w, "id: loop-%d\nretry: 1\n\n", f.loops)
			return
		}
		if f.getStream > 0 && r.Header.Get("Mcp-Session-Id") == f.sid {
			f.getStream--
			f.gets = append(f.gets, "last="+le)
			sse(w)
			fmt.Fprintf(w, "id: g-%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", len(f.gets))
			return
		}
		if le == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.lastIDs = append(f.lastIDs, le)
		if le == "drop-1" && f.dropID != nil {
			sse(w)
			fmt.Fprintf(w, "id: drop-2\ndata: %s\n\n", f.reply(f.dropID, "ok:resumed"))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		return
	case http.MethodDelete:
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		if f.initStatus != 0 {
			w.WriteHeader(f.initStatus)
			return
		}
		f.inits++
		f.sid = fmt.Sprintf("session-%d", f.inits)
		if f.initSID != "" {
			f.sid = f.initSID
		}
		w.Header().Set("Mcp-Session-Id", f.sid)
		res := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, m.ID)
		if f.initHold {
			sse(w)
			fmt.Fprintf(w, "data: %s\n\n", res)
			w.(http.Flusher).Flush()
			f.mu.Unlock()
			<-r.Context().Done()
			f.mu.Lock()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, res)
		return
	}
	if got := r.Header.Get("Mcp-Session-Id"); got == "" || got != f.sid {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if m.ID == nil {
		if f.noteHold || f.noteSilent {
			if f.noteHold {
				sse(w)
				w.(http.Flusher).Flush()
			}
			f.mu.Unlock()
			<-r.Context().Done()
			f.mu.Lock()
			f.notesHeld++
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	name := m.Params.Name
	switch name {
	case "echo":
		sse(w)
		fmt.Fprintf(w, "id: e1\ndata: \n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\ndata: %s\n\n", f.reply(m.ID, "ok:echo"))
	case "json":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.reply(m.ID, "ok:json"))
	case "drop":
		f.dropID = m.ID
		sse(w)
		fmt.Fprint(w, "id: drop-1\nretry: 10\ndata: \n\n")
	case "dropnoid":
		sse(w)
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
	case "huge":
		sse(w)
		fmt.Fprintf(w, "id: h1\ndata: %s\n\n", f.reply(m.ID, strings.Repeat("h", f.hugeBytes)))
	case "hugejson":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.reply(m.ID, strings.Repeat("j", f.hugeBytes)))
	case "badjson":
		sse(w)
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{nope\n\n", m.ID)
	case "idloop":
		sse(w)
		fmt.Fprint(w, "id: loop-0\nretry: 1\n\n")
	case "linger":
		// The answer, then more on the same stream, which is never ended.
		sse(w)
		fmt.Fprintf(w, "id: l1\ndata: %s\n\n", f.reply(m.ID, "ok:linger"))
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"after the answer\"}}\n\n")
		w.(http.Flusher).Flush()
		f.mu.Unlock()
		<-r.Context().Done()
		f.mu.Lock()
		f.lingered++
	case "hang":
		sse(w)
		fmt.Fprint(w, "id: hang-1\ndata: \n\n")
		w.(http.Flusher).Flush()
		f.mu.Unlock()
		<-r.Context().Done()
		f.mu.Lock()
		f.aborted++
	case "expire":
		f.sid = ""
		w.WriteHeader(http.StatusNotFound)
	case "changesid":
		w.Header().Set("Mcp-Session-Id", "another-session")
		sse(w)
		fmt.Fprintf(w, "data: %s\n\n", f.reply(m.ID, "ok:changesid"))
	case "redirect":
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
	case "error500":
		w.WriteHeader(http.StatusInternalServerError)
	case "html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>")
	case "slow":
		sse(w)
		msg := "data: " + f.reply(m.ID, "ok:slow") + "\n\n"
		f.mu.Unlock()
		for i := 0; i < len(msg); i += 16 {
			fmt.Fprint(w, msg[i:min(i+16, len(msg))])
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
		f.mu.Lock()
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no tool"}}`, m.ID)
	}
}

// Each misbehaviour costs its call alone, with a reason, and the session
// goes on; none hangs.
func TestStreamableHostileCalls(t *testing.T) {
	const limit = 64 << 10
	f := &fake{hugeBytes: 2 * limit}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, limit)
	s := session(t, p)
	for _, tc := range []struct{ tool, want string }{
		{"echo", "ok:echo"},
		{"json", "ok:json"},
		{"slow", "ok:slow"},
		{"drop", "ok:resumed"},
		{"dropnoid", "ended the reply stream to tools/call before answering, with no event id"},
		{"huge", "exceeds the limit of 65536 bytes"},
		{"hugejson", "exceeds the limit of 65536 bytes"},
		{"badjson", "malformed response"},
		{"redirect", "redirects are not followed"},
		{"error500", "HTTP 500"},
		{"html", `Content-Type "text/html"`},
		{"nosuch", "no tool"},
	} {
		res, err := callTool(t, s, tc.tool, struct{}{})
		got := string(res)
		if err != nil {
			got = err.Error()
		}
		t.Logf("%s: %s", tc.tool, got)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s; want %q", tc.tool, got, tc.want)
		}
		select {
		case <-s.Done():
			t.Fatalf("%s ended the session: %v", tc.tool, s.Err())
		default:
		}
	}
	f.mu.Lock()
	lastIDs := f.lastIDs
	f.mu.Unlock()
	if len(lastIDs) != 1 || lastIDs[0] != "drop-1" {
		t.Errorf("Last-Event-ID headers %q; want one resumption from drop-1", lastIDs)
	}
}

// A 404 for the session ends it: the call fails with the reason, and the
// next call gets a new session (a new initialize, without the old id).
// A server that switches session ids mid-session ends it too.
func TestStreamableSessionEnds(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"expire", "ended the MCP session (HTTP 404"},
		{"changesid", "another session id"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			f := &fake{}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
			p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
			s := session(t, p)
			_, err := callTool(t, s, tc.tool, struct{}{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				// changesid may deliver its answer before the end: the
				// session's end says why either way.
				if tc.tool != "changesid" {
					t.Errorf("call: %v; want %q", err, tc.want)
				}
			}
			select {
			case <-s.Done():
				if !strings.Contains(s.Err().Error(), tc.want) {
					t.Errorf("session ended with %v; want %q", s.Err(), tc.want)
				}
			case <-time.After(hang):
				t.Fatal("the session did not end")
			}
			// A new session, after the pool's backoff for an early end.
			deadline := time.Now().Add(hang)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), hang)
				s2, err := p.Session(ctx, "k", "remote")
				cancel()
				if err == nil {
					if res, err := callTool(t, s2, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
						t.Errorf("echo on the new session: %s, %v", res, err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no new session: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			f.mu.Lock()
			inits := f.inits
			f.mu.Unlock()
			if inits != 2 {
				t.Errorf("%d initializes; want 2", inits)
			}
		})
	}
}

// What goes wrong at the start is a failed start with a reason.
func TestStreamableStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *fake
		want string
	}{
		{"unauthorized", &fake{initStatus: http.StatusUnauthorized}, "check the entry's headers"},
		{"bad session id", &fake{initSID: "has space"}, "visible ASCII"},
		{"huge session id", &fake{initSID: strings.Repeat("s", 5000)}, "session id of 5000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.f)
			t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
			p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			_, err := p.Session(ctx, "k", "remote")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Session: %v; want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error carries the header value: %v", err)
			}
		})
	}
	// Nothing listening: a start failure naming the URL without its query.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: url + "/mcp?token=" + secret}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	_, err := p.Session(ctx, "k", "remote")
	if err == nil || !strings.Contains(err.Error(), url+"/mcp?…") || strings.Contains(err.Error(), secret) {
		t.Fatalf("Session: %v; want the URL named without its query", err)
	}
}

// A legacy server's endpoint must be on its own origin.
func TestLegacyEndpointOrigin(t *testing.T) {
	for _, tc := range []struct{ endpoint, want string }{
		{"http://127.0.0.2:9/message", "another origin"},
		{"//127.0.0.3:9/message", "another origin"},
		{"https://HOST/message", "another origin"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sse(w)
			ep := strings.Replace(tc.endpoint, "HOST", r.Host, 1)
			fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", ep)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		_, err := p.Session(ctx, "k", "remote")
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("endpoint %s: %v; want %q", tc.endpoint, err, tc.want)
		}
		p.Close()
		srv.Close()
	}
	if _, err := sameOrigin(mustURL(t, "http://h:80/sse"), "/message?sessionId=1"); err != nil {
		t.Errorf("a relative endpoint refused: %v", err)
	}
	if _, err := sameOrigin(mustURL(t, "http://h/sse"), "http://H:80/m"); err != nil {
		t.Errorf("the same origin spelled otherwise refused: %v", err)
	}
}

// A server may hold the initialize reply stream open after answering: the
// session goes on regardless (the gate waits for the answer, not the end of
// its stream, before posting anything else).
func TestStreamableInitStreamHeldOpen(t *testing.T) {
	srv := httptest.NewServer(&fake{initHold: true})
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	defer srv.CloseClientConnections()
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Fatalf("echo: %s, %v", res, err)
	}
}

// The transport's contract (rpc.Transport): Write after Close is
// ErrClosed; after the connection has ended, a WriteError with the reason,
// and Read returns the reason once what came before is read.
func TestTransportEndSemantics(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	u := mustURL(t, srv.URL)
	tr := dialStreamable("x", u, nil, slog.New(slog.DiscardHandler), rpc.Limits{})
	ctx := context.Background()
	if err := tr.Write(ctx, &rpc.Message{ID: json.RawMessage("1"), Method: "initialize", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if m, err := tr.Read(ctx); err != nil || string(m.ID) != "1" {
		t.Fatalf("Read: %v %v", m, err)
	}
	// The session expires: the call fails, and so does everything after.
	f.mu.Lock()
	f.sid = "gone"
	f.mu.Unlock()
	if err := tr.Write(ctx, &rpc.Message{ID: json.RawMessage("2"), Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	_, err := tr.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("Read after expiry: %v", err)
	}
	<-tr.Exited()
	var we *rpc.WriteError
	if err := tr.Write(ctx, &rpc.Message{Method: "notifications/x"}); !errors.As(err, &we) || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("Write after the end: %v; want a WriteError with the reason", err)
	}
	tr.Stop(time.Second)
	tr2 := dialStreamable("x", u, nil, slog.New(slog.DiscardHandler), rpc.Limits{})
	tr2.Close()
	if err := tr2.Write(ctx, &rpc.Message{Method: "notifications/x"}); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if _, err := tr2.Read(ctx); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	tr2.Stop(time.Second)
}

// A call the caller gives up on has its reply stream dropped once the
// cancellation is posted: a server that never answers holds no connection
// and no goroutine of the gate for the rest of the session.
func TestStreamableCancelDropsStream(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"hang"}`))
		cancel()
		if err == nil {
			t.Fatal("hang answered")
		}
	}
	deadline := time.Now().Add(hang)
	for {
		f.mu.Lock()
		n := f.aborted
		f.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 abandoned reply streams dropped", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Errorf("echo after the cancellations: %s, %v", res, err)
	}
}

// A server that stops reading what is posted to it stalls the poster; past
// the write timeout a Write returns a StallError (the Conn then ends the
// session), as a child that stops reading its stdin does.
func TestStreamableStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // connections are never accepted: nothing is read
	u := mustURL(t, "http://"+ln.Addr().String()+"/mcp")
	tr := dialStreamable("x", u, nil, slog.New(slog.DiscardHandler), rpc.Limits{WriteTimeout: 200 * time.Millisecond})
	defer tr.Stop(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	big := json.RawMessage(`{"x":"` + strings.Repeat("b", 64<<20) + `"}`)
	if err := tr.Write(ctx, &rpc.Message{Method: "notifications/big", Params: big}); err != nil {
		t.Fatal(err)
	}
	var se *rpc.StallError
	for i := 0; ; i++ {
		err := tr.Write(ctx, &rpc.Message{Method: "notifications/small"})
		if errors.As(err, &se) {
			break
		}
		if err != nil || i > 2*outQueueLen {
			t.Fatalf("write %d: %v; want a StallError once the queue is full", i, err)
		}
	}
}

// A legacy server: a huge message event costs its call alone; a 404 from
// the endpoint ends the session with the reason.
func TestLegacyHostile(t *testing.T) {
	const limit = 32 << 10
	events := make(chan string, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		sse(w)
		fmt.Fprint(w, "event: endpoint\ndata: /message?s=1\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case e := <-events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("/message", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Name string }
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		if m.Params.Name == "gone" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		switch {
		case m.Method == "initialize":
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"l","version":"1"}}}`, m.ID)
		case m.Params.Name == "huge":
			events <- (&fake{}).reply(m.ID, strings.Repeat("h", 2*limit))
		case m.ID != nil:
			events <- (&fake{}).reply(m.ID, "ok:"+m.Params.Name)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, limit)
	s := session(t, p)
	if _, err := callTool(t, s, "huge", struct{}{}); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("huge: %v", err)
	}
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Errorf("echo after the huge event: %s, %v", res, err)
	}
	_, _ = callTool(t, s, "gone", struct{}{})
	select {
	case <-s.Done():
		if !strings.Contains(s.Err().Error(), "HTTP 404") {
			t.Errorf("session ended with %v", s.Err())
		}
	case <-time.After(hang):
		t.Fatal("the session outlived a 404 from its endpoint")
	}
}

type notes struct{ ch chan string }

func (n notes) HandleCall(context.Context, *rpc.Message) (json.RawMessage, error) {
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "no")
}
func (n notes) HandleNotification(m *rpc.Message) { n.ch <- m.Method }

// The GET stream carries the server's own messages outside any call; when
// it ends it is reopened with the last event id; a 405 ends the listening.
func TestStreamableGetStream(t *testing.T) {
	f := &fake{getStream: 2}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	got := notes{ch: make(chan string, 4)}
	p := upstream.NewPool([]upstream.Config{{Name: "remote", Type: upstream.TypeHTTP, URL: srv.URL}}, upstream.PoolOptions{
		Launcher: &Launcher{},
		Logger:   slog.New(slog.DiscardHandler),
		Handler:  func(_, _ string) rpc.Handler { return got },
		InitParams: func(_, _ string) json.RawMessage {
			return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
		},
	})
	t.Cleanup(p.Close)
	session(t, p)
	for i := range 2 {
		select {
		case m := <-got.ch:
			if m != "notifications/tools/list_changed" {
				t.Errorf("notification %q", m)
			}
		case <-time.After(hang):
			t.Fatalf("notification %d from the GET stream never came", i)
		}
	}
	f.mu.Lock()
	gets := append([]string(nil), f.gets...)
	f.mu.Unlock()
	if len(gets) != 2 || gets[0] != "last=" || gets[1] != "last=g-1" {
		t.Errorf("GET streams %q; want one fresh, then one resumed from g-1", gets)
	}
}

// waitCount waits, up to hang, for *n (under f.mu) to reach want.
func (f *fake) waitCount(t *testing.T, what string, n *int, want int) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for {
		f.mu.Lock()
		got := *n
		f.mu.Unlock()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d %s dropped by the gate", got, want, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A reply stream the server keeps open after its answer is dropped once the
// answer has come: each call would otherwise leave a goroutine and a
// connection of the gate behind for as long as the server liked, and what
// the server sent on it later would reach the gate outside any call.
func TestStreamableReplyStreamClosedAfterAnswer(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	for range 3 {
		if res, err := callTool(t, s, "linger", struct{}{}); err != nil || !strings.Contains(string(res), "ok:linger") {
			t.Fatalf("linger: %s, %v", res, err)
		}
	}
	f.waitCount(t, "reply streams held open after their answer", &f.lingered, 3)
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Errorf("echo after: %s, %v", res, err)
	}
}

// A server that answers the POST of a notification with a body it never
// ends holds no goroutine or connection of the gate: the gate drains a body
// it has no use for only briefly. A cancellation's POST held so would also
// keep the cancelled call's reply stream from being dropped.
func TestStreamableNotificationBodyNotHeld(t *testing.T) {
	f := &fake{noteHold: true}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	// notifications/initialized
	f.waitCount(t, "held notification bodies", &f.notesHeld, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"hang"}`))
	cancel()
	if err == nil {
		t.Fatal("hang answered")
	}
	// notifications/cancelled, then the abandoned call's stream.
	f.waitCount(t, "held notification bodies", &f.notesHeld, 2)
	f.waitCount(t, "abandoned reply streams", &f.aborted, 1)
}

// shortAccept makes acceptWait short for a test.
func shortAccept(t *testing.T) {
	old := acceptWait
	acceptWait = 300 * time.Millisecond
	t.Cleanup(func() { acceptWait = old })
}

// A server that never answers the POST of a notification (not even its
// headers) holds no goroutine or connection of the gate past acceptWait,
// and a cancellation so held does not keep the cancelled call's stream.
func TestStreamableUnacceptedNotificationDropped(t *testing.T) {
	shortAccept(t)
	f := &fake{noteSilent: true}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, logs := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	f.waitCount(t, "unanswered notification POSTs", &f.notesHeld, 1) // notifications/initialized
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"hang"}`))
	cancel()
	if err == nil {
		t.Fatal("hang answered")
	}
	f.waitCount(t, "unanswered notification POSTs", &f.notesHeld, 2) // notifications/cancelled
	f.waitCount(t, "abandoned reply streams", &f.aborted, 1)
	if !strings.Contains(logs.String(), "did not accept a message in time") {
		t.Errorf("no log line for the unaccepted messages:\n%s", logs)
	}
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Errorf("echo after: %s, %v", res, err)
	}
}

// A legacy server answers on its stream and may never answer the POSTs
// themselves: each would hold a goroutine and a connection of the gate
// until the session ends. They are given up on after acceptWait, and the
// calls are answered from the stream all the same.
func TestLegacyUnacceptedPostDropped(t *testing.T) {
	shortAccept(t)
	events := make(chan string, 8)
	var mu sync.Mutex
	dropped := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		sse(w)
		fmt.Fprint(w, "event: endpoint\ndata: /message?s=1\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case e := <-events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("/message", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		switch {
		case m.Method == "initialize":
			w.WriteHeader(http.StatusAccepted)
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"l","version":"1"}}}`, m.ID)
			return
		case m.ID != nil:
			events <- (&fake{}).reply(m.ID, "ok:silent")
		}
		// Never a response to the POST.
		<-r.Context().Done()
		mu.Lock()
		dropped++
		mu.Unlock()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, 0)
	s := session(t, p)
	for range 3 {
		if res, err := callTool(t, s, "silent", struct{}{}); err != nil || !strings.Contains(string(res), "ok:silent") {
			t.Fatalf("silent: %s, %v", res, err)
		}
	}
	// notifications/initialized and the three calls.
	deadline := time.Now().Add(hang)
	for {
		mu.Lock()
		n := dropped
		mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 unanswered POSTs dropped by the gate", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server whose stream of its own messages ends at once, with an event id
// and no message, every time, asking for a retry in a millisecond, is
// asked again at most every half second, and given up on after a few
// attempts, as a stream that fails to open is: it would otherwise be asked
// again hundreds of times a second for as long as the session lasts.
func TestStreamableEmptyGetStreamGivenUp(t *testing.T) {
	f := &fake{getEmpty: true}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, logs := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	time.Sleep(time.Second)
	f.mu.Lock()
	n := f.getEmpties
	f.mu.Unlock()
	if n > 3 {
		t.Errorf("%d GETs of an empty stream in a second; want at most 3", n)
	}
	deadline := time.Now().Add(hang)
	for !strings.Contains(logs.String(), "giving up on the server's stream") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the stream given up:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.mu.Lock()
	n = f.getEmpties
	f.mu.Unlock()
	if n != maxResumes+1 {
		t.Errorf("%d GETs of an empty stream before it was given up on; want %d", n, maxResumes+1)
	}
	if res, err := callTool(t, s, "echo", struct{}{}); err != nil || !strings.Contains(string(res), "ok:echo") {
		t.Errorf("echo: %s, %v", res, err)
	}
}

// A server that polls (2025-11-25: it may close its stream at any time,
// with a retry field, and the client reconnects after it) ends every GET
// stream at once with nothing in it, and asks for a retry of a second: it
// is polled at that pace for as long as the session lasts, not given up on
// after five polls with its notifications outside calls.
func TestStreamablePollingGetStreamKept(t *testing.T) {
	f := &fake{getEmpty: true, getRetry: 1000}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, logs := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	session(t, p)
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		n := f.getEmpties
		f.mu.Unlock()
		if n >= maxResumes+3 {
			break
		}
		if strings.Contains(logs.String(), "giving up on the server's stream") {
			t.Fatalf("gave up on a polling server's stream after %d polls:\n%s", n, logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d polls in 30 s; want %d", n, maxResumes+3)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(logs.String(), "giving up on the server's stream") {
		t.Errorf("gave up on a polling server's stream:\n%s", logs)
	}
}

// A reply stream that ends, and ends again on every resumption, with a new
// event id and no message, at a retry of a millisecond, is resumed at most
// every half second: the new id resets the count of fruitless attempts, so
// nothing else would slow the gate's requests down until the call ends.
func TestStreamableIDOnlyResumptionsPaced(t *testing.T) {
	f := &fake{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL}, 0)
	s := session(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"idloop"}`))
	cancel()
	if err == nil {
		t.Fatal("idloop answered")
	}
	f.mu.Lock()
	n := f.loops
	f.mu.Unlock()
	if n > 3 {
		t.Errorf("%d resumptions in 1.2 s of a stream that brings only event ids; want at most 3", n)
	}
}

// acceptWait counts from when the body has been sent: a large notification
// that a slow server takes a while to read is not cut off mid-body.
func TestAcceptWaitCountsFromTheSentBody(t *testing.T) {
	shortAccept(t)
	got := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		head := make([]byte, 64)
		n, _ := io.ReadFull(r.Body, head)
		if strings.Contains(string(head[:n]), `"initialize"`) || strings.Contains(string(head[:n]), `"id":1`) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
			return
		}
		// Read the rest slowly: 16 MiB (more than the sockets hold) over
		// about three seconds.
		buf := make([]byte, 256<<10)
		total := n
		for {
			k, err := r.Body.Read(buf)
			total += k
			if err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		got <- total
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	tr := dialStreamable("x", mustURL(t, srv.URL), nil, slog.New(slog.DiscardHandler), rpc.Limits{})
	defer tr.Stop(time.Second)
	ctx := context.Background()
	if err := tr.Write(ctx, &rpc.Message{ID: json.RawMessage("1"), Method: "initialize", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Read(ctx); err != nil {
		t.Fatal(err)
	}
	params := json.RawMessage(`{"x":"` + strings.Repeat("n", 16<<20) + `"}`)
	raw, _ := rpc.EncodeMessage(&rpc.Message{Method: "notifications/big", Params: params})
	if err := tr.Write(ctx, &rpc.Message{Method: "notifications/big", Params: params}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != len(raw) {
			t.Errorf("the server read %d bytes of a %d-byte notification", n, len(raw))
		}
	case <-time.After(hang):
		t.Fatal("the notification never arrived")
	}
}

// A legacy server may hold a POST until it has handled the message, with
// the request's context as the handler's (the 2024-11-05 transport asks
// only that the answer come on the stream): a call that takes longer than
// acceptWait is not cut off by the gate's giving up on its POST, which
// would cancel it at the server.
func TestLegacySlowSynchronousCallKept(t *testing.T) {
	shortAccept(t)
	events := make(chan string, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		sse(w)
		fmt.Fprint(w, "event: endpoint\ndata: /message?s=1\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case e := <-events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("/message", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		switch {
		case m.Method == "initialize":
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"l","version":"1"}}}`, m.ID)
		case m.ID != nil:
			// The call runs in the POST's handler, for four times acceptWait.
			select {
			case <-time.After(4 * acceptWait):
				events <- (&fake{}).reply(m.ID, "ok:slow")
			case <-r.Context().Done():
				events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32800,"message":"the client dropped the request"}}`, m.ID)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, 0)
	s := session(t, p)
	if res, err := callTool(t, s, "slow", struct{}{}); err != nil || !strings.Contains(string(res), "ok:slow") {
		t.Fatalf("slow: %s, %v", res, err)
	}
}

// A legacy call that is never answered, on the stream or in its POST, has
// its POST given up on once the caller has given up on the call.
func TestLegacyCancelledCallPostDropped(t *testing.T) {
	shortAccept(t)
	events := make(chan string, 8)
	dropped := make(chan struct{}, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		sse(w)
		fmt.Fprint(w, "event: endpoint\ndata: /message?s=1\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case e := <-events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("/message", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		switch {
		case m.Method == "initialize":
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"l","version":"1"}}}`, m.ID)
		case m.ID != nil:
			// Never answered, and the POST held.
			<-r.Context().Done()
			dropped <- struct{}{}
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, 0)
	s := session(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"hang"}`))
	cancel()
	if err == nil {
		t.Fatal("hang answered")
	}
	select {
	case <-dropped:
	case <-time.After(hang):
		t.Fatal("the POST of a cancelled call was held")
	}
}
