package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// maxArgsDepth bounds the nesting of arguments, so that a hostile call
// cannot make the decoder recurse without limit.
const maxArgsDepth = 512

// emptyArgs is the value of args for a call without arguments.
var emptyArgs = types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{})

// decodeArgs turns a call's raw arguments into the value of the CEL
// variable args. Absent, empty and null arguments are an empty object; any
// other non-object is an error, and so is an object with a key twice:
// JSON parsers disagree on which duplicate wins, and the upstream must not
// act on a value the condition never saw.
//
// The result is built of CEL values at once, rather than of Go maps and
// slices that CEL would convert by reflection at every access: a
// comprehension over a long list would otherwise pay for the conversion on
// each step.
//
// Integers become int (or uint past int64's range) so that conditions
// compare them exactly; other numbers become double.
func decodeArgs(raw []byte) (traits.Mapper, error) { return decodeArgsWith(raw, &keyLookup{}) }

// keyLookup says how the argument maps of one evaluation look keys up, and
// records whether a lookup found a key only under case folding.
//
// Servers read argument names in two ways: exactly (JavaScript, Python,
// the go-sdk) or regardless of case (Go's encoding/json, and so mcp-go and
// hand-written Go servers, which take "Path", "PATH" and, under Unicode
// case folding, "paſſword" for the fields path and password). A condition
// such as `"path" in args && ...` must not read "absent" where the server
// reads a path. So a decision is made with lookups that fold case first,
// unambiguous since an object with two keys that fold together is refused,
// and, only when some lookup matched a key spelled otherwise, again with
// exact lookups; the most restrictive verdict wins, as over path readings.
type keyLookup struct {
	exact   bool // look keys up as written only
	inexact bool // a lookup matched a key only under case folding
}

// foldedMap is an object of the arguments whose lookups (args.k, args[k],
// "k" in args, has(args.k)) follow its keyLookup.
type foldedMap struct {
	traits.Mapper
	folded map[string]ref.Val // by rawjson.FoldKey of the key
	st     *keyLookup
}

func (m *foldedMap) Find(key ref.Val) (ref.Val, bool) {
	v, ok := m.Mapper.Find(key)
	if ok || m.st.exact {
		return v, ok
	}
	s, isStr := key.(types.String)
	if !isStr {
		return v, ok
	}
	if fv, found := m.folded[rawjson.FoldKey(string(s))]; found {
		m.st.inexact = true
		return fv, true
	}
	return v, false
}

func (m *foldedMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

func (m *foldedMap) Contains(key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

func decodeArgsWith(raw []byte, st *keyLookup) (traits.Mapper, error) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON's whitespace, no more
	if len(raw) == 0 || string(raw) == "null" {
		return emptyArgs, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("the arguments are not a JSON object (they start with %q); expected an object", raw[:1])
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0, st)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the arguments have data after the object; expected one JSON object")
	}
	return v.(traits.Mapper), nil
}

func decodeValue(dec *json.Decoder, depth int, st *keyLookup) (ref.Val, error) {
	if depth > maxArgsDepth {
		return nil, fmt.Errorf("the arguments nest deeper than %d levels; expected at most %d", maxArgsDepth, maxArgsDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[ref.Val]ref.Val{}
			folded := map[string]ref.Val{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("found %v as an object key; expected a string", kt)
				}
				if _, dup := m[types.String(k)]; dup {
					return nil, fmt.Errorf("found the key %q twice in one object; expected each key once", k)
				}
				fk := rawjson.FoldKey(k)
				if _, dup := folded[fk]; dup {
					return nil, fmt.Errorf("found two keys equal to %q under case folding in one object; expected each key once, in one spelling", k)
				}
				v, err := decodeValue(dec, depth+1, st)
				if err != nil {
					return nil, err
				}
				m[types.String(k)] = v
				folded[fk] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return &foldedMap{Mapper: types.NewRefValMap(types.DefaultTypeAdapter, m), folded: folded, st: st}, nil
		case '[':
			l := []ref.Val{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1, st)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return types.NewRefValList(types.DefaultTypeAdapter, l), nil
		}
		return nil, fmt.Errorf("found the delimiter %v; expected a value", t)
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return types.Int(i), nil
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return types.Uint(u), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			// Its size, not its digits: this text reaches the audit log.
			return nil, fmt.Errorf("a number of %d characters is out of range; expected a finite number", len(t))
		}
		return types.Double(f), nil
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			// A server reading strings as C strings (cJSON, Lua, a C
			// library) reads the part before U+0000, every other the
			// whole: "x.env\u0000.txt" ends with ".txt" for a condition
			// and names x.env for such a server. A condition that reads
			// such a string fails (closed), as the path functions do
			// (errNulInPath); one that does not read it is unaffected.
			return types.NewErr("%s", errNulInString), nil
		}
		return types.String(t), nil
	case bool:
		return types.Bool(t), nil
	case nil:
		return types.NullValue, nil
	}
	return nil, fmt.Errorf("found the token %v; expected a JSON value", tok)
}
