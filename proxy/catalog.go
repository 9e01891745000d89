package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// kind is a named, listable feature: tools or prompts.
type kind struct {
	list    string // the list method
	field   string // the array in its result
	changed string // the list_changed notification
	has     func(upstream.Capabilities) bool
	noun    string
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

// catalog is one listable kind (tools or prompts) and the lister that
// keeps it in step with the upstreams; what was listed is in the snapshot.
type catalog struct {
	kind   *kind
	lister *lister
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
	// digest is the pins digest of raw (pins.Digest): what a pin and a
	// session grant are bound to.
	digest string
}

// namedLister keeps a catalog of tools or prompts in step with the
// upstreams.
func (g *Gate) namedLister(c *catalog) *lister {
	return &lister{
		list:     c.kind.list,
		notify:   c.kind.changed,
		listedBy: []string{c.kind.list},
		state:    map[child]*listState{},
		loaded: func(snap *snapshot, server string) bool {
			l := snap.of(c.kind).servers[server]
			return l != nil && l.loaded
		},
		fetch: func(ctx context.Context, s *upstream.Session) (func(*snapshot) *snapshot, error) {
			entries, err := g.fetchNamed(ctx, s, c.kind)
			if err != nil {
				return nil, err
			}
			return func(old *snapshot) *snapshot {
				cur := old.of(c.kind)
				if l := cur.servers[s.Name]; l != nil && l.loaded && sameEntries(l.entries, entries) {
					return nil
				}
				return old.withNamed(c.kind, cur.withServer(s.Name, &serverList{loaded: true, entries: entries}, g.budget, g.pool.Names()))
			}, nil
		},
	}
}

// fetchNamed lists every page of a server's tools or prompts.
func (g *Gate) fetchNamed(ctx context.Context, s *upstream.Session, k *kind) ([]entry, error) {
	if !k.has(s.Caps) {
		return nil, nil
	}
	var out []entry
	seen := map[string]bool{}
	err := upstream.PagesMeta(ctx, s, k.list, k.field, func(item json.RawMessage) {
		if e, ok := g.admitNamed(s.Name, k, item, seen); ok {
			out = append(out, e)
		}
	}, g.listMetaOf(s, k.list))
	return out, err
}

// admitNamed is how one listed tool or prompt, live or from the catalog
// cache, enters the catalog: named, once, with no hidden characters in its
// name, and neutralised. seen holds the names admitted so far.
func (g *Gate) admitNamed(server string, k *kind, item json.RawMessage, seen map[string]bool) (entry, bool) {
	name, ok := rawjson.GetString(item, "name")
	if !ok || name == "" {
		g.log.Warn("upstream listed an entry without a name; left out", "server", server, "list", k.list)
		return entry{}, false
	}
	if seen[name] {
		g.log.Warn("upstream listed a name twice; the first is kept", "server", server, "list", k.list, "name", audit.PayloadString(name))
		return entry{}, false
	}
	// A name is shown to the human (in approval questions) and to the
	// model: one carrying control, line-breaking or invisible
	// characters is a trick, not a tool.
	if hiddenName(name) {
		g.log.Warn("upstream listed a name with control or invisible characters; left out", "server", server, "list", k.list, "name", audit.PayloadString(name))
		g.guardAudit(g.gateWho(), audit.Guard{Server: server, Tool: audit.PayloadString(name), Outcome: "refused", Kind: "hidden_characters", Detail: k.noun + " name"})
		return entry{}, false
	}
	seen[name] = true
	clean, ok := g.neutralizeEntry(server, name, k.noun+" definition", item, "name")
	if !ok {
		return entry{}, false
	}
	return entry{name: name, raw: clean, digest: pins.Digest(clean)}, true
}

// hiddenName reports a name, URI or argument name that holds a control,
// line-breaking or invisible character: it identifies something, so it is
// refused rather than rewritten.
func hiddenName(name string) bool {
	return strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x2028 || r == 0x2029 || guard.IsHidden(r) }) >= 0 ||
		!utf8.ValidString(name)
}

// neutralizeEntry is how every list entry (tool, prompt, resource, resource
// template) reaches the host: every string in it (title, description,
// annotations, _meta, icons, the schemas' titles and descriptions) has its
// hidden characters made visible, by the same walk as results (issue #8).
// An entry is left out, with a log and an audit line, when a key in it
// holds a hidden character, or when neutralising would change what
// identifies it (ids: its name, uri or uriTemplate) or a prompt argument's
// name, which the host sends back.
func (g *Gate) neutralizeEntry(server, name, what string, item json.RawMessage, ids ...string) (json.RawMessage, bool) {
	clean, err := g.neutralize(server, name, what, item)
	if err != nil {
		return nil, false // audited by neutralize
	}
	if bytes.Equal(clean, item) {
		return item, true
	}
	changed := ""
	for _, id := range ids {
		a, _ := rawjson.Get(item, id)
		b, _ := rawjson.Get(clean, id)
		if !bytes.Equal(a, b) {
			changed = id
		}
	}
	if a, ok := rawjson.Get(item, "arguments"); ok {
		b, _ := rawjson.Get(clean, "arguments")
		var before, after []struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(a, &before) != nil || json.Unmarshal(b, &after) != nil || len(before) != len(after) {
			changed = "arguments"
		} else {
			for i := range before {
				if before[i].Name != after[i].Name {
					changed = "arguments[" + strconv.Itoa(i) + "].name"
				}
			}
		}
	}
	if changed != "" {
		g.log.Warn("upstream listed an entry whose "+changed+" holds control or invisible characters; left out", "server", server, "what", what)
		g.guardAudit(g.gateWho(), audit.Guard{Server: server, Tool: name, Outcome: "refused", Kind: "hidden_characters", Detail: what + ": " + changed})
		return nil, false
	}
	return clean, true
}

// outputSchemaConstrainsStrings reports whether the upstream's definition
// of a tool has an outputSchema that a string made longer, or two strings
// made equal, could stop matching: one with const, enum, pattern,
// minLength, maxLength, format or uniqueItems anywhere in it, or a
// reference the gate cannot follow. Neutralising only lengthens strings and
// never touches keys, so any other schema still matches. A tool the
// catalog does not hold counts as constrained. snap is the snapshot the
// call was resolved in.
func outputSchemaConstrainsStrings(snap *snapshot, server, tool string) bool {
	var raw json.RawMessage
	found := false
	if l := snap.tools.servers[server]; l != nil {
		for _, e := range l.entries {
			if e.name == tool {
				raw, _ = rawjson.Get(e.raw, "outputSchema")
				found = true
				break
			}
		}
	}
	if !found {
		return true
	}
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var schema any
	if json.Unmarshal(raw, &schema) != nil {
		return true
	}
	return constrainsStrings(schema, 0)
}

func constrainsStrings(v any, depth int) bool {
	if depth > 64 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "const", "enum", "pattern", "minLength", "maxLength", "format", "uniqueItems":
				return true
			case "$ref", "$dynamicRef":
				if ref, _ := e.(string); !strings.HasPrefix(ref, "#") {
					return true
				}
			}
			if constrainsStrings(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if constrainsStrings(e, depth+1) {
				return true
			}
		}
	}
	return false
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

// refreshAfterRestart re-lists what the gate holds of a server that has
// just (re)started: a restart may have changed it.
func (g *Gate) refreshAfterRestart(s *upstream.Session) {
	for _, l := range []*lister{g.tools.lister, g.prompts.lister, g.resLister} {
		for _, k := range g.keysServed(s.Key) {
			g.refreshStarted(l, k, s)
		}
	}
}

// renderNamed returns the host's view of a catalog: each upstream entry with
// only its name replaced by the wire name, minus what visible rejects.
func (g *Gate) renderNamed(c *catalog, n *named, visible func(server, name string) bool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, s := range g.pool.Names() {
		l := n.servers[s]
		if l == nil {
			continue
		}
		for _, e := range l.entries {
			if visible != nil && !visible(s, e.name) {
				continue
			}
			wire, ok := n.table.Wire(naming.Key{Server: s, Name: e.name})
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
		return 0, rpc.Errorf(rpc.CodeInvalidParams, "invalid cursor %s for %s", guard.Quote(cur, guard.ShowKey), field)
	}
	return off, nil
}

// listNamed serves tools/list and prompts/list. A name that an
// unconditional deny covers is not listed: the model should not be offered
// what it can never call (DESIGN.md §4). The policy is read after the
// lists are loaded, so a reload during a first load is not missed.
func (g *Session) listNamed(ctx context.Context, c *catalog, hide policy.Kind, params json.RawMessage) (json.RawMessage, error) {
	g.ensure(ctx, c.lister)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pol := g.policy.Current()
	items, err := g.renderNamed(c, g.catalog().of(c.kind), func(server, name string) bool { return !pol.Hidden(hide, server, name) })
	g.mu.Lock()
	g.listedByHost[c.kind.list] = true
	g.mu.Unlock()
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "%v", err)
	}
	return g.withListMeta(c.kind.list)(g.page(c.kind.field, items, params))
}

// resolve maps a wire name from the host to its server and original name,
// loading the catalog first if the host calls before listing (hosts cache
// tool lists across sessions).
//
// The mapping is the table's alone. The name's prefix only picks which
// server to list first, so that a call starts that one server and not all
// of them (issue #2: "the first call to a server starts that one"); every
// wire name begins with its server key and "__", and keys contain no "_".
//
// It returns the snapshot the name was found in, so that the rest of the
// call reads the same view.
func (g *Session) resolve(ctx context.Context, c *catalog, wire string) (naming.Key, *snapshot, bool) {
	snap := g.catalog()
	if k, ok := snap.of(c.kind).table.Lookup(wire); ok {
		return k, snap, true
	}
	server, _, found := strings.Cut(wire, "__")
	if !found || !g.pool.Has(server) {
		return naming.Key{}, snap, false // no wire name can be outside its server's prefix
	}
	g.ensureLive(ctx, c.lister, server)
	snap = g.catalog()
	k, ok := snap.of(c.kind).table.Lookup(wire)
	return k, snap, ok
}
