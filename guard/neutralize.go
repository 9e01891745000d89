package guard

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// IsHidden reports whether r is a code point the neutraliser makes visible:
//
//   - C0 controls except tab, line feed and carriage return (this includes
//     ESC, which starts every terminal escape sequence, and BEL, which ends
//     OSC sequences), DEL, and C1 controls U+0080–U+009F (U+009B is the
//     one-byte CSI);
//   - bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069;
//   - zero-width and invisible format characters U+180E, U+200B–U+200D,
//     U+2060–U+2064, U+206A–U+206F, U+FEFF, U+FFF9–U+FFFB;
//   - tag characters U+E0000–U+E007F and the variation selectors supplement
//     U+E0100–U+E01EF, both of which can carry a hidden copy of any ASCII
//     text.
//
// Not included, on purpose: U+FE00–U+FE0F (U+FE0F is in ordinary emoji),
// the soft hyphen U+00AD, line and paragraph separators, and look-alike
// letters (homoglyphs); see docs/threat-model-guard.md.
func IsHidden(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n' && r != '\r'
	case r < 0x7F:
		return false
	case r <= 0x9F: // DEL and C1
		return true
	case r < 0x061C:
		return false
	}
	switch {
	case r == 0x061C, r == 0x180E, r == 0xFEFF:
		return true
	case 0x200B <= r && r <= 0x200F, 0x202A <= r && r <= 0x202E:
		return true
	case 0x2060 <= r && r <= 0x2064, 0x2066 <= r && r <= 0x206F:
		return true
	case 0xFFF9 <= r && r <= 0xFFFB:
		return true
	case 0xE0000 <= r && r <= 0xE007F, 0xE0100 <= r && r <= 0xE01EF:
		return true
	}
	return false
}

// Neutralize makes hidden characters in s visible: each code point for
// which IsHidden is true becomes "[U+XXXX]" (four to six upper-case hex
// digits), so "\x1b[31m" becomes "[U+001B][31m" and the text around it is
// kept; each byte that is not valid UTF-8 becomes "[0xNN]". Nothing is
// dropped silently, so a reader can still see that something was there.
//
// It returns s itself (no allocation) and 0 when s is clean, otherwise the
// new string and the number of code points and invalid bytes replaced. It is
// safe for concurrent use.
func Neutralize(s string) (string, int) {
	i := firstHiddenString(s)
	if i < 0 {
		return s, 0
	}
	var sb strings.Builder
	sb.Grow(len(s) + 16)
	sb.WriteString(s[:i])
	n := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7F {
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x7F {
				j++
			}
			sb.WriteString(s[i:j])
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			var buf [6]byte
			sb.Write(appendInvalidByte(buf[:0], c))
			n++
		case IsHidden(r):
			writeCodePoint(&sb, r)
			n++
		default:
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String(), n
}

func writeCodePoint(sb *strings.Builder, r rune) {
	var buf [10]byte
	sb.Write(appendCodePoint(buf[:0], r))
}

// appendCodePoint appends "[U+XXXX]" with four to six upper-case hex
// digits (fmt is ten times slower, which shows on text full of escapes).
func appendCodePoint(dst []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '[', 'U', '+')
	digits := 4
	if r > 0xFFFF {
		digits = 5
		if r > 0xFFFFF {
			digits = 6
		}
	}
	for k := digits - 1; k >= 0; k-- {
		dst = append(dst, hex[(r>>(4*k))&0xF])
	}
	return append(dst, ']')
}

func appendInvalidByte(dst []byte, c byte) []byte {
	const hex = "0123456789ABCDEF"
	return append(dst, '[', '0', 'x', hex[c>>4], hex[c&0xF], ']')
}

const (
	hi8  = 0x8080808080808080
	ones = 0x0101010101010101
)

// plainASCII reports whether all eight bytes of w are printable ASCII or
// tab, LF, CR — the common case, decided without looking at each byte. It
// may answer false for some clean words; callers then look byte by byte.
func plainASCII(w uint64) bool {
	// A byte < 0x20 or >= 0x80, or equal to 0x7F, sets its high bit in
	// one of these.
	low := (w - 0x2020202020202020) & ^w & hi8 // bytes < 0x20
	del := ((w ^ 0x7F7F7F7F7F7F7F7F) - ones) & ^(w ^ 0x7F7F7F7F7F7F7F7F) & hi8
	return (w&hi8)|low|del == 0
}

// le64s loads s[i:i+8] little-endian; the compiler merges the byte loads.
func le64s(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// hiddenLead marks the bytes that can start a hidden code point in valid
// UTF-8: C0 controls but tab, LF and CR; DEL; and the lead bytes of the
// hidden ranges above U+007F (C2: C1 controls; D8: U+061C; E1: U+180E;
// E2: U+200B..U+206F; EF: U+FEFF, U+FFF9..U+FFFB; F3: tags and variation
// selectors). Any other byte of valid UTF-8 needs no decoding.
var hiddenLead = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t' && c != '\n' && c != '\r'
	}
	for _, c := range []byte{0x7F, 0xC2, 0xD8, 0xE1, 0xE2, 0xEF, 0xF3} {
		t[c] = true
	}
	return t
}()

// firstHiddenString returns the index of the first byte of s that starts a
// hidden code point or an invalid UTF-8 sequence, or -1.
func firstHiddenString(s string) int {
	if !utf8.ValidString(s) {
		return firstHiddenSlow(s)
	}
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainASCII(le64s(s, i)) {
			i += 8
			continue
		}
		for end := min(i+8, len(s)); i < end; {
			if !hiddenLead[s[i]] {
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if IsHidden(r) {
				return i
			}
			i += size
		}
	}
	return -1
}

// firstHiddenSlow decodes every rune; it also finds invalid bytes.
func firstHiddenSlow(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if hiddenLead[c] {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || IsHidden(r) {
			return i
		}
		i += size
	}
	return -1
}

// firstHiddenJSON returns the index of the first byte of raw JSON that may
// need rewriting: a raw hidden code point or invalid UTF-8 (inside a string
// or not), or a \u escape of a hidden code point (or of a high surrogate
// that may pair into a tag character). -1 means nothing in raw can need it.
func firstHiddenJSON(raw []byte) int {
	if !utf8.Valid(raw) {
		// Rare: find the first invalid byte or hidden character exactly.
		for i := 0; i < len(raw); {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 || IsHidden(r) || raw[i] == '\\' && escHidden(raw[i:]) {
				return i
			}
			i += size
		}
		return -1
	}
	for i := 0; i < len(raw); {
		if i+8 <= len(raw) {
			w := binary.LittleEndian.Uint64(raw[i:])
			if plainASCII(w) && !hasByte(w, '\\') {
				i += 8
				continue
			}
		}
		for end := min(i+8, len(raw)); i < end; {
			c := raw[i]
			switch {
			case c == '\\':
				if escHidden(raw[i:]) {
					return i
				}
				i += 2
			case hiddenLead[c]:
				r, size := utf8.DecodeRune(raw[i:])
				if IsHidden(r) {
					return i
				}
				i += size
			default:
				i++
			}
		}
	}
	return -1
}

// escHidden reports a \u escape at b of a hidden code point or of a high
// surrogate (which may pair into a tag character).
func escHidden(b []byte) bool {
	r, ok := hex4(b)
	return ok && (IsHidden(r) || 0xD800 <= r && r <= 0xDBFF)
}

// hasByte reports whether any byte of w equals c.
func hasByte(w uint64, c byte) bool {
	x := w ^ (ones * uint64(c))
	return (x-ones)&^x&hi8 != 0
}

// NeutralizeJSON rewrites, inside raw JSON, every string value whose member
// key satisfies match, at any depth (for example "description" and "title"
// in a tool definition and its schemas, or "text" in result content), the
// way Neutralize does, and leaves every other byte exactly as it was:
// escapes that are kept stay escapes, and a hidden code point written as an
// escape (\u001b, \u202e, \udb40\udc41) is replaced like a raw one.
// Replacements are plain ASCII, so valid JSON stays valid.
//
// It returns raw itself and 0 when nothing changed. Input in which no byte
// could start a hidden character is returned at once without being parsed;
// otherwise malformed JSON, or JSON nested deeper than 10000 levels, is an
// error, returned with raw unchanged. match is only called for strings that
// need a change. NeutralizeJSON is safe for concurrent use if match is.
func NeutralizeJSON(raw []byte, match func(key string) bool) ([]byte, int, error) {
	if firstHiddenJSON(raw) < 0 {
		return raw, 0, nil
	}
	nj := njWalker{raw: raw, ss: newStringScanner(raw), match: match}
	if err := nj.run(); err != nil {
		return raw, 0, err
	}
	if nj.out == nil {
		return raw, 0, nil
	}
	nj.out = append(nj.out, raw[nj.copied:]...)
	return nj.out, nj.n, nil
}

const njMaxDepth = 10000

type njWalker struct {
	raw    []byte
	ss     stringScanner
	match  func(string) bool
	out    []byte // nil until the first change
	copied int    // raw[:copied] is already in out
	n      int
	stack  []bool // true for objects
}

func (w *njWalker) errorf(i int, expected string) error {
	found := "end of input"
	if i < len(w.raw) {
		found = fmt.Sprintf("%q", w.raw[i])
	}
	return fmt.Errorf("guard: invalid JSON at byte %d: found %s, expected %s", i, found, expected)
}

func (w *njWalker) skipSpace(i int) int {
	for i < len(w.raw) && isSpace(w.raw[i]) {
		i++
	}
	return i
}

// run validates the whole document and rewrites matching strings.
func (w *njWalker) run() error {
	i, err := w.value(w.skipSpace(0), span{})
	if err != nil {
		return err
	}
	for {
		i = w.skipSpace(i)
		if len(w.stack) == 0 {
			if i != len(w.raw) {
				return w.errorf(i, "end of input after the top-level value")
			}
			return nil
		}
		obj := w.stack[len(w.stack)-1]
		if i >= len(w.raw) {
			return w.errorf(i, "',' or a closing bracket")
		}
		c := w.raw[i]
		switch {
		case obj && c == '}', !obj && c == ']':
			w.stack = w.stack[:len(w.stack)-1]
			i++
			continue
		case c != ',':
			if obj {
				return w.errorf(i, "',' or '}'")
			}
			return w.errorf(i, "',' or ']'")
		}
		i = w.skipSpace(i + 1)
		var key span
		if obj {
			if i >= len(w.raw) || w.raw[i] != '"' {
				return w.errorf(i, "a string key")
			}
			if key, i, err = w.key(i); err != nil {
				return err
			}
		}
		if i, err = w.value(i, key); err != nil {
			return err
		}
	}
}

// key reads `"key" :` at raw[i] and returns the key span and the position of
// the value.
func (w *njWalker) key(i int) (span, int, error) {
	end, esc, ok := w.ss.end(i + 1)
	if !ok {
		return span{}, 0, w.errorf(len(w.raw), "the end of a string")
	}
	k := span{i + 1, end, esc}
	j := w.skipSpace(end + 1)
	if j >= len(w.raw) || w.raw[j] != ':' {
		return span{}, 0, w.errorf(j, "':' after an object key")
	}
	return k, w.skipSpace(j + 1), nil
}

// value reads the value at raw[i]; key is the member key it belongs to
// (unset in arrays and at the top). Containers are pushed; their first
// member or element is read here, the rest by run.
func (w *njWalker) value(i int, key span) (int, error) {
	raw := w.raw
	for {
		if i >= len(raw) {
			return i, w.errorf(i, "a value")
		}
		c := raw[i]
		switch {
		case c == '"':
			end, _, ok := w.ss.end(i + 1)
			if !ok {
				return i, w.errorf(len(raw), "the end of a string")
			}
			if err := w.str(i+1, end, key); err != nil {
				return i, err
			}
			return end + 1, nil
		case c == '{' || c == '[':
			if len(w.stack) >= njMaxDepth {
				return i, fmt.Errorf("guard: JSON nested deeper than %d levels at byte %d", njMaxDepth, i)
			}
			obj := c == '{'
			w.stack = append(w.stack, obj)
			j := w.skipSpace(i + 1)
			if j < len(raw) && (obj && raw[j] == '}' || !obj && raw[j] == ']') {
				w.stack = w.stack[:len(w.stack)-1]
				return j + 1, nil
			}
			if !obj {
				i, key = j, span{}
				continue
			}
			if j >= len(raw) || raw[j] != '"' {
				return j, w.errorf(j, "a string key or '}'")
			}
			k, next, err := w.key(j)
			if err != nil {
				return j, err
			}
			i, key = next, k
			continue
		case c == '-' || '0' <= c && c <= '9':
			return w.number(i)
		case c == 't':
			return w.literal(i, "true")
		case c == 'f':
			return w.literal(i, "false")
		case c == 'n':
			return w.literal(i, "null")
		}
		return i, w.errorf(i, "a value")
	}
}

func (w *njWalker) literal(i int, lit string) (int, error) {
	if len(w.raw)-i < len(lit) || string(w.raw[i:i+len(lit)]) != lit {
		return i, w.errorf(i, lit)
	}
	return i + len(lit), nil
}

// number validates a JSON number at raw[i].
func (w *njWalker) number(i int) (int, error) {
	raw := w.raw
	j := i
	if raw[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(raw) && '0' <= raw[j] && raw[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(raw) && raw[j] == '0' {
		j++
	} else if !digits() {
		return i, w.errorf(j, "a digit")
	}
	if j < len(raw) && raw[j] == '.' {
		j++
		if !digits() {
			return i, w.errorf(j, "a digit after '.'")
		}
	}
	if j < len(raw) && (raw[j] == 'e' || raw[j] == 'E') {
		j++
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		if !digits() {
			return i, w.errorf(j, "a digit in the exponent")
		}
	}
	return j, nil
}

// str validates the string content raw[a:b] and, when it needs a change and
// its key matches, rewrites it.
func (w *njWalker) str(a, b int, key span) error {
	raw := w.raw
	first := -1
	for i := a; i < b; {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 >= b {
				return w.errorf(i, "an escape sequence")
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(raw[i:b])
				if !ok {
					return w.errorf(i, `\u and four hex digits`)
				}
				if first < 0 && (IsHidden(r) || 0xD800 <= r && r <= 0xDBFF && isHiddenPair(raw[i:b])) {
					first = i
				}
				i += 6
			default:
				return w.errorf(i+1, "a valid escape character")
			}
		case c < 0x20:
			return w.errorf(i, "no raw control character inside a string")
		case c < 0x80:
			if c == 0x7F && first < 0 {
				first = i
			}
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:b])
			if first < 0 && (r == utf8.RuneError && size == 1 || IsHidden(r)) {
				first = i
			}
			i += size
		}
	}
	if first < 0 || key.b == 0 || w.match == nil {
		return nil
	}
	k := raw[key.a:key.b]
	if key.esc {
		k = appendUnescaped(nil, k)
	}
	if !w.match(string(k)) {
		return nil
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(raw)+64)
	}
	w.out = append(w.out, raw[w.copied:first]...)
	for i := first; i < b; {
		c := raw[i]
		switch {
		case c == '\\' && raw[i+1] == 'u':
			r, n := decodeUEscape(raw[i:b])
			if IsHidden(r) {
				w.out = appendCodePoint(w.out, r)
				w.n++
			} else {
				w.out = append(w.out, raw[i:i+n]...)
			}
			i += n
		case c == '\\':
			w.out = append(w.out, raw[i:i+2]...)
			i += 2
		case c < 0x80:
			if c == 0x7F {
				w.out = appendCodePoint(w.out, 0x7F)
				w.n++
			} else {
				w.out = append(w.out, c)
			}
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:b])
			switch {
			case r == utf8.RuneError && size == 1:
				w.out = appendInvalidByte(w.out, c)
				w.n++
			case IsHidden(r):
				w.out = appendCodePoint(w.out, r)
				w.n++
			default:
				w.out = append(w.out, raw[i:i+size]...)
			}
			i += size
		}
	}
	w.copied = b
	return nil
}

// isHiddenPair reports whether the \u escape at b is a surrogate pair that
// decodes to a hidden code point.
func isHiddenPair(b []byte) bool {
	r, n := decodeUEscape(b)
	return n == 12 && IsHidden(r)
}
