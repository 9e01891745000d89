package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The audit log's keys are an interface: every record carries its fixed
// keys, and argument values never appear.
func TestRecordsHaveFixedKeys(t *testing.T) {
	var buf bytes.Buffer
	a := New(&buf)
	a.Decision(Decision{ID: "s-1", Session: "s", Kind: "tool", Server: "github", Tool: "create_issue", WireName: "github__create_issue",
		Verdict: "deny", Rule: "deny[0]", Reason: "no", Revision: "sha256:1", ArgsDigest: Digest([]byte(`{"token":"hunter2"}`)), Latency: 3 * time.Microsecond})
	a.Approval(Approval{DecisionID: "s-2", Session: "s", Server: "github", Tool: "t", ArgsDigest: "d", Outcome: "declined", Detail: "declined by the user", Latency: time.Second})
	a.Guard(Guard{Session: "s", Server: "evil", Tool: "t", Outcome: "refused", Kind: "approval_prose", Detail: "content[0].text"})
	a.Elicitation(Elicitation{Session: "s", Server: "evil", Outcome: "refused", Kind: "gate_impersonation"})
	a.Refusal(Refusal{Session: "s", Method: "tools/call", Kind: "unknown_name", WireName: "github__nope", Reason: `unknown tool "github__nope"`})
	want := map[string][]string{
		EventDecision:    {"time", KeyDecisionID, KeySession, KeyKind, KeyServer, KeyTool, KeyWireName, KeyVerdict, KeyRule, KeyReason, KeyRevision, KeyArgsDigest, KeyLatencyUS},
		EventApproval:    {"time", KeyDecisionID, KeySession, KeyServer, KeyTool, KeyArgsDigest, KeyOutcome, KeyDetail, KeyLatencyUS},
		EventGuard:       {"time", KeySession, KeyServer, KeyTool, KeyOutcome, KeyKind, KeyDetail, KeyCount},
		EventElicitation: {"time", KeySession, KeyServer, KeyOutcome, KeyKind},
		EventRefusal:     {"time", KeySession, KeyUser, KeyMethod, KeyKind, KeyWireName, KeyReason},
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines", len(lines))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		ev, _ := m[KeyEvent].(string)
		keys, ok := want[ev]
		if !ok {
			t.Fatalf("unexpected event %q", ev)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("%s record lacks %q: %s", ev, k, l)
			}
		}
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Fatal("an argument value reached the audit log")
	}
}

func TestDigest(t *testing.T) {
	a, b := Digest([]byte(`{"a":1}`)), Digest([]byte(`{"a":2}`))
	if a == b || !strings.HasPrefix(a, "hmac-sha256:") || len(a) != len("hmac-sha256:")+16 || Digest([]byte(`{"a":1}`)) != a {
		t.Fatalf("digests %q %q", a, b)
	}
}

// Issue 8: every audit line has an event key, whoever writes it: each
// record type of the package, and lines other packages log through Slog,
// with or without an event of their own, through derived loggers too.
func TestEveryLineHasEvent(t *testing.T) {
	var buf bytes.Buffer
	a := New(&buf)
	a.Decision(Decision{ID: "1"})
	a.Approval(Approval{DecisionID: "1"})
	a.Guard(Guard{})
	a.Elicitation(Elicitation{})
	a.Refusal(Refusal{})
	a.Slog().Info("policy reload", KeyEvent, EventReload, "ok", true)
	a.Slog().Info("policy loaded", "revision", "sha256:1")              // forgot its event
	a.Slog().With("server", "s").Warn("derived, no event")              // derived logger
	a.Slog().With(KeyEvent, EventPolicyLoad).Info("derived with event") // event set once for all its lines
	a.Slog().WithGroup("g").Info("grouped", KeyEvent, "inner")          // an event inside a group is not the top-level one
	want := []string{EventDecision, EventApproval, EventGuard, EventElicitation, EventRefusal, EventReload, EventOther, EventOther, EventPolicyLoad, EventOther}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if m[KeyEvent] != want[i] {
			t.Errorf("line %d has event %v, want %q: %s", i, m[KeyEvent], want[i], l)
		}
		if strings.Count(l, `"event":`) > 1 && !strings.Contains(l, `"g":{`) {
			t.Errorf("line %d has event twice: %s", i, l)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"approved by the user":               "approved by the user",
		`text: "hunter2" found`:              "text: " + PayloadString("hunter2") + " found",
		`a "x\"hunter2" b "y"`:               "a " + PayloadString(`x"hunter2`) + " b " + PayloadString("y"),
		`cut "hunter2 and no end`:            "cut " + PayloadString(`"hunter2 and no end`),
		`path ["\u200bhunter2"]: something`:  "path [" + PayloadString("\u200bhunter2") + "]: something",
		`bad escape "\q hunter2" stays safe`: "bad escape " + PayloadString(`"\q hunter2"`) + " stays safe",
	} {
		got := Redact(in)
		if got != want || strings.Contains(got, "hunter2") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	// Every record type's detail goes through it.
	var buf bytes.Buffer
	a := New(&buf)
	a.Decision(Decision{Reason: `denied by r (mcp:s:t): its condition failed (path "hunter2" is not absolute)`})
	a.Approval(Approval{Detail: `the host answered with action "hunter2"`})
	a.Guard(Guard{Detail: `content[0].text: "hunter2"`})
	a.Elicitation(Elicitation{Detail: `message: "hunter2"`})
	a.Refusal(Refusal{Reason: `tools/call: unknown tool "hunter2"`})
	if strings.Contains(buf.String(), "hunter2") {
		t.Errorf("a quoted detail reached the audit log:\n%s", buf.String())
	}
}

func TestPayload(t *testing.T) {
	var buf bytes.Buffer
	New(&buf).Slog().Info("bad message", "message", Payload([]byte("hunter2")))
	if strings.Contains(buf.String(), "hunter2") || !strings.Contains(buf.String(), `"message":{"bytes":7,"digest":"hmac-sha256:`) {
		t.Errorf("payload: %s", buf.String())
	}
}

// FuzzRedact: whatever a quoted string holds, Redact leaves none of it.
func FuzzRedact(f *testing.F) {
	f.Add("approve is ", "hunter2", " done")
	f.Add("", `x"y\z`, "")
	f.Add("path [", "\u200b\x00", "]")
	f.Fuzz(func(t *testing.T, before, secret, after string) {
		if len(secret) < 4 || strings.ContainsAny(before+after, `"\`) || strings.Contains(before+after, secret) {
			return
		}
		got := Redact(before + strconv.Quote(secret) + after)
		if strings.Contains(got, secret) || !strings.HasPrefix(got, before) || !strings.HasSuffix(got, after) {
			t.Fatalf("Redact(%q + %q + %q) = %q", before, strconv.Quote(secret), after, got)
		}
	})
}
