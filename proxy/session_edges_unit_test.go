package proxy

// In-memory tests of a session's edges (gate.go, pipeline.go): what a Gate
// refuses to be built with, requests before or in a malformed initialize,
// a call the host withdraws while its question is open, and roots changes
// passed to the children.

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/protocol"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// A gate name or server key outside the wire-name rules is refused when
// the Gate is built, naming what is wrong.
func TestNewRefusesBadNames(t *testing.T) {
	if _, err := New(Options{Name: "my gate!"}); err == nil {
		t.Fatal("a gate name with a space and a bang was accepted")
	}
	_, err := New(Options{Servers: []upstream.Config{{Name: "Bad_Server", Type: upstream.TypeStdio, Command: "x"}}})
	if err == nil || !strings.Contains(err.Error(), `server "Bad_Server"`) {
		t.Fatalf("a bad server key: %v", err)
	}
}

// Before initialize only initialize and ping are served; an initialize
// that cannot be read is invalid params; an unknown protocol version is
// answered with the latest the gate speaks, for the host to decide.
func TestInitializeEdges(t *testing.T) {
	h := startParamsHost(t, Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: &scriptLauncher{servers: map[string]scripted{"s": newPipelineUpstream().serve}}, StartTimeout: 10 * time.Second,
		Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	})
	if r := h.call("tools/list", `{}`); r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "before initialize") {
		t.Fatalf("tools/list before initialize: %+v", r.Error)
	}
	if r := h.call("ping", `{}`); r.Error != nil {
		t.Fatalf("ping before initialize: %+v", r.Error)
	}
	if r := h.call("nonsense/method", `{}`); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("an unknown method: %+v", r.Error)
	}
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":"all of them"}`); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("capabilities as a string: %+v", r.Error)
	}
	r := h.call("initialize", `{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"old","version":"1"}}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var res struct{ ProtocolVersion string }
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ProtocolVersion != protocol.Latest {
		t.Fatalf("an unknown version answered with %s, want %s", r.Result, protocol.Latest)
	}
}

// lateApprover says yes only after the call's context has ended, as a
// human who answers after the host gave up.
type lateApprover struct {
	asked, answered chan struct{}
}

func (a *lateApprover) Approve(ctx context.Context, _ elicitation.Request, _ time.Duration) elicitation.Answer {
	close(a.asked)
	<-ctx.Done()
	defer close(a.answered)
	return elicitation.Answer{Outcome: elicitation.Approved, Detail: "approved by the user"}
}

// A call the host cancels while its question is open is never sent, even
// if the yes comes afterwards, and gets no answer, as MCP says.
func TestCallWithdrawnWhileAsked(t *testing.T) {
	up := newPipelineUpstream()
	a := &lateApprover{asked: make(chan struct{}), answered: make(chan struct{})}
	var audit lockedBuffer
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
		o.Policy = static(t, "version: 1\nfallback: deny\nask: [mcp:s:t]\n")
		o.Approver = a
	}, withAudit(&audit))
	h.call("tools/list", `{}`)
	answer := make(chan json.RawMessage, 1)
	h.mu.Lock()
	h.waits[`"c1"`] = answer
	h.mu.Unlock()
	h.write(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"s__t","arguments":{}}}`)
	select {
	case <-a.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the approver was not asked")
	}
	h.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user pressed escape"}}`)
	select {
	case <-a.answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the question")
	}
	waitFor(t, "the re-decision after the late yes", func() bool {
		return strings.Contains(audit.String(), "re-decided after the user approved")
	})
	h.call("ping", `{}`)
	time.Sleep(20 * time.Millisecond) // whatever the handler does next has had time
	if up.got("tools/call") {
		t.Fatal("a withdrawn call was sent upstream")
	}
	select {
	case line := <-answer:
		t.Fatalf("a cancelled request was answered: %s", line)
	default:
	}
}

// A host with roots that says its roots changed has its children told,
// so that they ask again.
func TestRootsChangedReachesChildren(t *testing.T) {
	up := newPipelineUpstream()
	h := startRawHostInit(t, map[string]scripted{"s": up.serve}, `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"raw","version":"1"}}`)
	h.call("tools/list", `{}`) // starts the child
	h.write(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	waitFor(t, "the child to hear of the roots change", func() bool { return up.got("notifications/roots/list_changed") })
}
