package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Trouble is what keeps the gate from serving everything, told to the host
// rather than only to stderr: hosts show a server's stderr to almost no
// one, and a gate that exits before initialize shows as "Connection
// closed" and nothing else.
//
// Measured with the real hosts (README, Troubleshooting): Claude Code's
// `claude mcp list` and `claude mcp get` show the message of a JSON-RPC
// error answering tools/list ("! Connected · tools fetch failed — <message>"),
// and Codex marks the server failed at startup with that message
// (mcpServer/startupStatus/updated, the TUI's startup line). A
// notifications/message at level error reaches Codex's log and Claude
// Code's debug log only. So: what leaves nothing to serve (Fatal) answers
// every list and call with a JSON-RPC error; what leaves part of it out
// (Notes: a refused servers entry, an upstream that did not start) is a
// log notification and a line of the initialize instructions, and the
// rest is served.
type Trouble struct {
	// Fatal, when not empty, is why nothing can be served: a servers file
	// that cannot be read, or a policy file that does not load. Every
	// request but initialize, ping and logging/setLevel is refused with
	// it.
	Fatal string
	// Notes are problems that leave part of the configuration out.
	Notes []string
}

// troubleMethods are answered whatever the trouble: the session must come
// up for the host to show anything.
var troubleMethods = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true}

// trouble reads the gate's trouble now: a repaired policy file clears it.
func (g *Gate) trouble() Trouble {
	if g.opts.Trouble == nil {
		return Trouble{}
	}
	return g.opts.Trouble()
}

// refuseInTrouble is the JSON-RPC error for a request made while nothing
// can be served, or nil.
func (g *Session) refuseInTrouble(method string) error {
	if troubleMethods[method] {
		return nil
	}
	if t := g.trouble(); t.Fatal != "" {
		return &rpc.Error{Code: rpc.CodeInternalError, Message: hostText("mcp-gate offers no tools: " + t.Fatal)}
	}
	return nil
}

// troubleInstructions is the part of the initialize instructions that says
// what is wrong, for hosts that show them or hand them to the model.
func (g *Gate) troubleInstructions() string {
	t := g.trouble()
	var b strings.Builder
	if t.Fatal != "" {
		fmt.Fprintf(&b, " mcp-gate offers no tools: %s.", hostText(t.Fatal))
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, " mcp-gate left something out: %s.", hostText(n))
	}
	return b.String()
}

// reportTrouble sends the host one error log notification per problem
// once it has said initialized.
func (g *Session) reportTrouble() {
	t := g.trouble()
	if t.Fatal != "" {
		g.logToHost(hostText("mcp-gate offers no tools: " + t.Fatal))
	}
	for _, n := range t.Notes {
		g.logToHost(n)
	}
}

// logToHost sends one error-level log notification from the gate itself.
// Error is the highest level a host filters by below critical, so every
// setLevel lets it through.
func (g *Session) logToHost(text string) {
	params, _ := json.Marshal(map[string]any{"level": "error", "logger": "mcp-gate", "data": hostText(text)})
	g.notifyHost("notifications/message", params)
}

// TroubleCleared tells every session's host that the lists may have
// changed: what was refused while the gate was in trouble is served now
// (a policy file repaired), and hosts that follow list_changed fetch the
// tools again.
func (g *Gate) TroubleCleared() {
	g.mu.Lock()
	sessions := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	for _, s := range sessions {
		for _, n := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"} {
			s.notifyHost(n, nil)
		}
	}
}

// noteStart records how the last attempt to start a child for a list
// went, so that an upstream that fails to start is told to the host (with
// the tail of its stderr, which the error carries) instead of showing as
// fewer tools.
func (g *Gate) noteStart(key, server string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		delete(g.startFailed, child{key, server})
		return
	}
	if g.startFailed == nil {
		g.startFailed = map[child]error{}
	}
	g.startFailed[child{key, server}] = err
}

// noteListed records how the last list fetch from a started child went,
// so that a call to a name of that server which is not in the catalog
// says why the server could not be listed (Session.unknown) rather than
// only that the name is unknown.
func (g *Gate) noteListed(key, server string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		delete(g.listFailed, child{key, server})
		return
	}
	if g.listFailed == nil {
		g.listFailed = map[child]error{}
	}
	g.listFailed[child{key, server}] = err
}

// listMethods are the host requests that list what the upstreams offer.
var listMethods = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true}

// afterList turns a list the session's children could not be started for
// into what the host shows: an error when none of them started (there is
// nothing to list, and an empty list would look like a working gate), else
// one log notification per server that did not start, once per failure.
func (g *Session) afterList(ctx context.Context, method string, res json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil || !listMethods[method] {
		return res, err
	}
	key := g.childKey()
	names := g.pool.Names()
	var failed []string
	var down []child // the children that did not start, why[i] why
	var why []error
	g.Gate.mu.Lock()
	for _, server := range names {
		if e := g.startFailed[child{key, server}]; e != nil {
			down, why = append(down, child{key, server}), append(why, e)
		}
	}
	g.Gate.mu.Unlock()
	// The tails are guarded, and what the guard finds audited, outside
	// Gate.mu: every call's forward takes it (enter), and an audit write
	// may wait on its disk.
	for i, c := range down {
		failed = append(failed, fmt.Sprintf("server %q did not start: %s", c.server, g.guardedTail(c.server, why[i].Error())))
	}
	if len(failed) == 0 {
		return res, nil
	}
	sort.Strings(failed)
	if len(failed) == len(names) {
		return nil, &rpc.Error{Code: rpc.CodeInternalError, Message: hostText("mcp-gate offers no tools: " + strings.Join(failed, "; "))}
	}
	g.mu.Lock()
	if g.reported == nil {
		g.reported = map[string]bool{}
	}
	var news []string
	for _, f := range failed {
		if !g.reported[f] {
			g.reported[f] = true
			news = append(news, f)
		}
	}
	g.mu.Unlock()
	for _, f := range news {
		g.logToHost(f + "; its tools are left out")
	}
	return res, nil
}

// hostWords rewrites what the gate tells a host about its trouble. Claude
// Code (measured, 2.1.332) redacts from an error it shows every
// case-insensitive occurrence of each argument of the server's command
// line, and the gate's arguments always include "serve": "server" and
// "servers file" would show as "[redacted]r". So the host reads "upstream"
// where stderr says "server" (whole words: paths are left as they are); a
// file path given as an argument is redacted whatever the gate does, so
// messages name files by base name too.
var (
	// Compiled at first use: the Unicode classes take some 80 µs to
	// compile, which every start would pay for a message most never give.
	hostTokens = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\p{L}\p{N}_./\\-]+`) })
	hostWords  = map[string]string{
		"server": "upstream", "servers": "upstreams", "Server": "Upstream", "Servers": "Upstreams",
		"serve": "offer", "serves": "offers",
	}
)

// hostText also makes hidden characters visible, as for every upstream
// error the gate relays: a start failure carries the server's own stderr.
func hostText(s string) string {
	s = hostTokens().ReplaceAllStringFunc(s, func(w string) string {
		if r, ok := hostWords[w]; ok {
			return r // whole words only: a path or "testserver" is left alone
		}
		return w
	})
	s, _ = guard.Neutralize(s)
	return s
}

// guardedTail is the end of a start failure (lastLines), which carries the
// server's own stderr, for the host: the model reads it in an error or a
// log line, so it passes the result guard as a result would
// (upstreamWords). A server must not reach the model with an
// approval-shaped text by failing to start when its results would be
// refused.
func (g *Session) guardedTail(server, s string) string {
	tail := lastLines(s, 5, 1000)
	if _, ok := g.upstreamWords(server, "start failure", tail); !ok {
		return withheldWords
	}
	return tail
}

// withheldWords stands in a message of the gate's for an upstream's text
// the guard refused (upstreamWords).
const withheldWords = "[its words are withheld: the result guard found them approval-shaped]"

// upstreamWords is the one way an upstream's own text that is not a
// relayed message (its list's error, its stderr's tail, its instructions)
// enters a message of the gate's to the host: an error, a log line, the
// initialize instructions. The model reads those as it reads a result (a
// host hands the instructions to the model with its system prompt), so
// the text is inspected as a result is, and one the guard finds
// approval-shaped is withheld (ok false), audited; under log-only it is
// relayed, audited. It is read as a string value, so that a text that is
// JSON, or starts like it, is read both as JSON and as prose. Making its
// hidden characters visible and quoting it stay the caller's
// (guard.Quote, guard.Neutralize).
func (g *Session) upstreamWords(server, where, text string) (string, bool) {
	if g.noGuard.Load() {
		return text, true
	}
	findings := guard.InspectResult(mustJSON(map[string]string{"text": text}))
	if len(findings) == 0 || !g.auditFindings(g.who(), g.policy.Current(), server, "", where+" ", findings) {
		return text, true
	}
	return "", false
}

// lastLines keeps the end of s: at most n lines and max bytes, the part a
// host has room for (the error carries the server's stderr tail).
func lastLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	out := strings.Join(lines, " ⏎ ")
	if len(out) > max {
		out = "…" + out[len(out)-max:]
	}
	return out
}
