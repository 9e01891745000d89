package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// CodeResourceNotFound is MCP's error code for an unknown resource.
const CodeResourceNotFound = -32002

// resourceIndex is the merged resource lists. Resource URIs are not renamed
// (they are addresses, often file:// paths the user recognises), so the
// gate remembers which server listed each one. Guarded by Gate.mu.
type resourceIndex struct {
	servers map[string]*resourceList
	owner   map[string]string // URI → server
}

type resourceList struct {
	loaded    bool
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

func newResourceIndex() resourceIndex {
	return resourceIndex{servers: map[string]*resourceList{}, owner: map[string]string{}}
}

// reindex rebuilds the URI → server map. The caller holds Gate.mu.
func (ix *resourceIndex) reindex(order []string) {
	ix.owner = map[string]string{}
	for _, s := range order {
		if l := ix.servers[s]; l != nil {
			for _, r := range l.resources {
				if _, taken := ix.owner[r.uri]; !taken {
					ix.owner[r.uri] = s
				}
			}
		}
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
	return regexp.Compile(b.String())
}

// ensureResources fetches the resource and template lists of every server
// not listed yet.
func (g *Gate) ensureResources(ctx context.Context) {
	g.listLoadMu.Lock()
	defer g.listLoadMu.Unlock()
	var todo []string
	g.mu.Lock()
	for _, s := range g.pool.Names() {
		if l := g.resources.servers[s]; l == nil || !l.loaded {
			todo = append(todo, s)
		}
	}
	g.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	lists := make([]*resourceList, len(todo))
	var wg sync.WaitGroup
	for i, server := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := g.pool.Session(ctx, server)
			if err != nil {
				g.log.Warn("upstream left out of resources", "server", server, "error", err)
				return
			}
			l, err := g.fetchResources(ctx, s)
			if err != nil {
				g.log.Warn("upstream left out of resources", "server", server, "error", err)
				return
			}
			lists[i] = l
		}()
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, l := range lists {
		if l != nil {
			g.resources.servers[todo[i]] = l
		}
	}
	g.resources.reindex(g.pool.Names())
}

func (g *Gate) fetchResources(ctx context.Context, s *upstream.Session) (*resourceList, error) {
	l := &resourceList{loaded: true}
	if !s.Caps.Resources {
		return l, nil
	}
	err := fetchPages(ctx, s, "resources/list", "resources", func(item json.RawMessage) {
		uri, ok := rawjson.GetString(item, "uri")
		if !ok || uri == "" {
			g.log.Warn("upstream listed a resource without a uri; left out", "server", s.Name)
			return
		}
		l.resources = append(l.resources, resourceEntry{uri: uri, raw: item})
	})
	if err != nil {
		return nil, err
	}
	err = fetchPages(ctx, s, "resources/templates/list", "resourceTemplates", func(item json.RawMessage) {
		t, _ := rawjson.GetString(item, "uriTemplate")
		re, err := templateRegexp(t)
		if err != nil {
			g.log.Warn("upstream listed a bad URI template; left out", "server", s.Name, "template", t, "error", err)
			return
		}
		l.templates = append(l.templates, templateEntry{raw: item, re: re})
	})
	var werr *rpc.Error
	if errors.As(err, &werr) && werr.Code == rpc.CodeMethodNotFound {
		err = nil // a server with resources but no templates
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// refreshResources re-lists a server's resources after it said they changed.
func (g *Gate) refreshResources(s *upstream.Session) {
	l, err := g.fetchResources(context.Background(), s)
	if err != nil {
		g.log.Warn("re-listing resources after a change", "server", s.Name, "error", err)
		return
	}
	g.mu.Lock()
	g.resources.servers[s.Name] = l
	g.resources.reindex(g.pool.Names())
	listed := g.listedByHost["resources/list"] || g.listedByHost["resources/templates/list"]
	g.mu.Unlock()
	if listed {
		g.notifyHost("notifications/resources/list_changed", nil)
	}
}

func (g *Gate) listResources(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g.ensureResources(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pol := g.policy.Current()
	g.mu.Lock()
	var items []json.RawMessage
	for _, s := range g.pool.Names() {
		if l := g.resources.servers[s]; l != nil {
			for _, r := range l.resources {
				if g.resources.owner[r.uri] == s && !pol.Hidden(policy.KindResource, s, r.uri) {
					items = append(items, r.raw)
				}
			}
		}
	}
	g.listedByHost["resources/list"] = true
	g.mu.Unlock()
	return g.page("resources", items, params)
}

func (g *Gate) listResourceTemplates(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g.ensureResources(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	var items []json.RawMessage
	for _, s := range g.pool.Names() {
		if l := g.resources.servers[s]; l != nil {
			for _, t := range l.templates {
				items = append(items, t.raw)
			}
		}
	}
	g.listedByHost["resources/templates/list"] = true
	g.mu.Unlock()
	return g.page("resourceTemplates", items, params)
}

// resourceOwner finds the server a URI belongs to: the one that listed it,
// else one whose template produces it.
func (g *Gate) resourceOwner(ctx context.Context, uri string) (string, error) {
	if uri == "" {
		return "", rpc.Errorf(rpc.CodeInvalidParams, `a non-empty "uri" is required`)
	}
	for attempt := 0; attempt < 2; attempt++ {
		g.mu.Lock()
		if s, ok := g.resources.owner[uri]; ok {
			g.mu.Unlock()
			return s, nil
		}
		for _, s := range g.pool.Names() {
			if l := g.resources.servers[s]; l != nil {
				for _, t := range l.templates {
					if t.re.MatchString(uri) {
						g.mu.Unlock()
						return s, nil
					}
				}
			}
		}
		g.mu.Unlock()
		if attempt == 0 {
			g.ensureResources(ctx)
		}
	}
	return "", &rpc.Error{
		Code:    CodeResourceNotFound,
		Message: "Resource not found: no upstream server lists " + uri,
		Data:    mustJSON(map[string]string{"uri": uri}),
	}
}

// resourceRequest routes resources/read, subscribe and unsubscribe.
func (g *Gate) resourceRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	uri, ok := rawjson.GetString(params, "uri")
	if !ok {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, `%s: params need a "uri" string`, method)
	}
	server, err := g.resourceOwner(ctx, uri)
	if err != nil {
		return nil, err
	}
	if method == "resources/read" || method == "resources/subscribe" {
		pol := g.policy.Current()
		if v := g.decide(ctx, pol, policy.Call{Kind: policy.KindResource, Server: server, Name: uri}, uri); !v.allow {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, deniedError("the resource "+uri, v)
		}
	}
	res, err := g.forward(ctx, server, method, params)
	if err != nil || method != "resources/read" {
		return res, err
	}
	return g.neutralizeText(server, uri, res), nil
}
