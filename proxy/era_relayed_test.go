package proxy

// In-memory tests of relayed rounds (era_relayed.go): a 2026-07-28
// upstream's input-required result during a 2026-07-28 host's call comes
// back to the host as an input-required result of the gate's, and the
// host's retry goes on to the upstream with the answers under its own keys
// and its state echoed byte for byte.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
)

// relayedHost is a 2026-07-28 host of a gate whose one server "s" is the
// scripted 2026-07-28 upstream u.
func relayedHost(t *testing.T, u *modernUpstream, policyText string, opts ...func(*Options)) *modernHost {
	t.Helper()
	g := newScriptedGate(t, u.serve, policyText, append([]func(*Options){pinModern}, opts...)...)
	return serveModernHost(t, g)
}

// retryWith is the host's retry of tools/call s__t with args, answers and
// state.
func (h *modernHost) retryWith(args, answers, state string) (json.RawMessage, error) {
	return h.call("tools/call", `{"name":"s__t","arguments":`+args+`,"inputResponses":`+answers+`,"requestState":`+string(rawjson.AppendString(nil, state))+`}`, formCaps)
}

// inputRequired checks res is an input-required result and returns its
// input requests and state.
func inputRequired(t *testing.T) func(res json.RawMessage, err error) (json.RawMessage, string) {
	return func(res json.RawMessage, err error) (json.RawMessage, string) {
		t.Helper()
		if err != nil {
			t.Fatalf("want an input-required result, got %v", err)
		}
		if rt, _ := rawjson.GetString(res, "resultType"); rt != "input_required" {
			t.Fatalf("want an input-required result, got %s", res)
		}
		reqs, ok := rawjson.Get(res, "inputRequests")
		st, ok2 := rawjson.GetString(res, "requestState")
		if !ok || !ok2 || st == "" {
			t.Fatalf("an input-required result without questions or state: %s", res)
		}
		return reqs, st
	}
}

// The upstream's round reaches the host under the gate's keys (an
// upstream key that names the gate's own approval question included),
// labelled with the server; the retry reaches the upstream with the answers
// under its own keys and its state byte for byte, and the result is
// guarded with the host's answer exempted.
func TestRelayedRoundTrip(t *testing.T) {
	const state = `"opaque \u00e9 state"`
	u := &modernUpstream{round: func(n int, p json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":{"mcp-gate-approval":` + askColour + `,"colour":` + askColour + `},"requestState":` + state + `}`
		}
		// The upstream reports what the user answered, an accepting
		// elicitation result (approval-shaped): the host's own answer is
		// exempt from the guard.
		a, _ := rawjson.Get(p, "inputResponses")
		a, _ = rawjson.Get(a, "colour")
		return `{"resultType":"complete","content":[{"type":"text","text":` + string(rawjson.AppendString(nil, string(a))) + `}]}`
	}}
	h := relayedHost(t, u, allowAll)
	reqs, st := inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"x":1}}`, formCaps))
	var keys []string
	_ = rawjson.Members(reqs, func(m rawjson.Member) bool { keys = append(keys, m.Key); return true })
	if strings.Join(keys, ",") != "mcp-gate-relayed-1,mcp-gate-relayed-2" {
		t.Fatalf("the host saw keys %v, want the gate's namespace only", keys)
	}
	if msg, _ := jsonPath(reqs, "mcp-gate-relayed-1", "params", "message"); !strings.HasPrefix(msg, "[s] Pick a colour") {
		t.Fatalf("the question is not labelled with its server: %s", reqs)
	}
	if len(u.seen()) != 1 {
		t.Fatalf("%d upstream calls before the host answered", len(u.seen()))
	}
	const typed = "red"
	answers := `{"mcp-gate-relayed-1":{"action":"decline"},"mcp-gate-relayed-2":{"action":"accept","content":{"c":"` + typed + `"}}}`
	res, err := h.retryWith(`{"x":1}`, answers, st)
	if err != nil || !strings.Contains(string(res), `\"c\":\"red\"`) || strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("the retry's result: %s %v", res, err)
	}
	if rt, _ := rawjson.GetString(res, "resultType"); rt != "complete" {
		t.Fatalf("the result is not stamped complete: %s", res)
	}
	calls := u.seen()
	if len(calls) != 2 {
		t.Fatalf("%d calls upstream, want the call and its retry", len(calls))
	}
	retry := calls[1]
	if got, _ := rawjson.Get(retry, "requestState"); string(got) != state {
		t.Fatalf("the upstream's state came back as %s, want %s byte for byte", got, state)
	}
	if a, _ := jsonPath(retry, "inputResponses", "mcp-gate-approval", "action"); a != "decline" {
		t.Fatalf("the answers under the upstream's keys: %s", retry)
	}
	if c, _ := jsonPath(retry, "inputResponses", "colour", "content", "c"); c != typed {
		t.Fatalf("the answers under the upstream's keys: %s", retry)
	}
	if x, _ := jsonRaw(retry, "arguments", "x"); string(x) != "1" {
		t.Fatalf("the retry changed the arguments: %s", retry)
	}
	if strings.Contains(string(retry), elicitation.RelayedKeyPrefix) {
		t.Fatalf("the upstream saw the gate's keys: %s", retry)
	}
	// Replayed: refused, and nothing reaches the upstream.
	res, err = h.retryWith(`{"x":1}`, answers, st)
	if err != nil || !strings.Contains(string(res), "used before") || len(u.seen()) != 2 {
		t.Fatalf("a replayed state: %s %v", res, err)
	}
}

// A state the gate did not mint for exactly this round of this call is
// refused before anything reaches the upstream: altered, re-targeted at
// other arguments or another tool, another kind (the gate's approval), and
// answers to keys the round did not ask, or none.
func TestRelayedStateRefused(t *testing.T) {
	u := &modernUpstream{round: func(n int, _ json.RawMessage) string {
		return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":"s"}`
	}}
	h := relayedHost(t, u, "version: 1\nfallback: deny\nallow: [mcp:s:t, mcp:s:x]\n")
	_, st := inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"a":1}}`, formCaps))
	yes := `{"mcp-gate-relayed-1":{"action":"accept","content":{"c":"red"}}}`
	flip := byte('A')
	if st[7] == 'A' {
		flip = 'B'
	}
	// A state of the approval kind, minted for exactly this call.
	b, err := h.sess.parkBinding("tools/call", target{server: "s", name: "t", args: json.RawMessage(`{"a":1}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	approval, err := h.sess.rounds.Mint(b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, args, answers, state, want string }{
		{"altered", `{"a":1}`, yes, st[:7] + string(flip) + st[8:], "failed verification"},
		{"other arguments", `{"a":2}`, yes, st, "another call"},
		{"approval kind", `{"a":1}`, yes, approval, "approval question"},
		{"approval answer", `{"a":1}`, `{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`, st, "did not ask"},
		{"extra key", `{"a":1}`, `{"mcp-gate-relayed-1":{"action":"decline"},"mcp-gate-relayed-2":{"action":"decline"}}`, st, "did not ask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := h.retryWith(c.args, c.answers, c.state)
			if err != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), c.want) {
				t.Fatalf("want a refusal with %q, got %s %v", c.want, res, err)
			}
			if n := len(u.seen()); n != 1 {
				t.Fatalf("%d calls upstream", n)
			}
		})
	}
	// Another tool: the state is the other tool's call's.
	res, err := h.call("tools/call", `{"name":"s__x","arguments":{"a":1},"inputResponses":`+yes+`,"requestState":`+string(rawjson.AppendString(nil, st))+`}`, formCaps)
	if err != nil || !strings.Contains(string(res), `"isError":true`) || len(u.seen()) != 1 {
		t.Fatalf("a state re-targeted at another tool: %s %v", res, err)
	}
	// None of those attempts used the state up: the right retry still goes
	// on, once (and the upstream asks again: another round).
	if _, err := h.retryWith(`{"a":1}`, yes, st); err != nil || len(u.seen()) != 2 {
		t.Fatalf("the right retry after refused ones: %v, %d calls", err, len(u.seen()))
	}
	// A relayed state does not answer the gate's own question either.
	res, err = h.call("tools/call", `{"name":"s__x","arguments":{"a":1},"inputResponses":{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}},"requestState":`+string(rawjson.AppendString(nil, st))+`}`, formCaps)
	if err != nil || !strings.Contains(string(res), `"isError":true`) || len(u.seen()) != 2 {
		t.Fatalf("a relayed state answered the approval question: %s %v", res, err)
	}
}

// The rounds of one call are counted across the host's retries: an
// upstream that never stops asking fails after maxUpstreamRounds.
func TestRelayedRoundsCapped(t *testing.T) {
	u := &modernUpstream{round: func(n int, _ json.RawMessage) string {
		return fmt.Sprintf(`{"resultType":"input_required","inputRequests":{"c":%s},"requestState":"s%d"}`, askColour, n)
	}}
	h := relayedHost(t, u, allowAll)
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps)
	for i := 1; i <= maxUpstreamRounds; i++ {
		_, st := inputRequired(t)(res, err)
		if got, _ := rawjson.GetString(u.seen()[i-1], "requestState"); i > 1 && got != fmt.Sprintf("s%d", i-2) {
			t.Fatalf("round %d: the upstream got state %q", i, got)
		}
		res, err = h.retryWith(`{}`, `{"mcp-gate-relayed-1":{"action":"decline"}}`, st)
	}
	if _, msg := rpcCode(t, err); !strings.Contains(msg, fmt.Sprintf("after %d rounds", maxUpstreamRounds)) {
		t.Fatalf("the round past the cap: %s", msg)
	}
	if n := len(u.seen()); n != maxUpstreamRounds+1 {
		t.Fatalf("%d calls upstream", n)
	}
}

// What a host's request did not declare is not put to it: an elicitation
// for a request without forms is declined by the gate (and the upstream
// retried at once), roots or sampling without their capability fail the call
// naming the upstream; a malformed round, too many questions or an
// oversized state fail it too, and nothing is retried.
func TestRelayedUndeclaredAndMalformed(t *testing.T) {
	u := &modernUpstream{round: func(n int, _ json.RawMessage) string {
		if n == 0 {
			return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":"s"}`
		}
		return `{"resultType":"complete","content":[]}`
	}}
	h := relayedHost(t, u, allowAll)
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, `{}`)
	if err != nil || strings.Contains(string(res), "input_required") {
		t.Fatalf("a request without forms: %s %v", res, err)
	}
	if calls := u.seen(); len(calls) != 2 || !strings.Contains(string(calls[1]), `"c":{"action":"decline"}`) {
		t.Fatalf("the gate's own decline did not reach the upstream: %s", calls)
	}
	many := `{`
	for i := range maxInputRequests + 1 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"q%d":%s`, i, askColour)
	}
	many += `}`
	big := `"` + strings.Repeat("x", elicitation.MaxUpstreamStateBytes) + `"`
	for _, c := range []struct{ name, round, caps, want string }{
		{"roots", `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list","params":{}}}}`, formCaps, "roots"},
		{"sampling", `{"resultType":"input_required","inputRequests":{"m":` + askModel + `}}`, formCaps, "sampling"},
		{"unknown method", `{"resultType":"input_required","inputRequests":{"a":{"method":"tools/call","params":{}}}}`, formCaps, `has method "tools/call"`},
		{"too many", `{"resultType":"input_required","inputRequests":` + many + `}`, formCaps, "more than"},
		{"state-only", `{"resultType":"input_required","requestState":"s"}`, formCaps, "no inputRequests"},
		{"oversized state", `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":` + big + `}`, formCaps, "requestState is"},
		{"long key", `{"resultType":"input_required","inputRequests":{"` + strings.Repeat("k", elicitation.MaxUpstreamKeyBytes+1) + `":` + askColour + `}}`, formCaps, "key of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &modernUpstream{round: func(int, json.RawMessage) string { return c.round }}
			h := relayedHost(t, u, allowAll)
			_, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, c.caps)
			code, msg := rpcCode(t, err)
			if code != -32603 || !strings.Contains(msg, c.want) || !strings.Contains(msg, `"s"`) {
				t.Fatalf("want -32603 with %q naming the server, got %d %s", c.want, code, msg)
			}
			if _, asked := h.received(); len(asked) != 0 || len(u.seen()) != 1 {
				t.Fatalf("the host was sent %v; %d calls upstream", asked, len(u.seen()))
			}
		})
	}
}

// Under an ask rule, the gate's question comes first; the upstream's
// round of the approved call then redeems as the yes given before it ran
// (never as a new answer to the gate's question), and a policy that denies
// the call since refuses the retry before anything reaches the upstream.
func TestRelayedUnderPolicy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nfallback: deny\nask: [mcp:s:t]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := policy.Watch(t.Context(), path, policy.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &modernUpstream{round: func(n int, _ json.RawMessage) string {
		if n%2 == 0 {
			return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":"s"}`
		}
		return `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`
	}}
	h := relayedHost(t, u, allowAll, func(o *Options) { o.Policy = store })
	reqs, st := inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"a":1}}`, formCaps))
	if _, ok := rawjson.Get(reqs, elicitation.ApprovalInputKey); !ok || len(u.seen()) != 0 {
		t.Fatalf("the gate's question first: %s, %d calls", reqs, len(u.seen()))
	}
	_, st = inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"a":1},"inputResponses":{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}},"requestState":`+string(rawjson.AppendString(nil, st))+`}`, formCaps))
	if len(u.seen()) != 1 {
		t.Fatalf("%d calls upstream after the yes", len(u.seen()))
	}
	res, err := h.retryWith(`{"a":1}`, `{"mcp-gate-relayed-1":{"action":"decline"}}`, st)
	if err != nil || !strings.Contains(string(res), `"done"`) || len(u.seen()) != 2 {
		t.Fatalf("the retry of the upstream's round under ask: %s %v", res, err)
	}

	// The next call: approved, the upstream asks; then the policy denies.
	_, st = inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"a":2}}`, formCaps))
	_, st = inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{"a":2},"inputResponses":{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}},"requestState":`+string(rawjson.AppendString(nil, st))+`}`, formCaps))
	rev := store.Current().Revision()
	if err := os.WriteFile(path+".new", []byte("version: 1\nfallback: deny\ndeny: [mcp:s:t]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); store.Current().Revision() == rev; {
		if time.Now().After(deadline) {
			t.Fatal("the policy was not reloaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := len(u.seen())
	res, err = h.retryWith(`{"a":2}`, `{"mcp-gate-relayed-1":{"action":"decline"}}`, st)
	if err != nil || !strings.Contains(string(res), `"isError":true`) || len(u.seen()) != n {
		t.Fatalf("a retry the policy denies since: %s %v", res, err)
	}
}

// A sampling question goes to a request that declared sampling, decided by
// the policy like any upstream's sampling request: allowed, it is an input
// request of the round and the host's answer reaches the upstream; denied,
// or asked (a question the round cannot carry), the call fails with the
// policy's code and the host is sent nothing.
func TestRelayedSampling(t *testing.T) {
	const samplingCaps = `{"elicitation":{"form":{}},"sampling":{}}`
	newUp := func() *modernUpstream {
		return &modernUpstream{round: func(n int, p json.RawMessage) string {
			if n == 0 {
				return `{"resultType":"input_required","inputRequests":{"model":` + askModel + `},"requestState":"s"}`
			}
			m, _ := jsonPath(p, "inputResponses", "model", "content", "text")
			return `{"resultType":"complete","content":[{"type":"text","text":` + string(rawjson.AppendString(nil, "model said "+m)) + `}]}`
		}}
	}
	u := newUp()
	h := relayedHost(t, u, allowAll)
	reqs, st := inputRequired(t)(h.call("tools/call", `{"name":"s__t","arguments":{}}`, samplingCaps))
	if m, _ := jsonPath(reqs, "mcp-gate-relayed-1", "method"); m != "sampling/createMessage" {
		t.Fatalf("the sampling question: %s", reqs)
	}
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{},"inputResponses":{"mcp-gate-relayed-1":{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}},"requestState":`+string(rawjson.AppendString(nil, st))+`}`, samplingCaps)
	if err != nil || !strings.Contains(string(res), "model said hello") {
		t.Fatalf("the sampled answer: %s %v", res, err)
	}
	for _, pol := range []string{
		"version: 1\nfallback: deny\nallow: [mcp:s:t]\n",
		"version: 1\nfallback: deny\nallow: [mcp:s:t]\nask: [\"sampling:**\"]\n",
	} {
		u := newUp()
		h := relayedHost(t, u, pol)
		_, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, samplingCaps)
		if code, msg := rpcCode(t, err); code != CodeDenied || !strings.Contains(msg, "sampling") {
			t.Fatalf("%q: a sampling question the policy does not allow: %d %s", pol, code, msg)
		}
		if _, asked := h.received(); len(asked) != 0 || len(u.seen()) != 1 {
			t.Fatalf("the host was sent %v; %d calls upstream", asked, len(u.seen()))
		}
	}
}

// A 2026-07-28 upstream is told, on each request, the capabilities that
// request of the host declared and the gate relays: no more (not URL
// elicitation, which the gate declines for such a host, nor anything it
// does not relay) and no less (not the principal's children's fixed
// declaration).
func TestModernUpstreamToldEachRequestsCaps(t *testing.T) {
	u := &modernUpstream{round: func(int, json.RawMessage) string {
		return `{"resultType":"complete","content":[]}`
	}}
	h := relayedHost(t, u, allowAll)
	for i, c := range []struct{ declared, told string }{
		{formCaps, `{"elicitation":{"form":{}}}`},
		{`{}`, `{}`},
		{`{"elicitation":{"url":{}},"sampling":{},"roots":{"listChanged":true},"experimental":{"x":{}}}`, `{"sampling":{},"roots":{}}`},
		{`{"elicitation":{}}`, `{"elicitation":{"form":{}}}`},
	} {
		if _, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, c.declared); err != nil {
			t.Fatal(err)
		}
		calls := u.seen()
		if len(calls) != i+1 {
			t.Fatalf("%d upstream calls after %d host calls", len(calls), i+1)
		}
		meta, _ := rawjson.Get(calls[i], "_meta")
		got, _ := rawjson.Get(meta, "io.modelcontextprotocol/clientCapabilities")
		if string(got) != c.told {
			t.Errorf("a request declaring %s: the upstream was told %s, want %s", c.declared, got, c.told)
		}
	}
}
