package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Node is one JSON value in an order-preserving tree: an object (Keys and
// Vals), an array (Elems) or a leaf kept as its compact source bytes, so
// that re-encoding an unchanged file reproduces it (numbers and string
// escapes as written). Host config files are edited through it so that keys
// keep their order and everything the edit does not touch keeps its form.
type Node struct {
	Kind  byte // '{', '[' or 0 for a leaf
	Keys  []string
	Vals  []*Node
	Elems []*Node
	Raw   json.RawMessage
}

// ParseTree parses a JSON document. Duplicate keys are an error: which one
// a host reads is unknowable, and editing one would leave the other live.
func ParseTree(data []byte) (*Node, error) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return parseNode(data)
}

func parseNode(raw []byte) (*Node, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("empty JSON value")
	}
	switch raw[0] {
	case '{':
		n := &Node{Kind: '{'}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := t.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			if n.Get(k) != nil {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			c, err := parseNode(v)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			n.Keys = append(n.Keys, k)
			n.Vals = append(n.Vals, c)
		}
		return n, nil
	case '[':
		n := &Node{Kind: '['}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, err
		}
		for i, e := range elems {
			c, err := parseNode(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			n.Elems = append(n.Elems, c)
		}
		return n, nil
	default:
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		return &Node{Raw: b.Bytes()}, nil
	}
}

// NewObject is an empty object.
func NewObject() *Node { return &Node{Kind: '{'} }

// Leaf is a node for a Go value, encoded as JSON.
func Leaf(v any) *Node {
	n, err := FromValue(v)
	if err != nil {
		panic(err) // only called with strings, numbers and bools
	}
	return n
}

// FromValue converts a Go value (as encoding/json would encode it) to a
// tree. Map keys come out sorted.
func FromValue(v any) (*Node, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return parseNode(b.Bytes())
}

// Get is the value of key k in an object, or nil.
func (n *Node) Get(k string) *Node {
	if n == nil || n.Kind != '{' {
		return nil
	}
	for i, key := range n.Keys {
		if key == k {
			return n.Vals[i]
		}
	}
	return nil
}

// Items are an array's elements; nil for anything else, nil included
// (a key a malformed file lacks).
func (n *Node) Items() []*Node {
	if n == nil || n.Kind != '[' {
		return nil
	}
	return n.Elems
}

// Index is the position of key k in an object, or -1.
func (n *Node) Index(k string) int {
	for i, key := range n.Keys {
		if key == k {
			return i
		}
	}
	return -1
}

// Set replaces key k's value, or appends the key.
func (n *Node) Set(k string, v *Node) {
	if i := n.Index(k); i >= 0 {
		n.Vals[i] = v
		return
	}
	n.Keys = append(n.Keys, k)
	n.Vals = append(n.Vals, v)
}

// Insert puts key k at position i (clamped), replacing an existing key.
func (n *Node) Insert(i int, k string, v *Node) {
	if n.Index(k) >= 0 {
		n.Set(k, v)
		return
	}
	i = max(0, min(i, len(n.Keys)))
	n.Keys = append(n.Keys[:i], append([]string{k}, n.Keys[i:]...)...)
	n.Vals = append(n.Vals[:i], append([]*Node{v}, n.Vals[i:]...)...)
}

// Delete removes key k and says whether it was there.
func (n *Node) Delete(k string) bool {
	i := n.Index(k)
	if i < 0 {
		return false
	}
	n.Keys = append(n.Keys[:i], n.Keys[i+1:]...)
	n.Vals = append(n.Vals[:i], n.Vals[i+1:]...)
	return true
}

// String is the leaf's string value, or "" when it is not a string.
func (n *Node) String() string {
	var s string
	if n != nil && n.Kind == 0 {
		_ = json.Unmarshal(n.Raw, &s)
	}
	return s
}

// Strings is an array of strings; ok is false for anything else.
func (n *Node) Strings() (out []string, ok bool) {
	if n == nil || n.Kind != '[' {
		return nil, false
	}
	for _, e := range n.Elems {
		if e.Kind != 0 || len(e.Raw) == 0 || e.Raw[0] != '"' {
			return nil, false
		}
		out = append(out, e.String())
	}
	return out, true
}

// Compact is the node's compact JSON, keys in order: equality of two nodes
// is equality of their Compact forms.
func (n *Node) Compact() string {
	var b strings.Builder
	n.write(&b, "", "", "")
	return b.String()
}

// Equal says whether two nodes are the same JSON, keys in the same order.
func (n *Node) Equal(o *Node) bool { return n.Compact() == o.Compact() }

// Clone is a deep copy.
func (n *Node) Clone() *Node {
	c, _ := parseNode([]byte(n.Compact()))
	return c
}

// Encode writes the document the way JSON.stringify(v, null, indent) does
// (which is how Claude Code and Claude Desktop write their files), with a
// final newline when trailingNewline is set.
func (n *Node) Encode(indent string, trailingNewline bool) []byte {
	var b strings.Builder
	n.write(&b, "\n", indent, "")
	if trailingNewline {
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func (n *Node) write(b *strings.Builder, nl, indent, prefix string) {
	colon := ":"
	if nl != "" {
		colon = ": "
	}
	switch n.Kind {
	case '{':
		if len(n.Keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{")
		for i, k := range n.Keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(nl + prefix + indent)
			b.WriteString(quote(k))
			b.WriteString(colon)
			n.Vals[i].write(b, nl, indent, prefix+indent)
		}
		b.WriteString(nl + prefix + "}")
	case '[':
		if len(n.Elems) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		for i, e := range n.Elems {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(nl + prefix + indent)
			e.write(b, nl, indent, prefix+indent)
		}
		b.WriteString(nl + prefix + "]")
	default:
		b.Write(n.Raw)
	}
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonStyle is how a file is laid out: its indent unit and whether it ends
// in a newline, so that a rewrite keeps both.
type jsonStyle struct {
	indent  string
	newline bool
}

func styleOf(data []byte) jsonStyle {
	st := jsonStyle{indent: "  ", newline: len(data) == 0 || bytes.HasSuffix(data, []byte("\n"))}
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			st.indent = line[:len(line)-len(trimmed)]
			break
		}
	}
	return st
}
