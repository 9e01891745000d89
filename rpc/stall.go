package rpc

import (
	"io"
	"sync/atomic"
	"time"
)

// A FramingError ends a Stream because the peer's bytes can no longer be
// framed into messages in bounded time or space: a line with no end in
// sight (Limits.MaxSkipBytes), or part of a message followed by silence
// (Limits.ReadStall). Unlike a *MessageError it is not one message's
// problem: nothing after it can be read, so every call waiting on the peer
// would wait forever. A Conn closes on it, failing those calls at once.
type FramingError struct {
	Reason string
}

func (e *FramingError) Error() string { return e.Reason }

// failFraming ends the Stream's reading with a *FramingError and returns it.
func (s *Stream) failFraming(reason error) error {
	s.framingOne.Do(func() {
		s.framingErr = &FramingError{Reason: reason.Error()}
		s.stopping.Store(true)
		close(s.framing)
		if s.rdl != nil {
			// Direct mode: the read waiting on the peer is on Read's own
			// goroutine, and only a deadline ends it.
			s.intrMu.Lock()
			_ = s.rdl.SetReadDeadline(aLongTimeAgo)
			s.intrMu.Unlock()
		}
	})
	return s.framingErr
}

// stallReader sits under a Stream's bufio.Reader and times the peer while
// part of a message is in: each Read made with a partial message pending
// arms a timer for Limits.ReadStall, and its return (bytes came, or the
// stream ended) disarms it. So the time counts only while the Stream is
// waiting for the peer's bytes: while the Stream itself does not read (its
// lines are not taken, the process is stopped) nothing counts.
//
// Its counters are the reader goroutine's alone: bufio calls Read, and
// readLine reports what it consumed, on that goroutine (in direct mode,
// Read's). In direct mode a read interrupted by the caller's context stops
// the clock, and the next read starts it again in full: a caller reading
// under contexts shorter than ReadStall would never see a stall. Conn.Run
// reads under one context throughout, so the gate's do.
type stallReader struct {
	r       io.Reader
	stall   time.Duration
	timer   *time.Timer
	read    int64        // bytes read from r
	used    int64        // bytes handed out by the bufio.Reader
	lineEnd int64        // bytes up to the end of the last whole line
	partial atomic.Int64 // read - lineEnd when the timer was armed, for its message
}

func (w *stallReader) Read(p []byte) (int, error) {
	armed := w.read > w.lineEnd
	if armed {
		w.partial.Store(w.read - w.lineEnd)
		w.timer.Reset(w.stall)
	}
	n, err := w.r.Read(p)
	if armed {
		w.timer.Stop()
	}
	w.read += int64(n)
	return n, err
}

// consumed records n bytes handed out by the bufio.Reader, ending a line
// when whole is set.
func (w *stallReader) consumed(n int, whole bool) {
	w.used += int64(n)
	if whole {
		w.lineEnd = w.used
	}
}

// pending is the size of the partial message when the timer was armed.
func (w *stallReader) pending() int64 { return w.partial.Load() }
