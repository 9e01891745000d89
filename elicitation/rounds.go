package elicitation

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// Two-round approval, for hosts of protocol revision 2026-07-28, which
// have no server-to-client requests: the gate cannot send the host an
// elicitation/create and wait. Instead it answers the call itself with an
// input-required result that carries the same form question (InputRequest)
// and a requestState; the host asks its user and retries the call with the
// answer (inputResponses) and the state echoed back. The retry is a new
// request: it is decided again under the policy in force, and only when
// that decision is ask again does the answer count, and only with a state
// that Rounds minted for exactly this principal, method, tool, arguments
// and policy revision, not expired and never used before.
//
// The state travels through the host, so the gate treats it as
// attacker-controlled: it is HMAC-SHA256 under a key that never leaves the
// process (a restart invalidates every open question, which fails closed),
// checked before anything in it is read, and single-use by a bounded
// used-set in the gate.

// ApprovalInputKey is the key of the gate's question in inputRequests and
// of the answer in inputResponses.
const ApprovalInputKey = "mcp-gate-approval"

// Outcomes of the second round that are not the human's answer.
const (
	// Pending: the question was sent as an input-required result; the call
	// is not run now, and a retry carrying the answer is decided afresh.
	Pending Outcome = "input_required"
	// BadState: the retry's requestState failed verification, has expired,
	// was used before, or was minted for another call.
	BadState Outcome = "invalid_state"
)

// Binding is what one requestState is valid for. Every field must match on
// the retry.
type Binding struct {
	Principal  string // proxy.Identity.Key() of who asks
	Method     string // tools/call, prompts/get, resources/read
	Server     string
	Name       string // the upstream's tool or prompt name, or the URI
	ArgsDigest string // CanonicalDigest of the arguments
	Revision   string // the policy revision that asked
	// LetBy is what let the call through, for the states of a call in
	// flight (parked, relayed): "allow" for the policy's allow, or
	// "approved" with the rule and its reason for a human's yes
	// (ApprovedBy). A retry decided ask counts such a state as that yes
	// only when it names the very rule and reason, as a 2025 host's yes
	// counts only for them.
	LetBy string `json:",omitempty"`
}

// ApprovedBy is Binding.LetBy for a human's yes to rule, whose reason the
// human was shown.
func ApprovedBy(rule, reason string) string { return "approved\x00" + rule + "\x00" + reason }

// stateClaims is the signed payload of a requestState.
type stateClaims struct {
	V     int    `json:"v"`
	Nonce string `json:"n"`
	Exp   int64  `json:"e"` // unix milliseconds
	Binding
}

// MaxStateBytes bounds a requestState the gate will look at; its own are
// a few hundred bytes.
const MaxStateBytes = 4096

// DefaultMaxOpen bounds the used-set (and so the questions that can be
// answered at once) of a Rounds.
const DefaultMaxOpen = 100_000

// Rounds mints and redeems requestStates. One per gate; safe for
// concurrent use. The zero value is not usable: use NewRounds.
type Rounds struct {
	key     []byte
	now     func() time.Time
	maxOpen int

	mu   sync.Mutex
	used map[string]int64 // nonce → expiry (unix ms) of states redeemed, until they expire
}

// NewRounds returns a Rounds with a fresh random key.
func NewRounds() *Rounds {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("elicitation: no randomness for the requestState key: %v", err))
	}
	return &Rounds{key: key, now: time.Now, maxOpen: DefaultMaxOpen, used: map[string]int64{}}
}

// Mint returns a requestState for b, valid for ttl.
func (r *Rounds) Mint(b Binding, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = DefaultTimeout
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", fmt.Errorf("minting a requestState: %w", err)
	}
	c := stateClaims{V: 1, Nonce: hex.EncodeToString(n[:]), Exp: r.now().Add(ttl).UnixMilli(), Binding: b}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("minting a requestState: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(r.mac(p)), nil
}

func (r *Rounds) mac(p string) []byte { return r.macAs(approvalLabel, p) }

// The labels in the MAC input, one per kind of state: a state of one kind
// never verifies as another (parked.go).
const (
	approvalLabel = "mcp-gate requestState v1\x00"
	parkedLabel   = "mcp-gate parked question v1\x00"
	relayedLabel  = "mcp-gate relayed round v1\x00"
)

func (r *Rounds) macAs(label, p string) []byte {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(label))
	m.Write([]byte(p))
	return m.Sum(nil)
}

// Errors of Redeem, each saying what was found.
var (
	ErrStateMalformed = errors.New("the requestState is not one the gate wrote")
	ErrStateForged    = errors.New("the requestState failed verification (altered, or minted by another gate process)")
	ErrStateExpired   = errors.New("the requestState has expired")
	ErrStateReplayed  = errors.New("the requestState was used before")
	ErrStateMismatch  = errors.New("the requestState was issued for another call")
	ErrStateFull      = errors.New("too many approvals are being answered at once")
)

// parseState checks the MAC of s and decodes its claims; it reads nothing
// of the payload before the MAC holds.
func (r *Rounds) parseState(s string) (stateClaims, error) {
	var c stateClaims
	if err := r.verifyAs(approvalLabel, s, &c); err != nil {
		return stateClaims{}, err
	}
	if c.V != 1 || len(c.Nonce) != 32 {
		return stateClaims{}, ErrStateMalformed
	}
	return c, nil
}

// verifyAs checks the MAC of s under label and only then decodes its
// payload into c, strictly (no unknown or duplicate member).
func (r *Rounds) verifyAs(label, s string, c any) error {
	return r.verifyAsMax(label, s, MaxStateBytes, c)
}

// verifyAsMax is verifyAs for a kind whose states may be up to max bytes.
func (r *Rounds) verifyAsMax(label, s string, max int, c any) error {
	if len(s) == 0 || len(s) > max {
		return ErrStateMalformed
	}
	p, sig, ok := strings.Cut(s, ".")
	if !ok || strings.Contains(sig, ".") {
		return ErrStateMalformed
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return ErrStateMalformed
	}
	if !hmac.Equal(got, r.macAs(label, p)) {
		return ErrStateForged
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil || rawjson.UniqueKeys(payload) != nil {
		return ErrStateMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil || dec.More() {
		return ErrStateMalformed
	}
	return nil
}

// Redeem verifies s for b and marks it used: it succeeds once, for the
// call it was minted for, before it expires.
func (r *Rounds) Redeem(s string, b Binding) error {
	c, err := r.parseState(s)
	if err != nil {
		return err
	}
	now := r.now().UnixMilli()
	if now >= c.Exp {
		return ErrStateExpired
	}
	if c.Binding != b {
		return ErrStateMismatch
	}
	return r.use(c.Nonce, c.Exp, now)
}

// use marks nonce used until exp: once only.
func (r *Rounds) use(nonce string, exp, now int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.used[nonce]; seen {
		return ErrStateReplayed
	}
	if len(r.used) >= r.maxOpen {
		for n, e := range r.used {
			if now >= e {
				delete(r.used, n)
			}
		}
		if len(r.used) >= r.maxOpen {
			return ErrStateFull // fail closed: never forget a state that could still be replayed
		}
	}
	r.used[nonce] = exp
	return nil
}

// CanonicalDigest is the SHA-256 of the arguments in canonical form
// (object keys sorted, insignificant space dropped, numbers as written), so
// that the answer covers the call however its bytes are spaced, and no
// other. Absent arguments digest as null.
func CanonicalDigest(args json.RawMessage) (string, error) {
	var v any = nil
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		if dec.More() {
			return "", errors.New("arguments: more than one JSON value")
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimRight(buf.Bytes(), "\n"))
	return hex.EncodeToString(sum[:]), nil
}

// InputRequired builds the input-required result that asks req's question
// and carries state: the gate's form elicitation under ApprovalInputKey.
// It is always sent with its input request, never as a state-only round.
func InputRequired(req Request, state string) (json.RawMessage, error) {
	params, err := Params(req)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"resultType":"input_required","inputRequests":{`)
	b.Write(rawjson.AppendString(nil, ApprovalInputKey))
	b.WriteString(`:{"method":"elicitation/create","params":`)
	b.Write(params)
	b.WriteString(`}},"requestState":`)
	b.Write(rawjson.AppendString(nil, state))
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// AnswerFrom reads the human's answer to the gate's question from a
// retried request's inputResponses, once its requestState is redeemed for
// b. A state that does not redeem is BadState; an answer missing or not an
// elicitation result is Malformed; otherwise the answer is read as Ask
// reads the host's (Interpret). A session-wide yes is read as a yes to
// this call only: a 2026-07-28 host has no session to remember it in.
func (r *Rounds) AnswerFrom(inputResponses json.RawMessage, state string, b Binding) Answer {
	if err := r.Redeem(state, b); err != nil {
		return Answer{Outcome: BadState, Detail: err.Error() + "; ask again by calling without requestState"}
	}
	if len(inputResponses) == 0 || inputResponses[0] != '{' || rawjson.UniqueKeys(inputResponses) != nil {
		return Answer{Outcome: Malformed, Detail: "the retried request carries no readable inputResponses"}
	}
	res, ok := rawjson.Get(inputResponses, ApprovalInputKey)
	if !ok {
		return Answer{Outcome: Malformed, Detail: "the retried request carries no answer to the approval question"}
	}
	a := Interpret(res)
	if a.Outcome == ApprovedSession {
		a.Outcome = Approved
	}
	return a
}
