package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// A parked call whose forward ends while its question is with the host
// (its callTimeout ran out): the upstream's question is answered at once,
// saying why, not held until the question expires; the call stays in the
// table for its retry, which gets the forward's outcome; the host's answer
// carried by that retry goes nowhere.
func TestParkedFinishWhileParked(t *testing.T) {
	tb := &parkedTable{}
	pc, errc := park(t, tb, "alice", time.Minute)
	timeout := &callTimeoutError{server: "s", timeout: time.Second}
	tb.finish(pc, nil, timeout)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "the call it was asked in ended before the host answered") {
			t.Fatalf("the upstream's question once its call ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's question was held after its call ended")
	}
	if n := tb.count(); n != 1 {
		t.Fatalf("%d calls in the table; want the ended one kept for its retry", n)
	}
	got, err := tb.claim(pc.id, "alice", 1, hostInfo{})
	if err != nil || got != pc {
		t.Fatalf("the retry's claim of the ended call: %v", err)
	}
	tb.answer(pc, json.RawMessage(`{"action":"accept","content":{"env":"x"}}`))
	if a := tb.answersOf(pc); len(a) != 0 {
		t.Fatalf("an answer to an ended call was taken: %s", a)
	}
	q, _, _, err := tb.wait(ctxT(t), pc, time.Minute)
	if q != nil || !errors.Is(err, timeout) {
		t.Fatalf("the retry got %v, %v; want the forward's timeout", q, err)
	}
	if n := tb.count(); n != 0 {
		t.Fatalf("%d calls left in the table after the retry took the outcome", n)
	}
}

// The upstream withdraws its question (as a go-sdk server does when its
// call is cancelled) and then its forward ends: the retry still gets the
// outcome, not a refusal saying no question waits.
func TestParkedFinishAfterWithdrawnQuestion(t *testing.T) {
	tb := &parkedTable{}
	pc := tb.open(context.Background(), "alice", child{"k-alice", "s"}, elicitation.Binding{Principal: "alice"}, hostInfo{elicitForm: true})
	upCtx, withdraw := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tb.ask(upCtx, pc, &question{method: "elicitation/create", params: json.RawMessage(`{}`), reply: make(chan json.RawMessage, 1)})
		errc <- err
	}()
	if q, _, _, err := tb.wait(ctxT(t), pc, time.Minute); q == nil || err != nil {
		t.Fatalf("wait: %v %v", q, err)
	}
	withdraw()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the withdrawn question: %v", err)
	}
	timeout := &callTimeoutError{server: "s", timeout: time.Second}
	tb.finish(pc, nil, timeout)
	if _, err := tb.claim(pc.id, "alice", 1, hostInfo{}); err != nil {
		t.Fatalf("the retry's claim: %v", err)
	}
	if _, _, _, err := tb.wait(ctxT(t), pc, time.Minute); !errors.Is(err, timeout) {
		t.Fatalf("the retry got %v; want the forward's timeout", err)
	}
	// A call still running whose question was withdrawn has nothing for
	// the retry, as before.
	pc2 := tb.open(context.Background(), "alice", child{"k-alice", "s"}, elicitation.Binding{Principal: "alice"}, hostInfo{elicitForm: true})
	upCtx2, withdraw2 := context.WithCancel(context.Background())
	go func() {
		_, err := tb.ask(upCtx2, pc2, &question{method: "elicitation/create", params: json.RawMessage(`{}`), reply: make(chan json.RawMessage, 1)})
		errc <- err
	}()
	if q, _, _, err := tb.wait(ctxT(t), pc2, time.Minute); q == nil || err != nil {
		t.Fatalf("wait: %v %v", q, err)
	}
	withdraw2()
	<-errc
	if _, err := tb.claim(pc2.id, "alice", 1, hostInfo{}); err == nil || !strings.Contains(err.Error(), "no question of that call is waiting") {
		t.Fatalf("claim of a running call whose question was withdrawn: %v", err)
	}
	tb.end(pc2, errors.New("test over"))
}

func (t *parkedTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls)
}
