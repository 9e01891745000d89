package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/metrics"
	"github.com/mcp-gate/mcp-gate/ops"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/proxy"
)

// opsState is what the operations endpoints read: the metrics (nil when
// off) and whether the gate is ready. The zero value is "off": a serve
// without --ops-addr (or --http) creates no metrics set, starts no goroutine
// and gives the gate a nil observer (TestOpsOffStartsNothing).
type opsState struct {
	m        *metrics.Metrics
	store    atomic.Pointer[policy.Store]
	stopping atomic.Bool
	ctx      context.Context // serve's: done on SIGTERM
	srv      *http.Server
	addr     string // where serveOps listens
	done     chan struct{}
}

// newOps enables metrics and readiness: for the HTTP front end, which
// mounts them with ops.Mount on its own mux, and for --ops-addr.
func newOps(ctx context.Context) *opsState {
	o := &opsState{ctx: ctx}
	o.m = metrics.New(metrics.Options{Version: version, PolicyRevision: o.revision})
	return o
}

// revision is the policy revision in force, "" before one is loaded.
func (o *opsState) revision() string {
	if s := o.store.Load(); s != nil {
		return s.Current().Revision()
	}
	return ""
}

// ready says why the gate cannot serve yet, or nil: a valid policy must be
// in force (a file that fails to load at start is a refusal to start, and
// a later invalid edit keeps the last good policy, which stays valid), and
// a gate that is shutting down takes no new sessions. A gate serving the
// fail-closed policy (its file did not load) is alive but not ready.
func (o *opsState) ready() error {
	switch {
	case o.stopping.Load() || o.ctx.Err() != nil:
		return errors.New("shutting down")
	case o.store.Load() == nil || o.store.Load().Current() == nil:
		return errors.New("no policy loaded yet")
	case o.store.Load().Current() == policy.FailClosed():
		// The policy file did not load: the gate serves nothing until it
		// is fixed (startup.go), so it is not ready to take sessions.
		return errors.New("the policy file does not load: serving nothing until it is fixed")
	}
	return nil
}

// policyLoaded records the store in force and counts its reloads.
func (o *opsState) policyLoaded(s *policy.Store) {
	if o == nil {
		return
	}
	if o.m != nil {
		s.Observe(o.m)
	}
	o.store.Store(s)
}

// mount serves /healthz, /readyz and /metrics on the HTTP front end's
// mux. A front end that is draining (SIGTERM) is not ready, so that the
// load balancer sends new sessions elsewhere while calls finish.
func (o *opsState) mount(mux *http.ServeMux, draining func() bool) {
	if o == nil {
		return
	}
	ops.Mount(mux, o.m, func() error {
		if draining() {
			return errors.New("draining: finishing the calls in flight")
		}
		return o.ready()
	})
}

// observer is the gate's observer: nil, not a nil *Metrics, when off.
func (o *opsState) observer() proxy.Observer {
	if o == nil || o.m == nil {
		return nil
	}
	return o.m
}

// serveOps listens on addr, which must be a loopback address: the
// endpoints carry no authentication, and off the loopback interface they
// belong behind the HTTP front end or a network policy. It says where it
// listens on the log and serves until close.
func serveOps(ctx context.Context, addr string, log *slog.Logger) (*opsState, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--ops-addr %q: expected HOST:PORT: %w", addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageError{fmt.Errorf("--ops-addr %q: only a loopback address (127.0.0.1, ::1, localhost) is served: the endpoints have no authentication; "+
			"a cluster reaches them through the --http front end", addr)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--ops-addr: %w", err)
	}
	o := newOps(ctx)
	mux := http.NewServeMux()
	ops.Mount(mux, o.m, o.ready)
	o.addr = ln.Addr().String()
	o.srv = &http.Server{Handler: loopbackHostOnly(mux), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	o.done = make(chan struct{})
	go func() {
		defer close(o.done)
		_ = o.srv.Serve(ln)
	}()
	log.Info("ops endpoints listening", "addr", ln.Addr().String(), "paths", []string{ops.HealthzPath, ops.ReadyzPath, ops.MetricsPath})
	return o, nil
}

// loopbackHostOnly answers only requests whose Host names this machine's
// loopback (localhost, 127.0.0.0/8, ::1): a web page the user opens can
// make the browser connect to 127.0.0.1 under a name of the page's that it
// re-points there (DNS rebinding) and read /metrics (server keys, rule
// names, the policy revision) as same-origin; such a request carries the
// page's name as its Host, and is refused with 421.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "mcp-gate: the ops endpoints answer only a loopback Host (127.0.0.1, [::1], localhost)", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// close marks the gate as stopping and stops the listener, if any.
func (o *opsState) close() {
	if o == nil {
		return
	}
	o.stopping.Store(true)
	if o.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = o.srv.Shutdown(ctx)
		<-o.done
	}
}
