package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// repeatReader hands out one line over and over without end, up to piece
// bytes a read and across the lines' ends, as a pipe holding an upstream's
// results written back to back does.
type repeatReader struct {
	line  []byte
	off   int
	piece int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := min(len(p), r.piece)
	for i := range n {
		p[i] = r.line[r.off]
		r.off = (r.off + 1) % len(r.line)
	}
	return n, nil
}

// TestStreamOverreadMakesNoGarbage: in a run of 1 MB lines written back
// to back, a direct read takes the start of the next line with it. Those
// bytes go into room the Stream keeps, not into memory of their own for
// every line, and the read stops near where the line is expected to end
// even in room a quarter larger, as the line pool may hand out: the
// garbage of a run of large results whose rooms are reused is nearly
// nothing (it was a copy of up to a quarter of a line per line).
func TestStreamOverreadMakesNoGarbage(t *testing.T) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	s := NewStream(&repeatReader{line: line, piece: 4 << 20}, nopWriter{}, nil, Limits{MaxMessageBytes: 4 << 20})
	defer s.Close()
	s.budget = newLineBudget(64 << 20) // leases, so that each line's room goes back to the pool
	want := line[len(`{"jsonrpc":"2.0","id":1,"result":`) : len(line)-2]
	// read reads a line, checks it and recycles its room. Checked without
	// a copy: nothing but the Stream may allocate while it is measured.
	read := func() {
		t.Helper()
		m, err := s.Read(readCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.line == nil {
			t.Fatal("a large line was read without a lease: its room cannot be recycled")
		}
		if !bytes.Equal(m.Result, want) {
			t.Fatalf("a line came out changed (%d bytes, want %d)", len(m.Result), len(want))
		}
		m.line.recycle()
	}
	read() // the first sets the hint
	// The pool holds one room, a quarter larger than the line: each line
	// is read into it and gives it back.
	// The pool's clock stands still meanwhile: on a loaded machine a room
	// that waited idleLineLife between two reads was let go, and the next
	// line's room made anew counted as garbage (seen once under the race
	// detector with the machine's load at 8).
	linePool.mu.Lock()
	linePool.idle, linePool.bytes = nil, 0
	realNow, frozen := linePool.now, linePool.now()
	linePool.now = func() time.Time { return frozen }
	linePool.mu.Unlock()
	t.Cleanup(func() {
		linePool.mu.Lock()
		linePool.now = realNow
		linePool.mu.Unlock()
	})
	linePool.put(make([]byte, 0, len(line)+len(line)/4))
	read() // the reader reads a line ahead (goroutine mode): two rooms circulate
	read()
	const n = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		read()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("%d bytes allocated per line of %d whose room is reused, want at most %d: the bytes read past each line's end are copied into memory of their own", per, len(line), 8<<10)
	}
}

// TestStreamFirstLargeLineAllocates: the first large line of a Stream (no
// hint of its length yet) costs about twice its size, its pieces and its
// room, not the chain of rooms a quarter larger each, with a copy each
// time, that made five times its size; and its room is the one the next
// line of that size asks for, so that it can be reused.
func TestStreamFirstLargeLineAllocates(t *testing.T) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	want := line[len(`{"jsonrpc":"2.0","id":1,"result":`) : len(line)-2]
	for _, piece := range []int{64 << 10, 1 << 20, 4 << 20} {
		// One line, then the end: the reader goroutine reads no next
		// line while the first is measured.
		s := NewStream(&pieceReader{b: bytes.Clone(line), piece: piece}, nopWriter{}, nil, Limits{MaxMessageBytes: 4 << 20})
		s.budget = newLineBudget(64 << 20)
		linePool.mu.Lock()
		linePool.idle, linePool.bytes = nil, 0
		linePool.mu.Unlock()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := s.Read(readCtx(t))
		runtime.ReadMemStats(&after)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Result, want) {
			t.Fatalf("pieces of %d bytes: the line came out changed (%d bytes, want %d)", piece, len(m.Result), len(want))
		}
		// Its room (len+len/64), its pieces (its length, a piece more at
		// most) and the Stream's own (a 64 KB reader and a few more): 2.3
		// times the line; the rooms a quarter larger each made 5.
		if got, most := after.TotalAlloc-before.TotalAlloc, uint64(5*len(line)/2); got > most {
			t.Errorf("pieces of %d bytes: the first line of %d bytes made %d bytes, want at most %d", piece, len(line), got, most)
		}
		if l := m.line; l == nil || int(l.n) < len(line)+len(line)/64 || int(l.n) > len(line)+len(line)/64+len(line)/4 {
			t.Errorf("pieces of %d bytes: the line's room is not one the next line of its size can reuse (lease %v)", piece, l)
		}
	}
}

// stutterReader returns nothing, and no error, on every other read, as a
// reader may (io.Reader allows it); the bufio.Reader retries such reads.
type stutterReader struct {
	r    io.Reader
	skip bool
}

func (s *stutterReader) Read(p []byte) (int, error) {
	if s.skip = !s.skip; s.skip {
		return 0, nil
	}
	return s.r.Read(p)
}

// TestStreamPiecesEmptyReads: lines longer than their room, read in pieces
// from a reader that returns nothing every other time, come out whole, and
// so does the one over the limit's error and the line after it.
func TestStreamPiecesEmptyReads(t *testing.T) {
	const limit = 900 << 10
	sizes := []int{300 << 10, 800 << 10, limit + 100<<10, 70 << 10, 850 << 10}
	var in bytes.Buffer
	for i, n := range sizes {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"result":"%s"}`+"\n", i, strings.Repeat(string(rune('a'+i)), n))
	}
	s := NewStream(&stutterReader{r: &pieceReader{b: in.Bytes(), piece: 200 << 10}}, nopWriter{}, nil, Limits{MaxMessageBytes: limit})
	defer s.Close()
	for i, n := range sizes {
		m, err := s.Read(readCtx(t))
		if n > limit {
			var me *MessageError
			if !errors.As(err, &me) || string(me.ID) != fmt.Sprint(i) {
				t.Fatalf("message %d over the limit: got %v, %v", i, m, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := `"` + strings.Repeat(string(rune('a'+i)), n) + `"`; string(m.ID) != fmt.Sprint(i) || string(m.Result) != want {
			t.Fatalf("message %d: id %s, result of %d bytes (want %d)", i, m.ID, len(m.Result), len(want))
		}
	}
}

// FuzzStreamLargeLines reads runs of messages of the sizes it is given,
// many longer than the reader's buffer and than the room the last one
// left (read in pieces), some over the limit, through reads cut at random
// (a stuttering reader among them), and checks each against what was
// written: whole and in order, an oversized one as its error with the
// message after it intact, and none changed by later reads.
func FuzzStreamLargeLines(f *testing.F) {
	f.Add(uint64(1), uint32(300<<10), uint32(1<<20), uint32(70<<10), uint32(900<<10), uint32(64<<10), false)
	f.Add(uint64(2), uint32(1<<20+5), uint32(1<<20+17000), uint32(1<<20), uint32(40), uint32(3<<20), true)
	f.Add(uint64(3), uint32(2<<20), uint32(256<<10), uint32(256<<10+1), uint32(2<<20-1), uint32(1<<20), false)
	f.Add(uint64(4), uint32(65<<10), uint32(4<<20), uint32(10), uint32(300<<10), uint32(1), true)
	f.Fuzz(func(t *testing.T, seed uint64, a, b, c, d, chunk uint32, stutter bool) {
		const limit = 2 << 20
		sizes := []int{int(a % (3 << 20)), int(b % (3 << 20)), int(c % (3 << 20)), int(d % (3 << 20))}
		var in bytes.Buffer
		for i, n := range sizes {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"result":"%s"}`+"\n", i, strings.Repeat(string(rune('a'+i)), n))
		}
		var src io.Reader = &chunkReader{b: in.Bytes(), r: rand.New(rand.NewPCG(seed, 9)), max: 1 + int(chunk%(4<<20))}
		if stutter {
			src = &stutterReader{r: src}
		}
		s := NewStream(src, nopWriter{}, nil, Limits{MaxMessageBytes: limit})
		defer s.Close()
		var got []*Message
		for i, n := range sizes {
			m, err := s.Read(readCtx(t))
			if n+len(`{"jsonrpc":"2.0","id":0,"result":""}`) > limit {
				var me *MessageError
				if !errors.As(err, &me) || string(me.ID) != fmt.Sprint(i) {
					t.Fatalf("message %d (%d bytes) over the limit: got %v, %v", i, n, m, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("message %d (%d bytes): %v", i, n, err)
			}
			if string(m.ID) != fmt.Sprint(i) || len(m.Result) != n+2 || strings.Trim(string(m.Result[1:n+1]), string(rune('a'+i))) != "" {
				t.Fatalf("message %d: id %s, result of %d bytes (want %d)", i, m.ID, len(m.Result), n+2)
			}
			got = append(got, m)
		}
		if m, err := s.Read(readCtx(t)); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last message: %v, %v; want EOF", m, err)
		}
		for _, m := range got {
			i := int(m.ID[0] - '0')
			if strings.Trim(string(m.Result[1:len(m.Result)-1]), string(rune('a'+i))) != "" {
				t.Fatalf("message %d changed after later reads", i)
			}
		}
	})
}
