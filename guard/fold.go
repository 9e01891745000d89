package guard

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Folding: what the detector reads is what a model or a human reads, not
// the code points. The prose and dialog rules split words on ASCII
// whitespace and match ASCII stems (" yes,", "1. yes", "ask again"), so a
// text whose words are separated by a no-break space, an ideographic space
// or a line separator, or whose letters are fullwidth ("ａｐｐｒｏｖｅｄ"),
// would be one unreadable token to them while a model reads an ordinary
// sentence. Every text the prose and dialog rules see is therefore first
// folded, in a copy (the upstream's bytes are never changed):
//
//   - every Unicode White_Space character that is not ASCII (NEL U+0085,
//     NBSP U+00A0, OGHAM SPACE
//     MARK U+1680, U+2000–U+200A, LINE and PARAGRAPH SEPARATOR U+2028 and
//     U+2029, U+202F, U+205F, IDEOGRAPHIC SPACE U+3000), and the blank
//     Braille pattern U+2800, which renders as a space, becomes ' ';
//   - every fullwidth form of printable ASCII (U+FF01–U+FF5E) becomes that
//     ASCII character.
//
// Line and paragraph separators (U+2028, U+2029, NEL) are read both ways,
// because renderers disagree on them: a text holding one is folded once
// with them as spaces, which keeps a sentence whole as a model tokenises
// it, and once more with them as line feeds, which keeps a dialog drawn
// with them as its line breaks a menu of lines; the text is refused if
// either reading is (the most restrictive reading wins).
// The invisible characters (zero-width space, Hangul fillers, ...) and the
// ASCII controls VT and FF, which are White_Space too, are not folded: the
// neutraliser shows them as [U+XXXX], so a model reads them as the marks
// they become, and the tokeniser already ends a word at them.
//
// Each folded character becomes one byte, so offsets in the folded copy
// are not offsets in the original; nothing maps them back, because a
// finding's Path names the string, not a position in it.

// foldByte returns the ASCII reading of r, or 0 when r is not folded.
func foldByte(r rune) byte {
	switch {
	case r == 0x85 || r == 0xA0 || r == 0x1680 ||
		0x2000 <= r && r <= 0x200A || r == 0x2028 || r == 0x2029 || r == 0x202F ||
		r == 0x205F || r == 0x3000 || r == 0x2800:
		return ' '
	case 0xFF01 <= r && r <= 0xFF5E:
		return byte(r - 0xFF01 + '!')
	}
	return 0
}

// foldRawAt returns the folded rune whose UTF-8 form starts b and its
// length, or n == 0 when b does not start with one. Byte patterns, not
// decoding, because it is asked at every non-ASCII byte of a text;
// TestFoldRawAtAgrees keeps it in step with foldByte.
func foldRawAt(b []byte) (r rune, n int) {
	if len(b) < 2 {
		return 0, 0
	}
	switch b[0] {
	case 0xC2: // U+0085, U+00A0
		if b[1] == 0x85 || b[1] == 0xA0 {
			return rune(b[1]), 2
		}
		return 0, 0
	case 0xE1, 0xE2, 0xE3, 0xEF:
	default:
		return 0, 0
	}
	if len(b) < 3 || b[1]&0xC0 != 0x80 || b[2]&0xC0 != 0x80 {
		return 0, 0
	}
	r = rune(b[0]&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F)
	if foldByte(r) == 0 {
		return 0, 0
	}
	return r, 3
}

// foldText returns text with every folded character replaced by its ASCII
// reading. It returns text itself, without allocating, when there is
// nothing to fold; otherwise a new slice, so text is never written to.
func foldText(text []byte) []byte { return foldAs(text, ' ') }

// foldLines is foldText with the line and paragraph separators and NEL
// read as line feeds.
func foldLines(text []byte) []byte { return foldAs(text, '\n') }

// hasLineSep reports whether text holds U+2028, U+2029 or NEL.
func hasLineSep(text []byte) bool {
	return bytes.Contains(text, []byte("\u2028")) || bytes.Contains(text, []byte("\u2029")) ||
		bytes.Contains(text, []byte("\u0085"))
}

func isLineSep(r rune) bool { return r == 0x2028 || r == 0x2029 || r == 0x85 }

// foldAs folds text with the line separators read as lineSep, or kept as
// they are when lineSep is 0.
func foldAs(text []byte, lineSep byte) []byte {
	if indexFoldRaw(text, 0) == len(text) {
		return text
	}
	out, _ := foldInto(make([]byte, 0, len(text)), text, lineSep, false)
	return out
}

// foldInto appends b to out folded, with the line separators read as
// lineSep (kept when 0), and with escapes also \uXXXX escapes of folded
// characters, with the run of backslashes before them (an escape one level
// down, "\\u00a0"). It reports whether it folded a line separator. ASCII
// without backslashes is copied in runs found eight bytes at a time.
func foldInto(out, b []byte, lineSep byte, escapes bool) ([]byte, bool) {
	last, i, sawLine := 0, 0, false
	for i < len(b) {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			m := w & hi8
			if escapes {
				m |= byteMask(w, '\\')
			}
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3 // the first marked byte
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		var r rune
		n, start := 0, i
		switch {
		case c == '\\' && escapes:
			k := i
			for k+1 < len(b) && b[k+1] == '\\' {
				k++
			}
			if x, ok := hex4(b[k:]); ok && foldByte(x) != 0 {
				r, n = x, k+6-i
			} else {
				i = k + 1
				continue
			}
		case c < utf8.RuneSelf:
			i++
			continue
		default:
			if r, n = foldRawAt(b[i:]); n == 0 {
				i++
				continue
			}
		}
		out = append(out, b[last:start]...)
		if isLineSep(r) {
			sawLine = true
			if lineSep == 0 {
				out = append(out, b[start:start+n]...)
			} else {
				out = append(out, lineSep)
			}
		} else {
			out = append(out, foldByte(r))
		}
		i = start + n
		last = i
	}
	return append(out, b[last:]...), sawLine
}

// foldString is foldText for a string.
func foldString(s string) string {
	if b := foldText([]byte(s)); len(b) != len(s) {
		return string(b)
	}
	return s
}

// foldJSON is foldAs for raw JSON that has not been unescaped: it also
// folds a \uXXXX escape of a folded character, at this level or one
// deeper ("\\u00a0"). Used only to decide whether a result may hold a
// stem, it errs towards finding one.
func foldJSON(b []byte, lineSep byte) ([]byte, bool) {
	return foldInto(make([]byte, 0, len(b)), b, lineSep, true)
}

// indexFoldRaw returns the position of the first raw folded character at
// or after from, or len(b). ASCII text is skipped eight bytes at a time.
func indexFoldRaw(b []byte, from int) int {
	i := from
	for i < len(b) {
		for i+8 <= len(b) {
			if m := binary.LittleEndian.Uint64(b[i:]) & hi8; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		if b[i] >= utf8.RuneSelf {
			if _, n := foldRawAt(b[i:]); n > 0 {
				return i
			}
		}
		i++ // ASCII, or a byte of another character
	}
	return len(b)
}

// byteMask marks with its top bit each byte of w equal to c. Bytes above
// the first match may be marked falsely (a borrow carries), so only the
// lowest mark is exact, which is the only one used.
func byteMask(w uint64, c byte) uint64 {
	v := w ^ (ones * uint64(c))
	return (v - ones) &^ v & hi8
}

// foldCursor answers "does [a, b) hold a raw folded character?" for one
// buffer, with queries whose lower bound rarely decreases, scanning each
// byte about once overall. Escaped ones (\u00a0) are the escCursor's, which
// already visits every \u escape: a second search for "\u" would be slow in
// text full of \" and \n.
type foldCursor struct {
	data      []byte
	from, pos int
}

func newFoldCursor(data []byte) foldCursor { return foldCursor{data: data, from: -1} }

func (c *foldCursor) any(a, b int) bool {
	if c.from < 0 || a < c.from || a > c.pos {
		c.from, c.pos = a, indexFoldRaw(c.data, a)
	}
	return c.pos < b
}
