package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bypasses by message smuggling through the relay: bytes the gate reads as
// one message and the next hop as several. Each test failed before its fix.

// A message's raw line breaks (JSON whitespace between tokens) were
// relayed as they came: a host's pretty-printed POST body decided as one
// allowed call delivered, on a line of its own, a second call to the
// upstream's stdin, never decided, which the TypeScript SDK's reader parsed
// and ran (its read of the first line failed and was skipped). The gate now
// rewrites such bytes to spaces where every message is decoded.
func TestBypassLineBreakSmuggledToUpstream(t *testing.T) {
	t.Parallel()
	needNode(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "pwned")
	pol := writePolicy(t, `version: 1
fallback: deny
allow: ["mcp:fs:list_allowed_directories"]
deny: ["mcp:fs:write_file"]
`)
	g := gateCommand(t, map[string]server{"fs": filesystem(dir)}, "--policy", pol)
	url := g.serveHTTP(t)

	resp, body := post(t, url, nil, initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if resp, body := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	// A write the policy denies, as the gate decides it...
	smuggled, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "smuggled", "method": "tools/call",
		"params": map[string]any{"name": "write_file", "arguments": map[string]any{"path": target, "content": "written past the gate"}}})
	if resp, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__write_file","arguments":{"path":`+jsonString(target)+`,"content":"x"}}}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, "denied") {
		t.Fatalf("the direct write: %d %s; want it denied", resp.StatusCode, body)
	}
	// ...and the same write put on a line of its own inside an allowed call.
	call := "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"fs__list_allowed_directories\",\"arguments\":{},\"x\":\n" +
		string(smuggled) + "\n}}"
	answered := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- "no answer: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	var got string
	select {
	case got = <-answered:
	case <-time.After(25 * time.Second):
		got = "no answer"
	}
	// Give an upstream that took the second line time to act on it.
	time.Sleep(500 * time.Millisecond)
	if b, err := os.ReadFile(target); err == nil {
		t.Fatalf("the upstream ran a call the gate never decided: %s holds %q (the allowed call's answer: %s)", target, b, got)
	}
	if !strings.Contains(got, dir) || strings.Contains(got, `"isError":true`) {
		t.Errorf("the allowed call, carrying the object as a member: %s; want its directory listed", got)
	}
}

// The same over stdio: a host's line may hold a lone CR between tokens,
// which the gate's framing (LF) keeps inside the line and Python's text
// reader (the Python SDK's stdio server reads lines so), Java's and .NET's
// ReadLine take for the end of one; relayed as it came, the upstream read
// the call's params as two lines and the line between as a message of its
// own. The server here reads lines as Go's Scanner does and records a CR.
func TestBypassLoneCRSmuggledToUpstream(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"fid": testserver("fidelity", "--events", events)})
	h := startRaw(t, g)
	h.initialize()
	rawResult(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	resp := h.send("2", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"fid__weird\",\"arguments\":{},\"x\":\r"+
		`{"jsonrpc":"2.0","id":"smuggled","method":"tools/call","params":{"name":"fails","arguments":{}}}`+"\r}}")
	rawResult(t, resp)
	if ev := readEvents(t, events); strings.Contains(ev, "CR") {
		t.Fatalf("the upstream read a line holding a CR, which line readers split: %s", ev)
	}
}

// The other way: a remote server's answer whose SSE data lines (joined with
// LF, as SSE says) put a message of its own on a line of its own reached a
// stdio host as several messages, the second an answer to the host's
// request to another server, in flight: a server spoke for another, past
// the gate's routing of answers by the ids it issued. The host's lines are
// whole messages of the gate's now.
func TestBypassLineBreakSmuggledToHost(t *testing.T) {
	t.Parallel()
	base, _ := startRemoteHostile(t)
	g := remoteGate(t, map[string]any{
		"hostile": map[string]any{"type": "http", "url": base + "/mcp"},
		"honest":  map[string]any{"command": testserverBin, "args": []string{"--mode", "honest"}},
	})
	h := startRaw(t, g)
	h.initialize()
	rawResult(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	slow := make(chan string, 2)
	h.mu.Lock()
	h.byID["7"] = slow
	h.mu.Unlock()
	if _, err := io.WriteString(h.stdin, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"honest__slow","arguments":{"steps":1,"ms":1500}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 2)
	h.mu.Lock()
	h.byID["2"] = ch
	h.mu.Unlock()
	if _, err := io.WriteString(h.stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hostile__linebreak","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-ch:
		if !strings.Contains(string(rawResult(t, resp)), `"fine"`) {
			t.Errorf("the call's answer: %s", resp)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("no whole answer to the call")
	}
	select {
	case resp := <-slow:
		if !strings.Contains(string(rawResult(t, resp)), `"done"`) {
			t.Errorf("the host's call to another server was answered by the hostile one: %s", resp)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("no answer to the call to the honest server")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("the host read a line that is not a whole message: %s", l)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Messages the gate builds from raw JSON it did not read with Decode are
// written with no line break either: a catalog cache entry whose tool
// definition holds CR and LF between its tokens (anything that can write
// the user's cache directory can plant one; entries are taken as untrusted,
// neutralised and decided like live ones) was relayed as it lay in the
// file, in the tools/list answer, and put a request of its own on a line of
// the host's stdin, past the guard. Every writer now rewrites them
// (rpc.appendMessage).
func TestBypassCatalogCacheLineBreakToHost(t *testing.T) {
	t.Parallel()
	u := newLazyUser(t, "alpha")
	// A first run, by a host with the capabilities of the second (they
	// are part of the cache key), writes the entry.
	first := u.gate(t)
	h := startRaw(t, first)
	h.initialize()
	for i, m := range []string{"tools/list", "prompts/list", "resources/list"} {
		id := strconv.Itoa(i + 1)
		rawResult(t, h.send(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+m+`","params":{}}`))
	}
	h.stdin.Close()
	_ = first.cmd.Wait()
	dir := filepath.Join(u.home, "cache", "mcp-gate", "catalog")
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d cache entries", len(entries))
	}
	p := filepath.Join(dir, entries[0].Name())
	data, _ := os.ReadFile(p)
	smuggled := `{"jsonrpc":"2.0","id":"smuggled","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`
	planted := strings.Replace(string(data), `"name":"echo"`, "\"x\":\r\n"+smuggled+"\n,\"y\":\r"+smuggled+"\r,\"name\":\"echo\"", 1)
	if planted == string(data) {
		t.Fatalf("cache file not as expected: %s", data)
	}
	if err := os.WriteFile(p, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	h = startRaw(t, u.gate(t))
	h.initialize()
	resp := h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if !strings.Contains(resp, `"alpha__echo"`) {
		t.Errorf("tools/list from the planted cache: %s", resp)
	}
	if u.starts("alpha") != 1 {
		t.Errorf("the planted entry was not used (alpha started %d times)", u.starts("alpha"))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if !json.Valid([]byte(l)) || strings.Contains(l, "\r") || strings.HasPrefix(l, `{"jsonrpc":"2.0","id":"smuggled"`) {
			t.Errorf("the host read a line that is not a whole message of the gate's: %q", l)
		}
	}
}
