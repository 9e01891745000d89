package guard

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IsHidden reports whether r is a code point the neutraliser may make
// visible, whatever surrounds it:
//
//   - C0 controls except tab, line feed and carriage return (this includes
//     ESC, which starts every terminal escape sequence, BEL, which ends OSC
//     sequences, and backspace and form feed, which JSON can carry as the
//     short escapes \b and \f), DEL, and C1 controls U+0080–U+009F (U+009B
//     is the one-byte CSI, U+0085 a line break some terminals honour);
//   - every Default_Ignorable_Code_Point (see defaultIgnorable): the soft
//     hyphen, bidirectional controls, zero-width characters, Hangul fillers,
//     variation selectors, tag characters, and the code points reserved as
//     ignorable, which a renderer shows as nothing;
//   - the interlinear annotation controls U+FFF9–U+FFFB, which are not
//     default-ignorable but hide the annotated text in some renderers.
//
// Two of them are kept where they belong to an emoji (see hiddenIn): the
// zero-width joiner U+200D between two pictographs (👨‍👩‍👧) and the
// presentation selectors U+FE0E/U+FE0F after a pictograph or a keycap base
// (❤️, 1️⃣). Line and paragraph separators and look-alike letters
// (homoglyphs) are not hidden; see docs/threat-model.md.
func IsHidden(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n' && r != '\r'
	case r < 0x7F:
		return false
	case r <= 0x9F: // DEL and C1
		return true
	case r < 0xAD:
		return false
	case 0xFFF9 <= r && r <= 0xFFFB:
		return true
	}
	return inRanges(defaultIgnorable, r)
}

// defaultIgnorable is the Default_Ignorable_Code_Point property of Unicode
// 15.1, copied from DerivedCoreProperties.txt (which derives it as
// Other_Default_Ignorable_Code_Point + Cf + Variation_Selector − White_Space
// − U+FFF9..U+FFFB − U+13430..U+1343F − Prepended_Concatenation_Mark).
// TestDefaultIgnorableMatchesUnicodeTables re-derives it from the standard
// library's tables.
var defaultIgnorable = [][2]rune{
	{0x00AD, 0x00AD},   // SOFT HYPHEN
	{0x034F, 0x034F},   // COMBINING GRAPHEME JOINER
	{0x061C, 0x061C},   // ARABIC LETTER MARK
	{0x115F, 0x1160},   // HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
	{0x17B4, 0x17B5},   // KHMER VOWEL INHERENT AQ..AA
	{0x180B, 0x180F},   // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
	{0x200B, 0x200F},   // ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
	{0x202A, 0x202E},   // LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
	{0x2060, 0x206F},   // WORD JOINER..NOMINAL DIGIT SHAPES (bidi isolates included)
	{0x3164, 0x3164},   // HANGUL FILLER
	{0xFE00, 0xFE0F},   // VARIATION SELECTOR-1..16
	{0xFEFF, 0xFEFF},   // ZERO WIDTH NO-BREAK SPACE (BOM)
	{0xFFA0, 0xFFA0},   // HALFWIDTH HANGUL FILLER
	{0xFFF0, 0xFFF8},   // reserved
	{0x1BCA0, 0x1BCA3}, // SHORTHAND FORMAT LETTER OVERLAP..UP STEP
	{0x1D173, 0x1D17A}, // MUSICAL SYMBOL BEGIN BEAM..END PHRASE
	{0xE0000, 0xE0FFF}, // tags, VARIATION SELECTOR-17..256, reserved
}

// pictographic is Extended_Pictographic from Unicode 15.1 emoji-data.txt:
// the code points that start or continue an emoji ZWJ sequence.
var pictographic = [][2]rune{
	{0x00A9, 0x00A9}, {0x00AE, 0x00AE}, {0x203C, 0x203C}, {0x2049, 0x2049},
	{0x2122, 0x2122}, {0x2139, 0x2139}, {0x2194, 0x2199}, {0x21A9, 0x21AA},
	{0x231A, 0x231B}, {0x2328, 0x2328}, {0x2388, 0x2388}, {0x23CF, 0x23CF},
	{0x23E9, 0x23F3}, {0x23F8, 0x23FA}, {0x24C2, 0x24C2}, {0x25AA, 0x25AB},
	{0x25B6, 0x25B6}, {0x25C0, 0x25C0}, {0x25FB, 0x25FE}, {0x2600, 0x2605},
	{0x2607, 0x2612}, {0x2614, 0x2685}, {0x2690, 0x2705}, {0x2708, 0x2712},
	{0x2714, 0x2714}, {0x2716, 0x2716}, {0x271D, 0x271D}, {0x2721, 0x2721},
	{0x2728, 0x2728}, {0x2733, 0x2734}, {0x2744, 0x2744}, {0x2747, 0x2747},
	{0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757},
	{0x2763, 0x2767}, {0x2795, 0x2797}, {0x27A1, 0x27A1}, {0x27B0, 0x27B0},
	{0x27BF, 0x27BF}, {0x2934, 0x2935}, {0x2B05, 0x2B07}, {0x2B1B, 0x2B1C},
	{0x2B50, 0x2B50}, {0x2B55, 0x2B55}, {0x3030, 0x3030}, {0x303D, 0x303D},
	{0x3297, 0x3297}, {0x3299, 0x3299}, {0x1F000, 0x1F0FF}, {0x1F10D, 0x1F10F},
	{0x1F12F, 0x1F12F}, {0x1F16C, 0x1F171}, {0x1F17E, 0x1F17F}, {0x1F18E, 0x1F18E},
	{0x1F191, 0x1F19A}, {0x1F1AD, 0x1F1E5}, {0x1F201, 0x1F20F}, {0x1F21A, 0x1F21A},
	{0x1F22F, 0x1F22F}, {0x1F232, 0x1F23A}, {0x1F23C, 0x1F23F}, {0x1F249, 0x1F3FA},
	{0x1F400, 0x1F53D}, {0x1F546, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F774, 0x1F77F},
	{0x1F7D5, 0x1F7FF}, {0x1F80C, 0x1F80F}, {0x1F848, 0x1F84F}, {0x1F85A, 0x1F85F},
	{0x1F888, 0x1F88F}, {0x1F8AE, 0x1F8FF}, {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945},
	{0x1F947, 0x1FAFF}, {0x1FC00, 0x1FFFD},
}

func inRanges(t [][2]rune, r rune) bool {
	lo, hi := 0, len(t)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < t[m][0]:
			hi = m
		case r > t[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

const (
	zwj    = 0x200D
	vs15   = 0xFE0E // text presentation
	vs16   = 0xFE0F // emoji presentation
	keycap = 0x20E3
	noRune = -1 // no code point there: the start or end of the string, or an invalid byte
)

func isPictographic(r rune) bool { return r >= 0xA9 && inRanges(pictographic, r) }

// isEmojiModifier reports a skin-tone modifier U+1F3FB..U+1F3FF.
func isEmojiModifier(r rune) bool { return 0x1F3FB <= r && r <= 0x1F3FF }

// hiddenIn is the neutraliser's one rule: whether r, with the two code
// points before it (p2, then p1 right before r) and the one after it
// (next), must be made visible. Context matters only for the joiner and the
// presentation selectors, which are part of ordinary emoji:
//
//   - U+200D is kept between a pictograph (or its skin-tone modifier, or
//     its kept presentation selector) and a pictograph: 👨‍👩‍👧, 👩🏽‍💻, 🏳️‍🌈;
//   - U+FE0E/U+FE0F is kept right after a pictograph (❤️), or after a keycap
//     base 0-9 # * when U+20E3 follows (1️⃣).
//
// Anything else that IsHidden reports is always hidden, including every
// other variation selector and the tag characters of subdivision flags.
// A kept code point's neighbours are themselves kept, so the rule gives the
// same answer on its own output: neutralising is idempotent.
func hiddenIn(p2, p1, r, next rune) bool {
	switch r {
	case zwj:
		before := isPictographic(p1) || isEmojiModifier(p1) || (p1 == vs15 || p1 == vs16) && isPictographic(p2)
		return !(before && isPictographic(next))
	case vs15, vs16:
		return !(isPictographic(p1) || isKeycapBase(p1) && next == keycap)
	}
	return IsHidden(r)
}

func isKeycapBase(r rune) bool { return '0' <= r && r <= '9' || r == '#' || r == '*' }

// contextual reports a code point whose hiddenness depends on its neighbours.
func contextual(r rune) bool { return r == zwj || r == vs15 || r == vs16 }

// hiddenAtString applies hiddenIn to the code point r of size bytes at s[i].
func hiddenAtString(s string, i int, r rune, size int) bool {
	if !contextual(r) {
		return IsHidden(r)
	}
	p1, n1 := lastRune(s[:i])
	p2, _ := lastRune(s[:i-n1])
	next := rune(noRune)
	if i+size < len(s) {
		if nr, ns := utf8.DecodeRuneInString(s[i+size:]); !(nr == utf8.RuneError && ns == 1) {
			next = nr
		}
	}
	return hiddenIn(p2, p1, r, next)
}

// lastRune decodes the last code point of s; noRune for none or an invalid
// byte. size is the number of bytes it takes (1 for an invalid byte).
func lastRune(s string) (rune, int) {
	if s == "" {
		return noRune, 0
	}
	r, size := utf8.DecodeLastRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return noRune, 1
	}
	return r, size
}

// Neutralize makes hidden characters in s visible: each code point that
// hiddenIn reports becomes "[U+XXXX]" (four to six upper-case hex digits),
// so "\x1b[31m" becomes "[U+001B][31m" and the text around it is kept;
// each byte that is not valid UTF-8 becomes "[0xNN]". Nothing is dropped
// silently, so a reader can still see that something was there.
//
// It returns s itself (no allocation) and 0 when s is clean, otherwise the
// new string and the number of code points and invalid bytes replaced. It
// is idempotent and safe for concurrent use.
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
		case IsHidden(r) && hiddenAtString(s, i, r, size):
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
// hidden ranges above U+007F (C2: C1 controls and U+00AD; CD: U+034F; D8:
// U+061C; E1: U+115F..U+180F; E2: U+200B..U+206F; E3: U+3164; EF:
// U+FE00..U+FFFB; F0: U+1BCA0.., U+1D173..; F3: U+E0000..U+E0FFF). Any
// other byte of valid UTF-8 needs no decoding.
var hiddenLead = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t' && c != '\n' && c != '\r'
	}
	for _, c := range []byte{0x7F, 0xC2, 0xCD, 0xD8, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3} {
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
			if IsHidden(r) && hiddenAtString(s, i, r, size) {
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
		if r == utf8.RuneError && size == 1 || IsHidden(r) && hiddenAtString(s, i, r, size) {
			return i
		}
		i += size
	}
	return -1
}

// firstHiddenJSON returns the index of the first byte of raw JSON that may
// need rewriting: a raw code point IsHidden reports or invalid UTF-8
// (inside a string or not), an escape of a hidden control (\b, \f, \u0007),
// or a \u escape of a code point IsHidden reports (or of a surrogate,
// which may pair into one or stand alone). -1 means nothing in raw can need it. It errs
// towards reporting: a joiner inside an emoji is reported, and the walk
// that follows keeps it.
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

// escHidden reports an escape at b of a hidden control (\b, \f) or a \u
// escape of a code point IsHidden reports or of a surrogate (a high one
// may pair into a tag character; a lone one is made visible).
func escHidden(b []byte) bool {
	if len(b) >= 2 && (b[1] == 'b' || b[1] == 'f') {
		return true
	}
	r, ok := hex4(b)
	return ok && (IsHidden(r) || 0xD800 <= r && r <= 0xDFFF)
}

// hasByte reports whether any byte of w equals c.
func hasByte(w uint64, c byte) bool {
	x := w ^ (ones * uint64(c))
	return (x-ones)&^x&hi8 != 0
}

// A KeyError reports an object key holding a hidden character or an
// invalid UTF-8 byte. Keys are names that programs act on, not text to
// read, so the neutraliser does not rewrite them: the item that carries
// one is refused instead.
type KeyError struct {
	Path string // where the key is, e.g. `structuredContent.rows[2]`
	Key  string // the key, neutralised
}

func (e *KeyError) Error() string {
	where := "the top level"
	if e.Path != "" {
		where = ShowPath(e.Path)
	}
	return fmt.Sprintf("guard: object key %s at %s holds hidden characters; a key is not rewritten, so the item is refused", Quote(e.Key, ShowKey), where)
}

// NeutralizeJSON rewrites every string value inside raw JSON, at any depth,
// the way Neutralize does, and leaves every other byte exactly as it was:
// escapes that are kept stay escapes, and a hidden code point written as
// an escape (\u001b, \b, \f, \u202e, \udb40\udc41) is replaced like a raw
// one. Replacements are plain ASCII, so valid JSON stays valid. Every
// string a host may show to the user or the model is a value somewhere in
// an upstream's message, so this one walk is the whole rule; callers apply
// it to whole results, list entries, notifications and requests.
//
// Object keys are never rewritten: a key that holds a hidden character is
// a *KeyError, and the caller refuses the item.
//
// It returns raw itself and 0 when nothing changed. Input in which no byte
// could start a hidden character is returned at once without being parsed;
// otherwise malformed JSON, or JSON nested deeper than 10000 levels, is an
// error, returned with raw unchanged: callers must refuse it, not pass it
// on. NeutralizeJSON is safe for concurrent use.
func NeutralizeJSON(raw []byte) ([]byte, int, error) {
	if firstHiddenJSON(raw) < 0 {
		return raw, 0, nil
	}
	return neutralizeFrom(raw)
}

// neutralizeFrom is NeutralizeJSON for raw in which firstHiddenJSON found
// something: the walk that validates raw and rewrites its strings.
func neutralizeFrom(raw []byte) ([]byte, int, error) {
	nj := njWalker{raw: raw, ss: newStringScanner(raw)}
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
	out    []byte // nil until the first change
	copied int    // raw[:copied] is already in out
	n      int
	stack  []njFrame
}

// njFrame is one open container, with what its path needs.
type njFrame struct {
	obj   bool
	key   span // the current member's key (objects)
	index int  // the current element (arrays)
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

// run validates the whole document and rewrites its strings.
func (w *njWalker) run() error {
	i, err := w.value(w.skipSpace(0))
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
		top := &w.stack[len(w.stack)-1]
		obj := top.obj
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
		if obj {
			if i >= len(w.raw) || w.raw[i] != '"' {
				return w.errorf(i, "a string key")
			}
			if top.key, i, err = w.key(i); err != nil {
				return err
			}
		} else {
			top.index++
		}
		if i, err = w.value(i); err != nil {
			return err
		}
	}
}

// key reads `"key" :` at raw[i] and returns the key span and the position of
// the value. A key holding a hidden character is a *KeyError.
func (w *njWalker) key(i int) (span, int, error) {
	end, esc, ok := w.ss.end(i + 1)
	if !ok {
		return span{}, 0, w.errorf(len(w.raw), "the end of a string")
	}
	k := span{i + 1, end, esc}
	first, err := w.scan(k.a, k.b)
	if err != nil {
		return span{}, 0, err
	}
	if first >= 0 {
		var sb strings.Builder
		w.path(&sb)
		shown, _ := Neutralize(string(appendUnescaped(nil, w.raw[k.a:k.b])))
		return span{}, 0, &KeyError{Path: sb.String(), Key: shown}
	}
	j := w.skipSpace(end + 1)
	if j >= len(w.raw) || w.raw[j] != ':' {
		return span{}, 0, w.errorf(j, "':' after an object key")
	}
	return k, w.skipSpace(j + 1), nil
}

// path writes the path of the innermost open container.
func (w *njWalker) path(sb *strings.Builder) {
	for k := 1; k < len(w.stack); k++ {
		p := w.stack[k-1]
		if !p.obj {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(p.index))
			sb.WriteByte(']')
			continue
		}
		key := w.raw[p.key.a:p.key.b]
		if p.key.esc {
			key = appendUnescaped(nil, key)
		}
		pathKey(sb, key)
	}
}

// value reads the value at raw[i]. Containers are pushed; their first
// member or element is read here, the rest by run.
func (w *njWalker) value(i int) (int, error) {
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
			if err := w.str(i+1, end); err != nil {
				return i, err
			}
			return end + 1, nil
		case c == '{' || c == '[':
			if len(w.stack) >= njMaxDepth {
				return i, fmt.Errorf("guard: JSON nested deeper than %d levels at byte %d", njMaxDepth, i)
			}
			obj := c == '{'
			w.stack = append(w.stack, njFrame{obj: obj})
			j := w.skipSpace(i + 1)
			if j < len(raw) && (obj && raw[j] == '}' || !obj && raw[j] == ']') {
				w.stack = w.stack[:len(w.stack)-1]
				return j + 1, nil
			}
			if !obj {
				i = j
				continue
			}
			if j >= len(raw) || raw[j] != '"' {
				return j, w.errorf(j, "a string key or '}'")
			}
			k, next, err := w.key(j)
			if err != nil {
				return j, err
			}
			w.stack[len(w.stack)-1].key = k
			i = next
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

// jsonToken decodes one token of validated string content at raw[i:b]: an
// escape or a UTF-8 sequence. r is noRune for an invalid byte or a lone
// surrogate escape, n the bytes it takes.
func jsonToken(raw []byte, i, b int) (r rune, n int) {
	c := raw[i]
	switch {
	case c == '\\':
		switch raw[i+1] {
		case 'b':
			return '\b', 2
		case 'f':
			return '\f', 2
		case 'n':
			return '\n', 2
		case 'r':
			return '\r', 2
		case 't':
			return '\t', 2
		case 'u':
			r, n := decodeUEscape(raw[i:b])
			if r == utf8.RuneError && n == 6 {
				if x, _ := hex4(raw[i:b]); x != utf8.RuneError {
					return noRune, 6 // a lone surrogate
				}
			}
			return r, n
		}
		return rune(raw[i+1]), 2
	case c < 0x80:
		return rune(c), 1
	}
	r, n = utf8.DecodeRune(raw[i:b])
	if r == utf8.RuneError && n == 1 {
		return noRune, 1
	}
	return r, n
}

// scan validates the string content raw[a:b] and returns the position of
// the first token to make visible, or -1. It reads the whole content, so
// that a rewrite never meets a malformed escape.
func (w *njWalker) scan(a, b int) (int, error) {
	raw := w.raw
	first := -1
	p2, p1 := rune(noRune), rune(noRune)
	for i := a; i < b; {
		c := raw[i]
		var r rune
		var n int
		switch {
		case c == '\\':
			if i+1 >= b {
				return -1, w.errorf(i, "an escape sequence")
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(raw[i:b]); !ok {
					return -1, w.errorf(i, `\u and four hex digits`)
				}
			default:
				return -1, w.errorf(i+1, "a valid escape character")
			}
			r, n = jsonToken(raw, i, b)
			if r == noRune && first < 0 {
				first = i // a lone surrogate escape
			}
		case c < 0x20:
			return -1, w.errorf(i, "no raw control character inside a string")
		case c < 0x80:
			r, n = rune(c), 1
		default:
			r, n = utf8.DecodeRune(raw[i:b])
			if r == utf8.RuneError && n == 1 {
				r = noRune
				if first < 0 {
					first = i // an invalid byte
				}
			}
		}
		if first < 0 && r != noRune && IsHidden(r) {
			next := rune(noRune)
			if contextual(r) && i+n < b {
				next, _ = jsonToken(raw, i+n, b)
			}
			if hiddenIn(p2, p1, r, next) {
				first = i
			}
		}
		p2, p1 = p1, r
		i += n
	}
	return first, nil
}

// str validates the string value raw[a:b] and, when it needs a change,
// rewrites it.
func (w *njWalker) str(a, b int) error {
	raw := w.raw
	first, err := w.scan(a, b)
	if err != nil || first < 0 {
		return err
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(raw)+64)
	}
	w.out = append(w.out, raw[w.copied:a]...)
	// The whole string is decoded again, for the context of the joiners;
	// the content is valid now.
	p2, p1 := rune(noRune), rune(noRune)
	for i := a; i < b; {
		r, n := jsonToken(raw, i, b)
		hidden := false
		switch {
		case r == noRune:
			// An invalid byte, or a lone surrogate escape: a host that
			// joins two strings (text blocks, say) would pair a high half
			// ending one with a low half starting the next into a
			// character neither showed, an invisible tag character
			// included.
			hidden = true
		case IsHidden(r):
			hidden = true
			if contextual(r) {
				next := rune(noRune)
				if i+n < b {
					next, _ = jsonToken(raw, i+n, b)
				}
				hidden = hiddenIn(p2, p1, r, next)
			}
		}
		switch {
		case hidden && r == noRune && n == 6:
			x, _ := hex4(raw[i:b])
			w.out = appendCodePoint(w.out, x)
			w.n++
		case hidden && r == noRune:
			w.out = appendInvalidByte(w.out, raw[i])
			w.n++
		case hidden:
			w.out = appendCodePoint(w.out, r)
			w.n++
		default:
			w.out = append(w.out, raw[i:i+n]...)
		}
		p2, p1 = p1, r
		i += n
	}
	w.copied = b
	return nil
}
