package proxy

// In-memory tests of the tool call path's edges (calls.go, decide.go):
// malformed call params, the title the human is shown, large results
// guarded as small ones are, and completion decided on every value it
// carries.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// Call params the gate cannot read unambiguously are invalid params, and
// nothing reaches the upstream.
func TestMalformedCallParamsRefused(t *testing.T) {
	up := newPipelineUpstream()
	h := startRawHost(t, map[string]scripted{"s": up.serve})
	for _, c := range []struct{ method, params, want string }{
		{"tools/call", `[]`, `params must be an object with a \"name\"`},
		{"tools/call", `{}`, `params need a non-empty string \"name\"`},
		{"tools/call", `{"name":7}`, `params need a non-empty string \"name\"`},
		{"tools/call", `{"name":"s__t","arguments":[1]}`, `\"arguments\" must be an object`},
		{"tools/call", `{"name":"s__t","arguments":"x"}`, `\"arguments\" must be an object`},
		{"prompts/get", `{"name":""}`, `params need a non-empty string \"name\"`},
		{"resources/read", `{"uri":7}`, `params need a \"uri\" string`},
		{"completion/complete", `{"ref":{"type":"ref/tool","name":"s__t"}}`, `must be \"ref/prompt\" or \"ref/resource\"`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"s__nope"}}`, `unknown prompt \"s__nope\"`},
	} {
		resp := string(h.call(c.method, c.params))
		if !strings.Contains(resp, `"code":-32602`) || !strings.Contains(resp, c.want) {
			t.Errorf("%s %s: %s; want -32602 with %s", c.method, c.params, resp, c.want)
		}
	}
	for _, m := range []string{"tools/call", "prompts/get", "resources/read", "completion/complete"} {
		if up.got(m) {
			t.Errorf("a malformed %s reached the upstream", m)
		}
	}
	// arguments: null is no arguments, and is forwarded.
	if resp := string(h.call("tools/call", `{"name":"s__t","arguments":null}`)); strings.Contains(resp, `"error"`) {
		t.Fatalf("arguments null: %s", resp)
	}
}

// titleApprover records the titles the human is shown and says no.
type titleApprover struct {
	mu     sync.Mutex
	titles map[string]string // tool → title
}

func (a *titleApprover) Approve(_ context.Context, req elicitation.Request, _ time.Duration) elicitation.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.titles[req.Tool] = req.Title
	return elicitation.Answer{Outcome: elicitation.Declined, Detail: "no"}
}

// The approval question shows the title the upstream gave the tool: its
// own title, else its annotations' title, else none.
func TestApprovalShowsToolTitle(t *testing.T) {
	up := func(method string, id, _ json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"a","title":"Delete the repository","inputSchema":{"type":"object"}},`+
				`{"name":"b","annotations":{"title":"Send mail"},"inputSchema":{"type":"object"}},`+
				`{"name":"c","inputSchema":{"type":"object"}}]}`)
		default:
			if id != nil {
				reply(w, id, `{}`)
			}
		}
	}
	a := &titleApprover{titles: map[string]string{}}
	h := startRawHost(t, map[string]scripted{"s": up}, func(o *Options) {
		o.Policy = static(t, "version: 1\nfallback: ask\n")
		o.Approver = a
	})
	for _, tool := range []string{"a", "b", "c"} {
		if resp := string(h.call("tools/call", `{"name":"s__`+tool+`","arguments":{}}`)); !strings.Contains(resp, `"isError":true`) {
			t.Fatalf("a declined call ran: %s", resp)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.titles["a"] != "Delete the repository" || a.titles["b"] != "Send mail" || a.titles["c"] != "" {
		t.Fatalf("titles shown: %q", a.titles)
	}
}

// A result large enough for the guard's two passes to run concurrently is
// guarded as a small one: a forged approval anywhere in it is refused,
// hidden characters are made visible, and a key holding one refuses the
// whole result, saying where.
func TestLargeResultsGuarded(t *testing.T) {
	pad := strings.Repeat("lorem ipsum ", parallelGuardBytes/10)
	var calls atomic.Int32
	up := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"forged","inputSchema":{"type":"object"}},{"name":"hidden","inputSchema":{"type":"object"}},{"name":"key","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			calls.Add(1)
			name, _ := jsonPath(params, "name")
			switch name {
			case "forged":
				reply(w, id, `{"content":[{"type":"text","text":"`+pad+`"},{"type":"text","text":"`+forged+`"}]}`)
			case "hidden":
				reply(w, id, `{"content":[{"type":"text","text":"`+pad+`end\u200b"}]}`)
			case "key":
				reply(w, id, `{"content":[{"type":"text","text":"`+pad+`"}],"structuredContent":{"k\u200b":1}}`)
			}
		}
	}
	var audit lockedBuffer
	h := startRawHost(t, map[string]scripted{"s": up}, withAudit(&audit))
	resp := string(h.call("tools/call", `{"name":"s__forged","arguments":{}}`))
	if !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, "approval-shaped") || strings.Contains(resp, "lorem") {
		t.Fatalf("a large forged result: %.300s", resp)
	}
	resp = string(h.call("tools/call", `{"name":"s__hidden","arguments":{}}`))
	if !strings.Contains(resp, `end[U+200B]`) || strings.Contains(resp, `"isError":true`) {
		t.Fatalf("a large result with a hidden character: …%s", resp[max(0, len(resp)-200):])
	}
	resp = string(h.call("tools/call", `{"name":"s__key","arguments":{}}`))
	if !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, "keys are not rewritten") || strings.Contains(resp, "lorem") {
		t.Fatalf("a large result with a hidden character in a key: %.300s", resp)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls reached the upstream", calls.Load())
	}
	for _, want := range []string{`"outcome":"refused","kind":"elicitation_result"`, `"outcome":"neutralised"`, `holds hidden characters`} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("no %s in the audit", want)
		}
	}
}

// A completion is decided as every URI its values make: a value given in
// context.arguments counts as much as the argument being completed, and a
// value that is not a string is left out rather than read as another.
func TestCompletionDecidedOnContextArguments(t *testing.T) {
	var completed atomic.Int32
	up := func(method string, id, _ json.RawMessage, w func(string)) {
		switch method {
		case "resources/list":
			reply(w, id, `{"resources":[]}`)
		case "resources/templates/list":
			reply(w, id, `{"resourceTemplates":[{"uriTemplate":"file:///{dir}/{name}","name":"file"}]}`)
		case "completion/complete":
			completed.Add(1)
			reply(w, id, `{"completion":{"values":["x"]}}`)
		default:
			if id != nil {
				reply(w, id, `{}`)
			}
		}
	}
	h := scriptedHost(t, up, "version: 1\nfallback: deny\ndeny: [\"resource:s:file:///etc/**\"]\n")
	h.call("resources/templates/list", `{}`)
	tmpl := `"ref":{"type":"ref/resource","uri":"file:///{dir}/{name}"}`
	if r := h.call("completion/complete", `{`+tmpl+`,"argument":{"name":"name","value":"pa"},"context":{"arguments":{"dir":"etc"}}}`); r.Error == nil || r.Error.Code != CodeDenied {
		t.Fatalf("completing a name under a denied directory given in context: %s %+v", r.Result, r.Error)
	}
	if completed.Load() != 0 {
		t.Fatal("the server completed a name under a denied directory")
	}
	for _, params := range []string{
		`{` + tmpl + `,"argument":{"name":"name","value":"pa"},"context":{"arguments":{"dir":"home"}}}`,
		`{` + tmpl + `,"argument":{"name":"name","value":"pa"},"context":{"arguments":{"dir":7}}}`,
	} {
		if r := h.call("completion/complete", params); r.Error != nil {
			t.Errorf("%s: %+v", params, r.Error)
		}
	}
	if completed.Load() != 2 {
		t.Fatalf("%d completions reached the server, want 2", completed.Load())
	}
}
