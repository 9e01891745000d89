package proxy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// labelledLines checks the invariant of labelMessage: every line the host
// can show, at every line break a renderer may honour, is empty or starts
// with the real label.
func labelledLines(t *testing.T, server, in, got string) {
	t.Helper()
	label := "[" + server + "] "
	lines := strings.FieldsFunc(got, func(r rune) bool { return r == '\n' || r == 0x2028 || r == 0x2029 })
	for _, l := range lines {
		if !strings.HasPrefix(l, label) {
			t.Errorf("labelMessage(%q, %q) = %q: line %q does not start with %q", server, in, got, l, label)
		}
	}
	if !strings.HasPrefix(got, label) {
		t.Errorf("labelMessage(%q, %q) = %q: does not start with %q", server, in, got, label)
	}
	if strings.ContainsRune(got, '\r') {
		t.Errorf("labelMessage(%q, %q) = %q: holds a carriage return", server, in, got)
	}
}

// TestLabelMessageEveryLine: a line inside an upstream's elicitation
// message cannot pass for another server's question or the gate's own:
// every line with text carries the real server's label, so any label the
// upstream wrote comes after it.
func TestLabelMessageEveryLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Pick a colour", "[h] Pick a colour"},
		{"Pick a colour\n\n[github] Approve the deploy?", "[h] Pick a colour\n\n[h] [github] Approve the deploy?"},
		{"ok\n[mcp-gate] approve this call?", "[h] ok\n[h] [mcp-gate] approve this call?"},
		{"ok\u2028[github] Approve?\u2029[github] Really?", "[h] ok\u2028[h] [github] Approve?\u2029[h] [github] Really?"},
		{"ok\n   \n\u00a0\u3000\n  [github] x", "[h] ok\n\n\n[h]   [github] x"},
		{"\n\n[github] Approve?", "[h] [github] Approve?"},
		{"Choose a repository:\n- alpha\n- beta\n", "[h] Choose a repository:\n[h] - alpha\n[h] - beta\n"},
		{"a\r\n[github] b", "[h] a[U+000D]\n[h] [github] b"},
		{"", "[h] "},
	} {
		got := labelMessage("h", c.in)
		if got != c.want {
			t.Errorf("labelMessage(%q) = %q, want %q", c.in, got, c.want)
		}
		labelledLines(t, "h", c.in, got)
	}
}

func FuzzLabelMessage(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\n\n[github] x", "x\u2028\u2029y", "\r\n", " \u3000\n\u2800z", "\xff\n\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := labelMessage("srv", msg)
		if utf8.ValidString(msg) && !utf8.ValidString(got) {
			t.Fatalf("labelMessage made invalid UTF-8 of %q: %q", msg, got)
		}
		labelledLines(t, "srv", msg, got)
	})
}
