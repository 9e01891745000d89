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

// The release binary does not link the heap profile's writer, so that the
// linker turns the runtime's allocation sampling off from the first
// allocation (memprofile_off.go): its runtime.disableMemoryProfiling is
// set and runtime.MemProfile is not linked. A binary built with -tags
// memprofile has both the profile and the sampling; one without says that
// MCP_GATE_MEMPROFILE does nothing rather than ignoring it.
func TestReleaseBinarySamplesNoAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the binary's ELF symbols")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := t.TempDir()
	for _, c := range []struct {
		tags    string
		sampled bool
	}{{"", false}, {"memprofile", true}} {
		bin := filepath.Join(dir, "mcp-gate-"+c.tags)
		build := exec.Command(goTool, "build", "-tags", c.tags, "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %q: %v\n%s", c.tags, err, out)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		var disabled, memProfile bool
		for _, s := range syms {
			switch s.Name {
			case "runtime.MemProfile":
				memProfile = true
			case "runtime.disableMemoryProfiling":
				for _, sec := range f.Sections {
					if sec.Addr <= s.Value && s.Value < sec.Addr+sec.Size && sec.Type == elf.SHT_PROGBITS {
						b := make([]byte, 1)
						if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
							t.Fatal(err)
						}
						disabled = b[0] == 1
					}
				}
			}
		}
		f.Close()
		if disabled == c.sampled || memProfile != c.sampled {
			t.Errorf("tags %q: runtime.disableMemoryProfiling %v, runtime.MemProfile linked %v; want sampling %v", c.tags, disabled, memProfile, c.sampled)
		}
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "MCP_GATE_MEMPROFILE="+filepath.Join(dir, "heap-"+c.tags+".pprof"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s version: %v\n%s", bin, err, out)
		}
		_, statErr := os.Stat(filepath.Join(dir, "heap-"+c.tags+".pprof"))
		said := strings.Contains(string(out), "build it with -tags memprofile")
		if c.sampled && (statErr != nil || said) || !c.sampled && (statErr == nil || !said) {
			t.Errorf("tags %q: MCP_GATE_MEMPROFILE wrote a profile: %v, said why not: %v\n%s", c.tags, statErr == nil, said, out)
		}
	}
}
