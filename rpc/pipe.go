package rpc

import (
	"bytes"
	"context"
	"io"
	"sync"
)

// Pipe returns the two ends of an in-memory Transport: what one end writes,
// the other reads. It is for tests, and behaves as a wire does rather than
// as a channel of values: each message is encoded on Write and decoded on
// Read, so ids, raw payloads, size limits and the errors for a message
// that cannot be used are those of a Stream (without a newline to count).
//
// Each direction holds as many messages as a Stream's queue. A writer that
// finds it full waits as Transport.Write says, and lim.WriteTimeout counts
// the other end's Reads as progress. Closing one end makes the other's
// Read return io.EOF once it has read what was written before, and its
// Write fail with a *WriteError, as a closed pipe does.
func Pipe(lim Limits) (a, b *PipeEnd) {
	a = &PipeEnd{done: make(chan struct{}), eof: make(chan struct{}), max: lim.maxMessageBytes()}
	b = &PipeEnd{done: make(chan struct{}), eof: make(chan struct{}), max: lim.maxMessageBytes()}
	a.peer, b.peer = b, a
	for _, e := range []*PipeEnd{a, b} {
		e.out = newSendQueue(e.done, e.closedErr, lim.WriteTimeout)
		e.out.broken, e.out.onBroken = e.peer.done, e.broken
	}
	return a, b
}

// A PipeEnd is one end of a Pipe. Its methods follow Transport.
type PipeEnd struct {
	// Set at construction.
	peer *PipeEnd
	out  *sendQueue    // what this end writes; the peer reads it
	max  int           // bound on what this end reads
	done chan struct{} // closed by Close or a write failure
	eof  chan struct{} // closed when this end will write no more (Close or closeWrite)

	closeOnce, eofOnce sync.Once
	mu                 sync.Mutex
	err                error // a *WriteError, or nil
}

var _ interface {
	Transport
	Flusher
} = (*PipeEnd)(nil)

// Read returns the next message the other end wrote; see Transport.
func (e *PipeEnd) Read(ctx context.Context) (*Message, error) {
	for {
		b, err := e.readRaw(ctx)
		if err != nil {
			return nil, err
		}
		if len(b) > e.max {
			head, tail := b[:min(len(b), salvageWindow)], b[max(0, len(b)-salvageWindow):]
			return nil, oversized(len(b), e.max, head, tail)
		}
		m, err := Decode(b)
		if err != nil {
			return nil, messageError(err, b)
		}
		return m, nil
	}
}

// readRaw returns the bytes of the next message the other end wrote.
func (e *PipeEnd) readRaw(ctx context.Context) ([]byte, error) {
	in := e.peer.out
	for {
		select {
		case <-e.done:
			return nil, e.closedErr()
		default:
		}
		var o outgoing
		select {
		case o = <-in.ch:
		case <-e.peer.eof:
			// What was written before the end still counts.
			select {
			case o = <-in.ch:
			default:
				return nil, io.EOF
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-e.done:
			return nil, e.closedErr()
		}
		in.progressed()
		if o.flushed != nil {
			close(o.flushed)
			continue
		}
		return o.msg, nil
	}
}

// Write encodes m and queues it for the other end; see Transport.
func (e *PipeEnd) Write(ctx context.Context, m *Message) error {
	b, err := encodeMessage(m)
	if err != nil {
		return err
	}
	return e.send(ctx, b)
}

// writeRaw queues a copy of b, any bytes at all, as one message for the
// other end (for tests of what a peer may send).
func (e *PipeEnd) writeRaw(ctx context.Context, b []byte) error {
	return e.send(ctx, bytes.Clone(b))
}

// send queues b, which the other end then owns.
func (e *PipeEnd) send(ctx context.Context, b []byte) error {
	select {
	case <-e.peer.done:
		return e.broken()
	case <-e.eof:
		return e.closedErr()
	default:
	}
	return e.out.put(ctx, outgoing{msg: b})
}

// tryWrite queues m if there is room at once.
func (e *PipeEnd) tryWrite(m *Message) (bool, error) {
	b, err := encodeMessage(m)
	if err != nil {
		return false, err
	}
	return e.out.tryPut(outgoing{msg: b}), nil
}

// Flush waits until the other end has read every message written before.
func (e *PipeEnd) Flush(ctx context.Context) error { return e.out.flush(ctx) }

// closeWrite ends this end's direction only, as closing the write end of a
// stream does: the other end reads io.EOF after what was written, and this
// end still reads.
func (e *PipeEnd) closeWrite() {
	e.eofOnce.Do(func() { close(e.eof) })
}

// Close closes this end; see Transport.
func (e *PipeEnd) Close() error {
	e.closeOnce.Do(func() {
		close(e.done)
		e.closeWrite()
	})
	return nil
}

// broken fails this end because the other has closed: written to a pipe
// nobody reads, a message is lost, and the pipe is broken.
func (e *PipeEnd) broken() error {
	e.fail(&WriteError{Err: io.ErrClosedPipe})
	return e.closedErr()
}

func (e *PipeEnd) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
	_ = e.Close()
}

func (e *PipeEnd) closedErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	return ErrClosed
}
