package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runStubborn is the honest server that will not die politely: it ignores
// SIGTERM, SIGHUP and SIGINT, and at EOF on stdin it keeps running. Only
// SIGKILL ends it (the gate's shutdown escalation, or Pdeathsig).
func runStubborn(ev *eventLog) error {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	ev.add("pid %d", os.Getpid())
	_ = runHonest(ev)
	select {}
}

// runAuditCheck serves one tool, "count", which answers with the number of
// decision lines for it already in the audit file named by the first
// argument: the n-th call finds n lines when the gate wrote each line
// before forwarding its call.
func runAuditCheck(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("auditcheck needs the audit file as its argument")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-auditcheck", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "count", Description: "Counts its own decisions in the audit log."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return nil, nil, err
			}
			n := 0
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, `"event":"decision"`) && strings.Contains(line, `"tool":"count"`) {
					n++
				}
			}
			return text(fmt.Sprint(n)), nil, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}
