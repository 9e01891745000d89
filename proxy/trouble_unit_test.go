package proxy

// In-memory tests of trouble reporting (trouble.go) and of what a policy
// reload tells the host (decide.go): what keeps the gate from serving is
// said to the host where it looks, and cleared when repaired.

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// A fatal trouble refuses every request but initialize, ping and
// logging/setLevel, with the reason, and is said in the instructions and
// in an error log notification, as each note is; once cleared, the host
// is told to list again and everything is served.
func TestTroubleToldAndCleared(t *testing.T) {
	var tr atomic.Pointer[Trouble]
	tr.Store(&Trouble{Fatal: `policy file "p.yaml": line 3: bad`, Notes: []string{`server "x" was left out: no command`}})
	up := newPipelineUpstream()
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
		o.Trouble = func() Trouble { return *tr.Load() }
	})
	logs := map[string]bool{}
	for range 2 {
		d, _ := jsonPath(h.next("notifications/message"), "params", "data")
		logs[d] = true
	}
	if !logs[`mcp-gate offers no tools: policy file "p.yaml": line 3: bad`] || !logs[`upstream "x" was left out: no command`] {
		t.Fatalf("trouble logged to the host as %v", logs)
	}
	for _, m := range []string{"tools/list", "tools/call", "resources/read"} {
		resp := string(h.call(m, `{"name":"s__t","uri":"mem://a"}`))
		if !strings.Contains(resp, `"code":-32603`) || !strings.Contains(resp, "mcp-gate offers no tools: policy file") {
			t.Errorf("%s in trouble: %s", m, resp)
		}
	}
	for _, m := range []string{"ping", "logging/setLevel"} {
		if resp := string(h.call(m, `{"level":"info"}`)); strings.Contains(resp, `"error"`) {
			t.Errorf("%s in trouble: %s", m, resp)
		}
	}
	if up.got("tools/call") {
		t.Fatal("a call reached the upstream in trouble")
	}
	h2 := serveRawHost(t, h.gate, h.gate.NewSession().Serve) // a second session, also told below

	tr.Store(&Trouble{})
	h.gate.TroubleCleared()
	for _, n := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"} {
		h.next(n)
		h2.next(n)
	}
	if resp := string(h.call("tools/list", `{}`)); !strings.Contains(resp, `"s__t"`) {
		t.Fatalf("tools/list once cleared: %s", resp)
	}
}

// A host that reads the initialize instructions finds the trouble there.
func TestTroubleInInstructions(t *testing.T) {
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": (&recorder{}).server("echo")}, static(t, allowAll), nil, func(o *Options) {
		o.Trouble = func() Trouble {
			return Trouble{Fatal: "servers file: open /x/servers.json: no such file", Notes: []string{"hidden\u200bnote"}}
		}
	})
	ins := f.sess.InitializeResult().Instructions
	if !strings.Contains(ins, "mcp-gate offers no tools: upstreams file: open /x/servers.json") || !strings.Contains(ins, "mcp-gate left something out: hidden[U+200B]note.") {
		t.Fatalf("instructions in trouble: %s", ins)
	}
	if _, err := f.sess.ListTools(ctx10(t), nil); err == nil || !strings.Contains(err.Error(), "mcp-gate offers no tools") {
		t.Fatalf("tools/list in trouble: %v", err)
	}
}

// A reload that hides a listed resource, or a prompt, tells the sessions
// that listed them; one that changes nothing visible tells no one.
func TestPolicyReloadHidingResources(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path+".new", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	write(allowAll)
	var gate atomic.Pointer[Gate]
	changed := make(chan struct{}, 8)
	store, err := policy.Watch(t.Context(), path, policy.Options{}, nil, func(o, n *policy.Policy) {
		if g := gate.Load(); g != nil {
			g.PolicyChanged(o, n)
		}
		changed <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	up := newPipelineUpstream()
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) { o.Policy = store })
	gate.Store(h.gate)
	for _, m := range []string{"resources/list", "prompts/list"} {
		h.call(m, `{}`)
	}
	reload := func(text string) {
		t.Helper()
		write(text)
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("the reload was not seen")
		}
		h.call("ping", `{}`)
	}
	// Nothing visible changes: no notification.
	reload(allowAll + "deny: [\"mcp:s:nothing\"]\n")
	if h.has("notifications/resources/list_changed") || h.has("notifications/prompts/list_changed") {
		t.Fatalf("a reload that hides nothing listed notified the host: %s", h.pending)
	}
	reload(allowAll + "deny: [\"resource:s:mem://a\"]\n")
	h.next("notifications/resources/list_changed")
	if resp := string(h.call("resources/list", `{}`)); strings.Contains(resp, "mem://a") {
		t.Fatalf("a denied resource is listed: %s", resp)
	}
	reload(allowAll + "deny: [\"resource:s:mem://a\", \"prompt:s:p\"]\n")
	h.next("notifications/prompts/list_changed")
}
