package proxy

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// HostQueueBytes bounds, per host session, what the gate holds for a host
// that does not read its output: at most this much queued, and as much
// again waiting for room (rpc.Limits.QueueBytes). While the queue is full
// the gate stops reading that host, so it takes on no more of its work;
// the upstreams, which other sessions share, are never held up by it (a
// response is handed to its call without waiting, and notifications to the
// host are dropped, not waited for).
const HostQueueBytes = 16 << 20

// HostResultWait is how long a result may wait for room in a full host
// queue before it is dropped and its call answered with a short error
// (rpc.Options.ResponseWait). A result finding the waiting room full too is
// dropped at once.
const HostResultWait = 30 * time.Second

// resultHold is what one host request holds of its session's result
// budget (Session.pendingResults), given back when its handler returns and
// the response is the host queue's to account for. It is the request's
// context too, carrying itself under resultHoldKey: one allocation per
// request instead of a value context, the hold and a release closure.
// (A parked call's hold, which outlives its request, is carried as a
// plain value and has no parent: parked.go.)
type resultHold struct {
	context.Context
	n atomic.Int64
}

type resultHoldKey struct{}

// Value returns the hold for resultHoldKey; other keys are the parent's.
func (h *resultHold) Value(key any) any {
	if key == (resultHoldKey{}) {
		return h
	}
	return h.Context.Value(key)
}

// holdResults starts the accounting of one host request's upstream
// results; s.release(h) ends it.
func (s *Session) holdResults(ctx context.Context) *resultHold {
	return &resultHold{Context: ctx}
}

// release gives back what h holds of the session's result budget.
func (s *Session) release(h *resultHold) { s.pendingResults.Add(-h.n.Load()) }

// admitResult returns the admission of an upstream's result for the host
// request in ctx, called on the upstream's read loop as soon as the result
// is read (rpc.Conn.CallAdmit). Results arrive as fast as upstreams answer,
// whatever the host does: past HostQueueBytes of them between their
// upstream and the host's queue, a result is refused there, let go at
// once, and its call answered with an error, so that neither a host that
// does not read nor a burst of large results can make the gate hold more
// (one result larger than the bound still goes, alone). It never waits:
// the read loop is the upstream's, which other sessions share.
func (s *Session) admitResult(ctx context.Context, server, method string) func(int) error {
	h, _ := ctx.Value(resultHoldKey{}).(*resultHold)
	if h == nil {
		return nil
	}
	return func(n int) error {
		for {
			cur := s.pendingResults.Load()
			if cur > 0 && cur+int64(n) > HostQueueBytes {
				why := fmt.Errorf("%d bytes of results are already on their way to the host (bound %d bytes per session)", cur, HostQueueBytes)
				s.log.Warn("result dropped: the host is not taking its results", "session", s.session, "server", server, "method", method, "bytes", n, "error", why)
				s.audit.Undelivered(audit.Undelivered{Session: s.session, Method: method, WireName: server, Bytes: n, Reason: why.Error()})
				return rpc.Errorf(rpc.CodeInternalError, "mcp-gate dropped the %d-byte result of %s from upstream %q because the host was not reading its input fast enough: %v", n, method, server, why)
			}
			if s.pendingResults.CompareAndSwap(cur, cur+int64(n)) {
				h.n.Add(int64(n))
				return nil
			}
		}
	}
}

// resultDropped audits a result dropped because the host was not reading.
// The upstream has answered already: there is nothing left to cancel.
func (s *Session) resultDropped(req *rpc.Message, size int, why error) {
	name, _ := rawjson.GetString(req.Params, "name")
	if name == "" {
		name, _ = rawjson.GetString(req.Params, "uri")
	}
	s.audit.Undelivered(audit.Undelivered{Session: s.session, Method: req.Method, WireName: name, Bytes: size, Reason: why.Error()})
}

// A callTimeoutError is the cause of a call that outlived its server's
// callTimeout.
type callTimeoutError struct {
	server  string
	timeout time.Duration
}

func (e *callTimeoutError) Error() string {
	return fmt.Sprintf("upstream %q did not answer within its callTimeout of %s; the gate cancelled the call", e.server, e.timeout)
}

// withCallTimeout bounds a forwarded call by its server's callTimeout, from
// the forward (start and restart backoff included) to the answer. When it
// fires, rpc.Conn.Call sends the upstream notifications/cancelled, and the
// host gets an error naming the server and the timeout.
func withCallTimeout(ctx context.Context, cause *callTimeoutError) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, cause.timeout, cause)
}
