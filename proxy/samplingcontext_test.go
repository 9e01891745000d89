package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's sampling request asking for the context of "thisServer"
// (or "allServers") reached the host as it came: behind the gate the
// host's one server is the gate, every upstream at once, so the asking
// server was handed what the others returned, a scope neither the
// policy's sampling:<server> nor the human's answer covers. The gate
// passes no includeContext, and declares no sampling.context upstream.
func TestSamplingAsksNoOtherServersContext(t *testing.T) {
	if got := string(upstreamFacing(json.RawMessage(`{"sampling":{"context":{},"tools":{}},"roots":{}}`))); got != `{"sampling":{"tools":{}},"roots":{}}` {
		t.Errorf("upstream-facing capabilities: %s", got)
	}
	for _, ask := range []string{"thisServer", "allServers", "none"} {
		var mu sync.Mutex
		var got []string
		answered := make(chan struct{})
		var answerOnce sync.Once
		up := func(method string, id, params json.RawMessage, w func(string)) {
			switch method {
			case "tools/list":
				reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
			case "tools/call":
				w(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"summarise"}}],"maxTokens":10,"includeContext":"` + ask + `"}}`)
				<-answered
				reply(w, id, `{"content":[{"type":"text","text":"done"}]}`)
			case "":
				if string(id) == `"s1"` {
					answerOnce.Do(func() { close(answered) })
				}
			}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				got = append(got, req.Params.IncludeContext)
				mu.Unlock()
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "ok"}, Model: "m"}, nil
			},
		})
		f := startScripted(t, map[string]scripted{"s": up}, nil, static(t, allowAll), client)
		if _, err := callText(t, f.sess, "s__t", "x"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(got) != 1 || (got[0] != "" && got[0] != "none") {
			t.Errorf("includeContext %q reached the host as %q", ask, strings.Join(got, ","))
		}
		mu.Unlock()
	}
}
