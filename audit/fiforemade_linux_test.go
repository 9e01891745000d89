//go:build linux

package audit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A log shipper that makes its FIFO anew when it restarts (rm, mkfifo,
// open): the gate's FIFO has no reader any more and no name, and every
// write to it fails (EPIPE). The path names a FIFO read again: the records
// go there, as for a regular file deleted and made again, rather than
// every later call being refused for as long as the gate runs.
func TestAuditFIFOMadeAgainIsOpenedAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, closeFile, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	if err := a.Decision(Decision{ID: "before"}); err != nil {
		t.Fatal(err)
	}
	// The shipper stops, and starts again with a FIFO of its own.
	r.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r2, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := a.Decision(Decision{ID: "after"}); err != nil {
		t.Fatalf("a record once the shipper's FIFO was made again and is read: %v", err)
	}
	r2.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 8192)
	n, _ := r2.Read(buf)
	got := string(buf[:n])
	if !strings.Contains(got, EventReopened) || !strings.Contains(got, `"decision_id":"after"`) {
		t.Fatalf("the new FIFO's reader got %q", got)
	}
}
