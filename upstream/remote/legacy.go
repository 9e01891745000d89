package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// The legacy HTTP+SSE transport (MCP 2024-11-05): the client opens an SSE
// stream with GET; its first event, "endpoint", names the URL to POST
// messages to; the server's messages come as "message" events on the
// stream. The stream is the session: when it ends, so does the session.
type legacy struct {
	*base
	endpoint  string // where messages are posted, same origin as the stream
	postWhere string // endpoint, redacted (its query names the session)
	stopOnce  sync.Once

	mu sync.Mutex
	// calls arms the acceptWait bound of each call's POST in flight, by
	// id: once its answer has come on the stream, or the caller has given
	// up on it. Not before: a legacy server may hold the POST until it
	// has handled the message (its handler's context the request's), so
	// a POST given up on while the call runs would cancel the call.
	calls map[string]func()
}

// dialLegacy opens the stream and waits, within ctx, for the endpoint.
func dialLegacy(ctx context.Context, name string, u *url.URL, headers map[string]string, log *slog.Logger, lim rpc.Limits) (*legacy, error) {
	t := &legacy{base: newBase(name, u, headers, log, lim), calls: map[string]func(){}}
	type opened struct {
		r    *sseReader
		body io.ReadCloser
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		r, body, err := t.open(u)
		ch <- opened{r, body, err}
	}()
	var o opened
	select {
	case o = <-ch:
	case <-ctx.Done():
		t.Stop(0)
		if o = <-ch; o.body != nil {
			o.body.Close()
		}
		return nil, fmt.Errorf("GET %s: no endpoint event: %w", t.where, context.Cause(ctx))
	}
	if o.err != nil {
		t.Stop(0)
		return nil, o.err
	}
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		t.readLoop(o.r, o.body)
	}()
	go func() {
		defer t.wg.Done()
		for {
			raw, ok := t.next()
			if !ok {
				return
			}
			t.post(raw)
		}
	}()
	return t, nil
}

// open GETs the stream and reads up to its endpoint event.
func (t *legacy) open(u *url.URL) (*sseReader, io.ReadCloser, error) {
	req, err := t.request(t.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, nil, t.describeHTTPError(http.MethodGet, err)
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		drainClose(resp.Body)
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = "; check the entry's headers (the gate does not sign in with OAuth: give a token in a header)"
		}
		return nil, nil, fmt.Errorf("GET %s: %s with %s; expected HTTP 200 with text/event-stream%s", t.where, statusText(resp), describeType(resp), hint)
	}
	r := newSSEReader(resp.Body, t.max)
	for {
		ev, err := r.Next()
		if err != nil {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("GET %s: the stream ended before its endpoint event: %w", t.where, err)
		}
		if ev.Type != "endpoint" {
			continue // a message before the endpoint cannot be a response: nothing was sent yet
		}
		if ev.TooBig > 0 {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("GET %s: an endpoint event of %d bytes", t.where, ev.TooBig)
		}
		ep, err := sameOrigin(u, strings.TrimSpace(string(ev.Data)))
		if err != nil {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("GET %s: %w", t.where, err)
		}
		t.endpoint = ep
		if u, err := url.Parse(ep); err == nil {
			t.postWhere = redactURL(u)
		}
		return r, resp.Body, nil
	}
}

// sameOrigin resolves an endpoint against the stream's URL and refuses
// one on another origin: the entry's headers (a token) and every message
// would go to a server the user never named.
func sameOrigin(base *url.URL, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("the endpoint event is not a URL (%d bytes)", len(ref))
	}
	ep := base.ResolveReference(r)
	if o, b := origin(ep), origin(base); o != b {
		return "", fmt.Errorf("the endpoint event names another origin (%q) than the server's (%q); the gate posts only to the server's own origin", o, b)
	}
	return ep.String(), nil
}

// origin is scheme://host:port with the default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// readLoop delivers the stream's messages until it ends, which ends the
// session.
func (t *legacy) readLoop(r *sseReader, body io.ReadCloser) {
	defer body.Close()
	for {
		ev, err := r.Next()
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				t.end(fmt.Errorf("%s closed its SSE stream, which ends the session: %w", t.where, io.EOF))
			} else {
				t.end(fmt.Errorf("%s: the SSE stream broke, which ends the session: %w", t.where, err))
			}
			return
		}
		switch ev.Type {
		case "message":
			m, ok := t.deliverEvent(ev)
			if !ok {
				return
			}
			if m != nil && m.IsResponse() {
				t.armCall(m.ID)
			}
		case "endpoint":
			t.log.Debug("a second endpoint event ignored", "server", t.name)
		}
	}
}

// post sends one message to the endpoint; the answer comes on the stream.
func (t *legacy) post(raw []byte) {
	m, me := rpc.DecodeMessage(raw)
	if me != nil {
		t.log.Error("not posting a message the gate cannot read back", "server", t.name, "error", me.Reason)
		return
	}
	body := newSendBody(raw)
	// The answer comes on the stream: the POST only hands the message
	// over, and is bounded by acceptWait.
	ctx, cancel := context.WithCancelCause(t.ctx)
	req, err := t.request(ctx, http.MethodPost, t.endpoint, body)
	if err != nil {
		cancel(nil)
		t.end(err)
		return
	}
	var disarm func()
	if m.IsCall() {
		// Bounded from its answer or its cancellation (calls).
		b := newAcceptBound(cancel)
		disarm = b.stop
		t.mu.Lock()
		t.calls[string(m.ID)] = b.arm
		t.mu.Unlock()
	} else {
		disarm = boundAccept(body, cancel)
		if m.Method == rpc.MethodCancelled {
			t.armCall(cancelledID(m))
		}
	}
	req.ContentLength = int64(len(raw))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
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
		resp, err := t.client.Do(req)
		if err != nil {
			if errors.Is(context.Cause(ctx), errNotAccepted) && t.ctx.Err() == nil {
				t.log.Warn("the server did not accept a message in time; the gate stopped waiting", "server", t.name, "method", rpc.LogMethod(m.Method), "after", acceptWait)
				return
			}
			if t.ctx.Err() == nil {
				err = t.describeHTTPErrorAt(http.MethodPost, t.postWhere, err)
				if m.IsCall() {
					t.failCall(m.ID, "%v", err)
				} else {
					t.log.Warn("posting a message to the server failed", "server", t.name, "method", rpc.LogMethod(m.Method), "error", err)
				}
			}
			return
		}
		defer drainClose(resp.Body)
		switch {
		case resp.StatusCode/100 == 2:
		case resp.StatusCode == http.StatusNotFound:
			t.end(fmt.Errorf("%s no longer knows the session (HTTP 404 from its message endpoint %s); calls in flight on it failed, and the next call starts a new session", t.where, t.postWhere))
		case m.IsCall():
			t.failCall(m.ID, "%s answered %s with %s", t.postWhere, rpc.LogMethod(m.Method), statusText(resp))
		default:
			t.log.Warn("the server refused a message", "server", t.name, "method", rpc.LogMethod(m.Method), "status", resp.StatusCode)
		}
	}()
	select {
	case <-body.sent:
	case <-done:
	case <-t.closed:
	case <-t.ended:
	}
}

// armCall starts the acceptWait bound of the POST of call id, if it is
// still in flight.
func (t *legacy) armCall(id []byte) {
	if id == nil {
		return
	}
	t.mu.Lock()
	arm := t.calls[string(id)]
	t.mu.Unlock()
	if arm != nil {
		arm()
	}
}

// Stop ends the session by closing the stream.
func (t *legacy) Stop(grace time.Duration) {
	t.stopOnce.Do(func() {
		t.Close()
		t.end(errors.New("stopped by the gate"))
		t.client.CloseIdleConnections()
		t.wait(grace)
	})
}
