package elicitation

import (
	"errors"
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
	claimsHead
	Call  string `json:"c"` // the parked call's id
	Round int    `json:"r"` // which of its questions this answers
	Binding
}

// MintParked returns the requestState of round of the parked call, valid
// for ttl, for the call b describes.
func (r *Rounds) MintParked(b Binding, call string, round int, ttl time.Duration) (string, error) {
	c := parkedClaims{Call: call, Round: round, Binding: b}
	return r.mint(ParkedState, &c.claimsHead, ttl, &c)
}

// ErrStateKind: a state of the gate's approval question presented as the
// answer to a server's question.
var ErrStateKind = errors.New("the requestState is the gate's approval question's, not that question's")
