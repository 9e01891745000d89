package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// A Session is one host connection to a Gate: what its host declared (read
// per request), its "approve for this session" answers, its questions to
// the human, its progress routes, its subscriptions and its log level.
// Several sessions share one Gate, and with it the upstream children.
//
// A Session embeds its Gate, whose shared state it reads; fields of the
// same name (mu) are the session's own.
type Session struct {
	*Gate
	session  string   // identifies this host session in the audit log
	identity Identity // who the session acts for (WithIdentity)
	// principal is identity.Key(), which states bind: a hash, taken once
	// rather than at every 2026-07-28 question, retry and binding.
	principal string
	audit     userAudit // the Gate's audit log, each record naming the identity's subject

	host            *rpc.Conn // set by Serve before the first message is read
	approver        elicitation.Approver
	progress        progressRoutes
	grants          elicitation.Grants // "approve for this session" answers
	urlElicitations urlElicitations
	// pendingResults counts the bytes of upstream results being served to
	// this host and not yet handed to its queue (backpressure.go).
	pendingResults atomic.Int64
	hostCalls      hostCalls // the host requests in flight to each child
	era            eraState  // set when the host opened at 2026-07-28 (era.go)
	// hostInfo is what the host declared when it opened the session: a
	// snapshot, replaced whole under mu and never changed, so that every
	// request reads it with one load (several times per call: its pool
	// key, its capabilities) rather than a lock and a copy.
	hostInfo atomic.Pointer[hostInfo]

	mu           sync.Mutex      // guards what follows
	logLevel     string          // the host's last logging/setLevel level; "" lets everything through
	listedByHost map[string]bool // lists the host has fetched, so list_changed is worth sending
	subs         map[string]int  // resource URIs this host subscribed to
	reported     map[string]bool // start failures told to this host (trouble.go)
}

// NewSession returns a session of g, not yet serving.
func (g *Gate) NewSession(opts ...SessionOption) *Session {
	s := &Session{
		Gate:         g,
		session:      newSessionID(),
		approver:     g.opts.Approver,
		listedByHost: map[string]bool{},
		subs:         map[string]int{},
	}
	s.progress.routes = map[string]progressRoute{}
	s.progress.prefix = "mcp-gate-" + s.session + "-"
	s.grants.Reset(g.policy.Current().Revision())
	for _, o := range opts {
		o(s)
	}
	s.audit = userAudit{Logger: g.audit, user: s.identity.Subject, failed: s.auditFailed}
	s.principal = s.identity.Key()
	return s
}

// Serve runs one host session over r and w until the host closes its end
// or ctx is done, then stops every upstream: the stdio command is one
// session. It returns nil when the host ended the session normally.
func (g *Gate) Serve(ctx context.Context, r io.Reader, w io.Writer, opts ...SessionOption) error {
	err := g.NewSession(opts...).Serve(ctx, r, w)
	g.Close()
	return err
}

// Close stops every upstream, and waits for the catalog cache and pins
// being written.
func (g *Gate) Close() {
	g.pool.Close()
	g.flushPersist()
}

// Serve runs the session over r and w, newline-delimited messages as on
// stdio, until the host closes its end or ctx is done. The upstreams keep
// running for the other sessions. It returns nil when the host ended the
// session normally.
func (s *Session) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	// No closer: closing os.Stdin would not unblock a read from it.
	return s.ServeTransport(ctx, rpc.NewStream(r, w, nil, rpc.Limits{
		MaxMessageBytes: s.Gate.opts.MaxMessageBytes,
		// A host that stops reading gets no more work done for it
		// (backpressure.go).
		QueueBytes: HostQueueBytes,
	}))
}

// ServeTransport runs the session over any message transport (stdio lines,
// an in-memory pipe, later an HTTP front end), as Serve does.
func (s *Session) ServeTransport(ctx context.Context, t rpc.Transport) error {
	g := s.Gate
	s.host = rpc.New(t, hostHandler{s}, rpc.Options{
		Peer:           "host",
		Logger:         g.log,
		AnswerBadInput: true,
		OnBadInput:     s.badHostInput,
		Sequential:     func(method string) bool { return method == "initialize" },
		// A host that sends a request and closes stdin (a script, a pipe)
		// still gets its answer; MCP hosts close stdin to shut down and
		// send SIGTERM if they will not wait.
		Drain:        30 * time.Second,
		ResponseWait: HostResultWait,
		OnDropped:    s.resultDropped,
	})
	if s.approver == nil {
		canAsk := func() bool { return s.hostCaps().elicitForm }
		s.approver = elicitation.Channels{Host: elicitation.HostApprover{Host: s.host, CanAsk: canAsk}, HostCanAsk: canAsk, Local: g.opts.LocalApprover}
	}
	if s.identity.Authenticated {
		s.approver = teamApprover{inner: s.approver, id: s.identity}
	}
	g.mu.Lock()
	g.sessions[s.session] = s
	g.mu.Unlock()
	g.observeSession(+1)
	defer g.observeSession(-1)
	defer func() {
		g.mu.Lock()
		delete(g.sessions, s.session)
		g.mu.Unlock()
		g.releaseKey(s.childKey())
	}()
	pol := g.policy.Current()
	g.log.Log(ctx, s.lifeLevel(), "host session started", "session", s.session, "subject", s.identity.Subject, "user", s.identity.Name, "servers", g.pool.Names(), "policy", pol.Source(), "revision", pol.Revision())
	err := s.host.Run(ctx)
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		err = nil
	}
	g.log.Log(ctx, s.lifeLevel(), "host session ended", "session", s.session)
	return err
}

// liveSessions returns the sessions being served.
func (g *Gate) liveSessions() []*Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		out = append(out, s)
	}
	return out
}

// releaseKey forgets key and stops its children when no live session has
// it any more: no session is left to answer what they ask, and a session
// with roots has children nobody else will use.
func (g *Gate) releaseKey(key string) {
	if key == "" {
		return
	}
	// Under g.mu throughout, the pool's part included (it does not block):
	// a session that takes key after this starts new children, never one
	// of those being stopped.
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sessionsOfLocked(key)) > 0 {
		return
	}
	delete(g.upCaps, key)
	delete(g.upScope, key)
	delete(g.upLevel, key)
	delete(g.cats, key)
	g.forgetLive(key)
	// What the key's children failed at is news for the key's sessions
	// only: kept past them, one entry per key ever seen would stay.
	for c := range g.startFailed {
		if c.key == key {
			delete(g.startFailed, c)
		}
	}
	for c := range g.listFailed {
		if c.key == key {
			delete(g.listFailed, c)
		}
	}
	for _, l := range []*lister{g.tools.lister, g.prompts.lister, g.resLister} {
		for c, st := range l.state {
			if c.key == key && st.running == nil {
				delete(l.state, c)
			}
		}
	}
	g.pool.StopKey(key, "no host session uses it any more")
	g.releaseSharedLocked(key)
}

// sessionsOf returns the live sessions whose children are key's.
func (g *Gate) sessionsOf(key string) []*Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessionsOfLocked(key)
}

func (g *Gate) sessionsOfLocked(key string) []*Session {
	var out []*Session
	for _, s := range g.sessions {
		// A shared child's key (sharedPrefix) names every session sharing it.
		if k := s.childKey(); k == key || k != "" && sharedKeyOf(k) == key {
			out = append(out, s)
		}
	}
	return out
}

// childKey is the key of the session's upstream children (poolKey), set
// when its host initializes.
func (s *Session) childKey() string { return s.hostCaps().poolKey }

// child names one upstream child: server's, of one pool key.
type child struct{ key, server string }

// enter records that s has a request in flight to server's child of key,
// so that what that child asks meanwhile (sampling, elicitation, roots)
// goes to s; the returned entry's leave ends it. It is a value, not a
// closure: one is taken for every call.
func (g *Gate) enter(ctx context.Context, key, server string, s *Session) entered {
	c := child{key, server}
	s.hostCalls.add(c, ctx)
	g.mu.Lock()
	m := g.inflight[c]
	if m == nil {
		if n := len(g.spareInflight); n > 0 {
			m, g.spareInflight = g.spareInflight[n-1], g.spareInflight[:n-1]
		} else {
			m = map[*Session]int{}
		}
		g.inflight[c] = m
	}
	m[s]++
	g.mu.Unlock()
	return entered{g: g, s: s, c: c, ctx: ctx}
}

// entered is one request in flight to a child (Gate.enter).
type entered struct {
	g   *Gate
	s   *Session
	c   child
	ctx context.Context
}

// leave ends what enter recorded.
func (e entered) leave() {
	e.s.hostCalls.remove(e.c, e.ctx)
	g := e.g
	g.mu.Lock()
	m := g.inflight[e.c]
	if m[e.s]--; m[e.s] == 0 {
		delete(m, e.s)
	}
	if len(m) == 0 { // a map is replaced only once empty
		delete(g.inflight, e.c)
		if len(g.spareInflight) < maxSpareInflight {
			g.spareInflight = append(g.spareInflight, m) // empty: kept for the next enter
		}
	}
	g.mu.Unlock()
}

// maxSpareInflight bounds the empty maps Gate.spareInflight keeps.
const maxSpareInflight = 8

// sessionFor finds the session a child's request is for: the one with a
// request in flight to that child (server's, of key). Only sessions of the
// child's key can be: a child is never shared across identities or
// upstream-facing capabilities. A request outside any call is refused (but
// for roots/list, below), and so is one while several sessions' calls are
// in flight to the same child: stdio MCP does not say which call a server
// request belongs to, and the gate will not guess whose human or model to
// ask.
//
// A call counts as in flight from before the upstream is started until its
// forward returns, a moment after its response was read: a request sent
// right after the response may still go to that call's session, never to
// another's.
//
// roots/list outside a call (servers ask for roots once they are
// initialized, and again after roots/list_changed) goes to the session of
// the child's key: a host that declares roots has children of its own
// (poolKey), so there is at most one, and the roots a child acts on are
// always its own host's. A key without roots has no session that could
// answer, and the request is refused as outside any call.
func (g *Gate) sessionFor(key, server, method string) (*Session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var found []*Session
	for s := range g.inflight[child{key, server}] {
		found = append(found, s)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if method == "roots/list" {
			if own := g.sessionsOfLocked(key); len(own) == 1 && own[0].hostCaps().roots {
				return own[0], nil
			}
		}
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s outside any request from the gate: mcp-gate relays a server's requests only during a call to it", method)
	}
	return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s while calls of %d host sessions are in flight to this server: mcp-gate cannot tell which session it is for, so it asks none", method, len(found))
}

// logAdmits reports whether a log message at level is at or above the
// session's level (RFC 5424 severities, as MCP uses); a session that set no
// level, and a level the gate does not know, let it through.
func (s *Session) logAdmits(level string) bool {
	s.mu.Lock()
	min := s.logLevel
	s.mu.Unlock()
	i, j := slices.Index(logLevels, level), slices.Index(logLevels, min)
	return min == "" || i < 0 || j < 0 || i >= j
}

var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// subscribed counts the session's subscriptions to uri: subscribe adds
// one, unsubscribe clears it.
func (s *Session) subscribed(uri string, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delta < 0 {
		delete(s.subs, uri)
		return
	}
	s.subs[uri] += delta
}

func (s *Session) isSubscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri] > 0
}

// appendDecisionID appends the name of one decision in the audit log: the
// session and its sequence number.
func (s *Session) appendDecisionID(out []byte) []byte {
	out = append(out, s.session...)
	out = append(out, '-')
	return strconv.AppendUint(out, s.seq.Add(1), 10)
}

// decisionIDDigest is a decision's id and audit.Digest(args), the two
// strings every decision's record carries, made in one allocation (not
// fmt's three and the digest's one): two slices of one string, which live
// as long as the record's verdict does.
func (s *Session) decisionIDDigest(args []byte) (id, digest string) {
	var b [64 + audit.DigestLen]byte
	out := s.appendDecisionID(b[:0])
	n := len(out)
	both := string(audit.AppendDigest(out, args))
	return both[:n], both[n:]
}

// notifyListed tells every session of key that has fetched one of lists
// that notification's list changed.
func (g *Gate) notifyListed(key string, lists []string, notification string) {
	for _, s := range g.sessionsOf(key) {
		s.mu.Lock()
		listed := false
		for _, l := range lists {
			listed = listed || s.listedByHost[l]
		}
		s.mu.Unlock()
		if listed {
			s.notifyHost(notification, nil)
		}
	}
}

// progressSession finds the session a gate progress token belongs to.
func (g *Gate) progressSession(token json.RawMessage) *Session {
	var tok string
	if json.Unmarshal(token, &tok) != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.sessions {
		if strings.HasPrefix(tok, s.progress.prefix) {
			return s
		}
	}
	return nil
}
