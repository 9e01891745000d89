package e2e

import (
	"strings"
	"testing"
	"time"
)

// Bypasses of remote upstreams (http and sse entries), found by trying a
// hostile server on loopback against the real binary. Each test failed
// before its fix.

// A remote server that keeps a call's reply stream open after its answer,
// or answers the POST of a notification with a body it never ends, held a
// goroutine and a connection of the gate for each, for as long as it liked:
// the gate's connections and memory grew with every call until the server
// was stopped, and a held cancellation kept the cancelled call's stream
// from being dropped. The gate now stops reading a reply stream at its
// answer and drains an unwanted body only briefly.
func TestBypassRemoteStreamsHeldOpen(t *testing.T) {
	t.Parallel()
	base, _ := startRemoteHostile(t)
	g := remoteGate(t, map[string]any{
		"hostile":  map[string]any{"type": "http", "url": base + "/mcp"},
		"holdnote": map[string]any{"type": "http", "url": base + "/holdnote/mcp"},
	})
	sess := g.connect(t, nil)
	for range 4 {
		if text, failed := remoteCallErr(t, sess, "hostile__linger"); failed || text != "lingering" {
			t.Fatalf("linger: failed=%t %q", failed, text)
		}
	}
	// Its session's notifications/initialized gets a body held open.
	if text, failed := remoteCallErr(t, sess, "holdnote__held"); failed || !strings.HasPrefix(text, "held=") {
		t.Fatalf("holdnote: failed=%t %q", failed, text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, _ := remoteCallErr(t, sess, "hostile__held")
		if text == "held=0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds streams the gate kept open: %s (want held=0)", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
