package proxy

// In-memory tests of the log level's way upstream (gate.go): the host's
// logging/setLevel reaches the children that declare logging, both those
// running and those started later, so that a server that sends nothing
// until a level is set (go-sdk) logs to the host.

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// loggingServer has one tool that logs "i" at info and "e" at error.
func loggingServer() upstreamtest.ServeFunc {
	return upstreamtest.GoSDK(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, _ textIn) (*mcp.CallToolResult, any, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "i"})
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "e"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
		})
	})
}

func TestLogLevelReachesUpstreams(t *testing.T) {
	var mu sync.Mutex
	var got []string
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			got = append(got, string(r.Params.Level)+":"+r.Params.Data.(string))
			mu.Unlock()
		},
	})
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	f := start(t, map[string]upstreamtest.ServeFunc{"s": loggingServer()}, static(t, allowAll), client)
	// Set before the server runs: its start passes the level on.
	if err := f.sess.SetLoggingLevel(ctx10(t), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	if f.launcher.Launches("s") != 0 {
		t.Fatal("setting the level started a server")
	}
	// A log notification is dropped, by design, when the host's queue has
	// no room at that instant (notifyHost): under load one call's line can
	// be lost, so the call is made again until one arrives.
	waitFor(t, "the error log line", func() bool {
		if _, err := callText(t, f.sess, "s__log", ""); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(seen(), "error:e")
	})
	if slices.Contains(seen(), "info:i") {
		t.Fatalf("at level error the host got %v", seen())
	}
	// Set while it runs: the running child gets it too.
	if err := f.sess.SetLoggingLevel(ctx10(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the info log line", func() bool {
		if _, err := callText(t, f.sess, "s__log", ""); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(seen(), "info:i")
	})
}
