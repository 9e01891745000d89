package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred", "a\u202eb", "\U000E0041", "\xff\xc3", "café ❤️", "\u200b\ufeff\u061c",
		"soft\u00adhyphen", "👨\u200d👩\u200d👧", "a\u200d👩", "❤\ufe0f\ufe0f", "1\ufe0f\u20e3", "🏳\ufe0f\u200d🌈", "\u200d", "\ufe0f❤"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, n := Neutralize(s)
		want, wantN := refNeutralize(s)
		if out != want || n != wantN {
			t.Fatalf("Neutralize(%q) = %q, %d; reference %q, %d", s, out, n, want, wantN)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 in output %q", out)
		}
		// Bounded growth: at most "[U+XXXX]" for a one-byte control.
		if len(out) > 8*len(s) {
			t.Fatalf("output grew from %d to %d bytes", len(s), len(out))
		}
		if n == 0 && out != s {
			t.Fatalf("clean input changed")
		}
		// Idempotent: the output is clean.
		if again, m := Neutralize(out); m != 0 || again != out {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
		// Nothing but hidden characters changes: removing the
		// replacements from the output and the hidden characters from
		// the input leaves the same text.
		if strip(out) != stripHidden(s) {
			t.Fatalf("text around replacements changed: %q vs %q", out, s)
		}
	})
}

// refNeutralize is a plain reference for Neutralize: it decodes the whole
// string first, then applies hiddenIn to each code point with its
// neighbours, without any of Neutralize's fast paths.
func refNeutralize(s string) (string, int) {
	type tok struct {
		r   rune // noRune for an invalid byte
		raw string
	}
	var toks []tok
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			r = noRune
		}
		toks = append(toks, tok{r, s[i : i+size]})
		i += size
	}
	at := func(k int) rune {
		if k < 0 || k >= len(toks) {
			return noRune
		}
		return toks[k].r
	}
	var b strings.Builder
	n := 0
	for k, t := range toks {
		switch {
		case t.r == noRune:
			b.WriteString(fmt.Sprintf("[0x%02X]", t.raw[0]))
			n++
		case hiddenIn(at(k-2), at(k-1), t.r, at(k+1)):
			b.WriteString(fmt.Sprintf("[U+%04X]", t.r))
			n++
		default:
			b.WriteString(t.raw)
		}
	}
	return b.String(), n
}

// strip removes "[U+XXXX]" and "[0xNN]" tokens written by Neutralize.
func strip(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if j := replacementLen(s[i:]); j > 0 {
			i += j
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func replacementLen(s string) int {
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }
	switch {
	case strings.HasPrefix(s, "[U+"):
		k := 3
		for k < len(s) && k < 10 && isHex(s[k]) {
			k++
		}
		if k >= 7 && k < len(s) && s[k] == ']' {
			return k + 1
		}
	case strings.HasPrefix(s, "[0x") && len(s) >= 6 && isHex(s[3]) && isHex(s[4]) && s[5] == ']':
		return 6
	}
	return 0
}

func stripHidden(s string) string {
	out, _ := refNeutralize(s)
	// The input may itself contain text shaped like a replacement.
	return strip(out)
}

func FuzzNeutralizeJSON(f *testing.F) {
	f.Add([]byte(`{"description":"x\u001b[1m","name":"\u001b"}`))
	f.Add([]byte(`{"tools":[{"name":"a","description":"\u202eevil","inputSchema":{"properties":{"p":{"title":"\udb40\udc41"}}}}]}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"` + "\x1b" + `"}]}`))
	f.Add([]byte(`[1, 2.5e3, true, null, {"a":[]}]`))
	f.Add([]byte(`{"a":"\b\f\u00ad","b\u200b":1}`))
	f.Add([]byte(`["\ud83d\udc68\u200d\ud83d\udc69", "\u2764\ufe0f", "1\ufe0f\u20e3", "\ufe0f"]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, n, err := NeutralizeJSON(raw)
		valid := json.Valid(raw)
		if err != nil {
			if n != 0 || !bytes.Equal(out, raw) {
				t.Fatalf("input changed on error")
			}
			var ke *KeyError
			if valid && firstHiddenJSON(raw) >= 0 && !strings.Contains(err.Error(), "deeper") && !errors.As(err, &ke) {
				t.Fatalf("valid JSON refused: %v", err)
			}
			return
		}
		if n == 0 {
			if len(out) != len(raw) || len(raw) > 0 && &out[0] != &raw[0] {
				t.Fatalf("unchanged input not returned as is")
			}
			return
		}
		if valid && !json.Valid(out) {
			t.Fatalf("valid input, invalid output: %s", out)
		}
		if len(out) > 8*len(raw) {
			t.Fatalf("output grew from %d to %d bytes", len(raw), len(out))
		}
		if again, m, err := NeutralizeJSON(out); err != nil || m != 0 || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %s -> %s, %d, %v", out, again, m, err)
		}
		if !valid || !utf8.Valid(raw) {
			return
		}
		// Differential check against encoding/json: every string value
		// reads as Neutralize of the original, keys and all else unchanged.
		var before, after any
		if json.Unmarshal(raw, &before) != nil || json.Unmarshal(out, &after) != nil {
			return // duplicate-key or number edge cases are out of scope here
		}
		if want := neutralizeTree(before); !reflect.DeepEqual(want, after) {
			t.Fatalf("decoded output differs:\n got %#v\nwant %#v", after, want)
		}
	})
}

func neutralizeTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = neutralizeTree(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = neutralizeTree(e)
		}
		return out
	case string:
		s, _ := Neutralize(x)
		return s
	}
	return v
}
