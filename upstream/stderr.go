package upstream

import (
	"fmt"
	"log/slog"
	"time"
)

// Bounds on what the gate keeps of an upstream's stderr, which it always
// reads to the end (a child whose stderr is not drained stalls or dies of
// SIGPIPE): the head of each line, and so many lines a second in the log.
// The tail kept for exit errors (tailBuffer) gets every line, cut.
const (
	stderrLineMax      = 4 << 10
	stderrLinesPerSec  = 100
	stderrBytesPerSec  = 64 << 10
	stderrDroppedEvery = time.Second
)

// stderrCap logs an upstream's stderr lines within a per-second budget and
// feeds every line to the exit-error tail.
type stderrCap struct {
	log     *slog.Logger
	server  string
	tail    *tailBuffer
	window  time.Time // start of the current one-second window
	lines   int       // lines logged in the window
	bytes   int       // bytes logged in the window
	dropped int       // lines not logged since the last report
}

// line takes one line (its kept head, and how many bytes were cut).
func (c *stderrCap) line(s string, cut int, now time.Time) {
	if cut > 0 {
		s = fmt.Sprintf("%s… [%d more bytes of this line not kept]", s, cut)
	}
	c.tail.add(s)
	if now.Sub(c.window) >= stderrDroppedEvery {
		c.flush()
		c.window, c.lines, c.bytes = now, 0, 0
	}
	if c.lines >= stderrLinesPerSec || c.bytes+len(s) > stderrBytesPerSec {
		c.dropped++
		return
	}
	c.lines++
	c.bytes += len(s)
	c.log.Debug("upstream stderr", "server", c.server, "line", s)
}

// flush reports the lines left out of the log since the last report.
func (c *stderrCap) flush() {
	if c.dropped > 0 {
		c.log.Warn("upstream stderr lines not logged: over the per-second budget", "server", c.server, "lines", c.dropped, "budget_lines", stderrLinesPerSec, "budget_bytes", stderrBytesPerSec)
		c.dropped = 0
	}
}
