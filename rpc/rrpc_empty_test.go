package rpc

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestStreamPiecesEmptyReadsAllocate: a line read in pieces from a reader
// that returns nothing every other time (io.Reader allows it) costs what
// it costs from any other reader, about twice its size, not a join of the
// whole line so far at every empty read, which made the line's cost grow
// with the square of its length.
func TestStreamPiecesEmptyReadsAllocate(t *testing.T) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 8<<20)))
	s := NewStream(&stutterReader{r: &pieceReader{b: bytes.Clone(line), piece: 256 << 10}}, nopWriter{}, nil, Limits{MaxMessageBytes: 16 << 20})
	defer s.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := s.Read(readCtx(t))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Result) != 8<<20+2 {
		t.Fatalf("a result of %d bytes, want %d", len(m.Result), 8<<20+2)
	}
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(3*len(line)); got > most {
		t.Errorf("a line of %d bytes read with empty reads between made %d bytes, want at most %d", len(line), got, most)
	}
}
