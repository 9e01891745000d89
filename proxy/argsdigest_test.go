package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// A 2026-07-28 retry's arguments are digested once: the decision and the
// resume of the same request read the same slice, and the second read is
// the first's answer (here shown by changing the bytes in between, which
// no caller does); other arguments, and a 2025 request (no modernReq), are
// digested afresh.
func TestArgsDigestOncePerRequest(t *testing.T) {
	want, err := elicitation.CanonicalDigest(json.RawMessage(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	m := &modernReq{}
	args := json.RawMessage(`{"a":1}`)
	if d, err := m.argsDigest(args); err != nil || d != want {
		t.Fatalf("first digest %q %v, want %q", d, err, want)
	}
	args[5] = '2'
	if d, _ := m.argsDigest(args); d != want {
		t.Fatalf("the same arguments were digested again: %q", d)
	}
	other := json.RawMessage(`{"a":2}`)
	want2, _ := elicitation.CanonicalDigest(other)
	if d, _ := m.argsDigest(other); d != want2 || d == want {
		t.Fatalf("other arguments: %q, want %q", d, want2)
	}
	if d, _ := (*modernReq)(nil).argsDigest(other); d != want2 {
		t.Fatalf("without a modern request: %q, want %q", d, want2)
	}
	// Malformed arguments keep their error.
	bad := json.RawMessage(`{"a":`)
	if _, err := m.argsDigest(bad); err == nil {
		t.Fatal("malformed arguments digested")
	}
	if _, err := m.argsDigest(bad); err == nil {
		t.Fatal("malformed arguments digested the second time")
	}
	// No arguments at all are remembered too.
	d1, _ := m.argsDigest(nil)
	d2, _ := m.argsDigest(nil)
	if d1 == "" || d1 != d2 {
		t.Fatalf("no arguments: %q then %q", d1, d2)
	}
}
