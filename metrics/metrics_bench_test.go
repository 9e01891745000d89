package metrics

import (
	"testing"
	"time"
)

// BenchmarkDecision is what one decision costs with metrics on.
func BenchmarkDecision(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.Decision("tool", "github", "allow", "allow[0]")
	}
}

// BenchmarkDecisionUncached is the same through the library's own lookup
// by series name, which the cache in Metrics replaces.
func BenchmarkDecisionUncached(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.set.GetOrCreateCounter(seriesName(decisionsName, []string{"kind", "rule", "server", "verdict"},
			[]string{"tool", "allow[0]", "github", "allow"})).Inc()
	}
}

// BenchmarkCallDone is what one forwarded call costs with metrics on.
func BenchmarkCallDone(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.CallDone("github", "tools/call", time.Millisecond, false)
	}
}

// BenchmarkScrape is what one scrape costs, rendered whole.
func BenchmarkScrape(b *testing.B) {
	m := New(Options{Version: "v", PolicyRevision: func() string { return "sha256:aaaaaaaaaaaa" }})
	for _, s := range []string{"a", "b", "c"} {
		m.Decision("tool", s, "allow", "allow[0]")
		m.CallDone(s, "tools/call", time.Millisecond, false)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.gather(); err != nil {
			b.Fatal(err)
		}
	}
}
