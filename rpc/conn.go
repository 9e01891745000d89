package rpc

import (
	"github.com/mcp-gate/mcp-gate/audit"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxMessageBytes bounds one message when Options.MaxMessageBytes is 0.
const DefaultMaxMessageBytes = 32 << 20

// MethodCancelled is the MCP notification that cancels a request.
const MethodCancelled = "notifications/cancelled"

// ErrClosed is returned by Call and Notify on a closed connection. The error
// returned by Call wraps it together with the cause of the close.
var ErrClosed = errors.New("connection closed")

// A Handler serves what the peer sends.
//
// HandleCall is called on its own goroutine for every call, so a slow call
// (one waiting on a human, say) never holds up the others. Its context is
// cancelled when the peer cancels the request or the connection closes; the
// response to a cancelled request is not sent, as MCP requires. A returned
// *Error is sent as it is; any other error is sent as an internal error
// carrying its message.
//
// HandleNotification is called on the goroutine running Run, in arrival
// order; it must not block (Run cannot return on cancellation while it
// does). notifications/cancelled is handled by the Conn and not passed on.
type Handler interface {
	HandleCall(ctx context.Context, req *Message) (json.RawMessage, error)
	HandleNotification(msg *Message)
}

// A Router is a Handler that sees each call on the read loop, in arrival
// order, before it is dispatched, and returns the context to serve it
// with. What it learns there holds for the moment the call arrived, which
// the handler's own goroutine, run later, could no longer tell (the proxy
// ties an upstream's request to the host call in flight when it came).
// Route must not block.
type Router interface {
	Route(ctx context.Context, req *Message) context.Context
}

// Options configure a Conn.
type Options struct {
	// Peer names the other side in logs and errors ("host", "upstream github").
	Peer string
	// Logger receives protocol problems. Required.
	Logger *slog.Logger
	// MaxMessageBytes bounds one incoming message; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// AnswerBadInput makes the Conn answer unparseable or invalid messages with
	// a JSON-RPC error, as a server must. A client (the gate facing an
	// upstream) only logs them.
	AnswerBadInput bool
	// Sequential, if set, names methods served on the read loop itself, so
	// that every later message sees their effect: a host that sends
	// initialize and tools/list back to back must get both answered in
	// order. Such handlers must be quick and must not call the peer.
	Sequential func(method string) bool
	// Drain is how long, after the peer ends its stream, the Conn waits for
	// calls in progress to finish and send their responses before closing.
	// A host that writes a request and closes its end (a pipe, a script)
	// still gets its answer. Zero closes at once.
	Drain time.Duration
	// ReadErrorCause, if set, turns the error that ended the stream into the
	// cause that pending calls report (an upstream's exit status says more
	// than "EOF").
	ReadErrorCause func(error) error
	// WriteTimeout bounds how long a message may wait for room in the
	// outgoing queue while the peer reads nothing at all. Past it the peer
	// is taken to have stopped reading its input and the Conn closes, so
	// that every call on it fails with that cause instead of hanging (the
	// owner then stops the peer, which ends the stuck write). A peer that
	// reads slowly but steadily is not cut off. Zero means no limit.
	WriteTimeout time.Duration
}

// A Conn is one JSON-RPC 2.0 connection over a stream of newline-delimited
// messages. All methods are safe for concurrent use.
//
// Unlike a stream decoder, the Conn reads line by line, so one malformed or
// oversized message costs that message alone: the connection goes on.
//
// Neither direction can hold up the other or the Conn's owner: a goroutine
// of its own reads, so Run returns on cancellation even while a read is
// blocked, and a goroutine of its own writes from a bounded queue, so a
// peer that stops reading makes senders wait only as long as their context,
// the Conn and Options.WriteTimeout allow.
type Conn struct {
	// Set at construction.
	opts    Options
	r       *bufio.Reader // used by the reader goroutine only
	w       io.Writer     // used by the writer goroutine only
	closer  io.Closer
	handler Handler
	log     *slog.Logger
	done    chan struct{}
	wq      chan outgoing // lines for the writer goroutine, in write order
	epoch   time.Time     // the origin of wprogress

	wprogress atomic.Int64   // when the writer last made progress, as time since epoch
	handlers  sync.WaitGroup // calls being served

	mu       sync.Mutex // guards the fields below
	nextID   int64
	pending  map[string]*pendingCall  // our calls awaiting a response, by ID key
	incoming map[string]*incomingCall // the peer's calls being served, by ID key
	closed   bool
	cause    error // why the connection closed
}

// writeQueueLen is how many encoded messages may wait for the writer. It
// absorbs a burst (a fan-out of calls, a stream of progress notifications)
// without making senders wait, and is small enough that a peer that stops
// reading is noticed long before memory runs short.
const writeQueueLen = 64

// writeChunk is the most the writer hands to w at once, so that the
// progress of a large message is visible to Options.WriteTimeout: a peer
// reading a 30 MB result slowly is still reading.
const writeChunk = 64 << 10

// outgoing is one entry of the write queue: an encoded line, or a flush
// marker whose channel the writer closes once every line queued before it
// has been written.
type outgoing struct {
	line    []byte
	flushed chan struct{}
}

type pendingCall struct {
	ch     chan *Message // buffered, receives exactly one message
	method string
}

type incomingCall struct {
	cancel    context.CancelFunc
	cancelled bool
}

// readResult is one line read from the stream, or the error that ended it.
type readResult struct {
	line, tail []byte
	tooBig     int
	err        error
}

// New returns a Conn that reads from r and writes to w. closer, if not nil,
// is closed when the connection closes (to unblock the reader and the
// writer). Call Run to start reading. New starts the writer goroutine,
// which ends when the connection closes: a Conn must be closed (Run closes
// it before returning).
func New(r io.Reader, w io.Writer, closer io.Closer, h Handler, opts Options) *Conn {
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	c := &Conn{
		opts:     opts,
		r:        bufio.NewReaderSize(r, 64<<10),
		w:        w,
		closer:   closer,
		handler:  h,
		log:      opts.Logger,
		done:     make(chan struct{}),
		wq:       make(chan outgoing, writeQueueLen),
		epoch:    time.Now(),
		pending:  map[string]*pendingCall{},
		incoming: map[string]*incomingCall{},
	}
	go c.writeLoop()
	return c
}

// Done is closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Cause returns why the connection closed, or nil while it is open.
func (c *Conn) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Run reads and dispatches messages until the stream ends, ctx is done or
// the connection is closed. It closes the connection before returning and
// returns the cause; when ctx ends it, the cause is ctx's.
//
// Run returns as soon as ctx is done or the Conn is closed, even while the
// peer holds its end open and a read is blocked (closing os.Stdin does not
// unblock a read from it). The reading goroutine may outlive Run until that
// read returns; it never delivers anything after Run has returned.
//
// Messages are dispatched in arrival order, and a Sequential method is
// served, its response queued, before the next message is dispatched.
func (c *Conn) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan readResult)
	go c.readLoop(lines)
	for {
		var r readResult
		select {
		case r = <-lines:
		case <-ctx.Done():
			c.CloseWithError(context.Cause(ctx))
			return c.Cause()
		case <-c.done:
			return c.Cause()
		}
		if r.err != nil {
			c.drain(ctx)
			err := r.err
			if c.opts.ReadErrorCause != nil {
				err = c.opts.ReadErrorCause(err)
			} else {
				err = fmt.Errorf("%s closed the stream: %w", c.opts.Peer, err)
			}
			c.CloseWithError(err)
			return c.Cause()
		}
		if r.tooBig > 0 {
			c.badInput(ctx, &decodeError{
				code:    CodeInvalidRequest,
				id:      salvageID(r.line, r.tail),
				reason:  fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", r.tooBig, c.opts.MaxMessageBytes),
				request: looksLikeRequest(r.line),
			}, r.line)
			continue
		}
		if len(bytes.TrimSpace(r.line)) == 0 {
			continue
		}
		msg, err := Decode(r.line)
		if err != nil {
			c.badInput(ctx, err, r.line)
			continue
		}
		c.dispatch(ctx, msg)
	}
}

// readLoop reads lines and hands them to Run until the stream ends. The
// channel is unbuffered and every send also watches done, which Run closes
// before it returns: nothing is handed over once Run is gone.
func (c *Conn) readLoop(lines chan<- readResult) {
	for {
		var r readResult
		r.line, r.tail, r.tooBig, r.err = c.readLine()
		select {
		case lines <- r:
		case <-c.done:
			return
		}
		if r.err != nil {
			return
		}
	}
}

// drain waits, up to Options.Drain, for the calls being served to finish
// and for their responses to be written. It gives up early when ctx is done
// or the connection closes.
func (c *Conn) drain(ctx context.Context) {
	if c.opts.Drain <= 0 {
		return
	}
	t := time.NewTimer(c.opts.Drain)
	defer t.Stop()
	served := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(served)
	}()
	select {
	case <-served:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	case <-c.done:
		return
	}
	// The responses are queued, perhaps not yet written: a flush marker
	// behind them tells when they are.
	flushed := make(chan struct{})
	select {
	case c.wq <- outgoing{flushed: flushed}:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	case <-c.done:
		return
	}
	select {
	case <-flushed:
	case <-t.C:
	case <-ctx.Done():
	case <-c.done:
	}
}

// readLine returns the next line without its terminator. A line longer than
// the limit is consumed to its end and reported by its size, with only its
// head and tail kept (for salvaging its ID).
func (c *Conn) readLine() (line, tail []byte, tooBig int, err error) {
	var buf []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		switch {
		case tooBig == 0 && len(buf)+len(frag) <= c.opts.MaxMessageBytes+2:
			buf = append(buf, frag...)
		case tooBig == 0:
			tooBig = len(buf) + len(frag)
			if len(buf) > salvageWindow {
				buf = buf[:salvageWindow:salvageWindow]
			} else {
				buf = append(buf, frag[:min(len(frag), salvageWindow-len(buf))]...)
			}
			tail = keepTail(tail, frag)
		default:
			tooBig += len(frag)
			tail = keepTail(tail, frag)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(buf) > 0 && tooBig == 0 {
			// A last message without a newline still counts.
			return bytes.TrimRight(buf, "\r\n"), nil, 0, nil
		}
		return nil, nil, 0, err
	}
	if tooBig > 0 {
		return buf, bytes.TrimRight(tail, "\r\n"), tooBig, nil
	}
	return bytes.TrimRight(buf, "\r\n"), nil, 0, nil
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

// badInput deals with a message that could not be used. A request gets an
// error response when we are the server side; a response we are waiting for
// fails its call, so nothing waits forever on an answer that came broken.
// It runs on Run's goroutine, so its answer waits for room only as long as
// ctx allows.
func (c *Conn) badInput(ctx context.Context, err error, line []byte) {
	var de *decodeError
	if !errors.As(err, &de) {
		de = &decodeError{code: CodeParseError, reason: err.Error()}
	}
	// The reason names kinds, sizes and positions; the message itself is
	// described, never quoted (audit.Payload).
	attrs := []any{"peer", c.opts.Peer, "error", de.reason, "message", audit.Payload(line)}
	if de.offset > 0 {
		attrs = append(attrs, "offset", de.offset)
	}
	c.log.Warn("bad message", attrs...)
	if de.id != nil && !de.request {
		c.mu.Lock()
		p, ok := c.pending[idKey(de.id)]
		if ok {
			delete(c.pending, idKey(de.id))
		}
		c.mu.Unlock()
		if ok {
			p.ch <- &Message{ID: de.id, Error: Errorf(CodeInternalError, "%s sent a malformed response to %s: %s", c.opts.Peer, p.method, de.reason)}
			return
		}
	}
	if c.opts.AnswerBadInput {
		_ = c.write(ctx, &Message{ID: de.id, Error: Errorf(de.code, "%s", de.reason)})
	}
}

func (c *Conn) dispatch(ctx context.Context, msg *Message) {
	switch {
	case msg.IsResponse():
		key := idKey(msg.ID)
		c.mu.Lock()
		p, ok := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if !ok {
			c.log.Debug("response to no pending request", "peer", c.opts.Peer, "id", LogID(msg.ID))
			return
		}
		p.ch <- msg
	case msg.IsNotification():
		if msg.Method == MethodCancelled {
			c.peerCancelled(msg)
			return
		}
		c.handler.HandleNotification(msg)
	default:
		c.serve(ctx, msg)
	}
}

func (c *Conn) peerCancelled(msg *Message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.RequestID == nil {
		c.log.Warn("cancellation without a request id", "peer", c.opts.Peer)
		return
	}
	c.mu.Lock()
	in, ok := c.incoming[idKey(p.RequestID)]
	if ok {
		in.cancelled = true
	}
	c.mu.Unlock()
	if ok {
		in.cancel()
	}
}

// serve starts serving one of the peer's calls.
func (c *Conn) serve(ctx context.Context, req *Message) {
	key := idKey(req.ID)
	c.mu.Lock()
	if _, dup := c.incoming[key]; dup {
		c.mu.Unlock()
		// Answering the duplicate, even with an error, would give the id
		// two responses once the original's comes, and the peer could not
		// tell which is which. Dropped, it costs the peer only its mistake.
		c.log.Warn("request dropped: its id is in use by a request in progress", "peer", c.opts.Peer, "id", LogID(req.ID), "method", LogMethod(req.Method))
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	if r, ok := c.handler.(Router); ok {
		cctx = r.Route(cctx, req)
	}
	in := &incomingCall{cancel: cancel}
	c.incoming[key] = in
	c.mu.Unlock()

	sequential := c.opts.Sequential != nil && c.opts.Sequential(req.Method)
	// A handler goroutine may wait as long as it takes for room in the
	// write queue: it holds up nobody. A call served on Run's goroutine
	// waits only as long as Run's ctx, so a cancelled Run is never stuck
	// behind it.
	wctx := context.Background()
	if sequential {
		wctx = ctx
	}
	c.handlers.Add(1)
	run := func() {
		defer c.handlers.Done()
		defer cancel()
		result, err := c.callHandler(cctx, req)
		c.mu.Lock()
		delete(c.incoming, key)
		cancelled := in.cancelled
		c.mu.Unlock()
		if cancelled {
			return // MCP: no response to a cancelled request.
		}
		resp := &Message{ID: req.ID}
		var werr *Error
		switch {
		case errors.As(err, &werr):
			resp.Error = werr
		case err != nil:
			resp.Error = Errorf(CodeInternalError, "%s", err.Error())
		case result == nil:
			resp.Result = json.RawMessage("{}")
		default:
			resp.Result = result
		}
		if err := c.write(wctx, resp); err != nil && !errors.Is(err, ErrClosed) {
			c.log.Warn("writing response", "peer", c.opts.Peer, "method", LogMethod(req.Method), "error", err)
		}
	}
	if sequential {
		run()
		return
	}
	go run()
}

// callHandler runs the handler and turns a panic into an internal error: one
// bad request must not take the whole gate down.
func (c *Conn) callHandler(ctx context.Context, req *Message) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panic", "peer", c.opts.Peer, "method", LogMethod(req.Method), "panic", fmt.Sprint(r))
			result, err = nil, Errorf(CodeInternalError, "internal error while handling %s", req.Method)
		}
	}()
	return c.handler.HandleCall(ctx, req)
}

// Call sends a request and waits for its response. A JSON-RPC error from the
// peer is returned as *Error, unchanged. When ctx is done first, even while
// the request still waits for room in the write queue, ctx's cause is
// returned, and the peer is told with notifications/cancelled if the
// request was sent.
func (c *Conn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		cause := c.cause
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	p := &pendingCall{ch: make(chan *Message, 1), method: method}
	c.pending[string(id)] = p
	c.mu.Unlock()

	if err := c.write(ctx, &Message{ID: id, Method: method, Params: params}); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case resp := <-p.ch:
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.forget(id)
		c.cancelRequest(id, context.Cause(ctx))
		return nil, context.Cause(ctx)
	case <-c.done:
		// The response may have raced with the close.
		select {
		case resp := <-p.ch:
			if resp.Error != nil {
				return nil, resp.Error
			}
			return resp.Result, nil
		default:
		}
		return nil, c.closedError()
	}
}

func (c *Conn) forget(id json.RawMessage) {
	c.mu.Lock()
	delete(c.pending, string(id))
	c.mu.Unlock()
}

// cancelRequest tells the peer that we gave up on request id. The caller
// has given up already and must not wait on a peer that may not be reading:
// the notification is queued at once if there is room, and otherwise by a
// goroutine of its own, which ends when it is queued or the Conn closes.
// Either way it follows the request, which was queued before.
func (c *Conn) cancelRequest(id json.RawMessage, cause error) {
	params, err := json.Marshal(struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason,omitempty"`
	}{id, cause.Error()})
	if err != nil {
		c.log.Warn("encoding a cancellation", "peer", c.opts.Peer, "id", LogID(id), "error", err)
		return
	}
	line, err := encodeLine(&Message{Method: MethodCancelled, Params: params})
	if err != nil {
		c.log.Warn("encoding a cancellation", "peer", c.opts.Peer, "id", LogID(id), "error", err)
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	select {
	case c.wq <- outgoing{line: line}:
	default:
		go func() { _ = c.enqueue(context.Background(), outgoing{line: line}) }()
	}
}

// Notify sends a notification. It returns once the message is queued, not
// once the peer has read it; while the queue is full it waits until ctx is
// done (returning ctx's cause), the Conn closes, or Options.WriteTimeout
// passes without the peer reading (which closes the Conn).
func (c *Conn) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return c.write(ctx, &Message{Method: method, Params: params})
}

// write encodes m and queues it for the writer goroutine.
func (c *Conn) write(ctx context.Context, m *Message) error {
	line, err := encodeLine(m)
	if err != nil {
		return err
	}
	return c.enqueue(ctx, outgoing{line: line})
}

// encodeLine returns m's wire form with its newline.
func encodeLine(m *Message) ([]byte, error) {
	buf, err := appendMessage(make([]byte, 0, 64+len(m.ID)+len(m.Method)+len(m.Params)+len(m.Result)), m)
	if err != nil {
		return nil, err
	}
	return append(buf, '\n'), nil
}

// enqueue puts o on the write queue, waiting for room until ctx is done, the
// Conn closes, or the writer has made no progress for Options.WriteTimeout.
// The timeout measures the writer's stall, not this sender's wait: behind a
// crowd of senders and a peer that reads slowly but steadily, one sender
// may wait longer than WriteTimeout without the peer being at fault.
func (c *Conn) enqueue(ctx context.Context, o outgoing) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case <-c.done:
		return c.closedError()
	default:
	}
	select {
	case c.wq <- o:
		return nil
	default:
	}
	// The queue is full: the writer is blocked in a write.
	d := c.opts.WriteTimeout
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
		case c.wq <- o:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-c.done:
			return c.closedError()
		case <-timeout:
			if stalled := c.writerStalled(); stalled < d {
				timer.Reset(d - stalled)
				continue
			}
			c.CloseWithError(fmt.Errorf("%s stopped reading its input for %s", c.opts.Peer, d))
			return c.closedError()
		}
	}
}

// writeLoop is the only user of w: it writes the queued lines in order,
// each one whole, until the Conn closes or a write fails. A write that the
// peer never reads blocks this goroutine and only it: Close does not wait
// for it, and the owner ending the peer (which fails the write) lets it go.
func (c *Conn) writeLoop() {
	for {
		var o outgoing
		select {
		case <-c.done:
			return
		default:
		}
		select {
		case o = <-c.wq:
		case <-c.done:
			return
		}
		if o.flushed != nil {
			close(o.flushed)
			continue
		}
		c.writerProgressed()
		for b := o.line; len(b) > 0; {
			n := min(len(b), writeChunk)
			if _, err := c.w.Write(b[:n]); err != nil {
				err = fmt.Errorf("writing to %s: %w", c.opts.Peer, err)
				if c.Cause() == nil {
					c.log.Warn("write failed", "peer", c.opts.Peer, "error", err)
				}
				c.CloseWithError(err)
				return
			}
			b = b[n:]
			c.writerProgressed()
		}
	}
}

// writerProgressed records that the writer took a line or wrote a chunk.
func (c *Conn) writerProgressed() {
	c.wprogress.Store(int64(time.Since(c.epoch)))
}

// writerStalled returns how long ago the writer last made progress.
func (c *Conn) writerStalled() time.Duration {
	return time.Since(c.epoch) - time.Duration(c.wprogress.Load())
}

func (c *Conn) closedError() error {
	return fmt.Errorf("%w: %w", ErrClosed, c.Cause())
}

// Close closes the connection.
func (c *Conn) Close() error { return c.CloseWithError(errors.New("closed by the gate")) }

// CloseWithError closes the connection, recording cause as the reason that
// pending and future calls report. Only the first cause is kept. It does
// not wait for a write in progress, which may be blocked on the peer.
func (c *Conn) CloseWithError(cause error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.cause = cause
	incoming := c.incoming
	c.incoming = map[string]*incomingCall{}
	c.mu.Unlock()
	close(c.done)
	for _, in := range incoming {
		in.cancel()
	}
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}
