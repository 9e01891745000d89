package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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
func decodeArgs(raw []byte) (traits.Mapper, error) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON's whitespace, no more
	if len(raw) == 0 || string(raw) == "null" {
		return emptyArgs, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("the arguments are not a JSON object (they start with %q); expected an object", raw[:1])
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the arguments have data after the object; expected one JSON object")
	}
	return v.(traits.Mapper), nil
}

func decodeValue(dec *json.Decoder, depth int) (ref.Val, error) {
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
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[types.String(k)] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return types.NewRefValMap(types.DefaultTypeAdapter, m), nil
		case '[':
			l := []ref.Val{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
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
		return types.String(t), nil
	case bool:
		return types.Bool(t), nil
	case nil:
		return types.NullValue, nil
	}
	return nil, fmt.Errorf("found the token %v; expected a JSON value", tok)
}
