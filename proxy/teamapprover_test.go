package proxy

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// recordingLocal is a local approval surface that records what it was
// asked and approves it.
type recordingLocal struct {
	mu    sync.Mutex
	asked []elicitation.Request
}

func (l *recordingLocal) Approve(_ context.Context, req elicitation.Request, _ time.Duration) elicitation.Answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, req)
	return elicitation.Answer{Outcome: elicitation.Approved, Detail: "approved on the fake surface"}
}

func (l *recordingLocal) requests() []elicitation.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]elicitation.Request(nil), l.asked...)
}

// A team user (a token identity) whose host declares no form elicitation
// cannot send their questions to the gate's local approval surface by the
// default channel order: the human there is not that user. Where the policy
// names the local channel, the question goes there and names the user.
// The gate's own user keeps the default order, unnamed.
func TestTeamUserQuestionsReachLocalOnlyWhereNamed(t *testing.T) {
	const noElicit = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`
	bob := Identity{Subject: "bob", Email: "bob@example.com", Groups: []string{"dev"}, Authenticated: true}
	for _, tc := range []struct {
		name, policy string
		id           Identity
		wantLocal    bool
	}{
		{"team user, default channels", "version: 1\nfallback: deny\nask: [\"mcp:**\"]\n", bob, false},
		{"team user, approval.via names local", "version: 1\nfallback: deny\napproval: {via: [elicitation, local]}\nask: [\"mcp:**\"]\n", bob, true},
		{"team user, the rule names local", "version: 1\nfallback: deny\nrules:\n  - {match: \"mcp:**\", action: ask, via: [local]}\n", bob, true},
		{"team user, the host's entry names local", "version: 1\nfallback: deny\napproval: {hosts: {raw: {via: [local]}}}\nask: [\"mcp:**\"]\n", bob, true},
		{"the gate's own user, default channels", "version: 1\nfallback: deny\nask: [\"mcp:**\"]\n", Identity{Subject: "uid:1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newChangingUpstream("d")
			local := &recordingLocal{}
			g, err := New(Options{
				Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
				Launcher: &scriptLauncher{servers: map[string]scripted{"s": up.serve}}, StartTimeout: 10 * time.Second,
				Policy: static(t, tc.policy), Logger: slog.New(slog.DiscardHandler), LocalApprover: local,
			})
			if err != nil {
				t.Fatal(err)
			}
			h := serveRawHostInit(t, g, g.NewSession(WithIdentity(tc.id)).Serve, noElicit)
			resp := string(h.call("tools/call", `{"name":"s__t","arguments":{}}`))
			asked := local.requests()
			if !tc.wantLocal {
				if len(asked) != 0 || !strings.Contains(resp, `"isError":true`) || !strings.Contains(resp, "only where the policy names that channel") {
					t.Fatalf("the local surface was asked %d times; the call: %s", len(asked), resp)
				}
				return
			}
			if len(asked) != 1 || strings.Contains(resp, `"isError":true`) {
				t.Fatalf("the local surface was asked %d times; the call: %s", len(asked), resp)
			}
			msg := elicitation.Message(asked[0])
			if tc.id.Authenticated {
				if asked[0].User != "bob" || !strings.Contains(msg, `User: "bob" "bob@example.com" (whose call this is)`) {
					t.Fatalf("the question does not name the user (%q):\n%s", asked[0].User, msg)
				}
			} else if asked[0].User != "" || strings.Contains(msg, "User:") {
				t.Fatalf("the gate's own user named in the question:\n%s", msg)
			}
		})
	}
}

// recordingApprover records the channels it was asked through.
type recordingApprover struct{ via [][]string }

func (r *recordingApprover) Approve(_ context.Context, req elicitation.Request, _ time.Duration) elicitation.Answer {
	r.via = append(r.via, req.Via)
	return elicitation.Answer{Outcome: elicitation.Unsupported, Detail: "recorded"}
}

// Whether the policy named the channels is the request's, from the
// snapshot that decided it: teamApprover reads no policy of its own, so a
// reload between decision and question cannot let the default order take
// a team user's question to the local surface.
func TestTeamApproverReadsViaNamedFromTheRequest(t *testing.T) {
	inner := &recordingApprover{}
	a := teamApprover{inner: inner, id: Identity{Subject: "alice", Authenticated: true}}
	both := []string{policy.ViaElicitation, policy.ViaLocal}
	a.Approve(context.Background(), elicitation.Request{Rule: "r", Via: both}, time.Second)
	a.Approve(context.Background(), elicitation.Request{Rule: "r", Via: both, ViaNamed: true}, time.Second)
	want := [][]string{{policy.ViaElicitation}, both}
	if !slices.EqualFunc(inner.via, want, slices.Equal) {
		t.Fatalf("channels asked: %v; want %v", inner.via, want)
	}
}
