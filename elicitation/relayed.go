package elicitation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-gate/mcp-gate/guard"
)

// Relayed rounds. A 2026-07-28 upstream asks for input by answering a call
// with an input-required result of its own: input requests under keys it
// chose and a requestState it alone reads. For a 2026-07-28 host the gate
// passes the (vetted) questions on as an input-required result of the
// host's call, and the host's retry carries the answers back; neither side
// keeps anything between the two requests.
//
// The host sees the questions under keys of the gate's (RelayedKey: a
// prefix no other kind of the gate's uses, and an index), never the
// upstream's own, so an upstream cannot name its question
// "mcp-gate-approval" and have the host's answer read as the gate's, nor
// the reverse. The requestState the host gets is the gate's, of a kind of
// its own (MACed under a label no approval or parked state uses): it binds
// what an approval binds, the round, the upstream's keys and question
// kinds (to map the answers back), and the upstream's own requestState,
// carried inside, byte for byte, so that the retry can echo it without the
// gate keeping it. The gate never reads the upstream's state for anything:
// it is carried, bounded, and returned.

// RelayedKeyPrefix starts every key under which the gate puts an upstream's
// question to a 2026-07-28 host; the gate's approval (ApprovalInputKey) and
// an older upstream's parked question (ParkedInputKey) use other keys.
const RelayedKeyPrefix = "mcp-gate-relayed-"

// RelayedKey is the host-side key of the i-th (from 0) question of a round.
func RelayedKey(i int) string { return RelayedKeyPrefix + strconv.Itoa(i+1) }

// IsRelayedKey reports whether k is in the relayed namespace (whether or
// not it names a question of any round).
func IsRelayedKey(k string) bool { return strings.HasPrefix(k, RelayedKeyPrefix) }

// Bounds of what a relayed state carries.
const (
	// MaxUpstreamStateBytes bounds the upstream's requestState (its JSON
	// text) the gate carries for it.
	MaxUpstreamStateBytes = 8 << 10
	// MaxUpstreamKeyBytes bounds each of the upstream's input request keys.
	MaxUpstreamKeyBytes = 256
	// MaxRelayedStateBytes bounds a relayed requestState the gate will look
	// at: its claims with the largest upstream state, keys and answers fit.
	MaxRelayedStateBytes = 24 << 10
	// MaxRoundInputs bounds the questions of one upstream round: the proxy
	// relays no more (it refuses the round), and a state claiming more is
	// not the gate's.
	MaxRoundInputs = 8
)

// RelayedInput is one of the upstream's questions of a round, in the order
// of the host-side keys (RelayedKey(i)).
type RelayedInput struct {
	Key    string `json:"k"`           // the upstream's own key
	Method string `json:"m"`           // elicitation/create, sampling/createMessage, roots/list
	Asked  bool   `json:"q,omitempty"` // put to the host under RelayedKey(i)
	// Answer is the gate's own answer for the host, when the question was
	// not put to it (a refused elicitation is declined).
	Answer json.RawMessage `json:"a,omitempty"`
}

// RelayedRound is what a relayed state carries besides its binding.
type RelayedRound struct {
	Round  int            `json:"r"` // the upstream's rounds of this call so far, this one included
	Inputs []RelayedInput `json:"i"`
	// State is the upstream's requestState as it sent it (JSON text), nil
	// when it sent none.
	State json.RawMessage `json:"s,omitempty"`
}

// relayedClaims is the signed payload of a relayed round's requestState.
type relayedClaims struct {
	claimsHead
	RelayedRound
	Binding
}

// MintRelayed returns the requestState of a relayed round for the call b
// describes, valid for ttl.
func (r *Rounds) MintRelayed(b Binding, rr RelayedRound, ttl time.Duration) (string, error) {
	if err := checkRelayed(rr); err != nil {
		return "", fmt.Errorf("minting a relayed round's requestState: %w", err)
	}
	c := relayedClaims{RelayedRound: rr, Binding: b}
	return r.mint(RelayedState, &c.claimsHead, ttl, &c)
}

// checkRelayed holds a round to the bounds, on minting and on reading.
func checkRelayed(rr RelayedRound) error {
	if rr.Round < 1 {
		return fmt.Errorf("round %d", rr.Round)
	}
	if len(rr.Inputs) == 0 || len(rr.Inputs) > MaxRoundInputs {
		return fmt.Errorf("%d input requests (1 to %d)", len(rr.Inputs), MaxRoundInputs)
	}
	if len(rr.State) > MaxUpstreamStateBytes {
		return fmt.Errorf("the upstream's requestState is %d bytes, more than the %d mcp-gate carries", len(rr.State), MaxUpstreamStateBytes)
	}
	seen := map[string]bool{}
	for _, in := range rr.Inputs {
		if len(in.Key) > MaxUpstreamKeyBytes {
			return fmt.Errorf("an input request key of %d bytes, more than %d", len(in.Key), MaxUpstreamKeyBytes)
		}
		if seen[in.Key] {
			return fmt.Errorf("input request key %s twice", guard.Quote(in.Key, guard.ShowKey))
		}
		seen[in.Key] = true
		if in.Asked == (in.Answer != nil) {
			return fmt.Errorf("input request %s must be either asked or answered by the gate", guard.Quote(in.Key, guard.ShowKey))
		}
	}
	return nil
}

// ErrStateKindParked: an older upstream's parked question's state presented
// as the answer to a relayed round.
var ErrStateKindParked = errors.New("the requestState is another server question's (a parked call's), not this round's")
