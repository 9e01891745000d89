package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// A call let through by an allow (no human yes) gets a relayed state; the
// world changes so that the same call (same revision, same arguments) is
// now `ask`. The retry would be a new upstream tools/call, and the state
// stands for no yes: it is refused, and nothing reaches the upstream.
func TestRelayedStateNotAYesItNeverWas(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(work, "link")
	if err := os.Symlink(filepath.Join(work, "file"), link); err != nil {
		t.Fatal(err)
	}
	pol := "version: 1\nfallback: deny\nrules:\n" +
		"  - name: workspace\n    match: mcp:s:t\n    when: 'path.within(args.path, \"" + work + "\")'\n    action: allow\n" +
		"  - name: elsewhere\n    match: mcp:s:t\n    when: '!path.within(args.path, \"" + work + "\")'\n    action: ask\n"
	u := &modernUpstream{round: func(n int, _ json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":"s"}`
		}
		return `{"resultType":"complete","content":[{"type":"text","text":"wrote"}]}`
	}}
	h := relayedHost(t, u, pol)
	args := `{"path":` + string(rawjson.AppendString(nil, link)) + `}`
	reqs, st := inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":`+args+`}`, formCaps))
	if _, ok := rawjson.Get(reqs, "mcp-gate-relayed-1"); !ok || len(u.seen()) != 1 {
		t.Fatalf("first call: %s", reqs)
	}
	// The link is re-pointed outside the workspace: the policy now asks.
	_ = os.Remove(link)
	if err := os.Symlink(filepath.Join(outside, "secret"), link); err != nil {
		t.Fatal(err)
	}
	res, err := h.retryWith(args, `{"mcp-gate-relayed-1":{"action":"accept","content":{"c":"x"}}}`, st)
	if len(u.seen()) != 1 {
		t.Fatalf("the retry reached the upstream under an ask rule nobody approved (%d upstream calls): %s %v", len(u.seen()), res, err)
	}
	if err != nil || !strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("the retry under an ask nobody approved: %s %v", res, err)
	}
}

// The upstream withdraws question 1 (its request's context ends) after it
// was handed to the host, then asks question 2 (another kind): the host's
// retry answering question 1 (its round-1 state) does not claim the call,
// and its answer never reaches question 2, which the host never saw.
func TestParkedAnswerOnlyToTheQuestionAsked(t *testing.T) {
	tb := &parkedTable{}
	pc := tb.open(context.Background(), "alice", child{"k", "s"}, elicitation.Binding{Principal: "alice"}, hostInfo{elicitForm: true, roots: true})
	qctx, qcancel := context.WithCancel(context.Background())
	go func() {
		_, _ = tb.ask(qctx, pc, &question{method: "elicitation/create", params: json.RawMessage(`{"message":"Q1"}`), reply: make(chan json.RawMessage, 1)})
	}()
	q, round, _, err := tb.wait(ctxT(t), pc, time.Minute)
	if err != nil || q == nil || round != 1 {
		t.Fatalf("wait: %v %v", q, err)
	}
	qcancel() // the upstream withdraws Q1
	time.Sleep(50 * time.Millisecond)
	got := make(chan json.RawMessage, 1)
	go func() {
		a, _ := tb.ask(context.Background(), pc, &question{method: "roots/list", params: json.RawMessage(`{}`), reply: make(chan json.RawMessage, 1)})
		got <- a
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := tb.claim(pc.id, "alice", 1, hostInfo{elicitForm: true}); err == nil {
		t.Fatal("a retry of round 1 claimed the call after its question was withdrawn and another asked")
	}
	// And if the withdrawal comes between claim and answer, the answer goes
	// nowhere.
	tb.answer(pc, json.RawMessage(`{"action":"accept","content":{"x":1}}`))
	select {
	case a := <-got:
		t.Fatalf("the answer to Q1 (elicitation) reached Q2 (roots/list), never shown to the host: %s", a)
	case <-time.After(200 * time.Millisecond):
	}
}

// A rule whose questions must go to the local surface (via: [local]: a
// hook could answer for the user) is never put to a 2026-07-28 host's own
// form: with no local surface running it is refused, and nothing reaches
// the upstream, whatever the host retries with.
func TestModernAskKeepsViaLocal(t *testing.T) {
	u := &modernUpstream{round: func(int, json.RawMessage) string {
		return `{"resultType":"complete","content":[{"type":"text","text":"merged"}]}`
	}}
	pol := "version: 1\nfallback: deny\nrules:\n  - match: mcp:s:t\n    action: ask\n    via: [local]\n"
	h := relayedHost(t, u, pol)
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps)
	if err != nil || !strings.Contains(string(res), "no local approval surface") || strings.Contains(string(res), "input_required") {
		t.Fatalf("a via:[local] rule for a 2026-07-28 host: %s %v", res, err)
	}
	if len(u.seen()) != 0 {
		t.Fatalf("a via:[local] rule's call reached the upstream: %s", res)
	}
}
