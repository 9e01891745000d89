package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// chunkReader hands out its bytes in pieces of random size, as a pipe
// does, so that a direct read of a large line ends anywhere: mid-line, on
// its newline, or inside the next message(s).
type chunkReader struct {
	b   []byte
	r   *rand.Rand
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.r.IntN(c.max))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// TestStreamDirectReads reads runs of small, large and oversized messages,
// CRLF and LF, through readers that cut the bytes anywhere; every message
// must come out whole and in order, an oversized one as its error with its
// ID salvaged and the next message intact, and no message may change after
// later reads (a direct read's overshoot is the next message's, never
// written into an earlier one's memory).
func TestStreamDirectReads(t *testing.T) {
	const limit = 700 << 10
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 7))
		var in bytes.Buffer
		type want struct {
			result string
			tooBig bool
		}
		var wants []want
		for i := range 24 {
			var n int
			switch r.IntN(4) {
			case 0:
				n = r.IntN(100)
			case 1:
				n = 60<<10 + r.IntN(10<<10) // about the reader's buffer
			case 2:
				n = r.IntN(600 << 10)
			default:
				n = limit - 40 + r.IntN(80) // at the limit, either side
			}
			body := strings.Repeat(string(rune('a'+i%26)), n)
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"%s"}`, i, body)
			wants = append(wants, want{result: `"` + body + `"`, tooBig: len(line) > limit})
			in.WriteString(line)
			if r.IntN(2) == 0 {
				in.WriteString("\r\n")
			} else {
				in.WriteString("\n")
			}
		}
		for _, maxChunk := range []int{1 << 10, 100 << 10, 3 << 20} {
			src := &chunkReader{b: bytes.Clone(in.Bytes()), r: rand.New(rand.NewPCG(seed, uint64(maxChunk))), max: maxChunk}
			s := NewStream(src, nopWriter{}, nil, Limits{MaxMessageBytes: limit})
			var got []*Message
			for i, w := range wants {
				m, err := s.Read(readCtx(t))
				if w.tooBig {
					var me *MessageError
					if !errors.As(err, &me) || string(me.ID) != fmt.Sprint(i) || !strings.Contains(me.Reason, "exceeds the limit") {
						t.Fatalf("seed %d chunk %d: message %d over the limit: got %v, %v", seed, maxChunk, i, m, err)
					}
					got = append(got, nil)
					continue
				}
				if err != nil {
					t.Fatalf("seed %d chunk %d: message %d: %v", seed, maxChunk, i, err)
				}
				if string(m.ID) != fmt.Sprint(i) || string(m.Result) != w.result {
					t.Fatalf("seed %d chunk %d: message %d: id %s, result of %d bytes (want %d)", seed, maxChunk, i, m.ID, len(m.Result), len(w.result))
				}
				got = append(got, m)
			}
			if m, err := s.Read(readCtx(t)); err == nil {
				t.Fatalf("seed %d chunk %d: a message after the last: %v", seed, maxChunk, m)
			}
			for i, m := range got {
				if m != nil && string(m.Result) != wants[i].result {
					t.Fatalf("seed %d chunk %d: message %d changed after later reads", seed, maxChunk, i)
				}
			}
			s.Close()
		}
	}
}

// TestStreamDirectReadLastLine: a large last message without a newline
// still counts when the input ends during a direct read.
func TestStreamDirectReadLastLine(t *testing.T) {
	body := strings.Repeat("z", 300<<10)
	in := `{"jsonrpc":"2.0","id":1,"result":"` + body + `"}`
	s := NewStream(&chunkReader{b: []byte(in), r: rand.New(rand.NewPCG(1, 2)), max: 50 << 10}, nopWriter{}, nil, Limits{})
	defer s.Close()
	m, err := s.Read(readCtx(t))
	if err != nil || string(m.Result) != `"`+body+`"` {
		t.Fatalf("last line: %v (%d bytes)", err, len(m.Result))
	}
	if _, err := s.Read(readCtx(t)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
}

// TestStreamDirectReadInterrupted: a large message whose bytes stop coming
// midway, on a pollable pipe (direct mode), is interrupted by the caller's
// context with what was read kept; a later Read goes on with it and then
// with the message that follows in the same write.
func TestStreamDirectReadInterrupted(t *testing.T) {
	connR, peerW, peerR, connW := osPipes(t)
	go io.Copy(io.Discard, peerR)
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	defer s.Close()
	if s.rdl == nil {
		t.Skip("the pipe is not read in direct mode here")
	}
	body := strings.Repeat("q", 500<<10)
	line := `{"jsonrpc":"2.0","id":7,"result":"` + body + `"}` + "\n" + `{"jsonrpc":"2.0","id":8,"result":1}` + "\n"
	cut := 200 << 10
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(peerW, line[:cut]); done <- err }()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if m, err := s.Read(ctx); err == nil {
		t.Fatalf("a partial message was returned: %v", m)
	}
	if err := <-done; err != nil { // the Read took all of the first part
		t.Fatal(err)
	}
	go func() { _, err := io.WriteString(peerW, line[cut:]); done <- err }()
	m, err := s.Read(readCtx(t))
	if err != nil || string(m.ID) != "7" || string(m.Result) != `"`+body+`"` {
		t.Fatalf("after the interruption: %v (%d bytes)", err, len(m.Result))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m, err := s.Read(readCtx(t)); err != nil || string(m.ID) != "8" {
		t.Fatalf("the message after: %v, %v", m, err)
	}
}

// TestStreamDirectReadStall: the stall watch counts a large message read
// directly as it does one read through the buffer: silence after whole
// large messages is an idle peer, silence in the middle of one a stall.
func TestStreamDirectReadStall(t *testing.T) {
	forPipes(t, func(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
		big := `{"jsonrpc":"2.0","method":"big","params":{"t":"` + strings.Repeat("w", 300<<10) + `"}}` + "\n"
		// The watch is armed around every read of the large messages, and
		// a reader descheduled inside one for the whole stall would see a
		// stall (at a load average of 17 on two cores, 50 ms did, once in
		// a hundred runs; the gate's is 10 s).
		const stall = 250 * time.Millisecond
		// The peer has written everything before the Stream reads: a
		// writer goroutine paused mid-message by a busy machine would be
		// a stall, rightly reported (seen under load). The bytes are in
		// the pipe, or ahead of it for io.Pipe, which holds none; silence
		// follows either way.
		wrote := func(t *testing.T, data string) io.Reader {
			connR, peerW := pipe(t)
			t.Cleanup(func() { peerW.Close() })
			f, ok := peerW.(*os.File)
			switch {
			case !ok:
				return io.MultiReader(strings.NewReader(data), connR)
			case !prefillPipe(t, f, data):
				go io.WriteString(peerW, data) // the pipe could not be sized
			}
			return connR
		}
		t.Run("whole then silence", func(t *testing.T) {
			r := wrote(t, big+big)
			s := NewStream(r, io.Discard, nil, Limits{ReadStall: stall})
			defer s.Close()
			for range 2 {
				if m, err := s.Read(readCtx(t)); err != nil || m.Method != "big" {
					t.Fatalf("Read = %v, %v", m, err)
				}
			}
			// Four times the stall: a watch still armed fires well within
			// it. (Its own end is the expected outcome, which a busy
			// machine only delays.)
			ctx, cancel := context.WithTimeout(context.Background(), 4*stall)
			defer cancel()
			if _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Read of an idle peer after large messages = %v; want it still waiting", err)
			}
		})
		t.Run("partial then silence", func(t *testing.T) {
			s := NewStream(wrote(t, big+big[:200<<10]), io.Discard, nil, Limits{ReadStall: stall})
			defer s.Close()
			ctx := readCtx(t)
			if m, err := s.Read(ctx); err != nil || m.Method != "big" {
				t.Fatalf("Read = %v, %v", m, err)
			}
			var fe *FramingError
			if _, err := s.Read(ctx); !errors.As(err, &fe) {
				t.Fatalf("Read of a large message stalled midway = %v; want a *FramingError", err)
			}
		})
	})
}

// TestStreamNearlyEqualLines: results of one tool differ by a few bytes
// (their ids); none of them may pin much more room than its own size, as a
// line one byte longer than the last one would if its buffer doubled.
func TestStreamNearlyEqualLines(t *testing.T) {
	var in bytes.Buffer
	const n = 20
	for i := range n {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"result":"%s"}`+"\n", i, strings.Repeat("v", 1<<20+(i*7)%5))
	}
	s := NewStream(&chunkReader{b: in.Bytes(), r: rand.New(rand.NewPCG(5, 6)), max: 2 << 20}, nopWriter{}, nil, Limits{})
	defer s.Close()
	for i := range n {
		m, err := s.Read(readCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if c := cap(m.Result); c > len(m.Result)*5/4+64<<10 {
			t.Errorf("message %d of %d bytes pins %d bytes", i, len(m.Result), c)
		}
	}
}
