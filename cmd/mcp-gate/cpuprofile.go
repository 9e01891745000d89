package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile of the whole run to the file named by
// MCP_GATE_CPUPROFILE, for the benchmark's profiling (e2e/bench -profile).
// It is deliberately not a flag: it is a developer's tool, not part of the
// command's interface. The returned function stops the profile.
func startCPUProfile() func() {
	path := os.Getenv("MCP_GATE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
