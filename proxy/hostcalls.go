package proxy

import (
	"context"
	"sync"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// hostCalls are a session's host requests in flight to each child, by
// their contexts. An upstream's request during a call (sampling,
// elicitation, roots) is relayed to the host marked as part of that host
// request when there is exactly one (rpc.WithServingOf), so that a
// transport with a stream per request (Streamable HTTP) sends it on the
// stream of the call it belongs to; with several, the transport decides.
type hostCalls struct {
	mu    sync.Mutex
	calls map[child][]context.Context
}

// add records ctx as in flight to c; remove ends it.
func (h *hostCalls) add(c child, ctx context.Context) {
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[child][]context.Context{}
	}
	h.calls[c] = append(h.calls[c], ctx)
	h.mu.Unlock()
}

// remove ends what add recorded. The list is kept, empty, for the next
// call to c: a session reaches a handful of children, and a call then
// allocates nothing here. Lists are only read under mu, so they are
// changed in place.
func (h *hostCalls) remove(c child, ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.calls[c]
	for i, x := range l {
		if x == ctx {
			copy(l[i:], l[i+1:])
			l[len(l)-1] = nil // let the context go
			l = l[:len(l)-1]
			break
		}
	}
	h.calls[c] = l
}

// markOnly returns ctx marked as serving the one host request in flight to
// c, or ctx unchanged when there is none or more than one.
func (h *hostCalls) markOnly(ctx context.Context, c child) context.Context {
	h.mu.Lock()
	l := h.calls[c]
	var only context.Context
	if len(l) == 1 {
		only = l[0]
	}
	h.mu.Unlock()
	if only == nil {
		return ctx
	}
	return rpc.WithServingOf(ctx, only)
}
