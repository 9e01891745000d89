package proxy

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// DefaultListTimeout bounds one server's list requests (all pages), on top
// of the time the server may take to start.
const DefaultListTimeout = 15 * time.Second

// lister keeps one kind of list (tools, prompts, resources) in step with the
// upstreams. Per server, at most one fetch runs at a time; a change
// announced while it runs makes it fetch once more afterwards, so a burst of
// list_changed costs two fetches, not one each. Every fetch is bounded, so a
// server that never answers delays a list by the timeout and hides nothing
// else (issue #2).
type lister struct {
	// Set at construction.
	list     string   // the host method, for logs
	notify   string   // the host notification when the list changed
	listedBy []string // the host lists whose fetching makes notify worth sending
	// fetch lists one child. It runs without locks; apply, which it
	// returns, builds the next catalog snapshot of the child's key from the
	// one in force (under the key's keyCatalog.mu), or returns nil when
	// what the host would see is unchanged.
	fetch func(ctx context.Context, s *upstream.Session) (apply func(*snapshot) *snapshot, err error)
	// loaded reports whether a snapshot holds a server's list.
	loaded func(snap *snapshot, server string) bool

	state map[child]*listState // guarded by Gate.mu
}

type listState struct {
	running chan struct{} // closed when the fetch under way ends; nil when none runs
	again   bool          // fetch once more when the current one ends
	// through is the child the fetch under way lists, nil until it has
	// one; want, a child that started meanwhile (refreshStarted), makes
	// the fetch run once more unless that is the child it got.
	through, want *upstream.Session
	// taken says the fetch under way has taken its child from the pool,
	// or failed to (through nil then): a child started after that is not
	// one it will list.
	taken bool
}

// ensure fetches the lists not held yet of the given servers (all when none
// is given), starting the session's children as needed, and waits for them
// or for ctx.
//
// The catalog is the session's key's, listed through the key's children.
func (s *Session) ensure(ctx context.Context, l *lister, only ...string) {
	g, key := s.Gate, s.childKey()
	names := only
	if len(names) == 0 {
		names = g.pool.Names()
	}
	var waits []chan struct{}
	snap := g.catalogOf(key)
	g.mu.Lock()
	for _, server := range names {
		if !l.loaded(snap, server) {
			waits = append(waits, g.startFetchLocked(l, key, server, false))
		}
	}
	g.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

// refresh re-fetches a server's list after it announced a change or
// restarted. A list the gate does not hold yet is left for the next list
// request.
func (g *Gate) refresh(l *lister, key, server string) {
	snap := g.catalogOf(key)
	g.mu.Lock()
	defer g.mu.Unlock()
	if l.loaded(snap, server) {
		g.startFetchLocked(l, key, server, true)
	}
}

// refreshStarted is refresh for a child s that has just started, which may
// list differently from the one before it. A fetch that has listed s
// already, one under way that lists s, or one that has yet to take its
// child from the pool (it gets s then, or a later one), serves: a first
// call that starts a server and waits for its live list (the pin check,
// awaitLive) then causes one listing, not two.
//
// The pool calls upstreamStarted on its own goroutine once the start is
// done, so this may run before the fetch awaitLive begins, while it runs,
// or after it has ended; in the last order only the record of what was
// fetched from s (isLive) tells that s was listed.
func (g *Gate) refreshStarted(l *lister, key string, s *upstream.Session) {
	snap := g.catalogOf(key)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !l.loaded(snap, s.Name) || g.isLive(l, key, s) {
		return
	}
	if st := l.state[child{key, s.Name}]; st != nil && st.running != nil {
		switch {
		case st.taken && st.through == s:
			return
		case !st.taken:
			st.want = s
			return
		}
	}
	g.startFetchLocked(l, key, s.Name, true)
}

// startFetchLocked starts a fetch of server's list unless one runs, and
// returns a channel that is closed when the fetch under way ends; the fetch
// goes through server's child of key. The caller holds Gate.mu.
func (g *Gate) startFetchLocked(l *lister, key, server string, again bool) chan struct{} {
	st := l.state[child{key, server}]
	if st == nil {
		st = &listState{}
		l.state[child{key, server}] = st
	}
	if st.running != nil {
		st.again = st.again || again
		return st.running
	}
	done := make(chan struct{})
	st.running = done
	go g.runFetch(l, key, server, st, done)
	return done
}

func (g *Gate) runFetch(l *lister, key, server string, st *listState, done chan struct{}) {
	for {
		// Not the caller's context: the fetch is shared by whoever waits
		// for it, and one that gives up must not cut it short for others.
		ctx, cancel := context.WithTimeout(context.Background(), g.opts.StartTimeout+g.opts.ListTimeout)
		var apply func(*snapshot) *snapshot
		s, err := g.pool.Session(ctx, g.childKeyFor(key, server), server)
		g.mu.Lock()
		st.through, st.taken = s, true
		if st.want != nil && st.want != s {
			st.again = true
		}
		st.want = nil
		g.mu.Unlock()
		g.noteStart(key, server, err)
		if err == nil {
			apply, err = l.fetch(ctx, s)
			g.noteListed(key, server, err)
		}
		cancel()
		changed := false
		if err == nil {
			// Published before the fetch is marked done, so that whoever
			// waited for it finds the list in the snapshot.
			changed = g.updateCatalog(key, apply)
			g.fetched(l, key, s)
		}
		g.mu.Lock()
		again := st.again
		st.again = false
		st.through, st.taken = nil, false
		if !again {
			st.running = nil
			// The key was released meanwhile (releaseKey leaves a running
			// fetch's state to it): forget it, or every key a session
			// ever had would keep an entry.
			if c := (child{key, server}); g.cats[key] == nil && l.state[c] == st {
				delete(l.state, c)
			}
		}
		g.mu.Unlock()
		if err != nil {
			level := slog.LevelWarn
			if s != nil {
				select {
				case <-s.Done(): // stopped meanwhile: nothing to re-list
					level = slog.LevelDebug
				default:
				}
			}
			g.log.Log(context.Background(), level, "upstream left out of "+l.list, "server", server, "error", err)
		}
		if changed {
			g.notifyListed(key, l.listedBy, l.notify)
		}
		if !again {
			close(done)
			return
		}
	}
}
