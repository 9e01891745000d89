package rpc

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// prefillPipe writes data into the pipe w at once, having made the pipe
// large enough to hold it, and reports whether it could: a peer that has
// written a whole burst, with no writer goroutine whose scheduling could
// leave a message half written for a while (which a stall watch rightly
// reports, and which a busy machine does to a goroutine now and then).
func prefillPipe(t *testing.T, w *os.File, data string) bool {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		return false
	}
	var size int
	var serr error
	if err := rc.Control(func(fd uintptr) { size, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, len(data)) }); err != nil || serr != nil || size < len(data) {
		return false
	}
	if _, err := w.WriteString(data); err != nil {
		t.Fatal(err)
	}
	return true
}
