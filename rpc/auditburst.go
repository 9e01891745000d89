package rpc

import "github.com/mcp-gate/mcp-gate/audit"

// The audit log gathers the records of a burst as a Stream gathers its
// messages (audit/group.go), and where a Stream does: on one CPU, where
// the goroutines of a burst only run while one of them yields (grouping).
func init() {
	if oneCPU {
		audit.SetBurstSource(burstReads.Load)
	}
}
