package proxy

import (
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A shared server has one child for every identity of the same
// capabilities: a request it sends during a call goes to the caller's
// session alone, and what it says on its own (a log line) to every session
// it serves. A host of other capabilities still gets a child of its own.
func TestSharedServerOneChild(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l, func(o *Options) {
		o.Servers = []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted", Shared: true}}
	})
	a := serveAs(t, g, alice, capsSampling)
	b := serveAs(t, g, bob, capsSampling)
	send := func(h *rawHost, method string) string {
		return string(h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+method+`"}}`))
	}
	if answer := send(a, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("alice's sampling: %s", answer)
	}
	a.next("sampling/createMessage")
	if answer := send(b, "sampling/createMessage"); !strings.Contains(answer, "ok") {
		t.Fatalf("bob's sampling: %s", answer)
	}
	b.next("sampling/createMessage")
	if n := len(l.all()); n != 1 {
		t.Fatalf("%d children for two users of a shared server; want 1", n)
	}
	if a.has("sampling/createMessage") {
		t.Error("bob's call's sampling request reached alice's host")
	}
	send(a, "notifications/message")
	a.next("notifications/message")
	b.next("notifications/message")
	// Other capabilities: a child of their own, even when shared.
	c := serveAs(t, g, alice, capsNone)
	c.call("tools/call", `{"name":"s__t","arguments":{}}`)
	if n := len(l.all()); n != 2 {
		t.Fatalf("%d children after a host of other capabilities called; want 2", n)
	}
}
