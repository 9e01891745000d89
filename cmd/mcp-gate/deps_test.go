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

// The Prometheus client is linked (its package init registers the default
// collectors once, allocating about 250 KB), but only package metrics may
// use it: everything else reaches it through proxy.Observer and
// policy.ReloadObserver, whose nil values cost a comparison, so that the
// hot path does not depend on it and the stdio command creates no
// registry (TestOpsOffStartsNothing).
func TestPrometheusOnlyThroughMetrics(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "github.com/mcp-gate/mcp-gate") {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "github.com/prometheus/") && f[0] != "github.com/mcp-gate/mcp-gate/metrics" {
				t.Errorf("%s imports %s; only package metrics may", f[0], imp)
			}
		}
	}
}
