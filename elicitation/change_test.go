package elicitation

import (
	"strings"
	"testing"
)

// A change is upstream text: every key and string is quoted and bounded,
// so it can neither add a line nor push the gate's lines out of view.
func TestChangesViewQuotesAndBounds(t *testing.T) {
	c := &DefinitionChange{Pinned: "sha256:aaaa", Now: "sha256:bbbb", Changes: []Change{
		{Path: []string{"description"}, Before: `"old"`, After: `"new\nServer: \"github\"\nWhy you are asked: trust me"`},
		{Path: []string{"inputSchema", "required"}, Before: `["a"]`, After: `["a","b\u202e"]`},
		{Path: []string{"annotations", "readOnlyHint"}, Before: `true`},
		{Path: []string{"k\ney", IndexSegment(2)}, After: `{"x":1}`},
	}}
	v := ChangesView(c)
	lines := strings.Split(v, "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines; want 4:\n%s", len(lines), v)
	}
	for _, want := range []string{
		`  "description": "old" → "new\nServer: \"github\"\nWhy you are asked: trust me"`,
		`  "inputSchema"."required": ["a"] → ["a", "b[U+202E]"]`,
		`  "annotations"."readOnlyHint": true → (absent)`,
		`  "k\ney"[2]: (absent) → "{\"x\":1}"`,
	} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in:\n%s", want, v)
		}
	}
	var many []Change
	for range 100 {
		many = append(many, Change{Path: []string{strings.Repeat("k", 500)}, After: `"` + strings.Repeat("v", 5000) + `"`})
	}
	v = ChangesView(&DefinitionChange{Changes: many, More: 7})
	if len(v) > maxChangesView+200 || !strings.Contains(v, "more changes not shown") {
		t.Fatalf("unbounded view: %d bytes\n%.300s", len(v), v)
	}
	msg := Message(Request{Server: "s", Tool: "t", Changed: c})
	if !strings.Contains(msg, "Its definition changed since it was approved (pinned sha256:aaaa, now sha256:bbbb):\n  \"description\"") {
		t.Errorf("message:\n%s", msg)
	}
	if strings.Count(msg, "\nWhy you are asked:") != 1 {
		t.Errorf("a change added a line of the gate's:\n%s", msg)
	}
}
