package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 14: an older (2025-11-25) upstream's questions during a 2026-07-28
// host's call reach the host as input requests of that call, and the
// answers go back to the upstream, which kept its call waiting (parked).
// Driven through the real binary, on stdio and over HTTP, against a go-sdk
// server that elicits mid-call (testserver --mode park).

const parkPolicy = `version: 1
fallback: deny
approval:
  timeout: 5s
allow:
  - mcp:park:deploy
  - mcp:park:twice
  - mcp:park:roots
  - mcp:park:sample
  - "sampling:park"
ask:
  - mcp:park:guarded
`

// modernCall sends one 2026-07-28 request (method, the Mcp-Name value,
// the params' members) and returns the response line or body.
type modernCall func(method, name, members string) string

func parkArgs(tool, tag string) string {
	return fmt.Sprintf(`"name":"park__%s","arguments":{"tag":%q}`, tool, tag)
}

// callPark calls tool with tag, plus extra members (a retry's).
func callPark(call modernCall, tool, tag, extra string) string {
	members := parkArgs(tool, tag)
	if extra != "" {
		members += "," + extra
	}
	return call("tools/call", "park__"+tool, members)
}

// parkAnswer is a retry's members: the answer to the upstream's question
// and the state.
func parkAnswer(answer, state string) string {
	return `"inputResponses":{"mcp-gate-upstream":` + answer + `},"requestState":` + fmt.Sprintf("%q", state)
}

const acceptStaging = `{"action":"accept","content":{"env":"staging"}}`

// parkedQuestion checks resp is an input-required result carrying the
// upstream's question (method) and returns its params and the state.
func parkedQuestion(t *testing.T, resp, method string) (map[string]any, string) {
	t.Helper()
	r := modernResult(t, resp)
	reqs, _ := r["inputRequests"].(map[string]any)
	q, _ := reqs["mcp-gate-upstream"].(map[string]any)
	state, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || len(reqs) != 1 || q["method"] != method || state == "" {
		t.Fatalf("want an input-required result with the upstream's %s, got %s", method, resp)
	}
	params, _ := q["params"].(map[string]any)
	return params, state
}

func waitEvent(t *testing.T, events, line string, d time.Duration) {
	t.Helper()
	waitFor(t, "event "+line, d, func() bool { return strings.Contains(readEvents(t, events), line) })
}

// parkScenario is what both transports must do.
func parkScenario(t *testing.T, call modernCall, bare modernCall, events string) {
	// Asked mid-call: the host gets the question, labelled with the
	// server, as an input request; the upstream's call waits.
	resp := callPark(call, "deploy", "one", "")
	params, state := parkedQuestion(t, resp, "elicitation/create")
	if msg := fmt.Sprint(params["message"]); !strings.HasPrefix(msg, "[park] ") || !strings.Contains(msg, "Which environment") {
		t.Fatalf("the question is not the upstream's, labelled: %q", msg)
	}
	if params["requestedSchema"] == nil || strings.Contains(resp, "mcp-gate-approval") {
		t.Fatalf("question: %s", resp)
	}
	waitEvent(t, events, "deploy asked one", 10*time.Second)
	// Answered: the upstream receives the answer and the call completes;
	// its result quotes the answer, which the result guard lets through
	// as the host's own (as for a 2025-11-25 host).
	text, isErr := toolText(t, callPark(call, "deploy", "one", parkAnswer(acceptStaging, state)))
	if isErr || !strings.HasPrefix(text, "deployed to staging; the answer was ") {
		t.Fatalf("answered: %q isError=%v", text, isErr)
	}
	if ev := readEvents(t, events); !strings.Contains(ev, `deploy answered one {"action":"accept","content":{"env":"staging"}}`) {
		t.Fatalf("the upstream did not receive the answer:\n%s", ev)
	}
	// Replayed: the state is single-use.
	if text, isErr := toolText(t, callPark(call, "deploy", "one", parkAnswer(acceptStaging, state))); !isErr || !strings.Contains(text, "used before") {
		t.Fatalf("replayed: %q isError=%v", text, isErr)
	}

	// Declined.
	_, state = parkedQuestion(t, callPark(call, "deploy", "two", ""), "elicitation/create")
	if text, isErr := toolText(t, callPark(call, "deploy", "two", parkAnswer(`{"action":"decline"}`, state))); isErr || text != "deploy decline" {
		t.Fatalf("declined: %q isError=%v", text, isErr)
	}

	// Two questions: a fresh state for each.
	_, s1 := parkedQuestion(t, callPark(call, "twice", "t", ""), "elicitation/create")
	_, s2 := parkedQuestion(t, callPark(call, "twice", "t", parkAnswer(`{"action":"accept","content":{"env":"a"}}`, s1)), "elicitation/create")
	if s1 == s2 {
		t.Fatal("the second question carries the first's state")
	}
	if text, isErr := toolText(t, callPark(call, "twice", "t", parkAnswer(`{"action":"accept","content":{"env":"b"}}`, s2))); isErr || text != "first=a second=b" {
		t.Fatalf("two questions: %q isError=%v", text, isErr)
	}

	// A request that declares no elicitation is never sent one: the
	// question is declined for it.
	if text, isErr := toolText(t, callPark(bare, "deploy", "bare", "")); isErr || text != "deploy decline" {
		t.Fatalf("a request without elicitation: %q isError=%v", text, isErr)
	}

	// Refused retries: each names the reason, the answer never reaches the
	// upstream, and the parked call is cancelled (notifications/cancelled).
	refused := func(what, tag, tool, args, answer, st, says string) {
		t.Helper()
		start := time.Now()
		text, isErr := toolText(t, callPark(call, tool, args, parkAnswer(answer, st)))
		if !isErr || !strings.Contains(text, says) {
			t.Fatalf("%s: %q isError=%v, want a refusal saying %q", what, text, isErr, says)
		}
		waitEvent(t, events, "deploy cancelled "+tag, 15*time.Second)
		// At once, not at the 5s timeout (but for an altered state, which
		// names no call the gate can trust, and expires).
		if took := time.Since(start); took > 4500*time.Millisecond && what != "tampered" {
			t.Fatalf("%s: cancelled only after %s", what, took)
		}
		if strings.Contains(readEvents(t, events), "deploy answered "+tag) {
			t.Fatalf("%s: the answer reached the upstream", what)
		}
	}
	_, st := parkedQuestion(t, callPark(call, "deploy", "tampered", ""), "elicitation/create")
	b := []byte(st)
	b[12] ^= 1
	refused("tampered", "tampered", "deploy", "tampered", acceptStaging, string(b), "failed verification")
	_, st = parkedQuestion(t, callPark(call, "deploy", "args", ""), "elicitation/create")
	refused("other arguments", "args", "deploy", "other", acceptStaging, st, "issued for another call")
	_, st = parkedQuestion(t, callPark(call, "deploy", "tool", ""), "elicitation/create")
	refused("other tool", "tool", "twice", "tool", acceptStaging, st, "issued for another call")
	_, st = parkedQuestion(t, callPark(call, "deploy", "late", ""), "elicitation/create")
	// Expired: the approval timeout (5s) bounds the question; the call is
	// cancelled when it runs out, whether or not the host comes back.
	waitEvent(t, events, "deploy cancelled late", 10*time.Second)
	if text, isErr := toolText(t, callPark(call, "deploy", "late", parkAnswer(acceptStaging, st))); !isErr || !strings.Contains(text, "expired") {
		t.Fatalf("expired: %q isError=%v", text, isErr)
	}

	// The kinds do not mix: an approval's state does not deliver an answer
	// to a parked question, nor does a parked question's state answer the
	// gate's approval question.
	approval := inputRequired(t, callPark(call, "guarded", "g", ""))
	_, st = parkedQuestion(t, callPark(call, "deploy", "kind", ""), "elicitation/create")
	text, isErr = toolText(t, callPark(call, "deploy", "kind", parkAnswer(acceptStaging, approval)))
	if !isErr || !strings.Contains(text, "approval question's, not that question's") {
		t.Fatalf("an approval state answering a parked question: %q isError=%v", text, isErr)
	}
	text, isErr = toolText(t, callPark(call, "guarded", "g", answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", st)))
	if !isErr || !strings.Contains(text, "issued for another call") {
		t.Fatalf("a parked state answering the approval question: %q isError=%v", text, isErr)
	}
	if ev := readEvents(t, events); strings.Contains(ev, "guarded asked g") || strings.Contains(ev, "deploy answered kind") {
		t.Fatalf("a state of the other kind went through:\n%s", ev)
	}
	// Its state, misused, ended the parked call at once (as any refused
	// retry carrying it does).
	waitEvent(t, events, "deploy cancelled kind", 4*time.Second)
	// An asked tool that also elicits: approved, then parked, then
	// answered; the retry is decided again and the approval covers it.
	approval = inputRequired(t, callPark(call, "guarded", "both", ""))
	_, st = parkedQuestion(t, callPark(call, "guarded", "both", answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", approval)), "elicitation/create")
	if text, isErr := toolText(t, callPark(call, "guarded", "both", parkAnswer(acceptStaging, st))); isErr || !strings.HasPrefix(text, "deployed to staging") {
		t.Fatalf("approved and answered: %q isError=%v", text, isErr)
	}
}

func TestParkedQuestionsStdio(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", writePolicy(t, parkPolicy))
	h := startModern(t, g, formCaps)
	bare := &modernHost{rawHost: h.rawHost, caps: `{}`}
	bare.seq.Store(50000)
	parkScenario(t,
		func(method, _, members string) string { return h.request(method, members) },
		func(method, _, members string) string { return bare.request(method, members) },
		events)

	// roots/list, for a request that declared roots.
	_, st := parkedQuestion(t, h.request("tools/call", parkArgs("roots", "r")), "roots/list")
	if text, isErr := toolText(t, h.request("tools/call", parkArgs("roots", "r")+","+parkAnswer(`{"roots":[{"uri":"file:///work"}]}`, st))); isErr || text != "roots=file:///work" {
		t.Fatalf("roots: %q isError=%v", text, isErr)
	}

	// sampling/createMessage, decided by the policy, for a request that
	// declared sampling; refused for one that did not.
	sampler := &modernHost{rawHost: h.rawHost, caps: `{"elicitation":{"form":{}},"sampling":{}}`}
	sampler.seq.Store(60000)
	params, st := parkedQuestion(t, sampler.request("tools/call", parkArgs("sample", "s")), "sampling/createMessage")
	if fmt.Sprint(params["maxTokens"]) != "50" || !strings.Contains(fmt.Sprint(params["messages"]), "Say hello.") {
		t.Fatalf("the sampling question: %v", params)
	}
	if text, isErr := toolText(t, sampler.request("tools/call", parkArgs("sample", "s")+","+parkAnswer(`{"role":"assistant","content":{"type":"text","text":"hello from the host model"},"model":"m"}`, st))); isErr || text != "sampled: hello from the host model" {
		t.Fatalf("sampling: %q isError=%v", text, isErr)
	}
	if text, isErr := toolText(t, h.request("tools/call", parkArgs("sample", "nosampling"))); !isErr || !strings.Contains(text, "declared no sampling capability") {
		t.Fatalf("sampling for a request that declared none: %q isError=%v", text, isErr)
	}

	// The gate never sent the host a request of its own.
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
}

// The host never coming back: the parked call is cancelled when the
// approval timeout runs out, and the upstream hears of it.
func TestParkedExpiryCancels(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", writePolicy(t, parkPolicy))
	h := startModern(t, g, formCaps)
	parkedQuestion(t, h.request("tools/call", parkArgs("deploy", "gone")), "elicitation/create")
	start := time.Now()
	waitEvent(t, events, "deploy cancelled gone", 15*time.Second)
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("cancelled after %s, before the 5s timeout", took)
	}
	if !waitStderr(g.stderr, "did not answer the upstream's question within the approval timeout", 1) {
		t.Errorf("the gate did not log why the call was cancelled")
	}
}

// A policy change to deny before the retry: the retry is refused under the
// policy in force and the parked call is cancelled at once, not at its
// timeout.
func TestParkedPolicyDenyCancels(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	long := strings.Replace(parkPolicy, "timeout: 5s", "timeout: 120s", 1)
	pol := writePolicy(t, long)
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", pol)
	h := startModern(t, g, formCaps)
	_, st := parkedQuestion(t, h.request("tools/call", parkArgs("deploy", "d")), "elicitation/create")
	denied := strings.Replace(long, "  - mcp:park:deploy\n", "", 1) + "deny:\n  - mcp:park:deploy\n"
	if err := os.WriteFile(pol+".tmp", []byte(denied), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pol+".tmp", pol); err != nil {
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
	start := time.Now()
	text, isErr := toolText(t, h.request("tools/call", parkArgs("deploy", "d")+","+parkAnswer(acceptStaging, st)))
	if !isErr || !strings.Contains(text, "denied") {
		t.Fatalf("retry after the deny: %q isError=%v", text, isErr)
	}
	waitEvent(t, events, "deploy cancelled d", 15*time.Second)
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("cancelled only after %s", took)
	}
	if strings.Contains(readEvents(t, events), "deploy answered d") {
		t.Fatal("the answer reached the upstream after the deny")
	}
}

// Two calls of one principal in flight to one server: the second one's
// question cannot be told from the first's, and is refused as ambiguous;
// the first still completes.
func TestParkedAmbiguousRefused(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", writePolicy(t, strings.Replace(parkPolicy, "timeout: 5s", "timeout: 120s", 1)))
	h := startModern(t, g, formCaps)
	_, st := parkedQuestion(t, h.request("tools/call", parkArgs("deploy", "first")), "elicitation/create")
	text, isErr := toolText(t, h.request("tools/call", parkArgs("deploy", "second")))
	if !isErr || !strings.Contains(text, "2 calls of this user are in flight to this server") || !strings.Contains(text, "cannot tell which call") {
		t.Fatalf("the second call's question: %q isError=%v", text, isErr)
	}
	if text, isErr := toolText(t, h.request("tools/call", parkArgs("deploy", "first")+","+parkAnswer(acceptStaging, st))); isErr || !strings.HasPrefix(text, "deployed to staging") {
		t.Fatalf("the first call: %q isError=%v", text, isErr)
	}
}

// Over HTTP every request is a POST of its own (a proxy Session each): the
// question is asked while serving one POST and answered by another.
func TestParkedQuestionsHTTP(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", writePolicy(t, parkPolicy))
	url := g.serveHTTP(t)
	c := &modernHTTP{t: t, url: url, caps: formCaps}
	bare := &modernHTTP{t: t, url: url, caps: `{}`}
	c.ok("tools/list", "", "")
	parkScenario(t, c.ok, bare.ok, events)

	// Two calls in flight (the first parked, its POST answered): the
	// second's question is refused as ambiguous, the first completes.
	_, st := parkedQuestion(t, callPark(c.ok, "deploy", "h1", ""), "elicitation/create")
	text, isErr := toolText(t, callPark(c.ok, "deploy", "h2", ""))
	if !isErr || !strings.Contains(text, "cannot tell which") {
		t.Fatalf("the second call's question: %q isError=%v", text, isErr)
	}
	if text, isErr := toolText(t, callPark(c.ok, "deploy", "h1", parkAnswer(acceptStaging, st))); isErr || !strings.HasPrefix(text, "deployed to staging") {
		t.Fatalf("the first call: %q isError=%v", text, isErr)
	}
}
