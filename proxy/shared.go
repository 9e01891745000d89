package proxy

import "strings"

// Shared servers (`"shared": true` in the servers file) have one child per
// upstream-facing profile instead of one per identity and profile: the
// operator says the server keeps nothing of one user that another could
// see. Everything else stays per session key (poolKey): each key lists the
// shared child into its own catalog, and the policy, approvals and audit
// are the calling session's. What the shared child sends on its own (log
// lines, resource updates, list changes) goes to every session it serves;
// a request of it during calls of several sessions is refused, as for any
// child (sessionFor). A host that declares roots still gets children of its
// own: its profile, and so its shared key, names its session.
//
// The key of a shared child is the profile part of the sessions' keys,
// behind sharedPrefix; a session key never starts with it (an identity's
// key is hex).
const sharedPrefix = "shared-"

// sharedKeyOf returns the key of the shared children of the sessions whose
// key is key.
func sharedKeyOf(key string) string {
	return sharedPrefix + key[strings.LastIndexByte(key, '-')+1:]
}

// isShared reports whether server's entry says it may be shared. The list
// of servers is short and fixed for the Gate's life.
func (g *Gate) isShared(server string) bool {
	for _, c := range g.opts.Servers {
		if c.Name == server {
			return c.Shared
		}
	}
	return false
}

// childKeyFor returns the pool key of server's child for the sessions of
// key: key itself, or their shared key for a shared server.
func (g *Gate) childKeyFor(key, server string) string {
	if key == "" || !g.isShared(server) {
		return key
	}
	return sharedKeyOf(key)
}

// anyShared reports whether some server may be shared.
func (g *Gate) anyShared() bool {
	for _, c := range g.opts.Servers {
		if c.Shared {
			return true
		}
	}
	return false
}

// keysServed returns the session keys a child of key serves: key itself,
// or for a shared child the keys of the live sessions sharing it. Their
// catalogs list it.
func (g *Gate) keysServed(key string) []string {
	if !strings.HasPrefix(key, sharedPrefix) {
		return []string{key}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, s := range g.sessions {
		if k := s.childKey(); k != "" && sharedKeyOf(k) == key && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// releaseSharedLocked stops the shared children of key's sessions when no
// live session shares them any more. The caller holds Gate.mu.
func (g *Gate) releaseSharedLocked(key string) {
	if !g.anyShared() {
		return
	}
	sk := sharedKeyOf(key)
	if len(g.sessionsOfLocked(sk)) > 0 {
		return
	}
	delete(g.upCaps, sk)
	delete(g.upLevel, sk)
	g.pool.StopKey(sk, "no host session uses it any more")
}

// ownsResourceServed reports whether server owns uri in the catalog of a
// key the child of key serves.
func (g *Gate) ownsResourceServed(key, server, uri string) bool {
	for _, k := range g.keysServed(key) {
		if g.ownsResource(k, server, uri) {
			return true
		}
	}
	return false
}
