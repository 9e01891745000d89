package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Held is what [HoldSessions] measured of a gate serving HTTP.
type Held struct {
	N                           int
	Before, Holding, After      Snapshot
	Open                        time.Duration // opening them all
	SessionsHeld, SessionsAfter string        // mcp_gate_sessions while held, after DELETE
}

// PerSessionKB is the growth of the gate's resident memory per session
// held, in KiB.
func (h Held) PerSessionKB() float64 {
	return float64(h.Holding.RSSKB-h.Before.RSSKB) / float64(h.N)
}

// Print writes the figures as a table.
func (h Held) Print(w io.Writer) {
	mb := func(kb int) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
	fmt.Fprintf(w, "| gate | RSS | peak RSS | fds | threads |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(w, "| before | %s | %s | %d | %d |\n", mb(h.Before.RSSKB), mb(h.Before.HWMKB), h.Before.FDs, h.Before.Threads)
	fmt.Fprintf(w, "| %d sessions held | %s | %s | %d | %d |\n", h.N, mb(h.Holding.RSSKB), mb(h.Holding.HWMKB), h.Holding.FDs, h.Holding.Threads)
	fmt.Fprintf(w, "| all deleted | %s | %s | %d | %d |\n", mb(h.After.RSSKB), mb(h.After.HWMKB), h.After.FDs, h.After.Threads)
	fmt.Fprintf(w, "per session held: %.1f KiB of RSS (%.1f KiB of peak); opened in %s; mcp_gate_sessions %s held, %s after DELETE\n",
		h.PerSessionKB(), float64(h.Holding.HWMKB-h.Before.HWMKB)/float64(h.N),
		h.Open.Round(time.Millisecond), h.SessionsHeld, h.SessionsAfter)
}

var sessionsMetric = regexp.MustCompile(`(?m)^mcp_gate_sessions (\S+)$`)

// SessionsMetric reads mcp_gate_sessions from the /metrics the gate serves
// next to its MCP endpoint url.
func SessionsMetric(hc *http.Client, url string) (string, error) {
	i := strings.LastIndex(url, "/")
	if i < 0 {
		return "", fmt.Errorf("%q is not an endpoint URL", url)
	}
	resp, err := hc.Get(url[:i] + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	m := sessionsMetric.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("/metrics (HTTP %s) has no mcp_gate_sessions", resp.Status)
	}
	return string(m[1]), nil
}

// HoldSessions opens n sessions on the gate at url, spread over tokens in
// turn, each initialized with its GET stream open and no calls; measures
// the gate (pid) before, while they are held and after all are deleted
// (DELETE, then the stream closed), and reads mcp_gate_sessions while held
// and after. Sessions open 16 at a time.
func HoldSessions(hc *http.Client, url string, tokens []string, n, pid int) (Held, error) {
	h := Held{N: n}
	var err error
	if h.Before, err = Measure(pid); err != nil {
		return h, err
	}
	clients := make([]*HTTPClient, n)
	streams := make([]io.Closer, n)
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.Close()
			}
		}
	}()
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c := NewHTTP(hc, url, tokens[i%len(tokens)])
			if err := c.Initialize(); err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			s, err := c.OpenStream()
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			clients[i], streams[i] = c, s
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return h, err
	}
	h.Open = time.Since(t0)
	time.Sleep(500 * time.Millisecond) // let what the opening left settle
	if h.Holding, err = Measure(pid); err != nil {
		return h, err
	}
	if h.SessionsHeld, err = SessionsMetric(hc, url); err != nil {
		return h, err
	}
	for i, c := range clients {
		if err := c.Delete(); err != nil {
			return h, fmt.Errorf("deleting session %d: %w", i, err)
		}
		streams[i].Close()
		streams[i] = nil
	}
	// The sessions end asynchronously after DELETE: wait for the gauge.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if h.SessionsAfter, err = SessionsMetric(hc, url); err != nil {
			return h, err
		}
		if h.SessionsAfter == "0" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	h.After, err = Measure(pid)
	return h, err
}
