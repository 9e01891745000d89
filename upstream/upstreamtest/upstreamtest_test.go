package upstreamtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

const hang = 10 * time.Second

func cfg(name string) upstream.Config {
	return upstream.Config{Name: name, Type: upstream.TypeStdio, Command: "x"}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hang):
		t.Fatalf("%s: not closed", what)
	}
}

func TestGoSDKServesOverTheProcess(t *testing.T) {
	l := &Launcher{Servers: map[string]ServeFunc{"s": GoSDK(nil)}}
	p, err := l.Launch(context.Background(), cfg("s"), rpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if err := p.Write(ctx, &rpc.Message{ID: json.RawMessage("1"), Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}); err != nil {
		t.Fatal(err)
	}
	m, err := p.Read(ctx)
	if err != nil || string(m.ID) != "1" || !strings.Contains(string(m.Result), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answered %+v, %v", m, err)
	}
	if p.ExitErr() != nil {
		t.Errorf("ExitErr before exit = %v", p.ExitErr())
	}
	p.Stop(time.Second) // closing its input ends a go-sdk server
	waitClosed(t, p.Exited(), "Exited")
	if p.ExitErr() == nil || !strings.Contains(p.ExitErr().Error(), `server "s" returned`) {
		t.Errorf("ExitErr = %v", p.ExitErr())
	}
	p.Stop(time.Second) // again: no effect, no panic
	if _, err := p.Read(ctx); err == nil {
		t.Error("Read after Stop succeeded")
	}
}

func TestExitErrCarriesTheError(t *testing.T) {
	boom := errors.New("boom")
	l := &Launcher{Servers: map[string]ServeFunc{"s": func(context.Context, mcp.Transport) error { return boom }}}
	p, err := l.Launch(context.Background(), cfg("s"), rpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, p.Exited(), "Exited")
	if !errors.Is(p.ExitErr(), boom) {
		t.Errorf("ExitErr = %v; want it to wrap the serve function's error", p.ExitErr())
	}
	// The gate sees the end of the stream.
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if m, err := p.Read(ctx); m != nil || !errors.Is(err, io.EOF) {
		t.Errorf("Read after exit = %+v, %v; want EOF", m, err)
	}
	// A write may be queued, but it never reaches the server.
	err = p.Write(ctx, &rpc.Message{Method: "x"})
	if err == nil {
		err = p.(rpc.Flusher).Flush(ctx)
	}
	var we *rpc.WriteError
	if !errors.As(err, &we) {
		t.Errorf("Write and Flush after exit = %v; want a *rpc.WriteError", err)
	}
}

// Stop escalates to cancelling the serve function's context when closing
// its input is not enough, and the server outlives the Launch context.
func TestStopEscalates(t *testing.T) {
	l := &Launcher{Servers: map[string]ServeFunc{"s": func(ctx context.Context, _ mcp.Transport) error {
		<-ctx.Done()
		return ctx.Err()
	}}}
	lctx, cancel := context.WithCancel(context.Background())
	p, err := l.Launch(lctx, cfg("s"), rpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-p.Exited():
		t.Fatal("the server ended with its Launch context")
	case <-time.After(20 * time.Millisecond):
	}
	p.Stop(10 * time.Millisecond)
	waitClosed(t, p.Exited(), "Exited")
	if !errors.Is(p.ExitErr(), context.Canceled) {
		t.Errorf("ExitErr = %v", p.ExitErr())
	}
}

func TestLaunchCountsAndFailures(t *testing.T) {
	l := &Launcher{Servers: map[string]ServeFunc{"a": GoSDK(nil), "b": GoSDK(nil)}}
	if got := l.Configs(); len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[0].Type != upstream.TypeStdio {
		t.Errorf("Configs = %+v", got)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			p, err := l.Launch(context.Background(), cfg("a"), rpc.Limits{})
			if err != nil {
				t.Error(err)
				return
			}
			p.Stop(time.Second)
		})
	}
	wg.Wait()
	if l.Launches("a") != 5 || l.Launches("b") != 0 {
		t.Errorf("Launches a=%d b=%d", l.Launches("a"), l.Launches("b"))
	}
	bad := errors.New("exec: no such file")
	l.FailLaunches("b", bad)
	if _, err := l.Launch(context.Background(), cfg("b"), rpc.Limits{}); !errors.Is(err, bad) {
		t.Errorf("failing launch = %v", err)
	}
	if l.Launches("b") != 1 {
		t.Errorf("a failed launch is not counted: %d", l.Launches("b"))
	}
	l.FailLaunches("b", nil)
	p, err := l.Launch(context.Background(), cfg("b"), rpc.Limits{})
	if err != nil {
		t.Fatalf("launch after FailLaunches(nil): %v", err)
	}
	p.Stop(time.Second)
	if _, err := l.Launch(context.Background(), cfg("zzz"), rpc.Limits{}); !errors.Is(err, ErrNoServer) {
		t.Errorf("unknown server = %v", err)
	}
}
