package rpc

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"
)

// Large lines in flight. A large message (a 1 MB tool result) is read into
// room of its own (readFragment, readInto), and that room is what the
// process's memory is made of while results stream through it: with eight
// calls outstanding, a reader that takes every line the upstream has
// written holds eight of them at once (on one CPU the reader runs ahead of
// the calls that guard and write them), and the collector, which lets the
// heap grow to twice what is live before it runs, doubles that.
//
// So a paced Stream (Limits.PaceLargeLines) starts reading a large line
// only while the large lines read before it, by any paced Stream of the
// process, hold less than largeLinesBudget per P. A line counts from the
// moment it is read until the first of:
//   - a Stream (the host's) has written whole a payload within its memory
//     (written): the writer was given the upstream's own bytes;
//   - the host request whose handler received it as a response is answered
//     (Conn.serve's settle; tieLease): with something else (a result the
//     guard rewrote or refused, an error), or through a transport that is
//     not a Stream; a response to a call of the program's own, with no
//     request to tie it to, as soon as its caller has it;
//   - the request or notification it carried has been handled, or its
//     message was dropped where it was read (Conn.dispatch, Stream.message);
//   - the collector found it unreachable (runtime.AddCleanup): a response
//     whose caller gave up, say. A wait that sees nothing released for
//     largeLinesCollect runs one collection for these.
// This is backpressure, never a limit: the wait is bounded by
// largeLinesWait, so that a host that is slow to read (or a line nobody
// releases) slows the next large line of the upstream by at most that,
// and never stops a reader for good. Small messages are not counted and
// never wait.
//
// A line is counted here and reused only through an explicit recycle
// (linepool.go): its bytes are the message's for as long as anything may
// refer to them (the guard, a parked call's result). The bookkeeping
// holds the room's address and a weak pointer to it (for recycle), so it
// keeps nothing alive.

// largeLinesBudget is how much room of large lines may be in flight, per P
// (GOMAXPROCS, read when a line starts: the stdio session runs on one),
// before a Stream waits to read the next one: with one P, a 1 MB result is
// guarded and written (into a pipe that holds it, pipeGrower) before the
// next is read, which cost no calls/s against two in flight and 0.3 MB of
// peak RSS less; the HTTP front end, which serves many sessions on every
// CPU, does not make them take turns one line at a time.
const largeLinesBudget = 1 << 20

// largeLinesWait bounds one wait for the budget.
const largeLinesWait = 100 * time.Millisecond

// largeLinesCollect is how long a wait lasts before it asks the collector
// whether lines no longer referred to (a result the guard replaced, a
// dropped response) are what holds the budget.
const largeLinesCollect = 5 * time.Millisecond

// lineBudget is the accounting of large lines in flight against one bound
// (the process's, largeLines; tests make their own).
type lineBudget struct {
	max int64
	// perP multiplies max by GOMAXPROCS (the process's budget).
	perP bool
	// wait bounds one wait (largeLinesWait).
	wait time.Duration

	mu   sync.Mutex
	held int64
	room chan struct{} // closed (and replaced) when bytes are released

	waiting atomic.Int32 // waits under way, for tests
}

// lineLease is one large line counted against a budget.
type lineLease struct {
	b        *lineBudget
	base     uintptr // the room's first byte and its end (holds, written)
	end      uintptr
	n        int64
	released bool // under leases.mu

	// room is the line's buffer, for recycle: weak, so that the lease (in
	// leases.m) keeps nothing alive and the collector still finds a line
	// nobody refers to. cleanup is the collector's release, stopped when
	// the buffer is recycled (each reuse would add one more otherwise).
	room    weak.Pointer[byte]
	cleanup runtime.Cleanup
	// recycled says its room went back to the pool; under leases.mu.
	recycled bool
}

// leases are the lines in flight of every budget, by the first byte of
// their room, so that a Stream writing a payload finds the line it is read
// from (written).
var leases = struct {
	mu sync.Mutex
	m  map[uintptr]*lineLease
	// n is len(m), read without mu: while no line is in flight, which
	// is while only small messages pass, nothing is looked up.
	n atomic.Int64
}{m: map[uintptr]*lineLease{}}

// leaseOf returns the lease of the line m was read from, if it is in
// flight. A decoded message's fields are slices of its line: its id (or,
// without one, its params) says which.
func leaseOf(m *Message) *lineLease {
	if m.line != nil {
		return m.line
	}
	if leases.n.Load() == 0 {
		return nil
	}
	probe := m.ID
	if len(probe) == 0 {
		probe = m.Params
	}
	if len(probe) == 0 {
		return nil
	}
	leases.mu.Lock()
	defer leases.mu.Unlock()
	for _, l := range leases.m {
		if l.holds(probe) {
			return l
		}
	}
	return nil
}

// largeLines is the process's budget: the memory it bounds is the
// process's.
var largeLines = &lineBudget{max: largeLinesBudget, perP: true, wait: largeLinesWait, room: make(chan struct{})}

func newLineBudget(max int64) *lineBudget {
	return &lineBudget{max: max, wait: largeLinesWait, room: make(chan struct{})}
}

// hold counts line, the room made for one large line, until it is released.
func (b *lineBudget) hold(line []byte) *lineLease {
	if cap(line) == 0 {
		return nil
	}
	p := unsafe.SliceData(line)
	base := uintptr(unsafe.Pointer(p))
	l := &lineLease{b: b, base: base, end: base + uintptr(cap(line)), n: int64(cap(line)), room: weak.Make(p)}
	leases.mu.Lock()
	old := leases.m[base]
	if old != nil {
		// The room of an earlier line, collected before its cleanup ran,
		// now holds this one: the earlier line is gone.
		old.releaseLocked()
	}
	leases.m[base] = l
	leases.n.Store(int64(len(leases.m)))
	leases.mu.Unlock()
	b.add(l.n)
	c := runtime.AddCleanup(p, (*lineLease).release, l)
	leases.mu.Lock()
	l.cleanup = c
	leases.mu.Unlock()
	return l
}

// recycle releases l and gives its room back to the line pool
// (linepool.go), once: the caller is the one consumer that knows nothing
// refers to the line any more (Stream.finished). A second recycle is a
// mistake of ownership; it panics in race builds and is a no-op otherwise.
func (l *lineLease) recycle() {
	if l == nil {
		return
	}
	leases.mu.Lock()
	if l.recycled {
		leases.mu.Unlock()
		if raceBuild {
			panic("rpc: a line buffer was recycled twice")
		}
		return
	}
	l.recycled = true
	l.releaseLocked()
	p, c := l.room.Value(), l.cleanup
	leases.mu.Unlock()
	if p == nil {
		return // cannot be: the caller holds the line
	}
	// The room is reachable (its caller has it in hand), so the cleanup
	// has not run: stopped, it never will, and the next line read into
	// the room adds its own.
	c.Stop()
	linePool.put(unsafe.Slice(p, l.n)[:0])
}

// holds reports whether payload is read from l's line.
func (l *lineLease) holds(payload []byte) bool {
	if l == nil || len(payload) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(payload)))
	return p >= l.base && p < l.end
}

// release gives back what l holds, once; a nil l holds nothing.
func (l *lineLease) release() {
	if l == nil {
		return
	}
	leases.mu.Lock()
	l.releaseLocked()
	leases.mu.Unlock()
}

// releaseLocked is release with leases.mu held.
func (l *lineLease) releaseLocked() {
	if l.released {
		return
	}
	l.released = true
	if leases.m[l.base] == l {
		delete(leases.m, l.base)
		leases.n.Store(int64(len(leases.m)))
	}
	l.b.add(-l.n)
}

// isReleased reports whether l was released, for tests.
func (l *lineLease) isReleased() bool {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	return l.released
}

// add changes the bytes held by n, waking the waiters when they drop.
func (b *lineBudget) add(n int64) {
	b.mu.Lock()
	b.held += n
	if n < 0 {
		close(b.room)
		b.room = make(chan struct{})
	}
	b.mu.Unlock()
}

// written releases the line whose room holds payload, if one does: a
// Stream has written it whole, and the line is no longer in flight (what
// else refers to it keeps it alive, uncounted). Few lines are in flight
// at once, so they are looked through.
func written(payload []byte) {
	if len(payload) == 0 || leases.n.Load() == 0 {
		return
	}
	leases.mu.Lock()
	defer leases.mu.Unlock()
	for _, l := range leases.m {
		if l.holds(payload) {
			l.releaseLocked()
			return
		}
	}
}

// inFlight reports the bytes held, for tests.
func (b *lineBudget) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// awaitLarge waits, before s reads a large line, for its budget's room
// (await), and reports whether s was closed meanwhile: then the read ends
// there, rather than reading on what the input still holds (a Close
// reaches the wait before it cuts the reader off, if it does at all).
func (s *Stream) awaitLarge() (closed bool) {
	s.budget.await(s.done, s.framing, s.readStop)
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// await waits until the lines in flight hold less than the budget, for at
// most b.wait, or until one of stop closes (the Stream closing, whose read
// then ends there, awaitLarge; its framing failing, the reader's context
// ending: the read then goes on and finds out). It reports whether it
// waited, for tests.
func (b *lineBudget) await(stop ...<-chan struct{}) bool {
	limit := b.max
	if b.perP {
		limit *= int64(runtime.GOMAXPROCS(0))
	}
	b.mu.Lock()
	if b.held < limit {
		b.mu.Unlock()
		return false
	}
	room := b.room
	b.mu.Unlock()
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	var s [3]<-chan struct{}
	copy(s[:], stop)
	deadline := time.NewTimer(b.wait)
	defer deadline.Stop()
	collect := time.NewTimer(largeLinesCollect)
	defer collect.Stop()
	for {
		select {
		case <-room:
		case <-collect.C:
			// Nothing released yet: if lines no one refers to any more
			// (a result the guard replaced, a response whose caller gave
			// up) hold the budget, a collection runs their cleanups.
			// Once per wait.
			runtime.GC()
			continue
		case <-deadline.C:
			return true
		case <-s[0]:
			return true
		case <-s[1]:
			return true
		case <-s[2]:
			return true
		}
		b.mu.Lock()
		if b.held < limit {
			b.mu.Unlock()
			return true
		}
		room = b.room
		b.mu.Unlock()
	}
}
