package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 14, the last mixed pair: a 2026-07-28 upstream's own input-required
// round during a 2026-07-28 host's call. The host gets the upstream's
// question as an input-required result of the gate's (its key in the
// gate's namespace, labelled with the server, a requestState of the
// gate's), and its retry reaches the upstream with the answer under the
// upstream's own key and the upstream's state echoed. Driven through the
// real binary on stdio and over HTTP, against the pinned TypeScript SDK
// 2.0.0 server (testdata/era_server.mjs: its confirm tool asks, and says
// what it was answered and which state it got back).

const modern2Policy = `version: 1
fallback: deny
approval:
  timeout: 2s
allow:
  - mcp:modern:confirm
ask:
  - mcp:modern:echo
`

const confirmCall = `"name":"modern__confirm","arguments":{}`

// relayedQuestion checks resp is an input-required result carrying the
// upstream's question under the gate's first relayed key, labelled with
// the server, and returns the gate's state.
func relayedQuestion(t *testing.T, resp string) string {
	t.Helper()
	r := modernResult(t, resp)
	reqs, _ := r["inputRequests"].(map[string]any)
	q, _ := reqs["mcp-gate-relayed-1"].(map[string]any)
	params, _ := q["params"].(map[string]any)
	state, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || len(reqs) != 1 || q["method"] != "elicitation/create" || state == "" {
		t.Fatalf("want the upstream's question under mcp-gate-relayed-1, got %s", resp)
	}
	if msg := fmt.Sprint(params["message"]); !strings.HasPrefix(msg, "[modern] Proceed with the deployment?") {
		t.Fatalf("the question is not labelled with its server: %q", msg)
	}
	if strings.Contains(state, "upstream-state-1") {
		t.Fatalf("the gate handed the host the upstream's state as its own: %s", resp)
	}
	return state
}

func relayedAnswer(answer, state string) string {
	return `"inputResponses":{"mcp-gate-relayed-1":` + answer + `},"requestState":` + fmt.Sprintf("%q", state)
}

const confirmYes = `{"action":"accept","content":{"confirm":true}}`

// modern2Scenario is what both transports must do; call and bare send a
// request declaring form elicitation and one declaring nothing.
func modern2Scenario(t *testing.T, call, bare modernCall) {
	confirm := func(members string) string {
		t.Helper()
		if members != "" {
			members = confirmCall + "," + members
		} else {
			members = confirmCall
		}
		return call("tools/call", "modern__confirm", members)
	}
	refused := func(what, resp, says string) {
		t.Helper()
		text, isErr := toolText(t, resp)
		if !isErr || !strings.Contains(text, says) || strings.Contains(text, "confirm=") {
			t.Fatalf("%s: %q isError=%v, want a refusal saying %q", what, text, isErr, says)
		}
	}

	// Asked and answered: the upstream gets the answer and its own state.
	st := relayedQuestion(t, confirm(""))
	if text, isErr := toolText(t, confirm(relayedAnswer(confirmYes, st))); isErr || text != "confirm=true state=upstream-state-1" {
		t.Fatalf("the answered retry: %q isError=%v", text, isErr)
	}
	refused("replayed", confirm(relayedAnswer(confirmYes, st)), "used before")

	// Declined.
	st = relayedQuestion(t, confirm(""))
	if text, isErr := toolText(t, confirm(relayedAnswer(`{"action":"decline"}`, st))); isErr || text != "confirm=declined state=upstream-state-1" {
		t.Fatalf("the declined retry: %q isError=%v", text, isErr)
	}

	// Refused, and none of these uses the state up: tampered, re-targeted
	// at other arguments and at another tool, the gate's approval state
	// in its place, an answer to a key the round did not ask.
	st = relayedQuestion(t, confirm(""))
	b := []byte(st)
	b[10] ^= 1
	refused("tampered", confirm(relayedAnswer(confirmYes, string(b))), "failed verification")
	refused("other arguments", call("tools/call", "modern__confirm", `"name":"modern__confirm","arguments":{"target":"prod"},`+relayedAnswer(confirmYes, st)), "issued for another call")
	refused("another tool", call("tools/call", "modern__echo", `"name":"modern__echo","arguments":{"text":"x"},`+relayedAnswer(confirmYes, st)), "issued for another call")
	approval := inputRequired(t, call("tools/call", "modern__echo", `"name":"modern__echo","arguments":{"text":"x"}`))
	refused("approval kind", confirm(relayedAnswer(confirmYes, approval)), "approval question")
	refused("approval answer", confirm(answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", st)), "did not ask")
	refused("relayed state for the approval", call("tools/call", "modern__echo", `"name":"modern__echo","arguments":{"text":"x"},`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", st)), "issued for another call")
	if text, isErr := toolText(t, confirm(relayedAnswer(confirmYes, st))); isErr || text != "confirm=true state=upstream-state-1" {
		t.Fatalf("the right retry after refused ones: %q isError=%v", text, isErr)
	}

	// Expired (the policy's approval timeout, 2s).
	st = relayedQuestion(t, confirm(""))
	time.Sleep(2100 * time.Millisecond)
	refused("expired", confirm(relayedAnswer(confirmYes, st)), "expired")

	// A request that declared no form elicitation: the upstream is told
	// the request's own capabilities (none), so it does not ask, and
	// answers as its revision says, with -32021 naming what it needs,
	// which the host gets.
	resp := bare("tools/call", "modern__confirm", confirmCall)
	code, _, data := rpcErrorOf(t, resp)
	need, _ := data["requiredCapabilities"].(map[string]any)
	if code != -32021 || need["elicitation"] == nil || strings.Contains(resp, "mcp-gate-relayed") {
		t.Fatalf("a request without forms: %s", resp)
	}
}

func TestModernUpstreamAsksModernHostStdio(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"modern": eraServer("2026-07-28")}, "--policy", writePolicy(t, modern2Policy))
	h := startModern(t, g, formCaps)
	bare := &modernHost{rawHost: h.rawHost, caps: `{}`}
	bare.seq.Store(50000)
	modern2Scenario(t,
		func(method, _, members string) string { return h.request(method, members) },
		func(method, _, members string) string { return bare.request(method, members) })
}

func TestModernUpstreamAsksModernHostHTTP(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"modern": eraServer("2026-07-28")}, "--policy", writePolicy(t, modern2Policy))
	url := g.serveHTTP(t)
	c := &modernHTTP{t: t, url: url, caps: formCaps}
	bare := &modernHTTP{t: t, url: url, caps: `{}`}
	c.ok("tools/list", "", "")
	// A refused request is 400 over HTTP (-32021 included), so the bare
	// request's body is taken whatever its status.
	modern2Scenario(t, c.ok, func(method, name, members string) string {
		_, b := bare.request(method, name, members)
		return b
	})
}
