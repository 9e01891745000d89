package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pathTree builds a tree of directories, files and symlinks under a fresh
// temporary directory and returns its root with every symlink of the
// temporary directory itself resolved (macOS puts it behind /var).
// Entries ending in / are directories, entries with a target are symlinks,
// the rest empty files.
func pathTree(t testing.TB, entries map[string]string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Directories and files first, so that links may point at them.
	for name, target := range entries {
		if target != "" {
			continue
		}
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range entries {
		if target == "" {
			continue
		}
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(target, "/") {
			target = filepath.Join(root, target)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func pathArgs(kv ...string) json.RawMessage {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// The tree of the reading tests:
//
//	work/                  the workspace
//	work/sub/dir/
//	work/deep -> work/sub/dir          a link that stays inside
//	work/out -> elsewhere/sub          a link that leads out
//	elsewhere/sub/
//	elsewhere/back -> work/sub         a link outside that leads in
//	etc/passwd
//	etc/localtime -> zoneinfo/UTC      a file link out of etc, as on Linux
//	zoneinfo/UTC
func readingsTree(t testing.TB) string {
	return pathTree(t, map[string]string{
		"work/sub/dir/":  "",
		"work/deep":      "/work/sub/dir",
		"work/out":       "/elsewhere/sub",
		"elsewhere/sub/": "",
		"elsewhere/back": "/work/sub",
		"etc/passwd":     "",
		"etc/localtime":  "/zoneinfo/UTC",
		"zoneinfo/UTC":   "",
	})
}

// TestPathReadings: the two readings disagree exactly where `..` follows a
// symlink.
func TestPathReadings(t *testing.T) {
	root := readingsTree(t)
	work, etc := root+"/work", root+"/etc"
	for _, tt := range []struct {
		path, root      string
		kernel, lexical bool
	}{
		{work + "/sub/x", work, true, true},
		// Only the lexical reading escapes: deep/../.. is work for the
		// kernel but the workspace's parent for a normalising server.
		{work + "/deep/../../x", work, true, false},
		// Only the kernel reading escapes.
		{work + "/out/../x", work, false, true},
		// Outside by name, inside through the link for the kernel only.
		{root + "/elsewhere/back/../x", work, true, false},
		// /etc/<file>/../passwd: /etc/passwd to a normalising server,
		// zoneinfo/passwd to the kernel.
		{etc + "/localtime/../passwd", etc, false, true},
	} {
		for r, want := range []bool{tt.kernel, tt.lexical} {
			got, err := pathWithin(tt.path, tt.root, reading(r))
			if err != nil || got != want {
				t.Errorf("pathWithin(%q, %q) with %s = %v, %v; want %v", tt.path, tt.root, reading(r), got, err, want)
			}
		}
	}
}

// TestDecideBothReadings: a decision whose conditions read paths is the
// most restrictive over both readings, for allow and deny rules, negated
// conditions and the fallback, and names the rule that decided.
func TestDecideBothReadings(t *testing.T) {
	root := readingsTree(t)
	work, etc := root+"/work", root+"/etc"
	p := mustParse(t, `version: 1
fallback: ask
rules:
  - name: workspace-writes
    match: mcp:fs:write_file
    when: path.within(args.path, "`+work+`")
    action: allow
  - name: never-etc
    match: mcp:fs:read_file
    when: path.within(args.path, "`+etc+`")
    action: deny
  - name: nothing-outside
    match: mcp:fs:create_directory
    when: '!path.within(args.path, "`+work+`")'
    action: deny
  - name: moves-inside
    match: mcp:fs:move_file
    when: path.within(args.source, "`+work+`") && path.within(args.destination, "`+work+`")
    action: allow
  - name: ask-outside
    match: mcp:fs:edit_file
    when: '!path.within(args.path, "`+work+`")'
    action: ask
  - name: edits
    match: mcp:fs:edit_file
    action: allow
`)
	for _, tt := range []struct {
		name string
		tool string
		args json.RawMessage
		want Verdict
		rule string
		why  string // a piece of the reason
	}{
		{"inside under both readings", "write_file", pathArgs("path", work+"/sub/x"), Allow, "workspace-writes", ""},
		{"lexical-only escape of an allow", "write_file", pathArgs("path", work+"/deep/../../x"), Ask, "fallback", "`..` applied before symlinks"},
		{"lexical-only escape through a link outside", "write_file", pathArgs("path", root+"/elsewhere/back/../x"), Ask, "fallback", "`..` applied before symlinks"},
		{"kernel-only escape of an allow", "write_file", pathArgs("path", work+"/out/../x"), Ask, "fallback", "symlinks followed before `..`"},
		{"deny /etc/<file>/../passwd", "read_file", pathArgs("path", etc+"/localtime/../passwd"), Deny, "never-etc", "`..` applied before symlinks"},
		{"deny through a link into etc", "read_file", pathArgs("path", root+"/zoneinfo/../etc/passwd"), Deny, "never-etc", ""},
		{"negated deny, lexical-only escape", "create_directory", pathArgs("path", work+"/deep/../../x"), Deny, "nothing-outside", "`..` applied before symlinks"},
		{"negated deny, kernel-only escape", "create_directory", pathArgs("path", work+"/out/../x"), Deny, "nothing-outside", "symlinks followed before `..`"},
		{"negated deny, inside", "create_directory", pathArgs("path", work+"/sub/new"), Ask, "fallback", ""},
		{"both ends, one escapes lexically", "move_file", pathArgs("source", work+"/sub/a", "destination", work+"/deep/../../a"), Ask, "fallback", "`..` applied before symlinks"},
		{"negated ask beats an allow, lexical-only", "edit_file", pathArgs("path", work+"/deep/../../x"), Ask, "ask-outside", "`..` applied before symlinks"},
		{"negated ask, inside", "edit_file", pathArgs("path", work+"/sub/x"), Allow, "edits", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(Call{Server: "fs", Name: tt.tool, Args: tt.args})
			if d.Verdict != tt.want || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.why) {
				t.Errorf("got %s by %s (%s); want %s by %s with %q in the reason", d.Verdict, d.Rule, d.Reason, tt.want, tt.rule, tt.why)
			}
			if tt.why == "" && strings.Contains(d.Reason, "with paths read") {
				t.Errorf("reason %q names a reading although both agree", d.Reason)
			}
		})
	}
}

// TestDecideReadingsOnlyWhenPathsAreRead: a decision without a path
// condition is made once, so glob-only decisions stay free of allocations.
func TestDecideReadingsOnlyWhenPathsAreRead(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: ask
allow: [mcp:fs:read_file]
rules:
  - {match: mcp:fs:write_file, when: args.n > 1, action: allow}
  - {match: mcp:fs:edit_file, when: 'path.within(args.path, "/nonexistent-mcp-gate")', action: allow}
`)
	if n := testing.AllocsPerRun(100, func() { p.Decide(Call{Server: "fs", Name: "read_file"}) }); n != 0 {
		t.Errorf("a glob-only decision allocates %v times; want 0", n)
	}
	for _, tt := range []struct {
		tool  string
		args  string
		paths bool
	}{
		{"read_file", `{}`, false},
		{"write_file", `{"n":2}`, false},
		{"edit_file", `{"path":"/x"}`, true},
	} {
		ev := evaluation{args: []byte(tt.args), server: "fs", tool: tt.tool}
		p.decideOnce(KindTool, "fs", tt.tool, &ev)
		if ev.readPaths != tt.paths {
			t.Errorf("%s: readPaths %v; want %v", tt.tool, ev.readPaths, tt.paths)
		}
	}
}

// TestPathHasSegment: the segments of the resolved path and the names of
// the links followed, under each reading; relative paths fail.
func TestPathHasSegment(t *testing.T) {
	root := pathTree(t, map[string]string{
		"home/.ssh/id_rsa":      "",
		"home/work/.env":        "",
		"home/work/keys":        "/home/.ssh",
		"home/work/key":         "/home/.ssh/id_rsa",
		"home/work/sub/":        "",
		"home/work/up":          "/home/work/sub",
		"dot/ssh/id_rsa":        "",
		"other/.ssh":            "/dot/ssh",
		"home/work/out":         "/elsewhere/x",
		"elsewhere/x/":          "",
		"home/work/.ssh-backup": "",
		"home/.ssh/sub/":        "",
		"home/.ssh/link":        "/elsewhere/x",
		"home/work/keys2":       "/home/.ssh/sub",
	})
	names := []string{".ssh", "*.env"}
	for _, tt := range []struct {
		path            string
		kernel, lexical bool
	}{
		{root + "/home/.ssh", true, true},
		{root + "/home/.ssh/", true, true},
		{root + "/home/.ssh/id_rsa", true, true},
		{root + "/home/work/.env", true, true},
		{root + "/home/work/.env/", true, true},
		{root + "/home/work/prod.env", true, true},
		{root + "/home/work/keys/id_rsa", true, true},   // a link to the directory
		{root + "/home/work/key", true, true},           // a link to the file
		{root + "/other/.ssh/id_rsa", true, true},       // .ssh is itself a link
		{root + "/home/work/.ssh-backup", false, false}, // a name that only starts alike
		{root + "/home/work/main.go", false, false},
		// Only the lexical reading reaches .ssh: link/.. is elsewhere for
		// the kernel, .ssh for a normalising server.
		{root + "/home/.ssh/link/../id_rsa", false, true},
		// Only the kernel reading does: keys2/.. is .ssh for the kernel,
		// work for a normalising server.
		{root + "/home/work/keys2/../id_rsa", true, false},
		{root + "/home/work/up/../../.ssh/id_rsa", true, true},
	} {
		for r, want := range []bool{tt.kernel, tt.lexical} {
			got, err := pathHasSegment(tt.path, names, reading(r))
			if err != nil || got != want {
				t.Errorf("pathHasSegment(%q) with %s = %v, %v; want %v", tt.path, reading(r), got, err, want)
			}
		}
	}
	for _, rel := range []string{".ssh/id_rsa", "~/.ssh/id_rsa", ""} {
		if _, err := pathHasSegment(rel, names, readKernel); err == nil {
			t.Errorf("pathHasSegment(%q) succeeded; want an error (relative)", rel)
		}
	}
}

// TestHasSegmentCompileChecks: the names of path.has_segment are checked at
// load.
func TestHasSegmentCompileChecks(t *testing.T) {
	for _, tt := range []struct{ when, want string }{
		{`path.has_segment(args.path, args.names)`, "not a list of quoted names"},
		{`path.has_segment(args.path, [])`, "not a list of quoted names"},
		{`path.has_segment(args.path, [".ssh/"])`, "contains /"},
		{`path.has_segment(args.path, ["[.ssh"])`, "not a valid pattern"},
		{`path.has_segment(args.path, [".."])`, "can never be a segment"},
		{`path.has_segment(args.path, [".ssh", args.x])`, "expected type 'string'"},
		{`path.has_segment(args.path, [".ssh", ".env" + args.x])`, "not a quoted string"},
		{`path.has_segment(args.path, [1])`, "no matching overload"},
		{`path.has_segment(args.path)`, "no matching overload"},
	} {
		src := "version: 1\nfallback: ask\nrules:\n  - match: mcp:fs:x\n    when: '" + tt.when + "'\n    action: deny\n"
		_, _, err := Parse("p.yaml", []byte(src), Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v; want one containing %q", tt.when, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "p.yaml:5:") {
			t.Errorf("%s: err %v; want a position on line 5", tt.when, err)
		}
	}
	p := mustParse(t, "version: 1\nfallback: ask\nrules:\n  - match: mcp:fs:x\n    when: 'path.has_segment(args.path, [\".ssh\", \"*.env\", \"id_[rd]sa\"])'\n    action: deny\n")
	d := p.Decide(Call{Server: "fs", Name: "x", Args: pathArgs("path", "/nonexistent-mcp-gate/id_dsa")})
	if d.Verdict != Deny {
		t.Errorf("a name matching a class: %+v", d)
	}
	d = p.Decide(Call{Server: "fs", Name: "x", Args: pathArgs("path", "relative/.ssh")})
	if d.Verdict != Deny || !strings.Contains(d.Reason, "not absolute") {
		t.Errorf("a relative path: %+v; want deny because it is not absolute", d)
	}
}

// TestPathTooLong: a path that needs more steps than a real one fails,
// which a deny rule turns into a refusal.
func TestPathTooLong(t *testing.T) {
	long := "/" + strings.Repeat("tmp/../", maxSteps)
	for r := range reading(numReadings) {
		if r.lexical() {
			// Cleaned first: a normalising server reads it as "/x".
			if got, err := pathWithin(long+"x", "/x", r); err != nil || !got {
				t.Errorf("lexical: %v, %v", got, err)
			}
			continue
		}
		if _, err := pathWithin(long+"x", "/x", r); err == nil || !strings.Contains(err.Error(), "too many components") {
			t.Errorf("kernel: err %v; want too many components", err)
		}
	}
	p := mustParse(t, "version: 1\nfallback: ask\nrules:\n  - {match: mcp:fs:read, when: 'path.within(args.path, \"/etc\")', action: deny}\n")
	if d := p.Decide(Call{Server: "fs", Name: "read", Args: pathArgs("path", long+"etc/passwd")}); d.Verdict != Deny {
		t.Errorf("an overlong path: %+v; want deny", d)
	}
}
