package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// staticBuildFlags are the flags of the container image's build
// (deploy/Dockerfile, whose lint in deploy/kubernetes checks that it
// uses them too): the binary tested here is the one the image ships.
var staticBuildFlags = []string{"build", "-trimpath", "-ldflags=-s -w -buildid=", "-o"}

// Issue #12: the image is distroless-static / scratch, with no libc and
// no loader, so the binary must be fully static: built with CGO_ENABLED=0
// it has no program interpreter (PT_INTERP) and no dynamic section. A cgo
// dependency slipping in (net or os/user with cgo on) would make it
// dynamic, and it would fail at its first exec in the container.
func TestStaticBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := filepath.Join(t.TempDir(), "mcp-gate")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, append(staticBuildFlags, out, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	if why := dynamic(t, out); why != "" {
		t.Errorf("the CGO_ENABLED=0 build is not static: %s", why)
	}
	// A binary that runs: the image's entrypoint.
	if b, err := exec.Command(out, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "mcp-gate ") {
		t.Errorf("the static binary does not run: %v %q", err, b)
	}
}

// dynamic says what makes an ELF file dynamically linked, or "".
func dynamic(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return "it has a program interpreter (PT_INTERP)"
		case elf.PT_DYNAMIC:
			return "it has a dynamic segment (PT_DYNAMIC)"
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		return "it has a .dynamic section"
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return "it imports " + strings.Join(libs, ", ")
	}
	return ""
}

// The check sees a dynamic binary: the go tool itself is one on most
// systems; where it is static too, a cgo build of this package is.
func TestDynamicIsSeen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF")
	}
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		if _, err := os.Stat(p); err == nil {
			if dynamic(t, p) == "" {
				t.Logf("%s is static; trying the next", p)
				continue
			}
			return
		}
	}
	t.Skip("no dynamic binary on this system to check the check against")
}
