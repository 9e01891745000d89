package elicitation

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// One way in and one way out for the three kinds of requestState the gate
// writes (the approval's, a parked question's, a relayed round's): mint
// signs a kind's claims under its own label, and Verify reads a state the
// host sent back, once, into a State that every later check of the same
// request reads (Holds, Use). A retry's state is up to 24 KiB of base64,
// an HMAC and a strict JSON decode: doing that once per request, instead
// of once per question asked of it, is what keeps a retry cheap.

// StateKind is which of the gate's questions a requestState belongs to.
type StateKind uint8

const (
	// ApprovalState: the gate's own approval question (Mint).
	ApprovalState StateKind = iota + 1
	// ParkedState: an older upstream's question of a parked call
	// (MintParked).
	ParkedState
	// RelayedState: a 2026-07-28 upstream's round (MintRelayed).
	RelayedState
)

func (k StateKind) String() string {
	switch k {
	case ApprovalState:
		return "approval"
	case ParkedState:
		return "parked"
	case RelayedState:
		return "relayed"
	}
	return "none"
}

// kinds are the labels and claims versions of each kind, in the order
// Verify tries their MACs: a state of one kind never verifies as another.
var kinds = [...]struct {
	kind  StateKind
	label string
	v     int
	max   int // the longest state of the kind the gate reads
}{
	{ApprovalState, approvalLabel, 1, MaxStateBytes},
	{ParkedState, parkedLabel, 2, MaxStateBytes},
	{RelayedState, relayedLabel, 3, MaxRelayedStateBytes},
}

// State is a requestState verified once: its MAC held under its kind's
// label and its claims decoded strictly. It says nothing yet about the
// call it is presented for (Holds) or whether it was used (Use).
type State struct {
	Kind    StateKind
	Binding Binding
	// Call and Round name a parked question's call and round.
	Call  string
	Round int
	// Relayed is what a relayed round's state carries.
	Relayed RelayedRound

	nonce string
	exp   int64 // unix milliseconds
}

// Verify reads s, a requestState the host sent back, into the State it
// carries: the MAC of one of the gate's kinds must hold before anything
// in it is decoded, and the claims must decode strictly (no unknown or
// duplicate member) into that kind's, with that kind's version. It
// neither checks expiry nor uses the state up: that is Holds and Use, for
// the call the request turns out to be.
func (r *Rounds) Verify(s string) (*State, error) {
	r.verified.Add(1)
	if len(s) == 0 || len(s) > MaxRelayedStateBytes {
		return nil, ErrStateMalformed
	}
	p, sig, ok := strings.Cut(s, ".")
	if !ok || strings.Contains(sig, ".") {
		return nil, ErrStateMalformed
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return nil, ErrStateMalformed
	}
	k := -1
	for i := range kinds {
		// A kind's MAC is computed only for a state it could be: a long
		// one is a relayed round's or none of the gate's.
		if len(s) <= kinds[i].max && hmac.Equal(got, r.macAs(kinds[i].label, p)) {
			k = i
			break
		}
	}
	if k < 0 {
		return nil, ErrStateForged
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil || rawjson.UniqueKeys(payload) != nil {
		return nil, ErrStateMalformed
	}
	st := &State{Kind: kinds[k].kind}
	var head claimsHead
	switch st.Kind {
	case ApprovalState:
		var c stateClaims
		err = decodeStrict(payload, &c)
		head, st.Binding = c.claimsHead, c.Binding
	case ParkedState:
		var c parkedClaims
		err = decodeStrict(payload, &c)
		head, st.Binding, st.Call, st.Round = c.claimsHead, c.Binding, c.Call, c.Round
		if err == nil && (c.Call == "" || c.Round < 1) {
			err = ErrStateMalformed
		}
	case RelayedState:
		var c relayedClaims
		err = decodeStrict(payload, &c)
		head, st.Binding, st.Relayed, st.Round = c.claimsHead, c.Binding, c.RelayedRound, c.Round
		if err == nil && checkRelayed(c.RelayedRound) != nil {
			err = ErrStateMalformed
		}
	}
	if err != nil || head.V != kinds[k].v || len(head.Nonce) != 32 {
		return nil, ErrStateMalformed
	}
	st.nonce, st.exp = head.Nonce, head.Exp
	return st, nil
}

// Verifications counts the states Verify has read, for the tests that
// hold a request to one verification.
func (r *Rounds) Verifications() uint64 { return r.verified.Load() }

// Holds checks that st, as verified, is good now for the call b describes:
// not expired, and bound to exactly b. It does not use it up.
func (r *Rounds) Holds(st *State, b Binding) error {
	if r.now().UnixMilli() >= st.exp {
		return ErrStateExpired
	}
	if st.Binding != b {
		return ErrStateMismatch
	}
	return nil
}

// Use is Holds, then marks st used: it succeeds once per state.
func (r *Rounds) Use(st *State, b Binding) error {
	if err := r.Holds(st, b); err != nil {
		return err
	}
	return r.use(st.nonce, st.exp, r.now().UnixMilli())
}

// Of returns st if it is of kind k, and otherwise the error verifying it
// as that kind gives: its MAC does not hold under k's label.
func (st *State) Of(k StateKind) (*State, error) {
	if st == nil || st.Kind != k {
		return nil, ErrStateForged
	}
	return st, nil
}

// claimsHead begins the signed payload of every kind.
type claimsHead struct {
	V     int    `json:"v"`
	Nonce string `json:"n"`
	Exp   int64  `json:"e"` // unix milliseconds
}

// mint signs claims, a kind's, as a state of kind k valid for ttl: head
// is filled in with k's version, a fresh nonce and the expiry.
func (r *Rounds) mint(k StateKind, head *claimsHead, ttl time.Duration, claims any) (string, error) {
	if ttl <= 0 {
		ttl = DefaultTimeout
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", fmt.Errorf("minting a %s requestState: %w", k, err)
	}
	*head = claimsHead{V: kinds[k-1].v, Nonce: hex.EncodeToString(n[:]), Exp: r.now().Add(ttl).UnixMilli()}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("minting a %s requestState: %w", k, err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	s := p + "." + base64.RawURLEncoding.EncodeToString(r.macAs(kinds[k-1].label, p))
	if len(s) > kinds[k-1].max {
		return "", fmt.Errorf("minting a %s requestState: %d bytes, more than the %d the gate reads back", k, len(s), kinds[k-1].max)
	}
	return s, nil
}

// decodeStrict decodes one JSON value into c, refusing unknown members.
func decodeStrict(payload []byte, c any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil || dec.More() {
		return ErrStateMalformed
	}
	return nil
}

// KindError says why st (or verr, its verification's error) is not a
// state of kind want: a state of another of the gate's kinds, named, or
// whatever verification found.
func KindError(st *State, verr error, want StateKind) error {
	if verr != nil {
		return verr
	}
	switch {
	case st.Kind == want:
		return nil
	case st.Kind == ApprovalState:
		return ErrStateKind
	case st.Kind == ParkedState && want == RelayedState:
		return ErrStateKindParked
	}
	return ErrStateForged
}
