package proxy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// envelopeStrippedBefore is how readEnvelope took the envelope and the
// retry members out before it did so in one pass: a Delete per key. The
// params it passes on must stay these bytes.
func envelopeStrippedBefore(params json.RawMessage) json.RawMessage {
	meta, _ := rawjson.Get(params, "_meta")
	for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel} {
		meta, _ = rawjson.Delete(meta, k)
	}
	out := params
	if bytes.Equal(bytes.TrimSpace(meta), []byte("{}")) {
		out, _ = rawjson.Delete(out, "_meta")
	} else {
		out, _ = rawjson.Set(out, "_meta", meta)
	}
	out, _ = rawjson.Delete(out, "requestState")
	out, _ = rawjson.Delete(out, "inputResponses")
	return out
}

// The params readEnvelope passes on are byte for byte those of deleting
// each envelope key and retry member in turn, wherever they stand and
// however the host spaced them.
func TestReadEnvelopeBytes(t *testing.T) {
	const v, c, i, l = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`,
		`"io.modelcontextprotocol/clientInfo":{"name":"t"}`, `"io.modelcontextprotocol/logLevel":"debug"`
	for _, p := range []string{
		`{"name":"a__b","arguments":{"x":1},"_meta":{` + v + `,` + c + `,` + i + `}}`,
		`{"_meta":{` + v + `,` + c + `},"name":"a__b"}`,
		`{ "_meta" : { ` + v + ` , ` + c + ` } , "name":"a__b" }`,
		`{"name":"a__b","_meta":{"progressToken":7,` + v + `,` + c + `,` + l + `}}`,
		`{"name":"a__b","_meta":{` + v + `,"progressToken":7,` + c + `,"x":{"y":[1]}}}`,
		`{"_meta":{ ` + v + ` ,` + c + `, "progressToken" : 7 },"name":"a__b"}`,
		`{"requestState":"s","name":"a__b",` + `"_meta":{` + i + `,` + v + `,` + c + `},"inputResponses":{"k":{}}}`,
		`{"inputResponses":{"k":{}},"_meta":{"p":1,` + v + `,` + c + `},"requestState":"s","arguments":{}}`,
		"{\n \"_meta\": {\n  " + v + ",\n  " + c + "\n },\n \"name\": \"a__b\"\n}",
		`{"_meta":{` + v + `,` + c + `}}`,
	} {
		_, out, err := readEnvelope("tools/call", json.RawMessage(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if want := envelopeStrippedBefore(json.RawMessage(p)); !bytes.Equal(out, want) {
			t.Errorf("%s\npassed on %s\nwant      %s", p, out, want)
		}
	}
}

// A request whose _meta is the envelope alone costs readEnvelope its
// modernReq and one copy of the params, not a copy per key taken out.
func TestReadEnvelopeAllocations(t *testing.T) {
	params := json.RawMessage(`{` + modernEnvelope + `,"name":"up__get","arguments":{"text":"hello"}}`)
	if n := testing.AllocsPerRun(200, func() { _, _, _ = readEnvelope("tools/call", params) }); n > 2 {
		t.Errorf("readEnvelope: %v allocations, want at most 2", n)
	}
}

// FuzzReadEnvelopeBytes: whatever a host sends that readEnvelope takes,
// it passes on the bytes of deleting each key in turn.
func FuzzReadEnvelopeBytes(f *testing.F) {
	f.Add(`{"name":"a",` + testEnvelope + `,"requestState":"s","inputResponses":{}}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":1}}`)
	f.Add(`{ "_meta" : {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{} } }`)
	f.Fuzz(func(t *testing.T, params string) {
		if rawjson.UniqueKeys([]byte(params)) != nil || !json.Valid([]byte(params)) {
			return // refused before this (checkHostParams)
		}
		_, out, err := readEnvelope("tools/call", json.RawMessage(params))
		if err != nil {
			return
		}
		if want := envelopeStrippedBefore(json.RawMessage(params)); !bytes.Equal(out, want) {
			t.Fatalf("%s: passed on %s, want %s", params, out, want)
		}
	})
}

// mirroredCaps answers from its table what it wrote per request before,
// for every declaration (URL elicitation never mirrored), without
// allocating.
func TestMirroredCapsTable(t *testing.T) {
	for i := range 16 {
		h := hostInfo{elicitForm: i&1 != 0, sampling: i&2 != 0, roots: i&4 != 0, elicitURL: i&8 != 0}
		want := "{"
		for _, m := range []struct {
			on     bool
			member string
		}{{h.elicitForm, `"elicitation":{"form":{}}`}, {h.sampling, `"sampling":{}`}, {h.roots, `"roots":{}`}} {
			if m.on {
				if len(want) > 1 {
					want += ","
				}
				want += m.member
			}
		}
		want += "}"
		if got := mirroredCaps(h); string(got) != want || !json.Valid(got) {
			t.Errorf("%+v: %s, want %s", h, got, want)
		}
		if n := testing.AllocsPerRun(10, func() { _ = mirroredCaps(h) }); n != 0 {
			t.Errorf("%+v: %v allocations", h, n)
		}
	}
}
