package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// paramsHost speaks to a Gate line by line, so that a test can send JSON no
// SDK would write (the same key twice).
type paramsHost struct {
	t    *testing.T
	g    *Gate
	w    io.Writer
	sc   *bufio.Scanner
	next int
}

func startParamsHost(t *testing.T, o Options) *paramsHost {
	t.Helper()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hostR, gateW := io.Pipe()
	gateR, hostW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), gateR, gateW) }()
	t.Cleanup(func() {
		hostW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the host closed")
		}
	})
	sc := bufio.NewScanner(hostR)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &paramsHost{t: t, g: g, w: hostW, sc: sc}
}

// scriptedHost is the host of a gate whose one server, s, is up, under
// policy, once initialize is answered.
func scriptedHost(t *testing.T, up scripted, policy string) *paramsHost {
	t.Helper()
	h := startParamsHost(t, Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     &scriptLauncher{servers: map[string]scripted{"s": up}},
		StartTimeout: 10 * time.Second,
		Policy:       static(t, policy),
		Logger:       slog.New(slog.DiscardHandler),
	})
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	return h
}

type rawResponse struct {
	Result json.RawMessage
	Error  *struct {
		Code    int64
		Message string
	}
}

// call sends one request with params written as given and returns its
// response, skipping notifications and answering nothing else.
func (h *paramsHost) call(method, params string) rawResponse {
	h.t.Helper()
	h.next++
	id := h.next
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
	if params != "" {
		line += `,"params":` + params
	}
	if _, err := io.WriteString(h.w, line+"}\n"); err != nil {
		h.t.Fatal(err)
	}
	for h.sc.Scan() {
		var m struct {
			ID json.RawMessage
			rawResponse
		}
		if err := json.Unmarshal(h.sc.Bytes(), &m); err != nil {
			h.t.Fatalf("bad line from the gate: %v", err)
		}
		if string(m.ID) == fmt.Sprint(id) {
			return m.rawResponse
		}
	}
	h.t.Fatalf("the gate closed before answering %s: %v", method, h.sc.Err())
	return rawResponse{}
}

// methodLog is a scripted upstream that records every request it gets and
// offers one tool, one prompt, one resource and one template.
type methodLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *methodLog) methods() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func (l *methodLog) serve(method string, id, params json.RawMessage, w func(string)) {
	if id == nil {
		return
	}
	switch method {
	case "tools/list":
		reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	case "prompts/list":
		reply(w, id, `{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`)
	case "resources/list":
		reply(w, id, `{"resources":[{"uri":"mem://a","name":"a"}]}`)
	case "resources/templates/list":
		reply(w, id, `{"resourceTemplates":[{"uriTemplate":"mem://t/{x}","name":"t"}]}`)
	default:
		l.mu.Lock()
		l.seen = append(l.seen, method+" "+string(params))
		l.mu.Unlock()
		switch method {
		case "tools/call":
			reply(w, id, `{"content":[{"type":"text","text":"ran"}]}`)
		case "prompts/get":
			reply(w, id, `{"messages":[]}`)
		case "resources/read":
			reply(w, id, `{"contents":[{"uri":"mem://a","text":"a"}]}`)
		case "completion/complete":
			reply(w, id, `{"completion":{"values":[]}}`)
		default:
			reply(w, id, `{}`)
		}
	}
}

// Every request the host sends is refused when any object in its params has
// the same key twice or two keys equal under case folding, whatever the
// method, and the upstream sees none of them. One row per method the
// dispatcher knows.
func TestHostParamsWithDuplicateKeysRefused(t *testing.T) {
	up := &methodLog{}
	l := &scriptLauncher{servers: map[string]scripted{"s": up.serve}, inner: nil}
	h := startParamsHost(t, Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     l,
		StartTimeout: 10 * time.Second,
		Policy:       static(t, allowAll),
		Logger:       slog.New(slog.DiscardHandler),
	})
	const init = `{"protocolVersion":"2025-11-25","capabilities":{%s},"clientInfo":{"name":"raw","version":"1"}}`
	for _, caps := range []string{`"roots":{},"roots":{}`, `"roots":{},"Roots":{}`} {
		if r := h.call("initialize", fmt.Sprintf(init, caps)); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("initialize with %s: %+v", caps, r.Error)
		}
	}
	if r := h.call("initialize", fmt.Sprintf(init, `"roots":{}`)); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	// Warm the catalogs, so that a refusal cannot come from an unknown name.
	for _, m := range []string{"tools/list", "prompts/list", "resources/list"} {
		if r := h.call(m, `{}`); r.Error != nil {
			t.Fatalf("%s: %+v", m, r.Error)
		}
	}
	rows := []struct {
		method      string
		dup, folded string // params with the same key twice, and with a case variant
		key, at     string // what the error must name
	}{
		{"ping", `{"_meta":{"a":1,"a":2}}`, `{"_meta":{"a":1,"A":2}}`, "a", "/_meta"},
		{"tools/list", `{"cursor":"x","cursor":"y"}`, `{"cursor":"x","Cursor":"y"}`, "cursor", "top level"},
		{"tools/call", `{"name":"s__t","arguments":{"path":"/w/x","path":"/etc/passwd"}}`, `{"name":"s__t","arguments":{"path":"/w/x","PATH":"/etc/passwd"}}`, "path", "/arguments"},
		{"tools/call", `{"name":"s__t","name":"s__t","arguments":{}}`, `{"name":"s__t","arguments":{"o":[{"k":1,"K":2}]}}`, "", "/"},
		{"prompts/list", `{"_meta":{"k":1,"k":2}}`, `{"_meta":{"k":1,"K":2}}`, "k", "/_meta"},
		{"prompts/get", `{"name":"s__p","arguments":{"a":"1","a":"2"}}`, `{"name":"s__p","arguments":{"a":"1","A":"2"}}`, "a", "/arguments"},
		{"prompts/get", `{"name":"s__p","name":"s__q","arguments":{}}`, `{"name":"s__p","Name":"s__q","arguments":{}}`, "name", "top level"},
		{"resources/list", `{"cursor":"x","cursor":"y"}`, `{"cursor":"x","CURSOR":"y"}`, "cursor", "top level"},
		{"resources/templates/list", `{"cursor":"x","cursor":"y"}`, `{"cursor":"x","cUrsor":"y"}`, "cursor", "top level"},
		{"resources/read", `{"uri":"mem://a","uri":"mem://t/secret"}`, `{"uri":"mem://a","URI":"mem://t/secret"}`, "uri", "top level"},
		{"resources/subscribe", `{"uri":"mem://a","uri":"mem://t/b"}`, `{"uri":"mem://a","Uri":"mem://t/b"}`, "uri", "top level"},
		{"resources/unsubscribe", `{"uri":"mem://a","uri":"mem://t/b"}`, `{"uri":"mem://a","uRI":"mem://t/b"}`, "uri", "top level"},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"mem://a","uri":"mem://t/x"},"argument":{"name":"x","value":""}}`,
			`{"ref":{"type":"ref/resource","uri":"mem://a","URI":"mem://t/x"},"argument":{"name":"x","value":""}}`, "uri", "/ref"},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"s__p"},"argument":{"name":"a","value":"1","value":"2"}}`,
			`{"ref":{"type":"ref/prompt","name":"s__p"},"argument":{"name":"a","value":"1","VALUE":"2"}}`, "value", "/argument"},
		{"logging/setLevel", `{"level":"info","level":"debug"}`, `{"level":"info","Level":"debug"}`, "level", "top level"},
		{"no/such/method", `{"a":1,"a":2}`, `{"a":1,"A":2}`, "a", "top level"},
	}
	for _, row := range rows {
		for _, params := range []string{row.dup, row.folded} {
			r := h.call(row.method, params)
			if r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("%s %s: got %s %+v; want a -32602 error", row.method, params, r.Result, r.Error)
				continue
			}
			msg := r.Error.Message
			if !strings.Contains(msg, row.method) || !strings.Contains(strings.ToLower(msg), `"`+row.key) || !strings.Contains(msg, row.at) ||
				!(strings.Contains(msg, "duplicate key") || strings.Contains(msg, "differ only in case")) {
				t.Errorf("%s %s: the error does not name the key and its position: %s", row.method, params, msg)
			}
			for _, value := range []string{"/etc/passwd", "secret", "debug"} {
				if strings.Contains(msg, value) {
					t.Errorf("%s: the error shows a value (%s): %s", row.method, value, msg)
				}
			}
		}
	}
	if seen := up.methods(); len(seen) != 0 {
		t.Fatalf("the upstream received refused requests: %v", seen)
	}
	// The same requests without the second key do reach the upstream: the
	// refusals above came from the keys alone.
	if r := h.call("resources/read", `{"uri":"mem://t/secret"}`); r.Error != nil {
		t.Fatalf("resources/read: %+v", r.Error)
	}
	if r := h.call("tools/call", `{"name":"s__t","arguments":{"path":"/w/x"}}`); r.Error != nil {
		t.Fatalf("tools/call: %+v", r.Error)
	}
	if seen := up.methods(); len(seen) != 2 {
		t.Fatalf("the upstream saw %v; want the read and the call", seen)
	}
}

// What an upstream asks the gate to decide on is held to the same rule:
// a sampling request with the same key twice is denied before the policy
// reads it, and never reaches the host's model.
func TestSamplingWithDuplicateKeysDenied(t *testing.T) {
	answered := make(chan struct{})
	var once sync.Once
	var sampled atomic.Int32
	up := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			w(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10,"maxTokens":100000}}`)
			<-answered
			reply(w, id, `{"content":[{"type":"text","text":"done"}]}`)
		case "":
			if string(id) == `"s1"` {
				once.Do(func() { close(answered) })
			}
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "ok"}, Model: "m"}, nil
		},
	})
	var auditLog lockedBuffer
	f := startScripted(t, map[string]scripted{"s": up}, nil, static(t, allowAll), client, withAudit(&auditLog))
	if _, err := callText(t, f.sess, "s__t", "x"); err != nil {
		t.Fatal(err)
	}
	if sampled.Load() != 0 {
		t.Fatal("the host's model was asked")
	}
	// The guard refuses it before the policy is asked; the audit names the
	// position, never the key.
	if log := auditLog.String(); !strings.Contains(log, `"kind":"duplicate_keys"`) || !strings.Contains(log, "at byte") || strings.Contains(log, "maxTokens") {
		t.Fatalf("audit: %s", log)
	}
}
