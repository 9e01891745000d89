package proxy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

const testEnvelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"t"}}`

func TestReadEnvelope(t *testing.T) {
	m, out, err := readEnvelope("tools/call", json.RawMessage(`{"name":"a__b","arguments":{"x":1},`+testEnvelope+`,"inputResponses":{"k":{}},"requestState":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"name":"a__b","arguments":{"x":1}}` {
		t.Fatalf("params for the older-era path: %s", out)
	}
	if !m.caps.elicitForm || m.caps.elicitURL || !m.hasState || m.requestState != "s" || string(m.inputResponses) != `{"k":{}}` {
		t.Fatalf("declared: %+v", m)
	}
	for caps, form := range map[string]bool{`{"elicitation":{"url":{}}}`: false, `{"elicitation":{"form":{},"url":{}}}`: true, `{}`: false, `{"sampling":{}}`: false} {
		m, _, err := readEnvelope("tools/call", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps+`}}`))
		if err != nil || m.caps.elicitForm != form {
			t.Errorf("%s: form elicitation %v, want %v (%v)", caps, m != nil && m.caps.elicitForm, form, err)
		}
	}
	// Other _meta members stay.
	_, out, err = readEnvelope("tools/call", json.RawMessage(`{"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`))
	if err != nil || string(out) != `{"_meta":{"progressToken":7}}` {
		t.Fatalf("progress token: %s %v", out, err)
	}
	for params, want := range map[string]int{
		``:   rpc.CodeInvalidParams,
		`{}`: rpc.CodeInvalidParams,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`:                                                        rpc.CodeInvalidParams,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`:                                                 rpc.CodeInvalidParams,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}`:            rpc.CodeInvalidParams,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`: rpc.CodeInvalidParams,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`: CodeUnsupportedVersion,
		`{` + testEnvelope + `,"requestState":5}`:                                                                            rpc.CodeInvalidParams,
		`{` + testEnvelope + `,"inputResponses":[]}`:                                                                         rpc.CodeInvalidParams,
	} {
		_, _, err := readEnvelope("tools/list", json.RawMessage(params))
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != int64(want) {
			t.Errorf("%s: %v, want code %d", params, err, want)
		}
	}
}

// The stamp adds members and changes nothing else of the result.
func TestStampComplete(t *testing.T) {
	in := `{"tools":[{"name":"x","n":1.50}] , "nextCursor":"c"}`
	out, err := stampComplete("tools/list", json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), `{"tools":[{"name":"x","n":1.50}] , "nextCursor":"c"`) ||
		!strings.Contains(string(out), `"resultType":"complete"`) || !strings.Contains(string(out), `"ttlMs":0`) || !strings.Contains(string(out), `"cacheScope":"private"`) {
		t.Fatalf("stamped: %s", out)
	}
	if out, _ := stampComplete("tools/call", json.RawMessage(`{"content":[]}`)); strings.Contains(string(out), "ttlMs") {
		t.Fatalf("a tool result is not cacheable: %s", out)
	}
	// The upstream's cache hints are replaced: the result was decided for
	// this principal and this policy revision, not for a shared cache or
	// for reuse after a reload.
	if out, _ := stampComplete("resources/read", json.RawMessage(`{"contents":[],"ttlMs":5000,"cacheScope":"public"}`)); strings.Count(string(out), "ttlMs") != 1 || strings.Count(string(out), "cacheScope") != 1 ||
		!strings.Contains(string(out), `"ttlMs":0`) || !strings.Contains(string(out), `"cacheScope":"private"`) || strings.Contains(string(out), "public") {
		t.Fatalf("the upstream's cache hints: %s", out)
	}
	for _, bad := range []string{`{"resultType":"input_required","requestState":"x"}`, `[]`, ``} {
		if _, err := stampComplete("tools/call", json.RawMessage(bad)); err == nil {
			t.Errorf("%s stamped", bad)
		}
	}
}

// FuzzReadEnvelope: whatever a host sends, readEnvelope never panics, and
// what it passes on carries neither the envelope nor the retry members.
func FuzzReadEnvelope(f *testing.F) {
	f.Add(`{"name":"a",` + testEnvelope + `,"requestState":"s","inputResponses":{}}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":1}}`)
	f.Add(`{"_meta":[]}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"_meta":{}}`)
	f.Fuzz(func(t *testing.T, params string) {
		if rawjson.UniqueKeys([]byte(params)) != nil {
			return // refused before this (checkHostParams)
		}
		m, out, err := readEnvelope("tools/call", json.RawMessage(params))
		if err != nil {
			return
		}
		if m == nil || !json.Valid(out) {
			t.Fatalf("%s: passed on %q", params, out)
		}
		for _, k := range []string{"requestState", "inputResponses"} {
			if _, ok := rawjson.Get(out, k); ok {
				t.Fatalf("%s: %s passed on in %s", params, k, out)
			}
		}
		if meta, ok := rawjson.Get(out, "_meta"); ok {
			for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel} {
				if _, ok := rawjson.Get(meta, k); ok {
					t.Fatalf("%s: %s passed on in %s", params, k, out)
				}
			}
		}
	})
}
