package e2e

import (
	"fmt"
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

// A remote server that never answered a POST whose answer comes elsewhere
// (a notification or a response of the gate's to a Streamable HTTP server;
// anything posted to a legacy server's endpoint, whose answers come on its
// stream) held a goroutine and a connection of the gate for each, until
// the session ended: a legacy server that answered every call on its
// stream and no POST added one per call. Such a POST is given up on after
// ten seconds.
func TestBypassRemotePostsNeverAnswered(t *testing.T) {
	t.Parallel()
	base, _ := startRemoteHostile(t)
	g := remoteGate(t, map[string]any{
		"hostile":    map[string]any{"type": "http", "url": base + "/mcp"},
		"silentnote": map[string]any{"type": "http", "url": base + "/silentnote/mcp"},
		"silent":     map[string]any{"type": "sse", "url": base + "/sse-silent"},
	})
	sess := g.connect(t, nil)
	if text, failed := remoteCallErr(t, sess, "silentnote__held"); failed || !strings.HasPrefix(text, "held=") {
		t.Fatalf("silentnote: failed=%t %q", failed, text)
	}
	for range 3 {
		if text, failed := remoteCallErr(t, sess, "silent__echo"); failed || text != "echo over legacy sse" {
			t.Fatalf("silent: failed=%t %q", failed, text)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		text, _ := remoteCallErr(t, sess, "hostile__held")
		if text == "held=0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds POSTs the gate never gave up on: %s (want held=0)", text)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(g.stderr.String(), "did not accept a message in time") {
		t.Errorf("no warning names the unaccepted messages")
	}
}

// A remote server whose stream of its own messages (the GET stream) ended
// at once, with a new event id and no message, every time, asking for a
// retry in a millisecond, had the gate open it again hundreds of times a
// second for as long as the session lasted: the count of fruitless
// attempts was kept and never checked on that path, and a new event id
// counted as progress. A stream that brings no message is opened again
// after half a second at the soonest, and five in a row that each lasted
// under a second give it up, as a stream that fails to open.
func TestBypassRemoteEmptyStreamLoop(t *testing.T) {
	t.Parallel()
	base, _ := startRemoteHostile(t)
	g := remoteGate(t, map[string]any{"emptyget": map[string]any{"type": "http", "url": base + "/emptyget/mcp"}})
	sess := g.connect(t, nil)
	if text, failed := remoteCallErr(t, sess, "emptyget__gets"); failed || !strings.HasPrefix(text, "gets=") {
		t.Fatalf("gets: failed=%t %q", failed, text)
	}
	time.Sleep(2 * time.Second)
	text, failed := remoteCallErr(t, sess, "emptyget__gets")
	var n int
	if _, err := fmt.Sscanf(text, "gets=%d", &n); failed || err != nil {
		t.Fatalf("gets: failed=%t %q", failed, text)
	}
	if n > 5 {
		t.Errorf("%d GETs of an empty stream in two seconds; want a few", n)
	}
	waitFor(t, "the stream given up on", 20*time.Second, func() bool {
		return strings.Contains(g.stderr.String(), "giving up on the server's stream")
	})
}

// A remote entry's secrets going over plain http to another machine were
// warned about only when they were headers, and a name under .localhost
// was taken for this machine, though the gate's resolver asks DNS for it:
// a token in the url's query or user info, or headers sent to
// http://x.localhost, went out in clear without a word.
func TestBypassRemotePlainHTTPWarnings(t *testing.T) {
	t.Parallel()
	g := remoteGate(t, map[string]any{
		"sub":      map[string]any{"type": "http", "url": "http://mcp.localhost:9/mcp", "headers": map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		"query":    map[string]any{"type": "http", "url": "http://mcp.example.test/mcp?key=${REMOTE_TOKEN}"},
		"userinfo": map[string]any{"type": "sse", "url": "http://u:${REMOTE_TOKEN}@mcp.example.test/sse"},
		"loop":     map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp?key=${REMOTE_TOKEN}"},
	})
	sess := g.connect(t, nil)
	sess.Close()
	out := g.stderr.String()
	for _, name := range []string{"sub", "query", "userinfo"} {
		if !strings.Contains(out, "server="+name+" ") || !strings.Contains(out, "over plain http to another machine") {
			t.Errorf("no plain-http warning for %s", name)
		}
	}
	if strings.Contains(out, "server=loop ") {
		t.Errorf("a warning for a loopback server")
	}
	noTokenLeak(t, g)
}
