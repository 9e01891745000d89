package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Both protocol eras on one connection type. A host of revision 2026-07-28
// opens with server/discover (or any request) carrying the per-request
// _meta envelope; a 2025-11-25 host opens with initialize. The session
// chooses by how the host opens, as the spec's compatibility matrix says:
// a request with an envelope claim before any initialize is modern, an
// initialize is the older era and served exactly as before (gate.go).
//
// A modern request stands on its own: its protocol version and client
// capabilities are read from its own _meta, never from an earlier request,
// and every result carries resultType. There are no server-to-client
// requests, so the gate asks for approval with an input-required result
// (era_ask.go), and the session's upstream children are those of its
// principal alone (the same capabilities declared upstream for every
// request, modernUpstreamCaps; an older upstream's questions are put to
// the call in flight as input requests, parked.go), which makes
// tools/list the same for every connection of one principal.
//
// What here is stdio-independent (readEnvelope, the result stamp, the
// ask) is what an HTTP front end reuses; the HTTP header rules
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name) are that front end's.

// ModernVersion is the 2026-07-28 revision the gate serves.
const ModernVersion = "2026-07-28"

// Error codes of the 2026-07-28 revision.
const (
	CodeMissingClientCapability = -32021
	CodeUnsupportedVersion      = -32022
)

// The reserved _meta keys of the per-request envelope.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// eraState is a session's era: set once the host opened at 2026-07-28.
type eraState struct {
	modern atomic.Bool
	open   sync.Once // joins the principal's upstream children, once
	// perRequest: the session serves one request (PerRequest), so its
	// start and end are logged at debug, not info.
	perRequest bool
}

// PerRequest marks a session that serves a single 2026-07-28 request (the
// HTTP front end runs one per POST): its start, opening and end are
// logged at debug, so that a busy gate logs requests, not sessions.
func PerRequest() SessionOption { return func(s *Session) { s.era.perRequest = true } }

// lifeLevel is the level of the session's start and end lines.
func (s *Session) lifeLevel() slog.Level {
	if s.era.perRequest {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// modernReq is what one 2026-07-28 request declared, carried in its
// context to the decision (decide, askModern).
type modernReq struct {
	method  string
	version string
	caps    hostInfo // elicitForm, elicitURL, sampling, roots of this request
	client  string   // the envelope's clientInfo.name, which picks approval.hosts
	// The retry of an input-required round: the answers and the state.
	inputResponses json.RawMessage
	requestState   string
	hasState       bool
	// state is requestState as verified once, when the request was read
	// (serveModern: its MAC, its kind, its claims), or stateErr why it is
	// none of the gate's. Every later check of the request reads these
	// (decide's in-flight yes, askModern, the resumes, settleParked):
	// they check expiry and the binding, and use it up, never verify again.
	state    *elicitation.State
	stateErr error
	// digest caches argsDigest for the arguments digestOf: a retry's
	// decision (askModern, inFlightYes) and its resume (parkBinding) bind
	// the same arguments, and the canonical digest decodes and re-encodes
	// them. Used only by the request's own handler, in turn.
	digestOf  json.RawMessage
	digest    string
	digestErr error
	// asked is set when the gate answered with its own input-required
	// result, which carries its own resultType.
	asked atomic.Bool
}

type modernKey struct{}

// modernOf returns the modern request ctx serves, or nil for a 2025 one.
func modernOf(ctx context.Context) *modernReq {
	m, _ := ctx.Value(modernKey{}).(*modernReq)
	return m
}

// servesModern says whether req is served by the 2026-07-28 rules: on a
// session that opened modern, or as the opening of one (an envelope claim
// before any initialize).
func (s *Session) servesModern(req *rpc.Message) bool {
	if s.era.modern.Load() {
		return true
	}
	if h := s.hostCaps(); h.initialized {
		// Opened: by initialize, or by a modern request still on its way
		// to marking the session (serveModern).
		return h.protocolVersion == ModernVersion
	}
	if req.Method == "initialize" {
		return false
	}
	meta, ok := rawjson.Get(req.Params, "_meta")
	if !ok {
		return false
	}
	_, claim := rawjson.Get(meta, metaProtocolVersion)
	return claim
}

// modernMethods are the requests a 2026-07-28 host may send, served by the
// same code as the older era's (hostMethods), so both take one path.
// logging/setLevel and resources/(un)subscribe have no place in that
// revision (the log level and subscriptions are per request and per
// listen stream there) and are refused as unknown.
var modernMethods = map[string]bool{
	"ping": true, "tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "tools/call": true, "prompts/get": true,
	"resources/read": true, "completion/complete": true,
}

// cacheable are the methods whose 2026-07-28 results carry ttlMs and
// cacheScope. Lists depend on the principal and the policy: private, and
// not to be reused (a policy reload changes them).
var cacheable = map[string]bool{
	"server/discover": true, "tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true,
}

// serveModern serves one request of a 2026-07-28 host.
func (s *Session) serveModern(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	if req.Method == "initialize" {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "initialize: this connection opened at protocol %s, which has no initialize; a 2025-11-25 host must open a new connection with initialize", ModernVersion)
	}
	// What is refused before serveMethod is refused before any decision
	// (refused.go); HandleCall records it for the pipeline's methods.
	m, params, err := readEnvelope(req.Method, req.Params)
	if err != nil {
		return nil, refusedAs(refusedEnvelope, "", err)
	}
	if req.Method == "server/discover" {
		return s.discover()
	}
	if !modernMethods[req.Method] {
		return nil, refusedAs(refusedEnvelope, "", rpc.Errorf(rpc.CodeMethodNotFound, "method %s is not supported by mcp-gate at protocol %s", guard.Quote(req.Method, guard.ShowName), ModernVersion))
	}
	if m.hasState || m.inputResponses != nil {
		if !m.caps.elicitForm {
			// Answers to the gate's form question from a request that says
			// its client cannot show forms.
			return nil, refusedAs(refusedEnvelope, "", &rpc.Error{Code: CodeMissingClientCapability,
				Message: "Missing required client capabilities: elicitation (a retry with inputResponses answers a form elicitation)",
				Data:    json.RawMessage(`{"requiredCapabilities":{"elicitation":{"form":{}}}}`)})
		}
		if !m.hasState {
			return nil, refusedAs(refusedEnvelope, "", rpc.Errorf(rpc.CodeInvalidParams, "%s: inputResponses without requestState; answer the input-required result the gate sent, echoing its requestState", req.Method))
		}
		m.state, m.stateErr = s.rounds.Verify(m.requestState)
	}
	if err := s.openModern(); err != nil {
		return nil, refusedAs(refusedEnvelope, "", err)
	}
	if s.era.modern.CompareAndSwap(false, true) {
		s.log.Log(ctx, s.lifeLevel(), "host session opened at protocol "+ModernVersion, "session", s.session)
	}
	ctx = context.WithValue(ctx, modernKey{}, m)
	res, err := s.serveMethod(ctx, hostMethods[req.Method], req.Method, params)
	if err != nil {
		return nil, err
	}
	if m.asked.Load() {
		return res, nil // the gate's own input-required result
	}
	return stampComplete(req.Method, res)
}

// modernUpstreamCaps is what the children of a 2026-07-28 principal are
// told the client can do: form elicitation, whose questions the gate puts
// to the host request in flight as input requests (parked.go). A 2025
// upstream learns capabilities once, at initialize, so it cannot follow
// each request's declaration; declaring the same for every request keeps
// tools/list the same for every connection of the principal. A request
// that declared no form elicitation has such a question declined for it
// (vetElicitation). Sampling and roots are not declared (most modern
// hosts do not offer sampling, and roots are a workspace's, which one
// principal's connections do not share); an upstream that asks for them
// anyway is relayed to a request that declared them, and refused for one
// that did not.
var modernUpstreamCaps = json.RawMessage(`{"elicitation":{"form":{}}}`)

// openModern gives the session its principal's upstream children, once:
// the key of a 2026-07-28 session is its identity and the fixed modern
// capabilities (poolKey), so every connection of one principal shares
// them, and their lists.
//
// A host that raced an initialize in ahead of its first modern request has
// a 2025 session: its children are those initialize chose, and the modern
// request is refused rather than moving the session to others.
func (s *Session) openModern() error {
	s.era.open.Do(func() {
		// A 2025 host of the principal that declared exactly this shares
		// the children: an upstream's request still goes to the one
		// session whose call is in flight (sessionFor), and is put to it
		// as its era puts it.
		forUp := modernUpstreamCaps
		key := poolKey(s.identity, forUp, false, s.session)
		s.mu.Lock()
		if s.hostCaps().initialized {
			s.mu.Unlock()
			return
		}
		s.hostInfo.Store(&hostInfo{initialized: true, protocolVersion: ModernVersion, capsForUpstream: forUp, poolKey: key})
		s.mu.Unlock()
		// The catalog cache is read only for a key no session holds yet:
		// over HTTP every 2026-07-28 request is a session of its own.
		s.Gate.mu.Lock()
		held := s.cats[key] != nil
		s.Gate.mu.Unlock()
		seed := s.empty
		if !held {
			seed = s.seedCatalog(forUp, s.cacheScope()).snap
		}
		s.joinKey(key, forUp, seed)
	})
	if v := s.hostCaps().protocolVersion; v != ModernVersion {
		return rpc.Errorf(rpc.CodeInvalidRequest, "this connection opened with initialize at protocol %s; a %s request has no place on it", v, ModernVersion)
	}
	return nil
}

// readEnvelope checks a 2026-07-28 request's _meta envelope and returns
// what it declared, with the params the older-era code serves: the
// envelope keys and the retry members taken out, everything else as sent.
// A missing or malformed envelope is -32602, an unsupported version
// -32022, each saying what was found and what was expected.
func readEnvelope(method string, params json.RawMessage) (*modernReq, json.RawMessage, error) {
	bad := func(key, problem string) error {
		return &rpc.Error{Code: rpc.CodeInvalidParams,
			Message: fmt.Sprintf("Invalid _meta envelope for protocol revision %s: %s: %s", ModernVersion, key, problem),
			Data:    mustJSON(map[string]any{"envelope": map[string]string{"key": key, "problem": problem}})}
	}
	if len(params) == 0 || params[0] != '{' {
		return nil, nil, bad(metaProtocolVersion, "missing")
	}
	meta, ok := rawjson.Get(params, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		return nil, nil, bad(metaProtocolVersion, "missing")
	}
	vRaw, hasV := rawjson.Get(meta, metaProtocolVersion)
	capsRaw, hasC := rawjson.Get(meta, metaClientCapabilities)
	switch {
	case !hasV:
		return nil, nil, bad(metaProtocolVersion, "missing")
	case !hasC:
		return nil, nil, bad(metaClientCapabilities, "missing")
	}
	version, ok := rawjson.String(vRaw)
	if !ok {
		return nil, nil, bad(metaProtocolVersion, "expected a string")
	}
	if len(capsRaw) == 0 || capsRaw[0] != '{' {
		return nil, nil, bad(metaClientCapabilities, "expected an object")
	}
	if version != ModernVersion {
		return nil, nil, &rpc.Error{Code: CodeUnsupportedVersion,
			Message: "Unsupported protocol version: " + shorten(version, 64),
			Data:    mustJSON(map[string]any{"supported": []string{ModernVersion}, "requested": version})}
	}
	m := &modernReq{method: method, version: version, caps: declaredCaps(capsRaw)}
	if ci, ok := rawjson.Get(meta, metaClientInfo); ok {
		// The name picks approval.hosts (policy.ApprovalVia), as
		// initialize's clientInfo does for a 2025 host.
		m.client, _ = rawjson.GetString(ci, "name")
	}
	if st, ok := rawjson.Get(params, "requestState"); ok {
		s, isStr := rawjson.String(st)
		if !isStr {
			return nil, nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: requestState must be the string the gate sent", method)
		}
		m.requestState, m.hasState = s, true
	}
	if ir, ok := rawjson.Get(params, "inputResponses"); ok {
		if len(ir) == 0 || ir[0] != '{' {
			return nil, nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: inputResponses must be an object", method)
		}
		m.inputResponses = ir
	}
	// What the older-era code and the upstream see: no envelope (an
	// upstream that reads it would take a 2025 session for a modern one),
	// no retry members (they are the gate's, not the server's).
	// Each is taken out in one pass (rawjson.DeleteKeys, the bytes of
	// deleting them in turn): an envelope alone, as most requests carry,
	// takes _meta out with the retry members, in one copy of the params.
	if !envelopeOnly(meta) {
		meta, _ = rawjson.DeleteKeys(meta, envelopeKeys[:]...)
		var err error
		if params, err = rawjson.Set(params, "_meta", meta); err != nil {
			return nil, nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: _meta: %v", method, err)
		}
		out, _ := rawjson.DeleteKeys(params, retryKeys[1:]...)
		return m, out, nil
	}
	out, _ := rawjson.DeleteKeys(params, retryKeys[:]...)
	return m, out, nil
}

// envelopeKeys are the _meta keys of the envelope, which no upstream sees;
// retryKeys, _meta and the members of a retry, which the params of a
// request whose _meta is the envelope alone lose.
var (
	envelopeKeys = [...]string{metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel}
	retryKeys    = [...]string{"_meta", "requestState", "inputResponses"}
)

// envelopeOnly says whether meta has no member but the envelope's, and
// so is "{}" once they are taken out: the space the host left before the
// closing brace would stay (as it did when they were deleted in turn), and
// such a _meta is kept, empty.
func envelopeOnly(meta json.RawMessage) bool {
	only, lastEnd := true, 0
	_ = rawjson.Members(meta, func(m rawjson.Member) bool {
		switch m.Key {
		case metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel:
			lastEnd = m.End
			return true
		}
		only = false
		return false
	})
	return only && (lastEnd > 0 && lastEnd == len(meta)-1 || string(meta) == "{}")
}

// declaredCaps reads the capabilities a request declared, as initialize
// reads them (a bare elicitation object means form).
func declaredCaps(caps json.RawMessage) hostInfo {
	var h hostInfo
	if e, ok := rawjson.Get(caps, "elicitation"); ok && len(e) > 0 && e[0] == '{' {
		_, form := rawjson.Get(e, "form")
		_, url := rawjson.Get(e, "url")
		h.elicitForm = form || !url
		h.elicitURL = url
	}
	_, h.sampling = rawjson.Get(caps, "sampling")
	_, h.roots = rawjson.Get(caps, "roots")
	return h
}

// discover answers server/discover: what initialize says, for the modern
// revision, with no state kept.
func (s *Session) discover() (json.RawMessage, error) {
	caps := s.advertised()
	delete(caps, "tasks")
	// List changes and resource updates reach a 2026-07-28 host only on a
	// subscriptions/listen stream, which the gate does not serve yet: it
	// does not advertise them (Claude Code opens a listen stream when it
	// sees listChanged).
	for _, k := range []string{"tools", "prompts", "resources"} {
		if _, ok := caps[k]; ok {
			caps[k] = map[string]any{}
		}
	}
	return json.Marshal(map[string]any{
		"resultType":        "complete",
		"supportedVersions": []string{ModernVersion},
		"capabilities":      caps,
		"instructions":      s.instructions(),
		"ttlMs":             0,
		"cacheScope":        "private",
		"_meta": map[string]any{
			metaServerInfo: map[string]any{"name": "mcp-gate", "version": Version},
		},
	})
}

// stampComplete marks a result complete for a 2026-07-28 host without
// re-encoding it: resultType, and for a cacheable method ttlMs 0 and
// cacheScope private, whatever the upstream gave. A result already carrying another
// resultType comes from an upstream speaking that revision's vocabulary,
// whose input requests and state the gate does not relay (yet): it is
// refused rather than passed on for the host to act on.
func stampComplete(method string, res json.RawMessage) (json.RawMessage, error) {
	if len(res) == 0 || res[0] != '{' {
		return nil, rpc.Errorf(rpc.CodeInternalError, "%s: the result is not an object", method)
	}
	if rt, ok := rawjson.Get(res, "resultType"); ok {
		if v, ok := rawjson.String(rt); v != "complete" {
			if !ok {
				v = string(rt)
			}
			return nil, rpc.Errorf(rpc.CodeInternalError, "%s: the upstream answered with resultType %s, which mcp-gate does not relay; only complete results reach a %s host", method, guard.Quote(v, guard.ShowKey), ModernVersion)
		}
	}
	out, err := rawjson.Set(res, "resultType", []byte(`"complete"`))
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "%s: %v", method, err)
	}
	if cacheable[method] {
		// Always the gate's, never the upstream's: what the host may reuse
		// was decided for this principal under this policy revision (and,
		// under ask, answered by a human for this one request). An
		// upstream's "public" would let a shared cache serve it to another
		// principal, whom the policy may deny, and a lifetime would let the
		// host serve it again without the gate's decision, after a reload
		// that denies it included.
		out, _ = rawjson.Set(out, "ttlMs", []byte("0"))
		out, _ = rawjson.Set(out, "cacheScope", []byte(`"private"`))
	}
	return out, nil
}

// modernNotifies says which notifications a 2026-07-28 host gets: only
// progress of its own requests. List changes and resource updates reach it
// through subscriptions/listen, which the gate does not serve yet, and a
// server must not send a type the client did not ask for.
func modernNotifies(method string) bool { return method == "notifications/progress" }

// modernServerRequest refuses an upstream's request during a call of a
// 2026-07-28 host that the gate cannot put to it as an input request of
// the call in flight (parked.go): a method that is no input request, or
// one outside a call that can carry an input-required result.
func modernServerRequest(method string) error {
	return rpc.Errorf(rpc.CodeMethodNotFound, "%s: the host connected at protocol %s, which has no server-to-client requests, and mcp-gate relays only elicitation, sampling and roots to it, as input requests of a tools/call, prompts/get or resources/read in flight", method, ModernVersion)
}

// CheckModernEnvelope checks a 2026-07-28 request's _meta envelope as the
// session will (missing or malformed: -32602; another version: -32022), so
// that a transport can refuse it before serving it (the HTTP front end
// answers those with status 400). It returns nil or an *rpc.Error.
func CheckModernEnvelope(method string, params json.RawMessage) error {
	_, _, err := readEnvelope(method, params)
	return err
}

// ClaimsModern reports whether a request's params carry the 2026-07-28
// envelope claim (the protocol version key in _meta): the body-primary
// test by which a transport routes a request to that era's rules.
func ClaimsModern(params json.RawMessage) bool {
	meta, ok := rawjson.Get(params, "_meta")
	if !ok {
		return false
	}
	_, claim := rawjson.Get(meta, metaProtocolVersion)
	return claim
}
