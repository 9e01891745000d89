package guard

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkFused holds ScanResult, InspectScanned and NeutralizeScanned to the
// two passes they replace, on the same bytes: the fused pass must decide
// exactly as the separate ones do.
func checkFused(t *testing.T, b []byte) {
	t.Helper()
	sc := ScanResult(b)
	if want := firstHiddenJSON(b); sc.hidden != want {
		t.Fatalf("hidden at %d, firstHiddenJSON says %d, in %q", sc.hidden, want, b)
	}
	p, _, high := pf().nextHigh(b, 0)
	if sc.stem != (p < len(b)) {
		t.Fatalf("stem %v, nextHigh says %d of %d, in %q", sc.stem, p, len(b), b)
	}
	if !sc.stem {
		if sc.high != high {
			t.Fatalf("high %v, nextHigh says %v, in %q", sc.high, high, b)
		}
		if !sc.uesc && bytes.Contains(b, []byte(`\u`)) {
			t.Fatalf(`a "\u" missed in %q`, b)
		}
		if got, want := mayHoldRest(b, sc.high, sc.uesc), mayHold(b); got != want {
			t.Fatalf("mayHoldRest %v, mayHold %v, in %q", got, want, b)
		}
	}
	if got, want := InspectScanned(b, sc), InspectResult(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("InspectScanned %+v, InspectResult %+v, in %q", got, want, b)
	}
	gotOut, gotN, gotErr := NeutralizeScanned(b, sc)
	wantOut, wantN, wantErr := NeutralizeJSON(b)
	if !bytes.Equal(gotOut, wantOut) || gotN != wantN || (gotErr == nil) != (wantErr == nil) ||
		gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("NeutralizeScanned %q %d %v, NeutralizeJSON %q %d %v", gotOut, gotN, gotErr, wantOut, wantN, wantErr)
	}
	if sc.Clean() && (InspectResult(b) != nil || wantN != 0 || wantErr != nil) {
		t.Fatalf("clean scan of %q, yet the passes find something", b)
	}
}

// fusedPieces are fragments that make either pass look twice: stems in
// both cases and split across words, escapes of stem letters and of hidden
// characters, folded characters, hidden code points raw, invalid UTF-8,
// controls, and plain text around them.
var fusedPieces = []string{
	"x", "xxxxxxx", " ", "\"", "{", "}", "[", "]", ":", ",",
	"approv", "APPROVE", "aPpRoVaL", "permi", "grant", "allow", "consent", "claude", " yes\\n", "1. yes", "(esc)",
	"appr", "ove", "allo", "w",
	`\u0061pprove`, `\u0041`, `\u00a0`, `\uff41`, `\u202e`, `\u001b`, `\b`, `\f`, `\n`, `\\`, `\"`, `\u`, `\ud83d\ude00`, `\udb40\udc41`, `\ud800`,
	"\u00a0", "ａｐｐｒｏｖｅ", "\u202e", "\u200b", "\u00ad", "\x1b", "\x7f", "\t", "\r\n", "\u0085", "é", "日本", "😀", "\U000E0041",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	`{"content":[{"type":"text","text":"`, `"}]}`, `{"decision":"approve","tool_call_id":"c"}`, `"structuredContent":{"a":1}`,
}

func randomFusedInput(r *rand.Rand) []byte {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteString(`{"content":[{"type":"text","text":"`)
	}
	for n := r.IntN(24); n > 0; n-- {
		if r.IntN(8) == 0 {
			b.WriteByte(byte(r.IntN(256)))
			continue
		}
		b.WriteString(fusedPieces[r.IntN(len(fusedPieces))])
	}
	if r.IntN(3) == 0 {
		b.WriteString(`"}]}`)
	}
	return []byte(b.String())
}

// TestFusedMatchesPasses is the differential test of the fused pass: random
// and adversarial inputs, at every alignment, give ScanResult and the
// Scanned functions the verdicts of the passes they replace.
func TestFusedMatchesPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	for range 20000 {
		b := randomFusedInput(r)
		for pad := range 8 {
			checkFused(t, append(bytes.Repeat([]byte("x"), pad), b...))
		}
	}
	// Each piece alone, at each alignment and at the end of a long run,
	// so that the tail windows and the word loop both see it.
	for _, p := range fusedPieces {
		for pad := range 17 {
			checkFused(t, []byte(strings.Repeat("x", pad)+p))
			checkFused(t, []byte(strings.Repeat("x", pad)+p+strings.Repeat("y", 9)))
		}
	}
	for _, s := range []string{"", "x", "approve", "\\", `\u00`, "\xff", "\xe2\x80\xae"} {
		checkFused(t, []byte(s))
	}
}

// TestFusedCorpus runs the differential check on the detector's corpus and
// on the fuzz seeds of both passes.
func TestFusedCorpus(t *testing.T) {
	var files []string
	for _, dir := range []string{"testdata/corpus/positive", "testdata/corpus/negative", "testdata/corpus/hard_negative",
		"testdata/fuzz/FuzzInspectResult", "testdata/fuzz/FuzzNeutralizeJSON", "testdata/elicitation/positive", "testdata/elicitation/negative"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(files) < 50 {
		t.Fatalf("only %d corpus files found", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFused(t, b)
		checkFused(t, textResult(string(b)))
	}
}

func TestFusedRefusesOtherBytes(t *testing.T) {
	sc := ScanResult([]byte(`{"a":1}`))
	for name, f := range map[string]func(){
		"inspect":    func() { InspectScanned([]byte(`{"a":12}`), sc) },
		"neutralize": func() { _, _, _ = NeutralizeScanned([]byte(`{"a":12}`), sc) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a Scan of other bytes was accepted", name)
				}
			}()
			f()
		}()
	}
}

func FuzzFusedScan(f *testing.F) {
	seedCorpus(f, "testdata/corpus/positive", "testdata/corpus/hard_negative")
	for _, p := range fusedPieces {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFused(t, b) })
}

// BenchmarkGuardLarge is the guard's cost on a 1 MB text result: the two
// passes, then the fused one.
func BenchmarkGuardLarge(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`)
	prose := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`The quick brown fox jumps over the lazy dog, 42 times.\n`, (1<<20)/56) + `"}]}`)
	for _, in := range []struct {
		name string
		b    []byte
	}{{"x", res}, {"prose", prose}} {
		b.Run(in.name+"/two-passes", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				if InspectResult(in.b) != nil {
					b.Fatal("finding")
				}
				if _, n, _ := NeutralizeJSON(in.b); n != 0 {
					b.Fatal("changed")
				}
			}
		})
		b.Run(in.name+"/fused", func(b *testing.B) {
			b.SetBytes(int64(len(in.b)))
			for b.Loop() {
				sc := ScanResult(in.b)
				if InspectScanned(in.b, sc) != nil {
					b.Fatal("finding")
				}
				if _, n, _ := NeutralizeScanned(in.b, sc); n != 0 {
					b.Fatal("changed")
				}
			}
		})
	}
}

// TestFusedSplit: the scan cut in two at any point splitPoint may choose
// (the end of a plain word) answers as the whole scan does.
func TestFusedSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2))
	for range 3000 {
		var b []byte
		for len(b) < 64 {
			b = append(b, randomFusedInput(r)...)
		}
		stem, high, uesc, hidden := scanFusedAt(pf(), b, 0)
		for cut := 8; cut < len(b); cut += 8 {
			if notPlain(binary.LittleEndian.Uint64(b[cut-8:])) != 0 {
				continue
			}
			s2, h2, u2, hid2 := scanFusedAt(pf(), b, cut)
			if (s2 < len(b)) != (stem < len(b)) || h2 != high || hid2 != hidden || stem == len(b) && u2 != uesc {
				t.Fatalf("cut at %d: stem %d high %v uesc %v hidden %d; whole: %d %v %v %d; in %q", cut, s2, h2, u2, hid2, stem, high, uesc, hidden, b)
			}
		}
	}
	// And through the public path, forced to split.
	old := splitScanBytes
	splitScanBytes = 0
	defer func() { splitScanBytes = old }()
	for range 2000 {
		checkFused(t, randomFusedInput(r))
	}
}

// TestNotPlain holds notPlain to plainASCII and hasByte, which it fuses:
// every byte value at every position, and random words.
func TestNotPlain(t *testing.T) {
	check := func(w uint64) {
		if got, want := notPlain(w) == 0, plainASCII(w) && !hasByte(w, '\\'); got != want {
			t.Fatalf("notPlain(%#x) == 0 is %v, want %v", w, got, want)
		}
	}
	for pos := range 8 {
		for v := range 256 {
			for _, fill := range []uint64{0x6161616161616161, 0x8080808080808080, 0x7F7F7F7F7F7F7F7F, 0x5C5C5C5C5C5C5C5C, 0x2020202020202020, 0x1F1F1F1F1F1F1F1F} {
				check(fill&^(0xFF<<(8*pos)) | uint64(v)<<(8*pos))
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		check(r.Uint64())
		check(r.Uint64() & 0x7F7F7F7F7F7F7F7F)
	}
}
