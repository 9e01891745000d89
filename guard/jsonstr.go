package guard

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// stringScanner finds the ends of JSON strings in one buffer. It caches the
// position of the next quote and the next backslash so that a long string
// full of escapes is still scanned in linear time: without the cache, looking
// for the closing quote after every escape would rescan the same bytes again.
type stringScanner struct {
	data      []byte
	nextQuote int // position of the next '"' at or after quoteFrom; -1 = none left
	quoteFrom int
	nextBack  int // position of the next '\\' at or after backFrom; -1 = none left
	backFrom  int
}

func newStringScanner(data []byte) stringScanner {
	return stringScanner{data: data, nextQuote: -2, nextBack: -2}
}

func (s *stringScanner) quoteAt(from int) int {
	if s.nextQuote == -1 && from >= s.quoteFrom {
		return -1
	}
	if s.nextQuote < from || from < s.quoteFrom {
		j := bytes.IndexByte(s.data[from:], '"')
		if j >= 0 {
			j += from
		}
		s.nextQuote, s.quoteFrom = j, from
	}
	return s.nextQuote
}

func (s *stringScanner) backAt(from int) int {
	if s.nextBack == -1 && from >= s.backFrom {
		return -1
	}
	if s.nextBack < from || from < s.backFrom {
		j := bytes.IndexByte(s.data[from:], '\\')
		if j >= 0 {
			j += from
		}
		s.nextBack, s.backFrom = j, from
	}
	return s.nextBack
}

// end returns the index of the quote closing the string whose content starts
// at i, and whether the content holds any backslash escape. ok is false when
// the data ends first.
func (s *stringScanner) end(i int) (end int, escaped, ok bool) {
	for {
		// Look at the next bytes directly: most strings are short, and in
		// escape-dense text the next quote or backslash is near. Only a
		// long plain stretch pays for the indexed search.
		j, lim := i, min(i+32, len(s.data))
		for j < lim {
			switch s.data[j] {
			case '"':
				return j, escaped, true
			case '\\':
				escaped = true
				j += 2
				continue
			}
			j++
		}
		if j >= len(s.data) {
			return len(s.data), escaped, false
		}
		i = j
		q := s.quoteAt(i)
		if q < 0 {
			return len(s.data), escaped, false
		}
		b := s.backAt(i)
		if b < 0 || b > q {
			return q, escaped, true
		}
		escaped = true
		i = b + 2 // skip the escaped byte, which may be a quote
		if i > len(s.data) {
			return len(s.data), escaped, false
		}
	}
}

// appendUnescaped appends the decoded content of a raw JSON string (without
// its quotes) to dst. It never fails: a malformed escape is kept literally, and
// an unpaired surrogate becomes U+FFFD, because the detector must read what a
// lenient consumer would read rather than reject the text.
func appendUnescaped(dst, raw []byte) []byte {
	for len(raw) > 0 {
		// A short scalar look first: escapes are often dense.
		i := -1
		for k := 0; k < len(raw) && k < 16; k++ {
			if raw[k] == '\\' {
				i = k
				break
			}
		}
		if i < 0 {
			i = bytes.IndexByte(raw, '\\')
		}
		if i < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:i]...)
		raw = raw[i:]
		if len(raw) < 2 {
			return append(dst, raw...)
		}
		switch c := raw[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
			raw = raw[2:]
		case 'b':
			dst = append(dst, '\b')
			raw = raw[2:]
		case 'f':
			dst = append(dst, '\f')
			raw = raw[2:]
		case 'n':
			dst = append(dst, '\n')
			raw = raw[2:]
		case 'r':
			dst = append(dst, '\r')
			raw = raw[2:]
		case 't':
			dst = append(dst, '\t')
			raw = raw[2:]
		case 'u':
			r, n := decodeUEscape(raw)
			if n == 0 {
				dst = append(dst, raw[:2]...)
				raw = raw[2:]
				continue
			}
			dst = utf8.AppendRune(dst, r)
			raw = raw[n:]
		default:
			dst = append(dst, raw[:2]...)
			raw = raw[2:]
		}
	}
	return dst
}

// decodeUEscape decodes a \uXXXX escape (and a following low surrogate
// escape when the first is a high surrogate) at the start of b. It returns
// the rune and the number of bytes consumed, or n == 0 when b does not start
// with a well-formed \u escape. An unpaired surrogate yields U+FFFD with the
// bytes of its own escape consumed.
func decodeUEscape(b []byte) (r rune, n int) {
	r1, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6
	}
	if r1 < 0xDC00 { // high surrogate: look for its low half
		if r2, ok := hex4(b[6:]); ok {
			if c := utf16.DecodeRune(r1, r2); c != utf8.RuneError {
				return c, 12
			}
		}
	}
	return utf8.RuneError, 6
}

// hex4 reads `\uXXXX` at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// normKey appends to dst the ASCII letters and digits of s, lower-cased, and
// drops everything else, so that "tool_call_id", "toolCallId" and
// "Tool-Call-ID" compare equal. It stops at limit bytes of output.
func normKey(dst, s []byte, limit int) []byte {
	for _, c := range s {
		if len(dst) >= limit {
			break
		}
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			dst = append(dst, c)
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		}
	}
	return dst
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
