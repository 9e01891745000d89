package rpc

import (
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
// HandleNotification is called on the read loop, in arrival order; it must
// not block. notifications/cancelled is handled by the Conn and not passed on.
type Handler interface {
	HandleCall(ctx context.Context, req *Message) (json.RawMessage, error)
	HandleNotification(msg *Message)
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
}

// A Conn is one JSON-RPC 2.0 connection over a stream of newline-delimited
// messages. All methods are safe for concurrent use.
//
// Unlike a stream decoder, the Conn reads line by line, so one malformed or
// oversized message costs that message alone: the connection goes on.
type Conn struct {
	// Set at construction.
	opts    Options
	r       *bufio.Reader
	w       io.Writer
	closer  io.Closer
	handler Handler
	log     *slog.Logger
	done    chan struct{}

	wmu      sync.Mutex     // serialises writes to w; held for one whole message
	handlers sync.WaitGroup // calls being served

	mu       sync.Mutex // guards the fields below
	nextID   int64
	pending  map[string]*pendingCall  // our calls awaiting a response, by ID key
	incoming map[string]*incomingCall // the peer's calls being served, by ID key
	closed   bool
	cause    error // why the connection closed
}

type pendingCall struct {
	ch     chan *Message // buffered, receives exactly one message
	method string
}

type incomingCall struct {
	cancel    context.CancelFunc
	cancelled bool
}

// New returns a Conn that reads from r and writes to w. closer, if not nil,
// is closed when the connection closes (to unblock the reader). Call Run to
// start reading.
func New(r io.Reader, w io.Writer, closer io.Closer, h Handler, opts Options) *Conn {
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return &Conn{
		opts:     opts,
		r:        bufio.NewReaderSize(r, 64<<10),
		w:        w,
		closer:   closer,
		handler:  h,
		log:      opts.Logger,
		done:     make(chan struct{}),
		pending:  map[string]*pendingCall{},
		incoming: map[string]*incomingCall{},
	}
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
// returns the cause.
func (c *Conn) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			c.CloseWithError(ctx.Err())
		case <-c.done:
		}
	}()
	for {
		line, tail, tooBig, err := c.readLine()
		if err != nil {
			c.drain()
			if c.opts.ReadErrorCause != nil {
				err = c.opts.ReadErrorCause(err)
			} else {
				err = fmt.Errorf("%s closed the stream: %w", c.opts.Peer, err)
			}
			c.CloseWithError(err)
			return c.Cause()
		}
		if tooBig > 0 {
			c.badInput(&decodeError{
				code:    CodeInvalidRequest,
				id:      salvageID(line, tail),
				reason:  fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", tooBig, c.opts.MaxMessageBytes),
				request: looksLikeRequest(line),
			}, line)
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, err := Decode(line)
		if err != nil {
			c.badInput(err, line)
			continue
		}
		c.dispatch(ctx, msg)
	}
}

// drain waits, up to Options.Drain, for the calls being served to finish.
func (c *Conn) drain() {
	if c.opts.Drain <= 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(done)
	}()
	t := time.NewTimer(c.opts.Drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
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
func (c *Conn) badInput(err error, line []byte) {
	var de *decodeError
	if !errors.As(err, &de) {
		de = &decodeError{code: CodeParseError, reason: err.Error()}
	}
	c.log.Warn("bad message", "peer", c.opts.Peer, "error", de.reason, "head", string(truncate(line, 200)))
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
		_ = c.write(&Message{ID: de.id, Error: Errorf(de.code, "%s", de.reason)})
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
			c.log.Debug("response to no pending request", "peer", c.opts.Peer, "id", string(msg.ID))
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

func (c *Conn) serve(ctx context.Context, req *Message) {
	key := idKey(req.ID)
	cctx, cancel := context.WithCancel(ctx)
	in := &incomingCall{cancel: cancel}
	c.mu.Lock()
	_, dup := c.incoming[key]
	if !dup {
		c.incoming[key] = in
	}
	c.mu.Unlock()
	if dup {
		cancel()
		_ = c.write(&Message{ID: req.ID, Error: Errorf(CodeInvalidRequest, "request id %s is already in use by a request in progress", req.ID)})
		return
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
		if err := c.write(resp); err != nil && !errors.Is(err, ErrClosed) {
			c.log.Warn("writing response", "peer", c.opts.Peer, "method", req.Method, "error", err)
		}
	}
	if c.opts.Sequential != nil && c.opts.Sequential(req.Method) {
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
			c.log.Error("handler panic", "peer", c.opts.Peer, "method", req.Method, "panic", fmt.Sprint(r))
			result, err = nil, Errorf(CodeInternalError, "internal error while handling %s", req.Method)
		}
	}()
	return c.handler.HandleCall(ctx, req)
}

// Call sends a request and waits for its response. A JSON-RPC error from the
// peer is returned as *Error, unchanged. When ctx is done first, the peer is
// told with notifications/cancelled and ctx's error is returned.
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

	if err := c.write(&Message{ID: id, Method: method, Params: params}); err != nil {
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
		params, _ := json.Marshal(struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason,omitempty"`
		}{id, context.Cause(ctx).Error()})
		_ = c.Notify(MethodCancelled, params)
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
		return nil, fmt.Errorf("%w: %w", ErrClosed, c.Cause())
	}
}

func (c *Conn) forget(id json.RawMessage) {
	c.mu.Lock()
	delete(c.pending, string(id))
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params json.RawMessage) error {
	return c.write(&Message{Method: method, Params: params})
}

func (c *Conn) write(m *Message) error {
	buf, err := appendMessage(make([]byte, 0, 64+len(m.Params)+len(m.Result)), m)
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return fmt.Errorf("%w: %w", ErrClosed, c.Cause())
	default:
	}
	if _, err := c.w.Write(buf); err != nil {
		err = fmt.Errorf("writing to %s: %w", c.opts.Peer, err)
		go c.CloseWithError(err) // not under wmu: Close does not need it, but keep lock order simple
		return err
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.CloseWithError(errors.New("closed by the gate")) }

// CloseWithError closes the connection, recording cause as the reason that
// pending and future calls report. Only the first cause is kept.
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
