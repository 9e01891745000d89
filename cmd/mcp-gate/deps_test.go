package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The binary carries the gate's own wire vocabulary (package protocol and
// rpc.Error); the go-sdk is for tests only, as the independent peer. Linking
// it back would add a third to the binary and its lossy decoding.
func TestBinaryDoesNotLinkSDK(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/modelcontextprotocol/go-sdk") {
			t.Errorf("the binary links %s; the go-sdk belongs in tests only", pkg)
		}
	}
}

// The metrics library (github.com/VictoriaMetrics/metrics) is linked, but
// only package metrics may use it: everything else reaches it through
// proxy.Observer and policy.ReloadObserver, whose nil values cost a
// comparison, so that the hot path does not depend on it and the stdio
// command creates no metrics set (TestOpsOffStartsNothing). The Prometheus
// client is not linked at all: its package initialisation (a default
// registry with Go and process collectors, about 250 KB in some 1,750
// allocations) and its dependencies cost every start of the gate, metrics
// on or off; its parser serves package metrics' tests only.
func TestMetricsLibraryOnlyThroughMetrics(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const library = "github.com/VictoriaMetrics/metrics"
	linked := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(f[0], "github.com/prometheus/") {
			t.Errorf("the binary links %s; the Prometheus client and its packages belong in tests only", f[0])
		}
		if f[0] == library {
			linked = true
		}
		if !strings.HasPrefix(f[0], "github.com/mcp-gate/mcp-gate") {
			continue
		}
		for _, imp := range f[1:] {
			if (imp == library || strings.HasPrefix(imp, library+"/")) && f[0] != "github.com/mcp-gate/mcp-gate/metrics" {
				t.Errorf("%s imports %s; only package metrics may", f[0], imp)
			}
			if strings.HasPrefix(imp, "github.com/prometheus/") {
				t.Errorf("%s imports %s; no package of the gate may", f[0], imp)
			}
		}
	}
	if !linked {
		t.Errorf("the binary does not link %s: this test checks nothing", library)
	}
}
