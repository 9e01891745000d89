package guard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hiddenRanges is the documented set, written out independently of IsHidden:
// controls, Default_Ignorable_Code_Point (Unicode 15.1
// DerivedCoreProperties.txt) and the interlinear annotation controls.
var hiddenRanges = [][2]rune{
	{0x00, 0x08}, {0x0B, 0x0C}, {0x0E, 0x1F}, {0x7F, 0x9F},
	{0xAD, 0xAD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
	{0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F},
	{0x3164, 0x3164}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFFB},
	{0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
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
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if IsHidden(r) != inHiddenRanges(r) {
			t.Fatalf("IsHidden(%U) = %v, documented %v", r, IsHidden(r), inHiddenRanges(r))
		}
	}
}

// TestDefaultIgnorableMatchesUnicodeTables derives Default_Ignorable_Code_Point
// the way DerivedCoreProperties.txt does, from the standard library's
// tables, and compares it with the copied list. (The standard library's
// tables may be a version behind: reserved code points are only in
// Other_Default_Ignorable_Code_Point, which it has.)
func TestDefaultIgnorableMatchesUnicodeTables(t *testing.T) {
	derived := func(r rune) bool {
		if !(unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)) {
			return false
		}
		return !unicode.Is(unicode.White_Space, r) && !(0xFFF9 <= r && r <= 0xFFFB) &&
			!(0x13430 <= r && r <= 0x1343F) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := inRanges(defaultIgnorable, r), derived(r); got != want {
			t.Errorf("defaultIgnorable has %U = %v, the Unicode %s tables derive %v", r, got, unicode.Version, want)
		}
	}
}

func TestNeutralize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"\x1b[31mred\x1b[0m", "[U+001B][31mred[U+001B][0m"},
		{"\x1b]8;;http://x\x07link\x1b]8;;\x07", "[U+001B]]8;;http://x[U+0007]link[U+001B]]8;;[U+0007]"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"bs\bff\f", "bs[U+0008]ff[U+000C]"},
		{"a\u202eb\u2066c", "a[U+202E]b[U+2066]c"},
		{"zw\u200bj\u200dbom\ufeff", "zw[U+200B]j[U+200D]bom[U+FEFF]"},
		{"tag\U000E0041\U000E007F", "tag[U+E0041][U+E007F]"},
		{"c1\u0085\u009b", "c1[U+0085][U+009B]"},
		{"del\x7f", "del[U+007F]"},
		{"bad\xff\xc3", "bad[0xFF][0xC3]"},
		{"soft\u00adhyphen", "soft[U+00AD]hyphen"},
		{"cgj\u034f hf\u3164\uffa0 wj\u2060 vs1\ufe00 ivs\U000E0100 fvs\u180b", "cgj[U+034F] hf[U+3164][U+FFA0] wj[U+2060] vs1[U+FE00] ivs[U+E0100] fvs[U+180B]"},
		{"\U0001BCA0\U0001D173\ufff9", "[U+1BCA0][U+1D173][U+FFF9]"},
		// Emoji keep their joiners and presentation selectors; misplaced
		// ones are shown.
		{"emoji ❤️ café — “ok”", "emoji ❤️ café — “ok”"},
		{"👨\u200d👩\u200d👧 👩🏽\u200d💻 🏳\ufe0f\u200d🌈 ❤\ufe0f\u200d🔥 🏃\u200d♂\ufe0f 1\ufe0f\u20e3 #\ufe0f\u20e3 ☺\ufe0e",
			"👨\u200d👩\u200d👧 👩🏽\u200d💻 🏳\ufe0f\u200d🌈 ❤\ufe0f\u200d🔥 🏃\u200d♂\ufe0f 1\ufe0f\u20e3 #\ufe0f\u20e3 ☺\ufe0e"},
		{"a\u200db 👨\u200d 👨\u200d\u200d👩 \u200d👩", "a[U+200D]b 👨[U+200D] 👨[U+200D][U+200D]👩 [U+200D]👩"},
		{"x\ufe0f ❤\ufe0f\ufe0f 1\ufe0f \ufe0f", "x[U+FE0F] ❤\ufe0f[U+FE0F] 1[U+FE0F] [U+FE0F]"},
		{"a\ufe0f\u200d👩", "a[U+FE0F][U+200D]👩"},
		// Scripts other than Latin are text, not tricks.
		{"日本語のテキスト 中文 한국어 עברית العربية हिन्दी", "日本語のテキスト 中文 한국어 עברית العربية हिन्दी"},
	}
	for _, c := range cases {
		got, n := Neutralize(c.in)
		if got != c.want {
			t.Errorf("Neutralize(%q) = %q, want %q", c.in, got, c.want)
		}
		if want := strings.Count(c.want, "[U+") + strings.Count(c.want, "[0x"); n != want {
			t.Errorf("Neutralize(%q) count = %d, want %d", c.in, n, want)
		}
		if again, m := Neutralize(got); m != 0 || again != got {
			t.Errorf("Neutralize is not idempotent on %q: %q", got, again)
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
	cases := []struct{ in, want string }{
		// Every string value, whatever its key; keys and other bytes stay.
		{`{"description":"x\u001b[1m","name":"\u001b","x":["\u0007"]}`, `{"description":"x[U+001B][1m","name":"[U+001B]","x":["[U+0007]"]}`},
		{`{"description":"a` + "\u202e" + `b"}`, `{"description":"a[U+202E]b"}`},
		{`{"description":"t\udb40\udc41g"}`, `{"description":"t[U+E0041]g"}`},
		{`{"description":"keep \n \u00e9 \ud83d\ude00 \u0007"}`, `{"description":"keep \n \u00e9 \ud83d\ude00 [U+0007]"}`},
		{`{"description":"lone \ud800 ` + "\u200b" + `"}`, `{"description":"lone [U+D800] [U+200B]"}`}, // a lone surrogate is made visible too
		{`{"inputSchema":{"properties":{"p":{"description":"` + "\x7f" + `","title":"\u202a"}}}}`,
			`{"inputSchema":{"properties":{"p":{"description":"[U+007F]","title":"[U+202A]"}}}}`},
		{`[{"descr\u0069ption" : "\u200b"}, {"description":["\u200b"]}]`, `[{"descr\u0069ption" : "[U+200B]"}, {"description":["[U+200B]"]}]`},
		{` {"description":"bad` + "\xff" + `"} `, ` {"description":"bad[0xFF]"} `},
		// The short escapes \b and \f are controls like any other.
		{`{"text":"back\bform\f\n\t\r\/\\b"}`, `{"text":"back[U+0008]form[U+000C]\n\t\r\/\\b"}`},
		{`{"text":"soft\u00adhy` + "\u00ad" + `phen \u0085"}`, `{"text":"soft[U+00AD]hy[U+00AD]phen [U+0085]"}`},
		// Emoji sequences survive, escaped or not; stray joiners do not.
		{`{"a":"\ud83d\udc68\u200d\ud83d\udc69 ` + "👨\u200d👩" + ` \u2764\ufe0f 1\ufe0f\u20e3 x\u200d\ud83d\udc69"}`,
			`{"a":"\ud83d\udc68\u200d\ud83d\udc69 ` + "👨\u200d👩" + ` \u2764\ufe0f 1\ufe0f\u20e3 x[U+200D]\ud83d\udc69"}`},
		{`{"_meta":{"note":"\u001b]8;;x\u0007"},"annotations":{"title":"\u2066"}}`, `{"_meta":{"note":"[U+001B]]8;;x[U+0007]"},"annotations":{"title":"[U+2066]"}}`},
	}
	for _, c := range cases {
		got, n, err := NeutralizeJSON([]byte(c.in))
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
		if again, m, err := NeutralizeJSON(got); err != nil || m != 0 || string(again) != string(got) {
			t.Errorf("NeutralizeJSON is not idempotent on %s: %s %d %v", got, again, m, err)
		}
	}
}

func TestNeutralizeJSONUnchanged(t *testing.T) {
	for _, s := range []string{
		`{"description":"plain"}`, `{"description":"caf\u00e9 ✓"}`, `not json but clean`,
		`{"text":"👨‍👩‍👧 ❤️ \ud83d\udc68\u200d\ud83d\udc69 日本語 עברית العربية","n":[1,true,null]}`,
		`{"text":"a\\b \\f \\u001b"}`, // escaped backslashes: no control
	} {
		in := []byte(s)
		out, n, err := NeutralizeJSON(in)
		if err != nil || n != 0 || len(out) != len(in) || &out[0] != &in[0] {
			t.Errorf("NeutralizeJSON(%s) did not return its input: %s %d %v", s, out, n, err)
		}
	}
	in := []byte(`{"description":"plain"}`)
	if a := testing.AllocsPerRun(100, func() { NeutralizeJSON(in) }); a != 0 {
		t.Errorf("NeutralizeJSON on clean input allocates %v times", a)
	}
}

// TestNeutralizeJSONKeys: a key is never rewritten; one holding a hidden
// character is a KeyError that says where.
func TestNeutralizeJSONKeys(t *testing.T) {
	cases := []struct{ in, path, key string }{
		{`{"a\u200bb":1}`, "", "a[U+200B]b"},
		{`{"ok":"\u001b","x":{"y":[{"z":1},{"k` + "\u00ad" + `":2}]}}`, "x.y[1]", "k[U+00AD]"},
		{`{"structuredContent":{"\b":true}}`, "structuredContent", "[U+0008]"},
		{`[{"bad` + "\xff" + `":1}]`, "[0]", "bad[0xFF]"},
	}
	for _, c := range cases {
		out, n, err := NeutralizeJSON([]byte(c.in))
		var ke *KeyError
		if !errors.As(err, &ke) {
			t.Errorf("NeutralizeJSON(%s): error %v, want a KeyError", c.in, err)
			continue
		}
		if ke.Path != c.path || ke.Key != c.key || n != 0 || string(out) != c.in {
			t.Errorf("NeutralizeJSON(%s) = %q at %q (n %d); want %q at %q", c.in, ke.Key, ke.Path, n, c.key, c.path)
		}
		if !strings.Contains(err.Error(), "key") {
			t.Errorf("error does not say it is a key: %v", err)
		}
	}
	// Joiners inside an emoji key are fine.
	if _, _, err := NeutralizeJSON([]byte(`{"👨‍👩‍👧":"\u001b"}`)); err != nil {
		t.Errorf("emoji key refused: %v", err)
	}
}

func TestNeutralizeJSONErrors(t *testing.T) {
	for _, s := range []string{
		`{"description":"` + "\u200b" + `"`,
		`{"description":"` + "\u200b" + `"} x`,
		`{"description" "` + "\u200b" + `"}`,
		`{"description":"` + "\u200b" + `",}`,
		`["` + "\u200b" + `", 01]`,
		`["` + "\u200b" + `\x"]`,
		`["` + "\x01\u200b" + `"]`,
	} {
		out, n, err := NeutralizeJSON([]byte(s))
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
