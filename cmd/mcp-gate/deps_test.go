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
