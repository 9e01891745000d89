package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// What the gate keeps between runs (issue #11): the catalog cache, which
// lets a session list every tool while no upstream runs, and the pins,
// which hold every definition to the one first seen.
//
// A key's catalog snapshot is seeded from the cache when its first session
// initializes: the cached lists count as loaded, so listing starts
// nothing, and a call starts only its own server. When a server starts,
// its lists are fetched live (refreshAfterRestart) and replace the cached
// ones; a list that differs is announced to the sessions that listed it,
// as any changed list is. Every successful live fetch writes the server's
// entry back and shows the pins what the server lists now.

// persistState is the gate's side of the cache and the pins.
type persistState struct {
	mu sync.Mutex
	// live records, per lister and child, the upstream session whose
	// live listing the snapshot holds: a list seeded from the cache, or
	// fetched from a process that has since been replaced, is not live.
	live map[liveKey]*upstream.Session
	// written is the digest of each cache file as last written or read,
	// so an unchanged catalog is not written again.
	written map[string][sha256.Size]byte
	// era is the ProtocolVersion of each cache file as seedCatalog read
	// it, kept for the first start of its server (upstreamEra takes it),
	// which then reads no file between a host's first call and the spawn.
	era map[string]string

	queue   []func()       // writes not yet done, in order (enqueue)
	writing bool           // the writer goroutine runs
	pending sync.WaitGroup // writes queued and not done
}

// flush waits for the files being written.
func (g *Gate) flushPersist() { g.persist.pending.Wait() }

type liveKey struct {
	l *lister
	c child
}

// configOf returns the configuration entry of server.
func (g *Gate) configOf(server string) (upstream.Config, bool) {
	for _, c := range g.opts.Servers {
		if c.Name == server {
			return c, true
		}
	}
	return upstream.Config{}, false
}

// cacheKey is server's catalog cache key for children started with caps
// for the sessions of scope (Session.cacheScope). A shared server's child
// serves every identity, and its entry is everyone's.
func (g *Gate) cacheKey(server string, caps json.RawMessage, scope string) (string, bool) {
	c, ok := g.configOf(server)
	if !ok {
		return "", false
	}
	if c.Shared {
		scope = ""
	}
	return catalogcache.Key(catalogcache.Config{
		Name: c.Name, Type: c.Type, Command: c.Command, Args: c.Args, Env: c.Env,
		InheritEnv: c.InheritEnv, InheritAll: c.InheritAll, Cwd: c.Cwd, URL: c.URL, Headers: c.Headers,
		Scope: scope,
	}, caps), true
}

// cacheScope is whose catalog cache entries the session reads and its
// children's listings write: a team user's own (a token identity's key),
// since what one user's child lists (tools it added for them, resources
// named after their data, instructions) must not reach another user's
// host; "" for the user running the gate, whose cache it is.
func (s *Session) cacheScope() string {
	if s.identity.Authenticated {
		return s.identity.Key()
	}
	return ""
}

// scopeOf is the cache scope of the children of pool key key.
func (g *Gate) scopeOf(key string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.upScope[key]
}

// seeded is what the cache gave a key's first session.
type seeded struct {
	snap         *snapshot
	instructions map[string]string // server → its instructions, as cached
	// capabilities is what each cached server declared in initialize (an
	// object, checked by catalogcache.Decode): what the gate can advertise
	// before any upstream runs.
	capabilities map[string]json.RawMessage
}

// seedCatalog builds a catalog snapshot from the cached entries of every
// server for children started with caps. An unreadable entry is reported
// and left out: that server is listed live. Everything from the cache
// passes the checks a live listing passes (admitNamed, neutralizeEntry,
// the template's pattern).
func (g *Gate) seedCatalog(caps json.RawMessage, scope string) seeded {
	out := seeded{snap: g.empty, instructions: map[string]string{}, capabilities: map[string]json.RawMessage{}}
	store := g.opts.CatalogCache
	if store == nil {
		return out
	}
	order := g.pool.Names()
	tools := map[string]*serverList{}
	prompts := map[string]*serverList{}
	res := map[string]*resourceList{}
	for _, server := range order {
		key, ok := g.cacheKey(server, caps, scope)
		if !ok {
			continue
		}
		e, err := store.Load(key, server)
		if err != nil {
			if !errors.Is(err, catalogcache.ErrNotCached) {
				g.log.Warn("catalog cache entry ignored; the server will be listed live", "server", server, "error", audit.Redact(err.Error()))
			}
			continue
		}
		if e.Instructions != "" {
			out.instructions[server] = e.Instructions
		}
		if len(e.Capabilities) > 0 {
			out.capabilities[server] = e.Capabilities
		}
		for _, k := range []struct {
			kind  *kind
			items []json.RawMessage
			into  map[string]*serverList
		}{{kindTool, e.Tools, tools}, {kindPrompt, e.Prompts, prompts}} {
			if k.items == nil {
				continue
			}
			l := &serverList{loaded: true}
			seen := map[string]bool{}
			for _, it := range k.items {
				if en, ok := g.admitNamed(server, k.kind, it, seen); ok {
					l.entries = append(l.entries, en)
				}
			}
			k.into[server] = l
		}
		if e.Resources != nil && e.ResourceTemplates != nil {
			l := &resourceList{loaded: true}
			for _, it := range e.Resources {
				uri, ok := rawjson.GetString(it, "uri")
				if !ok || uri == "" {
					continue
				}
				if clean, ok := g.neutralizeEntry(server, uri, "resource", it, "uri"); ok {
					l.resources = append(l.resources, resourceEntry{uri: uri, raw: clean})
				}
			}
			for _, it := range e.ResourceTemplates {
				t, _ := rawjson.GetString(it, "uriTemplate")
				re, err := templateRegexp(t)
				if err != nil {
					continue
				}
				if clean, ok := g.neutralizeEntry(server, t, "resource template", it, "uriTemplate"); ok {
					l.templates = append(l.templates, templateEntry{raw: clean, re: re})
				}
			}
			res[server] = l
		}
		// Remembered as written, so an unchanged live listing does not
		// write it again (the digest leaves out when it was written).
		same := *e
		same.Written = time.Time{}
		if data, err := json.Marshal(&same); err == nil {
			g.persist.mu.Lock()
			g.persist.written[key] = sha256.Sum256(data)
			g.persist.mu.Unlock()
		}
		g.persist.noteEra(key, e.ProtocolVersion)
	}
	if len(tools)+len(prompts)+len(res) == 0 {
		return out
	}
	snap := &snapshot{
		tools:     buildNamed(tools, order, g.budget),
		prompts:   buildNamed(prompts, order, g.budget),
		resources: newResourceIndex(),
	}
	if len(res) > 0 {
		snap.resources.servers = res
		snap.resources.reindex(order)
	}
	out.snap = snap
	return out
}

func buildNamed(servers map[string]*serverList, order []string, budget int) *named {
	var keys []naming.Key
	for _, s := range order {
		if sl := servers[s]; sl != nil {
			for _, e := range sl.entries {
				keys = append(keys, naming.Key{Server: s, Name: e.name})
			}
		}
	}
	return &named{servers: servers, table: naming.Build(budget, keys)}
}

// fetched is told of every successful live fetch of l's list of s: the
// list is live from now on, the pins see what the server lists, and its
// cache entry is written back.
func (g *Gate) fetched(l *lister, key string, s *upstream.Session) {
	g.mu.Lock()
	held := g.cats[key] != nil
	g.mu.Unlock()
	if !held {
		return // released meanwhile: nothing of it is kept (releaseKey)
	}
	g.persist.mu.Lock()
	if g.persist.live == nil {
		g.persist.live = map[liveKey]*upstream.Session{}
	}
	g.persist.live[liveKey{l, child{key, s.Name}}] = s
	g.persist.mu.Unlock()
	if g.opts.Pins == nil && g.opts.CatalogCache == nil {
		return
	}
	// The files are written off the fetch's path, one writer at a time:
	// whoever waits for the list (a first call) does not wait for a disk.
	// Gate.Close waits for what is queued.
	// What to write is taken now: the key may be released before the
	// writer runs.
	snap := g.catalogOf(key)
	g.mu.Lock()
	caps, scope := g.upCaps[key], g.upScope[key]
	g.mu.Unlock()
	g.persist.enqueue(func() { g.persistFetched(l, snap, caps, scope, s) })
}

// enqueue runs write after every write queued before it, on the one
// writer goroutine: the pins see a server's listings in the order they
// were fetched, so an older one never overrides a newer.
func (p *persistState) enqueue(write func()) {
	p.pending.Add(1)
	p.mu.Lock()
	p.queue = append(p.queue, write)
	start := !p.writing
	p.writing = true
	p.mu.Unlock()
	if !start {
		return
	}
	go func() {
		for {
			p.mu.Lock()
			if len(p.queue) == 0 {
				p.writing = false
				p.mu.Unlock()
				return
			}
			w := p.queue[0]
			p.queue = p.queue[1:]
			p.mu.Unlock()
			w()
			p.pending.Done()
		}
	}()
}

// persistFetched shows the pins what s lists in snap and writes its cache
// entry for children started with caps.
func (g *Gate) persistFetched(l *lister, snap *snapshot, caps json.RawMessage, scope string, s *upstream.Session) {
	if p := g.opts.Pins; p != nil {
		defs := map[string]json.RawMessage{}
		switch l {
		case g.tools.lister, g.prompts.lister:
			k, kind := g.tools.kind, pins.KindTool
			if l == g.prompts.lister {
				k, kind = g.prompts.kind, pins.KindPrompt
			}
			if sl := snap.of(k).servers[s.Name]; sl != nil {
				for _, e := range sl.entries {
					defs[pins.Key(kind, e.name)] = e.raw
				}
			}
		case g.resLister:
			if rl := snap.resources.servers[s.Name]; rl != nil {
				for _, t := range rl.templates {
					u, _ := rawjson.GetString(t.raw, "uriTemplate")
					defs[pins.Key(pins.KindTemplate, u)] = t.raw
				}
			}
		}
		if changed, err := p.Observe(s.Name, defs); err != nil {
			g.log.Warn("pins not updated", "server", s.Name, "error", audit.Redact(err.Error()))
		} else if len(changed) > 0 {
			g.log.Warn("upstream lists definitions that differ from the ones pinned; calls to them are held back", "server", s.Name, "changed", len(changed))
		}
	}
	g.writeCache(caps, scope, s, snap)
}

// isLive reports whether l's list of server, in key's catalog, was fetched
// from s.
func (g *Gate) isLive(l *lister, key string, s *upstream.Session) bool {
	g.persist.mu.Lock()
	defer g.persist.mu.Unlock()
	return g.persist.live[liveKey{l, child{key, s.Name}}] == s
}

// liveSession returns the running child of key whose live listing of
// server l's snapshot holds, or nil. A session that has not ended is still
// the one the pool hands out: the pool retires a session only once it has
// ended.
func (g *Gate) liveSession(l *lister, key, server string) *upstream.Session {
	g.persist.mu.Lock()
	s := g.persist.live[liveKey{l, child{key, server}}]
	g.persist.mu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case <-s.Done():
		return nil
	default:
		return s
	}
}

// ensureLive is ensure for a name the catalog does not know: the lists of
// the given servers (all when none is given) that are not live (seeded from
// the cache, or fetched from a child that has ended) are fetched live,
// which starts those servers, so a tool or resource added since the cache
// was written is found. Without a cache it is ensure.
func (s *Session) ensureLive(ctx context.Context, l *lister, only ...string) {
	g, key := s.Gate, s.childKey()
	if g.opts.CatalogCache == nil {
		s.ensure(ctx, l, only...)
		return
	}
	names := only
	if len(names) == 0 {
		names = g.pool.Names()
	}
	snap := g.catalogOf(key)
	var waits []chan struct{}
	g.mu.Lock()
	for _, server := range names {
		if !l.loaded(snap, server) || g.liveSession(l, key, server) == nil {
			waits = append(waits, g.startFetchLocked(l, key, server, true))
		}
	}
	g.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

// forgetLive drops what is recorded of key's children (releaseKey).
func (g *Gate) forgetLive(key string) {
	g.persist.mu.Lock()
	defer g.persist.mu.Unlock()
	for k := range g.persist.live {
		if k.c.key == key {
			delete(g.persist.live, k)
		}
	}
}

// writeCache writes server's entry for children started with caps from snap: the
// lists it holds (loaded ones only) and what s declared.
func (g *Gate) writeCache(caps json.RawMessage, scope string, s *upstream.Session, snap *snapshot) {
	store := g.opts.CatalogCache
	if store == nil || caps == nil {
		return
	}
	ck, ok := g.cacheKey(s.Name, caps, scope)
	if !ok {
		return
	}
	e := &catalogcache.Entry{Version: 1, Key: ck, Server: s.Name, ProtocolVersion: s.ProtocolVersion}
	if c, ok := rawjson.Get(s.InitResult, "capabilities"); ok && len(c) > 0 && c[0] == '{' {
		e.Capabilities = c
	}
	if ins, ok := rawjson.GetString(s.InitResult, "instructions"); ok {
		e.Instructions = boundInstructions(ins, catalogcache.MaxInstructionsBytes)
	}
	items := func(l *serverList) []json.RawMessage {
		if l == nil || !l.loaded {
			return nil
		}
		out := make([]json.RawMessage, 0, len(l.entries))
		for _, en := range l.entries {
			out = append(out, en.raw)
		}
		return out
	}
	e.Tools = items(snap.tools.servers[s.Name])
	e.Prompts = items(snap.prompts.servers[s.Name])
	if rl := snap.resources.servers[s.Name]; rl != nil && rl.loaded {
		e.Resources = make([]json.RawMessage, 0, len(rl.resources))
		for _, r := range rl.resources {
			e.Resources = append(e.Resources, r.raw)
		}
		e.ResourceTemplates = make([]json.RawMessage, 0, len(rl.templates))
		for _, t := range rl.templates {
			e.ResourceTemplates = append(e.ResourceTemplates, t.raw)
		}
	}
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	sum := sha256.Sum256(data)
	// The caller is the gate's one writer (enqueue).
	g.persist.mu.Lock()
	same := g.persist.written[ck] == sum
	g.persist.mu.Unlock()
	if same {
		return
	}
	e.Written = time.Now().UTC().Truncate(time.Second)
	if err := store.Save(e); err != nil {
		g.log.Warn("catalog cache not written", "server", s.Name, "error", audit.Redact(err.Error()))
		return
	}
	g.persist.mu.Lock()
	g.persist.written[ck] = sum
	g.persist.mu.Unlock()
}

// noteEra records the ProtocolVersion of the cache file of key as read.
func (p *persistState) noteEra(key, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.era == nil {
		p.era = map[string]string{}
	}
	p.era[key] = version
}

// takeEra returns and forgets what noteEra recorded of key: a later start
// reads the file again, which another gate may have written meanwhile.
func (p *persistState) takeEra(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.era[key]
	delete(p.era, key)
	return v, ok
}

// boundInstructions cuts s to at most n bytes on a character boundary.
func boundInstructions(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Bounds of the upstream instructions relayed in the gate's own.
const (
	maxServerInstructions = 2000
	maxAllInstructions    = 8000
)

// relayedInstructions is what the gate adds to its initialize
// instructions: each server's own, from its running child of key or from
// the cache, neutralised, one line, bounded and labelled with the server's
// name, so that no server's text reads as the gate's or another's. Hosts
// hand them to the model with its system prompt: a server's instructions
// that the result guard finds approval-shaped are withheld, audited
// (upstreamWords), as its result would be refused.
func (g *Session) relayedInstructions(key string, cached map[string]string) string {
	have := map[string]string{}
	for server, ins := range cached {
		have[server] = ins
	}
	for _, s := range g.pool.RunningFor(key) {
		if ins, ok := rawjson.GetString(s.InitResult, "instructions"); ok {
			have[s.Name] = ins
		}
	}
	var b strings.Builder
	for _, server := range g.pool.Names() {
		ins := have[server]
		if strings.TrimSpace(ins) == "" {
			continue
		}
		if _, ok := g.upstreamWords(server, "initialize instructions", ins); !ok {
			line := fmt.Sprintf("\n\n[%s] Instructions from the server %q: %s", server, server, withheldWords)
			if b.Len()+len(line) > maxAllInstructions {
				b.WriteString("\n\n(instructions of further servers left out: too long)")
				break
			}
			b.WriteString(line)
			continue
		}
		clean, _ := guard.Neutralize(ins)
		clean = strings.Join(strings.FieldsFunc(clean, func(r rune) bool {
			return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\u0085'
		}), " ")
		clean = boundInstructions(clean, maxServerInstructions)
		line := fmt.Sprintf("\n\n[%s] Instructions from the server %q, relayed as it wrote them (not the gate's): %s", server, server, clean)
		if b.Len()+len(line) > maxAllInstructions {
			b.WriteString("\n\n(instructions of further servers left out: too long)")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}
