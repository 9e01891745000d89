package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paths: a file server that reads paths the way most servers do, which is
// not the way the kernel does: it percent-decodes a file: URI, drops its
// fragment and cleans the path lexically (`..` before symlinks, as Node's
// path.resolve and Python's abspath do) before it opens it. Every read is
// an event, so a test sees what reached the disk.
func runPaths(ev *eventLog) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-paths", Version: "1"}, nil)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{+path}", Name: "file", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			u, err := url.Parse(req.Params.URI)
			if err != nil {
				return nil, err
			}
			p := filepath.Clean(u.Path)
			ev.add("read %s", p)
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: string(b)}}}, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}
