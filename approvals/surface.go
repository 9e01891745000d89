package approvals

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// Surface is one gate's local approval surface: its socket and its open
// questions. It implements elicitation.Approver. Safe for concurrent use.
type Surface struct {
	ln    *net.UnixListener
	path  string
	log   *slog.Logger
	guard guardian
	// Notify, when set, is called (in its own goroutine) as each question
	// is asked, e.g. for a desktop notification; it never sees the id.
	Notify func(q Question)

	mu       sync.Mutex
	open     map[string]*question
	watchers map[chan Event]struct{}
	closed   bool
	done     chan struct{}
	wg       sync.WaitGroup
}

type question struct {
	Question
	answer chan elicitation.Outcome // buffered 1: the first answer wins
}

// Listen opens this gate's socket in dir (RuntimeDir when dir is "") and
// starts answering on it until Close.
func Listen(dir string, log *slog.Logger) (*Surface, error) {
	return listen(dir, log, newGuardian())
}

// Ancestry is the gate's process ancestry as the surface protects it (see
// guardian), recorded when it was taken.
type Ancestry struct{ g guardian }

// TakeAncestry records the gate's ancestry now. A gate that opens its
// surface only when it first needs it takes its ancestry at its start, so
// that what is refused is decided on the process tree the host started,
// not on one that has changed since (a wrapper between the host and the
// gate that has exited, leaving the gate to init).
func TakeAncestry() Ancestry { return Ancestry{newGuardian()} }

// Listen is the package's Listen with the ancestry taken earlier.
func (a Ancestry) Listen(dir string, log *slog.Logger) (*Surface, error) {
	return listen(dir, log, a.g)
}

func listen(dir string, log *slog.Logger, guard guardian) (*Surface, error) {
	if !peerChecks {
		return nil, errNoPeerCredCheck
	}
	if dir == "" {
		d, err := RuntimeDir()
		if err != nil {
			return nil, err
		}
		dir = d
	} else if err := checkDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "gate-"+strconv.Itoa(os.Getpid())+"-"+randomID()[:8]+".sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("approvals: listening on %s: %w", path, err)
	}
	// The directory is 0700 already; the socket is the user's alone too.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("approvals: %w", err)
	}
	s := &Surface{ln: ln, path: path, log: log, guard: guard,
		open: map[string]*question{}, watchers: map[chan Event]struct{}{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

var errNoPeerCredCheck = errors.New("approvals: the local approval surface needs Linux peer credentials to tell the human from the model; it is off on this system")

// Path is the socket's path.
func (s *Surface) Path() string { return s.path }

// Close stops answering, removes the socket, and fails every open
// question.
func (s *Surface) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	err := s.ln.Close() // removes the socket file (net unlinks on close)
	s.wg.Wait()
	return err
}

// randomID returns 128 random bits in hex: a question's id cannot be
// guessed.
func randomID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b[:])
}

// Approve implements elicitation.Approver: the question waits on the
// socket for an answer, at most timeout.
func (s *Surface) Approve(ctx context.Context, req elicitation.Request, timeout time.Duration) elicitation.Answer {
	if timeout <= 0 {
		timeout = elicitation.DefaultTimeout
	}
	start := time.Now()
	q := &question{answer: make(chan elicitation.Outcome, 1)}
	q.Question = Question{
		ID: randomID(), GatePID: os.Getpid(), Session: req.Session, Server: elicitation.Quote(req.Server), Tool: elicitation.Quote(req.Tool),
		Rule: req.Rule, ArgsDigest: req.ArgsDigest, Message: elicitation.Message(req), Asked: start, Expires: start.Add(timeout),
	}
	if req.Client != "" {
		q.Client = elicitation.Quote(req.Client)
	}
	if req.User != "" {
		q.User = elicitation.Quote(req.User)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return elicitation.Answer{Outcome: elicitation.Failed, Detail: "the local approval surface is closed"}
	}
	s.open[q.ID] = q
	s.broadcast(Event{Event: "asked", Question: &q.Question})
	s.mu.Unlock()
	// The log names what waits and where to look, never the id: the host
	// may read the gate's stderr.
	s.log.Info("a tool call waits for approval on the local approval surface", "server", req.Server, "tool", req.Tool, "rule", req.Rule, "args_digest", req.ArgsDigest, "timeout", timeout)
	if s.Notify != nil {
		go s.Notify(q.Question)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var a elicitation.Answer
	select {
	case o := <-q.answer:
		a.Outcome = o
		switch o {
		case elicitation.Approved:
			a.Detail = "approved by the user on the local approval surface"
		case elicitation.ApprovedSession:
			a.Detail = "approved by the user on the local approval surface, for this session"
		default:
			a.Detail = "the user answered no on the local approval surface"
		}
	case <-timer.C:
		a = elicitation.Answer{Outcome: elicitation.TimedOut, Detail: fmt.Sprintf("no answer within %s on the local approval surface", timeout)}
	case <-ctx.Done():
		a = elicitation.Answer{Outcome: elicitation.Withdrawn, Detail: "the call was cancelled while the question was open"}
	case <-s.done:
		a = elicitation.Answer{Outcome: elicitation.Failed, Detail: "the local approval surface closed while the question was open"}
	}
	a.Took = time.Since(start)
	s.mu.Lock()
	delete(s.open, q.ID)
	s.broadcast(Event{Event: "closed", ID: q.ID, Outcome: string(a.Outcome)})
	s.mu.Unlock()
	return a
}

// broadcast sends e to every watcher that keeps up; one that does not is
// dropped (its channel closed) rather than allowed to delay a question.
// s.mu is held.
func (s *Surface) broadcast(e Event) {
	for ch := range s.watchers {
		select {
		case ch <- e:
		default:
			delete(s.watchers, ch)
			close(ch)
		}
	}
}

func (s *Surface) list() []Question {
	out := make([]Question, 0, len(s.open))
	for _, q := range s.open {
		out = append(out, q.Question)
	}
	slices.SortFunc(out, func(a, b Question) int { return a.Asked.Compare(b.Asked) })
	return out
}

func (s *Surface) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			s.log.Warn("local approvals: accept failed", "err", err)
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// serve answers one connection: one request, then its reply (and for
// watch, events until either side closes).
func (s *Surface) serve(c *net.UnixConn) {
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.done:
			c.Close()
		case <-stop:
		}
	}()
	enc := json.NewEncoder(c)
	reply := func(r Reply) { _ = c.SetWriteDeadline(time.Now().Add(10 * time.Second)); _ = enc.Encode(r) }
	pid, uid, err := peerOf(c)
	if err == nil {
		err = s.guard.check(pid, uid)
	}
	if err != nil {
		s.log.Warn("local approvals: a peer was refused", "peer_pid", pid, "peer_uid", uid, "err", err)
		reply(Reply{Error: err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReaderSize(c, 4096).ReadSlice('\n')
	if err != nil {
		reply(Reply{Error: "expected one request line (a JSON object ending in a newline) within 10s, of at most 4096 bytes"})
		return
	}
	req, err := parseRequest(line)
	if err != nil {
		reply(Reply{Error: err.Error()})
		return
	}
	switch req.Op {
	case "list":
		s.mu.Lock()
		qs := s.list()
		s.mu.Unlock()
		reply(Reply{OK: true, Questions: qs})
	case "approve", "deny":
		o := elicitation.Declined
		if req.Op == "approve" {
			switch req.Scope {
			case "", "once":
				o = elicitation.Approved
			case "session":
				o = elicitation.ApprovedSession
			default:
				reply(Reply{Error: fmt.Sprintf("scope is %q; expected once or session", req.Scope)})
				return
			}
		} else if req.Scope != "" {
			reply(Reply{Error: "deny takes no scope"})
			return
		}
		s.mu.Lock()
		q := s.open[req.ID]
		s.mu.Unlock()
		if q == nil {
			reply(Reply{Error: "no open question with this id on this gate"})
			return
		}
		select {
		case q.answer <- o:
			s.log.Info("local approvals: answered", "server", q.Server, "tool", q.Tool, "outcome", string(o), "peer_pid", pid)
			reply(Reply{OK: true})
		default:
			reply(Reply{Error: "this question has already been answered"})
		}
	case "watch":
		ch := make(chan Event, 64)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		qs := s.list()
		s.watchers[ch] = struct{}{}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if _, ok := s.watchers[ch]; ok {
				delete(s.watchers, ch)
			}
			s.mu.Unlock()
		}()
		reply(Reply{OK: true, Questions: qs})
		// A closed peer ends the watch: read until EOF.
		gone := make(chan struct{})
		go func() {
			_ = c.SetReadDeadline(time.Time{})
			var b [1]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					close(gone)
					return
				}
			}
		}()
		for {
			select {
			case e, ok := <-ch:
				if !ok {
					return
				}
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if enc.Encode(e) != nil {
					return
				}
			case <-gone:
				return
			case <-s.done:
				return
			}
		}
	default:
		reply(Reply{Error: fmt.Sprintf("op is %q; expected list, approve, deny or watch", req.Op)})
	}
}

// parseRequest reads one request line: one JSON object, no unknown field,
// nothing after it.
func parseRequest(line []byte) (Request, error) {
	var req Request
	if err := rawjson.DecodeStrict(line, &req); err != nil {
		return Request{}, fmt.Errorf("the request is not valid: %v; expected one object per line, {\"op\":\"list\"|\"approve\"|\"deny\"|\"watch\", ...}", err)
	}
	return req, nil
}
