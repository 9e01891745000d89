package proxy

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/mcp-gate/mcp-gate/naming"
)

// snapshot is one consistent view of everything the upstreams listed: the
// tools and prompts with their wire names, and the resources with their
// owners. It is immutable once published. Readers (listing, routing, the
// guard's look at a tool's outputSchema, and pinning to come) load it once
// and read it without a lock, so a request never sees a tool list from one
// moment and a name table from another; writers build a new one under
// their key's keyCatalog.mu and swap it in, as the policy store swaps
// policies.
//
// There is one catalog per pool key (poolKey), listed through that key's
// children: a server may list different tools to clients of different
// capabilities, or to different users, and a session must see, and call by
// name, what its own children offer, never what another's listed.
type snapshot struct {
	tools, prompts *named
	resources      *resourceIndex
}

// named is the merged list of tools or prompts across servers, with the
// wire names the host sees.
type named struct {
	servers map[string]*serverList
	table   *naming.Table
}

func emptySnapshot(budget int) *snapshot {
	return &snapshot{
		tools:     &named{servers: map[string]*serverList{}, table: naming.Build(budget, nil)},
		prompts:   &named{servers: map[string]*serverList{}, table: naming.Build(budget, nil)},
		resources: newResourceIndex(),
	}
}

// of returns the named list of kind k.
func (s *snapshot) of(k *kind) *named {
	if k == kindTool {
		return s.tools
	}
	return s.prompts
}

// withNamed returns a copy of s with kind k's list replaced.
func (s *snapshot) withNamed(k *kind, n *named) *snapshot {
	c := *s
	if k == kindTool {
		c.tools = n
	} else {
		c.prompts = n
	}
	return &c
}

// withServer returns n with server's list replaced and the wire names
// rebuilt; n is left as it was.
func (n *named) withServer(server string, l *serverList, budget int, order []string) *named {
	c := &named{servers: maps.Clone(n.servers)}
	c.servers[server] = l
	var keys []naming.Key
	for _, s := range order {
		if sl := c.servers[s]; sl != nil {
			for _, e := range sl.entries {
				keys = append(keys, naming.Key{Server: s, Name: e.name})
			}
		}
	}
	c.table = naming.Build(budget, keys)
	return c
}

// keyCatalog is the catalog of one pool key: the snapshot in force, and
// the lock that serialises its writers.
type keyCatalog struct {
	snap atomic.Pointer[snapshot]
	mu   sync.Mutex
	meta listMetas // the list-level _meta of each server's lists (listmeta.go)
}

// catalog returns the snapshot in force for the session's key.
func (s *Session) catalog() *snapshot { return s.Gate.catalogOf(s.childKey()) }

// catalogOf returns the snapshot in force for key: an empty one for a key
// no session has.
func (g *Gate) catalogOf(key string) *snapshot {
	g.mu.Lock()
	c := g.cats[key]
	g.mu.Unlock()
	if c == nil {
		return g.empty
	}
	return c.snap.Load()
}

// updateCatalog publishes for key the snapshot that change builds from the
// one in force, unless it returns nil (nothing changed) or no session has
// key any more. Writers are serialised, so no change is built on a
// snapshot another has replaced meanwhile.
func (g *Gate) updateCatalog(key string, change func(old *snapshot) *snapshot) bool {
	g.mu.Lock()
	c := g.cats[key]
	g.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := change(c.snap.Load())
	if next == nil {
		return false
	}
	c.snap.Store(next)
	return true
}
