package proxy

// In-memory tests of upstream errors relayed to the host (gate.go,
// relayerrors.go): hosts show error messages, so nothing hidden reaches
// them, and what cannot be made visible is left out rather than sent.

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUpstreamErrorsNeutralisedOrLeftOut(t *testing.T) {
	errorsBy := map[string]string{
		// A key with a hidden character: the data cannot pass whole.
		"key": `{"code":-32000,"message":"boom\u200b","data":{"k\u200b":"v"}}`,
		// A member JSON-RPC does not name, kept as written but visible.
		"extra": `{"code":-32001,"message":"plain","extra":"x\u202e"}`,
	}
	h := startRawHost(t, map[string]scripted{"s": func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			reply(w, id, `{"tools":[{"name":"key","inputSchema":{"type":"object"}},{"name":"extra","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			name, _ := jsonPath(params, "name")
			w(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":` + errorsBy[name] + `}`)
		}
	}})
	resp := string(h.call("tools/call", `{"name":"s__key","arguments":{}}`))
	if !strings.Contains(resp, `"error":{"code":-32000,"message":"boom[U+200B]"}`) {
		t.Fatalf("an error whose data has a hidden key: %s", resp)
	}
	resp2 := string(h.call("tools/call", `{"name":"s__extra","arguments":{}}`))
	if !strings.Contains(resp2, `"extra":"x[U+202E]"`) || !strings.Contains(resp2, `"code":-32001`) {
		t.Fatalf("an error with an unknown member: %s", resp2)
	}
	for _, r := range []string{resp, resp2} {
		for _, hidden := range []string{`\u200b`, `\u202e`, "\u200b", "\u202e"} {
			if strings.Contains(r, hidden) {
				t.Fatalf("a hidden character reached the host: %s", r)
			}
		}
	}
}
