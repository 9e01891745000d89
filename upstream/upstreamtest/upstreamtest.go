package upstreamtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/rpc"
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

// Launch starts a new call of cfg.Name's ServeFunc on its own goroutine,
// connected to the gate by newline-delimited messages over in-memory pipes
// (an rpc.Stream within lim, as a child process's would be). The server
// outlives ctx, which bounds only the launch, as a process does.
func (l *Launcher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
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
		Stream: rpc.NewStream(outR, inW, nil, lim),
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

// Process is one launched server. It implements upstream.Connection; its
// methods follow that interface's concurrency rules.
type Process struct {
	*rpc.Stream
	name   string
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	cancel context.CancelFunc
	exited chan struct{}

	exitErr  error // written before exited is closed
	stopOnce sync.Once
}

var _ upstream.Connection = (*Process)(nil)

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
		p.Stream.Close()
	})
}

// A PipeLauncher is an in-memory upstream.Launcher whose servers are
// rpc.Handlers served by an rpc.Conn over an rpc.Pipe: no process, no byte
// stream, the gate's own message layer at both ends. It is what an
// upstream that is not a process (an HTTP one) looks like to the pool.
//
// Set Servers before the first Launch and do not change it afterwards.
type PipeLauncher struct {
	// Servers maps a server name to what serves it. A Handler that also
	// implements Starter is told the server's own Conn when it starts.
	Servers map[string]rpc.Handler
}

// A Starter is told the Conn of the server it serves, to send requests and
// notifications of its own, and to end the server by closing it.
type Starter interface {
	Start(server *rpc.Conn)
}

var _ upstream.Launcher = (*PipeLauncher)(nil)

// Launch serves cfg.Name's Handler over a new Pipe within lim.
func (l *PipeLauncher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	h, ok := l.Servers[cfg.Name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoServer, cfg.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gate, server := rpc.Pipe(lim)
	c := &PipeConn{PipeEnd: gate, exited: make(chan struct{})}
	c.server = rpc.New(server, h, rpc.Options{
		Peer:           "gate",
		Logger:         slog.New(slog.DiscardHandler),
		AnswerBadInput: true,
	})
	if st, ok := h.(Starter); ok {
		st.Start(c.server)
	}
	go func() {
		err := c.server.Run(context.Background())
		c.exitErr = fmt.Errorf("upstreamtest: server %q ended: %w", cfg.Name, err)
		close(c.exited)
	}()
	return c, nil
}

// A PipeConn is the gate's side of a server launched by a PipeLauncher.
type PipeConn struct {
	*rpc.PipeEnd
	server  *rpc.Conn
	exited  chan struct{}
	exitErr error // written before exited is closed
}

var _ upstream.Connection = (*PipeConn)(nil)

// Stop ends the server, whose Run returns at once.
func (c *PipeConn) Stop(time.Duration) {
	c.server.CloseWithError(errors.New("stopped by the gate"))
	<-c.exited
	c.PipeEnd.Close()
}

// Exited is closed once the server's Conn has ended.
func (c *PipeConn) Exited() <-chan struct{} { return c.exited }

// ExitErr says why the server's Conn ended; nil before it has.
func (c *PipeConn) ExitErr() error {
	select {
	case <-c.exited:
		return c.exitErr
	default:
		return nil
	}
}
