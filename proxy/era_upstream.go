package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
// nothing here. A 2026-07-28 host is not asked (its own input-required
// rounds carry only the gate's approval so far): the call is refused.

// maxUpstreamRounds bounds the rounds of one call, as the SDK clients do.
const maxUpstreamRounds = 10

// maxInputRequests bounds the questions of one round.
const maxInputRequests = 8

// forwardRounds forwards a decided request and serves the upstream's
// input-required rounds until it answers.
func (g *Session) forwardRounds(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := g.forward(ctx, server, method, params)
	for round := 1; ; round++ {
		var ir *upstream.InputRequiredError
		if !errors.As(err, &ir) {
			return res, err
		}
		if modernOf(ctx) != nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: upstream %q asked for input, which mcp-gate does not relay to a %s host yet", method, server, ModernVersion)
		}
		if round > maxUpstreamRounds {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: upstream %q still asked for input after %d rounds", method, server, maxUpstreamRounds)
		}
		responses, err2 := g.answerInputRequests(ctx, server, ir.Result)
		if err2 != nil {
			return nil, err2
		}
		retry, err2 := rawjson.Set(params, "inputResponses", responses)
		if err2 == nil {
			if st, ok := rawjson.Get(ir.Result, "requestState"); ok {
				retry, err2 = rawjson.Set(retry, "requestState", st)
			} else {
				retry, _ = rawjson.Delete(retry, "requestState")
			}
		}
		if err2 != nil {
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: building the retry for upstream %q: %v", method, server, err2)
		}
		res, err = g.forward(ctx, server, method, retry)
	}
}

// answerInputRequests puts one round's questions to the host and returns
// the inputResponses object.
func (g *Session) answerInputRequests(ctx context.Context, server string, result json.RawMessage) (json.RawMessage, error) {
	bad := func(format string, args ...any) error {
		return rpc.Errorf(rpc.CodeInternalError, "upstream %q sent an input-required result mcp-gate cannot serve: %s", server, fmt.Sprintf(format, args...))
	}
	if err := rawjson.UniqueKeys(result); err != nil {
		return nil, bad("%s", keyErrorDetail(err))
	}
	reqs, ok := rawjson.Get(result, "inputRequests")
	if !ok || len(reqs) == 0 || reqs[0] != '{' {
		return nil, bad("no inputRequests object (state-only rounds are not served)")
	}
	type question struct {
		key    string
		method string
		params json.RawMessage
	}
	var qs []question
	_ = rawjson.Members(reqs, func(m rawjson.Member) bool {
		method, _ := rawjson.GetString(m.Value, "method")
		p, _ := rawjson.Get(m.Value, "params")
		qs = append(qs, question{m.Key, method, p})
		return len(qs) <= maxInputRequests
	})
	switch {
	case len(qs) == 0:
		return nil, bad("inputRequests is empty")
	case len(qs) > maxInputRequests:
		return nil, bad("more than %d input requests in one round", maxInputRequests)
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
			return nil, bad("input request %s has method %s; expected elicitation/create, sampling/createMessage or roots/list", shorten(q.key, 40), shorten(q.method, 40))
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
	return rpc.Errorf(code, "upstream %q asked for input mcp-gate could not get (%s %s): %v", server, shorten(method, 40), shorten(key, 40), err)
}
