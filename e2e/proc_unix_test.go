//go:build unix

package e2e

import (
	"os/exec"
	"syscall"
	"testing"
)

// The process control the tests use that only Unix has: sessions, process
// groups, signals to any pid. proc_other_test.go holds the stand-ins that
// let the package build and vet elsewhere (Windows); the suite runs on
// Linux.

// inNewSession makes cmd start a session (and process group) of its own,
// as setsid does.
func inNewSession(_ *testing.T, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// inNewGroup makes cmd start a process group of its own, so that
// signalGroup reaches what it starts too.
func inNewGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group of cmd, started with
// inNewGroup.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// groupExists reports whether any process of cmd's group is left (kill(-pid,
// 0)).
func groupExists(cmd *exec.Cmd) bool {
	return syscall.Kill(-cmd.Process.Pid, 0) == nil
}

// signalPID sends sig to pid, which need not be the test's child.
func signalPID(pid int, sig syscall.Signal) error {
	return syscall.Kill(pid, sig)
}

// pidExists reports whether pid names a process (kill(pid, 0): a zombie not
// yet reaped still does).
func pidExists(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
