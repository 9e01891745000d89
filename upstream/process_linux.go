package upstream

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// setProcessGroup puts the child in its own process group, so that stopping
// it also stops what it started (npx runs node as a grandchild), and asks
// the kernel to SIGKILL it when the gate dies, however the gate dies
// (SIGKILL included): a child that ignores EOF and SIGTERM must not outlive
// the gate as an orphan.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// The parent-death signal fires when the THREAD that forked the child
// exits, not the process (prctl(2): "the parent" is the creating thread).
// The Go runtime ends a thread when a goroutine locked to it returns
// without unlocking, so a child started from such a goroutine would be
// killed at a random moment. Every child is therefore started from one
// goroutine locked to its thread for the life of the process: that
// thread exits only with the gate.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startChild starts cmd from the spawner thread.
func startChild(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, done}
	return <-done
}

// orphanGuard has nothing to do on Linux: Pdeathsig covers it.
func orphanGuard(*exec.Cmd) (release func()) { return func() {} }
