package proxy

import (
	"testing"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A shared server's child serves the sessions of every identity: one
// user's unsubscribe (of a URI they never subscribed to, or did) reached
// the child while another user still held a subscription to it, since only
// the sessions of the caller's own key were counted, and the other user's
// updates stopped.
func TestSharedServerUnsubscribeKeepsOthersSubscriptions(t *testing.T) {
	l := &keyedLauncher{}
	g := newKeyedGate(t, l, func(o *Options) {
		o.Servers = []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted", Shared: true}}
	})
	a := serveAs(t, g, alice, capsSampling)
	b := serveAs(t, g, bob, capsSampling)
	b.call("resources/subscribe", `{"uri":"mem://a"}`)
	children := l.all()
	if len(children) != 1 {
		t.Fatalf("%d children for two users of a shared server; want 1", len(children))
	}
	up := children[0].up
	up.reset()
	a.call("resources/unsubscribe", `{"uri":"mem://a"}`)
	if up.got("resources/unsubscribe") {
		t.Error("alice's unsubscribe reached the shared child while bob holds a subscription")
	}
	b.call("resources/unsubscribe", `{"uri":"mem://a"}`)
	if !up.got("resources/unsubscribe") {
		t.Error("the last subscriber's unsubscribe did not reach the shared child")
	}
}
