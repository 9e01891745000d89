package proxy

// Issue 9, "the pool is keyed by (identity, server)": sessions share an
// upstream child only with the same identity and the same upstream-facing
// capabilities; a host with roots has children of its own; what a child
// sends goes to its own sessions only.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// launched is one child started by a keyedLauncher: what the gate told it
// in initialize, and its own scripted upstream.
type launched struct {
	init json.RawMessage // the initialize params
	up   *pipelineUpstream
}

func (c *launched) capabilities() string {
	caps, _ := rawjson.Get(c.init, "capabilities")
	return string(caps)
}

// keyedLauncher starts each child of server "s" as its own
// pipelineUpstream, so that a test can tell the children apart, and
// records what each was told in initialize.
type keyedLauncher struct {
	mu       sync.Mutex
	children []*launched
	// tools, when set, lists a child's tools from its initialize params.
	tools func(c *launched) string
}

func (l *keyedLauncher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	c := &launched{up: newPipelineUpstream()}
	serve := c.up.serve
	if l.tools != nil {
		serve = func(method string, id, params json.RawMessage, w func(string)) {
			if method == "tools/list" {
				reply(w, id, l.tools(c))
				return
			}
			c.up.serve(method, id, params, w)
		}
	}
	inner := &scriptLauncher{servers: map[string]scripted{cfg.Name: serve}}
	conn, err := inner.Launch(ctx, cfg, lim)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.children = append(l.children, c)
	l.mu.Unlock()
	return &recordingConn{Connection: conn, c: c}, nil
}

func (l *keyedLauncher) all() []*launched {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*launched(nil), l.children...)
}

// recordingConn records the initialize params the gate writes.
type recordingConn struct {
	upstream.Connection
	once sync.Once
	c    *launched
}

func (r *recordingConn) Write(ctx context.Context, m *rpc.Message) error {
	if m.Method == "initialize" {
		r.once.Do(func() { r.c.init = append(json.RawMessage(nil), m.Params...) })
	}
	return r.Connection.Write(ctx, m)
}

func newKeyedGate(t *testing.T, l *keyedLauncher, opts ...func(*Options)) *Gate {
	t.Helper()
	o := Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: l, StartTimeout: 10 * time.Second, Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range opts {
		f(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close) // after every host has closed
	return g
}

const (
	capsSampling = `{"elicitation":{"form":{}},"sampling":{}}`
	capsNone     = `{"elicitation":{"form":{}}}`
	capsRoots    = `{"elicitation":{"form":{}},"sampling":{},"roots":{"listChanged":true}}`
)

// serveAs connects a raw host as a session of identity id declaring caps.
func serveAs(t *testing.T, g *Gate, id Identity, caps string) *rawHost {
	t.Helper()
	s := g.NewSession(WithIdentity(id))
	h := serveRawHostWith(t, g, s.Serve, caps)
	return h
}

// serveRawHostWith is serveRawHost with the host's capabilities given.
func serveRawHostWith(t *testing.T, g *Gate, serve func(context.Context, io.Reader, io.Writer) error, caps string) *rawHost {
	t.Helper()
	return serveRawHostInit(t, g, serve, `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}`)
}

var (
	alice = Identity{Subject: "uid:1000", Name: "alice"}
	bob   = Identity{Subject: "uid:1001", Name: "bob"}
)

// Two sessions of different users never share a child, and what each
// child asks or says goes to its own user's host alone.
func TestSessionsOfOtherIdentitiesGetOwnChildren(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l)
	a := serveAs(t, g, alice, capsSampling)
	b := serveAs(t, g, bob, capsSampling)
	send := func(h *rawHost, method string) string {
		return string(h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+method+`"}}`))
	}
	if answer := send(a, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("alice's sampling: %s", answer)
	}
	a.next("sampling/createMessage")
	if n := len(l.all()); n != 1 {
		t.Fatalf("%d children after alice's call; want 1", n)
	}
	// Bob's call starts a child of his own, whose request goes to him.
	if answer := send(b, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("bob's sampling: %s", answer)
	}
	b.next("sampling/createMessage")
	if n := len(l.all()); n != 2 {
		t.Fatalf("%d children after bob's call; want one each", n)
	}
	// Each child's log line reaches its own user only, whatever the level.
	send(a, "notifications/message")
	a.next("notifications/message")
	b.call("ping", `{}`)
	if b.has("notifications/message") {
		t.Error("alice's child's log line reached bob's host")
	}
	// Both calls are in flight at once, each to its own child: no
	// ambiguity, each asks its own host.
	children := l.all()
	blocked := make(chan string)
	go func() {
		blocked <- string(a.call("tools/call", `{"name":"s__t","arguments":{"block":true}}`))
	}()
	waitFor(t, "alice's call to be in flight", func() bool { return sessionsInFlight(g, "s") == 1 })
	if answer := send(b, "elicitation/create"); !strings.Contains(answer, "decline") {
		t.Errorf("bob's elicitation while alice's call was in flight was answered %s", answer)
	}
	b.next("elicitation/create")
	close(children[0].up.release)
	<-blocked
	if a.has("elicitation/create") {
		t.Error("bob's child's question reached alice's host")
	}
	// Subscriptions count per session: alice's subscription does not make
	// bob's child's update reach anyone, and bob's unsubscribe reaches his
	// own child although alice still holds one.
	a.call("resources/subscribe", `{"uri":"mem://a"}`)
	b.call("resources/subscribe", `{"uri":"mem://a"}`)
	b.call("resources/unsubscribe", `{"uri":"mem://a"}`)
	if !children[1].up.got("resources/unsubscribe") || children[0].up.got("resources/unsubscribe") {
		t.Error("bob's unsubscribe did not reach his own child alone")
	}
	send(b, "notifications/resources/updated")
	b.call("ping", `{}`)
	a.call("ping", `{}`)
	if a.has("notifications/resources/updated") || b.has("notifications/resources/updated") {
		t.Error("an update from bob's child reached a host: bob unsubscribed, and alice's subscription is with her child")
	}
	if n := len(l.all()); n != 2 {
		t.Fatalf("%d children; want two", n)
	}
}

// Two sessions of one user with different capabilities get a child each:
// the one whose host cannot sample has a child never told of sampling, and
// never sees a sampling request. A third session like the first shares
// the first's child.
func TestSessionsOfOtherCapabilitiesGetOwnChildren(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l)
	capable := serveAs(t, g, alice, capsSampling)
	plain := serveAs(t, g, alice, capsNone)
	send := func(h *rawHost, method string) string {
		return string(h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+method+`"}}`))
	}
	if answer := send(capable, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("sampling of the capable host: %s", answer)
	}
	capable.next("sampling/createMessage")
	if answer := send(plain, "sampling/createMessage"); !strings.Contains(answer, "does not support sampling") {
		t.Errorf("sampling for the host that cannot sample was answered %s", answer)
	}
	children := l.all()
	if len(children) != 2 {
		t.Fatalf("%d children; want one per capability profile", len(children))
	}
	for _, c := range children {
		if !c.up.got("tools/call") {
			t.Errorf("a child got no call")
		}
	}
	var withSampling, without int
	for _, c := range children {
		if strings.Contains(c.capabilities(), "sampling") {
			withSampling++
		} else {
			without++
		}
	}
	if withSampling != 1 || without != 1 {
		t.Fatalf("children's capabilities: %s and %s; want one with sampling and one without", children[0].capabilities(), children[1].capabilities())
	}
	plain.call("ping", `{}`)
	if plain.has("sampling/createMessage") {
		t.Error("a sampling request reached the host that cannot sample")
	}
	// Same user, same capabilities in other spacing: the first child.
	third := serveAs(t, g, alice, `{ "sampling" : {}, "elicitation" : { "form" : { } } }`)
	send(third, "elicitation/create")
	third.next("elicitation/create")
	if n := len(l.all()); n != 2 {
		t.Fatalf("%d children after a third session like the first; want it to share", n)
	}
}

// A server may list tools for capable clients only: each session sees and
// calls the tools its own child lists.
func TestCatalogIsPerKey(t *testing.T) {
	l := &keyedLauncher{tools: func(c *launched) string {
		if strings.Contains(c.capabilities(), "sampling") {
			return `{"tools":[{"name":"t","inputSchema":{"type":"object"}},{"name":"summarize","inputSchema":{"type":"object"}}]}`
		}
		return `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
	}}
	g := newKeyedGate(t, l)
	capable := serveAs(t, g, alice, capsSampling)
	plain := serveAs(t, g, alice, capsNone)
	if got := string(capable.call("tools/list", `{}`)); !strings.Contains(got, "s__summarize") {
		t.Errorf("the capable host's list lacks its child's tool: %s", got)
	}
	if got := string(plain.call("tools/list", `{}`)); strings.Contains(got, "s__summarize") {
		t.Errorf("the plain host was listed a tool its child does not offer: %s", got)
	}
	if got := string(plain.call("tools/call", `{"name":"s__summarize","arguments":{}}`)); !strings.Contains(got, "unknown tool") {
		t.Errorf("the plain host's call of a tool its child does not offer: %s", got)
	}
	if got := string(capable.call("tools/call", `{"name":"s__summarize","arguments":{}}`)); !strings.Contains(got, "ran") {
		t.Errorf("the capable host's call of its child's tool: %s", got)
	}
}

// A host that declares roots has children of its own, and a roots/list
// from one of them, even outside any call, goes to that host alone.
func TestRootsHostHasOwnChildren(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l)
	a := serveAs(t, g, alice, capsRoots)
	b := serveAs(t, g, alice, capsRoots)
	a.call("tools/call", `{"name":"s__t","arguments":{"later":"roots/list"}}`)
	b.call("tools/call", `{"name":"s__t","arguments":{}}`)
	children := l.all()
	if len(children) != 2 {
		t.Fatalf("%d children for two hosts with roots; want one each", len(children))
	}
	waitFor(t, "no call in flight", func() bool { return sessionsInFlight(g, "s") == 0 })
	close(children[0].up.goLate)
	select {
	case answer := <-children[0].up.late:
		if strings.Contains(answer, "error") {
			t.Errorf("roots/list outside a call from a roots host's own child was refused: %s", answer)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to roots/list")
	}
	a.next("roots/list")
	b.call("ping", `{}`)
	if b.has("roots/list") {
		t.Error("another host's child asked this host for its roots")
	}
}

// Idle children stop, and restart, per key: one user's idle child stops
// while another's busy child runs on; the idle user's next call starts a
// new child; a session's end stops its key's children once no other
// session has the key.
func TestIdleStopPerKey(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l, func(o *Options) { o.IdleTimeout = 200 * time.Millisecond })
	a := serveAs(t, g, alice, capsSampling)
	b := serveAs(t, g, bob, capsSampling)
	a.call("tools/call", `{"name":"s__t","arguments":{}}`)
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		b.call("tools/call", `{"name":"s__t","arguments":{"block":true}}`)
	}()
	waitFor(t, "bob's call in flight", func() bool { return sessionsInFlight(g, "s") == 1 })
	keyA, keyB := sessionKey(t, g, alice), sessionKey(t, g, bob)
	waitFor(t, "alice's idle child to stop", func() bool { return len(g.pool.RunningFor(keyA)) == 0 })
	running := g.pool.RunningFor(keyB)
	if len(running) != 1 {
		t.Fatalf("bob's busy child was stopped with alice's idle one")
	}
	if got := string(a.call("tools/call", `{"name":"s__t","arguments":{}}`)); !strings.Contains(got, "ran") {
		t.Fatalf("alice's call after her child stopped: %s", got)
	}
	if n := len(l.all()); n != 3 {
		t.Fatalf("%d children; want alice's restarted beside bob's", n)
	}
	if r := g.pool.RunningFor(keyB); len(r) != 1 || r[0] != running[0] {
		t.Error("bob's child was restarted by alice's call")
	}
	close(l.all()[1].up.release)
	<-blocked
	// Alice's host leaves: her child stops at once, bob's runs on.
	a.w.(io.Closer).Close()
	waitFor(t, "alice's child to stop with her session", func() bool { return len(g.pool.RunningFor(keyA)) == 0 })
	if len(g.pool.RunningFor(keyB)) != 1 {
		t.Error("bob's child stopped when alice's session ended")
	}
}

// sessionKey is the pool key of id's one live session.
func sessionKey(t *testing.T, g *Gate, id Identity) string {
	t.Helper()
	var keys []string
	for _, s := range g.liveSessions() {
		if s.identity.Subject == id.Subject {
			keys = append(keys, s.childKey())
		}
	}
	if len(keys) != 1 {
		t.Fatalf("%d sessions of %s", len(keys), id.Subject)
	}
	return keys[0]
}

func TestIdentityKey(t *testing.T) {
	base := Identity{Subject: "sub", Email: "a@example.org", Groups: []string{"x", "y"}}
	same := []Identity{
		{Subject: "sub", Email: "a@example.org", Groups: []string{"y", "x"}},
		{Subject: "sub", Email: "a@example.org", Groups: []string{"x", "y", "x"}},
		{Subject: "sub", Name: "label only", Email: "a@example.org", Groups: []string{"x", "y"}},
	}
	for _, id := range same {
		if id.Key() != base.Key() {
			t.Errorf("%+v has key %s; want %s, as %+v", id, id.Key(), base.Key(), base)
		}
	}
	other := []Identity{
		{Subject: "sub2", Email: "a@example.org", Groups: []string{"x", "y"}},
		{Subject: "sub", Email: "b@example.org", Groups: []string{"x", "y"}},
		{Subject: "sub", Email: "a@example.org", Groups: []string{"x"}},
		{Subject: "sub", Email: "a@example.org", Groups: []string{"x,y"}},
		{Subject: "sub", Email: "a@example.org"},
		{},
	}
	for _, id := range other {
		if id.Key() == base.Key() {
			t.Errorf("%+v has the key of %+v", id, base)
		}
	}
	if u := OSUser(); !strings.HasPrefix(u.Subject, "uid:") || len(u.Groups) != 0 {
		t.Errorf("OSUser() = %+v; want a uid subject and no groups", u)
	}
}
