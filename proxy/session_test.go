package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// countingLauncher counts the upstream children started.
type countingLauncher struct {
	inner    upstream.Launcher
	launches atomic.Int32
}

func (l *countingLauncher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	l.launches.Add(1)
	return l.inner.Launch(ctx, cfg, lim)
}

// Two host sessions in one process share one Gate and one upstream child:
// an upstream's request during a call goes to that call's session only,
// one outside any call or while both sessions' calls are in flight is
// refused, and log levels and subscriptions are each session's own.
func TestTwoSessionsShareOneUpstream(t *testing.T) {
	up := newPipelineUpstream()
	l := &countingLauncher{inner: &scriptLauncher{servers: map[string]scripted{"s": up.serve}}}
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: l, StartTimeout: 10 * time.Second, Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close) // after both hosts have closed
	a := serveRawHost(t, g, g.NewSession().Serve)
	b := serveRawHost(t, g, g.NewSession().Serve)
	send := func(h *rawHost, method string) string {
		return string(h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+method+`"}}`))
	}

	// A's call: its sampling request goes to A's host alone.
	if answer := send(a, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("A's sampling: %s", answer)
	}
	a.next("sampling/createMessage")
	// B's call: its elicitation goes to B's host alone.
	send(b, "elicitation/create")
	b.next("elicitation/create")
	if a.has("elicitation/create") || b.has("sampling/createMessage") {
		t.Fatal("an upstream request reached the other session's host")
	}
	if n := l.launches.Load(); n != 1 {
		t.Fatalf("%d upstream children started; want one shared", n)
	}

	// Outside any call: refused, and no host is asked.
	a.call("tools/call", `{"name":"s__t","arguments":{"later":"sampling/createMessage"}}`)
	waitFor(t, "no call in flight", func() bool {
		return sessionsInFlight(g, "s") == 0
	})
	close(up.goLate)
	select {
	case answer := <-up.late:
		if !strings.Contains(answer, "outside any request") {
			t.Errorf("a request outside any call was answered %s", answer)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the late request")
	}
	// While calls of both sessions are in flight: the gate cannot tell
	// whose it is, and asks neither.
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		a.call("tools/call", `{"name":"s__t","arguments":{"block":true}}`)
	}()
	waitFor(t, "A's call to be in flight", func() bool {
		return sessionsInFlight(g, "s") == 1
	})
	if answer := send(b, "sampling/createMessage"); !strings.Contains(answer, "cannot tell which session") {
		t.Errorf("a request while two sessions' calls were in flight was answered %s", answer)
	}
	close(up.release)
	<-blocked
	if a.has("sampling/createMessage") || b.has("sampling/createMessage") {
		t.Fatal("a refused request reached a host")
	}

	// Log levels are per session: A wants errors only.
	a.call("logging/setLevel", `{"level":"error"}`)
	send(b, "notifications/message") // an info line
	b.next("notifications/message")
	a.call("ping", `{}`) // later than the notification on A's pipe
	if a.has("notifications/message") {
		t.Error("an info line reached the session that asked for errors only")
	}

	// Subscriptions are per session, and the shared child's is ended only
	// by the last session holding one.
	a.call("resources/subscribe", `{"uri":"mem://a"}`)
	send(b, "notifications/resources/updated")
	a.next("notifications/resources/updated")
	b.call("ping", `{}`)
	if b.has("notifications/resources/updated") {
		t.Error("an update reached a session that did not subscribe")
	}
	b.call("resources/subscribe", `{"uri":"mem://a"}`)
	up.reset()
	a.call("resources/unsubscribe", `{"uri":"mem://a"}`)
	if up.got("resources/unsubscribe") {
		t.Error("the upstream was unsubscribed while another session still holds a subscription")
	}
	b.call("resources/unsubscribe", `{"uri":"mem://a"}`)
	if !up.got("resources/unsubscribe") {
		t.Error("the last session's unsubscribe did not reach the upstream")
	}
}

// sessionsInFlight counts the sessions with a request in flight to any
// child of server.
func sessionsInFlight(g *Gate, server string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for c, m := range g.inflight {
		if c.server == server {
			n += len(m)
		}
	}
	return n
}

// Work that outlives the last session of a key (a handler still running
// when Run returned, a list fetch it started) must not start the key's
// children again: nothing would ever stop them. Here the session's key is
// released, then its straggler forwards a call and lists the tools.
func TestNoChildForReleasedKey(t *testing.T) {
	up := newPipelineUpstream()
	l := &countingLauncher{inner: &scriptLauncher{servers: map[string]scripted{"s": up.serve}}}
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: l, StartTimeout: 10 * time.Second, Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	s := g.NewSession()
	if _, err := s.initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"roots":{}}}`)); err != nil {
		t.Fatal(err)
	}
	key := s.childKey()
	// The session is never registered, so this is its last one ending.
	g.releaseKey(key)

	if _, err := s.forward(context.Background(), "s", "tools/call", json.RawMessage(`{"name":"t","arguments":{}}`)); err == nil {
		t.Error("a call forwarded for a released key succeeded")
	}
	s.ensure(context.Background(), g.tools.lister)
	time.Sleep(100 * time.Millisecond) // a fetch's start, if one was made, shows by now
	if n := l.launches.Load(); n != 0 {
		t.Errorf("%d children started for a key no session holds; want none", n)
	}
	if r := g.pool.RunningFor(key); len(r) != 0 {
		t.Errorf("children of a released key run on: %d", len(r))
	}
	// Nor does the straggler's fetch leave state behind for the key.
	waitFor(t, "the straggler's fetch state to go", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for c := range g.tools.lister.state {
			if c.key == key {
				return false
			}
		}
		return true
	})
}
