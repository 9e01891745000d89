package rpc

import "sync/atomic"

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
// many goroutines behind. The garbage collector shrinks the stack of a
// worker that waits, as of any goroutine that uses little of its stack.

// maxIdleWorkers is how many finished workers a Conn keeps waiting for a
// call. A few cover the calls a host keeps in flight; past that, a worker
// ends when it finishes, as a goroutine per call did.
const maxIdleWorkers = 16

// workers hands the peer's calls to waiting goroutines. The zero value is
// not usable: see newWorkers. Its methods are safe for concurrent use.
type workers struct {
	// Set at construction.
	tasks chan func()     // unbuffered: a send succeeds only into a waiting worker's hands
	done  <-chan struct{} // the Conn's: its workers end with it

	idle atomic.Int32 // workers waiting on tasks, or about to
}

func newWorkers(done <-chan struct{}) *workers {
	return &workers{tasks: make(chan func()), done: done}
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
// Conn is done or maxIdleWorkers others already wait.
func (w *workers) work(f func()) {
	for {
		f()
		f = nil // what the call referred to is not kept alive by the wait
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.tasks:
			w.idle.Add(-1)
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}
