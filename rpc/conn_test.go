package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// hang bounds every wait in these tests. It only detects hangs: no test
// asserts how long anything took.
const hang = 10 * time.Second

// funcs is a Handler built from functions; nil ones echo params / drop.
type funcs struct {
	call   func(ctx context.Context, req *Message) (json.RawMessage, error)
	notify func(msg *Message)
}

func (f funcs) HandleCall(ctx context.Context, req *Message) (json.RawMessage, error) {
	if f.call == nil {
		return req.Params, nil
	}
	return f.call(ctx, req)
}

func (f funcs) HandleNotification(msg *Message) {
	if f.notify != nil {
		f.notify(msg)
	}
}

// peer is the other end of a Conn, driven message by message by the test.
type peer struct {
	t    *testing.T
	conn *Conn
	raw  *rawPeer
	ran  chan struct{} // closed when Run has returned
	err  error         // what Run returned; read after ran is closed
	// lines is what the Conn wrote, message by message.
	lines <-chan string
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter sends log lines to t.Log, so they show only for failing tests.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// A wire is a Transport under test, with the raw peer on its other side:
// the peering tests run over each (a table over transports), so that what
// a Conn promises holds whatever carries its messages.
type wire struct {
	name string
	// overhead is how many bytes of framing count in a message's size.
	overhead int
	// connect returns the Conn's transport and the peer's raw side.
	connect func(t *testing.T, lim Limits) (Transport, *rawPeer)
}

// rawPeer is the far side of a wire, seen as bytes: what the peer writes
// need not be a valid message.
type rawPeer struct {
	// write sends newline-separated messages (a stream takes the bytes as
	// they are).
	write func(b string) error
	// closeWrite ends the peer's output; it still reads.
	closeWrite func()
	// close ends both directions.
	close func()
	// lines delivers what the Conn wrote, one message at a time, and is
	// closed when the Conn's output ends.
	lines <-chan string
}

var streamWire = wire{name: "stream", overhead: 1, connect: func(t *testing.T, lim Limits) (Transport, *rawPeer) {
	connR, peerW := io.Pipe()
	peerR, connW := io.Pipe()
	tr := NewStream(connR, connW, closerFunc(func() error {
		connR.Close()
		connW.Close()
		return nil
	}), lim)
	return tr, bytePeer(peerR, peerW)
}}

// osPipes returns two os.Pipes, the Stream's ends (connR, connW) and its
// peer's (peerR, peerW), all closed when the test ends.
func osPipes(t *testing.T) (connR, peerW, peerR, connW *os.File) {
	t.Helper()
	var err error
	if connR, peerW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	if peerR, connW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{connR, peerW, peerR, connW} {
			f.Close()
		}
	})
	return connR, peerW, peerR, connW
}

// bytePeer is the raw peer of a Stream: it writes bytes to the Stream's
// input and reads its output line by line.
func bytePeer(peerR io.ReadCloser, peerW io.WriteCloser) *rawPeer {
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(peerR)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return &rawPeer{
		write:      func(b string) error { _, err := io.WriteString(peerW, b); return err },
		closeWrite: func() { peerW.Close() },
		close:      func() { peerW.Close(); peerR.Close() },
		lines:      lines,
	}
}

var pipeWire = wire{name: "pipe", overhead: 0, connect: func(t *testing.T, lim Limits) (Transport, *rawPeer) {
	a, b := Pipe(lim)
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		for {
			m, err := b.readRaw(context.Background())
			if err != nil {
				return
			}
			lines <- string(m)
		}
	}()
	return a, &rawPeer{
		write: func(s string) error {
			for _, m := range strings.SplitAfter(s, "\n") {
				if m = strings.TrimSuffix(m, "\n"); m == "" {
					continue
				}
				if err := b.writeRaw(context.Background(), []byte(m)); err != nil {
					return err
				}
			}
			return nil
		},
		closeWrite: b.closeWrite,
		close:      func() { b.Close() },
		lines:      lines,
	}
}}

// osPipeWire is a Stream over os.Pipe: pollable descriptors, so the
// Stream reads on its caller's goroutine and writes on its writer's while
// nothing is queued (direct mode), where streamWire's io.Pipe keeps the
// reader and writer goroutines.
var osPipeWire = wire{name: "ospipe", overhead: 1, connect: func(t *testing.T, lim Limits) (Transport, *rawPeer) {
	connR, peerW, peerR, connW := osPipes(t)
	tr := NewStream(connR, connW, closerFunc(func() error {
		connR.Close()
		connW.Close()
		return nil
	}), lim)
	if runtime.GOOS == "linux" && (tr.rdl == nil || tr.tw == nil) {
		t.Fatal("a Stream over os.Pipe is not in direct mode")
	}
	return tr, bytePeer(peerR, peerW)
}}

var wires = []wire{streamWire, osPipeWire, pipeWire}

// eachWire runs f over every wire, as subtests named after them.
func eachWire(t *testing.T, f func(t *testing.T, w wire)) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) { f(t, w) })
	}
}

func newPeer(t *testing.T, w wire, h Handler, opts Options, lim ...Limits) *peer {
	t.Helper()
	if h == nil {
		h = funcs{}
	}
	if opts.Peer == "" {
		opts.Peer = "test peer"
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	var l Limits
	if len(lim) > 0 {
		l = lim[0]
	}
	tr, raw := w.connect(t, l)
	p := &peer{t: t, raw: raw, lines: raw.lines, ran: make(chan struct{})}
	p.conn = New(tr, h, opts)
	go func() {
		p.err = p.conn.Run(context.Background())
		close(p.ran)
	}()
	t.Cleanup(func() {
		p.conn.Close()
		raw.close()
		select {
		case <-p.ran:
		case <-time.After(hang):
			t.Error("Run did not return after Close")
		}
	})
	return p
}

// runErr waits for Run to return and returns its result.
func (p *peer) runErr() error {
	p.t.Helper()
	wait(p.t, p.ran, "Run")
	return p.err
}

// send writes one line to the Conn.
func (p *peer) send(line string) {
	p.t.Helper()
	p.write(line + "\n")
}

// write writes raw bytes to the Conn.
func (p *peer) write(b string) {
	p.t.Helper()
	if err := p.raw.write(b); err != nil {
		p.t.Fatalf("peer write: %v", err)
	}
}

// closeInput ends what the peer writes; it still reads.
func (p *peer) closeInput() { p.raw.closeWrite() }

// recv returns the next line the Conn wrote.
func (p *peer) recv() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the Conn closed its output; expected a message")
		}
		return l
	case <-time.After(hang):
		p.t.Fatal("no message from the Conn")
	}
	return ""
}

// recvMsg returns the next message the Conn wrote, decoded.
func (p *peer) recvMsg() *Message {
	p.t.Helper()
	l := p.recv()
	m, err := Decode([]byte(l))
	if err != nil {
		p.t.Fatalf("the Conn wrote an invalid message %s: %v", l, err)
	}
	return m
}

// roundTrip checks that the connection still serves requests: a ping is
// answered, and it is the next thing written.
func (p *peer) roundTrip(id string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{"alive":true}}`)
	m := p.recvMsg()
	if string(m.ID) != id || string(m.Result) != `{"alive":true}` {
		p.t.Fatalf("after the previous message, a ping got %+v; want its result with id %s", m, id)
	}
}

// drain closes the Conn and returns every line it wrote until then.
func (p *peer) drain() []string {
	p.t.Helper()
	p.conn.Close()
	var out []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-time.After(hang):
			p.t.Fatal("the Conn's output did not end after Close")
		}
	}
}

// callAsync runs Call on its own goroutine.
func (p *peer) callAsync(ctx context.Context, method, params string) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := p.conn.Call(ctx, method, json.RawMessage(params))
		ch <- callResult{res, err}
	}()
	return ch
}

type callResult struct {
	res json.RawMessage
	err error
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hang):
		t.Fatalf("%s: no result", what)
	}
	var zero T
	return zero
}

func TestResponseEchoesRawID(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{AnswerBadInput: true})
		for _, id := range []string{`"abc"`, `"n\u0061me"`, `""`, `9007199254740993`, `-5`, `0`, `1.50`, `12345678901234567890123`} {
			p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":{"id":` + id + `}}`)
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"id":` + id + `}}`
			if got := p.recv(); got != want {
				t.Errorf("response to id %s:\n got %s\nwant %s", id, got, want)
			}
		}
	})
}

// Ids that are distinct as JSON but equal as float64 must not be confused.
func TestBigIntegerIDsAreDistinct(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		arrived := make(chan string, 2)
		release := make(chan struct{})
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			arrived <- string(req.ID)
			<-release
			return json.RawMessage(`{"id":` + string(req.ID) + `}`), nil
		}}, Options{AnswerBadInput: true})
		p.send(`{"jsonrpc":"2.0","id":9007199254740992,"method":"x"}`)
		p.send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`)
		got := map[string]bool{}
		for range 2 {
			select {
			case id := <-arrived:
				got[id] = true
			case l := <-p.lines:
				t.Fatalf("a request was refused while the other was in progress: %s", l)
			case <-time.After(hang):
				t.Fatal("the handler did not see both requests")
			}
		}
		close(release)
		for range 2 {
			m := p.recvMsg()
			if m.Error != nil || string(m.Result) != `{"id":`+string(m.ID)+`}` {
				t.Errorf("response %+v (error %v); want the result for its own id", m, m.Error)
			}
		}
		if !got["9007199254740992"] || !got["9007199254740993"] {
			t.Errorf("handler saw ids %v", got)
		}
	})
}

// A request reusing the id of one in progress is dropped: answering it, even
// with an error, would give that id two responses. OnBadInput is told of
// it, so that the gate's audit has it as it has a line it could not use.
func TestDuplicateInProgressID(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		bad := make(chan *MessageError, 4) // OnBadInput runs off the read loop (tellBadInput)
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			if req.Method == "ping" {
				return req.Params, nil
			}
			started <- struct{}{}
			<-release
			return json.RawMessage(`"first"`), nil
		}}, Options{AnswerBadInput: true, OnBadInput: func(me *MessageError) { bad <- me }})
		p.send(`{"jsonrpc":"2.0","id":"d","method":"x"}`)
		wait(t, started, "first request")
		p.send(`{"jsonrpc":"2.0","id":"d","method":"x","params":{"second":true}}`)
		// Lines are dispatched in order, so the duplicate has been dealt with
		// when the ping is answered; nothing was written for it before.
		p.roundTrip(`"after"`)
		if me := wait(t, bad, "OnBadInput"); me.Method != "x" || string(me.ID) != `"d"` || !me.Request || !strings.Contains(me.Reason, "in use") {
			t.Errorf("OnBadInput was told %+v; want the dropped request x, id \"d\", its id in use", me)
		}
		close(release)
		if m := p.recvMsg(); string(m.ID) != `"d"` || string(m.Result) != `"first"` {
			t.Errorf("first request got %+v (error %v); want its result", m, m.Error)
		}
		for _, l := range p.drain() {
			t.Errorf("after the first request's response, the Conn wrote %s; want nothing (the duplicate is dropped)", l)
		}
		select {
		case <-started:
			t.Error("the handler was called for the duplicate request")
		default:
		}
		select {
		case me := <-bad:
			t.Errorf("OnBadInput was told a second time: %+v", me)
		default:
		}
	})
}

// OnBadInput runs off the read loop: a hook that waits (the gate's audit
// record of a bad line, on a pipe nobody reads) holds up none of the
// peer's later messages, and the bad line's answer follows the hook, so
// that what the hook records precedes it. Before, the hook ran on the read
// loop, and the ping after a bad line waited for it.
func TestBadInputHookHoldsNoLaterMessage(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		entered := make(chan *MessageError, 4)
		release := make(chan struct{})
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			return req.Params, nil
		}}, Options{AnswerBadInput: true, OnBadInput: func(me *MessageError) {
			entered <- me
			<-release
		}})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		defer free()
		p.send(`{"jsonrpc":"1.0","id":7,"method":"tools/call"}`)
		if me := wait(t, entered, "OnBadInput"); string(me.ID) != "7" || me.Method != "tools/call" || me.Raw != nil {
			t.Errorf("OnBadInput was told %+v; want id 7, method tools/call and no bytes of the line", me)
		}
		// The hook is waiting. The ping after the bad line is read and
		// answered all the same, and the bad line's answer has not been
		// written: roundTrip wants the ping's answer as the next line.
		p.roundTrip(`"after"`)
		free()
		if m := p.recvMsg(); string(m.ID) != "7" || m.Error == nil || m.Error.Code != CodeInvalidRequest {
			t.Errorf("after the hook returned, the Conn wrote %+v; want the bad line's error", m)
		}
	})
}

func TestBadInputAnswered(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		tests := []struct {
			name, line string
			code       int64
			id         string // raw id expected in the error response
			msg        string // part of the error message
		}{
			{"not JSON", `Server listening on stdio...`, CodeParseError, "null", "not valid JSON"},
			{"cut JSON with id", `{"jsonrpc":"2.0","id":"cut","method":"x","params":{`, CodeParseError, `"cut"`, "not valid JSON"},
			{"not JSON-RPC", `{"hello":"world"}`, CodeInvalidRequest, "null", `"jsonrpc" must be "2.0", found nothing`},
			{"wrong version with id", `{"jsonrpc":"1.0","id":7,"method":"x"}`, CodeInvalidRequest, "7", `found a string of 5 bytes`},
			{"method not a string", `{"jsonrpc":"2.0","id":"m","method":5}`, CodeInvalidRequest, `"m"`, `"method" must be a string`},
			{"bad params", `{"jsonrpc":"2.0","id":8,"method":"x","params":"p"}`, CodeInvalidRequest, "8", `"params" must be an object or array`},
			{"bad id type", `{"jsonrpc":"2.0","id":true,"method":"x"}`, CodeInvalidRequest, "null", `"id" must be a string or a number`},
			{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`, CodeInvalidRequest, "null", "request id must not be null"},
			{"batch", `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, CodeInvalidRequest, "null", "batches are not supported"},
			{"string", `"hello"`, CodeInvalidRequest, "null", "must be an object"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := newPeer(t, w, nil, Options{AnswerBadInput: true})
				p.send(tt.line)
				m := p.recvMsg()
				if m.Error == nil || m.Error.Code != tt.code || string(m.ID) != tt.id || !strings.Contains(m.Error.Message, tt.msg) {
					t.Errorf("for %s got id %s error %+v; want id %s, code %d, message containing %q", tt.line, m.ID, m.Error, tt.id, tt.code, tt.msg)
				}
				p.roundTrip("2")
			})
		}
	})
}

func TestBadInputIgnoredByClient(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{AnswerBadInput: false})
		p.send(`not json at all`)
		p.send(`{"hello":"world"}`)
		p.send(`[1,2]`)
		p.send(``)
		p.send("  \r")
		p.roundTrip(`"after"`) // nothing was written for the bad lines
	})
}

func TestOversizedMessage(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		for _, size := range []int{300, 200 << 10} { // one within, one beyond the read buffer
			t.Run(strconv.Itoa(size), func(t *testing.T) {
				p := newPeer(t, w, nil, Options{AnswerBadInput: true}, Limits{MaxMessageBytes: 100})
				line := `{"jsonrpc":"2.0","id":42,"method":"x","params":{"p":"` + strings.Repeat("y", size) + `"}}`
				p.send(line)
				m := p.recvMsg()
				wantMsg := fmt.Sprintf("message of %d bytes exceeds the limit of 100 bytes", len(line)+w.overhead)
				if m.Error == nil || string(m.ID) != "42" || m.Error.Code != CodeInvalidRequest || m.Error.Message != wantMsg {
					t.Errorf("oversized request got id %s error %+v; want id 42 and %q", m.ID, m.Error, wantMsg)
				}
				p.roundTrip("43")
			})
		}
	})
}

func TestOversizedResponseFailsCall(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{Peer: `upstream "big"`}, Limits{MaxMessageBytes: 100})
		res := p.callAsync(context.Background(), "tools/call", `{}`)
		req := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"` + strings.Repeat("z", 1000) + `"}`)
		r := wait(t, res, "Call")
		if r.err == nil || !strings.Contains(r.err.Error(), `upstream "big"`) || !strings.Contains(r.err.Error(), "tools/call") || !strings.Contains(r.err.Error(), "exceeds the limit of 100 bytes") {
			t.Errorf("Call = %s, %v; want an error naming the peer, the method and the size", r.res, r.err)
		}
	})
}

func TestMalformedResponseFailsCall(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		for _, tt := range []struct{ name, tmpl string }{
			{"cut", `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"cut`},
			{"result and error", `{"jsonrpc":"2.0","id":%s,"result":{},"error":{"code":1,"message":"x"}}`},
			{"error not an object", `{"jsonrpc":"2.0","id":%s,"error":"boom"}`},
			{"neither", `{"jsonrpc":"2.0","id":%s}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := newPeer(t, w, nil, Options{Peer: `upstream "gh"`})
				res := p.callAsync(context.Background(), "tools/call", `{"name":"x"}`)
				req := p.recvMsg()
				p.send(fmt.Sprintf(tt.tmpl, req.ID))
				r := wait(t, res, "Call")
				var werr *Error
				if !errors.As(r.err, &werr) || werr.Code != CodeInternalError ||
					!strings.Contains(werr.Message, `upstream "gh" sent a malformed response to tools/call`) {
					t.Errorf("Call = %s, %v; want an internal error naming the peer and the method", r.res, r.err)
				}
				// The connection goes on.
				res = p.callAsync(context.Background(), "again", `{}`)
				req = p.recvMsg()
				p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"ok"}`)
				if r := wait(t, res, "second Call"); r.err != nil || string(r.res) != `"ok"` {
					t.Errorf("second Call = %s, %v", r.res, r.err)
				}
			})
		}
	})
}

// A malformed request from the peer that happens to carry the id of one of
// our pending calls must not fail that call: the two id spaces are separate.
func TestMalformedRequestDoesNotFailPendingCall(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{AnswerBadInput: true})
		res := p.callAsync(context.Background(), "elicitation/create", `{}`)
		req := p.recvMsg()
		for _, bad := range []string{
			`{"jsonrpc":"1.0","id":` + string(req.ID) + `,"method":"x"}`,
			`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"method":"x","params":{`,
		} {
			p.send(bad)
			m := p.recvMsg()
			if m.Error == nil || string(m.ID) != string(req.ID) {
				t.Errorf("malformed request %s got %+v; want an error response with its id", bad, m)
			}
		}
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept"}}`)
		if r := wait(t, res, "Call"); r.err != nil || string(r.res) != `{"action":"accept"}` {
			t.Errorf("pending Call = %s, %v; want its own result", r.res, r.err)
		}
	})
}

func TestDuplicateResponseDropped(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{AnswerBadInput: true})
		res := p.callAsync(context.Background(), "m", `{}`)
		req := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"first"}`)
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"second"}`)
		if r := wait(t, res, "Call"); r.err != nil || string(r.res) != `"first"` {
			t.Errorf("Call = %s, %v; want the first response", r.res, r.err)
		}
		// The read loop is not stuck on the duplicate and the next call gets
		// its own response, not the stray one.
		res = p.callAsync(context.Background(), "m", `{}`)
		req2 := p.recvMsg()
		if string(req2.ID) == string(req.ID) {
			t.Fatalf("request id %s reused", req.ID)
		}
		p.send(`{"jsonrpc":"2.0","id":` + string(req2.ID) + `,"result":"third"}`)
		if r := wait(t, res, "second Call"); r.err != nil || string(r.res) != `"third"` {
			t.Errorf("second Call = %s, %v; want its own response", r.res, r.err)
		}
		if rest := p.drain(); len(rest) != 0 {
			t.Errorf("the Conn answered a response: %q", rest)
		}
	})
}

func TestUnknownResponseIgnored(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{AnswerBadInput: true})
		p.send(`{"jsonrpc":"2.0","id":999,"result":{}}`)
		p.send(`{"jsonrpc":"2.0","id":"nobody","error":{"code":-1,"message":"x"}}`)
		p.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"your fault"}}`)
		p.roundTrip("1") // nothing was written in reply
	})
}

func TestResponseMatchesNumericForms(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		res := p.callAsync(context.Background(), "m", `{}`)
		req := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `.0,"result":"float id"}`)
		if r := wait(t, res, "Call"); r.err != nil || string(r.res) != `"float id"` {
			t.Errorf("Call answered with id %s.0 = %s, %v", req.ID, r.res, r.err)
		}
	})
}

func TestPeerCancellation(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		started := make(chan struct{})
		cancelled := make(chan struct{})
		returned := make(chan struct{})
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			if req.Method == "ping" {
				return req.Params, nil
			}
			defer close(returned)
			close(started)
			select {
			case <-ctx.Done():
				close(cancelled)
				return json.RawMessage(`"too late"`), nil // must not be sent
			case <-time.After(hang):
				return nil, errors.New("never cancelled")
			}
		}}, Options{AnswerBadInput: true})
		p.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call"}`)
		wait(t, started, "handler start")
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`)
		wait(t, cancelled, "handler ctx cancellation")
		wait(t, returned, "handler return")
		p.roundTrip(`"p"`)
		for _, l := range p.drain() {
			if strings.Contains(l, `"slow"`) {
				t.Errorf("a response was sent for the cancelled request: %s", l)
			}
		}
	})
}

func TestCancellationOfUnknownRequestIgnored(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		notified := make(chan string, 10)
		p := newPeer(t, w, funcs{notify: func(m *Message) { notified <- m.Method }}, Options{AnswerBadInput: true})
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`)
		p.roundTrip("1")
		select {
		case m := <-notified:
			t.Errorf("notifications/cancelled reached the handler as %q", m)
		default:
		}
	})
}

func TestNotificationsInOrder(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		got := make(chan string, 10)
		p := newPeer(t, w, funcs{notify: func(m *Message) { got <- m.Method + " " + string(m.Params) }}, Options{AnswerBadInput: true})
		for i := range 5 {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d","params":{"i":%d}}`, i, i))
		}
		for i := range 5 {
			if g, want := wait(t, got, "notification"), fmt.Sprintf(`notifications/n%d {"i":%d}`, i, i); g != want {
				t.Errorf("notification %d = %q, want %q", i, g, want)
			}
		}
		p.roundTrip("1") // notifications get no response
	})
}

func TestCallCancelledByContext(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		ctx, cancel := context.WithCancelCause(context.Background())
		res := p.callAsync(ctx, "tools/call", `{"name":"slow"}`)
		req := p.recvMsg()
		cancel(errors.New("the host gave up"))
		r := wait(t, res, "cancelled Call")
		if r.err == nil || r.err.Error() != "the host gave up" {
			t.Errorf("Call = %s, %v; want the context's cause", r.res, r.err)
		}
		n := p.recvMsg()
		if n.Method != MethodCancelled || n.ID != nil {
			t.Fatalf("after cancelling, the Conn sent %+v; want notifications/cancelled", n)
		}
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if err := json.Unmarshal(n.Params, &params); err != nil || string(params.RequestID) != string(req.ID) || params.Reason != "the host gave up" {
			t.Errorf("cancellation params %s; want requestId %s and the reason", n.Params, req.ID)
		}
		// A late response to the cancelled call is dropped quietly.
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"late"}`)
		res = p.callAsync(context.Background(), "next", `{}`)
		req2 := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + string(req2.ID) + `,"result":"next"}`)
		if r := wait(t, res, "next Call"); string(r.res) != `"next"` {
			t.Errorf("next Call = %s, %v", r.res, r.err)
		}
	})
}

func TestCloseFailsPendingCalls(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		cause := errors.New("the upstream exited: exit status 7")
		p := newPeer(t, w, nil, Options{})
		res := p.callAsync(context.Background(), "tools/call", `{}`)
		p.recvMsg()
		p.conn.CloseWithError(cause)
		p.conn.CloseWithError(errors.New("a later cause")) // only the first is kept
		r := wait(t, res, "Call")
		if !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, cause) {
			t.Errorf("pending Call = %v; want ErrClosed wrapping the cause", r.err)
		}
		if _, err := p.conn.Call(context.Background(), "x", nil); !errors.Is(err, ErrClosed) || !errors.Is(err, cause) {
			t.Errorf("Call after close = %v; want ErrClosed wrapping the cause", err)
		}
		if err := p.conn.Notify(context.Background(), "x", nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Notify after close = %v; want ErrClosed", err)
		}
		if got := p.conn.Cause(); got != cause {
			t.Errorf("Cause = %v, want %v", got, cause)
		}
		if err := p.runErr(); err != cause {
			t.Errorf("Run returned %v, want the cause", err)
		}
		select {
		case <-p.conn.Done():
		default:
			t.Error("Done is not closed")
		}
	})
}

func TestClose(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		if p.conn.Cause() != nil {
			t.Errorf("Cause of an open Conn = %v", p.conn.Cause())
		}
		res := p.callAsync(context.Background(), "x", `{}`)
		p.recvMsg()
		p.conn.Close()
		if r := wait(t, res, "Call"); !errors.Is(r.err, ErrClosed) || !strings.Contains(r.err.Error(), "closed by the gate") {
			t.Errorf("pending Call = %v", r.err)
		}
	})
}

func TestCloseCancelsHandlers(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		cancelled := make(chan struct{})
		started := make(chan struct{})
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}}, Options{})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
		wait(t, started, "handler")
		p.conn.Close()
		wait(t, cancelled, "handler cancellation on close")
	})
}

func TestStreamEndClosesWithEndCause(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		exited := errors.New("the server exited: exit status 3; stderr: missing API key")
		p := newPeer(t, w, nil, Options{EndCause: func(err error) error {
			if !errors.Is(err, io.EOF) {
				t.Errorf("EndCause got %v, want EOF", err)
			}
			return exited
		}})
		res := p.callAsync(context.Background(), "initialize", `{}`)
		p.recvMsg()
		p.closeInput()
		if r := wait(t, res, "Call"); !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, exited) {
			t.Errorf("Call = %v; want ErrClosed wrapping the read error cause", r.err)
		}
		if err := p.runErr(); err != exited {
			t.Errorf("Run = %v, want %v", err, exited)
		}
	})
}

func TestStreamEndDefaultCause(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{Peer: "host"})
		p.closeInput()
		err := p.runErr()
		if !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "host closed the stream") {
			t.Errorf("Run = %v; want an error naming the peer and wrapping EOF", err)
		}
	})
}

func TestRunContextCancelCloses(t *testing.T) {
	connR, _ := io.Pipe()
	c := New(NewStream(connR, io.Discard, connR, Limits{}), funcs{}, Options{Peer: "p", Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	cancel()
	if err := wait(t, ran, "Run"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestHandlerPanic(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			if req.Method == "boom" {
				panic("nil map")
			}
			return req.Params, nil
		}}, Options{AnswerBadInput: true})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}`)
		m := p.recvMsg()
		if string(m.ID) != "1" || m.Error == nil || m.Error.Code != CodeInternalError || m.Error.Message != "internal error while handling boom" {
			t.Errorf("panicking handler gave %+v, %+v", m, m.Error)
		}
		p.roundTrip("2")
	})
}

func TestHandlerErrors(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		const data = `{"field": "a",  "got":9007199254740993, "html":"<b>&amp;</b>", "esc":"\u00e9"}`
		wire := &Error{Code: CodeInvalidParams, Message: "bad <args> & \"quotes\" é", Data: json.RawMessage(data)}
		tests := []struct {
			method string
			err    error
			want   string // the error object, byte for byte
		}{
			{"wire", wire, `{"code":-32602,"message":"bad <args> & \"quotes\" é","data":` + data + `}`},
			{"wrapped", fmt.Errorf("calling upstream: %w", wire), `{"code":-32602,"message":"bad <args> & \"quotes\" é","data":` + data + `}`},
			{"custom code", &Error{Code: 42, Message: ""}, `{"code":42,"message":""}`},
			{"plain", errors.New("disk <full>"), `{"code":-32603,"message":"disk <full>"}`},
		}
		for i, tt := range tests {
			t.Run(tt.method, func(t *testing.T) {
				p := newPeer(t, w, funcs{call: func(context.Context, *Message) (json.RawMessage, error) { return nil, tt.err }}, Options{AnswerBadInput: true})
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i, tt.method))
				want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":%s}`, i, tt.want)
				if got := p.recv(); got != want {
					t.Errorf("handler error %v sent as\n got %s\nwant %s", tt.err, got, want)
				}
			})
		}
	})
}

func TestHandlerNilResult(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, funcs{call: func(context.Context, *Message) (json.RawMessage, error) { return nil, nil }}, Options{})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
		if got, want := p.recv(), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
			t.Errorf("nil result sent as %s, want %s", got, want)
		}
	})
}

// A JSON-RPC error from the peer reaches the caller as it was sent.
func TestCallReturnsPeerError(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		res := p.callAsync(context.Background(), "tools/call", `{}`)
		req := p.recvMsg()
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32602,"message":"bad","data": {"a" : [1, 2]}}}`)
		r := wait(t, res, "Call")
		var werr *Error
		if !errors.As(r.err, &werr) || werr.Code != -32602 || werr.Message != "bad" || string(werr.Data) != `{"a" : [1, 2]}` {
			t.Errorf("Call = %v; want the peer's error with its data byte for byte", r.err)
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		const n = 50
		// The peer answers in reverse order of arrival, once all have arrived.
		go func() {
			var reqs []*Message
			for range n {
				l, ok := <-p.lines
				if !ok {
					return
				}
				m, err := Decode([]byte(l))
				if err != nil {
					t.Errorf("bad request %s: %v", l, err)
					return
				}
				reqs = append(reqs, m)
			}
			for i := len(reqs) - 1; i >= 0; i-- {
				p.write(`{"jsonrpc":"2.0","id":` + string(reqs[i].ID) + `,"result":` + string(reqs[i].Params) + "}\n")
			}
		}()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), hang)
				defer cancel()
				want := fmt.Sprintf(`{"n":%d}`, i)
				res, err := p.conn.Call(ctx, "echo", json.RawMessage(want))
				if err != nil || string(res) != want {
					t.Errorf("Call %d = %s, %v; want %s", i, res, err, want)
				}
			})
		}
		wg.Wait()
	})
}

func TestConcurrentServe(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		const n = 50
		go func() {
			for i := range n {
				p.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%d]}`+"\n", i, i))
			}
		}()
		seen := map[string]bool{}
		for range n {
			m := p.recvMsg()
			if "["+string(m.ID)+"]" != string(m.Result) {
				t.Errorf("response %s carries %s", m.ID, m.Result)
			}
			seen[string(m.ID)] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct responses, want %d", len(seen), n)
		}
	})
}

func TestFinalLineWithoutNewline(t *testing.T) {
	t.Run("notification", func(t *testing.T) {
		got := make(chan string, 1)
		p := newPeer(t, streamWire, funcs{notify: func(m *Message) { got <- m.Method }}, Options{})
		p.write(`{"jsonrpc":"2.0","method":"notifications/last"}`)
		p.closeInput()
		if m := wait(t, got, "notification"); m != "notifications/last" {
			t.Errorf("got %q", m)
		}
	})
	t.Run("response", func(t *testing.T) {
		p := newPeer(t, streamWire, nil, Options{})
		res := p.callAsync(context.Background(), "m", `{}`)
		req := p.recvMsg()
		p.write(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"last"}`)
		p.closeInput()
		if r := wait(t, res, "Call"); r.err != nil || string(r.res) != `"last"` {
			t.Errorf("Call = %s, %v; want the unterminated last response", r.res, r.err)
		}
	})
	t.Run("CRLF", func(t *testing.T) {
		p := newPeer(t, streamWire, nil, Options{})
		p.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1]}\r\n")
		if got := p.recv(); got != `{"jsonrpc":"2.0","id":1,"result":[1]}` {
			t.Errorf("got %s", got)
		}
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriteErrorCloses(t *testing.T) {
	connR, peerW := io.Pipe()
	defer peerW.Close()
	c := New(NewStream(connR, failingWriter{}, connR, Limits{}), funcs{}, Options{Peer: "host", Logger: testLogger(t)})
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	_, err := c.Call(context.Background(), "x", nil)
	if err == nil || !strings.Contains(err.Error(), "writing to host: broken pipe") {
		t.Errorf("Call with a failing writer = %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(hang):
		t.Fatal("a write error did not close the connection")
	}
	if cause := c.Cause(); cause == nil || !strings.Contains(cause.Error(), "broken pipe") {
		t.Errorf("Cause = %v", cause)
	}
	if err := wait(t, ran, "Run"); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("Run = %v", err)
	}
}

func TestNotify(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		if err := p.conn.Notify(context.Background(), "notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := p.conn.Notify(context.Background(), "notifications/initialized", nil); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		} {
			if got := p.recv(); got != want {
				t.Errorf("Notify wrote %s, want %s", got, want)
			}
		}
	})
}

// BenchmarkCallRoundTrip measures one Call answered by a peer that echoes the
// params, over each transport: in-memory pipes under a Stream, and a Pipe.
func BenchmarkCallRoundTrip(b *testing.B) {
	connect := map[string]func() (Transport, Transport){
		"stream": func() (Transport, Transport) {
			aR, bW := io.Pipe()
			bR, aW := io.Pipe()
			return NewStream(aR, aW, closerFunc(func() error { aR.Close(); aW.Close(); return nil }), Limits{}),
				NewStream(bR, bW, closerFunc(func() error { bR.Close(); bW.Close(); return nil }), Limits{})
		},
		"pipe": func() (Transport, Transport) {
			x, y := Pipe(Limits{})
			return x, y
		},
	}
	for _, tr := range []string{"stream", "pipe"} {
		for _, size := range []int{100, 1 << 20} {
			b.Run(tr+"/"+strconv.Itoa(size), func(b *testing.B) {
				ct, st := connect[tr]()
				log := slog.New(slog.DiscardHandler)
				client := New(ct, funcs{}, Options{Peer: "server", Logger: log})
				server := New(st, funcs{}, Options{Peer: "client", Logger: log})
				go client.Run(context.Background())
				go server.Run(context.Background())
				defer client.Close()
				defer server.Close()
				params := json.RawMessage(`{"text":"` + strings.Repeat("x", size) + `"}`)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					res, err := client.Call(context.Background(), "echo", params)
					if err != nil || !bytes.Equal(res, params) {
						b.Fatalf("Call = %.40s, %v", res, err)
					}
				}
			})
		}
	}
}

// Closing os.Stdin does not unblock a read from it, and the host Conn has no
// closer: cancelling Run must still end it while the host keeps stdin open.
func TestRunReturnsOnCancelWhilePeerHoldsStreamOpen(t *testing.T) {
	connR, peerW := io.Pipe()
	defer peerW.Close() // never closed while the test runs
	got := make(chan string, 1)
	c := New(NewStream(connR, io.Discard, nil, Limits{}), funcs{notify: func(m *Message) { got <- m.Method }}, Options{Peer: "host", Logger: testLogger(t)})
	ctx, cancel := context.WithCancelCause(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	// Run is reading: a message gets through, and the next read blocks.
	io.WriteString(peerW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	wait(t, got, "notification")
	stop := errors.New("received SIGTERM")
	cancel(stop)
	if err := wait(t, ran, "Run after cancel"); err != stop {
		t.Errorf("Run = %v, want the context's cause %v", err, stop)
	}
	if err := c.Cause(); err != stop {
		t.Errorf("Cause = %v, want %v", err, stop)
	}
}

func TestRunReturnsOnCloseWithoutCloser(t *testing.T) {
	connR, peerW := io.Pipe()
	defer peerW.Close()
	c := New(NewStream(connR, io.Discard, nil, Limits{}), funcs{}, Options{Peer: "host", Logger: testLogger(t)})
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	c.Close()
	if err := wait(t, ran, "Run after Close"); err == nil || !strings.Contains(err.Error(), "closed by the gate") {
		t.Errorf("Run = %v, want the close's cause", err)
	}
}

// A Sequential method is served, and answered, before the next message is
// even dispatched.
func TestSequentialServedBeforeNextMessage(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		var mu sync.Mutex
		var events []string
		record := func(e string) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
		p := newPeer(t, w, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			record(req.Method + " start")
			if req.Method == "initialize" {
				// Long enough for a concurrently dispatched ping to overtake.
				time.Sleep(20 * time.Millisecond)
			}
			record(req.Method + " end")
			return json.RawMessage(`"` + req.Method + `"`), nil
		}}, Options{Sequential: func(m string) bool { return m == "initialize" }})
		p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		for _, want := range []string{`"initialize"`, `"tools/list"`} {
			if m := p.recvMsg(); string(m.Result) != want {
				t.Errorf("got %s, want the result %s (responses in order)", m.Result, want)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(events, ", "); got != "initialize start, initialize end, tools/list start, tools/list end" {
			t.Errorf("served in the order %s; want initialize done before tools/list starts", got)
		}
	})
}

// gatedWriter stands for a peer that reads one Write per token it is given.
type gatedWriter struct {
	tokens  chan struct{}
	closed  chan struct{}
	started chan struct{} // signalled, if there is room, when a Write begins

	mu  sync.Mutex
	buf bytes.Buffer
}

func newGatedWriter() *gatedWriter {
	return &gatedWriter{tokens: make(chan struct{}), closed: make(chan struct{}), started: make(chan struct{}, 1)}
}

func (w *gatedWriter) Write(b []byte) (int, error) {
	select {
	case w.started <- struct{}{}:
	default:
	}
	select {
	case <-w.tokens:
	case <-w.closed:
		return 0, io.ErrClosedPipe
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (w *gatedWriter) written() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// With Drain, a peer that sends a request and closes its end gets the
// response even when writing it takes a while: Run waits for the write,
// not only for the handler.
func TestDrainWaitsForResponsesToBeWritten(t *testing.T) {
	connR, peerW := io.Pipe()
	w := newGatedWriter()
	defer close(w.closed)
	release := make(chan struct{})
	c := New(NewStream(connR, w, nil, Limits{}), funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`"answer"`), nil
	}}, Options{Peer: "host", Logger: testLogger(t), Drain: hang})
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	io.WriteString(peerW, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`+"\n")
	peerW.Close()
	close(release)
	wait(t, w.started, "the response's write")
	// The handler is done, its response not yet written. Run must not
	// close the Conn now; this wait can only catch it doing so.
	select {
	case err := <-ran:
		t.Fatalf("Run returned (%v) before the response was written", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(w.tokens)
	if err := wait(t, ran, "Run"); !errors.Is(err, io.EOF) {
		t.Errorf("Run = %v, want the end of the stream", err)
	}
	if got, want := w.written(), `{"jsonrpc":"2.0","id":1,"result":"answer"}`+"\n"; got != want {
		t.Errorf("the Conn wrote %q, want %q", got, want)
	}
}

// A call still running when the drain time is up is cancelled with
// ErrDrained and its answer is still written: a peer that closed its
// input may still read (a pipe, a script), and nothing it asked for
// vanishes without an answer.
func TestDrainTimeoutCancelsAndAnswers(t *testing.T) {
	connR, peerW := io.Pipe()
	var out lockedBuffer
	c := New(NewStream(connR, &out, nil, Limits{}), funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), ErrDrained) {
			return nil, fmt.Errorf("cancelled with %v, want ErrDrained", context.Cause(ctx))
		}
		return json.RawMessage(`"withdrawn"`), nil
	}}, Options{Peer: "host", Logger: testLogger(t), Drain: 50 * time.Millisecond})
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	io.WriteString(peerW, `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`+"\n")
	peerW.Close()
	wait(t, ran, "Run")
	if got, want := out.String(), `{"jsonrpc":"2.0","id":7,"result":"withdrawn"}`+"\n"; got != want {
		t.Errorf("the Conn wrote %q, want %q", got, want)
	}
}

// A call that ends because its context did, answering only ctx.Err(), is
// answered with the reason the context ended (here the drain's), not with
// "context canceled".
func TestDrainedCallAnswersWithTheCause(t *testing.T) {
	connR, peerW := io.Pipe()
	var out lockedBuffer
	c := New(NewStream(connR, &out, nil, Limits{}), funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}, Options{Peer: "host", Logger: testLogger(t), Drain: 50 * time.Millisecond})
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	io.WriteString(peerW, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`+"\n")
	peerW.Close()
	wait(t, ran, "Run")
	if got := out.String(); !strings.Contains(got, ErrDrained.Error()) || strings.Contains(got, "context canceled") {
		t.Errorf("the Conn wrote %q, want an error saying %q", got, ErrDrained)
	}
}

// stalledConn returns a running Conn whose peer neither reads what it writes
// nor closes its own end; over a stream it has no closer (like stdin and
// stdout). runErr waits for Run to return and returns what it returned.
func stalledConn(t *testing.T, w wire, opts Options, lim Limits) (c *Conn, runErr func() error) {
	t.Helper()
	if opts.Peer == "" {
		opts.Peer = "stalled peer"
	}
	opts.Logger = testLogger(t)
	var (
		tr      Transport
		release func()
	)
	switch w.name {
	case "stream":
		connR, peerW := io.Pipe()
		peerR, connW := io.Pipe()
		tr = NewStream(connR, connW, nil, lim)
		release = func() { peerR.Close(); peerW.Close() }
	case "ospipe":
		connR, peerW, peerR, connW := osPipes(t)
		// The peer reads nothing: fill the kernel's pipe buffer first, so
		// that what the Conn writes waits in the Stream's queue.
		fillPipe(t, connW)
		tr = NewStream(connR, connW, nil, lim)
		release = func() { peerR.Close(); peerW.Close(); connR.Close(); connW.Close() }
	case "pipe":
		a, b := Pipe(lim)
		tr, release = a, func() { b.Close() }
	default:
		t.Fatalf("no stalled peer for wire %s", w.name)
	}
	c = New(tr, funcs{}, opts)
	ran := make(chan struct{})
	var err error
	go func() {
		err = c.Run(context.Background())
		close(ran)
	}()
	runErr = func() error {
		t.Helper()
		wait(t, ran, "Run")
		return err
	}
	t.Cleanup(func() {
		c.Close() // must not wait for the blocked writer
		runErr()
		// Let the goroutines blocked on the pipes go.
		release()
	})
	return c, runErr
}

// fillQueue queues notifications until one waits for room past its
// deadline, which proves that a Notify with a deadline returns.
func fillQueue(t *testing.T, c *Conn) {
	t.Helper()
	for i := 0; i <= writeQueueLen+1; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := c.Notify(ctx, "notifications/message", json.RawMessage(`{"n":`+strconv.Itoa(i)+`}`))
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Notify to a full queue = %v, want the deadline's error", err)
			}
			return
		}
	}
	t.Fatalf("%d notifications queued for a peer that reads nothing; the queue holds %d", writeQueueLen+2, writeQueueLen)
}

func TestCallReturnsWhenPeerStopsReading(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		c, _ := stalledConn(t, w, Options{}, Limits{})
		fillQueue(t, c)

		ctx, cancel := context.WithCancelCause(context.Background())
		res := make(chan callResult, 1)
		go func() {
			r, err := c.Call(ctx, "tools/call", json.RawMessage(`{}`))
			res <- callResult{r, err}
		}()
		gaveUp := errors.New("the host gave up")
		cancel(gaveUp)
		if r := wait(t, res, "Call with a cancelled context"); r.err != gaveUp {
			t.Errorf("Call = %s, %v; want the context's cause", r.res, r.err)
		}
		if _, err := c.Call(ctx, "tools/call", nil); err != gaveUp {
			t.Errorf("Call with a context cancelled before = %v; want its cause", err)
		}
		if err := c.Notify(ctx, "notifications/message", nil); err != gaveUp {
			t.Errorf("Notify with a cancelled context = %v; want its cause", err)
		}
		select {
		case <-c.Done():
			t.Errorf("the Conn closed (%v) without a WriteTimeout", c.Cause())
		default:
		}
	})
}

// A call whose request is queued behind a stuck write still returns when its
// context ends; the cancellation it owes the peer must not hold it up.
func TestCallCancelledWhileRequestQueued(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		c, _ := stalledConn(t, w, Options{}, Limits{})
		// The first request blocks the writer; the next ones wait in the queue.
		for range writeQueueLen + 1 {
			ctx, cancel := context.WithCancel(context.Background())
			res := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, "tools/call", nil)
				res <- err
			}()
			cancel()
			if err := wait(t, res, "cancelled Call"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Call = %v, want context.Canceled", err)
			}
		}
	})
}

func TestWriteTimeoutClosesConn(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		const want = `upstream "stuck" stopped reading its input for 30ms`
		c, runErr := stalledConn(t, w, Options{Peer: `upstream "stuck"`}, Limits{WriteTimeout: 30 * time.Millisecond})
		pending := make(chan callResult, 1)
		go func() {
			r, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{}`))
			pending <- callResult{r, err}
		}()
		notified := make(chan error, 1)
		go func() {
			for i := 0; ; i++ {
				if err := c.Notify(context.Background(), "notifications/message", json.RawMessage(`{}`)); err != nil || i > 2*writeQueueLen {
					notified <- err
					return
				}
			}
		}()
		if err := wait(t, notified, "Notify to a peer that stopped reading"); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), want) {
			t.Errorf("Notify = %v; want ErrClosed with %q", err, want)
		}
		if r := wait(t, pending, "pending Call"); !errors.Is(r.err, ErrClosed) || !strings.Contains(r.err.Error(), want) {
			t.Errorf("pending Call = %s, %v; want ErrClosed with %q", r.res, r.err, want)
		}
		if err := c.Cause(); err == nil || err.Error() != want {
			t.Errorf("Cause = %v, want %q", err, want)
		}
		if err := runErr(); err == nil || err.Error() != want {
			t.Errorf("Run = %v, want %q", err, want)
		}
	})
}

// A peer that reads slowly but steadily is not taken for one that stopped,
// even when a sender waits longer than WriteTimeout: a large message takes
// many writes, each of which is progress.
//
// It runs in a synctest bubble: the reader's pace and the stall timer are
// on the bubble's clock, so a machine too busy to run the reader every
// 10 ms cannot make a steady reader look stalled (on the real clock a
// descheduled feeder did, now and then, under load). What is checked is
// unchanged: each read comes 10 ms after the last, the sender waits twice
// the timeout, and a Conn that measured the sender's wait, or counted only
// whole messages as progress, closes.
func TestWriteTimeoutSparesSteadyReader(t *testing.T) {
	synctest.Test(t, testWriteTimeoutSparesSteadyReader)
}

func testWriteTimeoutSparesSteadyReader(t *testing.T) {
	connR, peerW := io.Pipe()
	defer peerW.Close()
	w := newGatedWriter()
	defer close(w.closed)
	const timeout = 200 * time.Millisecond
	c := New(NewStream(connR, w, nil, Limits{WriteTimeout: timeout}), funcs{}, Options{Peer: "slow", Logger: testLogger(t)})
	go c.Run(context.Background())
	defer c.Close()

	big := `{"text":"` + strings.Repeat("b", 40*writeChunk) + `"}`
	if err := c.Notify(context.Background(), "big", json.RawMessage(big)); err != nil {
		t.Fatal(err)
	}
	for i := range writeQueueLen {
		if err := c.Notify(context.Background(), "small", json.RawMessage(`{"i":`+strconv.Itoa(i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The queue is full behind the big message: this one waits for the
	// whole of it, far longer than the timeout.
	last := make(chan error, 1)
	began := time.Now()
	go func() { last <- c.Notify(context.Background(), "last", nil) }()
	// The peer reads a chunk every 10 ms: 40 chunks, twice the timeout.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	deadline := time.After(hang)
feed:
	for {
		select {
		case <-tick.C:
			select {
			case w.tokens <- struct{}{}:
			case err = <-last:
				break feed
			}
		case err = <-last:
			break feed
		case <-deadline:
			t.Fatal("the last Notify did not return")
		}
	}
	if err != nil {
		t.Fatalf("Notify behind a slow but steady reader = %v; want it queued", err)
	}
	// On the bubble's clock this is exact: a sender that did not wait past
	// the timeout would prove nothing.
	if waited := time.Since(began); waited <= timeout {
		t.Fatalf("the last Notify waited %s, not more than the timeout %s: the test proves nothing", waited, timeout)
	}
	select {
	case <-c.Done():
		t.Fatalf("the Conn closed: %v", c.Cause())
	default:
	}
	close(w.tokens) // let the rest through
	want := `{"jsonrpc":"2.0","method":"big","params":` + big + "}\n"
	for i := range writeQueueLen {
		want += `{"jsonrpc":"2.0","method":"small","params":{"i":` + strconv.Itoa(i) + "}}\n"
	}
	want += `{"jsonrpc":"2.0","method":"last"}` + "\n"
	for start := time.Now(); w.written() != want; time.Sleep(time.Millisecond) {
		if time.Since(start) > hang {
			t.Fatalf("wrote %d bytes, want %d bytes in order", len(w.written()), len(want))
		}
	}
}

// Concurrent senders get whole lines, each sender's in its own order, also
// for messages that take several writes.
func TestWritesInOrderUnderConcurrency(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		p := newPeer(t, w, nil, Options{})
		const senders, each = 8, 40
		pad := strings.Repeat("p", 3*writeChunk/2)
		var wg sync.WaitGroup
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					params := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
					if i%8 == 0 {
						params = fmt.Sprintf(`{"g":%d,"i":%d,"pad":%q}`, g, i, pad)
					}
					if err := p.conn.Notify(context.Background(), "notifications/message", json.RawMessage(params)); err != nil {
						t.Errorf("Notify: %v", err)
						return
					}
				}
			})
		}
		next := make([]int, senders)
		for range senders * each {
			var v struct{ G, I int }
			m := p.recvMsg()
			if err := json.Unmarshal(m.Params, &v); err != nil || v.G < 0 || v.G >= senders {
				t.Fatalf("unexpected message %.80s", m.Params)
			}
			if v.I != next[v.G] {
				t.Fatalf("sender %d: message %d arrived when %d was due", v.G, v.I, next[v.G])
			}
			next[v.G]++
		}
		wg.Wait()
	})
}

// A server that does not answer bad input (a client) must still not take a
// request with a null id for a notification.
func TestNullIDRequestNotServed(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		seen := make(chan string, 1)
		p := newPeer(t, w, funcs{
			call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
				if req.Method != "ping" {
					seen <- "call " + req.Method
				}
				return req.Params, nil
			},
			notify: func(m *Message) { seen <- "notification " + m.Method },
		}, Options{AnswerBadInput: false})
		p.send(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`)
		p.roundTrip("1") // nothing was written for it
		select {
		case s := <-seen:
			t.Errorf("a request with a null id reached the handler as a %s", s)
		default:
		}
	})
}

// BenchmarkNotifyParallel measures queueing notifications from many
// goroutines to a peer that reads everything.
func BenchmarkNotifyParallel(b *testing.B) {
	r, w := io.Pipe()
	go io.Copy(io.Discard, r)
	c := New(NewStream(strings.NewReader(""), w, closerFunc(func() error { return w.Close() }), Limits{}), funcs{}, Options{Peer: "sink", Logger: slog.New(slog.DiscardHandler)})
	defer c.Close()
	params := json.RawMessage(`{"progressToken":"t","progress":1}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Notify(context.Background(), "notifications/progress", params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
