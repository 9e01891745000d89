package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Calls made eight at a time to a stdio gate, which runs on one P and
// so gathers the decision records of a burst into one write
// (audit/group.go, rpc.GroupBursts): every call still reaches its server
// only after its own record was handed to the OS. The server counts its
// arrivals and the decision lines already in the audit file; k arrivals
// with fewer than k lines is a call forwarded ahead of its record. Run
// with the gate on one CPU, and on every CPU the machine gives it, where
// its server runs beside it while it gathers.
func TestAuditBurstWrittenBeforeForwarding(t *testing.T) {
	// Not parallel (see harness_test.go): pins the gate to one CPU (taskset) and needs that CPU.
	t.Run("one CPU", func(t *testing.T) {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			t.Skip("taskset is not installed: the gate cannot be put on one CPU")
		}
		auditBurstBeforeForwarding(t, taskset, "-c", "0", gateBin)
	})
	t.Run("every CPU", func(t *testing.T) { auditBurstBeforeForwarding(t, gateBin) })
}

func auditBurstBeforeForwarding(t *testing.T, argv ...string) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	wd, _ := os.Getwd()
	cmd := exec.Command(argv[0], append(argv[1:], "serve",
		"--servers", writeServers(t, dir, map[string]server{"a": testserver("auditburst", auditPath)}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", auditPath)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	sess := g.connect(t, nil)
	if got := resultText(call(t, sess, "a__arrive", map[string]any{})); got != "ok" {
		t.Fatalf("the first call: %s", got)
	}
	const rounds, width = 40, 8
	for r := range rounds {
		var wg sync.WaitGroup
		got := make([]string, width)
		for i := range width {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = resultText(call(t, sess, "a__arrive", map[string]any{}))
			}()
		}
		wg.Wait()
		for i, s := range got {
			if s != "ok" {
				t.Fatalf("round %d, call %d: %s", r, i, s)
			}
		}
	}
}
