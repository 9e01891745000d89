package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 9 (the 2026-07-28 retry path), through the binary: under a
// via: [local] rule the human approves a 2026-07-28 host's call on the
// local surface before it runs; the older upstream's question during the
// call reaches the host as an input request (parked), and the retry that
// answers it is that approved call going on: the local surface is not
// asked again. A retry that re-targets the state at other arguments is
// refused at once, with no question either.
func TestParkedRetryUnderViaLocal(t *testing.T) {
	t.Parallel()
	rt := runtimeDir(t)
	events := filepath.Join(t.TempDir(), "events")
	const pol = "version: 1\nfallback: deny\napproval:\n  timeout: 60s\nrules:\n  - name: deploys\n    match: mcp:park:deploy\n    action: ask\n    via: [local]\n"
	g := gateCommand(t, map[string]server{"park": testserver("park", "--events", events)}, "--policy", writePolicy(t, pol), "--local-approvals")
	g.cmd.Env = append(g.cmd.Env, "XDG_RUNTIME_DIR="+rt)
	h := startModern(t, g, formCaps)
	call := func(tag, extra string) <-chan string {
		ch := make(chan string, 1)
		go func() {
			ch <- callPark(func(method, _, members string) string { return h.request(method, members) }, "deploy", tag, extra)
		}()
		return ch
	}
	within := func(what string, ch <-chan string, d time.Duration) string {
		t.Helper()
		select {
		case resp := <-ch:
			return resp
		case <-time.After(d):
			out, _ := approvalsOutside(t, rt, "list")
			t.Fatalf("%s: no answer within %s; the local surface lists:\n%s", what, d, out)
			return ""
		}
	}
	// approved starts a call of tag, approves it from outside the host,
	// and returns the state of the upstream's question.
	approved := func(tag string) string {
		t.Helper()
		first := call(tag, "")
		id, _ := waitQuestion(t, rt)
		if out, code := approvalsOutside(t, rt, "approve", id); code != 0 {
			t.Fatalf("approve from outside the host (%d): %s", code, out)
		}
		_, state := parkedQuestion(t, within("the approved call", first, 30*time.Second), "elicitation/create")
		return state
	}

	state := approved("one")
	resp := within("the retry answering the upstream's question", call("one", parkAnswer(acceptStaging, state)), 20*time.Second)
	if text, isErr := toolText(t, resp); isErr || !strings.HasPrefix(text, "deployed to staging") {
		t.Fatalf("the retry: %q isError=%v", text, isErr)
	}

	state = approved("two")
	resp = within("a retry at other arguments", call("three", parkAnswer(acceptStaging, state)), 20*time.Second)
	if text, isErr := toolText(t, resp); !isErr || !strings.Contains(text, "issued for another call") {
		t.Fatalf("a retry at other arguments: %q isError=%v", text, isErr)
	}
	if ev := readEvents(t, events); strings.Contains(ev, "deploy answered two") || strings.Contains(ev, "three") {
		t.Fatalf("the re-targeted answer reached the upstream:\n%s", ev)
	}
}
