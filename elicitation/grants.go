package elicitation

import "sync"

// Grants remembers "approve for this session" answers of one host session.
// A grant covers one (server, tool) under one policy revision. The owner
// calls Reset with the new revision on every policy change: every grant is
// forgotten, since the rule that asked may be gone or stricter, and a grant
// that arrives late, from a question asked under an older revision, is
// ignored. Going back to an earlier policy does not bring grants back.
// Nothing is ever written to disk. Safe for concurrent use.
type Grants struct {
	mu       sync.Mutex
	revision string
	tools    map[grantKey]bool
}

type grantKey struct{ server, tool string }

// Reset forgets every grant; from now on only grants under revision count.
func (g *Grants) Reset(revision string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revision = revision
	g.tools = nil
}

// Grant records a session approval for (server, tool) given under
// revision. It is ignored unless revision is the current one.
func (g *Grants) Grant(revision, server, tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if revision != g.revision {
		return
	}
	if g.tools == nil {
		g.tools = map[grantKey]bool{}
	}
	g.tools[grantKey{server, tool}] = true
}

// Granted reports whether (server, tool) was approved for the session under
// revision, the current one.
func (g *Grants) Granted(revision, server, tool string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return revision == g.revision && g.tools[grantKey{server, tool}]
}
