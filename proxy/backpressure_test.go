package proxy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A host that stops reading never stalls an upstream that another session
// shares: the upstream's notifications, relayed to every session of its
// key, are dropped for the host whose queue is full instead of holding up
// the upstream's read loop, and the other session's calls are answered.
func TestHostNotReadingDoesNotStallSharedUpstream(t *testing.T) {
	pad := strings.Repeat("p", 4<<10)
	server := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			w(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}}`, id))
		case "tools/call":
			if strings.Contains(string(params), `"flood"`) {
				for i := range 400 {
					w(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%d %s"}}`, i, pad))
				}
			}
			w(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`, id))
		}
	}
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: &scriptLauncher{servers: map[string]scripted{"s": server}}, StartTimeout: 10 * time.Second,
		Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	a := serveRawHost(t, g, g.NewSession().Serve)
	b := serveRawHost(t, g, g.NewSession().Serve)
	if answer := string(b.call("tools/call", `{"name":"s__echo","arguments":{}}`)); !strings.Contains(answer, "done") {
		t.Fatalf("B's first call: %s", answer)
	}
	// A's host takes in 64 messages and then reads nothing (its inbox is
	// full); the flood goes to both hosts. B reads everything.
	go func() {
		for range b.inbox {
		}
	}()
	a.write(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"s__flood","arguments":{}}}`)
	waitFor(t, "A's host to stop reading", func() bool { return len(a.inbox) == cap(a.inbox) })
	for i := range 3 {
		if answer := string(b.call("tools/call", `{"name":"s__echo","arguments":{}}`)); !strings.Contains(answer, "done") {
			t.Fatalf("B's call %d while A is not reading: %s", i, answer)
		}
	}
	// A reads again: its call is answered.
	ch := make(chan json.RawMessage, 1)
	a.mu.Lock()
	a.waits[`"flood"`] = ch
	a.mu.Unlock()
	go func() {
		for range a.inbox {
		}
	}()
	select {
	case answer := <-ch:
		if !strings.Contains(string(answer), "done") {
			t.Errorf("A's call, once A reads again: %s", answer)
		}
	case <-time.After(10 * time.Second):
		t.Error("A's call was not answered once A read again")
	}
}
