package guard

import (
	"encoding/binary"
	"math/bits"
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
// reads b in the aligned windows nextHigh reads, 32 bytes at a time where
// there is nothing to see (see scanRange and quiet); the neutraliser's
// look shares the loads and goes token by token (an escape, a UTF-8
// sequence) only where a byte is not printable ASCII. stemAt is len(b)
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
//
// It is the guard's hot loop on a large result (over half the gate's CPU
// on a 1 MB one before it took this shape), so the shape is chosen for the
// generated code. The bytes where nothing is to be seen are passed by
// quiet, 32 at a time, with its state in registers and no calls; each
// block where it stops goes through stemWords and hiddenWords, and quiet
// is entered again after it. Once a look has its answer (a stem, a hidden
// character) it is no longer made.
func scanRange(p *prefilter, b []byte, from, to int) fusedPart {
	n := len(b)
	best, hidden, h := n, -1, from
	uesc := false
	var highs uint64
	skip, backoff := 0, 0
	i := from
	for i+32 <= to {
		stems := best == n
		switch {
		case hidden < 0 && h <= i:
			if skip > 0 {
				skip--
				break
			}
			// Quiet bytes are printable ASCII: highs stay as they are.
			j := quiet(&p.bloom, b, i, to, stems)
			if j == i {
				// Nothing passed, as in text that is not English: the next
				// blocks go the slow way without asking quiet first, one,
				// then three, up to fifteen while it stays so.
				backoff = min(2*backoff+1, 15)
				skip = backoff
			} else {
				backoff = 0
			}
			i, h = j, j
		case hidden >= 0 && stems:
			var hs uint64
			i, hs = quietStems(&p.bloom, b, i, to)
			highs |= hs
		case hidden >= 0:
			// Both looks have their answers; only highs are left.
			for ; i+32 <= to; i += 32 {
				highs |= orWords(b[i : i+32])
			}
		}
		if i+32 > to {
			break
		}
		// The block at i has something to see, or starts inside a token.
		if stems {
			best = stemWords(p, b, i, i+32, best)
		}
		if hidden < 0 {
			h, hidden, uesc = hiddenWords(b, i, i+32, h, uesc)
		}
		highs |= orWords(b[i : i+32])
		i += 32
	}
	for ; i+8 <= to; i += 8 {
		raw := binary.LittleEndian.Uint64(b[i:])
		highs |= raw
		if best == n {
			best = stemWords(p, b, i, i+8, best)
		}
		if hidden < 0 {
			h, hidden, uesc = hiddenWords(b, i, i+8, h, uesc)
		}
	}
	if i < to {
		// Only the last part has a tail: a cut is a multiple of 8.
		var tail [8]byte
		copy(tail[:], b[i:])
		highs |= binary.LittleEndian.Uint64(tail[:])
		for ; i < n; i += 4 {
			// As nextHigh's tail: windows of four, zero-padded.
			if best == n {
				best, _ = p.verify(b, 0, i, binary.LittleEndian.Uint32(tail[i&7:])|0x20202020, best, -1)
			}
		}
	}
	if hidden < 0 && h < to {
		var found bool
		if h, found = hiddenFrom(b, h, to, &uesc); found {
			hidden = h
		}
	}
	return fusedPart{best: best, hidden: hidden, highs: highs, uesc: uesc}
}

// orWords is the OR of the four words of a 32-byte block.
func orWords(q []byte) uint64 {
	q = q[:32]
	return binary.LittleEndian.Uint64(q[0:]) | binary.LittleEndian.Uint64(q[8:]) |
		binary.LittleEndian.Uint64(q[16:]) | binary.LittleEndian.Uint64(q[24:])
}

// Constants of the byte-parallel tests: each is a byte repeated eight times.
const (
	k01 = 0x0101010101010101
	k04 = 0x0404040404040404
	k20 = 0x2020202020202020
	k5c = 0x5C5C5C5C5C5C5C5C // '\\'
	k60 = 0x6060606060606060
	k66 = 0x6666666666666666 // 'f', and 'b' with bit 2 set
	k75 = 0x7575757575757575 // 'u'
	k7f = 0x7F7F7F7F7F7F7F7F
)

// quiet returns the start of the first 32-byte block from i (a token
// start, as every block start it passes is) that quiet cannot pass: one
// where, when stems is set, a window is in the bloom filter, or where a
// byte is not printable ASCII, or is a backslash whose escape could hide
// something or set uesc (\u, \\, \b, \f) or ends the block. A block it
// passes holds no stem window, no byte >= 0x80 and no hidden character,
// and its escapes (\n, \", \t, \/ and the like) end inside it, so that
// the next block starts a token. It stops at the last whole block.
//
// Its bloom test is the one nextHigh makes, per window: the window,
// folded, hashed to a bit of the filter. On amd64 with AVX2 the blocks go
// through quietAVX2 (quiet_amd64.s), which passes exactly the blocks
// quietGo does, eight windows to a gather. Where it stops at a block,
// quiet returns that block's start; where it runs out, quietGo does the
// last block, which the vector loop cannot read one byte past (that byte
// must be inside b: TestScanReadsOnlyItsSlice).
func quiet(bloom *[1 << 12]uint64, b []byte, i, to int, stems bool) int {
	if quietVector {
		// The vector loop reads one byte past each block it passes. It
		// is given at most quietChunk bytes a call: the runtime cannot
		// preempt it in a loop, and this keeps that to some 20 µs.
		end := min(to+1, len(b))
		for end-i >= 33 {
			n := min(end-i, quietChunk)
			k := quietAVX2(bloom, &b[i], n, stems)
			i += k
			if k < n-32 {
				return i // it stopped at a block, where quietGo would
			}
		}
	}
	return quietGo(bloom, b, i, to, stems)
}

// quietChunk is the most quiet hands the vector loop at once.
const quietChunk = 128 << 10

// quietGo is quiet's loop in Go, and the whole of it where there is no
// vector loop (see quietVector).
func quietGo(bloom *[1 << 12]uint64, b []byte, i, to int, stems bool) int {
	for ; i+32 <= to; i += 32 {
		q := b[i : i+32 : i+32]
		r0 := binary.LittleEndian.Uint64(q[0:])
		r1 := binary.LittleEndian.Uint64(q[8:])
		r2 := binary.LittleEndian.Uint64(q[16:])
		r3 := binary.LittleEndian.Uint64(q[24:])
		if stems {
			w0, w1, w2, w3 := r0|k20, r1|k20, r2|k20, r3|k20
			x0, x1 := uint32(w0)*0x9E3779B1, uint32(w0>>32)*0x9E3779B1
			x2, x3 := uint32(w1)*0x9E3779B1, uint32(w1>>32)*0x9E3779B1
			x4, x5 := uint32(w2)*0x9E3779B1, uint32(w2>>32)*0x9E3779B1
			x6, x7 := uint32(w3)*0x9E3779B1, uint32(w3>>32)*0x9E3779B1
			// bloomHash(w) is x>>14: its word is x>>20, its bit x>>14&63.
			bl := bloom[x0>>20]>>(x0>>14&63) | bloom[x1>>20]>>(x1>>14&63) |
				bloom[x2>>20]>>(x2>>14&63) | bloom[x3>>20]>>(x3>>14&63) |
				bloom[x4>>20]>>(x4>>14&63) | bloom[x5>>20]>>(x5>>14&63) |
				bloom[x6>>20]>>(x6>>14&63) | bloom[x7>>20]>>(x7>>14&63)
			if bl&1 != 0 {
				return i
			}
		}
		// notPlain of the four words at once: ^x | ^y is ^(x & y).
		ac := (r0 + k60) & ((r0 ^ k5c) + k7f) & (r1 + k60) & ((r1 ^ k5c) + k7f) &
			(r2 + k60) & ((r2 ^ k5c) + k7f) & (r3 + k60) & ((r3 ^ k5c) + k7f)
		wb := r0 | r1 | r2 | r3 | (r0 + k01) | (r1 + k01) | (r2 + k01) | (r3 + k01)
		if (wb|^ac)&hi8 == 0 {
			continue
		}
		if !plainEscapes(r0, r1, r2, r3) {
			return i
		}
	}
	return i
}

// plainEscapes reports whether the only bytes of the block r0..r3 that
// are not printable ASCII are backslashes, each followed in the block by
// a byte that makes an escape the neutraliser's walk passes without a look
// and without setting uesc: anything but 'u', '\\', 'b' and 'f'. With no
// byte >= 0x80 no sum below carries, so every mask is exact byte by byte.
func plainEscapes(r0, r1, r2, r3 uint64) bool {
	if (r0|r1|r2|r3)&hi8 != 0 {
		return false
	}
	// Controls and DEL: (w+1) has the high bit for 0x7F, ^(w+0x60) for
	// bytes below 0x20.
	bad := (r0 + k01) | (r1 + k01) | (r2 + k01) | (r3 + k01) |
		^((r0 + k60) & (r1 + k60) & (r2 + k60) & (r3 + k60))
	s0, f0 := escapeMasks(r0)
	s1, f1 := escapeMasks(r1)
	s2, f2 := escapeMasks(r2)
	s3, f3 := escapeMasks(r3)
	// A backslash's follower is the next byte: the mask shifted by one
	// byte, the top byte carried into the next word. One at the end of
	// the block has its follower beyond it.
	bad |= f0&(s0<<8) | f1&(s1<<8|s0>>56) | f2&(s2<<8|s1>>56) | f3&(s3<<8|s2>>56) | s3>>56
	return bad&hi8 == 0
}

// escapeMasks returns, for a word of ASCII, the high bit of each byte
// that is a backslash, and of each byte that is 'u', '\\', 'b' or 'f'.
func escapeMasks(w uint64) (s, f uint64) {
	c := (w ^ k5c) + k7f
	s = ^c & hi8
	f = ^(c & ((w ^ k75) + k7f) & (((w | k04) ^ k66) + k7f)) & hi8
	return s, f
}

// quietStems is quiet for the stem look alone, once the neutraliser's has
// its answer: it also returns the OR of the words it passed.
func quietStems(bloom *[1 << 12]uint64, b []byte, i, to int) (int, uint64) {
	var highs uint64
	for ; i+32 <= to; i += 32 {
		q := b[i : i+32 : i+32]
		r0 := binary.LittleEndian.Uint64(q[0:])
		r1 := binary.LittleEndian.Uint64(q[8:])
		r2 := binary.LittleEndian.Uint64(q[16:])
		r3 := binary.LittleEndian.Uint64(q[24:])
		w0, w1, w2, w3 := r0|k20, r1|k20, r2|k20, r3|k20
		x0, x1 := uint32(w0)*0x9E3779B1, uint32(w0>>32)*0x9E3779B1
		x2, x3 := uint32(w1)*0x9E3779B1, uint32(w1>>32)*0x9E3779B1
		x4, x5 := uint32(w2)*0x9E3779B1, uint32(w2>>32)*0x9E3779B1
		x6, x7 := uint32(w3)*0x9E3779B1, uint32(w3>>32)*0x9E3779B1
		bl := bloom[x0>>20]>>(x0>>14&63) | bloom[x1>>20]>>(x1>>14&63) |
			bloom[x2>>20]>>(x2>>14&63) | bloom[x3>>20]>>(x3>>14&63) |
			bloom[x4>>20]>>(x4>>14&63) | bloom[x5>>20]>>(x5>>14&63) |
			bloom[x6>>20]>>(x6>>14&63) | bloom[x7>>20]>>(x7>>14&63)
		if bl&1 != 0 {
			return i, highs
		}
		highs |= r0 | r1 | r2 | r3
	}
	return i, highs
}

// stemWords is the stem look over the aligned words of b[i:end], as
// nextHigh makes it: each window the bloom filter holds is verified. It
// returns the start of a stem found, or best.
func stemWords(p *prefilter, b []byte, i, end, best int) int {
	for ; i < end && best == len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:]) | k20
		lo, hi := uint32(w), uint32(w>>32)
		// A window the filter does not hold is no key of the exact
		// table either: only the windows it holds are verified.
		if xl := bloomHash(lo); p.bloom[xl>>6]&(1<<(xl&63)) != 0 {
			best, _ = p.verify(b, 0, i, lo, best, -1)
		}
		if xh := bloomHash(hi); p.bloom[xh>>6]&(1<<(xh&63)) != 0 {
			best, _ = p.verify(b, 0, i+4, hi, best, -1)
		}
	}
	return best
}

// hiddenWords is the neutraliser's look over the aligned words of
// b[i:end] from the token start h. It returns the next token start, the
// first hidden token's start or -1, and uesc updated, as hiddenFrom does.
// A word of printable ASCII without a backslash is passed whole. A word of
// ASCII with a backslash or a control is read from its notPlain mask,
// which is exact byte by byte when no byte is >= 0x80 (no sum carries), so
// only the flagged bytes are looked at. Any other word goes token by token.
func hiddenWords(b []byte, i, end, h int, uesc bool) (int, int, bool) {
	for ; i < end; i += 8 {
		if h >= i+8 {
			continue
		}
		w := binary.LittleEndian.Uint64(b[i:])
		m := notPlain(w)
		if m == 0 && h <= i {
			h = i + 8
			continue
		}
		if w&hi8 != 0 {
			at, found := hiddenFrom(b, max(h, i), i+8, &uesc)
			if found {
				return at, at, uesc
			}
			h = at
			continue
		}
		for ; m != 0; m &= m - 1 {
			at := i + bits.TrailingZeros64(m)>>3
			if at < h {
				continue // the byte after a backslash
			}
			switch c := b[at]; {
			case c == '\\':
				if at+1 < len(b) && (b[at+1] == 'u' || b[at+1] == '\\') {
					uesc = true
				}
				if escHidden(b[at:]) {
					return at, at, uesc
				}
				h = at + 2
			case hiddenLead[c]:
				// An ASCII control other than tab, LF and CR, or DEL.
				return at, at, uesc
			}
		}
		h = max(h, i+8)
	}
	return h, -1, uesc
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
