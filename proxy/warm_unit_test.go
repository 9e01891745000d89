package proxy

// In-memory tests of Warm (warm.go) and of what the catalog cache carries
// to the next gate process: the lists, and the protocol a server spoke
// (upstream_era.go), so that a server is probed once, not at every start.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// probedUpstream is a scripted server of the older era that refuses the
// server/discover probe, and counts the probes and lists it receives.
type probedUpstream struct {
	probes, lists atomic.Int32
}

func (u *probedUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	switch method {
	case "server/discover":
		u.probes.Add(1)
		w(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":"method not found"}}`)
	case "tools/list":
		u.lists.Add(1)
		reply(w, id, `{"tools":[{"name":"t","description":"cached","inputSchema":{"type":"object"}}]}`)
	case "prompts/list":
		reply(w, id, `{"prompts":[]}`)
	case "resources/list":
		reply(w, id, `{"resources":[]}`)
	case "resources/templates/list":
		reply(w, id, `{"resourceTemplates":[]}`)
	default:
		if id != nil {
			reply(w, id, `{}`)
		}
	}
}

// warmGate is a gate of the scripted server "s" (protocol auto) with the
// catalog cache in dir.
func warmGate(t *testing.T, u *probedUpstream, dir string) *Gate {
	return newScriptedGate(t, u.serve, allowAll, func(o *Options) {
		o.CatalogCache = catalogcache.Open(dir)
		o.Servers[0].Protocol = upstream.ProtocolAuto
	})
}

// Warm lists every server for the capabilities a host will declare, and
// what it wrote serves the next gate's host: it lists without starting the
// server, and when a call starts it, the server's era is taken from the
// cache, so it is not probed again.
func TestWarmFillsCacheAndRemembersEra(t *testing.T) {
	dir := t.TempDir()
	u := &probedUpstream{}
	g := warmGate(t, u, dir)
	if err := g.Warm(ctx10(t), json.RawMessage(capsNone)); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	g.Close()
	// The start may list once more (refreshAfterRestart): at least once.
	warmLists := u.lists.Load()
	if u.probes.Load() != 1 || warmLists == 0 {
		t.Fatalf("Warm probed %d and listed %d times; want one probe and a list", u.probes.Load(), warmLists)
	}

	g2 := warmGate(t, u, dir)
	h := serveRawHostWith(t, g2, g2.NewSession().Serve, capsNone)
	resp := h.call("tools/list", `{}`)
	if !strings.Contains(string(resp), `"s__t"`) {
		t.Fatalf("tools/list from the cache: %s", resp)
	}
	if n := u.lists.Load(); n != warmLists {
		t.Fatalf("the second gate listed the server live (%d lists after Warm's %d)", n, warmLists)
	}
	if resp := h.call("tools/call", `{"name":"s__t","arguments":{}}`); strings.Contains(string(resp), `"error"`) {
		t.Fatalf("a call from the cached list: %s", resp)
	}
	if u.probes.Load() != 1 {
		t.Fatalf("the server was probed again (%d probes) although the cache says its era", u.probes.Load())
	}
}

// A cache entry that cannot be read is ignored with a warning: the server
// is listed live and probed again, never trusted.
func TestUnreadableCacheEntryIgnored(t *testing.T) {
	dir := t.TempDir()
	u := &probedUpstream{}
	g := warmGate(t, u, dir)
	if err := g.Warm(ctx10(t), json.RawMessage(capsNone)); err != nil {
		t.Fatal(err)
	}
	g.Close()
	warmLists := u.lists.Load()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("Warm wrote %v", files)
	}
	if err := os.WriteFile(files[0], []byte(`{"version":1,"tools":"not a list"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g2 := warmGate(t, u, dir)
	h := serveRawHostWith(t, g2, g2.NewSession().Serve, capsNone)
	if resp := h.call("tools/list", `{}`); !strings.Contains(string(resp), `"s__t"`) {
		t.Fatalf("tools/list with a broken cache entry: %s", resp)
	}
	if u.lists.Load() <= warmLists || u.probes.Load() != 2 {
		t.Fatalf("with a broken entry the server was listed %d (Warm: %d) and probed %d times; want it listed and probed live", u.lists.Load(), warmLists, u.probes.Load())
	}
}

// Warm reports the servers it could not list, by name, and only those.
func TestWarmReportsFailedServers(t *testing.T) {
	t.Parallel() // each list waits out the broken server's start backoff
	a := &recorder{}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "broken": a.server("echo")}}
	l.FailLaunches("broken", errors.New("exec: no such file"))
	g, err := New(Options{Servers: l.Configs(), Launcher: l, Policy: static(t, allowAll), CatalogCache: catalogcache.Open(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	err = g.Warm(ctx10(t), nil)
	if err == nil || !strings.Contains(err.Error(), "broken: ") || !strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "alpha") {
		t.Fatalf("Warm with a broken server: %v", err)
	}
}

// Warm's report of a server that did not start carries its stderr, which
// mcp-gate warm prints to a terminal: the server's escape sequences (a
// clipboard write, a cleared screen) and line breaks (a line of its own
// saying all is well) reached it raw.
func TestWarmReportHasNoEscapes(t *testing.T) {
	t.Parallel()
	a := &recorder{}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "broken": a.server("echo")}}
	l.FailLaunches("broken", errors.New("exit status 1; stderr: starting\n\x1b]52;c;ZWNobyBwd25lZA==\a\x1b[2J\x1b[1;1Hok: catalog cache: 2 servers listed\r"))
	g, err := New(Options{Servers: l.Configs(), Launcher: l, Policy: static(t, allowAll), CatalogCache: catalogcache.Open(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	err = g.Warm(ctx10(t), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "broken: ") || strings.ContainsAny(err.Error(), "\x1b\a\n\r") || !strings.Contains(err.Error(), "[U+001B]") {
		t.Fatalf("Warm's report of a server whose stderr holds escapes and line breaks: %q", err)
	}
}

// A carriage return inside a line of the stderr tail (a CRLF line end,
// or one before a line of the server's own) returned the terminal's cursor
// to the start of the report's line, and what followed was written over
// "broken: ": the report read "mcp-gate warm: ok, all servers listed".
// Neutralize keeps \r, \n and U+2028 as they are; Quote, as check uses,
// escapes them.
func TestWarmReportHasNoCarriageReturn(t *testing.T) {
	t.Parallel()
	a := &recorder{}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "broken": a.server("echo")}}
	l.FailLaunches("broken", errors.New("exit status 1; stderr: starting\r\nx\rmcp-gate warm: ok, all servers listed\u2028done"))
	g, err := New(Options{Servers: l.Configs(), Launcher: l, Policy: static(t, allowAll), CatalogCache: catalogcache.Open(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	err = g.Warm(ctx10(t), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "broken: ") || strings.ContainsAny(err.Error(), "\r\n\u2028") {
		t.Fatalf("Warm's report of a server whose stderr holds carriage returns: %q", err)
	}
}

// A shared server's child is kept under the shared key (childKeyFor), and
// Warm looked its failure up under the session's own key: a shared server
// that could not be started was not reported, and warm said all was well.
func TestWarmReportsFailedSharedServer(t *testing.T) {
	t.Parallel()
	a := &recorder{}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "broken": a.server("echo")}}
	l.FailLaunches("broken", errors.New("exec: no such file"))
	servers := l.Configs()
	for i := range servers {
		servers[i].Shared = servers[i].Name == "broken"
	}
	g, err := New(Options{Servers: servers, Launcher: l, Policy: static(t, allowAll), CatalogCache: catalogcache.Open(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	err = g.Warm(ctx10(t), nil)
	if err == nil || !strings.Contains(err.Error(), "broken: ") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Warm with a broken shared server: %v", err)
	}
}
