package policy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// celLazyChild marks the process of its own in which
// TestCELEnvironmentOnlyForConditions runs its checks: the environments
// are built once per process, so only a process in which nothing else has
// compiled a condition can tell whether a load built them.
const celLazyChild = "MCP_GATE_TEST_CEL_LAZY_CHILD"

// A policy without a condition builds no CEL environment (nor does the
// package's initialisation); the first policy with one builds them at its
// load, once, and a bad expression still fails that load with its line and
// column.
func TestCELEnvironmentOnlyForConditions(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCELEnvironmentOnlyForConditionsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), celLazyChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCELEnvironmentOnlyForConditionsChild") {
		t.Fatalf("the check in a process of its own failed (%v):\n%s", err, out)
	}
}

func TestCELEnvironmentOnlyForConditionsChild(t *testing.T) {
	if os.Getenv(celLazyChild) != "1" {
		t.Skip("run by TestCELEnvironmentOnlyForConditions in a process of its own")
	}
	if n := envBuilds.Load(); n != 0 {
		t.Fatalf("%d CEL environments built before any policy was loaded, want 0", n)
	}
	noCondition := map[string]string{
		// The benchmark's policy (e2e/bench): lists only.
		"lists":              "version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n",
		"every list":         "version: 1\nfallback: ask\napproval:\n  timeout: 1m\ndeny: [\"mcp:a:delete_*\"]\nask: [\"mcp:a:create_*\"]\nallow: [\"mcp:a:get_*\", \"mcp:b:**\"]\n",
		"rules without when": "version: 1\nfallback: deny\nrules:\n  - name: reads\n    match: [\"mcp:a:read_*\"]\n    action: allow\n  - name: writes\n    match: [\"mcp:a:write_*\"]\n    action: ask\n    reason: Writes need a human.\n",
	}
	for name, text := range noCondition {
		if _, _, err := Parse(name+".yaml", []byte(text), Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	Default()
	FailClosed()
	if n := envBuilds.Load(); n != 0 {
		t.Fatalf("loading policies without a condition built %d CEL environments, want 0", n)
	}

	// The first condition builds them, at load, and a bad one is refused
	// there with its place in the file.
	bad := "version: 1\nfallback: deny\nrules:\n  - match: mcp:a:b\n    when: arg.x == 1\n    action: deny\n"
	_, _, err := Parse("bad.yaml", []byte(bad), Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:5:11: rules[0].when: the condition does not compile: undeclared reference to 'arg'") {
		t.Fatalf("a policy with a bad condition: error %v, want it refused at bad.yaml:5:11", err)
	}
	if n := envBuilds.Load(); n != numReadings {
		t.Fatalf("after a condition was compiled %d CEL environments were built, want %d (one per path reading)", n, numReadings)
	}
	good := "version: 1\nfallback: deny\nrules:\n  - match: mcp:a:b\n    when: args.x == 1\n    action: allow\n"
	p, _, err := Parse("good.yaml", []byte(good), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(Call{Kind: KindTool, Server: "a", Name: "b", Args: []byte(`{"x":1}`)}); v.Verdict != Allow {
		t.Fatalf("the condition's policy decided %v, want allow", v.Verdict)
	}
	if n := envBuilds.Load(); n != numReadings {
		t.Fatalf("a second policy with a condition built the environments again: %d built, want %d", n, numReadings)
	}
}
