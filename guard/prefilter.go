package guard

import (
	"bytes"
	"encoding/binary"
	"sync"
)

// stemCat says what a stem is evidence of.
type stemCat uint8

const (
	// catVocab stems are approval vocabulary: they trigger the prose check
	// as well as the structural one.
	catVocab stemCat = iota + 1
	// catShape stems only occur in structural shapes (keys, method names).
	catShape
	// catDialog stems occur in the hosts' permission dialogs: they trigger
	// the dialog check only (see dialog.go).
	catDialog
)

// stems is the complete list of trigger stems, lower-case, matched ASCII
// case-insensitively. Every rule of the detector needs at least one of them
// in the object or sentence it flags; TestVocabularyHasStems enforces that,
// which is what makes skipping stem-free results safe.
//
// The prefilter needs stems of at least five bytes (see newPrefilter).
var stems = []struct {
	text string
	cat  stemCat
}{
	{"approv", catVocab}, // approve, approval, approved, approving
	{"permi", catVocab},  // permission, permit, permitted, permissive
	{"authori", catVocab},
	{"consent", catVocab},
	{"confirm", catVocab},
	{"grant", catVocab},
	{"allow", catVocab},
	{"accept", catVocab},
	{"elicit", catShape},
	{"decision", catShape},
	{"behavio", catShape}, // behavior, behaviour
	{"sampling", catShape},
	{"roots/", catShape},
	{`roots\`, catShape}, // "roots\/list": JSON may escape the solidus
	{"requestedschema", catShape},
	{"executet", catShape},  // executeToolName
	{"execute_t", catShape}, // execute_tool_name
	{"execute-t", catShape}, // execute-tool-name
	{"can_use_t", catShape}, // can_use_tool
	{"can-use-t", catShape}, // can-use-tool
	{"canuset", catShape},   // canUseTool
	{"requestu", catShape},  // requestUserInput
	{"request_u", catShape}, // request_user_input
	{"request-u", catShape}, // request-user-input
	// Host permission dialogs; every one is also a trigger of the dialog
	// check, and catVocab stems are too.
	{"proceed", catDialog},     // "Do you want to proceed?", "Yes, proceed (y)"
	{"ask again", catDialog},   // "don't ask again"
	{"differently", catDialog}, // "tell Claude what to do differently"
	{"(esc)", catDialog},       // "No, suggest changes (esc)", in any language
	{"yes, ", catDialog},       // "Yes, and ...", "Yes, allow once"
	{"1. yes", catDialog},
	{"1) yes", catDialog},
	{" yes\n", catDialog}, // an option "Yes" at the end of its line, however it is numbered
	{" yes\r", catDialog},
	{" yes\\", catDialog}, // ... inside a JSON string: "1.  Yes\n"
	{" yes\"", catDialog},
	{"claude", catDialog}, // translated dialogs keep the host's name
	{"gemini", catDialog},
	// Not "codex": its windows include "code", which tool output is full
	// of, and Codex's dialogs carry "proceed", "yes, " and "(esc)".
}

// stemAlphabet holds the bytes that occur in stems in either case. A \uXXXX
// escape of one of them can hide a stem from the raw-byte prefilter.
var stemAlphabet [128]bool

// pf returns the prefilter, built from stems on first use rather than at
// package initialisation: a process that runs one command, or a gate that
// never sees a result, need not pay for it. The build takes some 60 µs
// and 100 KB (BenchmarkNewPrefilter), so the gate no longer builds it
// ahead on a goroutine of its own: the first result inspected pays it.
// Prepare still builds it ahead for a caller that wants to.
var pf = sync.OnceValue(newPrefilter)

// Prepare builds the guard's tables now, so that the first result
// inspected does not wait for them. The gate calls it on a goroutine of
// its own while it starts; calling it is never required.
func Prepare() { pf() }

func init() {
	for _, s := range stems {
		for i := 0; i < len(s.text); i++ {
			c := s.text[i]
			stemAlphabet[c] = true
			if 'a' <= c && c <= 'z' {
				stemAlphabet[c-'a'+'A'] = true
			}
		}
	}
}

// prefilter finds stem occurrences case-insensitively in about one table
// probe per four bytes.
//
// Why not bytes.Index per stem: it is fast only for a rare first byte, and
// a case-insensitive search would need every case variant of every stem.
// Instead the input is read as aligned 4-byte windows, folded to lower case
// with a single OR (b|0x20 maps 'A'-'Z' onto 'a'-'z'; it also aliases some
// punctuation, which only adds false candidates that verification removes).
// Every occurrence of a stem of length >= 5 fully covers, or covers all but
// one byte of, the aligned window that starts at most 3 bytes into it, so
// each stem contributes one window per alignment, a missing byte being a
// wildcard expanded to all 128 folded values. A 2^18-bit bloom filter
// (32 KiB, L1/L2 resident) rejects almost every window; the rare survivors
// are looked up in an exact table and verified against the input.
type prefilter struct {
	stems [][]byte
	cats  []stemCat
	bloom [1 << 12]uint64
	// The exact table: open addressing over keys; slot h holds the
	// candidates cands[off[h]:off[h+1]]; key 0 marks an empty slot (every
	// window has bit 5 set in each byte, so none is 0). One flat array
	// rather than a slice per slot keeps the build to a few allocations and
	// the table to 6 bytes a slot.
	keys  []uint32
	off   []uint16 // len(keys)+1
	cands []pfCand
	mask  uint32
	shift uint32 // 32 - log2(len(keys))
}

func (p *prefilter) slot(w uint32) uint32 { return (w * 0x85EBCA6B) >> p.shift }

type pfCand struct {
	stem uint8
	off  int8 // window start minus stem start
}

// Both hashes keep the top bits of a multiplicative hash, which depend on
// every input byte; the low or middle bits would ignore the top byte and
// put all 128 wildcard expansions of a window in one probe chain.
func bloomHash(w uint32) uint32 { return (w * 0x9E3779B1) >> 14 }

// pfWindow is one stem's window at one alignment: the folded bytes it
// fixes and, when it reaches one byte past the stem, which byte is the
// wildcard (expanded to the 128 folded values b|0x20).
type pfWindow struct {
	fixed  uint32
	wildAt int8 // -1: none
	cand   pfCand
}

// each calls f for every (window, candidate) pair pw expands to. No pair
// repeats across windows: a stem's four alignments have distinct offsets,
// and a wildcard's expansions are distinct windows.
func (pw pfWindow) each(f func(w uint32, c pfCand)) {
	if pw.wildAt < 0 {
		f(pw.fixed, pw.cand)
		return
	}
	for b := uint32(0x20); b < 0x100; b++ {
		if b&0x20 != 0 {
			f(pw.fixed|b<<(8*uint32(pw.wildAt)), pw.cand)
		}
	}
}

// newPrefilter builds the tables in two passes over the expanded windows
// (about 3.6k pairs): the first places each distinct window in the open
// addressing table and counts its candidates; a prefix sum turns the
// counts into run ends; the second fills the runs back to front. Without
// a map and a slice per window the build takes a tenth of the CPU and an
// eighth of the heap it did (BenchmarkNewPrefilter), cheap enough to run
// at first use.
func newPrefilter() *prefilter {
	p := &prefilter{}
	windows := make([]pfWindow, 0, 4*len(stems))
	pairs := 0
	for si, st := range stems {
		s := []byte(st.text)
		if len(s) < 5 {
			panic("guard: stem shorter than 5 bytes: " + st.text)
		}
		p.stems = append(p.stems, s)
		p.cats = append(p.cats, st.cat)
		for align := 0; align < 4; align++ {
			// The window offsets j (relative to the stem start) that are
			// aligned for a stem starting at align mod 4; pick the one that
			// leaves the fewest bytes outside the stem.
			bestJ, bestWild := 0, 5
			for j := -3; j <= 3; j++ {
				if (j+align)&3 != 0 {
					continue
				}
				wild := 0
				for k := 0; k < 4; k++ {
					if j+k < 0 || j+k >= len(s) {
						wild++
					}
				}
				if wild < bestWild {
					bestJ, bestWild = j, wild
				}
			}
			pw := pfWindow{wildAt: -1, cand: pfCand{stem: uint8(si), off: int8(bestJ)}}
			for k := 0; k < 4; k++ {
				if bestJ+k < 0 || bestJ+k >= len(s) {
					pw.wildAt = int8(k)
					continue
				}
				pw.fixed |= uint32(s[bestJ+k]|0x20) << (8 * k)
			}
			windows = append(windows, pw)
			if pw.wildAt < 0 {
				pairs++
			} else {
				pairs += 128
			}
		}
	}
	if pairs >= 1<<16 {
		panic("guard: too many prefilter windows for 16-bit offsets")
	}
	// At most half full (there are fewer distinct windows than pairs), so
	// probe chains stay short (TestPrefilterProbeChains).
	n, bits := 1, uint32(0)
	for n < 2*pairs {
		n <<= 1
		bits++
	}
	p.mask, p.shift = uint32(n-1), 32-bits
	p.keys = make([]uint32, n)
	p.off = make([]uint16, n+1)
	// Pass 1: place each window; off[h] counts the candidates of slot h.
	for _, pw := range windows {
		pw.each(func(w uint32, _ pfCand) {
			h := p.slot(w)
			for p.keys[h] != 0 && p.keys[h] != w {
				h = (h + 1) & p.mask
			}
			p.keys[h] = w
			p.off[h]++
		})
	}
	// off[h] becomes the end of slot h's run.
	var sum uint16
	for h := range n {
		sum += p.off[h]
		p.off[h] = sum
	}
	p.off[n] = sum
	// Pass 2, in reverse so that each run ends up in stem order: step the
	// end back and place, which leaves off[h] at the start of slot h's run.
	p.cands = make([]pfCand, sum)
	for i := len(windows) - 1; i >= 0; i-- {
		windows[i].each(func(w uint32, c pfCand) {
			h := p.slot(w)
			for p.keys[h] != w {
				h = (h + 1) & p.mask
			}
			p.off[h]--
			p.cands[p.off[h]] = c
		})
	}
	for _, w := range p.keys {
		if w != 0 {
			x := bloomHash(w)
			p.bloom[x>>6] |= 1 << (x & 63)
		}
	}
	return p
}

func (p *prefilter) lookup(w uint32) []pfCand {
	for h := p.slot(w); p.keys[h] != 0; h = (h + 1) & p.mask {
		if p.keys[h] == w {
			return p.cands[p.off[h]:p.off[h+1]]
		}
	}
	return nil
}

// next returns the smallest start >= from of a stem occurrence in b and the
// stem's index, or (len(b), -1) when there is none.
func (p *prefilter) next(b []byte, from int) (int, int) {
	pos, stem, _ := p.nextHigh(b, from)
	return pos, stem
}

// nextHigh is next that also reports whether a byte >= 0x80 was seen. When
// no stem is found every byte from the aligned start before from was seen,
// so high false then means the rest of b is ASCII; after a hit it is
// meaningless. It costs one OR per eight bytes, which lets mayHold skip
// the look for folded characters (fold.go) in ASCII results.
func (p *prefilter) nextHigh(b []byte, from int) (int, int, bool) {
	best, bestStem := len(b), -1
	var high uint64
	i := from - 4
	if i < 0 {
		i = 0
	}
	i &^= 3
	// A window at i can only yield starts >= i-3, so once i passes
	// best+3 nothing earlier can turn up.
	for ; i+8 <= len(b) && i <= best+3; i += 8 {
		raw := binary.LittleEndian.Uint64(b[i:])
		high |= raw
		w := raw | 0x2020202020202020
		lo, hi := uint32(w), uint32(w>>32)
		xl, xh := bloomHash(lo), bloomHash(hi)
		if p.bloom[xl>>6]&(1<<(xl&63))|p.bloom[xh>>6]&(1<<(xh&63)) == 0 {
			continue
		}
		best, bestStem = p.verify(b, from, i, lo, best, bestStem)
		best, bestStem = p.verify(b, from, i+4, hi, best, bestStem)
	}
	var tail [4]byte
	for ; i < len(b) && i <= best+3; i += 4 {
		n := copy(tail[:], b[i:])
		clear(tail[n:])
		raw := binary.LittleEndian.Uint32(tail[:])
		high |= uint64(raw)
		best, bestStem = p.verify(b, from, i, raw|0x20202020, best, bestStem)
	}
	return best, bestStem, high&hi8 != 0
}

func (p *prefilter) verify(b []byte, from, pos int, w uint32, best, bestStem int) (int, int) {
	for _, c := range p.lookup(w) {
		st := pos - int(c.off)
		s := p.stems[c.stem]
		if st < from || st >= best || st+len(s) > len(b) {
			continue
		}
		if equalFoldASCII(b[st:st+len(s)], s) {
			best, bestStem = st, int(c.stem)
		}
	}
	return best, bestStem
}

// equalFoldASCII reports whether b equals the lower-case stem s under ASCII
// case folding.
func equalFoldASCII(b, s []byte) bool {
	for i, c := range s {
		x := b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != c {
			return false
		}
	}
	return true
}

// hitCursor answers "is there a stem occurrence starting in [a, b)?" for
// queries whose lower bound a never decreases (or rarely does), scanning each
// byte of the buffer about once overall.
type hitCursor struct {
	data []byte
	from int // the query bound the cached answer is for
	pos  int // cached: first occurrence start >= from (len(data) if none)
	stem int
}

func newHitCursor(data []byte) hitCursor {
	return hitCursor{data: data, from: -1}
}

// next returns the first stem occurrence starting at or after from.
func (c *hitCursor) next(from int) (pos, stem int) {
	if c.from < 0 || from < c.from || from > c.pos {
		c.scan(from)
	}
	return c.pos, c.stem
}

func (c *hitCursor) scan(from int) {
	c.pos, c.stem = pf().next(c.data, from)
	c.from = from
}

// any is small enough to inline: the cached answer serves most queries.
func (c *hitCursor) any(a, b int) bool {
	if c.from < 0 || a < c.from || a > c.pos {
		c.scan(a)
	}
	return c.pos < b
}

// escCursor finds \uXXXX escapes that decode to a byte of the stem alphabet;
// such an escape can hide a stem ("\u0061pprove") from the raw-byte
// prefilter. Escapes of other characters (Go escapes <, > and & as \u003c,
// \u003e, \u0026; Python escapes all non-ASCII) cannot, and are ignored so
// that they do not force the slow path.
type escCursor struct {
	data []byte
	from int
	pos  int
	// withFolds makes an escape of a folded character (\u00a0, \uff41;
	// see fold.go) count as one that can hide a stem: " yes," spelt with
	// an escaped no-break space holds none the prefilter can see.
	withFolds bool
	// fold says the last scan passed an escape of a folded character
	// (only without withFolds).
	fold bool
}

func newEscCursor(data []byte) escCursor { return escCursor{data: data, from: -1} }

func newEscFoldCursor(data []byte) escCursor {
	return escCursor{data: data, from: -1, withFolds: true}
}

func (c *escCursor) next(from int) int {
	if c.from >= 0 && from >= c.from && from <= c.pos {
		return c.pos
	}
	c.scan(from)
	return c.pos
}

func (c *escCursor) scan(from int) {
	c.from = from
	c.pos = len(c.data)
	c.fold = false
	for i := from; i < len(c.data); {
		j := bytes.Index(c.data[i:], []byte(`\u`))
		if j < 0 {
			break
		}
		i += j
		if r, ok := hex4(c.data[i:]); ok {
			if r < 128 && stemAlphabet[r] {
				c.pos = i
				break
			}
			if r >= 128 && foldByte(r) != 0 {
				if c.withFolds {
					c.pos = i
					break
				}
				c.fold = true
			}
		}
		i += 2
	}
}

func (c *escCursor) any(a, b int) bool {
	if c.from < 0 || a < c.from || a > c.pos {
		c.scan(a)
	}
	return c.pos < b
}
