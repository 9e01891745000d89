package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lifecycle tests (issue 10, "Resources stay bounded" and "Time"):
// the real binary against the testserver's "life" mode.

// lifeServers writes a servers file whose entries may carry keys the
// harness's server type does not (callTimeout), and returns its path.
func lifeServers(t *testing.T, servers map[string]map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func lifeEntry(extra map[string]any, args ...string) map[string]any {
	pre := []string{"--mode", "life"}
	if len(args) >= 2 && args[0] == "--events" {
		pre, args = append(pre, args[:2]...), args[2:]
	}
	e := map[string]any{"command": testserverBin, "args": append(append(pre, "--"), args...)}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// callErr calls a tool and returns the JSON-RPC error, or the text of an
// error result, or "" on success.
func callErr(ctx context.Context, sess *mcp.ClientSession, name string) (string, error) {
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return err.Error(), err
	}
	if res.IsError {
		return resultText(res), errors.New(resultText(res))
	}
	return "", nil
}

// A call to a server that never answers ends at the server's callTimeout
// with an error naming the server and the timeout, and the server is told
// with notifications/cancelled; the server keeps serving.
func TestLifeCallTimeout(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	path := lifeServers(t, map[string]map[string]any{
		"slow": lifeEntry(map[string]any{"callTimeout": "1s"}, "--events", events),
	})
	g := gateCommand(t, nil, "--servers", path)
	sess := g.connect(t, nil)
	msg, err := callErr(ctxT(t, 60*time.Second), sess, "slow__never")
	if err == nil || !strings.Contains(msg, `upstream "slow" did not answer within its callTimeout of 1s`) {
		t.Fatalf("a call that is never answered = %q; want the callTimeout error naming the server", msg)
	}
	waitFor(t, "the cancellation to reach the server", 10*time.Second, func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "cancelled") && strings.Contains(string(b), "callTimeout")
	})
	if msg, err := callErr(ctxT(t, 30*time.Second), sess, "slow__echo"); err != nil {
		t.Fatalf("the next call = %s", msg)
	}
}

// A bad callTimeout is refused with the file, the server and the key.
func TestLifeCallTimeoutInvalid(t *testing.T) {
	t.Parallel()
	for _, bad := range []any{"10 minutes", "-1s", 600, "0s"} {
		path := lifeServers(t, map[string]map[string]any{"slow": lifeEntry(map[string]any{"callTimeout": bad})})
		out, err := runCmd(gateBin, "check", "--servers", path)
		if err == nil || !strings.Contains(out, `server "slow": "callTimeout"`) {
			t.Errorf("callTimeout %v: check = %v\n%s\nwant a refusal naming the server and the key", bad, err, out)
		}
	}
}

// A server that dies every 4th call: the calls after each crash wait out
// the restart backoff within their callTimeout and succeed, instead of
// being refused ("next start attempt in ...") as they were.
func TestLifeRestartBackoffWaits(t *testing.T) {
	t.Parallel()
	path := lifeServers(t, map[string]map[string]any{
		"flaky": lifeEntry(map[string]any{"callTimeout": "60s"}, "--die-every", "4"),
	})
	g := gateCommand(t, nil, "--servers", path)
	sess := g.connect(t, nil)
	for i := 1; i <= 12; i++ {
		msg, err := callErr(ctxT(t, 90*time.Second), sess, "flaky__echo")
		switch {
		case i%4 == 0:
			// The call the server dies on fails, saying how it died.
			if err == nil || !strings.Contains(msg, "dying on call 4, on purpose") {
				t.Errorf("call %d (the server dies on it) = %q; want the exit and its stderr", i, msg)
			}
		case err != nil:
			t.Errorf("call %d = %q; want it served once the server restarts", i, msg)
		}
	}
}

// An upstream that writes a 1 MiB stderr line keeps being drained: it is
// not killed by SIGPIPE on its next stderr write, and its calls succeed.
func TestLifeStderrLongLine(t *testing.T) {
	t.Parallel()
	path := lifeServers(t, map[string]map[string]any{"noisy": lifeEntry(nil, "--stderr-line", fmt.Sprint(1<<20))})
	g := gateCommand(t, nil, "--servers", path)
	sess := g.connect(t, nil)
	for i := range 5 {
		if msg, err := callErr(ctxT(t, 30*time.Second), sess, "noisy__echo"); err != nil {
			t.Fatalf("call %d = %s", i, msg)
		}
	}
	waitStderr(g.stderr, "more bytes of this line not kept", 1)
	logs := g.stderr.String()
	if strings.Contains(logs, "upstream exited") {
		t.Errorf("the server died:\n%s", logs)
	}
	if !strings.Contains(logs, "more bytes of this line not kept") || strings.Contains(logs, strings.Repeat("e", 5<<10)) {
		t.Errorf("the long stderr line is not logged cut to its head")
	}
}

// lifeBroken is the shared body of the framing tests: a call whose answer
// never ends (or stalls half-written) fails promptly with reason, so does
// another call in flight to the same server, another server keeps working
// throughout, and the broken server serves again on a later call.
func lifeBroken(t *testing.T, tool, want string, flags ...string) {
	path := lifeServers(t, map[string]map[string]any{
		"bad":   lifeEntry(nil),
		"other": lifeEntry(nil),
	})
	g := gateCommand(t, nil, append([]string{"--servers", path}, flags...)...)
	sess := g.connect(t, nil)
	if msg, err := callErr(ctxT(t, 30*time.Second), sess, "other__echo"); err != nil {
		t.Fatalf("other__echo = %s", msg)
	}
	ctx := ctxT(t, 60*time.Second)
	var wg sync.WaitGroup
	var neverMsg string
	wg.Add(1)
	go func() {
		defer wg.Done()
		neverMsg, _ = callErr(ctx, sess, "bad__never")
	}()
	time.Sleep(300 * time.Millisecond) // let never reach the server first
	msg, err := callErr(ctx, sess, "bad__"+tool)
	if err == nil || !strings.Contains(msg, want) {
		t.Fatalf("bad__%s = %q; want an error containing %q", tool, msg, want)
	}
	wg.Wait()
	if !strings.Contains(neverMsg, want) {
		t.Errorf("the other call in flight to the broken server = %q; want it failed with the same cause", neverMsg)
	}
	if ctx.Err() != nil {
		t.Fatal("the calls ended only at the test's deadline")
	}
	if msg, err := callErr(ctxT(t, 30*time.Second), sess, "other__echo"); err != nil {
		t.Fatalf("the host session did not live on: other__echo = %s", msg)
	}
	if msg, err := callErr(ctxT(t, 60*time.Second), sess, "bad__echo"); err != nil {
		t.Fatalf("the broken server was not restarted on a later call: %s", msg)
	}
}

func TestLifeEndlessLine(t *testing.T) {
	t.Parallel()
	lifeBroken(t, "endless", "taken as an endless line", "--max-message-bytes", "65536")
}

func TestLifePartialMessageStall(t *testing.T) {
	t.Parallel()
	lifeBroken(t, "partial", "and then nothing for 1s", "--upstream-stall", "1s")
}

// The time a human takes to approve a call is not the server's: a call
// asked about for longer than the server's callTimeout still runs, under
// its own timeout once forwarded.
func TestLifeCallTimeoutExcludesApproval(t *testing.T) {
	t.Parallel()
	path := lifeServers(t, map[string]map[string]any{
		"slow": lifeEntry(map[string]any{"callTimeout": "1s"}),
	})
	pol := writePolicy(t, "version: 1\nfallback: deny\napproval:\n  timeout: 30s\nask:\n  - mcp:slow:echo\n")
	g := gateCommand(t, nil, "--servers", path, "--policy", pol)
	a := &asker{}
	a.set(func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		time.Sleep(2 * time.Second) // twice the callTimeout
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	})
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: a.handler})
	if msg, err := callErr(ctxT(t, 60*time.Second), sess, "slow__echo"); err != nil {
		t.Fatalf("a call approved after longer than its callTimeout = %q; want it served", msg)
	}
	if a.asked.Load() != 1 {
		t.Fatalf("asked %d times; want once", a.asked.Load())
	}
}
