package main

import (
	"os"
	"runtime"
)

// oneHostProcs gives the Go runtime one P for the rest of a stdio session,
// unless GOMAXPROCS is set in the environment (which then wins, as always).
//
// Why: a stdio gate relays one host's conversation, one message at a time
// at each hop, and its work per message is a few microseconds between
// system calls. With a P per CPU, every message readied on one thread wakes
// another, which spins looking for work and sleeps again: on a two-CPU
// machine that more than doubled the CPU the gate spent per relayed call
// (`go run ./e2e/bench -cpu unpinned -base-gate OLD -gate NEW`: 105 → 69
// µs per echo call, p50 0.88×, 8 calls in flight 1.38× the calls per
// second, a 1 MB result 0.80×). The HTTP front end, which serves many
// sessions at once, keeps the runtime's default.
//
// It is called once the session's set-up is done, so that the start-up
// work run beside it (the local approval surface, the guard's tables)
// still has every CPU.
func oneHostProcs() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	runtime.GOMAXPROCS(1)
}
