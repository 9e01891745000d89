package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"

	// segmentio's JSON codec (the go-sdk's too); its validator is several times faster
	// than encoding/json's, and every relayed byte passes through it once.
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// Error is a JSON-RPC error object: code, message and data, kept as the
// peer sent them. The gate has its own type rather than the go-sdk's so
// that the binary does not link the SDK (a third of its size); the SDK
// stays in the tests as the independent peer.
type Error struct {
	// Code says what kind of failure it is (the Code* constants, or an
	// application code such as MCP's -32002).
	Code int64 `json:"code"`
	// Message is a short description of the error.
	Message string `json:"message"`
	// Data is optional structured data, relayed as raw JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// Raw is the error object as the peer wrote it, set by Decode; when
	// set, it is what is written, so that a relayed error keeps its
	// escapes, its members JSON-RPC does not name, a missing message or a
	// code that is not an integer, byte for byte. Code, Message and Data
	// are then what the gate reads of it. An Error built by this program
	// has none, and is written from Code, Message and Data.
	Raw json.RawMessage `json:"-"`
}

// Error returns the message, as JSON-RPC peers show it.
func (e *Error) Error() string { return e.Message }

// Is reports whether other is an *Error with the same code, so that
// errors.Is(err, &rpc.Error{Code: rpc.CodeInvalidParams}) asks "which kind".
func (e *Error) Is(other error) bool {
	o, ok := other.(*Error)
	return ok && o != nil && e.Code == o.Code
}

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Errorf returns a JSON-RPC error with the given code and a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Message is one JSON-RPC 2.0 message with its payload left raw.
//
// ID is kept as the raw JSON the peer sent ("7", "\"abc\"") so that a
// response echoes it byte for byte, whatever its type or size.
type Message struct {
	ID     json.RawMessage // nil for a notification
	Method string          // empty for a response
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error

	// line is the large line the message was read from (a Stream's,
	// counted in flight: largebudget.go).
	line *lineLease
	// reuse, set by Conn.serve alone on the response it writes, is the
	// line its result is relayed from, which the Stream recycles once it
	// has written the response whole (relayline.go). A copy of a message
	// as read never carries it.
	reuse *lineLease
}

// IsCall reports whether m is a request that expects a response.
func (m *Message) IsCall() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a request without an ID. Decode
// never returns a request whose ID is JSON null: it refuses it.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response.
func (m *Message) IsResponse() bool { return m.Method == "" }

// decodeError is a message that could not be decoded. ID holds the request
// ID when it could be recovered, so the error can be tied to its request.
//
// request tells a broken request from a broken response: the peer's request
// IDs and ours are separate spaces, so only a response may fail a pending call.
type decodeError struct {
	code    int64
	id      json.RawMessage
	reason  string // names kinds and sizes, never the peer's bytes
	offset  int64  // where a syntax error is, for the log; <= 0 when unknown
	request bool
	method  string // the request's method, when it could be read
}

func (e *decodeError) Error() string { return e.reason }

// Decode parses one message. The returned message's raw fields alias line.
//
// The whole line is validated as JSON first: nothing invalid is ever passed
// on to the other side, where a parser would fail on the whole stream.
//
// A valid message's raw line breaks (CR and LF between its tokens, which
// JSON reads as spaces) are rewritten to spaces in line itself, before any
// field is read: see unbreakLines.
func Decode(line []byte) (*Message, error) {
	if !segjson.Valid(line) {
		return nil, &decodeError{code: CodeParseError, id: salvageID(line, nil), reason: "not valid JSON", offset: syntaxOffset(line), request: looksLikeRequest(line)}
	}
	unbreakLines(line)
	first := line[skipSpace(line, 0)]
	if first == '[' {
		return nil, &decodeError{code: CodeInvalidRequest, reason: "JSON-RPC batches are not supported (MCP removed them in 2025-06-18)"}
	}
	if first != '{' {
		return nil, &decodeError{code: CodeInvalidRequest, reason: "a JSON-RPC message must be an object"}
	}
	var (
		m                          Message
		version, method, errRaw    []byte
		hasID, hasResult, hasError bool
	)
	err := rawjson.Members(line, func(mem rawjson.Member) bool {
		switch mem.Key {
		case "jsonrpc":
			version = mem.Value
		case "id":
			m.ID, hasID = mem.Value, true
		case "method":
			method = mem.Value
		case "params":
			m.Params = mem.Value
		case "result":
			m.Result, hasResult = mem.Value, true
		case "error":
			errRaw, hasError = mem.Value, true
		}
		return true
	})
	if err != nil {
		return nil, &decodeError{code: CodeParseError, reason: "not a valid JSON object", offset: syntaxOffset(line)}
	}
	fail := func(format string, args ...any) (*Message, error) {
		var id json.RawMessage
		if hasID && validID(m.ID) {
			id = m.ID
		}
		var name string
		if len(method) > 0 && method[0] == '"' {
			name, _ = rawjson.Unquote(method)
		}
		return nil, &decodeError{code: CodeInvalidRequest, id: id, reason: fmt.Sprintf(format, args...), request: method != nil, method: name}
	}
	if !bytes.Equal(version, []byte(`"2.0"`)) {
		return fail(`"jsonrpc" must be "2.0", found %s`, kindOf(version))
	}
	if hasID && !validID(m.ID) {
		return fail(`"id" must be a string or a number, found %s`, kindOf(m.ID))
	}
	if method != nil {
		if method[0] != '"' {
			return fail(`"method" must be a string, found %s`, kindOf(method))
		}
		if m.Method, err = rawjson.Unquote(method); err != nil || m.Method == "" {
			return fail(`"method" must be a non-empty string`)
		}
		if hasResult || hasError {
			return fail("a message cannot have both a method and a result or error")
		}
		if m.Params != nil && m.Params[0] != '{' && m.Params[0] != '[' {
			return fail(`"params" must be an object or array, found %s`, kindOf(m.Params))
		}
		if bytes.Equal(m.ID, []byte("null")) {
			// MCP forbids null request ids. Taking this for a notification
			// would drop a request silently while its sender waits for an
			// answer; a notification is a message without an id member.
			return nil, &decodeError{code: CodeInvalidRequest, reason: "request id must not be null", request: true, method: m.Method}
		}
		return &m, nil
	}
	// A response.
	if !hasID {
		return fail("a response must have an id")
	}
	if hasResult == hasError {
		return fail("a response must have exactly one of result and error")
	}
	if hasError {
		e, ok := readError(errRaw)
		if !ok {
			return fail(`"error" must be an object with a numeric code and, if any, a string message`)
		}
		m.Error = e
	}
	return &m, nil
}

// unbreakLines rewrites every CR and LF byte of a valid JSON text to a
// space, in place. In valid JSON such a byte can only be whitespace between
// tokens (a string holds line breaks only as escapes), so the value read
// is the same; what changes is how a line-framed peer splits it.
//
// The gate relays the raw params, result, error and id of what it read,
// and a message reaches it from framings that allow raw line breaks inside
// one message: a Streamable HTTP body (the host's, a remote upstream's), an
// SSE event (whose data lines are joined with LF), and a stdio line, which
// ends at LF but may hold a lone CR. Written on as it came, one such
// message became several on the next hop: every SDK's stdio reader ends a
// message at LF (the TypeScript SDK, then parses each line on its own and
// acts on any that is whole), Python's text reader and Java's and .NET's
// ReadLine at a lone CR too. A host's request decided as one allowed call
// then delivered a second call, never decided, to the upstream; an
// upstream's result delivered requests and answers of its own to the host
// past the guard. Decode is where every message enters the gate, from any
// transport, so no message the gate holds has a line break to relay.
func unbreakLines(line []byte) {
	for _, c := range [2]byte{'\n', '\r'} {
		for i := bytes.IndexByte(line, c); i >= 0; {
			line[i] = ' '
			j := bytes.IndexByte(line[i+1:], c)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
}

// hasLineBreak reports whether b holds a raw CR or LF.
func hasLineBreak(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// readError reads an error object leniently, as peers write them: the
// code must be a number, and one that is not an integer is read as an
// internal error; the message, when present, must be a string. The object
// is kept whole in Raw and relayed as it came.
func readError(raw []byte) (*Error, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var w struct {
		Code    *json.Number    `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &w); err != nil || w.Code == nil {
		return nil, false
	}
	e := &Error{Code: CodeInternalError, Data: w.Data, Raw: raw}
	if n, err := w.Code.Int64(); err == nil {
		e.Code = n
	}
	if w.Message != nil {
		e.Message = *w.Message
	}
	if string(e.Data) == "null" {
		e.Data = nil
	}
	return e, true
}

// kindOf names the kind and size of a JSON value for an error message.
// Decode errors reach logs and audit lines, and the peer's bytes never do
// (see audit.Payload): a message says what kind of value it found, and how
// large, never the value.
func kindOf(b []byte) string {
	if b == nil {
		return "nothing"
	}
	b = bytes.TrimSpace(b)
	kind := "a number"
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		kind = "a string"
	case b[0] == '{':
		kind = "an object"
	case b[0] == '[':
		kind = "an array"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	case b[0] == 'n':
		return "null"
	}
	return fmt.Sprintf("%s of %d bytes", kind, len(b))
}

// syntaxOffset says where line stops being JSON, as a byte offset, for a
// log line that must not quote the line (encoding/json's own message quotes
// the offending character, so only its offset is used); -1 when unknown.
func syntaxOffset(line []byte) int64 {
	var se *json.SyntaxError
	if err := json.Unmarshal(line, new(json.RawMessage)); errors.As(err, &se) {
		return se.Offset
	}
	return -1
}

func validID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	case bytes.Equal(id, []byte("null")):
		return true
	}
	return false
}

// salvageWindow is how much of the start and of the end of a broken or
// oversized message is kept to find its ID.
const salvageWindow = 512

// salvageID finds the top-level "id" of a message that cannot be used (not
// JSON, or too large to read), so that the request it answers can be failed
// instead of left waiting. SDKs differ: go-sdk and Python write the ID near
// the start, the TypeScript SDK last. head is the start of the message and
// tail its end (nil when head holds all of it). Only a member that is
// provably at the top level counts: an "id" nested in a result must never
// fail some other call.
func salvageID(head, tail []byte) json.RawMessage {
	if len(head) > salvageWindow {
		head = head[:salvageWindow]
	}
	if id := headID(head); id != nil {
		return id
	}
	if tail == nil {
		tail = head
	}
	return tailID(tail)
}

// headID walks the top-level members from the start for as long as they are
// complete within head.
func headID(head []byte) json.RawMessage {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(head, i)
		if i >= len(head) || head[i] != '"' {
			return nil
		}
		keyEnd := stringEnd(head, i)
		if keyEnd < 0 {
			return nil
		}
		key := head[i:keyEnd]
		i = skipSpace(head, keyEnd)
		if i >= len(head) || head[i] != ':' {
			return nil
		}
		i = skipSpace(head, i+1)
		end := valueEnd(head, i)
		if end < 0 {
			return nil
		}
		if string(key) == `"id"` {
			return validID2(head[i:end])
		}
		i = skipSpace(head, end)
		if i >= len(head) || head[i] != ',' {
			return nil
		}
		i++
	}
}

// tailIDPattern is an "id" member that closes the top-level object. It is
// compiled at first use, by a message whose id comes last, not by every
// start.
var tailIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[,{]\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*}\s*$`)
})

func tailID(tail []byte) json.RawMessage {
	m := tailIDPattern().FindSubmatch(tail)
	if m == nil {
		return nil
	}
	return validID2(m[1])
}

// validID2 returns a copy of id if it is a JSON string or number.
func validID2(id []byte) json.RawMessage {
	if len(id) == 0 || !json.Valid(id) || !validID(id) || string(id) == "null" {
		return nil
	}
	return append(json.RawMessage{}, id...)
}

// stringEnd returns the offset past the string starting at b[i], or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the offset past the value starting at b[i], or -1 when it
// does not end within b.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
			j++
		}
		if j == len(b) {
			return -1
		}
		return j
	}
}

// looksLikeRequest reports whether the head of an unparseable message has a
// "method" member, which only requests and notifications have, before any
// "result" or "error" (a response's result may well mention "method").
func looksLikeRequest(line []byte) bool {
	head := line[:min(len(line), 512)]
	m := bytes.Index(head, []byte(`"method"`))
	if m < 0 {
		return false
	}
	for _, k := range []string{`"result"`, `"error"`} {
		if i := bytes.Index(head, []byte(k)); i >= 0 && i < m {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// appendLargeHead appends the wire form of m up to its params or result
// when that payload is at least min bytes, and returns the payload, which
// with a closing brace completes the message; ok is false (nothing
// appended) for any other message. It writes what appendMessage writes,
// in the same order.
func appendLargeHead(buf []byte, m *Message, min int) (head, payload []byte, ok bool) {
	switch {
	case m.Method != "" && len(m.Params) >= min:
		payload = m.Params
	case m.Method == "" && m.Error == nil && len(m.Result) >= min:
		payload = m.Result
	default:
		return buf, nil, false
	}
	if !m.reuse.holds(payload) && hasLineBreak(payload) {
		// Sent from m's own bytes, which may be shared: appendMessage
		// copies it and rewrites the copy. A result relayed from the line
		// an upstream's Stream read (reuse) lies in bytes Decode rewrote,
		// and is not scanned again: the 1 MB relay pays nothing.
		return buf, nil, false
	}
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		buf = append(buf, `,"id":`...)
		buf = append(buf, m.ID...)
	}
	if m.Method != "" {
		buf = append(buf, `,"method":`...)
		buf = rawjson.AppendString(buf, m.Method)
		buf = append(buf, `,"params":`...)
	} else {
		buf = append(buf, `,"result":`...)
	}
	return buf, payload, true
}

// appendMessage appends m's wire form, without a trailing newline.
//
// The raw fields are written as they are (they were validated when they were
// read or built by this program), which keeps a relayed payload byte-identical
// and spares a second pass over a large result.
//
// The wire form holds no raw CR or LF (unbreakLines on what it appended,
// one more pass of bytes.IndexByte per byte: about 30 ns per KB): Decode
// leaves none in what it read, but a raw field may come from elsewhere (a
// catalog cache file's entries, a builder of the gate's), and a
// line-framed peer would read one such message as several. In valid JSON
// such a byte is whitespace, so no value changes; in a raw field that is
// not valid JSON it still splits nothing.
func appendMessage(buf []byte, m *Message) ([]byte, error) {
	start := len(buf)
	out, err := appendMessageBody(buf, m)
	if err != nil {
		return nil, err
	}
	unbreakLines(out[start:])
	return out, nil
}

func appendMessageBody(buf []byte, m *Message) ([]byte, error) {
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		buf = append(buf, `,"id":`...)
		buf = append(buf, m.ID...)
	}
	switch {
	case m.Method != "":
		buf = append(buf, `,"method":`...)
		buf = rawjson.AppendString(buf, m.Method)
		if m.Params != nil {
			buf = append(buf, `,"params":`...)
			buf = append(buf, m.Params...)
		}
	case m.Error != nil:
		if m.ID == nil {
			buf = append(buf, `,"id":null`...)
		}
		if m.Error.Raw != nil {
			if !json.Valid(m.Error.Raw) {
				return nil, fmt.Errorf("rpc: error object is not valid JSON (%s)", kindOf(m.Error.Raw))
			}
			// Validated when it was read (Decode), or the neutraliser's
			// rewrite of such (valid JSON in, valid JSON out).
			buf = append(buf, `,"error":`...)
			buf = append(buf, m.Error.Raw...)
			break
		}
		// By hand rather than json.Marshal, which would compact the data
		// and HTML-escape it: a relayed error keeps its data byte for byte.
		buf = append(buf, `,"error":{"code":`...)
		buf = strconv.AppendInt(buf, m.Error.Code, 10)
		buf = append(buf, `,"message":`...)
		buf = rawjson.AppendString(buf, m.Error.Message)
		if len(m.Error.Data) > 0 {
			if !json.Valid(m.Error.Data) {
				return nil, fmt.Errorf("rpc: error data is not valid JSON (%s)", kindOf(m.Error.Data))
			}
			buf = append(buf, `,"data":`...)
			buf = append(buf, m.Error.Data...)
		}
		buf = append(buf, '}')
	default:
		if m.Result == nil {
			return nil, errors.New("rpc: response without result or error")
		}
		buf = append(buf, `,"result":`...)
		buf = append(buf, m.Result...)
	}
	return append(buf, '}'), nil
}

// idKey turns a raw ID into a map key. Numbers are normalised so that a peer
// answering request 7 with id 7.0 is still matched.
//
// Only fractions and exponents are normalised, and only within float64's
// exact integers: 9007199254740993 and 9007199254740992 are one float64 but
// two requests.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] != '"' && bytes.ContainsAny(id, ".eE") {
		if f, err := strconv.ParseFloat(string(id), 64); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	return string(id)
}
