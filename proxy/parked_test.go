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

// askAsync puts a question to pc as its upstream would, and returns where
// the upstream's answer (or error) arrives.
func askAsync(tb *parkedTable, pc *parkedCall) chan error {
	out := make(chan error, 1)
	go func() {
		_, err := tb.ask(context.Background(), pc, &question{method: "elicitation/create", params: json.RawMessage(`{}`), reply: make(chan json.RawMessage, 1)})
		out <- err
	}()
	return out
}

// refusedAtOnce returns the error of a question the table refuses at
// once (nil when it was taken instead).
func refusedAtOnce(errc chan error) error {
	select {
	case err := <-errc:
		return err
	case <-time.After(2 * time.Second):
		return nil
	}
}

// park opens a call of principal and has it ask, returning it parked.
func park(t *testing.T, tb *parkedTable, principal string, ttl time.Duration) (*parkedCall, chan error) {
	t.Helper()
	pc := tb.open(context.Background(), principal, child{"k-" + principal, "s"}, elicitation.Binding{Principal: principal}, hostInfo{elicitForm: true})
	errc := askAsync(tb, pc)
	q, round, _, err := tb.wait(ctxT(t), pc, ttl)
	if err != nil || q == nil || round != 1 {
		t.Fatalf("wait: %v %v %d", q, err, round)
	}
	return pc, errc
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The table bounds the calls waiting on their hosts, per principal and in
// all; a question past a bound is refused, saying which.
func TestParkedTableBounds(t *testing.T) {
	tb := &parkedTable{max: 3, maxPer: 2}
	park(t, tb, "alice", time.Minute)
	park(t, tb, "alice", time.Minute)
	pc := tb.open(context.Background(), "alice", child{"k-alice", "s"}, elicitation.Binding{}, hostInfo{})
	if err := refusedAtOnce(askAsync(tb, pc)); err == nil || !strings.Contains(err.Error(), "2 calls of this user (2 in all) already wait") {
		t.Fatalf("a third call of one user: %v", err)
	}
	park(t, tb, "bob", time.Minute)
	pc = tb.open(context.Background(), "carol", child{"k-carol", "s"}, elicitation.Binding{}, hostInfo{})
	if err := refusedAtOnce(askAsync(tb, pc)); err == nil || !strings.Contains(err.Error(), "3 in all") {
		t.Fatalf("a fourth call in all: %v", err)
	}
}

// A parked call lives as long as its question's state: then it is
// cancelled (its upstream request answered with the reason) and taken out
// of the table, and no retry can claim it.
func TestParkedTableExpiry(t *testing.T) {
	tb := &parkedTable{}
	pc, errc := park(t, tb, "alice", 50*time.Millisecond)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "within the approval timeout") {
			t.Fatalf("the upstream's question after expiry: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked call was not cancelled at its expiry")
	}
	if !errors.Is(context.Cause(pc.ctx), errParkedExpired) {
		t.Fatalf("cause: %v", context.Cause(pc.ctx))
	}
	tb.mu.Lock()
	n := len(tb.calls)
	tb.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls left in the table", n)
	}
	if _, err := tb.claim(pc.id, "alice", 1, hostInfo{}); err == nil {
		t.Fatal("an expired call was claimed")
	}
}

// A retry claims only its principal's call at the round it parked, once;
// settle cancels only a call still waiting on that round.
func TestParkedTableClaimSettle(t *testing.T) {
	tb := &parkedTable{}
	pc, errc := park(t, tb, "alice", time.Minute)
	if _, err := tb.claim(pc.id, "bob", 1, hostInfo{}); err == nil {
		t.Fatal("another principal claimed the call")
	}
	if _, err := tb.claim(pc.id, "alice", 2, hostInfo{}); err == nil {
		t.Fatal("a claim for another round")
	}
	if tb.settle(pc.id, "alice", 2, errors.New("x")) || tb.settle(pc.id, "bob", 1, errors.New("x")) {
		t.Fatal("settle cancelled for another round or principal")
	}
	got, err := tb.claim(pc.id, "alice", 1, hostInfo{})
	if err != nil || got != pc {
		t.Fatalf("claim: %v", err)
	}
	if _, err := tb.claim(pc.id, "alice", 1, hostInfo{}); err == nil {
		t.Fatal("claimed twice")
	}
	if tb.settle(pc.id, "alice", 1, errors.New("x")) {
		t.Fatal("settle cancelled a call its retry resumed")
	}
	tb.answer(pc, json.RawMessage(`{"action":"decline"}`))
	if err := <-errc; err != nil {
		t.Fatalf("the answer did not reach the upstream: %v", err)
	}
	tb.finish(pc, json.RawMessage(`{"content":[]}`), nil)
	q, _, res, err := tb.wait(ctxT(t), pc, time.Minute)
	if q != nil || err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("the result: %v %s %v", q, res, err)
	}
	// A parked call whose retry was refused is cancelled by settle.
	pc2, errc2 := park(t, tb, "alice", time.Minute)
	if !tb.settle(pc2.id, "alice", 1, errors.New("the host's retry was refused")) {
		t.Fatal("settle did not cancel the waiting call")
	}
	if err := <-errc2; err == nil || !strings.Contains(err.Error(), "retry was refused") {
		t.Fatalf("the upstream's question after settle: %v", err)
	}
}

// The host request waiting on a call withdraws (its context ends): the
// call is cancelled.
func TestParkedTableWithdrawn(t *testing.T) {
	tb := &parkedTable{}
	pc := tb.open(context.Background(), "alice", child{"k", "s"}, elicitation.Binding{}, hostInfo{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := tb.wait(ctx, pc, time.Minute); err == nil {
		t.Fatal("wait with the host gone returned no error")
	}
	if !errors.Is(context.Cause(pc.ctx), errParkedWithdrawn) {
		t.Fatalf("cause: %v", context.Cause(pc.ctx))
	}
}

// A parked call's result is counted against the budget of the session
// that started it until a host request takes it, which moves the bytes to
// its own session and request; a result nobody takes gives them back.
func TestParkedResultHold(t *testing.T) {
	owner, taker := &Session{}, &Session{}
	pc := &parkedCall{hold: &resultHold{}, owner: owner}
	pc.hold.n.Store(100)
	owner.pendingResults.Store(100)
	h := &resultHold{}
	taker.takeHold(context.WithValue(context.Background(), resultHoldKey{}, h), pc)
	if owner.pendingResults.Load() != 0 || taker.pendingResults.Load() != 100 || h.n.Load() != 100 || pc.hold.n.Load() != 0 {
		t.Fatalf("after take: owner %d, taker %d, request %d, call %d", owner.pendingResults.Load(), taker.pendingResults.Load(), h.n.Load(), pc.hold.n.Load())
	}
	pc.hold.n.Store(40)
	owner.pendingResults.Store(40)
	pc.releaseHold()
	if owner.pendingResults.Load() != 0 || pc.hold.n.Load() != 0 {
		t.Fatalf("after release: owner %d, call %d", owner.pendingResults.Load(), pc.hold.n.Load())
	}
}

// open starts a call about to be forwarded to c, bound to b, as
// forwardModern does, for the tests that drive the table directly: the
// table holds it only once it is asked (tableLocked).
func (t *parkedTable) open(parent context.Context, principal string, c child, b elicitation.Binding, caps hostInfo) *parkedCall {
	pc := newParkable(parent, principal, c, caps, nil)
	pc.binding, pc.bound = b, true
	return pc
}
