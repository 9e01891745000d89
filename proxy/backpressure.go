package proxy

import (
	"context"
	"fmt"
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
func withCallTimeout(ctx context.Context, server string, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &callTimeoutError{server: server, timeout: d})
}
