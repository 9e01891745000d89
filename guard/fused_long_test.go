package guard

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
)

// The differential tests against the two passes themselves (checkFused)
// read short inputs, where quiet passes few blocks, and the long ones are
// held only to the previous scan. Here long inputs, mostly text quiet
// passes, carry escapes that end, straddle or follow block and chunk ends
// (backslash chains before 'u', '"', 'n', 'b'; an escaped backslash before
// "u202e"; a lone backslash), and the scan, with each loop, read whole and
// cut in two, is held to nextHigh, firstHiddenJSON and mayHold.

// checkScanPasses holds scanFusedAt(b, cut) to the passes it replaces.
func checkScanPasses(t *testing.T, b []byte, cut int) {
	t.Helper()
	stemAt, high, uesc, hidden := scanFusedAt(pf(), b, cut)
	p, _, wantHigh := pf().nextHigh(b, 0)
	if (stemAt < len(b)) != (p < len(b)) {
		t.Fatalf("cut %d: stem at %d, nextHigh %d, of %d bytes: %q", cut, stemAt, p, len(b), clip(b, p))
	}
	if want := firstHiddenJSON(b); hidden != want {
		t.Fatalf("cut %d: hidden %d, firstHiddenJSON %d, of %d bytes: %q", cut, hidden, want, len(b), clip(b, min(max(hidden, want), len(b))))
	}
	if p < len(b) {
		return
	}
	if high != wantHigh {
		t.Fatalf("cut %d: high %v, nextHigh %v", cut, high, wantHigh)
	}
	if k := bytes.Index(b, []byte(`\u`)); k >= 0 && !uesc {
		t.Fatalf(`cut %d: the "\u" at %d of %d missed: %q`, cut, k, len(b), clip(b, k))
	}
	if got, want := mayHoldRest(b, high, uesc), mayHold(b); got != want {
		t.Fatalf("cut %d: mayHoldRest %v, mayHold %v", cut, got, want)
	}
}

// clip is the part of b around at, for a readable failure.
func clip(b []byte, at int) []byte {
	return b[max(at-48, 0):min(at+48, len(b))]
}

var longEvents = []string{
	`\`, `\\`, `\\\`, `\\\\`, `\u`, `\\u`, `\\\u`, `\"`, `\\\"`, `\\n`, `\n`, `\/`, `\b`, `\\b`, `\f`, `\\f`,
	`\u0061pprove`, `\\u0061pprove`, `\u202e`, `\\u202e`, `\\\u202e`, `\ud800`, `\u00a0`, `\uff41`, `\u0041`,
	"\x01", "\x7f", "\t", "\xc2\xa0", "\xe2\x80\xae", "\xc3\xa9", "\xff",
	"approve", "ALLOW", "Claude", " yes\\n", "roots\\/list",
}

func longScanInput(r *rand.Rand, n int) []byte {
	fill := []string{"x", `The quick brown fox jumps over the lazy dog, 42 times.\n`, `{"id":7,"path":"\/src\/pkg\/file.go","note":"\"a\"\tb"},`}[r.IntN(3)]
	b := []byte(strings.Repeat(fill, n/len(fill)+1)[:n])
	for k := r.IntN(7); k > 0; k-- {
		ev := longEvents[r.IntN(len(longEvents))]
		at := r.IntN(len(b) + 1)
		switch r.IntN(4) {
		case 0: // ending a 32-byte block, give or take
			at = (at &^ 31) + 32 - r.IntN(len(ev)+3)
		case 1: // at a chunk end of a vector loop entered at 0
			at = (1+r.IntN(2))*quietChunk - r.IntN(len(ev)+40) + 20
		}
		at = min(max(at, 0), len(b))
		b = append(b[:at:at], append([]byte(ev), b[at:]...)...)
	}
	return b
}

func TestScanLongAgainstPasses(t *testing.T) {
	old := quietVector
	defer func() { quietVector = old }()
	r := rand.New(rand.NewPCG(23, 5))
	for _, vector := range []bool{old, false} {
		quietVector = vector
		for i := range 4000 {
			n := 33 + r.IntN(3000)
			if i%100 == 0 {
				n = quietChunk + r.IntN(quietChunk+64)
			}
			b := longScanInput(r, n)
			checkScanPasses(t, b, 0)
			// A cut at the end of some plain word, as splitPoint makes.
			for try := 0; try < 4; try++ {
				cut := r.IntN(len(b)/8+1) * 8
				if cut > 0 && cut < len(b) && notPlain(binary.LittleEndian.Uint64(b[cut-8:])) == 0 {
					checkScanPasses(t, b, cut)
					break
				}
			}
		}
	}
}
