//go:build linux

package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

// pipeIOSyscalls are the system calls that move bytes through a pipe, by
// number, on the architectures the suite runs on.
var pipeIOSyscalls = map[string]map[int]string{
	"amd64": {0: "read", 1: "write", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev"},
	"arm64": {63: "read", 64: "write", 65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64"},
}

// threadsInPipeIO lists the threads of process pid that are inside a read
// or write system call on a pipe, as "tid read(fd 14, pipe:[123])".
// /proc/PID/task/TID/syscall gives the call a thread is blocked in and its
// arguments ("running" or -1 when it is in none).
func threadsInPipeIO(t *testing.T, pid int) []string {
	t.Helper()
	names := pipeIOSyscalls[runtime.GOARCH]
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("listing the threads of %d: %v", pid, err)
	}
	var in []string
	read := 0
	var readErr error
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
		if err != nil {
			readErr = err // the thread ended, or the file is refused
			continue
		}
		read++
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		nr, err := strconv.Atoi(f[0])
		name, ok := names[nr]
		if err != nil || !ok {
			continue
		}
		fd, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 32)
		if err != nil {
			continue
		}
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		if err != nil || !strings.HasPrefix(target, "pipe:") {
			continue
		}
		in = append(in, fmt.Sprintf("%s %s(fd %d, %s)", task.Name(), name, fd, target))
	}
	if read == 0 {
		// A check that sees nothing could never fail.
		t.Skipf("no thread's system call of %d is readable here (ptrace restrictions?): %v", pid, readErr)
	}
	return in
}

// assertNoWaitInPipeIO fails the test when a thread of the idle process
// pid stays inside a pipe's read or write across every one of several
// samples: a wait outside the netpoller. Every pipe the gate (and the floor
// relay) reads or writes is non-blocking, so a thread is in such a call
// only for as long as it copies bytes; one that stays there is blocked in
// it, holding its P. That is the shape of the stall a relay whose
// upstream pipe was made blocking paid on every 1 MB call with two CPUs:
// with another P idle, sysmon takes back neither the P nor, for 10 ms, the
// netpoller's work, and the next request lay unread meanwhile.
func assertNoWaitInPipeIO(t *testing.T, pid int) {
	t.Helper()
	if _, ok := pipeIOSyscalls[runtime.GOARCH]; !ok {
		t.Skipf("no system call numbers for %s", runtime.GOARCH)
	}
	const samples = 10
	seen := map[string]int{}
	for range samples {
		for _, s := range threadsInPipeIO(t, pid) {
			seen[s]++
		}
		time.Sleep(20 * time.Millisecond)
	}
	for s, n := range seen {
		if n == samples {
			t.Errorf("idle, thread %s in all %d samples: a blocking read or write on a pipe, waiting outside the netpoller", s, samples)
		}
	}
}

// grownPipes counts the distinct pipes process pid holds whose buffer is
// the 1 MB the gate asks for once a large message crosses. A pipe is
// opened anew through /proc (non-blocking, read-only: it never waits and
// takes no bytes) to read its size.
func grownPipes(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	grown := map[string]bool{}
	for _, e := range fds {
		p := fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, "pipe:") {
			continue
		}
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETPIPE_SZ, 0)
		syscall.Close(fd)
		if errno == 0 && n == 1<<20 {
			grown[target] = true
		}
	}
	return len(grown)
}

// largeBothWays makes 1 MB calls each way through sess (a 1 MB result, and
// an echo of a 1 MB argument), so that every pipe of the relay has carried
// a large message and been grown.
func largeBothWays(t *testing.T, sess *mcp.ClientSession, prefix string) {
	t.Helper()
	big := strings.Repeat("x", 1<<20)
	for range 3 {
		if got := resultText(call(t, sess, prefix+"blob", map[string]any{"bytes": 1 << 20})); len(got) != 1<<20 {
			t.Fatalf("blob: %d bytes; want %d", len(got), 1<<20)
		}
		if got := resultText(call(t, sess, prefix+"echo", map[string]any{"text": big})); got != big {
			t.Fatalf("echo of 1 MB: %d bytes back; want the same %d", len(got), len(big))
		}
	}
}

// wantGrown skips the rest of a test when the system did not grow the
// pipes (a pipe-max-size below 1 MB, the user's pipe quota spent): what
// follows is about pipes once grown.
func wantGrown(t *testing.T, pid int) {
	t.Helper()
	n := grownPipes(t, pid)
	t.Logf("%d pipes of %d hold 1 MB", n, pid)
	if n == 0 {
		if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil && strings.TrimSpace(string(b)) == "1048576" {
			t.Fatalf("after 1 MB messages each way no pipe of %d holds 1 MB", pid)
		}
		t.Skip("pipe-max-size is not 1 MB here: the pipes were not grown")
	}
}

// After large messages each way have grown the gate's pipes (the host's
// stdin and stdout, the upstream's), no thread of the idle gate waits in a
// pipe's read or write: every wait is in the netpoller. A pipe grower that
// reached the descriptor through (*os.File).Fd made it blocking, and the
// gate's raw reader then sat in read(2) on the upstream's stdout.
func TestPipeGrownGateWaitsInNetpoller(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"up": testserver("honest")})
	sess := g.connect(t, nil)
	largeBothWays(t, sess, "up__")
	pid := g.cmd.Process.Pid
	wantGrown(t, pid)
	assertNoWaitInPipeIO(t, pid)
}

// The floor relay the benchmark measures in the gate's place (-floor) grows
// its pipes as the gate does and must wait as the gate does: in the
// netpoller. Made blocking by Fd, its upstream pipe cost every 1 MB call
// 10+ ms with two CPUs.
func TestPipeGrownFloorRelayWaitsInNetpoller(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(minrelayBin, "-strip", "up__", "--", testserverBin, "--mode", "honest")
	g := &gate{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = g.stderr
	sess := g.connect(t, nil)
	largeBothWays(t, sess, "up__")
	wantGrown(t, cmd.Process.Pid)
	assertNoWaitInPipeIO(t, cmd.Process.Pid)
}

// The floor relays in blocking system calls (e2e/bench -floor-relay
// go-blocking and c: minrelay -blocking, and e2e/crelay built with the
// system's C compiler) relay what minrelay relays: the name prefix dropped
// from requests and nowhere else, 1 MB lines carried whole both ways, an
// exit when the host closes its input. And they measure what they say:
// idle, a thread of each waits in a pipe's read in every sample, one for
// the host's input and one for the upstream's output. Without a C compiler
// the C case skips, except in CI, which installs one.
func TestPipeBlockingFloorRelays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bin  func(t *testing.T) string
		args []string
	}{
		{"minrelay -blocking", func(*testing.T) string { return minrelayBin }, []string{"-blocking"}},
		{"crelay", func(t *testing.T) string {
			bin := filepath.Join(t.TempDir(), "crelay")
			if err := loadgen.BuildC(bin, "e2e/crelay/crelay.c"); err != nil {
				if _, lerr := exec.LookPath("cc"); lerr != nil && os.Getenv("CC") == "" && os.Getenv("CI") != "true" {
					t.Skipf("no C compiler: %v", err)
				}
				t.Fatal(err)
			}
			return bin
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append(tc.args, "-strip", "up__", "--", testserverBin, "--mode", "honest")
			cmd := exec.Command(tc.bin(t), args...)
			g := &gate{cmd: cmd, stderr: &syncBuffer{}}
			cmd.Stderr = g.stderr
			sess := g.connect(t, nil)
			if got := resultText(call(t, sess, "up__echo", map[string]any{"text": "héllo \"up__x\""})); got != "héllo \"up__x\"" {
				t.Fatalf("echo through %s: %q", tc.name, got)
			}
			largeBothWays(t, sess, "up__")
			wantGrown(t, cmd.Process.Pid)
			seen := map[string]int{}
			const samples = 10
			for range samples {
				for _, th := range threadsInPipeIO(t, cmd.Process.Pid) {
					seen[th]++
				}
				time.Sleep(20 * time.Millisecond)
			}
			blocked := 0
			for _, n := range seen {
				if n == samples {
					blocked++
				}
			}
			if blocked < 2 {
				t.Errorf("idle, %d threads waited in a pipe's read or write in all %d samples (%v); want 2, one each way", blocked, samples, seen)
			}
			if err := sess.Close(); err != nil {
				t.Fatalf("closing: %v\n%s", err, g.stderr.String())
			}
			if st := cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
				t.Fatalf("%s after its input closed: %v\n%s", tc.name, st, g.stderr.String())
			}
		})
	}
}

// fdAllowed are the files that may call (*os.File).Fd, and why: a regular
// file, which the runtime does not poll, so Fd changes nothing of its mode.
var fdAllowed = map[string]string{
	"internal/statefile/lock_unix.go": "flock on a regular file",
}

// No code of the module calls Fd, outside tests and fdAllowed: Fd puts a
// descriptor the runtime polls (a pipe from os.Pipe, a reopened stdin or
// stdout) back into blocking mode, for good and for every user of it, and a
// blocked read then holds a P outside the netpoller (the 10 ms stall above;
// the gate's raw reader would block for good). Reach a descriptor through
// SyscallConn().Control instead, as rpc.pipeGrower does.
func TestPipeNoFdOnPolledFiles(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 0 {
				return true
			}
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Fd" {
				if _, ok := fdAllowed[rel]; !ok {
					t.Errorf("%s: calls Fd, which makes a descriptor the runtime polls blocking; use SyscallConn().Control", fset.Position(c.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s; want the whole module", files, root)
	}
}
