package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Stream bounded in bytes holds at most its bound queued (one larger
// message alone), lets as many bytes again wait, refuses a large message
// beyond that at once, and stops reading its peer while full.
func TestQueueBytesBound(t *testing.T) { forPipes(t, testQueueBytesBound) }

func testQueueBytesBound(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
	connR, peerW := pipe(t)
	defer peerW.Close()
	w := newGatedWriter()
	defer close(w.closed)
	const bound = 64 << 10
	s := NewStream(connR, w, nil, Limits{QueueBytes: bound})
	defer s.Close()
	ctx := context.Background()
	big := func(n int) *Message {
		return &Message{Method: "m", Params: json.RawMessage(`{"t":"` + strings.Repeat("x", n) + `"}`)}
	}
	// The first message larger than the bound goes alone (the writer takes
	// it and blocks on the peer); the next fills the queue to the bound.
	if err := s.Write(ctx, big(2*bound)); err != nil {
		t.Fatal(err)
	}
	<-w.started
	// Waits for room: the queue holds the first, being written.
	waited := make(chan error, 1)
	go func() { waited <- s.Write(ctx, big(bound/2)) }()
	// Wait until it is counted as waiting.
	deadline := time.Now().Add(hang)
	for {
		s.q.bytes.mu.Lock()
		n := s.q.bytes.waiting
		s.q.bytes.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second message did not wait for room")
		}
		time.Sleep(time.Millisecond)
	}
	// As many bytes again wait already: a large message is refused at once...
	var qf *QueueFullError
	if err := s.Write(ctx, big(bound)); !errors.As(err, &qf) {
		t.Fatalf("Write past the waiting room = %v; want a *QueueFullError", err)
	}
	// ... a short one waits.
	short := make(chan error, 1)
	go func() { short <- s.Write(ctx, &Message{Method: "short"}) }()

	// The Stream does not read its peer while full.
	readCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	go func() { io.WriteString(peerW, `{"jsonrpc":"2.0","method":"n"}`+"\n") }()
	if _, err := s.Read(readCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read while the queue is full = %v; want it to wait", err)
	}
	// The peer reads: everything waiting goes, and reading resumes.
	close(w.tokens)
	for _, c := range []chan error{waited, short} {
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(hang):
			t.Fatal("a waiting Write did not return once the peer read")
		}
	}
	rctx, cancel2 := context.WithTimeout(ctx, hang)
	defer cancel2()
	if m, err := s.Read(rctx); err != nil || m.Method != "n" {
		t.Fatalf("Read once the peer reads again = %v, %v", m, err)
	}
}

// A Conn drops a large result its transport refuses, answering the
// request with a short error instead, and says so (OnDropped).
func TestResponseDroppedWhenQueueFull(t *testing.T) {
	connR, peerW := io.Pipe()
	defer peerW.Close()
	w := newGatedWriter()
	defer close(w.closed)
	const bound = 16 << 10
	dropped := make(chan int, 10)
	result := json.RawMessage(`{"t":"` + strings.Repeat("r", 2*bound) + `"}`)
	// The results come once all three requests are in (a full queue stops
	// the reading of requests).
	var arrived sync.WaitGroup
	arrived.Add(3)
	c := New(NewStream(connR, w, nil, Limits{QueueBytes: bound}), funcs{call: func(context.Context, *Message) (json.RawMessage, error) {
		arrived.Done()
		arrived.Wait()
		return result, nil
	}}, Options{Peer: "host", Logger: testLogger(t), ResponseWait: time.Minute, OnDropped: func(_ *Message, size int, _ error) { dropped <- size }})
	go c.Run(context.Background())
	defer c.Close()
	// Three calls: the first result is written (and blocks on the peer),
	// the second waits, the third finds the waiting room full.
	for _, id := range []string{"1", "2", "3"} {
		io.WriteString(peerW, `{"jsonrpc":"2.0","id":`+id+`,"method":"m"}`+"\n")
	}
	select {
	case n := <-dropped:
		if n != len(result) {
			t.Errorf("dropped %d bytes; want %d", n, len(result))
		}
	case <-time.After(hang):
		t.Fatal("no result was dropped")
	}
	close(w.tokens)
	deadline := time.Now().Add(hang)
	for strings.Count(w.written(), "\n") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("not every request was answered: %d lines", strings.Count(w.written(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out := w.written(); strings.Count(out, "because the host was not reading its input") != 1 {
		t.Errorf("want exactly one request answered with the drop error; got %.300s", out)
	}
}

// An upstream line with no end, and a partial message followed by silence,
// end the Stream with a *FramingError; a Conn on it fails its calls.
func TestFramingErrors(t *testing.T) { forPipes(t, testFramingErrors) }

func testFramingErrors(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
	t.Run("endless", func(t *testing.T) {
		connR, peerW := pipe(t)
		defer peerW.Close()
		s := NewStream(connR, io.Discard, nil, Limits{MaxMessageBytes: 1 << 10, MaxSkipBytes: 8 << 10})
		defer s.Close()
		go func() {
			io.WriteString(peerW, `{"jsonrpc":"2.0","id":1,"result":"`)
			for {
				if _, err := io.WriteString(peerW, strings.Repeat("x", 4096)); err != nil {
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		var fe *FramingError
		if _, err := s.Read(ctx); !errors.As(err, &fe) || !strings.Contains(err.Error(), "endless") {
			t.Fatalf("Read of an endless line = %v; want a *FramingError", err)
		}
		connR.Close()
	})
	t.Run("oversized but finite", func(t *testing.T) {
		connR, peerW := pipe(t)
		defer peerW.Close()
		s := NewStream(connR, io.Discard, nil, Limits{MaxMessageBytes: 1 << 10, MaxSkipBytes: 8 << 10})
		defer s.Close()
		go io.WriteString(peerW, `{"jsonrpc":"2.0","id":1,"result":"`+strings.Repeat("x", 4<<10)+`"}`+"\n"+`{"jsonrpc":"2.0","method":"next"}`+"\n")
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		var me *MessageError
		if _, err := s.Read(ctx); !errors.As(err, &me) {
			t.Fatalf("Read of an oversized line = %v; want a *MessageError for it alone", err)
		}
		if m, err := s.Read(ctx); err != nil || m.Method != "next" {
			t.Fatalf("Read after it = %v, %v", m, err)
		}
	})
	t.Run("partial then silence", func(t *testing.T) {
		connR, peerW := pipe(t)
		defer peerW.Close()
		s := NewStream(connR, io.Discard, nil, Limits{ReadStall: 200 * time.Millisecond})
		defer s.Close()
		c := New(s, funcs{}, Options{Peer: "upstream", Logger: testLogger(t)})
		go c.Run(context.Background())
		defer c.Close()
		go io.WriteString(peerW, `{"jsonrpc":"2.0","method":"whole"}`+"\n"+`{"jsonrpc":"2.0","id":1,"res`)
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		_, err := c.Call(ctx, "m", nil)
		if err == nil || !strings.Contains(err.Error(), "and then nothing for 200ms") {
			t.Fatalf("Call pending on a stalled partial message = %v; want the stall named", err)
		}
		connR.Close()
	})
	t.Run("whole lines and silence", func(t *testing.T) {
		connR, peerW := pipe(t)
		defer peerW.Close()
		s := NewStream(connR, io.Discard, nil, Limits{ReadStall: 50 * time.Millisecond})
		defer s.Close()
		go io.WriteString(peerW, `{"jsonrpc":"2.0","method":"whole"}`+"\n")
		if _, err := s.Read(readCtx(t)); err != nil {
			t.Fatal(err)
		}
		// Six times the stall; its end is the expected outcome, which a
		// busy machine only delays.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		// Silence after whole messages is an idle peer, not a stall.
		if _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read of an idle peer = %v; want it still waiting", err)
		}
	})
}

// forPipes runs a Stream test over io.Pipe, which a Stream reads with a
// goroutine of its own, and over os.Pipe, whose pollable descriptor it
// reads in direct mode on Read's goroutine: every limit must hold in both.
func forPipes(t *testing.T, test func(*testing.T, func(*testing.T) (io.ReadCloser, io.WriteCloser))) {
	t.Run("goroutine", func(t *testing.T) {
		test(t, func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() })
	})
	t.Run("direct", func(t *testing.T) {
		test(t, func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w
		})
	})
}

// A direct-mode Stream is in direct mode (the forPipes tests would
// otherwise test goroutine mode twice).
func TestForPipesDirect(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("direct mode is Linux's")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := NewStream(r, io.Discard, r, Limits{ReadStall: time.Second})
	defer s.Close()
	if s.rdl == nil {
		t.Fatal("a Stream over os.Pipe with a stall watch is not in direct mode")
	}
}

// A message with a large payload, sent as head, payload and tail, reaches
// the peer byte for byte as the one-buffer encoding would, also when the
// peer takes it in small reads (partial writes that split any part), and
// messages written after it stay behind it.
func TestLargePayloadWireForm(t *testing.T) { forPipes(t, testLargePayloadWireForm) }

func testLargePayloadWireForm(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
	peerR, connW := pipe(t)
	idle, _ := io.Pipe()
	s := NewStream(idle, connW, nil, Limits{QueueBytes: 256 << 10})
	defer s.Close()
	big := strings.Repeat("r", 300<<10)
	msgs := []*Message{
		{ID: json.RawMessage(`7`), Result: json.RawMessage(`{"t":"` + big + `"}`)},
		{Method: "notifications/message", Params: json.RawMessage(`{"data":"` + big + `"}`)},
		{ID: json.RawMessage(`"x"`), Method: "tools/call", Params: json.RawMessage(`{"name":"n","arguments":{"a":"` + big + `"}}`)},
		{ID: json.RawMessage(`8`), Result: json.RawMessage(`{}`)},
		{ID: json.RawMessage(`9`), Error: &Error{Code: -32000, Message: "m", Data: json.RawMessage(`"` + big + `"`)}},
	}
	var want bytes.Buffer
	for _, m := range msgs {
		b, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		want.Write(append(b, '\n'))
	}
	got := make(chan []byte, 1)
	go func() {
		// Small reads, slowly at first: the pipe fills and the writes
		// that follow are partial.
		var out bytes.Buffer
		buf := make([]byte, 3000)
		for out.Len() < want.Len() {
			if out.Len() < 200<<10 {
				time.Sleep(50 * time.Microsecond)
			}
			n, err := peerR.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- out.Bytes()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	for _, m := range msgs {
		if err := s.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, want.Bytes()) {
			t.Fatalf("the peer read %d bytes that differ from the %d of the one-buffer encoding", len(b), want.Len())
		}
	case <-time.After(hang):
		t.Fatal("the peer did not receive every message")
	}
	// The writer releases a message's bytes just after its last write
	// returns, which may be just after the peer read them.
	deadline := time.Now().Add(hang)
	for {
		s.q.bytes.mu.Lock()
		queued := s.q.bytes.queued
		s.q.bytes.mu.Unlock()
		if queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still accounted in the queue once everything was read", queued)
		}
		time.Sleep(time.Millisecond)
	}
}
