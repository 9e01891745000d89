//go:build linux

package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openLog opens a file for appending as the gate opens --audit-log.
func openLog(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|flag, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// localDir is a directory on a filesystem whose writes are raw, or the
// test is skipped.
func localDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || !localFS[uint32(fs.Type)] {
		t.Skipf("the temporary directory is not on a local filesystem this test knows (statfs type %#x)", fs.Type)
	}
	return dir
}

// A file on a local filesystem gets raw writes, and gets exactly the
// lines an announced write would have appended, after what it held.
func TestAuditFileWritesRaw(t *testing.T) {
	path := filepath.Join(localDir(t), "audit.jsonl")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := New(openLog(t, path, 0))
	if _, ok := a.w.w.(*rawFile); !ok {
		t.Fatalf("the audit file is written with %T, want *rawFile", a.w.w)
	}
	var want bytes.Buffer
	b := New(&want)
	for i := range 3 {
		d := Decision{ID: "s-" + string(rune('1'+i)), Server: "echo", Tool: "echo", Verdict: "allow", Reason: "allowed by rule r"}
		a.Decision(d)
		b.Decision(d)
	}
	a.Slog().Info("through slog", KeyEvent, EventOther)
	b.Slog().Info("through slog", KeyEvent, EventOther)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("earlier\n")) {
		t.Fatalf("the file lost what it held: %q", got)
	}
	got = got[len("earlier\n"):]
	// The records differ in their time only.
	gl, wl := bytes.Split(bytes.TrimSpace(got), []byte("\n")), bytes.Split(bytes.TrimSpace(want.Bytes()), []byte("\n"))
	if len(gl) != len(wl) {
		t.Fatalf("%d lines written, want %d:\n%s", len(gl), len(wl), got)
	}
	for i := range gl {
		var g, w map[string]any
		if err := json.Unmarshal(gl[i], &g); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, gl[i])
		}
		if err := json.Unmarshal(wl[i], &w); err != nil {
			t.Fatal(err)
		}
		delete(g, "time")
		delete(w, "time")
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("line %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

// Where a write may wait (a file opened O_SYNC or O_DSYNC, whose every
// write waits for the disk; anything that is not a file), the runtime is
// told of it: os.File.Write, or the writer itself.
func TestAuditWritesAnnouncedWhereTheyMayWait(t *testing.T) {
	dir := localDir(t)
	for name, flag := range map[string]int{"O_SYNC": syscall.O_SYNC, "O_DSYNC": syscall.O_DSYNC} {
		f := openLog(t, filepath.Join(dir, name), flag)
		if got := fileWriter(f); got != f {
			t.Errorf("a file opened %s is written with %T, want the *os.File itself", name, got)
		}
	}
	var buf bytes.Buffer
	if got := fileWriter(&buf); got != &buf {
		t.Errorf("a buffer is written with %T, want itself", got)
	}
}

// A pipe (stderr) is written raw through a non-blocking description of
// its own: the pipe's own description, which other processes share, stays
// blocking; a pipe with no room makes the writer wait (in the netpoller)
// until the reader drains it, and every line arrives whole and in order.
func TestAuditPipeWritesWaitForRoom(t *testing.T) {
	// A blocking pipe, as a host hands the gate its stderr (os.Pipe's
	// are non-blocking already).
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	defer r.Close()
	defer w.Close()
	a := New(w)
	rf, ok := a.w.w.(*rawFile)
	if !ok {
		t.Fatalf("a pipe is written with %T, want *rawFile", a.w.w)
	}
	if rf.f == w || rf.timed {
		t.Fatalf("a pipe's rawFile writes the pipe's own description (%v) or is timed (%v)", rf.f == w, rf.timed)
	}
	var flags uintptr
	rc, _ := w.SyscallConn()
	rc.Control(func(fd uintptr) { flags, _, _ = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0) })
	if flags&syscall.O_NONBLOCK != 0 {
		t.Fatal("the pipe's shared description was made non-blocking")
	}
	// More than the pipe holds (64 KiB by default), with nobody reading
	// yet: the writer must wait, not fail or drop.
	const n = 400
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			a.Decision(Decision{ID: fmt.Sprintf("p-%d", i), Reason: strings.Repeat("x", 300)})
		}
	}()
	select {
	case <-done:
		t.Fatal("400 records of 500 bytes went into a pipe nobody read")
	case <-time.After(100 * time.Millisecond):
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for i := range n {
		if !sc.Scan() {
			t.Fatalf("line %d: %v", i, sc.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not whole: %v", i, err)
		}
		if m["decision_id"] != fmt.Sprintf("p-%d", i) {
			t.Fatalf("line %d is %v", i, m["decision_id"])
		}
	}
	<-done
}

// A record written after the file was closed fails as os.File.Write does;
// it never reaches a file that was given the closed one's descriptor.
func TestAuditRawWriteAfterClose(t *testing.T) {
	dir := localDir(t)
	f := openLog(t, filepath.Join(dir, "audit.jsonl"), 0)
	fd := f.Fd()
	a := New(f)
	f.Close()
	other := openLog(t, filepath.Join(dir, "other"), 0)
	if other.Fd() != fd {
		t.Logf("the descriptor was not reused (%d, then %d); the write must fail all the same", fd, other.Fd())
	}
	if _, err := a.w.Write([]byte("{}\n")); err == nil {
		t.Error("a write after Close succeeded")
	}
	a.Decision(Decision{ID: "late"})
	if b, _ := os.ReadFile(filepath.Join(dir, "other")); len(b) != 0 {
		t.Fatalf("a record reached another file through a reused descriptor: %q", b)
	}
}

// Raw writes that took long, slowWrites in a row, turn raw writes off:
// the next records are announced, and still written. A fast write in
// between starts the count again.
func TestAuditSlowRawWriteAnnouncesLaterOnes(t *testing.T) {
	path := filepath.Join(localDir(t), "audit.jsonl")
	defer func(d time.Duration) { slowWrite = d }(slowWrite)
	slowWrite = -1 // every write is "slow"
	a := New(openLog(t, path, 0))
	rf, ok := a.w.w.(*rawFile)
	if !ok {
		t.Fatalf("the audit file is written with %T, want *rawFile", a.w.w)
	}
	for i := range slowWrites {
		if rf.announced.Load() {
			t.Fatalf("raw writes turned off after %d slow writes, want %d in a row", i, slowWrites)
		}
		a.Decision(Decision{ID: fmt.Sprint(i)})
	}
	if !rf.announced.Load() {
		t.Fatalf("%d slow raw writes in a row left raw writes on", slowWrites)
	}
	a.Decision(Decision{ID: "announced"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != slowWrites+1 {
		t.Fatalf("%d records written, want %d: %s", n, slowWrites+1, b)
	}
}

func TestAuditFastWriteResetsSlowCount(t *testing.T) {
	path := filepath.Join(localDir(t), "audit.jsonl")
	defer func(d time.Duration) { slowWrite = d }(slowWrite)
	a := New(openLog(t, path, 0))
	rf := a.w.w.(*rawFile)
	for i := range 3 * slowWrites {
		slowWrite = -1 // slow
		if i%slowWrites == slowWrites-1 {
			slowWrite = time.Hour // fast: the count starts again
		}
		a.Decision(Decision{ID: fmt.Sprint(i)})
	}
	if rf.announced.Load() {
		t.Fatal("slow writes with a fast one between every few turned raw writes off")
	}
}

// A stderr pipe whose reader is gone ends the process with SIGPIPE, as a
// write to os.Stderr did before stderr was written raw: a gate whose audit
// goes to stderr does not go on with its records lost.
func TestAuditStderrClosedPipeEndsTheProcess(t *testing.T) {
	if os.Getenv("AUDIT_STDERR_CHILD") == "1" {
		a := New(os.Stderr)
		if _, ok := a.w.w.(*rawFile); !ok {
			os.Exit(3) // not the raw path: nothing to test
		}
		os.NewFile(3, "reader").Close() // the last reader goes
		a.Decision(Decision{ID: "after-the-reader-went"})
		os.Exit(4) // survived the write
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAuditStderrClosedPipeEndsTheProcess$")
	cmd.Env = append(os.Environ(), "AUDIT_STDERR_CHILD=1")
	cmd.Stderr = w
	cmd.ExtraFiles = []*os.File{r}
	err := cmd.Start()
	r.Close()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the child ended with %v, want SIGPIPE", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("the child ended with %v (exit %d), want SIGPIPE", err, ws.ExitStatus())
	}
}

// A pipe nobody reads (a FIFO whose log shipper stalled, a host that
// stopped reading stderr) fails a record once it has waited pipeWait for
// room, so that its call is refused rather than held for ever with the
// log's lock; once the reader drains the pipe, records are written again
// and every line that got through is whole.
func TestAuditPipeNobodyReadsFailsInTime(t *testing.T) {
	defer func(w time.Duration) { pipeWait = w }(pipeWait)
	pipeWait = 200 * time.Millisecond
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
	defer r.Close()
	defer w.Close()
	a := New(w)
	failed := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := a.Decision(Decision{ID: fmt.Sprintf("p-%d", i), Reason: strings.Repeat("x", 300)}); err != nil {
				failed <- err
				return
			}
		}
	}()
	select {
	case err := <-failed:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the record failed with %v; want its wait's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a record waited 10 s for a pipe nobody read")
	}
	// The reader comes back: the next record is written, after a line
	// break should the failed one have been torn. (It is written once the
	// reader has taken something: while the pipe is stalled and full, a
	// record fails at once, TestAuditPipeStallBoundsABurst.)
	lines := make(chan []string, 1)
	back := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		var got []string
		for sc.Scan() {
			if got == nil {
				close(back)
			}
			got = append(got, sc.Text())
			if strings.Contains(sc.Text(), `"decision_id":"after"`) {
				break
			}
		}
		lines <- got
	}()
	<-back
	if err := a.Decision(Decision{ID: "after"}); err != nil {
		t.Fatalf("a record once the reader is back: %v", err)
	}
	got := <-lines
	if last := got[len(got)-1]; !strings.HasPrefix(last, "{") || !json.Valid([]byte(last)) {
		t.Fatalf("the record after the failure is not a line of its own: %q", last)
	}
}

// An audit FIFO nobody has open for reading (the log shipper not
// running) fails the gate's start within fifoWait, saying why, instead of
// the open waiting for ever; one with a reader is written as a pipe.
func TestAuditFIFOWithoutReaderFailsTheStart(t *testing.T) {
	defer func(w time.Duration) { fifoWait = w }(fifoWait)
	fifoWait = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		_, closeFile, err := OpenFile(path)
		if err == nil {
			closeFile()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err == nil || !strings.Contains(err.Error(), "no process read the FIFO") {
			t.Fatalf("opening a FIFO nobody reads: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO nobody reads waited 10 s")
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, closeFile, err := OpenFile(path)
	if err != nil {
		t.Fatalf("a FIFO with a reader: %v", err)
	}
	defer closeFile()
	if err := a.Decision(Decision{ID: "fifo-1"}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := r.Read(buf)
	if !strings.Contains(string(buf[:n]), `"decision_id":"fifo-1"`) {
		t.Fatalf("the FIFO's reader got %q", buf[:n])
	}
}
