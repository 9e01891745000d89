package rpc

import (
	"context"
	"sync"
	"time"
)

// incomingKey is the context key under which a handler's context finds
// the incomingCall it serves.
type incomingKey struct{}

// CancelServedAfter bounds the peer's call that ctx serves (ctx is a
// handler's context of a Conn, or descends from one): after d the call is
// cancelled with cause, which ctx and every context of the call report
// (context.Cause). The call still sends its response, as one ended by the
// drain time does; only the peer's own cancellation silences it.
//
// It is a lighter context.WithTimeoutCause for a handler that bounds the
// rest of its call: no context layer, whose registration with its parent
// and whose timer cost more than the one timer here. It bounds the whole
// call, not a part of it: the caller must have nothing left to do with ctx
// once the bound fires but answer.
//
// While it is armed, ctx's Deadline (and that of every context of the
// call that has none of its own) is the bound, if that is earlier. A call
// reports one bound: arm one at a time (the gate forwards a served request
// once at a time, its rounds one after another). Two armed at once both
// fire, but the deadline reported is the one armed last until it stops.
//
// The returned Bound's Stop disarms it and reports whether that was before
// it fired (a value, not a method value: one is taken for every call). ok is
// false, and nothing is armed, when ctx serves no call of a Conn, or is
// not ended exactly by the call's end: a context with a cancellation of
// its own, or without the call's (context.WithoutCancel, which keeps the
// call's values), would outlive a bound that cancels the call.
func CancelServedAfter(ctx context.Context, d time.Duration, cause error) (b Bound, ok bool) {
	in, _ := ctx.Value(incomingKey{}).(*incomingCall)
	if in == nil || ctx.Done() != in.done {
		return Bound{}, false
	}
	at := time.Now().Add(d).UnixNano()
	in.bound.Store(at)
	bt, _ := boundTimers.Get().(*boundTimer)
	if bt == nil {
		bt = &boundTimer{in: in, cause: cause}
		bt.t = time.AfterFunc(d, bt.fire)
	} else {
		bt.in, bt.cause = in, cause
		bt.t.Reset(d)
	}
	return Bound{bt, at}, true
}

// A boundTimer is the timer of a Bound, kept for the next call's once it
// has been stopped before it fired: one is armed for every forwarded
// call, and a new one costs a timer and a closure.
type boundTimer struct {
	t     *time.Timer
	in    *incomingCall
	cause error
}

var boundTimers sync.Pool

// fire cancels the call. It runs only for a bound that was not stopped in
// time, and such a boundTimer is never armed again (Stop).
func (bt *boundTimer) fire() { bt.in.cancel(bt.cause) }

// A Bound is a bound armed by CancelServedAfter.
type Bound struct {
	bt *boundTimer
	at int64 // the deadline it reported (UnixNano)
}

// Stop disarms the bound and reports whether that was before it fired.
// The call's deadline is its own again.
func (b Bound) Stop() bool {
	bt := b.bt
	stopped := bt.t.Stop()
	// Only its own: a bound armed since reports its deadline still.
	bt.in.bound.CompareAndSwap(b.at, 0)
	if stopped {
		// fire will not run for this arming: the timer can serve
		// another. One that fired may be running fire still.
		bt.in, bt.cause = nil, nil
		boundTimers.Put(bt)
	}
	return stopped
}
