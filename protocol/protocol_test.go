package protocol

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gate's refusal must read, to an independent client, as a tool result
// with isError and exactly the text the gate wrote.
func TestToolErrorDecodesAsSDKResult(t *testing.T) {
	text := "denied by deny[0] (mcp:github:delete_*) \"quoted\" \n and <html>"
	b, err := json.Marshal(ToolError(text))
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("decoded %+v from %s", res, b)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc.Text != text {
		t.Fatalf("content %#v from %s", res.Content[0], b)
	}
}

func TestKnownStartsWithLatest(t *testing.T) {
	k := Known()
	if len(k) == 0 || k[0] != Latest {
		t.Fatalf("Known() = %v, want %s first", k, Latest)
	}
	k[0] = "changed"
	if Known()[0] != Latest {
		t.Fatal("Known returned a shared slice")
	}
}
