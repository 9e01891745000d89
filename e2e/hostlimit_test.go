package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// TestLargeResultCostsOneCallNotTheHost: a host built on the TypeScript
// SDK (the pinned one, over stdio, as Claude Code and the MCP Inspector
// are) ends its whole connection when a line outgrows its read buffer. A
// result larger than that, relayed as it came, cut the host off from every
// server behind the gate, where a direct connection would have lost that
// one server. The gate's default message limit is under the SDK's bound,
// so such a result fails its own call and the host keeps its connection:
// a call before it and one after it are answered.
func TestLargeResultCostsOneCallNotTheHost(t *testing.T) {
	t.Parallel()
	sdkMax := tsSDKStdioMaxBuffer(t)
	// What the SDK holds at once is a message and up to 64 KiB read
	// behind it.
	if rpc.DefaultMaxMessageBytes+64<<10 > sdkMax {
		t.Fatalf("the default message limit (%d bytes) does not fit the TypeScript SDK's stdio buffer (%d bytes) with 64 KiB behind it", rpc.DefaultMaxMessageBytes, sdkMax)
	}
	g := gateCommand(t, map[string]server{"life": testserver("life", "--", "--big-bytes", strconv.Itoa(sdkMax+1<<20))})
	env := map[string]string{}
	for _, kv := range g.cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := json.Marshal(map[string]any{"command": g.cmd.Path, "args": g.cmd.Args[1:], "env": env, "tools": []string{"life__echo", "life__big", "life__echo"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeModules, ".bin", "node"), filepath.Join("testdata", "stdio_client.mjs"), string(cfg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript host: %v\n%s", err, out)
	}
	var got struct {
		Calls []struct {
			Name   string
			Error  string
			Result *struct {
				IsError bool
				Text    string
			}
		}
		Closed bool
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Calls) != 3 {
		t.Fatalf("the TypeScript host printed %s (%v)", out, err)
	}
	if got.Closed {
		t.Errorf("the TypeScript host's connection to the gate ended: %s", out)
	}
	for _, i := range []int{0, 2} {
		if c := got.Calls[i]; c.Result == nil || c.Result.IsError {
			t.Errorf("call %d (%s, before or after the large result): %+v; want it answered", i, c.Name, c)
		}
	}
	if c := got.Calls[1]; !strings.Contains(c.Error, fmt.Sprintf("exceeds the limit of %d bytes", rpc.DefaultMaxMessageBytes)) {
		t.Errorf("the call whose result was %d bytes: %+v; want an error naming the gate's limit", sdkMax+1<<20, c)
	}
}

// tsSDKStdioMaxBuffer reads the pinned TypeScript SDK's stdio read bound.
func tsSDKStdioMaxBuffer(t *testing.T) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(nodeModules, "@modelcontextprotocol", "sdk", "dist", "esm", "shared", "stdio.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`STDIO_DEFAULT_MAX_BUFFER_SIZE = (\d+) \* (\d+) \* (\d+);`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("the TypeScript SDK's stdio.js no longer says STDIO_DEFAULT_MAX_BUFFER_SIZE = A * B * C")
	}
	n := 1
	for _, f := range m[1:] {
		v, _ := strconv.Atoi(string(f))
		n *= v
	}
	return n
}

// TestAnswerOverTheLimitNotWritten: the limit holds for what the gate
// writes too. An upstream's result within --max-message-bytes can make an
// answer to the host beyond it (here by the host's own long id; the hidden
// characters the gate makes visible grow a result too): that answer is not
// written, the host gets an error saying why in its place, the audit log
// an undelivered line, and the session goes on. No line the host reads is
// over the limit.
func TestAnswerOverTheLimitNotWritten(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	g := gateCommand(t, map[string]server{"ok": testserver("honest")}, "--max-message-bytes", strconv.Itoa(limit))
	h := startRaw(t, g)
	h.initialize()
	id := `"` + strings.Repeat("i", 4000) + `"`
	blob := limit - 1000 // the upstream's answer is under the limit; the host's, with its id, over it
	resp := h.send(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"ok__blob","arguments":{"bytes":`+strconv.Itoa(blob)+`}}}`)
	if !strings.Contains(resp, `"error"`) || !strings.Contains(resp, "too large for the host") || !strings.Contains(resp, "--max-message-bytes") {
		t.Errorf("an answer of more than the limit: got %d bytes %.300s; want an error saying it is too large", len(resp), resp)
	}
	if resp := h.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok__blob","arguments":{"bytes":`+strconv.Itoa(blob)+`}}}`); !strings.Contains(resp, `"result"`) || len(resp) > limit {
		t.Errorf("the same result to a short id: got %d bytes %.200s; want it whole, within the limit", len(resp), resp)
	}
	h.mu.Lock()
	for _, l := range h.lines {
		if len(l) > limit {
			t.Errorf("the host read a line of %d bytes, over the limit of %d", len(l), limit)
		}
	}
	h.mu.Unlock()
	waitFor(t, "an undelivered audit line for the answer over the limit", 30*time.Second, func() bool {
		for _, l := range g.auditLines(t) {
			if l["event"] == "undelivered" && strings.Contains(fmt.Sprint(l["reason"]), "--max-message-bytes") {
				return true
			}
		}
		return false
	})
}
