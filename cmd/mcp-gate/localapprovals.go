package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/approvals"
	"github.com/mcp-gate/mcp-gate/elicitation"
)

// localSurface is the gate's local approval surface, opened when it is
// first needed: when an ask reaches the local channel (elicitation.Channels
// asks Available first). Most gates never ask there, and opening it binds
// a socket and runs its accept loop, whose code (the net package's socket
// path) and goroutine cost every gate process resident memory from its
// start (about 0.2 MiB of the idle gate's peak, measured with e2e/rssmap).
// The ancestry the surface protects is taken at the start all the same
// (approvals.TakeAncestry): what is refused is decided on the process tree
// the host started. A question waits for the opening, some half a
// millisecond, once; a surface that could not open is, to
// elicitation.Channels, no surface (its asks go to the next channel or
// are refused, as with --local-approvals=false), and says why in the log
// when it is first needed. `mcp-gate approvals` finds the gate once it has
// asked: list and watch read the sockets there are (watch every second).
type localSurface struct {
	ancestry approvals.Ancestry
	log      *slog.Logger
	mu       sync.Mutex
	started  bool               // opening has begun
	closed   bool               // Close has run: nothing opens any more
	ready    chan struct{}      // closed once opening has ended
	s        *approvals.Surface // set before ready closes; nil when it did not open
}

// startLocalApprovals prepares the gate's local approval surface: it takes
// the gate's ancestry now and opens the socket on first need (see
// localSurface). A surface that cannot open is logged and left off: the
// questions it would carry are then refused (fail closed), and the gate
// still serves.
func startLocalApprovals(on bool, log *slog.Logger) *localSurface {
	if !on {
		return nil
	}
	return &localSurface{ancestry: approvals.TakeAncestry(), log: log, ready: make(chan struct{})}
}

// opening starts opening the surface, once, unless it has been closed; it
// returns the channel that closes when opening has ended, nil when closed.
func (l *localSurface) opening() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if !l.started {
		l.started = true
		go func() {
			defer close(l.ready)
			s, err := l.ancestry.Listen("", l.log)
			if err != nil {
				l.log.Warn("local approvals are off; asks the host cannot carry will be refused", "err", err)
				return
			}
			s.Notify = notifyDesktop
			l.log.Debug("local approval surface listening", "socket", s.Path())
			l.s = s
		}()
	}
	return l.ready
}

// open opens the surface if it is not yet, waits until it has opened or
// failed to, or ctx ends, and returns it (nil when it is not there).
func (l *localSurface) open(ctx context.Context) *approvals.Surface {
	ready := l.opening()
	if ready == nil {
		return nil
	}
	select {
	case <-ready:
		return l.s
	case <-ctx.Done():
		return nil
	}
}

// Available implements elicitation.Availability.
func (l *localSurface) Available(ctx context.Context) bool { return l.open(ctx) != nil }

// Approve implements elicitation.Approver.
func (l *localSurface) Approve(ctx context.Context, req elicitation.Request, timeout time.Duration) elicitation.Answer {
	s := l.open(ctx)
	if s == nil {
		if ctx.Err() != nil {
			return elicitation.Answer{Outcome: elicitation.Withdrawn, Detail: "the call was cancelled before the local approval surface opened"}
		}
		return elicitation.Answer{Outcome: elicitation.Unsupported, Detail: "the gate runs no local approval surface (it could not open)"}
	}
	return s.Approve(ctx, req, timeout)
}

// Close closes the surface once it has opened (removing its socket); one
// that has not begun to open never will.
func (l *localSurface) Close() {
	l.mu.Lock()
	l.closed = true
	started := l.started
	l.mu.Unlock()
	if !started {
		return
	}
	<-l.ready
	if l.s != nil {
		_ = l.s.Close()
	}
}

// localApprover keeps a nil surface a nil interface.
func localApprover(l *localSurface) elicitation.Approver {
	if l == nil {
		return nil
	}
	return l
}
