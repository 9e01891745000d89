package proxy

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// secretsPolicy denies reads of a .ssh path by a has()-guarded condition,
// as the shipped developer.yaml does, and allows the tool otherwise.
const secretsPolicy = `version: 1
fallback: deny
allow: ["mcp:s:*"]
rules:
  - name: no-ssh
    match: mcp:s:t
    when: '"path" in args && path.has_segment(args.path, [".ssh"])'
    action: deny
    reason: no secrets
`

// A server whose JSON decoder matches member names without regard to case
// (Go's encoding/json, and so mcp-go and every hand-written Go server)
// reads "Arguments" as the arguments and "Path" as the path. The gate must
// not decide on a reading in which they are absent.
func TestCaseVariantMemberNotDecidedAbsent(t *testing.T) {
	up := &methodLog{}
	l := &scriptLauncher{servers: map[string]scripted{"s": up.serve}}
	h := startParamsHost(t, Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     l,
		StartTimeout: 10 * time.Second,
		Policy:       static(t, secretsPolicy),
		Logger:       slog.New(slog.DiscardHandler),
	})
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, params := range []string{
		`{"name":"s__t","Arguments":{"path":"/home/me/.ssh/id_rsa"}}`,
		`{"name":"s__t","ARGUMENTS":{"path":"/home/me/.ssh/id_rsa"}}`,
		`{"name":"s__t","argument` + "\u017f" + `":{"path":"/home/me/.ssh/id_rsa"}}`,
		`{"name":"s__t","arguments":{"Path":"/home/me/.ssh/id_rsa"}}`,
	} {
		r := h.call("tools/call", params)
		if r.Error == nil && !strings.Contains(string(r.Result), `"isError":true`) {
			t.Errorf("%s: the call was let through: %s", params, r.Result)
		}
	}
	if seen := up.methods(); len(seen) != 0 {
		t.Fatalf("the upstream received %v", seen)
	}
}

// A key with U+0000 in it is read by parsers built on C strings as the
// text before it; it is refused wherever it is, and a value with it passes.
func TestNulInKeyRefused(t *testing.T) {
	up := &methodLog{}
	h := startParamsHost(t, Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     &scriptLauncher{servers: map[string]scripted{"s": up.serve}},
		StartTimeout: 10 * time.Second,
		Policy:       static(t, secretsPolicy),
		Logger:       slog.New(slog.DiscardHandler),
	})
	if r := h.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, params := range []string{
		`{"name":"s__t","arguments":{"path\u0000x":"/home/me/.ssh/id_rsa"}}`,
		`{"name":"s__t","arguments":{"o":[{"path\u0000":"/home/me/.ssh/id_rsa"}]}}`,
	} {
		if r := h.call("tools/call", params); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: got %s %+v; want -32602", params, r.Result, r.Error)
		}
	}
	if seen := up.methods(); len(seen) != 0 {
		t.Fatalf("the upstream received %v", seen)
	}
	if r := h.call("tools/call", `{"name":"s__t","arguments":{"text":"a\u0000b","path\u0000s":[]}}`); r.Error == nil {
		t.Fatalf("a key with U+0000 after a value with it passed")
	}
	if r := h.call("tools/call", `{"name":"s__t","arguments":{"text":"a\u0000b","k":{"x":"\u0000"}}}`); r.Error != nil {
		t.Fatalf("a value with U+0000 was refused: %+v", r.Error)
	}
}

// spellingIn passes a key spelled exactly as an envelope member without
// folding it against the others: sound only while no two of the names
// fold together.
func TestEnvelopeMembersFoldApart(t *testing.T) {
	for i, a := range envelopeMembers {
		for _, b := range envelopeMembers[i+1:] {
			if strings.EqualFold(a, b) {
				t.Errorf("envelope members %q and %q fold together: spellingIn's exact-name pass would let one stand for the other", a, b)
			}
		}
	}
}
