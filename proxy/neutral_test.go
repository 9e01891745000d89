package proxy

// Issue #8, "neutralisation covers everything a host shows": every message
// kind that carries upstream text to the host, with every class of hidden
// character, seen as raw bytes by a raw host.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// rawHost speaks JSON-RPC to a Gate line by line, so that a test sees the
// exact bytes the gate sends, and answers the gate's requests (elicitation,
// sampling) with fixed results.
type rawHost struct {
	t       *testing.T
	gate    *Gate
	w       io.Writer
	mu      sync.Mutex
	nextID  int
	waits   map[string]chan json.RawMessage // by response id
	inbox   chan json.RawMessage            // requests and notifications from the gate
	pending []json.RawMessage               // read from inbox, not asked for yet
	writeM  sync.Mutex
}

func startRawHost(t *testing.T, servers map[string]scripted, opts ...func(*Options)) *rawHost {
	t.Helper()
	return startRawHostInit(t, servers, defaultRawInit, opts...)
}

// defaultRawInit is the initialize params of a raw host that declares
// nothing else: form elicitation and sampling.
const defaultRawInit = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}},"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}`

// startRawHostInit is startRawHost with the host's initialize params
// given: a session initializes once.
func startRawHostInit(t *testing.T, servers map[string]scripted, init string, opts ...func(*Options)) *rawHost {
	t.Helper()
	var cfgs []upstream.Config
	for name := range servers {
		cfgs = append(cfgs, upstream.Config{Name: name, Type: upstream.TypeStdio, Command: "scripted"})
	}
	o := Options{
		Servers: sortConfigs(cfgs), Launcher: &scriptLauncher{servers: servers},
		StartTimeout: 10 * time.Second, Policy: static(t, allowAll), Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range opts {
		f(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return serveRawHostInit(t, g, func(ctx context.Context, r io.Reader, w io.Writer) error { return g.Serve(ctx, r, w) }, init)
}

// serveRawHost connects a raw host to serve (a Gate's or a Session's
// Serve) and initializes it.
func serveRawHost(t *testing.T, g *Gate, serve func(context.Context, io.Reader, io.Writer) error) *rawHost {
	t.Helper()
	return serveRawHostInit(t, g, serve, defaultRawInit)
}

// serveRawHostInit is serveRawHost initializing with init.
func serveRawHostInit(t *testing.T, g *Gate, serve func(context.Context, io.Reader, io.Writer) error, init string) *rawHost {
	t.Helper()
	hostR, gateW := io.Pipe()
	gateR, hostW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve(context.Background(), gateR, gateW) }()
	h := &rawHost{t: t, gate: g, w: hostW, waits: map[string]chan json.RawMessage{}, inbox: make(chan json.RawMessage, 64)}
	go func() {
		sc := bufio.NewScanner(hostR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := append(json.RawMessage(nil), sc.Bytes()...)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(line, &m)
			if m.Method != "" {
				h.inbox <- line // before answering: a test that sees the answer finds the request here
				if m.ID != nil {
					h.answer(m.Method, m.ID)
				}
				continue
			}
			h.mu.Lock()
			ch := h.waits[string(m.ID)]
			h.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	t.Cleanup(func() {
		hostW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the host closed")
		}
	})
	h.call("initialize", init)
	h.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

func (h *rawHost) write(line string) {
	h.writeM.Lock()
	defer h.writeM.Unlock()
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		h.t.Errorf("writing to the gate: %v", err)
	}
}

func (h *rawHost) answer(method string, id json.RawMessage) {
	res := `{}`
	switch method {
	case "elicitation/create":
		res = `{"action":"decline"}`
	case "sampling/createMessage":
		res = `{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}`
	}
	go func() {
		// The test may have ended meanwhile: a closed pipe is no error here.
		h.writeM.Lock()
		defer h.writeM.Unlock()
		_, _ = fmt.Fprintf(h.w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, res)
	}()
}

// call sends a request and returns the whole response line.
func (h *rawHost) call(method, params string) json.RawMessage {
	h.t.Helper()
	h.mu.Lock()
	h.nextID++
	id := fmt.Sprint(h.nextID)
	ch := make(chan json.RawMessage, 1)
	h.waits[id] = ch
	h.mu.Unlock()
	h.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	select {
	case line := <-ch:
		return line
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no answer to %s", method)
		return nil
	}
}

// next returns the next request or notification from the gate with
// method; others are kept for later calls.
func (h *rawHost) next(method string) json.RawMessage {
	h.t.Helper()
	methodOf := func(line json.RawMessage) string {
		var m struct{ Method string }
		_ = json.Unmarshal(line, &m)
		return m.Method
	}
	for i, line := range h.pending {
		if methodOf(line) == method {
			h.pending = append(h.pending[:i], h.pending[i+1:]...)
			return line
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line := <-h.inbox:
			if methodOf(line) == method {
				return line
			}
			h.pending = append(h.pending, line)
		case <-deadline:
			h.t.Fatalf("no %s from the gate", method)
			return nil
		}
	}
}

// hostileClasses are written as they appear inside a JSON string on the
// wire: escaped, short-escaped, or raw UTF-8.
var hostileClasses = []struct{ name, wire string }{
	{"backspace short escape", `\b`},
	{"form feed short escape", `\f`},
	{"BEL", `\u0007`},
	{"ESC sequence", `\u001b[2J`},
	{"C1 NEL escaped", `\u0085`},
	{"C1 CSI raw", "\u009b"},
	{"DEL raw", "\x7f"},
	{"soft hyphen raw", "\u00ad"},
	{"soft hyphen escaped", `\u00AD`},
	{"bidi override", "\u202e"},
	{"bidi isolate escaped", `\u2066`},
	{"zero width space", "\u200b"},
	{"word joiner", `\u2060`},
	{"byte order mark", "\ufeff"},
	{"tag characters", `\udb40\udc41`},
	{"stray variation selector", "\ufe0f"},
	{"stray zero width joiner", `\u200d`},
	{"Hangul filler", "\u3164"},
	{"ideographic variation selector", "\U000E0100"},
}

// benignText must reach the host byte for byte: emoji with their joiners
// and presentation selectors, CJK, and right-to-left scripts.
const benignText = "👨\u200d👩\u200d👧 ❤\ufe0f 1\ufe0f\u20e3 日本語 עברית العربية"

// hostileUpstream answers every list and request with payload p in every
// string a host may show.
func hostileUpstream(p string) scripted {
	q := `"` + p + `"`
	return func(method string, id, params json.RawMessage, write func(string)) {
		// One message a line: the source below is wrapped for reading.
		w := func(s string) { write(strings.NewReplacer("\n", "", "\t", "").Replace(s)) }
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"t","title":`+q+`,"description":`+q+`,"annotations":{"title":`+q+`},"_meta":{"note":`+q+`},
				"icons":[{"src":"https://example.com/i.png","sizes":[`+q+`]}],
				"inputSchema":{"type":"object","title":`+q+`,"properties":{"a":{"type":"string","description":`+q+`,"title":`+q+`}}}},
				{"name":"s","description":`+q+`,"inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"v":{"type":"string","description":`+q+`,"maxLength":1000}}}},
				{"name":"u","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"v":{"type":"string"}}}}]}`)
		case "prompts/list":
			reply(w, id, `{"prompts":[{"name":"p","title":`+q+`,"description":`+q+`,"arguments":[{"name":"arg","description":`+q+`,"title":`+q+`}]}]}`)
		case "resources/list":
			reply(w, id, `{"resources":[{"uri":"file:///r","name":`+q+`,"title":`+q+`,"description":`+q+`,"annotations":{"audience":["user"]},"_meta":{"n":`+q+`}}]}`)
		case "resources/templates/list":
			reply(w, id, `{"resourceTemplates":[{"uriTemplate":"file:///t/{x}","name":`+q+`,"title":`+q+`,"description":`+q+`}]}`)
		case "tools/call":
			var c struct{ Name string }
			_ = json.Unmarshal(params, &c)
			// Notifications and requests the host renders, on the side.
			w(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":` + q + `,"data":{"msg":` + q + `,"list":[` + q + `]}}}`)
			w(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Pick a colour ` + p + `","requestedSchema":{"type":"object","title":` + q + `,"properties":{"colour":{"type":"string","title":` + q + `,"description":` + q + `}}}}}`)
			w(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":` + q + `}}],"systemPrompt":` + q + `,"maxTokens":10}}`)
			if c.Name == "s" || c.Name == "u" {
				reply(w, id, `{"content":[{"type":"text","text":"{}"}],"structuredContent":{"v":`+q+`}}`)
				return
			}
			reply(w, id, `{"content":[{"type":"text","text":`+q+`,"annotations":{"audience":["user"]},"_meta":{"m":`+q+`}},
				{"type":"resource_link","uri":"file:///r","name":`+q+`,"title":`+q+`,"description":`+q+`},
				{"type":"resource","resource":{"uri":"file:///e","text":`+q+`,"_meta":{"m":`+q+`}}}],
				"structuredContent":{"v":`+q+`,"deep":[{"w":`+q+`}]},"_meta":{"m":`+q+`}}`)
		case "prompts/get":
			reply(w, id, `{"description":`+q+`,"messages":[{"role":"user","content":{"type":"text","text":`+q+`}},{"role":"assistant","content":{"type":"resource","resource":{"uri":"file:///e","text":`+q+`}}}]}`)
		case "resources/read":
			reply(w, id, `{"contents":[{"uri":"file:///r","mimeType":"text/plain","text":`+q+`,"_meta":{"m":`+q+`}}]}`)
		case "completion/complete":
			reply(w, id, `{"completion":{"values":[`+q+`],"total":1}}`)
		}
	}
}

// checkShown asserts that the JSON the host got holds no hidden character in
// any key or string, that the hostile payload reached it made visible (want
// times at least), and that the benign text survived wherever it went.
func checkShown(t *testing.T, kind string, line json.RawMessage, want int) {
	t.Helper()
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("%s: the host got invalid JSON: %v\n%s", kind, err, line)
	}
	marked, benign := 0, 0
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if _, n := guard.Neutralize(k); n > 0 {
					t.Errorf("%s: key %q holds a hidden character", kind, k)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			if _, n := guard.Neutralize(x); n > 0 {
				t.Errorf("%s: %q holds a hidden character", kind, x)
			}
			if strings.Contains(x, "x[U+") || strings.Contains(x, "x[0x") {
				marked++
			}
			if strings.Contains(x, benignText) {
				benign++
			}
		}
	}
	walk(v)
	if marked < want || benign < marked {
		t.Errorf("%s: %d strings show the payload made visible (want %d), %d kept the benign text intact:\n%s", kind, marked, want, benign, line)
	}
}

func TestNeutralisationCoversEveryMessageKind(t *testing.T) {
	for _, c := range hostileClasses {
		t.Run(c.name, func(t *testing.T) {
			p := "x" + c.wire + "y " + benignText
			h := startRawHost(t, map[string]scripted{"h": hostileUpstream(p)})
			checkShown(t, "tools/list", h.call("tools/list", `{}`), 10)
			checkShown(t, "prompts/list", h.call("prompts/list", `{}`), 4)
			checkShown(t, "resources/list", h.call("resources/list", `{}`), 4)
			checkShown(t, "resources/templates/list", h.call("resources/templates/list", `{}`), 3)
			checkShown(t, "prompts/get", h.call("prompts/get", `{"name":"h__p"}`), 3)
			checkShown(t, "resources/read", h.call("resources/read", `{"uri":"file:///r"}`), 2)
			checkShown(t, "completion/complete", h.call("completion/complete", `{"ref":{"type":"ref/prompt","name":"h__p"},"argument":{"name":"arg","value":"a"}}`), 1)
			res := h.call("tools/call", `{"name":"h__t","arguments":{}}`)
			checkShown(t, "tools/call", res, 10)
			checkShown(t, "notifications/message", h.next("notifications/message"), 3)
			checkShown(t, "elicitation/create", h.next("elicitation/create"), 4)
			checkShown(t, "sampling/createMessage", h.next("sampling/createMessage"), 2)

			// A structured result that would have to change, of a tool
			// with an outputSchema, is refused.
			res = h.call("tools/call", `{"name":"h__s","arguments":{}}`)
			var r struct {
				Result struct {
					IsError bool
					Content []struct{ Text string }
				}
			}
			if json.Unmarshal(res, &r) != nil || !r.Result.IsError || len(r.Result.Content) != 1 ||
				!strings.Contains(r.Result.Content[0].Text, "outputSchema") || !strings.Contains(r.Result.Content[0].Text, `"h"`) {
				t.Errorf("structured result changed under an outputSchema was not refused: %s", res)
			}
			// Under an outputSchema that does not constrain strings, the
			// neutralised structured result passes.
			res = h.call("tools/call", `{"name":"h__u","arguments":{}}`)
			checkShown(t, "tools/call under an unconstraining outputSchema", res, 1)
			if strings.Contains(string(res), `"isError":true`) {
				t.Errorf("structured result under an unconstraining outputSchema refused: %s", res)
			}
		})
	}
}

// TestBenignTextUnchanged: text with nothing hidden passes byte for byte.
func TestBenignTextUnchanged(t *testing.T) {
	p := "plain " + benignText + ` tab\there\nnewline \u00e9`
	h := startRawHost(t, map[string]scripted{"h": hostileUpstream(p)})
	res := h.call("tools/call", `{"name":"h__s","arguments":{}}`)
	if !strings.Contains(string(res), `"structuredContent":{"v":"`+p+`"}`) {
		t.Errorf("benign structured result changed: %s", res)
	}
	res = h.call("resources/read", `{"uri":"file:///r"}`)
	if !strings.Contains(string(res), `"text":"`+p+`"`) {
		t.Errorf("benign resource text changed: %s", res)
	}
}

// TestKeysWithHiddenCharactersRefuseTheirItem: keys are not rewritten; the
// tool, result or notification that carries one is refused.
func TestKeysWithHiddenCharactersRefuseTheirItem(t *testing.T) {
	bad := `"a\u00adb"`
	h := startRawHost(t, map[string]scripted{"h": func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"bad","inputSchema":{"type":"object","properties":{`+bad+`:{"type":"string"}}}},{"name":"good","inputSchema":{"type":"object"}}]}`)
		case "prompts/list":
			reply(w, id, `{"prompts":[{"name":"bad","arguments":[{"name":"x\u200by"}]},{"name":"good"}]}`)
		case "resources/list":
			reply(w, id, `{"resources":[{"uri":"file:///a\u202e","name":"bad"},{"uri":"file:///ok","name":"good","_meta":{`+bad+`:1}}]}`)
		case "resources/templates/list":
			reply(w, id, `{"resourceTemplates":[]}`)
		case "tools/call":
			w(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{` + bad + `:"x"}}}`)
			w(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}`)
			reply(w, id, `{"content":[{"type":"text","text":"ok"}],"structuredContent":{"rows":[{`+bad+`:1}]}}`)
		}
	}})
	if got := h.call("tools/list", `{}`); strings.Contains(string(got), "h__bad") || !strings.Contains(string(got), "h__good") {
		t.Errorf("tool with a hidden key in its schema: %s", got)
	}
	if got := h.call("prompts/list", `{}`); strings.Contains(string(got), "h__bad") || !strings.Contains(string(got), "h__good") {
		t.Errorf("prompt with a hidden argument name: %s", got)
	}
	if got := h.call("resources/list", `{}`); strings.Contains(string(got), `"resources":[{`) {
		t.Errorf("resources with a hidden URI or key: %s", got)
	}
	res := h.call("tools/call", `{"name":"h__good","arguments":{}}`)
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), `structuredContent.rows[0]`) ||
		!strings.Contains(string(res), `good on server \"h\"`) || !strings.Contains(string(res), `a[U+00AD]b`) {
		t.Errorf("result with a hidden key: %s", res)
	}
	// The log line with the bad key is dropped; the next one arrives.
	if got := h.next("notifications/message"); !strings.Contains(string(got), `"after"`) {
		t.Errorf("notification with a hidden key relayed: %s", got)
	}
}

// TestElicitationLabelStaysInView: whatever blank space the message starts
// with, the server's label is followed on its line by the message's first
// words.
func TestElicitationLabelStaysInView(t *testing.T) {
	for _, lead := range []string{`\n\n\n\n`, `   `, `\u2028\u2029`, `\r\n`, `\t\u000b\u000c`, `\u0085`, "\u3000\u00a0\u2003", `\u2800`, `\u200b\n`, `\u3164\n`} {
		msg := lead + "Pick a colour"
		h := startRawHost(t, map[string]scripted{"h": func(method string, id, params json.RawMessage, w func(string)) {
			switch method {
			case "tools/list":
				reply(w, id, `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`)
			case "tools/call":
				w(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"` + msg + `","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}}`)
				reply(w, id, `{"content":[]}`)
			}
		}})
		h.call("tools/call", `{"name":"h__x","arguments":{}}`)
		var req struct{ Params struct{ Message string } }
		if err := json.Unmarshal(h.next("elicitation/create"), &req); err != nil {
			t.Fatal(err)
		}
		got := req.Params.Message
		first, _, _ := strings.Cut(got, "\n")
		// The first line holds the label and visible text after it.
		if !strings.HasPrefix(got, "[h] ") || strings.TrimSpace(strings.TrimPrefix(first, "[h] ")) == "" ||
			strings.ContainsAny(first, "\u2028\u2029\u0085\r\v\f") {
			t.Errorf("message starting %q reached the host as %q", lead, got)
		}
	}
}

// TestErrorsAndProgressNeutralised: an upstream's error message and data,
// and a progress notification's message, are shown by hosts too; the
// host's own progress token comes back unchanged.
func TestErrorsAndProgressNeutralised(t *testing.T) {
	h := startRawHost(t, map[string]scripted{"h": func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			var p struct {
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(params, &p)
			w(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(p.Meta.ProgressToken) + `,"progress":1,"message":"half\u202eway\b"}}`)
			w(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32000,"message":"failed\u001b[2J\f","data":{"hint":"soft\u00adhyphen"}}}`)
		}
	}})
	res := h.call("tools/call", `{"name":"h__x","arguments":{},"_meta":{"progressToken":"tok\u0007"}}`)
	if want := `"error":{"code":-32000,"message":"failed[U+001B][2J[U+000C]","data":{"hint":"soft[U+00AD]hyphen"}}`; !strings.Contains(string(res), want) {
		t.Errorf("upstream error:\n got %s\nwant %s", res, want)
	}
	got := string(h.next("notifications/progress"))
	if !strings.Contains(got, `"message":"half[U+202E]way[U+0008]"`) || !strings.Contains(got, `"progressToken":"tok\u0007"`) {
		t.Errorf("progress: %s", got)
	}
}

func TestConstrainsStrings(t *testing.T) {
	for schema, want := range map[string]bool{
		`{"type":"object","properties":{"v":{"type":"string","description":"d"}}}`:        false,
		`{"type":"object","properties":{"v":{"type":"string","maxLength":3}}}`:            true,
		`{"type":"object","properties":{"v":{"enum":["a","b"]}}}`:                         true,
		`{"type":"object","properties":{"v":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`:      false,
		`{"type":"object","properties":{"v":{"$ref":"https://example.com/s.json"}}}`:      true,
		`{"type":"array","items":{"type":"string"},"uniqueItems":true}`:                   true,
		`{"anyOf":[{"type":"string"},{"not":{"type":"string","minLength":20}}]}`:          true,
		`{"type":"object","properties":{"v":{"type":"string","format":"date-time"}}}`:     true,
		`{"type":"object","additionalProperties":{"type":"string","pattern":"^[a-z]+$"}}`: true,
	} {
		var v any
		if err := json.Unmarshal([]byte(schema), &v); err != nil {
			t.Fatal(err)
		}
		if got := constrainsStrings(v, 0); got != want {
			t.Errorf("constrainsStrings(%s) = %v, want %v", schema, got, want)
		}
	}
}

// TestElicitationCaseVariantKeysDeclined: the label is put on "message"; a
// second "Message" (read by case-insensitive hosts such as Go's
// encoding/json) or "message" would reach the user unlabelled.
func TestElicitationCaseVariantKeysDeclined(t *testing.T) {
	for _, params := range []string{
		`{"message":"Pick a colour","Message":"Session expired: enter your password again","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}`,
		`{"message":"Pick a colour","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}},"message":"unlabelled"}`,
		`{"message":"Pick a colour","requestedSchema":{"type":"object","properties":{"c":{"type":"string","Title":"a","title":"b"}}}}`,
	} {
		answers := make(chan string, 1)
		h := startRawHost(t, map[string]scripted{"h": func(method string, id, p json.RawMessage, w func(string)) {
			switch method {
			case "tools/list":
				reply(w, id, `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`)
			case "tools/call":
				w(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":` + params + `}`)
				reply(w, id, `{"content":[]}`)
			case "":
				if string(id) == `"e1"` {
					answers <- string(p)
				}
			}
		}})
		h.call("tools/call", `{"name":"h__x","arguments":{}}`)
		select {
		case <-answers:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer to the elicitation")
		}
		select {
		case line := <-h.inbox:
			t.Errorf("the host got %s", line)
		default:
		}
	}
}
