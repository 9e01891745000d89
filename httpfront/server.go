package httpfront

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/auth"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Header names of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// protocolVersions are the revisions whose MCP-Protocol-Version a request
// may carry. A request without the header is read as 2025-03-26, as the
// specification says.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// PRMPath is where the Protected Resource Metadata (RFC 9728) is served.
const PRMPath = "/.well-known/oauth-protected-resource"

// ServeFunc runs one session over t for identity id until t closes: the
// gate's Session.ServeTransport.
type ServeFunc func(ctx context.Context, id proxy.Identity, t rpc.Transport) error

// Options configure a Handler.
type Options struct {
	// Path is the MCP endpoint; default /mcp.
	Path string
	// Serve runs a session. Required.
	Serve ServeFunc
	// ServeRequest runs the session of one 2026-07-28 request (modern.go);
	// nil uses Serve.
	ServeRequest ServeFunc
	// Auth checks bearer tokens; nil serves every request as Anonymous
	// (only on loopback: the command refuses to bind elsewhere without).
	Auth auth.Authenticator
	// Anonymous is who an unauthenticated front end's sessions act for.
	Anonymous proxy.Identity
	// OnRefused, if set, is told of every request refused before it
	// reached a session, with who sent it, its method ("" when it could
	// not be read), the kind of refusal and the reason it was given:
	// proxy.RefusedMalformed for a body that is not a message or is too
	// large to read, proxy.RefusedEnvelope for a 2026-07-28 request whose
	// envelope or the headers mirroring it are wrong, proxy.RefusedNoSession
	// for a request that reached no session it may use (no Mcp-Session-Id,
	// one unknown, expired or another user's, a session that ended, the
	// gate shutting down or its bounds on sessions reached). The gate
	// records them (proxy.Gate.RefusedBeforeSession), as a session records
	// its own refusals: a run of guessed session ids is on record too.
	OnRefused func(id proxy.Identity, method, kind, reason string)
	// AllowedHosts are the Host header values accepted besides the
	// loopback names (localhost, 127.0.0.1, [::1], any port): "host" (any
	// port) or "host:port"; "*" accepts any Host (left to an ingress).
	AllowedHosts []string
	// AllowedOrigins are the Origin values accepted besides those whose
	// host is an accepted Host: "https://ide.example".
	AllowedOrigins []string
	// Resource is the resource identifier of the Protected Resource
	// Metadata; "" derives it from the request (scheme, Host, Path).
	Resource string
	// MaxBodyBytes bounds one POST body; default 4 MiB.
	MaxBodyBytes int64
	// MaxSessions bounds the sessions held at once; default 1000.
	MaxSessions int
	// MaxSessionsPerUser bounds one identity's sessions, so that one user
	// (or one stolen token) cannot take every session; default 200.
	MaxSessionsPerUser int
	// IdleTimeout ends a session that no request or stream has used for
	// this long; default 30 minutes.
	IdleTimeout time.Duration
	// QueueLen bounds each stream's queue and the session's incoming
	// queue; default 64.
	QueueLen int
	// WriteTimeout is how long a stream may take nothing while a message
	// waits for room before its session ends; default 30 s.
	WriteTimeout time.Duration
	// KeepAlive is how often an idle SSE stream gets a comment line, so
	// that a client that vanished without closing its connection is
	// noticed (the write fails) and its session can expire; default 25 s.
	KeepAlive time.Duration
	// TLS tells the derived resource identifier to use https.
	TLS bool
	// Logger receives what the front end refuses and why. Required.
	Logger *slog.Logger
}

// A Handler is the Streamable HTTP front end: an http.Handler serving the
// MCP endpoint and the Protected Resource Metadata.
type Handler struct {
	opts Options
	log  *slog.Logger

	draining atomic.Bool
	inflight atomic.Int64 // requests being served (POSTs awaiting their response)
	done     chan struct{}
	stop     sync.Once

	mu       sync.Mutex
	sessions map[string]*httpSession
	anchors  map[string]*anchor // 2026-07-28: by identity key (modern.go)
	// requests are the 2026-07-28 requests in flight, by identity key: each
	// is a session for its duration, and counts against the bounds as one.
	requests      map[string]int
	requestsTotal int
	wg            sync.WaitGroup // session goroutines
}

// httpSession is one session: its transport and who it acts for.
type httpSession struct {
	id       string
	identity proxy.Identity
	key      string // identity.Key(): only requests of that identity may use the session
	t        *Transport
}

// New returns a Handler. Call Close to end its sessions.
func New(opts Options) (*Handler, error) {
	if opts.Serve == nil || opts.Logger == nil {
		return nil, errors.New("httpfront: Options.Serve and Options.Logger are required")
	}
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if !strings.HasPrefix(opts.Path, "/") {
		return nil, fmt.Errorf("httpfront: the path %q must start with /", opts.Path)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1000
	}
	if opts.MaxSessionsPerUser <= 0 {
		opts.MaxSessionsPerUser = 200
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = 64
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 25 * time.Second
	}
	h := &Handler{opts: opts, log: opts.Logger, sessions: map[string]*httpSession{}, anchors: map[string]*anchor{}, requests: map[string]int{}, done: make(chan struct{})}
	go h.sweep()
	return h, nil
}

// Mount adds the front end's routes to mux: the MCP endpoint and the
// Protected Resource Metadata.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.Handle(h.opts.Path, h)
	mux.HandleFunc(PRMPath, h.servePRM)
	mux.HandleFunc(PRMPath+h.opts.Path, h.servePRM)
}

// Sessions returns how many sessions are held.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// drainGrace is how long Drain waits, once the last call in flight has
// answered, before it returns and the streams may be ended (Close).
const drainGrace = 250 * time.Millisecond

// Drain stops taking new sessions and requests, and waits until no request
// is being served (the calls in flight have answered) or ctx ends. The
// streams stay open meanwhile: a client whose GET stream ended would take
// its session for lost, and a call's question may still need its stream.
//
// Once the last answer is written, a session still open gets drainGrace
// before Drain returns: a client reads its POST and GET streams on their
// own, and one whose GET stream ends at the moment its last answer arrives
// can take the session for lost before it has read that answer (the
// go-sdk's client, not retrying, then fails the call the gate answered).
func (h *Handler) Drain(ctx context.Context) error {
	h.draining.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for h.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d requests still in flight: %w", h.inflight.Load(), context.Cause(ctx))
		case <-tick.C:
		}
	}
	if h.Sessions() > 0 {
		grace := time.NewTimer(drainGrace)
		defer grace.Stop()
		select {
		case <-ctx.Done():
		case <-grace.C:
		}
	}
	return nil
}

// Draining reports whether Drain was called (a readiness probe fails
// then, so that a load balancer sends no new sessions).
func (h *Handler) Draining() bool { return h.draining.Load() }

// Close ends every session and waits for them to stop.
func (h *Handler) Close() {
	h.stop.Do(func() { close(h.done) })
	h.mu.Lock()
	for _, s := range h.sessions {
		s.t.Close()
	}
	for _, a := range h.anchors {
		a.t.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// sweep ends sessions idle for longer than the idle timeout.
func (h *Handler) sweep() {
	every := min(h.opts.IdleTimeout/4, 30*time.Second)
	tick := time.NewTicker(max(every, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case now := <-tick.C:
			h.mu.Lock()
			for id, s := range h.sessions {
				if s.t.idleFor(now) > h.opts.IdleTimeout {
					h.log.Info("HTTP session expired", "session", id, "idle", h.opts.IdleTimeout)
					delete(h.sessions, id)
					s.t.Close()
				}
			}
			for key, a := range h.anchors {
				if a.t.idleFor(now) > h.opts.IdleTimeout {
					delete(h.anchors, key)
					a.t.Close()
				}
			}
			h.mu.Unlock()
		}
	}
}

// httpError answers with a status and a one-line reason, as text.
func httpError(w http.ResponseWriter, code int, reason string) {
	http.Error(w, reason, code)
}

// rpcError answers with a status and a JSON-RPC error body, as the
// specification asks for a refused message.
func rpcError(w http.ResponseWriter, status int, id json.RawMessage, code int64, reason string) {
	b, _ := rpc.Encode(&rpc.Message{ID: id, Error: rpc.Errorf(code, "%s", reason)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// ServeHTTP serves the MCP endpoint.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if reason := h.checkOrigin(r); reason != "" {
		h.log.Warn("HTTP request refused", "status", http.StatusForbidden, "reason", reason, "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "Forbidden: "+reason)
		return
	}
	id, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	v := r.Header.Get(HeaderProtocolVersion)
	if v != "" && v != proxy.ModernVersion && !slices.Contains(protocolVersions, v) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("Bad Request: unsupported %s %q; expected one of %s", HeaderProtocolVersion, v, strings.Join(append([]string{proxy.ModernVersion}, protocolVersions...), ", ")))
		return
	}
	if v == proxy.ModernVersion && r.Method != http.MethodPost {
		// 2026-07-28 has no GET stream and no session to delete.
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method Not Allowed: protocol %s is served by POST only (no GET stream, no sessions)", proxy.ModernVersion))
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, id)
	case http.MethodGet:
		h.getStream(w, r, id)
	case http.MethodDelete:
		h.delete(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: expected POST, GET or DELETE")
	}
}

// isLoopbackName reports whether host (no port) names the loopback
// interface.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitHost returns the host of a Host header value, without its port.
func splitHost(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// hostAllowed reports whether a Host header value (host or host:port) is
// one the front end answers to.
func (h *Handler) hostAllowed(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := splitHost(hostport)
	if isLoopbackName(host) {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if a == "*" {
			return true
		}
		if _, _, err := net.SplitHostPort(a); err == nil {
			if strings.EqualFold(a, hostport) { // host:port: that port only
				return true
			}
			continue
		}
		if strings.EqualFold(strings.Trim(a, "[]"), host) { // host: any port
			return true
		}
	}
	return false
}

// checkOrigin refuses what a DNS-rebinding page could send: a Host that is
// not the gate's (the page's own name resolved to loopback), and an Origin
// that is not an allowed one. It returns the reason, "" when allowed.
func (h *Handler) checkOrigin(r *http.Request) string {
	if !h.hostAllowed(r.Host) {
		return fmt.Sprintf("the Host header %q is not a name of this gate (expected localhost, 127.0.0.1, [::1] or one of --allowed-hosts)", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "" // not a browser's request
	}
	if slices.Contains(h.opts.AllowedOrigins, origin) {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Sprintf("the Origin %q is not an http(s) origin", origin)
	}
	if !h.hostAllowed(u.Host) {
		return fmt.Sprintf("the Origin %q is not allowed (expected a loopback origin, one whose host is in --allowed-hosts, or one of --allowed-origins)", origin)
	}
	return ""
}

// authenticate returns who the request acts for, or answers 401.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (proxy.Identity, bool) {
	if h.opts.Auth == nil {
		return h.opts.Anonymous, true
	}
	challenge := fmt.Sprintf(`Bearer resource_metadata=%q`, h.prmURL(r))
	authz := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(authz, " ")
	if authz == "" || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", challenge)
		httpError(w, http.StatusUnauthorized, "Unauthorized: a bearer token is required (Authorization: Bearer ...)")
		return proxy.Identity{}, false
	}
	p, err := h.opts.Auth.Authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		desc := strings.ReplaceAll(err.Error(), `"`, "'")
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="`+desc+`"`)
		h.log.Warn("HTTP request refused", "status", http.StatusUnauthorized, "reason", err.Error(), "remote", r.RemoteAddr)
		httpError(w, http.StatusUnauthorized, "Unauthorized: "+err.Error())
		return proxy.Identity{}, false
	}
	return proxy.Identity{Subject: p.Subject, Name: p.Subject, Email: p.Email, Groups: p.Groups, Authenticated: true}, true
}

// resource is the resource identifier the gate answers for.
func (h *Handler) resource(r *http.Request) string {
	if h.opts.Resource != "" {
		return h.opts.Resource
	}
	scheme := "http"
	if h.opts.TLS || r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + h.opts.Path
}

// prmURL is where the Protected Resource Metadata of the resource is
// (RFC 9728 §3.1: the well-known path inserted before the resource's path).
func (h *Handler) prmURL(r *http.Request) string {
	u, err := url.Parse(h.resource(r))
	if err != nil {
		return PRMPath
	}
	u.Path = PRMPath + strings.TrimSuffix(u.Path, "/")
	return u.String()
}

// servePRM serves the Protected Resource Metadata (RFC 9728).
func (h *Handler) servePRM(w http.ResponseWriter, r *http.Request) {
	if reason := h.checkOrigin(r); reason != "" {
		httpError(w, http.StatusForbidden, "Forbidden: "+reason)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: expected GET")
		return
	}
	md := struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers,omitempty"`
		BearerMethods        []string `json:"bearer_methods_supported"`
		ResourceName         string   `json:"resource_name"`
	}{Resource: h.resource(r), BearerMethods: []string{"header"}, ResourceName: "mcp-gate"}
	if h.opts.Auth != nil {
		md.AuthorizationServers = h.opts.Auth.AuthorizationServers()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(md)
}

// session finds the session a request of method names ("" for a GET or a
// DELETE), answering 400 or 404 when there is none it may use.
func (h *Handler) session(w http.ResponseWriter, r *http.Request, id proxy.Identity, method string) *httpSession {
	sid := r.Header.Get(HeaderSessionID)
	if sid == "" {
		h.noSession(w, http.StatusBadRequest, id, method, "Bad Request: the "+HeaderSessionID+" header is required after initialize")
		return nil
	}
	h.mu.Lock()
	s := h.sessions[sid]
	h.mu.Unlock()
	// A session of another identity is reported as unknown: an id is not
	// a credential, and a guessed or leaked one must not reach another
	// user's session (nor confirm that it exists).
	if s == nil || s.key != id.Key() {
		h.noSession(w, http.StatusNotFound, id, method, "Not Found: no such session (expired, deleted or never issued); initialize a new one")
		return nil
	}
	select {
	case <-s.t.Done():
		h.noSession(w, http.StatusNotFound, id, method, "Not Found: the session has ended; initialize a new one")
		return nil
	default:
	}
	return s
}

// noSession answers a request of method that reached no session with
// status and text, and tells Options.OnRefused: every such refusal of a
// request passes here, so none is answered without its record.
func (h *Handler) noSession(w http.ResponseWriter, status int, id proxy.Identity, method, text string) {
	if method != "" {
		h.refused(id, method, proxy.RefusedNoSession, text)
	}
	httpError(w, status, text)
}

// newSessionID returns 128 random bits, hex: visible ASCII as the
// specification requires, and unguessable.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// start creates a session for id and starts serving it.
func (h *Handler) start(id proxy.Identity) (*httpSession, error) {
	if h.draining.Load() {
		return nil, errors.New("the gate is shutting down")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.roomLocked(id, "end one (DELETE) or let it expire"); err != nil {
		return nil, err
	}
	key := id.Key()
	s := &httpSession{id: newSessionID(), identity: id, key: key, t: newTransport(h.log, h.opts.QueueLen, h.opts.WriteTimeout)}
	h.sessions[s.id] = s
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := h.opts.Serve(context.Background(), id, s.t)
		s.t.Close()
		h.mu.Lock()
		if h.sessions[s.id] == s {
			delete(h.sessions, s.id)
		}
		h.mu.Unlock()
		if err != nil && !errors.Is(err, rpc.ErrClosed) {
			h.log.Info("HTTP session ended", "session", s.id, "error", err)
		} else {
			h.log.Info("HTTP session ended", "session", s.id)
		}
	}()
	h.log.Info("HTTP session started", "session", s.id, "subject", id.Subject)
	return s, nil
}

// roomLocked returns why id may not open one more session (a 2025-11-25
// session, or a 2026-07-28 request, which is a session for its duration),
// nil when it may. Both kinds count against both bounds, so that neither
// kind gets round them. h.mu is held.
func (h *Handler) roomLocked(id proxy.Identity, hint string) error {
	if len(h.sessions)+h.requestsTotal >= h.opts.MaxSessions {
		return fmt.Errorf("the gate holds its limit of %d sessions", h.opts.MaxSessions)
	}
	key, mine := id.Key(), h.requests[id.Key()]
	for _, o := range h.sessions {
		if o.key == key {
			mine++
		}
	}
	if mine >= h.opts.MaxSessionsPerUser {
		return fmt.Errorf("%s holds the limit of %d sessions per user (2025-11-25 sessions and 2026-07-28 requests in flight); %s", id.Subject, h.opts.MaxSessionsPerUser, hint)
	}
	return nil
}

// streamsMethod reports whether a request is answered on an SSE stream: the
// methods that reach an upstream, during which the gate may ask the client
// (an approval, an upstream's elicitation, sampling or roots) or report
// progress. The others are answered with a JSON body.
func streamsMethod(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "resources/subscribe", "resources/unsubscribe", "completion/complete":
		return true
	}
	return false
}

// acceptsBoth reports whether the Accept header lists both JSON and SSE,
// as the specification requires of a POST.
func acceptsBoth(r *http.Request) (jsonOK, sseOK bool) {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// unavailable answers the request m, which no session will serve now (the
// gate shutting down, the bounds on sessions reached), with 503 and text,
// and tells Options.OnRefused.
func (h *Handler) unavailable(w http.ResponseWriter, id proxy.Identity, m *rpc.Message, text string) {
	h.refused(id, m.Method, proxy.RefusedNoSession, text)
	w.Header().Set("Retry-After", "5")
	rpcError(w, http.StatusServiceUnavailable, m.ID, rpc.CodeInternalError, text)
}

// callMethod is m's method when m is a request, "" for a notification or
// an answer: only requests are refused with a record.
func callMethod(m *rpc.Message) string {
	if m.IsCall() {
		return m.Method
	}
	return ""
}

// refused tells Options.OnRefused of a request refused before any session.
func (h *Handler) refused(id proxy.Identity, method, kind, reason string) {
	if h.opts.OnRefused != nil {
		h.opts.OnRefused(id, method, kind, reason)
	}
}

// malformed tells Options.OnRefused of a body refused before any session.
func (h *Handler) malformed(id proxy.Identity, me *rpc.MessageError) {
	h.refused(id, me.Method, proxy.RefusedMalformed, me.Reason)
}

// envelopeRefused answers m, refused before any session for its
// 2026-07-28 envelope or headers, with status and err (an *rpc.Error keeps
// its code and data), and tells Options.OnRefused: every such refusal
// passes here, so none is answered without its record.
func (h *Handler) envelopeRefused(w http.ResponseWriter, status int, id proxy.Identity, m *rpc.Message, err error) {
	if m.IsCall() {
		h.refused(id, m.Method, proxy.RefusedEnvelope, err.Error())
	}
	rpcErrorOf(w, status, m.ID, err)
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request, id proxy.Identity) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: a POST body must be application/json")
		return
	}
	jsonOK, sseOK := acceptsBoth(r)
	if !jsonOK || !sseOK {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: the Accept header must list both application/json and text/event-stream")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			reason := fmt.Sprintf("the body exceeds the limit of %d bytes", h.opts.MaxBodyBytes)
			h.malformed(id, &rpc.MessageError{Code: rpc.CodeInvalidRequest, Reason: reason})
			rpcError(w, http.StatusRequestEntityTooLarge, nil, rpc.CodeInvalidRequest, reason)
			return
		}
		httpError(w, http.StatusBadRequest, "Bad Request: reading the body: "+err.Error())
		return
	}
	m, err := rpc.Decode(body)
	if err != nil {
		me := rpc.DecodeError(err, body)
		h.malformed(id, me)
		rpcError(w, http.StatusBadRequest, me.ID, me.Code, me.Reason)
		return
	}
	modernHeader := r.Header.Get(HeaderProtocolVersion) == proxy.ModernVersion
	switch {
	case r.Header.Get(HeaderSessionID) == "" && modernClaim(m):
		h.postModern(w, r, id, m)
		return
	case modernHeader && r.Header.Get(HeaderSessionID) != "":
		h.envelopeRefused(w, http.StatusBadRequest, id, m, rpc.Errorf(rpc.CodeInvalidRequest, "protocol %s has no sessions: send its requests without %s", proxy.ModernVersion, HeaderSessionID))
		return
	case m.Method == "initialize" && modernHeader:
		mismatch(w, m.ID, "an initialize request (the 2025-11-25 handshake) was sent with MCP-Protocol-Version "+proxy.ModernVersion)
		return
	case modernHeader:
		h.envelopeRefused(w, http.StatusBadRequest, id, m, rpc.Errorf(rpc.CodeInvalidParams, "Invalid params: the MCP-Protocol-Version header names %s, but the body carries no _meta envelope (io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities)", proxy.ModernVersion))
		return
	}
	var s *httpSession
	if m.Method == "initialize" && r.Header.Get(HeaderSessionID) == "" {
		if !m.IsCall() {
			rpcError(w, http.StatusBadRequest, nil, rpc.CodeInvalidRequest, "initialize must be a request with an id")
			return
		}
		s, err = h.start(id)
		if err != nil {
			w.Header().Set("Retry-After", "5")
			rpcError(w, http.StatusServiceUnavailable, m.ID, rpc.CodeInternalError, "no new session: "+err.Error())
			return
		}
	} else if s = h.session(w, r, id, callMethod(m)); s == nil {
		return
	}
	defer s.t.use()()
	if !m.IsCall() {
		// A notification, or the client's answer to a question of ours.
		if err := s.t.deliver(r.Context(), m); err != nil {
			httpError(w, http.StatusNotFound, "Not Found: the session has ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if h.draining.Load() {
		h.unavailable(w, id, m, "the gate is shutting down")
		return
	}
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	sse := streamsMethod(m.Method)
	ex, err := s.t.open(m, sse)
	if err != nil {
		rpcError(w, http.StatusBadRequest, nil, rpc.CodeInvalidRequest, err.Error())
		return
	}
	defer ex.out.end()
	if err := s.t.deliver(r.Context(), m); err != nil {
		s.t.forget(ex)
		h.noSession(w, http.StatusNotFound, id, m.Method, "Not Found: the session has ended")
		return
	}
	if m.Method == "initialize" {
		w.Header().Set(HeaderSessionID, s.id)
	}
	if sse {
		h.streamSSE(w, r, s, ex.out, true)
		return
	}
	select {
	case it := <-ex.out.q:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(it.b)))
		w.Write(it.b)
	case <-s.t.Done():
		httpError(w, http.StatusNotFound, "Not Found: the session ended before answering")
	case <-r.Context().Done():
		// The client went away; the answer, when it comes, is dropped.
	}
}

// streamSSE writes the messages queued on out as SSE events until the
// final one (untilFinal), the stream ends, the session ends or the client
// goes away.
func (h *Handler) streamSSE(w http.ResponseWriter, r *http.Request, s *httpSession, out *outStream, untilFinal bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-keepAlive.C:
			// A write deadline bounds a client that stopped reading.
			rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			rc.SetWriteDeadline(time.Time{})
		case it := <-out.q:
			// An SSE event: "data:" lines; a message is one line of JSON
			// (the encoder writes no raw line breaks: JSON strings escape
			// them), so it is one data line.
			if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", it.b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			if it.final && untilFinal {
				return
			}
		case <-out.gone:
			return
		case <-s.t.Done():
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (h *Handler) getStream(w http.ResponseWriter, r *http.Request, id proxy.Identity) {
	_, sseOK := acceptsBoth(r)
	if !sseOK {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: the GET stream is text/event-stream; list it in Accept")
		return
	}
	s := h.session(w, r, id, "")
	if s == nil {
		return
	}
	if h.draining.Load() {
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: the gate is shutting down")
		return
	}
	out, ok := s.t.openGet()
	if !ok {
		httpError(w, http.StatusConflict, "Conflict: this session has a GET stream open already")
		return
	}
	defer s.t.closeGet(out)
	defer s.t.use()()
	h.streamSSE(w, r, s, out, false)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, id proxy.Identity) {
	s := h.session(w, r, id, "")
	if s == nil {
		return
	}
	h.mu.Lock()
	delete(h.sessions, s.id)
	h.mu.Unlock()
	s.t.Close()
	h.log.Info("HTTP session deleted by the client", "session", s.id)
	w.WriteHeader(http.StatusNoContent)
}
