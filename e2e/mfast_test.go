package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A 2026-07-28 host's call to a server of that revision, through the
// binary: the call runs in the host request, unparked. A request the
// server sends mid-call (that revision has none) is refused, not put to
// the host as an input request; and the host cancelling its call cancels
// the server's.
func TestModernCallToModernUpstreamUnparked(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	srv := testserver("mfast-stray", "--events", events)
	srv.Protocol = "2026-07-28"
	g := gateCommand(t, map[string]server{"m": srv}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow:\n  - mcp:m:echo\n"))
	h := startModern(t, g, formCaps)
	call := func(text string) string {
		return fmt.Sprintf(`"name":"m__echo","arguments":{"text":%q}`, text)
	}
	// The first call starts the server: its era is known from then on.
	if text, isErr := toolText(t, h.request("tools/call", call("hi"))); isErr || text != "hi" {
		t.Fatalf("first call: %q isError=%v", text, isErr)
	}
	resp := h.request("tools/call", call("stray"))
	if strings.Contains(resp, "input_required") {
		t.Fatalf("a 2026-07-28 server's request mid-call reached the host as a question: %s", resp)
	}
	if text, isErr := toolText(t, resp); isErr || text != "stray:refused" {
		t.Fatalf("the server's request mid-call: %q isError=%v, want it refused", text, isErr)
	}
	if !waitStderr(g.stderr, "which has no server-to-client requests; it asks for input in its result", 1) {
		t.Errorf("the gate did not log why it refused the server's request:\n%s", g.stderr.String())
	}

	// Cancelled by the host before any question: the server hears of it.
	h.send("", `{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{`+call("block")+`,`+h.envelope()+`}}`)
	waitEvent(t, events, "blocked ", 15*time.Second)
	_, upID, _ := strings.Cut(readEvents(t, events), "blocked ")
	upID, _, _ = strings.Cut(upID, "\n") // the gate's id for the call upstream
	h.send("", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":900,"reason":"the user pressed Esc",`+h.envelope()+`}}`)
	waitEvent(t, events, "cancelled "+upID, 15*time.Second)
}
