package loadgen

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// users run. The binary is linked beside out and copied into place
// (Install says why).
func Build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out+".linked", "./"+pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return buildWith(out, cmd, pkg)
}

// BuildC compiles the C program src (a path in the module, as
// e2e/crelay/crelay.c) into out with the system's C compiler ($CC, or cc),
// optimised, and installs it as Build does. A machine without a C compiler
// gets an error that says so.
func BuildC(out, src string) error {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return fmt.Errorf("building %s needs a C compiler: %w", src, err)
	}
	return buildWith(out, exec.Command(cc, "-O2", "-pthread", "-o", out+".linked", src), src+" with "+cc)
}

// buildWith runs cmd, which writes out+".linked", in the module's root,
// and installs what it wrote as out.
func buildWith(out string, cmd *exec.Cmd, what string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("finding the module: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return fmt.Errorf("run inside the mcp-gate module")
	}
	linked := out + ".linked"
	cmd.Dir = filepath.Dir(mod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	defer os.Remove(linked)
	if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing %s: %w", out, err)
	}
	return Install(out, linked)
}

// Install copies the executable src to dst, which must not exist, as an
// installer does: its bytes written with write(2), not as the linker left
// them. A process started from a file fresh from the Go linker, which
// writes its output through a shared memory mapping, is slower to start
// than one started from a copy of the same bytes, as every binary users
// run is (unpacked, downloaded or copied, or read back from the disk):
// on the benchmark's Linux 6.18 machine (ext4), a gate linked a moment
// before took 20.4 ms (p50) from spawn to its first call answered and
// 16.8 ms of CPU, its copy 15.0 ms and 13.6 ms, in the same interleaved
// runs. Measured from the linker's file, the gate would be charged some
// 3 ms per start, and more than the smaller binary beside it, that no
// installed gate pays.
func Install(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("installing %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return fmt.Errorf("installing %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("installing %s as %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("installing %s as %s: %w", src, dst, err)
	}
	return nil
}

// InstallInto copies each binary a path names into dir (Install) and sets
// the path to the copy; an empty path is left alone. The tools take their
// binaries from flags as built by anyone, often a moment before by go
// build: each is measured as installed, whatever way it was built.
func InstallInto(dir string, paths ...*string) error {
	for i, p := range paths {
		if *p == "" {
			continue
		}
		dst := filepath.Join(dir, fmt.Sprintf("installed-%d-%s", i, filepath.Base(*p)))
		if err := Install(dst, *p); err != nil {
			return err
		}
		*p = dst
	}
	return nil
}

// Prepare makes gate and echo ready to measure: a binary a path names is
// installed into dir (InstallInto: measured as installed, not as a linker
// may just have left it), an empty path is built there (BuildMissing, which
// installs what it builds too).
func Prepare(dir string, gate, echo *string) error {
	if err := InstallInto(dir, gate, echo); err != nil {
		return err
	}
	return BuildMissing(dir, gate, echo)
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
