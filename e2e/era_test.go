package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 14: a host of protocol revision 2026-07-28 on stdio, driven byte by
// byte: discover, list, an allowed call, and asked calls approved and
// declined through input-required rounds, with tampered, expired, replayed
// and re-targeted requestState refused.

const eraPolicy = `version: 1
fallback: deny
approval:
  timeout: 2s
allow:
  - mcp:honest:blob
  - mcp:honest:ask
  - mcp:honest:sample
ask:
  - mcp:honest:echo
`

// modernHost is a raw host that sends every request with the 2026-07-28
// envelope.
type modernHost struct {
	*rawHost
	caps string // the clientCapabilities object it declares
	seq  atomic.Int64
}

func (h *modernHost) envelope() string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw-modern","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + h.caps + `}`
}

// request sends method with params (an object's members, without braces)
// and the envelope, and returns the whole response line.
func (h *modernHost) request(method, members string) string {
	h.t.Helper()
	id := h.seq.Add(1) + 100
	if members != "" {
		members += ","
	}
	return h.send(fmt.Sprint(id), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, members, h.envelope()))
}

// result decodes a response's result into a map, failing on an error.
func modernResult(t *testing.T, resp string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rawResult(t, resp), &m); err != nil {
		t.Fatalf("result of %s: %v", resp, err)
	}
	return m
}

func rpcErrorOf(t *testing.T, resp string) (int, string, map[string]any) {
	t.Helper()
	var m struct {
		Error *struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp), &m); err != nil || m.Error == nil {
		t.Fatalf("want an error response, got %s", resp)
	}
	return m.Error.Code, m.Error.Message, m.Error.Data
}

func startModern(t *testing.T, g *gate, caps string) *modernHost {
	return &modernHost{rawHost: startRaw(t, g), caps: caps}
}

// inputRequired checks resp is the gate's input-required result asking the
// approval question and returns its requestState.
func inputRequired(t *testing.T, resp string) string {
	t.Helper()
	r := modernResult(t, resp)
	if r["resultType"] != "input_required" {
		t.Fatalf("want an input-required result, got %s", resp)
	}
	reqs, _ := r["inputRequests"].(map[string]any)
	q, _ := reqs["mcp-gate-approval"].(map[string]any)
	params, _ := q["params"].(map[string]any)
	schema, _ := params["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	approve, _ := props["approve"].(map[string]any)
	if q["method"] != "elicitation/create" || params["mode"] != "form" || approve["type"] != "boolean" ||
		fmt.Sprint(schema["required"]) != "[approve]" || !strings.HasPrefix(fmt.Sprint(params["message"]), "mcp-gate: approve this tool call?") {
		t.Fatalf("the input request is not the gate's form question: %s", resp)
	}
	if _, ok := props["scope"]; ok {
		t.Fatalf("a 2026-07-28 question offers a session-wide yes, which it cannot keep: %s", resp)
	}
	state, _ := r["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState in %s", resp)
	}
	return state
}

// toolText returns a complete tools/call result's text and isError.
func toolText(t *testing.T, resp string) (string, bool) {
	t.Helper()
	r := modernResult(t, resp)
	if r["resultType"] != "complete" {
		t.Fatalf("want a complete result, got %s", resp)
	}
	var b strings.Builder
	content, _ := r["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			b.WriteString(fmt.Sprint(m["text"]))
		}
	}
	isErr, _ := r["isError"].(bool)
	return b.String(), isErr
}

const formCaps = `{"elicitation":{"form":{}},"roots":{"listChanged":true}}`

func answer(action string, approve bool) string {
	if action != "accept" {
		return fmt.Sprintf(`"inputResponses":{"mcp-gate-approval":{"action":%q}}`, action)
	}
	return fmt.Sprintf(`"inputResponses":{"mcp-gate-approval":{"action":"accept","content":{"approve":%t}}}`, approve)
}

func echoCall(text string) string {
	return fmt.Sprintf(`"name":"honest__echo","arguments":{"text":%q}`, text)
}

func TestModernHostStdio(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, eraPolicy))
	h := startModern(t, g, formCaps)

	// Discover, on a string id, as Claude Code opens.
	resp := h.send(`"server-discover-probe-1"`, `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{`+h.envelope()+`}}`)
	d := modernResult(t, resp)
	if d["resultType"] != "complete" || fmt.Sprint(d["supportedVersions"]) != "[2026-07-28]" || d["capabilities"] == nil || d["cacheScope"] != "private" {
		t.Fatalf("discover: %s", resp)
	}
	if _, ok := d["ttlMs"].(float64); !ok {
		t.Fatalf("discover without ttlMs: %s", resp)
	}

	// List: complete, cacheable fields, the gate's names.
	resp = h.request("tools/list", "")
	l := modernResult(t, resp)
	if l["resultType"] != "complete" || l["cacheScope"] != "private" || !strings.Contains(resp, `"name":"honest__echo"`) {
		t.Fatalf("tools/list: %s", resp)
	}

	// An allowed call runs at once.
	if text, isErr := toolText(t, h.request("tools/call", `"name":"honest__blob","arguments":{"bytes":3}`)); isErr || text != "xxx" {
		t.Fatalf("allowed call: %q isError=%v", text, isErr)
	}

	// An asked call, approved: the first round asks, the retry runs it.
	state := inputRequired(t, h.request("tools/call", echoCall("approved")))
	if strings.Contains(readEvents(t, events), "echo approved") {
		t.Fatal("the asked call reached the upstream before the answer")
	}
	if text, isErr := toolText(t, h.request("tools/call", echoCall("approved")+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state))); isErr || text != "approved" {
		t.Fatalf("approved retry: %q isError=%v", text, isErr)
	}
	// The same state again: replayed.
	if text, isErr := toolText(t, h.request("tools/call", echoCall("approved")+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state))); !isErr || !strings.Contains(text, "used before") {
		t.Fatalf("replayed state: %q isError=%v", text, isErr)
	}

	refused := func(what, text, args, ans, st, says string) {
		t.Helper()
		got, isErr := toolText(t, h.request("tools/call", echoCall(args)+`,`+ans+`,"requestState":`+fmt.Sprintf("%q", st)))
		if !isErr || !strings.Contains(got, says) {
			t.Fatalf("%s: %q isError=%v, want a refusal saying %q", what, got, isErr, says)
		}
		if strings.Contains(readEvents(t, events), "echo "+text) {
			t.Fatalf("%s: the call reached the upstream", what)
		}
	}
	// Declined, and answered no.
	refused("declined", "declined", "declined", answer("decline", false), inputRequired(t, h.request("tools/call", echoCall("declined"))), "declined by the user")
	refused("answered no", "no", "no", answer("accept", false), inputRequired(t, h.request("tools/call", echoCall("no"))), "answered no")
	// Re-targeted: a yes to one call's question presented with another's arguments.
	st := inputRequired(t, h.request("tools/call", echoCall("harmless")))
	refused("re-targeted", "rm -rf", "rm -rf", answer("accept", true), st, "issued for another call")
	// Tampered: one character of the signed payload changed.
	st = inputRequired(t, h.request("tools/call", echoCall("tampered")))
	b := []byte(st)
	if b[10] == 'A' {
		b[10] = 'B'
	} else {
		b[10] = 'A'
	}
	refused("tampered", "tampered", "tampered", answer("accept", true), string(b), "failed verification")
	refused("garbage state", "tampered", "tampered", answer("accept", true), "not-a-state", "not one the gate wrote")
	// Expired: the policy's approval timeout (2s) bounds the state.
	st = inputRequired(t, h.request("tools/call", echoCall("late")))
	time.Sleep(2100 * time.Millisecond)
	refused("expired", "late", "late", answer("accept", true), st, "expired")

	// Protocol errors: a missing envelope key, an unsupported version, a
	// retry from a request that declares no form elicitation.
	resp = h.send("900", `{"jsonrpc":"2.0","id":900,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if code, msg, _ := rpcErrorOf(t, resp); code != -32602 || !strings.Contains(msg, "clientCapabilities: missing") {
		t.Fatalf("missing capabilities: %s", resp)
	}
	resp = h.send("901", `{"jsonrpc":"2.0","id":901,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if code, _, data := rpcErrorOf(t, resp); code != -32022 || fmt.Sprint(data["supported"]) != "[2026-07-28]" || data["requested"] != "2099-01-01" {
		t.Fatalf("unsupported version: %s", resp)
	}
	bare := &modernHost{rawHost: h.rawHost, caps: `{}`}
	bare.seq.Store(5000)
	resp = bare.request("tools/call", echoCall("x")+`,`+answer("accept", true)+`,"requestState":"x.y"`)
	if code, _, data := rpcErrorOf(t, resp); code != -32021 || data["requiredCapabilities"] == nil {
		t.Fatalf("retry without elicitation: %s", resp)
	}
	// A request that declares no elicitation is refused as a 2025 host
	// without it is, and is never sent an input request.
	if text, isErr := toolText(t, bare.request("tools/call", echoCall("noform"))); !isErr || !strings.Contains(text, "cannot ask for approval") {
		t.Fatalf("ask without elicitation: %q isError=%v", text, isErr)
	}
	// An upstream's own questions never get a made-up answer: its
	// elicitation reaches a 2026-07-28 host as an input request of the call
	// (parked: park_test.go), its sampling request (the gate declares no
	// sampling upstream for this era) is an error.
	resp = h.request("tools/call", `"name":"honest__ask","arguments":{}`)
	if r := modernResult(t, resp); r["resultType"] != "input_required" || !strings.Contains(resp, `"mcp-gate-upstream":{"method":"elicitation/create"`) || strings.Contains(resp, "action=accept") {
		t.Fatalf("honest__ask through a modern host: %s", resp)
	}
	if text, isErr := toolText(t, h.request("tools/call", `"name":"honest__sample","arguments":{}`)); !isErr || strings.Contains(text, "action=accept") {
		t.Fatalf("honest__sample through a modern host: %q isError=%v", text, isErr)
	}
	h.mu.Lock()
	for _, l := range h.lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID != nil && m.Method != "" {
			t.Errorf("the gate sent a 2026-07-28 host a server-to-client request: %s", l)
		}
	}
	h.mu.Unlock()
	// initialize has no place on a modern connection.
	resp = h.send("902", `{"jsonrpc":"2.0","id":902,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if code, _, _ := rpcErrorOf(t, resp); code != -32600 {
		t.Fatalf("initialize on a modern connection: %s", resp)
	}
	// The audit has each round: the question, and each answer or refusal.
	outcomes := map[string]int{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			outcomes[fmt.Sprint(l["outcome"])]++
		}
	}
	if outcomes["input_required"] != 6 || outcomes["approved"] != 1 || outcomes["invalid_state"] != 5 || outcomes["declined"] != 2 {
		t.Errorf("approval audit outcomes: %v", outcomes)
	}
	if ev := readEvents(t, events); strings.Count(ev, "echo approved") != 1 {
		t.Fatalf("the approved call ran %d times, want once:\n%s", strings.Count(ev, "echo approved"), ev)
	}
}

// tools/list is the same for every connection of one principal, whatever
// capabilities each declares, and in a stable order.
func TestModernListSameForPrincipal(t *testing.T) {
	t.Parallel()
	servers := map[string]server{"honest": testserver("honest"), "other": testserver("honest")}
	list := func(caps string) string {
		g := gateCommand(t, servers, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow:\n  - mcp:*:*\n"))
		h := startModern(t, g, caps)
		return string(rawResult(t, h.request("tools/list", "")))
	}
	a, b := list(formCaps), list(`{}`)
	if a != b {
		t.Fatalf("two connections of one principal listed differently:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, `"resultType":"complete"`) || strings.Index(a, `"honest__echo"`) > strings.Index(a, `"other__echo"`) {
		t.Fatalf("list: %s", a)
	}
}

// An answer is bound to the policy revision that asked: after a reload,
// even to rules that still ask the same question, the old answer is
// refused, and a new round asks again.
func TestModernApprovalPolicyChanged(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	pol := writePolicy(t, eraPolicy)
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", pol)
	h := startModern(t, g, formCaps)
	state := inputRequired(t, h.request("tools/call", echoCall("before reload")))
	tmp := pol + ".tmp"
	if err := os.WriteFile(tmp, []byte(eraPolicy+"# edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, pol); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the policy reload", 10*time.Second, func() bool {
		for _, l := range g.auditLines(t) {
			if l["event"] == "policy_reload" {
				return true
			}
		}
		return false
	})
	text, isErr := toolText(t, h.request("tools/call", echoCall("before reload")+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state)))
	if !isErr || !strings.Contains(text, "issued for another call") {
		t.Fatalf("an answer given under the old policy: %q isError=%v", text, isErr)
	}
	if strings.Contains(readEvents(t, events), "echo before reload") {
		t.Fatal("the call ran on an answer given under the old policy")
	}
	// A new round under the new policy works.
	state = inputRequired(t, h.request("tools/call", echoCall("after reload")))
	if text, isErr := toolText(t, h.request("tools/call", echoCall("after reload")+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state))); isErr || text != "after reload" {
		t.Fatalf("after reload: %q isError=%v", text, isErr)
	}
}

// A host that pipelines its first requests: every one is served by the
// 2026-07-28 rules, however they race the first.
func TestModernPipelinedOpening(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	h := startModern(t, g, formCaps)
	var lines strings.Builder
	chans := map[int]chan string{}
	h.mu.Lock()
	for id := 1; id <= 6; id++ {
		chans[id] = make(chan string, 2)
		h.byID[fmt.Sprint(id)] = chans[id]
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{%s}}`+"\n", id, h.envelope())
	}
	h.mu.Unlock()
	if _, err := h.stdin.Write([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	for id, ch := range chans {
		select {
		case resp := <-ch:
			if r := modernResult(t, resp); r["resultType"] != "complete" {
				t.Fatalf("request %d: %s", id, resp)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no answer to %d", id)
		}
	}
}
