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

// fillPipe writes to the non-blocking pipe w until the kernel has no more
// room in it.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for i := range chunk {
		chunk[i] = ' '
	}
	full := false
	for !full {
		if err := rc.Write(func(fd uintptr) bool {
			_, err := syscall.Write(int(fd), chunk)
			full = err == syscall.EAGAIN
			if err != nil && !full {
				t.Errorf("filling the pipe: %v", err)
				full = true
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A pipe keeps its default buffer while only short messages cross it, and
// is asked for pipeSize once a large one does, in either direction.
func TestPipeGrowsForLargeMessages(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err != nil || strings.TrimSpace(string(b)) != "1048576" {
		t.Skipf("pipe-max-size is not the default 1 MB here (%q, %v)", b, err)
	}
	pipeSz := func(f *os.File) int { return fcntlGet(t, f, syscall.F_GETPIPE_SZ) }
	connR, peerW, peerR, connW := osPipes(t)
	go io.Copy(io.Discard, peerR)
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	defer s.Close()
	ctx := context.Background()
	small := &Message{Method: "m", Params: json.RawMessage(`{"t":"short"}`)}
	if err := s.Write(ctx, small); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(peerW, `{"jsonrpc":"2.0","method":"n"}`+"\n")
	if _, err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if r, w := pipeSz(connR), pipeSz(connW); r != 64<<10 || w != 64<<10 {
		t.Fatalf("after short messages the pipes hold %d and %d bytes; want the default 65536", r, w)
	}
	big := `{"t":"` + strings.Repeat("x", 200<<10) + `"}`
	if err := s.Write(ctx, &Message{Method: "m", Params: json.RawMessage(big)}); err != nil {
		t.Fatal(err)
	}
	go io.WriteString(peerW, `{"jsonrpc":"2.0","method":"n","params":`+big+"}\n")
	if m, err := s.Read(ctx); err != nil || len(m.Params) != len(big) {
		t.Fatalf("Read of a large message = %v", err)
	}
	if r, w := pipeSz(connR), pipeSz(connW); r != pipeSize || w != pipeSize {
		t.Fatalf("after a large message each way the pipes hold %d and %d bytes; want %d", r, w, pipeSize)
	}
}

// A descriptor that is blocking (here made so by Fd, as another process
// sharing the description could) is read and written through the Stream's
// goroutines, never raw on Read's goroutine, where nothing could end a
// read that blocks: Read still returns when its context ends.
func TestBlockingDescriptorNotDirect(t *testing.T) {
	connR, _, _, connW := osPipes(t)
	connR.Fd() // blocking from now on
	connW.Fd()
	s := NewStream(connR, connW, multiCloser{connR, connW}, Limits{})
	defer s.Close()
	if s.rdl != nil || s.tw != nil {
		t.Fatalf("a Stream over blocking descriptors is in direct mode (read %v, write %v)", s.rdl != nil, s.tw != nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read of a silent peer = %v; want the context's end", err)
	}
}
