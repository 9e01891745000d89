package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

// loopReader hands out one line over and over, at most piece bytes a read,
// as a pipe does.
type loopReader struct {
	line  []byte
	off   int
	piece int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := min(len(p), l.piece, len(l.line)-l.off)
	copy(p, l.line[l.off:l.off+n])
	l.off = (l.off + n) % len(l.line)
	return n, nil
}

// BenchmarkStreamLargeRead measures what reading one 1 MB line costs: a
// run of them on one Stream (steady), and the first one of a Stream.
func BenchmarkStreamLargeRead(b *testing.B) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	for _, piece := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("steady/piece=%dK", piece>>10), func(b *testing.B) {
			s := NewStream(&loopReader{line: line, piece: piece}, nopWriter{}, nil, Limits{})
			defer s.Close()
			if _, err := s.Read(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := s.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("first/piece=%dK", piece>>10), func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for range b.N {
				s := NewStream(&loopReader{line: line, piece: piece}, nopWriter{}, nil, Limits{})
				if _, err := s.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// TestStreamLargeLineAllocates: a run of 1 MB lines on one Stream costs
// about one line's room each (the room is sized from the last large line,
// lineHint), not a growing buffer's copies.
func TestStreamLargeLineAllocates(t *testing.T) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	for _, piece := range []int{64 << 10, 1 << 20} {
		s := NewStream(&loopReader{line: line, piece: piece}, nopWriter{}, nil, Limits{})
		if _, err := s.Read(readCtx(t)); err != nil { // the first sets the hint
			t.Fatal(err)
		}
		const n = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			if _, err := s.Read(readCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		s.Close()
		if per := float64(after.TotalAlloc-before.TotalAlloc) / n; per > 2.5*float64(len(line)) {
			t.Errorf("pieces of %d bytes: %.0f bytes allocated per line of %d", piece, per, len(line))
		}
	}
}

// pieceReader hands out its bytes exactly piece at a time, so that reads
// end on the same boundaries as the Stream's buffers.
type pieceReader struct {
	b     []byte
	piece int
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(b), len(p.b), p.piece)
	copy(b, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

// TestStreamLineSizesExact reads lines that grow, shrink, sit on either
// side of the reader's buffer, of the room the last line left (lineHint)
// and of the limit, through reads that end on buffer boundaries, mid-line
// and past the newline; each must come out byte for byte, and stay so.
func TestStreamLineSizesExact(t *testing.T) {
	const limit = 2 << 20
	const k = 64 << 10
	sizes := []int{40, k - 1, k, k + 1, 4 * k, 4*k + 1, 1 << 20}
	h := 1<<20 + 1 // the last line with its newline
	for d := -2; d <= 2; d++ {
		sizes = append(sizes, 1<<20+h/64+d)
	}
	sizes = append(sizes, 600<<10, 3*k, 1<<20+300<<10, 100, limit-1, limit, limit+1, limit, 5*k+7, 2*k, 40)
	r := rand.New(rand.NewPCG(3, 4))
	var in bytes.Buffer
	var wants []string // "" for a line over the limit
	for i, n := range sizes {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"`, i)
		body := make([]byte, n-len(head)-2)
		for j := range body {
			body[j] = byte('a' + r.IntN(26))
		}
		in.WriteString(head)
		in.Write(body)
		in.WriteString(`"}`)
		if i%3 == 0 {
			in.WriteString("\r\n")
		} else {
			in.WriteString("\n")
		}
		if n > limit {
			wants = append(wants, "")
		} else {
			wants = append(wants, `"`+string(body)+`"`)
		}
	}
	readers := map[string]func() io.Reader{
		"pieces of 64K":  func() io.Reader { return &pieceReader{b: in.Bytes(), piece: k} },
		"pieces of 4K":   func() io.Reader { return &pieceReader{b: in.Bytes(), piece: 4 << 10} },
		"pieces of 1M+1": func() io.Reader { return &pieceReader{b: in.Bytes(), piece: 1<<20 + 1} },
		"whole":          func() io.Reader { return &pieceReader{b: in.Bytes(), piece: in.Len()} },
		"random to 2K":   func() io.Reader { return &chunkReader{b: in.Bytes(), r: rand.New(rand.NewPCG(1, 1)), max: 2 << 10} },
		"random to 300K": func() io.Reader { return &chunkReader{b: in.Bytes(), r: rand.New(rand.NewPCG(1, 2)), max: 300 << 10} },
		"random to 3M":   func() io.Reader { return &chunkReader{b: in.Bytes(), r: rand.New(rand.NewPCG(1, 3)), max: 3 << 20} },
	}
	for name, src := range readers {
		s := NewStream(src(), nopWriter{}, nil, Limits{MaxMessageBytes: limit})
		got := make([]*Message, len(sizes))
		for i, w := range wants {
			m, err := s.Read(readCtx(t))
			if w == "" {
				var me *MessageError
				if !errors.As(err, &me) || string(me.ID) != fmt.Sprint(i) || !strings.Contains(me.Reason, "exceeds the limit") {
					t.Fatalf("%s: line %d of %d bytes: got %v, %v", name, i, sizes[i], m, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: line %d of %d bytes: %v", name, i, sizes[i], err)
			}
			if string(m.ID) != fmt.Sprint(i) || string(m.Result) != w {
				t.Fatalf("%s: line %d of %d bytes: id %s, a result of %d bytes (want %d) or other bytes", name, i, sizes[i], m.ID, len(m.Result), len(w))
			}
			got[i] = m
		}
		if m, err := s.Read(readCtx(t)); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: after the last line: %v, %v", name, m, err)
		}
		for i, m := range got {
			if m != nil && string(m.Result) != wants[i] {
				t.Fatalf("%s: line %d changed after later reads", name, i)
			}
		}
		s.Close()
	}
}

// BenchmarkStreamLargeReadPipe is the steady case through a pipe, read in
// direct mode and paced, as an upstream child's output is.
func BenchmarkStreamLargeReadPipe(b *testing.B) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			if _, err := pw.Write(line); err != nil {
				return
			}
		}
	}()
	s := NewStream(pr, nopWriter{}, pr, Limits{PaceLargeLines: true})
	defer pw.Close()
	defer s.Close()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for i := 0; i < b.N+1; i++ {
		if i == 1 {
			b.ResetTimer() // the first line sets the hint
		}
		m, err := s.Read(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		written(m.Result) // as the host's Stream does when it has sent it
	}
}
