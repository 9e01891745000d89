package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An audit log that cannot be written (here /dev/full, whose every write
// fails as a full disk's does) lets no call through: the real gate refuses
// each call, saying why, and its real server never sees it; the operator's
// log says what failed. Nothing is silently let through unrecorded.
func TestFullAuditLogRefusesCalls(t *testing.T) {
	t.Parallel()
	needNode(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	root := t.TempDir()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve",
		"--servers", writeServers(t, dir, map[string]server{"filesystem": filesystem(root)}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", "/dev/full")
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	sess := g.connect(t, nil)

	target := filepath.Join(root, "unrecorded.txt")
	res := call(t, sess, "filesystem__write_file", map[string]any{"path": target, "content": "x"})
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "its audit record (the decision) could not be written") || !strings.Contains(text, "no space left on device") {
		t.Fatalf("a call the audit log cannot record was answered (isError=%v): %s", res.IsError, text)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the server ran a call the audit log does not record (stat: %v)", err)
	}
	if !waitStderr(stderr, "audit record not written", 1) {
		t.Errorf("the operator's log does not say the call was refused for its audit record:\n%s", stderr.String())
	}
}

// An audit log deleted while the real gate runs (by a cleanup job, or a
// tool of the model's that can remove files in the log's directory): the
// calls after it are on record at the log's path, in a file the gate made
// again, not only in the deleted file, which nobody can read and which
// goes when the gate exits. Before, every later call ran with its record
// written to the deleted file.
func TestAuditLogDeletedWhileRunning(t *testing.T) {
	t.Parallel()
	needNode(t)
	root := t.TempDir()
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve",
		"--servers", writeServers(t, dir, map[string]server{"filesystem": filesystem(root)}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", logPath)
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	sess := g.connect(t, nil)

	if res := call(t, sess, "filesystem__write_file", map[string]any{"path": filepath.Join(root, "one.txt"), "content": "x"}); res.IsError {
		t.Fatalf("first call: %s", resultText(res))
	}
	if err := os.Remove(logPath); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "after-delete.txt")
	if res := call(t, sess, "filesystem__write_file", map[string]any{"path": target, "content": "x"}); res.IsError {
		t.Fatalf("call after the log was deleted: %s", resultText(res))
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the call did not run: %v", err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("a call ran after the audit log was deleted, and no audit log is at its path: %v", err)
	}
	log := string(b)
	if !strings.Contains(log, `"event":"audit_reopened"`) || !strings.Contains(log, `"event":"decision"`) || !strings.Contains(log, `"tool":"write_file"`) {
		t.Fatalf("the call after the log was deleted is not on record at its path:\n%s", log)
	}
}
