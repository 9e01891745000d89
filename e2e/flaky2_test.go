package e2e

import (
	"testing"
	"time"
)

// Helpers for tests whose property involves time, written so that a busy
// machine (CI runs every package at once on two cores) cannot fail them
// while the product is right.

// policyReloadLatency is what the policy watcher takes, by design, from an
// edit to the swap: its debounce (100 ms) and then the settle time, four
// debounces in which the content must hold still (policy/store.go,
// reloadDebounce and settleFactor). A bound on a reload is a multiple of
// it.
const policyReloadLatency = 100*time.Millisecond + 4*100*time.Millisecond

// firstAuditTime returns when the gate wrote the first audit record whose
// event is event and for which match (nil: any) holds, as the record's own
// "time" says: the gate's clock at the moment it acted, free of however
// long the host then took to notice.
func firstAuditTime(t *testing.T, g *gate, event string, match func(map[string]any) bool) (time.Time, bool) {
	t.Helper()
	for _, l := range g.auditLines(t) {
		if l["event"] != event || match != nil && !match(l) {
			continue
		}
		s, _ := l["time"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("the %s audit record has no time the gate wrote: %v: %v", event, err, l)
		}
		return at, true
	}
	return time.Time{}, false
}
