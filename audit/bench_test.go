package audit

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A decision record as the gate writes one per tool call, with its digest.
func benchDecision(a *Logger, args []byte) {
	a.Decision(Decision{ID: "75d8cd4187fa-1", Session: "75d8cd4187fa", Kind: "tool", Server: "echo", Tool: "echo", WireName: "echo__echo",
		Verdict: "allow", Rule: "allow[0]", Reason: "allowed by allow[0] (mcp:echo:*)", Revision: "sha256:52a6bbbeb2d7",
		ArgsDigest: Digest(args), Latency: 140 * time.Microsecond})
}

// BenchmarkDecision is the audit's share of a call: digest and record,
// encoded and written to a writer that costs nothing.
func BenchmarkDecision(b *testing.B) {
	a, args := New(io.Discard), []byte(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		benchDecision(a, args)
	}
}

// BenchmarkDecisionFile adds the write to a file, as the gate does it.
func BenchmarkDecisionFile(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	a, args := New(f), []byte(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		benchDecision(a, args)
	}
}

func BenchmarkDigest(b *testing.B) {
	args := []byte(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		Digest(args)
	}
}

// BenchmarkDecisionPath is BenchmarkDecisionFile for a log opened by path
// (OpenFile, as serve --audit-log opens it): the write and the link count
// read after it (reopen.go).
func BenchmarkDecisionPath(b *testing.B) {
	a, closeFile, err := OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer closeFile()
	args := []byte(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		benchDecision(a, args)
	}
}
