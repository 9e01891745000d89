//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal's two ends.
func openPTY(t *testing.T) (ptmx, pts *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptmx, pts
}

// Issue 10: with a terminal on stdin nobody is there to show a
// configuration error to but the person at it: the gate exits 1 at once,
// every problem listed, as before.
func TestConfigErrorOnTerminalExits1(t *testing.T) {
	t.Parallel()
	_, pts := openPTY(t)
	dir := t.TempDir()
	pol := writePolicy(t, "version: 1\nfallback: ask\nallwo: [mcp:honest:*]\n")
	cmd := exec.Command(gateBin, "serve", "--servers", writeServers(t, dir, map[string]server{"honest": testserver("honest")}), "--policy", pol)
	cmd.Stdin = pts
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "allwo") {
			t.Fatalf("exit %v; want status 1 naming the problem\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the gate kept running with a terminal on stdin and a broken policy\n%s", stderr.String())
	}
}
