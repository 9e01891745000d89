package elicitation

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Parked questions. An older (2025-11-25) upstream asks its questions
// (elicitation, sampling, roots) as requests of its own during a call; a
// 2026-07-28 host cannot receive those, so the gate answers the host's call
// with an input-required result carrying the question, keeps the upstream
// call waiting (parked), and the host's retry carries the answer back to
// it. The retry finds the parked call by a requestState of a kind of its
// own: MACed under a label no approval state uses, so that an approval's
// state never redeems a parked question nor the reverse, bound to what an
// approval is bound to plus the parked call's id and the round, single-use
// (the same used-set as approvals) and fresh for every question.

// ParkedInputKey is the key of an upstream's question in inputRequests and
// of the host's answer in inputResponses; the gate's own approval question
// has another (ApprovalInputKey), so neither answer can be read as the
// other.
const ParkedInputKey = "mcp-gate-upstream"

// parkedClaims is the signed payload of a parked question's requestState.
type parkedClaims struct {
	V     int    `json:"v"`
	Nonce string `json:"n"`
	Exp   int64  `json:"e"` // unix milliseconds
	Call  string `json:"c"` // the parked call's id
	Round int    `json:"r"` // which of its questions this answers
	Binding
}

// MintParked returns the requestState of round of the parked call, valid
// for ttl, for the call b describes.
func (r *Rounds) MintParked(b Binding, call string, round int, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = DefaultTimeout
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", fmt.Errorf("minting a parked question's requestState: %w", err)
	}
	c := parkedClaims{V: 2, Nonce: hex.EncodeToString(n[:]), Exp: r.now().Add(ttl).UnixMilli(), Call: call, Round: round, Binding: b}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("minting a parked question's requestState: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(r.macAs(parkedLabel, p)), nil
}

func (r *Rounds) parseParked(s string) (parkedClaims, error) {
	var c parkedClaims
	if err := r.verifyAs(parkedLabel, s, &c); err != nil {
		return parkedClaims{}, err
	}
	if c.V != 2 || len(c.Nonce) != 32 || c.Call == "" || c.Round < 1 {
		return parkedClaims{}, ErrStateMalformed
	}
	return c, nil
}

// IsParked reports whether s is a parked question's state this gate wrote
// (its MAC holds under the parked label), whatever it is bound to, and
// which call and round it names. An approval's state is not one.
func (r *Rounds) IsParked(s string) (call string, round int, ok bool) {
	c, err := r.parseParked(s)
	if err != nil {
		return "", 0, false
	}
	return c.Call, c.Round, true
}

// ParkedError says why s is not a parked question's state: an approval's
// state (a kind that never answers a server's question), or whatever
// verification found (altered, not the gate's).
func (r *Rounds) ParkedError(s string) error {
	if _, err := r.parseState(s); err == nil {
		return ErrStateKind
	}
	_, err := r.parseParked(s)
	return err
}

// ErrStateKind: a state of the gate's approval question presented as the
// answer to a server's question.
var ErrStateKind = errors.New("the requestState is the gate's approval question's, not that question's")

// CheckParked verifies s for b (MAC, expiry, binding) without using it up:
// for a decision that needs to know the retry continues a parked call
// before the call is attached (which redeems it).
func (r *Rounds) CheckParked(s string, b Binding) (call string, round int, err error) {
	c, err := r.parseParked(s)
	if err != nil {
		return "", 0, err
	}
	if r.now().UnixMilli() >= c.Exp {
		return "", 0, ErrStateExpired
	}
	if c.Binding != b {
		return "", 0, ErrStateMismatch
	}
	return c.Call, c.Round, nil
}

// RedeemParked verifies s for b and marks it used: it succeeds once, for
// the call it was minted for, before it expires. It returns the parked
// call and the round the answer is for.
func (r *Rounds) RedeemParked(s string, b Binding) (call string, round int, err error) {
	c, err := r.parseParked(s)
	if err != nil {
		return "", 0, err
	}
	now := r.now().UnixMilli()
	if now >= c.Exp {
		return "", 0, ErrStateExpired
	}
	if c.Binding != b {
		return "", 0, ErrStateMismatch
	}
	if err := r.use(c.Nonce, c.Exp, now); err != nil {
		return "", 0, err
	}
	return c.Call, c.Round, nil
}
