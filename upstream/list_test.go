package upstream_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// TestListNamesPages: every page is read, names with colons come back as
// listed, and prompts list the same way.
func TestListNamesPages(t *testing.T) {
	want := []string{"a:b", "c", "d*e", "f", "g", "h"}
	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{
		"s": upstreamtest.GoSDKWithOptions(&mcp.ServerOptions{PageSize: 2}, func(s *mcp.Server) {
			for _, n := range want {
				mcp.AddTool(s, &mcp.Tool{Name: n}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return nil, nil, nil
				})
			}
			for i := range 3 {
				s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%d", i)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return nil, nil
				})
			}
		}),
	}}
	p := newPool(t, l.Configs(), l, nil)
	s := session(t, p, "s")
	got, err := upstream.ListNames(context.Background(), s, "tools/list", "tools")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("tools %q; want %q", got, want)
	}
	prompts, err := upstream.ListNames(context.Background(), s, "prompts/list", "prompts")
	if err != nil || len(prompts) != 3 {
		t.Errorf("prompts %q, %v; want 3", prompts, err)
	}
	if _, err := upstream.ListNames(context.Background(), s, "tools/list", "prompts"); err == nil {
		t.Error("a result without the field was accepted")
	}
}
