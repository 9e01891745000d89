//go:build linux

package approvals

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// A runtime directory open to others, or not a directory, is refused.
func TestCheckDir(t *testing.T) {
	d := shortDir(t)
	if err := checkDir(d); err != nil {
		t.Fatalf("a fresh 0700 directory: %v", err)
	}
	open := filepath.Join(d, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	if err := checkDir(open); err == nil || !strings.Contains(err.Error(), "expected 0700") {
		t.Fatalf("0755: %v", err)
	}
	link := filepath.Join(d, "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	if err := checkDir(link); err == nil || !strings.Contains(err.Error(), "expected a directory of yours") {
		t.Fatalf("symlink: %v", err)
	}
	if _, err := Listen(open, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("Listen accepted a directory open to others")
	}
	t.Setenv("XDG_RUNTIME_DIR", d)
	rd, err := RuntimeDir()
	if err != nil || rd != filepath.Join(d, "mcp-gate") {
		t.Fatalf("RuntimeDir = %q, %v", rd, err)
	}
	if fi, _ := os.Stat(rd); fi.Mode().Perm() != 0o700 {
		t.Fatalf("created with %v", fi.Mode())
	}
}

// surface listens with guardian g: open{} lets the test itself talk to it
// (the test is the gate, which the real guardian refuses).
func surface(t *testing.T, g guardian) *Surface {
	t.Helper()
	s, err := listen(shortDir(t), slog.New(slog.DiscardHandler), g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// letTestIn names no gate or host process and no session, so only the
// uid is checked.
var letTestIn = guardian{}

func rawRequest(t *testing.T, path, line string) Reply {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, line)
	var r Reply
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The gate's own process, and what it starts, are refused: the real
// guardian sees the test (the gate) as the peer's ancestor.
func TestGuardianRefusesTheGateItself(t *testing.T) {
	s := surface(t, newGuardian())
	r := rawRequest(t, s.Path(), `{"op":"list"}`+"\n")
	if r.OK || !strings.HasPrefix(r.Error, "refused:") {
		t.Fatalf("the gate's own process was answered: %+v", r)
	}
	if err := s.guard.check(os.Getpid(), os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "uid") {
		t.Fatalf("another uid: %v", err)
	}
}

func TestSurfaceProtocol(t *testing.T) {
	s := surface(t, letTestIn)
	ask := func(timeout time.Duration) (<-chan elicitation.Answer, string) {
		ch := make(chan elicitation.Answer, 1)
		go func() {
			ch <- s.Approve(context.Background(), elicitation.Request{Server: "srv\n", Tool: "t", Args: []byte(`{"a":1}`), ArgsDigest: "d"}, timeout)
		}()
		var id string
		deadline := time.Now().Add(5 * time.Second)
		for id == "" && time.Now().Before(deadline) {
			r := rawRequest(t, s.Path(), `{"op":"list"}`+"\n")
			if len(r.Questions) > 0 {
				id = r.Questions[len(r.Questions)-1].ID
				if r.Questions[0].Server != `"srv\n"` || !strings.Contains(r.Questions[0].Message, `Server: "srv\n"`) {
					t.Errorf("the question is not quoted: %+v", r.Questions[0])
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(id) != 32 {
			t.Fatalf("id %q", id)
		}
		return ch, id
	}
	for _, bad := range []string{
		`{"op":"list","extra":1}` + "\n",
		`{"op":"list"} {"op":"list"}` + "\n",
		`not json` + "\n",
		`{"op":"shutdown"}` + "\n",
		strings.Repeat("x", 5000) + "\n",
		`{"op":"approve","id":"nope"}` + "\n",
		`{"op":"deny","id":"nope","scope":"session"}` + "\n",
	} {
		if r := rawRequest(t, s.Path(), bad); r.OK || r.Error == "" {
			t.Errorf("%.40q was accepted: %+v", bad, r)
		}
	}
	// Approve once; a second answer is refused.
	ch, id := ask(10 * time.Second)
	if r := rawRequest(t, s.Path(), `{"op":"approve","id":"`+id+`","scope":"forever"}`+"\n"); r.OK {
		t.Fatal("an unknown scope was accepted")
	}
	if r := rawRequest(t, s.Path(), `{"op":"approve","id":"`+id+`"}`+"\n"); !r.OK {
		t.Fatalf("approve: %+v", r)
	}
	if a := <-ch; a.Outcome != elicitation.Approved {
		t.Fatalf("answer %+v", a)
	}
	if r := rawRequest(t, s.Path(), `{"op":"deny","id":"`+id+`"}`+"\n"); r.OK {
		t.Fatal("a closed question was answered")
	}
	// Session scope, deny, timeout, withdrawal, close.
	ch, id = ask(10 * time.Second)
	rawRequest(t, s.Path(), `{"op":"approve","id":"`+id+`","scope":"session"}`+"\n")
	if a := <-ch; a.Outcome != elicitation.ApprovedSession {
		t.Fatalf("answer %+v", a)
	}
	ch, id = ask(10 * time.Second)
	rawRequest(t, s.Path(), `{"op":"deny","id":"`+id+`"}`+"\n")
	if a := <-ch; a.Outcome != elicitation.Declined || a.Allowed() {
		t.Fatalf("answer %+v", a)
	}
	if a := s.Approve(context.Background(), elicitation.Request{}, 50*time.Millisecond); a.Outcome != elicitation.TimedOut {
		t.Fatalf("timeout: %+v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := s.Approve(ctx, elicitation.Request{}, time.Second); a.Outcome != elicitation.Withdrawn {
		t.Fatalf("withdrawn: %+v", a)
	}
	ch, _ = ask(10 * time.Second)
	s.Close()
	if a := <-ch; a.Outcome != elicitation.Failed {
		t.Fatalf("closed: %+v", a)
	}
	if _, err := os.Stat(s.Path()); err == nil {
		t.Fatal("the socket outlived Close")
	}
}

// Watch streams the open questions, then each asked and closed.
func TestSurfaceWatch(t *testing.T) {
	s := surface(t, letTestIn)
	c := Client{Dir: filepath.Dir(s.Path())}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan Event, 10)
	go c.Watch(ctx, func(e Event) { events <- e })
	time.Sleep(200 * time.Millisecond)
	done := make(chan elicitation.Answer, 1)
	go func() { done <- s.Approve(context.Background(), elicitation.Request{Tool: "w"}, 10*time.Second) }()
	e := <-events
	if e.Event != "asked" || e.Question == nil {
		t.Fatalf("first event %+v", e)
	}
	if err := c.Answer("deny", e.Question.ID, ""); err != nil {
		t.Fatal(err)
	}
	e = <-events
	if e.Event != "closed" || e.Outcome != string(elicitation.Declined) {
		t.Fatalf("second event %+v", e)
	}
	<-done
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"op":"list"}`, `{"op":"approve","id":"ab","scope":"session"}`, `{"op":"deny","id":"x"} x`, `{"op":"watch","op":"list"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := parseRequest(line)
		// Invalid UTF-8 becomes U+FFFD, three bytes for one.
		if err == nil && len(req.Op)+len(req.ID)+len(req.Scope) > 3*len(line) {
			t.Fatal("a request larger than its line")
		}
		if err == nil {
			if _, err2 := parseRequest(append(append([]byte{}, line...), " x"...)); err2 == nil {
				t.Fatal("a request with more after it was accepted")
			}
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("123 (sh) S 1 123 123 0 -1 4194560"))
	f.Add([]byte("7 (a) b) S 5 7 9 0"))
	f.Add([]byte("7 (x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = parseStat(1, b)
	})
}

// A socket nobody listens on (a gate that crashed) is skipped, and the
// live gate beside it is still listed.
func TestClientSkipsStaleSockets(t *testing.T) {
	s := surface(t, letTestIn)
	dir := filepath.Dir(s.Path())
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "gate-1-dead.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	go s.Approve(context.Background(), elicitation.Request{Tool: "x"}, 5*time.Second)
	c := Client{Dir: dir}
	var qs []Question
	deadline := time.Now().Add(5 * time.Second)
	for len(qs) == 0 && time.Now().Before(deadline) {
		var errs []error
		qs, errs = c.List()
		if len(errs) > 0 {
			t.Fatalf("a stale socket is an error: %v", errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(qs) != 1 {
		t.Fatalf("listed %d questions, want 1", len(qs))
	}
	if err := c.Answer("deny", qs[0].ID, ""); err != nil {
		t.Fatal(err)
	}
}
