package elicitation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Verify reads each of the gate's kinds as itself and nothing else as
// any: the kind, what it binds and carries; Holds neither uses a state up
// nor passes another call's; Use succeeds once; KindError names the kind
// a state is when another was wanted.
func TestVerifyKinds(t *testing.T) {
	r, clk := testRounds()
	b := testBinding(t, `{"a":1}`)
	approval, _ := r.Mint(b, time.Minute)
	parked, _ := r.MintParked(b, "call-1", 3, time.Minute)
	relayed, _ := r.MintRelayed(b, testRound(`"up"`), time.Minute)
	for s, want := range map[string]StateKind{approval: ApprovalState, parked: ParkedState, relayed: RelayedState} {
		n := r.Verifications()
		st, err := r.Verify(s)
		if err != nil || st.Kind != want || st.Binding != b || r.Verifications() != n+1 {
			t.Fatalf("%s: %+v %v", want, st, err)
		}
		for _, k := range []StateKind{ApprovalState, ParkedState, RelayedState} {
			err := KindError(st, nil, k)
			switch {
			case k == want && err != nil:
				t.Errorf("%s as itself: %v", want, err)
			case k != want && err == nil:
				t.Errorf("%s read as %s", want, k)
			case want == ApprovalState && k != want && !errors.Is(err, ErrStateKind):
				t.Errorf("an approval as %s: %v", k, err)
			case want == ParkedState && k == RelayedState && !errors.Is(err, ErrStateKindParked):
				t.Errorf("a parked state as relayed: %v", err)
			}
		}
		other := b
		other.LetBy = "allow"
		if err := r.Holds(st, other); !errors.Is(err, ErrStateMismatch) {
			t.Errorf("%s held for another LetBy: %v", want, err)
		}
		if err := r.Holds(st, b); err != nil {
			t.Errorf("%s: %v", want, err)
		}
		if err := r.Use(st, b); err != nil {
			t.Errorf("%s: first use: %v", want, err)
		}
		if err := r.Use(st, b); !errors.Is(err, ErrStateReplayed) {
			t.Errorf("%s: second use: %v", want, err)
		}
	}
	st, _ := r.Verify(parked)
	if st.Call != "call-1" || st.Round != 3 {
		t.Fatalf("the parked call read back: %+v", st)
	}
	st, _ = r.Verify(relayed)
	if string(st.Relayed.State) != `"up"` || st.Round != 2 || len(st.Relayed.Inputs) != 2 {
		t.Fatalf("the relayed round read back: %+v", st)
	}
	late, _ := r.MintParked(b, "call-1", 4, time.Second)
	st, _ = r.Verify(late)
	clk.add(time.Second)
	if err := r.Holds(st, b); !errors.Is(err, ErrStateExpired) {
		t.Fatalf("expired: %v", err)
	}
	if _, err := r.Verify(strings.Repeat("A", MaxRelayedStateBytes+1)); !errors.Is(err, ErrStateMalformed) {
		t.Fatalf("an oversized state: %v", err)
	}
	if err := KindError(nil, ErrStateForged, ParkedState); !errors.Is(err, ErrStateForged) {
		t.Fatalf("a failed verification's error: %v", err)
	}
}

// Only the states the gate minted verify, each as its own kind, and
// nothing panics.
func FuzzVerify(f *testing.F) {
	r, _ := testRounds()
	b := Binding{Principal: "p", Method: "tools/call", Server: "s", Name: "t", ArgsDigest: "d", Revision: "r"}
	approval, _ := r.Mint(b, time.Hour)
	parked, _ := r.MintParked(b, "c", 1, time.Hour)
	relayed, _ := r.MintRelayed(b, testRound(`"s"`), time.Hour)
	genuine := map[string]StateKind{approval: ApprovalState, parked: ParkedState, relayed: RelayedState}
	for s := range genuine {
		f.Add(s)
		f.Add(s[:len(s)-1] + "A")
		f.Add(strings.Replace(s, ".", "..", 1))
	}
	f.Add("")
	f.Add(".")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := r.Verify(s)
		if err != nil {
			return
		}
		if k, ok := genuine[s]; !ok || st.Kind != k {
			t.Fatalf("%q verified as %s", s, st.Kind)
		}
	})
}

// BenchmarkVerify is one verification of a relayed state carrying an
// upstream state near the 8 KiB bound (the largest the gate writes), and
// of a parked question's: what a retry paid 5 to 8 times before it was
// verified once per request.
func BenchmarkVerify(b *testing.B) {
	r, _ := testRounds()
	bd := Binding{Principal: "p", Method: "tools/call", Server: "s", Name: "t", ArgsDigest: "d", Revision: "r"}
	relayed, err := r.MintRelayed(bd, testRound(`"`+strings.Repeat("x", MaxUpstreamStateBytes-100)+`"`), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	parked, _ := r.MintParked(bd, "c", 1, time.Hour)
	for name, s := range map[string]string{"relayed-8KiB": relayed, "parked": parked} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if _, err := r.Verify(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The canonical digest refuses arguments it would not tell apart from
// others that servers read differently: a lone surrogate escape, bytes
// that are not UTF-8, which all decode to U+FFFD here. A pair, and the
// escaped backslash before a "u", are read as they are.
func TestCanonicalDigestOneReading(t *testing.T) {
	for _, bad := range []string{
		`{"p":"x\ud800"}`, `{"p":"x\udcff"}`, `{"p":"\ud800\u0041"}`, `{"p":"\udc00\ud800"}`, `{"p":"x\uD83D"}`, "{\"p\":\"x\xff\"}",
	} {
		if d, err := CanonicalDigest(json.RawMessage(bad)); err == nil {
			t.Errorf("%q digested as %s", bad, d)
		}
	}
	for _, good := range []string{`{"p":"x\ufffd"}`, `{"p":"\ud83d\ude00"}`, `{"p":"\\ud800"}`, `{"p":"\\\ud83d\ude00 \n"}`, `{"p":"é"}`, ``, `null`} {
		if _, err := CanonicalDigest(json.RawMessage(good)); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	a, _ := CanonicalDigest(json.RawMessage(`{"p":"\ud83d\ude00"}`))
	b, _ := CanonicalDigest(json.RawMessage(`{"p":"😀"}`))
	if a != b {
		t.Error("a surrogate pair and its character digest apart")
	}
}
