package upstream

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestServersProtocolKey(t *testing.T) {
	parse := func(v string) ([]Config, error) {
		return ParseServers("servers.json", []byte(`{"mcpServers":{"a":{"command":"x","protocol":`+v+`}}}`), func(string) (string, bool) { return "", false })
	}
	for v, want := range map[string]string{`"2026-07-28"`: ModernVersion, `"2025-11-25"`: "2025-11-25", `"2024-11-05"`: "2024-11-05", `"auto"`: ProtocolAuto} {
		cfgs, err := parse(v)
		if err != nil || cfgs[0].Protocol != want {
			t.Errorf("protocol %s: %+v %v, want %q", v, cfgs, err, want)
		}
	}
	for _, v := range []string{`"2026-07-29"`, `"latest"`, `5`, `null`, `["2026-07-28"]`} {
		if _, err := parse(v); err == nil || !strings.Contains(err.Error(), `"protocol"`) || !strings.Contains(err.Error(), "2026-07-28") {
			t.Errorf("protocol %s: %v, want an error naming the key and the choices", v, err)
		}
	}
}

func TestModernParams(t *testing.T) {
	s := &Session{Name: "m", envelope: json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)}
	for in, want := range map[string]string{
		``: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"name":"t","_meta":{"progressToken":1}}`: `{"name":"t","_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
	} {
		got, err := s.modernParams("tools/call", json.RawMessage(in), nil)
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	if got, err := s.modernResult("tools/call", json.RawMessage(`{"content":[],"resultType":"complete"}`)); err != nil || string(got) != `{"content":[]}` {
		t.Errorf("complete: %s %v", got, err)
	}
	var ir *InputRequiredError
	if _, err := s.modernResult("tools/call", json.RawMessage(`{"resultType":"input_required","requestState":"x"}`)); !errors.As(err, &ir) {
		t.Errorf("an upstream's input-required result: %v", err)
	}
	if _, err := s.modernResult("tools/list", json.RawMessage(`{"resultType":"input_required"}`)); err == nil || errors.As(err, &ir) {
		t.Errorf("input_required on a list: %v", err)
	}
}
