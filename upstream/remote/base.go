package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// inQueueLen is how many incoming messages may wait for the Conn's Read.
// The readers of response bodies wait when it is full: the server is then
// held back by TCP, as a child is by its pipe.
const inQueueLen = 64

// outQueueLen is how many outgoing messages may wait to be posted.
const outQueueLen = 64

// incoming is a message or a MessageError for Read.
type incoming struct {
	m   *rpc.Message
	err error
}

// base is what both transports share: the queues between the Conn and the
// HTTP requests, the lifecycle (Close, Stop, Exited) and the bounds.
type base struct {
	// Set at construction.
	name    string // the server's key, for the log
	where   string // the URL, redacted, for errors and the log
	log     *slog.Logger
	client  *http.Client
	headers http.Header // the entry's own; values are never logged
	max     int         // bound on one incoming message
	stall   time.Duration

	ctx    context.Context // every request's; cancelled when the transport ends
	cancel context.CancelCauseFunc

	in  chan incoming
	out chan []byte

	progress atomic.Int64 // unix nanos of the poster's last progress

	closeOnce sync.Once
	closed    chan struct{} // Close was called

	endOnce sync.Once
	ended   chan struct{} // the transport failed for good, or was stopped
	endErr  error         // why; written before ended is closed

	wg sync.WaitGroup // the transport's goroutines
}

func newBase(name string, u *url.URL, headers map[string]string, log *slog.Logger, lim rpc.Limits) *base {
	b := &base{
		name:    name,
		where:   redactURL(u),
		log:     log,
		headers: http.Header{},
		max:     lim.MaxMessageBytes,
		stall:   lim.WriteTimeout,
		in:      make(chan incoming, inQueueLen),
		out:     make(chan []byte, outQueueLen),
		closed:  make(chan struct{}),
		ended:   make(chan struct{}),
	}
	if b.max <= 0 {
		b.max = rpc.DefaultMaxMessageBytes
	}
	for k, v := range headers {
		b.headers.Set(k, v)
	}
	b.client = newClient()
	b.ctx, b.cancel = context.WithCancelCause(context.Background())
	b.progress.Store(time.Now().UnixNano())
	return b
}

// newClient returns a client that never follows a redirect: the entry's
// headers (a token) are meant for its URL's server, and Go's client would
// carry custom headers to wherever a redirect points.
func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Every request in flight holds a connection of its own (its reply
	// may be a stream), so as many connections as calls in flight are
	// open; fewer kept idle means the rest are closed after each reply
	// and dialed again for the next call. 64 keeps a busy session's
	// connections (e2e/httpbench at 64 concurrent calls: a third fewer
	// calls per second with 8) and bounds what an idle upstream holds.
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// redactURL names u without what may be secret: user info, query and
// fragment are left out.
func redactURL(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	s := r.String()
	if len(s) > maxWhere {
		// A legacy server chooses its endpoint's path: bounded in logs.
		s = s[:maxWhere] + "…"
	}
	if u.RawQuery != "" {
		s += "?…"
	}
	return s
}

// maxWhere bounds a URL as errors and log lines name it.
const maxWhere = 256

// describeHTTPError turns an error of client.Do into one that names the
// redacted URL: a *url.Error would quote the whole URL, query and all.
func (b *base) describeHTTPError(method string, err error) error {
	return b.describeHTTPErrorAt(method, b.where, err)
}

// describeHTTPErrorAt is describeHTTPError for a request to where (a
// redacted URL) other than the entry's own.
func (b *base) describeHTTPErrorAt(method, where string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if c := context.Cause(b.ctx); c != nil && b.ctx.Err() != nil {
		err = c
	}
	return fmt.Errorf("%s %s: %w", method, where, err)
}

// Read returns the next message from the server.
func (b *base) Read(ctx context.Context) (*rpc.Message, error) {
	// What arrived before the transport ended is still delivered.
	select {
	case it := <-b.in:
		return it.m, it.err
	default:
	}
	select {
	case it := <-b.in:
		return it.m, it.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-b.closed:
		return nil, rpc.ErrClosed
	case <-b.ended:
		select {
		case it := <-b.in:
			return it.m, it.err
		default:
		}
		return nil, b.endErr
	}
}

// deliver hands a message (or a MessageError) to Read, waiting for room.
// It reports false when the transport has ended.
func (b *base) deliver(it incoming) bool {
	select {
	case b.in <- it:
		return true
	case <-b.closed:
		return false
	case <-b.ended:
		return false
	}
}

// deliverRaw decodes one message's bytes and delivers it.
func (b *base) deliverRaw(raw []byte) (*rpc.Message, bool) {
	if len(raw) > b.max {
		return nil, b.deliver(incoming{err: rpc.OversizedMessage(len(raw), b.max, raw[:min(len(raw), salvageBytes)], raw[max(0, len(raw)-salvageBytes):])})
	}
	m, me := rpc.DecodeMessage(raw)
	if me != nil {
		return nil, b.deliver(incoming{err: me})
	}
	return m, b.deliver(incoming{m: m})
}

// deliverEvent delivers the message an SSE event carries.
func (b *base) deliverEvent(ev event) (*rpc.Message, bool) {
	if ev.TooBig > 0 {
		return nil, b.deliver(incoming{err: rpc.OversizedMessage(ev.TooBig, b.max, ev.Head, ev.Tail)})
	}
	return b.deliverRaw(ev.Data)
}

// failCall answers our own request id with an error, as if the server had:
// the call fails with a reason instead of waiting for an answer that
// cannot come.
func (b *base) failCall(id []byte, format string, args ...any) {
	if id == nil {
		return
	}
	b.deliver(incoming{m: &rpc.Message{ID: append([]byte{}, id...), Error: rpc.Errorf(rpc.CodeInternalError, "upstream %q: "+format, append([]any{b.name}, args...)...)}})
}

// Write queues m for posting.
func (b *base) Write(ctx context.Context, m *rpc.Message) error {
	raw, err := rpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := b.stopped(); err != nil {
		return err
	}
	select {
	case b.out <- raw:
		return nil
	default:
	}
	// The queue is full: the poster is blocked on the server.
	var timeout <-chan time.Time
	if b.stall > 0 {
		t := time.NewTimer(b.stall)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case b.out <- raw:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-b.closed:
			return rpc.ErrClosed
		case <-b.ended:
			return &rpc.WriteError{Err: b.endErr}
		case <-timeout:
			if idle := time.Since(time.Unix(0, b.progress.Load())); idle >= b.stall {
				return &rpc.StallError{After: b.stall}
			}
			timeout = time.After(b.stall - time.Since(time.Unix(0, b.progress.Load())))
		}
	}
}

func (b *base) stopped() error {
	select {
	case <-b.closed:
		return rpc.ErrClosed
	case <-b.ended:
		return &rpc.WriteError{Err: b.endErr}
	default:
		return nil
	}
}

// next waits for the next message to post; ok is false once the transport
// has ended.
func (b *base) next() ([]byte, bool) {
	select {
	case raw := <-b.out:
		b.progress.Store(time.Now().UnixNano())
		return raw, true
	case <-b.closed:
		return nil, false
	case <-b.ended:
		return nil, false
	}
}

// end ends the transport for good with err (the first reason wins):
// requests under way are cancelled, Read returns err once what arrived
// before is read, and Exited is closed.
func (b *base) end(err error) {
	b.endOnce.Do(func() {
		b.endErr = err
		b.cancel(err)
		close(b.ended)
	})
}

// Close ends the transport at once.
func (b *base) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.cancel(rpc.ErrClosed)
	})
	return nil
}

// wait waits, up to a bound, for the transport's goroutines to end after
// it has: every request is cancelled by then, so they end at once, and
// nothing of a stopped connection (a log line) outlives the pool's Close.
func (b *base) wait(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(max(grace, time.Second)):
		b.log.Warn("a remote connection's requests outlived its stop", "server", b.name)
	}
}

// Exited is closed once the connection has ended (failed, or stopped).
func (b *base) Exited() <-chan struct{} { return b.ended }

// ExitErr says why the connection ended. Valid after Exited is closed.
func (b *base) ExitErr() error { return b.endErr }

// request builds a request to u with the entry's headers.
func (b *base) request(ctx context.Context, method, u string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, b.where, err)
	}
	for k, v := range b.headers {
		req.Header[k] = v
	}
	return req, nil
}

// mediaType returns resp's content type, lowercased, without parameters.
func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// readBody reads a body up to the message limit: a larger one is reported
// by its size without being kept.
func (b *base) readBody(r io.Reader) (raw []byte, tooBig int, head, tail []byte, err error) {
	raw, err = io.ReadAll(io.LimitReader(r, int64(b.max)+1))
	if err != nil || len(raw) <= b.max {
		return raw, 0, nil, nil, err
	}
	head = append([]byte{}, raw[:salvageBytes]...)
	tail = append([]byte{}, raw[len(raw)-salvageBytes:]...)
	n := int64(len(raw))
	// Count the rest, keeping its tail: a few buffers at a time.
	buf := make([]byte, 32<<10)
	for {
		k, rerr := r.Read(buf)
		n += int64(k)
		if k > 0 {
			tail = append(tail, buf[:k]...)
			if len(tail) > salvageBytes {
				tail = append(tail[:0], tail[len(tail)-salvageBytes:]...)
			}
		}
		if rerr != nil {
			break
		}
	}
	return nil, int(min(n, int64(^uint(0)>>1))), head, tail, nil
}

// statusText names an HTTP status for an error.
func statusText(resp *http.Response) string {
	return fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

// describeType names a Content-Type for an error without quoting much of
// the server's bytes.
func describeType(resp *http.Response) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return "no Content-Type"
	}
	if mt := mediaType(resp); mt != "" && len(mt) <= 64 {
		return fmt.Sprintf("Content-Type %q", mt)
	}
	return fmt.Sprintf("an unreadable Content-Type of %d bytes", len(ct))
}

// drainClose discards up to a little of a body and closes it, so that the
// connection can be reused. The drain is bounded in time as well as in
// bytes: a server that holds a body open (a reply stream kept after its
// answer, an SSE stream in answer to a notification) would otherwise hold
// the goroutine, its connection and what waits on it (the abandoning of a
// cancelled call's stream) for as long as it likes. Past drainWait the body
// is closed under the read, which drops the connection.
func drainClose(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { _ = body.Close() })
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	t.Stop()
	_ = body.Close()
}

// acceptWait bounds the wait for a server to take a message whose answer,
// if any, does not come in the POST's response: a notification or a
// response of the gate's (Streamable HTTP), or anything posted to a legacy
// endpoint (a call's from when its answer has come on the stream, or the
// caller has given up on it). Such a POST is answered with 202 at once
// (or, by a legacy server, once it has handled the message); one the server never
// answers would hold a goroutine and a connection of the gate for as long
// as the session lasts, one per message. A var for the tests.
var acceptWait = 10 * time.Second

// errNotAccepted is the cause of such a POST given up on.
var errNotAccepted = errors.New("the server did not accept the message in time")

// boundAccept cancels a POST's context with errNotAccepted acceptWait
// after its body has been sent (a large message on a slow link takes the
// time it takes); the returned func disarms it. Call it before the POST.
func boundAccept(body *sendBody, cancel context.CancelCauseFunc) (stop func()) {
	b := newAcceptBound(cancel)
	body.after = b.arm
	return b.stop
}

// acceptBound cancels a POST's context with errNotAccepted acceptWait
// after it is armed, unless it has been stopped.
type acceptBound struct {
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func newAcceptBound(cancel context.CancelCauseFunc) *acceptBound {
	return &acceptBound{cancel: cancel}
}

// arm starts the wait; a second arm does nothing.
func (b *acceptBound) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped && b.timer == nil {
		b.timer = time.AfterFunc(acceptWait, func() { b.cancel(errNotAccepted) })
	}
}

// stop disarms it for good.
func (b *acceptBound) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

// drainWait bounds drainClose: a server that ends its body does so at once
// (the last chunk follows the answer), so this is long only for one that
// means to hold it.
const drainWait = 200 * time.Millisecond

// sendBody is a request body that reports when the client has read it all:
// the poster then knows the message is on its way, and posts the next.
type sendBody struct {
	r     io.Reader
	once  sync.Once
	sent  chan struct{}
	after func() // if set, called once the body is sent (boundAccept)
}

func newSendBody(raw []byte) *sendBody {
	return &sendBody{r: bytes.NewReader(raw), sent: make(chan struct{})}
}

func (s *sendBody) done() {
	s.once.Do(func() {
		close(s.sent)
		if s.after != nil {
			s.after()
		}
	})
}

func (s *sendBody) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.done()
	}
	return n, err
}

func (s *sendBody) Close() error {
	s.done()
	return nil
}
