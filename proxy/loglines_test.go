package proxy

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// What an upstream lists and what a host sends reach no log or audit line
// as bytes, in the warnings about odd lists too: a duplicate tool name, a
// name with a hidden character, a template that is no pattern, a URI two
// servers claim, and a host notification with ambiguous params.
func TestListWarningsCarryNoBytes(t *testing.T) {
	const canary = "CANARY-7d3e"
	lists := func(method string, id, _ json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"`+canary+`","inputSchema":{"type":"object"}},{"name":"`+canary+`","inputSchema":{"type":"object"}},{"name":"`+canary+`\u200b","inputSchema":{"type":"object"}}]}`)
		case "prompts/list":
			reply(w, id, `{"prompts":[]}`)
		case "resources/list":
			reply(w, id, `{"resources":[{"uri":"mem://`+canary+`","name":"a"}]}`)
		case "resources/templates/list":
			reply(w, id, `{"resourceTemplates":[{"uriTemplate":"mem://`+canary+`/{x","name":"t"}]}`)
		}
	}
	var logs, auditLog lockedBuffer
	up := map[string]scripted{"a": lists, "b": lists}
	h := startParamsHost(t, Options{
		Servers: []upstream.Config{
			{Name: "a", Type: upstream.TypeStdio, Command: "scripted"},
			{Name: "b", Type: upstream.TypeStdio, Command: "scripted"},
		},
		Launcher:     &scriptLauncher{servers: up},
		StartTimeout: 10 * time.Second,
		Policy:       static(t, allowAll),
		Logger:       slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Audit:        audit.New(&auditLog),
	})
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, m := range []string{"tools/list", "resources/list", "resources/templates/list"} {
		if r := h.call(m, `{}`); r.Error != nil {
			t.Fatalf("%s: %+v", m, r.Error)
		}
	}
	if _, err := h.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/` + canary + `","params":{"a":1,"a":2}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	h.call("ping", `{}`) // the notification has been read
	for _, want := range []string{"listed a name twice", "control or invisible characters", "bad URI template", "more than one server", "ambiguous params dropped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q line in the log:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), canary) {
		t.Errorf("the log carries upstream or host bytes:\n%s", logs.String())
	}
	if strings.Contains(auditLog.String(), canary) {
		t.Errorf("the audit log carries upstream bytes:\n%s", auditLog.String())
	}
}

// The warning about a result refused for a key with a hidden character
// names the key's place, whose path quotes the upstream's other keys: the
// log line describes them by size and digest, as the audit line does.
func TestKeyErrorLogCarriesNoKeys(t *testing.T) {
	const canary = "CANARY 5b1f"
	up := func(method string, id, _ json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			reply(w, id, `{"content":[],"structuredContent":{"`+canary+`":{"k\u200b":1}}}`)
		}
	}
	var logs, auditLog lockedBuffer
	h := startRawHost(t, map[string]scripted{"s": up}, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Audit = audit.New(&auditLog)
	})
	if resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`)); !strings.Contains(resp, `"isError":true`) {
		t.Fatalf("not refused: %s", resp)
	}
	if !strings.Contains(logs.String(), "upstream data refused") {
		t.Fatalf("no warning in the log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), canary) {
		t.Errorf("the log carries the upstream's key:\n%s", logs.String())
	}
	if strings.Contains(auditLog.String(), canary) {
		t.Errorf("the audit log carries the upstream's key:\n%s", auditLog.String())
	}
}
