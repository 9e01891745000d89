package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A Transport carries whole JSON-RPC messages to and from one peer. It is
// the framing under a Conn: a Conn does the peering (ids, correlation,
// cancellation, handlers) and knows nothing of lines, pipes or HTTP bodies.
// NewStream (newline-delimited messages over a byte stream: the host's
// stdio, a child's pipes) and Pipe (an in-memory pair, for tests) are the
// implementations here; an HTTP front end or an HTTP upstream is another.
//
// Concurrency: Read is called by one goroutine at a time (the Conn's Run).
// Write and Flush may be called concurrently, from any number of
// goroutines, with each other and with Read; the messages of one goroutine
// go out in the order of its Writes. Close may be called at any time, more
// than once, concurrently with the rest, and unblocks every Read, Write and
// Flush waiting.
type Transport interface {
	// Read returns the next message from the peer, waiting until one
	// comes, ctx is done (returning ctx's cause) or the transport closes.
	//
	// A message that cannot be used (malformed, oversized) is returned as
	// a *MessageError for that message alone, carrying whatever id could
	// be salvaged: the next Read goes on with the next message. Any other
	// error ends the transport, and every later Read returns one too: an
	// error wrapping io.EOF when the peer ended its stream, a *WriteError
	// when sending to the peer failed, ErrClosed after Close.
	Read(ctx context.Context) (*Message, error)

	// Write hands m on for sending. It may return before the peer has
	// it (a queue), but never reorders: everything written before it, by
	// any goroutine, is sent first. It returns ctx's cause when ctx ends
	// first; a *StallError when the peer has read nothing for the
	// transport's write timeout (the transport stays open: the caller
	// decides); a *WriteError once sending has failed for good; ErrClosed
	// after Close. The transport does not keep m after Write returns,
	// but for a large payload (m.Params, m.Result), which a Stream may
	// send from those very bytes after Write has returned: a caller must
	// not change a payload it has written.
	Write(ctx context.Context, m *Message) error

	// Close ends the transport at once, without waiting for queued
	// messages or a write blocked on the peer.
	Close() error
}

// A Flusher is a Transport whose Write may return before the message is
// sent. Flush returns once every message written before the call has been
// handed to the peer (written to the stream, taken by the other end of a
// pipe), or when ctx ends or the transport closes, with the same errors as
// Write. A Conn with Options.Drain uses it to deliver its last responses.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Limits bound what a transport accepts and how long it waits on a peer.
type Limits struct {
	// MaxMessageBytes bounds one message; a stream's line end (LF or CR
	// LF) is not counted. 0 means DefaultMaxMessageBytes. A larger
	// incoming message is a *MessageError, not the end of the transport;
	// a Stream writes none larger either (messages up to 4 KiB excepted):
	// its Write returns a *TooLargeError and writes nothing.
	MaxMessageBytes int
	// WriteTimeout bounds how long a Write may wait for room while the peer
	// reads nothing at all: past it the Write returns a *StallError. A peer
	// that reads slowly but steadily is not cut off: every part of a
	// message it takes counts as progress. Zero means no limit.
	WriteTimeout time.Duration
	// QueueBytes, if not zero, bounds in bytes what a Stream holds for its
	// peer: messages queued or being written. A message that finds no room
	// waits (as long as WriteTimeout and its context allow), and while the
	// queue is full or writers wait, the Stream stops reading its peer: a
	// peer that does not read its output gets no more work done for it. A
	// message larger than smallMessage that finds as many bytes already
	// waiting fails at once with a *QueueFullError, so a peer that reads
	// nothing costs at most about twice QueueBytes. Zero bounds the queue
	// by number of messages alone.
	QueueBytes int
	// MaxSkipBytes, if not zero, bounds how far a Stream skips a line longer
	// than MaxMessageBytes looking for its end: a longer line is taken as
	// endless and ends the transport (a *FramingError). Zero skips to the
	// end, however far.
	MaxSkipBytes int
	// ReadStall, if not zero, ends a Stream whose peer has written part of
	// a message and then nothing more for this long (a *FramingError). It
	// counts only while the Stream is waiting for the peer's bytes, never
	// while the gate itself is not reading (a full queue downstream).
	ReadStall time.Duration
	// PaceLargeLines makes a Stream read a large message (one longer than
	// its 64 KB read buffer) only while the large messages read before it
	// by the process's paced Streams, and not yet passed on, hold less
	// than 1 MB per P, waiting at most 100 ms for them: a reader that runs ahead
	// of the calls that guard and write its results does not pile them up
	// in memory. For the gate's upstreams. See largebudget.go.
	PaceLargeLines bool
}

func (l Limits) maxMessageBytes() int {
	if l.MaxMessageBytes <= 0 {
		return DefaultMaxMessageBytes
	}
	return l.MaxMessageBytes
}

// A MessageError is one incoming message that could not be used. It costs
// that message alone; the transport goes on.
type MessageError struct {
	// Code is what a server answers with: CodeParseError for bytes that
	// are not JSON, CodeInvalidRequest for JSON that is not a message or is
	// too large.
	Code int64
	// ID is the message's id when it could be salvaged, else nil.
	ID json.RawMessage
	// Request tells a broken request (the peer's id space) from a broken
	// response (ours): only a response may fail a pending call.
	Request bool
	// Method is the request's method when it could be read (a message
	// whose other members are wrong), else "". It is the peer's text.
	Method string
	// Reason names kinds, sizes and positions, never the peer's bytes.
	Reason string
	// Offset is where a syntax error is, for the log; <= 0 when unknown.
	Offset int64
	// Raw is the message, or its head when it was too large to keep. It is
	// untrusted: describe it (audit.Payload), never quote it.
	Raw []byte
}

func (e *MessageError) Error() string { return e.Reason }

// messageError turns an error of Decode into a *MessageError.
func messageError(err error, raw []byte) *MessageError {
	var de *decodeError
	if !errors.As(err, &de) {
		return &MessageError{Code: CodeParseError, Reason: err.Error(), Raw: raw}
	}
	return &MessageError{Code: de.code, ID: de.id, Request: de.request, Method: de.method, Reason: de.reason, Offset: de.offset, Raw: raw}
}

// oversized describes a message larger than the limit from its head and
// tail, which is all that was kept of it.
func oversized(size, limit int, head, tail []byte) *MessageError {
	return &MessageError{
		Code:    CodeInvalidRequest,
		ID:      salvageID(head, tail),
		Request: looksLikeRequest(head),
		Reason:  fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", size, limit),
		Raw:     head,
	}
}

// A StallError is returned by Write when the peer has taken nothing for the
// write timeout while the message waited for room.
type StallError struct {
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("the peer stopped reading its input for %s", e.After)
}

// A WriteError is a failure to send to the peer (a broken pipe). It ends
// the transport: Read and Write return it from then on.
type WriteError struct {
	Err error
}

func (e *WriteError) Error() string { return "writing: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// writeQueueLen is how many encoded messages may wait to be sent. It
// absorbs a burst (a fan-out of calls, a stream of progress notifications)
// without making senders wait, and is small enough that a peer that stops
// reading is noticed long before memory runs short.
const writeQueueLen = 64

// outgoing is one entry of a send queue: an encoded message, or a flush
// marker whose channel the consumer closes once every message queued
// before it has been handed on.
type outgoing struct {
	msg []byte
	// body and tail, when set, follow msg: a large payload is sent from
	// the message's own bytes rather than copied (encodeLine).
	body, tail []byte
	flushed    chan struct{}
	size       int64 // bytes accounted in the queue's byte bound, released once written
	// line, when set, is the line body is read from, recycled once body
	// is written whole (Message.reuse, relayline.go).
	line *lineLease
}

// len is how many bytes of message o holds.
func (o outgoing) len() int { return len(o.msg) + len(o.body) + len(o.tail) }

// after returns what is left of o once n bytes of it have been sent, and
// whether anything is.
func (o outgoing) after(n int) (outgoing, bool) {
	parts := [3][]byte{o.msg, o.body, o.tail}
	for i := range parts {
		k := min(n, len(parts[i]))
		parts[i], n = parts[i][k:], n-k
	}
	rest := outgoing{msg: parts[0], body: parts[1], tail: parts[2], line: o.line}
	return rest, rest.len() > 0
}

// sendQueue is the bounded queue between writers and whatever hands their
// messages to the peer (a stream's writer goroutine, the other end of a
// pipe), with the stall detection of Limits.WriteTimeout.
type sendQueue struct {
	ch        chan outgoing
	closed    <-chan struct{} // the queue's transport has closed
	closedErr func() error    // why, for the writers
	// broken, if not nil, is closed when nobody will take the queue's
	// messages any more (the other end of a pipe closed); onBroken then
	// says why, for the writers.
	broken   <-chan struct{}
	onBroken func() error
	timeout  time.Duration
	bytes    *byteBound   // nil: bounded by number alone
	epoch    time.Time    // the origin of progress
	progress atomic.Int64 // when the consumer last made progress, as time since epoch
}

func newSendQueue(closed <-chan struct{}, closedErr func() error, timeout time.Duration) *sendQueue {
	return &sendQueue{ch: make(chan outgoing, writeQueueLen), closed: closed, closedErr: closedErr, timeout: timeout, epoch: time.Now()}
}

// put queues o, accounting its bytes when the queue is bounded in bytes;
// see putSlot.
func (q *sendQueue) put(ctx context.Context, o outgoing) error {
	if q.bytes == nil || o.len() == 0 {
		return q.putSlot(ctx, o)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	o.size = int64(o.len())
	if err := q.bytes.reserve(ctx, q, o.size); err != nil {
		return err
	}
	if err := q.putSlot(ctx, o); err != nil {
		q.bytes.release(o.size)
		return err
	}
	return nil
}

// putSlot queues o, waiting for room until ctx is done, the transport closes,
// or the consumer has made no progress for the timeout. The timeout
// measures the consumer's stall, not this writer's wait: behind a crowd of
// writers and a peer that reads slowly but steadily, one writer may wait
// longer than the timeout without the peer being at fault.
func (q *sendQueue) putSlot(ctx context.Context, o outgoing) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case <-q.closed:
		return q.closedErr()
	default:
	}
	select {
	case q.ch <- o:
		return nil
	default:
	}
	// The queue is full: the consumer is blocked, or the peer is slow.
	d := q.timeout
	var (
		timer   *time.Timer
		timeout <-chan time.Time
	)
	if d > 0 {
		timer = time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case q.ch <- o:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-q.closed:
			return q.closedErr()
		case <-q.broken:
			return q.onBroken()
		case <-timeout:
			if stalled := q.stalled(); stalled < d {
				timer.Reset(d - stalled)
				continue
			}
			return &StallError{After: d}
		}
	}
}

// tryPut queues o if there is room at once.
func (q *sendQueue) tryPut(o outgoing) bool {
	select {
	case <-q.closed:
		return false
	default:
	}
	if q.bytes != nil && o.len() > 0 {
		o.size = int64(o.len())
		if !q.bytes.tryReserve(o.size) {
			return false
		}
	}
	select {
	case q.ch <- o:
		return true
	default:
		if o.size > 0 {
			q.bytes.release(o.size)
		}
		return false
	}
}

// sent releases o's bytes once it has been handed on whole.
func (q *sendQueue) sent(o outgoing) {
	if o.size > 0 {
		q.bytes.release(o.size)
	}
}

// flush waits until everything queued before it has been handed on.
func (q *sendQueue) flush(ctx context.Context) error {
	flushed := make(chan struct{})
	if err := q.put(ctx, outgoing{flushed: flushed}); err != nil {
		return err
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-q.closed:
		return q.closedErr()
	}
}

// progressed records that the consumer took a message or sent part of one.
func (q *sendQueue) progressed() {
	q.progress.Store(int64(time.Since(q.epoch)))
}

// stalled returns how long ago the consumer last made progress.
func (q *sendQueue) stalled() time.Duration {
	return time.Since(q.epoch) - time.Duration(q.progress.Load())
}

// encodeMessage returns m's wire form, with room for a newline after it.
func encodeMessage(m *Message) ([]byte, error) {
	return appendMessage(make([]byte, 0, 65+len(m.ID)+len(m.Method)+len(m.Params)+len(m.Result)), m)
}
