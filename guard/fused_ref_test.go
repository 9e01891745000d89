package guard

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

// The scan as it was before the single-core rewrite (scanRange with its
// state in a struct, sixteen bytes per step), kept only as the reference
// the differential tests hold the new one to: same stems found or not,
// same high, uesc and hidden.

// scanFusedRef is scanFusedAt with the reference pass, read whole.
func scanFusedRef(p *prefilter, b []byte) (stemAt int, high, uesc bool, hidden int) {
	r := scanRangeRef(p, b, 0, len(b))
	high = r.highs&hi8 != 0
	hidden = r.hidden
	if high && !utf8.Valid(b) {
		hidden = firstHiddenJSON(b)
	}
	uesc = r.uesc
	if hidden >= 0 {
		uesc = true
	}
	return r.best, high, uesc, hidden
}

func scanRangeRef(p *prefilter, b []byte, from, to int) fusedPart {
	n := len(b)
	st := refState{p: p, b: b, best: n, hidden: -1, h: from}
	var highs uint64
	i := from
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
		var tail [8]byte
		copy(tail[:], b[i:])
		highs |= binary.LittleEndian.Uint64(tail[:])
		for ; i < n; i += 4 {
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

type refState struct {
	p      *prefilter
	b      []byte
	best   int
	hidden int
	h      int
	uesc   bool
}

func (st *refState) word(i int, raw uint64) {
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

// BenchmarkScanFused is the fused pass alone on 1 MB inputs of several
// shapes, the reference pass beside the current one in the same process
// (A/B without a second binary): plain "x" (the gate bench's blob), prose
// with "\n" escapes, records, a result whose one stem sits in the middle,
// one with a stem in every record, and non-ASCII text.
func BenchmarkScanFused(b *testing.B) {
	inputs := []struct {
		name string
		b    []byte
	}{
		{"x", []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`)},
		{"prose", []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`The quick brown fox jumps over the lazy dog, 42 times.\n`, (1<<20)/56) + `"}]}`)},
		{"text", benchInputs["text-1MB"]},
		{"json", benchInputs["json-1MB"]},
		{"one-stem", benchInputs["text-1MB-one-stem"]},
		{"github", benchInputs["json-1MB-github"]},
		{"non-ascii", textResult(strings.Repeat("Grüße — naïve café “quoted” ", 1<<20/36))},
	}
	for _, in := range inputs {
		for _, impl := range []struct {
			name string
			scan func(*prefilter, []byte) (int, bool, bool, int)
		}{{"ref", scanFusedRef}, {"new", func(p *prefilter, b []byte) (int, bool, bool, int) { return scanFusedAt(p, b, 0) }}} {
			b.Run(in.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.b)))
				for b.Loop() {
					impl.scan(pf(), in.b)
				}
			})
		}
	}
}
