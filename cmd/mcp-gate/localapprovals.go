package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcp-gate/mcp-gate/approvals"
	"github.com/mcp-gate/mcp-gate/elicitation"
)

// localSurface is the gate's local approval surface, opened beside the
// start rather than in front of the host's first answer: opening it walks
// the host's ancestry in /proc and binds a socket, about half a
// millisecond a cold start need not wait for. Nothing is asked on it
// before it has opened: Available and Approve wait for that, and a surface
// that could not open is, to elicitation.Channels, no surface (its asks
// go to the next channel or are refused, as with --local-approvals=false).
type localSurface struct {
	ready chan struct{}      // closed once opening has ended
	s     *approvals.Surface // set before ready closes; nil when it did not open
}

// startLocalApprovals starts opening the gate's local approval surface. A
// surface that cannot open is logged and left off: the questions it would
// carry are then refused (fail closed), and the gate still serves.
func startLocalApprovals(on bool, log *slog.Logger) *localSurface {
	if !on {
		return nil
	}
	l := &localSurface{ready: make(chan struct{})}
	go func() {
		defer close(l.ready)
		s, err := approvals.Listen("", log)
		if err != nil {
			log.Warn("local approvals are off; asks the host cannot carry will be refused", "err", err)
			return
		}
		s.Notify = notifyDesktop
		log.Debug("local approval surface listening", "socket", s.Path())
		l.s = s
	}()
	return l
}

// open waits until the surface has opened or failed to, or ctx ends, and
// returns it (nil when it is not there).
func (l *localSurface) open(ctx context.Context) *approvals.Surface {
	select {
	case <-l.ready:
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

// Close closes the surface once it has opened (removing its socket).
func (l *localSurface) Close() {
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
