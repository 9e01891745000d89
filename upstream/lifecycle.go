package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// DefaultReadStall is how long an upstream may leave part of a message
// unfinished (bytes of it written, no newline, nothing more) before it is
// taken for hung and failed: its calls get errors at once instead of
// waiting for their callTimeout, and it is restarted on next need. It
// counts only while the gate is waiting for the server's bytes.
const DefaultReadStall = 10 * time.Second

// endlessFactor is how many times the message limit an upstream's line may
// run before it is taken as endless (rpc.Limits.MaxSkipBytes). A line past
// the limit but shorter costs its message alone (its call fails), as any
// oversized message; one longer would be skipped for ever, and every other
// call to the server would hang behind it.
const endlessFactor = 8

func endlessLine(maxMessage int) int {
	if maxMessage <= 0 {
		maxMessage = rpc.DefaultMaxMessageBytes
	}
	return endlessFactor * maxMessage
}

func (p *Pool) readStall() time.Duration {
	if p.opts.ReadStall > 0 {
		return p.opts.ReadStall
	}
	return DefaultReadStall
}

// awaitRetry is what a call that finds server down in its backoff does:
// when the next allowed start falls within the call's own deadline (its
// callTimeout, set by the caller on ctx), it waits for it, and the caller
// tries again; otherwise, or without a deadline, it fails at once with the
// time of the next attempt. A server that dies every few seconds then
// serves its calls late rather than refusing them.
func (p *Pool) awaitRetry(ctx context.Context, server string, retryAt time.Time, lastErr error) error {
	now := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok || retryAt.After(deadline) {
		late := ""
		if ok {
			late = ", past this call's deadline"
		}
		return fmt.Errorf("upstream %q is unavailable (%v); next start attempt in %s (at %s)%s",
			server, lastErr, retryAt.Sub(now).Round(100*time.Millisecond), retryAt.UTC().Format("15:04:05.0 UTC"), late)
	}
	t := time.NewTimer(retryAt.Sub(now))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-p.ctx.Done():
		return errors.New("the gate is shutting down")
	}
}
