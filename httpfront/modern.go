package httpfront

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Protocol revision 2026-07-28 over HTTP. A request whose body carries
// that revision's _meta envelope claim, sent without an Mcp-Session-Id, is
// served by that revision's rules (the classification is body-primary, as
// the SDK's: the headers are cross-checks, never the deciding input):
//
//   - the MCP-Protocol-Version header, when sent, must name the body's
//     version; Mcp-Method is required and must name the body's method;
//     Mcp-Name is required on tools/call and prompts/get (params.name) and
//     resources/read (params.uri) and must name the body's value (decoded
//     from the =?base64?…?= form when so sent). A disagreement, or a
//     missing header, is HTTP 400 with JSON-RPC error -32020, and the
//     request is not served: what is decided is the validated body only.
//   - a malformed envelope is 400 with -32602, another version 400 with
//     -32022, a missing client capability 400 with -32021.
//   - there are no sessions: no Mcp-Session-Id is issued, and GET and
//     DELETE (the older era's stream and session end) are 405 for a client
//     that names this revision in its MCP-Protocol-Version header.
//   - each POST is one self-contained request, served by a proxy session
//     of its own for the request's identity (so nothing of one request can
//     leak into another), answered with a JSON body, or with an SSE stream
//     when it asked for progress. Closing the response (the client went
//     away) closes that session, which cancels the call in flight.
//
// The upstream children a request uses are its principal's, shared by
// every request of that principal: an anchor session per identity holds
// them between requests (otherwise each request would start the upstream
// servers anew), and ends when the identity sent nothing for the idle
// timeout. The approval state (requestState) is the gate's, so a state
// minted while serving one POST redeems on the retry, another POST.

// Header names of the 2026-07-28 transport.
const (
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// CodeHeaderMismatch is the 2026-07-28 error for headers that disagree with
// the body, or a required header that is missing.
const CodeHeaderMismatch = -32020

// anchor holds one identity's upstream children between its 2026-07-28
// requests: a proxy session that served one modern ping and then idles.
type anchor struct {
	key   string
	t     *Transport
	ready chan struct{} // closed once the session has joined its children
}

// modernClaim reports whether m is a request or notification of the
// 2026-07-28 revision by its body.
func modernClaim(m *rpc.Message) bool {
	return m.Method != "" && proxy.ClaimsModern(m.Params)
}

// mismatch answers 400 with -32020, saying what disagreed.
func mismatch(w http.ResponseWriter, id json.RawMessage, detail string) {
	rpcErrorOf(w, http.StatusBadRequest, id, mismatchError(detail))
}

// mismatchError is the error of headers that disagree with the body.
func mismatchError(detail string) *rpc.Error {
	return &rpc.Error{Code: CodeHeaderMismatch, Message: "Bad Request: the request headers and body disagree: " + detail}
}

// rpcErrorOf answers with status and the JSON-RPC error err (an *rpc.Error
// keeps its code and data).
func rpcErrorOf(w http.ResponseWriter, status int, id json.RawMessage, err error) {
	var re *rpc.Error
	if !errors.As(err, &re) {
		re = rpc.Errorf(rpc.CodeInvalidRequest, "%s", err.Error())
	}
	b, _ := rpc.Encode(&rpc.Message{ID: id, Error: re})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// owsTrim strips the optional whitespace (SP, HTAB) around a field value.
func owsTrim(s string) string { return strings.Trim(s, " \t") }

// base64Canonical is compiled at first use, not by every start (stdio
// gates never use it).
var base64Canonical = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)
})

// decodeHeaderValue decodes a header value that may be sent as
// =?base64?…?= (for values that are not plain ASCII); ok is false when that
// form does not hold canonical base64 of UTF-8 text.
func decodeHeaderValue(v string) (string, bool) {
	const pre, suf = "=?base64?", "?="
	if !strings.HasPrefix(v, pre) || !strings.HasSuffix(v, suf) || len(v) < len(pre)+len(suf) {
		return v, true
	}
	b64 := v[len(pre) : len(v)-len(suf)]
	if !base64Canonical().MatchString(b64) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// nameSource is the body member Mcp-Name mirrors, per method.
var nameSource = map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

// checkModernHeaders validates the 2026-07-28 headers against the body; it
// returns "" when they agree, else what disagreed.
func checkModernHeaders(r *http.Request, m *rpc.Message) string {
	meta, _ := rawjson.Get(m.Params, "_meta")
	vRaw, _ := rawjson.Get(meta, "io.modelcontextprotocol/protocolVersion")
	bodyVersion, _ := rawjson.String(vRaw)
	if hv, ok := headerValue(r, HeaderProtocolVersion); ok && hv != bodyVersion {
		return fmt.Sprintf("the body envelope names protocol version %s but the MCP-Protocol-Version header names %s", quote(bodyVersion), quote(hv))
	}
	hm, ok := headerValue(r, HeaderMethod)
	if !ok {
		if !m.IsCall() {
			return "" // a notification: the header rules are the requests'
		}
		return fmt.Sprintf("the body names method %s but the required Mcp-Method header is absent", quote(m.Method))
	}
	if hm != m.Method {
		return fmt.Sprintf("the body names method %s but the Mcp-Method header names %s", quote(m.Method), quote(hm))
	}
	field, ok := nameSource[m.Method]
	if !ok || !m.IsCall() {
		return ""
	}
	raw, present := rawjson.Get(m.Params, field)
	bodyValue, isString := rawjson.String(raw)
	hn, hasName := headerValue(r, HeaderName)
	switch {
	case !hasName && present && isString:
		return fmt.Sprintf("the body carries params.%s=%s but the required Mcp-Name header is absent", field, quote(bodyValue))
	case !hasName:
		return "" // no name in the body: the session refuses the params
	}
	decoded, ok := decodeHeaderValue(hn)
	if !ok {
		return "the Mcp-Name header carries an invalid =?base64?…?= value"
	}
	if !present || !isString || decoded != bodyValue {
		var shown string // absent: nothing
		switch {
		case isString:
			shown = quote(bodyValue)
		case present:
			shown = quote(string(raw)) // not a string: its JSON, quoted too
		}
		return fmt.Sprintf("the body carries params.%s=%s but the Mcp-Name header names %s", field, shown, quote(decoded))
	}
	return ""
}

// headerValue returns a header's single value, trimmed. A header sent
// more than once is read as the values joined, which matches no body.
func headerValue(r *http.Request, name string) (string, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return owsTrim(strings.Join(vs, ",")), true
}

// quote bounds and quotes a value the host sent, echoed in an error, as
// every message of the gate's renders untrusted text (guard.Quote).
func quote(s string) string { return guard.Quote(s, guard.ShowName) }

// postModern serves one 2026-07-28 POST (the body is decoded, its method
// claims that revision, no session id was sent).
func (h *Handler) postModern(w http.ResponseWriter, r *http.Request, id proxy.Identity, m *rpc.Message) {
	if detail := checkModernHeaders(r, m); detail != "" {
		h.log.Warn("HTTP request refused", "status", http.StatusBadRequest, "code", CodeHeaderMismatch, "reason", detail, "remote", r.RemoteAddr)
		h.envelopeRefused(w, http.StatusBadRequest, id, m, mismatchError(detail))
		return
	}
	if !m.IsCall() {
		// 2026-07-28 clients send no notifications the gate acts on (a
		// call is cancelled by closing its response): accepted, dropped.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := proxy.CheckModernEnvelope(m.Method, m.Params); err != nil {
		h.envelopeRefused(w, http.StatusBadRequest, id, m, err)
		return
	}
	if h.draining.Load() {
		h.unavailable(w, id, m, "the gate is shutting down")
		return
	}
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	// The request is a session for its duration: it counts against the
	// bounds of sessions, per user and in all (roomLocked).
	key := id.Key()
	h.mu.Lock()
	if err := h.roomLocked(id, "let a request in flight end first"); err != nil {
		h.mu.Unlock()
		h.unavailable(w, id, m, "cannot serve the request: "+err.Error())
		return
	}
	h.requests[key]++
	h.requestsTotal++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.requests[key]--; h.requests[key] == 0 {
			delete(h.requests, key)
		}
		h.requestsTotal--
		h.mu.Unlock()
	}()
	a, err := h.anchorFor(r.Context(), id)
	if err != nil {
		h.unavailable(w, id, m, "cannot serve the request: "+err.Error())
		return
	}
	defer a.t.use()()

	// One session for this one request.
	t := newTransport(h.log, h.opts.QueueLen, h.opts.WriteTimeout)
	defer t.Close() // ends the session; a call still in flight is cancelled
	sse := false
	if meta, ok := rawjson.Get(m.Params, "_meta"); ok {
		_, sse = rawjson.Get(meta, "progressToken")
	}
	ex, err := t.open(m, sse)
	if err != nil {
		rpcError(w, http.StatusBadRequest, m.ID, rpc.CodeInvalidRequest, err.Error())
		return
	}
	defer ex.out.end()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		serve := h.opts.ServeRequest
		if serve == nil {
			serve = h.opts.Serve
		}
		if err := serve(context.Background(), id, t); err != nil && !errors.Is(err, rpc.ErrClosed) {
			h.log.Debug("2026-07-28 request session ended", "error", err)
		}
		t.Close()
	}()
	go func() {
		// Close ends the request's session too (a drain that timed out).
		select {
		case <-h.done:
			t.Close()
		case <-t.Done():
		}
	}()
	if err := t.deliver(r.Context(), m); err != nil {
		return
	}
	if sse {
		h.streamSSE(w, r, &httpSession{t: t}, ex.out, true)
		return
	}
	select {
	case it := <-ex.out.q:
		status := http.StatusOK
		// The spec gives a missing client capability status 400 wherever
		// it arises.
		if e, ok := rawjson.Get(it.b, "error"); ok {
			if c, ok := rawjson.Get(e, "code"); ok && string(c) == strconv.Itoa(proxy.CodeMissingClientCapability) {
				status = http.StatusBadRequest
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(it.b)))
		w.WriteHeader(status)
		w.Write(it.b)
	case <-t.Done():
		rpcError(w, http.StatusInternalServerError, m.ID, rpc.CodeInternalError, "the request's session ended before answering")
	case <-r.Context().Done():
		// The client closed the response: the deferred Close cancels the
		// call.
	}
}

// anchorPing is the request that makes an anchor session join its
// principal's children (any 2026-07-28 request opens a session; a ping
// touches no upstream).
var anchorPing = []byte(`{"jsonrpc":"2.0","id":"mcp-gate-anchor","method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + proxy.ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)

// anchorFor returns id's anchor, starting it if there is none, once it has
// joined its children.
func (h *Handler) anchorFor(ctx context.Context, id proxy.Identity) (*anchor, error) {
	key := id.Key()
	h.mu.Lock()
	a := h.anchors[key]
	select {
	case <-h.done:
		h.mu.Unlock()
		return nil, errors.New("the gate is shutting down")
	default:
	}
	if a == nil {
		if len(h.sessions)+len(h.anchors) >= h.opts.MaxSessions {
			h.mu.Unlock()
			return nil, fmt.Errorf("the gate holds its limit of %d sessions", h.opts.MaxSessions)
		}
		a = &anchor{key: key, t: newTransport(h.log, h.opts.QueueLen, h.opts.WriteTimeout), ready: make(chan struct{})}
		h.anchors[key] = a
		h.startAnchor(a, id)
	}
	h.mu.Unlock()
	select {
	case <-a.ready:
		return a, nil
	case <-a.t.Done():
		return nil, errors.New("the identity's upstream session ended")
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(30 * time.Second):
		return nil, errors.New("the identity's upstream session did not open within 30s")
	}
}

// startAnchor serves a's session (under h.mu).
func (h *Handler) startAnchor(a *anchor, id proxy.Identity) {
	ping, _ := rpc.Decode(anchorPing)
	ex, _ := a.t.open(ping, false)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := h.opts.Serve(context.Background(), id, a.t)
		a.t.Close()
		h.mu.Lock()
		if h.anchors[a.key] == a {
			delete(h.anchors, a.key)
		}
		h.mu.Unlock()
		h.log.Info("2026-07-28 upstream session of an identity ended", "subject", id.Subject, "error", err)
	}()
	go func() {
		if err := a.t.deliver(context.Background(), ping); err != nil {
			return
		}
		select {
		case <-ex.out.q:
			close(a.ready)
		case <-a.t.Done():
		}
	}()
	h.log.Info("2026-07-28 upstream session of an identity started", "subject", id.Subject)
}
