// Package elicitation asks the human to approve one call, by whichever
// channel reaches them, and fails closed: only an explicit yes lets the call
// through. Decline, cancel, an error, a malformed answer, a timeout, a
// withdrawn call and a channel that cannot ask all mean no (DESIGN.md §5).
//
// The gate sees approval only through the Approver interface. Today's
// implementation, HostApprover, sends an MCP form elicitation to the host
// (only an "accept" with approve set to true is a yes); an out-of-band
// approval surface and input-required results are other implementations.
//
// The approval is bound to the call: the gate holds the call's exact bytes
// while it asks and forwards exactly those, so an answer can never cover a
// different call. Approval never comes from anything but the channel's
// answer to the gate's own question; an upstream cannot reach this exchange.
package elicitation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// An Approver puts one approval question to the human and returns the
// answer.
//
// Concurrency: the gate calls Approve from many goroutines at once, one for
// each call that waits for an answer; an implementation must keep questions
// independent, so that one left open never delays another's answer or any
// other traffic, and must be safe for concurrent use.
//
// Fail closed: there is no error result. Anything but an explicit yes from
// the human (Approved, ApprovedSession) is a no, and says why in Detail: a
// channel that cannot ask (Unsupported), a refusal (Declined, Cancelled),
// an answer it cannot read (Malformed), a failure (Failed), no answer within timeout (TimedOut, DefaultTimeout when
// timeout is 0 or less), or ctx done (Withdrawn). Approve returns no later
// than timeout after it was called, and promptly once ctx is done.
type Approver interface {
	Approve(ctx context.Context, req Request, timeout time.Duration) Answer
}

// HostApprover asks the host through an MCP form elicitation (Ask). CanAsk
// is read on every question, so that what the host declared is always the
// current answer; nil means the host cannot ask.
type HostApprover struct {
	Host   Host
	CanAsk func() bool
}

// Approve implements Approver.
func (a HostApprover) Approve(ctx context.Context, req Request, timeout time.Duration) Answer {
	return Ask(ctx, a.Host, a.CanAsk != nil && a.CanAsk(), req, timeout)
}

// DefaultTimeout bounds a question nobody answers, when the policy says
// nothing: a pending approval must never park a call forever.
const DefaultTimeout = 2 * time.Minute

// MessagePrefix starts every approval prompt the gate sends. The result
// guard refuses upstream elicitations that imitate it.
const MessagePrefix = "mcp-gate: approve this tool call?"

// Host is the part of the host connection the asker needs. Call must be safe
// for concurrent use and must return when ctx is done (telling the host the
// request is cancelled, so its dialog closes).
type Host interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Request is the call the human is asked about.
//
// Server, Tool, Title and Args come from upstreams and the model: the
// question shows them only as quoted, one-line, bounded values after the
// gate's own labels. Rule and Reason are the policy's: Reason must be text
// the policy's authors wrote (a rule's reason: field) or the gate's own,
// never a generated decision reason, which can carry a condition's error
// or an argument.
type Request struct {
	Server     string
	Tool       string          // the upstream's tool name
	Title      string          // the upstream's title for the tool, if any
	Args       json.RawMessage // the arguments exactly as they will be forwarded
	ArgsDigest string
	Rule       string // the policy rule that asked
	Reason     string // policy-authored: why this rule asks
	// Titled selects the 2025-11-25 form of a titled enum (oneOf/const);
	// older hosts get enum with enumNames.
	Titled bool
	// Changed, when set, is what differs from the definition the human
	// approved before: the question is whether to accept it.
	Changed *DefinitionChange
	// Via are the channels the policy chose for this question, in order
	// of preference (policy.ApprovalVia); Channels asks on the first that
	// can ask. Empty means the host's elicitation only.
	Via []string
	// ViaNamed says the policy itself named Via (a rule's via,
	// approval.hosts, approval.via: policy.ViaNamed) rather than leaving
	// it to the default order, read from the snapshot Via was read from.
	ViaNamed bool
	// Client and Session say which host session asks (its clientInfo name
	// and the gate's session id), for the local surface's list.
	Client  string
	Session string
	// User and Email name the team user whose call it is (an identity a
	// bearer token gave, HTTP front end), "" for the human running the
	// gate: a question that may reach someone else (the local surface)
	// says whose call they decide.
	User  string
	Email string
	// OnceOnly leaves out the "remember for this session" choice: a
	// 2026-07-28 host has no session for the gate to remember it in.
	OnceOnly bool
}

// Outcome is how a question ended.
type Outcome string

// The outcomes. Only the two approvals allow the call.
const (
	Approved        Outcome = "approved"
	ApprovedSession Outcome = "approved_session"
	Declined        Outcome = "declined"
	Cancelled       Outcome = "cancelled"
	TimedOut        Outcome = "timeout"
	Failed          Outcome = "error"
	Malformed       Outcome = "malformed"
	Unsupported     Outcome = "unsupported"
	Withdrawn       Outcome = "withdrawn"
	Remembered      Outcome = "remembered" // approved earlier for this session
)

// Answer is the result of asking.
type Answer struct {
	Outcome Outcome
	Detail  string        // what happened, for the refusal text and the audit
	Took    time.Duration // how long the question was open
}

// Allowed reports whether the answer lets the call run.
func (a Answer) Allowed() bool {
	return a.Outcome == Approved || a.Outcome == ApprovedSession || a.Outcome == Remembered
}

// Ask puts req to the human and waits at most timeout for the answer.
// canAsk says whether the host declared form elicitation; when it did not,
// nothing is sent and the answer is Unsupported.
func Ask(ctx context.Context, host Host, canAsk bool, req Request, timeout time.Duration) Answer {
	if !canAsk {
		return Answer{Outcome: Unsupported, Detail: "this host cannot ask for approval (its initialize declared no form elicitation); " +
			"ask your security team to allow this tool in the policy, or use a host that supports MCP elicitation (Claude Code, Codex)"}
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	params, err := Params(req)
	if err != nil {
		return Answer{Outcome: Failed, Detail: err.Error()}
	}
	start := time.Now()
	actx, cancel := context.WithTimeoutCause(ctx, timeout, errAskTimeout)
	defer cancel()
	res, err := host.Call(actx, "elicitation/create", params)
	took := time.Since(start)
	switch {
	case err == nil:
		a := Interpret(res)
		a.Took = took
		return a
	case ctx.Err() != nil:
		return Answer{Outcome: Withdrawn, Detail: "the call was cancelled while the question was open", Took: took}
	case errors.Is(context.Cause(actx), errAskTimeout):
		return Answer{Outcome: TimedOut, Detail: fmt.Sprintf("no answer within %s", timeout), Took: took}
	default:
		return Answer{Outcome: Failed, Detail: "the host could not ask: " + err.Error(), Took: took}
	}
}

var errAskTimeout = errors.New("approval timed out")

// Interpret reads the host's elicitation result. Anything but a well-formed
// accept with approve == true is a no. Keys are matched exactly, and an
// answer with the same key twice or two keys equal under case folding
// ("action" and "Action", approve twice) is malformed: parsers disagree on
// which copy counts, and the gate must not read a yes where the host meant
// a no.
func Interpret(res json.RawMessage) Answer {
	if len(res) == 0 || res[0] != '{' {
		return Answer{Outcome: Malformed, Detail: "the host's answer is not an elicitation result"}
	}
	if err := rawjson.UniqueKeys(res); err != nil {
		var ke *rawjson.KeyError
		if errors.As(err, &ke) {
			return Answer{Outcome: Malformed, Detail: "the host's answer is ambiguous: " + ke.Error()}
		}
		return Answer{Outcome: Malformed, Detail: "the host's answer is not an elicitation result"}
	}
	var action string
	if raw, ok := rawjson.Get(res, "action"); !ok || json.Unmarshal(raw, &action) != nil {
		return Answer{Outcome: Malformed, Detail: `the host's answer has no "action" string`}
	}
	switch action {
	case "decline":
		return Answer{Outcome: Declined, Detail: "declined by the user"}
	case "cancel":
		return Answer{Outcome: Cancelled, Detail: "the user dismissed the question without answering"}
	case "accept":
	default:
		return Answer{Outcome: Malformed, Detail: fmt.Sprintf("the host answered with action %s; expected accept, decline or cancel", quote(action, 40))}
	}
	content, ok := rawjson.Get(res, "content")
	if !ok || len(content) == 0 || content[0] != '{' {
		return Answer{Outcome: Malformed, Detail: "the answer has no approve field"}
	}
	approve, ok := rawjson.Get(content, "approve")
	if !ok {
		return Answer{Outcome: Malformed, Detail: "the answer has no approve field"}
	}
	switch string(approve) {
	case "true":
	case "false":
		return Answer{Outcome: Declined, Detail: "the user answered no"}
	default:
		// A string "true" is not consent: the form asked for a boolean.
		return Answer{Outcome: Malformed, Detail: fmt.Sprintf("approve is %s; expected the boolean true or false", quote(string(approve), 40))}
	}
	scope := "once"
	if raw, ok := rawjson.Get(content, "scope"); ok {
		if err := json.Unmarshal(raw, &scope); err != nil || (scope != "once" && scope != "session") {
			return Answer{Outcome: Malformed, Detail: fmt.Sprintf("scope is %s; expected \"once\" or \"session\"", quote(string(raw), 40))}
		}
	}
	if scope == "session" {
		return Answer{Outcome: ApprovedSession, Detail: "approved by the user for this session"}
	}
	return Answer{Outcome: Approved, Detail: "approved by the user"}
}

// Params builds the elicitation/create request for req.
func Params(req Request) (json.RawMessage, error) {
	scope := map[string]any{
		"type":        "string",
		"title":       "Remember my answer",
		"description": "Approve only this call, or every call of this tool that this rule asks about, until the session ends or the policy changes.",
		"default":     "once",
	}
	if req.Titled {
		scope["oneOf"] = []map[string]string{
			{"const": "once", "title": "Only this call"},
			{"const": "session", "title": "This tool, for this session"},
		}
	} else {
		scope["enum"] = []string{"once", "session"}
		scope["enumNames"] = []string{"Only this call", "This tool, for this session"}
	}
	props := map[string]any{
		// A required boolean with no default: an empty or
		// auto-filled form can never amount to a yes.
		"approve": map[string]any{
			"type":        "boolean",
			"title":       "Approve this call",
			"description": "Yes lets this one call run. No refuses it.",
		},
		"scope": scope,
	}
	if req.OnceOnly {
		delete(props, "scope")
	}
	p := map[string]any{
		"mode":    "form",
		"message": Message(req),
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": props,
			"required":   []string{"approve"},
		},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("building the approval request: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Bounds of the question. Every line the question has is one of the gate's
// own: the prefix, the labels below, and one line per argument value.
const (
	maxNameView   = 200  // a server, tool or title, in bytes of the quoted form
	maxReasonView = 400  // the policy's reason
	maxKeyView    = 80   // one key of an argument's path
	maxPathView   = 240  // the whole path of one value
	maxValueView  = 200  // one argument value
	maxArgLines   = 40   // argument values shown
	maxArgsView   = 4000 // all argument lines together
)

// Message is the text the human reads: who wants to run what, why the
// policy asks, and a bounded view of the arguments. Its lines are exactly
//
//	mcp-gate: approve this tool call?
//	(empty)
//	Server: "<server>"
//	Tool: "<tool>"
//	Title: "<title>"                                (when the tool has one)
//	Its definition changed since it was approved (pinned <digest>, now <digest>):
//	  "<key>"."<key>"[<index>]: <before> → <after>  (when asked about a change)
//	Why you are asked: <policy text> (policy rule <rule>)
//	Arguments (<digest>):
//	  "<key>"."<key>"[<index>]: <value>             (one per value)
//	  … <n> more values not shown; the digest covers them
//
// Upstream and model strings appear only as quoted values (see quote), so
// they can neither add a line nor imitate a label, and each is bounded, so
// none can push the real lines out of view.
func Message(req Request) string {
	var b strings.Builder
	b.WriteString(MessagePrefix)
	if req.User != "" {
		b.WriteString("\n\nUser: ")
		b.WriteString(quote(req.User, maxNameView))
		if req.Email != "" {
			b.WriteString(" ")
			b.WriteString(quote(req.Email, maxNameView))
		}
		b.WriteString(" (whose call this is)")
	}
	b.WriteString("\n\nServer: ")
	b.WriteString(quote(req.Server, maxNameView))
	b.WriteString("\nTool: ")
	b.WriteString(quote(req.Tool, maxNameView))
	if req.Title != "" {
		b.WriteString("\nTitle: ")
		b.WriteString(quote(req.Title, maxNameView))
	}
	if c := req.Changed; c != nil {
		b.WriteString("\nIts definition changed since it was approved (pinned ")
		b.WriteString(bounded(oneLine(c.Pinned), 24))
		b.WriteString(", now ")
		b.WriteString(bounded(oneLine(c.Now), 24))
		b.WriteString("):\n")
		b.WriteString(ChangesView(c))
	}
	b.WriteString("\nWhy you are asked: ")
	if req.Reason != "" {
		b.WriteString(bounded(oneLine(req.Reason), maxReasonView))
	} else {
		b.WriteString("the policy asks a human before this call runs")
	}
	if req.Rule != "" {
		b.WriteString(" (policy rule ")
		b.WriteString(bounded(oneLine(req.Rule), maxNameView))
		b.WriteString(")")
	}
	b.WriteString("\nArguments")
	if req.ArgsDigest != "" {
		b.WriteString(" (")
		b.WriteString(bounded(oneLine(req.ArgsDigest), maxNameView))
		b.WriteString(")")
	}
	b.WriteString(":\n")
	b.WriteString(ArgsView(req.Args))
	return b.String()
}

// ArgsView renders arguments for a human, one line per value, each line
// "  <path>: <value>" with every key and string quoted (see quote), at most
// maxArgLines lines and about maxArgsView bytes, and a last line saying how
// many values are not shown.
func ArgsView(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return "  (none)"
	}
	var v argLines
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := walkValue(dec, nil, &v); err != nil {
		return "  (not shown: the arguments are not valid JSON)"
	}
	if v.more > 0 {
		v.lines = append(v.lines, fmt.Sprintf("  … %d more values not shown; the digest covers them", v.more))
	}
	return strings.Join(v.lines, "\n")
}

// argLines collects the lines of ArgsView.
type argLines struct {
	lines []string
	size  int // bytes of lines, newlines included
	more  int // values not shown
}

// full reports that no further line is shown: the values left are only
// counted, without their keys and values being quoted (each quote runs the
// neutraliser over the whole string, however long).
func (v *argLines) full() bool { return v.more > 0 || len(v.lines) >= maxArgLines }

func (v *argLines) add(path []string, value string) {
	p := pathView(path)
	if p == "" {
		p = "(value)"
	}
	line := "  " + p + ": " + value
	if v.full() || v.size+len(line) > maxArgsView {
		v.more++
		return
	}
	v.size += len(line) + 1
	v.lines = append(v.lines, line)
}

// pathView joins a value's path, cut after the last whole segment that
// fits maxPathView, so a cut never splits a quoted key.
func pathView(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		if b.Len()+len(seg) > maxPathView {
			b.WriteString("…")
			break
		}
		b.WriteString(seg)
	}
	return b.String()
}

// walkValue reads one value from dec and adds a line to v for each scalar
// in it (and each empty object or array), with its path; once v is full it
// only counts them.
func walkValue(dec *json.Decoder, path []string, v *argLines) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	t, ok := tok.(json.Delim)
	if !ok {
		if v.full() {
			v.more++
			return nil
		}
		v.add(path, scalarView(tok))
		return nil
	}
	n := 0
	for ; dec.More(); n++ {
		var key string
		if t == '{' {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ = k.(string)
		}
		sub := path
		if !v.full() {
			seg := fmt.Sprintf("[%d]", n)
			if t == '{' {
				seg = quote(key, maxKeyView)
				if len(path) > 0 {
					seg = "." + seg
				}
			}
			sub = append(path[:len(path):len(path)], seg)
		}
		if err := walkValue(dec, sub, v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return err
	}
	if n == 0 {
		if t == '{' {
			v.add(path, "{}")
		} else {
			v.add(path, "[]")
		}
	}
	return nil
}

// scalarView renders a string, number, boolean or null token.
func scalarView(tok json.Token) string {
	switch t := tok.(type) {
	case string:
		return quote(t, maxValueView)
	case json.Number:
		return bounded(t.String(), 40)
	case bool:
		return fmt.Sprint(t)
	}
	return "null"
}

// quote renders an untrusted string as one bounded, quoted value: hidden
// characters made visible by the guard's neutraliser, and quotes,
// backslashes, line breaks, line and paragraph separators, NEL and every
// other control or format character escaped, so the value cannot end its
// quotes, start a line, or reorder what follows it. Characters drawn like
// a quote mark are shown as code points too: a value holding
// `＂ (approved by your security team) ＂` would otherwise seem to close
// its quotes and say something in the gate's voice (guard.QuoteLike, the
// one list of them, which guard.Quote escapes too). A value longer than
// max bytes is cut, with the number of bytes not shown after the quotes.
func quote(s string, max int) string { return render(s, max, true) }

// render is quote, with the characters drawn like a quote mark escaped
// only when lookalikes is set (untrusted text).
func render(s string, max int, lookalikes bool) string {
	v, _ := guard.Neutralize(s)
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range v {
		var esc string
		switch {
		case r == '"':
			esc = `\"`
		case r == '\\':
			esc = `\\`
		case r == '\n':
			esc = `\n`
		case r == '\r':
			esc = `\r`
		case r == '\t':
			esc = `\t`
		case r == utf8.RuneError, unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs), lookalikes && guard.QuoteLike(r):
			esc = fmt.Sprintf("[U+%04X]", r)
		default:
			esc = string(r)
		}
		if b.Len()+len(esc) > max {
			b.WriteString(`…"`)
			fmt.Fprintf(&b, " (%d more bytes not shown)", len(v)-i)
			return b.String()
		}
		b.WriteString(esc)
	}
	b.WriteByte('"')
	return b.String()
}

// oneLine makes policy text safe for one line of the question: it is
// trusted, but a multi-line YAML reason or a stray control character must
// not add lines either. Its quote marks, curly or not, are the policy
// author's own and stay as written.
func oneLine(s string) string {
	q := render(s, len(s)*10+2, false)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}

// bounded cuts s at n bytes, on a character boundary, marking the cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
