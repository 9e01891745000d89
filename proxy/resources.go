package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// CodeResourceNotFound is MCP's error code for an unknown resource.
const CodeResourceNotFound = -32002

// resourceIndex is the merged resource lists. Resource URIs are not renamed
// (they are addresses, often file:// paths the user recognises), so the
// gate remembers which server listed each one. A URI that two servers could
// answer for is nobody's: the gate refuses it rather than let one server
// answer for another's resource. Two servers can both answer for a URI
// when both list it, when one lists it and a template of the other
// produces it, or when templates of both produce it; the more specific
// template does not win, or a server could capture another's URIs by
// listing a narrower template (or the exact URIs) of its own. Part of a
// snapshot: immutable once published.
type resourceIndex struct {
	servers   map[string]*resourceList
	owner     map[string]string   // URI → the one server that lists it
	ambiguous map[string][]string // URI → the servers that could all answer for it
}

type resourceList struct {
	loaded    bool
	capable   bool // the server declared the resources capability
	resources []resourceEntry
	templates []templateEntry
}

type resourceEntry struct {
	uri string
	raw json.RawMessage
}

type templateEntry struct {
	raw json.RawMessage
	re  *regexp.Regexp // matches the URIs the template can produce
}

func newResourceIndex() *resourceIndex {
	return &resourceIndex{servers: map[string]*resourceList{}, owner: map[string]string{}, ambiguous: map[string][]string{}}
}

// withServer returns a new index with server's lists replaced; ix is left
// as it was.
func (ix *resourceIndex) withServer(server string, l *resourceList, order []string) *resourceIndex {
	c := &resourceIndex{servers: maps.Clone(ix.servers)}
	c.servers[server] = l
	c.reindex(order)
	return c
}

// reindex rebuilds the URI → server map of an index not yet published.
func (ix *resourceIndex) reindex(order []string) {
	claims := map[string][]string{}
	for _, s := range order {
		if l := ix.servers[s]; l != nil {
			for _, r := range l.resources {
				if !slices.Contains(claims[r.uri], s) {
					claims[r.uri] = append(claims[r.uri], s)
				}
			}
		}
	}
	ix.owner = map[string]string{}
	ix.ambiguous = map[string][]string{}
	for uri, servers := range claims {
		// A listed URI that another server's template produces is just as
		// contested as one two servers list.
		if more := ix.templateServers(uri, order); len(more) > 0 {
			all := servers
			servers = nil
			for _, s := range order { // in the configuration's order, as errors name them
				if slices.Contains(all, s) || slices.Contains(more, s) {
					servers = append(servers, s)
				}
			}
		}
		if len(servers) == 1 {
			ix.owner[uri] = servers[0]
		} else {
			ix.ambiguous[uri] = servers
		}
	}
}

// templateServers returns the servers, in order, with a template that
// produces uri.
func (ix *resourceIndex) templateServers(uri string, order []string) []string {
	var out []string
	for _, s := range order {
		if l := ix.servers[s]; l != nil {
			for _, t := range l.templates {
				if t.re.MatchString(uri) {
					out = append(out, s)
					break
				}
			}
		}
	}
	return out
}

// errAmbiguous is a URI that more than one server can answer for.
type errAmbiguous struct {
	uri     string
	servers []string
}

func (e errAmbiguous) Error() string {
	return fmt.Sprintf("resource %s is claimed by servers %s (each lists it or has a URI template that produces it); the gate will not pick one",
		guard.Quote(e.uri, guard.ShowName), strings.Join(e.servers, " and "))
}

// lookupOwner finds the server a URI belongs to: the one that listed it,
// else the one with a template that produces it. A URI that more than one
// server can answer for is ambiguous, however specific each template is.
func (ix *resourceIndex) lookupOwner(uri string, order []string) (string, error) {
	if s, ok := ix.owner[uri]; ok {
		return s, nil
	}
	if servers, ok := ix.ambiguous[uri]; ok {
		return "", errAmbiguous{uri, servers}
	}
	switch servers := ix.templateServers(uri, order); len(servers) {
	case 0:
		return "", nil
	case 1:
		return servers[0], nil
	default:
		return "", errAmbiguous{uri, servers}
	}
}

// templateRegexp turns an RFC 6570 URI template into a pattern that matches
// every URI it can expand to. Each expression may match anything: routing
// needs "which server could have made this URI", not the variables.
func templateRegexp(t string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return nil, errors.New("unterminated expression")
		}
		b.WriteString(regexp.QuoteMeta(t[:i]))
		b.WriteString(".*")
		t = t[i+j+1:]
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		// The compiler's message quotes the pattern, which is the
		// upstream's text (invalid UTF-8, say).
		return nil, errors.New("the template does not make a valid pattern")
	}
	return re, nil
}

// resourceLister keeps the resource and template lists in step.
func (g *Gate) resourceLister() *lister {
	return &lister{
		list:     "resources/list",
		notify:   "notifications/resources/list_changed",
		listedBy: []string{"resources/list", "resources/templates/list"},
		state:    map[child]*listState{},
		loaded: func(snap *snapshot, server string) bool {
			l := snap.resources.servers[server]
			return l != nil && l.loaded
		},
		fetch: func(ctx context.Context, s *upstream.Session) (func(*snapshot) *snapshot, error) {
			l, err := g.fetchResources(ctx, s)
			if err != nil {
				return nil, err
			}
			return func(old *snapshot) *snapshot {
				if cur := old.resources.servers[s.Name]; cur != nil && cur.loaded && sameResources(cur, l) {
					return nil // unchanged: nothing to publish, and no host to tell (as for tools)
				}
				ix := old.resources.withServer(s.Name, l, g.pool.Names())
				for uri, servers := range ix.ambiguous {
					if slices.Contains(servers, s.Name) {
						g.log.Warn("resource claimed by more than one server (listed or produced by a template); refused", "uri", audit.PayloadString(uri), "servers", servers)
					}
				}
				next := *old
				next.resources = ix
				return &next
			}, nil
		},
	}
}

// sameResources reports whether two listings of one server hold the same
// resources and templates, byte for byte and in order.
func sameResources(a, b *resourceList) bool {
	if a.capable != b.capable || len(a.resources) != len(b.resources) || len(a.templates) != len(b.templates) {
		return false
	}
	for i := range a.resources {
		if a.resources[i].uri != b.resources[i].uri || !bytes.Equal(a.resources[i].raw, b.resources[i].raw) {
			return false
		}
	}
	for i := range a.templates {
		if !bytes.Equal(a.templates[i].raw, b.templates[i].raw) {
			return false
		}
	}
	return true
}

func (g *Gate) fetchResources(ctx context.Context, s *upstream.Session) (*resourceList, error) {
	l := &resourceList{loaded: true, capable: s.Caps.Resources}
	if !s.Caps.Resources {
		return l, nil
	}
	err := upstream.PagesMeta(ctx, s, "resources/list", "resources", func(item json.RawMessage) {
		uri, ok := rawjson.GetString(item, "uri")
		if !ok || uri == "" {
			g.log.Warn("upstream listed a resource without a uri; left out", "server", s.Name)
			return
		}
		if clean, ok := g.neutralizeEntry(s.Name, uri, "resource", item, "uri"); ok {
			l.resources = append(l.resources, resourceEntry{uri: uri, raw: clean})
		}
	}, g.listMetaOf(s, "resources/list"))
	if err != nil {
		return nil, err
	}
	err = upstream.PagesMeta(ctx, s, "resources/templates/list", "resourceTemplates", func(item json.RawMessage) {
		t, _ := rawjson.GetString(item, "uriTemplate")
		re, err := templateRegexp(t)
		if err != nil {
			g.log.Warn("upstream listed a bad URI template; left out", "server", s.Name, "template", audit.PayloadString(t), "error", err)
			return
		}
		if clean, ok := g.neutralizeEntry(s.Name, t, "resource template", item, "uriTemplate"); ok {
			l.templates = append(l.templates, templateEntry{raw: clean, re: re})
		}
	}, g.listMetaOf(s, "resources/templates/list"))
	var werr *rpc.Error
	if errors.As(err, &werr) && werr.Code == rpc.CodeMethodNotFound {
		err = nil // a server with resources but no templates
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (g *Session) listResources(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g.ensure(ctx, g.resLister)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pol := g.policy.Current()
	ix := g.catalog().resources
	var items []json.RawMessage
	for _, s := range g.pool.Names() {
		if l := ix.servers[s]; l != nil {
			for _, r := range l.resources {
				if ix.owner[r.uri] == s && !pol.Hidden(policy.KindResource, s, r.uri) {
					items = append(items, r.raw)
				}
			}
		}
	}
	g.mu.Lock()
	g.listedByHost["resources/list"] = true
	g.mu.Unlock()
	return g.withListMeta("resources/list")(g.page("resources", items, params))
}

func (g *Session) listResourceTemplates(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g.ensure(ctx, g.resLister)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix := g.catalog().resources
	var items []json.RawMessage
	for _, s := range g.pool.Names() {
		if l := ix.servers[s]; l != nil {
			for _, t := range l.templates {
				items = append(items, t.raw)
			}
		}
	}
	g.mu.Lock()
	g.listedByHost["resources/templates/list"] = true
	g.mu.Unlock()
	return g.withListMeta("resources/templates/list")(g.page("resourceTemplates", items, params))
}

// resourceOwner finds the server a URI belongs to, listing resources first
// if the URI is not known yet. It returns the snapshot the owner was found
// in.
func (g *Session) resourceOwner(ctx context.Context, uri string) (string, *snapshot, error) {
	if uri == "" {
		return "", nil, rpc.Errorf(rpc.CodeInvalidParams, `a non-empty "uri" is required`)
	}
	for attempt := 0; attempt < 2; attempt++ {
		snap := g.catalog()
		s, err := snap.resources.route(uri, g.pool.Names(), attempt == 1)
		if err != nil {
			return "", nil, &rpc.Error{Code: rpc.CodeInvalidParams, Message: err.Error(), Data: mustJSON(map[string]string{"uri": uri})}
		}
		if s != "" {
			return s, snap, nil
		}
		if attempt == 0 {
			g.ensureLive(ctx, g.resLister)
		}
	}
	return "", nil, &rpc.Error{
		Code:    CodeResourceNotFound,
		Message: "Resource not found: no upstream server lists " + guard.Quote(uri, guard.ShowName),
		Data:    mustJSON(map[string]string{"uri": uri}),
	}
}

// ownsResource reports whether server is the owner of uri in key's
// catalog, without listing anything: an upstream may only announce updates
// of its own resources.
func (g *Gate) ownsResource(key, server, uri string) bool {
	s, err := g.catalogOf(key).resources.route(uri, g.pool.Names(), true)
	return err == nil && s == server
}
