package upstream

import (
	"context"
	"testing"
	"time"
)

// blockingWatcher is a Connection whose UnreadInput blocks until released,
// so that a test can hold the probe's watcher inside a tick.
type blockingWatcher struct {
	Connection // never called
	entered    chan struct{}
	release    chan struct{}
}

func (b *blockingWatcher) UnreadInput() (int, bool) {
	select {
	case b.entered <- struct{}{}:
		<-b.release
	default: // the first look, in probeContext, and any after the test's
	}
	return 0, true
}

func (b *blockingWatcher) Flush(context.Context) error { return nil }

// Nothing of the probe runs once it is over: its cancel waits for the
// watcher, so the watcher neither outlives the probe nor reads a setting
// (ProbeTimeout) a caller changes after it (the race detector caught a
// test restoring ProbeTimeout while a finished probe's watcher read it).
func TestProbeCancelWaitsForWatcher(t *testing.T) {
	w := &blockingWatcher{entered: make(chan struct{}), release: make(chan struct{})}
	s := &Session{up: w}
	_, cancel := s.probeContext(context.Background())
	select {
	case <-w.entered: // the watcher is inside a tick's UnreadInput
	case <-time.After(10 * time.Second):
		t.Fatal("the probe's watcher never looked at the server's input")
	}
	cancelled := make(chan struct{})
	go func() { cancel(); close(cancelled) }()
	select {
	case <-cancelled:
		t.Fatal("the probe's cancel returned while its watcher was still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(w.release)
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe's cancel did not return once its watcher ended")
	}
}
