package proxy

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// List-level _meta. An upstream's list result may carry a "_meta" beside
// its entries; the gate's list is the merge of every server's, so its
// "_meta" is the merge of theirs: each member one server gave, or several
// gave alike, as that server wrote it (neutralised like every string an
// upstream sends); a member servers disagree on is left out, since the
// gate will not pick one server's word over another's. With one server,
// the host sees that server's _meta byte for byte. Each page of the gate's
// list carries it. Only the first page of each server's list is read.
//
// The host's own list _meta is not passed upstream: the gate answers a
// list from the catalog of its pool key, fetched once and shared by the
// key's sessions, not per request.

// listMetas is the last list-level _meta of each server's lists, for one
// pool key: kept with the key's catalog, and dropped with it.
type listMetas struct {
	mu sync.Mutex
	m  map[[2]string]json.RawMessage // (list method, server) → _meta, neutralised
}

// listMetaOf returns the callback that records s's list-level _meta of
// list (for upstream.PagesMeta).
func (g *Gate) listMetaOf(s *upstream.Session, list string) func(json.RawMessage) {
	return func(meta json.RawMessage) {
		if meta != nil {
			clean, err := g.neutralize(s.Name, list, list+" _meta", meta)
			if err != nil || len(clean) == 0 || clean[0] != '{' {
				meta = nil // a key with hidden characters, or not an object: left out
			} else {
				meta = clean
			}
		}
		g.mu.Lock()
		c := g.cats[s.Key]
		g.mu.Unlock()
		if c == nil {
			return
		}
		c.meta.mu.Lock()
		defer c.meta.mu.Unlock()
		if c.meta.m == nil {
			c.meta.m = map[[2]string]json.RawMessage{}
		}
		if meta == nil {
			delete(c.meta.m, [2]string{list, s.Name})
		} else {
			c.meta.m[[2]string{list, s.Name}] = append(json.RawMessage(nil), meta...)
		}
	}
}

// withListMeta adds the merged list-level _meta of the session's servers
// to a list result page: g.withListMeta(list)(g.page(...)).
func (g *Session) withListMeta(list string) func(json.RawMessage, error) (json.RawMessage, error) {
	return func(page json.RawMessage, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		return g.addListMeta(list, page)
	}
}

func (g *Session) addListMeta(list string, page json.RawMessage) (json.RawMessage, error) {
	g.Gate.mu.Lock()
	c := g.cats[g.childKey()]
	g.Gate.mu.Unlock()
	if c == nil {
		return page, nil
	}
	var metas []json.RawMessage
	c.meta.mu.Lock()
	for _, s := range g.pool.Names() {
		if m := c.meta.m[[2]string{list, s}]; m != nil {
			metas = append(metas, m)
		}
	}
	c.meta.mu.Unlock()
	merged := mergeMeta(metas)
	if merged == nil {
		return page, nil
	}
	return rawjson.Set(page, "_meta", merged)
}

// mergeMeta merges objects member by member: one given once, or alike
// (byte for byte) by all that give it, is kept; one given differently is
// left out. A single object is returned as it is.
func mergeMeta(metas []json.RawMessage) json.RawMessage {
	switch len(metas) {
	case 0:
		return nil
	case 1:
		return metas[0]
	}
	type member struct {
		key      string
		value    json.RawMessage
		conflict bool
	}
	var order []*member
	byKey := map[string]*member{}
	for _, m := range metas {
		_ = rawjson.Members(m, func(mem rawjson.Member) bool {
			if e := byKey[mem.Key]; e != nil {
				e.conflict = e.conflict || !bytes.Equal(e.value, mem.Value)
				return true
			}
			e := &member{key: mem.Key, value: mem.Value}
			byKey[mem.Key] = e
			order = append(order, e)
			return true
		})
	}
	out := []byte("{")
	n := 0
	for _, e := range order {
		if e.conflict {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = rawjson.AppendString(out, e.key)
		out = append(out, ':')
		out = append(out, e.value...)
		n++
	}
	if n == 0 {
		return nil
	}
	return append(out, '}')
}
