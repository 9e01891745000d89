package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawSession is a Streamable HTTP client written out by hand, to see which
// stream carries what.
type rawSession struct {
	t   *testing.T
	url string
	sid string
}

func (r *rawSession) send(ctx context.Context, method, body string) *http.Response {
	r.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, r.url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if r.sid != "" {
		req.Header.Set("Mcp-Session-Id", r.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// sseData returns the data lines of an SSE body as they come.
func sseData(resp *http.Response) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- d
			}
		}
	}()
	return ch
}

// Issue 12: an upstream's question during a call travels on that call's
// stream even while another call of the session is in flight (to another
// server) and a GET stream is open, where a transport that did not know
// the call would send it. (With two calls of one session in flight to the
// same server, stdio MCP does not say which one a question is for; it
// then goes to the GET stream.)
func TestHTTPUpstreamQuestionFindsItsCall(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest"), "other": testserver("honest")})
	url := g.serveHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := &rawSession{t: t, url: url}
	resp := r.send(ctx, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp.Body.Close()
	r.sid = resp.Header.Get("Mcp-Session-Id")
	r.send(ctx, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	get := r.send(ctx, "GET", "")
	defer get.Body.Close()
	getData := sseData(get)
	slow := r.send(ctx, "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"other__slow","arguments":{"steps":40,"ms":100}}}`)
	defer slow.Body.Close()
	// The slow call is in flight before the asking one starts.
	time.Sleep(500 * time.Millisecond)
	ask := r.send(ctx, "POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"honest__ask","arguments":{}}}`)
	defer ask.Body.Close()
	askData := sseData(ask)
	select {
	case d := <-askData:
		if !strings.Contains(d, `"method":"elicitation/create"`) || !strings.Contains(d, "[honest] What is your name?") {
			t.Fatalf("first event on the asking call's stream: %s", d)
		}
	case d := <-getData:
		t.Fatalf("the question went to the GET stream: %s", d)
	case <-time.After(20 * time.Second):
		t.Fatal("no question within 20s")
	}
	select {
	case d := <-getData:
		t.Errorf("the GET stream carried %s", d)
	default:
	}
}
