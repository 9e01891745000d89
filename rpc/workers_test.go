package rpc

import (
	"sync"
	"testing"
	"time"
)

// waitIdle waits until w has n idle workers.
func waitIdle(t *testing.T, w *workers, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("idle workers = %d, want %d", w.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A call handed over while a worker waits runs on that worker, not on a
// new goroutine: the waiting worker is taken (idle drops to 0 while the
// call runs).
func TestWorkersReuseAWaitingWorker(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	w := newWorkers(done)
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	<-ran
	waitIdle(t, w, 1)

	// A worker counts itself waiting just before it waits: a call that
	// comes in between goes to a new goroutine, as designed (workers.go),
	// and a loaded machine can deschedule the worker there for longer
	// than waitIdle takes to see the count (1 in 300 runs under -race
	// with two CPU hogs). So a call that went to a new goroutine is let
	// go and another is handed over, each to a waiting worker if one has
	// reached its wait; none of several reaching one fails.
	for attempt := 1; ; attempt++ {
		n := w.idle.Load() // every worker counted (waitIdle)
		hold, started := make(chan struct{}), make(chan struct{})
		w.run(func() { close(started); <-hold })
		<-started
		got := w.idle.Load()
		close(hold)
		if got == n-1 {
			waitIdle(t, w, n)
			return // taken by a waiting worker
		}
		if got != n || attempt == 10 {
			t.Fatalf("while a call runs, %d workers wait of %d waiting before it (attempt %d): it was not handed to a waiting one", got, n, attempt)
		}
		waitIdle(t, w, n+1) // the new goroutine's worker waits too now
		time.Sleep(time.Millisecond)
	}
}

// No queue and no limit: calls that block never keep a later call from
// starting, however many there are.
func TestWorkersNeverQueue(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	w := newWorkers(done)
	const n = 3 * maxIdleWorkers
	hold := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		w.run(func() { started.Done(); <-hold })
	}
	ok := make(chan struct{})
	go func() { started.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(10 * time.Second):
		t.Fatalf("not all of %d blocking calls started: calls wait for each other", n)
	}
	close(hold)
	// Only maxIdleWorkers of them stay to wait for more.
	waitIdle(t, w, maxIdleWorkers)
	time.Sleep(20 * time.Millisecond)
	if got := w.idle.Load(); got != maxIdleWorkers {
		t.Errorf("idle workers = %d after a burst of %d, want the cap %d", got, n, maxIdleWorkers)
	}
}

// The workers of a closed Conn end.
func TestWorkersEndWithTheConn(t *testing.T) {
	done := make(chan struct{})
	w := newWorkers(done)
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 4 {
		wg.Add(1)
		w.run(func() { wg.Done(); <-hold })
	}
	wg.Wait() // four at once: four workers
	close(hold)
	waitIdle(t, w, 4)
	close(done)
	waitIdle(t, w, 0)
	// A call after the close still runs (a Conn answers what it read),
	// and its worker does not stay.
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	<-ran
	waitIdle(t, w, 0)
}

// deep uses about n KB of stack, as a relayed call's path does.
//
//go:noinline
func deep(n int) byte {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deep(n-1) + pad[n%len(pad)]
}

// The cost the workers save: a call whose path needs 16 KB of stack, on a
// new goroutine each time (go) and handed to a waiting worker (workers).
func BenchmarkServeGoroutine(b *testing.B) {
	call := func(wg *sync.WaitGroup) func() { return func() { deep(16); wg.Done() } }
	b.Run("go", func(b *testing.B) {
		var wg sync.WaitGroup
		f := call(&wg)
		for b.Loop() {
			wg.Add(1)
			go f()
			wg.Wait()
		}
	})
	b.Run("workers", func(b *testing.B) {
		done := make(chan struct{})
		defer close(done)
		w := newWorkers(done)
		var wg sync.WaitGroup
		f := call(&wg)
		for b.Loop() {
			wg.Add(1)
			w.run(f)
			wg.Wait()
		}
	})
}

// A worker that waits idleFor for nothing ends: a quiet session keeps no
// goroutines. One that gets a call in time stays.
func TestWorkersEndWhenQuiet(t *testing.T) {
	w := waitingWorkers(t, 50*time.Millisecond, 3)
	waitIdle(t, w, 0) // all three end, the Conn still open
}

// waitingWorkers returns the workers of an open Conn, ending idle ones
// after idleFor, once n of them have served a call each at once and
// wait for the next.
func waitingWorkers(t *testing.T, idleFor time.Duration, n int32) *workers {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	w := newWorkers(done)
	w.idleFor = idleFor
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range n {
		wg.Add(1)
		w.run(func() { wg.Done(); <-hold })
	}
	wg.Wait() // n at once: n workers
	close(hold)
	waitIdle(t, w, n)
	return w
}

// A session whose calls thin out keeps only the workers it still uses:
// each period with calls ends one waiting worker beyond the first, even
// though, handed calls in turn (a channel's waiting receivers take sends
// first come, first served), each of them gets one well within a period.
func TestWorkersThinOut(t *testing.T) {
	w := waitingWorkers(t, 200*time.Millisecond, 4)
	deadline := time.Now().Add(10 * time.Second)
	for w.idle.Load() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still wait for calls that come one at a time", w.idle.Load())
		}
		ran := make(chan struct{})
		w.run(func() { close(ran) })
		<-ran
		time.Sleep(time.Millisecond)
	}
	waitIdle(t, w, 1)
}
