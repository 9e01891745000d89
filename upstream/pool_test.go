package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// hang bounds every wait. It only detects hangs: no test asserts how long
// anything took.
const hang = 10 * time.Second

var (
	binDir      string // removed by TestMain
	buildOnce   sync.Once
	testserver  string
	buildErr    error
	buildOutput []byte
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "upstream-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testserverBin builds e2e/testserver once per test binary, on first need,
// so that tests that do not use it (and fuzzing) do not pay for the build.
func testserverBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes")
	}
	buildOnce.Do(func() {
		testserver = filepath.Join(binDir, "testserver")
		cmd := exec.Command("go", "build", "-o", testserver, "../e2e/testserver")
		buildOutput, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building e2e/testserver: %v\n%s", buildErr, buildOutput)
	}
	return testserver
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter sends log lines to t.Log, so they show only for failing tests.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func initParams(_, _ string) json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pool-test","version":"1"}}`)
}

// newPool returns a pool closed at the end of the test.
func newPool(t *testing.T, configs []upstream.Config, l upstream.Launcher, edit func(*upstream.PoolOptions)) *upstream.Pool {
	t.Helper()
	opts := upstream.PoolOptions{
		Launcher:     l,
		Logger:       testLogger(t),
		StartTimeout: hang,
		StopGrace:    200 * time.Millisecond,
		InitParams:   initParams,
	}
	if edit != nil {
		edit(&opts)
	}
	p := upstream.NewPool(configs, opts)
	t.Cleanup(p.Close)
	return p
}

// countingLauncher counts the launches of another Launcher.
type countingLauncher struct {
	upstream.Launcher
	n atomic.Int64
}

func (c *countingLauncher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	c.n.Add(1)
	return c.Launcher.Launch(ctx, cfg, lim)
}

func execLauncher(t *testing.T) *countingLauncher {
	return &countingLauncher{Launcher: &upstream.ExecLauncher{Logger: testLogger(t)}}
}

func honest(t *testing.T, name string) upstream.Config {
	return upstream.Config{Name: name, Type: upstream.TypeStdio, Command: testserverBin(t), Args: []string{"--mode", "honest"}}
}

type textIn struct {
	Text string `json:"text"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// echoServer is a go-sdk server with an echo tool.
var echoServer = upstreamtest.GoSDK(func(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
})

func callEcho(t *testing.T, s *upstream.Session, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	res, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"`+msg+`"}}`))
	if err != nil {
		t.Fatalf("echo on %s: %v", s.Name, err)
	}
	if !strings.Contains(string(res), `"text":"`+msg+`"`) {
		t.Fatalf("echo on %s returned %s", s.Name, res)
	}
}

func session(t *testing.T, p *upstream.Pool, name string) *upstream.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	s, err := p.Session(ctx, "", name)
	if err != nil {
		t.Fatalf("Session(%s): %v", name, err)
	}
	return s
}

// eventually polls cond until it holds or hang passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not the case after %s", what, hang)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNothingStartedUntilNeeded(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"a": echoServer, "b": echoServer}}
	p := newPool(t, l.Configs(), l, nil)
	if got := p.Names(); strings.Join(got, ",") != "a,b" {
		t.Errorf("Names = %v", got)
	}
	if !p.Has("a") || p.Has("c") {
		t.Errorf("Has is wrong")
	}
	if n := len(p.Running()); n != 0 || l.Launches("a")+l.Launches("b") != 0 {
		t.Fatalf("%d running, %d launches before any need", n, l.Launches("a")+l.Launches("b"))
	}
	s := session(t, p, "a")
	callEcho(t, s, "hi")
	if l.Launches("a") != 1 || l.Launches("b") != 0 {
		t.Errorf("launches a=%d b=%d; want 1 and 0", l.Launches("a"), l.Launches("b"))
	}
	if r := p.Running(); len(r) != 1 || r[0] != s {
		t.Errorf("Running = %v", r)
	}
	if s.ProtocolVersion != upstream.ProtocolVersion || !s.Caps.Tools || !s.Caps.ToolsListChanged || len(s.InitResult) == 0 {
		t.Errorf("session %+v", s)
	}
}

func TestUnknownServer(t *testing.T) {
	p := newPool(t, nil, &upstreamtest.Launcher{}, nil)
	if _, err := p.Session(context.Background(), "", "nope"); err == nil || !strings.Contains(err.Error(), `no upstream server named "nope"`) {
		t.Errorf("Session(nope) = %v", err)
	}
}

// gated returns a ServeFunc that waits for release before serving.
func gated(release <-chan struct{}, serve upstreamtest.ServeFunc) upstreamtest.ServeFunc {
	return func(ctx context.Context, t mcp.Transport) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return serve(ctx, t)
	}
}

func TestSingleFlight(t *testing.T) {
	release := make(chan struct{})
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": gated(release, echoServer)}}
	p := newPool(t, l.Configs(), l, nil)
	const n = 10
	got := make(chan *upstream.Session, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			s, err := p.Session(ctx, "", "s")
			if err != nil {
				t.Errorf("Session: %v", err)
			}
			got <- s
		})
	}
	// Give all ten time to arrive while the first start is held up; a
	// second launch would happen in this window.
	eventually(t, "first launch", func() bool { return l.Launches("s") == 1 })
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	close(got)
	var first *upstream.Session
	for s := range got {
		if first == nil {
			first = s
		}
		if s != first {
			t.Errorf("callers got different sessions")
		}
	}
	if l.Launches("s") != 1 {
		t.Errorf("%d launches for %d concurrent first callers; want 1", l.Launches("s"), n)
	}
	callEcho(t, first, "once")
}

func TestSingleFlightProcess(t *testing.T) {
	l := execLauncher(t)
	p := newPool(t, []upstream.Config{honest(t, "h")}, l, nil)
	var wg sync.WaitGroup
	pids := make(chan int, 10)
	for range 10 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			s, err := p.Session(ctx, "", "h")
			if err != nil {
				t.Errorf("Session: %v", err)
				return
			}
			pids <- upstream.PID(s)
		})
	}
	wg.Wait()
	close(pids)
	seen := map[int]bool{}
	for pid := range pids {
		seen[pid] = true
	}
	if len(seen) != 1 || l.n.Load() != 1 {
		t.Errorf("ten concurrent first calls started %d processes (%d launches); want 1", len(seen), l.n.Load())
	}
}

// The start goes on when the caller that triggered it gives up: a second
// caller still gets the session, and the first returns at once.
func TestStartNotAbandoned(t *testing.T) {
	release := make(chan struct{})
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": gated(release, echoServer)}}
	p := newPool(t, l.Configs(), l, nil)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := p.Session(ctx1, "", "s")
		first <- err
	}()
	eventually(t, "launch", func() bool { return l.Launches("s") == 1 })
	type result struct {
		s   *upstream.Session
		err error
	}
	second := make(chan result, 1)
	go func() {
		s, err := p.Session(context.Background(), "", "s")
		second <- result{s, err}
	}()

	cancel1()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("first caller = %v; want its context's error", err)
		}
	case <-time.After(hang):
		t.Fatal("the first caller did not return when its context was cancelled")
	}

	close(release)
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("second caller: %v", r.err)
		}
		callEcho(t, r.s, "still started")
	case <-time.After(hang):
		t.Fatal("the second caller got nothing")
	}
	if l.Launches("s") != 1 {
		t.Errorf("%d launches; want 1", l.Launches("s"))
	}
}

func TestFailedStartBackoff(t *testing.T) {
	l := execLauncher(t)
	cfg := upstream.Config{Name: "broken", Type: upstream.TypeStdio, Command: testserverBin(t), Args: []string{"--mode", "exit"}}
	p := newPool(t, []upstream.Config{cfg}, l, nil)
	_, err := p.Session(context.Background(), "", "broken")
	if err == nil || !strings.Contains(err.Error(), `upstream "broken" failed to start`) ||
		!strings.Contains(err.Error(), "missing API key") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Session = %v; want the failure with its exit status and stderr tail", err)
	}
	_, err = p.Session(context.Background(), "", "broken")
	if err == nil || !strings.Contains(err.Error(), "next start attempt in") || !strings.Contains(err.Error(), "missing API key") {
		t.Errorf("second Session within the backoff = %v; want the last error and the backoff", err)
	}
	if n := l.n.Load(); n != 1 {
		t.Errorf("%d launches; want 1 (no start during the backoff)", n)
	}
}

func TestFailedLaunchRecovers(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": echoServer}}
	l.FailLaunches("s", errors.New("no such file or directory"))
	p := newPool(t, l.Configs(), l, nil)
	if _, err := p.Session(context.Background(), "", "s"); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("Session = %v; want the launch error", err)
	}
	l.FailLaunches("s", nil)
	var s *upstream.Session
	eventually(t, "a start after the backoff", func() bool {
		var err error
		s, err = p.Session(context.Background(), "", "s")
		if err != nil && !strings.Contains(err.Error(), "next start attempt in") {
			t.Fatalf("Session = %v; want the backoff error or a session", err)
		}
		return err == nil
	})
	callEcho(t, s, "recovered")
	if l.Launches("s") != 2 {
		t.Errorf("%d launches; want 2", l.Launches("s"))
	}
}

func TestInitializeFailures(t *testing.T) {
	tests := []struct {
		name   string
		result string // the initialize result, or "" to answer with an error
		want   string
	}{
		{"unknown version", `{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x","version":"1"}}`, `protocol version "1999-01-01"`},
		{"not an object", `"hello"`, "not an initialize result"},
		{"error", "", "initialize: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": rawServer(tt.result)}}
			p := newPool(t, l.Configs(), l, nil)
			_, err := p.Session(context.Background(), "", "s")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `upstream "s" failed to start`) {
				t.Errorf("Session = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// rawServer answers initialize with result (or an error when result is "")
// and then reads until the connection ends.
func rawServer(result string) upstreamtest.ServeFunc {
	return func(ctx context.Context, t mcp.Transport) error {
		conn, err := t.Connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return nil
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.Method != "initialize" {
				continue
			}
			resp := &jsonrpc.Response{ID: req.ID}
			if result == "" {
				resp.Error = &rpc.Error{Code: -32000, Message: "nope"}
			} else {
				resp.Result = json.RawMessage(result)
			}
			if err := conn.Write(ctx, resp); err != nil {
				return err
			}
		}
	}
}

func TestStartTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	l := execLauncher(t)
	cfg := upstream.Config{Name: "mute", Type: upstream.TypeStdio, Command: "sleep", Args: []string{"100"}}
	p := newPool(t, []upstream.Config{cfg}, l, func(o *upstream.PoolOptions) {
		o.StartTimeout = 300 * time.Millisecond
		o.StopGrace = 100 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	_, err := p.Session(ctx, "", "mute")
	if err == nil || !strings.Contains(err.Error(), "no answer to initialize within 300ms") {
		t.Errorf("Session = %v; want the start timeout", err)
	}
}

// A start timeout also holds for a server that does not even read its
// input, which blocks the write of the initialize request on a pipe.
func TestStartTimeoutUnreadInput(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": func(ctx context.Context, _ mcp.Transport) error {
		<-ctx.Done() // never reads its input; ends only when terminated
		return ctx.Err()
	}}}
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) {
		o.StartTimeout = 200 * time.Millisecond
		o.StopGrace = 50 * time.Millisecond
	})
	errc := make(chan error, 1)
	go func() {
		_, err := p.Session(context.Background(), "", "s")
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "no answer to initialize within 200ms") {
			t.Errorf("Session = %v; want the start timeout", err)
		}
	case <-time.After(hang):
		t.Fatal("Session hung on a server that does not read its input")
	}
}

func TestCrashMidCall(t *testing.T) {
	l := execLauncher(t)
	p := newPool(t, []upstream.Config{honest(t, "h")}, l, nil)
	s := session(t, p, "h")
	callEcho(t, s, "before")
	oldPID := upstream.PID(s)

	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"crash","arguments":{}}`))
	var werr *rpc.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, `upstream "h"`) || !strings.Contains(werr.Message, "exit status 7") {
		t.Fatalf("in-flight call to a crashing server = %v; want an error naming the server and its exit status", err)
	}
	if !strings.Contains(werr.Message, "crashing on purpose") {
		t.Errorf("error %q lacks the stderr tail", werr.Message)
	}
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("the session did not end")
	}

	// The next Session starts a fresh process (after the crash backoff).
	var s2 *upstream.Session
	eventually(t, "a restart", func() bool {
		var err error
		s2, err = p.Session(context.Background(), "", "h")
		return err == nil && s2 != s
	})
	if upstream.PID(s2) == oldPID {
		t.Errorf("restart reused pid %d", oldPID)
	}
	callEcho(t, s2, "after")
	if n := l.n.Load(); n != 2 {
		t.Errorf("%d launches; want 2", n)
	}
}

func TestOnStartOnExit(t *testing.T) {
	die := make(chan struct{})
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": func(ctx context.Context, tr mcp.Transport) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-die:
				cancel()
			case <-ctx.Done():
			}
		}()
		echoServer(ctx, tr)
		if ctx.Err() != nil {
			return errors.New("boom")
		}
		return nil
	}}}
	started := make(chan *upstream.Session, 2)
	type exit struct {
		s   *upstream.Session
		err error
	}
	exited := make(chan exit, 2)
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) {
		o.OnStart = func(s *upstream.Session) { started <- s }
		o.OnExit = func(s *upstream.Session, err error) { exited <- exit{s, err} }
	})
	s := session(t, p, "s")
	if got := wait(t, started, "OnStart"); got != s {
		t.Errorf("OnStart got another session")
	}
	die <- struct{}{} // only the running instance listens
	e := wait(t, exited, "OnExit after a crash")
	if e.s != s || e.err == nil || !strings.Contains(e.err.Error(), "boom") {
		t.Errorf("OnExit(%p, %v); want the session and an error carrying the server's", e.s, e.err)
	}

	// A deliberate stop reports no error.
	eventually(t, "restart", func() bool {
		s2, err := p.Session(context.Background(), "", "s")
		if err == nil {
			s = s2
		}
		return err == nil
	})
	wait(t, started, "OnStart after restart")
	p.Stop("s", "policy says so")
	e = wait(t, exited, "OnExit after Stop")
	if e.s != s || e.err != nil {
		t.Errorf("OnExit after Stop = %v; want nil", e.err)
	}
	if err := s.Err(); err == nil || err.Error() != "policy says so" {
		t.Errorf("Err after Stop = %v", err)
	}
	// And the next Session starts at once: a stop is no failure.
	s3 := session(t, p, "s")
	callEcho(t, s3, "again")
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hang):
		t.Fatalf("%s: nothing", what)
	}
	var zero T
	return zero
}

func TestIdleTimeout(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": upstreamtest.GoSDK(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return text("released"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	})}}
	const idle = 50 * time.Millisecond
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) { o.IdleTimeout = idle })
	s := session(t, p, "s")

	// A call in flight for many idle periods keeps the server.
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"block","arguments":{}}`))
		done <- err
	}()
	wait(t, entered, "the blocking call")
	time.Sleep(10 * idle)
	select {
	case <-s.Done():
		t.Fatalf("a server with a call in flight was stopped: %v", s.Err())
	default:
	}
	close(release)
	if err := wait(t, done, "the blocking call's result"); err != nil {
		t.Fatalf("blocking call: %v", err)
	}

	// With nothing in flight, it is stopped.
	select {
	case <-s.Done():
	case <-time.After(hang):
		t.Fatal("an idle server was not stopped")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "idle") {
		t.Errorf("idle stop cause = %v", err)
	}
	select {
	case <-upstream.ConnectionOf(s).Exited():
	case <-time.After(hang):
		t.Fatal("the idle server's process did not exit")
	}
	if len(p.Running()) != 0 {
		t.Errorf("Running after an idle stop = %v", p.Running())
	}
	// The next need starts it again, without a backoff.
	callEcho2 := session(t, p, "s")
	if callEcho2 == s || l.Launches("s") != 2 {
		t.Errorf("after an idle stop: same session %v, %d launches; want a new one", callEcho2 == s, l.Launches("s"))
	}
}

func TestCloseStopsEverything(t *testing.T) {
	l := execLauncher(t)
	p := newPool(t, []upstream.Config{honest(t, "a"), honest(t, "b")}, l, nil)
	var pids []int
	for _, n := range []string{"a", "b"} {
		s := session(t, p, n)
		callEcho(t, s, n)
		pids = append(pids, upstream.PID(s))
	}
	for _, pid := range pids {
		if err := probePID(pid); err != nil {
			t.Fatalf("pid %d not running before Close: %v", pid, err)
		}
	}
	p.Close()
	for _, pid := range pids {
		if err := probePID(pid); !errors.Is(err, errNoProcess) {
			t.Errorf("pid %d after Close: probe = %v; want %v (gone)", pid, err, errNoProcess)
		}
	}
	if _, err := p.Session(context.Background(), "", "a"); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Session after Close = %v", err)
	}
	p.Close() // twice is fine
}

// Close during a start waits for it and leaves nothing running.
func TestCloseDuringStart(t *testing.T) {
	release := make(chan struct{})
	var procs []upstream.Connection
	var mu sync.Mutex
	inner := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": gated(release, echoServer)}}
	l := launcherFunc(func(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
		pr, err := inner.Launch(ctx, cfg, lim)
		if err == nil {
			mu.Lock()
			procs = append(procs, pr)
			mu.Unlock()
		}
		return pr, err
	})
	p := newPool(t, inner.Configs(), l, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Session(context.Background(), "", "s")
		errc <- err
	}()
	eventually(t, "launch", func() bool { return inner.Launches("s") == 1 })
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	wait(t, closed, "Close")
	if err := wait(t, errc, "Session"); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Session interrupted by Close = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, pr := range procs {
		select {
		case <-pr.Exited():
		default:
			t.Error("a server launched during Close is still running after Close returned")
		}
	}
	close(release)
}

type launcherFunc func(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error)

func (f launcherFunc) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	return f(ctx, cfg, lim)
}

// The environment test server: a shell script that answers initialize with
// what it sees of three variables in serverInfo.name, then waits for EOF.
const envScript = `read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"%s|%s|%s","version":"1"}}}\n' "$id" "${MCPGATE_TEST_TOKEN-unset}" "${MCPGATE_TEST_PLAIN-unset}" "${MCPGATE_EXPLICIT_API_KEY-unset}"
cat >/dev/null
`

func TestChildEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	t.Setenv("MCPGATE_TEST_TOKEN", "hunter2")
	t.Setenv("MCPGATE_TEST_PLAIN", "visible")
	t.Setenv("MCPGATE_EXPLICIT_API_KEY", "from-parent")
	configs := []upstream.Config{
		{Name: "plain", Type: upstream.TypeStdio, Command: "sh", Args: []string{"-c", envScript}},
		{Name: "given", Type: upstream.TypeStdio, Command: "sh", Args: []string{"-c", envScript},
			Env: map[string]string{"MCPGATE_EXPLICIT_API_KEY": "from-file"}, InheritEnv: []string{"MCPGATE_TEST_P*"}},
	}
	p := newPool(t, configs, &upstream.ExecLauncher{Logger: testLogger(t)}, nil)
	for name, want := range map[string]string{
		"plain": `"name":"unset|unset|unset"`,
		"given": `"name":"unset|visible|from-file"`,
	} {
		s := session(t, p, name)
		if !strings.Contains(string(s.InitResult), want) {
			t.Errorf("%s saw %s; want %s (only allowlisted and inheritEnv variables inherited, explicit ones set)", name, s.InitResult, want)
		}
	}
}

// A key is a child of its own: the same server under two keys is two
// children, each started with its key's initialize params and handler,
// each with its own idle stop; StopKey stops one key's children alone.
func TestPoolKeys(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"a": echoServer}}
	var mu sync.Mutex
	var inits, handlers []string
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) {
		o.InitParams = func(key, server string) json.RawMessage {
			mu.Lock()
			inits = append(inits, key+"/"+server)
			mu.Unlock()
			return initParams(key, server)
		}
		o.Handler = func(key, server string) rpc.Handler {
			mu.Lock()
			handlers = append(handlers, key+"/"+server)
			mu.Unlock()
			return nil
		}
	})
	get := func(key string) *upstream.Session {
		t.Helper()
		s, err := p.Session(context.Background(), key, "a")
		if err != nil {
			t.Fatalf("Session(%s, a): %v", key, err)
		}
		return s
	}
	one, two := get("k1"), get("k2")
	if one == two || get("k1") != one || one.Key != "k1" || two.Key != "k2" {
		t.Fatalf("keys k1 and k2 did not get a child each")
	}
	callEcho(t, one, "one")
	callEcho(t, two, "two")
	if n := l.Launches("a"); n != 2 {
		t.Errorf("%d launches; want one per key", n)
	}
	mu.Lock()
	if strings.Join(inits, ",") != "k1/a,k2/a" || strings.Join(handlers, ",") != "k1/a,k2/a" {
		t.Errorf("initialize params for %v, handlers for %v; want each key's own", inits, handlers)
	}
	mu.Unlock()
	if r := p.RunningFor("k2"); len(r) != 1 || r[0] != two {
		t.Errorf("RunningFor(k2) = %v", r)
	}
	p.StopKey("k1", "its sessions are gone")
	eventually(t, "k1's child to stop", func() bool { return len(p.RunningFor("k1")) == 0 })
	select {
	case <-two.Done():
		t.Fatal("StopKey(k1) stopped k2's child")
	default:
	}
	if r := p.Running(); len(r) != 1 || r[0] != two {
		t.Errorf("Running after StopKey(k1) = %v", r)
	}
	if p.LastError("k1", "a") != nil {
		t.Errorf("a deliberate stop left an error: %v", p.LastError("k1", "a"))
	}
	if get("k1") == one {
		t.Error("k1 got its stopped child back")
	}
}

// A child still starting when its key is stopped is stopped as soon as it
// is up, and its waiters hear so; the key's next Session starts afresh.
func TestStopKeyWhileStarting(t *testing.T) {
	release := make(chan struct{})
	slow := func(ctx context.Context, tr mcp.Transport) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return echoServer(ctx, tr)
	}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"a": slow}}
	p := newPool(t, l.Configs(), l, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Session(context.Background(), "k", "a")
		errc <- err
	}()
	eventually(t, "the start to be under way", func() bool { return l.Launches("a") == 1 })
	p.StopKey("k", "its sessions are gone")
	close(release)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "stopped while starting") {
			t.Fatalf("Session during StopKey: %v; want stopped while starting", err)
		}
	case <-time.After(hang):
		t.Fatal("Session did not return")
	}
	if r := p.RunningFor("k"); len(r) != 0 {
		t.Fatalf("a child started for a stopped key runs on: %v", r)
	}
	s, err := p.Session(context.Background(), "k", "a")
	if err != nil {
		t.Fatalf("Session after StopKey: %v", err)
	}
	callEcho(t, s, "again")
}

// With OpenKeysOnly, a key gets children only between OpenKey and StopKey:
// a caller still holding the key after StopKey (work that outlived the
// key's last user) starts nothing, and the key opened again works again.
func TestOpenKeysOnly(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"a": echoServer}}
	p := newPool(t, l.Configs(), l, func(o *upstream.PoolOptions) { o.OpenKeysOnly = true })
	if _, err := p.Session(context.Background(), "k", "a"); err == nil || !strings.Contains(err.Error(), "no caller holds key") {
		t.Fatalf("Session for a key never opened: %v; want refused", err)
	}
	p.OpenKey("k")
	s, err := p.Session(context.Background(), "k", "a")
	if err != nil {
		t.Fatalf("Session for an open key: %v", err)
	}
	callEcho(t, s, "open")
	p.StopKey("k", "its sessions are gone")
	if _, err := p.Session(context.Background(), "k", "a"); err == nil || !strings.Contains(err.Error(), "no caller holds key") {
		t.Fatalf("Session after StopKey: %v; want refused", err)
	}
	if n := l.Launches("a"); n != 1 {
		t.Fatalf("%d launches; want only the one while the key was open", n)
	}
	p.OpenKey("k")
	s, err = p.Session(context.Background(), "k", "a")
	if err != nil {
		t.Fatalf("Session after the key was opened again: %v", err)
	}
	callEcho(t, s, "again")
}

// A caller whose ctx is already done starts nothing.
func TestSessionCancelledCtxStartsNothing(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"a": echoServer}}
	p := newPool(t, l.Configs(), l, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Session(ctx, "k", "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Session with a done ctx: %v; want context.Canceled", err)
	}
	// Give a start that was launched anyway the time to show.
	time.Sleep(100 * time.Millisecond)
	if n := l.Launches("a"); n != 0 {
		t.Fatalf("%d launches for a caller that had given up; want none", n)
	}
}
