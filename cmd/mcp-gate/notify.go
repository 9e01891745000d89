package main

import (
	"context"
	"os/exec"
	"time"

	"github.com/mcp-gate/mcp-gate/approvals"
)

// notifyDesktop shows a desktop notification where notify-send exists:
// best effort, untested, never required. It names the server and tool
// (quoted as in the question) and never the question's id.
func notifyDesktop(q approvals.Question) {
	bin, err := exec.LookPath("notify-send")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, bin, "--app-name=mcp-gate", "mcp-gate: a tool call waits for your approval",
		"Server "+q.Server+", tool "+q.Tool+". Run: mcp-gate approvals").Run()
}
