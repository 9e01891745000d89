package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// A handler bounds its call with CancelServedAfter: when the bound fires,
// the handler's context (and one derived from it) ends with the cause,
// and the call still answers. Disarmed in time, it cancels nothing.
func TestCancelServedAfter(t *testing.T) {
	cause := errors.New("the bound of this call")
	p := newPeer(t, wires[0], funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		derived := context.WithValue(ctx, struct{}{}, 1)
		switch req.Method {
		case "layered":
			// A context the call's end does not end exactly is refused.
			own, stop := context.WithCancel(derived)
			defer stop()
			if _, ok := CancelServedAfter(own, time.Millisecond, cause); ok {
				return nil, errors.New("armed under a cancellation of its own")
			}
			if _, ok := CancelServedAfter(context.WithoutCancel(derived), time.Millisecond, cause); ok {
				return nil, errors.New("armed without the call's cancellation")
			}
			return json.RawMessage(`"refused"`), nil
		case "bounded":
			if _, ok := CancelServedAfter(derived, time.Millisecond, cause); !ok {
				return nil, errors.New("not a served call")
			}
			select {
			case <-derived.Done():
			case <-time.After(hang):
				return nil, errors.New("the bound did not fire")
			}
			if got := context.Cause(derived); got != cause {
				return nil, errors.New("derived cause: " + got.Error())
			}
			return nil, context.Cause(ctx)
		case "disarmed":
			before := time.Now()
			bound, ok := CancelServedAfter(derived, time.Hour, cause)
			if !ok {
				return nil, errors.New("not a served call")
			}
			// Armed, the bound is the call's deadline, for what reads it.
			if at, ok := derived.Deadline(); !ok || at.Before(before.Add(time.Hour)) || at.After(time.Now().Add(time.Hour)) {
				return nil, errors.New("the armed bound is not the deadline")
			}
			if !bound.Stop() {
				return nil, errors.New("not disarmed")
			}
			if _, ok := derived.Deadline(); ok {
				return nil, errors.New("a deadline after the bound was disarmed")
			}
			if ctx.Err() != nil {
				return nil, errors.New("cancelled")
			}
			// A bound stopped after another was armed leaves the
			// later one's deadline in place (rounds one after another).
			first, _ := CancelServedAfter(derived, time.Hour, cause)
			second, _ := CancelServedAfter(derived, 2*time.Hour, cause)
			first.Stop()
			if at, ok := derived.Deadline(); !ok || at.Before(before.Add(2*time.Hour)) {
				return nil, errors.New("stopping an earlier bound cleared the later one's deadline")
			}
			second.Stop()
			if _, ok := derived.Deadline(); ok {
				return nil, errors.New("a deadline after both bounds were disarmed")
			}
			return json.RawMessage(`"intact"`), nil
		}
		return req.Params, nil
	}}, Options{AnswerBadInput: true})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"bounded"}`)
	if l := p.recv(); !strings.Contains(l, `"id":1`) || !strings.Contains(l, "the bound of this call") {
		t.Errorf("bounded call answered %s; want its error carrying the cause", l)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"disarmed"}`)
	if l := p.recv(); !strings.Contains(l, `"result":"intact"`) {
		t.Errorf("disarmed call answered %s", l)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"layered"}`)
	if l := p.recv(); !strings.Contains(l, `"result":"refused"`) {
		t.Errorf("layered call answered %s", l)
	}
	if _, ok := CancelServedAfter(context.Background(), time.Millisecond, cause); ok {
		t.Error("CancelServedAfter armed a bound on a context that serves no call")
	}
}
