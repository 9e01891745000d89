package loadgen

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEchoServerHTTP runs the HTTP client against the echo server's HTTP
// mode once, briefly and untimed, so that neither rots between benchmark
// runs: handshake and session id, JSON replies, concurrent calls, the
// checks of a short or failed result, and DELETE.
func TestEchoServerHTTP(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echoserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../echoserver").CombinedOutput(); err != nil {
		t.Fatalf("building the echo server: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the echo server's URL: %v", err)
	}
	url = strings.TrimSpace(url)

	c := NewHTTP(NewHTTPTransport(8), url, "")
	if err := c.Initialize(); err != nil {
		t.Fatal(err)
	}
	if c.Session() == "" {
		t.Error("no Mcp-Session-Id kept from initialize")
	}
	tools, err := c.ListTools()
	if err != nil || !strings.Contains(string(tools), `"echo"`) {
		t.Fatalf("tools/list: %v: %s", err, tools)
	}
	echo := Call{Tool: "echo", Args: `{"text":"hello"}`, MinBytes: len(`"hello"`)}
	lat, err := HTTPLatency(c, echo, 5, nil)
	if err != nil || len(lat) != 5 {
		t.Fatalf("echo latency: %d calls, %v", len(lat), err)
	}
	if n, _, err := HTTPThroughput(c, echo, 4, 0); err != nil || n != 0 {
		t.Fatalf("throughput for no time: %d calls, %v", n, err)
	}
	if err := c.Call(Call{Tool: "blob", Args: `{"bytes":3}`, MinBytes: 100}); err == nil {
		t.Error("a 3-byte blob passed for a 100-byte one")
	}
	if err := c.Call(Call{Tool: "nope", Args: `{}`}); err == nil {
		t.Error("a call of an unknown tool succeeded")
	}
	if _, err := c.OpenStream(); err == nil {
		t.Error("the echo server offers no GET stream, yet one opened")
	}
	if err := c.Delete(); err != nil {
		t.Error(err)
	}
}

// TestReadEvents reads a reply from an SSE stream as the gate writes one:
// a keep-alive comment, a notification, then the reply in two data lines.
func TestReadEvents(t *testing.T) {
	c := NewHTTP(nil, "http://127.0.0.1:1/mcp", "")
	in := ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"content\":[]}}\n\n"
	r, err := c.readEvents(strings.NewReader(in), 7, new(bytes.Buffer))
	if err != nil || string(r.result) != `{"content":[]}` {
		t.Fatalf("got %q, %v", r.result, err)
	}
	if _, err := c.readEvents(strings.NewReader(in), 8, new(bytes.Buffer)); err == nil {
		t.Error("a reply with another id was taken")
	}
	if _, err := c.readEvents(strings.NewReader(": only a comment\n\n"), 7, new(bytes.Buffer)); err == nil {
		t.Error("a stream that ended without the reply was taken")
	}
}
