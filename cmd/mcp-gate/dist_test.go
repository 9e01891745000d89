package main

import (
	"debug/elf"
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Issue 13: `make dist` cross-compiles static binaries for linux and darwin
// on amd64 and arm64. This builds the Makefile's PLATFORMS with its flags
// and checks each binary's headers: the right format and CPU, and on Linux
// no interpreter or dynamic section (TestStaticBuild's check), on macOS no
// library but the system's own (cgo would add others).
func TestDistCrossBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles four binaries")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for line := range strings.SplitSeq(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "PLATFORMS"); ok {
			_, v, _ = strings.Cut(v, "=")
			platforms = strings.Fields(v)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		if !slices.Contains(platforms, want) {
			t.Errorf("the Makefile's PLATFORMS %v lack %s", platforms, want)
		}
	}
	for _, flag := range []string{"CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath", "-buildid="} {
		if !strings.Contains(string(mk), flag) {
			t.Errorf("the Makefile's dist target does not use %q", flag)
		}
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := t.TempDir()
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		t.Run(goos+"-"+goarch, func(t *testing.T) {
			out := filepath.Join(dir, "mcp-gate-"+goos+"-"+goarch)
			cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build for %s: %v\n%s", p, err, b)
			}
			switch goos {
			case "linux":
				f, err := elf.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
				if f.Machine != want {
					t.Errorf("ELF machine %v; expected %v", f.Machine, want)
				}
				if why := dynamic(t, out); why != "" {
					t.Errorf("not static: %s", why)
				}
			case "darwin":
				f, err := macho.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]
				if f.Cpu != want || f.Type != macho.TypeExec {
					t.Errorf("Mach-O cpu %v type %v; expected %v, an executable", f.Cpu, f.Type, want)
				}
				libs, err := f.ImportedLibraries()
				if err != nil {
					t.Fatal(err)
				}
				// Go reaches the OS through libSystem and, for the
				// certificate store, CoreFoundation and Security: all
				// shipped with macOS. Anything else (a Homebrew library)
				// would mean cgo, and a binary that fails on other Macs.
				for _, l := range libs {
					if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/Frameworks/") {
						t.Errorf("links %s: only the system's libraries are expected without cgo", l)
					}
				}
				if !slices.Contains(libs, "/usr/lib/libSystem.B.dylib") {
					t.Errorf("does not link libSystem: %v", libs)
				}
			}
		})
	}
}

// Issue 13: every `go install` line of the README installs this module's
// command: the module path of go.mod, or ./cmd/mcp-gate from a checkout.
func TestReadmeGoInstall(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(mod), "\n")
	module := strings.TrimSpace(strings.TrimPrefix(first, "module"))
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(readme), "\n") {
		for _, part := range strings.Split(line, "go install ")[1:] {
			n++
			target := strings.Fields(part)[0]
			if target != "./cmd/mcp-gate" && target != module+"/cmd/mcp-gate@latest" {
				t.Errorf("README: go install %s; expected %s/cmd/mcp-gate@latest or ./cmd/mcp-gate", target, module)
			}
		}
	}
	if n == 0 {
		t.Error("the README has no go install line")
	}
}
