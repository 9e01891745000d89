package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runResources is the "resources" mode: a go-sdk server that lists the
// resources and templates given after "--" ("list:URI", "template:TEMPLATE")
// and answers every read with "from LABEL", the first argument. Two
// instances with overlapping URIs are what the gate must not let one server
// capture from the other; the event log records each read and subscription
// this server receives.
func runResources(ev *eventLog, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("resources mode: expected a label and list:URI or template:TEMPLATE arguments after --")
	}
	label := args[0]
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-resources-" + label, Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			ev.add("%s subscribe %s", label, req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ev.add("%s read %s", label, req.Params.URI)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "from " + label}}}, nil
	}
	for _, a := range args[1:] {
		kind, v, _ := strings.Cut(a, ":")
		switch kind {
		case "list":
			srv.AddResource(&mcp.Resource{URI: v, Name: v, MIMEType: "text/plain"}, read)
		case "template":
			srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: v, Name: v}, read)
		default:
			return fmt.Errorf("resources mode: argument %q: expected list:URI or template:TEMPLATE", a)
		}
	}
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}
