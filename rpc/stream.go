package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultMaxMessageBytes bounds one message when Limits.MaxMessageBytes is 0.
const DefaultMaxMessageBytes = 32 << 20

// writeChunk is the most a Stream hands to its writer at once, so that the
// progress of a large message is visible to Limits.WriteTimeout: a peer
// reading a 30 MB result slowly is still reading.
const writeChunk = 64 << 10

// A Stream is a Transport of newline-delimited messages over a byte stream:
// the gate's stdin and stdout, the pipes of an upstream child.
//
// It reads line by line rather than with a stream decoder, so one malformed
// or oversized line costs that message alone. A line longer than the limit
// is consumed to its end without being kept, except for its head and tail,
// from which its id is salvaged. Blank lines are skipped; a last message
// without a newline still counts; a CR before the newline is dropped.
//
// Neither direction can hold up the other or the Stream's user: a goroutine
// of its own reads, so Read returns on cancellation or Close even while a
// read is blocked (closing os.Stdin does not unblock a read from it), and a
// goroutine of its own writes from a bounded queue, so a peer that stops
// reading makes writers wait only as long as their context, the Stream and
// Limits.WriteTimeout allow. Both goroutines end when the Stream closes,
// or, for one blocked in the byte stream, when that read or write returns:
// closing the stream (the closer, or the peer ending) lets them go.
type Stream struct {
	// Set at construction.
	r      *bufio.Reader // used by the reader goroutine only
	w      io.Writer     // used by the writer goroutine only
	closer io.Closer
	max    int
	q      *sendQueue
	// skipMax bounds how far an oversized line is skipped (MaxSkipBytes).
	skipMax int
	// watch, when not nil, is the reader under r that times a partial
	// message's stall (ReadStall); framing is closed with framingErr set
	// when the peer's framing ends the Stream (a stall, an endless line).
	watch      *stallReader
	framing    chan struct{}
	framingErr error
	framingOne sync.Once
	done       chan struct{} // closed by Close or a write failure

	readOnce sync.Once
	lines    chan readResult // the reader goroutine's lines, unbuffered
	ended    chan struct{}   // closed when the reader goroutine has read its last
	readErr  error           // why; written before ended is closed
	// lineHint is the length of the last line that took more than one
	// read (the reader goroutine's alone): the next such line starts with
	// that much room, so a run of large messages costs one allocation and
	// one copy each instead of a doubling buffer's repeated growth.
	lineHint int

	closeOnce sync.Once
	mu        sync.Mutex
	err       error // a *WriteError, or nil
}

// readResult is one line read from the stream.
type readResult struct {
	line, tail []byte
	tooBig     int
}

var _ interface {
	Transport
	Flusher
} = (*Stream)(nil)

// NewStream returns a Stream that reads from r and writes to w. closer, if
// not nil, is closed by Close (to unblock the reader and the writer); the
// host's stdin cannot be, and its Stream has none. NewStream starts the
// writer goroutine: a Stream must be closed.
func NewStream(r io.Reader, w io.Writer, closer io.Closer, lim Limits) *Stream {
	var watch *stallReader
	if lim.ReadStall > 0 {
		watch = &stallReader{r: r, stall: lim.ReadStall}
		r = watch
	}
	s := &Stream{
		r:       bufio.NewReaderSize(r, 64<<10),
		w:       w,
		closer:  closer,
		max:     lim.maxMessageBytes(),
		done:    make(chan struct{}),
		lines:   make(chan readResult),
		ended:   make(chan struct{}),
		watch:   watch,
		framing: make(chan struct{}),
	}
	s.q = newSendQueue(s.done, s.closedErr, lim.WriteTimeout)
	s.q.bytes = newByteBound(lim.QueueBytes)
	s.skipMax = lim.MaxSkipBytes
	if watch != nil {
		watch.timer = time.AfterFunc(time.Hour, func() {
			s.failFraming(fmt.Errorf("the peer wrote part of a message (%d bytes) and then nothing for %s", watch.pending(), watch.stall))
		})
		watch.timer.Stop()
	}
	go s.writeLoop()
	return s
}

// Read returns the next message; see Transport.
func (s *Stream) Read(ctx context.Context) (*Message, error) {
	s.readOnce.Do(func() { go s.readLoop() })
	for {
		select {
		case <-s.done:
			return nil, s.closedErr()
		default:
		}
		if s.q.bytes != nil {
			// The peer is not reading what is queued for it: take on
			// nothing more of its work until it does.
			if err := s.q.bytes.awaitRoom(ctx, s.done, s.ended); err != nil {
				if errors.Is(err, ErrClosed) {
					return nil, s.closedErr()
				}
				return nil, err
			}
		}
		var r readResult
		select {
		case r = <-s.lines:
		case <-s.framing:
			return nil, s.framingErr
		case <-s.ended:
			return nil, s.readErr
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.done:
			return nil, s.closedErr()
		}
		if r.tooBig > 0 {
			return nil, oversized(r.tooBig, s.max, r.line, r.tail)
		}
		if len(bytes.TrimSpace(r.line)) == 0 {
			continue
		}
		m, err := Decode(r.line)
		if err != nil {
			return nil, messageError(err, r.line)
		}
		return m, nil
	}
}

// readLoop reads lines and hands them to Read until the stream ends. Every
// send also watches done: nothing is handed over once the Stream is closed.
func (s *Stream) readLoop() {
	for {
		var r readResult
		var err error
		r.line, r.tail, r.tooBig, err = s.readLine()
		if err != nil {
			s.readErr = err
			close(s.ended)
			return
		}
		select {
		case s.lines <- r:
		case <-s.done:
			return
		}
	}
}

// readLine returns the next line without its terminator. A line longer than
// the limit is consumed to its end and reported by its size, with only its
// head and tail kept (for salvaging its ID).
func (s *Stream) readLine() (line, tail []byte, tooBig int, err error) {
	var buf []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		if s.watch != nil {
			s.watch.consumed(len(frag), err == nil)
		}
		switch {
		case tooBig == 0 && len(buf)+len(frag) <= s.max+2:
			if buf == nil && err != nil && errors.Is(err, bufio.ErrBufferFull) {
				// The line goes on past the reader's buffer: make room
				// for it at once, as large as the last such line was.
				buf = make([]byte, 0, min(max(s.lineHint, 4*len(frag)), s.max+2))
			}
			buf = append(buf, frag...)
		case tooBig == 0:
			tooBig = len(buf) + len(frag)
			if len(buf) > salvageWindow {
				// A copy: the head must not pin the room made for the
				// whole line while its error is handled.
				buf = bytes.Clone(buf[:salvageWindow])
			} else {
				buf = append(buf, frag[:min(len(frag), salvageWindow-len(buf))]...)
			}
			tail = keepTail(tail, frag)
		default:
			tooBig += len(frag)
			tail = keepTail(tail, frag)
			if s.skipMax > 0 && tooBig > s.skipMax && err != nil {
				return nil, nil, 0, s.failFraming(fmt.Errorf("the peer sent a line of more than %d bytes without a newline (the message limit is %d bytes): taken as an endless line", s.skipMax, s.max))
			}
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(buf) > 0 && tooBig == 0 {
			// A last message without a newline still counts.
			return s.ownLine(buf), nil, 0, nil
		}
		return nil, nil, 0, err
	}
	if tooBig > 0 {
		return buf, bytes.TrimRight(tail, "\r\n"), tooBig, nil
	}
	return s.ownLine(buf), nil, 0, nil
}

// ownLine trims a line's terminator and updates the size hint. The message
// decoded from the line aliases it for as long as the message lives, so a
// line using less than half of the room made for it is copied out rather
// than pinning the rest.
func (s *Stream) ownLine(buf []byte) []byte {
	if cap(buf) > s.r.Size() {
		s.lineHint = len(buf)
	}
	line := bytes.TrimRight(buf, "\r\n")
	if cap(line) > 2*len(line) && cap(line) > s.r.Size() {
		return bytes.Clone(line)
	}
	return line
}

// keepTail appends frag to tail and keeps the last salvageWindow bytes.
func keepTail(tail, frag []byte) []byte {
	if len(frag) >= salvageWindow {
		return append(tail[:0], frag[len(frag)-salvageWindow:]...)
	}
	tail = append(tail, frag...)
	if len(tail) > salvageWindow {
		tail = append(tail[:0], tail[len(tail)-salvageWindow:]...)
	}
	return tail
}

// Write encodes m as one line and queues it; see Transport.
func (s *Stream) Write(ctx context.Context, m *Message) error {
	b, err := encodeMessage(m)
	if err != nil {
		return err
	}
	return s.q.put(ctx, outgoing{msg: append(b, '\n')})
}

// Flush waits until every message written before it is in the stream.
func (s *Stream) Flush(ctx context.Context) error { return s.q.flush(ctx) }

// tryWrite queues m if there is room at once, for a Conn that must not wait
// (a cancellation owed to a peer that may not be reading).
func (s *Stream) tryWrite(m *Message) (bool, error) {
	b, err := encodeMessage(m)
	if err != nil {
		return false, err
	}
	return s.q.tryPut(outgoing{msg: append(b, '\n')}), nil
}

// writeLoop is the only user of w: it writes the queued lines in order,
// each one whole, until the Stream closes or a write fails. A write that
// the peer never reads blocks this goroutine and only it: Close does not
// wait for it, and the owner ending the peer (which fails the write) lets
// it go.
func (s *Stream) writeLoop() {
	for {
		var o outgoing
		select {
		case <-s.done:
			return
		default:
		}
		select {
		case o = <-s.q.ch:
		case <-s.done:
			return
		}
		if o.flushed != nil {
			close(o.flushed)
			continue
		}
		s.q.progressed()
		for b := o.msg; len(b) > 0; {
			n := min(len(b), writeChunk)
			if _, err := s.w.Write(b[:n]); err != nil {
				s.fail(&WriteError{Err: err})
				return
			}
			b = b[n:]
			s.q.progressed()
		}
		s.q.sent(o)
	}
}

// fail ends the Stream because sending failed.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	_ = s.Close()
}

// closedErr is what Read and Write return once the Stream has ended.
func (s *Stream) closedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return ErrClosed
}

// Close closes the Stream and its closer; see Transport.
func (s *Stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		if s.closer != nil {
			err = s.closer.Close()
		}
	})
	return err
}
