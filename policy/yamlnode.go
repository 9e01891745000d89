package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The policy and the case files are read as yaml.Node trees rather than
// decoded into structs, because a struct decoder stops at the first problem,
// loses positions, and silently accepts duplicate keys; a security team
// needs every mistake of the file at once, each at its line and column.

// maxYAMLBytes bounds the files this package reads: a policy is a few
// kilobytes, and a bound keeps a hostile or mistaken file from costing
// unbounded memory and time.
const maxYAMLBytes = 4 << 20

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// readDocument parses data as exactly one YAML document whose root is a
// mapping, reporting syntax errors, anchors and aliases. It returns nil when
// the document cannot be used at all.
func readDocument(ps *problems, data []byte, what string) *yaml.Node {
	if len(data) > maxYAMLBytes {
		ps.errorf(0, 0, "the file is %d bytes; expected at most %d bytes", len(data), maxYAMLBytes)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.errorf(0, 0, "the file is empty; expected %s", what)
			return nil
		}
		yamlSyntaxError(ps, err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ps.errorf(extra.Line, extra.Column, "found a second YAML document; expected a single document")
	} else if !errors.Is(err, io.EOF) {
		yamlSyntaxError(ps, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		ps.errorf(doc.Line, doc.Column, "found no content; expected %s", what)
		return nil
	}
	root := doc.Content[0]
	rejectAliases(ps, root)
	if root.Kind != yaml.MappingNode {
		ps.errorf(root.Line, root.Column, "found %s; expected %s", describe(root), what)
		return nil
	}
	return root
}

func yamlSyntaxError(ps *problems, err error) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		ps.errorf(line, 1, "invalid YAML: %s; expected well-formed YAML", m[2])
		return
	}
	ps.errorf(0, 0, "invalid YAML: %s; expected well-formed YAML", strings.TrimPrefix(msg, "yaml: "))
}

// rejectAliases reports anchors and aliases. They are refused so that every
// rule of a security policy reads on its own at the place it applies, and so
// that no alias can multiply the work of a load.
func rejectAliases(ps *problems, n *yaml.Node) {
	// An explicit stack: a deeply nested hostile file must not exhaust the
	// goroutine stack.
	stack := []*yaml.Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.AliasNode {
			ps.errorf(n.Line, n.Column, "found the alias *%s; expected plain YAML (anchors and aliases are not supported, so that every rule reads on its own)", n.Value)
			continue
		}
		if n.Anchor != "" {
			ps.errorf(n.Line, n.Column, "found the anchor &%s; expected plain YAML (anchors and aliases are not supported, so that every rule reads on its own)", n.Anchor)
		}
		for i := len(n.Content) - 1; i >= 0; i-- {
			stack = append(stack, n.Content[i])
		}
	}
}

// describe says what a node is, for "found ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 60 {
			v = v[:60] + "..."
		}
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "the boolean " + v
		case "!!int", "!!float":
			return "the number " + v
		case "!!str":
			return strconv.Quote(v)
		default:
			return fmt.Sprintf("a %s value %q", strings.TrimPrefix(n.ShortTag(), "!!"), v)
		}
	}
	return "an unknown node"
}

// field is one key of a mapping with its value.
type field struct {
	key   *yaml.Node
	value *yaml.Node
}

// fields reads a mapping whose keys must be among allowed, reporting
// non-string keys, duplicates and unknown keys. Fields are returned by name;
// a reported key is left out.
func fields(ps *problems, n *yaml.Node, what string, allowed ...string) map[string]field {
	out := make(map[string]field, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			ps.errorf(k.Line, k.Column, "found the key %s in %s; expected one of: %s", describe(k), what, strings.Join(allowed, ", "))
			continue
		}
		known := false
		for _, a := range allowed {
			if a == k.Value {
				known = true
				break
			}
		}
		if !known {
			ps.errorf(k.Line, k.Column, "found the unknown key %q in %s; expected one of: %s", k.Value, what, strings.Join(allowed, ", "))
			continue
		}
		if prev, dup := out[k.Value]; dup {
			ps.errorf(k.Line, k.Column, "found the key %q a second time in %s (first at line %d); expected each key once", k.Value, what, prev.key.Line+ps.lineOff)
			continue
		}
		out[k.Value] = field{key: k, value: v}
	}
	return out
}

// str reads a string scalar. Numbers, booleans and null are refused rather
// than converted, so `version: "1"` and `reason: yes` are caught.
func str(ps *problems, n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		ps.errorf(n.Line, n.Column, "%s is %s; expected a string", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// listItem is one string of a list, with its index in the list and its
// node for the position.
type listItem struct {
	index int
	node  *yaml.Node
}

// strList reads a list of strings; a single string stands for a list of one.
func strList(ps *problems, n *yaml.Node, what string) ([]listItem, bool) {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		return []listItem{{0, n}}, true
	case n.Kind == yaml.SequenceNode:
		out := make([]listItem, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
				ps.errorf(item.Line, item.Column, "%s[%d] is %s; expected a string", what, i, describe(item))
				ok = false
				continue
			}
			out = append(out, listItem{i, item})
		}
		return out, ok
	}
	ps.errorf(n.Line, n.Column, "%s is %s; expected a list of strings or a single string", what, describe(n))
	return nil, false
}
