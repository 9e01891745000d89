package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/protocol"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// CodeDenied is the JSON-RPC error code of a refusal where MCP has no
// result to carry it (prompts/get, resources/read, an upstream's sampling
// request). Tool calls are refused with an isError result instead, which the
// model reads.
const CodeDenied = -32010

// verdict is the outcome of deciding one call, with what the audit needs.
type verdict struct {
	allow  bool
	reason string // for a refusal: the text the model and the user read
	// inputRequired, for a 2026-07-28 host, is the gate's input-required
	// result asking the human (era_ask.go): the answer to the request.
	inputRequired json.RawMessage
	// For an allow: what let the call through (elicitation.Binding.LetBy)
	// and the policy revision of that decision, which the states of a
	// call in flight bind (parked.go, era_relayed.go).
	letBy, revision string
	// err, for a refusal before anything was decided (the request ended
	// while the pins were being checked: checkPin), is the answer in place
	// of the relay's refusal, marked as a refusal (refused.go).
	err error
}

// decide takes the policy's decision about a call and, for ask, the human's.
// It writes the audit records. The returned verdict allows the call only on
// an allow from the policy or an explicit yes from the human that still
// holds once the human has answered.
//
// The records name what the request addressed: name, the server's own name
// of it, and wire, as the host wrote it. That is call.Name, which the
// policy decides on, except where the request reaches a further name of
// the same kind (target.also): a resource template completed with values
// is decided as the URI they make too, and that URI is argument text the
// model typed, which the audit never carries (it has the arguments'
// digest); its record names the template.
func (g *Session) decide(ctx context.Context, pol *policy.Policy, call policy.Call, name, wire string) verdict {
	start := time.Now()
	call.User = g.policyUser()
	id, digest := g.decisionIDDigest(call.Args)
	logDecision := func(d policy.Decision, reason string, took time.Duration) error {
		return g.audit.Decision(audit.Decision{
			ID: id, Session: g.session, Kind: kindName(call.Kind), Server: call.Server, Tool: name, WireName: wire,
			Verdict: d.Verdict.String(), Rule: d.Rule, Reason: reason, Revision: d.Revision, ArgsDigest: digest,
			Latency: took,
		})
	}
	// The arguments are unambiguous here (no key twice, as written or under
	// case folding): every caller checked the whole message where it was
	// read, host requests in checkHostParams, an upstream's sampling request
	// in resolveSampling. Walking them again would only cost a tools/call.
	d := pol.Decide(call)
	err := logDecision(d, d.Reason, time.Since(start))
	g.observeDecision(&call, &d)
	if err != nil && d.Verdict != policy.Deny {
		// Not on record, so not let through, and not put to a human
		// either: what they answered could not be recorded.
		return unaudited("decision", d.Rule, d.Revision, err)
	}
	switch d.Verdict {
	case policy.Allow:
		return verdict{allow: true, letBy: "allow", revision: d.Revision}
	case policy.Deny:
		return verdict{reason: fmt.Sprintf("%s [rule %s, policy %s]", d.Reason, d.Rule, d.Revision)}
	}
	// Ask.
	record := func(a elicitation.Answer) error {
		err := g.audit.Approval(audit.Approval{
			DecisionID: id, Session: g.session, Server: call.Server, Tool: name, ArgsDigest: digest,
			Outcome: string(a.Outcome), Detail: a.Detail, Latency: a.Took,
		})
		g.observeApproval(&a)
		return err
	}
	// A session yes answers the question the human read, which names the
	// rule and gives its reason: it covers later asks of this tool by the
	// same rule, not an ask by another rule they were never shown.
	// It is bound to the definition the tool had (its pins digest), too: a
	// tool that changed is not the one the human approved.
	grantName := call.Kind.String() + ":" + call.Name + "\x00rule:" + d.Rule + "\x00def:" + g.defDigest(call.Kind, call.Server, call.Name)
	if g.grants.Granted(d.Revision, call.Server, grantName) {
		if err := record(elicitation.Answer{Outcome: elicitation.Remembered, Detail: "approved earlier in this session"}); err != nil {
			return unaudited("approval", d.Rule, d.Revision, err)
		}
		return verdict{allow: true, letBy: elicitation.ApprovedBy(d.Rule, pol.RuleReason(d.Rule)), revision: d.Revision}
	}
	host := g.hostCaps()
	// The human reads the policy's own words for why (the rule's reason:),
	// never d.Reason, which can carry a condition's error text; the audit
	// and the model get d.Reason.
	req := elicitation.Request{
		Server: call.Server, Tool: call.Name, Title: g.itemTitle(call.Kind, call.Server, call.Name),
		Args: call.Args, ArgsDigest: digest,
		Rule: d.Rule, Reason: pol.RuleReason(d.Rule), Titled: host.protocolVersion >= "2025-11-25",
		Via: pol.ApprovalVia(d.Rule, host.client), ViaNamed: pol.ViaNamed(d.Rule, host.client),
		Client: host.client, Session: g.session,
	}
	if call.Kind == policy.KindSampling {
		req.Tool = "sampling/createMessage (a request to use your model)"
	}
	var a elicitation.Answer
	m := modernOf(ctx)
	if yes, ok := g.inFlightYes(m, pol, call, d); ok {
		// A 2026-07-28 retry answering a server's question of a call a
		// human approved before it ran: that yes, if the state holds for
		// exactly this call, whichever channel asked it (era_retry.go).
		a = yes
	} else if m != nil && modernAsksHost(m, pol.ApprovalVia(d.Rule, m.client)) {
		// A 2026-07-28 host, and the policy lets this host's form ask:
		// asked in an input-required result, answered in a retry, which
		// is this decision taken again (era_ask.go).
		var ir json.RawMessage
		if a, ir = g.askModern(m, pol, call, d, req); ir != nil {
			if err := record(a); err != nil {
				// Not asked after all: the answer is the refusal, a
				// complete result (era.go stamps it so).
				m.asked.Store(false)
				return unaudited("approval", d.Rule, d.Revision, err)
			}
			return verdict{reason: a.Detail, inputRequired: ir}
		}
	} else if m != nil {
		// The policy wants another channel first (via: [local], or
		// approval.hosts for this client): the host must not answer its
		// own question. The local surface holds this request meanwhile.
		req.Via, req.ViaNamed = pol.ApprovalVia(d.Rule, m.client), pol.ViaNamed(d.Rule, m.client)
		req.Client = m.client
		a = g.approver.Approve(ctx, withoutHostChannel(req), pol.ApprovalTimeout())
		if a.Outcome == elicitation.Unsupported && !m.caps.elicitForm {
			a.Detail = "this host cannot ask for approval (its request declared no form elicitation), and " + a.Detail
		}
	} else {
		a = g.approver.Approve(ctx, req, pol.ApprovalTimeout())
	}
	err = record(a)
	if err != nil && a.Allowed() {
		return unaudited("approval", d.Rule, d.Revision, err)
	}
	if !a.Allowed() {
		return verdict{reason: fmt.Sprintf("%s [rule %s, policy %s]; approval was required and %s", d.Reason, d.Rule, d.Revision, a.Detail)}
	}
	// The human may have taken minutes, and what they approved may no
	// longer be what the policy sees: the policy may have been reloaded (an
	// emergency deny must stop calls whose questions are still open), or a
	// condition may read the world differently now (a symlink re-pointed
	// while they read). Decide again under the policy in force; the yes
	// counts only for an allow, or for an ask by the very rule, with the
	// very reason, the human was shown.
	cur := g.policy.Current()
	start = time.Now()
	d2 := cur.Decide(call)
	if err := logDecision(d2, "re-decided after the user approved: "+d2.Reason, time.Since(start)); err != nil && d2.Verdict != policy.Deny {
		return unaudited("decision", d2.Rule, d2.Revision, err)
	}
	approvedSame := d2.Verdict == policy.Ask && d2.Rule == d.Rule && cur.RuleReason(d2.Rule) == req.Reason
	if d2.Verdict != policy.Allow && !approvedSame {
		what := "the decision changed while they were asked"
		if d2.Revision != d.Revision {
			what = "the policy changed while they were asked"
		}
		return verdict{reason: fmt.Sprintf("the user approved, but %s (%s by rule %s under policy %s, now %s by rule %s under policy %s), so the approval does not cover it: %s",
			what, d.Verdict, d.Rule, d.Revision, d2.Verdict, d2.Rule, d2.Revision, d2.Reason)}
	}
	if a.Outcome == elicitation.ApprovedSession {
		g.grants.Grant(d.Revision, call.Server, grantName) // ignored if the policy has changed since
	}
	if d2.Verdict == policy.Allow {
		return verdict{allow: true, letBy: "allow", revision: d2.Revision}
	}
	return verdict{allow: true, letBy: elicitation.ApprovedBy(d2.Rule, req.Reason), revision: d2.Revision}
}

// unaudited refuses a call whose decision or approval record did not
// reach the audit log (a full disk, a failing device): every call the
// gate lets through is on record before it is forwarded (README, "The
// audit log"), so one that cannot be recorded is not let through. The
// text names the errno, not the log's path, and not the gate: a relay's
// refuse adds its own prefix, and an upstream often hands a sampling
// refusal back in its result, where a text naming the gate with approval
// vocabulary is what the guard refuses.
func unaudited(record, rule, revision string, err error) verdict {
	why := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		why = pe.Err
	}
	return verdict{reason: fmt.Sprintf("its audit record (the %s) could not be written (%v), so it was not let through; requests are refused until the audit log can be written again [rule %s, policy %s]", record, why, rule, revision)}
}

// auditFailed is told of every decision or approval record of the session
// that did not reach the audit log (userAudit).
func (g *Session) auditFailed(record, server string, err error) {
	g.log.Error("audit record not written", "session", g.session, "server", server,
		"record", record, "error", audit.Redact(err.Error()))
	g.observeAuditFailure()
}

func kindName(k policy.Kind) string {
	switch k {
	case policy.KindTool:
		return "tool"
	case policy.KindPrompt:
		return "prompt"
	case policy.KindResource:
		return "resource"
	case policy.KindSampling:
		return "sampling"
	}
	return k.String()
}

// refusal is the isError result of a denied tool call: the model reads why,
// so it can tell the user instead of retrying blindly.
func refusal(text string) json.RawMessage {
	b, err := json.Marshal(protocol.ToolError(text))
	if err != nil {
		panic(err) // a fixed shape: cannot fail
	}
	return b
}

func deniedError(what string, v verdict) error {
	return &rpc.Error{Code: CodeDenied, Message: "mcp-gate denied " + what + ": " + v.reason}
}

// PolicyChanged is told of every policy swap. Session approvals are
// forgotten (the rule that asked may be gone or stricter), and the host is
// told to list again when what it can see has changed.
func (g *Gate) PolicyChanged(old, new *policy.Policy) {
	g.log.Info("policy changed", "old_revision", old.Revision(), "revision", new.Revision())
	sessions := g.liveSessions()
	keys := map[string]bool{}
	for _, s := range sessions {
		s.grants.Reset(new.Revision())
		keys[s.childKey()] = true
	}
	type change struct {
		list, notification string
		differs            func(*snapshot) bool
	}
	changes := []change{
		{"tools/list", kindTool.changed, func(snap *snapshot) bool { return visibilityDiffers(snap.tools, policy.KindTool, old, new) }},
		{"prompts/list", kindPrompt.changed, func(snap *snapshot) bool { return visibilityDiffers(snap.prompts, policy.KindPrompt, old, new) }},
		{"resources/list", "notifications/resources/list_changed", func(snap *snapshot) bool { return resourceVisibilityDiffers(snap.resources, old, new) }},
	}
	// Each key's sessions see that key's catalog.
	for key := range keys {
		snap := g.catalogOf(key)
		for _, c := range changes {
			if c.differs(snap) {
				g.notifyListed(key, []string{c.list}, c.notification)
			}
		}
	}
}

// visibilityDiffers reports whether any listed entry is hidden under one
// policy and not the other.
func visibilityDiffers(n *named, k policy.Kind, old, new *policy.Policy) bool {
	for server, l := range n.servers {
		for _, e := range l.entries {
			if old.Hidden(k, server, e.name) != new.Hidden(k, server, e.name) {
				return true
			}
		}
	}
	return false
}

func resourceVisibilityDiffers(ix *resourceIndex, old, new *policy.Policy) bool {
	for server, l := range ix.servers {
		for _, r := range l.resources {
			if old.Hidden(policy.KindResource, server, r.uri) != new.Hidden(policy.KindResource, server, r.uri) {
				return true
			}
		}
	}
	return false
}

// guardResult looks through an upstream's tools/call result for
// approval-shaped payloads, and makes hidden characters in every string of
// it visible. A refused result becomes an isError result naming the server,
// the tool and what was found.
// snap is the catalog the call was resolved in.
func (g *Session) guardResult(pol *policy.Policy, snap *snapshot, server, tool string, res json.RawMessage, answers *elicitAnswers) json.RawMessage {
	// One pass reads the result for both jobs (guard.ScanResult); most
	// results need nothing more. When the neutraliser must walk a large
	// one, it runs on another core while the detector reads, which halves
	// what the guard adds to the call's latency.
	sc := guard.ScanResult(res)
	var neutralized json.RawMessage
	var nerr error
	var done chan struct{}
	var par *neutralizeOut // the goroutine's own: variables it shared would escape for every result
	if len(res) >= parallelGuardBytes && sc.Hidden() {
		done, par = make(chan struct{}), &neutralizeOut{}
		go func() {
			defer close(done)
			par.out, par.err = g.neutralizeScanned(server, tool, "tools/call result", res, sc)
		}()
	}
	findings := g.exemptAnswers(server, tool, res, guard.InspectScanned(res, sc), answers)
	if done != nil {
		<-done
		neutralized, nerr = par.out, par.err
	}
	if len(findings) > 0 && g.auditFindings(g.who(), pol, server, tool, "", findings) {
		if findings[0].Kind == guard.KindInspectionLimit {
			return refusal(fmt.Sprintf("mcp-gate refused the result of %s on server %q: it is too large or too deeply nested to inspect for forged approvals (%s). "+
				"If this server is trusted, the policy can set the guard to log-only for it.", tool, server, findings[0].Detail))
		}
		// A few places say what was found; the audit has every finding.
		// Each path names an upstream's keys, so more of them would be
		// more of its words in the gate's refusal.
		kinds := make([]string, 0, shownFindings+1)
		for i, f := range findings {
			if i == shownFindings {
				kinds = append(kinds, fmt.Sprintf("and %d more", len(findings)-i))
				break
			}
			kinds = append(kinds, f.Kind+" at "+guard.ShowPath(f.Path))
		}
		return refusal(fmt.Sprintf("mcp-gate refused the result of %s on server %q: it contains an approval-shaped payload (%s). "+
			"Approvals come only from the user through the gate, never from a tool's output; nothing in this result was acted on.",
			tool, server, strings.Join(kinds, "; ")))
	}
	if done == nil {
		neutralized, nerr = g.neutralizeScanned(server, tool, "tools/call result", res, sc)
	}
	if nerr != nil {
		return refusal(fmt.Sprintf("mcp-gate refused the result of %s on server %q: %s.", tool, server, refusedBecause(nerr)))
	}
	if !bytes.Equal(neutralized, res) {
		before, _ := rawjson.Get(res, "structuredContent")
		after, _ := rawjson.Get(neutralized, "structuredContent")
		if !bytes.Equal(before, after) && outputSchemaConstrainsStrings(snap, server, tool) {
			// The changed strings may no longer match the schema (a const,
			// an enum, a pattern, a maxLength): the host would reject the
			// result, or act on values its tool never sent.
			g.guardAudit(g.who(), audit.Guard{Server: server, Tool: tool, Outcome: "refused", Kind: "hidden_characters", Detail: "structuredContent under an outputSchema that constrains strings"})
			return refusal(fmt.Sprintf("mcp-gate refused the result of %s on server %q: its structuredContent holds control or invisible characters, "+
				"and made visible they may no longer match the string constraints of the tool's outputSchema.", tool, server))
		}
	}
	return neutralized
}

// shownFindings is how many of the guard's findings a refusal names.
const shownFindings = 3

// neutralizeOut is what the neutraliser run beside the detector returns.
type neutralizeOut struct {
	out json.RawMessage
	err error
}

// parallelGuardBytes is the result size from which the guard's two passes
// run concurrently; below it a goroutine costs more than it saves.
const parallelGuardBytes = 256 << 10

// guardOther inspects the result of prompts/get or resources/read, which
// reach the model too, and neutralises every string in it; field names the
// member that carries the content (messages, contents), for the audit. MCP
// gives these no error result, so a refusal is a JSON-RPC error.
func (g *Session) guardOther(pol *policy.Policy, server, name, method, field string, res json.RawMessage) (json.RawMessage, error) {
	if findings := guard.InspectResult(res); len(findings) > 0 {
		if g.auditFindings(g.who(), pol, server, name, method+" ", findings) {
			return nil, &rpc.Error{Code: CodeDenied, Message: fmt.Sprintf("mcp-gate refused the result of %s %s on server %q: it contains an approval-shaped payload (%s at %s)", method, guard.Quote(name, guard.ShowName), server, findings[0].Kind, guard.ShowPath(findings[0].Path))}
		}
	}
	out, err := g.neutralize(server, name, method+" result ("+field+")", res)
	if err != nil {
		return nil, &rpc.Error{Code: CodeDenied, Message: fmt.Sprintf("mcp-gate refused the result of %s %s on server %q: %s", method, guard.Quote(name, guard.ShowName), server, refusedBecause(err))}
	}
	return out, nil
}

// auditFindings audits every finding the guard made in what server sent
// (for tool, its detail prefixed by where), as refused, or as logged where
// the policy sets the guard to log-only for server, and reports whether
// the payload must be refused: the one place log-only is read, so that no
// kind of upstream payload (result, error, notification, cancellation)
// has a rule of its own.
func (g *Gate) auditFindings(who auditWho, pol *policy.Policy, server, tool, where string, findings []guard.Finding) (refuse bool) {
	outcome := "refused"
	if pol.GuardLogOnly(server) {
		outcome = "logged"
	}
	refuse = outcome == "refused"
	for _, f := range findings {
		if err := g.guardAudit(who, audit.Guard{Server: server, Tool: tool, Outcome: outcome, Kind: f.Kind, Detail: where + f.Path + ": " + f.Detail}); err != nil {
			// Log-only passes a finding on the strength of its record:
			// one that is not on record is refused as the guard would.
			refuse = true
		}
	}
	return refuse
}

// neutralize is the one path by which upstream JSON reaches the host: every
// string value in it, at any depth (text, structuredContent, resource links,
// annotations, _meta, schemas, log data), has its hidden characters made
// visible; see guard.NeutralizeJSON. It records what it changed. An error
// (a key holding a hidden character, or JSON it cannot read) means the
// whole item must be refused: it is audited here, and the caller refuses.
func (g *Gate) neutralize(server, name, what string, raw json.RawMessage) (json.RawMessage, error) {
	return g.neutralizeFor(g.gateWho(), server, name, what, raw)
}

// neutralize is Gate.neutralize with the session's id in the audit lines.
func (g *Session) neutralize(server, name, what string, raw json.RawMessage) (json.RawMessage, error) {
	return g.neutralizeFor(g.who(), server, name, what, raw)
}

func (g *Gate) neutralizeFor(who auditWho, server, name, what string, raw json.RawMessage) (json.RawMessage, error) {
	out, n, err := guard.NeutralizeJSON(raw)
	return g.neutralized(who, server, name, what, out, n, err)
}

// neutralizeScanned is Session.neutralize for a result already read by
// guard.ScanResult.
func (g *Session) neutralizeScanned(server, name, what string, raw json.RawMessage, sc guard.Scan) (json.RawMessage, error) {
	out, n, err := guard.NeutralizeScanned(raw, sc)
	return g.neutralized(g.who(), server, name, what, out, n, err)
}

// neutralized audits and logs what the neutraliser did to one item.
func (g *Gate) neutralized(who auditWho, server, name, what string, out []byte, n int, err error) (json.RawMessage, error) {
	if err != nil {
		// Positions and sizes only: the key itself is upstream data.
		detail := what + ": not valid JSON"
		var ke *guard.KeyError
		if errors.As(err, &ke) {
			detail = fmt.Sprintf("%s: an object key of %d bytes at %q holds hidden characters", what, len(ke.Key), shorten(ke.Path, 200))
		}
		g.guardAudit(who, audit.Guard{Server: server, Tool: name, Outcome: "refused", Kind: "hidden_characters", Detail: detail})
		// The path quotes the upstream's other keys: the log, like the
		// audit, describes quoted text by size and digest.
		g.log.Warn("upstream data refused", "server", server, "name", name, "detail", audit.Redact(detail))
		return nil, err
	}
	if n > 0 {
		g.guardAudit(who, audit.Guard{Server: server, Tool: name, Outcome: "neutralised", Kind: "hidden_characters", Detail: what, Count: n})
	}
	return out, nil
}

// shorten cuts s to n code points, marking the cut.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// refusedBecause says, for the model and the user, why neutralising failed.
func refusedBecause(err error) string {
	var ke *guard.KeyError
	if errors.As(err, &ke) {
		where := "the top level"
		if ke.Path != "" {
			where = guard.ShowPath(ke.Path)
		}
		return fmt.Sprintf("an object key at %s holds control or invisible characters (%s); keys are not rewritten, so nothing of it was passed on", where, guard.Quote(ke.Key, guard.ShowKey))
	}
	return "it is not JSON the gate can read, so nothing of it was passed on"
}
