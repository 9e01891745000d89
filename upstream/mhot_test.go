package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// modernParamsBefore is how modernParams wrote the envelope before it
// wrote it in one buffer: a Set per member, on the caller's _meta or {}.
// What reaches the upstream must stay these bytes.
func modernParamsBefore(env, params, caps json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		params = json.RawMessage("{}")
	}
	meta, ok := rawjson.Get(params, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage("{}")
	}
	_ = rawjson.Members(env, func(m rawjson.Member) bool {
		v := m.Value
		if caps != nil && m.Key == "io.modelcontextprotocol/clientCapabilities" {
			v = caps
		}
		meta, _ = rawjson.Set(meta, m.Key, v)
		return true
	})
	out, _ := rawjson.Set(params, "_meta", meta)
	return out
}

func TestModernParamsBytes(t *testing.T) {
	// As discover writes it.
	env := []byte(`{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `"}`)
	env, _ = rawjson.Set(env, "io.modelcontextprotocol/clientCapabilities", []byte(`{"elicitation":{"form":{}}}`))
	env, _ = rawjson.Set(env, "io.modelcontextprotocol/clientInfo", []byte(`{"name":"mcp-gate","version":"dev"}`))
	s := &Session{Name: "m", envelope: env}
	for _, p := range []string{``, `null`, `{}`, `{ }`, `{"name":"t","arguments":{"a":1}}`, `{ "name" : "t" }`,
		`{"name":"t","_meta":null}`, `{"_meta":[],"name":"t"}`, `{"name":"t","_meta":{}}`, `{"name":"t","_meta":{"progressToken":1}}`,
		`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"h"}},"name":"t"}`} {
		for _, caps := range []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"sampling":{},"roots":{}}`)} {
			got, err := s.modernParams("tools/call", json.RawMessage(p), caps)
			if want := modernParamsBefore(env, json.RawMessage(p), caps); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s caps %s:\n got %s %v\nwant %s", p, caps, got, err, want)
			}
		}
	}
}

// A request without a _meta of its own costs two copies: the envelope and
// the params with it, not a copy per envelope member.
func TestModernParamsAllocations(t *testing.T) {
	env := json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"g"}}`)
	s := &Session{Name: "m", envelope: env}
	params := json.RawMessage(`{"name":"get","arguments":{"text":"hello"}}`)
	caps := json.RawMessage(`{"elicitation":{"form":{}}}`)
	if n := testing.AllocsPerRun(200, func() { _, _ = s.modernParams("tools/call", params, caps) }); n > 2 {
		t.Errorf("modernParams: %v allocations, want at most 2", n)
	}
}
