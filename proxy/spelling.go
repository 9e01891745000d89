package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// MCP's members of request params that the gate reads or that steer what an
// upstream does. The gate reads them by exact name; a server whose decoder
// matches names without regard to case (Go's encoding/json, which mcp-go
// and hand-written Go servers use, folds "Arguments" and even "argumentſ"
// onto "arguments") reads a variant the gate took for absent, and would act
// on arguments that were never decided on.
var envelopeMembers = []string{
	"name", "arguments", "uri", "ref", "type", "_meta", "progressToken",
	"cursor", "level", "argument", "value", "context",
	"protocolVersion", "capabilities", "clientInfo",
	"inputResponses", "requestState", // a 2026-07-28 retry's, taken out by the gate (era.go)
	"task", // stripped (tasks.go): a variant would reach the server as task augmentation
}

// envelopeMember is envelopeMembers as a set.
var envelopeMember = func() map[string]bool {
	m := make(map[string]bool, len(envelopeMembers))
	for _, name := range envelopeMembers {
		m[name] = true
	}
	return m
}()

// envelopeObjects are the members whose own keys are envelope too; the
// values of arguments (tools/call, prompts/get, a completion's
// context.arguments) are the caller's, and are not looked into.
var envelopeObjects = []string{"ref", "_meta", "argument", "context"}

// checkSpelling refuses params in which a key of the envelope (the params
// object itself, and its ref, _meta, argument and context objects) is a
// case variant of an MCP member name, under the same Unicode folding as
// Go's encoding/json. Two keys that fold together were refused before
// (rawjson.UniqueKeys); this is the one key spelled otherwise, which the
// gate would read as absent. The error names the position, not the key.
func checkSpelling(method string, params []byte) error {
	err := spellingIn(params, "")
	if err == nil && bytes.Contains(params, []byte(`\u0000`)) {
		err = nulKey(params)
	}
	if err != nil {
		return rpc.Errorf(rpc.CodeInvalidParams, "%s: params: %v; mcp-gate refuses a request that JSON parsers can read in two ways, "+
			"since the gate would decide on one reading and the server act on the other", method, err)
	}
	return nil
}

func spellingIn(obj []byte, at string) error {
	var found error
	_ = rawjson.Members(obj, func(m rawjson.Member) bool {
		// A key spelled as MCP spells a member is no variant of another:
		// no two of the names fold together. Most keys are those (a
		// call's name, arguments and _meta), and pass without folding.
		if !envelopeMember[m.Key] {
			for _, name := range envelopeMembers {
				if strings.EqualFold(m.Key, name) {
					where := at
					if where == "" {
						where = "the top level"
					}
					found = fmt.Errorf("a key of %d bytes in the object at %s is a case variant of %s, which MCP spells only so",
						len(m.Key), where, strconv.Quote(name))
					return false
				}
			}
		}
		if at == "" && len(m.Value) > 0 && m.Value[0] == '{' {
			for _, o := range envelopeObjects {
				if m.Key == o {
					found = spellingIn(m.Value, "/"+o)
					return found == nil
				}
			}
		}
		return true
	})
	return found
}

// nulKey refuses a key, at any depth, that holds U+0000 (written \u0000:
// JSON has no raw control characters). Parsers built on C strings (cJSON)
// end the key there, and would read "path\u0000x" as "path", which the
// policy never looked at.
func nulKey(params []byte) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	type level struct{ obj, wantKey bool }
	var stack []level
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or JSON that the read already accepted
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{obj: true, wantKey: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				if strings.IndexByte(t, 0) >= 0 {
					return errors.New("a key holds U+0000, where parsers built on C strings end it; expected keys without it")
				}
				stack[n-1].wantKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}
