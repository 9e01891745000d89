package elicitation

import (
	"context"
	"strings"
	"time"
)

// Channels is the Approver of a host session: it puts each question on
// the first channel of req.Via that can ask now, the host's form
// elicitation ("elicitation", when the host declared it) or the gate's
// local approval surface ("local", when the gate runs one). It asks on one
// channel only, so that one answer decides; a question no channel can
// carry is Unsupported, a no.
type Channels struct {
	Host  Approver // the host's elicitation (HostApprover)
	Local Approver // the local approval surface; nil when the gate runs none
	// HostCanAsk reports whether the host declared form elicitation; read
	// on every question.
	HostCanAsk func() bool
}

// Availability is implemented by a Local approver that opens off the
// gate's start path (cmd/mcp-gate): Available waits until it has opened or
// failed to (or ctx ends), and false makes Channels treat it as absent.
type Availability interface {
	Available(ctx context.Context) bool
}

// Approve implements Approver.
func (c Channels) Approve(ctx context.Context, req Request, timeout time.Duration) Answer {
	via := req.Via
	if len(via) == 0 {
		via = []string{"elicitation"}
	}
	hostCan := c.HostCanAsk != nil && c.HostCanAsk()
	for _, ch := range via {
		switch ch {
		case "elicitation":
			if hostCan && c.Host != nil {
				return c.Host.Approve(ctx, req, timeout)
			}
		case "local":
			if localRuns(ctx, c.Local) {
				return c.Local.Approve(ctx, req, timeout)
			}
		}
	}
	var why []string
	for _, ch := range via {
		switch ch {
		case "elicitation":
			why = append(why, "this host cannot ask for approval (its initialize declared no form elicitation)")
		case "local":
			why = append(why, "the gate runs no local approval surface")
		}
	}
	if len(why) == 0 {
		why = []string{"the policy names no channel this gate knows"}
	}
	return Answer{Outcome: Unsupported, Detail: strings.Join(why, ", and ") + "; " +
		"ask your security team to allow this tool in the policy, or use a host that supports MCP elicitation (Claude Code, Codex)"}
}

// localRuns reports whether the local approver l is there to ask.
func localRuns(ctx context.Context, l Approver) bool {
	if l == nil {
		return false
	}
	if a, ok := l.(Availability); ok {
		return a.Available(ctx)
	}
	return true
}

// Quote renders an untrusted string as one bounded, quoted, neutralised
// value, as the question's text does (a surface that shows a server or tool
// name beside the question uses it).
func Quote(s string) string { return quote(s, maxNameView) }
