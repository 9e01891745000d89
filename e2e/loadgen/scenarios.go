package loadgen

import (
	"fmt"
	"os/exec"
	"slices"
	"time"
)

// A Target is a way to start the server under test: the upstream directly,
// or the gate in front of it. Tool maps an upstream tool name to the name
// this target lists it under.
type Target struct {
	Name    string
	Command func() *exec.Cmd
	Tool    func(upstreamTool string) string
	// Modern: the client opens as a 2026-07-28 host (Client.Discover),
	// not with initialize.
	Modern bool
}

// Echo is a call of the echo server's echo tool on t.
func (t Target) Echo() Call {
	return Call{Tool: t.Tool("echo"), Args: `{"text":"hello"}`, MinBytes: len(`"hello"`)}
}

// Blob is a call of the echo server's blob tool on t, for a result of n
// bytes of text.
func (t Target) Blob(n int) Call {
	return Call{Tool: t.Tool("blob"), Args: fmt.Sprintf(`{"bytes":%d}`, n), MinBytes: n}
}

// Open starts t and performs the handshake (initialize, or discover for a
// modern target) and a tools/list, as a host does.
func (t Target) Open() (*Client, error) {
	c, err := Start(t.Command())
	if err != nil {
		return nil, err
	}
	open := c.Initialize
	if t.Modern {
		open = c.Discover
	}
	if err := open(); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	if _, err := c.ListTools(); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return c, nil
}

// Stats summarises latencies.
type Stats struct {
	N             int
	P50, P90, P99 time.Duration
}

// Summarise sorts lat in place and returns its percentiles.
func Summarise(lat []time.Duration) Stats {
	if len(lat) == 0 {
		return Stats{}
	}
	slices.Sort(lat)
	at := func(q int) time.Duration { return lat[min(len(lat)-1, len(lat)*q/100)] }
	return Stats{N: len(lat), P50: at(50), P90: at(90), P99: at(99)}
}

// Latency makes n calls one at a time and returns each one's latency,
// appended to lat.
func Latency(c *Client, call Call, n int, lat []time.Duration) ([]time.Duration, error) {
	for range n {
		t0 := time.Now()
		if err := c.Call(call); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// Throughput keeps outstanding calls in flight for about d and returns the
// number of calls answered and the time they took. Calls are sent in
// batches of 64×outstanding between clock reads.
func Throughput(c *Client, call Call, outstanding int, d time.Duration) (int, time.Duration, error) {
	batch := 64 * outstanding
	n := 0
	t0 := time.Now()
	for time.Since(t0) < d {
		if err := c.Pipeline(call, outstanding, batch); err != nil {
			return n, time.Since(t0), err
		}
		n += batch
	}
	return n, time.Since(t0), nil
}

// ColdStart measures one start of t: spawn, initialize, tools/list and the
// first call answered. Stopping the process is not counted.
func ColdStart(t Target, call Call) (time.Duration, error) {
	t0 := time.Now()
	c, err := t.Open()
	if err != nil {
		return 0, err
	}
	err = c.Call(call)
	d := time.Since(t0)
	if cerr := c.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: stopping: %w", t.Name, cerr)
	}
	return d, err
}
