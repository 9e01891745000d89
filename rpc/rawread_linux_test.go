package rpc

import (
	"bytes"
	"os"
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
