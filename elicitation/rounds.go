package elicitation

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// counts only for them. An approval's state binds the yes its question
	// asks for (ApprovedBy of the rule and reason it shows): the answer
	// counts only for a retry decided ask by that rule, with that reason.
	LetBy string `json:",omitempty"`
}

// ApprovedBy is Binding.LetBy for a human's yes to rule, whose reason the
// human was shown.
func ApprovedBy(rule, reason string) string { return "approved\x00" + rule + "\x00" + reason }

// stateClaims is the signed payload of a requestState.
type stateClaims struct {
	claimsHead
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

	verified atomic.Uint64 // states read by Verify (Verifications)
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
	c := stateClaims{Binding: b}
	return r.mint(ApprovalState, &c.claimsHead, ttl, &c)
}

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

// Redeem verifies s for b and marks it used: it succeeds once, for the
// call it was minted for, before it expires.
func (r *Rounds) Redeem(s string, b Binding) error {
	st, err := r.Verify(s)
	if err == nil {
		st, err = st.Of(ApprovalState)
	}
	if err != nil {
		return err
	}
	return r.Use(st, b)
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
//
// Arguments the canonical form would not tell apart from others that
// servers read differently are refused: bytes that are not UTF-8 and lone
// surrogate escapes ("\ud800") all decode to U+FFFD here, while a
// JavaScript server keeps each lone surrogate as written and a Python one
// may turn it into a byte of a file name, so a yes to one call's question
// would redeem for another's (oneReading).
func CanonicalDigest(args json.RawMessage) (string, error) {
	if err := oneReading(args); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
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
	return InputRequiredResult([]InputRequest{{Key: ApprovalInputKey, Method: "elicitation/create", Params: params}}, state), nil
}

// InputRequest is one question of an input-required result: the key the
// host answers under, the request's method, and its params as the host
// is to read them (vetted by the caller).
type InputRequest struct {
	Key, Method string
	Params      json.RawMessage
}

// InputRequiredResult is the one builder of the gate's input-required
// results (its approval question, a parked question, a relayed round):
// reqs in order, and state.
func InputRequiredResult(reqs []InputRequest, state string) json.RawMessage {
	n := len(state) + 80
	for _, q := range reqs {
		n += len(q.Key) + len(q.Method) + len(q.Params) + 32
	}
	b := make([]byte, 0, n)
	b = append(b, `{"resultType":"input_required","inputRequests":{`...)
	for i, q := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = rawjson.AppendString(b, q.Key)
		b = append(b, `:{"method":`...)
		b = rawjson.AppendString(b, q.Method)
		b = append(b, `,"params":`...)
		b = append(b, q.Params...)
		b = append(b, '}')
	}
	b = append(b, `},"requestState":`...)
	b = rawjson.AppendString(b, state)
	return append(b, '}')
}

// AnswerFrom reads the human's answer to the gate's question from a
// retried request's inputResponses and its requestState s (Answer).
func (r *Rounds) AnswerFrom(inputResponses json.RawMessage, s string, b Binding) Answer {
	st, err := r.Verify(s)
	return r.Answer(inputResponses, st, err, b)
}

// Answer reads the human's answer to the gate's question from a retried
// request's inputResponses, once its requestState (st as Verify read it,
// or verr) is redeemed for b as the approval's. A state that does not
// redeem is BadState; an answer missing or not an elicitation result is
// Malformed; otherwise the answer is read as Ask reads the host's
// (Interpret). A session-wide yes is read as a yes to this call only: a
// 2026-07-28 host has no session to remember it in.
func (r *Rounds) Answer(inputResponses json.RawMessage, st *State, verr error, b Binding) Answer {
	err := verr
	if err == nil {
		if st, err = st.Of(ApprovalState); err == nil {
			err = r.Use(st, b)
		}
	}
	if err != nil {
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

// oneReading refuses JSON text whose strings decoders read in more than
// one way: bytes that are not UTF-8, and \u escapes of surrogates that are
// not a high one followed at once by a low one. Every backslash in valid
// JSON starts an escape inside a string, so the text is read escape by
// escape without tracking strings (a backslash elsewhere fails the decode
// that follows anyway).
func oneReading(text []byte) error {
	if !utf8.Valid(text) {
		return errors.New("not UTF-8")
	}
	surrogate := func(i int) (rune, bool) {
		if i+6 > len(text) || text[i] != '\\' || text[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(text[i+2:i+6]), 16, 16)
		return rune(n), err == nil && n >= 0xd800 && n <= 0xdfff
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		r, ok := surrogate(i)
		switch {
		case !ok:
			i++ // another escape: its character is not a backslash
		case r >= 0xdc00:
			return errors.New("a lone surrogate escape")
		default:
			if lo, ok := surrogate(i + 6); !ok || lo < 0xdc00 {
				return errors.New("a lone surrogate escape")
			}
			i += 11
		}
	}
	return nil
}
