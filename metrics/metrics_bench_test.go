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

// BenchmarkDecisionUncached is the same through the client library's own
// label lookup, which the cache in Metrics replaces.
func BenchmarkDecisionUncached(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.decisions.WithLabelValues("tool", "github", "allow", "allow[0]").Inc()
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
