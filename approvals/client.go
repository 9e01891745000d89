package approvals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Client talks to every gate of this user: the sockets in its runtime
// directory. A socket nobody listens on (a gate that crashed) is skipped.
type Client struct {
	Dir string // RuntimeDir when ""
}

func (c Client) dir() (string, error) {
	if c.Dir != "" {
		return c.Dir, checkDir(c.Dir)
	}
	return RuntimeDir()
}

// Sockets lists the gates' sockets.
func (c Client) Sockets() ([]string, error) {
	dir, err := c.dir()
	if err != nil {
		return nil, err
	}
	m, err := filepath.Glob(filepath.Join(dir, "gate-*.sock"))
	if err != nil {
		return nil, err
	}
	sort.Strings(m)
	return m, nil
}

// errStale marks a socket no gate listens on.
var errStale = errors.New("no gate listens on this socket")

func dial(path string) (net.Conn, error) {
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (%v)", filepath.Base(path), errStale, err)
	}
	return conn, nil
}

// roundTrip sends one request and reads its reply.
func roundTrip(path string, req Request) (Reply, error) {
	conn, err := dial(path)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := json.Marshal(req)
	// A gate that refuses this process answers before reading the
	// request and closes: its reply is still there to read.
	_, werr := conn.Write(append(b, '\n'))
	var r Reply
	if err := readLine(bufio.NewReaderSize(conn, 64*1024), &r); err != nil {
		if werr != nil {
			err = werr
		}
		return Reply{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return r, nil
}

func readLine(br *bufio.Reader, v any) error {
	var line []byte
	for {
		part, isPrefix, err := br.ReadLine()
		if err != nil {
			return err
		}
		line = append(line, part...)
		if len(line) > maxLine {
			return fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		if !isPrefix {
			break
		}
	}
	return json.Unmarshal(line, v)
}

// List returns the open questions of every gate, oldest first, and the
// problems met on the way (a gate that refused this process, say); stale
// sockets are skipped silently.
func (c Client) List() ([]Question, []error) {
	socks, err := c.Sockets()
	if err != nil {
		return nil, []error{err}
	}
	var qs []Question
	var errs []error
	for _, p := range socks {
		r, err := roundTrip(p, Request{Op: "list"})
		switch {
		case errors.Is(err, errStale):
		case err != nil:
			errs = append(errs, err)
		case !r.OK:
			errs = append(errs, fmt.Errorf("%s: %s", filepath.Base(p), r.Error))
		default:
			qs = append(qs, r.Questions...)
		}
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].Asked.Before(qs[j].Asked) })
	return qs, errs
}

// Answer approves (op "approve", scope once or session) or denies (op
// "deny") the question id, on whichever gate holds it.
func (c Client) Answer(op, id, scope string) error {
	socks, err := c.Sockets()
	if err != nil {
		return err
	}
	var problems []string
	for _, p := range socks {
		r, err := roundTrip(p, Request{Op: op, ID: id, Scope: scope})
		switch {
		case errors.Is(err, errStale):
		case err != nil:
			problems = append(problems, err.Error())
		case r.OK:
			return nil
		case r.Error != "no open question with this id on this gate":
			problems = append(problems, r.Error)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return fmt.Errorf("no gate of yours has an open question %q (answered, timed out or withdrawn already?)", id)
}

// Watch calls fn with every gate's open questions as "asked" events and
// then with each event as it happens, until ctx is done. Gates started
// later are picked up within a second. fn is called from one goroutine at
// a time.
func (c Client) Watch(ctx context.Context, fn func(Event)) error {
	var mu sync.Mutex
	emit := func(e Event) { mu.Lock(); defer mu.Unlock(); fn(e) }
	watching := map[string]bool{}
	var wmu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		socks, err := c.Sockets()
		if err != nil {
			return err
		}
		for _, p := range socks {
			wmu.Lock()
			if watching[p] {
				wmu.Unlock()
				continue
			}
			watching[p] = true
			wmu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := watchOne(ctx, p, emit)
				if err != nil && !errors.Is(err, errStale) && ctx.Err() == nil {
					emit(Event{Event: "error", Outcome: err.Error()})
				}
				if errors.Is(err, errStale) || err == nil {
					wmu.Lock()
					delete(watching, p) // try again on the next scan
					wmu.Unlock()
				}
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func watchOne(ctx context.Context, path string, emit func(Event)) error {
	conn, err := dial(path)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, _ := json.Marshal(Request{Op: "watch"})
	_, _ = conn.Write(append(b, '\n')) // a refusal is read below
	br := bufio.NewReaderSize(conn, 64*1024)
	var r Reply
	if err := readLine(br, &r); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if !r.OK {
		return fmt.Errorf("%s: %s", filepath.Base(path), r.Error)
	}
	for i := range r.Questions {
		emit(Event{Event: "asked", Question: &r.Questions[i]})
	}
	for {
		var e Event
		if err := readLine(br, &e); err != nil {
			return nil // the gate went away, or ctx ended the watch
		}
		emit(e)
	}
}
