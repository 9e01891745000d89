package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// kind is a named, listable feature: tools or prompts.
type kind struct {
	list     string // the list method
	field    string // the array in its result
	changed  string // the list_changed notification
	has      func(upstream.Capabilities) bool
	noun     string
	nameKeys []string // where an item's name is
}

var (
	kindTool = &kind{
		list: "tools/list", field: "tools", changed: "notifications/tools/list_changed",
		has: func(c upstream.Capabilities) bool { return c.Tools }, noun: "tool",
	}
	kindPrompt = &kind{
		list: "prompts/list", field: "prompts", changed: "notifications/prompts/list_changed",
		has: func(c upstream.Capabilities) bool { return c.Prompts }, noun: "prompt",
	}
)

// catalog is the merged list of one kind across servers, with the wire
// names the host sees. It is guarded by Gate.mu.
type catalog struct {
	kind    *kind
	servers map[string]*serverList
	table   *naming.Table
	gen     uint64 // bumped whenever an entry changes
}

// serverList is what one server listed.
type serverList struct {
	loaded  bool
	entries []entry
}

// entry is one tool or prompt, exactly as the upstream defined it.
type entry struct {
	name string          // the upstream's name
	raw  json.RawMessage // the upstream's definition, byte for byte
}

func newCatalog(k *kind, budget int) catalog {
	return catalog{kind: k, servers: map[string]*serverList{}, table: naming.Build(budget, nil)}
}

// rebuild recomputes the wire names after a change. The caller holds Gate.mu.
func (c *catalog) rebuild(budget int, order []string) {
	var keys []naming.Key
	for _, s := range order {
		if l := c.servers[s]; l != nil {
			for _, e := range l.entries {
				keys = append(keys, naming.Key{Server: s, Name: e.name})
			}
		}
	}
	c.table = naming.Build(budget, keys)
	c.gen++
}

// lookup maps a wire name to its server and original name. The caller holds
// Gate.mu.
func (c *catalog) lookup(wire string) (naming.Key, bool) { return c.table.Lookup(wire) }

// ensureLoaded fetches the lists of the given servers (every server when
// none is given) that are not listed yet, starting them concurrently. A
// server that fails to start or to list is logged and left out; it is tried
// again on the next list.
func (g *Gate) ensureLoaded(ctx context.Context, c *catalog, only ...string) {
	g.listLoadMu.Lock()
	defer g.listLoadMu.Unlock()
	var todo []string
	names := g.pool.Names()
	if len(only) > 0 {
		names = only
	}
	g.mu.Lock()
	for _, s := range names {
		if l := c.servers[s]; l == nil || !l.loaded {
			todo = append(todo, s)
		}
	}
	g.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	type fetched struct {
		server  string
		entries []entry
		err     error
	}
	results := make([]fetched, len(todo))
	var wg sync.WaitGroup
	for i, server := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := g.pool.Session(ctx, server)
			if err != nil {
				results[i] = fetched{server: server, err: err}
				return
			}
			entries, err := g.fetchNamed(ctx, s, c.kind)
			results[i] = fetched{server: server, entries: entries, err: err}
		}()
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range results {
		if r.err != nil {
			g.log.Warn("upstream left out of "+c.kind.list, "server", r.server, "error", r.err)
			continue
		}
		c.servers[r.server] = &serverList{loaded: true, entries: r.entries}
	}
	c.rebuild(g.budget, g.pool.Names())
}

// fetchNamed lists every page of a server's tools or prompts.
func (g *Gate) fetchNamed(ctx context.Context, s *upstream.Session, k *kind) ([]entry, error) {
	if !k.has(s.Caps) {
		return nil, nil
	}
	var out []entry
	seen := map[string]bool{}
	err := fetchPages(ctx, s, k.list, k.field, func(item json.RawMessage) {
		name, ok := rawjson.GetString(item, "name")
		if !ok || name == "" {
			g.log.Warn("upstream listed an entry without a name; left out", "server", s.Name, "list", k.list)
			return
		}
		if seen[name] {
			g.log.Warn("upstream listed a name twice; the first is kept", "server", s.Name, "list", k.list, "name", name)
			return
		}
		seen[name] = true
		// Titles and descriptions, the schemas' included, reach the model
		// and the human: escape sequences and invisible characters in them
		// are made visible (issue #5). Everything else stays byte for byte.
		clean, n, err := guard.NeutralizeJSON(item, isDescriptionKey)
		if err == nil && n > 0 {
			g.audit.Guard(audit.Guard{Session: g.session, Server: s.Name, Tool: name, Outcome: "neutralised", Kind: "hidden_characters", Detail: k.noun + " definition", Count: n})
			item = clean
		}
		out = append(out, entry{name: name, raw: item})
	})
	return out, err
}

// maxPages stops a server whose cursors never end.
const maxPages = 1000

// fetchPages calls method page by page and hands each item of field to fn.
func fetchPages(ctx context.Context, s *upstream.Session, method, field string, fn func(json.RawMessage)) error {
	cursor := ""
	seen := map[string]bool{}
	for range maxPages {
		params := json.RawMessage("{}")
		if cursor != "" {
			params = mustJSON(map[string]string{"cursor": cursor})
		}
		res, err := s.Call(ctx, method, params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var page struct {
			Items      []json.RawMessage `json:"-"`
			NextCursor string            `json:"nextCursor"`
		}
		items, ok := rawjson.Get(res, field)
		if !ok {
			return fmt.Errorf("%s: the result has no %q array", method, field)
		}
		if err := json.Unmarshal(items, &page.Items); err != nil {
			return fmt.Errorf("%s: %q is not an array of objects: %w", method, field, err)
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("%s: bad nextCursor: %w", method, err)
		}
		for _, it := range page.Items {
			if len(it) == 0 || it[0] != '{' {
				return fmt.Errorf("%s: an entry of %q is not an object", method, field)
			}
			fn(it)
		}
		if page.NextCursor == "" {
			return nil
		}
		if seen[page.NextCursor] {
			return fmt.Errorf("%s: the server repeated cursor %q", method, page.NextCursor)
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
	return fmt.Errorf("%s: more than %d pages", method, maxPages)
}

// refreshServer re-lists one kind for a running server and tells the host
// when what it would see has changed.
func (g *Gate) refreshServer(s *upstream.Session, c *catalog) {
	entries, err := g.fetchNamed(context.Background(), s, c.kind)
	if err != nil {
		level := slog.LevelWarn
		select {
		case <-s.Done(): // stopped meanwhile: nothing to re-list
			level = slog.LevelDebug
		default:
		}
		g.log.Log(context.Background(), level, "re-listing after a change", "server", s.Name, "list", c.kind.list, "error", err)
		return
	}
	g.mu.Lock()
	old := c.servers[s.Name]
	if old != nil && old.loaded && sameEntries(old.entries, entries) {
		g.mu.Unlock()
		return
	}
	c.servers[s.Name] = &serverList{loaded: true, entries: entries}
	c.rebuild(g.budget, g.pool.Names())
	listed := g.listedByHost[c.kind.list]
	g.mu.Unlock()
	if listed {
		g.notifyHost(c.kind.changed, nil)
	}
}

func sameEntries(a, b []entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].raw, b[i].raw) {
			return false
		}
	}
	return true
}

// refreshAfterRestart re-lists what the host has already seen of a server
// that has just (re)started.
func (g *Gate) refreshAfterRestart(s *upstream.Session) {
	for _, c := range []*catalog{&g.tools, &g.prompts} {
		g.mu.Lock()
		l := c.servers[s.Name]
		loaded := l != nil && l.loaded
		g.mu.Unlock()
		if loaded {
			g.refreshServer(s, c)
		}
	}
	g.mu.Lock()
	l := g.resources.servers[s.Name]
	loaded := l != nil && l.loaded
	g.mu.Unlock()
	if loaded {
		g.refreshResources(s)
	}
}

// renderNamed returns the host's view of a catalog: each upstream entry with
// only its name replaced by the wire name, minus what visible rejects. The
// caller holds Gate.mu.
func (g *Gate) renderNamed(c *catalog, visible func(server, name string) bool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, s := range g.pool.Names() {
		l := c.servers[s]
		if l == nil {
			continue
		}
		for _, e := range l.entries {
			if visible != nil && !visible(s, e.name) {
				continue
			}
			wire, ok := c.table.Wire(naming.Key{Server: s, Name: e.name})
			if !ok {
				return nil, fmt.Errorf("internal error: no wire name for %s %s:%s", c.kind.noun, s, e.name)
			}
			item, err := rawjson.Set(e.raw, "name", rawjson.AppendString(nil, wire))
			if err != nil {
				return nil, fmt.Errorf("%s %q of %q: %w", c.kind.noun, e.name, s, err)
			}
			out = append(out, item)
		}
	}
	return out, nil
}

// page cuts one page out of items and builds the list result.
func (g *Gate) page(field string, items []json.RawMessage, params json.RawMessage) (json.RawMessage, error) {
	offset, err := parseCursor(field, params)
	if err != nil {
		return nil, err
	}
	if offset > len(items) {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid cursor: the list has changed; list again from the start")
	}
	end := min(offset+g.opts.PageSize, len(items))
	var b bytes.Buffer
	b.WriteString(`{"`)
	b.WriteString(field)
	b.WriteString(`":[`)
	for i, it := range items[offset:end] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	if end < len(items) {
		b.WriteString(`,"nextCursor":`)
		b.Write(rawjson.AppendString(nil, makeCursor(field, end)))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Cursors are opaque to the host; ours say which list and where it resumes.
func makeCursor(field string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(field + ":" + strconv.Itoa(offset)))
}

func parseCursor(field string, params json.RawMessage) (int, error) {
	cur, ok := rawjson.GetString(params, "cursor")
	if !ok || cur == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cur)
	f, n, found := strings.Cut(string(raw), ":")
	off, convErr := strconv.Atoi(n)
	if err != nil || !found || f != field || convErr != nil || off < 0 {
		return 0, rpc.Errorf(rpc.CodeInvalidParams, "invalid cursor %q for %s", cur, field)
	}
	return off, nil
}

// listNamed serves tools/list and prompts/list.
func (g *Gate) listNamed(ctx context.Context, c *catalog, params json.RawMessage, visible func(server, name string) bool) (json.RawMessage, error) {
	g.ensureLoaded(ctx, c)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	items, err := g.renderNamed(c, visible)
	g.listedByHost[c.kind.list] = true
	g.mu.Unlock()
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "%v", err)
	}
	return g.page(c.kind.field, items, params)
}

// resolve maps a wire name from the host to its server and original name,
// loading the catalog first if the host calls before listing (hosts cache
// tool lists across sessions).
//
// The mapping is the table's alone. The name's prefix only picks which
// server to list first, so that a call starts that one server and not all
// of them (issue #2: "the first call to a server starts that one"); every
// wire name begins with its server key and "__", and keys contain no "_".
func (g *Gate) resolve(ctx context.Context, c *catalog, wire string) (naming.Key, bool) {
	g.mu.Lock()
	k, ok := c.lookup(wire)
	g.mu.Unlock()
	if ok {
		return k, true
	}
	if server, _, found := strings.Cut(wire, "__"); found && g.pool.Has(server) {
		g.ensureLoaded(ctx, c, server)
		g.mu.Lock()
		k, ok = c.lookup(wire)
		g.mu.Unlock()
		if ok {
			return k, true
		}
	}
	g.ensureLoaded(ctx, c)
	g.mu.Lock()
	defer g.mu.Unlock()
	return c.lookup(wire)
}
