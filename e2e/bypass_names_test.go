package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #8, names and patterns, through the real binary.

const colonPolicy = `version: 1
fallback: ask
allow: ["mcp:**"]
deny: ["mcp:hide:*"]
rules:
  - name: no-shell
    match: "mcp:shell:*"
    when: tool != ""
    action: deny
`

// An upstream picks its tool names: a:b, rm:rf:x and x*y must not slip past
// mcp:shell:* while mcp:** still sees them. Before the fix the allow won
// for every name with a colon: the calls reached the upstream, and the
// unconditional deny left those tools listed.
func TestBypassColonToolNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shellEvents, hideEvents := filepath.Join(dir, "shell-events"), filepath.Join(dir, "hide-events")
	g := gateCommand(t, map[string]server{
		"shell": testserver("colons", "--events", shellEvents),
		"hide":  testserver("colons", "--events", hideEvents),
	}, "--policy", writePolicy(t, colonPolicy))
	sess := g.connect(t, nil)

	tools := toolNames(t, sess)
	var shell []string
	for name := range tools {
		if strings.HasPrefix(name, "hide__") {
			t.Errorf("%s is listed although mcp:hide:* denies every tool of hide", name)
		}
		if strings.HasPrefix(name, "shell__") {
			shell = append(shell, name)
		}
	}
	if len(shell) != 4 {
		t.Fatalf("shell lists %v; want its 4 tools (a conditional deny does not hide)", shell)
	}
	for _, name := range shell {
		res := call(t, sess, name, map[string]any{})
		if !res.IsError || !strings.Contains(resultText(res), "no-shell") {
			t.Errorf("%s: %q; want a refusal by no-shell", name, resultText(res))
		}
	}
	for _, ev := range []string{shellEvents, hideEvents} {
		if b, _ := os.ReadFile(ev); strings.Contains(string(b), "call ") {
			t.Errorf("the upstream saw calls the policy denies:\n%s", b)
		}
	}
}

// explain reads mcp:shell:a:b as tool a:b of shell, and prints glob
// characters of a name escaped, so that the printed name is a glob that
// matches exactly that tool.
func TestBypassExplainColonNames(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, colonPolicy)
	for _, tc := range []struct{ in, tool, verdict string }{
		{"mcp:shell:a:b", `"tool":"mcp:shell:a:b"`, `"verdict":"deny"`},
		{"mcp:hide:rm:rf:x", `"tool":"mcp:hide:rm:rf:x"`, `"verdict":"deny"`},
		{"mcp:hide:x*y", `"tool":"mcp:hide:x\\*y"`, `"verdict":"deny"`},
		{`mcp:hide:x\*y`, `"tool":"mcp:hide:x\\*y"`, `"verdict":"deny"`},
		{"mcp:other:a:b", `"tool":"mcp:other:a:b"`, `"verdict":"allow"`},
	} {
		out, err := runCmd(gateBin, "explain", "--policy", pol, tc.in)
		if err != nil || !strings.Contains(out, tc.tool) || !strings.Contains(out, tc.verdict) {
			t.Errorf("explain %s: %v\n%s\nwant %s and %s", tc.in, err, out, tc.tool, tc.verdict)
		}
	}
}

// Globs that can never match are not silent: invisible characters are a
// load error, and an unquoted *glob is reported at its line and column with
// the fix.
func TestBypassPatternsThatNeverMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ policy, want string }{
		{"version: 1\nfallback: ask\ndeny: [\"mcp:shell:\\u200brm\"]\n", `policy.yaml:3:19: the glob "mcp:shell:\u200brm" has an invisible character (U+200B)`},
		{"version: 1\nfallback: ask\ndeny:\n  - \"mcp:shell:rm \"\n", `policy.yaml:4:18: the glob "mcp:shell:rm " has whitespace (U+0020)`},
		{"version: 1\nfallback: ask\ndeny: [*foo]\n", `policy.yaml:3:8: found *foo, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern, e.g. "*foo"`},
		{"version: 1\nfallback: ask\ndeny:\n  - mcp:a:b\n  - *\n", `policy.yaml:5:5: found *, which YAML reads as an alias`},
	} {
		pol := writePolicy(t, tc.policy)
		out, err := runCmd(gateBin, "check", "--policy", pol)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("check of %q: %v\n%s\nwant %s", tc.policy, err, out, tc.want)
		}
	}
}

// shippedServers is a servers file with every server the shipped policies
// name: the reference servers this suite has, and for the others a command
// that is not installed here, which check --strict reports without failing.
func shippedServers(t *testing.T) string {
	dir := t.TempDir()
	missing := server{Command: filepath.Join(dir, "not-installed-here")}
	return writeServers(t, dir, map[string]server{
		"filesystem": filesystem(dir),
		"everything": everything(),
		"github":     missing, "git": missing, "sqlite": missing, "memory": missing, "time": missing, "docs": missing,
	})
}

// The shipped policies pass check --strict with their case files: every
// glob over the filesystem server names a tool it really lists.
func TestShippedPoliciesCheckStrict(t *testing.T) {
	t.Parallel()
	needNode(t)
	servers := shippedServers(t)
	for _, name := range []string{"default", "read-only", "developer", "locked-down"} {
		t.Run(name, func(t *testing.T) {
			out, err := runCmd(gateBin, "check", "--strict", "--start-timeout", "60s", "--servers", servers,
				"--policy", filepath.Join("..", "policies", name+".yaml"),
				"--tests", filepath.Join("..", "policy", "testdata", "cases", "example-"+name+".yaml"))
			if err != nil {
				t.Fatalf("check --strict: %v\n%s", err, out)
			}
			for _, want := range []string{`ok: server "filesystem" lists 14 tools`, `note: server "github" could not be started`, "cases passed"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}

// check --strict fails on a glob naming a tool the server does not list,
// naming the nearest real one, and on a server the servers file lacks.
func TestCheckStrictFailsOnWarnings(t *testing.T) {
	t.Parallel()
	needNode(t)
	servers := shippedServers(t)
	data, err := os.ReadFile(filepath.Join("..", "policies", "developer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to, want string
		// plain: check without --strict warns too (it knows the servers
		// file, not the tools).
		plain bool
	}{
		{"- mcp:filesystem:read_text_file\n", "- mcp:filesystem:read_txt_file\n", `the glob "mcp:filesystem:read_txt_file" matches no tool that the server "filesystem" lists (the nearest is "read_text_file")`, false},
		{"- mcp:filesystem:list_directory\n", "- mcp:filesytem:list_directory\n", `the glob "mcp:filesytem:list_directory" names the server "filesytem", which the servers file does not list (the nearest is "filesystem")`, true},
	} {
		text := strings.Replace(string(data), tc.from, tc.to, 1)
		if text == string(data) {
			t.Fatalf("developer.yaml has no %q", tc.from)
		}
		pol := writePolicy(t, text)
		out, err := runCmd(gateBin, "check", "--strict", "--start-timeout", "60s", "--servers", servers, "--policy", pol)
		if err == nil || !strings.Contains(out, tc.want) || !strings.Contains(out, "--strict fails on any warning") {
			t.Errorf("check --strict: %v\n%s\nwant %s", err, out, tc.want)
		}
		// Without --strict the same policy passes.
		out, err = runCmd(gateBin, "check", "--servers", servers, "--policy", pol)
		if err != nil || strings.Contains(out, "warning: ") != tc.plain {
			t.Errorf("check without --strict: %v\n%s", err, out)
		}
	}
}
