package httpfront

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// errNoStream is what a question to the client gets when no stream is open
// that could carry it: failing at once beats waiting for an answer that
// cannot come (an approval then reads as "could not ask").
var errNoStream = errors.New("the HTTP client has no open stream this message could travel on (no request in flight with an SSE stream and no GET stream)")

// errStreamGone is what a message gets when the stream it belongs to was
// closed by the client.
var errStreamGone = errors.New("the HTTP client closed the stream this message belongs to")

// item is one message queued for a stream; final ends the stream after it
// (the response of the stream's request).
type item struct {
	b     []byte
	final bool
}

// outStream is where the messages of one HTTP response go: the SSE stream
// or JSON body of a POST, or the GET stream. Its queue is bounded; the
// HTTP handler serving it drains it.
type outStream struct {
	q        chan item
	gone     chan struct{} // closed when its HTTP handler returned
	goneOnce sync.Once
}

func newOutStream(n int) *outStream {
	return &outStream{q: make(chan item, n), gone: make(chan struct{})}
}

// end marks the stream as no longer served: writers stop waiting on it.
func (o *outStream) end() { o.goneOnce.Do(func() { close(o.gone) }) }

// exchange is one request of the client awaiting its response.
type exchange struct {
	id    json.RawMessage
	seq   uint64
	sse   bool
	token string // its progress token (raw JSON), "" when none
	out   *outStream
}

// Transport is the rpc.Transport of one HTTP session. Read returns what
// the client POSTed; Write routes each message to the stream it belongs to
// (see the package doc). It is safe for concurrent use as rpc.Transport
// requires.
type Transport struct {
	log          *slog.Logger
	queueLen     int
	writeTimeout time.Duration

	in        chan *rpc.Message
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	seq      uint64
	calls    map[string]*exchange // by rpc.IDKey of the client's request id
	progress map[string]*exchange // by the request's progress token
	get      *outStream           // the GET stream, nil when none is open
	busy     int                  // HTTP handlers using the session now
	lastUsed time.Time            // when busy last fell to zero
}

func newTransport(log *slog.Logger, queueLen int, writeTimeout time.Duration) *Transport {
	return &Transport{
		log: log, queueLen: queueLen, writeTimeout: writeTimeout,
		in:       make(chan *rpc.Message, queueLen),
		closed:   make(chan struct{}),
		calls:    map[string]*exchange{},
		progress: map[string]*exchange{},
		lastUsed: time.Now(),
	}
}

// Read returns the next message the client POSTed.
func (t *Transport) Read(ctx context.Context) (*rpc.Message, error) {
	select {
	case m := <-t.in:
		return m, nil
	case <-t.closed:
		return nil, rpc.ErrClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Close ends the session's transport: the session's Conn stops, every
// stream ends.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() { close(t.closed) })
	return nil
}

// Done is closed when the transport is closed.
func (t *Transport) Done() <-chan struct{} { return t.closed }

// deliver hands a message from the client to the session, waiting while
// its queue is full until ctx (the POST's) ends.
func (t *Transport) deliver(ctx context.Context, m *rpc.Message) error {
	select {
	case t.in <- m:
		return nil
	case <-t.closed:
		return rpc.ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// open registers one of the client's requests, whose response and related
// messages go to a new stream. It fails when a request with the same id is
// in flight: the session would drop it, and its POST would wait forever.
func (t *Transport) open(m *rpc.Message, sse bool) (*exchange, error) {
	ex := &exchange{id: m.ID, sse: sse, out: newOutStream(t.queueLen)}
	if meta, ok := rawjson.Get(m.Params, "_meta"); ok {
		if tok, ok := rawjson.Get(meta, "progressToken"); ok {
			ex.token = string(tok)
		}
	}
	key := rpc.IDKey(m.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.calls[key]; dup {
		return nil, errors.New("the request id is in use by a request in flight in this session")
	}
	if ex.token != "" {
		if _, dup := t.progress[ex.token]; dup {
			return nil, errors.New("the progress token is in use by a request in flight in this session")
		}
		t.progress[ex.token] = ex
	}
	t.seq++
	ex.seq = t.seq
	t.calls[key] = ex
	return ex, nil
}

// forget drops an exchange whose response will not be sent through it (its
// POST failed before the session saw it).
func (t *Transport) forget(ex *exchange) {
	t.mu.Lock()
	t.forgetLocked(ex)
	t.mu.Unlock()
}

func (t *Transport) forgetLocked(ex *exchange) {
	key := rpc.IDKey(ex.id)
	if t.calls[key] == ex {
		delete(t.calls, key)
	}
	if ex.token != "" && t.progress[ex.token] == ex {
		delete(t.progress, ex.token)
	}
}

// openGet registers the GET stream; only one may be open at a time.
func (t *Transport) openGet() (*outStream, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.get != nil {
		return nil, false
	}
	t.get = newOutStream(t.queueLen)
	return t.get, true
}

func (t *Transport) closeGet(o *outStream) {
	o.end()
	t.mu.Lock()
	if t.get == o {
		t.get = nil
	}
	t.mu.Unlock()
}

// endGet ends the GET stream, if one is open (a drain).
func (t *Transport) endGet() {
	t.mu.Lock()
	g := t.get
	t.mu.Unlock()
	if g != nil {
		g.end()
	}
}

// use counts an HTTP handler using the session, for idle expiry; the
// returned function ends the use.
func (t *Transport) use() func() {
	t.mu.Lock()
	t.busy++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.busy--
		if t.busy == 0 {
			t.lastUsed = time.Now()
		}
		t.mu.Unlock()
	}
}

// idleFor reports how long the session has had no HTTP handler, 0 while it
// has one.
func (t *Transport) idleFor(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy > 0 {
		return 0
	}
	return now.Sub(t.lastUsed)
}

// Write routes m to the stream it belongs to.
func (t *Transport) Write(ctx context.Context, m *rpc.Message) error {
	select {
	case <-t.closed:
		return rpc.ErrClosed
	default:
	}
	b, err := rpc.Encode(m)
	if err != nil {
		return err
	}
	if m.IsResponse() {
		t.mu.Lock()
		ex := t.calls[rpc.IDKey(m.ID)]
		if ex != nil {
			t.forgetLocked(ex)
		}
		t.mu.Unlock()
		if ex == nil {
			// Its POST ended before the answer (the client went away), or
			// the id was never the client's: there is nowhere to send it.
			t.log.Debug("response dropped: its request's stream is gone", "id", rpc.LogID(m.ID))
			return nil
		}
		err := t.put(ctx, ex.out, item{b: b, final: true})
		if errors.Is(err, errStreamGone) {
			t.log.Debug("response dropped: the client closed its request's stream", "id", rpc.LogID(m.ID))
			return nil
		}
		return err
	}
	out := t.route(ctx, m)
	if out == nil {
		if m.IsCall() {
			return errNoStream
		}
		t.log.Debug("notification dropped: no stream to carry it", "method", rpc.LogMethod(m.Method))
		return nil
	}
	err = t.put(ctx, out, item{b: b})
	if errors.Is(err, errStreamGone) && !m.IsCall() {
		return nil
	}
	return err
}

// route picks the stream for a request or notification of the session.
func (t *Transport) route(ctx context.Context, m *rpc.Message) *outStream {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := rpc.Serving(ctx, t); ok {
		if ex := t.calls[rpc.IDKey(id)]; ex != nil && ex.sse {
			return ex.out
		}
	}
	if m.Method == "notifications/progress" {
		if tok, ok := rawjson.Get(m.Params, "progressToken"); ok {
			if ex := t.progress[string(tok)]; ex != nil && ex.sse {
				return ex.out
			}
		}
	}
	var only, newest *exchange
	n := 0
	for _, ex := range t.calls {
		if !ex.sse {
			continue
		}
		n++
		only = ex
		if newest == nil || ex.seq > newest.seq {
			newest = ex
		}
	}
	switch {
	case n == 1:
		return only.out
	case t.get != nil:
		return t.get
	case newest != nil:
		return newest.out
	}
	return nil
}

// put queues it on o, waiting for room while the client reads; a client
// that reads nothing for the write timeout is stalled (rpc.StallError: the
// session ends, as a stdio host that stops reading ends its session).
func (t *Transport) put(ctx context.Context, o *outStream, it item) error {
	select {
	case <-o.gone:
		return errStreamGone
	default:
	}
	select {
	case o.q <- it:
		return nil
	default:
	}
	var timeout <-chan time.Time
	if t.writeTimeout > 0 {
		tm := time.NewTimer(t.writeTimeout)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case o.q <- it:
		return nil
	case <-o.gone:
		return errStreamGone
	case <-t.closed:
		return rpc.ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timeout:
		return &rpc.StallError{After: t.writeTimeout}
	}
}
