package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestOneHostProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	// t.Setenv puts the variable back as it was, set or not, whatever
	// the test does with it meanwhile.
	t.Setenv("GOMAXPROCS", "")

	// Set by whoever started the gate: theirs to decide, left alone.
	runtime.GOMAXPROCS(3)
	os.Setenv("GOMAXPROCS", "3")
	oneHostProcs()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("with GOMAXPROCS=3 in the environment the gate set %d Ps, want the 3 asked for", got)
	}

	// Not set: one P for the stdio session.
	os.Unsetenv("GOMAXPROCS")
	oneHostProcs()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("without GOMAXPROCS the stdio gate runs with %d Ps, want 1", got)
	}
}

// oneHostProcsBy drops to one P a moment later, off the caller's path:
// after the first relayed answer (settleDelay) and, for a session that
// never relays a request, after settleLatest at the latest.
func TestOneHostProcsBy(t *testing.T) {
	for _, d := range []time.Duration{settleDelay, 20 * time.Millisecond} {
		prev := runtime.GOMAXPROCS(2)
		t.Setenv("GOMAXPROCS", "")
		os.Unsetenv("GOMAXPROCS")
		timer := oneHostProcsBy(d)
		for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("10 s after oneHostProcsBy(%v) the gate still runs with %d Ps; want 1", d, runtime.GOMAXPROCS(0))
			}
		}
		timer.Stop()
		runtime.GOMAXPROCS(prev)
	}
}
