//go:build linux || darwin

package guard

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// TestScanReadsOnlyItsSlice puts the input flush against a page that may
// not be read, so that a load of one byte past len(b) faults and the test
// binary dies: the Go heap always has slack after a slice, so the
// differential tests cannot see such a read. The vector loop reads one
// byte past each block it passes and must take that byte from inside b;
// every length up to a few blocks, and the ends of the pieces quiet hands
// it, are tried, with text it passes to the end (so that it reaches the
// last block) and with a backslash as the last byte (whose follower is
// past the end), with both loops, the stem look on and off, and cut in
// two.
func TestScanReadsOnlyItsSlice(t *testing.T) {
	page := os.Getpagesize()
	size := (2*quietChunk + 4096 + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	p := pf()
	var lengths []int
	for n := range 300 {
		lengths = append(lengths, n)
	}
	for _, end := range []int{quietChunk, 2 * quietChunk} {
		for d := -40; d <= 40; d++ {
			lengths = append(lengths, end+d)
		}
	}
	old := quietVector
	defer func() { quietVector = old }()
	for _, vector := range []bool{old, false} {
		quietVector = vector
		for _, n := range lengths {
			b := mem[size-n : size : size]
			for _, last := range []string{"x", `\`, "\n"} {
				for i := range b {
					b[i] = 'x'
				}
				if n > 0 {
					b[n-1] = last[0]
				}
				for _, stems := range []bool{false, true} {
					quiet(&p.bloom, b, 0, n, stems)
				}
				stemAt, high, uesc, hidden := scanFusedAt(p, b, 0)
				if stemAt != n || high || uesc || hidden != -1 {
					t.Fatalf("vector %v, %d bytes ending %q: stem %d high %v uesc %v hidden %d", vector, n, last, stemAt, high, uesc, hidden)
				}
				if n >= 16 {
					cut := (n / 2) &^ 7
					if got, _, _, gotHid := scanFusedAt(p, b, cut); got != n || gotHid != -1 {
						t.Fatalf("vector %v, %d bytes cut at %d: stem %d hidden %d", vector, n, cut, got, gotHid)
					}
				}
				if !bytes.Equal(b[:max(n-1, 0)], bytes.Repeat([]byte("x"), max(n-1, 0))) {
					t.Fatal("the scan wrote to its input")
				}
			}
		}
	}
}
