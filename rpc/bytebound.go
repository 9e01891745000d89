package rpc

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// smallMessage is the size under which a message never fails for lack of
// room (QueueFullError): errors, cancellations and short notifications are
// what a host that reads again must find, and they cost little to hold.
const smallMessage = 4 << 10

// A QueueFullError is returned by Write when the transport's outgoing queue
// is at its byte bound (Limits.QueueBytes) and as many bytes again already
// wait for room: the message is not queued, and its writer decides what to
// do instead (a Conn answers with a short error in its place).
type QueueFullError struct {
	Size, Limit int64
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("the peer is not reading: %d bytes are queued for it and as many wait for room (bound %d bytes), so a message of %d bytes was not queued", e.Limit, e.Limit, e.Size)
}

// A TooLargeError is a message the gate was to write that is larger than
// the Stream's message limit (Limits.MaxMessageBytes, which bounds what the
// gate writes as well as what it reads, messages up to 4 KiB excepted, so
// that a short error always goes): nothing of it is written. A peer
// would refuse it at best, and some end the whole connection on one, with
// every server behind the gate (the TypeScript SDK's stdio reader past
// 10 MiB, Claude Code's past 16 MiB); a Conn answers a request whose
// response is too large with a short error in its place.
type TooLargeError struct {
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("it is %d bytes, more than the %d a message may be (--max-message-bytes)", e.Size, e.Limit)
}

// byteBound is the byte accounting of a send queue bounded in bytes
// (Limits.QueueBytes): what is queued or being sent, and what waits for
// room. The channel of a sendQueue bounds messages by number; this bounds
// them by size, which is what memory is.
type byteBound struct {
	max     int64
	mu      sync.Mutex
	queued  int64         // bytes queued or being written
	waiting int64         // bytes whose writers wait for room
	room    chan struct{} // closed (and replaced) when bytes are released
	// taken is whether room was handed to a waiter since it was made:
	// only then is it closed and replaced at a release, so that the
	// release of every message written while nobody waits costs no
	// channel.
	taken bool
}

func newByteBound(max int) *byteBound {
	if max <= 0 {
		return nil
	}
	return &byteBound{max: int64(max), room: make(chan struct{})}
}

// fitsLocked reports whether n more bytes may be queued now: within the
// bound, or alone in an empty queue (a message larger than the bound still
// goes, one at a time).
func (b *byteBound) fitsLocked(n int64) bool {
	return b.queued == 0 || b.queued+n <= b.max
}

// tryReserve accounts n bytes as queued if they fit at once.
func (b *byteBound) tryReserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fitsLocked(n) {
		return false
	}
	b.queued += n
	return true
}

// reserve accounts n bytes as queued, waiting for room until ctx ends,
// closed is closed, or the consumer has made no progress for the queue's
// stall timeout. A large message finds no room to wait in once as many
// bytes as the bound already wait: a peer that reads nothing cannot make
// the gate hold more than twice the bound (and one message) for it.
func (b *byteBound) reserve(ctx context.Context, q *sendQueue, n int64) error {
	b.mu.Lock()
	if b.fitsLocked(n) {
		b.queued += n
		b.mu.Unlock()
		return nil
	}
	if n > smallMessage && b.waiting > 0 && b.waiting+n > b.max {
		b.mu.Unlock()
		return &QueueFullError{Size: n, Limit: b.max}
	}
	b.waiting += n
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
		room := b.room
		b.taken = true
		b.mu.Unlock()
		var err error
		select {
		case <-room:
		case <-ctx.Done():
			err = context.Cause(ctx)
		case <-q.closed:
			err = q.closedErr()
		case <-timeout:
			if stalled := q.stalled(); stalled < d {
				timer.Reset(d - stalled)
			} else {
				err = &StallError{After: d}
			}
		}
		b.mu.Lock()
		if err == nil && b.fitsLocked(n) {
			b.queued += n
			b.waiting -= n
			b.mu.Unlock()
			return nil
		}
		if err != nil {
			b.waiting -= n
			b.mu.Unlock()
			return err
		}
	}
}

// release returns n bytes once they are written (or were never queued).
func (b *byteBound) release(n int64) {
	b.mu.Lock()
	b.queued -= n
	if b.taken {
		close(b.room)
		b.room, b.taken = make(chan struct{}), false
	}
	b.mu.Unlock()
}

// full reports whether the queue is at its bound or has writers waiting.
// It returns a channel closed when that may have changed.
func (b *byteBound) full() (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	full := b.queued >= b.max || b.waiting > 0
	if full {
		b.taken = true // its caller waits on it
	}
	return full, b.room
}

// awaitRoom waits while the queue is full: a Stream with a byte bound stops
// reading its peer (taking on more work whose answers would queue behind)
// until the peer reads what is queued for it. It returns at once when ended
// is closed: every line was handed out before it, and the end of the
// peer's stream (a host shutting down) must still be seen.
func (b *byteBound) awaitRoom(ctx context.Context, closed, ended <-chan struct{}) error {
	for {
		full, room := b.full()
		if !full {
			return nil
		}
		select {
		case <-ended:
			return nil
		case <-room:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-closed:
			return ErrClosed
		}
	}
}
