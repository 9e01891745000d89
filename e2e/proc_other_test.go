//go:build !unix

package e2e

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Stand-ins for proc_unix_test.go where there are no sessions, process
// groups or signals (Windows). They let the package build and vet; the
// suite runs on Linux.

// inNewSession skips the test: a session of its own (setsid) is what it
// needs, and there is none here.
func inNewSession(t *testing.T, _ *exec.Cmd) {
	t.Helper()
	t.Skip("the test needs a session of its own (setsid), which only Unix has")
}

// inNewGroup does nothing: signalGroup reaches cmd's process only.
func inNewGroup(*exec.Cmd) {}

// signalGroup kills cmd's process, whatever sig is: there are no signals
// to send here, nor a group.
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) error {
	return cmd.Process.Kill()
}

// groupExists is false: signalGroup ended the only process there is.
func groupExists(*exec.Cmd) bool { return false }

// signalPID kills pid, whatever sig is.
func signalPID(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// pidExists reports whether pid can be opened (Windows opens a process
// that has exited while a handle to it is held: the answer errs on the side
// of "still there").
func pidExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
