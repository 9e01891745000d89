package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type blobIn struct {
	Bytes int `json:"bytes" jsonschema:"size of the text result in bytes"`
}

type slowIn struct {
	Steps int `json:"steps" jsonschema:"number of progress steps"`
	MS    int `json:"ms" jsonschema:"milliseconds per step"`
}

type empty struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func runHonest(ev *eventLog) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-honest", Version: "1"}, &mcp.ServerOptions{
		Instructions: "A test server.",
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "-done"}}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			ev.add("subscribe %s", req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			ev.add("echo %s", in.Text)
			return text(in.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "blob", Description: "Returns a text of the requested size."},
		func(_ context.Context, _ *mcp.CallToolRequest, in blobIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Reports progress each step; stops when cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			ev.add("slow started")
			for i := range in.Steps {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i+1),
					})
				}
				select {
				case <-ctx.Done():
					ev.add("cancelled slow at step %d", i+1)
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(in.MS) * time.Millisecond):
				}
			}
			ev.add("completed slow")
			return text("done"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "Asks the user for their name."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: "What is your name?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}},
					"required":   []string{"name"},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("action=%s name=%v", res.Action, res.Content["name"])), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the host's model a question."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}},
			})
			if err != nil {
				return nil, nil, err
			}
			t, _ := res.Content.(*mcp.TextContent)
			if t == nil {
				return text("sampled: (no text)"), nil, nil
			}
			return text("sampled: " + t.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "Lists the host's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text("roots: " + strings.Join(uris, ",")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "toggle", Description: "Adds or removes the tool 'extra'."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			if toggled {
				srv.RemoveTools("extra")
			} else {
				mcp.AddTool(srv, &mcp.Tool{Name: "extra", Description: "Appears after toggle."},
					func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
						return text("extra"), nil, nil
					})
			}
			toggled = !toggled
			return text(fmt.Sprintf("extra present: %v", toggled)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Sends a log message notification."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "testserver", Data: in.Text})
			return text("logged"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exits the server in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(7)
			return nil, nil, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "test://static", Name: "static", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "static content"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item " + strings.TrimPrefix(req.Params.URI, "test://item/")}}}, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

var toggled bool
