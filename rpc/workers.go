package rpc

import (
	"sync"
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
// many goroutines behind, and waiting workers end when the calls stop or
// thin out (workerIdle): a session that has gone quiet (an HTTP front end
// holds many) keeps no goroutines for calls that do not come. The garbage collector
// shrinks the stack of a worker that waits, as of any goroutine that uses
// little of its stack.

// maxIdleWorkers is how many finished workers a Conn keeps waiting for a
// call. A few cover the calls a host keeps in flight; past that, a worker
// ends when it finishes, as a goroutine per call did.
const maxIdleWorkers = 16

// workerIdle is how long finished workers wait for another call: a
// period with no call at all ends every waiting worker, and a period with
// calls ends one waiting worker beyond the first, so that a session whose
// load has fallen keeps only the workers it still uses. Calls a host keeps
// coming are far closer together than this.
const workerIdle = 5 * time.Second

// A waiting worker waits on the task channel and the Conn's end alone,
// not on a timer of its own as well: a select with a timer puts the timer
// in the runtime's heap each time the worker blocks and takes it out when
// a call comes, a lock and a heap update twice per call (1-2 % of the
// gate's CPU at 8 calls in flight, pinned). One sweep timer per Conn,
// armed while workers wait, ends them instead (sweep).

// workers hands the peer's calls to waiting goroutines. The zero value is
// not usable: see newWorkers. Its methods are safe for concurrent use.
type workers struct {
	// Set at construction.
	tasks   chan func()     // unbuffered: a send succeeds only into a waiting worker's hands; nil asks the worker to end
	done    <-chan struct{} // the Conn's: its workers end with it
	idleFor time.Duration   // workerIdle, shorter in tests

	idle  atomic.Int32  // workers waiting on tasks, or about to
	calls atomic.Uint64 // calls run so far
	armed atomic.Bool   // the sweep timer is set

	mu    sync.Mutex  // guards the fields below
	timer *time.Timer // the sweep's, made at the first
	seen  uint64      // calls at the last sweep
}

func newWorkers(done <-chan struct{}) *workers {
	return &workers{tasks: make(chan func()), done: done, idleFor: workerIdle}
}

// run runs f on a waiting worker, or on a new goroutine when none waits.
// It never blocks.
func (w *workers) run(f func()) {
	w.calls.Add(1)
	select {
	case w.tasks <- f:
	default:
		go w.work(f)
	}
}

// work runs f, then the calls handed to it while it waits, until the
// Conn is done, maxIdleWorkers others already wait, or a sweep ends it.
func (w *workers) work(f func()) {
	for {
		f()
		f = nil // what the call referred to is not kept alive by the wait
		// Armed before the worker counts itself waiting, so that what
		// comes between the count and the wait is short (a call sent in
		// between goes to a new goroutine); and checked again after it,
		// for a sweep that found none waiting and stopped meanwhile.
		if !w.armed.Load() {
			w.arm()
		}
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		if !w.armed.Load() {
			w.arm()
		}
		select {
		case f = <-w.tasks:
			w.idle.Add(-1)
			if f == nil {
				return // a sweep's
			}
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}

// arm sets the sweep timer unless it is set.
func (w *workers) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed.Load() {
		return
	}
	w.armed.Store(true)
	w.seen = w.calls.Load()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.idleFor, w.sweep)
		return
	}
	w.timer.Reset(w.idleFor)
}

// sweep ends waiting workers after a period of idleFor: every one when no
// call came in the period, else one beyond the first. It sets the timer
// again while workers wait, and ends nothing once the Conn is done (its
// workers end by themselves).
func (w *workers) sweep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
		w.armed.Store(false)
		return
	default:
	}
	calls := w.calls.Load()
	quiet := calls == w.seen
	w.seen = calls
	switch {
	case quiet:
		for w.idle.Load() > 0 && w.endOne() {
		}
	case w.idle.Load() > 1:
		w.endOne()
	}
	if w.idle.Load() == 0 {
		// A worker that becomes idle after this arms the timer anew.
		w.armed.Store(false)
		if w.idle.Load() == 0 {
			return
		}
		w.armed.Store(true)
	}
	w.timer.Reset(w.idleFor)
}

// endOne ends a waiting worker, if one waits at this instant (one that has
// counted itself idle may not have reached its wait yet: the next sweep
// ends it).
func (w *workers) endOne() bool {
	select {
	case w.tasks <- nil:
		return true
	default:
		return false
	}
}
