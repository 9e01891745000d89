package audit

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// countingWriter records each write(2) the Logger makes.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.buf.Write(p)
}

func (c *countingWriter) has(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Contains(c.buf.Bytes(), []byte(s))
}

// withBursts makes every record see a burst under way, for the test.
func withBursts(t *testing.T) {
	t.Helper()
	old := burstSource.Load()
	var n atomic.Uint64
	SetBurstSource(func() uint64 { return n.Add(1) })
	t.Cleanup(func() { burstSource.Store(old) })
}

// The records of a burst go out in fewer writes than records, and no
// writer returns before its own record was written.
func TestBurstRecordsGathered(t *testing.T) {
	withBursts(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: a burst runs while one yields
	var w countingWriter
	a := New(&w)
	const n = 8
	start := make(chan struct{})
	var wg sync.WaitGroup
	var missing atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id := fmt.Sprintf(`"decision_id":"burst-%d"`, i)
			a.Decision(Decision{ID: fmt.Sprintf("burst-%d", i), Verdict: "allow"})
			if !w.has(id) { // it must be written by now: the call is forwarded next
				missing.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if m := missing.Load(); m > 0 {
		t.Fatalf("%d records were not written when Decision returned", m)
	}
	if got := bytes.Count(w.buf.Bytes(), []byte("\n")); got != n {
		t.Fatalf("%d lines written, want %d:\n%s", got, n, w.buf.Bytes())
	}
	if w.writes >= n {
		t.Errorf("%d records of one burst took %d writes; want them gathered", n, w.writes)
	}
}

// With no burst under way each record is written at once, alone; a line
// logged through slog goes after the records gathered before it.
func TestRecordsAloneAndOrderWithSlog(t *testing.T) {
	old := burstSource.Load()
	t.Cleanup(func() { burstSource.Store(old) })
	var w countingWriter
	a := New(&w)
	burstSource.Store(nil)
	a.Decision(Decision{ID: "alone-1"})
	a.Decision(Decision{ID: "alone-2"})
	if w.writes != 2 {
		t.Fatalf("2 records with no burst took %d writes, want 2", w.writes)
	}
	// A record left pending (as while its writer yields) goes out before
	// a slog line that follows it.
	a.w.mu.Lock()
	a.w.group.buf = append(a.w.group.buf, `{"decision_id":"pending"}`+"\n"...)
	a.w.mu.Unlock()
	a.Slog().Info("after", KeyEvent, EventOther)
	out := w.buf.String()
	if i, j := bytes.Index([]byte(out), []byte(`"pending"`)), bytes.Index([]byte(out), []byte(`"msg":"after"`)); i < 0 || j < 0 || i > j {
		t.Fatalf("the pending record is not before the slog line:\n%s", out)
	}
}
