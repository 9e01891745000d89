//go:build linux

package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// batchStream returns a Stream in direct write mode over OS pipes, the
// peer's reading end, and a count of the Stream's writes to the pipe.
func batchStream(t *testing.T, lim Limits) (*Stream, *os.File, func() []int) {
	t.Helper()
	connR, _, peerR, connW := osPipes(t)
	s := NewStream(connR, connW, multiCloser{connR, connW}, lim)
	t.Cleanup(func() { s.Close() })
	// A message that never arrives fails the test rather than hanging it.
	if err := peerR.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if s.tw == nil {
		t.Fatal("the Stream over a pipe does not write directly")
	}
	s.groupAlways = true
	var mu sync.Mutex
	var writes []int
	tw := s.tw
	s.tw = func(b [][]byte) (int, error) {
		n := 0
		for _, p := range b {
			n += len(p)
		}
		mu.Lock()
		writes = append(writes, n)
		mu.Unlock()
		return tw(b)
	}
	return s, peerR, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), writes...)
	}
}

func seqMsg(i int) *Message {
	return &Message{Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
}

// readSeq reads n lines from r and checks that they carry 0..n-1 in order.
func readSeq(t *testing.T, r *bufio.Reader, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading message %d: %v", i, err)
		}
		want := fmt.Sprintf(`"params":{"i":%d}`, i)
		if !strings.Contains(line, want) {
			t.Fatalf("message %d on the wire is %q; want one with %s", i, strings.TrimSpace(line), want)
		}
	}
}

// The messages written while a burst's first writer yields go to the peer
// in one write, behind the first one and in the order written.
func TestBatchGroupsBurstInOrder(t *testing.T) {
	s, peerR, writes := batchStream(t, Limits{})
	ctx := context.Background()
	const k = 8
	s.yield = func() {
		for i := 1; i < k; i++ {
			if err := s.Write(ctx, seqMsg(i)); err != nil {
				t.Errorf("Write %d during the burst: %v", i, err)
			}
		}
	}
	burstReads.Add(1)
	if err := s.Write(ctx, seqMsg(0)); err != nil {
		t.Fatal(err)
	}
	readSeq(t, bufio.NewReader(peerR), 0, k)
	if w := writes(); len(w) != 1 {
		t.Fatalf("a burst of %d messages took writes of %v bytes; want one write", k, w)
	}
}

// Without a burst read since the last group write, a message is written at
// once: a lone call pays no yield.
func TestBatchLoneWriteDoesNotYield(t *testing.T) {
	s, peerR, writes := batchStream(t, Limits{})
	yielded := 0
	s.yield = func() { yielded++ }
	burstReads.Add(1)
	if err := s.Write(context.Background(), seqMsg(0)); err != nil {
		t.Fatal(err)
	}
	s.burstSeen = burstReads.Load() // as if no other test read a burst
	for i := 1; i < 4; i++ {
		if err := s.Write(context.Background(), seqMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	readSeq(t, bufio.NewReader(peerR), 0, 4)
	if w := writes(); len(w) != 4 || yielded > 1 {
		t.Fatalf("4 lone writes took writes of %v bytes and %d yields; want 4 writes, at most the first yielding", w, yielded)
	}
}

// A batch never grows past batchMax: a writer that finds it full writes it
// first. A large message and Flush write a pending batch before anything
// else, so the order of Writes is the order on the wire.
func TestBatchBoundsAndOrder(t *testing.T) {
	s, peerR, writes := batchStream(t, Limits{})
	ctx := context.Background()
	pad := strings.Repeat("p", 2000)
	msg := func(i int) *Message {
		return &Message{Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))}
	}
	big := &Message{Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, 100, strings.Repeat("b", 100<<10)))}
	const k = 80 // 80 × ~2 KB: more than two batches
	s.yield = func() {
		s.yield = func() {} // the writer that finds the batch full starts and writes another
		for i := 1; i < k; i++ {
			if err := s.Write(ctx, msg(i)); err != nil {
				t.Errorf("Write %d: %v", i, err)
			}
		}
		if err := s.Write(ctx, big); err != nil {
			t.Errorf("large Write: %v", err)
		}
		burstReads.Add(1)
		if err := s.Write(ctx, msg(101)); err != nil {
			t.Errorf("Write 101: %v", err)
		}
	}
	done := make(chan struct{})
	var lines []string
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(peerR, 1<<20)
		for range k + 2 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Errorf("reading: %v", err)
				return
			}
			lines = append(lines, line)
		}
	}()
	burstReads.Add(1)
	if err := s.Write(ctx, msg(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	for i, line := range lines {
		want := i
		switch i {
		case k:
			want = 100
		case k + 1:
			want = 101
		}
		if !strings.Contains(line, fmt.Sprintf(`{"i":%d,`, want)) {
			t.Fatalf("line %d on the wire is %.40q…; want message %d", i, line, want)
		}
	}
	w := writes()
	for _, n := range w {
		if n > batchMax && n < len(big.Params) {
			t.Fatalf("a group write of %d bytes; the bound is %d (writes %v)", n, batchMax, w)
		}
	}
	if len(w) == 0 || w[0] < batchMax/2 {
		t.Fatalf("writes of %v bytes: the burst's first write did not group its messages up to the bound", w)
	}
}

// A peer that stops reading mid-burst: what its pipe has no room for is
// queued, Write does not wait for it, and once the peer reads again
// everything arrives whole and in order, the later writes behind it.
func TestBatchPeerStopsReadingMidBurst(t *testing.T) {
	s, peerR, _ := batchStream(t, Limits{QueueBytes: 1 << 20})
	ctx := context.Background()
	// Leave the pipe a little room: part of the batch fits.
	connW := s.w.(*os.File)
	fillPipe(t, connW)
	const k = 40
	s.yield = func() {
		s.yield = func() {} // a batch found full starts another
		for i := 1; i < k; i++ {
			if err := s.Write(ctx, seqMsg(i)); err != nil {
				t.Errorf("Write %d: %v", i, err)
			}
		}
	}
	r := bufio.NewReaderSize(peerR, 1<<20)
	// Drain a little of the filler, so the batch is cut mid-message.
	if _, err := io.ReadFull(r, make([]byte, 4096+100)); err != nil {
		t.Fatal(err)
	}
	burstReads.Add(1)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Write(wctx, seqMsg(0)); err != nil {
		t.Fatal(err)
	}
	for i := k; i < k+5; i++ {
		if err := s.Write(wctx, seqMsg(i)); err != nil {
			t.Fatalf("Write %d behind the queued rest: %v", i, err)
		}
	}
	// Skip the rest of the filler (spaces), then expect 0..k+4.
	for {
		b, err := r.Peek(1)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != ' ' {
			break
		}
		r.ReadByte()
	}
	readSeq(t, r, 0, k+5)
}

// A peer that never reads again: the batch's rest is queued, and the
// Stream's stall protection still ends it (WriteTimeout).
func TestBatchPeerNeverReadsStalls(t *testing.T) {
	s, _, _ := batchStream(t, Limits{WriteTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	fillPipe(t, s.w.(*os.File))
	s.yield = func() {
		s.yield = func() {}
		for i := 1; i < 8; i++ {
			_ = s.Write(ctx, seqMsg(i))
		}
	}
	burstReads.Add(1)
	if err := s.Write(ctx, seqMsg(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for i := 8; ; i++ {
		err := s.Write(ctx, seqMsg(i))
		if _, ok := err.(*StallError); ok {
			return
		}
		if err != nil {
			t.Fatalf("Write to a peer that never reads = %v; want a StallError", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a peer that never reads never stalled")
		}
	}
}

// Many writers at once, each with its own sequence: every line arrives
// whole and each writer's messages in its order.
func TestBatchConcurrentWritersKeepOrder(t *testing.T) {
	s, peerR, _ := batchStream(t, Limits{})
	ctx := context.Background()
	const writers, each = 8, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i%7 == 0 {
					burstReads.Add(1)
				}
				m := &Message{Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
				if err := s.Write(ctx, m); err != nil {
					t.Errorf("writer %d, message %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	next := make([]int, writers)
	r := bufio.NewReader(peerR)
	for range writers * each {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode([]byte(line))
		if err != nil {
			t.Fatalf("a line on the wire is not a message (%v): %q", err, line)
		}
		var p struct{ W, I int }
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.I != next[p.W] {
			t.Fatalf("writer %d's message %d arrived where %d was due", p.W, p.I, next[p.W])
		}
		next[p.W]++
	}
	wg.Wait()
}

// A large message written while a batch is pending goes behind the batch,
// and so does Flush: neither overtakes the messages gathered before it.
func TestBatchLargeMessageBehindPending(t *testing.T) {
	s, peerR, _ := batchStream(t, Limits{})
	ctx := context.Background()
	big := &Message{Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"i":2,"pad":%q}`, strings.Repeat("b", 40<<10)))}
	s.yield = func() {
		s.yield = func() {}
		if err := s.Write(ctx, seqMsg(1)); err != nil {
			t.Error(err)
		}
		if err := s.Write(ctx, big); err != nil {
			t.Error(err)
		}
		if err := s.Write(ctx, seqMsg(3)); err != nil {
			t.Error(err)
		}
	}
	done := make(chan []string)
	go func() {
		var lines []string
		r := bufio.NewReaderSize(peerR, 1<<20)
		for range 4 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Errorf("reading: %v", err)
				break
			}
			lines = append(lines, line)
		}
		done <- lines
	}()
	burstReads.Add(1)
	if err := s.Write(ctx, seqMsg(0)); err != nil {
		t.Fatal(err)
	}
	for i, line := range <-done {
		if !strings.Contains(line, fmt.Sprintf(`{"i":%d`, i)) {
			t.Fatalf("line %d on the wire is %.40q…; want message %d", i, line, i)
		}
	}
}
