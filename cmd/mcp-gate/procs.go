package main

import (
	"os"
	"runtime"
	"time"
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
// It is called once the session has settled, a moment after its first
// relayed request has its answer (proxy.Options.Settled, oneHostProcsBy(settleDelay)),
// or settleLatest after the start if none is ever relayed (oneHostProcsBy):
// the start-up burst (the gate's set-up, the first child's start beside
// the gate's own work for it: the guard's tables, the pins, the child's
// lists) runs on every CPU, and the drop does not cost the cold start its
// price. That price is some 146 page faults, half a millisecond unpinned:
// the runtime hands the removed P's cached spans back to shared lists
// whose blocks are touched then for the first time. Against the drop
// before the session was served, as this did before, the cold start
// unpinned took 0.93-0.99x (`go run ./e2e/bench -base-gate OLD -gate NEW
// -only cold -cpu unpinned -cold 30`, four runs, on a loaded machine),
// for some 0.5-0.9 ms more CPU (the second P spins, and the drop is paid
// later); a drop as soon as the flags were read, or at the first launch,
// was no faster (docs/design.md, "Cold start: where it goes"). Pinned, Go
// starts with one P and nothing changes.
func oneHostProcs() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	runtime.GOMAXPROCS(1)
}

// settleDelay is how long after the first relayed answer the P goes: the
// answer is written to the host after the call path returns, and the drop
// stops the world, which should not hold that write.
const settleDelay = time.Millisecond

// settleLatest bounds how long a stdio session keeps every CPU when no
// request is ever relayed (a host that only lists from the catalog cache,
// or whose every call is refused): the start-up burst is long over by
// then, and a second drop is a no-op.
const settleLatest = 2 * time.Second

// oneHostProcsBy runs oneHostProcs d from now, off the caller's path:
// settleDelay after the first relayed answer (proxy.Options.Settled), and
// settleLatest after the start whatever the session does.
func oneHostProcsBy(d time.Duration) *time.Timer { return time.AfterFunc(d, oneHostProcs) }
