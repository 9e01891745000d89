package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const checksPolicy = "version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n"

func newTestChecks(t testing.TB) (*checks, string) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(checksPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	c, err := newChecks(pol, auditPath, "echo__")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.audit.Close() })
	return c, auditPath
}

// The checks floor renames each call, writes its decision before the burst
// is forwarded, and relays responses as they came.
func TestChecksRenameRecordRelay(t *testing.T) {
	c, auditPath := newTestChecks(t)
	burst := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo__echo","arguments":{"text":"a"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	out, err := c.requests(nil, []byte(burst))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"name":"echo"`) || lines[1] != `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n" {
		t.Fatalf("forwarded %q", out)
	}
	rec, _ := os.ReadFile(auditPath)
	if n := bytes.Count(rec, []byte(`"verdict":"allow"`)); n != 1 {
		t.Fatalf("%d allow records before the burst went on, want 1: %s", n, rec)
	}
	resp := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}` + "\n"
	if got, err := c.responses(nil, []byte(resp)); err != nil || string(got) != resp {
		t.Fatalf("responses = %q, %v; want it as it came", got, err)
	}
}

// BenchmarkChecks is the CPU of the checks floor's work on one echo call,
// request and response, in this process: what the gate's decision, audit
// record, rename and guard cost without its structure, less the relay's
// system calls.
//
//	go test -run '^$' -bench Checks -benchmem ./e2e/minrelay
func BenchmarkChecks(b *testing.B) {
	c, _ := newTestChecks(b)
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo__echo","arguments":{"text":"hello"}}}` + "\n")
	resp := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n")
	var out []byte
	var err error
	in := make([]byte, len(req))
	b.ReportAllocs()
	for b.Loop() {
		copy(in, req)
		if out, err = c.requests(out[:0], in); err != nil {
			b.Fatal(err)
		}
		if out, err = c.responses(out[:0], resp); err != nil {
			b.Fatal(err)
		}
	}
}
