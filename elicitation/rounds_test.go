package elicitation

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func testBinding(t *testing.T, args string) Binding {
	t.Helper()
	d, err := CanonicalDigest(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return Binding{Principal: "alice-key", Method: "tools/call", Server: "fs", Name: "write_file", ArgsDigest: d, Revision: "rev-1"}
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testRounds() (*Rounds, *clock) {
	r := NewRounds()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	r.now = c.now
	return r, c
}

func TestRoundsRedeemOnce(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{"path":"/tmp/a","content":"x"}`)
	s, err := r.Mint(b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Redeem(s, b); err != nil {
		t.Fatalf("first redeem: %v", err)
	}
	if err := r.Redeem(s, b); !errors.Is(err, ErrStateReplayed) {
		t.Fatalf("second redeem: %v, want replayed", err)
	}
}

// Every field of the binding is checked: another principal, method, tool,
// server, arguments or policy revision does not redeem, and a refused
// redeem does not use the state up.
func TestRoundsBinding(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{"path":"/tmp/a","content":"x"}`)
	other := func(f func(*Binding)) Binding { c := b; f(&c); return c }
	cases := map[string]Binding{
		"other principal":         other(func(c *Binding) { c.Principal = "mallory-key" }),
		"other method":            other(func(c *Binding) { c.Method = "prompts/get" }),
		"other server":            other(func(c *Binding) { c.Server = "fs2" }),
		"other tool":              other(func(c *Binding) { c.Name = "delete_file" }),
		"re-targeted arguments":   testBinding(t, `{"path":"/etc/passwd","content":"x"}`),
		"policy revision changed": other(func(c *Binding) { c.Revision = "rev-2" }),
	}
	s, err := r.Mint(b, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for name, wrong := range cases {
		if err := r.Redeem(s, wrong); !errors.Is(err, ErrStateMismatch) {
			t.Errorf("%s: %v, want mismatch", name, err)
		}
	}
	if err := r.Redeem(s, b); err != nil {
		t.Fatalf("the right call after refused ones: %v", err)
	}
}

// The digest covers the arguments' meaning, not their spacing or key order,
// and nothing else.
func TestCanonicalDigest(t *testing.T) {
	a := testBinding(t, `{"a":1,"b":[true,"x"]}`).ArgsDigest
	if b := testBinding(t, " {\"b\" : [ true , \"x\" ] ,\n \"a\":1 } ").ArgsDigest; a != b {
		t.Fatal("spacing or key order changed the digest")
	}
	for _, other := range []string{`{"a":1.0,"b":[true,"x"]}`, `{"a":1,"b":["x",true]}`, `{"a":1}`, `null`, ``} {
		if testBinding(t, other).ArgsDigest == a {
			t.Errorf("%s digests like the original", other)
		}
	}
	if testBinding(t, ``).ArgsDigest != testBinding(t, `null`).ArgsDigest {
		t.Error("absent arguments and null differ")
	}
	if _, err := CanonicalDigest(json.RawMessage(`{"a":1} {"b":2}`)); err == nil {
		t.Error("two values digested")
	}
}

func TestRoundsExpiry(t *testing.T) {
	r, c := testRounds()
	b := testBinding(t, `{}`)
	s, _ := r.Mint(b, 30*time.Second)
	c.add(30 * time.Second)
	if err := r.Redeem(s, b); !errors.Is(err, ErrStateExpired) {
		t.Fatalf("at expiry: %v", err)
	}
	s, _ = r.Mint(b, 30*time.Second)
	c.add(29 * time.Second)
	if err := r.Redeem(s, b); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
}

func TestRoundsTamper(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{}`)
	s, _ := r.Mint(b, time.Minute)
	p, sig, _ := strings.Cut(s, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p)
	// A payload re-signed by nobody: the binding edited to another call.
	edited := strings.Replace(string(payload), `"write_file"`, `"delete_file"`, 1)
	forged := base64.RawURLEncoding.EncodeToString([]byte(edited)) + "." + sig
	if err := r.Redeem(forged, b); !errors.Is(err, ErrStateForged) {
		t.Fatalf("edited payload: %v", err)
	}
	// A state of another gate process (another key).
	r2, _ := testRounds()
	s2, _ := r2.Mint(b, time.Minute)
	if err := r.Redeem(s2, b); !errors.Is(err, ErrStateForged) {
		t.Fatalf("other key: %v", err)
	}
	for _, bad := range []string{"", ".", s + ".", s + "x", "x" + s, p, strings.Repeat("a", MaxStateBytes+1), p + "." + sig[:10]} {
		if err := r.Redeem(bad, b); err == nil {
			t.Errorf("%q redeemed", bad)
		}
	}
	if err := r.Redeem(s, b); err != nil {
		t.Fatalf("the genuine state after forgeries: %v", err)
	}
}

// The used-set is bounded: expired entries make room, live ones never
// are forgotten (which would allow a replay), so a full set refuses.
func TestRoundsUsedSetBounded(t *testing.T) {
	r, c := testRounds()
	r.maxOpen = 3
	b := testBinding(t, `{}`)
	var states []string
	for range 4 {
		s, _ := r.Mint(b, time.Minute)
		states = append(states, s)
	}
	for _, s := range states[:3] {
		if err := r.Redeem(s, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Redeem(states[3], b); !errors.Is(err, ErrStateFull) {
		t.Fatalf("full set: %v", err)
	}
	c.add(2 * time.Minute)
	s, _ := r.Mint(b, time.Minute)
	if err := r.Redeem(s, b); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
	if len(r.used) != 1 {
		t.Fatalf("used-set holds %d entries, want 1", len(r.used))
	}
}

func TestAnswerFrom(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{}`)
	mint := func() string { s, _ := r.Mint(b, time.Minute); return s }
	cases := []struct {
		responses string
		want      Outcome
	}{
		{`{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`, Approved},
		{`{"mcp-gate-approval":{"action":"accept","content":{"approve":true,"scope":"session"}}}`, Approved},
		{`{"mcp-gate-approval":{"action":"accept","content":{"approve":false}}}`, Declined},
		{`{"mcp-gate-approval":{"action":"decline"}}`, Declined},
		{`{"other":{"action":"accept","content":{"approve":true}}}`, Malformed},
		{`{"mcp-gate-approval":{"action":"accept","content":{"approve":true}},"mcp-gate-approval":{"action":"decline"}}`, Malformed},
		{``, Malformed},
	}
	for _, c := range cases {
		if a := r.AnswerFrom(json.RawMessage(c.responses), mint(), b); a.Outcome != c.want {
			t.Errorf("%s: %s (%s), want %s", c.responses, a.Outcome, a.Detail, c.want)
		}
	}
	s := mint()
	yes := json.RawMessage(`{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`)
	r.AnswerFrom(yes, s, b)
	if a := r.AnswerFrom(yes, s, b); a.Outcome != BadState || !strings.Contains(a.Detail, "used before") {
		t.Fatalf("replayed answer: %+v", a)
	}
}

func TestInputRequiredShape(t *testing.T) {
	ir, err := InputRequired(Request{Server: "fs", Tool: "write", Args: json.RawMessage(`{}`), OnceOnly: true, Titled: true}, "st.ate")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode            string `json:"mode"`
				Message         string `json:"message"`
				RequestedSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"requestedSchema"`
			} `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(ir, &v); err != nil {
		t.Fatalf("%s: %v", ir, err)
	}
	q := v.InputRequests[ApprovalInputKey]
	if v.ResultType != "input_required" || v.RequestState != "st.ate" || q.Method != "elicitation/create" || q.Params.Mode != "form" ||
		!strings.HasPrefix(q.Params.Message, MessagePrefix) || len(q.Params.RequestedSchema.Required) != 1 || len(q.Params.RequestedSchema.Properties) != 1 {
		t.Fatalf("input-required result: %s", ir)
	}
}

// FuzzRedeem: whatever the host sends as requestState, Redeem never
// panics, and only the genuine state redeems, once.
func FuzzRedeem(f *testing.F) {
	r, _ := testRounds()
	b := Binding{Principal: "p", Method: "tools/call", Server: "s", Name: "t", ArgsDigest: "d", Revision: "r"}
	genuine, _ := r.Mint(b, time.Hour)
	f.Add(genuine)
	f.Add("")
	f.Add(".")
	f.Add("eyJ2IjoxfQ.AAAA")
	f.Add(genuine[:len(genuine)-1] + "A")
	f.Add(strings.Replace(genuine, ".", "..", 1))
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := r.parseState(s); err == nil && s != genuine {
			t.Fatalf("%q parsed, but only the genuine state can", s)
		}
		_ = r.Redeem(s, b)
	})
}

// Two retries racing with one state: exactly one redeems.
func TestRoundsConcurrentRedeem(t *testing.T) {
	r, _ := testRounds()
	b := testBinding(t, `{"x":1}`)
	s, _ := r.Mint(b, time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.Redeem(s, b) == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d retries redeemed one state", ok)
	}
}
