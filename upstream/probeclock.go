package upstream

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// The server/discover probe's clock (ProbeTimeout) is meant to time a
// server that is running and ignores requests before initialize, not one
// still starting: a Node server under load, or npx fetching its package,
// can take longer than ProbeTimeout to read its first line, and a slow
// start taken for silence made a modern server "older era", which is then
// remembered in the catalog cache for every later gate (seen in
// TestUpstreamEraProbeRemembered on a busy CI machine: a 13 s Node start).
// Where the gate can see whether the child has read its input (a stdin
// pipe on Linux), the clock therefore runs from when the server took the
// probe in: while bytes of it are unread, the server has not begun to
// read, and it is waited for, up to the start timeout as any start is.

// inputWatcher is a Connection that can tell how many bytes written to the
// server it has not read yet (an exec child's stdin pipe on Linux).
type inputWatcher interface {
	UnreadInput() (n int, ok bool)
}

// UnreadInput reports how many bytes written to the child's stdin it has
// not read yet, where the platform can tell (ok).
func (p *execProcess) UnreadInput() (int, bool) { return unreadInput(p.stdin) }

// probePoll is how often the probe looks at the server's unread input: one
// ioctl, during a probe only (once per server entry, the result being
// remembered).
const probePoll = 20 * time.Millisecond

// probeContext returns the context the server/discover probe waits under:
// done ProbeTimeout after the server has read the probe, or, where that
// cannot be seen, after it was sent. ctx bounds it in every case.
func (s *Session) probeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	w, ok := s.up.(inputWatcher)
	fl, okf := s.up.(rpc.Flusher)
	if ok && okf {
		_, ok = w.UnreadInput()
	}
	if !ok || !okf {
		return context.WithTimeout(ctx, ProbeTimeout)
	}
	// The timeout is read once: the watcher must not outlive the probe or
	// read a setting after it, and its end is waited for below.
	timeout := ProbeTimeout
	pctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(probePoll)
		defer tick.Stop()
		// unreadAt is the last moment the probe was seen unread: the
		// server read it after that. Before the probe is written the pipe
		// is empty too, so the clock starts at the send, as without a
		// watcher, and a probe seen unread moves it on.
		unreadAt := time.Now()
		for {
			select {
			case <-pctx.Done():
				return
			case now := <-tick.C:
				if n, _ := w.UnreadInput(); n > 0 {
					unreadAt = now
					continue
				}
				if now.Sub(unreadAt) < timeout {
					continue
				}
				// Time is up if the probe was written and read: make sure
				// of the first (a flush waits until what was queued
				// before it is handed to the pipe), then look again.
				if err := fl.Flush(pctx); err != nil {
					cancel(err)
					return
				}
				if n, _ := w.UnreadInput(); n > 0 {
					unreadAt = time.Now()
					continue
				}
				cancel(fmt.Errorf("no answer to server/discover within %s of the server reading it: %w", timeout, context.DeadlineExceeded))
				return
			}
		}
	}()
	// Cancelling ends the watcher and waits for it (a tick's ioctl or a
	// flush under the cancelled context at most), so that nothing of the
	// probe runs once it is over.
	return pctx, func() { cancel(context.Canceled); <-done }
}
