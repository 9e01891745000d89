package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Issue 14: Codex 0.171.0 with its 2026-07-28 option lists the gate's
// tools and calls them over stdio, and an ask reaches it as an
// input-required round (the audit records the round), which Codex turns
// into its elicitation request. The option is two settings, both needed
// (found in the binary; neither is in --help): the feature flag
// features.mcp_2026_07_28 ("under development" in `codex features list`)
// and, per stdio server, CODEX_MCP_PROTOCOL_VERSION=2026-07-28 in the
// server's env table. With the flag alone Codex opens with initialize.
func TestCodexModern(t *testing.T) {
	// Not parallel (see harness_test.go): a real host: Codex is heavy on both CPUs.
	codex := hostBin(t, "codex")
	h := newHostHome(t)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, eraPolicy))
	h.run(t, codex, append([]string{"mcp", "add", "--env", "CODEX_MCP_PROTOCOL_VERSION=2026-07-28", "gate", "--", g.cmd.Path}, g.cmd.Args[1:]...)...)

	a := startAppServer(t, h, codex, "-c", "features.mcp_2026_07_28=true")
	a.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1"}})
	a.send(map[string]any{"method": "initialized"})
	var thread struct {
		Thread struct{ ID string } `json:"thread"`
	}
	if err := json.Unmarshal(a.call("thread/start", map[string]any{}), &thread); err != nil || thread.Thread.ID == "" {
		t.Fatalf("thread/start: %v", err)
	}
	var status struct {
		Data []struct {
			Name  string                     `json:"name"`
			Tools map[string]json.RawMessage `json:"tools"`
		} `json:"data"`
	}
	if err := json.Unmarshal(a.call("mcpServerStatus/list", map[string]any{}), &status); err != nil {
		t.Fatal(err)
	}
	if len(status.Data) != 1 || status.Data[0].Tools["honest__echo"] == nil {
		t.Fatalf("codex lists %+v; expected the gate, with honest__echo", status.Data)
	}
	type result struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	callTool := func(tool string, args any) result {
		var r result
		raw := a.call("mcpServer/tool/call", map[string]any{"threadId": thread.Thread.ID, "server": "gate", "tool": tool, "arguments": args})
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := callTool("honest__blob", map[string]any{"bytes": 3}); r.IsError || len(r.Content) == 0 || r.Content[0].Text != "xxx" {
		t.Errorf("an allowed call through codex: %+v", r)
	}
	asked := 0
	a.onRequest = func(method string, params json.RawMessage) any {
		if method != "mcpServer/elicitation/request" {
			return map[string]any{"action": "decline"}
		}
		asked++
		return map[string]any{"action": "accept", "content": map[string]any{"approve": true}}
	}
	r := callTool("honest__echo", map[string]any{"text": "via codex"})
	if r.IsError || asked != 1 || len(r.Content) == 0 || r.Content[0].Text != "via codex" {
		t.Errorf("an approved ask through codex (asked %d times): %+v", asked, r)
	}
	outcomes := map[string]int{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			outcomes[fmt.Sprint(l["outcome"])]++
		}
	}
	if outcomes["input_required"] != 1 || outcomes["approved"] != 1 {
		t.Errorf("approval audit outcomes %v: want one input-required round and one approval (the 2026-07-28 path)", outcomes)
	}
}
