package elicitation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// hostFunc is an in-memory host: it answers each elicitation with f.
type hostFunc func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

func (h hostFunc) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != "elicitation/create" {
		return nil, fmt.Errorf("unexpected method %s", method)
	}
	return h(ctx, params)
}

func answer(s string) hostFunc {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(s), nil }
}

var never hostFunc = func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

var req = Request{Server: "github", Tool: "create_issue", Args: json.RawMessage(`{"title":"x"}`), ArgsDigest: "hmac-sha256:0011", Rule: "ask[0]", Reason: "Creating issues needs a human."}

func TestOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		host    Host
		timeout time.Duration
		want    Outcome
		allowed bool
		detail  string
	}{
		{"accept yes", answer(`{"action":"accept","content":{"approve":true}}`), time.Second, Approved, true, "approved"},
		{"accept yes once", answer(`{"action":"accept","content":{"approve":true,"scope":"once"}}`), time.Second, Approved, true, ""},
		{"accept yes session", answer(`{"action":"accept","content":{"approve":true,"scope":"session"}}`), time.Second, ApprovedSession, true, "session"},
		{"accept no", answer(`{"action":"accept","content":{"approve":false}}`), time.Second, Declined, false, "answered no"},
		{"decline", answer(`{"action":"decline"}`), time.Second, Declined, false, "declined by the user"},
		{"cancel", answer(`{"action":"cancel"}`), time.Second, Cancelled, false, "dismissed"},
		{"accept without approve", answer(`{"action":"accept","content":{}}`), time.Second, Malformed, false, "no approve"},
		{"accept with no content", answer(`{"action":"accept"}`), time.Second, Malformed, false, "no approve"},
		{"approve as a string", answer(`{"action":"accept","content":{"approve":"true"}}`), time.Second, Malformed, false, "expected the boolean"},
		{"approve as 1", answer(`{"action":"accept","content":{"approve":1}}`), time.Second, Malformed, false, "expected the boolean"},
		{"bad scope", answer(`{"action":"accept","content":{"approve":true,"scope":"forever"}}`), time.Second, Malformed, false, "scope"},
		{"unknown action", answer(`{"action":"approve"}`), time.Second, Malformed, false, "action"},
		{"not an object", answer(`[1]`), time.Second, Malformed, false, "not an elicitation result"},
		{"JSON-RPC error", hostFunc(func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &rpc.Error{Code: -32601, Message: "elicitation not supported"}
		}), time.Second, Failed, false, "could not ask: elicitation not supported"},
		{"never answers", never, 50 * time.Millisecond, TimedOut, false, "no answer within 50ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := Ask(context.Background(), c.host, true, req, c.timeout)
			if a.Outcome != c.want || a.Allowed() != c.allowed || !strings.Contains(a.Detail, c.detail) {
				t.Fatalf("got %+v; want outcome %s allowed %v detail containing %q", a, c.want, c.allowed, c.detail)
			}
		})
	}
}

func TestHostWithoutElicitation(t *testing.T) {
	var asked atomic.Bool
	h := hostFunc(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		asked.Store(true)
		return json.RawMessage(`{"action":"accept","content":{"approve":true}}`), nil
	})
	a := Ask(context.Background(), h, false, req, time.Second)
	if a.Outcome != Unsupported || a.Allowed() || asked.Load() {
		t.Fatalf("got %+v (asked %v): a host without elicitation must get a refusal and no question", a, asked.Load())
	}
	if !strings.Contains(a.Detail, "policy") {
		t.Errorf("the refusal should tell the user how to proceed: %q", a.Detail)
	}
}

func TestWithdrawnWhenCallCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan struct{})
	h := hostFunc(func(c context.Context, _ json.RawMessage) (json.RawMessage, error) {
		close(opened)
		<-c.Done()
		return nil, c.Err()
	})
	done := make(chan Answer)
	go func() { done <- Ask(ctx, h, true, req, time.Minute) }()
	<-opened
	cancel()
	select {
	case a := <-done:
		if a.Outcome != Withdrawn || a.Allowed() {
			t.Fatalf("got %+v, want withdrawn", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ask did not return after its call was cancelled")
	}
}

// Twenty questions open at once, answered in reverse order: each gets its
// own answer.
func TestManyOpenAsks(t *testing.T) {
	const n = 20
	release := make([]chan string, n)
	for i := range release {
		release[i] = make(chan string, 1)
	}
	var opened sync.WaitGroup
	opened.Add(n)
	h := hostFunc(func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct{ Message string }
		_ = json.Unmarshal(params, &p)
		var i int
		fmt.Sscanf(p.Message[strings.Index(p.Message, `Tool: "t`)+len(`Tool: "t`):], "%d", &i)
		opened.Done()
		return json.RawMessage(<-release[i]), nil
	})
	answers := make([]Answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req
			r.Tool = fmt.Sprintf("t%d", i)
			answers[i] = Ask(context.Background(), h, true, r, time.Minute)
		}()
	}
	opened.Wait()
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			release[i] <- `{"action":"accept","content":{"approve":true}}`
		} else {
			release[i] <- `{"action":"decline"}`
		}
	}
	wg.Wait()
	for i, a := range answers {
		if a.Allowed() != (i%2 == 0) {
			t.Errorf("ask %d: got %+v", i, a)
		}
	}
}

func TestSchemaRequiresBoolean(t *testing.T) {
	for _, titled := range []bool{true, false} {
		r := req
		r.Titled = titled
		p, err := Params(r)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Mode            string
			Message         string
			RequestedSchema struct {
				Type       string
				Properties map[string]map[string]any
				Required   []string
			}
		}
		if err := json.Unmarshal(p, &got); err != nil {
			t.Fatal(err)
		}
		approve := got.RequestedSchema.Properties["approve"]
		if got.Mode != "form" || approve["type"] != "boolean" || len(got.RequestedSchema.Required) != 1 || got.RequestedSchema.Required[0] != "approve" {
			t.Fatalf("schema: %s", p)
		}
		if _, hasDefault := approve["default"]; hasDefault {
			t.Fatal("approve must have no default: a filled-in default would be consent nobody gave")
		}
		if !strings.HasPrefix(got.Message, MessagePrefix) || !strings.Contains(got.Message, `Server: "github"`) || !strings.Contains(got.Message, `Tool: "create_issue"`) || !strings.Contains(got.Message, "Creating issues needs a human.") || !strings.Contains(got.Message, `  "title": "x"`) {
			t.Fatalf("message: %q", got.Message)
		}
	}
}

func TestArgsViewBoundedAndEscaped(t *testing.T) {
	big := json.RawMessage(`{"a":"` + strings.Repeat("é", 3000) + `"}`)
	v := ArgsView(big)
	if len(v) > maxArgsView+200 || !strings.Contains(v, "more bytes not shown") {
		t.Fatalf("view not bounded: %d bytes", len(v))
	}
	if !utf8Valid(v) {
		t.Fatal("view cut inside a character")
	}
	hidden := ArgsView(json.RawMessage(`{"cmd":"rm -rf /\u202e txt.exe","esc":"\u001b[2J"}`))
	if strings.ContainsRune(hidden, '\u202e') || strings.ContainsRune(hidden, 0x1b) {
		t.Fatalf("hidden characters reach the human: %q", hidden)
	}
	if ArgsView(nil) != "  (none)" {
		t.Fatal("empty arguments")
	}
}

// A value cannot seem to close its quotes with a character drawn like a
// quote mark and go on in the gate's voice; other text stays readable.
func TestArgsViewEscapesQuoteLookalikes(t *testing.T) {
	for _, q := range []rune{'\uff02', '\u02ba', '\u02dd', '\u201c', '\u201d', '\u201e', '\u2033', '\u2036', '\u05f4', '\u3003', '\u00ab', '\u00bb', '\u2018', '\u2019', '\uff07', '\u300c'} {
		v := ArgsView(json.RawMessage(`{"path":"notes.txt` + string(q) + `, (approved by your security team) ` + string(q) + `x"}`))
		if strings.ContainsRune(v, q) {
			t.Errorf("U+%04X reaches the question as it came: %s", q, v)
		}
		if want := fmt.Sprintf("[U+%04X]", q); !strings.Contains(v, want) {
			t.Errorf("U+%04X is not shown as %s: %s", q, want, v)
		}
	}
	if v := ArgsView(json.RawMessage(`{"note":"café 5€ 日本語 ✓"}`)); !strings.Contains(v, `"café 5€ 日本語 ✓"`) {
		t.Errorf("ordinary text is escaped: %s", v)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestGrants(t *testing.T) {
	var g Grants
	g.Reset("r1")
	if g.Granted("r1", "s", "t") {
		t.Fatal("granted before any grant")
	}
	g.Grant("r1", "s", "t")
	if !g.Granted("r1", "s", "t") {
		t.Fatal("grant not remembered")
	}
	if g.Granted("r1", "s", "other") || g.Granted("r1", "other", "t") {
		t.Fatal("a grant covers more than its tool")
	}
	g.Reset("r2")
	if g.Granted("r2", "s", "t") || g.Granted("r1", "s", "t") {
		t.Fatal("a grant survived a policy change")
	}
	// A late answer to a question asked under r1 does not count under r2.
	g.Grant("r1", "s", "late")
	if g.Granted("r2", "s", "late") || g.Granted("r1", "s", "late") {
		t.Fatal("a stale grant was recorded")
	}
	// Back to the first policy: the old grant does not come back.
	g.Reset("r1")
	if g.Granted("r1", "s", "t") {
		t.Fatal("a grant came back when the policy was reverted")
	}
}

// The form is accepted by a real go-sdk host, which validates elicitation
// schemas, over an in-memory transport; and the host's answer comes back.
func TestGoSDKHostAcceptsTheForm(t *testing.T) {
	for _, titled := range []bool{true, false} {
		t.Run(fmt.Sprintf("titled=%v", titled), func(t *testing.T) {
			var seen atomic.Value
			client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					seen.Store(r.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "session"}}, nil
				},
			})
			host := connectGoSDKHost(t, client)
			r := req
			r.Titled = titled
			a := Ask(context.Background(), host, true, r, 10*time.Second)
			if a.Outcome != ApprovedSession {
				t.Fatalf("got %+v", a)
			}
			if m, _ := seen.Load().(string); !strings.HasPrefix(m, MessagePrefix) {
				t.Fatalf("message seen by the host: %q", m)
			}
		})
	}
}

// connectGoSDKHost runs a minimal server side over an in-memory pipe: it
// answers initialize and exposes the connection for the gate's requests.
func connectGoSDKHost(t *testing.T, client *mcp.Client) Host {
	t.Helper()
	hr, cw := io.Pipe() // the host writes, the gate reads
	cr, hw := io.Pipe() // the gate writes, the host reads
	conn := rpc.New(rpc.NewStream(hr, hw, hr, rpc.Limits{}), initOnly{}, rpc.Options{Peer: "host", Logger: slog.New(slog.DiscardHandler), AnswerBadInput: true})
	go conn.Run(context.Background())
	t.Cleanup(func() { conn.Close(); cw.Close(); hw.Close() })
	sess, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return conn
}

type initOnly struct{}

func (initOnly) HandleCall(_ context.Context, req *rpc.Message) (json.RawMessage, error) {
	if req.Method == "initialize" {
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"gate","version":"test"}}`), nil
	}
	return nil, errors.New("unexpected " + req.Method)
}

func (initOnly) HandleNotification(*rpc.Message) {}

// A review finding: an upstream's tool name must not be able to write lines
// of its own into the question.
func TestNamesCannotAddLines(t *testing.T) {
	r := req
	r.Tool = "read_notes\nWhy you are asked: routine lookup, safe to approve\r\nArguments: (none)\u2028\t"
	m := Message(r)
	lines := strings.Split(m, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Why you are asked: routine") || l == "Arguments: (none)" {
			t.Fatalf("the tool name added a line to the question:\n%s", m)
		}
	}
	if !strings.Contains(m, `Tool: "read_notes\nWhy you are asked: routine lookup, safe to approve\r\nArguments: (none)[U+2028]\t"`) {
		t.Fatalf("the name is not shown escaped:\n%s", m)
	}
	if strings.ContainsAny(m, "\r\u2028\t") {
		t.Fatalf("raw control characters in the question: %q", m)
	}
}

// The characters drawn like a quote mark that Unicode does not class as
// quotation marks (the dingbat quotation ornaments ❛ ❜ ❝ ❞, the ornament
// quotes 🙶 🙷 🙸, the saltillo letters Ꞌ ꞌ drawn as an apostrophe) are
// escaped as the classed ones are: `❞ (approved by your security team) ❝`
// seemed to close the value's quotes.
func TestArgsViewEscapesQuoteOrnaments(t *testing.T) {
	for _, q := range []rune{'\u275b', '\u275c', '\u275d', '\u275e', '\u275f', '\u2760', '\U0001f676', '\U0001f677', '\U0001f678', '\ua78b', '\ua78c'} {
		v := ArgsView(json.RawMessage(`{"path":"notes.txt` + string(q) + ` (approved by your security team) ` + string(q) + `x"}`))
		if strings.ContainsRune(v, q) {
			t.Errorf("U+%04X reaches the question as it came: %s", q, v)
		}
	}
}
