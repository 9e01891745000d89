package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 14: an unpinned stdio server's era is found by default. A server
// that answers initialize (of the older era, or of both: the go-sdk's, the
// TypeScript SDK 2.0's) is spoken to at 2025-11-25, where it can ask the
// host (parked for a 2026-07-28 host) and announce list changes; one that
// refuses initialize and answers server/discover (modern only) at
// 2026-07-28, which is remembered in the catalog cache, so that the next
// gate of the same user opens it with discover; a pin is obeyed as is.
func TestUpstreamEraFoundByDefault(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	events := filepath.Join(home, "park.events")
	onlyEvents := filepath.Join(home, "only.events")
	pinnedEvents := filepath.Join(home, "pinned.events")
	pinned := testserver("park", "--events", pinnedEvents)
	pinned.Protocol = "2025-11-25"
	servers := map[string]server{
		"park":   testserver("park", "--events", events),
		"only":   testserver("modern-only", "--events", onlyEvents),
		"both":   eraServer(""),
		"pinned": pinned,
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	pol := strings.Replace(parkPolicy, "allow:\n", "allow:\n  - mcp:both:*\n  - mcp:only:*\n  - mcp:pinned:*\n", 1)
	for round := 1; round <= 2; round++ {
		g := gateCommand(t, servers, "--policy", writePolicy(t, pol))
		g.cmd.Env = append(g.cmd.Env, env...)
		h := startModern(t, g, formCaps)
		// The go-sdk server asks mid-call: only a 2025-11-25 session can.
		_, st := parkedQuestion(t, h.request("tools/call", parkArgs("deploy", "p")), "elicitation/create")
		if text, isErr := toolText(t, h.request("tools/call", parkArgs("deploy", "p")+","+parkAnswer(acceptStaging, st))); isErr || !strings.HasPrefix(text, "deployed to staging") {
			t.Fatalf("round %d: %q isError=%v", round, text, isErr)
		}
		if text, isErr := toolText(t, h.request("tools/call", `"name":"both__echo","arguments":{"text":"hi"}`)); isErr || text != "legacy:hi" {
			t.Fatalf("round %d: the TypeScript SDK server (both eras): %q isError=%v", round, text, isErr)
		}
		if text, isErr := toolText(t, h.request("tools/call", `"name":"only__echo","arguments":{"text":"hi"}`)); isErr || text != "modern-only:hi" {
			t.Fatalf("round %d: the modern-only server: %q isError=%v", round, text, isErr)
		}
		parkedQuestion(t, h.request("tools/call", `"name":"pinned__deploy","arguments":{"tag":"x"}`), "elicitation/create")
		h.stdin.Close()
		_ = g.cmd.Wait()
	}
	ev := readEvents(t, events)
	if strings.Contains(ev, "server/discover") || strings.Count(ev, "method initialize\n") != 2 {
		t.Fatalf("the go-sdk server: want initialize once per gate and no probe:\n%s", ev)
	}
	only := readEvents(t, onlyEvents)
	if strings.Count(only, "method initialize\n") != 1 || strings.Count(only, "method server/discover\n") != 2 {
		t.Fatalf("the modern-only server: want initialize (refused) once, then discover in each gate (remembered):\n%s", only)
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
