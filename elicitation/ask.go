// Package elicitation asks the human at the host to approve one tool call,
// through an MCP form elicitation that the gate itself sends, and fails
// closed: only an explicit "accept" with approve set to true lets the call
// through. Decline, cancel, an error, a malformed answer, a timeout, a
// withdrawn call and a host that cannot ask all mean no (DESIGN.md §5).
//
// The approval is bound to the call: the gate holds the call's exact bytes
// while it asks and forwards exactly those, so an answer can never cover a
// different call. Approval never comes from anything but the host's answer
// to the gate's own request; an upstream cannot reach this exchange.
package elicitation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-gate/mcp-gate/guard"
)

// DefaultTimeout bounds a question nobody answers, when the policy says
// nothing: a pending approval must never park a call forever.
const DefaultTimeout = 2 * time.Minute

// MessagePrefix starts every approval prompt the gate sends. The result
// guard refuses upstream elicitations that imitate it.
const MessagePrefix = "mcp-gate: approve this tool call?"

// maxArgsView bounds the arguments shown to the human, in bytes.
const maxArgsView = 2000

// Host is the part of the host connection the asker needs. Call must be safe
// for concurrent use and must return when ctx is done (telling the host the
// request is cancelled, so its dialog closes).
type Host interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Request is the call the human is asked about.
type Request struct {
	Server     string
	Tool       string          // the upstream's tool name
	Args       json.RawMessage // the arguments exactly as they will be forwarded
	ArgsDigest string
	Rule       string // the policy rule that asked
	Reason     string
	// Titled selects the 2025-11-25 form of a titled enum (oneOf/const);
	// older hosts get enum with enumNames.
	Titled bool
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
// accept with approve == true is a no.
func Interpret(res json.RawMessage) Answer {
	var r struct {
		Action  string                     `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(res))
	if err := dec.Decode(&r); err != nil {
		return Answer{Outcome: Malformed, Detail: "the host's answer is not an elicitation result"}
	}
	switch r.Action {
	case "decline":
		return Answer{Outcome: Declined, Detail: "declined by the user"}
	case "cancel":
		return Answer{Outcome: Cancelled, Detail: "the user dismissed the question without answering"}
	case "accept":
	default:
		return Answer{Outcome: Malformed, Detail: fmt.Sprintf("the host answered with action %q; expected accept, decline or cancel", r.Action)}
	}
	approve, ok := r.Content["approve"]
	if !ok {
		return Answer{Outcome: Malformed, Detail: "the answer has no approve field"}
	}
	switch string(approve) {
	case "true":
	case "false":
		return Answer{Outcome: Declined, Detail: "the user answered no"}
	default:
		// A string "true" is not consent: the form asked for a boolean.
		return Answer{Outcome: Malformed, Detail: fmt.Sprintf("approve is %s; expected the boolean true or false", truncate(string(approve), 40))}
	}
	scope := "once"
	if raw, ok := r.Content["scope"]; ok {
		if err := json.Unmarshal(raw, &scope); err != nil || (scope != "once" && scope != "session") {
			return Answer{Outcome: Malformed, Detail: fmt.Sprintf("scope is %s; expected \"once\" or \"session\"", truncate(string(raw), 40))}
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
		"description": "Approve only this call, or every call of this tool until the session ends or the policy changes.",
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
	p := map[string]any{
		"mode":    "form",
		"message": Message(req),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				// A required boolean with no default: an empty or
				// auto-filled form can never amount to a yes.
				"approve": map[string]any{
					"type":        "boolean",
					"title":       "Approve this call",
					"description": "Yes lets this one call run. No refuses it.",
				},
				"scope": scope,
			},
			"required": []string{"approve"},
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

// Message is the text the human reads: who wants to run what, why the
// policy asks, and a bounded, escaped view of the arguments.
func Message(req Request) string {
	var b strings.Builder
	b.WriteString(MessagePrefix)
	b.WriteString("\n\nServer: ")
	b.WriteString(visible(req.Server))
	b.WriteString("\nTool: ")
	b.WriteString(visible(req.Tool))
	if req.Reason != "" {
		b.WriteString("\nWhy you are asked: ")
		b.WriteString(visible(req.Reason))
	}
	if req.Rule != "" {
		b.WriteString(" (policy rule ")
		b.WriteString(visible(req.Rule))
		b.WriteString(")")
	}
	b.WriteString("\nArguments")
	if req.ArgsDigest != "" {
		b.WriteString(" (")
		b.WriteString(req.ArgsDigest)
		b.WriteString(")")
	}
	b.WriteString(":\n")
	b.WriteString(ArgsView(req.Args))
	return b.String()
}

// ArgsView renders arguments for a human: indented JSON (which escapes
// control characters), hidden characters made visible, cut at a bound with
// a note of how much is not shown.
func ArgsView(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return "(none)"
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, args, "", "  "); err != nil {
		ind.Reset()
		ind.Write(args)
	}
	s, _ := guard.Neutralize(ind.String())
	if len(s) <= maxArgsView {
		return s
	}
	cut := maxArgsView
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes not shown; the digest above covers all of them)", len(s)-cut)
}

// visible renders a one-line value (a server or tool name, a rule) for the
// question: hidden characters made visible, and line breaks, tabs and line
// separators escaped, so that a name cannot add lines of its own to the
// question ("Why you are asked: safe to approve") or push the real ones out
// of view.
func visible(s string) string {
	v, _ := guard.Neutralize(s)
	if strings.ContainsAny(v, "\r\n\t\u2028\u2029") {
		v = lineBreaks.Replace(v)
	}
	return v
}

var lineBreaks = strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", `\t`, "\u2028", "[U+2028]", "\u2029", "[U+2029]")

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
