package proxy

import (
	"testing"

	"github.com/mcp-gate/mcp-gate/audit"
)

// decisionIDDigest makes in one allocation a decision's id, the session
// and its sequence number, and audit.Digest of its arguments.
func TestDecisionIDDigest(t *testing.T) {
	s := &Session{Gate: &Gate{}, session: "sess"}
	args := []byte(`{"text":"hello"}`)
	if id, _ := s.decisionIDDigest(nil); id != "sess-1" {
		t.Fatalf("the first id = %q, want sess-1", id)
	}
	id, digest := s.decisionIDDigest(args)
	if id != "sess-2" || digest != audit.Digest(args) {
		t.Fatalf("decisionIDDigest = %q, %q; want sess-2, %q", id, digest, audit.Digest(args))
	}
	if _, other := s.decisionIDDigest([]byte(`{"text":"bye"}`)); other == digest {
		t.Fatal("two arguments gave one digest")
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { s.decisionIDDigest(args) }); n != 1 {
		t.Errorf("decisionIDDigest allocates %v times, want 1", n)
	}
}
