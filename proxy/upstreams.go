package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// progressRoutes maps the gate's progress tokens back to the host's. A
// token is valid only while its request is in flight, and only for the
// upstream it was given to.
type progressRoutes struct {
	prefix string // the session's: names which session a token belongs to
	mu     sync.Mutex
	next   uint64
	routes map[string]progressRoute // by the gate's token, as a decoded string
}

type progressRoute struct {
	server    string
	hostToken json.RawMessage
	// pc, for a parked call's forward, holds the token instead: that of
	// the host request waiting on the call now, or none (parkedCall.tok).
	pc *parkedCall
}

// add routes a new token of the gate's to hostToken, for server; pc is
// the parked call the forward belongs to, or nil.
func (p *progressRoutes) add(server string, hostToken json.RawMessage, pc *parkedCall) (json.RawMessage, func()) {
	p.mu.Lock()
	p.next++
	tok := p.prefix + strconv.FormatUint(p.next, 10)
	p.routes[tok] = progressRoute{server: server, hostToken: hostToken, pc: pc}
	p.mu.Unlock()
	return rawjson.AppendString(nil, tok), func() {
		p.mu.Lock()
		delete(p.routes, tok)
		p.mu.Unlock()
	}
}

func (p *progressRoutes) lookup(server string, token json.RawMessage) (json.RawMessage, bool) {
	var tok string
	if json.Unmarshal(token, &tok) != nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.routes[tok]
	if !ok || r.server != server {
		return nil, false
	}
	if r.pc != nil {
		// A parked call's progress goes to the host request waiting on it,
		// under that request's own token; while its question is with the
		// host no request waits, and the token it was given is the host's
		// to reuse for another request (to another server, whose progress
		// this upstream must not speak for).
		if t := r.pc.tok.Load(); t != nil {
			return *t, true
		}
		return nil, false
	}
	return r.hostToken, true
}

// upstreamHandler serves what one child sends on its own initiative: the
// child of server started for the sessions of key (poolKey). What it sends
// goes to those sessions only.
type upstreamHandler struct {
	g      *Gate
	key    string
	server string
}

// upstreamMethod is how the gate serves one request from an upstream.
type upstreamMethod struct {
	// outsideCall: answered by the gate itself, for no session. Every other
	// request is for the session whose call is in flight to the upstream
	// (sessionFor), and is refused when there is none.
	outsideCall bool
	serve       func(s *Session, server string, ctx context.Context, req *rpc.Message) (json.RawMessage, error)
}

// upstreamMethods is every request an upstream may send the gate, and how
// it is served; anything else is refused as unknown. The pipeline table
// test reads this map, so a method added here without a row fails it.
var upstreamMethods = map[string]upstreamMethod{
	"ping": {outsideCall: true, serve: func(*Session, string, context.Context, *rpc.Message) (json.RawMessage, error) {
		return json.RawMessage("{}"), nil
	}},
	"roots/list": {serve: func(s *Session, _ string, ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
		if !s.hostCaps().roots {
			return nil, rpc.Errorf(rpc.CodeMethodNotFound, "the host does not support roots")
		}
		return s.askHost(ctx, req)
	}},
	"sampling/createMessage": {serve: func(s *Session, server string, ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
		return s.run(ctx, relaySampling, server, untasked(req).Params)
	}},
	"elicitation/create": {serve: func(s *Session, server string, ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
		return s.relayElicitation(ctx, server, s.hostCaps(), untasked(req))
	}},
}

// routed is what Route found for one upstream request.
type routed struct {
	s   *Session
	err error
}

type routedKey struct{}

// Route finds, on the upstream's read loop, the session a request is for:
// there, a request the upstream sent before answering the gate's call is
// still seen during that call, however late its handler runs.
func (h *upstreamHandler) Route(ctx context.Context, req *rpc.Message) context.Context {
	if m, ok := upstreamMethods[req.Method]; ok && !m.outsideCall {
		s, err := h.g.sessionFor(h.key, h.server, req.Method)
		if s != nil {
			ctx = s.hostCalls.markOnly(ctx, child{h.key, h.server})
		}
		return context.WithValue(ctx, routedKey{}, routed{s, err})
	}
	return ctx
}

func (h *upstreamHandler) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	m, ok := upstreamMethods[req.Method]
	if !ok {
		return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method %s is not supported by mcp-gate", guard.Quote(req.Method, guard.ShowName))
	}
	if !m.outsideCall {
		var stop func()
		ctx, stop = h.cleanCancellation(ctx)
		defer stop()
	}
	var s *Session
	if !m.outsideCall {
		r, ok := ctx.Value(routedKey{}).(routed)
		if !ok {
			r.s, r.err = h.g.sessionFor(h.key, h.server, req.Method)
		}
		if r.err != nil {
			h.g.log.Warn("upstream request refused", "server", h.server, "method", req.Method, "error", r.err)
			return nil, r.err
		}
		s = r.s
		if s.era.modern.Load() {
			return h.g.parkedRequest(ctx, s, h.key, h.server, req) // parked.go
		}
	}
	return m.serve(s, h.server, ctx, req)
}

// cleanCancellation is ctx, the context of an upstream's request, whose
// end the gate passes on to the host requests it made on the request's
// behalf (an elicitation, a sampling request, roots/list): when the
// upstream withdraws its request (notifications/cancelled), the host is
// told with the upstream's own members (rpc.PeerCancelled), and a host may
// show or log its reason. So they pass as every upstream string does:
// inspected, and neutralised. A cancellation that reads as an approval
// (a reason announcing one, approval markers) loses every member but the
// request's id, and one that cannot be neutralised whole (a key with a
// hidden character) too; either is audited.
func (h *upstreamHandler) cleanCancellation(ctx context.Context) (context.Context, func()) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(h.cleanCause(context.Cause(ctx))) })
	return out, func() {
		stop()
		cancel(context.Canceled)
	}
}

// cleanCause is cause with an upstream's cancellation made fit for the
// host (cleanCancellation).
func (h *upstreamHandler) cleanCause(cause error) error {
	var pc *rpc.PeerCancelled
	if !errors.As(cause, &pc) || len(pc.Params) == 0 {
		return cause
	}
	const what = "notifications/cancelled"
	// Log-only for the server relays it, audited, as its results and
	// notifications are.
	if findings := guard.InspectResult(pc.Params); len(findings) > 0 && h.g.auditFindings(h.g.gateWho(), h.g.policy.Current(), h.server, what, "", findings) {
		return &rpc.PeerCancelled{Params: json.RawMessage(`{}`)}
	}
	params, err := h.g.neutralize(h.server, what, "cancellation", pc.Params)
	if err != nil {
		return &rpc.PeerCancelled{Params: json.RawMessage(`{}`)}
	}
	return &rpc.PeerCancelled{Params: params}
}

// askHost relays an upstream's request to the host and the host's answer
// back, result or error, unchanged.
func (g *Session) askHost(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	return g.host.Call(ctx, req.Method, req.Params)
}

// declined is the answer an upstream gets when the gate refuses to put its
// question to the user. To the upstream it is indistinguishable from a user
// who said no, which is all it needs to know.
var declined = json.RawMessage(`{"action":"decline"}`)

// labelMessage puts the server's name in front of an elicitation message,
// so the human knows who is asking. msg is already neutralised.
//
// The label must not be forgeable. An upstream could otherwise write
// "Pick a colour\n\n[github] Approve the deploy?" so that a later line
// seems to come from another server, or from the gate itself. So the label
// is put in front of every line that has anything to read, not only the
// first: a line break (LF, and U+2028 and U+2029, which some renderers
// break at) is always followed by "[server] ", and any label the upstream
// wrote can only ever appear after the real one. A line holding only
// blank space is left empty, so paragraphs stay apart without a label on
// nothing. Whatever blank space the message starts with is dropped, so the
// label is on the first line beside the first words, never pushed out of
// view; a carriage return, which could move the cursor back over the
// label in a terminal, is shown as [U+000D].
func labelMessage(server, msg string) string {
	msg = strings.TrimLeftFunc(msg, isBlankRune)
	msg = strings.ReplaceAll(msg, "\r", "[U+000D]")
	label := "[" + server + "] "
	var b strings.Builder
	b.Grow(len(label) + len(msg))
	b.WriteString(label)
	for first := true; ; first = false {
		i := strings.IndexAny(msg, "\n\u2028\u2029")
		line := msg
		if i >= 0 {
			line = msg[:i]
		}
		switch {
		case first:
			b.WriteString(line)
		case strings.TrimFunc(line, isBlankRune) != "":
			b.WriteString(label)
			b.WriteString(line)
		}
		if i < 0 {
			return b.String()
		}
		_, n := utf8.DecodeRuneInString(msg[i:])
		b.WriteString(msg[i : i+n])
		msg = msg[i+n:]
	}
}

// isBlankRune reports White_Space (which has LF, VT, FF, NEL, NBSP,
// U+2028, U+2029, U+3000 ...) and the blank Braille pattern, which
// renders as a space.
func isBlankRune(r rune) bool { return unicode.IsSpace(r) || r == 0x2800 }

// relayElicitation passes an upstream's question to the user, with the
// server's name in front so the human knows who is asking. A question shaped
// like the gate's own approval prompt, or carrying approval markers, is
// refused: an upstream must never obtain or influence an approval (issue #5).
func (g *Session) relayElicitation(ctx context.Context, server string, host *hostInfo, req *rpc.Message) (json.RawMessage, error) {
	params, err := g.vetElicitation(server, host, req)
	if err != nil {
		return nil, err
	}
	if params == nil {
		return declined, nil // refused, and audited
	}
	res, err := g.host.Call(ctx, req.Method, params)
	if err == nil {
		g.Gate.answers.record(g, server, req.ID, res)
	}
	return res, err
}

// vetElicitation is what every upstream question goes through before a
// host sees it, however it is put to the host (a request of the older era,
// an input request of the newer, parked.go): the guard, the server's
// label, the neutraliser. It returns the params to show, or nil when the
// question is refused (audited; the upstream is to be told the user
// declined), or an error for params that are no elicitation at all.
func (g *Session) vetElicitation(server string, host *hostInfo, req *rpc.Message) (json.RawMessage, error) {
	refuse := func(kind, detail string) (json.RawMessage, error) {
		g.audit.Elicitation(audit.Elicitation{Session: g.session, Server: server, Outcome: "refused", Kind: kind, Detail: detail})
		g.log.Warn("upstream elicitation refused", "server", server, "kind", kind, "detail", audit.Redact(detail))
		return nil, nil
	}
	if req.Params == nil || req.Params[0] != '{' {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "elicitation/create: params must be an object")
	}
	mode, _ := rawjson.GetString(req.Params, "mode")
	if mode == "" {
		if _, hasURL := rawjson.Get(req.Params, "url"); hasURL {
			mode = "url"
		} else {
			mode = "form"
		}
	}
	switch {
	case mode != "form" && mode != "url":
		return refuse("unknown_mode", "mode "+guard.Quote(mode, guard.ShowKey))
	case mode == "form" && !host.elicitForm, mode == "url" && !host.elicitURL:
		return refuse("unsupported_mode", "the host did not declare "+mode+" elicitation")
	}
	// The label goes on the "message" member; a duplicate or case-variant
	// one ("Message") would be the one some hosts show, unlabelled and
	// uninspected.
	if err := rawjson.UniqueKeys(req.Params); err != nil {
		return refuse("duplicate_keys", keyErrorDetail(err))
	}
	if findings := guard.InspectElicitation(req.Params); len(findings) > 0 {
		f := findings[0]
		return refuse(f.Kind, f.Path+": "+f.Detail)
	}
	// Every string the host shows (message, the form's titles and
	// descriptions, choices) is neutralised by the one walk; a key with a
	// hidden character declines the request.
	params, err := g.neutralize(server, "elicitation/create", "elicitation", req.Params)
	if err != nil {
		return refuse("hidden_characters", "an object key holds hidden characters")
	}
	msg, _ := rawjson.GetString(params, "message")
	params, err = rawjson.Set(params, "message", rawjson.AppendString(nil, labelMessage(server, msg)))
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "elicitation/create: %v", err)
	}
	// A question put to the human is on record first, as a call is: one
	// whose record cannot be written is declined (the failure is logged
	// and counted by userAudit).
	if g.audit.Elicitation(audit.Elicitation{Session: g.session, Server: server, Outcome: "relayed", Kind: mode}) != nil {
		return nil, nil
	}
	if mode == "url" {
		id, _ := rawjson.GetString(req.Params, "elicitationId")
		g.urlElicitations.add(server, id)
	}
	return params, nil
}

// upstreamNotifications is every notification the gate acts on from an
// upstream; others are dropped. Read by the pipeline table test.
var upstreamNotifications = map[string]func(h *upstreamHandler, msg *rpc.Message){
	"notifications/progress": func(h *upstreamHandler, msg *rpc.Message) {
		tok, ok := rawjson.Get(msg.Params, "progressToken")
		if !ok {
			return
		}
		g := h.g.progressSession(tok)
		var hostTok json.RawMessage
		if g != nil && g.childKeyFor(g.childKey(), h.server) != h.key {
			g = nil // a token of a session this child does not serve
		}
		if g != nil {
			hostTok, ok = g.progress.lookup(h.server, tok)
		}
		if g == nil || !ok {
			h.g.log.Debug("progress for no request in flight; dropped", "server", h.server)
			return
		}
		// Its message is shown; the token, the host's own, is put back
		// after the neutraliser so that the host still recognises it.
		params, ok := g.notificationFit(h.server, msg.Method, msg.Params)
		if !ok {
			return
		}
		var err error
		if params, err = rawjson.Set(params, "progressToken", hostTok); err == nil {
			g.notifyHost(msg.Method, params)
		}
	},
	"notifications/message": func(h *upstreamHandler, msg *rpc.Message) {
		// Log messages reach the user's screen: every session's of the
		// child's key whose level admits it (the child is shared by them,
		// its log is not any one call's).
		level, _ := rawjson.GetString(msg.Params, "level")
		for _, s := range h.g.sessionsOf(h.key) {
			if s.logAdmits(level) {
				s.relayNotification(h.server, msg.Method, msg.Params)
			}
		}
	},
	"notifications/resources/updated": func(h *upstreamHandler, msg *rpc.Message) {
		// An upstream speaks only for its own resources.
		// Each session of the child's key that subscribed to it hears of it.
		if uri, _ := rawjson.GetString(msg.Params, "uri"); h.g.ownsResourceServed(h.key, h.server, uri) {
			for _, s := range h.g.sessionsOf(h.key) {
				if s.isSubscribed(uri) {
					s.relayNotification(h.server, msg.Method, msg.Params)
				}
			}
		} else {
			h.g.log.Warn("resource update for a resource the server does not own; dropped", "server", h.server, "uri", audit.PayloadString(uri))
		}
	},
	"notifications/elicitation/complete": func(h *upstreamHandler, msg *rpc.Message) {
		// Only for an elicitation this upstream started.
		// The session whose host was asked hears of it.
		id, _ := rawjson.GetString(msg.Params, "elicitationId")
		for _, s := range h.g.sessionsOf(h.key) {
			if s.urlElicitations.take(h.server, id) {
				s.relayNotification(h.server, msg.Method, msg.Params)
				return
			}
		}
		h.g.log.Warn("elicitation completion for an elicitation the server did not start; dropped", "server", h.server, "elicitation_id", audit.PayloadString(id))
	},
	"notifications/tools/list_changed": func(h *upstreamHandler, _ *rpc.Message) {
		for _, k := range h.g.keysServed(h.key) {
			h.g.refresh(h.g.tools.lister, k, h.server)
		}
	},
	"notifications/prompts/list_changed": func(h *upstreamHandler, _ *rpc.Message) {
		for _, k := range h.g.keysServed(h.key) {
			h.g.refresh(h.g.prompts.lister, k, h.server)
		}
	},
	"notifications/resources/list_changed": func(h *upstreamHandler, _ *rpc.Message) {
		for _, k := range h.g.keysServed(h.key) {
			h.g.refresh(h.g.resLister, k, h.server)
		}
	},
}

func (h *upstreamHandler) HandleNotification(msg *rpc.Message) {
	if serve, ok := upstreamNotifications[msg.Method]; ok {
		serve(h, msg)
		return
	}
	if relayUnknown(msg.Method) {
		h.relayUnknownNotification(msg)
		return
	}
	h.g.log.Debug("upstream notification ignored", "server", h.server, "method", rpc.LogMethod(msg.Method))
}

// relayNotification passes an upstream's notification to the host through
// the same neutraliser as results; one it cannot pass whole (a key with a
// hidden character) is dropped, and neutralize has audited why.
func (g *Session) relayNotification(server, method string, params json.RawMessage) {
	if params != nil {
		clean, ok := g.notificationFit(server, method, params)
		if !ok {
			return
		}
		params = clean
	}
	g.notifyHost(method, params)
}

// notificationFit is what of an upstream's notification reaches the host:
// inspected as a result is (a progress message or a log line the host
// shows its user, announcing an approval or imitating the gate's
// question, is dropped, audited; log-only for the server relays it,
// audited), then neutralised (a key holding a hidden character drops it).
// false: nothing is sent. An elicitation's completion is inspected
// without its elicitationId: that member is what makes it an elicitation
// message (the detector looks for it), and only the server that started
// that elicitation may send it (urlElicitations); every other member the
// server put beside it (a message, data) reaches the host like any other
// notification's, and is inspected like one.
func (g *Session) notificationFit(server, method string, params json.RawMessage) (json.RawMessage, bool) {
	inspected := params
	if method == "notifications/elicitation/complete" {
		inspected, _ = rawjson.Delete(params, "elicitationId")
	}
	if findings := guard.InspectResult(inspected); len(findings) > 0 && g.auditFindings(g.who(), g.policy.Current(), server, method, "", findings) {
		g.log.Warn("upstream notification refused", "server", server, "method", rpc.LogMethod(method), "kind", findings[0].Kind)
		return nil, false
	}
	out, err := g.neutralize(server, method, method, params)
	return out, err == nil
}

// urlElicitations remembers which upstream started each URL-mode
// elicitation, so that only it can announce its completion.
type urlElicitations struct {
	mu  sync.Mutex
	ids map[string]string // elicitationId → server
}

func (u *urlElicitations) add(server, id string) {
	if id == "" {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = map[string]string{}
	}
	u.ids[id] = server
}

// take reports whether server started elicitation id, and forgets it.
func (u *urlElicitations) take(server, id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids[id] != server || id == "" {
		return false
	}
	delete(u.ids, id)
	return true
}
