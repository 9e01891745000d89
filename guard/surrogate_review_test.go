package guard

import "testing"

// A lone surrogate escape is made visible, in values, and refuses its item
// in keys: two strings that a host joins (text blocks) would otherwise
// pair a high half ending one with a low half starting the next into a
// character neither showed, such as the invisible tag U+E0041.
func TestLoneSurrogateEscapesVisible(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[{"text":"hello \udb40"},{"text":"\udc41 world"}]}`: `{"content":[{"text":"hello [U+DB40]"},{"text":"[U+DC41] world"}]}`,
		`{"a":"x\udc00y"}`:           `{"a":"x[U+DC00]y"}`,
		`{"a":"x\ud83dy"}`:           `{"a":"x[U+D83D]y"}`,
		`{"a":"\ud83d\ude00"}`:       `{"a":"\ud83d\ude00"}`, // a pair, an emoji: kept
		`{"a":"\uDB40\uDC41"}`:       `{"a":"[U+E0041]"}`,
		`{"a":"\ud83d\ud83d\ude00"}`: `{"a":"[U+D83D]\ud83d\ude00"}`,
	} {
		out, _, err := NeutralizeJSON([]byte(in))
		if err != nil || string(out) != want {
			t.Errorf("NeutralizeJSON(%s) = %s, %v; want %s", in, out, err, want)
		}
	}
	if _, _, err := NeutralizeJSON([]byte(`{"k\udc00":1}`)); err == nil {
		t.Error("a key with a lone surrogate escape was passed")
	}
}
