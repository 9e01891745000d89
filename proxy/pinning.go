package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// Pinning: a call to a tool or prompt whose definition differs from the
// one pinned (package pins) is not relayed silently. The definition
// checked is the live one: a list seeded from the catalog cache, or
// fetched from a process that has since been replaced, is listed live
// first, so that a server changed between runs cannot slip a changed tool
// under its cached definition. What happens then is the policy's pins
// setting for the server: ask the human (showing what changed), deny, or
// allow (pinning the new definition, with an audit line).

// pinRule names the pin check in audit lines and refusals.
const pinRule = "pins"

// checkPin holds a call to its target's pinned definition. It runs before
// the policy decides, and only for calls the policy would not refuse
// outright (deciding is pure): a denied call starts no server.
func (g *Session) checkPin(ctx context.Context, pol *policy.Policy, t *target) verdict {
	store := g.opts.Pins
	if store == nil {
		return verdict{allow: true}
	}
	var l *lister
	var noun string
	switch t.kind {
	case policy.KindTool:
		l, noun = g.tools.lister, "tool"
	case policy.KindPrompt:
		l, noun = g.prompts.lister, "prompt"
	case policy.KindResource:
		l, noun = g.resLister, "resource template"
	default:
		return verdict{allow: true}
	}
	def, pinKey, found := pinnedDef(t.snap, t)
	if t.kind == policy.KindResource && !found {
		return verdict{allow: true} // a listed resource, not one a template makes
	}
	key := g.childKey()
	// The common case costs no start and no second decision: the list held
	// came from the running child.
	s := g.liveSession(l, key, t.server)
	if s == nil {
		if pol.Decide(policy.Call{Kind: t.kind, Server: t.server, Name: t.name, Args: t.args}).Verdict == policy.Deny {
			return verdict{allow: true} // decide refuses it, and audits why
		}
		var err error
		if s, err = g.pool.Session(ctx, key, t.server); err != nil {
			return verdict{allow: true} // the forward fails with why
		}
	}
	if !g.awaitLive(ctx, l, key, s) {
		if ctx.Err() != nil {
			// The request ended (the host cancelled it, its input ended
			// and the drain time ran out, the gate is stopping) while its
			// definition was being looked up: the pins decided nothing,
			// so it is no denial of theirs. It is on record as a request
			// that ends while resolve looks its name up is: a refusal
			// record of kind not_looked_up, written where its answer
			// leaves (refused.go); a host that cancelled it gets no answer.
			return verdict{err: refusedAs(refusedNotLookedUp, t.wire, fmt.Errorf("%s %s was not checked against its pinned definition: %w",
				kindName(t.kind), guard.Quote(t.wire, guard.ShowName), context.Cause(ctx)))}
		}
		return g.pinRefused(pol, t, fmt.Sprintf("mcp-gate could not list server %q to check %s against the definition approved before, so it does not run it", t.server, guard.Quote(t.wire, guard.ShowName)))
	}
	// The list is live now, but the call may have been resolved in an older
	// snapshot: one seeded from the cache, read just before a start's
	// refresh (refreshAfterRestart) made the list live. The definition held
	// to its pin is the live one, never the one the call was resolved in.
	if cur := g.catalog(); cur != t.snap {
		t.snap = cur
		def, pinKey, found = pinnedDef(t.snap, t)
		if t.kind == policy.KindResource && !found {
			return verdict{allow: true}
		}
	}
	if !found {
		return g.pinRefused(pol, t, fmt.Sprintf("server %q no longer lists the %s %s", t.server, noun, guard.Quote(t.name, guard.ShowName)))
	}
	state, pin, err := store.Check(t.server, pinKey, def.raw, def.digest)
	if err != nil {
		g.log.Error("pins unreadable; call refused", "server", t.server, "error", audit.Redact(err.Error()))
		return g.pinRefused(pol, t, fmt.Sprintf("mcp-gate cannot read the pins of server %q (%v), so it cannot tell whether %s is the %s that was approved; fix or remove the file", t.server, err, guard.Quote(t.wire, guard.ShowName), noun))
	}
	if state != pins.Changed {
		return verdict{allow: true}
	}
	if g.identity.Authenticated && g.personalPins.accepted(g.principal, t.server, pinKey) == def.digest {
		return verdict{allow: true} // this user approved this very definition before
	}
	_, defName, _ := strings.Cut(pinKey, ":")
	change := definitionChange(pin, def)
	what := fmt.Sprintf("the definition of %s %s on server %q changed since it was approved (pinned %s, now %s)", noun, guard.Quote(defName, guard.ShowName), t.server, pins.Short(pin.Digest), pins.Short(def.digest))
	id, digest := g.decisionIDDigest(t.args)
	logDecision := func(v policy.Verdict, reason string) error {
		return g.audit.Decision(audit.Decision{
			ID: id, Session: g.session, Kind: kindName(t.kind), Server: t.server, Tool: t.name, WireName: t.wire,
			Verdict: v.String(), Rule: pinRule, Reason: reason, Revision: pol.Revision(), ArgsDigest: digest,
		})
	}
	accept := func() {
		if err := store.Accept(t.server, pinKey, def.raw, def.digest); err != nil {
			g.log.Warn("pin not updated", "server", t.server, "error", audit.Redact(err.Error()))
		}
	}
	// A human's yes moves the gate's pin only when that human is the one
	// running the gate. A team user's yes (an identity a bearer token gave)
	// is theirs alone: the pins are every user's, and another user must not
	// find a changed definition already accepted on their behalf.
	humanAccept := func() {
		if g.identity.Authenticated {
			g.personalPins.accept(g.principal, t.server, pinKey, def.digest)
			return
		}
		accept()
	}
	refuse := func(why string) verdict {
		return verdict{reason: what + "; " + why + ". What changed:\n" + elicitation.ChangesView(change) +
			"\nTo accept it: mcp-gate pins accept " + guard.ShellArg(t.server+":"+defName)}
	}
	switch pol.PinAction(t.server) {
	case policy.Allow:
		if err := logDecision(policy.Allow, what+"; the policy's pins setting allows changes of this server"); err != nil {
			return unaudited("decision", pinRule, pol.Revision(), err)
		}
		accept()
		return verdict{allow: true}
	case policy.Deny:
		// A denial stands whether or not its record was written
		// (userAudit logged and counted a failure).
		_ = logDecision(policy.Deny, what+"; the policy's pins setting denies changes of this server")
		return refuse("the policy's pins setting refuses changed definitions of this server until they are accepted")
	}
	if err := logDecision(policy.Ask, what); err != nil {
		return unaudited("decision", pinRule, pol.Revision(), err)
	}
	req := elicitation.Request{
		Server: t.server, Tool: defName, Title: g.itemTitle(t.kind, t.server, t.name),
		Args: t.args, ArgsDigest: digest,
		Rule:    pinRule,
		Reason:  "the " + noun + "'s definition changed since it was approved; approving accepts the new definition",
		Titled:  g.hostCaps().protocolVersion >= "2025-11-25",
		Changed: change,
	}
	a := g.approver.Approve(ctx, req, pol.ApprovalTimeout())
	err = g.audit.Approval(audit.Approval{
		DecisionID: id, Session: g.session, Server: t.server, Tool: t.name, ArgsDigest: req.ArgsDigest,
		Outcome: string(a.Outcome), Detail: "definition change: " + a.Detail, Latency: a.Took,
	})
	if err != nil && a.Allowed() {
		return unaudited("approval", pinRule, pol.Revision(), err)
	}
	if !a.Allowed() {
		return refuse("approval was required and " + a.Detail)
	}
	humanAccept()
	return verdict{allow: true}
}

// pinRefused is checkPin's refusal of a call whose definition it could not
// check (its server could not be listed, no longer lists it, the pins
// cannot be read), on record as a denial by the pins (rule "pins"), as its
// refusal of a changed definition is: every call the pins refuse is in
// the audit log. The call is refused whether or not the record is
// written. A call that ended while it was being checked is no refusal of
// the pins' (checkPin).
func (g *Session) pinRefused(pol *policy.Policy, t *target, reason string) verdict {
	id, digest := g.decisionIDDigest(t.args)
	_ = g.audit.Decision(audit.Decision{
		ID: id, Session: g.session, Kind: kindName(t.kind), Server: t.server, Tool: t.name, WireName: t.wire,
		Verdict: policy.Deny.String(), Rule: pinRule, Reason: reason, Revision: pol.Revision(), ArgsDigest: digest,
	})
	return verdict{reason: reason}
}

// personalPins are the changed definitions team users approved, each for
// themselves (checkPin): principal, server and pin key → the digest
// approved. Held in memory: after a restart each user is asked again,
// until `mcp-gate pins accept` moves the gate's pin for everyone.
type personalPins struct {
	mu sync.Mutex
	m  map[string]string
}

func personalPinKey(principal, server, key string) string {
	return principal + "\x00" + server + "\x00" + key
}

// accepted returns the digest principal approved for server's key, "" when
// none.
func (p *personalPins) accepted(principal, server, key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[personalPinKey(principal, server, key)]
}

func (p *personalPins) accept(principal, server, key, digest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[personalPinKey(principal, server, key)] = digest
}

// pinnedDef finds, in snap, the definition a call reaches and its pin key:
// the tool or prompt it names, or the resource template that makes the URI
// it reads (found is false for a URI the server lists itself, and for one
// no template of the server makes).
func pinnedDef(snap *snapshot, t *target) (def *entry, key string, found bool) {
	switch t.kind {
	case policy.KindTool, policy.KindPrompt:
		kind, pk := kindTool, pins.KindTool
		if t.kind == policy.KindPrompt {
			kind, pk = kindPrompt, pins.KindPrompt
		}
		if l := snap.of(kind).servers[t.server]; l != nil {
			for i := range l.entries {
				if l.entries[i].name == t.name {
					return &l.entries[i], pins.Key(pk, t.name), true
				}
			}
		}
		return nil, "", false
	}
	l := snap.resources.servers[t.server]
	if l == nil {
		return nil, "", false
	}
	for _, r := range l.resources {
		if r.uri == t.name {
			return nil, "", false
		}
	}
	for _, tm := range l.templates {
		if tm.re.MatchString(t.name) {
			u, _ := rawjson.GetString(tm.raw, "uriTemplate")
			return &entry{name: u, raw: tm.raw, digest: pins.Digest(tm.raw)}, pins.Key(pins.KindTemplate, u), true
		}
	}
	return nil, "", false
}

// definitionChange is what the human is shown of a change: the pinned
// definition against the listed one.
func definitionChange(pin pins.Item, def *entry) *elicitation.DefinitionChange {
	c := &elicitation.DefinitionChange{Pinned: pins.Short(pin.Digest), Now: pins.Short(def.digest)}
	before := pin.Definition
	if len(before) == 0 {
		before = json.RawMessage(`{}`) // too large to have been kept: every value shows as new
	}
	changes, more := pins.Diff(before, def.raw)
	for _, ch := range changes {
		c.Changes = append(c.Changes, elicitation.Change{Path: ch.Path, Before: ch.Before, After: ch.After})
	}
	c.More = more
	return c
}

// defDigest is the digest of the definition of a tool or prompt in the
// session's catalog, "" for anything else: a session grant is bound to it,
// so that a grant does not outlive a change of what was approved.
func (g *Session) defDigest(k policy.Kind, server, name string) string {
	var n *named
	switch k {
	case policy.KindTool:
		n = g.catalog().tools
	case policy.KindPrompt:
		n = g.catalog().prompts
	default:
		return ""
	}
	if l := n.servers[server]; l != nil {
		for _, e := range l.entries {
			if e.name == name {
				return e.digest
			}
		}
	}
	return ""
}

// awaitLive makes l's list of s's server in key's catalog one fetched from
// s, and reports whether it is. A child that has just started is listed
// by its start's own refresh (refreshAfterRestart, which the pool runs on
// its own goroutine once the start is done: before, while or after this
// runs), through s: waiting for that fetch is enough, where asking for one
// more after it (as a list_changed does) listed the server twice before a
// first call. Only when the fetch joined leaves the list not live (it
// began through a child since replaced, or failed) is one more begun, and
// its result decides.
//
// Whether the list is live is asked again under Gate.mu before a fetch is
// joined or begun: a fetch through s that began and ended since the first
// look (the refresh's) has recorded it by then (fetched runs before the
// fetch is marked done); without that look, a second listing began here.
func (g *Session) awaitLive(ctx context.Context, l *lister, key string, s *upstream.Session) bool {
	if g.isLive(l, key, s) {
		return true
	}
	for _, again := range []bool{false, true} {
		g.Gate.mu.Lock()
		if g.isLive(l, key, s) {
			g.Gate.mu.Unlock()
			return true
		}
		st := l.state[child{key, s.Name}]
		joined := st != nil && st.running != nil
		w := g.startFetchLocked(l, key, s.Name, again)
		g.Gate.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
		if g.isLive(l, key, s) {
			return true
		}
		if !again && !joined {
			return false // begun here, after s ran, and still not live: the listing failed
		}
	}
	return false
}
