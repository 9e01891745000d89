package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Many writers, mixed small and 300 KB messages, slow reader: every line whole, per-writer order.
func TestStreamConcurrentWritersKeepOrder(t *testing.T) {
	for _, qb := range []int{0, 256 << 10} {
		t.Run(fmt.Sprint(qb), func(t *testing.T) {
			peerR, connW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			idle, _ := io.Pipe()
			s := NewStream(idle, connW, connW, Limits{QueueBytes: qb})
			defer s.Close()
			if s.tw == nil {
				t.Fatal("not direct")
			}
			const writers, per = 8, 60
			type rec struct{ w, i int }
			got := make(chan error, 1)
			go func() {
				br := bufio.NewReaderSize(peerR, 4096)
				last := make([]int, writers)
				for i := range last {
					last[i] = -1
				}
				n := 0
				for n < writers*per {
					if n%7 == 0 {
						time.Sleep(200 * time.Microsecond)
					}
					line, err := br.ReadString('\n')
					if err != nil {
						got <- fmt.Errorf("after %d lines: %v", n, err)
						return
					}
					var m struct {
						ID     []int           `json:"id"`
						Method string          `json:"method"`
						Params json.RawMessage `json:"params"`
						Result json.RawMessage `json:"result"`
					}
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						got <- fmt.Errorf("line %d not whole JSON (%d bytes): %v; %.80q", n, len(line), err, line)
						return
					}
					w, i := m.ID[0], m.ID[1]
					if i != last[w]+1 {
						got <- fmt.Errorf("writer %d: got %d after %d", w, i, last[w])
						return
					}
					last[w] = i
					n++
				}
				got <- nil
			}()
			var wg sync.WaitGroup
			big := strings.Repeat("y", 300<<10)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					r := rand.New(rand.NewSource(int64(w)))
					for i := 0; i < per; i++ {
						id := json.RawMessage(fmt.Sprintf("[%d,%d]", w, i))
						var m *Message
						switch r.Intn(4) {
						case 0:
							m = &Message{ID: id, Result: json.RawMessage(`{"t":"` + big[:r.Intn(len(big))] + `"}`)}
						case 1:
							m = &Message{ID: id, Method: "x", Params: json.RawMessage(`{"t":"` + big[:40<<10] + `"}`)}
						default:
							m = &Message{ID: id, Method: "small", Params: json.RawMessage(`{"a":1}`)}
						}
						if r.Intn(10) == 0 {
							// tryWrite must not break order either: spin until it queues
							for {
								ok, err := s.tryWrite(m)
								if err != nil {
									t.Error(err)
									return
								}
								if ok {
									break
								}
								time.Sleep(50 * time.Microsecond)
							}
						} else if err := s.Write(context.Background(), m); err != nil {
							var qf *QueueFullError
							if errors.As(err, &qf) {
								i--
								time.Sleep(time.Millisecond)
								continue
							}
							t.Error(err)
							return
						}
						if r.Intn(20) == 0 {
							_ = s.Flush(context.Background())
						}
					}
				}(w)
			}
			wg.Wait()
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("reader hang")
			}
		})
	}
}

// Input ends while the byte bound is full: goroutine mode sees EOF, direct mode?
func TestStreamInputEndSeenWhileQueueFull(t *testing.T) {
	forPipes(t, func(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
		connR, peerW := pipe(t)
		w := newGatedWriter()
		defer close(w.closed)
		s := NewStream(connR, w, nil, Limits{QueueBytes: 1024})
		defer s.Close()
		if err := s.Write(context.Background(), &Message{Method: "m", Params: json.RawMessage(`"` + strings.Repeat("x", 4096) + `"`)}); err != nil {
			t.Fatal(err)
		}
		<-w.started
		peerW.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := s.Read(ctx)
		t.Logf("Read after input EOF with full queue = %v", err)
		if !errors.Is(err, io.EOF) {
			t.Errorf("want EOF, got %v", err)
		}
	})
}

// Reads under many short contexts while the peer writes lines in fragments: nothing lost/duplicated.
func TestStreamInterruptedReadsLoseNothing(t *testing.T) {
	connR, peerW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(connR, io.Discard, connR, Limits{ReadStall: 5 * time.Second})
	defer s.Close()
	const N = 400
	go func() {
		r := rand.New(rand.NewSource(1))
		for i := 0; i < N; i++ {
			line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"m","params":{"i":%d,"pad":"%s"}}`+"\n", i, strings.Repeat("p", r.Intn(200<<10)))
			for len(line) > 0 {
				k := min(len(line), 1+r.Intn(100<<10))
				peerW.WriteString(line[:k])
				line = line[k:]
				if r.Intn(3) == 0 {
					time.Sleep(time.Duration(r.Intn(200)) * time.Microsecond)
				}
			}
		}
		peerW.Close()
	}()
	next := 0
	r := rand.New(rand.NewSource(2))
	for {
		var ctx context.Context
		var cancel context.CancelFunc
		switch r.Intn(3) {
		case 0:
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.Intn(300))*time.Microsecond)
		case 1:
			ctx, cancel = context.WithCancel(context.Background())
			d := time.Duration(r.Intn(100)) * time.Microsecond
			go func() { time.Sleep(d); cancel() }()
		default:
			ctx, cancel = context.WithCancel(context.Background())
		}
		m, err := s.Read(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				continue
			}
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("after %d: %v", next, err)
		}
		var p struct{ I int }
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.I != next {
			t.Fatalf("got %d want %d", p.I, next)
		}
		next++
	}
	if next != N {
		t.Fatalf("got %d of %d", next, N)
	}
}

// Close racing a Read about to start.
func TestStreamCloseRacesRead(t *testing.T) {
	for i := 0; i < 2000; i++ {
		connR, peerW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		s := NewStream(connR, io.Discard, nil, Limits{QueueBytes: 1 << 20})
		done := make(chan error, 1)
		go func() { _, err := s.Read(context.Background()); done <- err }()
		if i%2 == 0 {
			time.Sleep(time.Duration(i%50) * time.Microsecond)
		}
		s.Close()
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("Read = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Read did not return after Close")
		}
		connR.Close()
		peerW.Close()
	}
}

// A direct Read looks at done and framing only once the Stream's stopping
// flag is set (readDirect): a stall found, or a Close, at any point of a
// Read that its context keeps interrupting (each Read clearing the last
// one's deadline) must still end it, with the framing error or
// ErrClosed, and every Read after that too; none may wait on the silent
// peer.
func TestStreamDirectStopRacesRead(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		connR, peerW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stall := time.Duration(500+rng.Intn(2500)) * time.Microsecond
		s := NewStream(connR, io.Discard, connR, Limits{ReadStall: stall})
		if s.rdl == nil {
			connR.Close()
			peerW.Close()
			t.Skip("not in direct mode here")
		}
		// Part of a message, then silence: the stall watch runs while a
		// Read waits on the rest.
		if _, err := io.WriteString(peerW, `{"jsonrpc":"2.0","method":"x","par`); err != nil {
			t.Fatal(err)
		}
		closeAt := time.Duration(-1)
		if i%3 == 0 {
			closeAt = time.Duration(rng.Intn(3000)) * time.Microsecond
			time.AfterFunc(closeAt, func() { s.Close() })
		}
		deadline := time.Now().Add(10 * time.Second)
		var end error
		for end == nil {
			if time.Now().After(deadline) {
				t.Fatalf("round %d (stall %v, close at %v): Reads still wait on a silent peer", i, stall, closeAt)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.Intn(4000))*time.Microsecond)
			_, err := s.Read(ctx)
			cancel()
			var fe *FramingError
			switch {
			case errors.Is(err, context.DeadlineExceeded):
			case errors.As(err, &fe), errors.Is(err, ErrClosed):
				end = err
			default:
				t.Fatalf("round %d: Read = %v", i, err)
			}
		}
		// Once ended, every Read says so at once, under a context that
		// would not interrupt it (as Conn.Run's does not).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		_, err = s.Read(ctx)
		cancel()
		if took := time.Since(start); err == nil || errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
			t.Fatalf("round %d: the Read after %v = %v, after %v", i, end, err, took)
		}
		s.Close()
		connR.Close()
		peerW.Close()
	}
}
