// Package rawjson reads and edits JSON objects as bytes.
//
// The gate relays upstream payloads byte for byte and changes only what it
// must (a tool name, a progress token, an elicitation message). Decoding a
// payload into Go values and encoding it again would reorder keys, reformat
// numbers and drop whatever a Go type does not know, so this package works on
// the bytes instead: it finds a member's value and splices a new one in,
// leaving every other byte exactly as it was.
//
// The functions expect syntactically valid JSON (callers validate a message
// once, when it is read). On invalid input they return an error or report the
// member as absent; they never panic.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNotObject is returned when the input is not a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// Member is one member of an object: its decoded key and the byte spans of
// its value within the object.
type Member struct {
	Key        string
	Value      []byte // the raw value, a sub-slice of the object
	Start, End int    // Value == obj[Start:End]
}

// Members calls fn for each member of the object obj, in order, until fn
// returns false. Keys are decoded (escapes resolved), so `"n\u0061me"` is
// reported as "name".
func Members(obj []byte, fn func(m Member) bool) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ErrNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return fmt.Errorf("rawjson: expected a member name at offset %d", i)
		}
		keyEnd, err := skipString(obj, i)
		if err != nil {
			return err
		}
		key, err := decodeKey(obj[i:keyEnd])
		if err != nil {
			return err
		}
		i = skipSpace(obj, keyEnd)
		if i >= len(obj) || obj[i] != ':' {
			return fmt.Errorf("rawjson: expected ':' at offset %d", i)
		}
		start := skipSpace(obj, i+1)
		end, err := skipValue(obj, start)
		if err != nil {
			return err
		}
		if !fn(Member{Key: key, Value: obj[start:end], Start: start, End: end}) {
			return nil
		}
		i = skipSpace(obj, end)
		if i >= len(obj) {
			return fmt.Errorf("rawjson: unterminated object")
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return nil
		default:
			return fmt.Errorf("rawjson: unexpected %q at offset %d", obj[i], i)
		}
	}
}

// Get returns the raw value of the member key of obj. If the key occurs more
// than once, Get returns the last occurrence, as encoding/json and
// JavaScript's JSON.parse do; callers that must not be ambiguous check
// [UniqueKeys] first.
func Get(obj []byte, key string) ([]byte, bool) {
	var v []byte
	found := false
	_ = Members(obj, func(m Member) bool {
		if m.Key == key {
			v, found = m.Value, true
		}
		return true
	})
	return v, found
}

// GetString returns the member key of obj decoded as a JSON string.
func GetString(obj []byte, key string) (string, bool) {
	v, ok := Get(obj, key)
	if !ok {
		return "", false
	}
	return String(v)
}

// String decodes the raw value v (a Member's Value) as a JSON string; false
// when it is not one.
func String(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := decodeKey(v)
	if err != nil {
		return "", false
	}
	return s, true
}

// Set returns a copy of obj in which the value of member key is value. If the
// key occurs more than once every occurrence is replaced; if it is absent the
// member is appended. obj itself is not modified.
func Set(obj []byte, key string, value []byte) ([]byte, error) {
	var spans [][2]int
	last := -1 // offset of the closing brace
	err := Members(obj, func(m Member) bool {
		if m.Key == key {
			spans = append(spans, [2]int{m.Start, m.End})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		last = bytes.LastIndexByte(obj, '}')
		if last < 0 {
			return nil, ErrNotObject
		}
		empty := bytes.TrimSpace(obj[bytes.IndexByte(obj, '{')+1 : last])
		out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
		out = append(out, obj[:last]...)
		if len(empty) > 0 {
			out = append(out, ',')
		}
		// JSON's escapes, not Go's: strconv.Quote would write \x01 or \U0001f600,
		// which no JSON parser accepts.
		out = AppendString(out, key)
		out = append(out, ':')
		out = append(out, value...)
		out = append(out, obj[last:]...)
		return out, nil
	}
	out := make([]byte, 0, len(obj)+len(spans)*(len(value)+8))
	prev := 0
	for _, s := range spans {
		out = append(out, obj[prev:s[0]]...)
		out = append(out, value...)
		prev = s[1]
	}
	out = append(out, obj[prev:]...)
	return out, nil
}

// SetPath sets the member at path (a chain of object keys) to value, creating
// intermediate objects as needed.
func SetPath(obj []byte, path []string, value []byte) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("rawjson: empty path")
	}
	if len(path) == 1 {
		return Set(obj, path[0], value)
	}
	inner, ok := Get(obj, path[0])
	if !ok || len(inner) == 0 || inner[0] != '{' {
		inner = []byte("{}")
	}
	newInner, err := SetPath(inner, path[1:], value)
	if err != nil {
		return nil, err
	}
	return Set(obj, path[0], newInner)
}

// UniqueKeys reports an error if any object in v, at any depth, has the same
// key twice, or two keys that differ only in case (under Unicode case
// folding, so "mask" and "maſk" too). JSON parsers disagree on which
// duplicate wins, and some match keys case-insensitively (Go's
// encoding/json, .NET's case-insensitive options): a policy condition that
// read args.path must not be executed on a server that reads "PATH".
//
// A key found twice is reported as a *[KeyError], which says where the
// object is and never what its values are; other errors are syntax errors.
func UniqueKeys(v []byte) error {
	_, err := checkUnique(v, skipSpace(v, 0), 0, nil)
	return err
}

// KeyError is a key that occurs twice in one object, as written or under
// case folding. It names the keys and their position, never a value, so it
// can be shown and logged without leaking the message's content.
type KeyError struct {
	Key   string   // the second occurrence, as written
	First string   // the first occurrence, as written; equal to Key for an exact duplicate
	Path  []string // the object's position: member names and array indexes from the outside in
	// Offset is the byte offset of the second key in the checked input.
	Offset int
}

func (e *KeyError) Error() string {
	at := e.Pointer()
	if at == "" {
		at = "the top level"
	}
	if e.First == e.Key {
		return fmt.Sprintf("duplicate key %s in the object at %s (byte %d)", shortQuote(e.Key), at, e.Offset)
	}
	return fmt.Sprintf("keys %s and %s differ only in case, in the object at %s (byte %d)", shortQuote(e.First), shortQuote(e.Key), at, e.Offset)
}

// Pointer renders Path as a JSON Pointer (RFC 6901) with control and
// non-printing characters escaped, bounded so that a hostile key cannot
// make the message long: "/arguments/items/0".
func (e *KeyError) Pointer() string {
	var b strings.Builder
	for _, seg := range e.Path {
		b.WriteByte('/')
		seg = strings.NewReplacer("~", "~0", "/", "~1").Replace(seg)
		q := strconv.QuoteToASCII(seg)
		b.WriteString(q[1 : len(q)-1])
		if b.Len() > maxShown*2 {
			return b.String()[:maxShown*2] + "…"
		}
	}
	return b.String()
}

// maxShown bounds one key as an error shows it.
const maxShown = 64

func shortQuote(s string) string {
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.QuoteToASCII(s[:cut]) + "…"
	}
	return strconv.QuoteToASCII(s)
}

const maxDepth = 1000

// checkUnique checks the value at v[i]. A *KeyError from inside a member or
// an element gets that member's name or index prepended on the way out, so
// the success path builds no paths at all. With ex (UniqueKeysExact) the
// path of each object is known on the way in, and the objects ex.exact
// accepts compare their keys as written, not folded.
func checkUnique(v []byte, i, depth int, ex *exactAt) (int, error) {
	if depth > maxDepth {
		return 0, errors.New("rawjson: nesting too deep")
	}
	if i >= len(v) {
		return 0, errors.New("rawjson: unexpected end of input")
	}
	switch v[i] {
	case '{':
		// The keys of a small object (most of what the gate checks: a
		// call's params and arguments) are compared pairwise, as read,
		// under strings.EqualFold, which is what foldKey's equality is;
		// past fewKeys they go into a map of folded keys. Either way a
		// key costs no allocation unless it has escapes to resolve.
		asWritten := ex != nil && ex.exact(ex.path)
		var few [fewKeys][]byte
		n := 0
		var seen map[string]string // folded key -> key as written, once past fewKeys
		i = skipSpace(v, i+1)
		if i < len(v) && v[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(v) || v[i] != '"' {
				return 0, fmt.Errorf("rawjson: expected a member name at offset %d", i)
			}
			end, err := skipString(v, i)
			if err != nil {
				return 0, err
			}
			key, err := keyBytes(v[i:end])
			if err != nil {
				return 0, err
			}
			if seen == nil {
				for _, first := range few[:n] {
					if sameKey(first, key, asWritten) {
						return 0, &KeyError{Key: string(key), First: string(first), Offset: i}
					}
				}
				if n < fewKeys {
					few[n] = key
					n++
				} else {
					seen = make(map[string]string, 2*fewKeys)
					for _, k := range few {
						seen[keyID(string(k), asWritten)] = string(k)
					}
					seen[keyID(string(key), asWritten)] = string(key)
				}
			} else {
				k := string(key)
				folded := keyID(k, asWritten)
				if first, dup := seen[folded]; dup {
					return 0, &KeyError{Key: k, First: first, Offset: i}
				}
				seen[folded] = k
			}
			i = skipSpace(v, end)
			if i >= len(v) || v[i] != ':' {
				return 0, fmt.Errorf("rawjson: expected ':' at offset %d", i)
			}
			var inner *exactAt
			if ex != nil { // a path is built only for UniqueKeysExact
				inner = ex.in(string(key))
			}
			i, err = checkUnique(v, skipSpace(v, i+1), depth+1, inner)
			if err != nil {
				return 0, within(err, string(key))
			}
			i = skipSpace(v, i)
			if i >= len(v) {
				return 0, errors.New("rawjson: unterminated object")
			}
			if v[i] == '}' {
				return i + 1, nil
			}
			if v[i] != ',' {
				return 0, fmt.Errorf("rawjson: unexpected %q at offset %d", v[i], i)
			}
			i = skipSpace(v, i+1)
		}
	case '[':
		i = skipSpace(v, i+1)
		if i < len(v) && v[i] == ']' {
			return i + 1, nil
		}
		for n := 0; ; n++ {
			var err error
			var inner *exactAt
			if ex != nil {
				inner = ex.in(strconv.Itoa(n))
			}
			i, err = checkUnique(v, i, depth+1, inner)
			if err != nil {
				return 0, within(err, strconv.Itoa(n))
			}
			i = skipSpace(v, i)
			if i >= len(v) {
				return 0, errors.New("rawjson: unterminated array")
			}
			if v[i] == ']' {
				return i + 1, nil
			}
			if v[i] != ',' {
				return 0, fmt.Errorf("rawjson: unexpected %q at offset %d", v[i], i)
			}
			i = skipSpace(v, i+1)
		}
	default:
		return skipValue(v, i)
	}
}

// within prepends seg to the path of a *KeyError; other errors pass.
func within(err error, seg string) error {
	if ke, ok := err.(*KeyError); ok {
		ke.Path = append([]string{seg}, ke.Path...)
	}
	return err
}

// FoldKey returns s case-folded: two keys fold to the same string exactly
// when strings.EqualFold (and so Go's encoding/json, which matches member
// names to struct fields that way) takes them for the same name.
func FoldKey(s string) string { return foldKey(s) }

// foldKey maps every rune of s to the smallest rune of its case-folding
// orbit, so that keys equal under strings.EqualFold fold to the same string.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// The smallest rune of an ASCII letter's orbit is its upper case
		// (K < k < U+212A KELVIN SIGN, S < s < U+017F LONG S).
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// AppendString appends s to dst as a JSON string, escaping what JSON
// requires and also <, > and & no further (the output is not HTML).
func AppendString(dst []byte, s string) []byte {
	// Most strings (every MCP method name) need no escaping: spare them
	// an encoder, a buffer and reflection per message.
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := marshalNoEscape(s)
	return append(dst, b...)
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Unquote decodes the JSON string quoted (quotes included) as
// encoding/json would, without its per-call cost when there is nothing to
// unescape.
func Unquote(quoted []byte) (string, error) { return decodeKey(quoted) }

func decodeKey(quoted []byte) (string, error) {
	// The fast path only for what encoding/json would read the same way:
	// it turns invalid UTF-8 into U+FFFD, and keys must compare as it sees
	// them (UniqueKeys guards against readings that differ).
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		b := quoted[1 : len(quoted)-1]
		if k, ok := commonKey(b); ok {
			return k, nil
		}
		return string(b), nil
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", fmt.Errorf("rawjson: bad string: %w", err)
	}
	return s, nil
}

// keyBytes is decodeKey without the string: the quoted key's own bytes
// when it has nothing to resolve, which costs no allocation.
func keyBytes(quoted []byte) ([]byte, error) {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return quoted[1 : len(quoted)-1], nil
	}
	s, err := decodeKey(quoted)
	return []byte(s), err
}

// fewKeys is how many keys of one object UniqueKeys compares pairwise
// before it keeps them in a map.
const fewKeys = 8

// commonKey returns the member names (and the method name) of the MCP
// messages the gate reads on every call as constants, so that reading
// them allocates nothing (a switch on string(b) does not copy b).
func commonKey(b []byte) (string, bool) {
	switch string(b) {
	case "jsonrpc":
		return "jsonrpc", true
	case "id":
		return "id", true
	case "method":
		return "method", true
	case "params":
		return "params", true
	case "result":
		return "result", true
	case "error":
		return "error", true
	case "tools/call":
		return "tools/call", true
	case "name":
		return "name", true
	case "arguments":
		return "arguments", true
	case "_meta":
		return "_meta", true
	case "progressToken":
		return "progressToken", true
	case "uri":
		return "uri", true
	case "content":
		return "content", true
	case "type":
		return "type", true
	case "text":
		return "text", true
	case "structuredContent":
		return "structuredContent", true
	case "isError":
		return "isError", true
	case "task":
		return "task", true
	case "requestState":
		return "requestState", true
	case "inputResponses":
		return "inputResponses", true
	// The 2026-07-28 envelope, on every request of that revision's hosts
	// and to its upstreams, and its results' marks.
	case "io.modelcontextprotocol/protocolVersion":
		return "io.modelcontextprotocol/protocolVersion", true
	case "io.modelcontextprotocol/clientCapabilities":
		return "io.modelcontextprotocol/clientCapabilities", true
	case "io.modelcontextprotocol/clientInfo":
		return "io.modelcontextprotocol/clientInfo", true
	case "resultType":
		return "resultType", true
	case "version":
		return "version", true
	case "2026-07-28": // the envelope's protocolVersion, read as a string
		return "2026-07-28", true
	}
	return "", false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the offset just past the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errors.New("rawjson: unterminated string")
		}
		j += k
		// Count the backslashes before the quote: an odd number escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// skipValue returns the offset just past the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("rawjson: unexpected end of input")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("rawjson: unterminated object or array")
	default:
		// A number or a literal: stop at the first byte that cannot be part
		// of one, so that `1;"b":2` is not taken for a value.
		j := i
		for j < len(b) && isScalarByte(b[j]) {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("rawjson: expected a value at offset %d", i)
		}
		return j, nil
	}
}

// isScalarByte reports whether c can occur in a JSON number or in true,
// false or null.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// DecodeStrict decodes data, one JSON value and nothing after it, into v
// with no member v does not name and no key twice, case-insensitively
// (UniqueKeys): encoding/json matches keys without regard to case and lets
// the last duplicate win, so a file or request the gate reads back
// (a catalog cache entry, a pins file, an approval request) could
// otherwise mean two things.
func DecodeStrict(data []byte, v any) error {
	if err := UniqueKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}

// UniqueKeysExact is UniqueKeys, except that in the objects at the paths
// exact accepts (member names and array indexes from the outside in) only
// a key written twice is an error: there two keys that differ in case are
// two names, as environment variable names are on Unix (HTTP_PROXY and
// http_proxy, each read by its own programs). It is for files read once
// (a servers file), not for messages: once a case clash is found where
// exact accepts, it checks again building every object's path.
func UniqueKeysExact(v []byte, exact func(path []string) bool) error {
	err := UniqueKeys(v)
	var ke *KeyError
	if !errors.As(err, &ke) || ke.First == ke.Key || !exact(ke.Path) {
		return err
	}
	_, err = checkUnique(v, skipSpace(v, 0), 0, &exactAt{exact: exact})
	return err
}

// sameKey says whether two keys of one object name the same member:
// under case folding, or as written in an object UniqueKeysExact accepts.
func sameKey(a, b []byte, asWritten bool) bool {
	if asWritten {
		return bytes.Equal(a, b)
	}
	return bytes.EqualFold(a, b)
}

// keyID is what sameKey compares, for a map of an object's keys.
func keyID(k string, asWritten bool) string {
	if asWritten {
		return k
	}
	return foldKey(k)
}

// exactAt is UniqueKeysExact's state in checkUnique: the path of the
// value being checked, and which objects compare keys as written.
type exactAt struct {
	exact func(path []string) bool
	path  []string
}

// in is the state for the value at seg inside the current one.
func (e *exactAt) in(seg string) *exactAt {
	return &exactAt{exact: e.exact, path: append(e.path[:len(e.path):len(e.path)], seg)}
}
