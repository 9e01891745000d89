package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's callTimeout on every host path through the real binary: a
// 2026-07-28 host's calls (beside its request, parked on a question, or in
// it to a 2026-07-28 child) and a 2025-11-25 host's calls not covered by
// life_test.go, to upstreams of both eras that never answer (testserver
// --mode mtimeout and mtimeout-modern). Each time: the host gets the
// timeout error naming the server and its callTimeout, the upstream gets
// notifications/cancelled for the very request, and nothing stays parked
// or in flight (the next call works; a question asked next is parked, not
// refused as ambiguous, which a call still in flight would make it).

const (
	oldEra    = "2025-11-25"
	modernEra = "2026-07-28"
)

// mtimeoutPolicy allows every call, with an approval timeout far longer
// than any callTimeout here: a parked call ended within a test was ended
// by its callTimeout, not by its question's expiry.
const mtimeoutPolicy = "version: 1\nfallback: deny\napproval:\n  timeout: 120s\nallow:\n  - \"mcp:**\"\n"

// mtimeoutEntry is a servers-file entry for the mtimeout server of era,
// pinned to it, with callTimeout d and its events in events.
func mtimeoutEntry(era, d, events string) map[string]any {
	mode := "mtimeout"
	if era == modernEra {
		mode = "mtimeout-modern"
	}
	return map[string]any{"command": testserverBin, "args": []string{"--mode", mode, "--events", events}, "callTimeout": d, "protocol": era}
}

// mtimeoutGate is a gate with one server, srv, of era and callTimeout d.
func mtimeoutGate(t *testing.T, srv, era, d string) (*gate, string) {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events")
	path := lifeServers(t, map[string]map[string]any{srv: mtimeoutEntry(era, d, events)})
	return gateCommand(t, nil, "--servers", path, "--policy", writePolicy(t, mtimeoutPolicy)), events
}

func mtimeoutArgs(srv, tool, tag string) string {
	return fmt.Sprintf(`"name":"%s__%s","arguments":{"tag":%q}`, srv, tool, tag)
}

// startedID waits for the server to record tool's call tagged tag and
// returns the gate's id for it upstream.
func startedID(t *testing.T, events, tool, tag string) string {
	t.Helper()
	prefix := "started " + tool + " " + tag + " "
	var id string
	waitFor(t, "the server to receive "+tool+" "+tag, 15*time.Second, func() bool {
		for _, l := range strings.Split(readEvents(t, events), "\n") {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				id = rest
				return true
			}
		}
		return false
	})
	return id
}

// cancelledReason waits for the server to record notifications/cancelled
// for its request id and returns the reason given. The older mode records
// the params as they came, the 2026-07-28 one "<id> <reason>".
func cancelledReason(t *testing.T, events, id string) string {
	t.Helper()
	var reason string
	waitFor(t, "notifications/cancelled for upstream request "+id, 15*time.Second, func() bool {
		for _, l := range strings.Split(readEvents(t, events), "\n") {
			rest, ok := strings.CutPrefix(l, "cancelled ")
			if !ok {
				continue
			}
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			}
			if json.Unmarshal([]byte(rest), &p) == nil && string(p.RequestID) == id {
				reason = p.Reason
				return true
			}
			if got, why, _ := strings.Cut(rest, " "); got == id {
				reason = why
				return true
			}
		}
		return false
	})
	return reason
}

// wantTimeout checks that the server got notifications/cancelled for its
// request id, with the callTimeout as the reason.
func wantCancelledForTimeout(t *testing.T, events, id string) {
	t.Helper()
	if reason := cancelledReason(t, events, id); !strings.Contains(reason, "callTimeout") {
		t.Fatalf("upstream request %s was cancelled with reason %q; want the callTimeout named", id, reason)
	}
}

// timeoutText is what the host is told of a call that outlived its
// server's callTimeout.
func timeoutText(srv, d string) string {
	return fmt.Sprintf("upstream %q did not answer within its callTimeout of %s", srv, d)
}

// wantTimeoutError checks a 2026-07-28 host's response is the -32603
// error naming the server and its callTimeout.
func wantTimeoutError(t *testing.T, resp, srv, d string) {
	t.Helper()
	code, msg, _ := rpcErrorOf(t, resp)
	if code != -32603 || !strings.Contains(msg, timeoutText(srv, d)) {
		t.Fatalf("got %s; want a -32603 error saying %q", resp, timeoutText(srv, d))
	}
}

// 2026-07-28 host, an upstream of either era whose tool never answers.
// The first call starts the server (its era is not known yet, so it is
// forwarded beside the host request); the second runs with the era known
// (a 2026-07-28 child's call then runs in the host request).
func TestMtimeoutModernHostNever(t *testing.T) {
	t.Parallel() // waits on timeouts; its servers, files and gates are its own
	for _, era := range []string{oldEra, modernEra} {
		t.Run(era+" upstream", func(t *testing.T) {
			g, events := mtimeoutGate(t, "slow", era, "1s")
			h := startModern(t, g, formCaps)
			for _, tag := range []string{"first", "second"} {
				wantTimeoutError(t, h.request("tools/call", mtimeoutArgs("slow", "never", tag)), "slow", "1s")
				wantCancelledForTimeout(t, events, startedID(t, events, "never", tag))
			}
			if text, isErr := toolText(t, h.request("tools/call", mtimeoutArgs("slow", "echo", "after"))); isErr || text != "echo after" {
				t.Fatalf("the call after the timeouts: %q isError=%v", text, isErr)
			}
			if era == oldEra {
				// Nothing of the timed-out calls is in flight: a
				// question is parked for the host, not refused as
				// ambiguous between calls.
				parkedQuestion(t, h.request("tools/call", mtimeoutArgs("slow", "askhang", "probe")), "elicitation/create")
			}
		})
	}
}

// 2026-07-28 host, 2026-07-28 upstream asking by its result: the host
// answers the relayed round, and the upstream never answers the retry.
// Each round is a request of its own upstream, bounded on its own.
func TestMtimeoutModernHostRelayedRound(t *testing.T) {
	t.Parallel() // waits on timeouts; its servers, files and gates are its own
	g, events := mtimeoutGate(t, "slow", modernEra, "1s")
	h := startModern(t, g, formCaps)
	// Started, so that the era is known and the call runs in its request.
	if text, isErr := toolText(t, h.request("tools/call", mtimeoutArgs("slow", "echo", "start"))); isErr || text != "echo start" {
		t.Fatalf("echo: %q isError=%v", text, isErr)
	}
	r := modernResult(t, h.request("tools/call", mtimeoutArgs("slow", "askhang", "r")))
	st, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || st == "" {
		t.Fatalf("want the upstream's question relayed, got %v", r)
	}
	resp := h.request("tools/call", mtimeoutArgs("slow", "askhang", "r")+`,"inputResponses":{"mcp-gate-relayed-1":{"action":"accept","content":{"env":"staging"}}},"requestState":`+fmt.Sprintf("%q", st))
	wantTimeoutError(t, resp, "slow", "1s")
	waitEvent(t, events, "answered askhang r ", 10*time.Second)
	var retryID string
	for _, l := range strings.Split(readEvents(t, events), "\n") {
		if rest, ok := strings.CutPrefix(l, "answered askhang r "); ok {
			retryID, _, _ = strings.Cut(rest, " ")
		}
	}
	wantCancelledForTimeout(t, events, retryID)
	if text, isErr := toolText(t, h.request("tools/call", mtimeoutArgs("slow", "echo", "after"))); isErr || text != "echo after" {
		t.Fatalf("the call after the timeout: %q isError=%v", text, isErr)
	}
}

// A parked call (2026-07-28 host, older upstream asking mid-call) is
// bounded by its callTimeout from its forward, across its rounds: the
// host's time to answer counts, as it does for a 2025-11-25 host whose
// call is asked mid-way.
func TestMtimeoutParked(t *testing.T) {
	t.Parallel() // waits on timeouts; its servers, files and gates are its own
	// Answered at once; the upstream then never answers: the retry ends
	// with the timeout error, and the upstream got the answer, then
	// notifications/cancelled.
	t.Run("answered then never", func(t *testing.T) {
		g, events := mtimeoutGate(t, "slow", oldEra, "1s")
		h := startModern(t, g, formCaps)
		_, st := parkedQuestion(t, h.request("tools/call", mtimeoutArgs("slow", "askhang", "a")), "elicitation/create")
		id := startedID(t, events, "askhang", "a")
		wantTimeoutError(t, h.request("tools/call", mtimeoutArgs("slow", "askhang", "a")+","+parkAnswer(acceptStaging, st)), "slow", "1s")
		if ev := readEvents(t, events); !strings.Contains(ev, "answered askhang a "+id+` {"action":"accept","content":{"env":"staging"}}`) {
			t.Fatalf("the upstream did not get the answer:\n%s", ev)
		}
		wantCancelledForTimeout(t, events, id)
		parkedQuestion(t, h.request("tools/call", mtimeoutArgs("slow", "askhang", "next")), "elicitation/create")
	})

	// The callTimeout runs out while the question is with the host (the
	// approval timeout, 120s, is far off): it runs from the forward, not
	// from the host's retry. The upstream is told at once; its question is
	// answered with an error rather than held until the question expires;
	// the host's answer never reaches it; and the retry that comes later
	// gets the call's outcome, the timeout error.
	t.Run("timed out while parked", func(t *testing.T) {
		g, events := mtimeoutGate(t, "slow", oldEra, "1s")
		h := startModern(t, g, formCaps)
		timedOutWhileParked(t, func(method, _, members string) string { return h.request(method, members) }, events)
	})

	// The same against a go-sdk server, which withdraws its own question
	// when its call is cancelled: the retry still gets the call's outcome,
	// not a refusal saying no question waits.
	t.Run("question withdrawn by the upstream", func(t *testing.T) {
		events := filepath.Join(t.TempDir(), "events")
		path := lifeServers(t, map[string]map[string]any{"park": {
			"command": testserverBin, "args": []string{"--mode", "park", "--events", events}, "callTimeout": "1s",
		}})
		g := gateCommand(t, nil, "--servers", path, "--policy", writePolicy(t, mtimeoutPolicy))
		h := startModern(t, g, formCaps)
		_, st := parkedQuestion(t, callPark(func(method, _, members string) string { return h.request(method, members) }, "deploy", "w", ""), "elicitation/create")
		waitEvent(t, events, "deploy cancelled w", 15*time.Second)
		wantTimeoutError(t, h.request("tools/call", parkArgs("deploy", "w")+","+parkAnswer(acceptStaging, st)), "park", "1s")
		if strings.Contains(readEvents(t, events), "deploy answered w") {
			t.Fatal("the answer reached the upstream after its call was cancelled")
		}
	})
}

// timedOutWhileParked is the "timed out while parked" scenario on a
// transport: call sends a request and returns the response.
func timedOutWhileParked(t *testing.T, call modernCall, events string) {
	t.Helper()
	askhang := func(tag, extra string) string {
		members := mtimeoutArgs("slow", "askhang", tag)
		if extra != "" {
			members += "," + extra
		}
		return call("tools/call", "slow__askhang", members)
	}
	_, st := parkedQuestion(t, askhang("p", ""), "elicitation/create")
	id := startedID(t, events, "askhang", "p")
	wantCancelledForTimeout(t, events, id)
	waitEvent(t, events, "answered askhang p "+id+` {"error":`, 10*time.Second)
	if ev := readEvents(t, events); !strings.Contains(ev, "the call it was asked in ended") {
		t.Fatalf("the upstream's question was not answered with why:\n%s", ev)
	}
	wantTimeoutError(t, askhang("p", parkAnswer(acceptStaging, st)), "slow", "1s")
	if ev := readEvents(t, events); strings.Contains(ev, "staging") {
		t.Fatalf("the host's answer reached the upstream after its call was cancelled:\n%s", ev)
	}
	// Nothing stays parked: the next question is the only one.
	parkedQuestion(t, askhang("next", ""), "elicitation/create")
}

// Over HTTP, where every request is a POST of its own (a proxy Session
// each): a call that never answers, and a call timed out while parked
// whose retry comes in another POST.
func TestMtimeoutModernHostHTTP(t *testing.T) {
	t.Parallel() // waits on timeouts; its servers, files and gates are its own
	g, events := mtimeoutGate(t, "slow", oldEra, "1s")
	c := &modernHTTP{t: t, url: g.serveHTTP(t), caps: formCaps}
	call := func(method, name, members string) string {
		_, b := c.request(method, name, members)
		return b
	}
	wantTimeoutError(t, call("tools/call", "slow__never", mtimeoutArgs("slow", "never", "h")), "slow", "1s")
	wantCancelledForTimeout(t, events, startedID(t, events, "never", "h"))
	timedOutWhileParked(t, call, events)

	// A 2026-07-28 child: the call runs in its POST's own request, and the
	// bound cancels that request (rpc.CancelServedAfter) rather than a
	// context of the forward's own; the HTTP front end must still answer
	// the POST with the timeout, and the next call go through.
	t.Run("2026-07-28 upstream", func(t *testing.T) {
		g, events := mtimeoutGate(t, "slow", modernEra, "1s")
		c := &modernHTTP{t: t, url: g.serveHTTP(t), caps: formCaps}
		call := func(name, tag string) string {
			_, b := c.request("tools/call", name, mtimeoutArgs("slow", strings.TrimPrefix(name, "slow__"), tag))
			return b
		}
		// Started first, so that the era is known and the call is not parked.
		if text, isErr := toolText(t, call("slow__echo", "start")); isErr || text != "echo start" {
			t.Fatalf("echo: %q isError=%v", text, isErr)
		}
		for _, tag := range []string{"first", "second"} {
			wantTimeoutError(t, call("slow__never", tag), "slow", "1s")
			wantCancelledForTimeout(t, events, startedID(t, events, "never", tag))
		}
		if text, isErr := toolText(t, call("slow__echo", "after")); isErr || text != "echo after" {
			t.Fatalf("the call after the timeouts: %q isError=%v", text, isErr)
		}
	})
}

// A 2025-11-25 host (a go-sdk client), where life_test.go does not cover
// it: an older upstream asking mid-call and never answering after the
// host's answer; and a 2026-07-28 upstream that never answers, directly or
// after a relayed round.
func TestMtimeoutLegacyHost(t *testing.T) {
	t.Parallel() // waits on timeouts; its servers, files and gates are its own
	asker := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"env": "staging"}}, nil
	}
	call := func(t *testing.T, sess *mcp.ClientSession, name, tag string) (string, error) {
		t.Helper()
		res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"tag": tag}})
		switch {
		case err != nil:
			return err.Error(), err
		case res.IsError:
			return resultText(res), fmt.Errorf("error result: %s", resultText(res))
		}
		return resultText(res), nil
	}
	for _, tc := range []struct{ name, era, tool string }{
		{"older upstream asks then never", oldEra, "askhang"},
		{"2026-07-28 upstream never", modernEra, "never"},
		{"2026-07-28 upstream asks then never", modernEra, "askhang"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, events := mtimeoutGate(t, "slow", tc.era, "1s")
			sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: asker})
			msg, err := call(t, sess, "slow__"+tc.tool, "x")
			if err == nil || !strings.Contains(msg, timeoutText("slow", "1s")) {
				t.Fatalf("slow__%s = %q; want the callTimeout error naming the server", tc.tool, msg)
			}
			id := startedID(t, events, tc.tool, "x")
			if tc.tool == "askhang" {
				waitEvent(t, events, "answered askhang x ", 10*time.Second)
				ev := readEvents(t, events)
				if !strings.Contains(ev, "staging") {
					t.Fatalf("the upstream did not get the host's answer:\n%s", ev)
				}
				if tc.era == modernEra {
					// The answer came in a retry: that request timed out.
					_, rest, _ := strings.Cut(ev, "answered askhang x ")
					id, _, _ = strings.Cut(rest, " ")
				}
			}
			wantCancelledForTimeout(t, events, id)
			if msg, err := call(t, sess, "slow__echo", "after"); err != nil || msg != "echo after" {
				t.Fatalf("the call after the timeout = %q, %v", msg, err)
			}
		})
	}
}
