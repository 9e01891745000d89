// Package gopool runs functions on goroutines kept for reuse.
//
// A new goroutine starts on the smallest stack, and a path as deep as a
// served request's (the handler, the decision, the forward, the send) grows
// it two or three times, each growth a copy of the stack: on a small call
// that is a good part of the gate's CPU. Go runs f on an idle goroutine,
// whose stack has grown already (the garbage collector shrinks an idle
// one's by half at most per cycle), and starts one only when none is idle.
// At most MaxIdle wait; one that finds that many waiting ends.
package gopool

import "sync/atomic"

// MaxIdle bounds the goroutines kept waiting for a function.
const MaxIdle = 16

var (
	jobs = make(chan func()) // unbuffered: taken only by a waiting goroutine
	idle atomic.Int32
)

// Go runs f on a goroutine of its own, as `go f()` does.
func Go(f func()) {
	select {
	case jobs <- f:
	default:
		go worker(f)
	}
}

func worker(f func()) {
	for {
		f()
		f = nil // what f held is not kept while waiting
		if idle.Add(1) > MaxIdle {
			idle.Add(-1)
			return
		}
		f = <-jobs
		idle.Add(-1)
	}
}
