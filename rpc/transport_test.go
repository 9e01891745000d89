package rpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// Tests of the seam itself: what every Transport promises its Conn, run
// over each wire.

func readCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

// A message that cannot be used is an error for that message alone, with
// its salvaged id; the next Read goes on.
func TestTransportMessageErrorIsPerMessage(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{MaxMessageBytes: 100})
		defer tr.Close()
		defer peer.close()
		big := `{"jsonrpc":"2.0","id":42,"method":"x","params":{"p":"` + strings.Repeat("y", 300) + `"}}`
		// A stream's peer blocks until everything is read.
		go peer.write("Server listening on stdio...\n" + big + "\n" + `{"jsonrpc":"2.0","id":"cut","result":{` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ok"}` + "\n")
		ctx := readCtx(t)
		for _, want := range []struct {
			code    int64
			id      string
			request bool
			reason  string
		}{
			{CodeParseError, "", false, "not valid JSON"},
			{CodeInvalidRequest, "42", true, "exceeds the limit of 100 bytes"},
			{CodeParseError, `"cut"`, false, "not valid JSON"},
		} {
			m, err := tr.Read(ctx)
			var me *MessageError
			if !errors.As(err, &me) || me.Code != want.code || string(me.ID) != want.id || me.Request != want.request || !strings.Contains(me.Reason, want.reason) {
				t.Fatalf("Read = %+v, %#v; want a *MessageError with code %d, id %q, request %v, reason %q", m, err, want.code, want.id, want.request, want.reason)
			}
			if len(me.Raw) == 0 || len(me.Raw) > salvageWindow+len(`Server listening on stdio...`) {
				t.Errorf("MessageError.Raw holds %d bytes; want the message or its head", len(me.Raw))
			}
		}
		m, err := tr.Read(ctx)
		if err != nil || string(m.ID) != "7" || m.Method != "ok" {
			t.Fatalf("Read after the bad messages = %+v, %v; want the next message", m, err)
		}
	})
}

// The peer ending its output is io.EOF, after what it wrote, for every
// later Read.
func TestTransportEOF(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{})
		defer tr.Close()
		defer peer.close()
		go func() {
			peer.write(`{"jsonrpc":"2.0","method":"last"}` + "\n")
			peer.closeWrite()
		}()
		ctx := readCtx(t)
		if m, err := tr.Read(ctx); err != nil || m.Method != "last" {
			t.Fatalf("Read = %+v, %v; want what was written before the end", m, err)
		}
		for range 2 {
			if m, err := tr.Read(ctx); m != nil || !errors.Is(err, io.EOF) {
				t.Fatalf("Read at the end = %+v, %v; want io.EOF", m, err)
			}
		}
		// This side can still write.
		if err := tr.Write(ctx, &Message{Method: "after"}); err != nil {
			t.Errorf("Write after the peer's end of output = %v", err)
		}
		if got := wait(t, peer.lines, "message"); got != `{"jsonrpc":"2.0","method":"after"}` {
			t.Errorf("the peer read %s", got)
		}
	})
}

// Read returns on its context and on Close while nothing comes; Write and
// Read after Close say ErrClosed.
func TestTransportReadReturnsOnCancelAndClose(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{})
		defer peer.close()
		ctx, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("stop")
		go func() { time.Sleep(10 * time.Millisecond); cancel(stop) }()
		if m, err := tr.Read(ctx); m != nil || err != stop {
			t.Errorf("Read with a cancelled context = %+v, %v; want its cause", m, err)
		}
		read := make(chan error, 1)
		go func() {
			_, err := tr.Read(context.Background())
			read <- err
		}()
		time.Sleep(10 * time.Millisecond)
		tr.Close()
		if err := wait(t, read, "Read after Close"); !errors.Is(err, ErrClosed) {
			t.Errorf("Read after Close = %v; want ErrClosed", err)
		}
		if err := tr.Write(context.Background(), &Message{Method: "x"}); !errors.Is(err, ErrClosed) {
			t.Errorf("Write after Close = %v; want ErrClosed", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})
}

// A peer that reads nothing makes a Write past the limit a *StallError; the
// transport stays open, and goes on once the peer reads.
func TestTransportStall(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{WriteTimeout: 30 * time.Millisecond})
		defer tr.Close()
		defer peer.close()
		// The wire's peer reads into a buffer of 1000 messages: fill it
		// and the transport's queue behind it.
		var err error
		for i := 0; i < 5000 && err == nil; i++ {
			err = tr.Write(context.Background(), &Message{Method: "n", Params: []byte(`{"pad":"` + strings.Repeat("p", 1024) + `"}`)})
		}
		var se *StallError
		if !errors.As(err, &se) || se.After != 30*time.Millisecond {
			t.Fatalf("Write to a peer that reads nothing = %v; want a *StallError", err)
		}
		// The peer reads again.
		go func() {
			for range peer.lines {
			}
		}()
		if err := tr.Write(readCtx(t), &Message{Method: "again"}); err != nil {
			t.Errorf("Write once the peer reads = %v", err)
		}
	})
}

// Flush returns once what was written before has reached the peer.
func TestTransportFlush(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{})
		defer tr.Close()
		defer peer.close()
		f, ok := tr.(Flusher)
		if !ok {
			t.Skip("not a Flusher")
		}
		ctx := readCtx(t)
		for _, m := range []string{"a", "b"} {
			if err := tr.Write(ctx, &Message{Method: m}); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Flush(ctx); err != nil {
			t.Fatalf("Flush = %v", err)
		}
		for _, m := range []string{"a", "b"} {
			if got := wait(t, peer.lines, "message"); !strings.Contains(got, `"`+m+`"`) {
				t.Errorf("the peer read %s; want %s", got, m)
			}
		}
	})
}

// Flush on a Pipe waits for the other end to read (a Stream's Flush waiting
// for its writes is TestDrainWaitsForResponsesToBeWritten).
func TestPipeFlushWaitsForTheReader(t *testing.T) {
	a, b := Pipe(Limits{})
	defer a.Close()
	defer b.Close()
	ctx := readCtx(t)
	if err := a.Write(ctx, &Message{Method: "m"}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := a.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while the other end reads nothing = %v; want it to wait", err)
	}
	if m, err := b.Read(ctx); err != nil || m.Method != "m" {
		t.Fatalf("Read = %+v, %v", m, err)
	}
	// A reader waiting for more passes the flush marks.
	go b.Read(ctx)
	if err := a.Flush(ctx); err != nil {
		t.Errorf("Flush once the other end has read = %v", err)
	}
}

// Writing to a peer that has gone is a *WriteError, and ends the transport:
// Read says so too.
func TestTransportWriteError(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tr, peer := w.connect(t, Limits{})
		defer tr.Close()
		peer.close()
		ctx := readCtx(t)
		err := tr.Write(ctx, &Message{Method: "lost"})
		if err == nil {
			err = tr.(Flusher).Flush(ctx)
		}
		var we *WriteError
		if !errors.As(err, &we) {
			t.Fatalf("Write and Flush to a peer that has gone = %v; want a *WriteError", err)
		}
		if _, err := tr.Read(ctx); !errors.As(err, &we) {
			t.Errorf("Read after a failed write = %v; want the *WriteError", err)
		}
	})
}

// A Pipe is a wire: a message is decoded on Read, so an invalid one written
// through it is an error for that message, and a message read is not the
// writer's memory.
func TestPipeEncodesAndDecodes(t *testing.T) {
	a, b := Pipe(Limits{})
	defer a.Close()
	defer b.Close()
	ctx := readCtx(t)
	params := []byte(`{"n" : 9007199254740993}`)
	if err := a.Write(ctx, &Message{ID: []byte(`12345678901234567890123`), Method: "m", Params: params}); err != nil {
		t.Fatal(err)
	}
	params[1] = 'X'
	m, err := b.Read(ctx)
	if err != nil || string(m.ID) != `12345678901234567890123` || string(m.Params) != `{"n" : 9007199254740993}` {
		t.Fatalf("Read = %+v, %v; want the message as written, byte for byte", m, err)
	}
	if err := a.Write(ctx, &Message{ID: []byte(`1`), Result: []byte(`{"cut":`)}); err != nil {
		t.Fatal(err)
	}
	var me *MessageError
	if _, err := b.Read(ctx); !errors.As(err, &me) || string(me.ID) != "1" {
		t.Errorf("Read of an invalid message = %v; want a *MessageError with its id", err)
	}
}

// A Conn whose transport can no longer reach the peer closes with that
// cause, whatever the transport: here the other end of a Pipe has gone.
func TestConnWriteErrorOverPipe(t *testing.T) {
	a, b := Pipe(Limits{})
	b.Close()
	c := New(a, funcs{}, Options{Peer: "host", Logger: testLogger(t)})
	defer c.Close()
	_, err := c.Call(readCtx(t), "x", nil)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "writing to host: io: read/write on closed pipe") {
		t.Errorf("Call to a peer that has gone = %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("a write error did not close the connection")
	}
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "closed pipe") {
		t.Errorf("Run = %v; want the write error", err)
	}
}
