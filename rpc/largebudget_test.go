package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// largeResult is a response line with a result of about n bytes.
func largeResult(id, n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}`+"\n", id, strings.Repeat("x", n))
}

// pacedStream is a Stream paced under its own budget (so that no other
// test's lines count), reading what the test writes to the returned file.
func pacedStream(t *testing.T, b *lineBudget) (*Stream, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(pr, nopWriter{}, pr, Limits{PaceLargeLines: true})
	s.budget = b
	t.Cleanup(func() { s.Close(); pw.Close() })
	return s, pw
}

// sliceWriter copies what it is given into room made beforehand, so that
// the test's measure of what the relay allocates counts the relay's alone.
type sliceWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// A large result read from an upstream's Stream and written to the host's
// goes out from the very bytes it was read into: the host's writer is
// given the upstream's slice (its line is released as written, which only
// a payload in that line's memory does), and relaying it allocates the
// line and no copy. Both ways of writing are covered: the writer
// goroutine's (an io.Writer) and the direct write to a non-blocking pipe.
func TestLargeResultIsWrittenFromItsLine(t *testing.T) {
	const size, calls = 1 << 20, 6
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			b := newLineBudget(1 << 30) // never waits: the writes are what is looked at
			up, pw := pacedStream(t, b)
			var in bytes.Buffer
			for i := range calls {
				in.WriteString(largeResult(i+1, size))
			}
			go func() { pw.Write(in.Bytes()) }()

			// What the host is to read: the same lines, with the host's id.
			want := strings.ReplaceAll(strings.ReplaceAll(in.String(), `"id":`, `"id":"h`), `,"result"`, `","result"`)
			got := &sliceWriter{buf: make([]byte, 0, len(want)+1024)}
			var host *Stream
			drained := make(chan struct{})
			if direct {
				hr, hw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				host = NewStream(strings.NewReader(""), hw, hw, Limits{})
				if host.tw == nil {
					t.Fatal("the host pipe is not written directly")
				}
				chunk := make([]byte, 256<<10)
				go func() {
					defer close(drained)
					for {
						n, err := hr.Read(chunk)
						got.Write(chunk[:n])
						if err != nil {
							return
						}
					}
				}()
			} else {
				host = NewStream(strings.NewReader(""), got, nil, Limits{})
				close(drained)
			}
			defer host.Close()

			ctx := readCtx(t)
			// The first line sizes the reader's room for the rest.
			var before, after runtime.MemStats
			for i := range calls {
				if i == 1 {
					runtime.GC()
					runtime.ReadMemStats(&before)
				}
				m, err := up.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				lease := leaseOf(m)
				if lease == nil {
					t.Fatalf("call %d: a %d-byte line is not counted in flight", i+1, len(m.Result))
				}
				id := json.RawMessage(fmt.Sprintf(`"h%d"`, i+1))
				if err := host.Write(ctx, &Message{ID: id, Result: m.Result}); err != nil {
					t.Fatal(err)
				}
				if err := host.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if !lease.isReleased() {
					t.Fatalf("call %d: the line is still in flight once written: the host's writer did not send the upstream's bytes", i+1)
				}
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / (calls - 1); per > size*3/2 {
				t.Errorf("relaying a %d-byte result allocates %d bytes: more than its line, so it was copied", size, per)
			}
			if b.inFlight() != 0 {
				t.Errorf("%d bytes still in flight once every line is written", b.inFlight())
			}
			host.Close() // closes the pipe: its reader ends
			<-drained
			got.mu.Lock()
			defer got.mu.Unlock()
			if string(got.buf) != want {
				t.Errorf("the host read %d bytes, not the %d relayed", len(got.buf), len(want))
			}
		})
	}
}

// A paced reader whose budget is full still hands out the small messages
// framed ahead of the next large one; it reads that large one once lines
// in flight are released, and not before (its wait is set to an hour
// here); another paced Stream under the same budget goes on delivering its
// small responses meanwhile.
func TestPacedReaderWaitsForRoom(t *testing.T) {
	b := newLineBudget(1 << 20)
	b.wait = time.Hour
	up, pw := pacedStream(t, b)
	other, opw := pacedStream(t, b)
	go func() {
		io.WriteString(pw, largeResult(1, 1200<<10)+`{"jsonrpc":"2.0","id":2,"result":{}}`+"\n"+largeResult(3, 1200<<10)+`{"jsonrpc":"2.0","id":4,"result":{}}`+"\n")
	}()
	ctx := readCtx(t)
	readID := func(s *Stream, want string) *Message {
		t.Helper()
		m, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.ID) != want {
			t.Fatalf("read id %s, want %s", m.ID, want)
		}
		return m
	}
	m1 := readID(up, "1")
	if b.inFlight() < b.max {
		t.Fatalf("%d bytes in flight after a 1.2 MB line; the budget is %d", b.inFlight(), b.max)
	}
	readID(up, "2") // small: never waits

	got := make(chan *Message, 1)
	go func() {
		m, err := up.Read(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	select {
	case m := <-got:
		t.Fatalf("read id %s while the lines in flight held the budget", m.ID)
	case <-time.After(200 * time.Millisecond):
	}
	// Another upstream's small responses are not held up.
	go io.WriteString(opw, `{"jsonrpc":"2.0","id":9,"result":{}}`+"\n")
	readID(other, "9")

	leaseOf(m1).release() // written to the host, say
	select {
	case m := <-got:
		if string(m.ID) != "3" {
			t.Fatalf("read id %s, want 3", m.ID)
		}
	case <-time.After(hang):
		t.Fatal("the reader did not go on once the budget had room")
	}
	readID(up, "4")
}

// The wait for room is bounded (a host slow to read, a result no one
// writes, must not stop an upstream for good), ends when the Stream is
// closed, and lines no one refers to any more are released when collected.
func TestPacedReaderWaitEnds(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		b := newLineBudget(1 << 20)
		b.wait = 50 * time.Millisecond
		up, pw := pacedStream(t, b)
		go io.WriteString(pw, largeResult(1, 1200<<10)+largeResult(2, 1200<<10))
		ctx := readCtx(t)
		m1, err := up.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := up.Read(ctx)
		if err != nil || string(m2.ID) != "2" {
			t.Fatalf("second read: %v, %v", m2, err)
		}
		runtime.KeepAlive(m1)
	})
	t.Run("closed", func(t *testing.T) {
		b := newLineBudget(1 << 20)
		b.wait = time.Hour
		up, pw := pacedStream(t, b)
		go io.WriteString(pw, largeResult(1, 1200<<10)+largeResult(2, 1200<<10))
		ctx := readCtx(t)
		m1, err := up.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		// A context that never ends: only Close can end the wait.
		go func() { _, err := up.Read(context.Background()); errc <- err }()
		time.Sleep(50 * time.Millisecond)
		up.Close()
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("read after Close: %v, want ErrClosed", err)
			}
		case <-time.After(hang):
			t.Fatal("Close did not end the wait for room")
		}
		runtime.KeepAlive(m1)
	})
	t.Run("collected", func(t *testing.T) {
		b := newLineBudget(1 << 30)
		up, pw := pacedStream(t, b)
		go io.WriteString(pw, largeResult(1, 1200<<10))
		if _, err := up.Read(readCtx(t)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(hang)
		for b.inFlight() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes still in flight after the line was dropped and collected", b.inFlight())
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// A large response that its caller, serving a host request, does not pass
// on as it is (the guard replaced it, the call was refused) is no longer
// in flight once that request is answered; nor is one the gate asked for
// itself, once its caller has it.
func TestLargeResponseReleasedWhenAnswered(t *testing.T) {
	b := newLineBudget(1 << 30)
	// The upstream: answers every request with a large result.
	toUp, upIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromUp, upOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer upOut.Close()
	go func() {
		dec := json.NewDecoder(toUp)
		for {
			var req struct{ ID json.RawMessage }
			if dec.Decode(&req) != nil {
				return
			}
			io.WriteString(upOut, strings.Replace(largeResult(0, 512<<10), `"id":0`, `"id":`+string(req.ID), 1))
		}
	}()
	us := NewStream(fromUp, upIn, closerFunc(func() error { fromUp.Close(); return upIn.Close() }), Limits{PaceLargeLines: true})
	us.budget = b
	log := slog.New(slog.DiscardHandler)
	up := New(us, funcs{}, Options{Peer: "upstream", Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go up.Run(ctx)
	defer up.Close()

	// The gate's own call: released as its caller gets it.
	if _, err := up.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	if n := b.inFlight(); n != 0 {
		t.Fatalf("%d bytes in flight after a call of the gate's own returned", n)
	}

	// A host request whose handler replaces the result.
	hostEnd, client := Pipe(Limits{})
	host := New(hostEnd, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		if _, err := up.Call(ctx, "tools/call", req.Params); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[],"isError":true}`), nil
	}}, Options{Peer: "host", Logger: log})
	go host.Run(ctx)
	defer host.Close()
	if err := client.Write(ctx, &Message{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"content":[],"isError":true}` {
		t.Fatalf("host got %s", resp.Result)
	}
	deadline := time.Now().Add(hang)
	for b.inFlight() != 0 { // settled just after the response is written
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in flight after the request was answered without them", b.inFlight())
		}
		time.Sleep(time.Millisecond)
	}
}

// The process's budget is per P: the stdio session, on one P, keeps two
// 1 MB results in flight; a process serving on every CPU (the HTTP front
// end) does not make its sessions take turns two lines at a time.
func TestLineBudgetPerP(t *testing.T) {
	b := &lineBudget{max: 1 << 20, perP: true, wait: 20 * time.Millisecond, room: make(chan struct{})}
	b.add(1200 << 10)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if !b.await() {
		t.Error("with one P, 1.2 MB in flight did not make a 1 MB budget wait")
	}
	runtime.GOMAXPROCS(2)
	if b.await() {
		t.Error("with two Ps, 1.2 MB in flight made a budget of 1 MB per P wait")
	}
}

// A large notification is no longer in flight once it has been handled
// (passed on or not), though its handler keeps it.
func TestLargeNotificationReleased(t *testing.T) {
	b := newLineBudget(1 << 30)
	up, pw := pacedStream(t, b)
	kept := make(chan *Message, 1)
	c := New(up, funcs{notify: func(m *Message) { kept <- m }}, Options{Peer: "upstream", Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	defer c.Close()
	go io.WriteString(pw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`+strings.Repeat("y", 300<<10)+`"}}`+"\n")
	m := <-kept
	deadline := time.Now().Add(hang)
	for b.inFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in flight after the notification was handled", b.inFlight())
		}
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(m)
}

// A large request dropped for reusing the id of one in progress is let go
// at once, not left in flight until a collection.
func TestLargeDuplicateRequestReleased(t *testing.T) {
	b := newLineBudget(1 << 30)
	up, pw := pacedStream(t, b)
	started, release := make(chan struct{}, 2), make(chan struct{})
	bad := make(chan *MessageError, 2)
	c := New(up, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		started <- struct{}{}
		<-release
		return json.RawMessage(`{}`), nil
	}}, Options{Peer: "upstream", Logger: slog.New(slog.DiscardHandler), OnBadInput: func(me *MessageError) { bad <- me }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	defer c.Close()
	defer close(release)
	go io.WriteString(pw, `{"jsonrpc":"2.0","id":"d","method":"x"}`+"\n")
	<-started
	go io.WriteString(pw, `{"jsonrpc":"2.0","id":"d","method":"x","params":{"data":"`+strings.Repeat("y", 300<<10)+`"}}`+"\n")
	<-bad
	deadline := time.Now().Add(hang)
	for b.inFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in flight after the duplicate request was dropped", b.inFlight())
		}
		time.Sleep(time.Millisecond)
	}
}

// A line whose first read was interrupted (the reader's context ended
// mid-line) becomes large in readInto rather than readFragment: it is
// paced the same.
func TestPacedReaderInterruptedLine(t *testing.T) {
	b := newLineBudget(1 << 20)
	b.wait = time.Hour
	up, pw := pacedStream(t, b)
	go io.WriteString(pw, largeResult(1, 1200<<10))
	m1, err := up.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	line := largeResult(2, 300<<10)
	if _, err := io.WriteString(pw, line[:10<<10]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := up.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read of a partial line: %v, want the context's end", err)
	}
	go io.WriteString(pw, line[10<<10:])
	got := make(chan *Message, 1)
	go func() {
		m, err := up.Read(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	select {
	case m := <-got:
		t.Fatalf("read id %s while the lines in flight held the budget", m.ID)
	case <-time.After(200 * time.Millisecond):
	}
	leaseOf(m1).release()
	select {
	case m := <-got:
		if string(m.ID) != "2" {
			t.Fatalf("read id %s, want 2", m.ID)
		}
	case <-time.After(hang):
		t.Fatal("the reader did not go on once the budget had room")
	}
}

// noDeadline is a pipe whose read deadline is never set (a Close's past
// deadline does not interrupt it) and that the Stream does not close: only
// the Stream's own state can end a read of it.
type noDeadline struct{ *os.File }

func (noDeadline) SetReadDeadline(time.Time) error { return nil }

// A read waiting for room when the Stream is closed ends with ErrClosed,
// whatever the input still holds: it does not go on to read the line it
// waited for (a Close reached the wait before the reader was cut off).
func TestPacedReaderClosedInWaitReadsNoMore(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	b := newLineBudget(1 << 20)
	b.wait = time.Hour
	up := NewStream(noDeadline{pr}, nopWriter{}, nil, Limits{PaceLargeLines: true})
	up.budget = b
	t.Cleanup(func() { up.Close() })
	go io.WriteString(pw, largeResult(1, 1200<<10)+largeResult(2, 1200<<10))
	m1, err := up.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := up.Read(context.Background()); errc <- err }()
	deadline := time.Now().Add(hang)
	for b.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second read did not wait for room")
		}
		time.Sleep(time.Millisecond)
	}
	up.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("a read waiting for room when the Stream closed: %v, want ErrClosed", err)
		}
	case <-time.After(hang):
		t.Fatal("Close did not end the wait for room")
	}
	runtime.KeepAlive(m1)
}
