package e2e

// Issue 8, found in review: member names a case-insensitive server reads.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Go server that decodes params with encoding/json reads "Arguments" as
// the arguments and "Path" as the path. Under a secrets rule written as the
// shipped developer.yaml writes it ("path" in args && ...), neither
// spelling reads the secret through the real binary; the exact spelling of
// an ordinary file still works.
func TestBypassCaseVariantMembers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ssh := filepath.Join(dir, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	const canary = "PRIVATE-KEY-CANARY-5f1c"
	key := filepath.Join(ssh, "id_ed25519")
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(key, []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("just notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	pol := `version: 1
fallback: deny
allow: [mcp:fs:read_file]
rules:
  - name: no-secret-files
    match: mcp:fs:*
    when: '["path", "source", "destination"].exists(k, k in args && path.has_segment(args[k], [".ssh"]))'
    action: deny
    reason: Secrets never reach the model.
`
	g := gateCommand(t, map[string]server{"fs": testserver("lenient")}, "--policy", writePolicy(t, pol))
	h := startRaw(t, g)
	h.initialize()
	h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for i, args := range []string{
		fmt.Sprintf(`"Arguments":{"path":%q}`, key),
		fmt.Sprintf(`"argument\u017f":{"path":%q}`, key),
		fmt.Sprintf(`"arguments":{"Path":%q}`, key),
		fmt.Sprintf(`"arguments":{"PATH":%q}`, key),
	} {
		id := fmt.Sprint(10 + i)
		resp := h.send(id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"fs__read_file",%s}}`, id, args))
		if strings.Contains(resp, canary) {
			t.Errorf("%s: the secret reached the host: %s", args, resp)
		}
		if !strings.Contains(resp, `"isError":true`) && !strings.Contains(resp, `"error":`) {
			t.Errorf("%s: not refused: %s", args, resp)
		}
	}
	resp := h.send("20", fmt.Sprintf(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":%q}}}`, notes))
	if !strings.Contains(resp, "just notes") {
		t.Fatalf("an ordinary read failed: %s", resp)
	}
}

// What CEL says about an argument in a failed condition's error (a value
// used as a map key, a value used as a pattern) reaches the audit log only
// as a size and digest, through the real binary.
func TestBypassConditionErrorsCarryNoArgument(t *testing.T) {
	t.Parallel()
	const canary = "CANARYcond9Kq"
	pol := `version: 1
fallback: deny
allow: ["mcp:s:env"]
rules:
  - name: by-pattern
    match: mcp:s:env
    when: 'args.x.matches(args.re)'
    action: deny
  - name: by-key
    match: mcp:s:env
    when: 'args.m[args.k] == 1'
    action: deny
`
	g := gateCommand(t, map[string]server{"s": testserver("secrets")}, "--policy", writePolicy(t, pol))
	h := startRaw(t, g)
	h.initialize()
	h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for i, args := range []string{
		`{"x":"a","re":"` + canary + `(","m":{},"k":"a"}`,
		`{"x":"a","re":"b","m":{},"k":"` + canary + `"}`,
	} {
		id := fmt.Sprint(10 + i)
		resp := h.send(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"s__env","arguments":`+args+`}}`)
		if !strings.Contains(resp, "its condition failed") {
			t.Fatalf("%s: not refused by a failed condition: %s", args, resp)
		}
	}
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "its condition failed") {
		t.Fatalf("no failed condition audited: the test proves nothing\n%s", data)
	}
	for _, line := range strings.Split(string(data)+"\n"+g.stderr.String(), "\n") {
		if strings.Contains(line, canary) {
			t.Errorf("a log line carries an argument: %s", line)
		}
	}
}

// A "this tool, for this session" yes covers the rule the human was shown:
// through the real binary and a real go-sdk host, a later call of the tool
// that another rule asks about is asked again.
func TestBypassSessionApprovalOtherRule(t *testing.T) {
	t.Parallel()
	pol := `version: 1
fallback: deny
approval:
  timeout: 30s
rules:
  - name: system-echo
    match: "mcp:honest:echo"
    when: 'args.text.startsWith("/etc/")'
    action: ask
    reason: This names a system file; always look.
  - name: echo
    match: "mcp:honest:echo"
    action: ask
    reason: Echoes need a human.
`
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, pol))
	var questions []string
	sess := g.connect(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			questions = append(questions, req.Params.Message)
			if len(questions) == 1 {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "session"}}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	for i, text := range []string{"hello", "again"} {
		if res := call(t, sess, "honest__echo", map[string]any{"text": text}); res.IsError {
			t.Fatalf("call %d: %s", i, resultText(res))
		}
	}
	if len(questions) != 1 {
		t.Fatalf("%d questions for two calls by one rule; want 1", len(questions))
	}
	res := call(t, sess, "honest__echo", map[string]any{"text": "/etc/shadow"})
	if !res.IsError || len(questions) != 2 || !strings.Contains(questions[1], "always look") {
		t.Fatalf("the call another rule asks about: %q after %d questions", resultText(res), len(questions))
	}
}
