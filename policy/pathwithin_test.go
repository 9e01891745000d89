package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathWithinSymlinks builds a tree with symlinks in a temporary
// directory:
//
//	root/work/              the workspace
//	root/work/src/
//	root/work/out -> ../outside      a link leading out
//	root/work/self -> .              a link staying in
//	root/work/dangling -> ../outside/new.txt  (does not exist yet)
//	root/work/loop1 -> loop2, loop2 -> loop1
//	root/outside/
//	root/worklink -> work            a link to the workspace
//	root/outside/back -> ../work/src
func TestPathWithinSymlinks(t *testing.T) {
	dir := t.TempDir()
	// The temporary directory itself may sit behind a symlink (macOS /var).
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(work, "src"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(work, "out"):      "../outside",
		filepath.Join(work, "self"):     ".",
		filepath.Join(work, "dangling"): "../outside/new.txt",
		filepath.Join(work, "loop1"):    "loop2",
		filepath.Join(work, "loop2"):    "loop1",
		filepath.Join(root, "worklink"): "work",
		filepath.Join(outside, "back"):  "../work/src",
		filepath.Join(work, "abs"):      outside,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path, root string
		want       bool
		err        bool
	}{
		{work + "/src/main.go", work, true, false},
		{work, work, true, false},
		{work + "/new/deep/file", work, true, false},
		{work + "/out/secret", work, false, false},          // a link leading out
		{work + "/abs/secret", work, false, false},          // an absolute link leading out
		{work + "/out/../src/x", work, false, false},        // .. applies to the link's target: outside/../src
		{work + "/self/src/x", work, true, false},           // a link staying inside
		{work + "/src/../../outside/x", work, false, false}, // plain ..
		{work + "/dangling", work, false, false},            // creating through a dangling link writes outside
		{work + "/loop1/x", work, false, true},              // a loop cannot be resolved: an error
		{root + "/worklink/src/x", work, true, false},       // a link to the workspace
		{work + "/src/x", root + "/worklink", true, false},  // a root given through a link
		{outside + "/back/x", work, true, false},            // outside by name, inside by link
		{outside + "/back/../x", work, true, false},         // .. after the link: work/x
		{work + "/missing/../src/x", work, true, false},     // .. over a missing component
		{"src/main.go", work, false, true},                  // relative: an error, which fails closed
		{work + "/x", "work", false, true},                  // relative root: an error
		{"", work, false, true},
		{work + "/x", "/", true, false},
		{"/", work, false, false},
		{work + "shop/x", work, false, false}, // a sibling sharing the prefix
	}
	for _, tt := range tests {
		got, err := pathWithin(tt.path, tt.root, readKernel)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("pathWithin(%q, %q) = %v, %v; want %v, error %v", tt.path, tt.root, got, err, tt.want, tt.err)
		}
		if tt.err && strings.Contains(tt.path, "loop") && !errors.Is(err, errTooManyLinks) {
			t.Errorf("pathWithin(%q) error %v; want too many links", tt.path, err)
		}
	}

	// Through the policy: the same answers, and the loop fails closed.
	p := mustParse(t, `version: 1
fallback: ask
rules:
  - name: inside
    match: mcp:fs:write
    when: path.within(args.path, "`+work+`")
    action: allow
  - name: never-outside
    match: mcp:fs:read
    when: path.within(args.path, "`+outside+`")
    action: deny
`)
	arg := func(p string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"path": p})
		return b
	}
	for _, tt := range []struct {
		call Call
		want Verdict
	}{
		{Call{Server: "fs", Name: "write", Args: arg(work + "/src/x")}, Allow},
		{Call{Server: "fs", Name: "write", Args: arg(work + "/out/x")}, Ask},
		{Call{Server: "fs", Name: "write", Args: arg(work + "/loop1/x")}, Ask},
		{Call{Server: "fs", Name: "read", Args: arg(work + "/out/x")}, Deny},
		{Call{Server: "fs", Name: "read", Args: arg(work + "/loop1/x")}, Deny},
		{Call{Server: "fs", Name: "read", Args: arg(work + "/src/x")}, Ask},
	} {
		if d := p.Decide(tt.call); d.Verdict != tt.want {
			t.Errorf("%s %s -> %s (%s); want %s", tt.call.PolicyName(), tt.call.Args, d.Verdict, d.Reason, tt.want)
		}
	}
}
