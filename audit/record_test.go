package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// writeAll writes one record of each type with s in every string field and
// n in every number.
func writeAll(a *Logger, s string, n int) {
	d := time.Duration(n) * time.Microsecond
	a.Decision(Decision{ID: s, Session: s, Server: s, Tool: s, Kind: s, WireName: s, Verdict: s, Rule: s, Reason: s, Revision: s, ArgsDigest: s, Latency: d})
	a.Approval(Approval{DecisionID: s, Session: s, Server: s, Tool: s, ArgsDigest: s, Outcome: s, Detail: s, Latency: d})
	a.Guard(Guard{DecisionID: s, Session: s, Server: s, Tool: s, Outcome: s, Kind: s, Detail: s, Count: n})
	a.Elicitation(Elicitation{Session: s, Server: s, Outcome: s, Kind: s, Detail: s})
	a.Refusal(Refusal{Session: s, User: s, Method: s, Kind: s, WireName: s, Reason: s})
}

var timeValue = regexp.MustCompile(`^\{"time":"[^"]+"`)

// sameRecords fails unless the records New writes are, but for their
// times, the bytes slog's JSON handler writes for the same records: the
// audit format is an interface, and it was slog's.
func sameRecords(t *testing.T, s string, n int) {
	t.Helper()
	var fast, slow bytes.Buffer
	writeAll(New(&fast), s, n)
	writeAll(NewHandler(slog.NewJSONHandler(&slow, &slog.HandlerOptions{Level: slog.LevelDebug})), s, n)
	fl, sl := strings.SplitAfter(fast.String(), "\n"), strings.SplitAfter(slow.String(), "\n")
	if len(fl) != len(sl) {
		t.Fatalf("%d lines, slog wrote %d:\n%s\n%s", len(fl), len(sl), fast.String(), slow.String())
	}
	for i := range fl {
		f, s := timeValue.ReplaceAllString(fl[i], `{"time":"T"`), timeValue.ReplaceAllString(sl[i], `{"time":"T"`)
		if f != s {
			t.Fatalf("line %d differs from slog's:\n got %q\nwant %q", i, f, s)
		}
	}
}

func TestRecordsAreSlogBytes(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "\x00\x01\x1f\x7f", "\t\n\r", "<&>", "é ü 漢字 🙂",
		"\u2028\u2029", "bad \xff utf-8 \xc3", "detail \"quoted part\" kept", strings.Repeat("x", 20<<10),
	} {
		sameRecords(t, s, 12345)
	}
	sameRecords(t, "neg", -7)
	// The time is RFC 3339 with nanoseconds, as slog writes it.
	var buf bytes.Buffer
	New(&buf).Decision(Decision{})
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil || m["level"] != "INFO" || m["msg"] != "decision" {
		t.Errorf("record head: %s (%v)", buf.String(), err)
	}
}

// FuzzRecordsAreSlogBytes: whatever the strings, New writes what slog would.
func FuzzRecordsAreSlogBytes(f *testing.F) {
	f.Add("approved", 3)
	f.Add("\u2028\xff\"\\\x00<", -1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		sameRecords(t, s, n)
	})
}

// Records from the fast path and lines logged through Slog share a writer
// that is not safe for concurrent use: every line must come out whole.
func TestConcurrentLinesAreWhole(t *testing.T) {
	var buf bytes.Buffer // unsynchronised: the race detector sees a missing lock
	a := New(&buf)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if g%2 == 0 {
					a.Decision(Decision{ID: fmt.Sprint(g, "-", i), Reason: strings.Repeat("r", 5000)})
				} else {
					a.Slog().Info("policy reload", KeyEvent, EventReload, "n", i, "pad", strings.Repeat("p", 5000))
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 200 {
		t.Fatalf("got %d lines, want 200", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a line is not whole JSON: %.200s", l)
		}
	}
}

// A Logger over a handler still filters by the handler's level, and a
// discarding one writes nothing and does not fail.
func TestHandlerLevelsAndDiscard(t *testing.T) {
	var buf bytes.Buffer
	a := NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	writeAll(a, "x", 1)
	if got := strings.Count(buf.String(), "\n"); got != 2 || !strings.Contains(buf.String(), `"event":"guard"`) || !strings.Contains(buf.String(), `"event":"refusal"`) {
		t.Errorf("at level warn, want the guard and refusal records alone:\n%s", buf.String())
	}
	writeAll(Discard(), "x", 1)
}

// The pooled HMAC gives what a fresh one gives, also after other inputs.
func TestDigestIsHMAC(t *testing.T) {
	for _, in := range []string{"", `{"a":1}`, strings.Repeat("long ", 1000), `{"a":1}`} {
		m := hmac.New(sha256.New, digestKey)
		m.Write([]byte(in))
		want := "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)[:8])
		if got := Digest([]byte(in)); got != want {
			t.Errorf("Digest(%.20q) = %s, want %s", in, got, want)
		}
	}
}

// A record stays short whatever its values: a resource URI of a megabyte
// (the model's) is cut, with its size and digest, so that no record is
// long enough for a log shipper to drop or split; both writing paths cut
// alike, and the line is one valid JSON object.
func TestRecordValuesBounded(t *testing.T) {
	long := "file:///home/u/secret/" + strings.Repeat("./", 512<<10) + "key\u00e9"
	for _, fast := range []bool{true, false} {
		var buf bytes.Buffer
		var a *Logger
		if fast {
			a = New(&buf)
		} else {
			a = NewHandler(slog.NewJSONHandler(&buf, nil))
		}
		if err := a.Decision(Decision{ID: "s-1", Kind: "resource", Server: "fs", Tool: long, WireName: long, Verdict: "allow", Reason: "allowed " + long}); err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if len(line) > 16<<10 {
			t.Fatalf("fast=%v: a record of %d bytes", fast, len(line))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("fast=%v: not one JSON object: %v", fast, err)
		}
		tool, _ := m["tool"].(string)
		if !strings.HasPrefix(tool, "file:///home/u/secret/./") || !strings.Contains(tool, strconv.Itoa(len(long))+" bytes in all, "+Digest([]byte(long))) {
			t.Fatalf("fast=%v: the cut value does not say what it was: %.200q", fast, tool)
		}
	}
	if s := bounded(strings.Repeat("é", maxValueBytes)); !utf8.ValidString(s) {
		t.Fatal("a value cut inside a character")
	}
}
