package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// earlyPackages must be initialised before the other packages' initialisers
// run (see their docs). Go initialises, of the packages whose imports are
// done, the first by import path, so each may import only what allowed
// lists: any other import would put its initialiser after that package's.
// later names packages whose initialisers must come after it: those that
// allocate most (oneproc) or build deep stacks (mainstack).
var earlyPackages = []struct {
	name    string
	allowed []string
	later   []string
}{
	{"oneproc", []string{"runtime"}, []string{"os", "google.golang.org/protobuf/reflect/protodesc", "github.com/google/cel-go/cel", "github.com/mcp-gate/mcp-gate/guard"}},
	{"mainstack", []string{"unsafe"}, []string{"os", "go.yaml.in/yaml/v3", "google.golang.org/protobuf/reflect/protodesc", "github.com/google/cel-go/cel", "github.com/mcp-gate/mcp-gate/policy"}},
}

func TestEarlyPackagesImports(t *testing.T) {
	for _, early := range earlyPackages {
		files, err := filepath.Glob(filepath.Join("internal", early.name, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s's files: %v %v", early.name, files, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(early.allowed, p) {
					t.Errorf("%s imports %q: %s may import only %v, or its initialiser runs after that package's", f, p, early.name, early.allowed)
				}
			}
		}
	}
}

func TestEarlyPackagesInitialisedFirst(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	order := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = len(order)
		}
	}
	for _, early := range earlyPackages {
		at, ok := order["github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/"+early.name]
		if !ok {
			t.Errorf("no init line for %s in GODEBUG=inittrace=1's output:\n%s", early.name, out)
			continue
		}
		for _, later := range early.later {
			if l, ok := order[later]; ok && l < at {
				t.Errorf("%s was initialised before %s (%d, %s %d of %d)", later, early.name, l, early.name, at, len(order))
			} else if !ok {
				t.Errorf("no init line for %s: the test no longer says what it claims", later)
			}
		}
	}
}
