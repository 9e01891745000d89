package upstreamtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A ServeFunc serves one connection of an upstream server over t until the
// connection ends or ctx is done, and returns why it stopped. It plays the
// part of a server process: returning is the process exiting.
type ServeFunc func(ctx context.Context, t mcp.Transport) error

// GoSDK returns a ServeFunc that runs a fresh go-sdk server per launch,
// configured by build (add tools, prompts, resources there). build may be
// nil for a server with nothing on it.
func GoSDK(build func(*mcp.Server)) ServeFunc {
	return GoSDKWithOptions(nil, build)
}

// GoSDKWithOptions is GoSDK with server options (instructions, handlers).
func GoSDKWithOptions(opts *mcp.ServerOptions, build func(*mcp.Server)) ServeFunc {
	return func(ctx context.Context, t mcp.Transport) error {
		s := mcp.NewServer(&mcp.Implementation{Name: "upstreamtest", Version: "0"}, opts)
		if build != nil {
			build(s)
		}
		return s.Run(ctx, t)
	}
}

// ErrNoServer is returned by Launch for a name missing from Servers.
var ErrNoServer = errors.New("upstreamtest: no such server")

// Launcher is an in-memory upstream.Launcher.
//
// Set Servers before the first Launch and do not change it afterwards.
// All methods are safe for concurrent use.
type Launcher struct {
	// Servers maps a server name (upstream.Config.Name) to what serves it.
	Servers map[string]ServeFunc

	mu       sync.Mutex
	launches map[string]int
	fail     map[string]error
}

var _ upstream.Launcher = (*Launcher)(nil)

// Configs returns one stdio Config per server, sorted by name, for
// upstream.NewPool.
func (l *Launcher) Configs() []upstream.Config {
	names := make([]string, 0, len(l.Servers))
	for n := range l.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]upstream.Config, 0, len(names))
	for _, n := range names {
		out = append(out, upstream.Config{Name: n, Type: upstream.TypeStdio, Command: "upstreamtest:" + n})
	}
	return out
}

// Launches reports how many times server has been launched, failed launches
// included.
func (l *Launcher) Launches(server string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launches[server]
}

// FailLaunches makes every later launch of server fail with err, until it is
// called again with a nil err.
func (l *Launcher) FailLaunches(server string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail == nil {
		l.fail = map[string]error{}
	}
	if err == nil {
		delete(l.fail, server)
	} else {
		l.fail[server] = err
	}
}

// Launch starts a new call of cfg.Name's ServeFunc on its own goroutine.
// The server outlives ctx, which bounds only the launch, as a process does.
func (l *Launcher) Launch(ctx context.Context, cfg upstream.Config) (upstream.Process, error) {
	l.mu.Lock()
	if l.launches == nil {
		l.launches = map[string]int{}
	}
	l.launches[cfg.Name]++
	failErr := l.fail[cfg.Name]
	serve, ok := l.Servers[cfg.Name]
	l.mu.Unlock()
	if failErr != nil {
		return nil, failErr
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoServer, cfg.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()   // gate → server
	outR, outW := io.Pipe() // server → gate
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Process{
		name:   cfg.Name,
		stdin:  inW,
		stdout: outR,
		cancel: cancel,
		exited: make(chan struct{}),
	}
	go func() {
		err := serve(sctx, &mcp.IOTransport{Reader: inR, Writer: outW})
		// The "process" is gone: its end of both pipes closes with it.
		inR.Close()
		outW.Close()
		cancel()
		if err != nil {
			p.exitErr = fmt.Errorf("upstreamtest: server %q returned: %w", cfg.Name, err)
		} else {
			p.exitErr = fmt.Errorf("upstreamtest: server %q returned", cfg.Name)
		}
		close(p.exited)
	}()
	return p, nil
}

// Process is one launched server. It implements upstream.Process; its
// methods are safe for concurrent use as that interface requires.
type Process struct {
	name   string
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	cancel context.CancelFunc
	exited chan struct{}

	exitErr  error // written before exited is closed
	stopOnce sync.Once
}

var _ upstream.Process = (*Process)(nil)

// Read reads what the server wrote.
func (p *Process) Read(b []byte) (int, error) { return p.stdout.Read(b) }

// Write writes to the server's input.
func (p *Process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Exited is closed once the serve function has returned.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr says how the serve function returned, wrapping its error. It is
// never nil after Exited is closed, like a real process's exit status, and
// nil before.
func (p *Process) ExitErr() error {
	select {
	case <-p.exited:
		return p.exitErr
	default:
		return nil
	}
}

// Stop closes the server's input, as the gate does to a process, and waits
// up to grace for the serve function to return; then it cancels the serve
// function's context, closes its output and waits for it without a bound
// (a ServeFunc that ignores both is a bug in the test).
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(grace):
			p.cancel()
			p.stdout.Close()
			<-p.exited
		}
		p.stdout.Close()
	})
}
