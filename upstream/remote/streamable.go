package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// Streamable HTTP (MCP 2025-11-25): every message the gate sends is a POST
// to the entry's URL; the server answers a request with a JSON body or an
// SSE stream that carries the response (and any requests and
// notifications of its own before it), and may offer a GET stream for
// messages of its own outside any request.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "MCP-Protocol-Version"
	headerLastID   = "Last-Event-ID"
)

// maxResumes is how many times in a row a dropped stream is resumed
// without a single event coming back before the gate gives up on it.
const maxResumes = 5

// emptyStreamBrief is how short a GET stream that brings no message must be
// to count as a fruitless attempt (five in a row give it up), and how long
// a retry the server asks for keeps one from counting (a server that polls).
const emptyStreamBrief = time.Second

// defaultRetry is the wait before resuming a stream when the server set
// no retry field.
const defaultRetry = 500 * time.Millisecond

// maxSessionIDBytes bounds the session id the gate accepts and sends back.
const maxSessionIDBytes = 1024

var versionShape = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// streamable is one Streamable HTTP session with a server.
type streamable struct {
	*base
	url string // the entry's URL, whole (its query may carry a key)

	mu        sync.Mutex // guards the fields below
	sessionID string     // from the initialize response; "" for a stateless server
	version   string     // the negotiated protocol version, once initialised
	listening bool       // the GET stream has been started
	// initAnswered is closed when the initialize response has come; the
	// poster waits for it before posting anything else.
	initAnswered chan struct{}
	// calls cancels the POST of each request in flight, by id.
	calls map[string]context.CancelCauseFunc

	stopOnce sync.Once
}

func dialStreamable(name string, u *url.URL, headers map[string]string, log *slog.Logger, lim rpc.Limits) *streamable {
	t := &streamable{base: newBase(name, u, headers, log, lim), url: u.String(), calls: map[string]context.CancelCauseFunc{}}
	t.wg.Add(1)
	go t.poster()
	return t
}

func (t *streamable) session() (id, version string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID, t.version
}

// poster posts the queued messages in order: each is on its way (its body
// handed to the connection) before the next is posted, and the initialize
// request is answered before anything else is sent, since everything
// after it carries the session id it returns.
func (t *streamable) poster() {
	defer t.wg.Done()
	for {
		raw, ok := t.next()
		if !ok {
			return
		}
		t.post(raw)
	}
}

func (t *streamable) post(raw []byte) {
	m, me := rpc.DecodeMessage(raw)
	if me != nil {
		// The gate's own encoding: cannot happen.
		t.log.Error("not posting a message the gate cannot read back", "server", t.name, "error", me.Reason)
		return
	}
	body := newSendBody(raw)
	// A request's POST has a context of its own: when the caller gives up
	// (the Conn posts notifications/cancelled), its reply stream is
	// dropped rather than held, or resumed, for nobody.
	ctx, cancel := context.WithCancelCause(t.ctx)
	if m.IsCall() {
		t.mu.Lock()
		t.calls[string(m.ID)] = cancel
		t.mu.Unlock()
	}
	req, err := t.request(ctx, http.MethodPost, t.url, body)
	if err != nil {
		cancel(nil)
		t.end(err)
		return
	}
	req.ContentLength = int64(len(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	sid, version := t.session()
	if sid != "" {
		req.Header.Set(headerSession, sid)
	}
	if version != "" {
		req.Header.Set(headerProtocol, version)
	}
	disarm := func() {}
	if !m.IsCall() {
		// Its answer, if any, comes elsewhere: the server has only to
		// take it.
		disarm = boundAccept(body, cancel)
	}
	isInit := m.IsCall() && m.Method == "initialize"
	done := make(chan struct{})
	var answered chan struct{}
	if isInit {
		answered = make(chan struct{})
		t.mu.Lock()
		t.initAnswered = answered
		t.mu.Unlock()
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(done)
		defer cancel(nil)
		defer disarm()
		if m.IsCall() {
			defer func() {
				t.mu.Lock()
				delete(t.calls, string(m.ID))
				t.mu.Unlock()
			}()
		}
		t.exchange(req, m, sid, isInit)
		if m.Method == rpc.MethodCancelled {
			t.abandon(m)
		}
	}()
	sent := body.sent
	if isInit {
		// Wait for the answer, not for the end of its stream (a server
		// may hold it open): it carries the session id and the version.
		sent = answered
	}
	select {
	case <-sent:
	case <-done:
	case <-t.closed:
	case <-t.ended:
	}
}

// abandon drops the reply stream of the request a cancellation names, once
// the cancellation itself has been posted.
func (t *streamable) abandon(m *rpc.Message) {
	id := cancelledID(m)
	if id == nil {
		return
	}
	t.mu.Lock()
	cancel := t.calls[string(id)]
	t.mu.Unlock()
	if cancel != nil {
		cancel(errors.New("the caller cancelled the request"))
	}
}

// cancelledID returns the request id a cancellation names, nil if none.
func cancelledID(m *rpc.Message) []byte {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || len(p.RequestID) == 0 {
		return nil
	}
	return p.RequestID
}

// exchange performs one POST and delivers what it brings.
func (t *streamable) exchange(req *http.Request, m *rpc.Message, sid string, isInit bool) {
	ctx := req.Context()
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The transport ended (the Conn fails its calls with the
			// reason), or the caller gave up on this one, or the server
			// did not take a notification in time.
			if errors.Is(context.Cause(ctx), errNotAccepted) {
				t.log.Warn("the server did not accept a message in time; the gate stopped waiting", "server", t.name, "method", rpc.LogMethod(m.Method), "after", acceptWait)
			}
			return
		}
		err = t.describeHTTPError(http.MethodPost, err)
		if m.IsCall() {
			t.failCall(m.ID, "%v", err)
		} else {
			t.log.Warn("posting a message to the server failed", "server", t.name, "method", rpc.LogMethod(m.Method), "error", err)
		}
		return
	}
	defer drainClose(resp.Body)
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		t.expire()
		return
	}
	if isInit && resp.StatusCode/100 == 2 {
		if err := t.adoptSession(resp); err != nil {
			t.failCall(m.ID, "%v", err)
			t.end(err)
			return
		}
	} else if got := resp.Header.Get(headerSession); got != "" && sid != "" && got != sid {
		t.end(fmt.Errorf("%s answered with another session id than the one the session was given (Mcp-Session-Id of %d bytes); the gate ends the session rather than mix two", t.where, len(got)))
		return
	}
	if resp.StatusCode/100 != 2 {
		t.errorStatus(resp, m)
		return
	}
	if !m.IsCall() {
		if m.Method == "notifications/initialized" {
			t.listen()
		}
		return
	}
	switch mediaType(resp) {
	case "application/json":
		raw, tooBig, head, tail, err := t.readBody(resp.Body)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				t.failCall(m.ID, "reading the answer to %s from %s: %v", rpc.LogMethod(m.Method), t.where, err)
			}
		case tooBig > 0:
			t.deliver(incoming{err: rpc.OversizedMessage(tooBig, t.max, head, tail)})
		default:
			t.deliverOne(raw, m.ID, isInit)
		}
	case "text/event-stream":
		t.readReply(ctx, resp.Body, m, sid, isInit)
	default:
		if resp.StatusCode == http.StatusAccepted {
			t.failCall(m.ID, "%s accepted %s without answering it (HTTP 202)", t.where, rpc.LogMethod(m.Method))
			return
		}
		t.failCall(m.ID, "%s answered %s with %s; expected application/json or text/event-stream", t.where, rpc.LogMethod(m.Method), describeType(resp))
	}
}

// deliverOne decodes one message and delivers it; it returns whether it
// answered the request id.
func (t *streamable) deliverOne(raw, id []byte, isInit bool) (answered, ok bool) {
	m, me := rpc.DecodeMessage(raw)
	if me != nil {
		return me.ID != nil && !me.Request && bytes.Equal(me.ID, id), t.deliver(incoming{err: me})
	}
	answered = m.IsResponse() && bytes.Equal(m.ID, id)
	if answered && isInit {
		// Before the answer is delivered: the initialized notification
		// that follows it must carry the version.
		t.noteVersion(m)
		t.mu.Lock()
		if t.initAnswered != nil {
			close(t.initAnswered)
			t.initAnswered = nil
		}
		t.mu.Unlock()
	}
	return answered, t.deliver(incoming{m: m})
}

// readReply reads the SSE stream that answers request m, resuming it with
// Last-Event-ID when it drops before the answer.
func (t *streamable) readReply(ctx context.Context, body io.ReadCloser, m *rpc.Message, sid string, isInit bool) {
	r := newSSEReader(body, t.max)
	misses := 0
	for {
		before := r.LastID
		answered, delivered, ok := t.readEvents(r, m.ID, isInit)
		if answered {
			// The request is done with: whatever the server sends on its
			// stream after the answer belongs to no call, and a stream
			// held open would hold a goroutine and a connection of the
			// gate for every call made (2025-11-25: the server SHOULD
			// close it after the response).
			drainClose(body)
			return
		}
		body.Close()
		if !ok || ctx.Err() != nil {
			return
		}
		// The stream ended before the answer: the server closed it (to be
		// polled, as 2025-11-25 allows) or the connection dropped.
		if !r.HasID {
			t.failCall(m.ID, "%s ended the reply stream to %s before answering, with no event id to resume it from", t.where, rpc.LogMethod(m.Method))
			return
		}
		if delivered || r.LastID != before {
			misses = 0
		}
		if misses++; misses > maxResumes {
			t.failCall(m.ID, "%s ended the reply stream to %s before answering, and %d attempts in a row to resume it brought nothing", t.where, rpc.LogMethod(m.Method), maxResumes)
			return
		}
		resp, err := t.resume(ctx, r, sid, delivered)
		if err != nil {
			if errors.Is(err, errExpired) || ctx.Err() != nil {
				return
			}
			t.failCall(m.ID, "the reply stream to %s dropped before the answer, and resuming it failed: %v", rpc.LogMethod(m.Method), err)
			return
		}
		body = resp.Body
		r.reset(body)
	}
}

// readEvents delivers the messages of one SSE body until it ends, or, on
// a request's reply stream (id set), until the answer to id has come. It
// reports whether the response to id came, whether any message came (an
// event id alone is not one), and false for ok once the transport has
// ended.
func (t *streamable) readEvents(r *sseReader, id []byte, isInit bool) (answered, delivered, ok bool) {
	for {
		ev, err := r.Next()
		if err != nil {
			if t.ctx.Err() == nil && !errors.Is(err, io.EOF) {
				t.log.Debug("an SSE stream from the server broke", "server", t.name, "error", err)
			}
			return answered, delivered, true
		}
		if ev.Type != "message" {
			continue
		}
		delivered = true
		var a bool
		if ev.TooBig > 0 {
			me := rpc.OversizedMessage(ev.TooBig, t.max, ev.Head, ev.Tail)
			a, ok = me.ID != nil && !me.Request && bytes.Equal(me.ID, id), t.deliver(incoming{err: me})
		} else {
			a, ok = t.deliverOne(ev.Data, id, isInit)
		}
		answered = answered || a
		if !ok {
			return answered, delivered, false
		}
		if answered && id != nil {
			return answered, delivered, true
		}
	}
}

var errExpired = errors.New("the session expired")

// resume reconnects a dropped stream: a GET with the last event id, after
// the wait the server asked for, and at least defaultRetry after a stream
// that brought no message (an event id alone, at a retry of a millisecond,
// would have the gate ask again and again for nothing).
func (t *streamable) resume(ctx context.Context, r *sseReader, sid string, delivered bool) (*http.Response, error) {
	wait := r.Retry
	if wait <= 0 || !delivered {
		wait = max(wait, defaultRetry)
	}
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	resp, err := t.get(ctx, sid, r.LastID, true)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// get opens an SSE stream with GET: a resumption (with lastID) or the
// stream for the server's own messages.
func (t *streamable) get(ctx context.Context, sid, lastID string, resume bool) (*http.Response, error) {
	req, err := t.request(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	_, version := t.session()
	if sid != "" {
		req.Header.Set(headerSession, sid)
	}
	if version != "" {
		req.Header.Set(headerProtocol, version)
	}
	if resume {
		req.Header.Set(headerLastID, lastID)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, t.describeHTTPError(http.MethodGet, err)
	}
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		drainClose(resp.Body)
		t.expire()
		return nil, errExpired
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		drainClose(resp.Body)
		return nil, &statusError{status: resp.StatusCode, what: fmt.Sprintf("GET %s: %s with %s; expected HTTP 200 with text/event-stream", t.where, statusText(resp), describeType(resp))}
	}
	return resp, nil
}

type statusError struct {
	status int
	what   string
}

func (e *statusError) Error() string { return e.what }

// listen opens the GET stream for the server's messages outside any
// request, once, after the session is initialised. A server without one
// answers 405; a stream that drops is resumed.
func (t *streamable) listen() {
	t.mu.Lock()
	if t.listening {
		t.mu.Unlock()
		return
	}
	t.listening = true
	sid := t.sessionID
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		var r *sseReader
		failures := 0
		for t.ctx.Err() == nil {
			resume := r != nil && r.HasID
			lastID := ""
			if resume {
				lastID = r.LastID
			}
			opened := time.Now()
			resp, err := t.get(t.ctx, sid, lastID, resume)
			var se *statusError
			switch {
			case err == nil:
			case errors.Is(err, errExpired), t.ctx.Err() != nil:
				return
			case errors.As(err, &se) && se.status == http.StatusMethodNotAllowed:
				t.log.Debug("the server offers no stream of its own messages (HTTP 405)", "server", t.name)
				return
			default:
				failures++
				if failures > maxResumes {
					t.log.Warn("giving up on the server's stream of its own messages; its notifications outside calls are lost", "server", t.name, "error", err)
					return
				}
				t.log.Debug("opening the server's stream of its own messages failed", "server", t.name, "error", err)
				if !t.sleep(time.Duration(failures) * time.Second) {
					return
				}
				continue
			}
			if r == nil {
				r = newSSEReader(resp.Body, t.max)
			} else {
				r.reset(resp.Body)
			}
			_, delivered, ok := t.readEvents(r, nil, false)
			resp.Body.Close()
			if !ok {
				return
			}
			if delivered || time.Since(opened) >= emptyStreamBrief || r.Retry >= emptyStreamBrief {
				// Something came, or the stream was held a while (a
				// server may end an idle one now and then), or the
				// server asked for a wait of that long before the next
				// (one that polls: 2025-11-25 lets it close the stream
				// at any time, with a retry field, and the client
				// reconnect after it): a GET a second at most, as it
				// asked, is no loop.
				failures = 0
			} else if failures++; failures > maxResumes {
				// A stream that ends at once with no message in it (an
				// event id at most), again and again, at the retry the server asks for (a millisecond):
				// a loop of requests for nothing, for as long as the
				// session lasts, unless it is given up on as a failure is.
				t.log.Warn("giving up on the server's stream of its own messages: it ended with nothing in it, again and again; its notifications outside calls are lost", "server", t.name, "attempts", failures)
				return
			}
			wait := r.Retry
			if wait <= 0 || !delivered {
				wait = max(wait, time.Duration(failures+1)*defaultRetry)
			}
			if !t.sleep(wait) {
				return
			}
		}
	}()
}

func (t *streamable) sleep(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-t.ctx.Done():
		return false
	}
}

// adoptSession takes the session id from the initialize response.
func (t *streamable) adoptSession(resp *http.Response) error {
	sid := resp.Header.Get(headerSession)
	if sid == "" {
		return nil // a stateless server
	}
	if len(sid) > maxSessionIDBytes {
		return fmt.Errorf("%s gave a session id of %d bytes; the gate accepts up to %d", t.where, len(sid), maxSessionIDBytes)
	}
	for i := 0; i < len(sid); i++ {
		if c := sid[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%s gave a session id with a byte 0x%02x at %d; a session id must be visible ASCII (0x21 to 0x7E)", t.where, c, i)
		}
	}
	t.mu.Lock()
	t.sessionID = sid
	t.mu.Unlock()
	return nil
}

// noteVersion records the protocol version of the initialize result, sent
// from then on in MCP-Protocol-Version.
func (t *streamable) noteVersion(m *rpc.Message) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if m.Result == nil || json.Unmarshal(m.Result, &r) != nil || !versionShape.MatchString(r.ProtocolVersion) {
		return // the Session refuses such a result with the reason
	}
	t.mu.Lock()
	t.version = r.ProtocolVersion
	t.mu.Unlock()
}

// expire ends the transport: the server no longer knows the session. The
// calls in flight on it fail with this reason; the pool starts a new
// session (a new initialize, without the old id) on the next call. None is
// retried: the gate cannot know which of them the server had acted on.
func (t *streamable) expire() {
	t.end(fmt.Errorf("%s ended the MCP session (HTTP 404 to a request carrying its session id); calls in flight on it failed, and the next call starts a new session", t.where))
}

// errorStatus deals with an HTTP error status. A server may answer with a
// JSON-RPC error response for the request; that is delivered as it is.
// Otherwise a request fails with the status.
func (t *streamable) errorStatus(resp *http.Response, m *rpc.Message) {
	if m.IsCall() && mediaType(resp) == "application/json" {
		raw, tooBig, _, _, err := t.readBody(resp.Body)
		if err == nil && tooBig == 0 {
			if em, me := rpc.DecodeMessage(raw); me == nil && em.IsResponse() && em.Error != nil && bytes.Equal(em.ID, m.ID) {
				t.deliver(incoming{m: em})
				return
			}
		}
	}
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = "; check the entry's headers (the gate does not sign in with OAuth: give a token in a header, e.g. \"Authorization\": \"Bearer ${TOKEN}\")"
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		hint = "; redirects are not followed (the entry's headers are for its own URL): put the final URL in the entry"
	}
	if m.IsCall() {
		t.failCall(m.ID, "%s answered %s with %s%s", t.where, rpc.LogMethod(m.Method), statusText(resp), hint)
		return
	}
	t.log.Warn("the server refused a message", "server", t.name, "method", rpc.LogMethod(m.Method), "status", resp.StatusCode)
}

// Stop ends the session: DELETE (a server may answer 405, it does not
// matter), then the transport.
func (t *streamable) Stop(grace time.Duration) {
	t.stopOnce.Do(func() {
		t.Close()
		if sid, version := t.session(); sid != "" {
			ctx, cancel := context.WithTimeout(context.Background(), max(grace, 100*time.Millisecond))
			if req, err := t.request(ctx, http.MethodDelete, t.url, nil); err == nil {
				req.Header.Set(headerSession, sid)
				if version != "" {
					req.Header.Set(headerProtocol, version)
				}
				if resp, err := t.client.Do(req); err == nil {
					drainClose(resp.Body)
				}
			}
			cancel()
		}
		t.end(errors.New("stopped by the gate"))
		t.client.CloseIdleConnections()
		t.wait(grace)
	})
}
