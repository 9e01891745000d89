package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// The host's own answers to an upstream's elicitation, echoed in that
// upstream's tool result, are not the upstream's doing. An elicitation
// answer that accepts ({"action":"accept","content":{...}}) is exactly
// what the result guard refuses as an approval-shaped payload, so a tool
// that asks the user something and reports what was answered (the reference
// server-everything's trigger-elicitation-request) would always be refused.
//
// So a tools/call records every answer the host gave to an elicitation
// that the called server sent while the call was in flight, and the guard
// exempts exactly those answers: a JSON value in the result (in a string,
// whole or embedded in text, or in structuredContent) equal to an answer,
// or to its content, after decoding, and a string equal to a string the
// host answered. Whatever else the result holds is inspected as before: a
// forged approval next to the echoed answer is still refused. The
// exemption never edits what the host receives; it only decides which
// findings stand, and each exempted finding is audited as "exempted".
//
// An answer is tied to the session and the server, and to every call of that
// session to that server in flight when the host answered (the gate cannot
// tell which of two concurrent calls to one server asked): what is exempted
// is still only what this host itself answered to this server.

// elicitAnswers collects the host's answers during one tools/call.
type elicitAnswers struct {
	mu      sync.Mutex
	answers []json.RawMessage
	// delivered are the answers as the gate delivered them to the server:
	// the JSON-RPC response to its request, which a server that logs what
	// it got writes back whole. Its jsonrpc, id and result members are the
	// gate's, so the guard may take it out as a whole, like an answer.
	delivered []json.RawMessage
}

func (a *elicitAnswers) add(res json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.answers) < maxElicitAnswers {
		a.answers = append(a.answers, res)
	}
}

// addDelivered adds an answer, and the response that carried it to the
// server (to its request id).
func (a *elicitAnswers) addDelivered(id, res json.RawMessage) {
	a.add(res)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.delivered) < maxElicitAnswers && plainID(id) {
		a.delivered = append(a.delivered, json.RawMessage(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+string(res)+`}`))
	}
}

// plainID reports whether a request id is a number or a short token: the
// server chose it, and a response taken out whole must not carry the
// server's own words (an id that is a sentence) past the guard.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 || len(id) > 66 {
		return false
	}
	if id[0] != '"' {
		return id[0] == '-' || '0' <= id[0] && id[0] <= '9'
	}
	if len(id) < 3 || id[len(id)-1] != '"' {
		return false
	}
	for _, c := range id[1 : len(id)-1] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

func (a *elicitAnswers) list() []json.RawMessage {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.delivered) == 0 {
		return a.answers
	}
	return append(append([]json.RawMessage(nil), a.answers...), a.delivered...)
}

// maxElicitAnswers bounds what one call records: a server that asks more
// often gets no further exemptions.
const maxElicitAnswers = 16

// answerBook finds the calls in flight whose answers an elicitation adds to.
type answerBook struct {
	mu    sync.Mutex
	calls map[answerKey]map[*elicitAnswers]struct{}
	// spare are emptied maps of calls, reused so that a call of a host
	// that can answer elicitations allocates none here (at most
	// maxSpareInflight kept).
	spare []map[*elicitAnswers]struct{}
}

type answerKey struct {
	s      *Session
	server string
}

// begin registers a call of s to server; the returned entry's end ends
// it. It is a value, not a closure: one is taken for every tools/call.
func (b *answerBook) begin(s *Session, server string, a *elicitAnswers) answerEntry {
	k := answerKey{s, server}
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[answerKey]map[*elicitAnswers]struct{}{}
	}
	m := b.calls[k]
	if m == nil {
		if n := len(b.spare); n > 0 {
			m, b.spare = b.spare[n-1], b.spare[:n-1]
		} else {
			m = map[*elicitAnswers]struct{}{}
		}
		b.calls[k] = m
	}
	m[a] = struct{}{}
	b.mu.Unlock()
	return answerEntry{b, k, a}
}

// answerEntry is one call registered in an answerBook.
type answerEntry struct {
	b *answerBook
	k answerKey
	a *elicitAnswers
}

// end ends what begin registered.
func (e answerEntry) end() {
	b := e.b
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.calls[e.k]
	delete(m, e.a)
	if len(m) == 0 {
		delete(b.calls, e.k)
		if len(b.spare) < maxSpareInflight {
			b.spare = append(b.spare, m)
		}
	}
}

// record adds the host's answer to the server's request id to every call
// of s to server in flight.
func (b *answerBook) record(s *Session, server string, id, res json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for a := range b.calls[answerKey{s, server}] {
		a.addDelivered(id, res)
	}
}

// maxMaskTries bounds the embedded-JSON reads of one exemption; past it the
// findings stand (fail closed).
const maxMaskTries = 4096

// exemptAnswers returns the findings that remain once the host's answers
// are taken out of the result, auditing the ones that go.
func (g *Session) exemptAnswers(server, tool string, res json.RawMessage, findings []guard.Finding, answers *elicitAnswers) []guard.Finding {
	rest, exempted := remainingFindings(res, findings, answers.list())
	for _, f := range exempted {
		g.audit.Guard(audit.Guard{Session: g.session, Server: server, Tool: tool, Outcome: "exempted", Kind: f.Kind,
			Detail: f.Path + ": the host's own answer to this server's elicitation during the call"})
	}
	return rest
}

// remainingFindings splits the findings of a result into those that stand
// and those the host's answers account for. A finding is exempted only
// when it goes once the answers are masked and it lies inside an answer
// the result echoes: in a member or an item of it, in JSON read out of it,
// or, for a string the host answered, text read in that string (prose, a
// dialog). A finding at an echoed answer's own place is the judgement of
// the object around it, whose keys are the server's: {"permissionDecision":
// <the host's "allow">} or {"toolApproval": <the host's answer>} is an
// approval of the server's making, built from an innocuous question ("Which
// region?", with approval words behind the titles the human reads), and it
// stands.
func remainingFindings(res json.RawMessage, findings []guard.Finding, answers []json.RawMessage) (rest, exempted []guard.Finding) {
	if len(findings) == 0 || len(answers) == 0 {
		return findings, nil
	}
	masked, spots, ok := maskAnswerSpots(res, answers)
	if !ok {
		return findings, nil
	}
	rest = guard.InspectResult(masked)
	for _, f := range findings {
		if containsFinding(rest, f) {
			continue
		}
		if !spots.cover(f) {
			rest = append(rest, f)
			continue
		}
		exempted = append(exempted, f)
	}
	return rest, exempted
}

// maskSpot is where the masker took an answer out: a whole answer (or its
// content), a string the host answered, or a string with an answer
// written inside it.
type maskSpot struct {
	path string // as a guard.Finding's Path writes it
	str  bool   // a string: text findings at path itself are inside it
	// members, for answers read out of a string as JSON (path ends in
	// "(json)"), are the path segments of their members: a finding is in
	// an answer only under one of them. Under another, it is in a JSON
	// value of the server's that holds the answer.
	members  []string
	embedded bool
	// envelope: what was taken out is (or, embedded, includes) an answer
	// as the gate delivered it, whose result member is the host's answer
	// in the gate's response: a finding there judges that response.
	envelope bool
}

type maskSpots []maskSpot

// textKinds are the findings made by reading one string's text, reported
// at that string's path.
var textKinds = map[string]bool{
	guard.KindApprovalProse:     true,
	guard.KindHostDialog:        true,
	guard.KindGateImpersonation: true,
}

// answerKinds are the findings an echoed answer can account for: the
// answer's own shape (an accepting elicitation result: its action and
// content members are the host's protocol, not the server's words), and
// text read in a string in it. Any other shape inside an answer is made of
// the form's field names, which are the server's: a form with the fields
// "permissionDecision" (one choice, "allow", titled "Europe") and
// "tool_call_id" (defaulted to "call_1") is answered with an approval
// decision of the server's making, and the finding stands.
var answerKinds = map[string]bool{
	guard.KindElicitationResult: true,
	guard.KindApprovalProse:     true,
	guard.KindHostDialog:        true,
	guard.KindGateImpersonation: true,
}

// cover reports whether f lies inside a masked answer.
func (s maskSpots) cover(f guard.Finding) bool {
	for _, sp := range s {
		if sp.path == "" {
			return true // the result is an answer itself
		}
		if !guard.PathExact(sp.path) {
			continue // another member's path may be written alike
		}
		if sp.envelope && f.Path == sp.path+".result" {
			return true
		}
		if !answerKinds[f.Kind] {
			continue
		}
		if f.Path == sp.path {
			if sp.str && textKinds[f.Kind] {
				return true
			}
			continue
		}
		rest, ok := strings.CutPrefix(f.Path, sp.path)
		if !ok || rest == "" || !strings.ContainsRune(".[(", rune(rest[0])) {
			continue
		}
		if !sp.embedded {
			return true
		}
		for _, seg := range sp.members {
			if !guard.PathExact(seg) {
				continue
			}
			if after, ok := strings.CutPrefix(rest, seg); ok && (after == "" || strings.ContainsRune(".[(", rune(after[0]))) {
				return true
			}
		}
	}
	return false
}

func containsFinding(fs []guard.Finding, f guard.Finding) bool {
	for _, o := range fs {
		if o.Kind == f.Kind && o.Path == f.Path {
			return true
		}
	}
	return false
}

// maskAnswerSpots returns a copy of the result for inspection with the
// host's answers replaced by null (a JSON value) or "" (a whole string),
// and where it masked them; false when it cannot be read unambiguously or
// within bounds, in which case nothing is exempted.
func maskAnswerSpots(res json.RawMessage, answers []json.RawMessage) (json.RawMessage, maskSpots, bool) {
	// One reading only: a result with duplicate keys could show the host
	// one member and the masked copy another.
	if rawjson.UniqueKeys(res) != nil {
		return nil, nil, false
	}
	var values []any // each answer, and its content
	strs := map[string]bool{}
	for _, a := range answers {
		v, err := decodeNumber(a)
		if err != nil {
			continue
		}
		values = append(values, v)
		if m, ok := v.(map[string]any); ok {
			if c, ok := m["content"]; ok {
				values = append(values, c)
				collectStrings(c, strs)
			}
		}
	}
	if len(values) == 0 {
		return nil, nil, false
	}
	tree, err := decodeNumber(res)
	if err != nil {
		return nil, nil, false
	}
	// An answer written out with indentation is longer than as sent; one
	// over this window is not read, and its findings stand.
	window := 1024
	for _, a := range answers {
		window = max(window, 8*len(a)+1024)
	}
	m := masker{window: window, values: values, strs: strs}
	tree = m.walk(tree, "")
	if m.tries > maxMaskTries {
		return nil, nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return nil, nil, false
	}
	return bytes.TrimSpace(buf.Bytes()), m.spots, true
}

func decodeNumber(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func collectStrings(v any, into map[string]bool) {
	switch x := v.(type) {
	case string:
		if x != "" {
			into[x] = true
		}
	case map[string]any:
		for _, e := range x {
			collectStrings(e, into)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, into)
		}
	}
}

type masker struct {
	window int // the most bytes an answer can take written out
	values []any
	strs   map[string]bool
	tries  int
	spots  maskSpots
	// members are the path segments of the members of the answers text
	// took out of the string being read; envelope, whether one of them
	// was an answer as the gate delivered it.
	members  []string
	envelope bool
}

// appendMembers appends the path segments of v's members (".key",
// "[0]") as a Finding's Path writes them.
func appendMembers(segs []string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			segs = append(segs, guard.PathWithKey("_", k)[1:])
		}
	case []any:
		for i := range x {
			segs = append(segs, "["+strconv.Itoa(i)+"]")
		}
	}
	return segs
}

// isEnvelope reports whether an answer is one as the gate delivered it
// (elicitAnswers.delivered): a JSON-RPC response.
func isEnvelope(v any) bool {
	o, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = o["jsonrpc"]
	return ok
}

func (m *masker) isAnswer(v any) bool {
	for _, a := range m.values {
		if reflect.DeepEqual(a, v) {
			return true
		}
	}
	return false
}

func (m *masker) walk(v any, path string) any {
	if m.isAnswer(v) {
		m.spots = append(m.spots, maskSpot{path: path, envelope: isEnvelope(v)})
		return nil
	}
	switch x := v.(type) {
	case string:
		if m.strs[x] {
			m.spots = append(m.spots, maskSpot{path: path, str: true})
			return ""
		}
		m.members, m.envelope = m.members[:0], false
		out := m.text(x)
		if out != x {
			// Answers read as JSON texts out of the string: the inspector
			// reports what it finds in them under the string's path and
			// "(json)", whether an answer is a JSON text of its own or a
			// member of one the server wrapped around it. Only findings in
			// an answer's own members are its.
			m.spots = append(m.spots, maskSpot{path: path + "(json)", members: append([]string(nil), m.members...), embedded: true, envelope: m.envelope})
		}
		return out
	case map[string]any:
		for k, e := range x {
			x[k] = m.walk(e, guard.PathWithKey(path, k))
		}
	case []any:
		for i, e := range x {
			x[i] = m.walk(e, path+"["+strconv.Itoa(i)+"]")
		}
	}
	return v
}

// text replaces each JSON object or array embedded in s that is an answer
// with null; the prose around it is kept, and read as before. The path
// segments of the members of what it took out are left in m.members.
func (m *masker) text(s string) string {
	var out []byte
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		if m.tries++; m.tries > maxMaskTries {
			return s
		}
		end := min(len(s), i+m.window)
		dec := json.NewDecoder(strings.NewReader(s[i:end]))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || !m.isAnswer(v) {
			continue
		}
		m.members = appendMembers(m.members, v)
		m.envelope = m.envelope || isEnvelope(v)
		end = i + int(dec.InputOffset())
		out = append(out, s[last:i]...)
		out = append(out, "null"...)
		last = end
		i = end - 1
	}
	if out == nil {
		return s
	}
	return string(append(out, s[last:]...))
}
