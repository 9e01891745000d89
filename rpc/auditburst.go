package rpc

import "github.com/mcp-gate/mcp-gate/audit"

// The audit log gathers the records of a burst as a Stream gathers its
// messages (audit/group.go), and where a Stream does: on one CPU, where
// the goroutines of a burst only run while one of them yields (grouping).
//
// Not on one P with more CPUs (the stdio gate unpinned, which runs on one
// P): tried, it took the gate's system calls at 8 calls in flight from
// 4.2 to 3.4 per call (the audit writes from 1 to 0.21, e2e/syscount) and
// its CPU per call down by some 6 %, but in two runs of six alternating
// rounds of 60,000 calls the calls took 1.1x and 1.4x as long: the first
// call of each burst reaches the upstream only after the others' records,
// while the peers on the other CPU wait, as batch.go found for messages.
func init() {
	if oneCPU {
		audit.SetBurstSource(burstReads.Load)
	}
}
