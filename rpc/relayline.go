package rpc

import (
	"context"
	"encoding/json"
	"unsafe"
)

// ReleaseAfterWrite tells the Conn serving ctx's request that its handler
// answers with res and keeps no reference to res, nor to anything read
// with it, once it returns: no cache, no parked call, no task, no
// goroutine left reading it. When res is the result of a large response
// the handler received from an upstream's Stream (Conn.CallAdmit under
// ctx), and the handler returns exactly res, the line it was read from
// goes back to the pool of line buffers (linepool.go) once the host's
// Stream has written the answer whole; another response is then read into
// the same memory. Any other res, a different answer, a transport that is
// not a Stream, or an answer never written whole (dropped, the Stream
// closed) leaves the line to the collector.
//
// Only the path that relays an upstream's answer straight to the host may
// call it (proxy: relayed, for a 2025-era host): a holder it overlooked
// would read another call's bytes once the memory is reused. Race builds
// poison released buffers so that such a holder reads garbage, not a
// plausible message.
func ReleaseAfterWrite(ctx context.Context, res json.RawMessage) {
	if len(res) == 0 {
		return
	}
	in, _ := ctx.Value(incomingKey{}).(*incomingCall)
	if in == nil {
		return
	}
	set := in.leases.Load()
	if set == nil {
		return // no large response was received: nothing to reuse
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.answered {
		return
	}
	set.relay, set.relayAt, set.relayLen = nil, nil, 0
	for _, l := range set.leases {
		if l.holds(res) {
			set.relay, set.relayAt, set.relayLen = l, unsafe.SliceData(res), len(res)
			return
		}
	}
}

// relayedLine returns the line of the large response that the request's
// handler marked with ReleaseAfterWrite, when result is exactly what it
// marked: the handle Stream.Write carries to the end of the write
// (outgoing.line). Once only.
func (in *incomingCall) relayedLine(result json.RawMessage) *lineLease {
	set := in.leases.Load()
	if set == nil || len(result) == 0 {
		return nil
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	l := set.relay
	ok := l != nil && set.relayAt == unsafe.SliceData(result) && set.relayLen == len(result)
	set.relay, set.relayAt, set.relayLen = nil, nil, 0
	if !ok {
		return nil
	}
	return l
}
