package proxy

import (
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// Observer is told what the gate does, for counting (package metrics
// implements it). Options.Observer is nil unless the operator asked for
// metrics, and then every hook below is a nil comparison and nothing else:
// no clock read, no allocation (TestObserverOffAllocatesNothing,
// BenchmarkObserverOff). The hooks run on the call path, synchronously:
// an implementation must not block and must be safe for concurrent use.
//
// Every argument comes from the gate's configuration or its own vocabulary
// (server keys, rule names, verdicts, outcomes, guard finding kinds),
// never from a message: a label built from them has a bounded set of
// values. Tool names, URIs and arguments are left out on purpose.
type Observer interface {
	// Decision is the policy's verdict on one call (the first decision;
	// the re-decision after an approval is part of the approval).
	// kind is tool, prompt, resource or sampling.
	Decision(kind, server, verdict, rule string)
	// Approval is how a question to the human ended, and how long it was
	// open (0 when none was put: remembered, unsupported).
	Approval(outcome string, wait time.Duration)
	// CallDone is one decided request forwarded to server and answered
	// (or not: failed is an error instead of a result), took from before
	// it was sent to after the guard read the answer.
	CallDone(server, method string, took time.Duration, failed bool)
	// GuardRefused is one finding of the result guard that refused what an
	// upstream sent (one per finding, as in the audit log).
	GuardRefused(server, kind string)
	// SessionStarted and SessionEnded bracket one host session.
	SessionStarted()
	SessionEnded()
	// UpstreamStarted is a child started and initialised; restart says it
	// replaces one of the same server and key that crashed.
	UpstreamStarted(server string, restart bool)
	// UpstreamExited is a running child that ended; crashed says the gate
	// did not stop it.
	UpstreamExited(server string, crashed bool)
	// AuditFailed is a record that could not be written to the audit log
	// (a decision, approval, guard, elicitation or refusal record: a call
	// it would have let through is refused; a denial stands).
	AuditFailed()
	// Refused is one request refused before any decision, by the kind of
	// its refusal record (audit.RefusalKinds): counted where the record
	// is made (Gate.refusalAudit), whether or not it could be written.
	Refused(kind string)
}

// callSpan is the start of a forwarded request, when an observer wants it.
type callSpan struct{ start time.Time }

// startCall reads the clock only for an observer.
func (g *Gate) startCall() callSpan {
	if g.opts.Observer == nil {
		return callSpan{}
	}
	return callSpan{start: time.Now()}
}

// endCall reports a forwarded request begun with startCall. The hooks on
// the call path are split in two, an inlined nil check and the report,
// so that metrics off cost a comparison and not a call.
func (g *Gate) endCall(sp callSpan, server, method string, err error) {
	if g.opts.Observer != nil {
		g.callDone(sp, server, method, err)
	}
}

func (g *Gate) callDone(sp callSpan, server, method string, err error) {
	g.opts.Observer.CallDone(server, method, time.Since(sp.start), err != nil)
}

// observeAuditFailure reports a decision or approval record not written.
func (g *Gate) observeAuditFailure() {
	if g.opts.Observer != nil {
		g.opts.Observer.AuditFailed()
	}
}

// observeDecision reports the policy's verdict on call.
func (g *Gate) observeDecision(call *policy.Call, d *policy.Decision) {
	if g.opts.Observer != nil {
		g.decided(call, d)
	}
}

func (g *Gate) decided(call *policy.Call, d *policy.Decision) {
	g.opts.Observer.Decision(kindName(call.Kind), call.Server, d.Verdict.String(), d.Rule)
}

// observeApproval reports how a question ended.
func (g *Gate) observeApproval(a *elicitation.Answer) {
	if o := g.opts.Observer; o != nil {
		o.Approval(string(a.Outcome), a.Took)
	}
}

// observeSession reports a host session starting (+1) or ending (-1).
func (g *Gate) observeSession(delta int) {
	if o := g.opts.Observer; o != nil {
		if delta > 0 {
			o.SessionStarted()
		} else {
			o.SessionEnded()
		}
	}
}

// guardAudit writes a guard record and counts a refusal: every guard
// outcome goes through here, so a refusal cannot be audited and missed by
// the counters, or the reverse.
//
// who names the session and the user the record is of: a session's own
// (Session.who) or, for work shared by every session (listing), the
// gate's (gateWho). It returns the write's error, once logged and
// counted: a finding passed under log-only must not pass unrecorded
// (auditFindings).
func (g *Gate) guardAudit(who auditWho, rec audit.Guard) error {
	rec.Session, rec.User = who.session, who.user
	err := g.audit.Guard(rec)
	if o := g.opts.Observer; o != nil && rec.Outcome == "refused" {
		o.GuardRefused(rec.Server, rec.Kind)
	}
	if err != nil {
		g.log.Error("audit record not written", "session", rec.Session, "server", rec.Server,
			"record", "guard", "error", audit.Redact(err.Error()))
		g.observeAuditFailure()
	}
	return err
}

// auditWho is whom a guard record is of: a session and the user it acts
// for.
type auditWho struct{ session, user string }

// gateWho names the gate itself, for what no one session owns.
func (g *Gate) gateWho() auditWho { return auditWho{session: g.id} }

// who names the session and its user, which README promises every guard
// line of a session carries (the Gate's methods that write them are
// handed it, since a Gate method cannot see the session's userAudit).
func (g *Session) who() auditWho { return auditWho{session: g.session, user: g.identity.Subject} }

// upstreamExited is the pool's OnExit: a crash or a deliberate stop.
func (g *Gate) upstreamExited(s *upstream.Session, err error) {
	if o := g.opts.Observer; o != nil {
		o.UpstreamExited(s.Name, err != nil)
	}
}

// observeUpstreamStart reports a child started (the pool's OnStart).
func (g *Gate) observeUpstreamStart(s *upstream.Session) {
	if o := g.opts.Observer; o != nil {
		o.UpstreamStarted(s.Name, s.Restart)
	}
}
