package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// A resource URI of a megabyte (the model writes it; a message may have
// 32 MB) made a decision line as long, which log shippers drop or split
// (many skip lines past 16 to 100 KB): the read ran, and its record never
// reached whoever reads the shipped log. Every value of a record is cut
// now, saying its size and digest.
func TestAuditLineBoundedWhateverTheURI(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	sess := g.connect(t, nil)
	uri := "test://item/" + strings.Repeat("a", 1<<20)
	if _, err := sess.ReadResource(ctxT(t, 60*time.Second), &mcp.ReadResourceParams{URI: uri}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"event":"decision"`) || !strings.Contains(line, `"kind":"resource"`) {
			continue
		}
		found = true
		if len(line) > 16<<10 {
			t.Fatalf("a decision line of %d bytes", len(line))
		}
		if !strings.Contains(line, "test://item/aaa") || !strings.Contains(line, "bytes in all, hmac-sha256:") {
			t.Fatalf("the cut URI does not say what it was: %.300s", line)
		}
	}
	if !found {
		t.Fatal("no decision line of the read")
	}
}
