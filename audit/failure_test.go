package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// failingWriter fails every write while fail is set, as a full disk does.
type failingWriter struct {
	mu     sync.Mutex
	fail   bool
	writes int
	ok     countingWriter
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.fail {
		return 0, &os.PathError{Op: "write", Path: "audit.jsonl", Err: syscall.ENOSPC}
	}
	return f.ok.Write(p)
}

func (f *failingWriter) setFail(v bool) {
	f.mu.Lock()
	f.fail = v
	f.mu.Unlock()
}

// A record that does not reach the OS is the caller's error, for every
// record that lets a call through (Decision, Approval), alone or gathered
// with a burst's: the caller refuses the call it records.
func TestFailedRecordWriteIsReturned(t *testing.T) {
	for _, burst := range []bool{false, true} {
		t.Run(fmt.Sprintf("burst=%v", burst), func(t *testing.T) {
			old := burstSource.Load()
			t.Cleanup(func() { burstSource.Store(old) })
			burstSource.Store(nil)
			if burst {
				withBursts(t)
			}
			var w failingWriter
			a := New(&w)
			w.setFail(true)
			if err := a.Decision(Decision{ID: "d1", Verdict: "allow"}); !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("Decision on a full disk returned %v, want ENOSPC", err)
			}
			if err := a.Approval(Approval{DecisionID: "d1", Outcome: "approved"}); !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("Approval on a full disk returned %v, want ENOSPC", err)
			}
			// The disk has room again: the next records are written and
			// return nil; nothing of the failure sticks.
			w.setFail(false)
			if err := a.Decision(Decision{ID: "d2", Verdict: "allow"}); err != nil {
				t.Errorf("Decision after the disk has room returned %v", err)
			}
			if err := a.Approval(Approval{DecisionID: "d2", Outcome: "approved"}); err != nil {
				t.Errorf("Approval after the disk has room returned %v", err)
			}
			if !w.ok.has(`"decision_id":"d2"`) {
				t.Errorf("the record after the failure is not in the log:\n%s", w.ok.buf.String())
			}
		})
	}
}

// When one write carries a burst's records and fails, every writer of the
// burst gets the error, not only the one that wrote: each of their calls
// is unrecorded. Then a burst that is written returns nil to each.
func TestFailedBurstWriteReachesEveryWriter(t *testing.T) {
	withBursts(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: a burst runs while one yields
	var w failingWriter
	a := New(&w)
	const n = 8
	burst := func() []error {
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = a.Decision(Decision{ID: fmt.Sprintf("burst-%d", i), Verdict: "allow"})
			}()
		}
		close(start)
		wg.Wait()
		return errs
	}
	w.setFail(true)
	w.writes = 0
	for i, err := range burst() {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("writer %d of a burst whose write failed returned %v, want ENOSPC", i, err)
		}
	}
	if w.writes >= n {
		t.Errorf("the burst was not gathered (%d writes for %d records): the test shows nothing", w.writes, n)
	}
	w.setFail(false)
	for i, err := range burst() {
		if err != nil {
			t.Errorf("writer %d of a burst that was written returned %v", i, err)
		}
	}
}

// A Logger over a handler returns the handler's error too (slog.Logger
// would drop it).
func TestHandlerErrorIsReturned(t *testing.T) {
	var w failingWriter
	w.setFail(true)
	a := NewHandler(slog.NewJSONHandler(&w, nil))
	if err := a.Decision(Decision{ID: "h1"}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Decision over a failing handler returned %v, want ENOSPC", err)
	}
	if err := Discard().Decision(Decision{ID: "h2"}); err != nil {
		t.Errorf("Discard's Decision returned %v", err)
	}
}

// A record that fills the group (groupMax) is written at once, and its
// writer gets that write's error too.
func TestFailedFullGroupWriteIsReturned(t *testing.T) {
	withBursts(t)
	var w failingWriter
	a := New(&w)
	w.setFail(true)
	big := strings.Repeat("x", groupMax)
	if err := a.Decision(Decision{ID: "big", Reason: big}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a record over groupMax on a full disk returned %v, want ENOSPC", err)
	}
}

// A group whose write a slog line forced (Write flushes what is pending
// first) fails its records' writers too.
func TestGroupFlushedBySlogLineFails(t *testing.T) {
	var w failingWriter
	a := New(&w)
	w.setFail(true)
	a.w.mu.Lock()
	g := a.w.group
	g.buf = append(g.buf, `{"decision_id":"pending"}`+"\n"...)
	a.w.mu.Unlock()
	a.Slog().Info("after", KeyEvent, EventOther)
	a.w.mu.Lock()
	done, err := g.done, g.err
	a.w.mu.Unlock()
	if !done || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the pending group flushed by a slog line: done=%v err=%v, want its write's ENOSPC", done, err)
	}
}

// tearingWriter writes half of a write and then fails, once, as a disk
// that fills in the middle of a line.
type tearingWriter struct {
	countingWriter
	tear bool
}

func (t *tearingWriter) Write(p []byte) (int, error) {
	if t.tear {
		t.tear = false
		n, _ := t.countingWriter.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: "audit.jsonl", Err: syscall.ENOSPC}
	}
	return t.countingWriter.Write(p)
}

// After a write that failed part-way, the next record starts on a line
// of its own: the torn line is lost, never the record after it.
func TestTornWriteNextRecordOnItsOwnLine(t *testing.T) {
	old := burstSource.Load()
	t.Cleanup(func() { burstSource.Store(old) })
	burstSource.Store(nil)
	w := &tearingWriter{tear: true}
	a := New(w)
	if err := a.Decision(Decision{ID: "torn"}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a torn write returned %v, want ENOSPC", err)
	}
	if err := a.Decision(Decision{ID: "after"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	var rec map[string]any
	if err := json.Unmarshal([]byte(last), &rec); err != nil || rec[KeyDecisionID] != "after" {
		t.Fatalf("the record after a torn write is not a line of its own: %q (%v)", last, err)
	}
}
