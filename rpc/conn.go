package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
)

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
	// AnswerBadInput makes the Conn answer unparseable or invalid messages with
	// a JSON-RPC error, as a server must. A client (the gate facing an
	// upstream) only logs them.
	AnswerBadInput bool
	// OnBadInput, if set, is told of every message from the peer that could
	// not be used and is not a response to one of our calls (which fails
	// that call instead), a request dropped for reusing the id of one in
	// progress among them: the gate records a host's refused request in
	// its audit log. It runs on a goroutine of its own, as a call's
	// handler does, never on the read loop: a hook that waits (an audit
	// write to a pipe nobody reads waits up to 10 s) holds up none of the
	// peer's later messages, its cancellations among them. The message's
	// answer (AnswerBadInput) is written after it returns, so that what it
	// records precedes the answer. It is given the message's id copied and
	// not its bytes (Raw), which are the read loop's: they are described
	// in the log where they are read.
	OnBadInput func(*MessageError)
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
	// EndCause, if set, turns the error that ended the transport (the
	// peer closed its stream, or a write to it failed) into the cause that
	// pending calls report: an upstream's exit status says more than "EOF"
	// or "closed pipe", whichever of the two the Conn happened to see first.
	// It runs off the read loop's and the writers' locks and may wait.
	EndCause func(error) error
	// ResponseWait, if not zero, bounds how long a response larger than a
	// short error may wait for room in the transport (a peer that stopped
	// reading, a queue at its byte bound: Limits.QueueBytes). Past it, or
	// at once when the transport refuses it (*QueueFullError), the result
	// is dropped and a short error answers the request in its place, so
	// that its memory goes and the peer, once it reads again, learns why.
	ResponseWait time.Duration
	// OnDropped, if set, is told of each result dropped so (ResponseWait):
	// the request, the result's size and why. It must not block.
	OnDropped func(req *Message, size int, why error)
}

// A Conn is one JSON-RPC 2.0 peer over a Transport: it numbers and
// correlates its own calls, serves the peer's, and carries cancellation
// both ways. All methods are safe for concurrent use.
//
// Framing is the Transport's: a malformed or oversized message reaches the
// Conn as a *MessageError, which costs that message alone (answered with an
// error when the Conn is a server, failing the pending call whose response
// it was). The Conn never waits on the peer longer than the caller's
// context allows: Run returns on cancellation while a Read is blocked, and
// a Transport that reports a stalled peer (*StallError) or a failed write
// (*WriteError) closes the Conn, so that every call on it fails with that
// cause instead of hanging (the owner then stops the peer).
type Conn struct {
	// Set at construction.
	opts    Options
	t       Transport
	handler Handler
	log     *slog.Logger
	done    chan struct{}
	workers *workers // serve the peer's calls (workers.go)

	handlers sync.WaitGroup // calls being served

	mu       sync.Mutex // guards the fields below
	nextID   int64
	pending  map[int64]*pendingCall   // our calls awaiting a response, by ID (ours are integers)
	incoming map[string]*incomingCall // the peer's calls being served, by ID key
	closed   bool
	cause    error // why the connection closed
}

type pendingCall struct {
	ch     chan *Message // buffered, receives exactly one message
	id     int64         // its key in Conn.pending
	method string
	admit  func(size int) error // CallAdmit's, or nil
}

// pendingCalls recycles a pendingCall, channel included, once its caller
// has received its response: by then it is out of Conn.pending, and the
// one send it could get has been received. A call that ends otherwise
// (cancelled, closed) leaves its pendingCall to the collector, since a
// response may still be sent to it.
var pendingCalls = sync.Pool{New: func() any { return &pendingCall{ch: make(chan *Message, 1)} }}

// incomingCall is one of the peer's calls being served. It is also the
// parent of the handler's context: Run's context marked as serving the
// request (Serving), in one allocation with the call's own state.
type incomingCall struct {
	context.Context                         // Run's
	serving         serving                 // the request, for Serving
	cancel          context.CancelCauseFunc // with a *PeerCancelled when the peer cancelled it
	done            <-chan struct{}         // the handler context's Done, for CancelServedAfter
	cancelled       bool
	// bound is the deadline CancelServedAfter set (UnixNano; 0: none),
	// reported by Deadline while it is armed.
	bound atomic.Int64

	// leases are the large lines of the responses its handler received
	// from upstreams (Conn.CallAdmit), counted in flight until the
	// handler has answered (settle). Made at the first: most requests
	// have none.
	leases atomic.Pointer[leaseSet]
}

// leaseSet is the large lines a request's handler received.
type leaseSet struct {
	mu       sync.Mutex
	leases   []*lineLease
	answered bool
	// relay is the line whose result the handler answers with and keeps
	// nothing of (ReleaseAfterWrite): that result's start and length.
	relay    *lineLease
	relayAt  *byte
	relayLen int
}

// answeredNone is the leaseSet of a request answered without any.
var answeredNone = &leaseSet{answered: true}

// tieLease ties a large response's count in flight to the host request
// being served under ctx, if any: what is left of it is released once that
// request is answered (settle). A response to a call of the program's own
// (a listing made for the catalog) is passed on to no one: its caller has
// it, and may keep it as long as it likes, uncounted.
func tieLease(ctx context.Context, l *lineLease) {
	if l == nil {
		return
	}
	in, _ := ctx.Value(incomingKey{}).(*incomingCall)
	if in == nil {
		l.release()
		return
	}
	set := in.leases.Load()
	if set == nil {
		in.leases.CompareAndSwap(nil, &leaseSet{})
		set = in.leases.Load()
	}
	set.mu.Lock()
	if set.answered {
		// A forward that outlived its request (a parked call): nothing
		// of it is in flight for this request any more.
		set.mu.Unlock()
		l.release()
		return
	}
	set.leases = append(set.leases, l)
	set.mu.Unlock()
}

// settle releases, once the request is answered, the large lines its
// handler received, but the one its response's payload is read from when
// the response went to a Stream: that line is in flight until the Stream
// has written it (lineBudget.written).
func (in *incomingCall) settle(payload []byte) {
	if in.leases.CompareAndSwap(nil, answeredNone) {
		return
	}
	set := in.leases.Load()
	set.mu.Lock()
	leases := set.leases
	set.leases, set.answered = nil, true
	set.mu.Unlock()
	for _, l := range leases {
		if !l.holds(payload) {
			l.release()
		}
	}
}

// Deadline is Run's context's, or the bound CancelServedAfter armed if
// that is earlier: what reads the deadline of a call bounded so (a start
// waiting out a restart backoff) waits no longer than the call may run.
func (in *incomingCall) Deadline() (time.Time, bool) {
	d, ok := in.Context.Deadline()
	if b := in.bound.Load(); b != 0 {
		if at := time.Unix(0, b); !ok || at.Before(d) {
			return at, true
		}
	}
	return d, ok
}

// Value returns the call's serving mark, and the call itself for
// CancelServedAfter; other keys are Run's context's.
func (in *incomingCall) Value(key any) any {
	switch key {
	case servingKey{}:
		return &in.serving
	case incomingKey{}:
		return in
	}
	return in.Context.Value(key)
}

// New returns a Conn over t, which it owns: closing the Conn closes t. Call
// Run to start reading. A Conn must be closed (Run closes it before
// returning), so that t's goroutines end.
func New(t Transport, h Handler, opts Options) *Conn {
	done := make(chan struct{})
	return &Conn{
		opts:     opts,
		t:        t,
		handler:  h,
		log:      opts.Logger,
		done:     done,
		workers:  newWorkers(done),
		pending:  map[int64]*pendingCall{},
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

// Run reads and dispatches messages until the transport ends, ctx is done
// or the connection is closed. It closes the connection before returning
// and returns the cause; when ctx ends it, the cause is ctx's.
//
// Run returns as soon as ctx is done or the Conn is closed, even while the
// peer holds its end open and a Read is blocked: the Transport's Read
// returns on cancellation and on Close.
//
// Messages are dispatched in arrival order, and a Sequential method is
// served, its response queued, before the next message is dispatched.
func (c *Conn) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		msg, err := c.t.Read(ctx)
		if err == nil {
			c.dispatch(ctx, msg)
			continue
		}
		var me *MessageError
		if errors.As(err, &me) {
			c.badInput(ctx, me)
			continue
		}
		select {
		case <-c.done:
			return c.Cause()
		default:
		}
		if ctx.Err() != nil {
			c.CloseWithError(context.Cause(ctx))
			return c.Cause()
		}
		if c.transportFailed(err) {
			return c.Cause()
		}
		// The peer ended its stream: let the calls in progress answer.
		c.drain(ctx)
		if c.opts.EndCause != nil {
			err = c.opts.EndCause(err)
		} else {
			err = fmt.Errorf("%s closed the stream: %w", c.opts.Peer, err)
		}
		c.CloseWithError(err)
		return c.Cause()
	}
}

// transportFailed closes the Conn if err says the transport can no longer
// carry messages to the peer (a failed write, a peer that stopped reading,
// a transport closed under the Conn), and reports whether it did.
func (c *Conn) transportFailed(err error) bool {
	var (
		we *WriteError
		se *StallError
		fe *FramingError
	)
	switch {
	case errors.As(err, &we):
		err = fmt.Errorf("writing to %s: %w", c.opts.Peer, we.Err)
		if c.opts.EndCause != nil {
			err = c.opts.EndCause(err)
		}
		if c.Cause() == nil {
			c.log.Warn("write failed", "peer", c.opts.Peer, "error", err)
		}
	case errors.As(err, &se):
		err = fmt.Errorf("%s stopped reading its input for %s", c.opts.Peer, se.After)
	case errors.As(err, &fe):
		err = fmt.Errorf("%s: %s", c.opts.Peer, fe.Reason)
	case errors.Is(err, ErrClosed):
		err = fmt.Errorf("the transport to %s was closed: %w", c.opts.Peer, err)
	default:
		return false
	}
	c.CloseWithError(err)
	return true
}

// drain waits, up to Options.Drain, for the calls being served to finish
// and for their responses to be sent. It gives up early when ctx is done
// or the connection closes.
func (c *Conn) drain(ctx context.Context) {
	if c.opts.Drain <= 0 {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, c.opts.Drain)
	defer cancel()
	served := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(served)
	}()
	select {
	case <-served:
	case <-c.done:
		return
	case <-dctx.Done():
		if ctx.Err() != nil {
			return
		}
		// The drain time is up. The calls still running (one waiting for a
		// human, a slow upstream) are ended with a cause, so that each
		// answers (a refusal, an error) rather than vanishing with the
		// connection: a peer that stopped writing may still be reading.
		c.cancelIncoming(ErrDrained)
		gctx, gcancel := context.WithTimeout(ctx, drainGrace)
		defer gcancel()
		select {
		case <-served:
		case <-gctx.Done():
			return
		case <-c.done:
			return
		}
		dctx = gctx
	}
	// The responses are handed to the transport, perhaps not yet sent.
	if f, ok := c.t.(Flusher); ok {
		_ = f.Flush(dctx)
	}
}

// ErrDrained is the cause a call in progress is cancelled with when the
// peer has ended its stream and the call did not finish within
// Options.Drain.
var ErrDrained = errors.New("the peer ended its input and the call did not finish within the drain time")

// drainGrace is how long calls cancelled at the end of the drain get to
// answer: handlers return promptly once their context is done.
const drainGrace = 2 * time.Second

// cancelIncoming cancels every call being served with cause, without
// marking it cancelled by the peer: each still sends its response.
func (c *Conn) cancelIncoming(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range c.incoming {
		in.cancel(cause)
	}
}

// badInput deals with a message that could not be used. A request gets an
// error response when we are the server side; a response we are waiting for
// fails its call, so nothing waits forever on an answer that came broken.
// It runs on Run's goroutine, so its answer waits for room only as long as
// ctx allows; with OnBadInput set, the hook and the answer after it run on
// a worker (tellBadInput).
func (c *Conn) badInput(ctx context.Context, me *MessageError) {
	// The reason names kinds, sizes and positions; the message itself is
	// described, never quoted (audit.Payload).
	attrs := []any{"peer", c.opts.Peer, "error", me.Reason, "message", audit.Payload(me.Raw)}
	if me.Offset > 0 {
		attrs = append(attrs, "offset", me.Offset)
	}
	c.log.Warn("bad message", attrs...)
	if me.ID != nil && !me.Request {
		c.mu.Lock()
		p, ok := c.pendingOf(me.ID)
		if ok {
			delete(c.pending, p.id)
		}
		c.mu.Unlock()
		if ok {
			p.ch <- &Message{ID: me.ID, Error: Errorf(CodeInternalError, "%s sent a malformed response to %s: %s", c.opts.Peer, p.method, me.Reason)}
			return
		}
	}
	if c.opts.OnBadInput != nil {
		c.tellBadInput(me, c.opts.AnswerBadInput)
		return
	}
	if c.opts.AnswerBadInput {
		_ = c.write(ctx, &Message{ID: me.ID, Error: Errorf(me.Code, "%s", me.Reason)})
	}
}

// tellBadInput tells OnBadInput of me and then, if answer is set, answers
// it, both on a worker, as a call is served: the hook may wait (the gate
// writes an audit record, which a stalled audit pipe holds for up to
// 10 s), and on the read loop it held every later message of the peer,
// its other requests and its cancellations, for as long. The answer
// follows the hook, so a record the hook writes precedes it, as a
// refused call's record precedes its answer; it waits for room as a
// handler's does. The worker counts among the calls being served, so a
// peer that ends its input after a bad line still gets its answer (drain).
//
// What the worker reads of me must outlive the line me was read from,
// which the next Read may reuse: the id is copied, and the bytes (Raw),
// described in the log on the read loop, are not passed on.
func (c *Conn) tellBadInput(me *MessageError, answer bool) {
	e := *me
	e.Raw = nil
	if me.ID != nil {
		e.ID = append(json.RawMessage(nil), me.ID...)
	}
	c.handlers.Add(1)
	c.workers.run(func() {
		defer c.handlers.Done()
		c.opts.OnBadInput(&e)
		if answer {
			_ = c.write(context.Background(), &Message{ID: e.ID, Error: Errorf(e.Code, "%s", e.Reason)})
		}
	})
}

func (c *Conn) dispatch(ctx context.Context, msg *Message) {
	switch {
	case msg.IsResponse():
		c.mu.Lock()
		p, ok := c.pendingOf(msg.ID)
		if ok {
			delete(c.pending, p.id)
		}
		c.mu.Unlock()
		if !ok {
			c.log.Debug("response to no pending request", "peer", c.opts.Peer, "id", LogID(msg.ID))
			leaseOf(msg).release()
			return
		}
		if p.admit != nil && msg.Error == nil {
			if err := p.admit(len(msg.Result)); err != nil {
				// Refused where it was read: the result is let go at
				// once, not parked until its caller runs.
				leaseOf(msg).release()
				msg = &Message{ID: msg.ID, Error: asError(err)}
			}
		}
		p.ch <- msg
	case msg.IsNotification():
		if msg.Method == MethodCancelled {
			c.peerCancelled(msg)
			return
		}
		c.handler.HandleNotification(msg)
		// Passed on (queued for a host, or dropped) or not by now: a
		// large notification is no longer in flight.
		leaseOf(msg).release()
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
		in.cancel(&PeerCancelled{Params: append(json.RawMessage(nil), msg.Params...)})
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
		// Told as bad input, so that the gate records it as it records a
		// line it could not use (off the read loop: tellBadInput); not
		// answered, for the reason above.
		if c.opts.OnBadInput != nil {
			c.tellBadInput(&MessageError{Code: CodeInvalidRequest, ID: req.ID, Request: true, Method: req.Method, Reason: "its id is in use by a request in progress: dropped, not answered"}, false)
		}
		// Dropped, a large request is no longer in flight (tellBadInput
		// copied its id): held until a collection, it would make later
		// large lines wait for room (largebudget.go).
		leaseOf(req).release()
		return
	}
	in := &incomingCall{Context: ctx, serving: serving{c.t, req.ID}}
	cctx, cancel := context.WithCancelCause(in)
	in.cancel, in.done = cancel, cctx.Done()
	if r, ok := c.handler.(Router); ok {
		cctx = r.Route(cctx, req)
	}
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
		defer cancel(nil)
		result, err := c.callHandler(cctx, req)
		// A large request has been forwarded (or refused) by now: its
		// line is no longer in flight (largebudget.go).
		leaseOf(req).release()
		c.mu.Lock()
		delete(c.incoming, key)
		cancelled := in.cancelled
		c.mu.Unlock()
		if cancelled {
			in.settle(nil)
			return // MCP: no response to a cancelled request.
		}
		resp := &Message{ID: req.ID}
		switch {
		case err != nil:
			// asError's target escapes to errors.As: declared here, it
			// would be allocated for every call, answered with an error
			// or not.
			resp.Error = asError(endedWith(cctx, err))
		case result == nil:
			resp.Result = json.RawMessage("{}")
		default:
			resp.Result = result
			if _, ok := c.t.(*Stream); ok {
				// Recycled by the Stream once written whole, if the
				// handler said it keeps nothing of it (relayline.go).
				resp.reuse = in.relayedLine(result)
			}
		}
		if err := c.writeResponse(wctx, req, resp, sequential); err != nil && !errors.Is(err, ErrClosed) {
			c.log.Warn("writing response", "peer", c.opts.Peer, "method", LogMethod(req.Method), "error", err)
		}
		if _, ok := c.t.(*Stream); ok {
			in.settle(resp.Result)
		} else {
			in.settle(nil)
		}
	}
	if sequential {
		run()
		return
	}
	c.workers.run(run)
}

// endedWith is err, or, when err only says that the call's context ended
// (a handler returning ctx.Err()), the reason it was ended with: the
// host's input ended and the drain time ran out, a signal stopped the
// gate. "context canceled" tells the peer nothing.
func endedWith(ctx context.Context, err error) error {
	if ctx.Err() == nil || (!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return cause
	}
	return err
}

// asError is err as a JSON-RPC error: itself when it is one.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(CodeInternalError, "%s", err.Error())
}

// writeResponse sends the response to req. A response larger than the
// transport's message limit (*TooLargeError) is dropped and answered by a
// short error instead. So is a large result that cannot be queued within
// Options.ResponseWait, or that the transport refuses for lack of room;
// the short error waits as long as it must (it costs little, and the peer
// that reads again must find an answer to every request).
func (c *Conn) writeResponse(ctx context.Context, req, resp *Message, sequential bool) error {
	var err error
	notReading := false
	if c.opts.ResponseWait <= 0 || sequential || len(resp.Result) <= smallMessage {
		err = c.write(ctx, resp)
	} else {
		wctx, cancel := context.WithTimeout(ctx, c.opts.ResponseWait)
		err = c.write(wctx, resp)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err, notReading = fmt.Errorf("%s read nothing of what was queued for it for %s", c.opts.Peer, c.opts.ResponseWait), true
		}
	}
	var (
		qf *QueueFullError
		tl *TooLargeError
	)
	size, what := len(resp.Result), "result of"
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tl):
		// An error's data counts too: a response of any kind may be large.
		size, what = tl.Size, "answer to"
	case errors.As(err, &qf):
		notReading = true
	case !notReading:
		return err
	}
	c.log.Warn("result dropped", "peer", c.opts.Peer, "method", LogMethod(req.Method), "id", LogID(req.ID), "bytes", size, "error", err)
	if c.opts.OnDropped != nil {
		c.opts.OnDropped(req, size, err)
	}
	why := "it is too large for the " + c.opts.Peer
	if notReading {
		why = "the " + c.opts.Peer + " was not reading its input"
	}
	return c.write(ctx, &Message{ID: req.ID, Error: Errorf(CodeInternalError,
		"mcp-gate dropped the %d-byte %s %s because %s: %v", size, what, req.Method, why, err)})
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
	return c.CallAdmit(ctx, method, params, nil)
}

// CallAdmit is Call with a say over the result: admit, if not nil, is
// called with the result's size on the read loop as soon as the response
// is read, and an error from it replaces the result (the caller gets that
// error, as an *Error, or a CodeInternalError carrying its message). A
// caller that accounts results against a budget uses it, so that a result
// over the budget is let go where it was read instead of waiting for its
// caller's goroutine to run. admit must not block.
func (c *Conn) CallAdmit(ctx context.Context, method string, params json.RawMessage, admit func(size int) error) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		cause := c.cause
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	c.nextID++
	p := pendingCalls.Get().(*pendingCall)
	p.id, p.method, p.admit = c.nextID, method, admit
	// The id's bytes are the message's own: a transport may hand them on.
	id := json.RawMessage(strconv.AppendInt(make([]byte, 0, 20), p.id, 10))
	c.pending[p.id] = p
	c.mu.Unlock()

	if err := c.write(ctx, &Message{ID: id, Method: method, Params: params}); err != nil {
		c.forget(p.id)
		return nil, err
	}
	select {
	case resp := <-p.ch:
		p.admit = nil
		pendingCalls.Put(p)
		tieLease(ctx, leaseOf(resp))
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.forget(p.id)
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

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// pendingOf finds the pending call a response's id names. Ours are
// integers, matched as idKey matches ids (7 and 7.0 are one); any other
// id (a string, a fraction) is no call of ours. Called with mu held.
func (c *Conn) pendingOf(id json.RawMessage) (*pendingCall, bool) {
	n, ok := ourID(id)
	if !ok {
		return nil, false
	}
	p, ok := c.pending[n]
	return p, ok
}

// ourID reads id as a call of ours would carry it: the integer idKey
// makes of it, without allocating for the plain digits a peer echoes.
func ourID(id json.RawMessage) (int64, bool) {
	if len(id) == 0 || id[0] == '"' {
		return 0, false
	}
	if len(id) <= 18 && id[0] != '0' {
		var n int64
		for _, c := range id {
			if c < '0' || c > '9' {
				return parseIDKey(idKey(id))
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	return parseIDKey(idKey(id))
}

// parseIDKey reads an idKey as one of our ids (a positive integer with
// no sign, no leading zero), or false.
func parseIDKey(key string) (int64, bool) {
	if key == "" || key[0] < '1' || key[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(key, 10, 64)
	return n, err == nil
}

// cancelRequest tells the peer that we gave up on request id. The caller
// has given up already and must not wait on a peer that may not be reading:
// the notification is queued at once if the transport has room, and
// otherwise by a goroutine of its own, which ends when it is queued or the
// Conn closes. Either way it follows the request, which was written before.
func (c *Conn) cancelRequest(id json.RawMessage, cause error) {
	params, err := cancelParams(id, cause)
	if err != nil {
		c.log.Warn("encoding a cancellation", "peer", c.opts.Peer, "id", LogID(id), "error", err)
		return
	}
	m := &Message{Method: MethodCancelled, Params: params}
	select {
	case <-c.done:
		return
	default:
	}
	if tw, ok := c.t.(tryWriter); ok {
		if queued, err := tw.tryWrite(m); queued || err != nil {
			return
		}
	}
	// The transport's Write returns when the Conn closes it, if not before.
	go func() { _ = c.write(context.Background(), m) }()
}

// tryWriter is a Transport that can queue a message without waiting.
type tryWriter interface {
	tryWrite(m *Message) (queued bool, err error)
}

// Notify sends a notification. It returns once the transport has taken
// the message, not once the peer has read it; while the transport has no
// room it waits until ctx is done (returning ctx's cause), the Conn closes,
// or the transport reports that the peer stopped reading (which closes the
// Conn).
func (c *Conn) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return c.write(ctx, &Message{Method: method, Params: params})
}

// TryNotify sends a notification only if the transport takes it at once,
// and reports whether it did. A caller that must never wait on this peer
// (one upstream's read loop relaying to one of many hosts) uses it: a
// notification to a peer that is not reading is dropped, not waited for.
func (c *Conn) TryNotify(method string, params json.RawMessage) (bool, error) {
	select {
	case <-c.done:
		return false, c.closedError()
	default:
	}
	m := &Message{Method: method, Params: params}
	if tw, ok := c.t.(tryWriter); ok {
		return tw.tryWrite(m)
	}
	// A transport that cannot tell has its Write waited for.
	if err := c.write(context.Background(), m); err != nil {
		return false, err
	}
	return true, nil
}

// write hands m to the transport. An error that means the peer can no
// longer be reached closes the Conn, and is returned as ErrClosed with the
// cause; ctx's cause and encoding errors are returned as they are.
func (c *Conn) write(ctx context.Context, m *Message) error {
	select {
	case <-c.done:
		return c.closedError()
	default:
	}
	err := c.t.Write(ctx, m)
	if err == nil {
		return nil
	}
	select {
	case <-c.done:
		return c.closedError()
	default:
	}
	if c.transportFailed(err) {
		return c.closedError()
	}
	return err
}

func (c *Conn) closedError() error {
	return fmt.Errorf("%w: %w", ErrClosed, c.Cause())
}

// Close closes the connection.
func (c *Conn) Close() error { return c.CloseWithError(errors.New("closed by the gate")) }

// CloseWithError closes the connection and its transport, recording cause
// as the reason that pending and future calls report. Only the first cause
// is kept. It does not wait for a write in progress, which may be blocked
// on the peer.
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
		in.cancel(nil)
	}
	return c.t.Close()
}
