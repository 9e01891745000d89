package guard

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// The differential tests of the single-core scan (scanRange, quiet and the
// paths it leaves to) against the reference pass kept in
// fused_ref_test.go: the same verdicts on inputs built to land every
// event (a stem in any case, an escape, a hidden character, invalid
// UTF-8) at every offset and alignment, across the 8-, 16- and 32-byte
// block boundaries and the end, alone and one after another, so that the
// scan changes from one mode to another (both looks, the stem look alone,
// the neutraliser's alone) at every place.

// stemAtStart reports whether a stem occurs at b[at:].
func stemAtStart(b []byte, at int) bool {
	for _, s := range pf().stems {
		if at+len(s) <= len(b) && equalFoldASCII(b[at:at+len(s)], s) {
			return true
		}
	}
	return false
}

// checkScanRef holds scanFusedAt, read whole, to the reference pass.
func checkScanRef(t *testing.T, b []byte) {
	t.Helper()
	wantAt, wantHigh, wantU, wantHid := scanFusedRef(pf(), b)
	gotAt, gotHigh, gotU, gotHid := scanFusedAt(pf(), b, 0)
	if (gotAt < len(b)) != (wantAt < len(b)) {
		t.Fatalf("stem at %d of %d, reference %d, in %q", gotAt, len(b), wantAt, b)
	}
	if gotAt < len(b) && !stemAtStart(b, gotAt) {
		t.Fatalf("stem reported at %d where none starts, in %q", gotAt, b)
	}
	if gotHid != wantHid {
		t.Fatalf("hidden at %d, reference %d, in %q", gotHid, wantHid, b)
	}
	if wantAt == len(b) && (gotHigh != wantHigh || gotU != wantU) {
		t.Fatalf("high %v uesc %v, reference %v %v, in %q", gotHigh, gotU, wantHigh, wantU, b)
	}
}

// scanEvents are what the scan must see, one or several to an input.
var scanEvents = []string{
	// Stems: lower, upper, mixed case, at the shortest and longest.
	"approv", "APPROVE", "pErMiSsIoN", "grant", "ALLOW", "claude", "requestedSchema", "(esc)", " yes\\n", " Yes\\\"",
	"roots\\/list", "Execute_Tool", "differently",
	// Near misses: a stem cut short or broken by a byte.
	"appro", "allo-w", "gran", "claud", "roots", "(es)",
	// Escapes: passed ones, ones that set uesc, hidden ones, chains of
	// backslashes, a lone one, a cut one.
	`\n`, `\"`, `\t`, `\/`, `\r`, `\\`, `\\\\`, `\\n`, `\\\"`, `\\u0041`, `\u0041`, `\u0061pprove`, `\u0078`,
	`\u202e`, `\u001b`, `\b`, `\f`, `\\b`, `\ud83d\ude00`, `\udb40\udc41`, `\ud800`, `\u00a0`, `\uff41`, `\U0041`, `\u12`, `\`,
	// Raw hidden and non-hidden characters, invalid UTF-8.
	"\u202e", "\x1b", "\x7f", "\x00", "\t", "\u00ad", "\u200b", "\U000E0041", "\ufeff", "\u00a0", "é", "—", "日本", "😀",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf",
}

// scanFills are what the events sit in.
var scanFills = []string{"x", "The quick brown fox jumps over the lazy dog, 42 times.\\n", `{"id":7,"path":"/src/pkg/file.go","size":123},`, "a"}

func buildScanInput(r *rand.Rand, n, events int) []byte {
	fill := scanFills[r.IntN(len(scanFills))]
	b := []byte(strings.Repeat(fill, n/len(fill)+1)[:n])
	for range events {
		ev := scanEvents[r.IntN(len(scanEvents))]
		at := r.IntN(len(b) + 1)
		if r.IntN(2) == 0 {
			// Near a block boundary: the end of a 32-byte block, give or
			// take the event's length.
			at = min(len(b), (at&^31)+32-r.IntN(len(ev)+2))
			at = max(at, 0)
		}
		b = append(b[:at:at], append([]byte(ev), b[at:]...)...)
	}
	return b
}

// TestScanEveryOffset puts each event alone at every offset 0..99 of
// fills of every length up to the offset plus 40, so that it meets every
// block boundary and the end at every alignment.
func TestScanEveryOffset(t *testing.T) {
	for _, fill := range scanFills[:2] {
		long := strings.Repeat(fill, 200/len(fill)+1)
		for _, ev := range scanEvents {
			for at := range 100 {
				for _, after := range []int{0, 1, 2, 3, 5, 8, 13, 31, 32, 33, 40} {
					b := []byte(long[:at] + ev + long[:after])
					checkScanRef(t, b)
				}
			}
		}
	}
}

// TestScanRandomEvents: lengths 0..200 with up to four events, and some
// large inputs with events anywhere and at block ends.
func TestScanRandomEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	for range 40000 {
		checkScanRef(t, buildScanInput(r, r.IntN(201), r.IntN(5)))
	}
	for range 60 {
		checkScanRef(t, buildScanInput(r, 1<<16+r.IntN(4096), r.IntN(6)))
	}
}

// TestScanRandomBytes draws bytes from an alphabet skewed towards what
// the scan decides on: backslashes and what follows them, stem letters,
// quotes, controls and UTF-8 lead and continuation bytes.
func TestScanRandomBytes(t *testing.T) {
	const alphabet = "xxxxxxxx    \\\\\\uubfnt\"/0a1ApPrRoOvVeElLwWcCsSgGyY(,\x1b\x7f\t\xc2\xad\xe2\x80\xae\x8b\xc3\xa9\xef\xbb\xbf\xf3\xa0\x81\xff"
	r := rand.New(rand.NewPCG(5, 8))
	for range 60000 {
		b := make([]byte, r.IntN(201))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		checkScanRef(t, b)
	}
}

// TestScanAgainstPasses: a share of the same inputs through checkFused,
// which holds the Scan to the two passes themselves, not to the previous
// scan.
func TestScanAgainstPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	for range 4000 {
		checkFused(t, buildScanInput(r, r.IntN(201), r.IntN(4)))
	}
}

// TestQuietPassesOnlyQuietBlocks holds quiet to its contract block by
// block: a block it passes has no window in the bloom filter (when stems
// are looked for), no byte >= 0x80, and the neutraliser's walk over it
// from its start finds nothing, sets no uesc and ends at its end. And it
// does pass plain text and text with ordinary escapes.
func TestQuietPassesOnlyQuietBlocks(t *testing.T) {
	const alphabet = "xxxxxxxxxxxxxxxx  \\\\nnt\"/uubfF0aAlLoOwW\x1b\x7f\t\x00\xc2\xe2\x80"
	r := rand.New(rand.NewPCG(2, 9))
	p := pf()
	passed := 0
	for range 200000 {
		b := make([]byte, 33+r.IntN(3))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = 'x'
			}
		}
		for _, stems := range []bool{false, true} {
			if quiet(&p.bloom, b, 0, len(b), stems) == 0 {
				continue
			}
			passed++
			q := b[:32]
			if bytes.IndexFunc(q, func(c rune) bool { return c >= 0x80 || c == 0xFFFD }) >= 0 {
				t.Fatalf("quiet passed a byte >= 0x80 in %q", q)
			}
			if h, hid, u := hiddenWords(b, 0, 32, 0, false); h != 32 || hid >= 0 || u {
				t.Fatalf("quiet passed %q: the walk ends at %d, hidden %d, uesc %v", q, h, hid, u)
			}
			if stems && stemWords(p, b, 0, 32, len(b)) < len(b) {
				t.Fatalf("quiet passed a stem in %q", q)
			}
			if stems {
				for k := 0; k < 32; k += 4 {
					x := bloomHash(uint32(binary32(q[k:]) | 0x20202020))
					if p.bloom[x>>6]&(1<<(x&63)) != 0 {
						t.Fatalf("quiet passed a bloom hit at %d in %q", k, q)
					}
				}
			}
		}
	}
	if passed < 1000 {
		t.Fatalf("quiet passed only %d blocks", passed)
	}
	for _, s := range []string{strings.Repeat("x", 32), `The quick brown fox jumps\n over\"`, `\n\n\n\n\t\t\t\t\/\/\/\/\"\"\"\"xxxxxxxx`} {
		b := []byte(s + "x")
		if quiet(&p.bloom, b, 0, len(b), true) != 32 {
			t.Errorf("quiet stopped at %q", s)
		}
	}
}

func binary32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// FuzzScanReference is the differential check under the fuzzer, each
// input also shifted by one to seven bytes and behind a block of plain
// text.
func FuzzScanReference(f *testing.F) {
	for _, ev := range scanEvents {
		f.Add([]byte(ev))
		f.Add([]byte(strings.Repeat("x", 29) + ev + "x"))
	}
	for _, p := range fusedPieces {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanRef(t, b)
		checkScanRef(t, append(bytes.Repeat([]byte("y"), 1+len(b)%7), b...))
		checkScanRef(t, append(bytes.Repeat([]byte("z"), 64), b...))
	})
}

// TestScanGoQuiet runs the differential tests with quietGo alone, as
// where there is no vector loop; run on their own they use the vector
// loop where there is one.
func TestScanGoQuiet(t *testing.T) {
	old := quietVector
	defer func() { quietVector = old }()
	quietVector = false
	t.Run("offsets", TestScanEveryOffset)
	t.Run("events", TestScanRandomEvents)
	t.Run("bytes", TestScanRandomBytes)
	t.Run("quiet", TestQuietPassesOnlyQuietBlocks)
}

// TestQuietVectorMatchesGo holds the vector loop to quietGo on random
// buffers of many blocks, with and without the stem look: both must stop
// at the same block, or both pass all that the vector loop may read.
func TestQuietVectorMatchesGo(t *testing.T) {
	if !quietVector {
		t.Skip("no vector loop here")
	}
	const alphabet = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx  \\\\nnt\"/uubfF0aAlLoOwWpPrRvVeE\x1b\x7f\t\x00\x1f\x20\x7e\x80\xff\xc2\xe2\x5b\x5d\x7c"
	r := rand.New(rand.NewPCG(4, 4))
	p := pf()
	stops := 0
	for range 20000 {
		b := make([]byte, r.IntN(400))
		rate := 1 + r.IntN(200)
		for i := range b {
			if r.IntN(rate) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = 'x'
			}
		}
		for _, stems := range []bool{false, true} {
			from := r.IntN(8) * 8
			if from > len(b) {
				from = 0
			}
			to := len(b) - r.IntN(2)
			end := min(to+1, len(b))
			if end-from < 33 {
				continue
			}
			got := from + quietAVX2(&p.bloom, &b[from], end-from, stems)
			want := quietGo(&p.bloom, b, from, to, stems)
			// The vector loop stops one block short of quietGo at the end,
			// where it has no byte to read past the block.
			if got != want && !(got+32 <= to && got+33 > end && want > got) {
				t.Fatalf("stems %v from %d to %d: vector stops at %d, Go at %d, in %q", stems, from, to, got, want, b)
			}
			if want+32 <= to {
				stops++
			}
		}
	}
	if stops < 1000 {
		t.Fatalf("only %d stops: the inputs do not exercise the loops", stops)
	}
}

// TestScanChunkEnds puts events around the ends of the pieces quiet hands
// the vector loop (quietChunk) in inputs of a few of them.
func TestScanChunkEnds(t *testing.T) {
	if !quietVector {
		t.Skip("no vector loop here")
	}
	for _, fill := range scanFills[:2] {
		base := strings.Repeat(fill, (2*quietChunk+200)/len(fill)+1)[:2*quietChunk+100]
		for _, ev := range []string{"approve", `\u202e`, "\xff"} {
			for _, end := range []int{quietChunk, 2 * quietChunk} {
				for _, d := range []int{-40, -34, -33, -32, -31, -7, -1, 0, 1, 7} {
					checkScanRef(t, []byte(base[:end+d]+ev+base[end+d:]))
				}
			}
		}
	}
}
