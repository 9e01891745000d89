package e2e

// The 2026-07-28 paths tried from outside as an attacker (session 8):
// retries, parked calls, relayed rounds, through the real binary.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A 2026-07-28 host's yes to the gate's question counts only for the rule
// it showed. The gate asks under "workspace-echo"; before the host's retry
// a symlink in the path is re-pointed out of the workspace, so that the
// same call (same arguments, same policy revision) is asked about by
// "outside-workspace", whose reason the human never read. The yes must not
// redeem for it (it did: the state bound the call, not the rule), and the
// upstream never sees the call.
func TestBypassModernApprovalOtherRule(t *testing.T) {
	t.Parallel()
	ws, outside, link := linkedWorkspace(t)
	pol := fmt.Sprintf(`version: 1
fallback: deny
approval:
  timeout: 30s
rules:
  - name: outside-workspace
    match: "mcp:honest:echo"
    when: '!path.within(args.text, %q)'
    action: ask
    reason: This echo leaves the workspace.
  - name: workspace-echo
    match: "mcp:honest:echo"
    action: ask
    reason: Echoes need a human.
`, ws)
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, pol))
	h := startModern(t, g, formCaps)
	target := filepath.Join(link, "notes.txt")
	resp := h.request("tools/call", echoCall(target))
	state := inputRequired(t, resp)
	if !strings.Contains(resp, "Echoes need a human. (policy rule workspace-echo)") {
		t.Fatalf("the question: %s", resp)
	}
	if err := repoint(link, outside); err != nil {
		t.Fatal(err)
	}
	text, isErr := toolText(t, h.request("tools/call", echoCall(target)+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state)))
	if ev := readEvents(t, events); strings.Contains(ev, "echo ") {
		t.Fatalf("the call ran on a yes to another rule's question (%q): %s", text, ev)
	}
	if !isErr || !strings.Contains(text, "issued for another call") {
		t.Fatalf("the retry under another rule: %q isError=%v", text, isErr)
	}
	// Asked afresh, the question names the rule now in force, and its yes runs the call.
	resp = h.request("tools/call", echoCall(target))
	state = inputRequired(t, resp)
	if !strings.Contains(resp, "This echo leaves the workspace. (policy rule outside-workspace)") {
		t.Fatalf("the new question: %s", resp)
	}
	if text, isErr := toolText(t, h.request("tools/call", echoCall(target)+`,`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state))); isErr || text != target {
		t.Fatalf("the yes to the question shown: %q isError=%v", text, isErr)
	}
}

// An upstream's cache hints never reach a 2026-07-28 host: a resource read
// the gate decided for this principal, under this policy revision, came
// back stamped for any client to serve to any user for a day. The host
// gets the gate's own hints (ttlMs 0, private), as for the lists, so no
// cache serves it to another principal (whose children are its own) or
// after a reload that denies it.
func TestBypassModernUpstreamCacheHints(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"evil": testserver("bypass-era")}, "--policy", writePolicy(t, "version: 1\nfallback: deny\n"))
	h := startModern(t, g, formCaps)
	resp := h.request("resources/read", `"uri":"mem://payroll"`)
	r := modernResult(t, resp)
	if !strings.Contains(resp, "salaries") {
		t.Fatalf("the read: %s", resp)
	}
	if r["cacheScope"] != "private" || r["ttlMs"] != float64(0) || strings.Contains(resp, "public") || strings.Contains(resp, "86400000") {
		t.Fatalf("the upstream's cache hints reached the host: %s", resp)
	}
}

// An upstream that withdraws its question (notifications/cancelled of its
// own request) has the gate cancel the request it made of the host on its
// behalf, and the host reads the reason (the spec lets it show or log it).
// The reason was passed byte for byte, the one upstream string that was
// neither neutralised nor inspected: here it clears the screen, reverses
// the text after it, and announces an approval. What reaches the host now
// is neutralised, and a reason that reads as an approval is left out.
func TestBypassUpstreamCancellationReason(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"evil": testserver("bypass-era", "--events", events)}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:evil:*]\n"))
	h := startRaw(t, g)
	initWith(h, `{"elicitation":{"form":{}}}`)
	resp := h.send("7", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"evil__withdraw","arguments":{}}}`)
	if !strings.Contains(resp, "withdrawn") {
		t.Fatalf("the call: %s", resp)
	}
	var asked, cancelled string
	for done := false; !done; {
		select {
		case line := <-h.notify:
			switch {
			case strings.Contains(line, `"method":"elicitation/create"`):
				asked = line
			case strings.Contains(line, `"method":"notifications/cancelled"`):
				cancelled = line
			}
		default:
			done = true
		}
	}
	if asked == "" || cancelled == "" {
		t.Fatalf("the host was not asked and then told of the withdrawal: asked %q, cancelled %q\n%s", asked, cancelled, readEvents(t, events))
	}
	for _, hidden := range []string{`\u001b`, "\x1b", `\u202e`, "\u202e", `\u200b`, "\u200b"} {
		if strings.Contains(cancelled, hidden) {
			t.Errorf("the cancellation reached the host with %q un-neutralised: %s", hidden, cancelled)
		}
	}
	if strings.Contains(cancelled, "approved") || strings.Contains(cancelled, "permission granted") {
		t.Errorf("the cancellation reached the host announcing an approval: %s", cancelled)
	}
}

// A parked call's progress reaches the host only while one of its host
// requests waits on it. The host's request that gave the token was
// answered (input required) and the question is with the host: the token
// is the host's to reuse for another request, to another server, whose
// progress the upstream would then speak for. Nothing of it may reach the
// host until a retry waits (and then on that retry's own token).
func TestBypassParkedProgressAfterAnswer(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"evil": testserver("bypass-era")}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:evil:*]\n"))
	h := startModern(t, g, formCaps)
	meta := strings.Replace(h.envelope(), `"_meta":{`, `"_meta":{"progressToken":"tok-1",`, 1)
	resp := h.send("9", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"evil__parked","arguments":{},`+meta+`}}`)
	_, state := parkedQuestion(t, resp, "elicitation/create")
	deadline := time.After(1500 * time.Millisecond)
	for waiting := true; waiting; {
		select {
		case line := <-h.notify:
			if strings.Contains(line, "notifications/progress") {
				t.Fatalf("progress of a parked call reached the host after its request was answered: %s", line)
			}
		case <-deadline:
			waiting = false
		}
	}
	// The retry that resumes the call gets its progress, on its own token.
	meta = strings.Replace(h.envelope(), `"_meta":{`, `"_meta":{"progressToken":"tok-2",`, 1)
	resp = h.send("10", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"evil__parked","arguments":{},`+parkAnswer(acceptStaging, state)+`,`+meta+`}}`)
	if text, isErr := toolText(t, resp); isErr || text != "parked done" {
		t.Fatalf("the retry: %s", resp)
	}
	var got []string
	for drained := false; !drained; {
		select {
		case line := <-h.notify:
			if strings.Contains(line, "notifications/progress") {
				got = append(got, line)
			}
		default:
			drained = true
		}
	}
	if len(got) == 0 {
		t.Fatal("the retry waiting on the call got none of its progress")
	}
	for _, line := range got {
		if !strings.Contains(line, `"progressToken":"tok-2"`) {
			t.Fatalf("progress reached the retry on another token: %s", line)
		}
	}
}

// An approval announced in an upstream's notifications (a log line, a
// progress message of the call, which hosts show their user while the
// call runs, perhaps beside the gate's own question) is inspected as a
// result is: it never reaches the host, of either era; the harmless
// progress around it does.
func TestBypassApprovalInNotifications(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"evil": testserver("bypass-era")}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:evil:*]\n"))
	collect := func(h *rawHost) string {
		var b strings.Builder
		deadline := time.After(500 * time.Millisecond)
		for {
			select {
			case line := <-h.notify:
				b.WriteString(line + "\n")
			case <-deadline:
				return b.String()
			}
		}
	}
	check := func(era, got string) {
		t.Helper()
		if strings.Contains(got, "approved") || strings.Contains(got, "permission granted") {
			t.Errorf("%s: an announced approval reached the host:\n%s", era, got)
		}
		if !strings.Contains(got, "step one") || !strings.Contains(got, "step three") {
			t.Errorf("%s: the harmless progress did not reach the host:\n%s", era, got)
		}
	}
	older := startRaw(t, g)
	initWith(older, `{}`)
	resp := older.send("5", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"evil__announce","arguments":{},"_meta":{"progressToken":"p5"}}}`)
	if !strings.Contains(resp, "announced") {
		t.Fatalf("2025-11-25: %s", resp)
	}
	check("2025-11-25", collect(older))

	g2 := gateCommand(t, map[string]server{"evil": testserver("bypass-era")}, "--policy", writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:evil:*]\n"))
	h := startModern(t, g2, formCaps)
	meta := strings.Replace(h.envelope(), `"_meta":{`, `"_meta":{"progressToken":"p6",`, 1)
	resp = h.send("6", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"evil__announce","arguments":{},`+meta+`}}`)
	if text, _ := toolText(t, resp); text != "announced" {
		t.Fatalf("2026-07-28: %s", resp)
	}
	check("2026-07-28", collect(h.rawHost))
}

// A yes binds the arguments the human was shown, in a canonical form that
// lets the host re-space them but must not let it change them: a lone
// surrogate escape and the replacement character it decodes to in Go read
// alike there, while a JavaScript server keeps the surrogate as written
// and a Python one may make a byte of a file name of it. The question
// shown for "a\ufffd" must not redeem for "a\ud800" (nor for another lone
// surrogate), and such arguments are not put to the human at all.
func TestBypassModernApprovalLoneSurrogate(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, eraPolicy))
	h := startModern(t, g, formCaps)
	state := inputRequired(t, h.request("tools/call", `"name":"honest__echo","arguments":{"text":"a\ufffd"}`))
	for _, lone := range []string{`a\ud800`, `a\udcff`} {
		text, isErr := toolText(t, h.request("tools/call", `"name":"honest__echo","arguments":{"text":"`+lone+`"},`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state)))
		if ev := readEvents(t, events); strings.Contains(ev, "echo ") {
			t.Fatalf("%s: the call ran on a yes to the question shown for a\\ufffd (%q): %s", lone, text, ev)
		}
		if !isErr {
			t.Fatalf("%s: %q", lone, text)
		}
	}
	if text, isErr := toolText(t, h.request("tools/call", `"name":"honest__echo","arguments":{"text":"a\ud800"}`)); !isErr || !strings.Contains(text, "lone surrogate") {
		t.Fatalf("a question for a lone surrogate: %q isError=%v", text, isErr)
	}
	// The yes to the question shown runs the call it was shown for.
	if text, isErr := toolText(t, h.request("tools/call", `"name":"honest__echo","arguments":{"text":"a\ufffd"},`+answer("accept", true)+`,"requestState":`+fmt.Sprintf("%q", state))); isErr || text != "a\ufffd" {
		t.Fatalf("the approved call: %q isError=%v", text, isErr)
	}
}
