package main

import (
	"context"
	"sync"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// guardAhead builds the guard's tables (guard.Prepare) on a goroutine of
// their own when the first upstream is launched: the first result comes
// from a server that has yet to start, and a few milliseconds of its
// start hide the build, where the first result would wait for it. A gate
// that never starts a server (one that only lists from the catalog cache)
// never builds them, which keeps its idle memory down.
//
// For the same reason preload, when set, is run on a goroutine of its own
// at every launch with the server's name: it reads what the server's
// first call needs and only the gate's own state decides (its pins file,
// which the call's pin check would otherwise read after the child has
// answered; docs/design.md, "Cold start: where it goes").
type guardAhead struct {
	upstream.Launcher
	once    sync.Once
	preload func(server string)
}

// Launch implements upstream.Launcher.
func (l *guardAhead) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	l.once.Do(func() { go guard.Prepare() })
	if l.preload != nil {
		go l.preload(cfg.Name)
	}
	return l.Launcher.Launch(ctx, cfg, lim)
}
