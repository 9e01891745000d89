package gopool

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every function runs, each on a goroutine other than the caller's, and
// at most MaxIdle goroutines stay waiting once they are done.
func TestGo(t *testing.T) {
	base := runtime.NumGoroutine()
	const n = 200
	var wg sync.WaitGroup
	release := make(chan struct{})
	ran := make(chan int, n)
	wg.Add(n)
	for i := range n {
		Go(func() {
			defer wg.Done()
			<-release // all n run at once: none waits for another
			ran <- i
		})
	}
	close(release)
	wg.Wait()
	close(ran)
	seen := map[int]bool{}
	for i := range ran {
		seen[i] = true
	}
	if len(seen) != n {
		t.Fatalf("%d of %d ran", len(seen), n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+MaxIdle && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base+MaxIdle {
		t.Fatalf("%d goroutines left, %d before: at most %d may wait", g, base, MaxIdle)
	}
}

// Functions given one after another run on the goroutines waiting, not on
// a new one each.
func TestGoReuses(t *testing.T) {
	id := make(chan string)
	seen := map[string]bool{}
	for range 100 {
		Go(func() { id <- goroutineID() })
		seen[<-id] = true
		time.Sleep(time.Millisecond) // it waits again
	}
	if len(seen) > MaxIdle+1 {
		t.Fatalf("100 functions, one after another, ran on %d goroutines", len(seen))
	}
}

func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	return strings.Fields(string(b))[1] // "goroutine N [running]:"
}
