package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The test suite builds the tool and runs one short burst of it: the
// storm itself is run by hand (it is not a timed test).
func TestStormSmoke(t *testing.T) {
	r, err := run(config{duration: time.Millisecond, c: 2, burst: 3, gap: time.Millisecond, halfPause: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.clean() || r.bursts != 1 || r.decisions == 0 {
		t.Fatalf("a short storm reports:\n%s", r)
	}
}

// The check fails a decision made on a content never written whole (a
// half-written file the gate took for a policy), one with a verdict its
// policy does not give, and a reload to such a content.
func TestStormCheckCatchesHalfPolicies(t *testing.T) {
	whole := content(1, true)
	half := whole[:len(whole)/2+10]
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	lines := fmt.Sprintf(`{"time":"2026-01-01T00:00:00Z","event":"decision","tool":"echo","verdict":"allow","revision":%q}
{"time":"2026-01-01T00:00:00Z","event":"decision","tool":"echo","verdict":"deny","revision":%q}
{"time":"2026-01-01T00:00:00Z","event":"decision","tool":"echo","verdict":"deny","revision":%q}
{"time":"2026-01-01T00:00:00Z","event":"policy_reload","ok":true,"revision":%q}
`, revision(whole), revision(whole), revision(half), revision(half))
	os.WriteFile(path, []byte(lines), 0o600)
	var r result
	if err := check(&r, path, map[string]string{revision(whole): "allow"}); err != nil {
		t.Fatal(err)
	}
	if r.decisions != 3 || r.mismatches != 2 || r.badReloads != 1 || r.clean() {
		t.Fatalf("decisions %d, mismatches %d, bad reloads %d; want 3, 2, 1", r.decisions, r.mismatches, r.badReloads)
	}
}
