package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runPark is an older-era (2025-11-25) go-sdk server whose tools ask the
// client mid-call, the way a 2025 server does (a server-to-client request
// while the call is in flight): what mcp-gate parks for a 2026-07-28 host.
// Every step is an event ("<tool> asked <tag>", "<tool> answered <tag>
// <answer>", "<tool> cancelled <tag>", "<tool> failed <tag>: <error>"), so
// a test sees what reached the server and whether its call was cancelled.
//
//	deploy    asks for an environment; its result quotes the answer as sent
//	twice     asks two questions in turn
//	guarded   asks like deploy (the tests' policy asks about it first)
//	roots     asks for the client's roots
//	sample    asks the client's model (sampling/createMessage)
func runPark(ev *eventLog) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testserver-park", Version: "1"}, nil)
	// "method <name>" for every request: whether the gate probed it.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ev.add("method %s", method)
			return next(ctx, method, req)
		}
	})
	type tagIn struct {
		Tag string `json:"tag" jsonschema:"names the call in the events"`
	}
	// failed reports an error of a request to the client: a cancelled
	// call is told apart by its context, which the gate's
	// notifications/cancelled ends (it may come just after the error).
	failed := func(ctx context.Context, tool, tag string, err error) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			ev.add("%s cancelled %s", tool, tag)
			return nil, nil, ctx.Err()
		case <-time.After(3 * time.Second):
		}
		ev.add("%s failed %s: %v", tool, tag, err)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s failed: %v", tool, err)}}}, nil, nil
	}
	ask := func(ctx context.Context, req *mcp.CallToolRequest, tool, tag, message string) (*mcp.ElicitResult, string, error) {
		ev.add("%s asked %s", tool, tag)
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message: message,
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"env": map[string]any{"type": "string", "description": "where to"}},
				"required":   []string{"env"},
			},
		})
		if err != nil {
			return nil, "", err
		}
		b, _ := json.Marshal(res)
		ev.add("%s answered %s %s", tool, tag, b)
		return res, string(b), nil
	}
	deploy := func(tool string) func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
		return func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			res, raw, err := ask(ctx, req, tool, in.Tag, "Which environment should the deploy go to?")
			if err != nil {
				return failed(ctx, tool, in.Tag, err)
			}
			if res.Action != "accept" {
				return text(tool + " " + res.Action), nil, nil
			}
			return text(fmt.Sprintf("deployed to %v; the answer was %s", res.Content["env"], raw)), nil, nil
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "deploy", Description: "Asks where to deploy, then deploys."}, deploy("deploy"))
	mcp.AddTool(srv, &mcp.Tool{Name: "guarded", Description: "Asks where to deploy, then deploys."}, deploy("guarded"))
	mcp.AddTool(srv, &mcp.Tool{Name: "twice", Description: "Asks two questions."},
		func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			var got []string
			for _, q := range []string{"First environment?", "Second environment?"} {
				res, _, err := ask(ctx, req, "twice", in.Tag, q)
				if err != nil {
					return failed(ctx, "twice", in.Tag, err)
				}
				got = append(got, fmt.Sprint(res.Content["env"]))
			}
			return text("first=" + got[0] + " second=" + got[1]), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			ev.add("roots asked %s", in.Tag)
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return failed(ctx, "roots", in.Tag, err)
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text("roots=" + strings.Join(uris, ",")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
			ev.add("sample asked %s", in.Tag)
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 50,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello."}}},
			})
			if err != nil {
				return failed(ctx, "sample", in.Tag, err)
			}
			t, _ := res.Content.(*mcp.TextContent)
			if t == nil {
				return text("sampled something that is not text"), nil, nil
			}
			return text("sampled: " + t.Text), nil, nil
		})
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

// runModernOnly is a server of revision 2026-07-28 only: it refuses
// initialize, answers server/discover listing that revision alone, and
// serves one tool, echo ("modern-only:<text>"). Every method it is sent
// is an event ("method <name>").
func runModernOnly(ev *eventLog) error {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	out := func(id json.RawMessage, member string) {
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,` + member + "}\n")
	}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		ev.add("method %s", m.Method)
		if m.Method != "initialize" && string(m.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` {
			out(m.ID, `"error":{"code":-32602,"message":"Invalid _meta envelope for protocol revision 2026-07-28: io.modelcontextprotocol/protocolVersion: missing"}`)
			continue
		}
		switch m.Method {
		case "initialize":
			out(m.ID, `"error":{"code":-32600,"message":"this server speaks protocol revision 2026-07-28 only: open with server/discover"}`)
		case "server/discover":
			out(m.ID, `"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-only","version":"1"}}}`)
		case "tools/list":
			out(m.ID, `"result":{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}],"ttlMs":0,"cacheScope":"private"}`)
		case "tools/call":
			t, _ := json.Marshal("modern-only:" + m.Params.Arguments.Text)
			out(m.ID, `"result":{"resultType":"complete","content":[{"type":"text","text":`+string(t)+`}]}`)
		default:
			out(m.ID, `"error":{"code":-32601,"message":"method not found"}`)
		}
	}
	return sc.Err()
}
