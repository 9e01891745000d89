package guard

import (
	"encoding/binary"
	"runtime"
	"unicode/utf8"
)

// A Scan is what one pass over a result found for both of the guard's
// jobs: whether the detector's prefilter saw a trigger stem, and where the
// neutraliser's first hidden character is. A large result is then read
// once at memory speed instead of twice (InspectResult's prefilter, then
// NeutralizeJSON's), and a result with neither is passed after that one
// pass. The verdicts are those of InspectResult and NeutralizeJSON, exactly:
// InspectScanned and NeutralizeScanned only skip the passes the Scan has
// already made.
type Scan struct {
	n      int  // len of the scanned input, to catch a Scan used on other bytes
	stem   bool // the prefilter found a stem occurrence
	high   bool // a byte >= 0x80 (meaningful only when stem is false)
	uesc   bool // a "\u" (meaningful only when stem is false)
	hidden int  // firstHiddenJSON's answer: -1 for none
}

// ScanResult makes the one pass over raw that InspectScanned and
// NeutralizeScanned share.
func ScanResult(raw []byte) Scan {
	stemAt, high, uesc, hidden := scanFused(pf(), raw)
	return Scan{n: len(raw), stem: stemAt < len(raw), high: high, uesc: uesc, hidden: hidden}
}

// Clean reports that neither the detector nor the neutraliser has
// anything to look at in the scanned result: no stem, no escape that could
// hide one, no byte that could read as one once folded, and no hidden
// character. InspectScanned then returns nil and NeutralizeScanned the
// input unchanged, without further passes.
func (s Scan) Clean() bool { return !s.stem && !s.high && !s.uesc && s.hidden < 0 }

// Hidden reports that the scanned input holds a hidden character, an
// escape of one or invalid UTF-8: NeutralizeScanned then walks it.
func (s Scan) Hidden() bool { return s.hidden >= 0 }

// InspectScanned is InspectResult for a result already scanned by
// ScanResult; sc must be the Scan of these very bytes.
func InspectScanned(result []byte, sc Scan) []Finding {
	if sc.n != len(result) {
		panic("guard: InspectScanned given the Scan of other bytes")
	}
	if !sc.stem && !mayHoldRest(result, sc.high, sc.uesc) {
		return nil
	}
	return inspectHeld(result)
}

// NeutralizeScanned is NeutralizeJSON for raw already scanned by
// ScanResult; sc must be the Scan of these very bytes.
func NeutralizeScanned(raw []byte, sc Scan) ([]byte, int, error) {
	if sc.n != len(raw) {
		panic("guard: NeutralizeScanned given the Scan of other bytes")
	}
	if sc.hidden < 0 {
		return raw, 0, nil
	}
	return neutralizeFrom(raw)
}

// scanFused is, in one pass over b, the prefilter's nextHigh(b, 0) (does a
// stem occur, and is there a byte >= 0x80) and firstHiddenJSON(b). It
// reads b in aligned 8-byte words, as nextHigh does; the neutraliser's look
// shares each word's load and skips a word of printable ASCII without a
// backslash, as firstHiddenJSON does, and goes byte by byte (token by
// token: an escape, a UTF-8 sequence) only elsewhere. stemAt is len(b)
// when no stem occurs, else the start of some occurrence (not necessarily
// the first: the detector only asks whether there is one). high and uesc
// are exact when no stem occurs; after one they are only true or unknown.
func scanFused(p *prefilter, b []byte) (stemAt int, high, uesc bool, hidden int) {
	return scanFusedAt(p, b, splitPoint(b))
}

// scanFusedAt is scanFused with b cut in two at cut (see splitPoint), or
// read whole when cut is 0.
func scanFusedAt(p *prefilter, b []byte, cut int) (stemAt int, high, uesc bool, hidden int) {
	n := len(b)
	var r fusedPart
	if cut > 0 {
		// Two halves on two cores: the second from a token boundary, so
		// that each half's walk is the whole walk's over its bytes.
		var second fusedPart
		done := make(chan struct{})
		go func() {
			defer close(done)
			second = scanRange(p, b, cut, n)
		}()
		r = scanRange(p, b, 0, cut)
		<-done
		if r.best == n {
			r.best = second.best
		}
		if r.hidden < 0 {
			r.hidden = second.hidden
		}
		r.highs |= second.highs
		r.uesc = r.uesc || second.uesc
	} else {
		r = scanRange(p, b, 0, n)
	}
	high = r.highs&hi8 != 0
	hidden = r.hidden
	if high && !utf8.Valid(b) {
		// Rare: the token walk above assumed valid UTF-8; find the first
		// invalid byte or hidden character exactly.
		hidden = firstHiddenJSON(b)
	}
	uesc = r.uesc
	if hidden >= 0 {
		// The walk stopped looking for escapes at the hidden character:
		// say there may be one after it.
		uesc = true
	}
	return r.best, high, uesc, hidden
}

// splitScanBytes is the input size from which scanFused reads two halves
// at once, when the process may run on more than one core; below it a
// goroutine costs more than it saves. A variable for the tests.
var splitScanBytes = 256 << 10

// splitPoint returns where scanFused may cut b in two, or 0 for no cut: an
// offset that is a multiple of 8 (the halves read the same aligned words
// the whole would) and a token boundary (the halves' walks are the whole
// walk's). The end of a word of printable ASCII without a backslash is
// one: no UTF-8 sequence continues into ASCII, and an escape, at most six
// bytes, cannot start before such a word and end after it.
func splitPoint(b []byte) int {
	if len(b) < splitScanBytes || runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	for i := len(b) / 2 &^ 7; i+8 <= len(b)-len(b)/8; i += 8 {
		if notPlain(binary.LittleEndian.Uint64(b[i:])) == 0 {
			return i + 8
		}
	}
	return 0
}

// fusedPart is what scanRange found in its part of the input.
type fusedPart struct {
	best   int    // a stem's start, len(b) for none
	hidden int    // the first hidden token's start in the part, -1 for none
	highs  uint64 // the OR of the part's words
	uesc   bool
}

// scanRange is scanFused's pass over b[from:to]: from is a token boundary
// and a multiple of 8, and to is one too or len(b). Stems are looked for
// in the aligned windows that start in the part (verified against all of
// b), hidden characters from from on.
func scanRange(p *prefilter, b []byte, from, to int) fusedPart {
	n := len(b)
	st := fusedState{p: p, b: b, best: n, hidden: -1, h: from}
	var highs uint64
	i := from
	// Sixteen bytes at a time while there is nothing to see: no stem
	// candidate in the bloom filter, and only printable ASCII without a
	// backslash. Anything else goes word by word through st.word.
	for ; i+16 <= to; i += 16 {
		r0 := binary.LittleEndian.Uint64(b[i:])
		r1 := binary.LittleEndian.Uint64(b[i+8:])
		highs |= r0 | r1
		if st.best == n && st.hidden < 0 && st.h <= i {
			w0, w1 := r0|0x2020202020202020, r1|0x2020202020202020
			x0, x1 := bloomHash(uint32(w0)), bloomHash(uint32(w0>>32))
			x2, x3 := bloomHash(uint32(w1)), bloomHash(uint32(w1>>32))
			bl := p.bloom[x0>>6]&(1<<(x0&63)) | p.bloom[x1>>6]&(1<<(x1&63)) |
				p.bloom[x2>>6]&(1<<(x2&63)) | p.bloom[x3>>6]&(1<<(x3&63))
			if bl|notPlain(r0)|notPlain(r1) == 0 {
				st.h = i + 16
				continue
			}
		}
		st.word(i, r0)
		st.word(i+8, r1)
	}
	for ; i+8 <= to; i += 8 {
		raw := binary.LittleEndian.Uint64(b[i:])
		highs |= raw
		st.word(i, raw)
	}
	if i < to {
		// Only the last part has a tail: a cut is a multiple of 8.
		var tail [8]byte
		copy(tail[:], b[i:])
		highs |= binary.LittleEndian.Uint64(tail[:])
		for ; i < n; i += 4 {
			// As nextHigh's tail: windows of four, zero-padded.
			if st.best == n {
				st.best, _ = p.verify(b, 0, i, binary.LittleEndian.Uint32(tail[i&7:])|0x20202020, st.best, -1)
			}
		}
	}
	if st.hidden < 0 && st.h < to {
		if at, found := hiddenFrom(b, st.h, to, &st.uesc); found {
			st.hidden = at
		}
	}
	return fusedPart{best: st.best, hidden: st.hidden, highs: highs, uesc: st.uesc}
}

// notPlain is zero when all eight bytes of w are printable ASCII other
// than a backslash: plainASCII(w) && !hasByte(w, '\\') in one mask.
func notPlain(w uint64) uint64 {
	// Each sum is carry-free while every byte is below 0x80, and a byte
	// that is not sets its own high bit in w: so byte by byte, a's high
	// bit says >= 0x20, b's == 0x7F, c's != '\\'.
	a := w + 0x6060606060606060
	b := w + 0x0101010101010101
	c := (w ^ 0x5C5C5C5C5C5C5C5C) + 0x7F7F7F7F7F7F7F7F
	return (w | b | ^(a & c)) & hi8
}

// fusedState is scanFused's state between words.
type fusedState struct {
	p      *prefilter
	b      []byte
	best   int  // a stem's start, len(b) while none is found
	hidden int  // the first hidden token's start, -1 while none is found
	h      int  // the neutraliser's next token start, while hidden < 0
	uesc   bool // a "\\u" or an escaped backslash seen (while hidden < 0)
}

// word is one aligned word's share of both looks.
func (st *fusedState) word(i int, raw uint64) {
	if st.best == len(st.b) {
		w := raw | 0x2020202020202020
		lo, hi := uint32(w), uint32(w>>32)
		xl, xh := bloomHash(lo), bloomHash(hi)
		if st.p.bloom[xl>>6]&(1<<(xl&63))|st.p.bloom[xh>>6]&(1<<(xh&63)) != 0 {
			st.best, _ = st.p.verify(st.b, 0, i, lo, st.best, -1)
			st.best, _ = st.p.verify(st.b, 0, i+4, hi, st.best, -1)
		}
	}
	if st.hidden >= 0 || st.h >= i+8 {
		return
	}
	if notPlain(raw) == 0 {
		st.h = i + 8
		return
	}
	h, found := hiddenFrom(st.b, max(st.h, i), i+8, &st.uesc)
	st.h = h
	if found {
		st.hidden = h
	}
}

// hiddenFrom goes token by token from i, at a token start, to at least
// end, as firstHiddenJSON's inner loop does for valid UTF-8. It returns
// the start of the first hidden token and true, or where it stopped and
// false. It sets *uesc when it passes a backslash that may begin a \u
// escape, or an escaped backslash (after which a "\u" that is no escape
// follows, which escCursor also stops at).
func hiddenFrom(raw []byte, i, end int, uesc *bool) (int, bool) {
	for i < end {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 < len(raw) && (raw[i+1] == 'u' || raw[i+1] == '\\') {
				*uesc = true
			}
			if escHidden(raw[i:]) {
				return i, true
			}
			i += 2
		case hiddenLead[c]:
			r, size := utf8.DecodeRune(raw[i:])
			if IsHidden(r) {
				return i, true
			}
			i += size
		default:
			i++
		}
	}
	return i, false
}
