package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// One call path. Every request that reaches an upstream (and an upstream's
// sampling request, which reaches the host's model on its behalf) runs
// through run: resolve → decide → (ask) → forward → guard → answer. What
// differs between methods is data, a relay: how the target and the policy
// subject are read from the params, how the name is rewritten on the way
// out, which guard the answer passes, and how a refusal is shaped. A check
// added to run covers every method; a method cannot skip a stage by being
// written out separately, because none is.

// target is what resolve read from a request: where it goes, what the
// policy decides on, and the params to forward.
type target struct {
	kind   policy.Kind
	server string // the upstream that answers (for sampling: the one asking)
	name   string // the policy's name: the upstream's own tool or prompt name, a URI
	wire   string // the name as the host wrote it, for the audit and refusals
	// args is what conditions read; nil when the method has none. A resolve
	// returns it checked for ambiguous keys (rawjson.UniqueKeys), which
	// decide relies on.
	args json.RawMessage
	// also are further names of the same kind the request reaches, each
	// decided as well (a resource template completed with values is also
	// the URI those values make).
	also []string
	fwd  json.RawMessage // the params to send, names rewritten to the upstream's
	snap *snapshot       // the catalog the target was resolved in (nil for sampling)
	// answers (tools/call) collects the host's answers to the server's
	// elicitations during the call, which the guard exempts (elicited.go).
	answers *elicitAnswers
	// letBy and revision are what let the request through and the policy
	// revision of that decision (verdict), which the states of a call in
	// flight bind (parked.go, era_relayed.go).
	letBy, revision string
}

// relay describes one method of the pipeline.
type relay struct {
	method string
	// resolve reads the params of a request from the host, or from the
	// upstream named by from. An error is the answer, and nothing is sent.
	resolve func(g *Session, ctx context.Context, from string, params json.RawMessage) (target, error)
	// undecided, when set, says why the method is not put to the policy.
	undecided string
	// send delivers the decided request; nil means forward to t.server.
	send func(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error)
	// guard inspects and neutralises the answer; nil means none, and
	// unguarded says why.
	guard     func(g *Session, pol *policy.Policy, r *relay, t target, res json.RawMessage) (json.RawMessage, error)
	unguarded string
	// refuse shapes a denial: an isError result for tools, which the model
	// reads, a CodeDenied error where MCP has no result to carry it.
	refuse func(t target, reason string) (json.RawMessage, error)
}

// run takes one request through the pipeline. One policy snapshot serves
// the whole request: the decision, the approval timeout and the guard's
// settings come from the same revision.
func (g *Session) run(ctx context.Context, r *relay, from string, params json.RawMessage) (json.RawMessage, error) {
	if m := modernOf(ctx); m != nil && m.hasState {
		defer g.settleParked(m) // a retry that did not resume its parked call ends it (parked.go)
	}
	t, err := r.resolve(g, ctx, from, params)
	if err != nil {
		if from == "" {
			// A host's request refused before any decision: its record
			// is written where its answer leaves (refused.go).
			err = refusedAs(refusedUnresolved, t.wire, err)
		}
		return nil, err
	}
	pol := g.policy.Current()
	if r.undecided == "" {
		if v := g.checkPin(ctx, pol, &t); !v.allow {
			if v.err != nil {
				return nil, v.err // it ended before its definition was checked (checkPin)
			}
			return r.refuse(t, v.reason)
		}
		v := g.decide(ctx, pol, policy.Call{Kind: t.kind, Server: t.server, Name: t.name, Args: t.args}, t.name, t.wire)
		if ctx.Err() != nil {
			return r.withdrawn(ctx, t) // while a human was asked: nothing is sent
		}
		if !v.allow {
			if v.inputRequired != nil {
				return v.inputRequired, nil // asked: the host retries with the answer (era_ask.go)
			}
			return r.refuse(t, v.reason)
		}
		t.letBy, t.revision = v.letBy, v.revision
		for _, name := range t.also {
			// Recorded as t.name: name is argument text (decide).
			v := g.decide(ctx, pol, policy.Call{Kind: t.kind, Server: t.server, Name: name, Args: t.args}, t.name, t.wire)
			if ctx.Err() != nil {
				return r.withdrawn(ctx, t)
			}
			if !v.allow {
				return r.refuse(t, v.reason)
			}
		}
	}
	send := r.send
	if send == nil {
		send = forwardTo
	}
	sp := g.startCall()
	res, err := send(g, ctx, r, t)
	if own, ok := asGateAnswer(err); ok {
		g.endCall(sp, t.server, r.method, nil)
		return own.res, nil // a parked call's question, or a refused retry (parked.go)
	}
	if err != nil {
		err = g.guardError(pol, r, t, err)
		g.endCall(sp, t.server, r.method, err)
		return nil, err
	}
	if r.guard == nil || g.noGuard.Load() {
		g.endCall(sp, t.server, r.method, nil)
		return res, nil
	}
	res, err = r.guard(g, pol, r, t, res)
	g.endCall(sp, t.server, r.method, err)
	return res, err
}

// guardError inspects an error an upstream answered the request with, as
// its result would be inspected: hosts hand an error's message to the
// model as the call's outcome ("MCP error -32000: ..."), so an approval
// forged there is refused like one in a result, and audited; log-only
// relays it, audited. Errors of the gate's own, and the host's (a sampling
// request's), pass as they are.
func (g *Session) guardError(pol *policy.Policy, r *relay, t target, err error) error {
	var up *upstreamRPCError
	if !errors.As(err, &up) || g.noGuard.Load() {
		return err
	}
	raw := up.orig.Raw
	if raw == nil {
		raw = mustJSON(up.orig)
	}
	findings := guard.InspectResult(raw)
	if len(findings) == 0 {
		return err
	}
	if !g.auditFindings(g.who(), pol, t.server, t.name, r.method+" error ", findings) {
		return err
	}
	return &rpc.Error{Code: up.orig.Code, Message: fmt.Sprintf("mcp-gate refused the error server %q answered %s %s with: it contains an approval-shaped payload (%s at %s). "+
		"Approvals come only from the user through the gate; nothing in this error was acted on.", t.server, r.method, guard.Quote(t.wire, guard.ShowName), findings[0].Kind, guard.ShowPath(findings[0].Path))}
}

// forwardTo sends the request to the upstream that owns its target.
func forwardTo(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error) {
	if m := modernOf(ctx); m != nil {
		return g.forwardModern(ctx, m, r, t) // parked.go
	}
	return g.forwardRounds(ctx, t.server, r.method, t.fwd) // era_upstream.go
}

// The relays. Each is a row of the pipeline: the pipeline table test
// (pipeline_test.go) holds one row per method the dispatcher knows.
var (
	relayToolCall = &relay{
		method: "tools/call",
		resolve: func(g *Session, ctx context.Context, _ string, params json.RawMessage) (target, error) {
			t, err := g.resolveNamed(ctx, "tools/call", &g.tools, policy.KindTool, params)
			// Only a host that can answer an elicitation during the call
			// (one that declared it, or a 2026-07-28 host's retry of a
			// relayed round) has answers to collect: for any other call
			// they would be an allocation never used. Without them the
			// guard exempts nothing.
			if h := g.hostCaps(); h.elicitForm || h.elicitURL || modernOf(ctx) != nil {
				t.answers = &elicitAnswers{}
			}
			return t, err
		},
		send: func(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error) {
			if h := g.hostCaps(); (h.elicitForm || h.elicitURL) && t.answers != nil { // else no answer can come
				defer g.Gate.answers.begin(g, t.server, t.answers).end()
			}
			return forwardTo(g, ctx, r, t)
		},
		guard: func(g *Session, pol *policy.Policy, _ *relay, t target, res json.RawMessage) (json.RawMessage, error) {
			if len(res) == 0 || res[0] != '{' {
				return nil, rpc.Errorf(rpc.CodeInternalError, "upstream %q answered tools/call with a result that is not an object", t.server)
			}
			return g.guardResult(pol, t.snap, t.server, t.name, res, t.answers), nil
		},
		refuse: func(_ target, reason string) (json.RawMessage, error) {
			return refusal("mcp-gate denied this call: " + reason), nil
		},
	}
	relayPromptGet = &relay{
		method: "prompts/get",
		resolve: func(g *Session, ctx context.Context, _ string, params json.RawMessage) (target, error) {
			return g.resolveNamed(ctx, "prompts/get", &g.prompts, policy.KindPrompt, params)
		},
		guard:  guardContent("messages"),
		refuse: denied("the prompt"),
	}
	relayResourceRead = &relay{
		method:  "resources/read",
		resolve: resolveResource("resources/read"),
		guard:   guardContent("contents"),
		refuse:  denied("the resource"),
	}
	relaySubscribe = &relay{
		method:  "resources/subscribe",
		resolve: resolveResource("resources/subscribe"),
		send:    sendSubscribe,
		guard:   guardAck,
		refuse:  denied("the resource"),
	}
	relayUnsubscribe = &relay{
		method:    "resources/unsubscribe",
		resolve:   resolveResource("resources/unsubscribe"),
		send:      sendUnsubscribe,
		undecided: "unsubscribing only stops update notifications; it reads and changes nothing, and refusing it would keep a denied resource's updates coming",
		guard:     guardAck,
		refuse:    denied("the resource"),
	}
	relayComplete = &relay{
		method:  "completion/complete",
		resolve: resolveCompletion,
		// Its values are offered to the user as they type: inspected and
		// neutralised as any result the host shows.
		guard: guardContent("completion"),
		refuse: func(t target, reason string) (json.RawMessage, error) {
			what := "the prompt"
			if t.kind == policy.KindResource {
				what = "the resource"
			}
			return nil, deniedError("completion for "+what+" "+guard.Quote(t.wire, guard.ShowName), verdict{reason: reason})
		},
	}
	// relaySampling is an upstream's request to use the host's model: a
	// server must not spend it silently, so it is decided like a tool call,
	// and what it puts in front of the model is inspected and neutralised.
	relaySampling = &relay{
		method:    "sampling/createMessage",
		resolve:   resolveSampling,
		send:      sendSampling,
		unguarded: "the answer is the host's model output going back to the upstream that asked; nothing of it reaches the user or the model through the gate",
		refuse: func(_ target, reason string) (json.RawMessage, error) {
			// Worded without the gate's name: the upstream often hands this
			// text back in its own result, and a result naming the gate with
			// approval vocabulary is what the guard refuses.
			return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused by policy: " + reason}
		},
	}
)

// denied shapes a refusal as a CodeDenied error naming what was refused:
// by the name the host wrote, through guard.Quote (a resource URI a
// template makes is the model's text).
func denied(what string) func(target, string) (json.RawMessage, error) {
	return func(t target, reason string) (json.RawMessage, error) {
		return nil, deniedError(what+" "+guard.Quote(t.wire, guard.ShowName), verdict{reason: reason})
	}
}

// guardContent inspects and neutralises a result that reaches the model
// (prompt messages, resource contents); field names its content member.
func guardContent(field string) func(*Session, *policy.Policy, *relay, target, json.RawMessage) (json.RawMessage, error) {
	return func(g *Session, pol *policy.Policy, r *relay, t target, res json.RawMessage) (json.RawMessage, error) {
		return g.guardOther(pol, t.server, t.name, r.method, field, res)
	}
}

// guardAck inspects and neutralises an acknowledgement (a subscription's
// empty result): whatever an upstream puts there reaches the host like any
// other result, and is read like one.
func guardAck(g *Session, pol *policy.Policy, r *relay, t target, res json.RawMessage) (json.RawMessage, error) {
	return g.guardOther(pol, t.server, t.name, r.method, "acknowledgement", res)
}

// resolveNamed reads a tools/call or prompts/get: the wire name mapped back
// to its server and name, the arguments as the policy reads them, and the
// params to forward, which are exactly the ones decided on with only the
// name changed back to the upstream's own.
func (g *Session) resolveNamed(ctx context.Context, method string, c *catalog, k policy.Kind, params json.RawMessage) (target, error) {
	p, err := parseCallParams(method, params)
	if err != nil {
		return target{}, refusedAs(refusedInvalidParams, "", err)
	}
	key, snap, ok := g.resolve(ctx, c, p.name)
	if !ok {
		if ctx.Err() != nil {
			// The request ended while its server was being listed (the
			// host's input ended and the drain time ran out, the gate is
			// stopping): the name may well exist, so say why it was not
			// found rather than that it is unknown.
			return target{}, refusedAs(refusedNotLookedUp, p.name, fmt.Errorf("%s %s was not looked up: %w", c.kind.noun, guard.Quote(p.name, guard.ShowName), context.Cause(ctx)))
		}
		return target{}, refusedAs(refusedUnknownName, p.name, g.unknown(c.kind.noun, p.name))
	}
	return target{kind: k, server: key.Server, name: key.Name, wire: p.name, args: p.args, fwd: p.withName(params, key.Name), snap: snap}, nil
}

// resolveResource reads a request about one resource URI, which is not
// renamed: the URI's owner answers, the params travel as they are.
func resolveResource(method string) func(*Session, context.Context, string, json.RawMessage) (target, error) {
	return func(g *Session, ctx context.Context, _ string, params json.RawMessage) (target, error) {
		uri, ok := rawjson.GetString(params, "uri")
		if !ok {
			return target{}, refusedAs(refusedInvalidParams, "", rpc.Errorf(rpc.CodeInvalidParams, `%s: params need a "uri" string`, method))
		}
		server, snap, err := g.resourceOwner(ctx, uri)
		if err != nil {
			return target{}, refusedAs(uriRefusal(uri), uri, err)
		}
		return target{kind: policy.KindResource, server: server, name: uri, wire: uri, fwd: params, snap: snap}, nil
	}
}

// uriRefusal is the refusal kind of a URI resourceOwner found no owner for.
func uriRefusal(uri string) string {
	if uri == "" {
		return refusedInvalidParams
	}
	return refusedUnknownName
}

// resolveCompletion routes completion/complete by its reference: a prompt
// (renamed back to the upstream's name) or a resource URI. Completing a
// denied prompt's arguments would reach its server, so it is decided as
// the prompt or the resource.
func resolveCompletion(g *Session, ctx context.Context, _ string, params json.RawMessage) (target, error) {
	ref, _ := rawjson.Get(params, "ref")
	typ, _ := rawjson.GetString(ref, "type")
	switch typ {
	case "ref/prompt":
		name, _ := rawjson.GetString(ref, "name")
		key, snap, ok := g.resolve(ctx, &g.prompts, name)
		if !ok {
			return target{}, refusedAs(refusedUnknownName, name, rpc.Errorf(rpc.CodeInvalidParams, "completion/complete: unknown prompt %s", guard.Quote(name, guard.ShowName)))
		}
		fwd, err := rawjson.SetPath(params, []string{"ref", "name"}, rawjson.AppendString(nil, key.Name))
		if err != nil {
			return target{}, refusedAs(refusedInvalidParams, name, rpc.Errorf(rpc.CodeInvalidParams, "completion/complete: %v", err))
		}
		return target{kind: policy.KindPrompt, server: key.Server, name: key.Name, wire: name, fwd: fwd, snap: snap}, nil
	case "ref/resource":
		uri, _ := rawjson.GetString(ref, "uri")
		server, snap, err := g.resourceOwner(ctx, uri)
		if err != nil {
			return target{}, refusedAs(uriRefusal(uri), uri, err)
		}
		t := target{kind: policy.KindResource, server: server, name: uri, wire: uri, fwd: params, snap: snap}
		// A template is completed for the URI it makes with the values
		// given so far: decided as that URI too, so that completing a path
		// under a denied directory does not list its names.
		if args := completionArgs(params); args != nil && strings.Contains(uri, "{") {
			if u := expandTemplate(uri, args); u != uri {
				t.also = []string{u}
			}
		}
		return t, nil
	}
	return target{}, refusedAs(refusedInvalidParams, "", rpc.Errorf(rpc.CodeInvalidParams, `completion/complete: "ref.type" must be "ref/prompt" or "ref/resource", found %s`, guard.Quote(typ, guard.ShowKey)))
}

// resolveSampling reads an upstream's sampling request. What a server puts
// in front of the user's model is untrusted, and is inspected as the host
// will read it (one member per key) before the policy sees it.
func resolveSampling(g *Session, _ context.Context, from string, params json.RawMessage) (target, error) {
	if !g.hostCaps().sampling {
		return target{}, rpc.Errorf(rpc.CodeMethodNotFound, "the host does not support sampling")
	}
	return inspectSampling(g, from, params)
}

// inspectSampling reads a sampling request for a host that can sample.
func inspectSampling(g *Session, from string, params json.RawMessage) (target, error) {
	const tool = "sampling/createMessage"
	if err := rawjson.UniqueKeys(params); err != nil {
		g.guardAudit(g.who(), audit.Guard{Server: from, Tool: tool, Outcome: "refused", Kind: "duplicate_keys", Detail: keyErrorDetail(err)})
		return target{}, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: " + err.Error()}
	}
	if findings := guard.InspectResult(params); len(findings) > 0 {
		f := findings[0]
		g.guardAudit(g.who(), audit.Guard{Server: from, Tool: tool, Outcome: "refused", Kind: f.Kind, Detail: f.Path + ": " + f.Detail})
		return target{}, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: it carries an approval-shaped payload (" + f.Kind + " at " + guard.ShowPath(f.Path) + ")"}
	}
	return target{kind: policy.KindSampling, server: from, args: params, fwd: params}, nil
}

// sendSampling passes a decided sampling request to the host, neutralised:
// the host shows it to the user before it runs it.
func sendSampling(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error) {
	params, err := g.neutralSampling(t)
	if err != nil {
		return nil, err
	}
	return g.host.Call(ctx, r.method, params)
}

// neutralSampling is a decided sampling request as any host is shown it
// (a 2025 host's request, or a 2026-07-28 host's input request:
// relayParkedSampling), neutralised, or its refusal.
func (g *Session) neutralSampling(t target) (json.RawMessage, error) {
	params, err := g.neutralize(t.server, "sampling/createMessage", "sampling request", withoutContext(t.fwd))
	if err != nil {
		return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: " + refusedBecause(err)}
	}
	return params, nil
}

// withoutContext is a sampling request without its includeContext. The
// member asks the host to add to the prompt the context of "thisServer"
// or of "allServers"; behind the gate the host's one server is the gate,
// every upstream at once, so "thisServer" would hand the asking server
// what the others returned (their results, files read, secrets), a scope
// neither the policy's decision on sampling:<server> nor the human's
// answer to it covers. MCP lets a client ignore the request; the gate
// passes none (the host includes nothing), and declares no
// sampling.context upstream (upstreamFacing).
func withoutContext(params json.RawMessage) json.RawMessage {
	if out, found := rawjson.Delete(params, "includeContext"); found {
		return out
	}
	return params
}

// sendSubscribe forwards a subscription and counts it for the session:
// the upstream's updates of that URI go to the sessions subscribed to it.
func sendSubscribe(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error) {
	res, err := forwardTo(g, ctx, r, t)
	if err == nil {
		g.subscribed(t.name, 1)
	}
	return res, err
}

// sendUnsubscribe ends the session's subscription, and the upstream's only
// when no other session still holds one: the child is shared, by the
// sessions of its key, which for a server shared by every identity
// (childKeyFor) are other users' too.
func sendUnsubscribe(g *Session, ctx context.Context, r *relay, t target) (json.RawMessage, error) {
	g.subscribed(t.name, -1)
	for _, o := range g.sessionsOf(g.childKeyFor(g.childKey(), t.server)) {
		if o != g && o.isSubscribed(t.name) {
			return json.RawMessage("{}"), nil
		}
	}
	return forwardTo(g, ctx, r, t)
}

// withdrawn answers a request whose context ended before it was sent
// upstream (while a human was being asked). A request the host cancelled
// gets no answer, as MCP says; one ended for another reason (the host's
// input ended and the drain time ran out, rpc.ErrDrained) is refused with
// that reason, so that a host still reading learns what became of it.
func (r *relay) withdrawn(ctx context.Context, t target) (json.RawMessage, error) {
	cause := context.Cause(ctx)
	var pc *rpc.PeerCancelled
	if errors.As(cause, &pc) {
		return nil, ctx.Err()
	}
	return r.refuse(t, "the call was withdrawn before it was sent: "+cause.Error())
}
