package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Large results whose lines the gate reuses (rpc/linepool.go: a line goes
// back to the pool once the host's Stream has written the answer that
// relays it) each reach their own call whole, with none of another call's
// bytes in them: eight calls outstanding, every result a text of its own
// and of its own size (the pool hands a buffer to lines of 80-100% of its
// size, so a result shorter than the room it is read into is the common
// case), beside small calls and large results the guard rewrites (whose
// lines are never reused). Under -race the gate is built with the race
// detector, which poisons every released buffer: a line released while
// the gate still refers to it reaches the host as 0xFF bytes, not as a
// plausible result.
func TestLargeResultsReusedLinesStayTheirs(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"up": testserver("lbuf"), "hon": testserver("honest")})
	sess := g.connect(t, nil)
	pattern := func(seed string, n int) string {
		return strings.Repeat(seed, n/len(seed)+1)[:n]
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				seed := fmt.Sprintf("<w%d.i%d>", w, i)
				n := 1<<20 - (w*6+i)*4096 // 1 MB down to 80%: each its own size
				res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "up__pattern", Arguments: map[string]any{"bytes": n, "seed": seed}})
				if err != nil {
					t.Errorf("pattern %d/%d: %v", w, i, err)
					return
				}
				got, want := resultText(res), pattern(seed, n)
				if res.IsError || got != want {
					at := 0
					for at < len(got) && at < len(want) && got[at] == want[at] {
						at++
					}
					t.Errorf("pattern %d/%d: %d bytes (error %v), want %d of %q: they differ at byte %d: %q", w, i, len(got), res.IsError, n, seed, at, got[at:min(len(got), at+24)])
				}
			}
		}()
	}
	wg.Add(2)
	go func() { // small calls beside them
		defer wg.Done()
		for i := range 30 {
			want := fmt.Sprintf("small %d", i)
			res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "hon__echo", Arguments: map[string]any{"text": want}})
			if err != nil {
				t.Errorf("echo %d: %v", i, err)
				return
			}
			if got := resultText(res); got != want {
				t.Errorf("echo %d: %q, want %q", i, got, want)
			}
		}
	}()
	go func() { // large results the guard rewrites: never released for reuse
		defer wg.Done()
		for i := range 4 {
			text := strings.Repeat("ab\u200bcd ", 30000) + fmt.Sprint(i)
			res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "hon__echo", Arguments: map[string]any{"text": text}})
			if err != nil {
				t.Errorf("rewritten echo %d: %v", i, err)
				return
			}
			got := resultText(res)
			if res.IsError || strings.Contains(got, "\u200b") || !strings.HasSuffix(got, fmt.Sprint(i)) || len(got) < len(text) {
				t.Errorf("rewritten echo %d: error %v, %d bytes, hidden characters left: %v", i, res.IsError, len(got), strings.Contains(got, "\u200b"))
			}
		}
	}()
	wg.Wait()
}
