package elicitation

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A parked question's state and an approval's are kinds apart: neither
// verifies as the other, whatever they bind.
func TestParkedStateKinds(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{"path":"/tmp/x"}`)
	approval, err := r.Mint(b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	parked, err := r.MintParked(b, "call-1", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.IsParked(approval); ok {
		t.Fatal("an approval state reads as a parked question's")
	}
	if _, _, err := r.RedeemParked(approval, b); !errors.Is(err, ErrStateForged) {
		t.Fatalf("an approval state redeemed as a parked question's: %v", err)
	}
	if err := r.ParkedError(approval); !errors.Is(err, ErrStateKind) {
		t.Fatalf("ParkedError of an approval state: %v", err)
	}
	if err := r.Redeem(parked, b); !errors.Is(err, ErrStateForged) {
		t.Fatalf("a parked question's state redeemed as an approval: %v", err)
	}
	if a := r.AnswerFrom([]byte(`{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`), parked, b); a.Allowed() {
		t.Fatalf("a parked question's state answered the approval question: %+v", a)
	}
	call, round, ok := r.IsParked(parked)
	if !ok || call != "call-1" || round != 1 {
		t.Fatalf("IsParked: %q %d %v", call, round, ok)
	}
	// The approval state is still good for its own kind, once.
	if err := r.Redeem(approval, b); err != nil {
		t.Fatalf("approval: %v", err)
	}
}

// A parked question's state redeems once, for exactly its call, before it
// expires; an altered one is refused before anything in it is read.
func TestParkedStateRedeem(t *testing.T) {
	r, clk := testRounds()
	b := testBinding(t, `{"a":1}`)
	st, _ := r.MintParked(b, "call-1", 2, time.Minute)
	other := b
	other.ArgsDigest = testBinding(t, `{"a":2}`).ArgsDigest
	if _, _, err := r.RedeemParked(st, other); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("other arguments: %v", err)
	}
	other = b
	other.Revision = "rev-2"
	if _, _, err := r.CheckParked(st, other); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("another policy revision: %v", err)
	}
	if _, _, err := r.CheckParked(st, b); err != nil {
		t.Fatalf("check: %v", err)
	}
	call, round, err := r.RedeemParked(st, b)
	if err != nil || call != "call-1" || round != 2 {
		t.Fatalf("redeem: %q %d %v", call, round, err)
	}
	if _, _, err := r.RedeemParked(st, b); !errors.Is(err, ErrStateReplayed) {
		t.Fatalf("replayed: %v", err)
	}
	tampered := []byte(st)
	tampered[5] ^= 1
	if _, _, err := r.RedeemParked(string(tampered), b); !errors.Is(err, ErrStateForged) && !errors.Is(err, ErrStateMalformed) {
		t.Fatalf("tampered: %v", err)
	}
	late, _ := r.MintParked(b, "call-1", 3, time.Second)
	clk.add(2 * time.Second)
	if _, _, err := r.RedeemParked(late, b); !errors.Is(err, ErrStateExpired) {
		t.Fatalf("expired: %v", err)
	}
	// Another gate process (another key) never verifies.
	r2, _ := testRounds()
	fresh, _ := r.MintParked(b, "call-1", 4, time.Hour)
	if _, _, err := r2.RedeemParked(fresh, b); !errors.Is(err, ErrStateForged) {
		t.Fatalf("another gate's state: %v", err)
	}
}

// Nothing but the genuine parked state parses as one; an approval's never.
func FuzzRedeemParked(f *testing.F) {
	r, _ := testRounds()
	b := Binding{Principal: "p", Method: "tools/call", Server: "s", Name: "t", ArgsDigest: "d", Revision: "r"}
	genuine, _ := r.MintParked(b, "c", 1, time.Hour)
	approval, _ := r.Mint(b, time.Hour)
	f.Add(genuine)
	f.Add(approval)
	f.Add("")
	f.Add(".")
	f.Add(genuine[:len(genuine)-1] + "A")
	f.Add(strings.Replace(genuine, ".", "..", 1))
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := r.parseParked(s); err == nil && s != genuine {
			t.Fatalf("%q parsed as a parked state, but only the genuine one can", s)
		}
		if _, err := r.parseState(s); err == nil && s != approval {
			t.Fatalf("%q parsed as an approval state", s)
		}
		_, _, _ = r.CheckParked(s, b)
		_ = r.ParkedError(s)
	})
}
