package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile writes a CPU profile of the whole run to the file named by
// MCP_GATE_CPUPROFILE, and an execution trace to the one named by
// MCP_GATE_TRACE (go tool trace -pprof=sched or =syscall shows where the
// wall-clock time goes that a CPU profile does not), for the benchmark's
// profiling (e2e/bench -profile), and, in a binary built with -tags
// memprofile, a heap profile at the end of the run to the one named by
// MCP_GATE_MEMPROFILE (memprofile_on.go). They are deliberately not flags:
// they are developer's tools, not part of the command's interface. The
// returned function stops them all.
func startCPUProfile() func() {
	var stops []func()
	if path := os.Getenv("MCP_GATE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_CPUPROFILE: %v\n", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_CPUPROFILE: %v\n", err)
			f.Close()
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := os.Getenv("MCP_GATE_TRACE"); path != "" {
		if f, err := os.Create(path); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_TRACE: %v\n", err)
		} else if err := trace.Start(f); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-gate: MCP_GATE_TRACE: %v\n", err)
			f.Close()
		} else {
			stops = append(stops, func() { trace.Stop(); f.Close() })
		}
	}
	if stop := startMemProfile(); stop != nil {
		stops = append(stops, stop)
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}
