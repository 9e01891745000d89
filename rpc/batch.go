package rpc

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"

	"github.com/mcp-gate/mcp-gate/audit"
)

// Group commit of the small messages of one burst (see Stream.writeBatched).
//
// A burst of k requests read in one read becomes k handler goroutines, and
// k responses read in one read wake k waiting callers; each then writes its
// message. Written one by one, that is a system call per message per hop,
// where the peers on either side batch their own reads and writes. The
// first writer of a burst therefore yields once before it writes: the other
// runnable goroutines of the burst append their messages behind its own,
// and it hands them all to the stream in one write.

// burstReads counts the lines read (by any Stream of the process) while
// more input was already buffered behind them: a burst. A writer yields to
// gather a batch only when a burst was read since its Stream's last group
// write, so that a lone call (a host waiting for each answer) pays no
// yield and no copy, and is written at once as before.
var burstReads atomic.Uint64

// batchMax bounds the bytes a Stream gathers for one group write: a writer
// that finds the batch full writes it at once. It is also the most a batch
// left over by a peer with no room can add to the queue, in one entry.
const batchMax = writeChunk

// batchMsgs bounds the messages of one batch. A batch the peer has no
// room for goes to the queue as one entry, so that a peer that stops
// reading is handed at most this many more messages than the queue's
// writeQueueLen before its writers wait and its stall is seen.
const batchMsgs = writeQueueLen / 2

// batchSmall is the largest message that joins a batch; a larger one is
// written as before (head, payload and tail, from its own bytes), after the
// batch before it.
const batchSmall = 16 << 10

// batchable reports whether o is small enough to be copied into a batch.
func batchable(o outgoing) bool {
	return o.body == nil && o.flushed == nil && len(o.msg) <= batchSmall
}

// writeBatched sends the small message o in direct mode, possibly together
// with the messages other goroutines write while its writer yields. It
// reports false when others' messages are queued (o must go behind them).
// A message appended to a batch counts as sent, as one queued does: the
// order of Writes is the order on the wire, and a failure to send ends the
// Stream for every writer.
func (s *Stream) writeBatched(o outgoing) (bool, error) {
	s.wmu.Lock()
	if s.queued > 0 {
		s.wmu.Unlock()
		return false, nil
	}
	select {
	case <-s.done:
		s.wmu.Unlock()
		return true, s.closedErr()
	default:
	}
	if len(s.batch) == 0 {
		if b := burstReads.Load(); b != s.burstSeen && s.grouping() {
			s.burstSeen = b
		} else {
			// No burst read since the last group write: nobody is
			// likely to add to a batch, so write o at once.
			s.wmu.Unlock()
			return s.writeDirect(o, true)
		}
	} else {
		if len(s.batch)+len(o.msg) <= batchMax && s.batchN < batchMsgs {
			// A flush is pending: its writer sends this one too.
			s.batch = append(s.batch, o.msg...)
			s.batchN++
			s.wmu.Unlock()
			return true, nil
		}
		// Full: write what is gathered now, and start anew with o.
		if err := s.flushBatchLocked(); err != nil {
			s.wmu.Unlock()
			return true, err
		}
		if s.queued > 0 {
			s.wmu.Unlock()
			return false, nil
		}
	}
	s.batch = append(s.batch, o.msg...)
	s.batchN = 1
	s.wmu.Unlock()
	// Let the other runnable goroutines of this burst add theirs. With
	// nothing else to run this returns at once.
	s.yield()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Someone may have written the batch meanwhile (a full batch, a large
	// message, Flush); then what is left is theirs or nothing.
	return true, s.flushBatchLocked()
}

// grouping reports whether a burst's writes are gathered: while the
// process runs Go code on one P (GroupBursts). There the other goroutines
// of a burst can only run while the first yields, and a write per message,
// each a switch to the peer, is what the burst costs.
func (s *Stream) grouping() bool {
	return s.groupAlways || groupBursts.Load()
}

// groupBursts is whether the process gathers the writes of a burst
// (GroupBursts). Until a command says, it is whether the process may run
// on one CPU only (the affinity mask at start, which runtime.NumCPU
// reports), where one P is all it can use at a time.
var groupBursts atomic.Bool

func init() { GroupBursts(runtime.NumCPU() == 1) }

// GroupBursts sets whether the writes of a burst are gathered, the
// messages of each Stream (writeBatched) and the audit records
// (audit.SetBurstSource). A command calls it once it knows its Ps, before
// it serves: on for one P, off for more.
//
// Why by Ps and not by CPUs: what gathering trades is the yield of the
// burst's first writer, which lets the others of the burst append theirs.
// On one P they run in that yield and nowhere else, whatever the CPUs, so
// the burst costs one write per hop where it cost one per message; with
// more Ps they run beside the writer and waiting only holds them back
// (two Ps, unpinned: 0.92-1.06x the calls/s at c=8). The stdio gate runs
// on one P (cmd/mcp-gate/procs.go) on any machine: unpinned on the two
// CPUs of the development VM, gathering there gave 1.12-1.41x the echo
// calls/s at c=8 and 0.59-0.73x the gate's CPU per call, c=1 unchanged
// (`go run ./e2e/bench -cpu unpinned -base-gate OLD -gate NEW`, three runs
// of six rounds). A measurement of 2026 before the gate's reads and writes
// became raw system calls had found 0.75x for it there, and gathering was
// kept to one CPU until this was measured again.
func GroupBursts(on bool) {
	groupBursts.Store(on)
	if on {
		audit.SetBurstSource(burstReads.Load)
	} else {
		audit.SetBurstSource(nil)
	}
}

// GroupingBursts reports what GroupBursts last set.
func GroupingBursts() bool { return groupBursts.Load() }

// flushBatchLocked writes the gathered batch, under wmu: as much as the
// peer has room for at once, the rest queued (in one entry) for the writer
// goroutine. The batch is only ever gathered while nothing is queued, so
// it goes before anything queued after it.
func (s *Stream) flushBatchLocked() error {
	if len(s.batch) == 0 {
		return nil
	}
	b := s.batch
	s.batch, s.batchN = s.batch[:0], 0
	if cap(b) > 2*batchMax {
		s.batch = nil
	}
	select {
	case <-s.done:
		return s.closedErr()
	default:
	}
	n, err := s.writeParts(b, nil, nil)
	if err != nil {
		s.fail(&WriteError{Err: err})
		return s.closedErr()
	}
	if n > 0 {
		s.q.progressed()
	}
	if n == len(b) {
		return nil
	}
	// The peer has no room for the rest: the writer goroutine sends it.
	// The queue holds no message now (queued is 0), so the put does not
	// wait unless flush markers fill it, and it is made under wmu, so no
	// other message comes between.
	s.queued++
	if err := s.q.put(context.Background(), outgoing{msg: bytes.Clone(b[n:])}); err != nil {
		s.queued--
		return err
	}
	return nil
}

// flushBatch writes the gathered batch now (Flush, before a large message).
func (s *Stream) flushBatch() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushBatchLocked()
}
