package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An --audit-log FIFO whose reader stalled (a log shipper that stopped
// reading): the real gate refuses the call whose record found no room
// within its bound, saying why, and its server never sees the call.
// Before, the call waited for ever (and every call after it, denials
// too), the host's cancellation freeing nothing.
func TestAuditFIFONobodyReadsRefusesInTime(t *testing.T) {
	t.Parallel()
	needNode(t)
	root := t.TempDir()
	dir := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The shipper opens the FIFO, and never reads; its pipe is made as
	// small as it goes, so that a few records fill it.
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	rfd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(rfd)
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(rfd), fSetPipeSz, 4096); e != 0 {
		t.Logf("F_SETPIPE_SZ: %v (the pipe keeps its size)", e)
	}
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve",
		"--servers", writeServers(t, dir, map[string]server{"filesystem": filesystem(root)}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", fifo)
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	sess := g.connect(t, nil)

	for i := range 400 { // 400 records of some 400 bytes fill a 64 KiB pipe too
		target := filepath.Join(root, fmt.Sprintf("call-%d.txt", i))
		start := time.Now()
		res := call(t, sess, "filesystem__write_file", map[string]any{"path": target, "content": "x"})
		if !res.IsError {
			continue
		}
		text := resultText(res)
		if !strings.Contains(text, "its audit record (the decision) could not be written") {
			t.Fatalf("call %d refused for another reason: %s", i, text)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("the refusal took %v", took)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("the server ran a call the audit log does not record (stat: %v)", err)
		}
		return
	}
	t.Fatal("400 calls ran with the audit FIFO unread")
}

// An --audit-log FIFO that no process reads (the shipper not running):
// the real gate does not start, and says why, within its wait for a
// reader. Before, it waited in open(2) for ever, before answering its
// host at all.
func TestAuditFIFOWithoutReaderFailsTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve",
		"--servers", writeServers(t, dir, map[string]server{}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", fifo)
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
		if err == nil || !strings.Contains(stderr.String(), "no process read the FIFO") {
			t.Fatalf("the gate with an unread audit FIFO: %v\n%s", err, stderr.String())
		}
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the gate waited 40 s for a reader of its audit FIFO:\n%s", stderr.String())
	}
}
