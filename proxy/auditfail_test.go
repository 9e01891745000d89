package proxy

import (
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
)

// fullDisk is an audit log whose writes fail, as on a full disk, for the
// records fail picks (all of them when it is nil), while broken is set.
type fullDisk struct {
	mu     sync.Mutex
	broken bool
	fail   func(line string) bool
	failed int
	lines  []string
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken && (d.fail == nil || d.fail(string(p))) {
		d.failed++
		return 0, &os.PathError{Op: "write", Path: "/secret/audit.jsonl", Err: syscall.ENOSPC}
	}
	d.lines = append(d.lines, string(p))
	return len(p), nil
}

func (d *fullDisk) set(broken bool, fail func(string) bool) {
	d.mu.Lock()
	d.broken, d.fail = broken, fail
	d.mu.Unlock()
}

func (d *fullDisk) failures() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

func isEvent(event string) func(string) bool {
	return func(line string) bool { return strings.Contains(line, `"event":"`+event+`"`) }
}

// nthEvent fails the n-th record of event (1-based) and no other.
func nthEvent(event string, n int) func(string) bool {
	seen := 0
	return func(line string) bool {
		if !isEvent(event)(line) {
			return false
		}
		seen++
		return seen == n
	}
}

// A call whose decision or approval cannot be recorded is not let
// through, whichever record failed and whatever the policy said: every
// call the gate forwards is on record first (design.md). The host reads
// why (without the log's path); a human is not asked a question whose
// answer could not be recorded; the observer counts it; and once the log
// can be written again, calls run as before.
func TestUnauditedCallRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		policy  string
		outcome elicitation.Outcome
		fail    func(string) bool
		// wantAsked: the approver is asked; wantReason: in the refusal.
		wantAsked  bool
		wantReason string
	}{
		{name: "allow, decision unrecorded", policy: "version: 1\nfallback: deny\nallow: [\"mcp:s:t\"]\n",
			fail: isEvent("decision"), wantReason: "its audit record (the decision) could not be written (no space left on device)"},
		{name: "deny, decision unrecorded", policy: "version: 1\nfallback: deny\n",
			fail: isEvent("decision"), wantReason: "no rule matched"},
		{name: "ask, decision unrecorded", policy: "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n", outcome: elicitation.Approved,
			fail: isEvent("decision"), wantReason: "its audit record (the decision) could not be written"},
		{name: "ask, approval unrecorded", policy: "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n", outcome: elicitation.Approved,
			fail: isEvent("approval"), wantAsked: true, wantReason: "its audit record (the approval) could not be written"},
		{name: "ask, re-decision unrecorded", policy: "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n", outcome: elicitation.Approved,
			fail: nthEvent("decision", 2), wantAsked: true, wantReason: "its audit record (the decision) could not be written"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newPipelineUpstream()
			a := &fakeApprover{outcome: c.outcome}
			disk := &fullDisk{}
			ev := &events{}
			h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
				o.Policy = static(t, c.policy)
				o.Approver = a
				o.Audit = audit.New(disk)
				o.Observer = ev
			})
			disk.set(true, c.fail)
			resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
			if !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, c.wantReason) {
				t.Fatalf("an unrecorded call was answered %s; want a refusal saying %q", resp, c.wantReason)
			}
			if c.policy == "version: 1\nfallback: deny\n" && strings.Contains(resp, "could not be written") {
				t.Errorf("a denial became an audit refusal; it is the policy's own: %s", resp)
			}
			if strings.Contains(resp, "/secret/") {
				t.Errorf("the refusal shows the audit log's path: %s", resp)
			}
			if n := up.calls(); n != 0 {
				t.Fatalf("the upstream ran %d calls the audit log does not record", n)
			}
			a.mu.Lock()
			asked := len(a.asked)
			a.mu.Unlock()
			if asked > 0 != c.wantAsked {
				t.Errorf("the approver was asked %d times; want asked=%v", asked, c.wantAsked)
			}
			if disk.failures() == 0 {
				t.Fatal("no audit write failed: the test shows nothing")
			}
			if !strings.Contains(strings.Join(ev.lines(), "\n"), "audit failed") {
				t.Errorf("the observer did not count the failed write: %q", ev.lines())
			}

			// The disk has room again: the same call runs (or is denied,
			// for the deny policy, as before).
			disk.set(false, nil)
			resp = string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
			if c.policy == "version: 1\nfallback: deny\n" {
				if !strings.Contains(resp, `"isError":true`) {
					t.Fatalf("a denied call ran: %s", resp)
				}
				return
			}
			if strings.Contains(resp, `"isError":true`) || up.calls() != 1 {
				t.Fatalf("with the audit log writable again the call was answered %s (upstream ran %d)", resp, up.calls())
			}
		})
	}
}

// A session approval remembered is recorded too, and refused when it
// cannot be.
func TestUnauditedRememberedApprovalRefused(t *testing.T) {
	up := newPipelineUpstream()
	a := &fakeApprover{outcome: elicitation.ApprovedSession}
	disk := &fullDisk{}
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
		o.Policy = static(t, "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n")
		o.Approver = a
		o.Audit = audit.New(disk)
	})
	if resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`)); strings.Contains(resp, `"isError":true`) {
		t.Fatalf("a session approval was refused: %s", resp)
	}
	disk.set(true, isEvent("approval"))
	resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
	if !strings.Contains(resp, "its audit record (the approval) could not be written") {
		t.Fatalf("a remembered approval that could not be recorded was answered %s", resp)
	}
	if n := up.calls(); n != 1 {
		t.Fatalf("the upstream ran %d calls; only the recorded one may run", n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) != 1 {
		t.Errorf("asked %d times; the session approval answers the second call", len(a.asked))
	}
}

// calls counts the tools/call requests the upstream received.
func (u *pipelineUpstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, m := range u.seen {
		if m == "tools/call" {
			n++
		}
	}
	return n
}

// A changed definition's decision and approval are records like any
// other: one that cannot be written refuses the call, and a change that
// was not recorded is not accepted (pinned) either.
func TestUnauditedPinChangeRefused(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		fail         func(string) bool
		want         string
	}{
		{"pins allow, its decision unrecorded", pinsPolicy + "pins:\n  default: allow\n", nthEvent("decision", 1), "decision"},
		{"pins ask, its decision unrecorded", pinsPolicy, nthEvent("decision", 1), "decision"},
		{"pins ask, its approval unrecorded", pinsPolicy, isEvent("approval"), "approval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			u := newChangingUpstream("v1")
			pinFirst(t, u, dir)
			u.desc.Store("v2")
			yes := &fakeApprover{outcome: elicitation.Approved}
			disk := &fullDisk{}
			h := pinnedHost(t, u, dir, c.policy, func(o *Options) { o.Approver = yes; o.Audit = audit.New(disk) })
			disk.set(true, c.fail)
			resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
			if !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, "its audit record (the "+c.want+") could not be written") {
				t.Fatalf("a changed definition whose record failed was answered %s", resp)
			}
			if n := u.ran.Load(); n != 0 {
				t.Fatalf("the upstream ran %d calls; the unrecorded one must not run", n)
			}
			// Not accepted either: with the log writable and pins: deny,
			// the change is still refused.
			disk.set(false, nil)
			h.gate.flushPersist()
			h = pinnedHost(t, u, dir, pinsPolicy+"pins:\n  default: deny\n", func(o *Options) { o.Audit = audit.New(disk) })
			if resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`)); !strings.Contains(resp, `"isError":true`) {
				t.Fatalf("a change whose acceptance was not recorded was pinned: %s", resp)
			}
		})
	}
}

// A 2026-07-28 host whose question (an input-required result) cannot be
// recorded gets the refusal as a complete result, not a question, and the
// upstream never runs.
func TestUnauditedModernQuestionIsACompleteRefusal(t *testing.T) {
	up := newPipelineUpstream()
	disk := &fullDisk{}
	g := newScriptedGate(t, up.serve, "version: 1\nfallback: deny\nask: [\"mcp:s:t\"]\n", func(o *Options) { o.Audit = audit.New(disk) })
	h := serveModernHost(t, g)
	disk.set(true, isEvent("approval"))
	res, err := h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps)
	if err != nil {
		t.Fatal(err)
	}
	got := string(res)
	if !strings.Contains(got, `"resultType":"complete"`) || !strings.Contains(got, `"isError":true`) ||
		!strings.Contains(got, "its audit record (the approval) could not be written") || strings.Contains(got, "inputRequests") {
		t.Fatalf("a question that could not be recorded was answered %s; want a complete isError result", got)
	}
	if n := up.calls(); n != 0 {
		t.Fatalf("the upstream ran %d calls", n)
	}
}

// A refusal where MCP has no result to carry it (prompts/get) is the
// -32010 error, with the same reason.
func TestUnauditedPromptIsADeniedError(t *testing.T) {
	up := newPipelineUpstream()
	disk := &fullDisk{}
	h := startRawHost(t, map[string]scripted{"s": up.serve}, func(o *Options) {
		o.Policy = static(t, "version: 1\nfallback: deny\nallow: [\"prompt:s:*\", \"mcp:s:*\"]\n")
		o.Audit = audit.New(disk)
	})
	disk.set(true, isEvent("decision"))
	resp := string(h.call("prompts/get", `{"name":"s__p","arguments":{}}`))
	if !strings.Contains(resp, `"code":-32010`) || !strings.Contains(resp, "its audit record (the decision) could not be written") {
		t.Fatalf("prompts/get whose decision could not be recorded was answered %s", resp)
	}
	if up.got("prompts/get") {
		t.Fatal("the upstream got a prompts/get its audit log does not record")
	}
}
