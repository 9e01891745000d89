package proxy

// In-memory tests of progress routing (upstreams.go) and of list-level
// _meta (listmeta.go): an upstream speaks only for its own requests, and
// what it says reaches the host neutralised.

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"
)

// progressUpstream lists one tool "t". A call with {"wait":true} hands its
// gate progress token to tok, waits for release, then reports progress
// with it; a call with {"progress_for":X} reports progress with token X
// (any JSON) at once.
type progressUpstream struct {
	tok     chan json.RawMessage
	release chan struct{}
}

func (u *progressUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	switch method {
	case "tools/list":
		reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		if _, ok := jsonRaw(params, "arguments", "wait"); ok {
			tok, _ := jsonRaw(params, "_meta", "progressToken")
			u.tok <- tok
			<-u.release
			w(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(tok) + `,"progress":1,"message":"own\u200b"}}`)
		}
		if other, ok := jsonRaw(params, "arguments", "progress_for"); ok {
			w(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(other) + `,"progress":9,"message":"forged"}}`)
		}
		reply(w, id, `{"content":[]}`)
	default:
		if id != nil {
			reply(w, id, `{}`)
		}
	}
}

// A server cannot report progress for another server's request, nor for a
// token the gate never gave out; the owner's progress reaches the host
// under the host's own token, its message neutralised.
func TestProgressOnlyFromItsServer(t *testing.T) {
	a := &progressUpstream{tok: make(chan json.RawMessage, 1), release: make(chan struct{})}
	b := &progressUpstream{}
	h := startRawHost(t, map[string]scripted{"a": a.serve, "b": b.serve})
	h.call("tools/list", `{}`)
	answer := make(chan json.RawMessage, 1)
	h.mu.Lock()
	h.waits[`"A"`] = answer
	h.mu.Unlock()
	h.write(`{"jsonrpc":"2.0","id":"A","method":"tools/call","params":{"name":"a__t","arguments":{"wait":true},"_meta":{"progressToken":"host-tok"}}}`)
	var gateTok json.RawMessage
	select {
	case gateTok = <-a.tok:
	case <-time.After(10 * time.Second):
		t.Fatal("a's call did not arrive")
	}
	if string(gateTok) == `"host-tok"` {
		t.Fatal("the host's progress token was passed upstream as it is")
	}
	for _, forged := range []string{string(gateTok), `"host-tok"`, `12345`, `"mcp-gate-nosuchsession-1"`} {
		h.call("tools/call", `{"name":"b__t","arguments":{"progress_for":`+forged+`}}`)
	}
	close(a.release)
	select {
	case <-answer:
	case <-time.After(10 * time.Second):
		t.Fatal("a's call was not answered")
	}
	h.call("ping", `{}`)
	p := h.next("notifications/progress")
	if tok, _ := jsonPath(p, "params", "progressToken"); tok != "host-tok" {
		t.Fatalf("progress reached the host as %s", p)
	}
	if msg, _ := jsonPath(p, "params", "message"); msg != "own[U+200B]" {
		t.Fatalf("progress message %q", msg)
	}
	if h.has("notifications/progress") {
		t.Fatalf("forged progress reached the host: %v", h.pending)
	}
}

// metaUpstream lists one tool with the list-level _meta in meta, counting
// its lists; a call to the tool says the list changed.
func metaUpstream(meta *atomic.Value, lists *atomic.Int32) scripted {
	return func(method string, id, _ json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			m := meta.Load().(string)
			if m != "" {
				m = `,"_meta":` + m
			}
			reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]`+m+`}`)
			lists.Add(1)
		case "tools/call":
			w(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			reply(w, id, `{"content":[]}`)
		default:
			if id != nil {
				reply(w, id, `{}`)
			}
		}
	}
}

// A server's list-level _meta reaches the host on the gate's list,
// neutralised; one whose keys hide characters, or that is not an object,
// is left out; one the server stops sending goes.
func TestListMetaRelayed(t *testing.T) {
	var meta atomic.Value
	var lists atomic.Int32
	meta.Store(`{"note":"fresh\u200b"}`)
	h := startRawHost(t, map[string]scripted{"s": metaUpstream(&meta, &lists)})
	resp := h.call("tools/list", `{}`)
	if note, _ := jsonPath(resp, "result", "_meta", "note"); note != "fresh[U+200B]" {
		t.Fatalf("list _meta: %s", resp)
	}
	for _, m := range []string{`{"k\u200b":1}`, `"a string"`, ``} {
		meta.Store(m)
		before := lists.Load()
		h.call("tools/call", `{"name":"s__t","arguments":{}}`) // the list changed: the gate lists again
		waitFor(t, "the gate to list again", func() bool { return lists.Load() > before })
		// The new listing replaces the old _meta once it is read.
		waitFor(t, "the list without the _meta "+m, func() bool {
			_, ok := jsonRaw(h.call("tools/list", `{}`), "result", "_meta")
			return !ok
		})
	}
}
