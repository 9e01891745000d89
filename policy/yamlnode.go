package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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

// yamlLineRE reads the line out of the YAML library's errors. It is
// compiled on first need, a file that does not parse: a gate's start
// compiles nothing it does not use (docs/design.md, "Cold start").
var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

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
		yamlSyntaxError(ps, data, err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ps.errorf(extra.Line, extra.Column, "found a second YAML document; expected a single document")
	} else if !errors.Is(err, io.EOF) {
		yamlSyntaxError(ps, data, err)
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

// yamlSyntaxError reports a syntax error at its exact place. The YAML
// library's own line is often off by one or two and has no column (none at
// all for an unknown alias), so the place is found again: an alias or
// anchor where a glob was meant is found by its token, anything else by the
// shortest prefix of the file that fails with the same problem.
func yamlSyntaxError(ps *problems, data []byte, err error) {
	reported, problem := splitYAMLError(err)
	if tok, line, col, ok := findAliasToken(data, problem); ok {
		ps.errorf(line, col, "found %s, which YAML reads as an alias or an anchor, not as text; expected a string: quote the pattern, e.g. %q", tok, tok)
		return
	}
	line, col := failingPrefix(data, problem)
	if line == 0 {
		line = reported
	}
	ps.errorf(line, col, "invalid YAML: %s; expected well-formed YAML%s", problem, syntaxHint(problem))
}

// syntaxHint says what most often causes a problem in a policy.
func syntaxHint(problem string) string {
	switch {
	case strings.Contains(problem, "did not find expected ',' or ']'"),
		strings.Contains(problem, "did not find expected ',' or '}'"),
		strings.Contains(problem, "did not find expected '-' indicator"),
		strings.Contains(problem, "did not find expected node content"):
		return " (a list or mapping opened with [ or { is not closed where it should be; a glob that starts with [ or {, or holds [ ] { } or , inside [...], must be quoted: quote the pattern)"
	case strings.Contains(problem, "found unexpected end of stream"):
		return " (a quoted string is not closed)"
	case strings.Contains(problem, "found character that cannot start any token"):
		return " (indent with spaces, not tabs; quote a glob that starts with @ or `)"
	}
	return ""
}

// splitYAMLError returns the library's line (0 when it gave none) and the
// problem without it.
func splitYAMLError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// maxLocateBytes bounds the files whose syntax errors are located by
// re-parsing prefixes; a larger file gets the library's line.
const maxLocateBytes = 256 << 10

// maxLocateWork bounds the bytes parsed to find a column one prefix at a
// time; past it the column is bisected.
const maxLocateWork = 4 << 20

// failingPrefix returns the line and column of the shortest prefix of data
// (whole lines, then the bytes of the last line) that fails to parse with
// the given problem: the place where the parser could not go on. It
// bisects, assuming a longer prefix fails whenever a shorter one does, and
// returns 0, 0 when the result does not check out.
func failingPrefix(data []byte, problem string) (int, int) {
	if len(data) > maxLocateBytes {
		return 0, 0
	}
	fails := func(prefix []byte) bool {
		var doc yaml.Node
		dec := yaml.NewDecoder(bytes.NewReader(prefix))
		for {
			err := dec.Decode(&doc)
			if err == nil {
				continue
			}
			if errors.Is(err, io.EOF) {
				return false
			}
			_, p := splitYAMLError(err)
			return p == problem
		}
	}
	// ends[i] is the end of line i+1, past its newline.
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	l := sort.Search(len(ends), func(i int) bool { return fails(data[:ends[i]]) })
	if l == len(ends) {
		return 0, 0
	}
	start := 0
	if l > 0 {
		start = ends[l-1]
	}
	if l > 0 && fails(data[:start]) {
		return 0, 0
	}
	lineBytes := data[start:ends[l]]
	// Within the line the problem may come and go (an unclosed list fails
	// one way after a comma and another way inside an item), so the first
	// failing prefix is searched for one by one while that stays cheap.
	c := len(lineBytes)
	if len(lineBytes)*(start+len(lineBytes)) <= maxLocateWork {
		for i := range lineBytes {
			if fails(data[:start+i+1]) {
				c = i
				break
			}
		}
	} else {
		c = sort.Search(len(lineBytes), func(i int) bool { return fails(data[:start+i+1]) })
		if c > 0 && c < len(lineBytes) && fails(data[:start+c]) {
			c = len(lineBytes)
		}
	}
	if c == len(lineBytes) {
		return l + 1, 0
	}
	// Columns count characters.
	return l + 1, utf8.RuneCount(lineBytes[:c]) + 1
}

// findAliasToken finds, for a problem the YAML library reports when it
// reads an alias or an anchor (an unknown anchor, or a '*' or '&' followed
// by no name), the token that caused it: an unquoted glob such as *foo or a
// bare * at the start of a value. It returns the token and its 1-based
// line and column.
func findAliasToken(data []byte, problem string) (string, int, int, bool) {
	var name string
	switch {
	case strings.HasPrefix(problem, "unknown anchor '") && strings.HasSuffix(problem, "' referenced"):
		name = strings.TrimSuffix(strings.TrimPrefix(problem, "unknown anchor '"), "' referenced")
	case strings.HasPrefix(problem, "did not find expected alphabetic or numeric character"):
	default:
		return "", 0, 0, false
	}
	for ln, line := range strings.Split(string(data), "\n") {
		quote := byte(0)
		for i := 0; i < len(line); i++ {
			c := line[i]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
				continue
			}
			prev := byte(' ')
			if i > 0 {
				prev = line[i-1]
			}
			tokenStart := prev == ' ' || prev == '\t' || prev == '[' || prev == '{' || prev == ','
			switch {
			case c == '#' && (prev == ' ' || prev == '\t' || i == 0):
				i = len(line)
			case (c == '"' || c == '\'') && tokenStart:
				quote = c
			case (c == '*' || c == '&') && tokenStart:
				end := i + 1
				for end < len(line) && !strings.ContainsRune(" \t,]}#", rune(line[end])) {
					end++
				}
				tok := strings.TrimRight(line[i:end], "\r")
				n := 0
				for n < len(tok)-1 && isAnchorChar(tok[1+n]) {
					n++
				}
				if (name != "" && c == '*' && tok[1:1+n] == name) || (name == "" && (n == 0 || n < len(tok)-1)) {
					return tok, ln + 1, utf8.RuneCountInString(line[:i]) + 1, true
				}
			}
		}
	}
	return "", 0, 0, false
}

// isAnchorChar reports whether c can be part of an anchor's name as the
// YAML library reads it.
func isAnchorChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
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
