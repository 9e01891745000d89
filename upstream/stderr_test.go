package upstream

import (
	"bytes"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stderr is read to its end whatever it holds: a line far longer than any
// buffer is cut to its head, and the lines after it are still read.
func TestStderrDrainedAndCut(t *testing.T) {
	var logs bytes.Buffer
	p := &execProcess{name: "s", tail: &tailBuffer{max: 4 << 10}, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	in := strings.Repeat("e", 1<<20) + "\nafter the long line\nlast words\n"
	r := strings.NewReader(in)
	done := make(chan struct{})
	p.readStderr(io.NopCloser(r), done)
	<-done
	if r.Len() != 0 {
		t.Fatalf("%d bytes of stderr left unread", r.Len())
	}
	tail := p.tail.String()
	if !strings.HasSuffix(tail, "after the long line\nlast words") {
		t.Errorf("the exit-error tail does not end with the last lines: %q", tail[max(0, len(tail)-200):])
	}
	if !strings.Contains(logs.String(), "more bytes of this line not kept") || strings.Contains(logs.String(), strings.Repeat("e", stderrLineMax+1)) {
		t.Error("the long line was not logged cut to its head")
	}
}

// Past the per-second budget lines are counted, not logged; the tail still
// gets every one.
func TestStderrLogBudget(t *testing.T) {
	var logs bytes.Buffer
	c := stderrCap{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), server: "s", tail: &tailBuffer{max: 4 << 10}}
	now := time.Now()
	for i := range 3 * stderrLinesPerSec {
		c.line("line", 0, now.Add(time.Duration(i)*time.Microsecond))
	}
	c.line("next second", 0, now.Add(2*time.Second))
	if n := strings.Count(logs.String(), `msg="upstream stderr"`); n != stderrLinesPerSec+1 {
		t.Errorf("%d lines logged; want %d in the first second and 1 in the next", n, stderrLinesPerSec)
	}
	if !strings.Contains(logs.String(), "lines="+strconv.Itoa(2*stderrLinesPerSec)) {
		t.Errorf("the lines over the budget are not counted in a warning:\n%.500s", logs.String())
	}
	if !strings.HasSuffix(c.tail.String(), "line\nnext second") {
		t.Error("the tail did not get every line")
	}
}
