package proxy

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/policy"
)

// askModern is the approval of a 2026-07-28 request the policy asks about.
// Without a requestState it asks: the gate's question (the same form as
// elicitation.Params, without the session choice) goes back as an
// input-required result, with a state bound to this principal, method,
// tool, canonical arguments, policy revision, and the rule and reason the
// question shows (askBinding; the returned result; the call is not run). With one it reads the answer, which counts only if
// the state, verified when the request was read, redeems for exactly this
// call (elicitation.Rounds.Answer): this decision was taken afresh under
// the policy in force, so a reload since the question changes the
// revision and the old answer does not redeem. A retry that answers a
// server's question of a call approved before it ran never reaches here:
// decide reads it first, for every channel (inFlightYes, era_retry.go).
//
// A question is only ever sent as the form elicitation the request
// declared it can show; a host that declared none is refused as a
// 2025-11-25 host without elicitation is.
func (g *Session) askModern(m *modernReq, pol *policy.Policy, call policy.Call, d policy.Decision, req elicitation.Request) (elicitation.Answer, json.RawMessage) {
	switch m.method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return elicitation.Answer{Outcome: elicitation.Unsupported, Detail: fmt.Sprintf("a %s %s cannot carry an approval question (only tools/call, prompts/get and resources/read can); ask your security team to allow it in the policy", ModernVersion, m.method)}, nil
	}
	if !m.caps.elicitForm {
		return elicitation.Answer{Outcome: elicitation.Unsupported, Detail: "this host cannot ask for approval (its request declared no form elicitation); " +
			"ask your security team to allow this tool in the policy, or use a host that supports MCP elicitation (Claude Code, Codex)"}, nil
	}
	// Bound to the rule and reason the question shows, too (askBinding): a
	// yes answers the question the human read, not an ask by another rule.
	b, err := g.askBinding(m, pol, call, d)
	if err != nil {
		return elicitation.Answer{Outcome: elicitation.Malformed, Detail: "the arguments cannot be read: " + err.Error()}, nil
	}
	if m.hasState {
		// The retry's state as verified when the request was read; only
		// the approval kind answers the gate's question (a parked or
		// relayed state was read by decide: inFlightYes).
		return g.rounds.Answer(m.inputResponses, m.state, m.stateErr, b), nil
	}
	req.OnceOnly, req.Titled = true, true
	state, err := g.rounds.Mint(b, pol.ApprovalTimeout())
	if err != nil {
		return elicitation.Answer{Outcome: elicitation.Failed, Detail: err.Error()}, nil
	}
	ir, err := elicitation.InputRequired(req, state)
	if err != nil {
		return elicitation.Answer{Outcome: elicitation.Failed, Detail: err.Error()}, nil
	}
	m.asked.Store(true)
	return elicitation.Answer{Outcome: elicitation.Pending, Detail: "asked the user in an input-required result; the call runs only when retried with their yes"}, ir
}

// modernAsksHost reports whether the policy's channels for a question put
// it to the 2026-07-28 host's own form (an input-required result): the
// first channel in via that can ask is "elicitation" and the request
// declared form elicitation, or via names no channel a gate knows (then
// askModern says why the host cannot be asked). A "local" before it, or a
// host that cannot show forms with "local" after, goes to the gate's
// local surface instead, as elicitation.Channels does for a 2025 host:
// a rule that keeps the answer away from the host is kept.
func modernAsksHost(m *modernReq, via []string) bool {
	if len(via) == 0 {
		via = []string{policy.ViaElicitation}
	}
	for _, ch := range via {
		switch ch {
		case policy.ViaElicitation:
			if m.caps.elicitForm {
				return true
			}
		case policy.ViaLocal:
			return false
		}
	}
	return true
}

// withoutHostChannel is req with the host's elicitation channel taken out
// of its channels: a 2026-07-28 host is never sent a server-to-client
// question, and a question meant for the local surface must not fall back
// to it. (modernAsksHost sends a question here only when its channels
// name "local".)
func withoutHostChannel(req elicitation.Request) elicitation.Request {
	req.Via = slices.DeleteFunc(slices.Clone(req.Via), func(ch string) bool { return ch == policy.ViaElicitation })
	return req
}
