package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Relayed rounds: a 2026-07-28 upstream's input-required result during a
// 2026-07-28 host's tools/call, prompts/get or resources/read.
//
// Both sides are stateless, so the gate is too: it answers the host's call
// with an input-required result of its own carrying the upstream's
// questions, each through the path an upstream's question always takes
// (vetElicitation's guard, label and neutraliser; sampling decided by the
// policy; roots and sampling only to a request that declared them), under
// keys of the gate's namespace
// (elicitation.RelayedKey), and a requestState of the relayed kind
// (elicitation.MintRelayed) that binds the call as an approval does, the
// round, the upstream's keys, and the upstream's own requestState carried
// inside it. The host's retry is decided afresh under the policy in force
// (run), the state is redeemed for exactly this call (forwardModern →
// resumeModern → resumeRelayed), the answers are mapped back to the upstream's keys, and
// the call is sent again with the upstream's state echoed byte for byte;
// its result passes the result guard with the host's elicitation answers
// exempted. The upstream's state is carried, not trusted: the gate decides
// nothing on it.
//
// Why the upstream's state rides inside the gate's rather than being kept
// by the gate: nothing then outlives the host's request (no table to bound,
// expire or lose over HTTP, where every POST is a session of its own), and
// the gate's MAC already makes it tamper-evident; it is bounded
// (elicitation.MaxUpstreamStateBytes) and a larger one fails the call. The
// host sees the upstream's state inside the gate's (base64, not secret):
// the same a direct connection would show it.

// relayedCall is carried in the context of a 2026-07-28 host's call
// (a parkable one's, callCtx; an unparked one's, relayedCtx):
// forwardRounds relays the upstream's rounds of it to the host.
type relayedCall struct {
	// binding is what a relayed round's state binds; until bound, all of
	// it but the principal and the digest of args, which the first round
	// computes (bindingOf): most calls have no round.
	binding elicitation.Binding
	bound   bool
	args    json.RawMessage
	base    int // rounds relayed by the host's earlier requests of this call
}

// bindingOf is rc's binding, completed for g's call at the first need. It
// is read by the forward alone, one round at a time.
func (rc *relayedCall) bindingOf(g *Session) (elicitation.Binding, error) {
	if !rc.bound {
		d, err := elicitation.CanonicalDigest(rc.args)
		if err != nil {
			return elicitation.Binding{}, err
		}
		rc.binding.Principal, rc.binding.ArgsDigest = g.principal, d
		rc.bound, rc.args = true, nil
	}
	return rc.binding, nil
}

type relayedKey struct{}

// relayedCtx carries a relayedCall, in one allocation with its context.
type relayedCtx struct {
	context.Context
	call relayedCall
}

func (c *relayedCtx) Value(key any) any {
	if _, ok := key.(relayedKey); ok {
		return &c.call
	}
	return c.Context.Value(key)
}

func relayedOf(ctx context.Context) *relayedCall {
	rc, _ := ctx.Value(relayedKey{}).(*relayedCall)
	return rc
}

// relayRound serves an upstream's round of a 2026-07-28 host's call: the
// questions the host must answer go back as the call's input-required
// result (a *gateAnswer); when the gate answered every question itself
// (each elicitation refused, so declined), it returns the answers and the
// call is retried at once.
func (g *Session) relayRound(ctx context.Context, server string, rc *relayedCall, round int, result json.RawMessage) (json.RawMessage, error) {
	m := modernOf(ctx)
	if m == nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "upstream %q asked for input outside a %s call", server, ModernVersion)
	}
	qs, err := inputQuestions(server, result)
	if err != nil {
		return nil, err
	}
	bad := badRound(server)
	state, hasState := rawjson.Get(result, "requestState")
	if !hasState {
		state = nil
	} else if len(state) > elicitation.MaxUpstreamStateBytes {
		return nil, bad("its requestState is %d bytes; mcp-gate carries at most %d through a %s host", len(state), elicitation.MaxUpstreamStateBytes, ModernVersion)
	}
	rr := elicitation.RelayedRound{Round: round, State: state}
	var asked []elicitation.InputRequest
	for i, q := range qs {
		if len(q.key) > elicitation.MaxUpstreamKeyBytes {
			return nil, bad("an input request key of %d bytes; mcp-gate relays keys of at most %d", len(q.key), elicitation.MaxUpstreamKeyBytes)
		}
		params, own, err := g.hostQuestion(ctx, server, m.caps, q.method, q.params) // era_retry.go
		switch {
		case errors.Is(err, errNotQuestion):
			return nil, badMethod(server, q)
		case err != nil:
			return nil, inputRequestFailed(server, q.key, q.method, err)
		}
		in := elicitation.RelayedInput{Key: q.key, Method: q.method, Answer: own}
		if own == nil {
			in.Asked = true
			asked = append(asked, elicitation.InputRequest{Key: elicitation.RelayedKey(i), Method: q.method, Params: params})
		}
		rr.Inputs = append(rr.Inputs, in)
	}
	if len(asked) == 0 {
		// Nothing for the host: the upstream hears the gate's answers now.
		out := json.RawMessage(`{}`)
		for _, in := range rr.Inputs {
			if out, err = rawjson.Set(out, in.Key, in.Answer); err != nil {
				return nil, bad("%v", err)
			}
		}
		return out, nil
	}
	binding, err := rc.bindingOf(g)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "upstream %q asked for input mcp-gate cannot relay: the call's arguments: %v", server, err)
	}
	tok, err := g.rounds.MintRelayed(binding, rr, g.policy.Current().ApprovalTimeout())
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "upstream %q asked for input mcp-gate cannot relay: %v", server, err)
	}
	m.asked.Store(true)
	g.log.Debug("upstream input round relayed to the host", "session", g.session, "server", server, "round", round, "questions", len(qs))
	return nil, &gateAnswer{elicitation.InputRequiredResult(asked, tok)}
}

// resumeRelayed serves a retry carrying a relayed round's state (st, as
// verified when the request was read), already decided under the policy
// in force: the state must hold for exactly this call (b), and
// inputResponses must answer exactly the questions the host was asked. It
// returns the params to send the upstream (the host's answers under the
// upstream's keys, its requestState as it sent it) and the rounds relayed
// so far.
func (g *Session) resumeRelayed(m *modernReq, t target, b elicitation.Binding, st *elicitation.State) (json.RawMessage, int, error) {
	if err := g.rounds.Holds(st, b); err != nil {
		return nil, 0, fmt.Errorf("%w; call again without requestState to start over", err)
	}
	rr := st.Relayed
	ir := m.inputResponses
	if len(ir) == 0 || ir[0] != '{' || rawjson.UniqueKeys(ir) != nil {
		return nil, 0, errors.New("the retry carries no readable inputResponses (an object, each key once)")
	}
	// One pass over the host's answers: each must be to a question this
	// round asked (by its position), and is kept for the mapping below.
	var got [elicitation.MaxRoundInputs]json.RawMessage
	var extra string
	_ = rawjson.Members(ir, func(mb rawjson.Member) bool {
		i, ok := relayedIndex(mb.Key, rr.Inputs)
		if !ok {
			extra = mb.Key
			return false
		}
		got[i] = mb.Value
		return true
	})
	if extra != "" {
		return nil, 0, fmt.Errorf("the retry answers %s, which this round did not ask (it asked only its %s keys)", guard.Quote(extra, guard.ShowKey), elicitation.RelayedKeyPrefix)
	}
	out := json.RawMessage(`{}`)
	var err error
	for i, in := range rr.Inputs {
		ans := in.Answer
		if in.Asked {
			if a := got[i]; len(a) == 0 || a[0] != '{' {
				k := elicitation.RelayedKey(i)
				return nil, 0, fmt.Errorf("the retry carries no answer to %s (inputResponses.%s must be an object)", k, k)
			}
			ans = got[i]
		}
		if out, err = rawjson.Set(out, in.Key, ans); err != nil {
			return nil, 0, err
		}
	}
	fwd, err := retryParams(t.fwd, out, rr.State)
	if err != nil {
		return nil, 0, err
	}
	// Only a retry that answers the round uses its state up (once: a
	// concurrent retry of the same state fails here).
	if err := g.rounds.Use(st, b); err != nil {
		return nil, 0, fmt.Errorf("%w; call again without requestState to start over", err)
	}
	if t.answers != nil {
		for i, in := range rr.Inputs {
			if in.Asked && in.Method == "elicitation/create" {
				t.answers.add(got[i]) // the result guard exempts the host's own answer
			}
		}
	}
	return fwd, rr.Round, nil
}

// relayedIndex is the position among inputs of the question the
// host-side key k names, if the round asked it.
func relayedIndex(k string, inputs []elicitation.RelayedInput) (int, bool) {
	for i, in := range inputs {
		if in.Asked && k == elicitation.RelayedKey(i) {
			return i, true
		}
	}
	return 0, false
}

// relayedAnswer reports whether inputResponses answers a relayed round's
// question (a key of the relayed namespace), and the first such key.
func relayedAnswer(inputResponses json.RawMessage) (string, bool) {
	var key string
	_ = rawjson.Members(inputResponses, func(mb rawjson.Member) bool {
		if elicitation.IsRelayedKey(mb.Key) {
			key = mb.Key
			return false
		}
		return true
	})
	return key, key != ""
}
