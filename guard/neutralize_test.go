package guard

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hiddenRanges is the documented set, written out independently of IsHidden.
var hiddenRanges = [][2]rune{
	{0x00, 0x08}, {0x0B, 0x0C}, {0x0E, 0x1F}, {0x7F, 0x9F},
	{0x061C, 0x061C}, {0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E},
	{0x2060, 0x2064}, {0x2066, 0x206F}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
	{0xE0000, 0xE007F}, {0xE0100, 0xE01EF},
}

func inHiddenRanges(r rune) bool {
	for _, rg := range hiddenRanges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

func TestIsHiddenMatchesDocumentedSet(t *testing.T) {
	for r := rune(0); r <= 0xE01FF; r++ {
		if IsHidden(r) != inHiddenRanges(r) {
			t.Fatalf("IsHidden(%U) = %v, documented %v", r, IsHidden(r), inHiddenRanges(r))
		}
	}
}

func TestNeutralize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"\x1b[31mred\x1b[0m", "[U+001B][31mred[U+001B][0m"},
		{"\x1b]8;;http://x\x07link\x1b]8;;\x07", "[U+001B]]8;;http://x[U+0007]link[U+001B]]8;;[U+0007]"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"a\u202eb\u2066c", "a[U+202E]b[U+2066]c"},
		{"zw\u200bj\u200dbom\ufeff", "zw[U+200B]j[U+200D]bom[U+FEFF]"},
		{"tag\U000E0041\U000E007F", "tag[U+E0041][U+E007F]"},
		{"c1\u0085\u009b", "c1[U+0085][U+009B]"},
		{"del\x7f", "del[U+007F]"},
		{"bad\xff\xc3", "bad[0xFF][0xC3]"},
		{"emoji ❤️ café — “ok”", "emoji ❤️ café — “ok”"},
	}
	for _, c := range cases {
		got, n := Neutralize(c.in)
		if got != c.want {
			t.Errorf("Neutralize(%q) = %q, want %q", c.in, got, c.want)
		}
		if want := strings.Count(c.want, "[U+") + strings.Count(c.want, "[0x"); n != want {
			t.Errorf("Neutralize(%q) count = %d, want %d", c.in, n, want)
		}
	}
}

func TestNeutralizeCleanDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("plain text, café — ok\n", 50)
	if got, n := Neutralize(s); got != s || n != 0 {
		t.Fatalf("clean string changed: %d", n)
	}
	if a := testing.AllocsPerRun(100, func() { Neutralize(s) }); a != 0 {
		t.Errorf("Neutralize on clean input allocates %v times", a)
	}
}

func TestNeutralizeJSON(t *testing.T) {
	desc := func(k string) bool { return k == "description" || k == "title" }
	cases := []struct{ in, want string }{
		{`{"description":"x\u001b[1m","name":"\u001b"}`, `{"description":"x[U+001B][1m","name":"\u001b"}`},
		{`{"description":"a` + "\u202e" + `b"}`, `{"description":"a[U+202E]b"}`},
		{`{"description":"t\udb40\udc41g"}`, `{"description":"t[U+E0041]g"}`},
		{`{"description":"keep \n \u00e9 \ud83d\ude00 \u0007"}`, `{"description":"keep \n \u00e9 \ud83d\ude00 [U+0007]"}`},
		{`{"description":"lone \ud800 ` + "\u200b" + `"}`, `{"description":"lone \ud800 [U+200B]"}`},
		{`{"inputSchema":{"properties":{"p":{"description":"` + "\x7f" + `","title":"\u202a"}}}}`,
			`{"inputSchema":{"properties":{"p":{"description":"[U+007F]","title":"[U+202A]"}}}}`},
		{`[{"descr\u0069ption" : "\u200b"}, {"description":["\u200b"]}]`, `[{"descr\u0069ption" : "[U+200B]"}, {"description":["\u200b"]}]`},
		{` {"description":"bad` + "\xff" + `"} `, ` {"description":"bad[0xFF]"} `},
	}
	for _, c := range cases {
		got, n, err := NeutralizeJSON([]byte(c.in), desc)
		if err != nil || string(got) != c.want {
			t.Errorf("NeutralizeJSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
			continue
		}
		if n == 0 {
			t.Errorf("NeutralizeJSON(%s) counted no change", c.in)
		}
		if json.Valid([]byte(c.in)) && !json.Valid(got) {
			t.Errorf("NeutralizeJSON(%s) produced invalid JSON %s", c.in, got)
		}
	}
}

func TestNeutralizeJSONUnchanged(t *testing.T) {
	match := func(string) bool { return true }
	for _, s := range []string{
		`{"description":"plain"}`, `{"name":"\u001b"}`, `{"description":"caf\u00e9 ✓"}`, `not json but clean`,
	} {
		in := []byte(s)
		out, n, err := NeutralizeJSON(in, func(k string) bool { return k == "description" })
		if err != nil || n != 0 || len(out) != len(in) || &out[0] != &in[0] {
			t.Errorf("NeutralizeJSON(%s) did not return its input: %s %d %v", s, out, n, err)
		}
	}
	in := []byte(`{"description":"plain"}`)
	if a := testing.AllocsPerRun(100, func() { NeutralizeJSON(in, match) }); a != 0 {
		t.Errorf("NeutralizeJSON on clean input allocates %v times", a)
	}
}

func TestNeutralizeJSONErrors(t *testing.T) {
	match := func(string) bool { return true }
	for _, s := range []string{
		`{"description":"` + "\u200b" + `"`,
		`{"description":"` + "\u200b" + `"} x`,
		`{"description" "` + "\u200b" + `"}`,
		`{"description":"` + "\u200b" + `",}`,
		`["` + "\u200b" + `", 01]`,
		`["` + "\u200b" + `\x"]`,
		`["` + "\x01\u200b" + `"]`,
	} {
		out, n, err := NeutralizeJSON([]byte(s), match)
		if err == nil {
			t.Errorf("NeutralizeJSON(%q): no error", s)
		}
		if string(out) != s || n != 0 {
			t.Errorf("NeutralizeJSON(%q) changed its input on error", s)
		}
		if err != nil && !strings.Contains(err.Error(), "expected") && !strings.Contains(err.Error(), "deeper") {
			t.Errorf("error does not say what was expected: %v", err)
		}
	}
}

func TestNeutralizeOutputIsValidUTF8(t *testing.T) {
	out, _ := Neutralize("\xe2\x80\xae\xe2\x80\xc0\xed\xa0\x80")
	if !utf8.ValidString(out) {
		t.Errorf("invalid UTF-8 out: %q", out)
	}
}
