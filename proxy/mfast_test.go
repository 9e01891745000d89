package proxy

// In-memory tests of a 2026-07-28 host's call path (parked.go,
// forwardModern): a call to a child of that revision never parks; a call to
// an older child parks only when a question comes, and then as it always
// did; a call withdrawn before any question cancels its upstream call.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// strayUpstream is a scripted server of revision 2026-07-28 whose
// tools/call can block until released ({"block":true}) and send a request
// of its own first ({"stray":M}), which that revision has no place for.
type strayUpstream struct {
	mu      sync.Mutex
	seen    []string               // methods received, responses as "response"
	answers map[string]chan string // responses to its own requests, by id
	called  chan struct{}          // a tools/call arrived
	release chan struct{}
}

func newStrayUpstream() *strayUpstream {
	return &strayUpstream{answers: map[string]chan string{}, called: make(chan struct{}, 16), release: make(chan struct{})}
}

func (u *strayUpstream) got(method string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, m := range u.seen {
		if m == method {
			return true
		}
	}
	return false
}

func (u *strayUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	if method == "" {
		var sid string
		_ = json.Unmarshal(id, &sid)
		u.mu.Lock()
		ch := u.answers[sid]
		u.mu.Unlock()
		if ch != nil {
			ch <- string(params)
		}
		return
	}
	u.mu.Lock()
	u.seen = append(u.seen, method)
	u.mu.Unlock()
	switch method {
	case "server/discover":
		reply(w, id, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"m","version":"1"}}`)
	case "tools/list":
		reply(w, id, `{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		u.called <- struct{}{}
		text := "ran"
		if _, block := jsonRaw(params, "arguments", "block"); block {
			<-u.release
		}
		if m, _ := jsonPath(params, "arguments", "stray"); m != "" {
			ch := make(chan string, 1)
			u.mu.Lock()
			u.answers["stray"] = ch
			u.mu.Unlock()
			w(fmt.Sprintf(`{"jsonrpc":"2.0","id":"stray","method":%q,"params":%s}`, m, upstreamParams[m]))
			select {
			case a := <-ch:
				if strings.Contains(a, `"error"`) {
					text = "refused"
				} else {
					text = "answered"
				}
			case <-time.After(10 * time.Second):
				text = "no answer"
			}
		}
		reply(w, id, `{"resultType":"complete","content":[{"type":"text","text":"`+text+`"}]}`)
	default:
		if id != nil {
			reply(w, id, `{"resultType":"complete"}`)
		}
	}
}

// callCtx sends tools/call s__t with args from the host, under ctx.
func (h *modernHost) callCtx(ctx context.Context, args string) (json.RawMessage, error) {
	p := `{"name":"s__t","arguments":` + args + `,"_meta":` + envelope(formCaps) + `}`
	return h.conn.Call(ctx, "tools/call", json.RawMessage(p))
}

func (g *Gate) parkedCount() int {
	g.parked.mu.Lock()
	defer g.parked.mu.Unlock()
	return len(g.parked.calls)
}

// A call to a running child of revision 2026-07-28 does not park: nothing
// of it is in flight as a parkable call, a request the child sends
// mid-call (which that revision has none of) is refused rather than put to
// the host as a parked question, and the call answers complete.
func TestModernUpstreamCallNeverParks(t *testing.T) {
	u := newStrayUpstream()
	g := newScriptedGate(t, u.serve, allowAll, pinModern)
	h := serveModernHost(t, g)
	// The first call starts the child (its era unknown until then).
	if res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps); err != nil || !strings.Contains(string(res), `"ran"`) {
		t.Fatalf("first call: %s %v", res, err)
	}
	<-u.called

	done := make(chan json.RawMessage, 1)
	go func() {
		res, _ := h.call("tools/call", `{"name":"s__t","arguments":{"block":true}}`, formCaps)
		done <- res
	}()
	<-u.called
	key := g.childKeyFor(h.sess.childKey(), "s")
	if calls := h.sess.parkableIn(child{key, "s"}); len(calls) != 0 {
		t.Fatalf("a call to a 2026-07-28 child runs as %d parkable call(s)", len(calls))
	}
	if n := g.parkedCount(); n != 0 {
		t.Fatalf("the parked table holds %d call(s)", n)
	}
	close(u.release)
	if res := <-done; !strings.Contains(string(res), `"ran"`) {
		t.Fatalf("blocked call: %s", res)
	}

	res, err := h.call("tools/call", `{"name":"s__t","arguments":{"stray":"elicitation/create"}}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "complete" || !strings.Contains(string(res), `"refused"`) {
		t.Fatalf("a 2026-07-28 child's request mid-call was not refused: %s", res)
	}
	if _, asked := h.received(); len(asked) != 0 {
		t.Fatalf("the host was sent %v", asked)
	}
}

// A host that withdraws its call before any question cancels the upstream
// call, whichever the child's revision: to a 2026-07-28 child (the call
// runs in the host request) and to an older one (it runs beside it,
// parkable, and is ended by the withdrawal, never tabled).
func TestModernCallWithdrawnCancelsUpstream(t *testing.T) {
	t.Run("upstream=2026-07-28", func(t *testing.T) {
		u := newStrayUpstream()
		g := newScriptedGate(t, u.serve, allowAll, pinModern)
		h := serveModernHost(t, g)
		if _, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps); err != nil {
			t.Fatal(err)
		}
		<-u.called
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := h.callCtx(ctx, `{"block":true}`); errc <- err }()
		<-u.called
		cancel()
		<-errc
		waitFor(t, "notifications/cancelled upstream", func() bool { return u.got("notifications/cancelled") })
		close(u.release)
	})
	t.Run("upstream=2025-11-25", func(t *testing.T) {
		u := newPipelineUpstream()
		g := newScriptedGate(t, u.serve, allowAll)
		h := serveModernHost(t, g)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := h.callCtx(ctx, `{"block":true}`); errc <- err }()
		waitFor(t, "the call upstream", func() bool { return u.got("tools/call") })
		key := g.childKeyFor(h.sess.childKey(), "s")
		calls := h.sess.parkableIn(child{key, "s"})
		if len(calls) != 1 {
			t.Fatalf("%d parkable calls in flight to an older child, want 1", len(calls))
		}
		if n := g.parkedCount(); n != 0 {
			t.Fatalf("a call never asked is in the parked table (%d)", n)
		}
		cancel()
		<-errc
		waitFor(t, "notifications/cancelled upstream", func() bool { return u.got("notifications/cancelled") })
		if cause := context.Cause(calls[0].ctx); cause != errParkedWithdrawn {
			t.Fatalf("the forward was cancelled by %v, want the withdrawal", cause)
		}
		close(u.release)
	})
}

// A question on the cheap path parks as it always did: the call is tabled
// at its first question, its state is bound to the call (the retry
// answering it with the same arguments gets the result, with the answer
// exempted from the guard; a retry with other arguments is refused and the
// parked call cancelled), and once its result is taken it leaves the table.
func TestModernQuestionParksLazily(t *testing.T) {
	u := newPipelineUpstream()
	g := newScriptedGate(t, u.serve, allowAll)
	h := serveModernHost(t, g)
	args := `{"send":"elicitation/create","n":1}`
	res, err := h.call("tools/call", `{"name":"s__t","arguments":`+args+`}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "input_required" {
		t.Fatalf("the upstream's question did not park the call: %s", res)
	}
	st, _ := rawjson.GetString(res, "requestState")
	if n := g.parkedCount(); n != 1 {
		t.Fatalf("a parked call is not in the table (%d)", n)
	}
	// The state binds the call as an eager binding would have.
	want, err := h.sess.parkBinding("tools/call", target{server: "s", name: "t", args: json.RawMessage(args)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pc *parkedCall
	g.parked.mu.Lock()
	for _, c := range g.parked.calls {
		pc = c
	}
	g.parked.mu.Unlock()
	got, err := g.parked.bindingOf(pc)
	if err != nil || got.ArgsDigest != want.ArgsDigest || got.Principal != want.Principal || got.Server != "s" || got.Name != "t" || got.Method != "tools/call" {
		t.Fatalf("the parked call's binding %+v, want %+v (%v)", got, want, err)
	}
	vs, err := g.rounds.Verify(st)
	if err == nil && vs.Kind != elicitation.ParkedState {
		err = fmt.Errorf("a state of kind %v, want parked", vs.Kind)
	}
	if err == nil {
		err = g.rounds.Holds(vs, got)
	}
	if err != nil {
		t.Fatalf("the state does not redeem for the call's binding: %v", err)
	}
	answer := `"inputResponses":{"mcp-gate-upstream":{"action":"accept","content":{"c":"blue"}}},"requestState":` + string(rawjson.AppendString(nil, st))
	// Other arguments: refused, and the parked call is cancelled.
	res, err = h.call("tools/call", `{"name":"s__t","arguments":{"send":"elicitation/create","n":2},`+answer+`}`, formCaps)
	if err != nil || !strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("a retry with other arguments: %s %v", res, err)
	}
	key := g.childKeyFor(h.sess.childKey(), "s")
	// The call ends on the gate's side before the gate's refusal of its
	// question reaches the upstream, whose next question reuses that
	// request's id: the refusal must not be taken for the next answer.
	waitFor(t, "the refused retry's call to end", func() bool {
		return g.parkedCount() == 0 && len(h.sess.parkableIn(child{key, "s"})) == 0 && u.repliesTo("up-elicitation/create") == 1
	})

	// Again, answered with the same arguments: the result.
	res, err = h.call("tools/call", `{"name":"s__t","arguments":`+args+`}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "input_required" {
		t.Fatalf("the upstream's question did not park the call again: %s", res)
	}
	st, _ = rawjson.GetString(res, "requestState")
	answer = `"inputResponses":{"mcp-gate-upstream":{"action":"accept","content":{"c":"blue"}}},"requestState":` + string(rawjson.AppendString(nil, st))
	res, err = h.call("tools/call", `{"name":"s__t","arguments":`+args+`,`+answer+`}`, formCaps)
	if err != nil || !strings.Contains(string(res), `blue`) || strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("the answered retry: %s %v", res, err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "complete" {
		t.Fatalf("the answered retry: %s", res)
	}
	if n := g.parkedCount(); n != 0 {
		t.Fatalf("%d calls left in the table after the result was taken", n)
	}
}
