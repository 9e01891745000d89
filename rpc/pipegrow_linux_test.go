//go:build linux

package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fcntlGet returns what fcntl(2) answers cmd (F_GETFL, F_GETPIPE_SZ) for
// f, reached through Control: Fd would itself make the descriptor
// blocking.
func fcntlGet(t *testing.T, f *os.File, cmd int) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		v, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, uintptr(cmd), 0)
	}); err != nil || errno != 0 {
		t.Fatal(err, errno)
	}
	return int(v)
}

// Growing a pipe (a large message each way) must leave its descriptors as
// the Stream found them: non-blocking, waited on in the netpoller, read on
// Read's goroutine. A grower that reached the descriptor through
// (*os.File).Fd would make it blocking: a reader then sits in read(2)
// holding its P, and with another P idle sysmon neither takes that P back
// nor polls the network for 10 ms, so the message that would end the read
// waits that long (a relay measured 12 ms per 1 MB call so, against 1 ms).
// Here a direct read on the descriptor made blocking would not even end:
// rawIO's read is not a call the scheduler knows of. So after the growth
// the flags must still say O_NONBLOCK, and a Read of a silent peer must
// still end with its context.
func TestGrownPipeStaysPolled(t *testing.T) {
	connR, peerW, peerR, connW := osPipes(t)
	go io.Copy(io.Discard, peerR)
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	defer s.Close()
	if s.rdl == nil || s.growR == nil || s.growW == nil {
		t.Fatalf("a Stream over non-blocking pipes: direct read %v, growers %v %v; want all", s.rdl != nil, s.growR != nil, s.growW != nil)
	}
	big := `{"t":"` + strings.Repeat("x", 200<<10) + `"}`
	ctx := context.Background()
	if err := s.Write(ctx, &Message{Method: "m", Params: json.RawMessage(big)}); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(peerW, `{"jsonrpc":"2.0","method":"n","params":`+big+"}\n")
	if m, err := s.Read(ctx); err != nil || len(m.Params) != len(big) {
		t.Fatalf("Read of a large message = %v", err)
	}
	for _, f := range []*os.File{connR, connW} {
		if fl := fcntlGet(t, f, syscall.F_GETFL); fl&syscall.O_NONBLOCK == 0 {
			t.Errorf("after a large message %s is blocking (flags %#x): its reads and writes would wait outside the netpoller", f.Name(), fl)
		}
	}
	// A silent peer: the Read must end with its context, in the
	// netpoller. Should it not (a read blocked in read(2)), a line from
	// the peer ends the wait and the test fails rather than hangs.
	done := make(chan error, 1)
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	go func() { _, err := s.Read(rctx); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read of a silent peer after the growth = %v; want the context's end", err)
		}
	case <-time.After(10 * time.Second):
		io.WriteString(peerW, `{"jsonrpc":"2.0","method":"unblock"}`+"\n")
		<-done
		t.Fatal("Read of a silent peer after the growth did not end with its context: the read waited outside the netpoller")
	}
}
