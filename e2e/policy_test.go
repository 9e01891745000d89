package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const denyEchoPolicy = `version: 1
fallback: deny
deny:
  - mcp:honest:crash
rules:
  - name: no-secrets-in-echo
    match: mcp:honest:echo
    when: args.text.contains("secret")
    action: deny
    reason: Echoing secrets is not allowed.
allow:
  - mcp:honest:echo
  - mcp:honest:blob
`

// Issue #3: deny (with a reason the model reads), hidden tools, allow, and
// the upstream never sees a denied call.
func TestPolicyEnforced(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, denyEchoPolicy))
	sess := g.connect(t, nil)

	tools := toolNames(t, sess)
	if tools["honest__crash"] != nil {
		t.Error("honest__crash is listed although an unconditional deny covers it")
	}
	if tools["honest__echo"] == nil || tools["honest__slow"] == nil {
		t.Errorf("tools that are not unconditionally denied must stay listed: %v", keys(tools))
	}

	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "public"})); got != "public" {
		t.Errorf("allowed call: %q", got)
	}
	res := call(t, sess, "honest__echo", map[string]any{"text": "my secret"})
	if !res.IsError || !strings.Contains(resultText(res), "Echoing secrets is not allowed.") || !strings.Contains(resultText(res), "no-secrets-in-echo") {
		t.Errorf("conditional deny: %+v %q", res, resultText(res))
	}
	// A hidden tool called anyway (a model may guess names) is refused.
	res = call(t, sess, "honest__crash", map[string]any{})
	if !res.IsError || !strings.Contains(resultText(res), "deny[0]") {
		t.Errorf("hidden tool: %q", resultText(res))
	}
	// Unmatched: fallback deny.
	res = call(t, sess, "honest__slow", map[string]any{"steps": 1, "ms": 1})
	if !res.IsError || !strings.Contains(resultText(res), "fallback") {
		t.Errorf("fallback: %q", resultText(res))
	}
	// The upstream received the allowed call and none of the denied ones.
	b, _ := os.ReadFile(events)
	if !strings.Contains(string(b), "echo public") || strings.Contains(string(b), "secret") || strings.Contains(string(b), "slow") {
		t.Errorf("the upstream saw other calls than the allowed one: %s", b)
	}

	// One audit line per decision, with the digest but never the values.
	var decisions int
	for _, l := range g.auditLines(t) {
		if l["event"] != "decision" {
			continue
		}
		decisions++
		for _, k := range []string{"time", "decision_id", "session", "server", "tool", "wire_name", "verdict", "rule", "reason", "revision", "args_digest", "latency_us"} {
			if _, ok := l[k]; !ok {
				t.Errorf("audit decision lacks %q: %v", k, l)
			}
		}
	}
	if decisions != 4 {
		t.Errorf("got %d audit decisions, want 4", decisions)
	}
	if raw, _ := os.ReadFile(g.audit); strings.Contains(string(raw), "my secret") {
		t.Error("the audit log contains an argument value")
	}
}

// Issue #3: a hot reload flips a verdict with no restart and tells the host
// that the tool list changed; an invalid edit changes nothing.
func TestPolicyHotReload(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:honest:echo]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	changed := make(chan struct{}, 10)
	sess := g.connect(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ ctxType, _ *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if toolNames(t, sess)["honest__echo"] == nil {
		t.Fatal("echo not listed")
	}
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "a"})); got != "a" {
		t.Fatalf("before reload: %q", got)
	}
	pid := g.cmd.Process.Pid

	// An editor's save: write a temporary file and rename it over.
	save := func(text string) {
		tmp := pol + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, pol); err != nil {
			t.Fatal(err)
		}
	}
	save("version: 1\nfallback: deny\ndeny: [mcp:honest:echo]\n")
	waitFor(t, "the reload to deny echo", 10*time.Second, func() bool {
		return call(t, sess, "honest__echo", map[string]any{"text": "b"}).IsError
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no tools/list_changed after the reload hid a tool")
	}
	if toolNames(t, sess)["honest__echo"] != nil {
		t.Error("echo still listed after an unconditional deny was added")
	}

	// An invalid edit changes nothing and is logged.
	save("version: 1\nfallback: allow-everything\nallow: [mcp:honest:echo]\n")
	waitFor(t, "the invalid reload to be logged", 10*time.Second, func() bool {
		return strings.Contains(g.stderr.String(), "ok=false")
	})
	if !call(t, sess, "honest__echo", map[string]any{"text": "c"}).IsError {
		t.Error("an invalid policy edit changed the verdict")
	}
	// Back to allow.
	save("version: 1\nfallback: deny\nallow: [mcp:honest:echo]\n")
	waitFor(t, "the reload to allow echo again", 10*time.Second, func() bool {
		return !call(t, sess, "honest__echo", map[string]any{"text": "d"}).IsError
	})
	if g.cmd.Process.Pid != pid || g.cmd.ProcessState != nil {
		t.Fatal("the gate restarted")
	}
	var reloads int
	for _, l := range g.auditLines(t) {
		if l["event"] == "policy_reload" {
			reloads++
		}
	}
	if reloads < 3 {
		t.Errorf("the audit log has %d reload records, want at least 3", reloads)
	}
}

// Issue #3: a broken policy at start-up is a refusal to start, with file:line.
func TestBrokenPolicyRefusesToStart(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, "version: 1\nfallback: ask\ndeny: [mcp:github:delete_*]\nallwo: [mcp:docs:*]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	err := g.cmd.Run()
	out := g.stderr.String()
	if err == nil {
		t.Fatal("the gate started with an invalid policy")
	}
	if !strings.Contains(out, "policy.yaml:4:") || !strings.Contains(out, "allwo") {
		t.Fatalf("the error does not point at the line: %s", out)
	}
}

// Issue #3: check and explain through the real binary.
func TestCheckAndExplain(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, denyEchoPolicy)
	cases := filepath.Join(t.TempDir(), "cases.yaml")
	os.WriteFile(cases, []byte(`cases:
  - name: secrets are refused
    tool: mcp:honest:echo
    args: {text: "a secret"}
    want: deny
    rule: no-secrets-in-echo
  - name: plain echo passes
    tool: mcp:honest:echo
    args: {text: hello}
    want: allow
`), 0o600)
	out, err := runCmd(gateBin, "check", "--policy", pol, "--tests", cases)
	if err != nil || !strings.Contains(out, "2 of 2 cases passed") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	os.WriteFile(cases, []byte("cases:\n  - name: wrong\n    tool: mcp:honest:blob\n    want: deny\n"), 0o600)
	out, err = runCmd(gateBin, "check", "--policy", pol, "--tests", cases)
	if err == nil || !strings.Contains(out, "FAIL wrong") {
		t.Fatalf("check with a failing case: %v\n%s", err, out)
	}
	out, err = runCmd(gateBin, "explain", "--policy", pol, "--args", `{"text":"secret!"}`, "mcp__gate__honest__echo")
	if err != nil || strings.TrimSpace(out) != `{"tool":"mcp:honest:echo","verdict":"deny","rule":"no-secrets-in-echo","reason":"Echoing secrets is not allowed.","revision":"`+revisionOf(t, pol)+`"}` {
		t.Fatalf("explain: %v\n%s", err, out)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
