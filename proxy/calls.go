package proxy

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

func (g *Session) listTools(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return g.listNamed(ctx, &g.tools, policy.KindTool, params)
}

func (g *Session) listPrompts(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return g.listNamed(ctx, &g.prompts, policy.KindPrompt, params)
}

// callParams is what the gate reads of a tools/call or prompts/get; the
// rest of the params travels untouched.
type callParams struct {
	name string
	// nameAt is where the name's value is in the params, so that it can be
	// rewritten without reading the params again.
	nameAt [2]int
	args   json.RawMessage // nil when absent
}

// parseCallParams reads the name and the arguments in one pass over the
// params.
func parseCallParams(method string, params json.RawMessage) (callParams, error) {
	if len(params) == 0 || params[0] != '{' {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: params must be an object with a %q", method, "name")
	}
	// Duplicate and case-variant keys were refused where the host's
	// message was read (checkHostParams): the params are unambiguous here,
	// and each member is met once.
	var p callParams
	var rawName []byte
	_ = rawjson.Members(params, func(m rawjson.Member) bool {
		switch m.Key {
		case "name":
			rawName, p.nameAt = m.Value, [2]int{m.Start, m.End}
		case "arguments":
			p.args = m.Value
		}
		return true
	})
	if p.name, _ = rawjson.String(rawName); p.name == "" {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: params need a non-empty string %q", method, "name")
	}
	if p.args != nil && p.args[0] != '{' && string(p.args) != "null" {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: %q must be an object", method, "arguments")
	}
	return p, nil
}

// withName is params with the name's value, found by parseCallParams,
// replaced by name.
func (p callParams) withName(params json.RawMessage, name string) json.RawMessage {
	out := make([]byte, 0, len(params)+len(name)+2)
	out = append(out, params[:p.nameAt[0]]...)
	out = rawjson.AppendString(out, name)
	return append(out, params[p.nameAt[1]:]...)
}

// shownFailure is how many characters of an upstream's failure a refusal
// naming it shows (guard.Quote).
const shownFailure = 200

// unknown is the error for a name not in the catalog. When the name's prefix
// is a server that could not be listed, it says why, which is what the user
// needs to hear.
func (g *Session) unknown(noun, name string) error {
	if server, _, ok := strings.Cut(name, "__"); ok && g.pool.Has(server) {
		err := g.pool.LastError(g.childKeyFor(g.childKey(), server), server)
		if err == nil {
			// Started, but its list could not be fetched (it failed or
			// ended the session while listing): the same news.
			g.Gate.mu.Lock()
			err = g.listFailed[child{g.childKey(), server}]
			g.Gate.mu.Unlock()
		}
		if err != nil {
			// Why is the upstream's words (its list's error, its stderr's
			// tail): guarded as a result (upstreamWords), and quoted, as
			// every untrusted text in a refusal of the gate's, never in
			// its voice.
			why := withheldWords
			if words, ok := g.upstreamWords(server, noun+" list failure", err.Error()); ok {
				why = guard.Quote(words, shownFailure)
			}
			return rpc.Errorf(rpc.CodeInvalidParams, "unknown %s %s: its server %q is unavailable: %s", noun, guard.Quote(name, guard.ShowName), server, why)
		}
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "unknown %s %s: it is not in this gate's %ss/list", noun, guard.Quote(name, guard.ShowName), noun)
}

// forward sends a request to an upstream, starting it if needed, with the
// host's progress token swapped for one of the gate's own so that progress
// can be routed back (and an upstream cannot speak for another's request).
//
// The request goes to server's child of the session's key (childKey). While
// it runs, the session is the one that child's own requests go to
// (sessionFor); it counts from before the child is started, since a server
// may ask as soon as it is initialized.
func (g *Session) forward(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	key := g.childKeyFor(g.childKey(), server)
	defer g.enter(ctx, key, server, g).leave()
	d := g.pool.CallTimeout(server)
	// A host request served in its own context (a 2025-11-25 host's, or a
	// 2026-07-28 host's call to a 2026-07-28 child, which cannot park)
	// forwards once at a time, and ends when its forward does: its own
	// context carries the bound (backpressure.go), without a context layer
	// per call, and reports it as its deadline while it is armed, for what
	// reads that (a start waiting out a restart backoff, upstream.Pool).
	// A parked call's forward runs under a context of its own, which the
	// request's end does not end, so CancelServedAfter declines it.
	cause := &callTimeoutError{server: server, timeout: d}
	if bound, ok := rpc.CancelServedAfter(ctx, d, cause); ok {
		res, err := g.forwardWithin(ctx, key, server, method, params)
		if !bound.Stop() && err == nil {
			// The bound fired as the answer came. The request is
			// cancelled now, so it ends as the timeout it was.
			return nil, upstreamError(server, method, cause)
		}
		return res, err
	}
	ctx, cancel := withCallTimeout(ctx, cause)
	defer cancel()
	return g.forwardWithin(ctx, key, server, method, params)
}

// forwardWithin is forward once the call is bounded by its callTimeout.
func (g *Session) forwardWithin(ctx context.Context, key, server, method string, params json.RawMessage) (json.RawMessage, error) {
	if stripped, ok := stripTask(params); ok {
		// The gate declares no tasks: the upstream answers normally (tasks.go).
		g.log.Debug("task augmentation stripped", "server", server, "method", method)
		params = stripped
	}
	s, err := g.pool.Session(ctx, key, server)
	if err != nil {
		return nil, upstreamError(server, method, err)
	}
	if m := modernOf(ctx); m != nil && s.Modern() {
		// A 2026-07-28 upstream reads the client's capabilities from each
		// request: it is told what this request declared and the gate can
		// relay, not what the principal's children declared at discover.
		// An older one learned them at initialize, and is not told.
		ctx = upstream.WithClientCapabilities(ctx, mirroredCaps(m.caps))
	}
	if meta, ok := rawjson.Get(params, "_meta"); ok {
		if tok, ok := rawjson.Get(meta, "progressToken"); ok {
			pc, _ := ctx.Value(parkableKey{}).(*parkedCall) // a parked call's: routed to the request waiting on it
			gateTok, release := g.progress.add(server, tok, pc)
			defer release()
			params, err = rawjson.SetPath(params, []string{"_meta", "progressToken"}, gateTok)
			if err != nil {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: %v", method, err)
			}
		}
	}
	res, err := s.CallAdmit(ctx, method, params, g.admitResult(ctx, server, method))
	if err != nil {
		return nil, upstreamError(server, method, err)
	}
	return res, nil
}

// itemTitle is the title the upstream gave a tool or prompt, for the
// approval question (which shows it quoted and bounded), or "".
func (g *Session) itemTitle(k policy.Kind, server, name string) string {
	var n *named
	switch k {
	case policy.KindTool:
		n = g.catalog().tools
	case policy.KindPrompt:
		n = g.catalog().prompts
	default:
		return ""
	}
	l := n.servers[server]
	if l == nil {
		return ""
	}
	for _, e := range l.entries {
		if e.name == name {
			if t, ok := rawjson.GetString(e.raw, "title"); ok {
				return t
			}
			if ann, ok := rawjson.Get(e.raw, "annotations"); ok {
				t, _ := rawjson.GetString(ann, "title")
				return t
			}
			return ""
		}
	}
	return ""
}

// mirroredCaps is the client capabilities a 2026-07-28 upstream is told a
// 2026-07-28 host's request has: of what the request declared, what the
// gate relays to it as input requests (era_relayed.go): form elicitation,
// sampling and roots. URL elicitation is left out, since the gate declines
// it for such a host, and so is everything the gate does not relay. The
// eight answers are written once (mirroredCapsOf); they are shared, and
// never to be modified.
func mirroredCaps(h hostInfo) json.RawMessage {
	i := 0
	if h.elicitForm {
		i |= 1
	}
	if h.sampling {
		i |= 2
	}
	if h.roots {
		i |= 4
	}
	return mirroredCapsOf[i]
}

var mirroredCapsOf = func() (t [8]json.RawMessage) {
	for i := range t {
		t[i] = writeMirroredCaps(hostInfo{elicitForm: i&1 != 0, sampling: i&2 != 0, roots: i&4 != 0})
	}
	return t
}()

// writeMirroredCaps writes mirroredCaps's answer for h.
func writeMirroredCaps(h hostInfo) json.RawMessage {
	out := []byte("{")
	add := func(member string) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, member...)
	}
	if h.elicitForm {
		add(`"elicitation":{"form":{}}`)
	}
	if h.sampling {
		add(`"sampling":{}`)
	}
	if h.roots {
		add(`"roots":{}`)
	}
	return append(out, '}')
}
