//go:build memprofile

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startMemProfile writes a heap profile at the end of the run to the file
// named by MCP_GATE_MEMPROFILE: its alloc_space view names what allocated
// the bytes the collector had to reclaim (with GODEBUG=memprofilerate=1,
// every allocation). Only a binary built with -tags memprofile has it:
// see memprofile_off.go for why.
func startMemProfile() func() {
	path := os.Getenv("MCP_GATE_MEMPROFILE")
	if path == "" {
		return nil
	}
	return func() {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_MEMPROFILE: %v\n", err)
			return
		}
		defer f.Close()
		// The profile is as of the last completed collection: one now
		// brings in what was allocated since (a burst at the end of a
		// run, such as the bench's last scenario, would be missing).
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_MEMPROFILE: %v\n", err)
		}
	}
}
