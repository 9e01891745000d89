package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// poisoned turns on the poisoning of released line buffers for one test,
// as race builds have it always.
func poisoned(t *testing.T) {
	t.Helper()
	linePool.mu.Lock()
	was := linePool.poison
	linePool.poison = true
	// What was put before is not poisoned: dropped, not checked.
	linePool.idle, linePool.bytes = nil, 0
	linePool.mu.Unlock()
	t.Cleanup(func() {
		linePool.mu.Lock()
		linePool.poison = was
		linePool.mu.Unlock()
	})
}

// leaseHolding is the lease in flight of the line payload is read from.
func leaseHolding(payload []byte) *lineLease {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	for _, l := range leases.m {
		if l.holds(payload) {
			return l
		}
	}
	return nil
}

func (l *lineLease) isRecycled() bool {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	return l.recycled
}

// The pool keeps a few recent sizes and a bounded number of bytes: a
// buffer is handed out only for a line it fits without pinning much more,
// the oldest goes when the bound is reached, one larger than the bound is
// never kept, and idle ones go after idleLineLife.
func TestLinePoolBounds(t *testing.T) {
	p := newReadBufs(func() int { return 3 << 20 })
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	for range 4 {
		p.put(make([]byte, 1<<20))
	}
	if got := p.idleBytes(); got != 3<<20 {
		t.Fatalf("idle: %d bytes, want the bound, 3 MB", got)
	}
	p.put(make([]byte, 4<<20))
	if got := p.idleBytes(); got != 3<<20 {
		t.Fatalf("a buffer larger than the bound was kept: %d bytes idle", got)
	}
	if b := p.get(700 << 10); cap(b) != 700<<10 || p.made != 1 {
		t.Fatalf("a 700 KB line got room of %d (a 1 MB buffer pins too much for it)", cap(b))
	}
	if b := p.get(900 << 10); cap(b) != 1<<20 || len(b) != 0 || p.reused != 1 {
		t.Fatalf("a 900 KB line got room of %d, len %d: want an idle 1 MB buffer", cap(b), len(b))
	}
	if got := p.idleBytes(); got != 2<<20 {
		t.Fatalf("idle after one reuse: %d", got)
	}
	now = now.Add(idleLineLife / 2)
	p.put(make([]byte, 1<<20)) // pushes the oldest out; newer than the others
	now = now.Add(idleLineLife/2 + time.Millisecond)
	p.trim()
	if got := p.idleBytes(); got != 1<<20 {
		t.Fatalf("after the older buffers' idle life: %d bytes idle, want the newer 1 MB", got)
	}
	now = now.Add(idleLineLife)
	p.trim()
	// Read under the pool's lock: the pool's own timer, re-armed by the
	// trims above, may run trim meanwhile.
	p.mu.Lock()
	armed := p.timer != nil
	p.mu.Unlock()
	if got := p.idleBytes(); got != 0 || armed {
		t.Fatalf("an idle pool keeps %d bytes (timer %v)", got, armed)
	}
}

// The pool's timer lets idle buffers go by itself: an idle gate keeps
// none of its last burst's lines.
func TestLinePoolIdleBuffersGo(t *testing.T) {
	p := newReadBufs(func() int { return 3 << 20 })
	p.put(make([]byte, 1<<20))
	deadline := time.Now().Add(idleLineLife + hang)
	for p.idleBytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still idle after %s", p.idleBytes(), idleLineLife+hang)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// relayRig is an upstream that answers each tools/call with a large
// result of its own letter, a host Conn on a Stream whose peer (the test)
// reads only when told, and a handler between them that relays the
// upstream's result as it is.
type relayRig struct {
	host     *Conn
	hostIn   *os.File // the test writes the host's requests here
	hostOut  *bufio.Reader
	leases   chan *lineLease // each relayed line, as the handler saw it
	returned chan struct{}   // a handler returned
}

// upstreamResult is the line the rig's upstream answers request id with:
// a text of n copies of one letter, different for neighbouring ids.
func upstreamResult(id json.RawMessage, n int) string {
	sum := 0
	for _, c := range id {
		sum += int(c)
	}
	letter := string(rune('a' + sum%26))
	return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat(letter, n) + `"}]}}` + "\n"
}

// largeUpstream is a Conn on a paced Stream to an upstream that answers
// every request with upstreamResult.
func largeUpstream(t *testing.T, ctx context.Context, size int) *Conn {
	t.Helper()
	toUp, upIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromUp, upOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { upOut.Close() })
	go func() {
		dec := json.NewDecoder(toUp)
		for {
			var req struct{ ID json.RawMessage }
			if dec.Decode(&req) != nil {
				return
			}
			io.WriteString(upOut, upstreamResult(req.ID, size))
		}
	}()
	us := NewStream(fromUp, upIn, closerFunc(func() error { fromUp.Close(); return upIn.Close() }), Limits{PaceLargeLines: true})
	us.budget = newLineBudget(1 << 30)
	up := New(us, funcs{}, Options{Peer: "upstream", Logger: slog.New(slog.DiscardHandler)})
	go up.Run(ctx)
	t.Cleanup(func() { up.Close() })
	return up
}

// relayHandler relays the upstream's result through relay, reporting the
// line's lease and its return to r.
func (r *relayRig) handler(up *Conn, relay func(ctx context.Context, res json.RawMessage) json.RawMessage) Handler {
	return funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		defer func() { r.returned <- struct{}{} }()
		res, err := up.Call(ctx, "tools/call", req.Params)
		if err != nil {
			r.leases <- nil
			return nil, err
		}
		r.leases <- leaseHolding(res)
		return relay(ctx, res), nil
	}}
}

func newRelayRig(t *testing.T, size int, direct bool, relay func(ctx context.Context, res json.RawMessage) json.RawMessage) *relayRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	up := largeUpstream(t, ctx, size)
	r := &relayRig{leases: make(chan *lineLease, 16), returned: make(chan struct{}, 16)}
	hr, hostIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.hostIn, r.hostOut = hostIn, bufio.NewReaderSize(outR, 1<<20)
	var w io.Writer = outW
	if !direct {
		w = struct{ io.Writer }{outW} // not a file: the writer goroutine writes it
	}
	hs := NewStream(hr, w, closerFunc(func() error { hr.Close(); return outW.Close() }), Limits{})
	if direct != (hs.tw != nil) {
		t.Fatalf("direct %v: the host Stream writes directly: %v", direct, hs.tw != nil)
	}
	r.host = New(hs, r.handler(up, relay), Options{Peer: "host", Logger: slog.New(slog.DiscardHandler)})
	go r.host.Run(ctx)
	t.Cleanup(func() { r.host.Close(); hostIn.Close(); outR.Close() })
	return r
}

// call sends the host's request id and returns the line's lease as the
// handler saw it, once the handler has returned.
func (r *relayRig) call(t *testing.T, id int) *lineLease {
	t.Helper()
	if _, err := fmt.Fprintf(r.hostIn, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{}}`+"\n", id); err != nil {
		t.Fatal(err)
	}
	var l *lineLease
	select {
	case l = <-r.leases:
	case <-time.After(hang):
		t.Fatal("the handler did not get the upstream's answer")
	}
	<-r.returned
	if l == nil {
		t.Fatal("the upstream's result is not a large line in flight")
	}
	return l
}

// read reads the host's answer and checks that it is the upstream's
// result for call id (whose upstream id was up), byte for byte.
func (r *relayRig) read(t *testing.T, id int, up string, size int) {
	t.Helper()
	line, err := r.hostOut.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(upstreamResult(json.RawMessage(up), size), `"id":`+up, fmt.Sprintf(`"id":%d`, id), 1)
	if string(line) != want {
		i := 0
		for i < len(line) && i < len(want) && line[i] == want[i] {
			i++
		}
		t.Fatalf("call %d: the host read %d bytes differing from the upstream's %d at byte %d (%q)", id, len(line), len(want), i, line[i:min(len(line), i+16)])
	}
}

// A result relayed as it is (ReleaseAfterWrite) goes back to the line pool
// only once the host's Stream has written all of it: not when the handler
// returns, nor when Write returns with the rest queued for a host that is
// not reading yet (the head is a copy, the body the line's own bytes, which
// the writer still has to send). With released buffers poisoned, a line
// recycled any earlier would reach the host as poison or as the next
// call's bytes. Both ways of writing: direct (a non-blocking pipe, the
// rest queued) and the writer goroutine's.
func TestRelayedLineRecycledOnceWritten(t *testing.T) {
	poisoned(t)
	const size = 1536 << 10 // more than the 1 MB the host pipe is grown to: the write cannot finish unread
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			r := newRelayRig(t, size, direct, func(ctx context.Context, res json.RawMessage) json.RawMessage {
				ReleaseAfterWrite(ctx, res)
				return res
			})
			linePool.mu.Lock()
			reused := linePool.reused
			linePool.mu.Unlock()
			for i := 1; i <= 4; i++ {
				l := r.call(t, i)
				time.Sleep(20 * time.Millisecond) // the host's Stream has written what the pipe takes
				if l.isRecycled() {
					t.Fatalf("call %d: the line was recycled before the host read its answer", i)
				}
				r.read(t, i, fmt.Sprint(i), size)
				deadline := time.Now().Add(hang)
				for !l.isRecycled() {
					if time.Now().After(deadline) {
						t.Fatalf("call %d: the line was not recycled once the host had read all of it", i)
					}
					time.Sleep(time.Millisecond)
				}
			}
			linePool.mu.Lock()
			got := linePool.reused - reused
			linePool.mu.Unlock()
			if got < 3 {
				t.Errorf("4 relayed lines reused %d buffers of the pool, want at least 3", got)
			}
		})
	}
}

// Without ReleaseAfterWrite, or when the handler answers with something
// other than what it marked (a copy, a rewrite), the line is released but
// never recycled: it stays the collector's, always safe.
func TestUnmarkedLineNotRecycled(t *testing.T) {
	poisoned(t)
	const size = 300 << 10
	for name, relay := range map[string]func(context.Context, json.RawMessage) json.RawMessage{
		"unmarked": func(_ context.Context, res json.RawMessage) json.RawMessage { return res },
		"copied": func(ctx context.Context, res json.RawMessage) json.RawMessage {
			ReleaseAfterWrite(ctx, res)
			return bytes.Clone(res)
		},
		"other slice": func(ctx context.Context, res json.RawMessage) json.RawMessage {
			ReleaseAfterWrite(ctx, res[:len(res)/2]) // not what it answers with
			return res
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRelayRig(t, size, true, relay)
			l := r.call(t, 1)
			r.read(t, 1, "1", size)
			waitReleased(t, l)
			if l.isRecycled() {
				t.Fatal("a line the handler did not hand over whole was recycled")
			}
		})
	}
}

// A line is recycled only for a Stream's write: a host on another
// transport (the HTTP front end's) leaves it to the collector.
func TestLineNotRecycledForOtherTransports(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := largeUpstream(t, ctx, 300<<10)
	r := &relayRig{leases: make(chan *lineLease, 1), returned: make(chan struct{}, 1)}
	hostEnd, client := Pipe(Limits{})
	host := New(hostEnd, r.handler(up, func(ctx context.Context, res json.RawMessage) json.RawMessage {
		ReleaseAfterWrite(ctx, res)
		return res
	}), Options{Peer: "host", Logger: slog.New(slog.DiscardHandler)})
	go host.Run(ctx)
	defer host.Close()
	if err := client.Write(ctx, &Message{ID: json.RawMessage("1"), Method: "tools/call", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	l := <-r.leases
	<-r.returned
	if l == nil || len(resp.Result) < 300<<10 {
		t.Fatalf("the relay did not pass a large line (lease %v, %d bytes)", l, len(resp.Result))
	}
	waitReleased(t, l)
	if l.isRecycled() {
		t.Fatal("a line answered through a Pipe was recycled")
	}
}

// The safety net: a line released while something still refers to it (a
// deliberately early release here) is poisoned at once, so the stale
// holder reads bytes that are not JSON, not a plausible message (nor,
// once the room is reused, another call's bytes unnoticed in tests).
func TestStaleLineReferenceIsPoisoned(t *testing.T) {
	poisoned(t)
	up, pw := pacedStream(t, newLineBudget(1<<30))
	go io.WriteString(pw, largeResult(1, 700<<10))
	m, err := up.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	stale := m.Result
	if !json.Valid(stale) {
		t.Fatal("the result is not JSON before its release")
	}
	m.line.recycle() // wrong: m.Result is still referred to
	if json.Valid(stale) || strings.Trim(string(stale), "\xff") != "" {
		t.Fatalf("a stale reference to a released line reads %q...: not the poison", stale[:16])
	}
}

// A stale holder that writes into a released line is caught when its
// room is handed out again: that write would be in another line's bytes.
func TestStaleLineWriteIsCaught(t *testing.T) {
	p := newReadBufs(func() int { return 3 << 20 })
	p.poison = true
	b := p.get(1 << 20)
	b = append(b, "a line"...)
	p.put(b)
	b[3] = 'x' // a stale writer
	defer func() {
		if recover() == nil {
			t.Fatal("a released line written after its release was handed out again without a word")
		}
	}()
	p.get(1 << 20)
}

// A line is recycled at most once: a second recycle is a mistake of
// ownership, a panic in race builds and a no-op otherwise (the room is
// not put in the pool twice, where two lines would be read into it).
func TestLineRecycledOnce(t *testing.T) {
	up, pw := pacedStream(t, newLineBudget(1<<30))
	go io.WriteString(pw, largeResult(1, 300<<10))
	m, err := up.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	m.line.recycle()
	linePool.mu.Lock()
	idle := linePool.bytes
	linePool.mu.Unlock()
	func() {
		defer func() {
			if r := recover(); (r != nil) != raceBuild {
				t.Errorf("a second recycle: panic %v, want one only in race builds (%v)", r, raceBuild)
			}
		}()
		m.line.recycle()
	}()
	linePool.mu.Lock()
	defer linePool.mu.Unlock()
	if linePool.bytes > idle {
		t.Error("a second recycle put the room in the pool again")
	}
}

// BenchmarkStreamLargeReadRecycled is BenchmarkStreamLargeRead's steady
// case on a paced Stream whose lines are recycled as the host's Stream
// recycles a relayed result once written: the room is the pool's, so a
// run of 1 MB lines allocates nothing (BenchmarkStreamLargeRead's lines
// are kept: each is new room).
func BenchmarkStreamLargeReadRecycled(b *testing.B) {
	line := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":"%s"}`+"\n", strings.Repeat("v", 1<<20)))
	for _, piece := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("piece=%dK", piece>>10), func(b *testing.B) {
			s := NewStream(&loopReader{line: line, piece: piece}, nopWriter{}, nil, Limits{PaceLargeLines: true})
			s.budget = newLineBudget(1 << 30)
			defer s.Close()
			m, err := s.Read(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			m.line.recycle()
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m, err := s.Read(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				m.line.recycle()
			}
		})
	}
}

// A buffer the pool hands out or lets go is no longer referred to by the
// pool, even from past the end of its list: the idle bound is what it
// keeps alive.
func TestLinePoolKeepsNoStaleSlot(t *testing.T) {
	p := newReadBufs(func() int { return 4 << 20 })
	for _, n := range []int{1 << 20, 1100 << 10, 1200 << 10} {
		p.put(make([]byte, n))
	}
	p.get(1 << 20) // the first: the others move down
	full := p.idle[:cap(p.idle)]
	for i, l := range full[len(p.idle):] {
		if l.b != nil {
			t.Errorf("slot %d past the idle list still holds a %d-byte buffer", len(p.idle)+i, cap(l.b))
		}
	}
}

// A handler can hand over for reuse only a line its own request received:
// a result taken from another request still in flight (the mistake this
// guards against: a cache, a shared slice) and marked is not recycled, so
// no request's answer can free memory another still refers to. Lines are
// found by address elsewhere (written, leaseOf); the mark is not.
func TestRelayMarkIsTheRequestsOwn(t *testing.T) {
	poisoned(t)
	const size = 300 << 10
	taken, resume := make(chan json.RawMessage, 1), make(chan struct{})
	var n atomic.Int32
	r := newRelayRig(t, size, true, func(ctx context.Context, res json.RawMessage) json.RawMessage {
		if n.Add(1) == 1 {
			taken <- res
			<-resume // still in flight while the second answers
			return res
		}
		other := <-taken
		ReleaseAfterWrite(ctx, other)
		return other
	})
	if _, err := io.WriteString(r.hostIn, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	first := <-r.leases
	for len(taken) == 0 { // the first handler has the result, and waits
		time.Sleep(time.Millisecond)
	}
	second := r.call(t, 2)
	r.read(t, 2, "1", size) // the first call's result, with the second call's id
	time.Sleep(20 * time.Millisecond)
	if first.isRecycled() || second.isRecycled() {
		t.Fatalf("recycled: the first call's line %v, the second call's own %v", first.isRecycled(), second.isRecycled())
	}
	close(resume)
	<-r.returned
	r.read(t, 1, "1", size) // intact: with poisoning on, a recycled line would show
}

// A buffer from the pool may be up to a quarter larger than asked for (a
// line of another Stream, whose limit is higher, went back to it): a line
// grown into such a buffer is still read no further than the Stream's own
// limit, and a line past it is refused, as with room made to measure.
func TestPooledRoomKeepsTheLimit(t *testing.T) {
	const limit = 1 << 20
	linePool.mu.Lock()
	linePool.idle, linePool.bytes = nil, 0
	// As on a machine with more Ps: the smaller rooms this line grows
	// through, given back, do not push the large one out.
	maxIdle := linePool.maxIdle
	linePool.maxIdle = func() int { return 16 << 20 }
	linePool.mu.Unlock()
	defer func() {
		linePool.mu.Lock()
		linePool.maxIdle = maxIdle
		linePool.mu.Unlock()
	}()
	// Another Stream's line, larger than this Stream's limit, but within
	// a quarter of it: what the last growth, to the limit, may be handed.
	linePool.put(make([]byte, 0, limit+limit/5))
	body := strings.Repeat("x", limit+limit/10)
	line := `{"jsonrpc":"2.0","id":7,"result":"` + body + `"}` + "\n"
	s := NewStream(strings.NewReader(line), nopWriter{}, nil, Limits{MaxMessageBytes: limit})
	defer s.Close()
	m, err := s.Read(readCtx(t))
	var me *MessageError
	if !errors.As(err, &me) || !strings.Contains(me.Reason, "exceeds the limit") {
		got := 0
		if m != nil {
			got = len(m.Result)
		}
		t.Fatalf("a line of %d bytes, over the limit of %d, was read as a message (result of %d bytes), err %v", len(line), limit, got, err)
	}
}

// A buffer goes about idleLineLife after it was put back, not up to twice
// that: the timer that let an older one go looks again when the next
// oldest is due, rather than a whole idleLineLife later.
func TestLinePoolIdleLifeIsItsOwn(t *testing.T) {
	p := newReadBufs(func() int { return 3 << 20 })
	p.put(make([]byte, 1<<20))
	time.Sleep(idleLineLife / 4)
	p.put(make([]byte, 1<<20))
	put := time.Now()
	for p.idleBytes() != 0 {
		if since := time.Since(put); since > idleLineLife+idleLineLife*3/8 {
			t.Fatalf("a buffer still idle %s after it was put back (idle life %s)", since, idleLineLife)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReleased waits until l is out of flight, as it must be once its
// answer has been read.
func waitReleased(t *testing.T, l *lineLease) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !l.isReleased() {
		if time.Now().After(deadline) {
			t.Fatal("the line is still in flight after the answer")
		}
		time.Sleep(time.Millisecond)
	}
}
