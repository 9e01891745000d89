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
type guardAhead struct {
	upstream.Launcher
	once sync.Once
}

// Launch implements upstream.Launcher.
func (l *guardAhead) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	l.once.Do(func() { go guard.Prepare() })
	return l.Launcher.Launch(ctx, cfg, lim)
}
