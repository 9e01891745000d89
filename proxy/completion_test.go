package proxy

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A completion is decided on the values it carries: completing a file
// template's path under a denied directory never reaches the server.
func TestCompletionDecidedOnItsValues(t *testing.T) {
	var mu sync.Mutex
	var completions []string
	up := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "prompts/list":
			reply(w, id, `{"prompts":[{"name":"p","arguments":[{"name":"topic"}]}]}`)
		case "resources/list":
			reply(w, id, `{"resources":[]}`)
		case "resources/templates/list":
			reply(w, id, `{"resourceTemplates":[{"uriTemplate":"file:///{+path}","name":"file"}]}`)
		case "completion/complete":
			mu.Lock()
			completions = append(completions, string(params))
			mu.Unlock()
			reply(w, id, `{"completion":{"values":["passwd","shadow"]}}`)
		}
	}
	h := startParamsHost(t, Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     &scriptLauncher{servers: map[string]scripted{"s": up}},
		StartTimeout: 10 * time.Second,
		Policy: static(t, `version: 1
fallback: deny
deny: ["resource:s:file:///etc/**"]
`),
		Logger: slog.New(slog.DiscardHandler),
	})
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, m := range []string{"prompts/list", "resources/templates/list"} {
		if r := h.call(m, `{}`); r.Error != nil {
			t.Fatalf("%s: %+v", m, r.Error)
		}
	}
	for _, params := range []string{
		`{"ref":{"type":"ref/resource","uri":"file:///{+path}"},"argument":{"name":"path","value":"etc/pa"}}`,
		`{"ref":{"type":"ref/resource","uri":"file:///{+path}"},"argument":{"name":"path","value":"tmp/../etc/"}}`,
	} {
		if r := h.call("completion/complete", params); r.Error == nil || r.Error.Code != CodeDenied {
			t.Errorf("%s: got %s %+v; want a refusal", params, r.Result, r.Error)
		}
	}
	mu.Lock()
	if len(completions) != 0 {
		t.Fatalf("the server completed %v", completions)
	}
	mu.Unlock()
	// Values outside what is denied are completed.
	for _, params := range []string{
		`{"ref":{"type":"ref/resource","uri":"file:///{+path}"},"argument":{"name":"path","value":"home/me/no"}}`,
		`{"ref":{"type":"ref/prompt","name":"s__p"},"argument":{"name":"topic","value":"gardening"}}`,
	} {
		if r := h.call("completion/complete", params); r.Error != nil {
			t.Errorf("%s: %+v", params, r.Error)
		}
	}
}
