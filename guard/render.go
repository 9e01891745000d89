package guard

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Untrusted text (an upstream's object key, a snippet of its text, a name
// a host sent) that the gate names in a message of its own (a refusal the
// host and the model read, an error, an audit or log line) is rendered by
// Quote, and a Finding's Path by ShowPath, so that the upstream writes
// nothing in the gate's voice but a short quoted value on one line.

// ShowKey is how many characters of one untrusted name or key a message of
// the gate's shows (ShowPath, KeyError); a longer one is cut, marked "…".
const ShowKey = 24

// ShowName is how many characters of a name a host or an upstream sent (a
// tool, prompt or method name it asked for) a message of the gate's shows.
const ShowName = 100

// Quote renders untrusted text for a message of the gate's own: between
// double quotes, in Go syntax (strconv.Unquote reads it back, and
// audit.Redact finds it); hidden characters made visible as Neutralize
// does ([U+202E]); every other character that is not an ASCII printable, a
// letter or a digit (or a combining mark after one) written as an escape:
// line breaks (\n, \r, \u2028, \u0085), controls, and the quotation marks,
// brackets and spaces of other scripts that could seem to close the quote
// or start a line ("＂", "ʺ", U+3000). At most n characters of the
// rendering are kept (an escape counts its length); a cut is marked by "…"
// after the closing quote.
func Quote(s string, n int) string {
	s, _ = Neutralize(s)
	var b strings.Builder
	b.Grow(min(len(s), n+8) + 8)
	b.WriteByte('"')
	var buf [16]byte
	width := 0
	cut := false
	letter := false // the previous rune was written as a letter, a digit or a mark
	for _, r := range s {
		e := buf[:0]
		wasLetter := letter
		letter = false
		switch {
		case r == '"' || r == '\\':
			e = append(e, '\\', byte(r))
		case r >= 0x20 && r < 0x7F:
			e = append(e, byte(r))
			letter = 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
		case r >= 0x80 && shownAsIs(r, wasLetter):
			e = utf8.AppendRune(e, r)
			letter = true
		default:
			e = appendEscape(e, r)
		}
		w := 1
		if e[0] == '\\' {
			w = len(e) // an escape counts its length
		}
		if width+w > n {
			cut = true
			break
		}
		width += w
		b.Write(e)
	}
	b.WriteByte('"')
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

// shownAsIs reports whether a non-ASCII rune may appear in a Quote as it
// is: a letter or a digit, but not one drawn as a quotation mark or an
// apostrophe (QuoteLike: ʺ ʹ ʼ ˮ, Ꞌ ꞌ), and a
// combining mark only after one (a mark after the opening quote would be
// drawn on it).
func shownAsIs(r rune, afterLetter bool) bool {
	switch {
	case QuoteLike(r):
		return false
	case unicode.IsLetter(r), unicode.IsDigit(r):
		return true
	case unicode.In(r, unicode.Mn, unicode.Mc):
		return afterLetter
	}
	return false
}

// QuoteLike reports whether r, outside ASCII, is a quote mark or is drawn
// like one or like an apostrophe: Unicode's Quotation_Mark property
// (curly, fullwidth, angle and corner quotes), the modifier letters of
// U+02B0-U+02FF (ʹ ʺ ʼ ˝ ˮ), the primes (″ ‶), the dingbat quotation
// ornaments (❛ ❜ ❝ ❞ ❟ ❠) and ornament quotes (🙶 🙷 🙸), the saltillo
// letters (Ꞌ ꞌ), Hebrew geresh and gershayim (׳ ״) and the ditto mark
// (〃). Untrusted text shows none of them as it is, in Quote or in the
// approval question (package elicitation): each could seem to close the
// quotes around it and let the text go on in the gate's voice.
func QuoteLike(r rune) bool {
	if r < 0x80 {
		return false
	}
	switch {
	case unicode.Is(unicode.Quotation_Mark, r),
		0x02B0 <= r && r <= 0x02FF,
		0x2032 <= r && r <= 0x2037,
		0x275B <= r && r <= 0x2760,
		0x1F676 <= r && r <= 0x1F678,
		r == 0xA78B, r == 0xA78C,
		r == 0x05F3, r == 0x05F4, r == 0x3003:
		return true
	}
	return false
}

// ShellArg renders untrusted text (an upstream's tool name, a URI
// template) as one word of a POSIX shell command the gate suggests to a
// human ("To accept it: mcp-gate pins accept …"): as it is when made only
// of characters no shell reads specially, else between single quotes
// (a quote in it closed, escaped and reopened), where nothing expands. Hidden characters are
// made visible first, as Quote does. Double quotes would not do: "$(…)"
// and "`…`" run inside them, so a name could run a command of its own in
// the shell of whoever pastes the suggestion. (A line break would stay
// one, quoted: the names it is given are the catalog's, which holds no
// name with a control character.)
func ShellArg(s string) string {
	s, _ = Neutralize(s)
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_-.,:/@%+=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// appendEscape appends r's Go escape: \n, \r, \t, \xHH below U+0080,
// \uHHHH or \UHHHHHHHH above.
func appendEscape(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch r {
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	switch {
	case r < 0x80:
		return append(dst, '\\', 'x', hex[r>>4], hex[r&0xF])
	case r <= 0xFFFF:
		return append(dst, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
	}
	dst = append(dst, '\\', 'U')
	for s := 28; s >= 0; s -= 4 {
		dst = append(dst, hex[r>>uint(s)&0xF])
	}
	return dst
}

// showSegments is how many segments of a Finding's Path ShowPath keeps at
// most: the first two and the last three, the rest elided as "…".
const showSegments = 6

// ShowPath renders a Finding's Path (or a KeyError's) for a message of the
// gate's that a host, a model or a person reads: every key longer than
// ShowKey is cut and quoted, and a path of more than six segments keeps
// its first two and last three ("structuredContent.a…[0].b.type"). The
// Path itself stays whole, for the audit and for matching places
// (PathExact); what an upstream can write into a refusal through its keys
// is then a few short quoted values, whatever it nests. A path ShowPath
// cannot read (not one the guard wrote) is quoted whole, cut.
func ShowPath(path string) string {
	segs, ok := pathSegments(path)
	if !ok {
		return Quote(path, 2*ShowKey)
	}
	if len(segs) > showSegments {
		segs = append(append(segs[:2:2], "…"), segs[len(segs)-3:]...)
	}
	return strings.Join(segs, "")
}

// pathSegments splits a path pathKey and the walkers wrote into its
// segments, each rendered for ShowPath: ".key" or a first "key" (plain
// keys of ShowKey bytes at most), `["key"]` (every other key, re-quoted
// and cut), "[3]", "(json)".
func pathSegments(path string) ([]string, bool) {
	var segs []string
	i := 0
	for i < len(path) {
		switch c := path[i]; c {
		case '[':
			if i+1 < len(path) && path[i+1] == '"' {
				q, err := strconv.QuotedPrefix(path[i+1:])
				if err != nil {
					return nil, false
				}
				j := i + 1 + len(q)
				cut := strings.HasPrefix(path[j:], "…")
				if cut {
					j += len("…")
				}
				if j >= len(path) || path[j] != ']' {
					return nil, false
				}
				key, err := strconv.Unquote(q)
				if err != nil {
					return nil, false
				}
				s := Quote(key, ShowKey)
				if cut && !strings.HasSuffix(s, "…") {
					s += "…"
				}
				segs = append(segs, "["+s+"]")
				i = j + 1
				continue
			}
			j := i + 1
			for j < len(path) && '0' <= path[j] && path[j] <= '9' {
				j++
			}
			if j == i+1 || j >= len(path) || path[j] != ']' {
				return nil, false
			}
			segs = append(segs, path[i:j+1])
			i = j + 1
		case '(':
			j := strings.IndexByte(path[i:], ')')
			if j < 0 || !plainKey([]byte(path[i+1:i+j])) {
				return nil, false
			}
			segs = append(segs, path[i:i+j+1])
			i += j + 1
		default:
			dot := c == '.'
			a := i
			if dot {
				a++
			} else if i != 0 {
				return nil, false
			}
			j := a
			for j < len(path) && path[j] != '.' && path[j] != '[' && path[j] != '(' {
				j++
			}
			key := path[a:j]
			if !plainKey([]byte(key)) {
				return nil, false
			}
			switch {
			case len(key) > ShowKey:
				segs = append(segs, "["+Quote(key, ShowKey)+"]")
			case dot:
				segs = append(segs, "."+key)
			default:
				segs = append(segs, key)
			}
			i = j
		}
	}
	return segs, true
}

// plainKey reports whether pathKey writes key bare: 1 to 64 bytes of
// ASCII letters, digits and _-$@.
func plainKey(key []byte) bool {
	if len(key) == 0 || len(key) > 64 {
		return false
	}
	for _, c := range key {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '$' || c == '@') {
			return false
		}
	}
	return true
}
