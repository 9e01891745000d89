package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// progressRoutes maps the gate's progress tokens back to the host's. A
// token is valid only while its request is in flight, and only for the
// upstream it was given to.
type progressRoutes struct {
	mu     sync.Mutex
	next   uint64
	routes map[string]progressRoute // by the gate's token, as a decoded string
}

type progressRoute struct {
	server    string
	hostToken json.RawMessage
}

func (p *progressRoutes) add(server string, hostToken json.RawMessage) (json.RawMessage, func()) {
	p.mu.Lock()
	p.next++
	tok := "mcp-gate-" + strconv.FormatUint(p.next, 10)
	p.routes[tok] = progressRoute{server: server, hostToken: hostToken}
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
	return r.hostToken, true
}

// upstreamHandler serves what one upstream sends on its own initiative.
type upstreamHandler struct {
	g      *Gate
	server string
}

func (h *upstreamHandler) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	g := h.g
	g.mu.Lock()
	host := g.hostInfo
	g.mu.Unlock()
	switch req.Method {
	case "ping":
		return json.RawMessage("{}"), nil
	case "roots/list":
		if !host.roots {
			return nil, rpc.Errorf(rpc.CodeMethodNotFound, "the host does not support roots")
		}
		return g.askHost(ctx, req)
	case "sampling/createMessage":
		if !host.sampling {
			return nil, rpc.Errorf(rpc.CodeMethodNotFound, "the host does not support sampling")
		}
		// What a server puts in front of the user's model is untrusted too,
		// and is inspected as the host will read it: one member per key.
		if err := rawjson.UniqueKeys(req.Params); err != nil {
			g.audit.Guard(audit.Guard{Session: g.session, Server: h.server, Tool: "sampling/createMessage", Outcome: "refused", Kind: "duplicate_keys", Detail: keyErrorDetail(err)})
			return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: " + err.Error()}
		}
		if findings := guard.InspectResult(req.Params); len(findings) > 0 {
			f := findings[0]
			g.audit.Guard(audit.Guard{Session: g.session, Server: h.server, Tool: "sampling/createMessage", Outcome: "refused", Kind: f.Kind, Detail: f.Path + ": " + f.Detail})
			return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: it carries an approval-shaped payload (" + f.Kind + " at " + f.Path + ")"}
		}
		// A server must not spend the user's model silently: sampling is
		// decided like a tool call, and denied unless the policy allows it.
		pol := g.policy.Current()
		if v := g.decide(ctx, pol, policy.Call{Kind: policy.KindSampling, Server: h.server, Args: req.Params}, ""); !v.allow {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			// Worded without the gate's name: the upstream often hands this
			// text back in its own result, and a result naming the gate with
			// approval vocabulary is what the guard refuses.
			return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused by policy: " + v.reason}
		}
		// The host shows the request to the user before it runs it.
		params, err := g.neutralize(h.server, "sampling/createMessage", "sampling request", req.Params)
		if err != nil {
			return nil, &rpc.Error{Code: CodeDenied, Message: "sampling request refused: " + refusedBecause(err)}
		}
		return g.host.Call(ctx, req.Method, params)
	case "elicitation/create":
		return g.relayElicitation(ctx, h.server, host, req)
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method %q is not supported by mcp-gate", req.Method)
}

// askHost relays an upstream's request to the host and the host's answer
// back, result or error, unchanged.
func (g *Gate) askHost(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
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
func (g *Gate) relayElicitation(ctx context.Context, server string, host hostInfo, req *rpc.Message) (json.RawMessage, error) {
	refuse := func(kind, detail string) (json.RawMessage, error) {
		g.audit.Elicitation(audit.Elicitation{Session: g.session, Server: server, Outcome: "refused", Kind: kind, Detail: detail})
		g.log.Warn("upstream elicitation refused", "server", server, "kind", kind, "detail", audit.Redact(detail))
		return declined, nil
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
		return refuse("unknown_mode", fmt.Sprintf("mode %q", mode))
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
	if mode == "url" {
		id, _ := rawjson.GetString(req.Params, "elicitationId")
		g.urlElicitations.add(server, id)
	}
	g.audit.Elicitation(audit.Elicitation{Session: g.session, Server: server, Outcome: "relayed", Kind: mode})
	return g.host.Call(ctx, req.Method, params)
}

func (h *upstreamHandler) HandleNotification(msg *rpc.Message) {
	g := h.g
	switch msg.Method {
	case "notifications/progress":
		tok, ok := rawjson.Get(msg.Params, "progressToken")
		if !ok {
			return
		}
		hostTok, ok := g.progress.lookup(h.server, tok)
		if !ok {
			g.log.Debug("progress for no request in flight; dropped", "server", h.server)
			return
		}
		// Its message is shown; the token, the host's own, is put back
		// after the neutraliser so that the host still recognises it.
		params, err := g.neutralize(h.server, msg.Method, msg.Method, msg.Params)
		if err != nil {
			return
		}
		if params, err = rawjson.Set(params, "progressToken", hostTok); err == nil {
			g.notifyHost(msg.Method, params)
		}
	case "notifications/message":
		// Log messages reach the user's screen.
		g.relayNotification(h.server, msg.Method, msg.Params)
	case "notifications/resources/updated":
		// An upstream speaks only for its own resources.
		if uri, _ := rawjson.GetString(msg.Params, "uri"); g.ownsResource(h.server, uri) {
			g.relayNotification(h.server, msg.Method, msg.Params)
		} else {
			g.log.Warn("resource update for a resource the server does not own; dropped", "server", h.server, "uri", audit.PayloadString(uri))
		}
	case "notifications/elicitation/complete":
		// Only for an elicitation this upstream started.
		if id, _ := rawjson.GetString(msg.Params, "elicitationId"); g.urlElicitations.take(h.server, id) {
			g.relayNotification(h.server, msg.Method, msg.Params)
		} else {
			g.log.Warn("elicitation completion for an elicitation the server did not start; dropped", "server", h.server, "elicitation_id", audit.PayloadString(id))
		}
	case "notifications/tools/list_changed":
		g.refresh(g.tools.lister, h.server)
	case "notifications/prompts/list_changed":
		g.refresh(g.prompts.lister, h.server)
	case "notifications/resources/list_changed":
		g.refresh(g.resources.lister, h.server)
	default:
		g.log.Debug("upstream notification ignored", "server", h.server, "method", rpc.LogMethod(msg.Method))
	}
}

// relayNotification passes an upstream's notification to the host through
// the same neutraliser as results; one it cannot pass whole (a key with a
// hidden character) is dropped, and neutralize has audited why.
func (g *Gate) relayNotification(server, method string, params json.RawMessage) {
	if params != nil {
		clean, err := g.neutralize(server, method, method, params)
		if err != nil {
			return
		}
		params = clean
	}
	g.notifyHost(method, params)
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
