package loadgen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles a package of this module (a path from the module root,
// such as "cmd/mcp-gate"), found from the working directory up, into out:
// the benchmark, soak and storm tools build the binaries they drive with
// it. It builds as the Makefile and the Dockerfile release them (static,
// no symbol tables): the resident memory measured is that of the binary
// users run.
func Build(out, pkg string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("finding the module: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return fmt.Errorf("run inside the mcp-gate module")
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./"+pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Dir = filepath.Dir(mod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// Snapshot is what a process holds at one moment (Linux /proc).
type Snapshot struct {
	RSSKB, HWMKB, FDs, Children int
	Threads                     int // OS threads (Threads: in /proc status)
}

func (s Snapshot) String() string {
	return fmt.Sprintf("RSS %.1f MB (peak %.1f MB), %d fds, %d children", float64(s.RSSKB)/1024, float64(s.HWMKB)/1024, s.FDs, s.Children)
}

// Measure reads pid's memory, descriptors and number of child processes.
func Measure(pid int) (Snapshot, error) {
	var s Snapshot
	var err error
	if s.RSSKB, s.HWMKB, err = PeakRSS(pid); err != nil {
		return s, err
	}
	if s.FDs, err = OpenFDs(pid); err != nil {
		return s, err
	}
	s.Children = countChildren(pid)
	if tasks, err := readDirNames(fmt.Sprintf("/proc/%d/task", pid)); err == nil {
		s.Threads = len(tasks)
	}
	return s, nil
}

// countChildren sums the children of every thread: a child belongs to
// the thread that forked it (the gate forks from one locked thread).
func countChildren(pid int) int {
	tasks, err := readDirNames(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return -1
	}
	n := 0
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t))
		if err == nil {
			n += len(strings.Fields(string(data)))
		}
	}
	return n
}

// PrivateDirs returns env with the gate's per-user cache and state
// (catalog cache, pins) under dir, so that a measured or soaked gate
// neither reads nor writes the user's own, and every run starts alike.
func PrivateDirs(env []string, dir string) []string {
	return append(env[:len(env):len(env)],
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"))
}

// BuildMissing builds into dir the gate and the echo server whose paths
// are empty, and sets those paths: the tools take either binary from a
// flag, or build this checkout's.
func BuildMissing(dir string, gate, echo *string) error {
	for _, b := range []struct {
		path *string
		name string
		pkg  string
	}{{gate, "mcp-gate", "cmd/mcp-gate"}, {echo, "echoserver", "e2e/echoserver"}} {
		if *b.path != "" {
			continue
		}
		*b.path = filepath.Join(dir, b.name)
		if err := Build(*b.path, b.pkg); err != nil {
			return err
		}
	}
	return nil
}

// EchoServers writes dir/servers.json, a servers file whose one server,
// echo, is the echo server at echo, and returns its path.
func EchoServers(dir, echo string) (string, error) {
	path := filepath.Join(dir, "servers.json")
	return path, os.WriteFile(path, fmt.Appendf(nil, `{"mcpServers":{"echo":{"command":%q}}}`, echo), 0o600)
}
