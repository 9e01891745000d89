package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Warm fills the catalog cache and the pins ahead of a host: it serves one
// in-memory session that initializes with hostCaps (the capabilities the
// host that will use the cache declares: the cache is keyed by the part of
// them the gate passes upstream), and lists tools, prompts, resources and
// templates, which starts and lists every server. It returns the servers
// that could not be listed, joined, each with why on one line, hidden
// characters made visible.
func (g *Gate) Warm(ctx context.Context, hostCaps json.RawMessage, opts ...SessionOption) error {
	if len(hostCaps) == 0 {
		hostCaps = json.RawMessage(`{}`)
	}
	a, b := rpc.Pipe(rpc.Limits{MaxMessageBytes: g.opts.MaxMessageBytes})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	sess := g.NewSession(opts...)
	go func() { served <- sess.ServeTransport(ctx, a) }()
	host := rpc.New(b, rejectAllHost{}, rpc.Options{Peer: "warm", Logger: g.log})
	go func() { _ = host.Run(ctx) }()
	init, _ := json.Marshal(map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    hostCaps,
		"clientInfo":      map[string]any{"name": "mcp-gate warm", "version": Version},
	})
	if _, err := host.Call(ctx, "initialize", init); err != nil {
		return fmt.Errorf("warm: initialize: %w", err)
	}
	_ = host.Notify(ctx, "notifications/initialized", nil)
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		if _, err := host.Call(ctx, m, json.RawMessage(`{}`)); err != nil {
			return fmt.Errorf("warm: %s: %w", m, err)
		}
	}
	var errs []error
	for _, server := range g.pool.Names() {
		if err := g.pool.LastError(g.childKeyFor(sess.childKey(), server), server); err != nil { // a shared server's child is under the shared key
			// The reason carries the server's own stderr, and mcp-gate warm
			// prints it to the terminal of whoever runs it.
			errs = append(errs, fmt.Errorf("%s: %s", server, TerminalReason(err)))
		}
	}
	_ = host.Close()
	cancel()
	<-served
	return errors.Join(errs...)
}

// rejectAllHost answers an upstream's question to Warm's host with an
// error: nobody is there to answer.
type rejectAllHost struct{}

func (rejectAllHost) HandleCall(context.Context, *rpc.Message) (json.RawMessage, error) {
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "mcp-gate warm has no host to answer")
}

func (rejectAllHost) HandleNotification(*rpc.Message) {}

// TerminalReason is why a server could not be started or listed, for a
// terminal (mcp-gate warm, check, doctor): its end, where the server's
// stderr tail is (lastLines), on one line and quoted (guard.Quote), so
// that the server's escape sequences (a clipboard write, a cleared
// screen) and line breaks (\n, a carriage return that goes back over the
// line, U+2028) are shown, not acted on, and no line of its own ("ok: …")
// reads as the gate's.
func TerminalReason(err error) string {
	return guard.Quote(lastLines(err.Error(), 5, 1000), shownTerminalReason)
}

// shownTerminalReason bounds TerminalReason's rendering, escapes counted.
const shownTerminalReason = 2000
