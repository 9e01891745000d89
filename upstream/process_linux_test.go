package upstream

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

// startOnDyingThread starts cmd with start from a goroutine locked to its
// thread that then returns without unlocking: the Go runtime ends that
// thread, which is what Pdeathsig watches.
func startOnDyingThread(t *testing.T, start func(*exec.Cmd) error) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	setProcessGroup(cmd)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- start(cmd)
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); cmd.Wait() })
	return cmd
}

// The parent-death signal fires when the forking thread exits: a child
// started on a thread that then ends would be SIGKILLed at a random moment
// (the control case shows it). startChild forks from the spawner's thread,
// which lives as long as the gate.
func TestPdeathsigSurvivesTheStartingThread(t *testing.T) {
	control := startOnDyingThread(t, (*exec.Cmd).Start)
	ours := startOnDyingThread(t, startChild)
	deadline := time.Now().Add(5 * time.Second)
	for !exited(control.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !exited(control.Process.Pid) {
		t.Skip("this kernel did not kill the control child when its thread exited; nothing to compare")
	}
	if exited(ours.Process.Pid) {
		t.Fatal("a child started through startChild died when the calling thread exited")
	}
}
