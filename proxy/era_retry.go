package proxy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// The retry of a 2026-07-28 input-required round, in one place.
//
// A retry carries the gate's requestState back. It is verified once, when
// the request is read (serveModern → modernReq.state); from then on each
// stage reads what that verification found and checks only what is its
// own: the decision whether the state stands for a yes already given
// (inFlightYes, for every approval channel), the approval's answer
// (askModern), and the resume of the call the state names (resumeModern:
// a parked call, or an upstream's relayed round), which checks the state
// is bound to exactly the call the policy has just let through and uses
// it up. Every failed check is a refusal.

// stateOf returns the request's verified state if it is of kind k.
func (m *modernReq) stateOf(k elicitation.StateKind) *elicitation.State {
	if m == nil || m.state == nil || m.state.Kind != k {
		return nil
	}
	return m.state
}

// argsDigest is elicitation.CanonicalDigest(args), taken once for the
// arguments of the request (the same slice: the target's, which decide
// and the forward share) and remembered; other arguments are digested
// afresh. A nil m (a 2025 host's request) remembers nothing.
func (m *modernReq) argsDigest(args json.RawMessage) (string, error) {
	if m == nil {
		return elicitation.CanonicalDigest(args)
	}
	if m.digestOf == nil || len(m.digestOf) != len(args) || (len(args) > 0 && &m.digestOf[0] != &args[0]) {
		m.digest, m.digestErr = elicitation.CanonicalDigest(args)
		m.digestOf = args
		if args == nil {
			m.digestOf = json.RawMessage{} // remembered too: nil is "nothing yet"
		}
	}
	return m.digest, m.digestErr
}

// inFlightYes reads a retry that answers a server's question (a parked
// call's, or an upstream's relayed round) of a call the policy asks about:
// that call was let through by a human's yes before it ran, and the yes
// still covers the retry if the state holds for exactly this call under
// this decision: principal, method, server, name, canonical arguments,
// policy revision, and the very rule and reason the human was shown
// (LetBy; a state minted for a call the policy allowed, or approved under
// another rule, does not count). It is read ahead of the channel choice,
// so that a question the policy sends to the local surface is not asked
// again for every round of a call approved there. ok is false when the
// request carries no such state (then the question is asked as usual); a
// state of such a kind that does not hold is a refusal, never a question:
// it can only be the wrong call's, an expired one, or from before a reload.
// A parked or relayed state is never read as an answer to the gate's own
// question, nor the reverse (elicitation.Rounds.Answer reads only the
// approval kind).
func (g *Session) inFlightYes(m *modernReq, pol *policy.Policy, call policy.Call, d policy.Decision) (a elicitation.Answer, ok bool) {
	st := m.stateOf(elicitation.ParkedState)
	if st == nil {
		if st = m.stateOf(elicitation.RelayedState); st == nil {
			return elicitation.Answer{}, false
		}
	}
	b, err := g.askBinding(m, pol, call, d)
	if err != nil {
		return elicitation.Answer{Outcome: elicitation.Malformed, Detail: "the arguments cannot be read: " + err.Error()}, true
	}
	if err := g.rounds.Holds(st, b); err != nil {
		return elicitation.Answer{Outcome: elicitation.BadState, Detail: err.Error() + "; ask again by calling without requestState"}, true
	}
	return elicitation.Answer{Outcome: elicitation.Remembered, Detail: "approved before the call ran; this retry answers its server's question"}, true
}

// askBinding is what a state read under an ask decision d must be bound
// to, whichever kind it is: the call (principal, method, server, name,
// canonical arguments, policy revision) and the yes a human gives to the
// question d asks, which names its rule and shows its reason (LetBy). The
// gate's own question (askModern) mints its state with it, and a yes
// counts only for the rule and reason the human was shown: a retry decided
// ask by another rule (a condition that reads the world differently now,
// a symlink re-pointed while the human read) does not redeem it. A parked
// or relayed state read as the yes given before its call ran (inFlightYes)
// is held to the same.
func (g *Session) askBinding(m *modernReq, pol *policy.Policy, call policy.Call, d policy.Decision) (elicitation.Binding, error) {
	digest, err := m.argsDigest(call.Args)
	if err != nil {
		return elicitation.Binding{}, err
	}
	return elicitation.Binding{
		Principal: g.principal, Method: m.method, Server: call.Server, Name: call.Name,
		ArgsDigest: digest, Revision: d.Revision, LetBy: elicitation.ApprovedBy(d.Rule, pol.RuleReason(d.Rule)),
	}, nil
}

// resumeModern serves what a decided retry's state asks of its call (b is
// the call as the policy let it through): a parked call's state resumes
// that call (done, with its answer); a relayed round's is checked and
// turns t's params into the upstream's retry, with rc counting on from
// its rounds (not done: the caller forwards); an answer to a server's
// question carried with any other state is refused.
func (g *Session) resumeModern(ctx context.Context, m *modernReq, r *relay, t *target, b elicitation.Binding, rc *relayedCall) (done bool, res json.RawMessage, err error) {
	if st := m.stateOf(elicitation.ParkedState); st != nil {
		res, err = g.resumeParked(ctx, m, r, *t, b, st)
		return true, res, err
	}
	if st := m.stateOf(elicitation.RelayedState); st != nil {
		fwd, base, err := g.resumeRelayed(m, *t, b, st)
		if err != nil {
			res, err = g.refuseRetry(r, *t, err.Error())
			return true, res, err
		}
		t.fwd, rc.base = fwd, base
		return false, nil, nil
	}
	// An answer to a server's question needs that question's state:
	// nothing else delivers it.
	if k, ok := relayedAnswer(m.inputResponses); ok {
		why := elicitation.KindError(m.state, m.stateErr, elicitation.RelayedState)
		res, err = g.refuseRetry(r, *t, "the retry answers a server's question ("+shorten(k, 40)+"), but "+why.Error()+"; call again without requestState and inputResponses")
		return true, res, err
	}
	if _, ok := rawjson.Get(m.inputResponses, elicitation.ParkedInputKey); ok {
		why := "its requestState is not that question's"
		if err := elicitation.KindError(m.state, m.stateErr, elicitation.ParkedState); err != nil {
			why = err.Error()
		}
		res, err = g.refuseRetry(r, *t, "the retry answers a server's question, but "+why+"; call again without requestState and inputResponses")
		return true, res, err
	}
	return false, nil, nil
}

// hostQuestion is how every upstream's question reaches a 2026-07-28 host
// (a parked call's, parkedRequest; a relayed round's, relayRound): as an
// input request of the host's call in flight, whose request declared caps.
// It returns the params the host is to be asked with, or the gate's own
// answer when the host is not to be asked (an elicitation it refused is
// declined for it), or why the question cannot be put:
//   - elicitation/create through vetElicitation (guard, server label,
//     neutraliser), form only: a URL elicitation's completion notice could
//     not reach such a host (it has no listen stream);
//   - sampling/createMessage only to a request that declared sampling,
//     decided by the policy, inspected and neutralised as for any host
//     (relayParkedSampling, run in ctx);
//   - roots/list only to a request that declared roots;
//   - anything else: not a question the gate relays (errNotQuestion).
func (g *Session) hostQuestion(ctx context.Context, server string, caps hostInfo, method string, params json.RawMessage) (ask, own json.RawMessage, err error) {
	switch method {
	case "elicitation/create":
		caps.elicitURL = false
		p, err := g.vetElicitation(server, &caps, &rpc.Message{Method: method, Params: params})
		switch {
		case err != nil:
			return nil, nil, err
		case p == nil:
			return nil, declined, nil // refused, and audited
		}
		return p, nil, nil
	case "roots/list":
		if !caps.roots {
			return nil, nil, rpc.Errorf(rpc.CodeMethodNotFound, "the host's request declared no roots capability, so roots/list is not asked")
		}
		return json.RawMessage(`{}`), nil, nil
	case "sampling/createMessage":
		if !caps.sampling {
			return nil, nil, rpc.Errorf(rpc.CodeMethodNotFound, "the host's request declared no sampling capability, so sampling/createMessage is not asked")
		}
		// Decided as a request of its own (it declared what the host's
		// did): an ask cannot be put to the host in this round, so it is
		// refused (askModern), or goes to the local surface (via: [local]).
		sm := &modernReq{method: method, version: ModernVersion, caps: caps}
		p, err := g.run(context.WithValue(ctx, modernKey{}, sm), relayParkedSampling, server, params)
		if err != nil {
			return nil, nil, err
		}
		return p, nil, nil
	}
	return nil, nil, errNotQuestion
}

// errNotQuestion: an upstream's request that is none of the questions the
// gate relays to a 2026-07-28 host. (Not an *rpc.Error: those match each
// other by code under errors.Is.)
var errNotQuestion = errors.New("not a question mcp-gate relays")

// relayParkedSampling is relaySampling for an upstream's question to a
// 2026-07-28 host (hostQuestion: a parked call's or a relayed round's):
// the request's own declaration was checked there, and the decided,
// neutralised request is what goes to the host, as an input request.
var relayParkedSampling = &relay{
	method: relaySampling.method,
	resolve: func(g *Session, _ context.Context, from string, params json.RawMessage) (target, error) {
		return inspectSampling(g, from, params)
	},
	send: func(g *Session, _ context.Context, r *relay, t target) (json.RawMessage, error) {
		return g.neutralSampling(t)
	},
	unguarded: relaySampling.unguarded,
	refuse:    relaySampling.refuse,
}
