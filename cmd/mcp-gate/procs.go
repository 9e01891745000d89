package main

import (
	"os"
	"runtime"
	"strconv"

	"github.com/mcp-gate/mcp-gate/rpc"

	// Both run before the other packages' initialisers: see their docs.
	_ "github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/mainstack"
	"github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/oneproc"
)

// procsFor sets the Ps the command runs on. The process starts on one
// (internal/oneproc, before the other initialisers); a stdio session keeps
// it, and every other command, the HTTP front end among them, gets what
// the runtime chose: the runtime's default, which follows the CPU limit.
// GOMAXPROCS in the environment wins for every command, as always.
//
// Why one for a stdio session: it relays one host's conversation, one
// message at a time at each hop, and its work per message is a few
// microseconds between system calls. With a P per CPU, every message
// readied on one thread wakes another, which spins looking for work and
// sleeps again: on a two-CPU machine that more than doubled the CPU the
// gate spent per relayed call (`go run ./e2e/bench -cpu unpinned
// -base-gate OLD -gate NEW`: 105 → 69 µs per echo call, p50 0.88×, 8 calls
// in flight 1.38× the calls per second, a 1 MB result 0.80×). The HTTP
// front end, which serves many sessions at once, keeps the runtime's
// default. Why from the start rather than once the session has settled:
// oneproc's doc (an idle gate's peak RSS).
func procsFor(stdioSession bool) {
	setProcs(stdioSession)
	// On one P the goroutines of a burst run one at a time, so their
	// writes are gathered (rpc.GroupBursts), whatever the CPUs.
	rpc.GroupBursts(runtime.GOMAXPROCS(0) == 1)
}

func setProcs(stdioSession bool) {
	if v, set := os.LookupEnv("GOMAXPROCS"); set {
		// Parsed as the runtime parses it, a 32-bit integer, so that a
		// value it ignored (3000000000) gets the default back, which
		// follows the CPU limit, rather than the same number set by hand
		// (the count is the same either way: no test can tell them apart).
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
			runtime.GOMAXPROCS(oneproc.AtStart()) // the environment's, as the runtime read it
		} else {
			runtime.SetDefaultGOMAXPROCS() // the runtime ignored it
		}
		return
	}
	if !stdioSession {
		runtime.SetDefaultGOMAXPROCS()
	}
}
