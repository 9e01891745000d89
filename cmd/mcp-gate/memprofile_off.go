//go:build !memprofile

package main

import (
	"fmt"
	"os"
)

// startMemProfile only says that this binary writes no heap profile. The
// release binary does not link the heap profile's writer (pprof's "heap"
// and "allocs" profiles, which reach runtime.MemProfile): the linker then
// turns the runtime's allocation sampling off from the first allocation
// on. Otherwise the runtime records one allocation per 512 KiB allocated,
// walking the allocating stack through the pclntab each time, in every
// gate, for a profile nobody reads: 0.2-0.4 MB of an idle gate's peak
// resident memory (e2e/rssmap; setting runtime.MemProfileRate in main
// comes after the dependencies' initialisers have allocated a megabyte,
// and a change of the rate itself forces one more sample per P), and a
// stack walk for every 1 MB result. Build with -tags memprofile for
// MCP_GATE_MEMPROFILE.
func startMemProfile() func() {
	if os.Getenv("MCP_GATE_MEMPROFILE") != "" {
		fmt.Fprintln(os.Stderr, "mcp-gate: MCP_GATE_MEMPROFILE: this binary writes no heap profile; build it with -tags memprofile")
	}
	return nil
}
