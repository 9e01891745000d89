package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Writers in direct mode encode into pooled buffers (writepool.go). With
// a peer that has no room (its pipe full, so messages are written in part
// and their rest queued, and later ones queue whole behind them), each
// buffer goes back to the pool while the bytes it held are still to be
// sent: every message must still arrive whole and as its writer wrote it,
// never with another's bytes. Each writer's payload is one letter repeated,
// its sizes varied (a large one is sent as pooled head plus its own
// payload), so a line carrying bytes of another message shows.
func TestWritePoolNoCrossMessageBytes(t *testing.T) {
	connR, _, peerR, connW := osPipes(t)
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	t.Cleanup(func() { s.Close() })
	if s.tw == nil {
		t.Skip("the Stream over a pipe does not write directly here")
	}
	if err := peerR.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 60
	size := func(w, i int) int {
		if i%10 == 9 {
			return largePayload + 100*w // head pooled, payload the message's own
		}
		return 50 + (w*977+i*131)%9000
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	defer func() {
		// A failure ends the test with writers still writing: they end
		// on the closed Stream before it returns.
		s.Close()
		wg.Wait()
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			letter := string(rune('a' + w))
			for i := range each {
				text := strings.Repeat(letter, size(w, i))
				m := &Message{ID: json.RawMessage(fmt.Sprintf(`"%d-%d"`, w, i)), Result: json.RawMessage(`{"t":"` + text + `"}`)}
				if err := s.Write(ctx, m); err != nil {
					errs <- fmt.Errorf("writer %d, message %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	// The peer reads nothing at first: the pipe fills, and writes are
	// partial and queued.
	time.Sleep(50 * time.Millisecond)
	r := bufio.NewReaderSize(peerR, 1<<20)
	next := make([]int, writers)
	for range writers * each {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode([]byte(line))
		if err != nil {
			t.Fatalf("a line on the wire is not a message (%v): %.200q", err, line)
		}
		var id string
		var w, i int
		if json.Unmarshal(m.ID, &id) != nil {
			t.Fatalf("id %s", m.ID)
		}
		if _, err := fmt.Sscanf(id, "%d-%d", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("id %q", id)
		}
		if i != next[w] {
			t.Fatalf("writer %d's message %d arrived where %d was due", w, i, next[w])
		}
		next[w]++
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		want := `{"t":"` + strings.Repeat(string(rune('a'+w)), size(w, i)) + `"}`
		if string(m.Result) != want {
			t.Fatalf("message %s arrived with other bytes: %d bytes, want %d, starting %.80q", id, len(m.Result), len(want), m.Result)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A small message written in direct mode to a peer with room costs no
// allocation: its line is a pooled buffer's.
func TestWritePoolAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	connR, _, peerR, connW := osPipes(t)
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	t.Cleanup(func() { s.Close() })
	if s.tw == nil {
		t.Skip("the Stream over a pipe does not write directly here")
	}
	go io.Copy(io.Discard, peerR)
	m := &Message{ID: json.RawMessage(`7`), Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)}
	ctx := context.Background()
	if n := testing.AllocsPerRun(200, func() {
		if err := s.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a small direct Write allocates %v times, want 0", n)
	}
}
