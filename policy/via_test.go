package policy

import (
	"slices"
	"strings"
	"testing"
)

// Issue 13: approval.via, approval.hosts and a rule's via are read
// strictly, each problem at its line and column.
func TestParseViaErrors(t *testing.T) {
	const head = "version: 1\nfallback: ask\n"
	tests := []struct{ name, src, want string }{
		{"unknown channel", head + "approval:\n  via: [elicitation, phone]\n", `p.yaml:4:22: approval.via names the channel "phone"; expected elicitation or local`},
		{"twice", head + "approval:\n  via: [local, local]\n", `p.yaml:4:16: approval.via names "local" twice; expected each channel once`},
		{"empty", head + "approval:\n  via: []\n", `p.yaml:4:8: approval.via is empty; expected at least one of elicitation, local`},
		{"not a list", head + "approval:\n  via: local\n", `p.yaml:4:8: approval.via is "local"; expected a list of channels such as [elicitation, local]`},
		{"not a string", head + "approval:\n  via: [1]\n", `p.yaml:4:9: approval.via entry is`},
		{"hosts not a mapping", head + "approval:\n  hosts: [a]\n", `p.yaml:4:10: approval.hosts is a list; expected a mapping from a host's clientInfo name`},
		{"host without via", head + "approval:\n  hosts:\n    codex: {}\n", `p.yaml:5:12: approval.hosts.codex has no via`},
		{"host unknown key", head + "approval:\n  hosts:\n    codex: {via: [local], timeout: 1s}\n", `p.yaml:5:27: found the unknown key "timeout" in approval.hosts.codex; expected one of: via`},
		{"host bad channel", head + "approval:\n  hosts:\n    codex: {via: [sms]}\n", `p.yaml:5:19: approval.hosts.codex.via names the channel "sms"`},
		{"host twice", head + "approval:\n  hosts:\n    codex: {via: [local]}\n    codex: {via: [local]}\n", `p.yaml:6:5:`},
		{"rule via on deny", head + "rules:\n  - match: mcp:a:b\n    action: deny\n    via: [local]\n", `p.yaml:6:10: rules[0] has via, but its action is deny; expected via only on a rule whose action is ask`},
		{"rule via unknown", head + "rules:\n  - match: mcp:a:b\n    action: ask\n    via: [pager]\n", `p.yaml:6:11: rules[0].via names the channel "pager"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("p.yaml", []byte(tt.src), Options{})
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.src)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
		})
	}
}

// A rule's via wins over the host's, which wins over approval.via, which
// wins over the default.
func TestApprovalViaPrecedence(t *testing.T) {
	src := `version: 1
fallback: ask
approval:
  via: [elicitation]
  hosts:
    codex-mcp-client: {via: [local]}
rules:
  - name: local-only
    match: mcp:a:b
    action: ask
    via: [local, elicitation]
`
	p, _, err := Parse("p.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule, client string
		want         []string
	}{
		{"local-only", "claude-code", []string{"local", "elicitation"}},
		{"local-only", "codex-mcp-client", []string{"local", "elicitation"}},
		{"fallback", "codex-mcp-client", []string{"local"}},
		{"fallback", "claude-code", []string{"elicitation"}},
		{"fallback", "", []string{"elicitation"}},
	} {
		if got := p.ApprovalVia(c.rule, c.client); !slices.Equal(got, c.want) {
			t.Errorf("ApprovalVia(%q, %q) = %v, want %v", c.rule, c.client, got, c.want)
		}
	}
	d, _, err := Parse("p.yaml", []byte("version: 1\nfallback: ask\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ApprovalVia("fallback", "x"); !slices.Equal(got, []string{"elicitation", "local"}) {
		t.Errorf("default via = %v", got)
	}
}

// ViaNamed tells channels the policy chose from the default order, for
// each place that can name them (a team gate asks its users on the local
// surface only where the policy named it).
func TestViaNamed(t *testing.T) {
	parse := func(src string) *Policy {
		t.Helper()
		p, _, err := Parse("p.yaml", []byte(src), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rule := parse("version: 1\nfallback: deny\nrules:\n  - {name: r, match: \"mcp:a:b\", action: ask, via: [local]}\n  - {name: s, match: \"mcp:a:c\", action: ask}\n")
	host := parse("version: 1\nfallback: ask\napproval: {hosts: {codex-mcp-client: {via: [local]}}}\n")
	all := parse("version: 1\nfallback: ask\napproval: {via: [elicitation, local]}\n")
	none := parse("version: 1\nfallback: ask\n")
	for _, c := range []struct {
		p            *Policy
		rule, client string
		want         bool
	}{
		{rule, "r", "x", true}, {rule, "s", "x", false}, {rule, "pins", "x", false},
		{host, "fallback", "codex-mcp-client", true}, {host, "fallback", "claude-code", false}, {host, "fallback", "", false},
		{all, "fallback", "x", true}, {all, "pins", "", true},
		{none, "fallback", "x", false}, {none, "pins", "", false},
	} {
		if got := c.p.ViaNamed(c.rule, c.client); got != c.want {
			t.Errorf("ViaNamed(%q, %q) = %v, want %v", c.rule, c.client, got, c.want)
		}
	}
}
