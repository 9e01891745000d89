package guard

import "testing"

// TestElicitationWordsSplitByHiddenCharacters: a soft hyphen, a zero-width
// space or a word joiner inside a word does not hide it from the message
// and description rules (issue #8).
func TestElicitationWordsSplitByHiddenCharacters(t *testing.T) {
	for _, params := range []string{
		`{"message":"Please appr\u00adove this tool call","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}`,
		`{"message":"We need your per\u200bmission to continue","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}`,
		`{"message":"mcp\u2060-gate asks","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}`,
		`{"message":"Pick one","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","description":"Do you appr\u00adove?"}}}}`,
	} {
		if len(InspectElicitation([]byte(params))) == 0 {
			t.Errorf("not refused: %s", params)
		}
	}
	if f := InspectElicitation([]byte(`{"message":"Which city?\u00ad","requestedSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`)); len(f) != 0 {
		t.Errorf("honest question refused: %+v", f)
	}
}
