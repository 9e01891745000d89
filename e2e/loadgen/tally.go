package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// A Tally counts what became of calls that each carry a text of their own
// (the echo tool's), so that a reply can be matched to its call: the soak
// (e2e/soak) and the reload storm (e2e/storm) read it.
type Tally struct {
	Sent       int // calls sent
	OK         int // answered with the call's own text
	Denied     int // answered with a tool error (the gate's denial)
	Errors     int // answered with a JSON-RPC error
	Wrong      int // answered with a result that is not the call's text
	Duplicated int // answered more than once
	Lost       int // never answered (the run stalled or the server died)
	Samples    []string
}

func (t *Tally) sample(format string, a ...any) {
	if len(t.Samples) < 5 {
		t.Samples = append(t.Samples, fmt.Sprintf(format, a...))
	}
}

// Tally calls tool (the echo server's echo, under the name this target
// lists it) with outstanding calls in flight until total have been sent,
// or stop is closed, and waits for their replies. If no reply comes for
// stall, the server is killed and what is unanswered counts as lost.
func (c *Client) Tally(tool string, outstanding, total int, stop <-chan struct{}, stall time.Duration) (Tally, error) {
	var t Tally
	name := string(rawjson.AppendString(nil, tool))
	pending := map[int64]bool{}
	answered := map[int64]bool{}
	var progress atomic.Int64
	done := make(chan struct{})
	defer close(done)
	go func() {
		last, idle := progress.Load(), time.Duration(0)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if p := progress.Load(); p != last {
				last, idle = p, 0
				continue
			}
			if idle += 100 * time.Millisecond; idle >= stall {
				c.cmd.Process.Kill()
				return
			}
		}
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	send := func() error {
		id := c.nextID + 1
		if _, err := c.send("tools/call", `{"name":`+name+`,"arguments":{"text":"s`+strconv.FormatInt(id, 10)+`"}}`); err != nil {
			return err
		}
		pending[id] = true
		t.Sent++
		return nil
	}
	for len(pending) < outstanding && (total <= 0 || t.Sent < total) && !stopped() {
		if err := send(); err != nil {
			return t, err
		}
	}
	for len(pending) > 0 {
		id, r, err := c.receive()
		if err != nil {
			t.Lost = len(pending)
			return t, err
		}
		progress.Add(1)
		switch {
		case answered[id]:
			t.Duplicated++
			t.sample("id %d answered twice", id)
			continue
		case !pending[id]:
			t.Wrong++
			t.sample("reply to an id never sent: %d", id)
			continue
		}
		delete(pending, id)
		answered[id] = true
		switch {
		case r.err != nil:
			t.Errors++
			t.sample("id %d: error %.200s", id, r.err)
		case r.result == nil:
			t.Wrong++
		default:
			if v, ok := rawjson.Get(r.result, "isError"); ok && bytes.Equal(v, []byte("true")) {
				t.Denied++
			} else if bytes.Contains(r.result, []byte(`"s`+strconv.FormatInt(id, 10)+`"`)) {
				t.OK++
			} else {
				t.Wrong++
				t.sample("id %d: result %.200s", id, r.result)
			}
		}
		if (total <= 0 || t.Sent < total) && !stopped() {
			if err := send(); err != nil {
				t.Lost = len(pending)
				return t, err
			}
		}
	}
	return t, nil
}

// OpenFDs counts a process's open file descriptors (Linux /proc).
func OpenFDs(pid int) (int, error) {
	entries, err := readDirNames("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0, fmt.Errorf("listing the descriptors of process %d: %w", pid, err)
	}
	return len(entries), nil
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
