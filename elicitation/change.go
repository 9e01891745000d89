package elicitation

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Change is one difference between the definition of a tool (prompt,
// resource template) the human approved and the one its server lists now:
// the value at Path was Before and is After, each compact JSON, "" when
// absent. Path segments are object keys, or array indexes written as
// IndexSegment makes them. All of it is the upstream's text: the question
// shows it only quoted and bounded.
type Change struct {
	Path          []string
	Before, After string
}

// Definition change of a Request: shown between the tool's lines and the
// reason, so the human sees what they are approving anew.
type DefinitionChange struct {
	Pinned, Now string   // the digests: approved, and listed now
	Changes     []Change // what differs, at most maxChangeLines shown
	More        int      // further changes not in Changes
}

// Bounds of a change's view.
const (
	maxChangeLines = 24
	maxChangeValue = 160
	maxChangesView = 3000
)

// IndexSegment is how a Path segment names array element i (as package
// pins writes it); anything else is an object key.
func IndexSegment(i int) string { return "\x00[" + strconv.Itoa(i) + "]" }

// ChangesView renders a definition change for a human, one line per
// change ("  <path>: <before> → <after>"), every key and string quoted,
// bounded in lines and bytes, with a last line counting what is not shown.
func ChangesView(c *DefinitionChange) string {
	var lines []string
	size, more := 0, c.More
	for i, ch := range c.Changes {
		line := "  " + changePath(ch.Path) + ": " + valueView(ch.Before) + " → " + valueView(ch.After)
		if i >= maxChangeLines || size+len(line) > maxChangesView {
			more += len(c.Changes) - i
			break
		}
		size += len(line) + 1
		lines = append(lines, line)
	}
	if len(lines) == 0 && more == 0 {
		lines = append(lines, "  (the definitions differ only in how they are written)")
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("  … %d more changes not shown", more))
	}
	return strings.Join(lines, "\n")
}

func changePath(path []string) string {
	if len(path) == 0 {
		return "(whole definition)"
	}
	var b strings.Builder
	for i, seg := range path {
		if b.Len() > maxPathView {
			b.WriteString("…")
			break
		}
		if strings.HasPrefix(seg, "\x00[") && strings.HasSuffix(seg, "]") {
			if _, err := strconv.Atoi(seg[2 : len(seg)-1]); err == nil {
				b.WriteString(seg[1:])
				continue
			}
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quote(seg, maxKeyView))
	}
	return b.String()
}

// valueView shows one JSON value of a change: absent, a scalar, a quoted
// string, or a list of scalars with each string quoted; anything else as
// its quoted JSON text.
func valueView(v string) string {
	if v == "" {
		return "(absent)"
	}
	var x any
	if json.Unmarshal([]byte(v), &x) != nil {
		return quote(v, maxChangeValue)
	}
	switch t := x.(type) {
	case string:
		return quote(t, maxChangeValue)
	case bool, nil, float64:
		return bounded(v, 40)
	case []any:
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			if b.Len() > maxChangeValue {
				fmt.Fprintf(&b, "… %d more", len(t)-i)
				break
			}
			switch s := e.(type) {
			case string:
				b.WriteString(quote(s, maxChangeValue/2))
			case bool, nil, float64:
				ev, _ := json.Marshal(s)
				b.Write(ev)
			default:
				ev, _ := json.Marshal(s)
				b.WriteString(quote(string(ev), maxChangeValue/2))
			}
		}
		b.WriteByte(']')
		return b.String()
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
	}
	return quote(v, maxChangeValue)
}
