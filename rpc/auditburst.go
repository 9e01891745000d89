package rpc

import (
	"runtime"
	"sync/atomic"

	"github.com/mcp-gate/mcp-gate/audit"
)

// The audit log gathers the records of a burst as a Stream gathers its
// messages (audit/group.go), wherever the goroutines of a burst can only
// run while one of them yields: on one CPU (grouping), and in a process
// running on one P, as the stdio gate does after its first relayed answer
// (cmd/mcp-gate/procs.go) even with more CPUs. Messages gather on one CPU
// alone, since a message held back holds back the peer on another CPU
// (batch.go); a record held back holds back only the gate's own next
// write, which it precedes either way. Unpinned on two CPUs, at 8 calls
// in flight, gathering took the audit log's writes from one per call to
// 0.21 and all the gate's system calls from 4.18 per call to 3.33, the
// floor relay's count (e2e/syscount); over four alternating runs of
// 100,000 calls, the gate's system time per call went from 9.9 to 8.0 µs
// and its CPU per call from 25.9 to 24.2 µs, the calls took 0.92x the
// time. A lone call (no burst) is written at once, as before.
//
// The counter of bursts moves only where bursts gather (countsBursts), so
// a record elsewhere finds it unchanged and is written at once.
func init() {
	audit.SetBurstSource(burstReads.Load)
	oneP.Store(runtime.GOMAXPROCS(0) == 1)
}

// oneP is whether GOMAXPROCS was 1 when a Stream last looked.
var oneP atomic.Bool

// procsLookEvery is how many lines with more input behind them a Stream
// reads between looks at GOMAXPROCS (which takes the scheduler's lock):
// the stdio gate drops to one P once, early, and its bursts gather from
// the next look on.
const procsLookEvery = 256

// countsBursts reports whether a line read with more input behind it is
// counted as a burst (burstReads): where messages gather (grouping) or the
// process runs on one P. It is called by the Stream's reader alone.
func (s *Stream) countsBursts() bool {
	s.procsLook++
	if s.procsLook%procsLookEvery == 1 {
		oneP.Store(runtime.GOMAXPROCS(0) == 1)
	}
	return s.grouping() || oneP.Load()
}
