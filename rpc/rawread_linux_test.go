package rpc

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// A read of a pipe in direct mode (rawPipeReader) allocates nothing: the
// function it hands the RawConn is made once, not per read.
func TestRawPipeReadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for its own bookkeeping")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pr, ok := directReader(r).(*rawPipeReader)
	if !ok {
		t.Skip("the pipe is not read raw here")
	}
	line := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
	buf := make([]byte, 4096)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		n, err := pr.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], line) {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, line)
		}
	}); n != 0 {
		t.Errorf("a raw pipe read allocates %v times, want 0", n)
	}
}

// So does a read of a socket through the private epoll instance
// (polledSocket), what a Node host's stdio is.
func TestPolledSocketReadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for its own bookkeeping")
	}
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(sp[0]), "socket"), os.NewFile(uintptr(sp[1]), "peer")
	defer sock.Close()
	defer peer.Close()
	in := pollSocket(sock, syscall.EPOLLIN)
	if in == nil {
		t.Skip("the socket cannot be polled here")
	}
	defer in.Close()
	line := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
	buf := make([]byte, 4096)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := peer.Write(line); err != nil {
			t.Fatal(err)
		}
		n, err := in.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], line) {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, line)
		}
	}); n != 0 {
		t.Errorf("a polled socket read allocates %v times, want 0", n)
	}
}
