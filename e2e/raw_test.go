package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawHost talks to the gate binary line by line, so a test sees exactly the
// bytes the gate writes: an SDK client would normalise them away.
type rawHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	logs   func() string // the peer's stderr, for failure messages
	stdin  io.WriteCloser
	mu     sync.Mutex
	lines  []string // every line the gate wrote, in order
	byID   map[string]chan string
	notify chan string
}

func startRaw(t *testing.T, g *gate) *rawHost {
	t.Helper()
	return startRawCmd(t, g.cmd, g.stderr.String)
}

// startRawCmd starts any MCP server command and talks to it line by line.
func startRawCmd(t *testing.T, cmd *exec.Cmd, logs func() string) *rawHost {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &rawHost{t: t, cmd: cmd, logs: logs, stdin: stdin, byID: map[string]chan string{}, notify: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			h.lines = append(h.lines, line)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				h.mu.Unlock()
				t.Errorf("stdout carried a line that is not JSON: %q", line)
				continue
			}
			ch := h.byID[string(m.ID)]
			h.mu.Unlock()
			switch {
			case m.Method != "":
				select {
				case h.notify <- line:
				default:
				}
			case ch != nil:
				ch <- line
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done // its stderr is whole once it has been reaped (the race check reads it)
			t.Errorf("%s did not exit after its stdin closed", cmd.Path)
		}
	})
	return h
}

// send writes one line and, when id is not empty, returns the response line.
func (h *rawHost) send(id, line string) string {
	h.t.Helper()
	var ch chan string
	if id != "" {
		ch = make(chan string, 2)
		h.mu.Lock()
		h.byID[id] = ch
		h.mu.Unlock()
	}
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
	if ch == nil {
		return ""
	}
	select {
	case resp := <-ch:
		return resp
	case <-time.After(60 * time.Second):
		h.t.Fatalf("no response to id %s for %s\n%s", id, line, h.logs())
		return ""
	}
}

func (h *rawHost) initialize() {
	h.t.Helper()
	resp := h.send("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if !strings.Contains(resp, `"protocolVersion":"2025-11-25"`) {
		h.t.Fatalf("initialize: %s", resp)
	}
	h.send("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// responses counts the lines that answer id.
func (h *rawHost) responses(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if strings.Contains(l, `"id":`+id+`,`) {
			n++
		}
	}
	return n
}

func rawResult(t *testing.T, resp string) json.RawMessage {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp), &m); err != nil {
		t.Fatalf("response is not JSON: %q", resp)
	}
	if m.Error != nil {
		t.Fatalf("unexpected error response: %s", resp)
	}
	return m.Result
}

// Issue #2, the fidelity test: definitions, results and errors reach the
// host byte for byte, apart from the tool name.
func TestFidelity(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"fid": testserver("fidelity")})
	h := startRaw(t, g)
	h.initialize()

	list := rawResult(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	wantTool := strings.Replace(fidelityTool, `"name":"weird"`, `"name":"fid__weird"`, 1)
	if !bytes.Contains(list, []byte(wantTool)) {
		t.Errorf("the tool definition changed on the way:\n got: %s\nwant: %s", list, wantTool)
	}

	resp := h.send(`"str-id"`, `{"jsonrpc":"2.0","id":"str-id","method":"tools/call","params":{"name":"fid__weird","arguments":{"a":"x"}}}`)
	if want := `{"jsonrpc":"2.0","id":"str-id","result":` + fidelityResult + `}`; resp != want {
		t.Errorf("the result changed on the way:\n got: %s\nwant: %s", resp, want)
	}

	resp = h.send("9007199254740993", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"fid__fails","arguments":{}}}`)
	if want := `{"jsonrpc":"2.0","id":9007199254740993,"error":` + fidelityError + `}`; resp != want {
		t.Errorf("the error changed on the way:\n got: %s\nwant: %s", resp, want)
	}

	// The arguments reached the upstream as the host wrote them (only the
	// name is the upstream's own).
	resp = h.send("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fid__weird","arguments":{"b": 9007199254740993, "z":[1.50,{}]},"_meta":{"x":1}}}`)
	rawResult(t, resp)
}

// The constants of testserver/raw.go, restated: the test must fail if
// either side changes them.
const (
	fidelityTool   = `{"name":"weird","description":"schema without a type","inputSchema":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"integer","maximum":9007199254740993}}}],"x-vendor":{"keep":true, "n":9007199254740993},"$schema":"https://json-schema.org/draft/2020-12/schema"},"x-unknown-field":[1,2.50,"three"],"annotations":{"readOnlyHint":true,"x-extra":null}}`
	fidelityResult = `{"content":[{"type":"hologram","data":{"z":1},"x":9007199254740993},{"type":"text","text":"big: 9007199254740993 \u00e9\u2028"}],"structuredContent":{"n":9007199254740993,"f":1.0e+2},"isError":false,"_meta":{"x-trace":"abc"}}`
	fidelityError  = `{"code":-32602,"message":"bad arguments: a must be a string","data":{"field":"a","got":9007199254740993,"hint":["x",null]}}`
)

// Issue #2, bad input: garbage from the host or an upstream gets an error
// for that message only; nothing hangs, nothing is answered twice.
func TestBadInput(t *testing.T) {
	t.Parallel()
	events := t.TempDir() + "/events"
	g := gateCommand(t, map[string]server{"junk": testserver("garbage", "--events", events), "ok": testserver("honest")},
		"--max-message-bytes", fmt.Sprint(1<<20))
	h := startRaw(t, g)
	h.initialize()
	rawResult(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))

	cases := []struct {
		name, id, line, want string
	}{
		{"not JSON from the host", "null", `this is not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not valid JSON"}}`},
		// The id is salvaged, so the host's request fails instead of waiting.
		{"truncated JSON from the host", "77", `{"jsonrpc":"2.0","id":77,"method":"tools/list"`, `{"jsonrpc":"2.0","id":77,"error":{"code":-32700,"message":"not valid JSON"}}`},
		{"not JSON-RPC", "5", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, `"code":-32600`},
		{"batch", "null", `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, `batches are not supported`},
		{"unknown tool", "7", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope__x"}}`, `unknown tool \"nope__x\"`},
		{"unknown method", "8", `{"jsonrpc":"2.0","id":8,"method":"frobnicate"}`, `"code":-32601`},
		{"duplicate keys", "9", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ok__echo","name":"junk__fine"}}`, `duplicate key`},
		{"noise on the upstream's stdout", "10", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"junk__noise"}}`, `after the noise`},
		{"a truncated response", "11", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"junk__broken"}}`, `malformed response to tools/call`},
		{"a response larger than the limit", "12", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"junk__huge"}}`, `exceeds the limit of 1048576 bytes`},
		{"a result that is not an object", "13", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"junk__notobject"}}`, `not an object`},
		{"two responses", "14", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"junk__twice"}}`, `"text":"first"`},
		{"an oversized request from the host", "15", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"ok__echo","arguments":{"text":"` + strings.Repeat("z", 2<<20) + `"}}}`, `exceeds the limit`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := h.send(c.id, c.line)
			if !strings.Contains(resp, c.want) {
				t.Errorf("got %s\nwant it to contain %s", resp, c.want)
			}
		})
	}
	// After all that the session still works and nothing was answered twice.
	resp := h.send("20", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"ok__echo","arguments":{"text":"alive"}}}`)
	if !strings.Contains(resp, `"text":"alive"`) {
		t.Fatalf("the session did not survive bad input: %s", resp)
	}
	time.Sleep(200 * time.Millisecond) // let a second response, if any, arrive
	for _, id := range []string{"10", "11", "12", "13", "14", "20"} {
		if n := h.responses(id); n != 1 {
			t.Errorf("request %s was answered %d times", id, n)
		}
	}
	// The silent tool never answers: cancelling it must reach the upstream.
	h.send("", `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"junk__silent"}}`)
	waitFor(t, "the silent call to reach the upstream", 10*time.Second, func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "call silent")
	})
	h.send("", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":30,"reason":"user gave up"}}`)
	waitFor(t, "the cancellation to reach the upstream", 10*time.Second, func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "cancelled")
	})
	if n := h.responses("30"); n != 0 {
		t.Errorf("a cancelled request was answered")
	}
}

// A host that sends initialize and its first requests back to back, without
// waiting (a script, a pipe), gets every one answered in order; and a host
// that closes its input right after still gets its answers.
func TestPipelinedSession(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"ok": testserver("honest")})
	stdin := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok__echo","arguments":{"text":"piped"}}}`,
	}, "\n") + "\n"
	g.cmd.Stdin = strings.NewReader(stdin)
	out, err := g.cmd.Output()
	if err != nil {
		t.Fatalf("the gate failed: %v\n%s", err, g.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	byID := map[string]string{}
	for _, l := range lines {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(l), &m)
		byID[string(m.ID)] = l
	}
	if !strings.Contains(byID["2"], `"name":"ok__echo"`) || !strings.Contains(byID["3"], `"text":"piped"`) || strings.Contains(string(out), `"error"`) {
		t.Fatalf("got:\n%s", out)
	}
}

// SIGTERM stops the gate and its upstreams even while the host keeps its
// end of stdin open (a review finding: the read loop used to block).
func TestSignalStopsGate(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"ok": testserver("honest")})
	h := startRaw(t, g)
	h.initialize()
	rawResult(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok__echo","arguments":{"text":"x"}}}`))
	kids := children(t, g.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("%d children", len(kids))
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { g.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the gate ignored SIGTERM while its stdin stayed open")
	}
	waitFor(t, "the upstream to exit", 10*time.Second, func() bool {
		return !pidExists(kids[0])
	})
}
