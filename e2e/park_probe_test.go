package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 14: an unpinned stdio server's era is probed by default. A server
// of both eras (the go-sdk's discover lists 2025-11-25 and 2026-07-28) is
// spoken to at 2025-11-25, where it can ask the host (parked for a
// 2026-07-28 host); a modern-only one (the TypeScript SDK 2.0's discover
// lists only 2026-07-28) at 2026-07-28; a pin is obeyed without a probe.
// The era is remembered in the catalog cache: the next gate of the same
// user does not probe again.
func TestUpstreamEraProbedByDefault(t *testing.T) {
	home := t.TempDir()
	events := filepath.Join(home, "park.events")
	pinnedEvents := filepath.Join(home, "pinned.events")
	pinned := testserver("park", "--events", pinnedEvents)
	pinned.Protocol = "2025-11-25"
	servers := map[string]server{
		"park":   testserver("park", "--events", events),
		"modern": eraServer(""),
		"pinned": pinned,
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	for round := 1; round <= 2; round++ {
		g := gateCommand(t, servers, "--policy", writePolicy(t, strings.Replace(parkPolicy, "allow:\n", "allow:\n  - mcp:modern:*\n  - mcp:pinned:*\n", 1)))
		g.cmd.Env = append(g.cmd.Env, env...)
		h := startModern(t, g, formCaps)
		// The dual-era server asks mid-call: only a 2025-11-25 session can.
		_, st := parkedQuestion(t, h.request("tools/call", parkArgs("deploy", "p")), "elicitation/create")
		if text, isErr := toolText(t, h.request("tools/call", parkArgs("deploy", "p")+","+parkAnswer(acceptStaging, st))); isErr || !strings.HasPrefix(text, "deployed to staging") {
			t.Fatalf("round %d: %q isError=%v", round, text, isErr)
		}
		if text, isErr := toolText(t, h.request("tools/call", `"name":"modern__echo","arguments":{"text":"hi"}`)); isErr || text != "modern:hi" {
			t.Fatalf("round %d: the modern-only server: %q isError=%v", round, text, isErr)
		}
		// The pinned server is asked as the dual-era one is.
		parkedQuestion(t, h.request("tools/call", `"name":"pinned__deploy","arguments":{"tag":"x"}`), "elicitation/create")
		log := g.stderr.String()
		if !strings.Contains(log, `msg="upstream started" server=park`) || !strings.Contains(log, "protocol_version=2025-11-25") {
			t.Fatalf("round %d: the dual-era server was not started at 2025-11-25:\n%s", round, log)
		}
		if !strings.Contains(log, `msg="upstream started" server=modern key=`) || !strings.Contains(log, "server=modern key=") {
			t.Fatalf("round %d: no start of the modern server:\n%s", round, log)
		}
		h.stdin.Close()
		_ = g.cmd.Wait()
	}
	ev := readEvents(t, events)
	if n := strings.Count(ev, "method server/discover\n"); n != 1 {
		t.Fatalf("the dual-era server was probed %d times over two gates of one user; want once (remembered):\n%s", n, ev)
	}
	if n := strings.Count(ev, "method initialize\n"); n != 2 {
		t.Fatalf("the dual-era server was initialized %d times; want once per gate:\n%s", n, ev)
	}
	if strings.Contains(readEvents(t, pinnedEvents), "server/discover") {
		t.Fatal("a server pinned to 2025-11-25 was probed")
	}
	// A 2025-11-25 host of the same servers: sampling and list changes of a
	// dual-era server work as before (the go-sdk refuses both at 2026-07-28).
	g := gateCommand(t, servers, "--policy", writePolicy(t, parkPolicy))
	g.cmd.Env = append(g.cmd.Env, env...)
	var asked []string
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"env": "prod"}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "park__deploy", Arguments: map[string]any{"tag": "legacy"}})
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "deployed to prod") || len(asked) != 1 {
		t.Fatalf("a 2025-11-25 host: %v %+v asked %q", err, res, asked)
	}
}
