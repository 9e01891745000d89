package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestStreamOverLimitPiecesAllocate: a line longer than the limit, read in
// pieces (it is longer than its room), is refused having cost about the
// limit in pieces, not that and room of the limit's size as well, made
// and filled only to be let go at once: a hostile peer's lines over the
// limit would otherwise cost twice the limit each, at once.
func TestStreamOverLimitPiecesAllocate(t *testing.T) {
	const limit = 4 << 20
	var in bytes.Buffer
	fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":7,"result":"%s"}`+"\n", strings.Repeat("v", limit+100<<10))
	in.WriteString(`{"jsonrpc":"2.0","id":8,"result":1}` + "\n")
	for _, piece := range []int{64 << 10, 1 << 20, 8 << 20} {
		s := NewStream(&pieceReader{b: bytes.Clone(in.Bytes()), piece: piece}, nopWriter{}, nil, Limits{MaxMessageBytes: limit})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := s.Read(readCtx(t))
		runtime.ReadMemStats(&after)
		var me *MessageError
		if !errors.As(err, &me) || string(me.ID) != "7" || !strings.Contains(me.Reason, "exceeds the limit") {
			t.Fatalf("reads of %d: got %v, %v; want the error of a message over the limit, id 7", piece, m, err)
		}
		if got, most := after.TotalAlloc-before.TotalAlloc, uint64(limit+limit/2); got > most {
			t.Errorf("reads of %d: a line over the limit of %d bytes made %d bytes, want at most %d", piece, limit, got, most)
		}
		if m, err := s.Read(readCtx(t)); err != nil || string(m.ID) != "8" {
			t.Fatalf("reads of %d: the message after it: %v, %v", piece, m, err)
		}
		s.Close()
	}
}
