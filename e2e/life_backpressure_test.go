package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostQueueBytes is the gate's stated bound per host session (the README's
// "Limits", proxy.HostQueueBytes).
const hostQueueBytes = 16 << 20

// vmHWM returns a process's peak resident set, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status to read the peak RSS from: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", l, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// A host that stops reading while an upstream keeps returning 1 MB results
// does not grow the gate without bound: the gate stops reading that host
// once its queue is full, and drops what cannot wait; once the host reads
// again, every request gets its answer or a clear error, never nothing.
func TestLifeHostStopsReading(t *testing.T) {
	// Not parallel (see harness_test.go): measures the gate's peak RSS and moves 300 MiB through it.
	const calls = 300
	path := lifeServers(t, map[string]map[string]any{"big": lifeEntry(nil, "--big-bytes", fmt.Sprint(1<<20))})
	g := gateCommand(t, nil, "--servers", path, "--log-level", "info")
	stdin, err := g.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := g.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { g.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			g.cmd.Process.Kill()
			t.Error("the gate did not exit after its stdin closed")
		}
	})
	out := bufio.NewReaderSize(stdout, 1<<20)
	readLine := func() string {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the gate's output: %v\n%s", err, g.stderr.String())
		}
		return line
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stalled","version":"1"}}}`+"\n")
	readLine()
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if l := readLine(); !strings.Contains(l, "big__big") {
		t.Fatalf("tools/list: %.300s", l)
	}
	// The host writes its calls and reads nothing for a while.
	go func() {
		for i := range calls {
			if _, err := fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big__big","arguments":{}}}`+"\n", 100+i); err != nil {
				return
			}
		}
	}()
	// It stops reading until the gate has had to drop a result: past the
	// bound's worth on their way, which a loaded machine's upstream may
	// take more than a few seconds to send (a fixed five seconds, read
	// again before the first drop, let every result through).
	waitFor(t, "the gate to drop a result the host was not reading", 2*time.Minute, func() bool {
		for _, a := range g.auditLines(t) {
			if a["event"] == "undelivered" {
				return true
			}
		}
		return false
	})
	stalledPeak := vmHWM(t, g.cmd.Process.Pid)
	// Reading again, the host gets an answer to every call.
	got := map[int]bool{}
	var results, dropped int
	deadline := time.AfterFunc(3*time.Minute, func() { g.cmd.Process.Kill() })
	defer deadline.Stop()
	for len(got) < calls {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		l := readLine()
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON-RPC message: %.200s", l)
		}
		if got[m.ID] {
			t.Fatalf("id %d answered twice", m.ID)
		}
		got[m.ID] = true
		switch {
		case m.Error != nil && strings.Contains(m.Error.Message, "was not reading its input"):
			dropped++
		case m.Error != nil:
			t.Fatalf("id %d: unexpected error %q", m.ID, m.Error.Message)
		case len(m.Result) < 1<<20:
			t.Fatalf("id %d: a result of %d bytes; want the 1 MiB text", m.ID, len(m.Result))
		default:
			results++
		}
	}
	peak := vmHWM(t, g.cmd.Process.Pid)
	t.Logf("%d calls: %d results, %d dropped with an error; gate peak RSS %d MiB while the host was not reading, %d MiB overall (bound %d MiB)",
		calls, results, dropped, stalledPeak>>20, peak>>20, hostQueueBytes>>20)
	// A generous multiple of the bound: the queue, the waiting room and the
	// results on their way are each the bound, and garbage waits for the
	// collector. The race detector multiplies memory use (its shadow memory
	// and its slower collection), hence a larger multiple under it; without
	// the bound the gate holds every result (past 380 MiB for these 300
	// without the detector, past 1 GiB with it).
	multiple := int64(12)
	if raceEnabled {
		multiple = 40
	}
	if limit := multiple * hostQueueBytes; peak > limit {
		t.Errorf("the gate's peak RSS is %d MiB; want it under %d MiB (%d times the stated bound)", peak>>20, limit>>20, multiple)
	}
	// 300 MiB of results cannot all wait for a host that reads nothing.
	if dropped == 0 {
		t.Error("no result was dropped while the host read nothing")
	}
	found := false
	for _, a := range g.auditLines(t) {
		found = found || a["event"] == "undelivered"
	}
	if !found {
		t.Error("results were dropped, but the audit does not say so")
	}
}
