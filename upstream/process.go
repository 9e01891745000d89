package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// A Launcher starts upstream servers. Implementations must be safe for
// concurrent use. ExecLauncher starts a child process; an HTTP upstream is
// another Launcher, whose connection speaks HTTP rather than lines.
type Launcher interface {
	// Launch starts cfg's server and returns a connection to it. lim bounds
	// the messages the connection accepts from the server and how long it
	// waits for the server to read (rpc.Limits). The server outlives ctx,
	// which bounds only the launch.
	Launch(ctx context.Context, cfg Config, lim rpc.Limits) (Connection, error)
}

// A Connection is a running upstream server as the gate sees it: a
// transport of whole messages to and from it (the rpc.Transport methods,
// with their concurrency rules), and the lifecycle of whatever serves it.
// Closing the transport does not stop the server; Stop does. Stop, Exited
// and ExitErr are safe for concurrent use.
type Connection interface {
	rpc.Transport
	// Stop ends the server: it closes its input, waits up to grace for it
	// to exit, then terminates it. Stop may be called more than once.
	Stop(grace time.Duration)
	// Exited is closed once the server has exited.
	Exited() <-chan struct{}
	// ExitErr describes how the server exited, with the tail of what it
	// wrote to stderr. Valid after Exited is closed.
	ExitErr() error
}

// ExecLauncher starts servers as child processes.
type ExecLauncher struct {
	Logger *slog.Logger
	// Environ is the environment the child's is built from (os.Environ when nil).
	Environ func() []string
	// Mark is set in every child's environment over the entry's env: what
	// the gate itself tells its children (the nesting marker). It is no
	// part of any entry, so it takes no part in what identifies one (the
	// catalog cache key), which must not change with, say, the path of the
	// servers file a gate was started on.
	Mark map[string]string
}

func (l *ExecLauncher) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Logger
}

// Launch starts cfg's command with its stdin and stdout as the message
// stream: newline-delimited messages (rpc.Stream) over the child's pipes.
func (l *ExecLauncher) Launch(ctx context.Context, cfg Config, lim rpc.Limits) (Connection, error) {
	if cfg.Type != TypeStdio {
		return nil, fmt.Errorf("transport %q is not supported yet; only stdio servers can be started", cfg.Type)
	}
	environ := os.Environ
	if l.Environ != nil {
		environ = l.Environ
	}
	// Our own pipes rather than cmd.StdoutPipe: exec closes its pipes in Wait,
	// racing with a reader still draining the last response.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	explicit := cfg.Env
	if len(l.Mark) > 0 {
		explicit = maps.Clone(cfg.Env)
		if explicit == nil {
			explicit = make(map[string]string, len(l.Mark))
		}
		maps.Copy(explicit, l.Mark)
	}
	env, notes := ChildEnv(environ(), EnvOptions{Explicit: explicit, Inherit: cfg.InheritEnv, InheritAll: cfg.InheritAll})
	for _, n := range notes {
		// The name only: the value is the secret.
		l.logger().Warn("environment variable withheld from the server", "server", cfg.Name, "variable", n.Name, "reason", n.Reason)
	}
	cmd.Env = env
	cmd.Dir = cfg.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	setProcessGroup(cmd)
	startErr := startChild(cmd)
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %q: %w", cfg.Command, startErr)
	}
	releaseGuard := orphanGuard(cmd)
	p := &execProcess{
		// No closer: closing the transport leaves the pipes to Stop, which
		// closes the child's input first, as MCP's stdio shutdown asks.
		Stream: rpc.NewStream(outR, inW, nil, lim),
		name:   cfg.Name,
		cmd:    cmd,
		stdin:  inW,
		stdout: outR,
		exited: make(chan struct{}),
		tail:   &tailBuffer{max: 4 << 10},
		log:    l.logger(),
	}
	stderrDone := make(chan struct{})
	go p.readStderr(errR, stderrDone)
	go func() {
		err := cmd.Wait()
		// Give stderr a moment to drain so the exit error carries the last
		// words of a crashing server.
		select {
		case <-stderrDone:
		case <-time.After(500 * time.Millisecond):
		}
		killGroup(cmd) // grandchildren (npx → node) must not outlive it
		releaseGuard()
		exitErr := p.describeExit(err)
		p.mu.Lock()
		p.exitErr = exitErr
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// execProcess is a child process and the newline-delimited transport over
// its pipes.
type execProcess struct {
	*rpc.Stream
	name   string
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	exited chan struct{}
	tail   *tailBuffer
	log    *slog.Logger

	stopOnce sync.Once
	mu       sync.Mutex
	exitErr  error
	stopped  bool
}

func (p *execProcess) Exited() <-chan struct{} { return p.exited }

func (p *execProcess) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

func (p *execProcess) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		// MCP's stdio shutdown: close the server's input, then escalate.
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(grace):
			terminate(p.cmd)
			select {
			case <-p.exited:
			case <-time.After(grace):
				killGroup(p.cmd)
				<-p.exited
			}
		}
		p.stdout.Close()
		p.Stream.Close()
	})
}

func (p *execProcess) describeExit(err error) error {
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	var what string
	switch {
	case err == nil:
		what = "exited with status 0"
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			what = ee.ProcessState.String() // "exit status 1", "signal: killed"
		} else {
			what = err.Error()
		}
	}
	if stopped {
		what += " after the gate stopped it"
	}
	if t := p.tail.String(); t != "" {
		return fmt.Errorf("%s; stderr: %s", what, t)
	}
	return errors.New(what)
}

// readStderr drains the child's stderr to its end, whatever it writes: a
// child whose stderr is not read blocks on it, or dies of SIGPIPE once the
// pipe is closed. What is kept is bounded (stderrCap): the head of each
// line, and, for the debug log, so many lines per second.
func (p *execProcess) readStderr(r io.ReadCloser, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	c := stderrCap{log: p.log, server: p.name, tail: p.tail}
	br := bufio.NewReaderSize(r, 16<<10)
	var line []byte
	cut := 0 // bytes of the current line not kept
	for {
		frag, err := br.ReadSlice('\n')
		if keep := stderrLineMax - len(line); keep > 0 {
			line = append(line, frag[:min(len(frag), keep)]...)
			cut += len(frag) - min(len(frag), keep)
		} else {
			cut += len(frag)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 || cut > 0 {
			c.line(strings.TrimRight(string(line), "\r\n"), cut, time.Now())
		}
		line, cut = line[:0], 0
		if err != nil {
			c.flush()
			return
		}
	}
}

// tailBuffer keeps the last max bytes of stderr, by whole lines.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
	size  int
}

func (t *tailBuffer) add(line string) {
	if len(line) > t.max {
		line = line[len(line)-t.max:]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > t.max && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.Join(t.lines, "\n"))
}
