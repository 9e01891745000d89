package rpc

import (
	"sync/atomic"
	"time"
)

// Each of the peer's calls is served on a goroutine of its own, so that a
// slow one (an approval question, a long tool) holds up nobody. A fresh
// goroutine starts with a small stack, and a relayed call's path (decide,
// audit, forward, guard, answer) is deep enough to outgrow it: the runtime
// then copies the stack, frame by frame, once or twice per call. Measured
// on the echo benchmark at 8 calls in flight, that growth was 11 % of the
// gate's CPU, more than the policy decision and the guard together.
//
// So a goroutine that has served a call waits a while for the next one
// instead of ending, keeping its grown stack: a call handed to a waiting
// worker costs one channel hand-off and no growth. Nothing else changes.
// A call finds an idle worker or gets a new goroutine at once, so there is
// no queue and no limit on the calls served together; only the idle are
// capped (maxIdleWorkers), so that a burst of many calls does not leave as
// many goroutines behind, and a worker that waits workerIdle for nothing
// ends: a session that has gone quiet (an HTTP front end holds many)
// keeps no goroutines for calls that do not come. The garbage collector
// shrinks the stack of a worker that waits, as of any goroutine that uses
// little of its stack.

// maxIdleWorkers is how many finished workers a Conn keeps waiting for a
// call. A few cover the calls a host keeps in flight; past that, a worker
// ends when it finishes, as a goroutine per call did.
const maxIdleWorkers = 16

// workerIdle is how long a finished worker waits for another call. Calls
// a host keeps coming are far closer together than this.
const workerIdle = 5 * time.Second

// workers hands the peer's calls to waiting goroutines. The zero value is
// not usable: see newWorkers. Its methods are safe for concurrent use.
type workers struct {
	// Set at construction.
	tasks   chan func()     // unbuffered: a send succeeds only into a waiting worker's hands
	done    <-chan struct{} // the Conn's: its workers end with it
	idleFor time.Duration   // workerIdle, shorter in tests

	idle atomic.Int32 // workers waiting on tasks, or about to
}

func newWorkers(done <-chan struct{}) *workers {
	return &workers{tasks: make(chan func()), done: done, idleFor: workerIdle}
}

// run runs f on a waiting worker, or on a new goroutine when none waits.
// It never blocks.
func (w *workers) run(f func()) {
	select {
	case w.tasks <- f:
	default:
		go w.work(f)
	}
}

// work runs f, then the calls handed to it while it waits, until the
// Conn is done, maxIdleWorkers others already wait, or none comes for
// idleFor.
func (w *workers) work(f func()) {
	var quiet *time.Timer
	for {
		f()
		f = nil // what the call referred to is not kept alive by the wait
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		// One timer per worker, reset for each wait: since Go 1.23 a
		// Reset timer never delivers a firing from before the Reset.
		if quiet == nil {
			quiet = time.NewTimer(w.idleFor)
		} else {
			quiet.Reset(w.idleFor)
		}
		select {
		case f = <-w.tasks:
			w.idle.Add(-1)
		case <-quiet.C:
			w.idle.Add(-1)
			return
		case <-w.done:
			w.idle.Add(-1)
			quiet.Stop()
			return
		}
	}
}
