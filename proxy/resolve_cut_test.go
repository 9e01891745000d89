package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/policy"
)

// A call whose name lookup is cut short (the host's input ended and the
// drain time ran out while its server was starting) says so, with the
// cause: the name may well exist, and "unknown tool" would send the user
// looking for a typo.
func TestResolveCutShortSaysWhy(t *testing.T) {
	u := newChangingUpstream("v1")
	fl := &failingLauncher{inner: &scriptLauncher{servers: map[string]scripted{"s": u.serve}}, release: make(chan struct{})}
	fl.fail.Store(true) // every launch waits for its context, then fails
	g := newScriptedGate(t, u.serve, allowAll, func(o *Options) { o.Launcher = fl })
	sess := g.NewSession()
	serveRawHost(t, g, sess.Serve) // initialized, nothing listed yet
	cause := errors.New("the test ended the request")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); fl.launches.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel(cause)
	}()
	_, err := sess.resolveNamed(ctx, "tools/call", &sess.tools, policy.KindTool, json.RawMessage(`{"name":"s__echo","arguments":{}}`))
	if !errors.Is(err, cause) {
		t.Fatalf("a lookup cut short answered %v; want an error carrying why it was cut short", err)
	}
	close(fl.release)
}
