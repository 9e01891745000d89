package rpc

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Line buffers. A line longer than a Stream's read buffer (a 1 MB tool
// result) is read into room of its own (readFragment, readInto). That room
// used to be new each time and garbage once the host had the result: at
// 1 MB a call, the collector ran every few calls, and it and the clearing
// of fresh memory were a third of the gate's CPU per call. So the room
// comes from linePool, and goes back to it in two ways only:
//
//   - the reader's own: room it grew out of, or copied a short line out of
//     (readInto, ownLine, an oversized line's head), which nothing but the
//     reader ever saw;
//   - an explicit release by the one consumer that knows nothing refers to
//     the line any more: the host's Stream, once it has written whole the
//     response that relays the line's result, and only when the handler
//     that returned that result said it keeps none of it (ReleaseAfterWrite;
//     see Conn.serve and Stream.writeDirect/writeLoop). The handle is the
//     lineLease on the decoded Message (Message.line), recycled at most once.
//
// Every other line (a catalog listing, a parked call's result, a request,
// an error, anything stored) is never released: it is ordinary garbage,
// which is always safe. A mistake in the other direction, a release while
// something still refers to the line, would show that holder another
// message's bytes; in race builds (the suite's) a released buffer is
// overwritten with poisonByte at once, so a stale reader reads poison
// instead of bytes that look right, and a buffer written after its release
// is caught when it is handed out again (linePool.get panics).
//
// The pool keeps at most what the budget of large lines lets be in flight,
// the sizes it keeps are those of recent lines (results of one tool differ
// by a few bytes), and a buffer idle for idleLineLife is let go, so that an
// idle gate does not keep its last burst's memory.

// idleLineLife is how long an idle line buffer is kept.
const idleLineLife = 2 * time.Second

// poisonByte fills a released line buffer in race builds: not valid in
// JSON or UTF-8, so a stale reader cannot take it for a message.
const poisonByte = 0xFF

// linePool is the process's pool of line buffers. It keeps what the
// budget of large lines lets be in flight: up to its limit
// (largeLinesBudget per P), and the line that starts just under it.
var linePool = newReadBufs(func() int { return largeLinesBudget * (runtime.GOMAXPROCS(0) + 1) })

// readBufs is a bounded set of idle line buffers.
type readBufs struct {
	maxIdle func() int // the most idle bytes kept
	// poison overwrites released buffers and checks them when handed out
	// (race builds; tests set it).
	poison bool

	mu    sync.Mutex
	idle  []idleLine // oldest first
	bytes int        // the idle buffers' capacity
	timer *time.Timer
	now   func() time.Time // tests
	// reused and made count get's outcomes, for tests.
	reused, made int
}

type idleLine struct {
	b  []byte
	at time.Time
}

func newReadBufs(maxIdle func() int) *readBufs {
	return &readBufs{maxIdle: maxIdle, poison: raceBuild, now: time.Now}
}

// get returns an empty buffer with room for at least n bytes: an idle one
// that is not much larger (n to n+n/4), or a new one of exactly n. Its
// contents are undefined (poison, or an earlier line's bytes).
func (p *readBufs) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, l := range p.idle {
		if c := cap(l.b); c >= n && c <= n+n/4 && (best < 0 || c < cap(p.idle[best].b)) {
			best = i
		}
	}
	if best < 0 {
		p.made++
		p.mu.Unlock()
		return make([]byte, 0, n)
	}
	b := p.idle[best].b
	// The slot left free at the end is cleared: past the length, it
	// would still keep a buffer the pool has let go.
	last := len(p.idle) - 1
	copy(p.idle[best:], p.idle[best+1:])
	p.idle[last] = idleLine{}
	p.idle = p.idle[:last]
	p.bytes -= cap(b)
	p.reused++
	poison := p.poison
	p.mu.Unlock()
	if poison {
		checkPoison(b[:cap(b)])
	}
	return b[:0]
}

// put takes back b, which nothing refers to any more. A buffer that would
// make the idle ones hold more than maxIdle pushes the oldest out (a
// buffer larger than that is not kept).
func (p *readBufs) put(b []byte) {
	if cap(b) == 0 {
		return
	}
	b = b[:0]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.poison {
		fillPoison(b[:cap(b)])
	}
	limit := p.maxIdle()
	if cap(b) > limit {
		return
	}
	for p.bytes+cap(b) > limit {
		p.bytes -= cap(p.idle[0].b)
		p.idle[0] = idleLine{}
		p.idle = p.idle[1:]
	}
	p.idle = append(p.idle, idleLine{b: b, at: p.now()})
	p.bytes += cap(b)
	if p.timer == nil {
		p.timer = time.AfterFunc(idleLineLife, p.trim)
	}
}

// trim lets go of the buffers idle for idleLineLife, and looks again
// when the oldest left is due, while any are left.
func (p *readBufs) trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	cut := p.now().Add(-idleLineLife)
	n := 0
	for n < len(p.idle) && !p.idle[n].at.After(cut) {
		p.bytes -= cap(p.idle[n].b)
		p.idle[n] = idleLine{}
		n++
	}
	// A fresh slice once all are gone: the old array would pin nothing,
	// but it is not kept growing either.
	p.idle = p.idle[n:]
	if len(p.idle) == 0 {
		p.idle, p.timer = nil, nil
		return
	}
	// Again when the oldest left is due (not a whole idleLineLife from
	// now, which would keep it up to twice that), and not at once over
	// and over for a clock that stands still (tests).
	p.timer.Reset(max(p.idle[0].at.Add(idleLineLife).Sub(p.now()), idleLineLife/16))
}

// idleBytes reports the idle buffers' capacity, for tests.
func (p *readBufs) idleBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

func fillPoison(b []byte) {
	for i := range b {
		b[i] = poisonByte
	}
}

// checkPoison panics when a released buffer was written after its release:
// something kept it, and wrote into what another line now reads.
func checkPoison(b []byte) {
	for i, c := range b {
		if c != poisonByte {
			panic(fmt.Sprintf("rpc: a released line buffer was written after its release (byte %d of %d is %#x)", i, len(b), c))
		}
	}
}
