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
	"github.com/mcp-gate/mcp-gate/upstream"
)

// An upstream of revision 2026-07-28 asks for input by answering a call
// with an input-required result (upstream.InputRequiredError). For a
// 2025-11-25 host the gate puts each question to it as that era does, a
// server-to-client request through exactly the paths an older upstream's
// own request takes (relayElicitation's guard and label, sampling decided
// by the policy, roots only to a host that declared them), then retries the
// call with the answers and the upstream's requestState echoed byte for
// byte. The gate never reads that state: it is the upstream's, and decides
// nothing here. For a 2026-07-28 host the round is relayed as an
// input-required result of the host's own call instead (era_relayed.go).

// maxUpstreamRounds bounds the rounds of one call, as the SDK clients do.
const maxUpstreamRounds = 10

// maxInputRequests bounds the questions of one round: the bound the
// relayed round's state is held to (elicitation.MaxRoundInputs).
const maxInputRequests = elicitation.MaxRoundInputs

// forwardRounds forwards a decided request and serves the upstream's
// input-required rounds until it answers.
func (g *Session) forwardRounds(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := g.forward(ctx, server, method, params)
	for round := 1; ; round++ {
		if err == nil {
			return res, nil // errors.As would cost its target an allocation
		}
		var ir *upstream.InputRequiredError
		if !errors.As(err, &ir) {
			return res, err
		}
		// A 2026-07-28 host's call counts the rounds its earlier requests
		// relayed (era_relayed.go).
		rc := relayedOf(ctx)
		total := round
		if rc != nil {
			total += rc.base
		}
		if modernOf(ctx) != nil && rc == nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: upstream %q asked for input, which mcp-gate relays to a %s host only in tools/call, prompts/get and resources/read", method, server, ModernVersion)
		}
		if total > maxUpstreamRounds {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: upstream %q still asked for input after %d rounds", method, server, maxUpstreamRounds)
		}
		var responses json.RawMessage
		var err2 error
		if rc != nil {
			responses, err2 = g.relayRound(ctx, server, rc, total, ir.Result)
		} else {
			responses, err2 = g.answerInputRequests(ctx, server, ir.Result)
		}
		if err2 != nil {
			return nil, err2
		}
		st, hasState := rawjson.Get(ir.Result, "requestState")
		if !hasState {
			st = nil
		}
		retry, err2 := retryParams(params, responses, st)
		if err2 != nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: building the retry for upstream %q: %v", method, server, err2)
		}
		res, err = g.forward(ctx, server, method, retry)
	}
}

// retryParams are a call's params retried with the answers of a round and
// the upstream's requestState (JSON text, echoed byte for byte; nil: none).
func retryParams(params, responses, state json.RawMessage) (json.RawMessage, error) {
	retry, err := rawjson.Set(params, "inputResponses", responses)
	if err != nil {
		return nil, err
	}
	if state != nil {
		return rawjson.Set(retry, "requestState", state)
	}
	retry, _ = rawjson.Delete(retry, "requestState")
	return retry, nil
}

// answerInputRequests puts one round's questions to the host and returns
// the inputResponses object.
func (g *Session) answerInputRequests(ctx context.Context, server string, result json.RawMessage) (json.RawMessage, error) {
	bad := badRound(server)
	qs, err := inputQuestions(server, result)
	if err != nil {
		return nil, err
	}
	out := []byte("{}")
	for _, q := range qs {
		msg := &rpc.Message{Method: q.method, Params: q.params}
		var ans json.RawMessage
		var err error
		switch q.method {
		case "elicitation/create":
			ans, err = g.relayElicitation(ctx, server, g.hostCaps(), msg)
		case "sampling/createMessage":
			ans, err = g.run(ctx, relaySampling, server, q.params)
		case "roots/list":
			if !g.hostCaps().roots {
				err = rpc.Errorf(rpc.CodeMethodNotFound, "the host does not support roots")
			} else {
				ans, err = g.askHost(ctx, msg)
			}
		default:
			return nil, badMethod(server, q)
		}
		if err != nil {
			return nil, inputRequestFailed(server, q.key, q.method, err)
		}
		if out, err = rawjson.Set(out, q.key, ans); err != nil {
			return nil, bad("%v", err)
		}
	}
	return out, nil
}

// inputQuestion is one input request of an upstream's round.
type inputQuestion struct {
	key    string
	method string
	params json.RawMessage
}

func badRound(server string) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return quotingUpstream(rpc.Errorf(rpc.CodeInternalError, "upstream %q sent an input-required result mcp-gate cannot serve: %s", server, fmt.Sprintf(format, args...)))
	}
}

func badMethod(server string, q inputQuestion) error {
	return badRound(server)("input request %s has method %s; expected elicitation/create, sampling/createMessage or roots/list", guard.Quote(q.key, guard.ShowKey), guard.Quote(q.method, guard.ShowKey))
}

// inputQuestions reads a round's input requests, in the upstream's order,
// at most maxInputRequests; whatever else is refused.
func inputQuestions(server string, result json.RawMessage) ([]inputQuestion, error) {
	bad := badRound(server)
	if err := rawjson.UniqueKeys(result); err != nil {
		return nil, bad("%s", keyErrorDetail(err))
	}
	reqs, ok := rawjson.Get(result, "inputRequests")
	if !ok || len(reqs) == 0 || reqs[0] != '{' {
		return nil, bad("no inputRequests object (state-only rounds are not served)")
	}
	var qs []inputQuestion
	_ = rawjson.Members(reqs, func(m rawjson.Member) bool {
		method, _ := rawjson.GetString(m.Value, "method")
		p, _ := rawjson.Get(m.Value, "params")
		qs = append(qs, inputQuestion{m.Key, method, p})
		return len(qs) <= maxInputRequests
	})
	switch {
	case len(qs) == 0:
		return nil, bad("inputRequests is empty")
	case len(qs) > maxInputRequests:
		return nil, bad("more than %d input requests in one round", maxInputRequests)
	}
	return qs, nil
}

// inputRequestFailed is the host's answer to a call whose upstream asked
// for what the gate could not get. The question's error is not the call's
// own: "method not found" for roots or sampling the host lacks would tell
// the host that tools/call itself is unknown. It is said as the upstream's
// question, keeping a policy denial's code; a cancelled call stays
// cancelled.
func inputRequestFailed(server, key, method string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code := int64(rpc.CodeInternalError)
	var re *rpc.Error
	if errors.As(err, &re) && re.Code == CodeDenied {
		code = CodeDenied
	}
	// The reason is the gate's or the host's; the question's method and
	// key are the upstream's, left out if they read as an approval.
	what := guard.Quote(method, guard.ShowKey) + " " + guard.Quote(key, guard.ShowKey)
	method, key = shorten(method, 40), shorten(key, 40)
	if len(guard.InspectResult(mustJSON(map[string]any{"content": []map[string]string{{"type": "text", "text": method + " " + key}}}))) > 0 {
		what = "a question whose method or key reads as an approval"
	}
	return neutralError(rpc.Errorf(code, "upstream %q asked for input mcp-gate could not get (%s): %v", server, what, err))
}

// quotingUpstream is an error of the gate's own that quotes an upstream's
// words (a question's key or method): hosts show its message to the model
// as the call's outcome, so it is neutralised, and guarded as the
// upstream's error (guardError).
func quotingUpstream(e *rpc.Error) error {
	return &upstreamRPCError{e: neutralError(e), orig: e}
}
