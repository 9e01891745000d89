package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstreams pinned to "protocol": "auto" are probed, and the result is
// remembered in the catalog cache: the SDK 2.0.0 server is found modern,
// a server that never answers a request before initialize is found legacy
// once (after the probe's timeout) and is not probed again by the next gate
// of the same user, and one that exits on the probe is started again at
// the older protocol.
func TestUpstreamEraProbeRemembered(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	silentEvents := filepath.Join(home, "silent.events")
	exitEvents := filepath.Join(home, "exit.events")
	servers := map[string]server{
		"modern": eraServer("auto"),
		"silent": testserver("preinit-silent", "--events", silentEvents),
		"exits":  testserver("preinit-exit", "--events", exitEvents),
		"honest": testserver("honest"),
	}
	for _, n := range []string{"silent", "exits", "honest"} {
		s := servers[n]
		s.Protocol = "auto"
		servers[n] = s
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	probes := func(file string) int {
		b, _ := os.ReadFile(file)
		return strings.Count(string(b), "method server/discover\n")
	}
	run := func(round int) {
		g := gateCommand(t, servers)
		g.cmd.Env = append(g.cmd.Env, env...)
		sess := g.connect(t, nil)
		defer sess.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		call := func(tool string) (*mcp.CallToolResult, error) {
			return sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}})
		}
		for tool, want := range map[string]string{"modern__echo": "modern:hi", "silent__echo": "preinit:hi", "honest__echo": "hi"} {
			res, err := call(tool)
			if err != nil || res.IsError || resultText(res) != want {
				t.Fatalf("round %d: %s: %v %+v\n%s", round, tool, err, res, g.stderr.String())
			}
		}
		res, err := call("exits__echo")
		if round == 1 {
			// The start the probe ended fails, saying so; the next one,
			// after the backoff, skips the probe.
			if err == nil && !res.IsError {
				t.Fatalf("round 1: the first call to the server that exits on the probe succeeded: %+v", res)
			}
			// Logged as the start fails, which may be just after the host
			// has its answer.
			waitFor(t, "the probe's end logged", 10*time.Second, func() bool {
				return strings.Contains(g.stderr.String(), "ended the connection on the server/discover probe")
			})
			deadline := time.Now().Add(20 * time.Second)
			for (err != nil || res.IsError) && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				res, err = call("exits__echo")
			}
		}
		if err != nil || res.IsError || resultText(res) != "preinit:hi" {
			t.Fatalf("round %d: exits__echo: %v %+v\n%s", round, err, res, g.stderr.String())
		}
	}
	run(1)
	if n := probes(silentEvents); n != 1 {
		t.Fatalf("the silent server was probed %d times in the first gate; want 1", n)
	}
	if n := probes(exitEvents); n != 1 {
		t.Fatalf("the exiting server was probed %d times in the first gate; want 1", n)
	}
	run(2)
	// The second gate of the same user remembers both as the older era.
	if n := probes(silentEvents); n != 1 {
		t.Errorf("the silent server was probed again by the next gate (%d probes in all): the era was not remembered", n)
	}
	if n := probes(exitEvents); n != 1 {
		t.Errorf("the exiting server was probed again by the next gate (%d probes in all)", n)
	}
}
