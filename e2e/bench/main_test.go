package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

// The normal test suite compiles the benchmark through this file and checks
// its table's arithmetic; it never runs the benchmark itself.
func TestReportVerdicts(t *testing.T) {
	ms := func(n int) []time.Duration {
		return slices.Repeat([]time.Duration{time.Duration(n) * time.Microsecond}, 10)
	}
	d := &side{target: loadgen.Target{Name: "direct"}, echo1: ms(10), blob1: ms(1000), cold: ms(2000), echo8N: 1000, echo8T: time.Second, idleHWM: 2 << 10}
	g := &side{echo1: ms(25), blob1: ms(1500), cold: ms(6000), echo8N: 399, echo8T: time.Second, idleHWM: 15 << 10, loadHWM: 26 << 10}
	var out bytes.Buffer
	report(&out, config{cpu: "pinned", rounds: 1}, d, g, time.Second)
	for _, want := range []string{
		"| echo c=1 p50 | 10 µs | 25 µs | 2.50× | ≤ 2.5× | PASS |",
		"| echo c=8 calls/s | 1000 | 399 | 0.40× | ≥ 0.4× | MISS |",
		"| 1 MB c=1 p50 | 1.00 ms | 1.50 ms | 1.50× | ≤ 1.6× | PASS |",
		"| cold start p50 | 2.00 ms | 6.00 ms | 3.00× | ≤ 2.5× | MISS |",
		"| peak RSS, idle | 2.0 MB | 15.0 MB | | ≤ 15 MB | PASS |",
		"| peak RSS, 1 MB c=8 | 0.0 MB | 26.0 MB | | ≤ 25 MB | MISS |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	report(&out, config{cpu: "unpinned", rounds: 1}, d, g, time.Second)
	if !strings.Contains(out.String(), "| 1.50× | ≤ 1.3× | MISS |") {
		t.Errorf("unpinned, 1 MB at 1.5× must miss its 1.3× target:\n%s", out.String())
	}
}
