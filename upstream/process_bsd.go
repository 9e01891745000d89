//go:build unix && !linux

package upstream

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcessGroup puts the child in its own process group, so that stopping
// it also stops what it started (npx runs node as a grandchild).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

// orphanGuard stands in for Linux's parent-death signal, which macOS and
// the BSDs lack: a watchdog shell in a group of its own blocks reading a
// pipe whose only writer is the gate. When the gate dies, however it dies,
// the kernel closes the pipe, the read returns, and the watchdog SIGKILLs
// the child's process group. release, called once the child has exited
// and its group been killed, kills the watchdog first and only then closes
// the pipe, so a normal stop never reaches a process group id that may
// have been reused.
func orphanGuard(cmd *exec.Cmd) (release func()) {
	if cmd.Process == nil {
		return func() {}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	dog := exec.Command("/bin/sh", "-c", `read _; kill -KILL -- "-$1" 2>/dev/null`, "mcp-gate-watchdog", strconv.Itoa(cmd.Process.Pid))
	dog.Stdin = r
	dog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = dog.Start()
	r.Close()
	if err != nil {
		w.Close()
		return func() {}
	}
	return func() {
		_ = dog.Process.Kill()
		_ = dog.Wait()
		w.Close()
	}
}
