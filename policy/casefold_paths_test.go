package policy

import (
	"strings"
	"testing"
)

// Case-insensitive file systems (macOS, Windows) open .SSH as .ssh and
// /private/ETC as /private/etc: a deny on a name or a directory holds
// against another case, while an allow is never widened by it.
func TestPathReadingsFoldCase(t *testing.T) {
	if ok, err := pathHasSegment("/home/me/.SSH/id_rsa", []string{".ssh"}, readKernel); err != nil || ok {
		t.Errorf("exact reading: %v, %v", ok, err)
	}
	for _, r := range []reading{readKernelFold, readLexicalFold} {
		if ok, err := pathHasSegment("/home/me/.SSH/id_rsa", []string{".ssh", "*.env"}, r); err != nil || !ok {
			t.Errorf("%s: .SSH: %v, %v", r, ok, err)
		}
		if ok, err := pathHasSegment("/home/me/work/Prod.ENV", []string{".ssh", "*.env"}, r); err != nil || !ok {
			t.Errorf("%s: Prod.ENV: %v, %v", r, ok, err)
		}
		if ok, err := pathWithin("/private/ETC/passwd", "/private/etc", r); err != nil || !ok {
			t.Errorf("%s: /private/ETC: %v, %v", r, ok, err)
		}
	}
	p := mustParse(t, `version: 1
fallback: deny
allow: [mcp:fs:read]
rules:
  - name: secrets
    match: mcp:fs:*
    when: 'path.has_segment(args.path, [".ssh"])'
    action: deny
  - name: system
    match: mcp:fs:*
    when: 'path.within(args.path, "/private/etc")'
    action: deny
  - name: workspace-writes
    match: mcp:fs:write
    when: 'path.within(args.path, "/home/me/work")'
    action: allow
  - name: nothing-outside
    match: mcp:fs:move
    when: '!path.within(args.path, "/home/me/work")'
    action: deny
  - name: moves
    match: mcp:fs:move
    action: allow
`)
	for _, tt := range []struct {
		tool, path string
		want       Verdict
		rule       string
	}{
		{"read", "/home/me/.SSH/id_rsa", Deny, "secrets"},
		{"read", "/home/me/.Ssh", Deny, "secrets"},
		{"read", "/private/ETC/passwd", Deny, "system"},
		{"read", "/home/me/notes", Allow, "allow[0]"},
		// An allow needs every reading: the exact one does not put
		// WORK inside work, so the fallback denies.
		{"write", "/home/me/WORK/x", Deny, "fallback"},
		{"write", "/home/me/work/x", Allow, "workspace-writes"},
		{"move", "/home/me/WORK/x", Deny, "nothing-outside"},
	} {
		d := p.Decide(Call{Server: "fs", Name: tt.tool, Args: pathArgs("path", tt.path)})
		if d.Verdict != tt.want || d.Rule != tt.rule {
			t.Errorf("%s %s: %s by %s (%s); want %s by %s", tt.tool, tt.path, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule)
		}
		if tt.rule == "secrets" && !strings.Contains(d.Reason, "regardless of case") {
			t.Errorf("%s: the reason does not say which reading decided: %s", tt.path, d.Reason)
		}
	}
}

// The same readings take a name as Windows opens it: trailing dots and
// spaces and an NTFS stream do not make another name.
func TestPathReadingsWindowsNames(t *testing.T) {
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"/home/me/.ssh./id_rsa", true},
		{"/home/me/.ssh /id_rsa", true},
		{"/home/me/.ssh. . ./id_rsa", true},
		{"/home/me/work/secrets.env::$DATA", true},
		{"/home/me/work/prod.env.", true},
		{"/home/me/work/notes.txt", false},
		{"/home/me/...", false},
	} {
		got, err := pathHasSegment(tt.path, []string{".ssh", "*.env"}, readKernelFold)
		if err != nil || got != tt.want {
			t.Errorf("%q: %v, %v; want %v", tt.path, got, err, tt.want)
		}
	}
	if ok, err := pathWithin("/private/etc./passwd", "/private/etc", readLexicalFold); err != nil || !ok {
		t.Errorf("/private/etc./passwd: %v, %v", ok, err)
	}
}
