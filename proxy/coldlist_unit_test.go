package proxy

// The first call to a server the catalog cache lists but no child runs
// yet: it starts the child, which is listed live once (for the pin check
// and the restart's refresh alike), and a definition changed since it was
// pinned is still refused.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/pins"
)

// countLists wraps serve, counting the tools/list requests it answers.
func countLists(serve scripted, n *atomic.Int32) scripted {
	return func(method string, id, params json.RawMessage, w func(string)) {
		if method == "tools/list" {
			n.Add(1)
		}
		serve(method, id, params, w)
	}
}

func TestFirstCallListsStartedServerOnce(t *testing.T) {
	dir := t.TempDir()
	u := newChangingUpstream("v1")
	policyText := pinsPolicy + "pins:\n  default: deny\n"
	pinnedHost(t, u, dir, policyText, func(o *Options) {
		o.CatalogCache = catalogcache.Open(filepath.Join(dir, "cache"))
	})
	// Many fresh gates: the pin check and the start's refresh race for
	// the fetch, and every order must list once.
	for i := range 30 {
		var lists atomic.Int32
		g := newScriptedGate(t, countLists(u.serve, &lists), policyText, func(o *Options) {
			o.Pins = pins.Open(dir)
			o.CatalogCache = catalogcache.Open(filepath.Join(dir, "cache"))
		})
		h := serveRawHost(t, g, g.NewSession().Serve)
		h.call("tools/list", `{}`) // from the cache: nothing started
		if n := lists.Load(); n != 0 {
			t.Fatalf("gate %d: listing from the cache sent %d tools/list upstream", i, n)
		}
		if resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`)); strings.Contains(resp, `"isError":true`) {
			t.Fatalf("gate %d: a call to the definition as pinned: %s", i, resp)
		}
		fetchesEnded(t, g)
		if n := lists.Load(); n != 1 {
			t.Fatalf("gate %d: the first call's start listed tools %d times upstream, want 1", i, n)
		}
	}
	// Changed on the server since it was pinned and cached: the one live
	// listing is what the call is held to.
	u.desc.Store("v2")
	u.ran.Store(0)
	var lists atomic.Int32
	g := newScriptedGate(t, countLists(u.serve, &lists), policyText, func(o *Options) {
		o.Pins = pins.Open(dir)
		o.CatalogCache = catalogcache.Open(filepath.Join(dir, "cache"))
	})
	h := serveRawHost(t, g, g.NewSession().Serve)
	h.call("tools/list", `{}`)
	resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
	if !strings.Contains(resp, "changed since it was approved") || u.ran.Load() != 0 {
		t.Fatalf("a tool changed since it was pinned, first call after a cached list: %s (ran %d)", resp, u.ran.Load())
	}
	fetchesEnded(t, g)
	if n := lists.Load(); n != 1 {
		t.Errorf("the refused first call listed tools %d times upstream, want 1", n)
	}
}

// fetchesEnded waits until no list fetch of g runs (the start's refresh
// lists prompts and resources too) and their files are written.
func fetchesEnded(t *testing.T, g *Gate) {
	t.Helper()
	waitFor(t, "the list fetches to end", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, l := range []*lister{g.tools.lister, g.prompts.lister, g.resLister} {
			for _, st := range l.state {
				if st.running != nil {
					return false
				}
			}
		}
		return true
	})
	g.flushPersist()
}

// The first start after a session was seeded from the cache takes the
// era hint as read then (no second read of the file on the first call's
// way); a later start reads the file again.
func TestEraHintFromTheSeedOnce(t *testing.T) {
	dir := t.TempDir()
	u := newChangingUpstream("v1")
	cache := filepath.Join(dir, "cache")
	pinnedHost(t, u, dir, pinsPolicy, func(o *Options) { o.CatalogCache = catalogcache.Open(cache) })
	g := newScriptedGate(t, u.serve, pinsPolicy, func(o *Options) { o.CatalogCache = catalogcache.Open(cache) })
	sess := g.NewSession()
	h := serveRawHost(t, g, sess.Serve)
	h.call("tools/list", `{}`) // seeded from the cache
	files, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	cfg, _ := g.configOf("s")
	if v := g.upstreamEra(sess.childKey(), cfg); v == "" {
		t.Fatal("the first start after seeding read the file again, or no hint was kept")
	}
	if v := g.upstreamEra(sess.childKey(), cfg); v != "" {
		t.Fatalf("a later start used the seed's hint %q; want the file read again (gone: no hint)", v)
	}
}
