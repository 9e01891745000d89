package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Parked calls: an older (2025-11-25) upstream's questions during a
// 2026-07-28 host's call.
//
// The older upstream asks by sending a request of its own (elicitation,
// roots) while the call is in flight, and waits for the answer. A
// 2026-07-28 host has no server-to-client requests: it can only be given
// the question as an input request of the call's result. So a modern
// host's tools/call, prompts/get and resources/read run their forward
// beside the host request instead of in it (forwardModern, newParkable):
// when the upstream asks, the host request is answered with an
// input-required result carrying the question (after vetElicitation's
// guard, label and neutraliser: hostQuestion) and a
// requestState of the parked kind (elicitation.MintParked), while the
// upstream call keeps waiting, parked, under a context of its own. The
// host's retry, decided afresh under the policy in force (run), redeems
// the state (bound to the principal, the method, the tool, the canonical
// arguments, the policy revision, the parked call and the round, single
// use), hands the answer to the waiting upstream request, and waits in
// turn: for the result, which then passes the result guard on the retry
// (with the answers exempted as the older era's are), or for the next
// question.
//
// A parked call is cancelled (the upstream gets notifications/cancelled)
// when its state's time runs out (the policy's approval timeout), when a
// retry carrying its state is refused for any reason (a denial, another
// call's arguments, a bad answer), and when the host withdraws the request
// waiting on it. Its forward is bounded by the server's callTimeout from
// the forward, across all its rounds (Session.forward, under the call's
// own context): when that runs out while a question is with the host, the
// upstream is cancelled then, its question is answered with an error at
// once (finish), the host's answer is no longer delivered, and the retry
// that comes gets the call's outcome, the timeout error (claim), as it
// would have waiting. The table is bounded: so many calls may wait on their
// hosts at once, per principal and in all, and a question beyond that is
// refused.
//
// An upstream's request is tied to a call only by timing (stdio MCP has no
// other link), so it is relayed only while exactly one call of the
// principal is in flight to that upstream (the principal's children are
// shared by all its connections and POSTs); with more, it is refused as
// ambiguous rather than put to the wrong call.
//
// Almost no call is ever asked a question, so a call costs the table
// nothing until one is: it is found through its session's calls in flight
// (hostCalls, whose contexts carry it), it finishes or is withdrawn by an
// atomic step of its own, and only its first question mints its id, puts
// it in the table and digests its arguments for the binding. A call to a
// child of revision 2026-07-28, which asks only by its result
// (era_relayed.go), does not run beside its request at all.

// Bounds of the parked table.
const (
	maxParkedCalls        = 1024
	maxParkedPerPrincipal = 16
)

// parkedInput are the methods a 2026-07-28 result may answer with input
// required, and so the ones whose calls can park.
var parkedInput = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// parkedTable holds a gate's parked calls: those asked a question. The
// zero value is ready; one mutex guards the table and the state of every
// call in it.
type parkedTable struct {
	mu    sync.Mutex
	calls map[string]*parkedCall // by id, from the first question until the call is ended
	// Bounds (0: the defaults); tests lower them.
	max, maxPer int
}

// A parkable call's life before any question, an atomic of its own so
// that a call never asked touches no lock of the gate's. Once a question
// comes it is tabled, for good, and the table's mu guards it.
const (
	callRunning   int32 = iota // forwarding, not asked
	callFinished               // the forward ended before any question
	callWithdrawn              // its host request withdrew before any question
	callTabled                 // asked: in the table, its state under the table's mu
)

// parkedCall is one 2026-07-28 call whose forward runs beside its host
// requests.
type parkedCall struct {
	id string // minted at the first question (tableLocked)
	// principal is owner's identity key, taken at the first question
	// (ask) for a call forwardModern opens.
	principal string
	c         child
	// binding is what its parked states bind; until bound, all of it but
	// the principal and the digest of args, which the first question
	// computes (bindingOf).
	binding elicitation.Binding
	bound   bool
	args    json.RawMessage
	ctx     context.Context
	cancel  context.CancelCauseFunc
	vals    callCtx       // ctx's parent, in the call's own allocation
	rc      *relayedCall  // the call's relayed rounds (era_relayed.go), or nil
	rcStore relayedCall   // what rc points to, for a call forwardModern opens
	wake    chan struct{} // cap 1: something for the waiting host request
	state   atomic.Int32  // callRunning, …: before any question, without the table
	// hold counts the forward's result bytes against owner's budget
	// (backpressure.go) until a host request takes the result, which moves
	// them to its own session and request (takeHold).
	hold      *resultHold
	holdStore resultHold // what hold points to, for a call forwardModern opens
	owner     *Session
	// tok is the progress token of the host request waiting on the call
	// now (the first, then each retry that resumes it), nil while none
	// waits: its progress goes there, or nowhere (progressRoutes.lookup).
	tok atomic.Pointer[json.RawMessage]

	// Written by the forward before it finishes (finish), read once it has.
	res json.RawMessage
	err error

	// Guarded by the table's mu once tabled.
	round   int       // questions handed to the host so far
	pending *question // the upstream's question, unanswered
	// asked is the question handed to the host for the current round: a
	// retry of that round answers it and no other, so an answer never
	// reaches a question the host was not shown (one the upstream asked
	// after withdrawing the handed one).
	asked   *question
	parked  bool     // pending is with the host, and no host request waits
	caps    hostInfo // what the host request waiting (or last waiting) declared
	timer   *time.Timer
	answers []parkedAnswer // the host's elicitation answers, for the result guard
	done    bool
	ended   bool // taken out of the table
}

// callCtx is what a parkable call's forward runs under, below its own
// cancellation: the host request's values without its cancellation (as
// context.WithoutCancel, whose Value boxes its context anew at every
// lookup that passes through it), and the call's own: its result hold,
// its relayed rounds, and the call itself, by which an upstream's question
// finds it among its session's calls in flight (parkableIn). Its Done is
// nil, so the cancellation made on it (newParkable) never looks through
// it for a parent's.
type callCtx struct {
	parent context.Context
	pc     *parkedCall
}

func (*callCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*callCtx) Done() <-chan struct{}       { return nil }
func (*callCtx) Err() error                  { return nil }

// parkableKey finds the parkable call a forward's context belongs to.
type parkableKey struct{}

func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case parkableKey:
		return c.pc
	case resultHoldKey:
		if c.pc.hold != nil {
			return c.pc.hold
		}
	case relayedKey:
		if c.pc.rc != nil {
			return c.pc.rc
		}
	}
	return c.parent.Value(key)
}

// question is an upstream's request, as the host is to see it.
type question struct {
	method string
	id     json.RawMessage // the upstream's request id
	params json.RawMessage
	reply  chan json.RawMessage // cap 1
}

// Why a parked call was cancelled.
var (
	errParkedExpired   = errors.New("the host did not answer the upstream's question within the approval timeout")
	errParkedWithdrawn = errors.New("the host withdrew the request waiting on the call")
	// errParkedFinished ends a question still with the host when the
	// forward ends without its answer (its callTimeout, say): it cannot
	// be answered any more.
	errParkedFinished = errors.New("the call it was asked in ended")
)

func (t *parkedTable) bounds() (int, int) {
	m, p := t.max, t.maxPer
	if m <= 0 {
		m = maxParkedCalls
	}
	if p <= 0 {
		p = maxParkedPerPrincipal
	}
	return m, p
}

// newParkable is a call of principal to c, not bound yet, whose relayed
// rounds are rc's; its forward runs under pc.ctx.
func newParkable(parent context.Context, principal string, c child, caps hostInfo, rc *relayedCall) *parkedCall {
	pc := &parkedCall{principal: principal, c: c, rc: rc, wake: make(chan struct{}, 1), caps: caps}
	pc.vals = callCtx{parent: parent, pc: pc}
	pc.ctx, pc.cancel = context.WithCancelCause(&pc.vals)
	return pc
}

// tableLocked puts pc, asked its first question, in the table, under an
// id minted now: from here on the table's mu guards its state. It is false
// when the call finished or was withdrawn first.
func (t *parkedTable) tableLocked(pc *parkedCall) bool {
	if !pc.state.CompareAndSwap(callRunning, callTabled) {
		return false
	}
	var n [16]byte
	_, _ = rand.Read(n[:])
	pc.id = hex.EncodeToString(n[:])
	if t.calls == nil {
		t.calls = map[string]*parkedCall{}
	}
	t.calls[pc.id] = pc
	return true
}

// bindingOf is what pc's parked states bind: on its first question, the
// digest of its arguments is computed and kept.
func (t *parkedTable) bindingOf(pc *parkedCall) (elicitation.Binding, error) {
	t.mu.Lock()
	b, bound, args := pc.binding, pc.bound, pc.args
	t.mu.Unlock()
	if bound {
		return b, nil
	}
	b.Principal = pc.principal // taken under the lock at its question, which came first
	d, err := elicitation.CanonicalDigest(args)
	if err != nil {
		return b, err
	}
	b.ArgsDigest = d
	t.mu.Lock()
	pc.binding, pc.bound, pc.args = b, true, nil
	t.mu.Unlock()
	return b, nil
}

func (pc *parkedCall) poke() {
	select {
	case pc.wake <- struct{}{}:
	default:
	}
}

// finish records the forward's outcome. A call never asked takes no lock.
func (t *parkedTable) finish(pc *parkedCall, res json.RawMessage, err error) {
	pc.res, pc.err = res, err // read only once done or finished is seen
	if pc.state.CompareAndSwap(callRunning, callFinished) {
		pc.poke()
		return
	}
	if pc.state.Load() == callWithdrawn {
		pc.releaseHold() // nobody will take it
		return
	}
	t.mu.Lock()
	pc.done = true
	if pc.ended {
		pc.releaseHold() // nobody will take it
	}
	t.mu.Unlock()
	// A question still with the host is moot: the upstream's request is
	// answered now (ask) rather than held until the question expires, and
	// the host's answer is not delivered (answer). The call stays in the
	// table, counted, until a retry takes its outcome (claim) or its state
	// expires.
	pc.cancel(errParkedFinished)
	pc.poke()
}

// endLocked takes pc out of the table and cancels whatever of it still
// runs, with cause (nil once its result was taken).
func (t *parkedTable) endLocked(pc *parkedCall, cause error) {
	if pc.timer != nil {
		pc.timer.Stop()
	}
	if !pc.ended {
		pc.ended = true
		delete(t.calls, pc.id)
	}
	if cause != nil {
		pc.cancel(cause)
		pc.releaseHold()
	} else {
		pc.cancel(context.Canceled)
	}
}

// releaseHold gives back what the forward's result holds of its owner's
// budget: the result will reach no host.
func (pc *parkedCall) releaseHold() {
	if pc.hold != nil && pc.owner != nil {
		pc.owner.pendingResults.Add(-pc.hold.n.Swap(0))
	}
}

// takeHold moves what pc's result holds of its owner's budget to the host
// request in ctx, of g, which now delivers it (and gives it back when its
// response is queued, as for any result).
func (g *Session) takeHold(ctx context.Context, pc *parkedCall) {
	if pc.hold == nil || pc.owner == nil {
		return
	}
	n := pc.hold.n.Swap(0)
	pc.owner.pendingResults.Add(-n)
	if h, _ := ctx.Value(resultHoldKey{}).(*resultHold); h != nil && n != 0 {
		g.pendingResults.Add(n)
		h.n.Add(n)
	}
}

func (t *parkedTable) end(pc *parkedCall, cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLocked(pc, cause)
}

// withdraw ends pc for its host request, which withdrew while it waited:
// the forward is cancelled, with errParkedWithdrawn, as end does.
func (t *parkedTable) withdraw(pc *parkedCall) {
	if pc.state.CompareAndSwap(callRunning, callWithdrawn) || pc.state.Load() == callFinished {
		// Never asked, so never tabled: what endLocked would do.
		pc.cancel(errParkedWithdrawn)
		pc.releaseHold()
		return
	}
	t.end(pc, errParkedWithdrawn)
}

// parkableIn returns s's parkable calls in flight to c: the forwards
// running under a parkable call's context (forwardModern). An upstream's
// request during a call is for s only when s is the one session with calls
// in flight to c (sessionFor), so these are all of them.
func (s *Session) parkableIn(c child) []*parkedCall {
	h := &s.hostCalls
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*parkedCall
	for _, ctx := range h.calls[c] {
		if pc, _ := ctx.Value(parkableKey{}).(*parkedCall); pc != nil {
			out = append(out, pc)
		}
	}
	return out
}

// ask hands the upstream's question q to pc's host and waits for the
// answer; ctx is the upstream request's.
func (t *parkedTable) ask(ctx context.Context, pc *parkedCall, q *question) (json.RawMessage, error) {
	var principal string
	if pc.owner != nil && pc.state.Load() == callRunning {
		principal = pc.owner.principal // its first question: not under the lock
	}
	t.mu.Lock()
	if pc.principal == "" {
		pc.principal = principal
	}
	switch st := pc.state.Load(); {
	case st == callFinished || st == callWithdrawn || pc.done || pc.ended:
		t.mu.Unlock()
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s after the call it was for ended", q.method)
	case pc.pending != nil:
		t.mu.Unlock()
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s while an earlier question of the same call is still with the host: mcp-gate relays one question at a time to a %s host", q.method, ModernVersion)
	}
	maxAll, maxPer := t.bounds()
	all, per := 0, 0
	for _, o := range t.calls {
		if o.pending != nil {
			all++
			if o.principal == pc.principal {
				per++
			}
		}
	}
	if all >= maxAll || per >= maxPer {
		t.mu.Unlock()
		return nil, rpc.Errorf(rpc.CodeInternalError, "%s refused: %d calls of this user (%d in all) already wait on their host's answer, the most mcp-gate keeps (%d per user, %d in all)", q.method, per, all, maxPer, maxAll)
	}
	if pc.state.Load() != callTabled && !t.tableLocked(pc) {
		t.mu.Unlock() // it finished, or was withdrawn, as the question came
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s after the call it was for ended", q.method)
	}
	pc.pending = q
	t.mu.Unlock()
	pc.poke()
	select {
	case ans := <-q.reply:
		return ans, nil
	case <-pc.ctx.Done():
		if cause := context.Cause(pc.ctx); cause != errParkedFinished {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: the call it was asked in was cancelled: %v", q.method, cause)
		}
		return nil, rpc.Errorf(rpc.CodeInternalError, "%s: %v before the host answered", q.method, errParkedFinished)
	case <-ctx.Done():
		t.mu.Lock()
		if pc.pending == q {
			pc.pending = nil
		}
		t.mu.Unlock()
		return nil, ctx.Err()
	}
}

// wait waits, for the host request in ctx, for pc's next question or its
// end. A question parks the call for ttl and is returned with its round;
// the end is returned as the forward's result and takes pc out of the
// table. The host withdrawing the request cancels the call.
func (t *parkedTable) wait(ctx context.Context, pc *parkedCall, ttl time.Duration) (q *question, round int, res json.RawMessage, err error) {
	for {
		switch pc.state.Load() {
		case callFinished: // never asked: what endLocked(pc, nil) would do
			pc.cancel(context.Canceled)
			return nil, 0, pc.res, pc.err
		case callTabled:
			if q, round, res, err, ok := t.waitLocked(pc, ttl); ok {
				return q, round, res, err
			}
		}
		select {
		case <-pc.wake:
		case <-pc.ctx.Done():
			// The table cancels it (a withdrawal returns below), or the
			// forward's finish, whose outcome is then ready.
			pc.poke() // read the outcome the forward will record
			select {
			case <-pc.wake:
			case <-ctx.Done():
			}
			t.mu.Lock()
			if pc.state.Load() == callTabled && !pc.done {
				t.endLocked(pc, context.Cause(pc.ctx))
			}
			t.mu.Unlock()
		case <-ctx.Done():
			t.withdraw(pc)
			return nil, 0, nil, ctx.Err()
		}
	}
}

// waitLocked is wait's look at a tabled call, under the table's mu: ok
// when there is something to return.
func (t *parkedTable) waitLocked(pc *parkedCall, ttl time.Duration) (q *question, round int, res json.RawMessage, err error, ok bool) {
	t.mu.Lock()
	{
		switch {
		case pc.done:
			res, err = pc.res, pc.err
			t.endLocked(pc, nil)
			t.mu.Unlock()
			return nil, 0, res, err, true
		case pc.ended:
			cause := context.Cause(pc.ctx)
			t.mu.Unlock()
			return nil, 0, nil, rpc.Errorf(rpc.CodeInternalError, "the call ended: %v", cause), true
		case pc.pending != nil && pc.pending != pc.asked: // not handed to a host yet
			pc.parked = true
			pc.asked = pc.pending
			pc.round++
			round = pc.round
			pc.timer = time.AfterFunc(ttl, func() {
				t.mu.Lock()
				defer t.mu.Unlock()
				if pc.parked && pc.round == round {
					t.endLocked(pc, errParkedExpired)
				}
			})
			q = pc.pending
			t.mu.Unlock()
			return q, round, nil, nil, true
		}
	}
	t.mu.Unlock()
	return nil, 0, nil, nil, false
}

// claim takes the parked call id, for a retry of principal answering
// round, out of its park: no other retry can, and its timer stops.
func (t *parkedTable) claim(id, principal string, round int, caps hostInfo) (*parkedCall, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.calls[id]
	if pc == nil || pc.principal != principal {
		return nil, errors.New("the call that asked is no longer waiting (it expired, was cancelled, or ended)")
	}
	// A call whose forward ended while parked (its callTimeout ran out, or
	// it answered without the answer) has its outcome for this retry, even
	// if the upstream withdrew its question as it ended.
	if !pc.parked || pc.round != round || !pc.done && (pc.pending == nil || pc.pending != pc.asked) {
		return nil, errors.New("no question of that call is waiting on this requestState")
	}
	pc.parked = false
	pc.caps = caps
	if pc.timer != nil {
		pc.timer.Stop()
	}
	return pc, nil
}

// answer gives the claimed call's question the host's answer, if it is
// still the one the host was shown (the upstream may have withdrawn it
// since claim, and asked another); else the answer goes nowhere, and the
// upstream's own withdrawal stands.
func (t *parkedTable) answer(pc *parkedCall, ans json.RawMessage) {
	t.mu.Lock()
	q := pc.pending
	if q == nil || q != pc.asked || pc.done {
		// Withdrawn, or the call ended: its upstream request was answered
		// already (finish).
		t.mu.Unlock()
		return
	}
	pc.pending, pc.asked = nil, nil
	if q.method == "elicitation/create" && len(pc.answers) < maxElicitAnswers {
		pc.answers = append(pc.answers, parkedAnswer{id: q.id, res: ans})
	}
	t.mu.Unlock()
	q.reply <- ans
}

// settle cancels the parked call id if it still waits on round for
// principal: the request that carried that round's state is over and did
// not resume it (it was refused, for whatever reason).
func (t *parkedTable) settle(id, principal string, round int, cause error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.calls[id]
	if pc == nil || pc.principal != principal || !pc.parked || pc.round != round {
		return false
	}
	t.endLocked(pc, cause)
	return true
}

func (t *parkedTable) hostCaps(pc *parkedCall) hostInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return pc.caps
}

func (t *parkedTable) answersOf(pc *parkedCall) []parkedAnswer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]parkedAnswer(nil), pc.answers...)
}

// parkedAnswer is the host's answer to an upstream's elicitation of a
// parked call, and the upstream's id of that request.
type parkedAnswer struct {
	id, res json.RawMessage
}

// gateAnswer is an answer of the gate's own coming out of a send: a parked
// call's question, or the refusal of a retry. run returns it as it is,
// unguarded: the result guard is for what upstreams say.
type gateAnswer struct{ res json.RawMessage }

func (*gateAnswer) Error() string { return "an answer of mcp-gate's own" }

// asGateAnswer finds a gateAnswer in err. The target errors.As fills
// escapes to the heap, so it is declared only once there is an error: in
// Session.run's own scope it would cost an allocation on every call.
func asGateAnswer(err error) (*gateAnswer, bool) {
	if err == nil {
		return nil, false
	}
	var own *gateAnswer
	if errors.As(err, &own) {
		return own, true
	}
	return nil, false
}

// forwardModern forwards a 2026-07-28 host's decided request. A request
// that can carry an input-required result runs as a parkable call, unless
// its upstream is of revision 2026-07-28 and so cannot ask mid-call; a
// retry carrying a parked question's state resumes the call that asked.
func (g *Session) forwardModern(ctx context.Context, m *modernReq, r *relay, t target) (json.RawMessage, error) {
	if !parkedInput[r.method] {
		return g.forwardRounds(ctx, t.server, r.method, t.fwd)
	}
	var rc relayedCall
	if m.hasState {
		// A retry: its state is checked against the binding now.
		b, err := g.parkBinding(r.method, t, m)
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: %v", r.method, err)
		}
		rc = relayedCall{binding: b, bound: true}
		if done, res, err := g.resumeModern(ctx, m, r, &t, b, &rc); done { // era_retry.go
			return res, err
		}
	} else {
		// The principal's key and the arguments' digest are computed
		// only if a state is minted: most calls are never asked anything.
		rc = relayedCall{binding: g.bindingSans(r.method, t), args: t.args}
	}
	key := g.childKeyFor(g.childKey(), t.server)
	if g.pool.RunningEra(key, t.server) == ModernVersion {
		// The child asks only by its result, which forwardRounds relays
		// (era_relayed.go): the call cannot park, so it runs in the host
		// request, as an older host's does, and ends with it.
		return g.forwardRounds(&relayedCtx{Context: ctx, call: rc}, t.server, r.method, t.fwd)
	}
	// The forward outlives this host request once parked: not its
	// cancellation, and a result hold of its own (the result may be
	// delivered to another request, over HTTP another session: takeHold).
	pc := newParkable(ctx, "", child{key, t.server}, m.caps, nil)
	pc.binding, pc.bound, pc.args = rc.binding, rc.bound, rc.args
	pc.rcStore = rc
	pc.rc, pc.hold, pc.owner = &pc.rcStore, &pc.holdStore, g
	pc.waitedBy(t.fwd)
	server, method, fwd := t.server, r.method, t.fwd // not t: it stays on this stack
	go func() {
		res, err := g.forwardRounds(pc.ctx, server, method, fwd)
		g.parked.finish(pc, res, err)
	}()
	return g.waitParked(ctx, m, t, pc)
}

// waitedBy records that the host request whose params are fwd now waits
// on pc: the call's progress goes to it, under its own progress token (or
// nowhere, if it gave none).
func (pc *parkedCall) waitedBy(fwd json.RawMessage) {
	meta, _ := rawjson.Get(fwd, "_meta")
	if tok, ok := rawjson.Get(meta, "progressToken"); ok {
		t := append(json.RawMessage(nil), tok...)
		pc.tok.Store(&t)
		return
	}
	pc.tok.Store(nil)
}

// parkBinding is what a parked question's state binds: what an approval's
// binds, under the policy in force.
func (g *Session) parkBinding(method string, t target, m *modernReq) (elicitation.Binding, error) {
	b := g.bindingSans(method, t)
	digest, err := m.argsDigest(t.args) // decide has taken it for this request's retry
	if err != nil {
		return elicitation.Binding{}, err
	}
	b.Principal, b.ArgsDigest = g.principal, digest
	return b, nil
}

// bindingSans is parkBinding without the principal and the arguments'
// digest, for a call that may never need them.
func (g *Session) bindingSans(method string, t target) elicitation.Binding {
	// The revision and the way of the decision that let this request
	// through (run), not the policy now: a reload between the two must not
	// bind a state to a revision that never let the call through.
	rev, by := t.revision, t.letBy
	if rev == "" {
		rev, by = g.policy.Current().Revision(), "undecided"
	}
	return elicitation.Binding{Method: method, Server: t.server, Name: t.name, Revision: rev, LetBy: by}
}

// waitParked waits for pc's next question, answered to the host as an
// input-required result, or for its result.
func (g *Session) waitParked(ctx context.Context, m *modernReq, t target, pc *parkedCall) (json.RawMessage, error) {
	ttl := g.policy.Current().ApprovalTimeout()
	q, round, res, err := g.parked.wait(ctx, pc, ttl)
	if q == nil {
		g.takeHold(ctx, pc)
		if t.answers != nil && pc.state.Load() == callTabled { // a call never asked has no answers
			for _, a := range g.parked.answersOf(pc) {
				t.answers.addDelivered(a.id, a.res)
			}
		}
		return res, err
	}
	pc.tok.Store(nil) // answered with the question: no request waits on the call now
	binding, err := g.parked.bindingOf(pc)
	if err != nil {
		g.parked.end(pc, err)
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: %v", m.method, err)
	}
	state, err := g.rounds.MintParked(binding, pc.id, round, ttl)
	if err != nil {
		g.parked.end(pc, err)
		return nil, rpc.Errorf(rpc.CodeInternalError, "%s: %v", q.method, err)
	}
	ir := elicitation.InputRequiredResult([]elicitation.InputRequest{{Key: elicitation.ParkedInputKey, Method: q.method, Params: q.params}}, state)
	m.asked.Store(true)
	g.log.Debug("upstream question parked for the host", "session", g.session, "server", t.server, "method", q.method, "round", round)
	return nil, &gateAnswer{ir}
}

// resumeParked serves a retry carrying a parked question's state (st, as
// verified when the request was read): the state must redeem for exactly
// this call, and the answer is handed to the upstream request waiting on
// it.
func (g *Session) resumeParked(ctx context.Context, m *modernReq, r *relay, t target, b elicitation.Binding, st *elicitation.State) (json.RawMessage, error) {
	if err := g.rounds.Use(st, b); err != nil {
		return g.refuseRetry(r, t, err.Error()+"; call again without requestState to start over")
	}
	ans, ok := rawjson.Get(m.inputResponses, elicitation.ParkedInputKey)
	if !ok || len(ans) == 0 || ans[0] != '{' || rawjson.UniqueKeys(m.inputResponses) != nil {
		return g.refuseRetry(r, t, "the retry carries no readable answer to the server's question (inputResponses."+elicitation.ParkedInputKey+" must be an object)")
	}
	pc, err := g.parked.claim(st.Call, g.principal, st.Round, m.caps)
	if err != nil {
		return g.refuseRetry(r, t, err.Error())
	}
	pc.waitedBy(t.fwd)
	g.parked.answer(pc, ans)
	return g.waitParked(ctx, m, t, pc)
}

// refuseRetry refuses a retry that cannot resume a parked call, as the
// relay refuses (a tool result the model reads, an error elsewhere); the
// parked call it named is cancelled when the request ends (settleParked).
func (g *Session) refuseRetry(r *relay, t target, reason string) (json.RawMessage, error) {
	g.audit.Elicitation(audit.Elicitation{Session: g.session, Server: t.server, Outcome: "refused", Kind: string(elicitation.BadState), Detail: reason})
	res, err := r.refuse(t, reason)
	if err != nil {
		return nil, err
	}
	return nil, &gateAnswer{res}
}

// settleParked ends a request that carried a parked question's state: if
// that question's call still waits on it, the request was refused before
// resuming it (denied by the policy in force, another call's state, a
// state expired or altered), and the call is cancelled, so that the
// upstream hears of it now rather than at the timeout.
func (g *Session) settleParked(m *modernReq) {
	st := m.stateOf(elicitation.ParkedState)
	if st == nil {
		return
	}
	if g.parked.settle(st.Call, g.principal, st.Round, errors.New("the host's retry was refused")) {
		g.log.Info("parked call cancelled: its retry was refused", "session", g.session, "round", st.Round)
	}
}

// parkedRequest serves an upstream's request (elicitation, roots) during
// a call of a 2026-07-28 host: put to that call's host request as an input
// request, when exactly one parkable call of the principal is in flight to
// the upstream and the host request declared the capability.
func (g *Gate) parkedRequest(ctx context.Context, s *Session, key, server string, req *rpc.Message) (json.RawMessage, error) {
	refuse := func(err error) (json.RawMessage, error) {
		g.log.Warn("upstream request refused", "server", server, "method", req.Method, "error", err)
		return nil, err
	}
	c := child{key, server}
	calls := s.parkableIn(c)
	// Every request in flight to the child counts, parkable or not (a
	// completion/complete, say): the question could be any one's.
	g.mu.Lock()
	inflight := 0
	for _, n := range g.inflight[c] {
		inflight += n
	}
	g.mu.Unlock()
	switch n := max(len(calls), inflight); {
	case len(calls) == 0 && g.pool.RunningEra(key, server) == ModernVersion:
		// Its calls run unparked (forwardModern): it asks by its result.
		return refuse(rpc.Errorf(rpc.CodeMethodNotFound, "%s: the server speaks protocol %s, which has no server-to-client requests; it asks for input in its result (input required), which mcp-gate relays", req.Method, ModernVersion))
	case len(calls) == 0:
		return refuse(modernServerRequest(req.Method))
	case n > 1:
		return refuse(rpc.Errorf(rpc.CodeInvalidRequest, "%s while %d calls of this user are in flight to this server: mcp-gate cannot tell which call it is for, so it asks none (a %s host's calls share one upstream connection per user)", req.Method, n, ModernVersion))
	}
	pc := calls[0]
	params, own, err := s.hostQuestion(ctx, server, g.parked.hostCaps(pc), req.Method, untasked(req).Params)
	switch {
	case errors.Is(err, errNotQuestion):
		return refuse(modernServerRequest(req.Method))
	case err != nil:
		return refuse(err)
	case own != nil:
		return own, nil // the host is not asked (a refused elicitation, declined)
	}
	ans, err := g.parked.ask(ctx, pc, &question{method: req.Method, id: req.ID, params: params, reply: make(chan json.RawMessage, 1)})
	if err != nil {
		return refuse(err)
	}
	return ans, nil
}
