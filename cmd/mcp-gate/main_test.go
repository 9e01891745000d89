package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/policy"
)

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, exitUsage, "Usage"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"explain"}, exitUsage, "expected exactly one TOOL"},
		{[]string{"explain", "--args", "[1]", "mcp:a:b"}, exitUsage, "expected a JSON object"},
		{[]string{"explain", "nonsense"}, exitUsage, ""},
		{[]string{"serve", "--log-level", "loud", "--servers", "x"}, exitUsage, "--log-level"},
		{[]string{"serve", "--servers", "/nonexistent/servers.json"}, 1, "no such file"},
		{[]string{"check", "--policy", "/nonexistent/policy.yaml"}, 1, "no such file"},
		{[]string{"check", "--strict"}, exitUsage, "--strict needs the servers file"},
		{[]string{"explain", `mcp:s:x\`}, exitUsage, "lone"},
		{[]string{"version"}, 0, ""},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.says) {
			t.Errorf("mcp-gate %v: exit %d, output %q; want exit %d mentioning %q", c.args, code, out.String()+errb.String(), c.code, c.says)
		}
	}
}

func TestParseAnySpelling(t *testing.T) {
	for in, want := range map[string]string{
		"mcp:github:create_issue":         "mcp:github:create_issue",
		"github__create_issue":            "mcp:github:create_issue",
		"mcp__gate__github__create_issue": "mcp:github:create_issue",
		"prompt:docs:summarise":           "prompt:docs:summarise",
		"resource:fs:file:///etc/hosts":   "resource:fs:file:///etc/hosts",
		"sampling:github":                 "sampling:github",
		// The tool is everything after the server, colons included; glob
		// characters print escaped.
		"mcp:shell:a:b":          "mcp:shell:a:b",
		"mcp:shell:x*y":          `mcp:shell:x\*y`,
		`mcp:shell:x\*y`:         `mcp:shell:x\*y`,
		"prompt:s:a:b":           "prompt:s:a:b",
		"resource:fs:file:///a*": `resource:fs:file:///a\*`,
	} {
		c, err := parseAnySpelling(in, "gate")
		if err != nil || c.PolicyName() != want {
			t.Errorf("parseAnySpelling(%q) = %q, %v; want %q", in, c.PolicyName(), err, want)
		}
		if strings.HasPrefix(in, "mcp") && c.Kind != policy.KindTool {
			t.Errorf("%q: kind %v", in, c.Kind)
		}
	}
}
