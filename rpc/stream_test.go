package rpc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestStreamLargeLines reads a run of lines longer than the reader's buffer,
// of growing and shrinking sizes, with and without CR, the last without a
// newline. Every message must stay intact after later reads (the size hint
// must never make two lines share memory), and a line much smaller than the
// room made for it from the hint must not pin that room.
func TestStreamLargeLines(t *testing.T) {
	sizes := []int{10, 200 << 10, 1 << 20, 300 << 10, 70 << 10, 1 << 20, 5, 2 << 20}
	var in bytes.Buffer
	want := make([]string, len(sizes))
	for i, n := range sizes {
		want[i] = strings.Repeat(string(rune('a'+i)), n)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"result":"%s"}`, i, want[i])
		switch {
		case i == len(sizes)-1:
		case i%2 == 0:
			in.WriteString("\r\n")
		default:
			in.WriteString("\n")
		}
	}
	s := NewStream(&in, nopWriter{}, nil, Limits{})
	defer s.Close()
	var got []*Message
	for range sizes {
		m, err := s.Read(readCtx(t))
		if err != nil {
			t.Fatalf("message %d: %v", len(got), err)
		}
		got = append(got, m)
	}
	for i, m := range got {
		if r := string(m.Result); r != `"`+want[i]+`"` {
			t.Errorf("message %d: result of %d bytes changed after later reads (want %d)", i, len(r), len(want[i])+2)
		}
		if line := cap(m.Result); sizes[i] > 64<<10 && line > 2*(sizes[i]+64) {
			t.Errorf("message %d of %d bytes pins %d bytes", i, sizes[i], line)
		}
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
