package proxy

import (
	"errors"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// upstreamEra is the pool's Era: the revision cfg's server spoke when the
// catalog cache's entry for key's capabilities was written (its
// ProtocolVersion), "" if there is none. It carries the probe's result
// (upstream/era.go) to the next gate process, so that a server without a
// "protocol" pin is probed once, not at every start. The cache is a hint:
// an entry naming 2026-07-28 still probes (upstream.Pool.startEra), and one
// naming an older revision only skips the probe, which the server answered
// that way when the entry was written; a change to its entry's command,
// arguments or environment changes the key, and so probes again.
func (g *Gate) upstreamEra(key string, cfg upstream.Config) string {
	store := g.opts.CatalogCache
	g.mu.Lock()
	caps, scope := g.upCaps[key], g.upScope[key]
	g.mu.Unlock()
	if store == nil || caps == nil {
		return ""
	}
	ck, ok := g.cacheKey(cfg.Name, caps, scope)
	if !ok {
		return ""
	}
	// The first start after seedCatalog read the entry takes the hint as
	// read then, a moment ago, rather than read the file again between
	// the host's first call and the server's spawn.
	if v, ok := g.persist.takeEra(ck); ok {
		return v
	}
	e, err := store.Load(ck, cfg.Name)
	if err != nil {
		if !errors.Is(err, catalogcache.ErrNotCached) {
			g.log.Warn("catalog cache entry ignored; the server's protocol will be probed", "server", cfg.Name, "error", audit.Redact(err.Error()))
		}
		return ""
	}
	return e.ProtocolVersion
}
