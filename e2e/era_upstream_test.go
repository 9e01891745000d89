package e2e

import (
	"context"
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
	servers := map[string]server{"modern": eraServer("2026-07-28"), "legacy": eraServer("")}

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
