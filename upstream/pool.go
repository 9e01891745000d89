package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// PoolOptions configure a Pool.
type PoolOptions struct {
	Launcher Launcher
	Logger   *slog.Logger
	// StartTimeout bounds launching and initialising one server.
	StartTimeout time.Duration
	// IdleTimeout stops a server that has had nothing in flight for this
	// long. Zero keeps servers running.
	IdleTimeout time.Duration
	// StopGrace is how long a stopping server gets between closing its input,
	// SIGTERM and SIGKILL.
	StopGrace time.Duration
	// MaxMessageBytes bounds one message from an upstream.
	MaxMessageBytes int
	// ReadStall is how long an upstream may leave part of a message
	// unfinished before it is failed (DefaultReadStall if 0): lifecycle.go.
	ReadStall time.Duration
	// InitParams returns the params of the initialize request for a
	// server's child of one key. It is called on every start, so an
	// upstream always sees the current capabilities of its key.
	InitParams func(key, server string) json.RawMessage
	// Era returns the protocol revision cfg's server was last found to
	// speak by a child of key ("" when nothing is remembered): a server
	// pinned to "protocol": "auto" remembered as the older era is not probed
	// (era.go, startEra).
	Era func(key string, cfg Config) string
	// ProbeUnpinned probes a stdio server whose entry has no "protocol"
	// key as "auto" does (era.go, startEra). The gate's serve command
	// sets it; tests of scripted servers leave it off.
	ProbeUnpinned bool
	// Handler serves what one child (a server's, of one key) sends on its
	// own initiative (elicitation, sampling, roots, notifications).
	Handler func(key, server string) rpc.Handler
	// OnStart is called, on its own goroutine, after a server has started
	// and initialised.
	OnStart func(*Session)
	// OnExit is called, on its own goroutine, after a running server has
	// ended; err is nil when the gate stopped it.
	OnExit func(s *Session, err error)
	// OpenKeysOnly makes Session start children only for keys opened with
	// OpenKey and not stopped since with StopKey. A caller whose keys live
	// as long as something holds them (the proxy: a key lives while a host
	// session has it) sets it, so that work outliving the key's last holder
	// (a handler still running, a list fetch) cannot start a child nobody
	// will ever stop.
	OpenKeysOnly bool
}

// A Pool starts upstream servers lazily and keeps at most one session per
// (key, server): a key is opaque to the pool, and callers that must not
// share a child (the proxy's callers of different identities or different
// upstream-facing capabilities) use different keys. Each (key, server) has
// its own life: its start, its backoff after crashes, its idle stop. All
// methods are safe for concurrent use.
type Pool struct {
	// Set at construction.
	opts     PoolOptions
	configs  map[string]Config
	names    []string
	log      *slog.Logger
	stopIdl  chan struct{}
	ctx      context.Context // parent of every start; cancelled by Close
	cancel   context.CancelFunc
	starts   sync.WaitGroup // starts under way; Close waits for them
	stopping sync.WaitGroup // stops under way (stop); Close waits for them
	watchers sync.WaitGroup // session watchers; Close waits for them

	mu     sync.Mutex // guards the fields below
	slots  map[slotKey]*slot
	open   map[string]bool   // keys opened and not stopped since (OpenKeysOnly)
	eras   map[string]string // server → the revision it was last opened at (era.go, noteEra)
	closed bool
}

// slotKey names one child: a server, for one caller key.
type slotKey struct{ key, server string }

// slot is the life of one server across restarts.
type slot struct {
	sess     *Session      // the live session, or nil
	starting *startAttempt // non-nil while a start is under way
	lastErr  error         // why the last start failed or the last session died
	failures int           // consecutive failed starts or early crashes
	retryAt  time.Time     // no new start before this
	crashed  bool          // the last session died without being stopped: the next start is a restart
}

// startAttempt is one start of a server, shared by everyone waiting for it.
type startAttempt struct {
	done chan struct{} // closed when the attempt has ended
	err  error         // why it failed; written before done is closed
}

// upstreamWriteTimeout is how long an upstream may leave its input unread
// while the gate has messages for it.
const upstreamWriteTimeout = 30 * time.Second

// NewPool returns a Pool for the given servers. Nothing is started.
func NewPool(configs []Config, opts PoolOptions) *Pool {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	p := &Pool{
		opts:    opts,
		configs: map[string]Config{},
		log:     opts.Logger,
		slots:   map[slotKey]*slot{},
		open:    map[string]bool{},
		eras:    map[string]string{},
		stopIdl: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, c := range configs {
		p.configs[c.Name] = c
		p.names = append(p.names, c.Name)
	}
	if opts.IdleTimeout > 0 {
		go p.reapIdle()
	}
	return p
}

// Names returns the configured server keys, sorted.
func (p *Pool) Names() []string { return p.names }

// Has reports whether server is configured.
func (p *Pool) Has(server string) bool {
	_, ok := p.configs[server]
	return ok
}

// LastError returns why the last start of server's child of key failed or
// its last session died, or nil.
func (p *Pool) LastError(key, server string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl, ok := p.slots[slotKey{key, server}]; ok && sl.sess == nil {
		return sl.lastErr
	}
	return nil
}

// Running returns the sessions that are up now, of every key, without
// starting any; ordered by key, then server.
func (p *Pool) Running() []*Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Session
	for _, sl := range p.slots {
		if s := sl.sess; s != nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *Session) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// RunningFor returns the sessions of key that are up now.
func (p *Pool) RunningFor(key string) []*Session {
	var out []*Session
	for _, s := range p.Running() {
		if s.Key == key {
			out = append(out, s)
		}
	}
	return out
}

// Session returns the running session of server's child of key, starting
// it if needed. However many callers ask at once, a child is started once; the start is bounded by
// StartTimeout and is not abandoned when one caller gives up, since others
// may be waiting for it. After a failed start, or a crash soon after one,
// the server is not retried before a backoff delay; until then Session
// returns the last error.
func (p *Pool) Session(ctx context.Context, key, server string) (*Session, error) {
	cfg, ok := p.configs[server]
	if !ok {
		return nil, fmt.Errorf("no upstream server named %q", server)
	}
	for {
		// A caller that has given up starts nothing: the start would go on
		// without it, for nobody.
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errors.New("the gate is shutting down")
		}
		if p.opts.OpenKeysOnly && !p.open[key] {
			p.mu.Unlock()
			return nil, fmt.Errorf("upstream %q: no caller holds key %q any more, so no child is started for it", server, key)
		}
		sl := p.slots[slotKey{key, server}]
		if sl == nil {
			sl = &slot{}
			p.slots[slotKey{key, server}] = sl
		}
		if s := sl.sess; s != nil {
			select {
			case <-s.Done():
				// Dead, and its watcher has not caught up yet: never hand
				// out a session that can only fail.
				p.retireLocked(sl, s)
			default:
				p.mu.Unlock()
				return s, nil
			}
		}
		if a := sl.starting; a != nil {
			p.mu.Unlock()
			select {
			case <-a.done:
				if a.err != nil {
					return nil, a.err
				}
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		if now := time.Now(); now.Before(sl.retryAt) {
			retryAt, lastErr := sl.retryAt, sl.lastErr
			p.mu.Unlock()
			if err := p.awaitRetry(ctx, server, retryAt, lastErr); err != nil {
				return nil, err
			}
			continue
		}
		a := &startAttempt{done: make(chan struct{})}
		sl.starting = a
		p.starts.Add(1)
		p.mu.Unlock()
		// The start runs on its own goroutine and this caller waits for it
		// like any other: one that gives up returns at once, and the start
		// goes on for the others.
		go p.runStart(sl, key, cfg, a)
		// Wait for this attempt itself: coming back round the loop after a
		// quick failure would report the backoff, not why it failed.
		select {
		case <-a.done:
			if a.err != nil {
				return nil, a.err
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// runStart starts cfg's server for the attempt a and settles its slot.
func (p *Pool) runStart(sl *slot, key string, cfg Config, a *startAttempt) {
	defer p.starts.Done()
	s, err := p.startPreferring(key, cfg) // era.go
	p.noteEra(cfg, s, err)

	p.mu.Lock()
	sl.starting = nil
	closed := p.closed
	// Stopped meanwhile (StopKey, Stop): the slot was let go, and a child
	// started for it would have nobody to stop it.
	detached := p.slots[slotKey{key, cfg.Name}] != sl
	switch {
	case closed, detached:
	case err != nil:
		sl.lastErr = err
		sl.failures++
		sl.retryAt = time.Now().Add(backoff(sl.failures))
	default:
		sl.sess = s
		s.Restart, sl.crashed = sl.crashed, false
	}
	p.mu.Unlock()
	switch {
	case closed:
		if err == nil {
			// Stopped before done is closed, so that Close, which waits for
			// starts, leaves no process behind.
			s.conn.CloseWithError(errors.New("the gate is shutting down"))
			s.up.Stop(p.opts.StopGrace)
		}
		err = errors.New("the gate is shutting down")
	case detached:
		if err == nil {
			s.conn.CloseWithError(errors.New("stopped while starting"))
			s.up.Stop(p.opts.StopGrace)
		}
		err = fmt.Errorf("upstream %q was stopped while starting", cfg.Name)
	case err != nil:
		p.log.Error("upstream failed to start", "server", cfg.Name, "key", key, "error", err)
		err = fmt.Errorf("upstream %q failed to start: %w", cfg.Name, err)
	}
	a.err = err
	close(a.done)
	if err != nil {
		return
	}
	p.log.Info("upstream started", "server", cfg.Name, "key", key, "protocol_version", s.ProtocolVersion, "startup_ms", time.Since(s.started).Milliseconds())
	p.watchers.Add(1) // before starts.Done, so Close's wait sees it
	go func() {
		defer p.watchers.Done()
		p.watch(sl, s)
	}()
	if p.opts.OnStart != nil {
		go p.opts.OnStart(s)
	}
}

func backoff(failures int) time.Duration {
	d := time.Second << min(failures-1, 5)
	return min(d, 30*time.Second)
}

func (p *Pool) start(key string, cfg Config, era string) (*Session, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.StartTimeout)
	defer cancel()
	proc, err := p.opts.Launcher.Launch(ctx, cfg, rpc.Limits{
		MaxMessageBytes: p.opts.MaxMessageBytes,
		// A server that stops reading its input is as good as dead: the
		// transport reports it, and the Conn ends the session (its calls
		// fail with the reason) rather than let every caller queue behind
		// it.
		WriteTimeout: upstreamWriteTimeout,
		// A line with no end, or part of a message and then silence, leaves
		// every call to the server hanging: the transport ends instead
		// (rpc.FramingError), and the server is restarted on next need.
		MaxSkipBytes: endlessLine(p.opts.MaxMessageBytes),
		ReadStall:    p.readStall(),
		// Its large results are read no faster than the host is given
		// them (rpc.Limits.PaceLargeLines).
		PaceLargeLines: true,
	})
	if err != nil {
		return nil, err
	}
	s := &Session{Name: cfg.Name, Key: key, up: proc, started: time.Now()}
	s.lastUsed.Store(time.Now().UnixNano())
	var h rpc.Handler = rejectAll{}
	if p.opts.Handler != nil {
		if hh := p.opts.Handler(key, cfg.Name); hh != nil {
			h = hh
		}
	}
	s.conn = rpc.New(proc, countingHandler{s: s, h: h}, rpc.Options{
		Peer:   fmt.Sprintf("upstream %q", cfg.Name),
		Logger: p.log.With("server", cfg.Name, "key", key),
		// The stream ending, or a write failing, usually means the process
		// died: wait a moment for its exit status and stderr, which explain
		// far more than "EOF" or "closed pipe".
		EndCause: func(err error) error {
			select {
			case <-proc.Exited():
				return fmt.Errorf("the server exited: %w", proc.ExitErr())
			case <-time.After(2 * time.Second):
				if errors.Is(err, io.EOF) {
					return fmt.Errorf("the server closed its output: %w", err)
				}
				return err
			}
		},
	})
	go func() {
		_ = s.conn.Run(context.Background())
		proc.Stop(p.opts.StopGrace)
	}()
	go func() {
		// A process that exits while its output is still held open (by a
		// grandchild) must still end the session.
		<-proc.Exited()
		s.conn.CloseWithError(fmt.Errorf("the server exited: %w", proc.ExitErr()))
	}()
	var params json.RawMessage
	if p.opts.InitParams != nil {
		params = p.opts.InitParams(key, cfg.Name)
	}
	initErr := make(chan error, 1)
	go func() { initErr <- s.handshake(ctx, era, params) }() // era.go
	select {
	case err = <-initErr:
	case <-s.conn.Done():
		err = s.conn.Cause()
		if s.probing.Load() {
			err = fmt.Errorf("%w: %w", errProbeEnded, err)
		}
	case <-ctx.Done():
		// The initialize request may not even be written yet: a server
		// that does not read its input blocks the write, not the Call.
		err = context.Cause(ctx)
	}
	if err == nil {
		return s, nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer to initialize within %s", p.opts.StartTimeout)
	}
	s.conn.CloseWithError(err)
	proc.Stop(p.opts.StopGrace)
	return nil, err
}

// watch waits for a session to end and clears its slot.
func (p *Pool) watch(sl *slot, s *Session) {
	<-s.Done()
	p.mu.Lock()
	p.retireLocked(sl, s)
	p.mu.Unlock()
	var err error
	if !s.deliberate.Load() {
		err = s.Err()
		p.log.Error("upstream exited", "server", s.Name, "key", s.Key, "error", err)
	} else {
		p.log.Info("upstream stopped", "server", s.Name, "key", s.Key, "why", s.Err())
	}
	if p.opts.OnExit != nil {
		p.opts.OnExit(s, err)
	}
}

// retireLocked takes an ended session out of its slot, once, and accounts
// for a crash. Both the session's watcher and a caller that finds it dead
// first may call it. The caller holds p.mu.
func (p *Pool) retireLocked(sl *slot, s *Session) {
	if sl.sess != s {
		return
	}
	sl.sess = nil
	if s.deliberate.Load() {
		return
	}
	sl.lastErr = s.Err()
	sl.crashed = true
	// A server that crashes right after starting is crash-looping: back
	// off. One that ran a while is simply restarted on next need.
	if time.Since(s.started) < 10*time.Second {
		sl.failures++
		sl.retryAt = time.Now().Add(backoff(sl.failures))
	} else {
		sl.failures = 0
	}
}

// Stop stops server's children, of every key.
func (p *Pool) Stop(server string, why string) {
	p.stop(func(k slotKey) bool { return k.server == server }, why)
}

// OpenKey lets Session start children for key (OpenKeysOnly); until
// StopKey, and again after the next OpenKey.
func (p *Pool) OpenKey(key string) {
	p.mu.Lock()
	p.open[key] = true
	p.mu.Unlock()
}

// StopKey stops every child of key (its callers are gone), including one
// still starting, and forgets their slots: the next Session for key starts
// afresh, and with OpenKeysOnly only once key is opened again.
func (p *Pool) StopKey(key string, why string) {
	p.mu.Lock()
	delete(p.open, key) // first: a Session after this is refused, one before it has its slot stopped below
	p.mu.Unlock()
	p.stop(func(k slotKey) bool { return k.key == key }, why)
}

// stop lets go of the matching slots at once, so that a Session call
// after it starts a new child, and stops their children on their own
// goroutines (Close waits for them): a caller may hold its own lock.
func (p *Pool) stop(match func(slotKey) bool, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return // Close stops them all
	}
	for k, sl := range p.slots {
		if !match(k) {
			continue
		}
		delete(p.slots, k) // a start under way sees it and stops what it started
		s := sl.sess
		if s == nil {
			continue
		}
		s.deliberate.Store(true)
		p.stopping.Add(1)
		go func() {
			defer p.stopping.Done()
			s.conn.CloseWithError(errors.New(why))
			s.up.Stop(p.opts.StopGrace)
		}()
	}
}

// Close stops every server and waits for them to exit.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stopIdl)
	p.cancel() // starts under way give up and stop what they launched
	var running []*Session
	for _, sl := range p.slots {
		if sl.sess != nil {
			sl.sess.deliberate.Store(true)
			running = append(running, sl.sess)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.conn.CloseWithError(errors.New("the gate is shutting down"))
			s.up.Stop(p.opts.StopGrace)
		}()
	}
	wg.Wait()
	p.starts.Wait()
	p.stopping.Wait()
	// Nothing of the pool (a log line, OnExit) may outlive Close.
	p.watchers.Wait()
}

func (p *Pool) reapIdle() {
	every := max(p.opts.IdleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stopIdl:
			return
		case now := <-t.C:
			for _, s := range p.Running() {
				if s.idleFor(now) >= p.opts.IdleTimeout {
					p.retireIdle(s)
				}
			}
		}
	}
}

// retireIdle stops an idle session. It leaves the slot first, so that a call
// arriving meanwhile starts a fresh process instead of racing the stop, and
// lets anything that slipped in finish before the process is stopped.
func (p *Pool) retireIdle(s *Session) {
	p.mu.Lock()
	sl := p.slots[slotKey{s.Key, s.Name}]
	if sl == nil || sl.sess != s || s.inflight.Load() > 0 {
		p.mu.Unlock()
		return
	}
	s.deliberate.Store(true)
	sl.sess = nil
	p.mu.Unlock()
	deadline := time.Now().Add(p.opts.StopGrace)
	for s.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.conn.CloseWithError(fmt.Errorf("stopped after %s idle", p.opts.IdleTimeout))
	s.up.Stop(p.opts.StopGrace)
}

// rejectAll answers every upstream request with "method not found".
type rejectAll struct{}

func (rejectAll) HandleCall(_ context.Context, req *rpc.Message) (json.RawMessage, error) {
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method %q is not supported", req.Method)
}

func (rejectAll) HandleNotification(*rpc.Message) {}
