package rpc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// fdFlags returns the status flags of our descriptor fd (F_GETFL).
func fdFlags(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatalf("F_GETFL: %v", errno)
	}
	return int(flags)
}

// procFlags returns the status flags of another process's descriptor, as
// its /proc fdinfo shows them.
func procFlags(t *testing.T, pid, fd int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("no flags in fdinfo %d of process %d: %q", fd, pid, b)
	return 0
}

// blockingPipe returns a pipe whose descriptions are blocking, as a host's
// pipes usually are (os.Pipe's are not: the runtime makes them pollable).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// holdInChild starts a process that holds f (the same open file
// description) as its fd 0 or 1 until the test ends.
func holdInChild(t *testing.T, f *os.File, asStdout bool) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep command to hold the pipe in another process: %v", err)
	}
	cmd := exec.Command(sleep, "60")
	if asStdout {
		cmd.Stdout = f
	} else {
		cmd.Stdin = f
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// assertPollable checks that f's reads wait in the netpoller: only a
// pollable file takes a deadline, and a pending read ends when it passes.
func assertPollable(t *testing.T, f *os.File) {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("SetReadDeadline: %v (want a pollable file)", err)
	}
	_, err := f.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read with nothing to read = %v, want the deadline exceeded", err)
	}
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
}

func TestStdioPipeSharedWithAnotherProcess(t *testing.T) {
	r, w := blockingPipe(t)
	pid := holdInChild(t, r, false)
	childBefore, oursBefore := procFlags(t, pid, 0), fdFlags(t, r)
	if childBefore&syscall.O_NONBLOCK != 0 {
		t.Fatalf("the child's stdin is already non-blocking (flags %o)", childBefore)
	}

	in, _, closeStdio := Stdio(r, nil)
	defer closeStdio()
	nf, ok := in.(*os.File)
	if !ok || nf == r {
		t.Fatalf("Stdio(pipe) = %T %v, want a new *os.File", in, in)
	}
	if fl := fdFlags(t, nf); fl&syscall.O_NONBLOCK == 0 {
		t.Fatalf("new description's flags %o, want O_NONBLOCK", fl)
	}
	assertPollable(t, nf)
	if _, err := w.Write([]byte("{\"jsonrpc\":\"2.0\"}\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := nf.Read(buf)
	if err != nil || string(buf[:n]) != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}

	if got := procFlags(t, pid, 0); got != childBefore {
		t.Errorf("the other process's flags changed: %o, were %o", got, childBefore)
	}
	if got := fdFlags(t, r); got != oursBefore {
		t.Errorf("the original descriptor's flags changed: %o, were %o", got, oursBefore)
	}

	// Closing the new file ends a read waiting on it, which closing
	// os.Stdin never did.
	done := make(chan error, 1)
	go func() { _, err := nf.Read(buf); done <- err }()
	time.Sleep(10 * time.Millisecond)
	closeStdio()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Read after close = %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing did not end the pending read")
	}
}

func TestStdioStdoutPipeSharedWithAnotherProcess(t *testing.T) {
	r, w := blockingPipe(t)
	pid := holdInChild(t, w, true)
	childBefore, oursBefore := procFlags(t, pid, 1), fdFlags(t, w)

	_, out, closeStdio := Stdio(nil, w)
	defer closeStdio()
	nf, ok := out.(*os.File)
	if !ok || nf == w {
		t.Fatalf("Stdio(pipe) = %T, want a new *os.File", out)
	}
	if fl := fdFlags(t, nf); fl&syscall.O_NONBLOCK == 0 || fl&syscall.O_ACCMODE != syscall.O_WRONLY {
		t.Fatalf("new description's flags %o, want O_WRONLY|O_NONBLOCK", fl)
	}
	// A write larger than the pipe's buffer waits in the netpoller for the
	// reader rather than failing with EAGAIN.
	big := bytes.Repeat([]byte("x"), 1<<20)
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(io.LimitReader(r, int64(len(big)))); got <- b }()
	if n, err := nf.Write(big); err != nil || n != len(big) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("read %d bytes back, want %d", len(b), len(big))
	}
	if got := procFlags(t, pid, 1); got != childBefore {
		t.Errorf("the other process's flags changed: %o, were %o", got, childBefore)
	}
	if got := fdFlags(t, w); got != oursBefore {
		t.Errorf("the original descriptor's flags changed: %o, were %o", got, oursBefore)
	}
}

func TestStdioFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// O_RDWR: a FIFO's open does not wait for a partner then, and the
	// description is blocking, as a shell's redirect would leave it.
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	before := fdFlags(t, f)

	in, _, closeStdio := Stdio(f, nil)
	defer closeStdio()
	nf, ok := in.(*os.File)
	if !ok || nf == f {
		t.Fatalf("Stdio(FIFO) = %T, want a new *os.File", in)
	}
	assertPollable(t, nf)
	if _, err := f.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := nf.Read(buf); err != nil || string(buf[:n]) != "line\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if got := fdFlags(t, f); got != before {
		t.Errorf("the FIFO's original description's flags changed: %o, were %o", got, before)
	}
}

func TestStdioTTYUnchanged(t *testing.T) {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	var n uint32
	var unlock int32
	rc, _ := ptm.SyscallConn()
	var errno syscall.Errno
	_ = rc.Control(func(fd uintptr) {
		if _, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
			return
		}
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n)))
	})
	if errno != 0 {
		t.Skipf("pseudo-terminal ioctl: %v", errno)
	}
	fd, err := syscall.Open("/dev/pts/"+strconv.Itoa(int(n)), syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal's other end: %v", err)
	}
	tty := os.NewFile(uintptr(fd), "tty")
	defer tty.Close()
	before := fdFlags(t, tty)
	in, out, closeStdio := Stdio(tty, tty)
	defer closeStdio()
	if in != io.Reader(tty) || out != io.Writer(tty) {
		t.Fatalf("Stdio(TTY) = %T, %T, want the TTY itself", in, out)
	}
	if got := fdFlags(t, tty); got != before {
		t.Errorf("the TTY's flags changed: %o, were %o", got, before)
	}
}

func TestStdioOthersUnchanged(t *testing.T) {
	reg, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	buf := bytes.NewReader(nil)
	for _, c := range []struct {
		name string
		in   io.Reader
		out  io.Writer
	}{
		{"regular file", reg, reg},
		{"not a file", buf, io.Discard},
	} {
		in, out, closeStdio := Stdio(c.in, c.out)
		closeStdio()
		if in != c.in || out != c.out {
			t.Errorf("%s: Stdio gave %T, %T, want them unchanged", c.name, in, out)
		}
	}
}

func TestStdioSocketSharedWithAnotherProcess(t *testing.T) {
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(sp[0]), "socket"), os.NewFile(uintptr(sp[1]), "peer")
	defer sock.Close()
	defer peer.Close()
	pid := holdInChild(t, sock, false)
	childBefore, oursBefore := procFlags(t, pid, 0), fdFlags(t, sock)
	if childBefore&syscall.O_NONBLOCK != 0 {
		t.Fatalf("the child's stdin is already non-blocking (flags %o)", childBefore)
	}

	in, out, closeStdio := Stdio(sock, sock)
	defer closeStdio()
	if _, ok := in.(*polledSocket); !ok {
		t.Fatalf("Stdio(socket) reader = %T, want a *polledSocket", in)
	}
	if _, ok := out.(*polledSocket); !ok {
		t.Fatalf("Stdio(socket) writer = %T, want a *polledSocket", out)
	}

	// Both ways, with more than the socket's buffers hold, so that reads
	// and writes meet EAGAIN and wait.
	big := bytes.Repeat([]byte("y"), 1<<20)
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big)))); got <- b }()
	if n, err := out.Write(big); err != nil || n != len(big) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("peer read %d bytes, want %d", len(b), len(big))
	}
	go func() { _, _ = peer.Write(big) }()
	if b, err := io.ReadAll(io.LimitReader(in, int64(len(big)))); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("read %d bytes, %v; want %d", len(b), err, len(big))
	}

	if got := procFlags(t, pid, 0); got != childBefore {
		t.Errorf("the other process's flags changed: %o, were %o", got, childBefore)
	}
	if got := fdFlags(t, sock); got != oursBefore {
		t.Errorf("the socket's flags changed: %o, were %o", got, oursBefore)
	}

	// A read waiting for the peer ends when Stdio's closer runs, which a
	// blocking read of the socket would not.
	done := make(chan error, 1)
	go func() { _, err := in.Read(make([]byte, 8)); done <- err }()
	time.Sleep(10 * time.Millisecond)
	closeStdio()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Read after close returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing did not end the pending read")
	}
}

func TestStdioSocketEOF(t *testing.T) {
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(sp[0]), "socket"), os.NewFile(uintptr(sp[1]), "peer")
	defer sock.Close()
	in, _, closeStdio := Stdio(sock, nil)
	defer closeStdio()
	go func() {
		time.Sleep(10 * time.Millisecond)
		_, _ = peer.Write([]byte("last\n"))
		peer.Close()
	}()
	b, err := io.ReadAll(in)
	if err != nil || string(b) != "last\n" {
		t.Fatalf("ReadAll = %q, %v; want the last line and EOF", b, err)
	}
}
