package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Large results with eight calls outstanding, through the binary: the
// gate reads an upstream's large results only as fast as it passes them on
// (rpc.Limits.PaceLargeLines), so every result must still arrive whole and
// to its own call, small calls beside them must be answered, results the
// guard rewrites (whose lines are released when their request is answered,
// not when written) must not hold the others up, and the gate's peak
// memory stays within ten times issue 9's bound of 25 MB (the benchmark,
// e2e/bench, measures it; this only catches a runaway).
func TestLargeResultsPaced(t *testing.T) {
	// Not parallel (see harness_test.go): measures the gate's peak RSS under large results.
	g := gateCommand(t, map[string]server{"up": testserver("honest")}, "--log-level", "info")
	sess := g.connect(t, nil)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				n := 1<<20 + 7*w + i // each its own size: a mix-up shows
				res := call(t, sess, "up__blob", map[string]any{"bytes": n})
				if res.IsError {
					t.Errorf("blob %d/%d: error result %s", w, i, resultText(res))
					return
				}
				if got := resultText(res); len(got) != n || strings.Trim(got, "x") != "" {
					t.Errorf("blob %d/%d: got %d bytes, want %d x's", w, i, len(got), n)
				}
			}
		}()
	}
	wg.Add(2)
	go func() { // small calls beside them
		defer wg.Done()
		for i := range 20 {
			want := fmt.Sprintf("small %d", i)
			if got := resultText(call(t, sess, "up__echo", map[string]any{"text": want})); got != want {
				t.Errorf("echo: got %q, want %q", got, want)
			}
		}
	}()
	go func() { // large results the guard rewrites: hidden characters made visible
		defer wg.Done()
		for i := range 4 {
			text := strings.Repeat("ab\u200bcd ", 30000) + fmt.Sprint(i)
			res := call(t, sess, "up__echo", map[string]any{"text": text})
			got := resultText(res)
			if res.IsError || strings.Contains(got, "\u200b") || !strings.HasSuffix(got, fmt.Sprint(i)) || len(got) < len(text) {
				t.Errorf("rewritten echo %d: error %v, %d bytes, hidden characters left: %v", i, res.IsError, len(got), strings.Contains(got, "\u200b"))
			}
		}
	}()
	wg.Wait()
	if _, hwm := procMemKB(g.cmd.Process.Pid); hwm > 250<<10 {
		t.Errorf("the gate's peak RSS was %d MB, over ten times the 25 MB bound", hwm>>10)
	}
}
