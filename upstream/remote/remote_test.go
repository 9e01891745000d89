package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// secret is a header value that must never reach a log line or an error.
const secret = "tok-5ecr3t-value-0042"

// hang bounds what a test waits for: past it, something hangs.
const hang = 20 * time.Second

// logBuf is a concurrency-safe log destination.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newPool runs the pool, as the gate does, over this package's Launcher.
func newPool(t *testing.T, cfg upstream.Config, maxMsg int) (*upstream.Pool, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.Name == "" {
		cfg.Name = "remote"
	}
	if cfg.Headers == nil {
		cfg.Headers = map[string]string{"Authorization": "Bearer " + secret}
	}
	p := upstream.NewPool([]upstream.Config{cfg}, upstream.PoolOptions{
		Launcher:        &Launcher{Logger: log},
		Logger:          log,
		StartTimeout:    5 * time.Second,
		MaxMessageBytes: maxMsg,
		InitParams: func(_, _ string) json.RawMessage {
			return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
		},
	})
	t.Cleanup(func() {
		p.Close()
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a header value reached the log:\n%s", logs)
		}
	})
	return p, logs
}

func session(t *testing.T, p *upstream.Pool) *upstream.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	s, err := p.Session(ctx, "k", "remote")
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	return s
}

func callTool(t *testing.T, s *upstream.Session, name string, args any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	res, err := s.Call(ctx, "tools/call", params)
	if ctx.Err() != nil {
		t.Fatalf("tools/call %s hung", name)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("a header value reached an error: %v", err)
	}
	return res, err
}

type textIn struct {
	Text string `json:"text"`
}

func sdkServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		// A message of the server's own before the answer, on the same stream.
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "echoing"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

// seen records what reached the server: method, session and version headers.
type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := ""
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct{ Method string }
			_ = json.Unmarshal(body, &m)
			method = m.Method
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, fmt.Sprintf("%s %s sid=%t v=%s auth=%t", r.Method, method, r.Header.Get("Mcp-Session-Id") != "", r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Authorization") == "Bearer "+secret))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// The go-sdk's Streamable HTTP server, as an independent peer: SSE replies
// and JSON replies, the session id and version headers, DELETE at the end.
func TestStreamableSDKPeer(t *testing.T) {
	for _, jsonReply := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%t", jsonReply), func(t *testing.T) {
			var rec seen
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{JSONResponse: jsonReply})
			srv := httptest.NewServer(rec.wrap(h))
			t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
			p, _ := newPool(t, upstream.Config{Type: upstream.TypeHTTP, URL: srv.URL + "/mcp?key=" + secret}, 0)
			s := session(t, p)
			if s.ProtocolVersion != "2025-11-25" {
				t.Errorf("protocol version %q", s.ProtocolVersion)
			}
			for i := range 3 {
				res, err := callTool(t, s, "echo", textIn{Text: fmt.Sprintf("hello %d", i)})
				if err != nil || !strings.Contains(string(res), fmt.Sprintf("hello %d", i)) {
					t.Fatalf("echo: %s, %v", res, err)
				}
			}
			p.Close()
			reqs := rec.all()
			t.Logf("requests: %q", reqs)
			if len(reqs) == 0 || reqs[0] != "POST initialize sid=false v= auth=true" {
				t.Errorf("first request %q; want an initialize without a session id", reqs)
			}
			var deleted, posts int
			for _, r := range reqs[1:] {
				if !strings.Contains(r, "sid=true v=2025-11-25 auth=true") {
					t.Errorf("request %q lacks the session id, the version or the entry's header", r)
				}
				if strings.HasPrefix(r, "DELETE") {
					deleted++
				}
				if strings.HasPrefix(r, "POST tools/call") {
					posts++
				}
			}
			if deleted != 1 || posts != 3 {
				t.Errorf("%d DELETEs and %d tools/call POSTs, want 1 and 3: %q", deleted, posts, reqs)
			}
		})
	}
}

// The go-sdk's legacy SSE server.
func TestLegacySDKPeer(t *testing.T) {
	var rec seen
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil)
	srv := httptest.NewServer(rec.wrap(h))
	t.Cleanup(srv.Close) // after the pool's Close (cleanups run last first)
	p, _ := newPool(t, upstream.Config{Type: upstream.TypeSSE, URL: srv.URL + "/sse"}, 0)
	s := session(t, p)
	res, err := callTool(t, s, "echo", textIn{Text: "over sse"})
	if err != nil || !strings.Contains(string(res), "over sse") {
		t.Fatalf("echo: %s, %v", res, err)
	}
	for _, r := range rec.all() {
		if !strings.Contains(r, "auth=true") {
			t.Errorf("request %q lacks the entry's header", r)
		}
	}
	// The stream is the session: the server ending it ends the session
	// with a reason.
	srv.CloseClientConnections()
	select {
	case <-s.Done():
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "SSE stream") {
			t.Errorf("session ended with %v; want the stream named", err)
		}
	case <-time.After(hang):
		t.Fatal("the session outlived its stream")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestWarnPlainHTTP(t *testing.T) {
	var logs logBuf
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h := map[string]string{"Authorization": "Bearer " + secret}
	WarnPlainHTTP([]upstream.Config{
		{Name: "far", Type: upstream.TypeHTTP, URL: "http://mcp.example.test/mcp", Headers: h},
		{Name: "tls", Type: upstream.TypeHTTP, URL: "https://mcp.example.test/mcp", Headers: h},
		{Name: "local", Type: upstream.TypeSSE, URL: "http://127.0.0.1:3001/sse", Headers: h},
		{Name: "bare", Type: upstream.TypeHTTP, URL: "http://mcp.example.test/mcp"},
		{Name: "sub", Type: upstream.TypeHTTP, URL: "http://mcp.localhost/mcp", Headers: h},
		{Name: "query", Type: upstream.TypeHTTP, URL: "http://mcp.example.test/mcp?key=" + secret},
		{Name: "userinfo", Type: upstream.TypeSSE, URL: "http://u:" + secret + "@mcp.example.test/sse"},
		{Name: "localquery", Type: upstream.TypeHTTP, URL: "http://localhost:9/mcp?key=" + secret},
	}, log)
	out := logs.String()
	for _, name := range []string{"far", "sub", "query", "userinfo"} {
		if !strings.Contains(out, "server="+name+" ") {
			t.Errorf("no warning for %s", name)
		}
	}
	if strings.Count(out, "\n") != 4 || strings.Contains(out, secret) {
		t.Errorf("warnings:\n%s\nwant four, for far, sub, query and userinfo, without the secret", out)
	}
}
