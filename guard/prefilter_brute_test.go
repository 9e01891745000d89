package guard

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteNext is the specification the prefilter implements: the smallest
// start >= from of any stem, ASCII case-insensitively, or len(b).
func bruteNext(b []byte, from int) (int, []int) {
	for st := from; st < len(b); st++ {
		var which []int
		for si, s := range stems {
			if st+len(s.text) <= len(b) && equalFoldASCII(b[st:st+len(s.text)], []byte(s.text)) {
				which = append(which, si)
			}
		}
		if which != nil {
			return st, which
		}
	}
	return len(b), nil
}

// checkAgainstBrute compares the prefilter with bruteNext from every start
// in b, and its "saw a high byte" answer where no stem follows.
func checkAgainstBrute(t *testing.T, b []byte) {
	t.Helper()
	for from := 0; from <= len(b); from++ {
		pos, stem, high := pf().nextHigh(b, from)
		want, which := bruteNext(b, from)
		if pos != want {
			t.Fatalf("next(%q, %d) = %d, brute force finds %d (stems %v)", b, from, pos, want, which)
		}
		if which == nil {
			if stem != -1 {
				t.Fatalf("next(%q, %d): stem %d with no occurrence", b, from, stem)
			}
			seen := (max(from-4, 0)) &^ 3
			if hasHigh(b[from:]) && !high {
				t.Fatalf("nextHigh(%q, %d) missed a byte >= 0x80", b, from)
			}
			if !hasHigh(b[seen:]) && high {
				t.Fatalf("nextHigh(%q, %d) reports a byte >= 0x80 where there is none", b, from)
			}
			continue
		}
		found := false
		for _, si := range which {
			found = found || si == stem
		}
		if !found {
			t.Fatalf("next(%q, %d) = %d with stem %d, brute force finds stems %v there", b, from, pos, stem, which)
		}
	}
}

func hasHigh(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// TestPrefilterMatchesBruteForce holds the hashed, windowed table to the
// plain search for every stem: over random text, text dense in stem bytes
// and their case and 0x20 aliases (what the |0x20 fold confuses), stems
// cut short at the buffer's end, overlapping stems and high bytes.
func TestPrefilterMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	// The adversarial alphabet: every stem byte, its other case, its 0x20
	// alias, and a few bytes no stem holds.
	alpha := []byte{0, 0x7f, 0x80, 0xc3, 0xff, 'x', 'Z'}
	for _, s := range stems {
		for i := 0; i < len(s.text); i++ {
			c := s.text[i]
			alpha = append(alpha, c, c^0x20)
		}
	}
	randCase := func(s string) []byte {
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' && rng.IntN(2) == 0 {
				b[i] = c - 'a' + 'A'
			}
		}
		return b
	}
	for range 3000 {
		n := rng.IntN(40)
		b := make([]byte, 0, n+16)
		for len(b) < n {
			switch r := rng.IntN(10); {
			case r < 3: // a whole stem, in any case
				b = append(b, randCase(stems[rng.IntN(len(stems))].text)...)
			case r < 5: // a stem with one byte changed or cut short
				s := randCase(stems[rng.IntN(len(stems))].text)
				k := rng.IntN(len(s))
				if rng.IntN(2) == 0 {
					s[k] ^= 0x20
				} else {
					s = s[:k]
				}
				b = append(b, s...)
			case r < 9:
				b = append(b, alpha[rng.IntN(len(alpha))])
			default:
				b = append(b, byte(rng.IntN(256)))
			}
		}
		checkAgainstBrute(t, b)
	}
	// Every stem at every alignment, alone, doubled, overlapping its own
	// tail, and truncated at the end of the buffer.
	for _, s := range stems {
		for pad := range 8 {
			p := strings.Repeat("\xff", pad)
			checkAgainstBrute(t, []byte(p+s.text))
			checkAgainstBrute(t, []byte(p+strings.ToUpper(s.text)+s.text))
			checkAgainstBrute(t, []byte(p+s.text[:len(s.text)-1]))
			checkAgainstBrute(t, []byte(p+s.text[:len(s.text)-1]+s.text))
			checkAgainstBrute(t, []byte(p+string(toAlias(s.text))))
		}
	}
}

// toAlias flips bit 5 of every byte that is not a letter: the prefilter's
// fold maps both to one window, the verification must tell them apart.
func toAlias(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if (c|0x20) < 'a' || (c|0x20) > 'z' {
			b[i] = c ^ 0x20
		}
	}
	return b
}

// BenchmarkNewPrefilter is what the first inspected result of a process
// pays for the tables (pf builds them once, at first use).
func BenchmarkNewPrefilter(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newPrefilter()
	}
}
