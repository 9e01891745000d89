package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/policies"
)

// TestCaseFiles runs every case file of testdata/cases through the real
// parsers. A file with an inline policy runs against it; example-NAME.yaml
// runs against policies/NAME.yaml.
func TestCaseFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d case files; expected the full set", len(files))
	}
	total := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := ParseCases(file, data)
			if err != nil {
				t.Fatalf("parse cases:\n%v", err)
			}
			var p *Policy
			var warnings []Warning
			if cf.HasPolicy() {
				p, warnings, err = cf.InlinePolicy(Options{})
			} else {
				name, ok := strings.CutPrefix(filepath.Base(file), "example-")
				if !ok {
					t.Fatalf("%s has no inline policy and is not an example-NAME.yaml file", file)
				}
				var src []byte
				src, err = policies.FS.ReadFile(name)
				if err != nil {
					t.Fatalf("no policies/%s for %s: %v", name, file, err)
				}
				p, warnings, err = Parse(name, src, Options{})
			}
			if err != nil {
				t.Fatalf("policy:\n%v", err)
			}
			for _, w := range warnings {
				t.Errorf("unexpected warning: %s", w)
			}
			for _, r := range cf.Run(p) {
				total++
				if !r.Pass {
					t.Error(r)
				}
			}
		})
	}
	t.Logf("%d cases", total)
}

// TestExamplesParseCleanly: every shipped policy parses without problems or
// warnings, and every one has its case file.
func TestExamplesParseCleanly(t *testing.T) {
	entries, err := policies.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"default.yaml": false, "read-only.yaml": false, "developer.yaml": false, "locked-down.yaml": false}
	for _, e := range entries {
		data, err := policies.FS.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		p, warnings, err := Parse(e.Name(), data, Options{})
		if err != nil {
			t.Errorf("%s:\n%v", e.Name(), err)
			continue
		}
		if len(warnings) > 0 {
			t.Errorf("%s: warnings %v", e.Name(), warnings)
		}
		if p.Revision() != revisionOf(data) {
			t.Errorf("%s: revision %s", e.Name(), p.Revision())
		}
		if _, err := os.Stat(filepath.Join("testdata/cases", "example-"+e.Name())); err != nil {
			t.Errorf("%s has no case file: %v", e.Name(), err)
		}
		want[e.Name()] = true
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("policies/%s is missing", name)
		}
	}
}

func TestDefault(t *testing.T) {
	p := Default()
	if p.Source() != DefaultSource {
		t.Errorf("source %q", p.Source())
	}
	if p.Fallback() != Ask {
		t.Errorf("fallback %s; want ask", p.Fallback())
	}
	if d := p.Decide(Call{Server: "github", Name: "create_issue"}); d.Verdict != Ask || d.Rule != "fallback" {
		t.Errorf("decision %+v", d)
	}
	if p.ApprovalTimeout() != defaultApprovalTimeout {
		t.Errorf("timeout %s", p.ApprovalTimeout())
	}
	if Default() != p {
		t.Error("Default() parses again; expected one snapshot")
	}
}

// TestCaseRunReportsFailures: a case that does not hold fails, with a
// message saying what was got and what was wanted.
func TestCaseRunReportsFailures(t *testing.T) {
	src := `policy: |
  version: 1
  fallback: ask
  deny: [mcp:github:delete_*]
cases:
  - name: wrong verdict
    tool: mcp:github:delete_repo
    want: allow
  - name: wrong rule
    tool: mcp:github:delete_repo
    want: deny
    rule: deny[1]
  - name: wrong reason
    tool: mcp:github:delete_repo
    want: deny
    reason_contains: nope
  - name: right
    tool: mcp:github:delete_repo
    want: deny
    rule: deny[0]
`
	cf, err := ParseCases("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := cf.InlinePolicy(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := cf.Run(p)
	wantMsg := []string{"want allow", "want rule deny[1]", `want a reason containing "nope"`, ""}
	for i, r := range res {
		if r.Pass != (wantMsg[i] == "") {
			t.Errorf("case %d pass=%v: %s", i, r.Pass, r)
			continue
		}
		if !strings.Contains(r.Msg, wantMsg[i]) || (!r.Pass && !strings.Contains(r.Msg, "got deny by deny[0]")) {
			t.Errorf("case %d message %q; want it to contain %q and what was got", i, r.Msg, wantMsg[i])
		}
	}
	if got := res[0].String(); !strings.HasPrefix(got, "c.yaml:6:5: FAIL wrong verdict: got deny") {
		t.Errorf("String() = %q", got)
	}
}

func TestParseCasesErrors(t *testing.T) {
	src := `policy: 12
cases:
  - name: a
    tool: mcp:github
    want: maybe
    extra: 1
  - tool: sampling:x
  - tool: mcp:a:b
    want: deny
    args: {a: 1}
    args_json: "{}"
  - tool: mcp:a:b
    want: deny
    args: {1: x}
  - tool: mcp:a:b
    want: deny
    args: {x: .inf}
    rule: ""
`
	_, err := ParseCases("c.yaml", []byte(src))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v; want a *ParseError", err)
	}
	for _, want := range []string{
		`c.yaml:1:9: policy is the number 12; expected a string`,
		`c.yaml:4:11: cases[0].tool: policy name "mcp:github": expected mcp:<server>:<name>`,
		`c.yaml:5:11: cases[0].want is "maybe"; expected allow, ask or deny`,
		`c.yaml:6:5: found the unknown key "extra" in cases[0]`,
		`c.yaml:7:5: cases[1] has no want`,
		`c.yaml:11:5: cases[2] has both args and args_json`,
		`c.yaml:14:12: cases[3].args: found the key the number 1; expected a string key`,
		`c.yaml:17:15: cases[4].args: found the number .inf, which JSON cannot hold`,
		`c.yaml:18:11: cases[4].rule is empty`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if len(pe.Problems) != 9 {
		t.Errorf("%d problems; want 9:\n%v", len(pe.Problems), err)
	}
	for _, bad := range []string{"", "cases: []", "policy: |\n  x\n", "- a", "cases: {}", "cases: [1]"} {
		if _, err := ParseCases("c.yaml", []byte(bad)); err == nil {
			t.Errorf("ParseCases(%q) succeeded; want an error", bad)
		}
	}
}

// TestInlinePolicyPositions: problems of an inline policy point at lines
// and columns of the case file.
func TestInlinePolicyPositions(t *testing.T) {
	src := `# a comment
policy: |
  version: 1
  fallback: allow
  rules:
    - match: mcp:a:b
      when: args.x ==
      action: allow
cases:
  - tool: mcp:a:b
    want: ask
`
	cf, err := ParseCases("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cf.InlinePolicy(Options{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`c.yaml:4:13: fallback is "allow"`, `c.yaml:7:22: rules[0].when: the condition does not compile`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	cf2, err := ParseCases("c.yaml", []byte("cases:\n  - tool: mcp:a:b\n    want: ask\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cf2.InlinePolicy(Options{}); err == nil {
		t.Error("InlinePolicy without a policy succeeded")
	}
}
