package main

import (
	"os"
	"runtime"
	"testing"
)

func TestOneHostProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	env, had := os.LookupEnv("GOMAXPROCS")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOMAXPROCS", env)
		} else {
			os.Unsetenv("GOMAXPROCS")
		}
	})

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
