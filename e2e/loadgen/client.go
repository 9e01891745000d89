// Package loadgen drives MCP servers that are real processes over their
// stdin and stdout, with a client light enough that what it measures is the
// server: newline-delimited JSON-RPC written by hand, one goroutine, no SDK.
//
// The same client and scenarios drive an upstream directly and the mcp-gate
// binary in front of it, so that their ratio is the gate's cost. The
// benchmark (e2e/bench) uses it; a long-running soak can use the same
// [Client] and [Throughput] with a longer duration.
package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// ProtocolVersion is the MCP version the client asks for.
const ProtocolVersion = "2025-11-25"

// ModernVersion is the stateless revision a modern client speaks (see
// [Client.Modern]).
const ModernVersion = "2026-07-28"

// modernMeta is the _meta envelope every request of a modern client
// carries: the version, and capabilities and client info, which the older
// era declares once in initialize. The client offers nothing, as its
// initialize declares nothing.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// A Client speaks to one server process. It is not safe for concurrent use:
// one goroutine sends and receives, which is what keeps it light, and
// pipelining is done by sending ahead (see [Client.Pipeline]).
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	nextID int64
	calls  int
	out    []byte // the request being written, reused
	long   []byte // a reply longer than the read buffer, reused
	// modern: the client speaks 2026-07-28 (set by [Client.Discover]): no
	// initialize, the envelope in every request's params, and every
	// result must be marked complete.
	modern bool
}

// Start starts cmd with its stdin and stdout connected to the client. The
// caller sets cmd.Stderr (nil discards it) and calls [Client.Close].
func Start(cmd *exec.Cmd) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe for %s: %w", cmd.Path, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe for %s: %w", cmd.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return &Client{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 256<<10)}, nil
}

// Calls is the number of tools/call requests sent so far.
func (c *Client) Calls() int { return c.calls }

// Pid is the server's process id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Close closes the server's stdin, which tells an MCP stdio server to exit,
// and waits for it a little before killing it.
func (c *Client) Close() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within 5s of its stdin closing", c.cmd.Path)
	}
}

// Initialize performs the MCP handshake.
func (c *Client) Initialize() error {
	if _, err := c.Request("initialize", `{"protocolVersion":"`+ProtocolVersion+`","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}`); err != nil {
		return err
	}
	return c.notify("notifications/initialized", `{}`)
}

// Discover opens the connection as a 2026-07-28 host does: no
// initialize, a server/discover that must list that revision, and from
// then on the envelope in every request.
func (c *Client) Discover() error {
	c.modern = true
	res, err := c.Request("server/discover", `{}`)
	if err != nil {
		return err
	}
	v, ok := rawjson.Get(res, "supportedVersions")
	if !ok || !bytes.Contains(v, []byte(`"`+ModernVersion+`"`)) {
		return fmt.Errorf("server/discover: the server does not list %s: %.300s", ModernVersion, res)
	}
	return nil
}

// Modern reports whether the client speaks 2026-07-28 (Discover).
func (c *Client) Modern() bool { return c.modern }

// ListTools returns the raw result of tools/list.
func (c *Client) ListTools() ([]byte, error) {
	return c.Request("tools/list", `{}`)
}

// A Call is one tools/call: the tool's name as this server lists it, its
// arguments as a JSON object, and the least number of bytes a correct result
// has (so that a short or empty answer is not counted as a fast one).
type Call struct {
	Tool     string
	Args     string
	MinBytes int
}

func (call Call) params() string {
	q := rawjson.AppendString(nil, call.Tool)
	return `{"name":` + string(q) + `,"arguments":` + call.Args + `}`
}

// Call makes one call and waits for its result, which must not be an error.
func (c *Client) Call(call Call) error {
	r, err := c.request("tools/call", call.params())
	if err != nil {
		return err
	}
	return checkCall(call, r)
}

// Pipeline makes total calls, keeping outstanding of them sent and not yet
// answered, and returns when all are answered. Requests are small, so
// sending ahead never fills the pipe while the server is writing to us.
func (c *Client) Pipeline(call Call, outstanding, total int) error {
	params := call.params()
	sent, done := 0, 0
	for ; sent < outstanding && sent < total; sent++ {
		if _, err := c.send("tools/call", params); err != nil {
			return err
		}
	}
	for done < total {
		_, r, err := c.receive()
		if err != nil {
			return err
		}
		if err := checkCall(call, r); err != nil {
			return err
		}
		done++
		if sent < total {
			if _, err := c.send("tools/call", params); err != nil {
				return err
			}
			sent++
		}
	}
	return nil
}

// Request sends a request and returns its result, or its error reply as an
// error. The result's bytes are valid until the next call.
func (c *Client) Request(method, params string) ([]byte, error) {
	r, err := c.request(method, params)
	if err != nil {
		return nil, err
	}
	res, err := resultOf(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return res, nil
}

func (c *Client) request(method, params string) (reply, error) {
	id, err := c.send(method, params)
	if err != nil {
		return reply{}, err
	}
	got, r, err := c.receive()
	if err != nil {
		return reply{}, err
	}
	if got != id {
		return reply{}, fmt.Errorf("%s: reply has id %d, want %d", method, got, id)
	}
	return r, nil
}

func (c *Client) send(method, params string) (int64, error) {
	c.nextID++
	if method == "tools/call" {
		c.calls++
	}
	b := append(c.out[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, c.nextID, 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	if c.modern {
		// The envelope goes first in the params object.
		if len(params) < 2 || params[0] != '{' {
			return 0, fmt.Errorf("sending %s: params %.100q are not an object", method, params)
		}
		b = append(b, '{')
		b = append(b, modernMeta...)
		if rest := strings.TrimSpace(params[1:]); rest != "}" {
			b = append(b, ',')
		}
		b = append(b, params[1:]...)
	} else {
		b = append(b, params...)
	}
	b = append(b, "}\n"...)
	c.out = b
	if _, err := c.stdin.Write(b); err != nil {
		return 0, fmt.Errorf("sending %s: %w", method, err)
	}
	return c.nextID, nil
}

func (c *Client) notify(method, params string) error {
	_, err := c.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + "}\n"))
	if err != nil {
		return fmt.Errorf("sending %s: %w", method, err)
	}
	return nil
}

// A reply is the parts of a response the client reads. Its bytes are valid
// until the next receive.
type reply struct {
	result, err []byte
	whole       []byte
}

// receive returns the next reply and its id. Notifications are skipped; a
// request from the server is refused, since the client offers nothing.
// Each message is scanned once.
func (c *Client) receive() (int64, reply, error) {
	for {
		line, err := c.readLine()
		if err != nil {
			return 0, reply{}, err
		}
		var id, method []byte
		r := reply{whole: line}
		if err := rawjson.Members(line, func(m rawjson.Member) bool {
			switch m.Key {
			case "id":
				id = m.Value
			case "method":
				method = m.Value
			case "result":
				r.result = m.Value
			case "error":
				r.err = m.Value
			}
			return true
		}); err != nil {
			return 0, reply{}, fmt.Errorf("reading a reply: %w: %.200q", err, line)
		}
		if method != nil {
			if id != nil {
				msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":"the load generator offers nothing"}}` + "\n"
				if _, err := c.stdin.Write([]byte(msg)); err != nil {
					return 0, reply{}, fmt.Errorf("refusing a server request: %w", err)
				}
			}
			continue
		}
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil {
			return 0, reply{}, fmt.Errorf("reply id %q is not one of ours: %.200q", id, line)
		}
		return n, r, nil
	}
}

func (c *Client) readLine() ([]byte, error) {
	line, err := c.stdout.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("reading from %s: %w", c.cmd.Path, err)
	}
	c.long = append(c.long[:0], line...)
	for {
		line, err = c.stdout.ReadSlice('\n')
		c.long = append(c.long, line...)
		switch {
		case err == nil:
			return c.long, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, fmt.Errorf("reading from %s: %w", c.cmd.Path, err)
		}
	}
}

// resultOf returns a reply's result, or its error as an error.
func resultOf(r reply) ([]byte, error) {
	if r.err != nil {
		return nil, fmt.Errorf("error reply: %.300s", r.err)
	}
	if r.result == nil {
		return nil, fmt.Errorf("reply has neither result nor error: %.200q", r.whole)
	}
	// A 2026-07-28 result that is not complete (input required) is no
	// answer: never counted as a fast one.
	if rt, ok := rawjson.Get(r.result, "resultType"); ok && string(rt) != `"complete"` {
		return nil, fmt.Errorf("result of type %s, want complete: %.200q", rt, r.whole)
	}
	return r.result, nil
}

func checkCall(call Call, r reply) error {
	res, err := resultOf(r)
	if err != nil {
		return fmt.Errorf("calling %s: %w", call.Tool, err)
	}
	if v, ok := rawjson.Get(res, "isError"); ok && bytes.Equal(v, []byte("true")) {
		return fmt.Errorf("calling %s: tool error: %.300s", call.Tool, res)
	}
	if len(res) < call.MinBytes {
		return fmt.Errorf("calling %s: result of %d bytes, want at least %d", call.Tool, len(res), call.MinBytes)
	}
	return nil
}

// PeakRSS reads a process's resident set and its peak (VmRSS, VmHWM) from
// /proc, in KiB. It works on Linux only.
func PeakRSS(pid int) (rssKB, hwmKB int, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory of process %d: %w", pid, err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch string(f[0]) {
		case "VmRSS:":
			rssKB, _ = strconv.Atoi(string(f[1]))
		case "VmHWM:":
			hwmKB, _ = strconv.Atoi(string(f[1]))
		}
	}
	if hwmKB == 0 {
		return 0, 0, fmt.Errorf("process %d: no VmHWM in /proc status", pid)
	}
	return rssKB, hwmKB, nil
}

// CPUTime is the time a process's live threads have spent on a CPU, summed
// from /proc/<pid>/task/*/schedstat (nanoseconds, unlike the clock ticks of
// /proc/<pid>/stat). Threads that have exited are not counted, which for a
// Go program, whose threads live as long as it does, loses nothing. It works
// on Linux only.
func CPUTime(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread has exited since the listing
		}
		f := bytes.Fields(data)
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("process %d: schedstat %q: %w", pid, data, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}
