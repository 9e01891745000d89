package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The gate encodes the lines it writes into pooled buffers (rpc/writepool.go),
// reused once a write returns; what outlives the write is copied. A host
// that sends many calls at once and reads nothing for a while makes the
// gate's writes to it partial, and queues the answers behind one another,
// while further calls are answered into the same buffers. Every answer
// must still carry exactly its own call's text: one letter per call,
// sizes from a few bytes to 40 KB, through the real binary.
func TestConcurrentCallsKeepTheirOwnBytes(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	in, err := g.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = g.cmd.Wait() })
	r := bufio.NewReaderSize(out, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := in.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	const calls = 240
	want := make(map[int]string, calls)
	for i := 1; i <= calls; i++ {
		size := 5 + (i*7919)%200
		if i%3 == 0 {
			size = 20000 + (i*104729)%20000
		}
		want[i] = strings.Repeat(string(rune('a'+i%26)), size)
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":%q}}}`, i, want[i]))
	}
	// Read nothing for a while: the answers fill the pipe and queue.
	time.Sleep(500 * time.Millisecond)
	deadline := time.Now().Add(60 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answers (%d left): %v", len(want), err)
		}
		var m struct {
			ID     *int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line from the gate is not JSON (%v): %.120q", err, line)
		}
		if m.ID == nil {
			continue // a notification
		}
		w, ok := want[*m.ID]
		if !ok {
			t.Fatalf("an answer to id %d, not a call in flight: %.120q", *m.ID, line)
		}
		delete(want, *m.ID)
		if m.Result.IsError || len(m.Result.Content) != 1 || m.Result.Content[0].Text != w {
			got := ""
			if len(m.Result.Content) > 0 {
				got = m.Result.Content[0].Text
			}
			t.Errorf("call %d (%d bytes) was answered with %d bytes starting %.40q", *m.ID, len(w), len(got), got)
		}
	}
	if len(want) > 0 {
		t.Fatalf("%d calls unanswered", len(want))
	}
}
