// Package audit writes the gate's decision log: one JSON line per decision,
// approval, guard refusal, refused request and policy reload, always with
// the same keys, so that a security team can query it without guessing.
//
// Argument and result bytes never reach the log, only a keyed digest of
// them; a detail's quoted parts, where the gate names untrusted text, are
// replaced by their size and digest (redact.go):
// arguments carry secrets (tokens, file contents) and the audit log is often
// shipped elsewhere. The digest still ties an approval to the exact call it
// covered, within one run of the gate.
package audit

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Keys used in audit records. They are part of the gate's interface.
const (
	KeyEvent      = "event"
	KeyDecisionID = "decision_id"
	KeySession    = "session"
	KeyUser       = "user" // the subject the session acts for (a token's sub, or uid:N in stdio mode)
	KeyServer     = "server"
	KeyTool       = "tool"
	KeyWireName   = "wire_name"
	KeyVerdict    = "verdict"
	KeyRule       = "rule"
	KeyReason     = "reason"
	KeyRevision   = "revision"
	KeyArgsDigest = "args_digest"
	KeyLatencyUS  = "latency_us"
	KeyOutcome    = "outcome"
	KeyKind       = "kind"
	KeyDetail     = "detail"
	KeyCount      = "count"
	KeyMethod     = "method"
)

// Event names (the value of KeyEvent).
const (
	EventDecision    = "decision"      // a verdict on a tools/call, prompt, resource or sampling request
	EventApproval    = "approval"      // the gate asked a human, and what came back
	EventGuard       = "guard"         // an upstream payload refused or changed by the result guard
	EventElicitation = "elicitation"   // an upstream elicitation relayed or refused
	EventRefusal     = "refusal"       // a host request refused before any policy decision (malformed, ambiguous, unknown name)
	EventReload      = "policy_reload" // written by package policy through Logger.Slog
	EventPolicyLoad  = "policy_load"   // the policy in force at start, and its warnings
	EventPolicyWatch = "policy_watch"  // the policy file's watcher failed
	// EventOther marks a line logged through Slog without an event of its
	// own: a mistake, but one the log's readers can still select on.
	EventOther = "other"
)

// A Logger writes audit records. It is safe for concurrent use.
type Logger struct {
	l *slog.Logger
	// w is set when the records are JSON lines on a writer (New): the
	// package's own records are then encoded here, byte for byte as slog's
	// JSON handler would write them, without slog's per-record work, since
	// one is written for every call the gate relays. Lines logged through
	// Slog go to the same writer under the same lock.
	w *lockedWriter
}

// New returns a Logger that writes JSON lines to w.
func New(w io.Writer) *Logger { return newLogger(fileWriter(w)) }

// newLogger returns a Logger that writes JSON lines to w as it is.
func newLogger(w io.Writer) *Logger {
	lw := newLockedWriter(w)
	a := NewHandler(slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.w = lw
	return a
}

// NewHandler returns a Logger over any slog handler (tests use this).
// Every record it writes has an event key: a security team selects on it.
func NewHandler(h slog.Handler) *Logger { return &Logger{l: slog.New(eventHandler{h})} }

// Discard returns a Logger that writes nothing.
func Discard() *Logger { return &Logger{l: slog.New(slog.DiscardHandler)} }

// Slog returns the underlying logger, for packages (policy reloads) that log
// their own audit events with these keys. A record logged without an event
// key gets event "other".
func (a *Logger) Slog() *slog.Logger { return a.l }

// eventHandler makes sure that every record has an event key, whoever logs
// it: a line without one escapes every query that selects on event.
type eventHandler struct{ slog.Handler }

func (h eventHandler) Handle(ctx context.Context, r slog.Record) error {
	has := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == KeyEvent {
			has = true
			return false
		}
		return true
	})
	if !has {
		r = r.Clone()
		r.AddAttrs(slog.String(KeyEvent, EventOther))
	}
	return h.Handler.Handle(ctx, r)
}

func (h eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if a.Key == KeyEvent {
			// Every record of the derived logger has its event now.
			return h.Handler.WithAttrs(as)
		}
	}
	return eventHandler{h.Handler.WithAttrs(as)}
}

func (h eventHandler) WithGroup(name string) slog.Handler {
	// Inside a group an event key would not be the top-level one: the
	// top-level one is added before the group opens.
	return h.Handler.WithAttrs([]slog.Attr{slog.String(KeyEvent, EventOther)}).WithGroup(name)
}

// Decision is one verdict.
type Decision struct {
	ID         string
	Session    string
	User       string
	Server     string
	Tool       string // tool or prompt name, resource URI, or empty for sampling
	Kind       string // "tool", "prompt", "resource", "sampling"
	WireName   string
	Verdict    string
	Rule       string
	Reason     string
	Revision   string
	ArgsDigest string
	Latency    time.Duration
}

// Decision records a verdict. It returns once the record was handed to the
// OS, or with the error that kept it from being: a call whose decision is
// not on record must not go on (README, "The audit log").
func (a *Logger) Decision(d Decision) error {
	r := a.begin(slog.LevelInfo, "decision", EventDecision)
	if r == nil {
		return nil
	}
	r.str(KeyDecisionID, d.ID)
	r.str(KeySession, d.Session)
	r.str(KeyUser, d.User)
	r.str(KeyKind, d.Kind)
	r.str(KeyServer, d.Server)
	r.str(KeyTool, d.Tool)
	r.str(KeyWireName, d.WireName)
	r.str(KeyVerdict, d.Verdict)
	r.str(KeyRule, d.Rule)
	r.str(KeyReason, Redact(d.Reason)) // a failed condition's error can quote an argument
	r.str(KeyRevision, d.Revision)
	r.str(KeyArgsDigest, d.ArgsDigest)
	r.int(KeyLatencyUS, d.Latency.Microseconds())
	return a.end(r)
}

// Approval is the record of one question put to a human.
type Approval struct {
	DecisionID string
	Session    string
	User       string
	Server     string
	Tool       string
	ArgsDigest string
	Outcome    string // "approved", "approved_session", "declined", "cancelled", "timeout", "error", "unsupported", "withdrawn", "remembered"
	Detail     string
	Latency    time.Duration // how long the human took
}

// Approval records an ask and its answer, and returns as Decision does:
// a yes that is not on record lets nothing through.
func (a *Logger) Approval(ap Approval) error {
	r := a.begin(slog.LevelInfo, "approval", EventApproval)
	if r == nil {
		return nil
	}
	r.str(KeyDecisionID, ap.DecisionID)
	r.str(KeySession, ap.Session)
	r.str(KeyUser, ap.User)
	r.str(KeyServer, ap.Server)
	r.str(KeyTool, ap.Tool)
	r.str(KeyArgsDigest, ap.ArgsDigest)
	r.str(KeyOutcome, ap.Outcome)
	r.str(KeyDetail, Redact(ap.Detail))
	r.int(KeyLatencyUS, ap.Latency.Microseconds())
	return a.end(r)
}

// Guard is a payload the result guard refused or changed.
type Guard struct {
	DecisionID string
	Session    string
	User       string
	Server     string
	Tool       string
	Outcome    string // "refused", "logged" (log-only mode), "neutralised"
	Kind       string // what was found
	Detail     string
	Count      int // characters neutralised
}

// Guard records a guard event, and returns as Decision does: a finding
// the policy lets through under log-only must be on record to pass.
func (a *Logger) Guard(g Guard) error {
	r := a.begin(slog.LevelWarn, "guard", EventGuard)
	if r == nil {
		return nil
	}
	r.str(KeyDecisionID, g.DecisionID)
	r.str(KeySession, g.Session)
	r.str(KeyUser, g.User)
	r.str(KeyServer, g.Server)
	r.str(KeyTool, g.Tool)
	r.str(KeyOutcome, g.Outcome)
	r.str(KeyKind, g.Kind)
	r.str(KeyDetail, Redact(g.Detail))
	r.int(KeyCount, int64(g.Count))
	return a.end(r)
}

// Elicitation is an upstream's request to ask the user something.
type Elicitation struct {
	Session string
	User    string
	Server  string
	Outcome string // "relayed", "refused"
	Kind    string
	Detail  string
}

// Elicitation records an upstream elicitation relayed or refused, and
// returns as Decision does: a question relayed must be on record first.
func (a *Logger) Elicitation(e Elicitation) error {
	r := a.begin(slog.LevelInfo, "elicitation", EventElicitation)
	if r == nil {
		return nil
	}
	r.str(KeySession, e.Session)
	r.str(KeyUser, e.User)
	r.str(KeyServer, e.Server)
	r.str(KeyOutcome, e.Outcome)
	r.str(KeyKind, e.Kind)
	r.str(KeyDetail, Redact(e.Detail))
	return a.end(r)
}

// Refusal is a host request the gate refused before the policy decided
// it: one it could not read (malformed, ambiguous keys, a bad envelope),
// one naming nothing the gate lists, one sent before initialize. A
// refusal by the policy is a Decision; by the result guard, a Guard.
type Refusal struct {
	Session  string
	User     string
	Method   string // the request's method, "" when it could not be read
	Kind     string // the refusal's class, one of RefusalKinds'
	WireName string // the target's name as the host wrote it, "" when none was read
	Reason   string
}

// Refusal kinds, a refusal record's "kind": the class of a request
// refused before any decision. They are part of the gate's interface, as
// the keys are, and the only values of the refusal counter's kind label
// (package metrics), which keeps its series bounded.
const (
	RefusalMalformed      = "malformed"        // the line or body is not a JSON-RPC message, or reuses the id of a request in progress
	RefusalAmbiguous      = "ambiguous_params" // a key twice, or two spellings of one
	RefusalNotInitialized = "not_initialized"  // before initialize
	RefusalEnvelope       = "invalid_envelope" // a 2026-07-28 request's _meta envelope (over HTTP, the headers mirroring it), retry members or era
	RefusalUnavailable    = "unavailable"      // the gate offers nothing
	RefusalInvalidParams  = "invalid_params"   // the params cannot be read as the method's
	RefusalUnknownName    = "unknown_name"     // a name or URI no server lists
	RefusalNotLookedUp    = "not_looked_up"    // the request ended while its name, or the definition its pin holds it to, was being looked up
	RefusalUnresolved     = "unresolved"       // any other refusal of a relay's resolve
	RefusalNoSession      = "no_session"       // over HTTP, the request reached no session it may use
)

// RefusalKinds returns every refusal kind, in a fixed order.
func RefusalKinds() []string {
	return []string{RefusalMalformed, RefusalAmbiguous, RefusalNotInitialized, RefusalEnvelope, RefusalUnavailable,
		RefusalInvalidParams, RefusalUnknownName, RefusalNotLookedUp, RefusalUnresolved, RefusalNoSession}
}

// Refusal records a refused request. The request is refused whether or
// not its record is written; the error is for the caller's log.
func (a *Logger) Refusal(rf Refusal) error {
	r := a.begin(slog.LevelWarn, "refusal", EventRefusal)
	if r == nil {
		return nil
	}
	r.str(KeySession, rf.Session)
	r.str(KeyUser, rf.User)
	r.str(KeyMethod, rf.Method)
	r.str(KeyKind, rf.Kind)
	r.str(KeyWireName, rf.WireName)
	r.str(KeyReason, Redact(rf.Reason)) // an error can quote what the host sent
	return a.end(r)
}

// digestKey keys the argument digests of this process. A plain hash of
// short arguments (a PIN, a one-time code) could be reversed by trying every
// value; a keyed one cannot, by anyone who only has the log.
var digestKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("audit: no randomness for the digest key: " + err.Error())
	}
	return k
}()

// Digest returns a short digest of a call's raw arguments: the first 16 hex
// digits of their HMAC-SHA-256 under a key drawn when the gate starts. The
// same bytes give the same digest for the life of the process, so an
// approval record and the call it covered can be matched, while argument
// values cannot be guessed back from the log.
func Digest(args []byte) string {
	var out [DigestLen]byte
	return string(AppendDigest(out[:0], args))
}

// DigestLen is the length of a Digest.
const DigestLen = len(digestPrefix) + 16

const digestPrefix = "hmac-sha256:"

// AppendDigest appends Digest(args) to dst, for a caller that makes one
// string of it and what goes with it (a decision's id) in one allocation.
func AppendDigest(dst, args []byte) []byte {
	m := macs.Get().(*pooledMAC)
	m.h.Reset()
	m.h.Write(args)
	sum := m.h.Sum(m.sum[:0]) // into the pooled array: a local one would escape
	dst = append(dst, digestPrefix...)
	dst = hex.AppendEncode(dst, sum[:8])
	macs.Put(m)
	return dst
}

// pooledMAC is a keyed HMAC with room for its sum.
type pooledMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// macs holds keyed HMACs for Digest: keying one costs two block hashes,
// and a digest is taken for every call.
var macs = sync.Pool{New: func() any { return &pooledMAC{h: hmac.New(sha256.New, digestKey)} }}
