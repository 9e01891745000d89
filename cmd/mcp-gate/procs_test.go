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

// oneHostProcsSoon drops to one P a moment later, off the caller's path.
func TestOneHostProcsSoon(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	oneHostProcsSoon()
	for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after oneHostProcsSoon the gate still runs with %d Ps; want 1", runtime.GOMAXPROCS(0))
		}
	}
}

// A session that never relays a request still drops to one P: by
// oneHostProcsBy's bound at the latest.
func TestOneHostProcsBy(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	defer oneHostProcsBy(20 * time.Millisecond).Stop()
	for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after oneHostProcsBy(20ms) the gate still runs with %d Ps; want 1", runtime.GOMAXPROCS(0))
		}
	}
}
