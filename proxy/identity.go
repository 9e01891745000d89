package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/user"
	"slices"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/policy"
)

// An Identity is who a host session acts for. The stdio command's session
// is the OS user running the gate (OSUser); an HTTP front end's sessions
// will carry the subject, email and groups of their token. Upstream
// children are never shared between identities: what one user's child
// remembers, caches or is logged in as stays that user's.
type Identity struct {
	Subject string   // who, as the authority that vouched for it names them ("uid:1000", a token's sub)
	Name    string   // for logs: the user name, "" when unknown
	Email   string   // a token's email, "" in stdio mode
	Groups  []string // a token's groups; none in stdio mode
	// Authenticated is set for an identity a bearer token vouched for (the
	// HTTP front end with an authenticator): one of a team's users, not the
	// human running the gate. What such a user answers or causes stays
	// theirs: their yes to a changed definition accepts it for them alone,
	// never the gate's pins (checkPin); their questions name them and reach
	// the local approval surface only where the policy names it
	// (teamApprover); their catalog cache entries are their own
	// (cacheScope). It takes no part in Key: one process serves either
	// kind, never both.
	Authenticated bool
}

// Key is a stable string naming the identity: equal identities (groups in
// any order) have equal keys, and any difference in subject, email or
// groups gives another. Name is a label and takes no part.
func (id Identity) Key() string {
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	b, _ := json.Marshal([]any{id.Subject, id.Email, groups})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// OSUser is the identity of the OS user running the gate: its uid, and its
// name when the system can say; no groups, since a stdio host is that user
// whatever groups it is in.
func OSUser() Identity {
	u, err := user.Current()
	if err != nil {
		return Identity{Subject: "uid:unknown"}
	}
	return Identity{Subject: "uid:" + u.Uid, Name: u.Username}
}

// A SessionOption configures a Session.
type SessionOption func(*Session)

// WithIdentity sets who the session acts for (the zero Identity, an
// anonymous one, when not given).
func WithIdentity(id Identity) SessionOption {
	return func(s *Session) { s.identity = id }
}

// poolKey is the key of the upstream children a session uses: its
// identity and its upstream-facing profile, the capabilities the gate
// passes upstream in initialize (caps, compacted JSON). Sessions with equal
// keys share children; any difference gives the session children of its
// own, so a child started for a host that can sample never sends a
// sampling request to one that cannot, and one user's child never asks
// another's host.
//
// A host that declares roots has children of its own (its session id is in
// the key): its roots are its host's answer to roots/list, which may differ
// between hosts of one user and change at any time, so the only child that
// may ask it for them, and act on them, is one nobody else shares.
//
// The key is short and printable, for logs: the identity's key and a hash
// of the profile.
func poolKey(id Identity, caps json.RawMessage, roots bool, session string) string {
	profile := string(caps)
	if roots {
		profile += "\x00session:" + session
	}
	sum := sha256.Sum256([]byte(profile))
	return id.Key() + "-" + hex.EncodeToString(sum[:8])
}

// policyUser is the user the policy's conditions read for the session's
// calls.
func (s *Session) policyUser() policy.User {
	return policy.User{Sub: s.identity.Subject, Email: s.identity.Email, Groups: s.identity.Groups}
}

// userAudit is a session's view of the audit log: every record it writes
// names the user the session acts for. It shadows the Gate's logger in the
// session's methods, so that no record of a session can leave the user
// out, whoever adds one.
//
// It is also where a decision or approval record that did not reach the
// log is noticed (failed: logged and counted, whatever the verdict, so
// that a disk filling while only denials flow is seen too); what the call
// then gets is its caller's to decide (unaudited).
type userAudit struct {
	// Refusal shadows the Logger's method, so that a session's
	// refusal record cannot be written past Gate.refusalAudit, which names
	// the user and counts it (Session.writeRefusal): a call of
	// s.audit.Refusal does not compile.
	Refusal struct{}
	*audit.Logger
	user   string
	failed func(record, server string, err error)
}

func (a userAudit) Decision(d audit.Decision) error {
	d.User = a.user
	err := a.Logger.Decision(d)
	if err != nil {
		a.failed("decision", d.Server, err)
	}
	return err
}

func (a userAudit) Approval(ap audit.Approval) error {
	ap.User = a.user
	err := a.Logger.Approval(ap)
	if err != nil {
		a.failed("approval", ap.Server, err)
	}
	return err
}

func (a userAudit) Guard(g audit.Guard) error {
	g.User = a.user
	return a.Logger.Guard(g)
}

func (a userAudit) Elicitation(e audit.Elicitation) error {
	e.User = a.user
	err := a.Logger.Elicitation(e)
	if err != nil {
		a.failed("elicitation", e.Server, err)
	}
	return err
}

// teamApprover is the approver of a session that acts for a team user (an
// identity a bearer token gave, Identity.Authenticated). Every question it
// puts names that user. And the local approval surface, which is the human
// at the gate's own machine and not that user, is asked only where the
// policy names it for the question (a rule's via, approval.hosts,
// approval.via; policy.ViaNamed), never by the default channel order: a
// user whose host declares no form elicitation must not be able to send
// their questions to whoever answers the gate's local surface, unnamed,
// beside that person's own.
//
// Whether the policy named the channels comes with the request
// (elicitation.Request.ViaNamed), from the snapshot that decided it: read
// again here, a reload in between could let a default order through on
// the strength of a newer policy's via.
type teamApprover struct {
	inner elicitation.Approver
	id    Identity
}

func (a teamApprover) Approve(ctx context.Context, req elicitation.Request, timeout time.Duration) elicitation.Answer {
	req.User, req.Email = a.id.Subject, a.id.Email
	if len(req.Via) == 0 || req.ViaNamed {
		return a.inner.Approve(ctx, req, timeout)
	}
	via := make([]string, 0, len(req.Via))
	for _, ch := range req.Via {
		if ch != policy.ViaLocal {
			via = append(via, ch)
		}
	}
	const why = "a team user's questions go to the gate's local approval surface only where the policy names that channel (via: [local])"
	if len(via) == 0 {
		return elicitation.Answer{Outcome: elicitation.Unsupported, Detail: "this host cannot ask for approval (its initialize declared no form elicitation), and " + why}
	}
	dropped := len(via) < len(req.Via)
	req.Via = via
	a2 := a.inner.Approve(ctx, req, timeout)
	if dropped && a2.Outcome == elicitation.Unsupported {
		a2.Detail += " (" + why + ")"
	}
	return a2
}
