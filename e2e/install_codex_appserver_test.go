package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// appServer drives `codex app-server` over stdio (JSON lines): requests
// out, responses in, and the server's own requests (elicitation) answered
// by onRequest.
type appServer struct {
	t         *testing.T
	in        io.WriteCloser
	lines     chan string
	nextID    int
	onRequest func(method string, params json.RawMessage) any
}

func startAppServer(t *testing.T, h *hostHome, codex string, extra ...string) *appServer {
	t.Helper()
	// The model provider points at a closed loopback port: tests touch
	// loopback only, and nothing here needs a model.
	args := []string{"app-server",
		"-c", `model_provider="loopback"`,
		"-c", `model_providers.loopback={name="loopback",base_url="http://127.0.0.1:9/v1",wire_api="responses"}`}
	// Codex passes its servers only an allowlist of its environment: the
	// gates it starts get GORACE through their entries.
	args = append(args, codexRaceArgs(t, filepath.Join(h.dir, ".codex", "config.toml"), h.race)...)
	cmd := exec.Command(codex, append(args, extra...)...)
	cmd.Dir = h.proj
	cmd.Env = h.env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &appServer{t: t, in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("codex app-server stderr:\n%s", stderr.String())
		}
	})
	return a
}

func (a *appServer) send(m any) {
	b, _ := json.Marshal(m)
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("writing to codex app-server: %v", err)
	}
}

// call sends a request and waits for its response, answering the server's
// requests meanwhile.
func (a *appServer) call(method string, params any) json.RawMessage {
	a.t.Helper()
	a.nextID++
	id := a.nextID
	a.send(map[string]any{"id": id, "method": method, "params": params})
	deadline := time.After(90 * time.Second)
	for {
		select {
		case line, ok := <-a.lines:
			if !ok {
				a.t.Fatalf("codex app-server exited before answering %s", method)
			}
			var m struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
				Params json.RawMessage  `json:"params"`
				Result json.RawMessage  `json:"result"`
				Error  json.RawMessage  `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil {
				continue // a notification
			}
			if m.Method != "" {
				var res any = map[string]any{"action": "decline"}
				if a.onRequest != nil {
					res = a.onRequest(m.Method, m.Params)
				}
				a.send(map[string]any{"id": m.ID, "result": res})
				continue
			}
			if string(*m.ID) != fmt.Sprint(id) {
				continue
			}
			if m.Error != nil {
				a.t.Fatalf("%s: %s", method, m.Error)
			}
			return m.Result
		case <-deadline:
			a.t.Fatalf("codex app-server did not answer %s", method)
		}
	}
}

// Issue 13: after install, Codex's app-server lists the gate's tools, calls
// them, and an ask call is answered through its elicitation request: yes
// runs the call, no refuses it.
func TestInstallCodexAppServer(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Codex app server, heavy on both CPUs.
	needNode(t)
	codex := hostBin(t, "codex")
	h := newHostHome(t)
	ev := everything()
	h.run(t, codex, "mcp", "add", "--env", "GZIP_ALLOWED_DOMAINS=example.invalid", "everything", "--", ev.Command, ev.Args[0], "stdio")
	pol := filepath.Join(h.dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: deny\nallow: [\"mcp:everything:echo\"]\nask: [\"mcp:everything:get-sum\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, gateBin, "install", "--policy", pol, "codex")

	a := startAppServer(t, h, codex)
	a.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1"}})
	a.send(map[string]any{"method": "initialized"})
	var thread struct {
		Thread struct{ ID string } `json:"thread"`
	}
	if err := json.Unmarshal(a.call("thread/start", map[string]any{}), &thread); err != nil || thread.Thread.ID == "" {
		t.Fatalf("thread/start: %v", err)
	}
	var status struct {
		Data []struct {
			Name  string                     `json:"name"`
			Tools map[string]json.RawMessage `json:"tools"`
		} `json:"data"`
	}
	if err := json.Unmarshal(a.call("mcpServerStatus/list", map[string]any{}), &status); err != nil {
		t.Fatal(err)
	}
	if len(status.Data) != 1 || status.Data[0].Name != "gate" || status.Data[0].Tools["everything__echo"] == nil {
		t.Fatalf("codex lists %+v; expected only the gate, with everything__echo", status.Data)
	}
	type result struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	callTool := func(tool string, args any) result {
		var r result
		raw := a.call("mcpServer/tool/call", map[string]any{"threadId": thread.Thread.ID, "server": "gate", "tool": tool, "arguments": args})
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := callTool("everything__echo", map[string]any{"message": "hi"}); r.IsError || len(r.Content) == 0 || r.Content[0].Text != "Echo: hi" {
		t.Errorf("echo through codex: %+v", r)
	}
	if r := callTool("everything__get-env", map[string]any{}); !r.IsError || !strings.Contains(r.Content[0].Text, "mcp-gate denied this call") {
		t.Errorf("a denied call through codex: %+v", r)
	}
	asked := 0
	a.onRequest = func(method string, params json.RawMessage) any {
		if method != "mcpServer/elicitation/request" {
			return map[string]any{"action": "decline"}
		}
		asked++
		if !strings.Contains(string(params), `Tool: \"get-sum\"`) {
			t.Errorf("the question does not name the tool: %s", params)
		}
		return map[string]any{"action": "accept", "content": map[string]any{"approve": true, "scope": "once"}}
	}
	if r := callTool("everything__get-sum", map[string]any{"a": 1, "b": 2}); r.IsError || asked != 1 || !strings.Contains(r.Content[0].Text, "3") {
		t.Errorf("an approved ask through codex (asked %d times): %+v", asked, r)
	}
	a.onRequest = func(string, json.RawMessage) any { asked++; return map[string]any{"action": "decline"} }
	if r := callTool("everything__get-sum", map[string]any{"a": 1, "b": 2}); !r.IsError || asked != 2 || !strings.Contains(r.Content[0].Text, "mcp-gate denied this call") {
		t.Errorf("a declined ask through codex (asked %d times): %+v", asked, r)
	}
}
