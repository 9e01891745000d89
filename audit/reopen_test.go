package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func decisionFor(tool string) Decision {
	return Decision{ID: "s-1", Session: "s", Kind: "tool", Server: "fs", Tool: tool, Verdict: "allow", Rule: "allow[0]"}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// An audit log deleted, or replaced by a file renamed over it, while the
// gate writes it: the records after that are in a file at the log's path
// (opened again, with a line saying so first), never only in the old
// inode, which no name reaches and which goes when the gate exits. A file
// renamed away (a rotation) keeps its name, and its records.
func TestAuditLogDeletedOrReplacedIsOpenedAgain(t *testing.T) {
	for _, c := range []struct {
		name string
		gone func(t *testing.T, path string)
	}{
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, path string) {
			other := path + ".new"
			if err := os.WriteFile(other, []byte("{\"event\":\"planted\"}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, closeFile, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer closeFile()
			if err := l.Decision(decisionFor("before")); err != nil {
				t.Fatal(err)
			}
			c.gone(t, path)
			for _, tool := range []string{"after1", "after2"} {
				if err := l.Decision(decisionFor(tool)); err != nil {
					t.Fatal(err)
				}
			}
			l.Slog().Info("policy_reload", "event", "policy_reload") // slog's lines too
			lines := readLines(t, path)
			joined := strings.Join(lines, "\n")
			for _, want := range []string{`"event":"audit_reopened"`, `"tool":"after1"`, `"tool":"after2"`, `"event":"policy_reload"`} {
				if !strings.Contains(joined, want) {
					t.Fatalf("the records after the log was %s are not at its path (want %s):\n%s", c.name, want, joined)
				}
			}
			if strings.Contains(joined, `"tool":"before"`) {
				t.Fatalf("a record before the log was %s is in the new file:\n%s", c.name, joined)
			}
			if n := strings.Count(joined, `"event":"audit_reopened"`); n != 1 {
				t.Fatalf("%d reopened lines, want 1:\n%s", n, joined)
			}
		})
	}
}

// A rotation (the file renamed away) keeps the file's name: its records
// go on there, as before.
func TestAuditLogRenamedAwayKeepsItsRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, closeFile, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Decision(decisionFor("rotated")); err != nil {
		t.Fatal(err)
	}
	if joined := strings.Join(readLines(t, path+".1"), "\n"); !strings.Contains(joined, `"tool":"rotated"`) || strings.Contains(joined, "audit_reopened") {
		t.Fatalf("the renamed file: %s", joined)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a new file was made at the path of a renamed log: %v", err)
	}
}

// An audit log deleted where it cannot be made again (its directory gone)
// fails the record: the call it records is refused, not run unrecorded.
func TestAuditLogDeletedAndNotCreatableFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	l, closeFile, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFile()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Decision(decisionFor("lost")); err == nil {
		t.Fatal("a record written only to a deleted file was reported written")
	}
	if err := l.Approval(Approval{DecisionID: "s-1", Outcome: "approved"}); err == nil {
		t.Fatal("an approval written only to a deleted file was reported written")
	}
}
