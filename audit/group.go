package audit

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Group commit of the records of one burst.
//
// A burst of calls read in one read (a host with eight calls outstanding)
// becomes as many handler goroutines, each deciding its call and writing
// its record before it forwards the call. On one CPU the others of the
// burst can only run while one of them yields, so a record per write(2)
// was a system call per call (15% of the gate's CPU at c=8, pinned). When
// a burst is under way (BurstSource), a record is therefore appended to
// the records pending and its writer yields once (runtime.Gosched): the
// other goroutines of the burst append theirs, and whichever resumes
// first hands them all to the OS in one write. No writer returns before
// its own record was handed to the OS, by itself or by another: the
// record still precedes the call it records, as design.md requires. A
// record with no burst under way is written at once, with no yield.

// burstSource, when set, counts the bursts read by the process (package
// rpc sets it where bursts are gathered: a process on one CPU).
var burstSource atomic.Pointer[func() uint64]

// SetBurstSource makes the records of a Logger writing JSON lines (New)
// gather while reads() has changed since the last record: reads counts
// the lines read while more input was buffered behind them. Package rpc
// sets it where bursts are gathered (rpc.GroupBursts); nil writes each
// record at once.
func SetBurstSource(reads func() uint64) {
	if reads == nil {
		burstSource.Store(nil)
		return
	}
	burstSource.Store(&reads)
}

// groupMax bounds the bytes gathered for one write: a record that finds
// this much pending writes it all at once.
const groupMax = 64 << 10

// lockedWriter serialises whole lines from the fast path and from slog,
// and gathers the records of a burst (above).
type lockedWriter struct {
	mu        sync.Mutex
	w         io.Writer
	group     *group // the records gathered, not yet written; never nil
	burstSeen uint64 // the burst count at the last gathering
	// torn is set when a write failed part-way (a disk that filled in
	// the middle of a line): the next write starts a new line first, so
	// that the records after the failure are lines of their own.
	torn bool
}

// A group is the records of one burst, written together. Each writer of
// the burst holds its group until it was written, to learn the write's
// outcome: a record that did not reach the OS refuses its call
// (design.md), whichever writer's flush failed.
type group struct {
	buf  []byte
	done bool  // written, or failed to be
	err  error // the write's error, once done
}

func newLockedWriter(w io.Writer) *lockedWriter {
	return &lockedWriter{w: w, group: new(group)}
}

// Write writes p (a line from slog) after the records gathered before it.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.group.buf) > 0 {
		l.flushLocked()
	}
	return l.write(p)
}

var newline = []byte{'\n'}

// write writes p whole, under mu, after the newline a torn line needs.
func (l *lockedWriter) write(p []byte) (int, error) {
	if l.torn {
		if _, err := l.w.Write(newline); err != nil {
			return 0, err
		}
		l.torn = false
	}
	n, err := l.w.Write(p)
	if err != nil && n > 0 && n < len(p) {
		l.torn = true
	}
	return n, err
}

// record writes one record: at once, or, while a burst is under way,
// together with the others of the burst. It returns once p was handed to
// the OS, with the error of the write that failed to.
func (l *lockedWriter) record(p []byte) error {
	l.mu.Lock()
	if len(l.group.buf) == 0 && !l.burstLocked() {
		_, err := l.write(p)
		l.mu.Unlock()
		return err
	}
	g := l.group
	g.buf = append(g.buf, p...)
	if len(g.buf) >= groupMax {
		l.flushLocked()
		err := g.err
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	// Let the other runnable goroutines of the burst add theirs. With
	// nothing else to run this returns at once.
	runtime.Gosched()
	l.mu.Lock()
	if !g.done {
		l.flushLocked()
	}
	err := g.err
	l.mu.Unlock()
	return err
}

// burstLocked reports whether a burst was read since the last gathering,
// and marks it seen.
func (l *lockedWriter) burstLocked() bool {
	src := burstSource.Load()
	if src == nil {
		return false
	}
	b := (*src)()
	if b == l.burstSeen {
		return false
	}
	l.burstSeen = b
	return true
}

// flushLocked writes the records gathered, under mu, and starts the next
// group with the same buffer. A failed write is not retried: each writer
// of the group returns its error, and its call is refused.
func (l *lockedWriter) flushLocked() {
	g := l.group
	_, g.err = l.write(g.buf)
	g.done = true
	next := &group{buf: g.buf[:0]}
	if cap(next.buf) > 2*groupMax {
		next.buf = nil
	}
	g.buf = nil // the waiters read done and err only
	l.group = next
}
