package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxMessageBytes bounds one message, read or written, when
// Limits.MaxMessageBytes is 0. Peers bound what they read too, and some
// end the whole connection on a longer line rather than fail one message:
// the TypeScript SDK's stdio reader (hosts and servers built on it) at 10
// MiB held at once, which may be a message and the next 64 KiB read behind
// it, and Claude Code's at 16 MiB. A gate that passed on larger messages
// would let one server's large result cut its host off from every server;
// 8 MiB stays under both with room.
const DefaultMaxMessageBytes = 8 << 20

// writeChunk is the most a Stream hands to its writer at once, so that the
// progress of a large message is visible to Limits.WriteTimeout: a peer
// reading a 30 MB result slowly is still reading.
const writeChunk = 64 << 10

// largeMessage is the size from which a message may not fit a pipe's
// default buffer (64 KB on Linux).
const largeMessage = 64 << 10

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
	r      *bufio.Reader // used by one reader at a time (see readLine)
	src    *prefixReader // r's source, read directly for large lines (largeread.go)
	w      io.Writer     // used by the writer goroutine, or by tw under wmu
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
	// stopping is set before done or framing is closed: until it is, a
	// Read need not look at either.
	stopping atomic.Bool

	// Goroutine mode (a reader that cannot be interrupted).
	readOnce sync.Once
	lines    chan readResult // the reader goroutine's lines, unbuffered
	ended    chan struct{}   // closed when the reader goroutine has read its last
	readErr  error           // why; written before ended is closed

	// Direct mode (a reader whose waits are in the netpoller and that
	// takes a read deadline): Read reads on its caller's goroutine, and a
	// deadline in the past interrupts it on cancellation and Close. See
	// readDirect.
	rdl         readDeadliner
	intrMu      sync.Mutex      // orders deadline changes with Close
	intrCtx     context.Context // the context whose end interrupts a read
	intrStop    func() bool     // unregisters intrCtx's interruption
	interrupted bool            // a deadline was set by an interruption (Read's alone)
	directErr   error           // the error that ended the stream (Read's alone)

	// Partial line state, kept across an interrupted read (readLine).
	rl lineState
	// readStop, in direct mode, is the reader's context's Done: it ends a
	// wait for the budget of large lines (the reader's alone).
	readStop <-chan struct{}
	// budget is the budget of large lines the Stream reads under
	// (Limits.PaceLargeLines): the process's, or nil when it is not
	// paced (tests set their own before the first Read).
	budget *lineBudget
	// lineHint is the length of the last line that took more than one
	// read (the reader's alone): the next such line starts with that much
	// room, so a run of large messages costs one allocation and one copy
	// each instead of a doubling buffer's repeated growth.
	lineHint int

	// tw, when not nil, writes without waiting (a non-blocking descriptor):
	// Write then sends on its caller's goroutine while nothing is queued,
	// and queues only what the peer has no room for yet. wmu orders those
	// direct writes with the queue; queued counts the messages in the queue
	// not yet wholly written.
	tw     func([][]byte) (int, error)
	wmu    sync.Mutex
	queued int
	// twParts is tw's argument, under wmu (writeParts): an array local to
	// the writer would escape through the func value, an allocation for
	// every direct write.
	twParts [3][]byte
	// batch holds small messages gathered for one group write while its
	// first writer yields (batch.go), under wmu; only ever non-empty
	// while queued is 0.
	batch  []byte
	batchN int // messages in batch
	// burstSeen is burstReads at the last batch started, under wmu.
	burstSeen uint64
	// yield is what a batch's first writer does before it writes the
	// batch: runtime.Gosched (tests hold it to shape a burst).
	yield func()
	// groupAlways gathers bursts whatever GOMAXPROCS is (tests).
	groupAlways bool

	// growR and growW, when not nil, ask once for a larger buffer on the
	// pipe read or written, the first time a message larger than the
	// default pipe buffer crosses it (pipeGrower).
	growR, growW func()

	closeOnce sync.Once
	mu        sync.Mutex
	err       error // a *WriteError, or nil
}

// lineState is a line being read: what readLine has of it so far.
type lineState struct {
	buf, tail []byte
	tooBig    int
}

// readDeadliner is a reader that a deadline interrupts (a pollable
// *os.File, a polled socket).
type readDeadliner interface {
	SetReadDeadline(time.Time) error
}

// errInterrupted is readLine's report that a read deadline interrupted it,
// with the partial line kept for the next call.
var errInterrupted = errors.New("read interrupted")

// readResult is one line read from the stream.
type readResult struct {
	line, tail []byte
	tooBig     int
	lease      *lineLease // a large line's count in flight (largebudget.go)
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
	// A reader that takes a deadline is pollable: its waits park in the
	// netpoller and a deadline ends them, so Read can read on its caller's
	// goroutine and still return on cancellation, Close and a framing
	// failure, without a hand-off per message. The deadline is set on the
	// reader itself, under the stall watch, which only times its reads.
	raw := r
	r = directReader(r)
	rdl, _ := r.(readDeadliner)
	if rdl != nil && rdl.SetReadDeadline(time.Time{}) != nil {
		rdl = nil
	}
	if f, ok := raw.(*os.File); ok && !ownNonblocking(f) {
		// A descriptor shared with another process (stdin as it came, if
		// it could not be reopened) may turn blocking under the Stream,
		// and then no deadline would end a read on Read's goroutine.
		rdl = nil
	}
	var watch *stallReader
	if lim.ReadStall > 0 {
		watch = &stallReader{r: r, stall: lim.ReadStall}
		r = watch
	}
	src := &prefixReader{r: r}
	s := &Stream{
		r:       bufio.NewReaderSize(src, 64<<10),
		src:     src,
		w:       w,
		closer:  closer,
		max:     lim.maxMessageBytes(),
		done:    make(chan struct{}),
		lines:   make(chan readResult),
		ended:   make(chan struct{}),
		watch:   watch,
		framing: make(chan struct{}),
	}
	if lim.PaceLargeLines {
		s.budget = largeLines
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
	s.rdl = rdl
	s.growR, s.growW = pipeGrower(raw), pipeGrower(w)
	s.tw = nonblockingWriter(w)
	s.yield = runtime.Gosched
	go s.writeLoop()
	return s
}

// Read returns the next message; see Transport.
func (s *Stream) Read(ctx context.Context) (*Message, error) {
	if s.rdl != nil {
		return s.readDirect(ctx)
	}
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
		if m, err, ok := s.message(r); ok {
			return m, err
		}
	}
}

// message turns a line read into what Read returns; ok is false for a
// blank line, which is skipped.
func (s *Stream) message(r readResult) (m *Message, err error, ok bool) {
	if r.tooBig > 0 {
		return nil, oversized(r.tooBig, s.max, r.line, r.tail), true
	}
	if len(bytes.TrimSpace(r.line)) == 0 {
		r.lease.release()
		return nil, nil, false
	}
	m, err = Decode(r.line)
	if err != nil {
		// Answered or logged where it is read: nothing of it goes on.
		r.lease.release()
		return nil, messageError(err, r.line), true
	}
	m.line = r.lease
	return m, nil, true
}

// readDirect is Read in direct mode: the line is read on the caller's
// goroutine. The caller's context and Close interrupt a waiting read with
// a deadline in the past; the part of a line read so far is kept, and the
// next Read (with a live context) clears the deadline and goes on with it.
func (s *Stream) readDirect(ctx context.Context) (*Message, error) {
	for {
		select {
		case <-s.done:
			// Close counts before an earlier end of the input, as in
			// goroutine mode.
			return nil, s.closedErr()
		default:
		}
		if s.directErr != nil {
			return nil, s.directErr
		}
		s.intrMu.Lock()
		if s.stopping.Load() {
			// (A two-channel select locks both channels: only once one
			// may be closed.)
			select {
			case <-s.done:
				s.intrMu.Unlock()
				return nil, s.closedErr()
			case <-s.framing:
				s.intrMu.Unlock()
				return nil, s.framingErr
			default:
			}
		}
		if s.interrupted {
			// Under intrMu, after the check of done: a Close cannot set its
			// deadline between the two and see it cleared.
			_ = s.rdl.SetReadDeadline(time.Time{})
			s.interrupted = false
		}
		s.watchLocked(ctx)
		s.intrMu.Unlock()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if s.q.bytes != nil {
			if full, room := s.q.bytes.full(); full {
				// As in goroutine mode: the peer is not reading what is
				// queued for it, so take on nothing more of its work
				// until it does; but see the input end (a host shutting
				// down), as goroutine mode's reader does.
				if err := s.awaitRoomDirect(ctx, room); err != nil {
					return nil, err
				}
				continue
			}
		}
		s.readStop = ctx.Done()
		r, err := s.readLine()
		if errors.Is(err, errInterrupted) {
			s.interrupted = true
			select {
			case <-s.done:
				return nil, s.closedErr()
			case <-s.framing:
				return nil, s.framingErr
			default:
			}
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			continue // an earlier context's interruption, overtaken
		}
		if err != nil {
			select {
			case <-s.done:
				// Closed under the read (an owner closing the stream's
				// reader): the Stream's Close is the cause that counts.
				return nil, s.closedErr()
			default:
			}
			s.directErr = err
			return nil, err
		}
		if m, err, ok := s.message(r); ok {
			return m, err
		}
	}
}

// awaitRoomDirect waits, in direct mode, until the send queue has room
// (room closes), the context ends or the Stream closes, while it watches
// the input for its end: with nothing of the input held yet, it peeks at
// most one buffer of it (the most goroutine mode's reader holds ahead),
// interrupted by a past deadline once there is room. An input that has
// ended with no partial line left ends the Stream's reading, so that a
// host that stops reading and closes its input is seen to go. A nil
// return means: look again.
func (s *Stream) awaitRoomDirect(ctx context.Context, room <-chan struct{}) error {
	if s.r.Buffered() > 0 || len(s.src.pending) > 0 || len(s.rl.buf) > 0 || s.rl.tooBig > 0 {
		// Input is held already: only room, the context or Close matter.
		err := s.q.bytes.awaitRoom(ctx, s.done, s.framing)
		if errors.Is(err, ErrClosed) {
			return s.closedErr()
		}
		return err
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-room:
			s.intrMu.Lock()
			_ = s.rdl.SetReadDeadline(aLongTimeAgo)
			s.intrMu.Unlock()
		case <-stop:
		}
	}()
	_, err := s.r.Peek(1)
	close(stop)
	<-stopped
	// Whatever interrupted the peek (room, the context, Close), the next
	// look clears the deadline it may have left.
	s.interrupted = true
	switch {
	case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case errors.Is(err, bufio.ErrBufferFull):
		return nil
	}
	select {
	case <-s.done:
		return s.closedErr()
	default:
	}
	s.directErr = err
	return err
}

// watchLocked makes ctx's end interrupt the reads made under it. A
// context is watched until Read is called with another, so that a Conn's
// Run, which reads under one context throughout, registers once.
func (s *Stream) watchLocked(ctx context.Context) {
	if ctx == s.intrCtx {
		return
	}
	if s.intrStop != nil {
		s.intrStop()
		s.intrStop, s.intrCtx = nil, nil
	}
	if ctx.Done() == nil {
		return // never ends
	}
	s.intrCtx = ctx
	s.intrStop = context.AfterFunc(ctx, func() {
		s.intrMu.Lock()
		defer s.intrMu.Unlock()
		// A context no longer watched has nothing to interrupt: the read
		// now running is another context's.
		if s.intrCtx == ctx {
			_ = s.rdl.SetReadDeadline(aLongTimeAgo)
		}
	})
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// readLoop reads lines and hands them to Read until the stream ends. Every
// send also watches done: nothing is handed over once the Stream is closed.
func (s *Stream) readLoop() {
	for {
		r, err := s.readLine()
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
// head and tail kept (for salvaging its ID). A line read into room of its
// own is counted in flight (largebudget.go).
func (s *Stream) readLine() (readResult, error) {
	line, tail, tooBig, err := s.readLineRaw()
	r := readResult{line: line, tail: tail, tooBig: tooBig}
	if s.budget != nil && err == nil && tooBig == 0 && cap(line) > s.r.Size() {
		r.lease = s.budget.hold(line)
	}
	return r, err
}

func (s *Stream) readLineRaw() (line, tail []byte, tooBig int, err error) {
	st := &s.rl
	for {
		var err error
		if ok, whole, derr := s.readInto(st); ok {
			if whole {
				break
			}
			if err = derr; err == nil {
				continue
			}
		} else if err = s.readFragment(st); err == nil {
			break
		} else if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Interrupted (direct mode): what was read of the line stays
			// in st for the next call.
			return nil, nil, 0, errInterrupted
		}
		buf, tail, tooBig := st.buf, st.tail, st.tooBig
		*st = lineState{}
		if errors.Is(err, io.EOF) && len(buf) > 0 && tooBig == 0 {
			// A last message without a newline still counts.
			if n := lineLen(buf); n > s.max {
				head, tail := s.overLimit(buf)
				return head, tail, n, nil
			}
			return s.ownLine(buf), nil, 0, nil
		}
		if errors.Is(err, io.EOF) && tooBig > 0 {
			// So does a last message over the limit: its error, as
			// for one with a newline; the next read finds the end.
			return buf, bytes.TrimRight(tail, "\r\n"), tooBig, nil
		}
		return nil, nil, 0, err
	}
	buf, tail, tooBig := st.buf, st.tail, st.tooBig
	*st = lineState{}
	if tooBig == 0 {
		if n := lineLen(buf); n > s.max {
			buf, tail = s.overLimit(buf)
			tooBig = n
		}
	}
	if s.r.Buffered() > 0 && s.grouping() {
		// More is read already: a burst (batch.go). Counted only where
		// bursts are gathered: elsewhere the process-wide counter would
		// be a cache line every reader writes, for nothing.
		burstReads.Add(1)
	}
	if tooBig > 0 {
		return buf, bytes.TrimRight(tail, "\r\n"), tooBig, nil
	}
	return s.ownLine(buf), nil, 0, nil
}

// A line is kept whole while it fits the limit and a CR LF (readFragment,
// readInto, readPieces), since its end is not counted; once whole, its
// length without its end is what the limit bounds: a line ended by a LF
// alone, or by the input's end, gets no two bytes more than the limit.

// lineLen is the length of a line read whole without its end (LF or CR
// LF; none for the input's last line).
func lineLen(buf []byte) int {
	n := len(buf)
	if n > 0 && buf[n-1] == '\n' {
		n--
	}
	if n > 0 && buf[n-1] == '\r' {
		n--
	}
	return n
}

// overLimit turns a line read whole but over the limit into what an
// oversized line leaves (readFragment): its head and its tail, copies,
// for salvaging its id; its room, the reader's alone, goes back.
func (s *Stream) overLimit(buf []byte) (head, tail []byte) {
	line := buf[:lineLen(buf)]
	head = bytes.Clone(line[:min(len(line), salvageWindow)])
	tail = bytes.Clone(line[max(0, len(line)-salvageWindow):])
	s.recycleOwn(buf)
	return head, tail
}

// readFragment reads the next piece of the line through the bufio.Reader:
// up to and including its newline (a nil error), or as much as the
// reader's buffer holds (bufio.ErrBufferFull), keeping it in st as the
// limit allows. A framing failure (an endless line) is its error too.
func (s *Stream) readFragment(st *lineState) error {
	frag, err := s.r.ReadSlice('\n')
	if s.watch != nil {
		s.watch.consumed(len(frag), err == nil)
	}
	switch {
	case st.tooBig == 0 && len(st.buf)+len(frag) <= s.max+2:
		if st.buf == nil && err != nil && errors.Is(err, bufio.ErrBufferFull) {
			// The line goes on past the reader's buffer: make room
			// for it at once, as large as the last such line was,
			// once the large lines in flight leave room for it
			// (largebudget.go). frag stays valid: nothing reads
			// meanwhile.
			if s.budget != nil && s.awaitLarge() {
				return s.closedErr() // closed while it waited: not a byte more
			}
			// With a little slack: results of one tool differ in length
			// by their ids and counters, and a line one byte longer than
			// its room would have to grow.
			st.buf = linePool.get(min(max(s.lineHint+s.lineHint/64, 4*len(frag)), s.max+2))
			if s.growR != nil {
				s.growR()
			}
		}
		st.buf = append(st.buf, frag...)
	case st.tooBig == 0:
		st.tooBig = len(st.buf) + len(frag)
		if len(st.buf) > salvageWindow {
			// A copy: the head must not pin the room made for the
			// whole line while its error is handled. That room was
			// the reader's alone.
			head := bytes.Clone(st.buf[:salvageWindow])
			s.recycleOwn(st.buf)
			st.buf = head
		} else {
			st.buf = append(st.buf, frag[:min(len(frag), salvageWindow-len(st.buf))]...)
		}
		st.tail = keepTail(st.tail, frag)
	default:
		st.tooBig += len(frag)
		st.tail = keepTail(st.tail, frag)
		if s.skipMax > 0 && st.tooBig > s.skipMax && err != nil {
			return s.failFraming(fmt.Errorf("the peer sent a line of more than %d bytes without a newline (the message limit is %d bytes): taken as an endless line", s.skipMax, s.max))
		}
	}
	return err
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
		// Nothing was decoded from buf yet: its room goes back.
		own := append(linePool.get(len(line)), line...)
		s.recycleOwn(buf)
		return own
	}
	return line
}

// recycleOwn gives back b, room made for a line that nothing but the
// reader has seen (linepool.go); a small buffer is left to the collector.
func (s *Stream) recycleOwn(b []byte) {
	if cap(b) > s.r.Size() {
		linePool.put(b)
	}
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

// Write encodes m as one line and sends or queues it; see Transport.
// A message larger than the Stream's message limit is not written: the
// error is a *TooLargeError.
func (s *Stream) Write(ctx context.Context, m *Message) error {
	if s.tw != nil {
		return s.writePooled(ctx, m) // writepool.go
	}
	o, err := s.encodeLine(nil, m)
	if err != nil {
		return err
	}
	if o.len() > largeMessage && s.growW != nil {
		s.growW()
	}
	return s.q.put(ctx, o)
}

// writeOutgoing sends or queues o in direct mode. o.msg may be a pooled
// buffer that is reused once Write returns (writepool.go): whatever of it
// is queued, and so outlives the Write, is a copy.
func (s *Stream) writeOutgoing(ctx context.Context, o outgoing) error {
	if o.len() > largeMessage && s.growW != nil {
		s.growW()
	}
	var (
		sent bool
		err  error
	)
	if batchable(o) {
		sent, err = s.writeBatched(o)
	} else {
		sent, err = s.writeDirect(o, true)
	}
	if sent || err != nil {
		return err
	}
	// Others' messages are queued: this one goes behind them. Counted
	// before it is queued, so that no direct write overtakes it.
	s.wmu.Lock()
	s.queued++
	s.wmu.Unlock()
	o.msg = bytes.Clone(o.msg) // the queue's own: o.msg may be pooled
	if err := s.q.put(ctx, o); err != nil {
		s.unqueued()
		return err
	}
	return nil
}

// largePayload is the size of params or a result from which a message is
// sent as head, payload and tail (see outgoing) rather than copied whole
// into one buffer: a 1 MB result is then neither allocated nor copied a
// second time on its way out.
const largePayload = 32 << 10

// encodeLine encodes m as one line, appending to buf (see
// encodeLineInto). A large payload is not copied: the line is its head,
// the payload itself, and the closing brace and newline. The payload is
// sent from m's own bytes, possibly after Write returned (Transport.Write
// says so). Every line the Stream writes is built here, and one whose
// message is larger than the limit the Stream reads by is refused with a
// *TooLargeError. The limit holds both ways because what the gate writes
// comes from what it read, grown on the way (hidden characters made
// visible, an id, a name), or is its own, and a peer that reads by a limit
// of its own may end the whole connection on a larger line.
func (s *Stream) encodeLine(buf []byte, m *Message) (outgoing, error) {
	o, err := encodeLineInto(buf, m)
	if err != nil {
		return o, err
	}
	// A short message always goes: the error that answers a request in
	// place of what was too large for either side must reach the peer
	// under any limit, and no peer reads by a limit that small.
	if n := o.len() - 1; n > s.max && n > smallMessage { // the newline is not counted
		return outgoing{msg: o.msg[:0]}, &TooLargeError{Size: n, Limit: s.max}
	}
	return o, nil
}

// lineTail ends a line sent as head, payload and tail.
var lineTail = []byte("}\n")

// writeDirect sends o on the caller's goroutine when nothing is queued
// before it: as much as the peer has room for at once, the rest queued for
// the writer goroutine, so the caller never waits on the peer. It reports
// whether o was sent or queued; false means others' messages are queued
// and o must go behind them. With wait false, a message of which nothing
// could be written and that finds the queue full (only flush markers can
// fill it then) is refused with errNoRoom rather than waited for.
func (s *Stream) writeDirect(o outgoing, wait bool) (bool, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.queued > 0 {
		return false, nil
	}
	// A batch gathered before o goes first.
	if err := s.flushBatchLocked(); err != nil {
		return true, err
	}
	if s.queued > 0 {
		return false, nil
	}
	select {
	case <-s.done:
		return true, s.closedErr()
	default:
	}
	n, err := s.writeParts(o.msg, o.body, o.tail)
	if err != nil {
		s.fail(&WriteError{Err: err})
		return true, s.closedErr()
	}
	if n > 0 {
		s.q.progressed()
	}
	if len(o.body) > 0 && n >= len(o.msg)+len(o.body) {
		o.finished()
		o.line = nil // the rest, if any, is the tail: no part of the line
	}
	rest, left := o.after(n)
	if !left {
		return true, nil
	}
	// What is queued outlives the Write, and o.msg may be a pooled buffer
	// reused once it returns (writepool.go): the queue gets a copy. Only a
	// peer with no room for a whole message costs one.
	rest.msg = bytes.Clone(rest.msg)
	if n == 0 && !wait {
		// Nothing written: queue it whole if there is room at once.
		if !s.q.tryPut(rest) {
			return true, errNoRoom
		}
		s.queued++
		return true, nil
	}
	// The rest waits for room in the peer. The queue is empty of messages
	// (queued is 0), so this put does not wait unless flush markers fill
	// it; it is made under wmu, so that no other message can come between
	// the two parts of this one.
	s.queued++
	if err := s.q.put(context.Background(), rest); err != nil {
		s.queued--
		return true, err
	}
	return true, nil
}

// finished is called once o's body has been written whole, by the one
// writer that wrote its last byte: the line it was read from is no longer
// in flight, and when the Conn handed the line on for reuse (o.line), no
// reference to it is left anywhere: the handler returned and kept nothing
// of it (ReleaseAfterWrite), the Conn's response was encoded into o (its
// head a pooled or copied buffer of its own), the write system call that
// took the last byte has returned (write(2) copies into the pipe or
// socket), and neither what is queued (a copy of the head, the tail) nor
// the caller, which only compares addresses (settle), reads the body
// again. So it goes back to the line pool.
func (o *outgoing) finished() {
	if o.line != nil {
		o.line.recycle()
		return
	}
	written(o.body)
}

// writeParts writes a, b and c with tw, as one write. Called with wmu held.
func (s *Stream) writeParts(a, b, c []byte) (int, error) {
	s.twParts = [3][]byte{a, b, c}
	n, err := s.tw(s.twParts[:])
	s.twParts = [3][]byte{} // pins no message's bytes
	return n, err
}

// errNoRoom is writeDirect's report that a message could not be queued
// without waiting.
var errNoRoom = errors.New("no room in the write queue")

// unqueued records that a counted message left the queue: written whole,
// or never queued.
func (s *Stream) unqueued() {
	s.wmu.Lock()
	s.queued--
	s.wmu.Unlock()
}

// Flush waits until every message written before it is in the stream.
func (s *Stream) Flush(ctx context.Context) error {
	if s.tw != nil {
		if err := s.flushBatch(); err != nil {
			return err
		}
	}
	return s.q.flush(ctx)
}

// tryWrite queues m if there is room at once, for a Conn that must not wait
// (a cancellation owed to a peer that may not be reading).
func (s *Stream) tryWrite(m *Message) (bool, error) {
	o, err := s.encodeLine(nil, m)
	if err != nil {
		return false, err
	}
	if s.tw == nil {
		return s.q.tryPut(o), nil
	}
	sent, err := s.writeDirect(o, false)
	switch {
	case errors.Is(err, errNoRoom):
		return false, nil
	case sent:
		return err == nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.q.tryPut(o) {
		return false, nil
	}
	s.queued++
	return true, nil
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
		for _, b := range [3][]byte{o.msg, o.body, o.tail} {
			for len(b) > 0 {
				n := min(len(b), writeChunk)
				if _, err := s.w.Write(b[:n]); err != nil {
					s.fail(&WriteError{Err: err})
					return
				}
				b = b[n:]
				s.q.progressed()
			}
		}
		if len(o.body) > 0 {
			o.finished()
		}
		s.q.sent(o)
		if s.tw != nil {
			s.unqueued()
		}
	}
}

// fail ends the Stream because sending failed.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	select {
	case <-s.done:
		// Closed already: a write cut short by the close is not the
		// peer's failure, and later calls say ErrClosed.
	default:
		if s.err == nil {
			s.err = err
		}
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
		s.intrMu.Lock()
		s.stopping.Store(true)
		close(s.done)
		if s.rdl != nil {
			// Ends a read waiting in direct mode; under intrMu, so that a
			// Read about to wait sees done or this deadline.
			_ = s.rdl.SetReadDeadline(aLongTimeAgo)
		}
		if s.intrStop != nil {
			s.intrStop()
		}
		s.intrMu.Unlock()
		if s.closer != nil {
			err = s.closer.Close()
		}
	})
	return err
}
