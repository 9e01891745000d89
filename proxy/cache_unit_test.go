package proxy

// In-memory tests of a catalog seeded from the cache (persist.go) meeting a
// server that changed since, and of names no server lists.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// listingUpstream lists the tools named in tools (comma-separated) and
// records the tools/call names it ran and whether it was listed.
type listingUpstream struct {
	tools  atomic.Value // string
	lists  atomic.Int32
	ran    atomic.Value // string: the last tool run
	nCalls atomic.Int32
}

func newListingUpstream(tools string) *listingUpstream {
	u := &listingUpstream{}
	u.tools.Store(tools)
	u.ran.Store("")
	return u
}

func (u *listingUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	switch method {
	case "tools/list":
		u.lists.Add(1)
		var items []string
		for _, n := range strings.Split(u.tools.Load().(string), ",") {
			items = append(items, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, n))
		}
		reply(w, id, `{"tools":[`+strings.Join(items, ",")+`]}`)
	case "prompts/list":
		reply(w, id, `{"prompts":[]}`)
	case "resources/list":
		reply(w, id, `{"resources":[{"uri":"mem://a","name":"a"}]}`)
	case "resources/templates/list":
		reply(w, id, `{"resourceTemplates":[]}`)
	case "tools/call":
		name, _ := jsonPath(params, "name")
		u.ran.Store(name)
		u.nCalls.Add(1)
		reply(w, id, `{"content":[{"type":"text","text":"ran `+name+`"}]}`)
	default:
		if id != nil {
			reply(w, id, `{}`)
		}
	}
}

// cachedGate is a gate of u with the catalog cache (and, with pinned, the
// pins) in dir, and a raw host that declared capsNone.
func cachedGate(t *testing.T, u *listingUpstream, dir string, pinned bool) *rawHost {
	t.Helper()
	g := newScriptedGate(t, u.serve, allowAll, func(o *Options) {
		o.CatalogCache = catalogcache.Open(dir + "/cache")
		if pinned {
			o.Pins = pins.Open(dir + "/pins")
		}
	})
	return serveRawHostWith(t, g, g.NewSession().Serve, capsNone)
}

// A tool the server added since the cache was written is not in the
// seeded list, but a call to it lists the server live and finds it.
func TestCachedCatalogFindsNewTool(t *testing.T) {
	dir := t.TempDir()
	u := newListingUpstream("t")
	h := cachedGate(t, u, dir, false)
	h.call("tools/list", `{}`)
	h.gate.flushPersist()

	u.tools.Store("t,added")
	h2 := cachedGate(t, u, dir, false)
	before := u.lists.Load()
	if resp := string(h2.call("tools/list", `{}`)); strings.Contains(resp, "s__added") || u.lists.Load() != before {
		t.Fatalf("the cached list: %s (listed live: %v)", resp, u.lists.Load() != before)
	}
	resp := string(h2.call("tools/call", `{"name":"s__added","arguments":{}}`))
	if strings.Contains(resp, `"error"`) || u.ran.Load() != "added" {
		t.Fatalf("a call to a tool added since the cache: %s", resp)
	}
	// A name of no configured server is unknown without listing anything.
	before = u.lists.Load()
	if resp := string(h2.call("tools/call", `{"name":"other__t","arguments":{}}`)); !strings.Contains(resp, `unknown tool \"other__t\"`) || u.lists.Load() != before {
		t.Fatalf("a name outside every server: %s", resp)
	}
}

// A tool the cache still lists but the server no longer does is not run
// on the cached definition: under pins, the call is refused saying so.
func TestCachedToolGoneRefusedUnderPins(t *testing.T) {
	dir := t.TempDir()
	u := newListingUpstream("t,gone")
	h := cachedGate(t, u, dir, true)
	h.call("tools/list", `{}`)
	h.gate.flushPersist()

	u.tools.Store("t")
	h2 := cachedGate(t, u, dir, true)
	if resp := string(h2.call("tools/list", `{}`)); !strings.Contains(resp, "s__gone") {
		t.Fatalf("the cached list: %s", resp)
	}
	calls := u.nCalls.Load()
	resp := string(h2.call("tools/call", `{"name":"s__gone","arguments":{}}`))
	if !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, `server \"s\" no longer lists the tool \"gone\"`) || u.nCalls.Load() != calls {
		t.Fatalf("a call to a tool the server dropped: %s", resp)
	}
}

// With no server offering resources, a URI is "resource not found", and
// an empty one is invalid params; neither starts anything twice nor reaches
// a server.
func TestResourceNobodyListsNotFound(t *testing.T) {
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": (&recorder{}).server("echo")}, static(t, allowAll), nil)
	_, err := f.sess.ReadResource(ctx10(t), &mcp.ReadResourceParams{URI: "mem://nobody"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != CodeResourceNotFound || !strings.Contains(werr.Message, `no upstream server lists "mem://nobody"`) {
		t.Fatalf("an unlisted URI: %v", err)
	}
	err = f.sess.Subscribe(ctx10(t), &mcp.SubscribeParams{URI: "mem://nobody"})
	if !errors.As(err, &werr) || werr.Code != CodeResourceNotFound {
		t.Fatalf("subscribing to an unlisted URI: %v", err)
	}
	_, err = f.sess.ReadResource(ctx10(t), &mcp.ReadResourceParams{URI: ""})
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("an empty URI: %v", err)
	}
	if n := f.launcher.Launches("alpha"); n != 1 {
		t.Fatalf("alpha launched %d times", n)
	}
}

// What one team user's child listed never seeds another team user's
// session: the catalog cache is per identity for token identities
// (before, bob's first tools/list showed a tool only alice's child had,
// from the entry her listing wrote). A user's own entry still seeds their
// next session without starting anything.
func TestCatalogCacheIsPerTeamUser(t *testing.T) {
	dir := t.TempDir()
	alice := Identity{Subject: "alice", Authenticated: true}
	bob := Identity{Subject: "bob", Authenticated: true}
	u := newListingUpstream("t,alices")
	gate := func() *Gate {
		return newScriptedGate(t, u.serve, allowAll, func(o *Options) { o.CatalogCache = catalogcache.Open(dir + "/cache") })
	}
	g := gate()
	serveRawHostWith(t, g, g.NewSession(WithIdentity(alice)).Serve, capsNone).call("tools/list", `{}`)
	g.flushPersist()

	u.tools.Store("t") // what bob's own child lists
	g = gate()
	if resp := string(serveRawHostWith(t, g, g.NewSession(WithIdentity(bob)).Serve, capsNone).call("tools/list", `{}`)); strings.Contains(resp, "s__alices") || !strings.Contains(resp, "s__t") {
		t.Fatalf("bob's first list shows what alice's child listed: %s", resp)
	}
	g = gate()
	before := u.lists.Load()
	if resp := string(serveRawHostWith(t, g, g.NewSession(WithIdentity(alice)).Serve, capsNone).call("tools/list", `{}`)); !strings.Contains(resp, "s__alices") || u.lists.Load() != before {
		t.Fatalf("alice's next session, from her own entry (listed live: %v): %s", u.lists.Load() != before, resp)
	}
}
