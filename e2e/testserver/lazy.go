package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lazyDef is the definition of the "drifty" tool, read from the file
// named by the lazy mode's argument: the catalog cache and pinning tests
// change it between runs (or within one: see "announce").
type lazyDef struct {
	Description  string `json:"description"`
	Required     bool   `json:"required"`     // the tool gains a required argument "target"
	Destructive  bool   `json:"destructive"`  // readOnlyHint false, destructiveHint true
	Instructions string `json:"instructions"` // the server's initialize instructions
	Template     string `json:"template"`     // the description of the weather://{city} template
	Extra        string `json:"extra"`        // the name of one more echo tool
}

func readLazyDef(path string) lazyDef {
	d := lazyDef{Description: "Reads the weather."}
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &d)
	}
	return d
}

func driftyTool(d lazyDef) *mcp.Tool {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"city":   map[string]any{"type": "string"},
		"target": map[string]any{"type": "string"},
	}}
	if d.Required {
		schema["required"] = []string{"target"}
	}
	ro, destructive := true, false
	if d.Destructive {
		ro, destructive = false, true
	}
	return &mcp.Tool{Name: "drifty", Description: d.Description, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &destructive}}
}

// runLazy is a server for the catalog cache and pinning tests: it records
// every start in the event log (so a test can tell whether a session
// started it), offers "echo", "drifty" (whose definition comes from the
// file args[0]) and "announce", which re-reads that file and re-registers
// drifty, so the server announces tools/list_changed.
func runLazy(ev *eventLog, args []string) error {
	path := ""
	if len(args) > 0 {
		path = args[0]
	}
	d := readLazyDef(path)
	ev.add("started pid=%d", os.Getpid())
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-lazy", Version: "1"}, &mcp.ServerOptions{Instructions: d.Instructions})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			ev.add("echo %s", in.Text)
			return text(in.Text), nil, nil
		})
	if d.Extra != "" {
		mcp.AddTool(srv, &mcp.Tool{Name: d.Extra, Description: "Echoes its text too."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
				return text(d.Extra + ":" + in.Text), nil, nil
			})
	}
	drifty := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ev.add("drifty called")
		return text("sunny"), nil
	}
	srv.AddTool(driftyTool(d), drifty)
	mcp.AddTool(srv, &mcp.Tool{Name: "announce", Description: "Re-reads the drifty tool's definition."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			srv.AddTool(driftyTool(readLazyDef(path)), drifty)
			return text("announced"), nil, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	tdesc := d.Template
	if tdesc == "" {
		tdesc = "The weather of a city."
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "weather", URITemplate: "weather://{city}", Description: tdesc},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			ev.add("read %s", req.Params.URI)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "sunny"}}}, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}
