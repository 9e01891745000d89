package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/policy"
)

// lockedBuffer is stderr for a serve running in this process.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveInProcess runs `mcp-gate serve` with no servers and the given
// extra flags until the returned stop is called, and returns its stderr
// once the host session has started.
func serveInProcess(t *testing.T, extra ...string) (stderr *lockedBuffer, stop func()) {
	t.Helper()
	dir := t.TempDir()
	servers := filepath.Join(dir, "servers.json")
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(servers, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	stderr = &lockedBuffer{}
	done := make(chan int, 1)
	args := append([]string{"serve", "--servers", servers, "--policy", pol, "--audit-log", filepath.Join(dir, "audit.jsonl")}, extra...)
	go func() { done <- run(args, inR, io.Discard, stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "host session started") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return stderr, func() {
		inW.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d:\n%s", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not return after stdin closed")
		}
	}
}

// opsGoroutines returns the goroutine stacks that belong to the operations
// surface: an HTTP server, the metrics package or the metrics library.
func opsGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "net/http.(*Server).Serve") || strings.Contains(g, "mcp-gate/mcp-gate/metrics.") ||
			strings.Contains(g, "mcp-gate/mcp-gate/ops.") || strings.Contains(g, "VictoriaMetrics/metrics.") {
			out = append(out, g)
		}
	}
	return out
}

// Issue #12: metrics cost nothing unless asked for. A stdio serve without
// --ops-addr starts no listener and no goroutine of the operations
// surface (and gives the gate a nil observer, whose hooks are nil
// comparisons: proxy's TestObserverOffAllocatesNothing); with --ops-addr
// the listener is there, which shows the check can see one.
func TestOpsOffStartsNothing(t *testing.T) {
	_, stop := serveInProcess(t)
	if g := opsGoroutines(); len(g) > 0 {
		t.Errorf("serve without --ops-addr runs %d goroutines of the operations surface:\n%s", len(g), strings.Join(g, "\n\n"))
	}
	stop()

	stderr, stop := serveInProcess(t, "--ops-addr", "127.0.0.1:0")
	defer stop()
	// The server's goroutine is started before the listening line is
	// logged but may not have run yet: until it does, its stack names only
	// serveOps's closure.
	for deadline := time.Now().Add(10 * time.Second); len(opsGoroutines()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("serve --ops-addr runs no HTTP server goroutine: the check above could not see one")
		}
	}
	addr := regexp.MustCompile(`msg="ops endpoints listening" addr=(\S+)`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("the bound address is not on stderr:\n%s", stderr.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz with a valid policy: %d", resp.StatusCode)
	}
}

// The endpoints have no authentication: --ops-addr serves loopback only.
func TestOpsAddrLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9090", "[::]:0", "example.invalid:80", "nonsense"} {
		var errb bytes.Buffer
		code := run([]string{"serve", "--ops-addr", addr, "--servers", "/nonexistent"}, strings.NewReader(""), io.Discard, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "--ops-addr") {
			t.Errorf("--ops-addr %s: exit %d, %q; want a usage error naming the flag", addr, code, errb.String())
		}
	}
}

// /readyz is 503 until a policy is in force and again once shutdown has
// begun (SIGTERM cancels serve's context), so that no new session is sent
// to a gate that cannot decide or is draining.
func TestReadiness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOps(ctx)
	if err := o.ready(); err == nil || !strings.Contains(err.Error(), "no policy") {
		t.Errorf("before the policy: ready() = %v; want no policy loaded", err)
	}
	p, _, err := policy.Parse("p.yaml", []byte("version: 1\nfallback: deny\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A policy file that did not load: the fail-closed policy serves
	// nothing, so the gate is alive but not ready.
	o.policyLoaded(policy.NewStatic(policy.FailClosed()))
	if err := o.ready(); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Errorf("under the fail-closed policy: ready() = %v; want not ready", err)
	}
	o.policyLoaded(policy.NewStatic(p))
	if err := o.ready(); err != nil {
		t.Errorf("with a policy: ready() = %v", err)
	}
	if o.revision() != p.Revision() {
		t.Errorf("revision %q, want %q", o.revision(), p.Revision())
	}
	cancel()
	if err := o.ready(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("after SIGTERM: ready() = %v; want shutting down", err)
	}
	// Off: a nil state is inert.
	var off *opsState
	off.policyLoaded(policy.NewStatic(p))
	if off.observer() != nil {
		t.Error("a nil opsState gives an observer")
	}
	off.close()
}

// What a library writes through the standard log package (the metrics
// library reports a /proc file it cannot read that way) comes out of
// serve's operational logger, in its format, not as a bare line. Not
// parallel: the standard logger is the process's.
//
// Such a line is written at warn (the library's are errors), so that
// --log-level warn still shows it (serveInProcess needs info to see the
// session start, so the level is checked here, not the filter).
func TestStandardLogThroughTheLogger(t *testing.T) {
	prev := slog.Default()
	prevLevel := slog.SetLogLoggerLevel(slog.LevelInfo)
	t.Cleanup(func() {
		slog.SetDefault(prev)
		slog.SetLogLoggerLevel(prevLevel)
	})
	stderr, stop := serveInProcess(t)
	log.Print("ERROR: a line from the log package")
	stop()
	if !strings.Contains(stderr.String(), `level=WARN msg="ERROR: a line from the log package"`) {
		t.Errorf("the standard log's line is not in the gate's log format, at warn:\n%s", stderr.String())
	}
}

// A web page that re-points a name of its own to 127.0.0.1 (DNS
// rebinding) reaches --ops-addr with that name as Host, and the browser
// lets it read the answer: the endpoints answer only a loopback Host.
func TestOpsRefusesAForeignHost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := serveOps(ctx, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	_, port, _ := net.SplitHostPort(o.addr)
	for host, want := range map[string]int{
		"rebind.example:" + port: http.StatusMisdirectedRequest,
		"rebind.example":         http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io":       http.StatusMisdirectedRequest,
		"127.0.0.1:" + port:      http.StatusOK,
		"127.1.2.3":              http.StatusOK,
		"localhost:" + port:      http.StatusOK,
		"[::1]:" + port:          http.StatusOK,
	} {
		req, _ := http.NewRequest("GET", "http://"+o.addr+"/healthz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d; want %d", host, resp.StatusCode, want)
		}
	}
}
