package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// chunks is a reader that returns its chunks one Read each, as a pipe
// returns what one write put in it.
type chunks struct{ c []string }

func (r *chunks) Read(p []byte) (int, error) {
	if len(r.c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.c[0])
	if r.c[0] = r.c[0][n:]; r.c[0] == "" {
		r.c = r.c[1:]
	}
	return n, nil
}

// writes records every Write apart.
type writes struct{ w []string }

func (w *writes) Write(p []byte) (int, error) {
	w.w = append(w.w, string(p))
	return len(p), nil
}

// TestCopyLinesBatches checks that the floor relays as a batching relay
// does (crelay, the gate's group commit): every whole line one read
// brought goes out in one write, each with its own prefix dropped; a line
// split across reads goes out once whole; a line larger than the first
// buffer goes through whole; what follows the last newline when the input
// ends is relayed as a line. A floor that wrote a line a write would measure a relay
// that makes a system call per message, not the least a relay costs.
func TestCopyLinesBatches(t *testing.T) {
	big := `{"name":"echo__x","a":"` + strings.Repeat("b", 200<<10) + `"}` + "\n"
	in := &chunks{c: []string{
		`{"name":"echo__a"}` + "\n" + `{"name":"echo__b","x":"echo__c"}` + "\n" + `{"name":"ec`,
		`ho__d"}` + "\n",
		big[:100],
		big[100:],
		`{"tail":"echo__e"}`,
	}}
	var out writes
	from, to := []byte(`"echo__`), []byte(`"`)
	strip := func(out, whole []byte) ([]byte, error) { return stripped(out, whole, from, to), nil }
	if err := copyLines(&out, in, strip); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"name":"a"}` + "\n" + `{"name":"b","x":"echo__c"}` + "\n",
		`{"name":"d"}` + "\n",
		strings.Replace(big, `"echo__`, `"`, 1),
		`{"tail":"e"}`,
	}
	if len(out.w) != len(want) {
		t.Fatalf("%d writes, want %d (one per read that ended a line, and the tail)", len(out.w), len(want))
	}
	for i := range want {
		if out.w[i] != want[i] {
			t.Errorf("write %d = %.80q (%d bytes), want %.80q (%d bytes)", i, out.w[i], len(out.w[i]), want[i], len(want[i]))
		}
	}
	if !bytes.Equal([]byte(out.w[2]), []byte(strings.Replace(big, "echo__", "", 1))) {
		t.Error("the large line did not go through whole")
	}
}
