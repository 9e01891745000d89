package proxy

import (
	"errors"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// A host request that reaches an upstream through the pipeline can be
// refused before the policy decides it: its params read two ways
// (checkHostParams), it came before initialize, its 2026-07-28 envelope
// is wrong, the gate has nothing to offer (refuseInTrouble), it names
// nothing the gate lists or its params cannot be read (a relay's
// resolve), it ended while its name or the definition its pin holds it to
// was looked up (resolve, checkPin), its line is not a message at all
// (rpc's bad input). Each is
// answered with the JSON-RPC error it always was, and each has one
// refusal record in the audit log (audit.Refusal), so that the audit
// shows every request the gate refused and why, not only those a rule
// refused.
//
// The stages that refuse mark their error (refusedAs); the one place the
// record is written is hostHandler.HandleCall, which sees every host
// request's answer, so a request has one record whichever stage refused
// it, and a refusal added to any of them later is marked where it is made.
// Nothing of this runs for a request that is answered: an allowed call
// pays one nil check.

// refusedBefore is a host request's refusal before any policy decision,
// with what the record says of it. It wraps the error the host gets, and
// is taken off before the answer is written.
type refusedBefore struct {
	kind string // the record's kind: what class of refusal
	wire string // the name the host wrote, when one was read
	err  error
}

func (e *refusedBefore) Error() string { return e.err.Error() }
func (e *refusedBefore) Unwrap() error { return e.err }

// refusedAs marks err, a refusal of kind before any decision; a nil err
// stays nil, and an error already marked keeps its mark (the stage that
// made it knew best).
func refusedAs(kind, wire string, err error) error {
	if err == nil {
		return nil
	}
	var rb *refusedBefore
	if errors.As(err, &rb) {
		return err
	}
	return &refusedBefore{kind: kind, wire: wire, err: err}
}

// Refusal kinds, the record's "kind" (audit.RefusalKinds, which says
// what each is).
const (
	refusedMalformed      = audit.RefusalMalformed      // rpc's bad input
	refusedAmbiguous      = audit.RefusalAmbiguous      // checkHostParams
	refusedNotInitialized = audit.RefusalNotInitialized // before initialize
	refusedEnvelope       = audit.RefusalEnvelope       // a 2026-07-28 request's envelope, retry members or era
	refusedUnavailable    = audit.RefusalUnavailable    // refuseInTrouble
	refusedInvalidParams  = audit.RefusalInvalidParams  // a relay's resolve
	refusedUnknownName    = audit.RefusalUnknownName    // a relay's resolve
	refusedNotLookedUp    = audit.RefusalNotLookedUp    // a relay's resolve, checkPin
	refusedUnresolved     = audit.RefusalUnresolved     // any other refusal of a relay's resolve
	refusedNoSession      = audit.RefusalNoSession      // a front end's, before any session
)

// auditsRefusal says whether a refused request of method gets a refusal
// record: every method served through the pipeline (hostMethods' relays),
// and a request whose method could not be read. The gate's own methods
// (lists, ping, logging) reach no upstream's tool, prompt or resource.
func auditsRefusal(method string) bool {
	return method == "" || hostMethods[method].relay != nil
}

// auditRefused writes the refusal record of a host request of method
// whose answer is err, when err is marked (refusedAs), and returns the
// error the host gets: err without the mark. A record that cannot be
// written is logged; the request is refused either way.
func (g *Session) auditRefused(method string, err error) error {
	var rb *refusedBefore
	if !errors.As(err, &rb) {
		return err
	}
	if auditsRefusal(method) {
		g.writeRefusal(audit.Refusal{Method: method, Kind: rb.kind, WireName: rb.wire, Reason: rb.err.Error()})
	}
	if err == rb {
		return rb.err
	}
	return err // wrapped further: the mark stays, and the Conn reads through it
}

// writeRefusal writes one refusal record of the session, naming it and
// the user it acts for (refusalAudit).
func (g *Session) writeRefusal(rec audit.Refusal) {
	g.Gate.refusalAudit(g.who(), rec)
}

// refusalAudit writes a refusal record of who and counts it by kind
// (Observer.Refused). Every refusal record is made here, a session's
// (writeRefusal: HandleCall's, the host Conn's bad input) and a front
// end's before any session (RefusedBeforeSession), so that the log and
// the counter cannot disagree, as guardAudit does for the guard's. A
// record not written is logged and counted as an audit failure; the
// request is refused either way.
func (g *Gate) refusalAudit(who auditWho, rec audit.Refusal) {
	rec.Session, rec.User = who.session, who.user
	err := g.audit.Refusal(rec)
	if o := g.opts.Observer; o != nil {
		o.Refused(rec.Kind)
	}
	if err != nil {
		g.log.Error("audit record not written", "session", rec.Session, "record", "refusal", "error", audit.Redact(err.Error()))
		g.observeAuditFailure()
	}
}

// badHostInput is the host Conn's OnBadInput: a line from the host that
// was not a message the gate could serve (not JSON, too large, not
// JSON-RPC), answered with its error by the Conn once this returns, or a
// request dropped for reusing the id of one in progress. The Conn runs it
// off its read loop (rpc.Options.OnBadInput), so a record that waits for
// the audit log (a stalled pipe, up to 10 s) holds up none of the host's
// later requests and cancellations, and it still precedes the answer.
func (g *Session) badHostInput(me *rpc.MessageError) {
	if !auditsRefusal(me.Method) {
		return
	}
	g.writeRefusal(audit.Refusal{Method: me.Method, Kind: refusedMalformed, Reason: me.Reason})
}

// The kinds a front end gives RefusedBeforeSession.
const (
	RefusedMalformed = refusedMalformed // a body that is not a message, or too large to read
	RefusedEnvelope  = refusedEnvelope  // a 2026-07-28 request's envelope, or the headers mirroring it
	RefusedNoSession = refusedNoSession // a request that reached no session it may use
)

// RefusedBeforeSession records a request of method ("" when it could not
// be read) that a front end refused before it reached any session, for
// the user it came from, as a session records its own refusals: a refusal
// record of kind, without a session, for the pipeline's methods. A run of
// RefusedNoSession from one user is what guessing session ids looks like.
func (g *Gate) RefusedBeforeSession(id Identity, method, kind, reason string) {
	if !auditsRefusal(method) {
		return
	}
	g.refusalAudit(auditWho{user: id.Subject}, audit.Refusal{Method: method, Kind: kind, Reason: reason})
}
