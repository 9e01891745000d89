package httpfront

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Held sessions cost a fixed number of goroutines each, and every one of
// them ends with its session, however the session ends: DELETE, idle
// expiry after the client dropped its GET stream, or the client going away
// mid-stream and the session expiring. A leak here is memory that grows
// with every session a team ever opened.
func TestHeldSessionsLeaveNothingBehind(t *testing.T) {
	h, url := newTestServer(t, func(o *Options) { o.IdleTimeout = 300 * time.Millisecond })
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	hc := &http.Client{Transport: tr}
	settle := func(want int) int {
		deadline := time.Now().Add(5 * time.Second)
		n := runtime.NumGoroutine()
		for n > want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			n = runtime.NumGoroutine()
		}
		return n
	}
	base := runtime.NumGoroutine()

	const n = 60
	type held struct {
		sid    string
		cancel context.CancelFunc
		done   chan struct{}
	}
	var sessions []held
	// On failure, the streams end before the server's cleanup waits for
	// their handlers.
	t.Cleanup(func() {
		for _, s := range sessions {
			s.cancel()
		}
		tr.CloseIdleConnections()
	})
	for range n {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initMsg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get(HeaderSessionID)
		ctx, cancel := context.WithCancel(context.Background())
		get, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		get.Header.Set("Accept", "text/event-stream")
		get.Header.Set(HeaderSessionID, sid)
		gresp, err := hc.Do(get)
		if err != nil || gresp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", gresp, err)
		}
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, gresp.Body); gresp.Body.Close(); close(done) }()
		sessions = append(sessions, held{sid, cancel, done})
	}
	// The streams keep their sessions alive past the idle timeout.
	time.Sleep(500 * time.Millisecond)
	if got := h.Sessions(); got != n {
		t.Fatalf("%d sessions held with their GET streams open past the idle timeout, want %d", got, n)
	}
	// Per session: the gate's session, its GET handler and its
	// connection's reader; the client's connection (two) and stream
	// reader. Eight leaves room and still catches a per-message leak.
	if per := float64(runtime.NumGoroutine()-base) / n; per > 8 {
		t.Errorf("%.1f goroutines per held session", per)
	}
	for i, s := range sessions {
		switch i % 3 {
		case 0: // DELETE, then the stream closes
			req, _ := http.NewRequest("DELETE", url, nil)
			req.Header.Set(HeaderSessionID, s.sid)
			resp, err := hc.Do(req)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: %v %v", resp, err)
			}
			resp.Body.Close()
			select { // the gate ends the stream itself
			case <-s.done:
			case <-time.After(5 * time.Second):
				t.Fatal("the GET stream outlived its session's DELETE by 5s")
			}
		case 1: // the client drops its stream; the session expires
			s.cancel()
		case 2: // the client goes away whole
			s.cancel()
			tr.CloseIdleConnections()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Sessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := h.Sessions(); got != 0 {
		t.Errorf("%d sessions left after DELETE or expiry", got)
	}
	tr.CloseIdleConnections()
	if got := settle(base + 2); got > base+2 {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after every session ended, %d before:\n%s", got, base, buf)
	}
}
