package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// The attribution reads the resident pages of a gate built with its
// symbols and started: its code by function symbols, its pclntab by
// function and its type descriptors by DWARF, so that little of each is
// left unnamed. A change of the pclntab's layout in a new Go release fails
// here rather than in a misleading report.
func TestAttributesAGatesPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/pagemap")
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "mcp-gate")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", gate, "../../cmd/mcp-gate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the gate: %v\n%s", err, out)
	}
	c, err := startGate(dir, gate, "/nonexistent/echo", "start", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := newAttributor(gate)
	if err != nil {
		t.Fatal(err)
	}
	pages, _, err := residentPages(c.Pid(), gate)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		a.page(p)
	}
	for _, sec := range []string{".text", ".rodata", ".gopclntab"} {
		total, unnamed := a.bySec[sec], a.byPkg[sec+" ?"]
		if total == 0 {
			t.Fatalf("no resident bytes in %s: %v", sec, a.bySec)
		}
		// The rest is padding, strings and the like: go:string.* is one
		// symbol, but no type, function or pclntab row is unnamed.
		if limit := total / 2; unnamed > limit {
			t.Errorf("%s: %d of %d resident bytes unattributed", sec, unnamed, total)
		}
	}
	for _, want := range []string{".text runtime", ".gopclntab runtime", ".rodata runtime",
		".gopclntab pclntab:functab", ".text github.com/mcp-gate/mcp-gate/proxy"} {
		if a.byPkg[want] == 0 {
			t.Errorf("nothing attributed to %q", want)
		}
	}
	if a.bySec[".gopclntab pctab"] == 0 || a.bySec[".gopclntab functab, _func"] == 0 {
		t.Errorf("the pclntab's parts are not reported: %v", a.bySec)
	}
	if m := a.moduleOf("github.com/mcp-gate/mcp-gate/proxy"); m != "github.com/mcp-gate/mcp-gate" {
		t.Errorf("module of proxy: %q", m)
	}
	if m := a.moduleOf("github.com/google/cel-go/cel"); m != "github.com/google/cel-go" {
		t.Errorf("module of cel-go/cel: %q", m)
	}
	if m := a.moduleOf("net/http"); m != "std" {
		t.Errorf("module of net/http: %q", m)
	}
}

// A pc-value table is pairs of varints ended by a zero value delta after
// the first pair; the first pair's value delta may be zero.
func TestPCValueLen(t *testing.T) {
	for _, c := range []struct {
		table []byte
		want  uint64
	}{
		{[]byte{0x00, 0x05, 0x00, 0xff}, 3},             // (0, 5), end
		{[]byte{0x02, 0x05, 0x04, 0x81, 0x01, 0x00}, 6}, // (2, 5), (4, 129), end
		{[]byte{0x02}, 1},                               // cut short: what there is
		{nil, 0},
	} {
		if got := pcvalueLen(c.table); got != c.want {
			t.Errorf("pcvalueLen(%x) = %d, want %d", c.table, got, c.want)
		}
	}
}

func TestPkgOf(t *testing.T) {
	for name, want := range map[string]string{
		"github.com/google/cel-go/common/types.(*Err).Type":                    "github.com/google/cel-go/common/types",
		"type:*github.com/mcp-gate/mcp-gate/proxy.Session":                     "github.com/mcp-gate/mcp-gate/proxy",
		"slices.pdqsortCmpFunc[go.shape.struct { net/http.key string }]":       "slices",
		"go:itab.*net.TCPConn,io.Reader":                                       "net",
		"type:struct { F uintptr; X0 *github.com/mcp-gate/mcp-gate/rpc.Conn }": "(anonymous struct and interface types)",
		"runtime.main":              "runtime",
		"pclntab:functab":           "pclntab:functab",
		"go:string.*":               "go:string.*",
		"main.main":                 "main",
		"internal/abi.(*Type).Kind": "internal/abi",
	} {
		if got := pkgOf(name); got != want {
			t.Errorf("pkgOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// A fault's cause is read from the root of its chain: the package whose
// initialiser ran (even when the fault on its first instruction lost the
// doInit frame), the call below main.main, or the runtime's own root.
func TestFaultCause(t *testing.T) {
	for _, c := range []struct {
		chain []string // leaf first, as perf prints it
		want  string
	}{
		{[]string{"net/http.parsePattern", "net/http.HandleFunc", "expvar.init.0", "runtime.doInit1", "runtime.main", "runtime.goexit.abi0"}, "init expvar"},
		{[]string{"crypto/internal/fips140deps/cpu.init", "runtime.main", "runtime.goexit.abi0"}, "init crypto/internal/fips140deps/cpu"},
		{[]string{"policy.readDocument", "main.openPolicy", "main.serve", "main.run", "main.main", "runtime.main", "runtime.goexit.abi0"}, "main: main.run > main.serve > main.openPolicy"},
		{[]string{"runtime.(*stkframe).getStackMap", "runtime.adjustframe", "runtime.copystack", "runtime.newstack", "runtime.morestack.abi0"}, "root: runtime.morestack.abi0 > runtime.newstack > runtime.copystack"},
		{nil, "root: "},
	} {
		if got := faultCause(c.chain); got != c.want {
			t.Errorf("faultCause(%q) = %q, want %q", c.chain, got, c.want)
		}
	}
}
