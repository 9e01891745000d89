package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runAuditBurst serves one tool, "arrive", for calls made many at a time.
// Each call that reaches it is counted first; then the decision lines for
// it in the audit file named by the first argument are counted. When the
// gate hands each call's decision to the OS before it forwards the call,
// k arrivals mean at least k lines, however the calls were interleaved
// or their records gathered: the answer is "ok", or what was missing.
func runAuditBurst(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("auditburst needs the audit file as its argument")
	}
	var arrived atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-auditburst", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "arrive", Description: "Checks that its decision was audited before it arrived."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			k := arrived.Add(1)
			data, err := os.ReadFile(args[0])
			if err != nil {
				return nil, nil, err
			}
			n := int64(0)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, `"event":"decision"`) && strings.Contains(line, `"tool":"arrive"`) {
					n++
				}
			}
			if n < k {
				return text(fmt.Sprintf("missing: %d calls arrived, %d decision lines audited", k, n)), nil, nil
			}
			return text("ok"), nil, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}
