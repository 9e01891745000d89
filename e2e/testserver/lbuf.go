package main

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type patternIn struct {
	Bytes int    `json:"bytes" jsonschema:"size of the text result in bytes"`
	Seed  string `json:"seed" jsonschema:"the text repeated to fill it"`
}

// runLbuf is a well-behaved server whose one tool, pattern, answers each
// call with a text of its own (its seed repeated to the size asked): a
// result that reached another call, or bytes of another result in it, show.
func runLbuf() error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-lbuf", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "pattern", Description: "Returns its seed repeated to the requested size."},
		func(_ context.Context, _ *mcp.CallToolRequest, in patternIn) (*mcp.CallToolResult, any, error) {
			return text(patternText(in.Seed, in.Bytes)), nil, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

// patternText is seed repeated to n bytes.
func patternText(seed string, n int) string {
	if seed == "" || n <= 0 {
		return ""
	}
	return strings.Repeat(seed, n/len(seed)+1)[:n]
}
