package proxy

import (
	"maps"

	"github.com/mcp-gate/mcp-gate/naming"
)

// snapshot is one consistent view of everything the upstreams listed: the
// tools and prompts with their wire names, and the resources with their
// owners. It is immutable once published. Readers (listing, routing, the
// guard's look at a tool's outputSchema, and pinning to come) load it once
// and read it without a lock, so a request never sees a tool list from one
// moment and a name table from another; writers build a new one under
// Gate.catMu and swap it in, as the policy store swaps policies.
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

// catalog returns the snapshot in force.
func (g *Gate) catalog() *snapshot { return g.snap.Load() }

// updateCatalog publishes the snapshot that change builds from the one in
// force, unless it returns nil (nothing changed). Writers are serialised,
// so no change is built on a snapshot another has replaced meanwhile.
func (g *Gate) updateCatalog(change func(old *snapshot) *snapshot) bool {
	g.catMu.Lock()
	defer g.catMu.Unlock()
	next := change(g.snap.Load())
	if next == nil {
		return false
	}
	g.snap.Store(next)
	return true
}
