package e2e

import (
	"strconv"
	"testing"
)

// TestHTTPLargeResultRelayed: the default message limit (8 MiB) exists for
// a stdio host, whose reader ends its whole connection on a longer line
// (TestLargeResultCostsOneCallNotTheHost). Over HTTP no such reader
// stands between the gate and the host: a 12 MiB result (a resources/read
// of a large file, a tool's large output), relayed under the old 32 MiB
// default, is relayed still.
func TestHTTPLargeResultRelayed(t *testing.T) {
	t.Parallel()
	const size = 12 << 20
	g := gateCommand(t, map[string]server{"life": testserver("life", "--", "--big-bytes", strconv.Itoa(size))})
	url := g.serveHTTP(t)
	sess := connectHTTP(t, url, nil, nil, false)
	res := call(t, sess, "life__big", map[string]any{})
	if got := resultText(res); res.IsError || len(got) != size {
		n := len(got)
		if n > 300 {
			got = got[:300]
		}
		t.Fatalf("a %d-byte result over HTTP: isError %v, %d bytes: %q", size, res.IsError, n, got)
	}
}
