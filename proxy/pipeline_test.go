package proxy

// Issue 9, "one call path": one row per method the dispatcher knows, in
// both directions, each saying how it is decided, what it audits and what
// guards its answer, and each run against a fake upstream to prove it.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// zwsp is a zero-width space as it appears escaped on the wire; the fake
// upstream puts it in every string it sends, so that a guarded answer shows
// it as [U+200B].
const zwsp = `\u200b`

// pipelineUpstream is a scripted upstream for the table: one tool, prompt
// and resource, answers carrying zwsp, and, on request, a request or
// notification of its own sent during a tools/call.
type pipelineUpstream struct {
	mu      sync.Mutex
	seen    []string               // methods received, lists excepted
	lists   map[string]int         // list requests received
	answers map[string]chan string // responses to its own requests, by id
	asked   int                    // its own requests sent during calls
	replies map[string]int         // responses to its own requests received, by id sans its number
	late    chan string            // answers to requests sent after a call ended
	release chan struct{}          // ends calls with {"block":true}
	goLate  chan struct{}          // lets a {"later":M} call send M
}

func newPipelineUpstream() *pipelineUpstream {
	return &pipelineUpstream{lists: map[string]int{}, answers: map[string]chan string{}, replies: map[string]int{}, late: make(chan string, 4), release: make(chan struct{}), goLate: make(chan struct{})}
}

// repliesTo counts the responses the gate sent to its requests of id
// (without the number each request's id ends in: "up-elicitation/create").
func (u *pipelineUpstream) repliesTo(id string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.replies[id]
}

func (u *pipelineUpstream) got(method string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.seen, method)
}

func (u *pipelineUpstream) listed(method string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lists[method]
}

func (u *pipelineUpstream) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seen = nil
}

// upstreamParams are the params of the upstream's own messages.
var upstreamParams = map[string]string{
	"ping":                                 `{}`,
	"roots/list":                           `{}`,
	"sampling/createMessage":               `{"messages":[{"role":"user","content":{"type":"text","text":"hi` + zwsp + `"}}],"maxTokens":10}`,
	"elicitation/create":                   `{"message":"Pick` + zwsp + `","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}`,
	"notifications/message":                `{"level":"info","data":"log` + zwsp + `"}`,
	"notifications/resources/updated":      `{"uri":"mem://a","title":"a` + zwsp + `"}`,
	"notifications/elicitation/complete":   `{"elicitationId":"never-started"}`,
	"notifications/tools/list_changed":     `{}`,
	"notifications/prompts/list_changed":   `{}`,
	"notifications/resources/list_changed": `{}`,
}

func (u *pipelineUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		u.mu.Lock()
		u.lists[method]++
		u.mu.Unlock()
	}
	switch method {
	case "tools/list":
		reply(w, id, `{"tools":[{"name":"t","description":"d`+zwsp+`","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"object"}}]}`)
		return
	case "prompts/list":
		reply(w, id, `{"prompts":[{"name":"p","description":"d`+zwsp+`","arguments":[{"name":"a"}]}]}`)
		return
	case "resources/list":
		reply(w, id, `{"resources":[{"uri":"mem://a","name":"a","description":"d`+zwsp+`"}]}`)
		return
	case "resources/templates/list":
		reply(w, id, `{"resourceTemplates":[{"uriTemplate":"mem://t/{x}","name":"t","description":"d`+zwsp+`"}]}`)
		return
	case "":
		var m struct{ ID string }
		_ = json.Unmarshal(id, &m.ID)
		u.mu.Lock()
		ch := u.answers[m.ID]
		u.mu.Unlock()
		if ch != nil {
			ch <- string(params)
		}
		u.mu.Lock()
		base := strings.TrimRight(m.ID, "0123456789")
		if b, ok := strings.CutSuffix(base, "-"); ok && strings.HasPrefix(b, "up-") {
			base = b
		}
		u.replies[base]++
		u.mu.Unlock()
		return
	}
	u.mu.Lock()
	u.seen = append(u.seen, method)
	u.mu.Unlock()
	if id == nil {
		return
	}
	switch method {
	case "tools/call":
		// {"arguments":{"send":M}}: send M to the gate first; a request's
		// answer goes back as the call's text.
		send, _ := jsonPath(params, "arguments", "send")
		text := "ran" + zwsp
		if _, block := jsonRaw(params, "arguments", "block"); block {
			<-u.release
		}
		if later, _ := jsonPath(params, "arguments", "later"); later != "" {
			// Answer first, then ask: a request outside any call.
			reply(w, id, `{"content":[]}`)
			<-u.goLate
			ch := make(chan string, 1)
			u.mu.Lock()
			u.answers["late"] = ch
			u.mu.Unlock()
			w(fmt.Sprintf(`{"jsonrpc":"2.0","id":"late","method":%q,"params":%s}`, later, upstreamParams[later]))
			select {
			case a := <-ch:
				u.late <- a
			case <-time.After(10 * time.Second):
				u.late <- "no answer"
			}
			return
		}
		if send != "" {
			if strings.HasPrefix(send, "notifications/") {
				p := upstreamParams[send]
				if send == "notifications/progress" {
					tok, _ := jsonRaw(params, "_meta", "progressToken")
					p = `{"progressToken":` + string(tok) + `,"progress":1,"message":"half` + zwsp + `"}`
				}
				w(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, send, p))
			} else {
				// An id of its own for every request, as a server keeps
				// them: a late answer to an ended call's question must
				// not reach the next call's.
				ch := make(chan string, 1)
				u.mu.Lock()
				u.asked++
				qid := fmt.Sprintf("up-%s-%d", send, u.asked)
				u.answers[qid] = ch
				u.mu.Unlock()
				w(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, qid, send, upstreamParams[send]))
				select {
				case a := <-ch:
					b, _ := json.Marshal(a)
					text = string(b[1 : len(b)-1])
				case <-time.After(10 * time.Second):
					text = "no answer"
				}
			}
		}
		reply(w, id, `{"content":[{"type":"text","text":"`+text+`"}]}`)
	case "prompts/get":
		reply(w, id, `{"messages":[{"role":"user","content":{"type":"text","text":"m`+zwsp+`"}}]}`)
	case "resources/read":
		reply(w, id, `{"contents":[{"uri":"mem://a","text":"c`+zwsp+`"}]}`)
	case "completion/complete":
		reply(w, id, `{"completion":{"values":["v`+zwsp+`"]}}`)
	case "resources/subscribe", "resources/unsubscribe":
		reply(w, id, `{"_meta":{"note":"n`+zwsp+`"}}`)
	default:
		reply(w, id, `{}`)
	}
}

func jsonRaw(v json.RawMessage, path ...string) (json.RawMessage, bool) {
	for _, k := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil, false
		}
		var ok bool
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func jsonPath(v json.RawMessage, path ...string) (string, bool) {
	raw, ok := jsonRaw(v, path...)
	var s string
	if !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// pipelineEnv is one gate, under one policy, with a raw host and the fake
// upstream "s".
type pipelineEnv struct {
	t     *testing.T
	host  *rawHost
	up    *pipelineUpstream
	audit *lockedBuffer
	allow bool
}

func startPipelineEnv(t *testing.T, policyText string, allow bool) *pipelineEnv {
	up := newPipelineUpstream()
	var buf lockedBuffer
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
		o.Policy = static(t, policyText)
	}, withAudit(&buf))
	// Warm the catalogs: a refusal must not come from an unknown name.
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		h.call(m, `{}`)
	}
	return &pipelineEnv{t: t, host: h, up: up, audit: &buf, allow: allow}
}

// auditLines returns the audit lines written since mark.
func (e *pipelineEnv) auditLines(mark int) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(e.audit.String()[mark:], "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func hasEvent(lines []map[string]any, event string, match map[string]string) bool {
	for _, l := range lines {
		if l["event"] != event {
			continue
		}
		ok := true
		for k, v := range match {
			if fmt.Sprint(l[k]) != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// shown reports whether answer carries the fake upstream's hidden
// character made visible, and never as it was sent.
func shown(answer string) bool {
	return strings.Contains(answer, "[U+200B]") && !strings.Contains(answer, zwsp) && !strings.Contains(answer, "\u200b")
}

type pipelineRow struct {
	dir      string // "host", "upstream", "host notification", "upstream notification"
	method   string
	params   string // for host requests
	decision string // the policy kind decided on, or "none, because …"
	audit    string // the audit event written, or "none, because …"
	guard    string // what guards the answer, or "none, because …"
	// reaches: a host request is forwarded to the upstream once allowed.
	reaches bool
	// check, when set, proves the row's decision, audit and guard in one
	// environment; for rows without it the generic host-request check runs.
	check func(t *testing.T, e *pipelineEnv, mark int)
}

func (r pipelineRow) decided() bool { return !strings.HasPrefix(r.decision, "none") }
func (r pipelineRow) guarded() bool { return !strings.HasPrefix(r.guard, "none") }

// callWith has the fake upstream send method during a tools/call, and
// returns the call's answer.
func callWith(e *pipelineEnv, method string) string {
	return string(e.host.call("tools/call", fmt.Sprintf(`{"name":"s__t","arguments":{"send":%q},"_meta":{"progressToken":"host-tok"}}`, method)))
}

var pipelineRows = []pipelineRow{
	// Host → gate, answered by the gate itself.
	{dir: "host", method: "initialize", params: `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}},"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}`,
		decision: "none, because the gate answers it itself and nothing reaches an upstream",
		audit:    "none, because nothing is decided", guard: "none, because the answer is the gate's own"},
	{dir: "host", method: "ping", params: `{}`,
		decision: "none, because the gate answers it itself", audit: "none, because nothing is decided",
		guard: "none, because the answer is the gate's own"},
	{dir: "host", method: "logging/setLevel", params: `{"level":"info"}`,
		decision: "none, because the level only filters the upstreams' log notifications, which are neutralised on the way",
		audit:    "none, because nothing is decided", guard: "none, because the answer is the gate's own"},
	{dir: "host", method: "tools/list", params: `{}`,
		decision: "none, because listing runs nothing; what an unconditional deny covers is hidden",
		audit:    "guard (neutralised) when an entry is fetched", guard: "every entry neutralised when fetched (neutralizeEntry)"},
	{dir: "host", method: "prompts/list", params: `{}`,
		decision: "none, because listing runs nothing; what an unconditional deny covers is hidden",
		audit:    "guard (neutralised) when an entry is fetched", guard: "every entry neutralised when fetched (neutralizeEntry)"},
	{dir: "host", method: "resources/list", params: `{}`,
		decision: "none, because listing reads no resource; what an unconditional deny covers is hidden",
		audit:    "guard (neutralised) when an entry is fetched", guard: "every entry neutralised when fetched (neutralizeEntry)"},
	{dir: "host", method: "resources/templates/list", params: `{}`,
		decision: "none, because listing reads no resource",
		audit:    "guard (neutralised) when an entry is fetched", guard: "every entry neutralised when fetched (neutralizeEntry)"},
	// Host → upstream, through the pipeline.
	{dir: "host", method: "tools/call", params: `{"name":"s__x","arguments":{}}`, reaches: true,
		decision: "tool", audit: "decision (and approval on ask); guard when the result is changed or refused",
		guard: "guardResult: approval-shaped payloads refused, every string neutralised"},
	{dir: "host", method: "prompts/get", params: `{"name":"s__p","arguments":{}}`, reaches: true,
		decision: "prompt", audit: "decision; guard", guard: "guardOther: approval-shaped payloads refused, every string neutralised"},
	{dir: "host", method: "resources/read", params: `{"uri":"mem://a"}`, reaches: true,
		decision: "resource", audit: "decision; guard", guard: "guardOther: approval-shaped payloads refused, every string neutralised"},
	{dir: "host", method: "resources/subscribe", params: `{"uri":"mem://a"}`, reaches: true,
		decision: "resource", audit: "decision; guard", guard: "guardAck: the acknowledgement neutralised"},
	{dir: "host", method: "resources/unsubscribe", params: `{"uri":"mem://a"}`, reaches: true,
		decision: "none, because unsubscribing only stops update notifications",
		audit:    "guard when the acknowledgement is changed", guard: "guardAck: the acknowledgement neutralised"},
	{dir: "host", method: "completion/complete", params: `{"ref":{"type":"ref/prompt","name":"s__p"},"argument":{"name":"a","value":""}}`, reaches: true,
		decision: "prompt", audit: "decision; guard", guard: "the completion values neutralised"},
	// Host notifications.
	{dir: "host notification", method: "notifications/initialized",
		decision: "none, because it only says the host is ready", audit: "none, because nothing is decided",
		guard: "none, because nothing is relayed",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			e.host.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if r := e.host.call("ping", `{}`); !strings.Contains(string(r), `"result"`) {
				t.Errorf("the gate stopped answering: %s", r)
			}
		}},
	{dir: "host notification", method: "notifications/roots/list_changed",
		decision: "none, because it only tells upstreams to ask for roots again, which the host answers",
		audit:    "none, because nothing is decided", guard: "none, because it carries no upstream data to the host",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			e.host.write(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
			waitFor(t, "the upstream to hear of the roots change", func() bool { return e.up.got("notifications/roots/list_changed") })
		}},
	// Upstream → gate requests, sent during a tools/call.
	{dir: "upstream", method: "sampling/createMessage",
		decision: "sampling", audit: "decision; guard (duplicate keys, approval-shaped payloads refused; neutralised)",
		guard: "the request is inspected and neutralised before the host's model sees it; the answer is the host's, going back unguarded",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			answer := callWith(e, "sampling/createMessage")
			lines := e.auditLines(mark)
			verdict := "deny"
			if e.allow {
				verdict = "allow"
			}
			if !hasEvent(lines, "decision", map[string]string{"kind": "sampling", "verdict": verdict}) {
				t.Errorf("no %s decision on sampling in %v", verdict, lines)
			}
			if !e.allow {
				if !strings.Contains(answer, "-32010") || e.host.has("sampling/createMessage") {
					t.Errorf("a denied sampling request: answer %s", answer)
				}
				return
			}
			if req := string(e.host.next("sampling/createMessage")); !shown(req) {
				t.Errorf("the host saw %s", req)
			}
			if !hasEvent(lines, "guard", map[string]string{"outcome": "neutralised"}) {
				t.Errorf("no guard line in %v", lines)
			}
		}},
	{dir: "upstream", method: "elicitation/create",
		decision: "none, because the question goes to the user, whose answer is the decision; it never obtains an approval",
		audit:    "elicitation (relayed or refused)",
		guard:    "approval-shaped questions refused, every string neutralised, the server's name put in front",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			callWith(e, "elicitation/create")
			req := string(e.host.next("elicitation/create"))
			if !shown(req) || !strings.Contains(req, `"[s] Pick`) {
				t.Errorf("the host saw %s", req)
			}
			lines := e.auditLines(mark)
			if !hasEvent(lines, "elicitation", map[string]string{"outcome": "relayed"}) || hasEvent(lines, "decision", map[string]string{"kind": "sampling"}) {
				t.Errorf("audit: %v", lines)
			}
		}},
	{dir: "upstream", method: "roots/list",
		decision: "none, because the host answers about its own workspace, and only if it declared roots",
		audit:    "none, because nothing is decided", guard: "none, because the answer is the host's, going to the upstream",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			// The raw host declared no roots: the upstream is told so.
			if answer := callWith(e, "roots/list"); !strings.Contains(answer, "does not support roots") {
				t.Errorf("answer %s", answer)
			}
		}},
	{dir: "upstream", method: "ping",
		decision: "none, because the gate answers it itself", audit: "none, because nothing is decided",
		guard: "none, because the answer is the gate's own",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			if answer := callWith(e, "ping"); !strings.Contains(answer, `\"result\":{}`) {
				t.Errorf("answer %s", answer)
			}
		}},
	// Upstream notifications, sent during a tools/call.
	{dir: "upstream notification", method: "notifications/progress",
		decision: "none, because it answers a request already decided", audit: "guard when its text is changed or refused",
		guard: "inspected (one announcing an approval is dropped) and neutralised; only for a request in flight to that upstream, with the host's token put back",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			callWith(e, "notifications/progress")
			n := string(e.host.next("notifications/progress"))
			if !shown(n) || !strings.Contains(n, `"progressToken":"host-tok"`) {
				t.Errorf("the host saw %s", n)
			}
		}},
	{dir: "upstream notification", method: "notifications/message",
		decision: "none, because a log line runs nothing", audit: "guard when its text is changed or refused", guard: "inspected (one announcing an approval is dropped) and neutralised",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			callWith(e, "notifications/message")
			if n := string(e.host.next("notifications/message")); !shown(n) {
				t.Errorf("the host saw %s", n)
			}
		}},
	{dir: "upstream notification", method: "notifications/resources/updated",
		decision: "none, because it runs nothing", audit: "guard when its text is changed or refused",
		guard: "inspected (one announcing an approval is dropped) and neutralised; only for a resource the upstream owns, and only to sessions subscribed to it",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			if !e.allow {
				// The subscription was denied: no update reaches the host.
				e.host.call("resources/subscribe", `{"uri":"mem://a"}`)
				callWith(e, "notifications/resources/updated")
				callWith(e, "ping") // later than the notification on the same pipe
				if e.host.has("notifications/resources/updated") {
					t.Error("an update reached a host whose subscription was denied")
				}
				return
			}
			e.host.call("resources/subscribe", `{"uri":"mem://a"}`)
			defer e.host.call("resources/unsubscribe", `{"uri":"mem://a"}`)
			callWith(e, "notifications/resources/updated")
			if n := string(e.host.next("notifications/resources/updated")); !shown(n) {
				t.Errorf("the host saw %s", n)
			}
		}},
	{dir: "upstream notification", method: "notifications/elicitation/complete",
		decision: "none, because it runs nothing", audit: "none, because nothing is decided",
		guard: "neutralised; only for a URL elicitation that upstream started, else dropped",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			callWith(e, "notifications/elicitation/complete")
			callWith(e, "ping") // later than the notification on the same pipe
			if e.host.has("notifications/elicitation/complete") {
				t.Error("a completion for an elicitation the upstream never started reached the host")
			}
		}},
	{dir: "upstream notification", method: "notifications/tools/list_changed",
		decision: "none, because the gate re-lists; the host is told to list again", audit: "guard when a new entry is changed",
		guard: "the new entries neutralised when fetched",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			relisted(t, e, "notifications/tools/list_changed", "tools/list")
		}},
	{dir: "upstream notification", method: "notifications/prompts/list_changed",
		decision: "none, because the gate re-lists; the host is told to list again", audit: "guard when a new entry is changed",
		guard: "the new entries neutralised when fetched",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			relisted(t, e, "notifications/prompts/list_changed", "prompts/list")
		}},
	{dir: "upstream notification", method: "notifications/resources/list_changed",
		decision: "none, because the gate re-lists; the host is told to list again", audit: "guard when a new entry is changed",
		guard: "the new entries neutralised when fetched",
		check: func(t *testing.T, e *pipelineEnv, mark int) {
			relisted(t, e, "notifications/resources/list_changed", "resources/list")
		}},
}

func relisted(t *testing.T, e *pipelineEnv, notification, list string) {
	before := e.up.listed(list)
	callWith(e, notification)
	waitFor(t, "the gate to list "+list+" again", func() bool { return e.up.listed(list) > before })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// has reports whether the gate has sent the host a message with method
// (already read or waiting), without waiting for one.
func (h *rawHost) has(method string) bool {
	for {
		select {
		case line := <-h.inbox:
			h.pending = append(h.pending, line)
			continue
		default:
		}
		break
	}
	for _, line := range h.pending {
		var m struct{ Method string }
		_ = json.Unmarshal(line, &m)
		if m.Method == method {
			return true
		}
	}
	return false
}

// The dispatcher's method set, read from the tables it dispatches with.
func dispatcherMethods() map[string]bool {
	out := map[string]bool{}
	for m := range hostMethods {
		out["host "+m] = true
	}
	for m := range hostNotifications {
		out["host notification "+m] = true
	}
	for m := range upstreamMethods {
		out["upstream "+m] = true
	}
	for m := range upstreamNotifications {
		out["upstream notification "+m] = true
	}
	return out
}

func TestPipelineTableCoversEveryMethod(t *testing.T) {
	known := dispatcherMethods()
	rows := map[string]bool{}
	for _, r := range pipelineRows {
		key := r.dir + " " + r.method
		if rows[key] {
			t.Errorf("two rows for %s", key)
		}
		rows[key] = true
		if !known[key] {
			t.Errorf("row %s: the dispatcher knows no such method", key)
		}
		for what, v := range map[string]string{"decision": r.decision, "audit": r.audit, "guard": r.guard} {
			if v == "" || (strings.HasPrefix(v, "none") && !strings.HasPrefix(v, "none, because ")) {
				t.Errorf("row %s: the %s must be named, or be \"none, because …\"", key, what)
			}
		}
	}
	for key := range known {
		if !rows[key] {
			t.Errorf("the dispatcher serves %s, which has no row in pipelineRows: say how it is decided, audited and guarded", key)
		}
	}
	// Every relay the host dispatcher runs is decided unless it says why
	// not, and has a refusal shape.
	for _, r := range []*relay{relayToolCall, relayPromptGet, relayResourceRead, relaySubscribe, relayUnsubscribe, relayComplete, relaySampling, relayParkedSampling} {
		if r.refuse == nil || r.resolve == nil || (r.guard == nil && r.unguarded == "") {
			t.Errorf("relay %s is incomplete", r.method)
		}
	}
}

func TestPipelineTable(t *testing.T) {
	envs := []struct {
		name   string
		policy string
		allow  bool
	}{
		// s__t stays allowed: the upstream's own requests are sent during it.
		{"deny", "version: 1\nfallback: deny\nallow: [\"mcp:s:t\"]\ndeny: [\"prompt:**\", \"resource:**\", \"sampling:**\"]\n", false},
		{"allow", allowAll, true},
	}
	for _, env := range envs {
		t.Run(env.name, func(t *testing.T) {
			e := startPipelineEnv(t, env.policy, env.allow)
			for _, r := range pipelineRows {
				t.Run(strings.ReplaceAll(r.dir+" "+r.method, "/", "_"), func(t *testing.T) {
					e.t = t
					e.host.t = t
					e.up.reset()
					mark := len(e.audit.String())
					if r.check != nil {
						r.check(t, e, mark)
						return
					}
					answer := string(e.host.call(r.method, r.params))
					lines := e.auditLines(mark)
					kind := r.decision
					verdict := "deny"
					if e.allow {
						verdict = "allow"
					}
					switch {
					case r.decided() && !hasEvent(lines, "decision", map[string]string{"kind": kind, "verdict": verdict}):
						t.Errorf("no %s decision of kind %s in %v", verdict, kind, lines)
					case !r.decided() && hasEvent(lines, "decision", nil):
						t.Errorf("a decision where the row says %q: %v", r.decision, lines)
					}
					wantReach := r.reaches && (e.allow || !r.decided())
					if e.up.got(r.method) != wantReach {
						t.Errorf("reached the upstream: %v, want %v (answer %s)", !wantReach, wantReach, answer)
					}
					if !e.allow && r.decided() && !strings.Contains(answer, "mcp-gate denied") {
						t.Errorf("a denied %s answered %s", r.method, answer)
					}
					forwarded := e.allow || (!r.decided() && r.reaches)
					if forwarded && r.guarded() && !shown(answer) {
						t.Errorf("the answer is not guarded: %s", answer)
					}
					if forwarded && r.reaches && r.guarded() && !hasEvent(lines, "guard", map[string]string{"outcome": "neutralised"}) {
						t.Errorf("no guard line: %v", lines)
					}
				})
			}
		})
	}
}

// fakeApprover answers every question with one outcome and records them.
type fakeApprover struct {
	mu      sync.Mutex
	asked   []string
	outcome elicitation.Outcome
}

func (a *fakeApprover) Approve(_ context.Context, req elicitation.Request, _ time.Duration) elicitation.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Server+" "+req.Tool)
	return elicitation.Answer{Outcome: a.outcome, Detail: "the fake said " + string(a.outcome)}
}

// Options.Approver replaces the host's elicitation: an ask reaches it, and
// only its explicit yes lets the call through; every other outcome is a
// refusal (fail closed).
func TestApproverReplacesElicitation(t *testing.T) {
	for _, outcome := range []elicitation.Outcome{elicitation.Approved, elicitation.Declined, elicitation.TimedOut, elicitation.Failed, elicitation.Unsupported, elicitation.Withdrawn, "nonsense"} {
		t.Run(string(outcome), func(t *testing.T) {
			up := newPipelineUpstream()
			a := &fakeApprover{outcome: outcome}
			h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
				o.Policy = static(t, "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n")
				o.Approver = a
			})
			answer := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
			if h.has("elicitation/create") {
				t.Error("the host was asked although an Approver was given")
			}
			a.mu.Lock()
			asked := a.asked
			a.mu.Unlock()
			if len(asked) != 1 || asked[0] != "s t" {
				t.Fatalf("the approver was asked %v", asked)
			}
			allowed := outcome == elicitation.Approved
			if up.got("tools/call") != allowed || strings.Contains(answer, `"isError":true`) == allowed {
				t.Fatalf("outcome %s: upstream reached %v, answer %s", outcome, up.got("tools/call"), answer)
			}
		})
	}
}
