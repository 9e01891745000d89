package elicitation

import "sync"

// Grants remembers "approve for this session" answers of one host session.
// A grant covers one (server, tool) under one policy revision: when the
// policy changes, every grant is forgotten, since the rule that asked may be
// gone or stricter. Nothing is ever written to disk. Safe for concurrent use.
type Grants struct {
	mu       sync.Mutex
	revision string
	tools    map[grantKey]bool
}

type grantKey struct{ server, tool string }

// Grant records a session approval for (server, tool) under revision.
func (g *Grants) Grant(revision, server, tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resetLocked(revision)
	g.tools[grantKey{server, tool}] = true
}

// Granted reports whether (server, tool) was approved for the session under
// revision.
func (g *Grants) Granted(revision, server, tool string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resetLocked(revision)
	return g.tools[grantKey{server, tool}]
}

// Reset forgets every grant.
func (g *Grants) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tools = nil
	g.revision = ""
}

func (g *Grants) resetLocked(revision string) {
	if g.tools == nil || g.revision != revision {
		g.tools = map[grantKey]bool{}
		g.revision = revision
	}
}
