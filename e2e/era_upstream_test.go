package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraServer is a real upstream that serves both eras (the pinned
// TypeScript SDK 2.0.0) and says in each result which era it was spoken
// to in.
func eraServer(protocol string) server {
	return server{
		Command:  filepath.Join(nodeModules, ".bin", "node"),
		Args:     []string{filepath.Join("testdata", "era_server.mjs")},
		Protocol: protocol,
	}
}

// Mixed-era pairs through the real binary: a 2025-11-25 host and a
// 2026-07-28 host, each with an upstream pinned to 2026-07-28 and one
// spoken to at 2025-11-25 (the same server, unpinned).
func TestModernUpstreams(t *testing.T) {
	t.Parallel()
	servers := map[string]server{"modern": eraServer("2026-07-28"), "legacy": eraServer("2025-11-25")}

	t.Run("2025 host", func(t *testing.T) {
		g := gateCommand(t, servers)
		sess := g.connect(t, nil)
		names := toolNames(t, sess)
		if names["modern__echo"] == nil || names["legacy__echo"] == nil {
			t.Fatalf("tools: %v", names)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for server, want := range map[string]string{"modern": "modern:hi", "legacy": "legacy:hi"} {
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: server + "__echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || resultText(res) != want {
				t.Fatalf("%s echo: %v %+v", server, err, res)
			}
		}
	})

	t.Run("2026 host", func(t *testing.T) {
		g := gateCommand(t, servers)
		h := startModern(t, g, formCaps)
		for server, want := range map[string]string{"modern": "modern:hi", "legacy": "legacy:hi"} {
			resp := h.request("tools/call", `"name":"`+server+`__echo","arguments":{"text":"hi"}`)
			if text, isErr := toolText(t, resp); isErr || text != want {
				t.Fatalf("%s echo: %s", server, resp)
			}
			if strings.Count(resp, `"resultType"`) != 1 {
				t.Fatalf("resultType not exactly once: %s", resp)
			}
		}
	})
}

// A 2026-07-28 upstream's input-required round reaches a 2025-11-25 host
// as the elicitation/create that era uses, labelled with the server's
// name, and the answer goes back to the upstream with its requestState
// echoed; a 2026-07-28 host gets it as an input-required result.
func TestModernUpstreamAsksLegacyHost(t *testing.T) {
	t.Parallel()
	servers := map[string]server{"modern": eraServer("2026-07-28")}
	g := gateCommand(t, servers)
	var asked []string
	answer := "accept"
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if answer != "accept" {
			return &mcp.ElicitResult{Action: answer}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "modern__confirm", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "confirm=true state=upstream-state-1" {
		t.Fatalf("confirm: %v %+v", err, res)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Proceed with the deployment?") || !strings.Contains(asked[0], "modern") {
		t.Fatalf("the host was asked %q, want the upstream's question labelled with its server", asked)
	}
	answer = "decline"
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "modern__confirm", Arguments: map[string]any{}})
	if err != nil || resultText(res) != "confirm=declined state=upstream-state-1" {
		t.Fatalf("declined confirm: %v %+v", err, res)
	}

	g2 := gateCommand(t, servers)
	h := startModern(t, g2, formCaps)
	resp := h.request("tools/call", `"name":"modern__confirm","arguments":{}`)
	// A 2026-07-28 host gets the upstream's round as an input-required
	// result of its own call, under the gate's key, labelled (the whole
	// exchange: modern2_test.go).
	r := modernResult(t, resp)
	reqs, _ := r["inputRequests"].(map[string]any)
	q, _ := reqs["mcp-gate-relayed-1"].(map[string]any)
	params, _ := q["params"].(map[string]any)
	if r["resultType"] != "input_required" || len(reqs) != 1 || !strings.HasPrefix(fmt.Sprint(params["message"]), "[modern] Proceed with the deployment?") {
		t.Fatalf("a modern host's call to an asking upstream: %s", resp)
	}
}

// "protocol": "auto" probes with server/discover: the SDK 2.0.0 server is
// found modern, the go-sdk test server (2025-11-25 only) legacy, and both
// serve their tools.
func TestUpstreamEraProbe(t *testing.T) {
	t.Parallel()
	honest := testserver("honest")
	honest.Protocol = "auto"
	g := gateCommand(t, map[string]server{"modern": eraServer("auto"), "honest": honest})
	sess := g.connect(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for tool, want := range map[string]string{"modern__echo": "modern:hi", "honest__echo": "hi"} {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || resultText(res) != want {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
}
