//go:build linux

package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fullPipe returns a Logger writing to a blocking pipe nobody reads, once
// a record has failed for want of room in it, and the pipe's read end.
func fullPipe(t *testing.T) (*Logger, *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	t.Cleanup(func() { r.Close(); w.Close() })
	a := New(w)
	for i := 0; ; i++ {
		err := a.Decision(Decision{ID: fmt.Sprintf("fill-%d", i), Reason: strings.Repeat("x", 300)})
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("filling the pipe: %v", err)
			}
			return a, r
		}
	}
}

// The wait for room in a pipe nobody reads is bounded for the calls
// together, not per record: the records of a burst queue behind one
// another for the log, so a wait of pipeWait each made the last of 20
// calls wait 20 times pipeWait before it was refused (a stalled log
// shipper's FIFO under a team's calls: the hundredth refused after
// 1000 s). Once the pipe has taken nothing for pipeWait, a record that
// finds it still full fails at once.
func TestAuditPipeStallBoundsABurst(t *testing.T) {
	defer func(w time.Duration) { pipeWait = w }(pipeWait)
	pipeWait = 300 * time.Millisecond
	a, _ := fullPipe(t)
	const n = 20
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- a.Decision(Decision{ID: fmt.Sprintf("burst-%d", i)})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a record of the burst: %v; want its wait's deadline", err)
		}
	}
	if took := time.Since(start); took > 3*pipeWait {
		t.Fatalf("%d records into a pipe full for pipeWait (%v) took %v to fail", n, pipeWait, took)
	}
}

// A reader that is slow but steady is waited for: the bound counts from
// the last time the pipe took anything, so a record larger than the room
// the reader frees in pipeWait still goes through whole.
func TestAuditPipeSlowSteadyReaderWaitedFor(t *testing.T) {
	defer func(w time.Duration) { pipeWait = w }(pipeWait)
	pipeWait = 300 * time.Millisecond
	a, r := fullPipe(t)
	// The reader comes back, slowly: 4 KiB every 100 ms.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		buf := make([]byte, 4096)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
		}
	}()
	// A line the pipe has room for only after about 2 s of that reading,
	// more than pipeWait: more than 64 KiB, the pipe's size.
	line := []byte("{" + strings.Repeat("z", 100<<10) + "}\n")
	if _, err := a.w.Write(line); err != nil {
		t.Fatalf("a 100 KiB line behind a reader freeing 40 KiB/s, within %v of each read: %v", pipeWait, err)
	}
}
