package upstream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// A start is a restart (Session.Restart, which the restarts metric counts)
// only when it replaces a child of the same server and key that crashed:
// not the first start, and not a start after the gate stopped it.
func TestRestartFlag(t *testing.T) {
	die := make(chan struct{})
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": func(ctx context.Context, tr mcp.Transport) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-die:
				cancel()
			case <-ctx.Done():
			}
		}()
		echoServer(ctx, tr)
		if ctx.Err() != nil {
			return errors.New("boom")
		}
		return nil
	}}}
	started := make(chan *upstream.Session, 4)
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) {
		o.OnStart = func(s *upstream.Session) { started <- s }
	})
	s := session(t, p, "s")
	if wait(t, started, "first start").Restart {
		t.Error("the first start is flagged as a restart")
	}
	die <- struct{}{}
	<-s.Done()
	eventually(t, "a start after the crash", func() bool {
		_, err := p.Session(context.Background(), "", "s")
		return err == nil
	})
	if !wait(t, started, "start after crash").Restart {
		t.Error("the start after a crash is not flagged as a restart")
	}
	p.Stop("s", "deliberate")
	session(t, p, "s")
	if wait(t, started, "start after a stop").Restart {
		t.Error("the start after a deliberate stop is flagged as a restart")
	}
}
