package e2e

// Issue #8, "neutralisation covers everything a host shows", through the
// real binary: a hostile upstream (testserver --mode neutral) hides
// characters in every string a host renders, and the go-sdk host sees each
// of them made visible, the benign emoji and CJK intact.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// neutralShown is testserver's NeutralPayload as the host must see it.
const neutralShown = "x[U+0008][U+000C][U+00AD][U+00AD][U+202E][U+202D][U+0085][U+009B][U+2066][U+200B]y 👨\u200d👩\u200d👧 ❤\ufe0f 日本語"

func TestNeutralisationThroughTheBinary(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs []*mcp.LoggingMessageParams
	var asked *mcp.ElicitParams
	g := gateCommand(t, map[string]server{"neutral": testserver("neutral")})
	sess := g.connect(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params)
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = req.Params
			mu.Unlock()
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})

	check := func(what string, got any) {
		t.Helper()
		if got != neutralShown {
			t.Errorf("%s:\n got %q\nwant %q", what, got, neutralShown)
		}
	}

	// Tool metadata; a tool with a hidden character in a schema key is left
	// out, with an audit line.
	tools := toolNames(t, sess)
	if tools["neutral__badkey"] != nil {
		t.Error("neutral__badkey listed although a key of its schema holds a soft hyphen")
	}
	tool := tools["neutral__show"]
	if tool == nil {
		t.Fatal("neutral__show not listed")
	}
	check("tool title", tool.Title)
	check("tool description", tool.Description)
	if tool.Annotations == nil {
		t.Fatal("tool annotations lost")
	}
	check("tool annotations.title", tool.Annotations.Title)
	check("tool _meta", tool.Meta["note"])
	if len(tool.Icons) != 1 || len(tool.Icons[0].Sizes) != 1 {
		t.Fatalf("tool icons: %+v", tool.Icons)
	}
	check("tool icon sizes", tool.Icons[0].Sizes[0])
	p := tool.InputSchema.(map[string]any)["properties"].(map[string]any)["p"].(map[string]any)
	check("schema title", p["title"])
	check("schema description", p["description"])

	// A result: text, resource_link, embedded resource, structuredContent, _meta.
	res := call(t, sess, "neutral__show", map[string]any{})
	if res.IsError || len(res.Content) != 3 {
		t.Fatalf("show: %+v", res)
	}
	check("text", res.Content[0].(*mcp.TextContent).Text)
	check("text _meta", res.Content[0].(*mcp.TextContent).Meta["m"])
	link := res.Content[1].(*mcp.ResourceLink)
	check("resource_link name", link.Name)
	check("resource_link title", link.Title)
	check("resource_link description", link.Description)
	check("embedded resource text", res.Content[2].(*mcp.EmbeddedResource).Resource.Text)
	sc, _ := json.Marshal(res.StructuredContent)
	var st struct {
		V    string
		Rows []string
	}
	if err := json.Unmarshal(sc, &st); err != nil || len(st.Rows) != 1 {
		t.Fatalf("structuredContent: %s %v", sc, err)
	}
	check("structuredContent", st.V)
	check("structuredContent array", st.Rows[0])
	check("result _meta", res.Meta["m"])

	// The log notification sent during the call.
	waitFor(t, "the log notification", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) > 0
	})
	mu.Lock()
	check("log logger", logs[0].Logger)
	data, _ := logs[0].Data.(map[string]any)
	check("log data", data["msg"])
	mu.Unlock()

	// A structured result that would have to change, under an outputSchema
	// whose const it would then break: an isError result naming the tool.
	res = call(t, sess, "neutral__typed", map[string]any{})
	if !res.IsError || !strings.Contains(resultText(res), `typed on server "neutral"`) || !strings.Contains(resultText(res), "outputSchema") {
		t.Errorf("typed: %+v %q", res, resultText(res))
	}

	// An elicitation with a case-variant second message is declined
	// without reaching the host.
	if got := resultText(call(t, sess, "neutral__ask_variant", map[string]any{})); got != "action=decline" {
		t.Errorf("ask_variant: the upstream got %q", got)
	}
	mu.Lock()
	if asked != nil {
		t.Errorf("the host was asked %q", asked.Message)
		asked = nil
	}
	mu.Unlock()

	// An elicitation: the label stays on the first line beside the
	// message's first words, and every title and description is neutralised.
	if got := resultText(call(t, sess, "neutral__ask", map[string]any{})); got != "action=decline" {
		t.Errorf("ask: the upstream got %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked == nil {
		t.Fatal("the elicitation did not reach the host")
	}
	if want := "[neutral] Pick a colour " + neutralShown; asked.Message != want {
		t.Errorf("elicitation message:\n got %q\nwant %q", asked.Message, want)
	}
	schema, _ := json.Marshal(asked.RequestedSchema)
	var rs struct {
		Title      string
		Properties map[string]struct{ Title, Description string }
	}
	if err := json.Unmarshal(schema, &rs); err != nil {
		t.Fatal(err)
	}
	check("elicitation schema title", rs.Title)
	check("elicitation property title", rs.Properties["colour"].Title)
	check("elicitation property description", rs.Properties["colour"].Description)

	var neutralised, refusedKey, refusedStructured bool
	for _, l := range g.auditLines(t) {
		if l["event"] != "guard" || l["kind"] != "hidden_characters" {
			continue
		}
		detail, _ := l["detail"].(string)
		switch {
		case l["outcome"] == "neutralised":
			neutralised = true
		case l["outcome"] == "refused" && l["tool"] == "badkey" && strings.Contains(detail, "object key"):
			refusedKey = true
		case l["outcome"] == "refused" && l["tool"] == "typed":
			refusedStructured = true
		}
	}
	if !neutralised || !refusedKey || !refusedStructured {
		t.Errorf("audit: neutralised %v, badkey refused %v, typed refused %v", neutralised, refusedKey, refusedStructured)
	}
}
