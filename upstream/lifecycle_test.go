package upstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// A call that finds its server in the restart backoff waits for the next
// allowed start when that falls within its deadline (the callTimeout the
// proxy sets), and is served; one whose deadline comes first fails at once,
// with the time of the next attempt.
func TestBackoffWaitedOutWithinDeadline(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": echoServer}}
	l.FailLaunches("s", errors.New("no such file or directory"))
	p := newPool(t, l.Configs(), l, nil)
	if _, err := p.Session(context.Background(), "", "s"); err == nil {
		t.Fatal("the first start succeeded; want the launch error")
	}
	l.FailLaunches("s", nil)

	// The backoff after one failure is a second: a deadline before the
	// next attempt fails at once, naming when that attempt is.
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Session(short, "", "s")
	if err == nil || !strings.Contains(err.Error(), "next start attempt in") || !strings.Contains(err.Error(), "past this call's deadline") {
		t.Fatalf("Session with a deadline before the next attempt = %v; want the next attempt's time", err)
	}
	if short.Err() != nil {
		t.Error("the call waited for its deadline instead of failing at once")
	}

	// A deadline past the next attempt: the call waits for it and is served.
	ctx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	s, err := p.Session(ctx, "", "s")
	if err != nil {
		t.Fatalf("Session with a deadline past the next attempt = %v; want it served after the backoff", err)
	}
	callEcho(t, s, "after the backoff")
	if n := l.Launches("s"); n != 2 {
		t.Errorf("%d launches; want 2", n)
	}
}

// A call waiting out a backoff returns when the pool closes.
func TestBackoffWaitEndsOnClose(t *testing.T) {
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{"s": echoServer}}
	l.FailLaunches("s", errors.New("no such file or directory"))
	p := upstream.NewPool(l.Configs(), upstream.PoolOptions{Launcher: l, Logger: testLogger(t), InitParams: initParams})
	if _, err := p.Session(context.Background(), "", "s"); err == nil {
		t.Fatal("the first start succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Session(ctx, "", "s")
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	p.Close()
	if err := wait(t, errc, "Session"); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Session waiting out a backoff, pool closed = %v; want shutting down", err)
	}
}

// A bad callTimeout is refused with the server and the key; a good one is
// read, and an entry without one gets the default.
func TestCallTimeoutKey(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	parse := func(v string) ([]upstream.Config, error) {
		return upstream.ParseServers("s.json", []byte(`{"mcpServers":{"a":{"command":"x","callTimeout":`+v+`}}}`), lookup)
	}
	for _, bad := range []string{`"10 minutes"`, `"-1s"`, `"0s"`, `600`, `null`, `""`} {
		if _, err := parse(bad); err == nil || !strings.Contains(err.Error(), `s.json: server "a": "callTimeout"`) {
			t.Errorf("callTimeout %s: %v; want an error naming the file, the server and the key", bad, err)
		}
	}
	cfgs, err := parse(`"90s"`)
	if err != nil || cfgs[0].Timeout() != 90*time.Second {
		t.Errorf(`callTimeout "90s" = %v, %v`, cfgs, err)
	}
	cfgs, err = upstream.ParseServers("s.json", []byte(`{"mcpServers":{"a":{"command":"x"}}}`), lookup)
	if err != nil || cfgs[0].Timeout() != upstream.DefaultCallTimeout {
		t.Errorf("no callTimeout = %v, %v; want the default", cfgs, err)
	}
}

// Whatever "callTimeout" holds, an entry is either refused with the key
// named or gets a positive timeout.
func FuzzCallTimeout(f *testing.F) {
	for _, s := range []string{`"10m"`, `"1h30m"`, `"0s"`, `"-5s"`, `"10 minutes"`, `600`, `null`, `""`, `"9999999999h"`, `"1ns"`, `["1s"]`, `{"d":"1s"}`, `"\u0031s"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		data := []byte(`{"mcpServers":{"a":{"command":"x","callTimeout":` + v + `}}}`)
		cfgs, err := upstream.ParseServers("f.json", data, func(string) (string, bool) { return "", false })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(cfgs) != 1 || cfgs[0].Timeout() <= 0 || cfgs[0].CallTimeout < 0 {
			t.Fatalf("callTimeout %s accepted as %+v", v, cfgs)
		}
	})
}
