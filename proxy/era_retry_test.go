package proxy

// In-memory tests of the 2026-07-28 retry path (era_retry.go): a retry's
// requestState is verified once per request, and the yes that let a call
// through before it ran covers its server's questions on every approval
// channel, the local surface's included, for exactly that call only.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
)

// retryEnv is a gate whose one server "s" asks a question during every
// call of t (an older upstream's elicitation, parked; or a 2026-07-28
// upstream's round, relayed), under a policy file that asks about s:t.
type retryEnv struct {
	t        *testing.T
	kind     string // "parked" or "relayed"
	g        *Gate
	h        *modernHost
	approver *fakeApprover
	store    *policy.Store
	path     string
	up       *pipelineUpstream // parked
	u        *modernUpstream   // relayed
}

// retryPolicy asks about s:t on the channels of via, with the approval
// timeout given.
func retryPolicy(via, timeout string) string {
	return "version: 1\nfallback: deny\napproval: {timeout: " + timeout + "}\nrules:\n  - name: guarded\n    match: mcp:s:t\n    action: ask\n    via: [" + via + "]\n"
}

func newRetryEnv(t *testing.T, kind, pol string) *retryEnv {
	t.Helper()
	e := &retryEnv{t: t, kind: kind, approver: &fakeApprover{outcome: elicitation.Approved}}
	e.path = filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(e.path, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := policy.Watch(t.Context(), e.path, policy.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	opts := []func(*Options){func(o *Options) { o.Policy = store; o.Approver = e.approver }}
	switch kind {
	case "parked":
		e.up = newPipelineUpstream()
		e.g = newScriptedGate(t, e.up.serve, allowAll, opts...)
	case "relayed":
		e.u = &modernUpstream{round: func(n int, p json.RawMessage) string {
			if _, retry := rawjson.Get(p, "inputResponses"); !retry {
				return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":"up"}`
			}
			return `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`
		}}
		e.g = newScriptedGate(t, e.u.serve, allowAll, append([]func(*Options){pinModern}, opts...)...)
	}
	e.h = serveModernHost(t, e.g)
	return e
}

// args are the call's arguments, tagged with n so that every call is one
// of its own.
func (e *retryEnv) args(n int) string {
	if e.kind == "parked" {
		return fmt.Sprintf(`{"send":"elicitation/create","n":%d}`, n)
	}
	return fmt.Sprintf(`{"n":%d}`, n)
}

// answer is the host's answer to the server's question.
func (e *retryEnv) answer() string {
	if e.kind == "parked" {
		return `{"` + elicitation.ParkedInputKey + `":{"action":"accept","content":{"c":"red"}}}`
	}
	return `{"mcp-gate-relayed-1":{"action":"accept","content":{"c":"red"}}}`
}

// start calls t with args(n) on h and returns the state of the server's
// question, checking the question is the server's (the gate's own was put
// to its channel).
func (e *retryEnv) start(h *modernHost, n int) string {
	e.t.Helper()
	reqs, st := inputRequired(e.t)(h.call("tools/call", `{"name":"s__t","arguments":`+e.args(n)+`}`, formCaps))
	if _, own := rawjson.Get(reqs, elicitation.ApprovalInputKey); own {
		e.t.Fatalf("the gate's own question went to the host's form: %s", reqs)
	}
	return st
}

func (e *retryEnv) retry(h *modernHost, args, state string) (json.RawMessage, error) {
	return h.call("tools/call", `{"name":"s__t","arguments":`+args+`,"inputResponses":`+e.answer()+`,"requestState":`+string(rawjson.AppendString(nil, state))+`}`, formCaps)
}

func (e *retryEnv) asked() int {
	e.approver.mu.Lock()
	defer e.approver.mu.Unlock()
	return len(e.approver.asked)
}

// upstreamCalls counts the calls that reached the upstream.
func (e *retryEnv) upstreamCalls() int {
	if e.kind == "relayed" {
		return len(e.u.seen())
	}
	e.up.mu.Lock()
	defer e.up.mu.Unlock()
	n := 0
	for _, m := range e.up.seen {
		if m == "tools/call" {
			n++
		}
	}
	return n
}

// settled waits until no parkable call of e's host is in flight to s and,
// for a parked call, until the upstream has the gate's answer to every
// question it asked: the gate's refusal of a cancelled call's question
// can reach the upstream after the call ended on the gate's side, and the
// fake upstream's next question reuses that request's id.
func (e *retryEnv) settled() {
	e.t.Helper()
	key := e.g.childKeyFor(e.h.sess.childKey(), "s")
	waitFor(e.t, "the refused retry's call to end", func() bool {
		if e.kind == "parked" && e.up.repliesTo("up-elicitation/create") < e.upstreamCalls() {
			return false
		}
		return len(e.h.sess.parkableIn(child{key, "s"})) == 0
	})
}

// reload rewrites the policy file with text and waits for the new revision.
func (e *retryEnv) reload(text string) {
	e.t.Helper()
	rev := e.store.Current().Revision()
	if err := os.WriteFile(e.path+".new", []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(e.path+".new", e.path); err != nil {
		e.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); e.store.Current().Revision() == rev; {
		if time.Now().After(deadline) {
			e.t.Fatal("the policy was not reloaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func answered(res json.RawMessage, err error) bool {
	return err == nil && !strings.Contains(string(res), `"isError":true`) &&
		(strings.Contains(string(res), "red") || strings.Contains(string(res), "done"))
}

func refusedWith(res json.RawMessage, err error, why string) bool {
	return err == nil && strings.Contains(string(res), `"isError":true`) && strings.Contains(string(res), why) &&
		!strings.Contains(string(res), "input_required")
}

// Under a via: [local] rule the human approves the call on the local
// surface before it runs; the retry that answers its server's question
// (parked or relayed) is that yes, not a new question: the local surface
// is not asked again. A state for anything but exactly that call is
// refused without asking: other arguments, another policy revision (the
// same rule reloaded), another principal, expired; and nothing more
// reaches the upstream.
func TestRetryUnderViaLocalNotAskedAgain(t *testing.T) {
	for _, kind := range []string{"parked", "relayed"} {
		t.Run(kind, func(t *testing.T) {
			e := newRetryEnv(t, kind, retryPolicy("local", "2m"))
			st := e.start(e.h, 1)
			if e.asked() != 1 {
				t.Fatalf("the local surface was asked %d times for the call", e.asked())
			}
			// Another principal presents the state: refused, and the call
			// still waits for its own host.
			other := serveModernHost(t, e.g, WithIdentity(Identity{Subject: "mallory"}))
			res, err := e.retry(other, e.args(1), st)
			if !refusedWith(res, err, "issued for another call") {
				t.Fatalf("another principal's retry: %s %v", res, err)
			}
			res, err = e.retry(e.h, e.args(1), st)
			if !answered(res, err) {
				t.Fatalf("the retry answering the server's question: %s %v", res, err)
			}
			if e.asked() != 1 {
				t.Fatalf("the retry of an approved call was asked again on the local surface (%d questions)", e.asked())
			}

			// Other arguments than the call approved.
			st = e.start(e.h, 2)
			n := e.upstreamCalls()
			res, err = e.retry(e.h, e.args(3), st)
			if !refusedWith(res, err, "issued for another call") || e.asked() != 2 || e.upstreamCalls() != n {
				t.Fatalf("a retry with other arguments: %s %v (asked %d, upstream %d→%d)", res, err, e.asked(), n, e.upstreamCalls())
			}

			// The refused retry ends its parked call, whose forward then
			// ends beside it: until it has, an older upstream's next
			// question could be for either call, and is refused as such.
			e.settled()

			// The same rule, reloaded: another revision.
			st = e.start(e.h, 4)
			e.reload(retryPolicy("local", "2m") + "# reloaded\n")
			n = e.upstreamCalls()
			res, err = e.retry(e.h, e.args(4), st)
			if !refusedWith(res, err, "issued for another call") || e.asked() != 3 || e.upstreamCalls() != n {
				t.Fatalf("a retry under another revision: %s %v (asked %d, upstream %d→%d)", res, err, e.asked(), n, e.upstreamCalls())
			}
		})
	}
}

// An expired state of a call approved on the local surface is refused,
// not asked again.
func TestRetryUnderViaLocalExpired(t *testing.T) {
	for _, kind := range []string{"parked", "relayed"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newRetryEnv(t, kind, retryPolicy("local", "1s"))
			st := e.start(e.h, 1)
			time.Sleep(1100 * time.Millisecond)
			n := e.upstreamCalls()
			res, err := e.retry(e.h, e.args(1), st)
			if !refusedWith(res, err, "expired") || e.asked() != 1 || e.upstreamCalls() != n {
				t.Fatalf("an expired retry: %s %v (asked %d, upstream %d→%d)", res, err, e.asked(), n, e.upstreamCalls())
			}
		})
	}
}

// The host's own form as the channel (the default): the gate's question
// first, then the server's; each retry's state is verified exactly once,
// whatever reads it after (the decision, the answer, the resume, the end
// of the request). A via: [local] rule's retry likewise.
func TestRetryVerifiesStateOnce(t *testing.T) {
	for _, via := range []string{"elicitation", "local"} {
		for _, kind := range []string{"parked", "relayed"} {
			t.Run(via+"/"+kind, func(t *testing.T) {
				e := newRetryEnv(t, kind, retryPolicy(via, "2m"))
				verified := func(what string, f func() (json.RawMessage, error)) json.RawMessage {
					t.Helper()
					v0 := e.g.rounds.Verifications()
					res, err := f()
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if n := e.g.rounds.Verifications() - v0; n != 1 {
						t.Fatalf("%s: its requestState was verified %d times, want once", what, n)
					}
					return res
				}
				call := func(extra string) (json.RawMessage, error) {
					return e.h.call("tools/call", `{"name":"s__t","arguments":`+e.args(1)+extra+`}`, formCaps)
				}
				res, err := call("")
				if err != nil {
					t.Fatal(err)
				}
				if via == "elicitation" {
					_, st := inputRequired(t)(res, nil)
					yes := `,"inputResponses":{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}},"requestState":` + string(rawjson.AppendString(nil, st))
					res = verified("the approval's retry", func() (json.RawMessage, error) { return call(yes) })
				}
				reqs, st := inputRequired(t)(res, nil)
				if _, own := rawjson.Get(reqs, elicitation.ApprovalInputKey); own {
					t.Fatalf("the gate asked again: %s", reqs)
				}
				res = verified("the server question's retry", func() (json.RawMessage, error) { return e.retry(e.h, e.args(1), st) })
				if !answered(res, nil) {
					t.Fatalf("the retry: %s", res)
				}
				// A state that is none of the gate's: verified once, refused.
				res = verified("a forged state", func() (json.RawMessage, error) { return e.retry(e.h, e.args(1), st[:len(st)-2]+"AA") })
				if !strings.Contains(string(res), `"isError":true`) {
					t.Fatalf("a forged state: %s", res)
				}
			})
		}
	}
}

// An upstream's question of a kind the host's request did not declare is
// refused saying so, the same way for a parked call and a relayed round
// (hostQuestion), not mistaken for a question the gate never relays.
func TestHostQuestionUndeclared(t *testing.T) {
	for _, kind := range []string{"parked", "relayed"} {
		for _, q := range []string{"sampling/createMessage", "roots/list"} {
			t.Run(kind+"/"+q, func(t *testing.T) {
				e := newRetryEnv(t, kind, allowAll)
				var res json.RawMessage
				var err error
				if kind == "parked" {
					res, err = e.h.call("tools/call", `{"name":"s__t","arguments":{"send":"`+q+`"}}`, formCaps)
				} else {
					e.u.round = func(int, json.RawMessage) string {
						return `{"resultType":"input_required","inputRequests":{"q":{"method":"` + q + `","params":` + upstreamParams[q] + `}}}`
					}
					res, err = e.h.call("tools/call", `{"name":"s__t","arguments":{}}`, formCaps)
					if err != nil {
						_, msg := rpcCode(t, err)
						res, err = json.RawMessage(msg), nil
					}
				}
				what := map[string]string{"sampling/createMessage": "sampling", "roots/list": "roots"}[q]
				if err != nil || !strings.Contains(string(res), "declared no "+what+" capability") {
					t.Fatalf("an undeclared %s: %s %v", q, res, err)
				}
			})
		}
	}
}
