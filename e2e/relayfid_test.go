package e2e

// Issue 11, relay fidelity: each row compares what a host sees directly
// from an upstream with what it sees through the gate, byte for byte where
// identity is promised, and asserts the documented difference otherwise.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// everythingDirect starts server-everything alone, as a host would.
func everythingDirect(t *testing.T) *rawHost {
	t.Helper()
	needNode(t)
	s := everything()
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	h := startRawCmd(t, cmd, stderr.String)
	// A task it runs keeps it alive after its stdin closes: the direct
	// reference is stopped, not waited for (cleanups run last first).
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return h
}

// initWith initializes a raw host declaring caps and returns the result.
func initWith(h *rawHost, caps string) json.RawMessage {
	h.t.Helper()
	res := rawResult(h.t, h.send("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`))
	h.send("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res
}

// hostRequests answers the requests the peer sends the raw host with
// answer(method), and keeps their params.
type hostRequests struct {
	mu   sync.Mutex
	seen map[string][]json.RawMessage
}

func (h *rawHost) answerRequests(answer func(method string) string) *hostRequests {
	r := &hostRequests{seen: map[string][]json.RawMessage{}}
	go func() {
		for line := range h.notify {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil {
				continue
			}
			r.mu.Lock()
			r.seen[m.Method] = append(r.seen[m.Method], m.Params)
			r.mu.Unlock()
			res := answer(m.Method)
			if res == "" {
				fmt.Fprintf(h.stdin, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", m.ID)
				continue
			}
			fmt.Fprintf(h.stdin, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, res)
		}
	}()
	return r
}

func (r *hostRequests) params(method string) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[method])
}

// toolList returns the names of a tools/list result, without prefix.
func toolList(t *testing.T, h *rawHost, prefix string) []string {
	t.Helper()
	var l struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(rawResult(t, h.send("50", `{"jsonrpc":"2.0","id":50,"method":"tools/list"}`)), &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range l.Tools {
		out = append(out, strings.TrimPrefix(tl.Name, prefix))
	}
	slices.Sort(out)
	return out
}

// Row 1, tasks. The gate declares no tasks, so a host's task-augmented
// tools/call gets the tool's normal result, byte for byte what the server
// answers a plain call, and no task is left running upstream (the gate
// strips params.task, as the specification asks of a receiver that does not
// declare tasks). Directly, the same request creates a task.
func TestRelayTasksStripped(t *testing.T) {
	t.Parallel()
	direct := everythingDirect(t)
	initWith(direct, `{}`)
	plain := rawResult(t, direct.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":2}}}`))
	// Directly, server-everything makes a task of a task tool, and fails a
	// task-augmented call of an ordinary one.
	tasked := rawResult(t, direct.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"simulate-research-query","arguments":{"topic":"x"},"task":{"ttl":60000}}}`))
	if !strings.Contains(string(tasked), `"taskId"`) {
		t.Fatalf("directly, a task-augmented call made no task: %s", tasked)
	}
	if resp := direct.send("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":2},"task":{"ttl":60000}}}`); !strings.Contains(resp, `"error"`) {
		t.Logf("note: directly, a task-augmented get-sum now answers %s", resp)
	}

	g := gateCommand(t, map[string]server{"everything": everything()})
	h := startRaw(t, g)
	init := initWith(h, `{}`)
	if strings.Contains(string(init), `"tasks"`) {
		t.Errorf("the gate declares tasks: %s", init)
	}
	got := rawResult(t, h.send("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":1,"b":2},"task":{"ttl":60000}}}`))
	if string(got) != string(plain) {
		t.Errorf("a task-augmented call through the gate:\n got: %s\nwant the plain result: %s", got, plain)
	}
	// A tool that requires a task: through the gate, which strips the task,
	// it answers as directly to a host that asks without one.
	want := stripID(t, direct.send("6", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"simulate-research-query","arguments":{"topic":"x"}}}`))
	if got := stripID(t, h.send("6", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"everything__simulate-research-query","arguments":{"topic":"x"},"task":{"ttl":60000}}}`)); got != want {
		t.Errorf("a task-required tool through the gate:\n got: %s\nwant: %s", got, want)
	}
	// The host has no task to ask about, and the gate says it serves none.
	if resp := h.send("4", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"x"}}`); !strings.Contains(resp, `"code":-32601`) {
		t.Errorf("tasks/get through the gate: %s", resp)
	}
	// A case variant of "task", which a case-folding server would read as
	// task augmentation, is refused.
	if resp := h.send("5", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"everything__get-sum","arguments":{"a":1,"b":2},"Task":{"ttl":60000}}}`); !strings.Contains(resp, `"code":-32602`) {
		t.Errorf("a case variant of task: %s", resp)
	}
}

// everythingHostCaps is a host that can elicit and sample, also as tasks,
// and declares an experimental capability.
const everythingHostCaps = `{"elicitation":{"form":{}},"sampling":{},"tasks":{"list":{},"cancel":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}},"experimental":{"x-e2e":{"on":true}}}`

// Row 2, capabilities: the host's tasks (the request types) and
// experimental capabilities reach the upstream, so server-everything lists
// the same tools through the gate as directly, its two task-based tools
// among them; their task-augmented requests reach the host as plain
// requests and the host's answer is their normal result.
func TestRelayHostCapabilitiesUpstream(t *testing.T) {
	t.Parallel()
	direct := everythingDirect(t)
	initWith(direct, everythingHostCaps)
	want := toolList(t, direct, "")
	for _, async := range []string{"trigger-elicitation-request-async", "trigger-sampling-request-async"} {
		if !slices.Contains(want, async) {
			t.Fatalf("directly, server-everything does not list %s for this host: %v", async, want)
		}
	}

	g := gateCommand(t, map[string]server{"everything": everything()})
	h := startRaw(t, g)
	initWith(h, everythingHostCaps)
	reqs := h.answerRequests(func(method string) string {
		switch method {
		case "elicitation/create":
			return `{"action":"accept","content":{"name":"Ada","favoriteColor":"Blue"}}`
		case "sampling/createMessage":
			return `{"model":"e2e-model","role":"assistant","content":{"type":"text","text":"sampled"}}`
		}
		return ""
	})
	if got := toolList(t, h, "everything__"); !slices.Equal(got, want) {
		t.Errorf("tools through the gate differ from the tools directly:\n gate: %v\ndirect: %v", got, want)
	}
	for _, c := range []struct{ tool, want string }{
		{"trigger-elicitation-request-async", "Ada"},
		{"trigger-sampling-request-async", "e2e-model"},
	} {
		resp := h.send("7", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything__`+c.tool+`","arguments":{"prompt":"hi","maxTokens":5}}}`)
		res := string(rawResult(t, resp))
		if !strings.Contains(res, "[SYNC]") || !strings.Contains(res, c.want) || strings.Contains(res, `"isError":true`) {
			t.Errorf("%s through the gate: %s", c.tool, res)
		}
	}
	for _, m := range []string{"elicitation/create", "sampling/createMessage"} {
		ps := reqs.params(m)
		if len(ps) == 0 {
			t.Errorf("no %s reached the host", m)
		}
		for _, p := range ps {
			if strings.Contains(string(p), `"task"`) {
				t.Errorf("%s reached the host task-augmented: %s", m, p)
			}
		}
	}
}

// Row 2, initialize: without a protocolVersion the gate answers -32602, as
// the upstream does; the session can still initialize properly after.
func TestRelayInitializeWithoutVersion(t *testing.T) {
	t.Parallel()
	direct := everythingDirect(t)
	dresp := direct.send("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	g := gateCommand(t, map[string]server{"everything": everything()})
	h := startRaw(t, g)
	resp := h.send("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if !strings.Contains(resp, `"code":-32602`) || !strings.Contains(resp, "protocolVersion") {
		t.Errorf("initialize without protocolVersion through the gate: %s (directly: %s)", resp, dresp)
	}
	if !strings.Contains(dresp, `"error"`) {
		t.Logf("note: server-everything itself answers %s", dresp)
	}
	if resp := h.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(resp, `"code":-32600`) {
		t.Errorf("tools/list after a refused initialize: %s", resp)
	}
	initWith(h, `{}`)
	// Once initialized, a session stays as it was (issue 9 review R3).
	if resp := h.send("3", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`); !strings.Contains(resp, `"code":-32600`) || !strings.Contains(resp, "already initialized") {
		t.Errorf("a second initialize: %s", resp)
	}
}

// Row 5: the host's own answer to an upstream's elicitation, echoed in
// that upstream's result, passes the guard (server-everything's
// trigger-elicitation-request no longer needs the guard set to log-only);
// a forged approval beside the echo, or an answer nobody gave, is refused.
func TestRelayElicitationAnswerExempt(t *testing.T) {
	t.Parallel()
	needNode(t)
	g := gateCommand(t, map[string]server{"everything": everything(), "fid": testserver("relayfid")})
	h := startRaw(t, g)
	initWith(h, `{"elicitation":{"form":{}}}`)
	h.answerRequests(func(method string) string {
		if method == "elicitation/create" {
			return `{"action":"accept","content":{"name":"Ada","check":true}}`
		}
		return ""
	})
	callTool := func(id, name string) string {
		return string(rawResult(t, h.send(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)))
	}
	if res := callTool("1", "everything__trigger-elicitation-request"); !strings.Contains(res, "Name: Ada") || strings.Contains(res, "mcp-gate refused") {
		t.Errorf("server-everything's elicitation result: %s", res)
	}
	if res := callTool("2", "fid__echo_answer"); !strings.Contains(res, `You answered: {\"action\":\"accept\"`) || strings.Contains(res, "mcp-gate refused") {
		t.Errorf("the echoed answer: %s", res)
	}
	if res := callTool("3", "fid__echo_answer_forged"); !strings.Contains(res, "mcp-gate refused") || !strings.Contains(res, "approval_decision") {
		t.Errorf("a forged approval beside the echoed answer was not refused: %s", res)
	}
	if res := callTool("4", "fid__unasked_answer"); !strings.Contains(res, "mcp-gate refused") || !strings.Contains(res, "elicitation_result") {
		t.Errorf("an answer nobody gave was not refused: %s", res)
	}
	exempted := 0
	for _, l := range g.auditLines(t) {
		if l["event"] == "guard" && l["outcome"] == "exempted" {
			exempted++
		}
	}
	if exempted == 0 {
		t.Error("no exempted guard record in the audit log")
	}
}

// waitNotification returns the next notification line of method carrying
// want, or fails.
func (h *rawHost) waitNotification(method, want string, d time.Duration) string {
	h.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case line := <-h.notify:
			if strings.Contains(line, `"method":"`+method+`"`) && strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			h.t.Fatalf("no %s with %s within %v", method, want, d)
			return ""
		}
	}
}

// stripID is a response line without its id, to compare two peers'.
func stripID(t *testing.T, line string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %s", line)
	}
	delete(m, "id")
	if e, ok := m["error"]; ok {
		return "error:" + string(e)
	}
	return "result:" + string(m["result"])
}

// Row 3, resources: a URI server-everything does not list and no template
// of it produces goes to it, the one server with resources: a subscription
// to it succeeds, its updates reach the host byte for byte, and reading it
// returns the server's own error byte for byte.
func TestRelayResourceRouting(t *testing.T) {
	t.Parallel()
	const uri = "test://watched-resource"
	direct := everythingDirect(t)
	initWith(direct, `{}`)
	g := gateCommand(t, map[string]server{"everything": everything()})
	h := startRaw(t, g)
	initWith(h, `{}`)

	for _, req := range []string{
		`"method":"resources/read","params":{"uri":"` + uri + `"}`,
		`"method":"resources/subscribe","params":{"uri":"` + uri + `"}`,
	} {
		d := stripID(t, direct.send("1", `{"jsonrpc":"2.0","id":1,`+req+`}`))
		got := stripID(t, h.send("1", `{"jsonrpc":"2.0","id":1,`+req+`}`))
		if got != d {
			t.Errorf("%s:\n gate:   %s\n direct: %s", req, got, d)
		}
	}
	rawResult(t, direct.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"toggle-subscriber-updates","arguments":{}}}`))
	rawResult(t, h.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everything__toggle-subscriber-updates","arguments":{}}}`))
	want := direct.waitNotification("notifications/resources/updated", uri, 20*time.Second)
	// The envelope is each peer's own (the SDK writes jsonrpc last); the
	// params are the server's.
	got := h.waitNotification("notifications/resources/updated", uri, 20*time.Second)
	if p, w := notificationParams(t, got), notificationParams(t, want); p != w {
		t.Errorf("the update through the gate:\n got: %s\nwant: %s", got, want)
	}
	rawResult(t, h.send("3", `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"`+uri+`"}}`))
}

func notificationParams(t *testing.T, line string) string {
	t.Helper()
	var m struct{ Params json.RawMessage }
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %s", line)
	}
	return string(m.Params)
}

// Row 2, versions: each upstream is asked for 2025-11-25 and may answer an
// older revision the gate knows; the gate speaks that one to it and relays
// its messages as they are, while the host keeps the revision it asked for.
func TestRelayUpstreamVersion(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"old": testserver("relayfid-old"), "new": testserver("relayfid")})
	h := startRaw(t, g)
	if init := initWith(h, `{}`); !strings.Contains(string(init), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize: %s", init)
	}
	for _, name := range []string{"old__err_unknown", "new__err_unknown"} {
		resp := h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
		if got := errorMember(t, resp); got != relayfidErrors["err_unknown"] {
			t.Errorf("%s: %s", name, got)
		}
	}
	waitFor(t, "the upstreams' versions in the log", 10*time.Second, func() bool {
		l := g.stderr.String()
		return strings.Contains(l, "server=old") && strings.Contains(l, "protocol_version=2025-06-18") && strings.Contains(l, "protocol_version=2025-11-25")
	})
}
