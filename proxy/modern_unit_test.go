package proxy

// In-memory tests of a 2026-07-28 host session (era.go, era_ask.go): a host
// that never initializes and puts the _meta envelope on every request, over
// an rpc.Pipe, against the scripted upstream of the pipeline table.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// modernHost is a 2026-07-28 host: a JSON-RPC peer of one Session that
// records what the gate sends it.
type modernHost struct {
	t    *testing.T
	conn *rpc.Conn
	sess *Session

	mu    sync.Mutex
	notes []string // methods of the notifications received
	asked []string // methods of the requests received
}

func (h *modernHost) HandleCall(_ context.Context, m *rpc.Message) (json.RawMessage, error) {
	h.mu.Lock()
	h.asked = append(h.asked, m.Method)
	h.mu.Unlock()
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "a 2026-07-28 host answers no requests")
}

func (h *modernHost) HandleNotification(m *rpc.Message) {
	h.mu.Lock()
	h.notes = append(h.notes, m.Method)
	h.mu.Unlock()
}

func (h *modernHost) received() (notes, asked []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.notes...), append([]string(nil), h.asked...)
}

// newScriptedGate is a Gate with one scripted upstream "s" under policy.
func newScriptedGate(t *testing.T, serve scripted, policyText string, opts ...func(*Options)) *Gate {
	t.Helper()
	o := Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher: &scriptLauncher{servers: map[string]scripted{"s": serve}}, StartTimeout: 10 * time.Second,
		Policy: static(t, policyText), Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range opts {
		f(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close) // after every host has closed (cleanups run last first)
	return g
}

// serveModern connects a 2026-07-28 host to a new session of g.
func serveModernHost(t *testing.T, g *Gate, opts ...SessionOption) *modernHost {
	t.Helper()
	a, b := rpc.Pipe(rpc.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	h := &modernHost{t: t, sess: g.NewSession(opts...)}
	served := make(chan error, 1)
	go func() { served <- h.sess.ServeTransport(ctx, a) }()
	h.conn = rpc.New(b, h, rpc.Options{Peer: "modern host", Logger: slog.New(slog.DiscardHandler)})
	go func() { _ = h.conn.Run(ctx) }()
	t.Cleanup(func() {
		_ = h.conn.Close()
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeTransport: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the session did not end after its host closed")
		}
	})
	return h
}

// envelope is the _meta envelope of a request declaring caps.
func envelope(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"}}`
}

// call sends method with params (an object) and the envelope declaring
// caps, added to any _meta the params carry.
func (h *modernHost) call(method, params, caps string) (json.RawMessage, error) {
	h.t.Helper()
	meta, ok := rawjson.Get([]byte(params), "_meta")
	if !ok {
		meta = []byte("{}")
	}
	var err error
	_ = rawjson.Members([]byte(envelope(caps)), func(m rawjson.Member) bool {
		meta, err = rawjson.Set(meta, m.Key, m.Value)
		return err == nil
	})
	p, err2 := rawjson.Set([]byte(params), "_meta", meta)
	if err != nil || err2 != nil {
		h.t.Fatalf("params %s: %v %v", params, err, err2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.conn.Call(ctx, method, p)
}

// rpcCode returns err's JSON-RPC code and message, failing the test when
// err is not a JSON-RPC error.
func rpcCode(t *testing.T, err error) (int64, string) {
	t.Helper()
	var re *rpc.Error
	if !errors.As(err, &re) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return re.Code, re.Message
}

const formCaps = `{"elicitation":{"form":{}}}`

// A 2026-07-28 host is served statelessly: discover says what initialize
// would, without list-change promises; every result is stamped complete
// and the cacheable ones carry private cache hints; what the host did not
// declare, it does not get.
func TestModernHostServedPerRequest(t *testing.T) {
	up := newPipelineUpstream()
	g := newScriptedGate(t, up.serve, allowAll)
	h := serveModernHost(t, g)

	res, err := h.call("server/discover", `{}`, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		ResultType        string                     `json:"resultType"`
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		CacheScope        string                     `json:"cacheScope"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(res, &d); err != nil {
		t.Fatalf("discover %s: %v", res, err)
	}
	if d.ResultType != "complete" || len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != ModernVersion || d.CacheScope != "private" {
		t.Fatalf("discover: %s", res)
	}
	if _, ok := d.Meta[metaServerInfo]; !ok {
		t.Fatalf("discover names no server: %s", res)
	}
	if tools := string(d.Capabilities["tools"]); tools != "{}" {
		t.Fatalf("discover promises tool list changes the gate cannot deliver: tools %s", tools)
	}

	res, err = h.call("tools/list", `{}`, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"resultType":"complete"`, `"ttlMs":0`, `"cacheScope":"private"`, `"s__t"`} {
		if !strings.Contains(string(res), want) {
			t.Fatalf("tools/list lacks %s: %s", want, res)
		}
	}
	if !shown(string(res)) {
		t.Fatalf("tools/list not neutralised for a modern host: %s", res)
	}

	res, err = h.call("tools/call", `{"name":"s__t","arguments":{}}`, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"resultType":"complete"`) || strings.Contains(string(res), "ttlMs") || !shown(string(res)) {
		t.Fatalf("tools/call: %s", res)
	}
	// The upstream saw the call without the host's envelope.
	if !up.got("tools/call") {
		t.Fatal("the call did not reach the upstream")
	}

	// What has no place in the revision is refused as unknown, and a
	// session that opened modern has no initialize.
	for _, m := range []string{"logging/setLevel", "resources/subscribe", "tasks/list"} {
		_, err := h.call(m, `{"level":"info","uri":"mem://a"}`, `{}`)
		if code, msg := rpcCode(t, err); code != rpc.CodeMethodNotFound || !strings.Contains(msg, ModernVersion) {
			t.Errorf("%s: %d %s", m, code, msg)
		}
	}
	_, err = h.conn.Call(ctx10(t), "initialize", json.RawMessage(defaultRawInit))
	if code, msg := rpcCode(t, err); code != rpc.CodeInvalidRequest || !strings.Contains(msg, "has no initialize") {
		t.Fatalf("initialize on a modern session: %d %s", code, msg)
	}
	// Another version in the envelope is -32022, naming what is supported.
	_, err = h.conn.Call(ctx10(t), "tools/list", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`))
	if code, msg := rpcCode(t, err); code != CodeUnsupportedVersion || !strings.Contains(msg, "2027-01-01") {
		t.Fatalf("unsupported version: %d %s", code, msg)
	}
	// A request without the envelope on a modern session is refused too.
	_, err = h.conn.Call(ctx10(t), "tools/list", json.RawMessage(`{}`))
	if code, _ := rpcCode(t, err); code != rpc.CodeInvalidParams {
		t.Fatalf("no envelope: %d", code)
	}
}

// A 2025-11-25 session does not turn modern: once initialized, a request
// carrying the envelope is served by the older rules, which know no
// server/discover; and a session that opened modern refuses a retry whose
// host cannot show the gate's form.
func TestModernRequestOnOlderSession(t *testing.T) {
	up := newPipelineUpstream()
	h := startRawHost(t, map[string]scripted{"s": up.serve})
	resp := h.call("server/discover", `{"_meta":`+envelope(`{}`)+`}`)
	if code, _ := jsonPath(resp, "error", "message"); !strings.Contains(code, "not supported") {
		t.Fatalf("server/discover on a 2025 session: %s", resp)
	}
	// The older era's answer carries no resultType.
	resp = h.call("tools/list", `{"_meta":`+envelope(`{}`)+`}`)
	if _, ok := jsonRaw(resp, "result", "resultType"); ok {
		t.Fatalf("a 2025 session answered in the modern vocabulary: %s", resp)
	}
}

// The retry members are checked before anything runs: answers from a host
// that cannot show forms are -32021 naming the capability; answers
// without the state are -32602.
func TestModernRetryMembersChecked(t *testing.T) {
	up := newPipelineUpstream()
	g := newScriptedGate(t, up.serve, allowAll)
	h := serveModernHost(t, g)
	_, err := h.call("tools/call", `{"name":"s__t","arguments":{},"inputResponses":{},"requestState":"x"}`, `{}`)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != CodeMissingClientCapability || !strings.Contains(string(re.Data), "elicitation") {
		t.Fatalf("answers from a host without forms: %v", err)
	}
	_, err = h.call("tools/call", `{"name":"s__t","arguments":{},"inputResponses":{}}`, formCaps)
	if code, msg := rpcCode(t, err); code != rpc.CodeInvalidParams || !strings.Contains(msg, "without requestState") {
		t.Fatalf("answers without state: %d %s", code, msg)
	}
	if up.got("tools/call") {
		t.Fatal("a refused retry reached the upstream")
	}
}

// The approval of a 2026-07-28 request: the gate answers with its own
// input-required result (no call made), and the retry carrying the human's
// yes and the gate's state runs the call once; the state does not redeem a
// second time, nor for other arguments; a no refuses.
func TestModernAskRoundTrip(t *testing.T) {
	up := newPipelineUpstream()
	var audit lockedBuffer
	g := newScriptedGate(t, up.serve, "version: 1\nfallback: deny\nask: [mcp:s:t]\nallow: [mcp:s:x]\n", withAudit(&audit))
	h := serveModernHost(t, g)

	res, err := h.call("tools/call", `{"name":"s__t","arguments":{"a":1}}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "input_required" {
		t.Fatalf("an ask answered %s", res)
	}
	state, ok := rawjson.GetString(res, "requestState")
	q, ok2 := jsonRaw(res, "inputRequests", "mcp-gate-approval")
	if !ok || !ok2 || state == "" {
		t.Fatalf("no question or state: %s", res)
	}
	if m, _ := rawjson.GetString(q, "method"); m != "elicitation/create" {
		t.Fatalf("the question is %s", q)
	}
	if up.got("tools/call") {
		t.Fatal("the call ran before the human answered")
	}

	yes := `{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`
	retry := func(args, answer string) (json.RawMessage, error) {
		return h.call("tools/call", `{"name":"s__t","arguments":`+args+`,"inputResponses":`+answer+`,"requestState":`+string(rawjson.AppendString(nil, state))+`}`, formCaps)
	}
	// Other arguments: the state was minted for another call.
	res, err = retry(`{"a":2}`, yes)
	if err != nil || !strings.Contains(string(res), `"isError":true`) || up.got("tools/call") {
		t.Fatalf("a state redeemed for other arguments: %s %v", res, err)
	}
	// A wrong-argument attempt does not burn the state: the right retry runs.
	res, err = retry(`{"a":1}`, yes)
	if err != nil || strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), `"resultType":"complete"`) {
		t.Fatalf("the approved retry: %s %v", res, err)
	}
	if !up.got("tools/call") {
		t.Fatal("the approved retry did not reach the upstream")
	}
	up.reset()
	res, err = retry(`{"a":1}`, yes)
	if err != nil || !strings.Contains(string(res), "used before") || up.got("tools/call") {
		t.Fatalf("a replayed state: %s %v", res, err)
	}

	// A no is a refusal, and the audit records both answers.
	res, _ = h.call("tools/call", `{"name":"s__t","arguments":{"a":3}}`, formCaps)
	state, _ = rawjson.GetString(res, "requestState")
	res, err = h.call("tools/call", `{"name":"s__t","arguments":{"a":3},"inputResponses":{"mcp-gate-approval":{"action":"decline"}},"requestState":`+string(rawjson.AppendString(nil, state))+`}`, formCaps)
	if err != nil || !strings.Contains(string(res), "declined by the user") || up.got("tools/call") {
		t.Fatalf("a declined retry: %s %v", res, err)
	}
	for _, want := range []string{`"outcome":"input_required"`, `"outcome":"approved"`, `"outcome":"declined"`} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("the audit has no approval %s:\n%s", want, audit.String())
		}
	}
}

// A host whose request declares no form elicitation is refused as a 2025
// host without elicitation is: with a tool result saying why, and nothing
// sent upstream.
func TestModernAskWithoutForms(t *testing.T) {
	up := newPipelineUpstream()
	g := newScriptedGate(t, up.serve, "version: 1\nfallback: ask\n")
	h := serveModernHost(t, g)
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, `{"elicitation":{"url":{}}}`)
	if err != nil || !strings.Contains(string(res), "cannot ask for approval") || !strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("ask without forms: %s %v", res, err)
	}
	if up.got("tools/call") {
		t.Fatal("a refused request reached the upstream")
	}
}

// A 2026-07-28 host gets only progress of its own requests: an upstream's
// log or list change is not sent to it, and an upstream's request during
// its call reaches it as an input request of that call's result (that
// revision has no server-to-client requests; parked.go), labelled with
// the server and neutralised as an elicitation to an older host is.
func TestModernHostNotificationsAndServerRequests(t *testing.T) {
	up := newPipelineUpstream()
	g := newScriptedGate(t, up.serve, allowAll)
	h := serveModernHost(t, g)
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{"send":"elicitation/create"}}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "input_required" {
		t.Fatalf("the upstream's elicitation during a modern call: %s", res)
	}
	ir, _ := rawjson.Get(res, "inputRequests")
	q, _ := rawjson.Get(ir, "mcp-gate-upstream")
	if m, _ := rawjson.GetString(q, "method"); m != "elicitation/create" || !strings.Contains(string(q), `"[s] Pick[U+200B]"`) {
		t.Fatalf("the upstream's question, as the host reads it: %s", q)
	}
	for _, n := range []string{"notifications/message", "notifications/tools/list_changed"} {
		if _, err := h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+n+`"}}`, formCaps); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.call("tools/call", `{"name":"s__t","arguments":{"send":"notifications/progress"},"_meta":{"progressToken":"p1"}}`, formCaps); err != nil {
		t.Fatal(err)
	}
	notes, asked := h.received()
	if len(asked) != 0 {
		t.Fatalf("a modern host was sent requests: %v", asked)
	}
	if len(notes) == 0 {
		t.Fatal("the progress of the host's own request did not reach it")
	}
	for _, n := range notes {
		if n != "notifications/progress" {
			t.Fatalf("a modern host was sent %s (all: %v)", n, notes)
		}
	}
}

// The transport-facing checks say what the session will: a request claims
// the modern era by its envelope's version key alone, and the envelope is
// refused before serving as the session would refuse it.
func TestModernEnvelopeForTransports(t *testing.T) {
	for params, want := range map[string]bool{
		`{"_meta":` + envelope(`{}`) + `}`:                                   true,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`: true,
		`{"_meta":{"progressToken":1}}`:                                      false,
		`{}`:                                                                 false,
		`[]`:                                                                 false,
	} {
		if got := ClaimsModern(json.RawMessage(params)); got != want {
			t.Errorf("ClaimsModern(%s) = %v", params, got)
		}
	}
	if err := CheckModernEnvelope("tools/list", json.RawMessage(`{"_meta":`+envelope(`{}`)+`}`)); err != nil {
		t.Fatalf("a good envelope: %v", err)
	}
	err := CheckModernEnvelope("tools/list", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`))
	if code, msg := rpcCode(t, err); code != rpc.CodeInvalidParams || !strings.Contains(msg, "clientCapabilities: missing") {
		t.Fatalf("no capabilities: %d %s", code, msg)
	}
}

// An upstream that answers a modern host's call with a resultType other
// than complete is refused, not passed on for the host to act on.
func TestModernHostRefusesForeignResultType(t *testing.T) {
	serve := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			reply(w, id, `{"content":[],"resultType":"partial"}`)
		default:
			reply(w, id, `{}`)
		}
	}
	g := newScriptedGate(t, serve, allowAll)
	h := serveModernHost(t, g, PerRequest())
	_, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, `{}`)
	if code, msg := rpcCode(t, err); code != rpc.CodeInternalError || !strings.Contains(msg, "resultType") {
		t.Fatalf("a foreign resultType: %d %s", code, msg)
	}
}
