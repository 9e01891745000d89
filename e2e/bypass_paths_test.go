package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// makeTree creates files (with their content) and symlinks (target starting
// with "->", relative to root when it starts with /) under root.
func makeTree(t *testing.T, root string, entries map[string]string) {
	t.Helper()
	for name, v := range entries {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		_, link := strings.CutPrefix(v, "->")
		switch {
		case !link && strings.HasSuffix(name, "/"):
			err := os.MkdirAll(p, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		case !link:
			if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, v := range entries {
		target, link := strings.CutPrefix(v, "->")
		if !link {
			continue
		}
		if strings.HasPrefix(target, "/") {
			target = filepath.Join(root, target)
		}
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// realTempDir is a temporary directory with its own symlinks resolved, so
// that paths under it read the same to the gate and to the servers.
func realTempDir(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Issue #8: the shipped developer.yaml in front of the reference
// filesystem server, which cleans paths lexically before it opens them. A
// write through `..` after a symlink that the kernel would keep inside the
// workspace lands outside it for the server; the gate now decides under
// both readings and refuses it, so nothing reaches the upstream's disk. The
// secrets rule holds for `.env/`, ~/.ssh itself and a symlink into ~/.ssh.
func TestBypassPathsDeveloperPolicy(t *testing.T) {
	t.Parallel()
	needNode(t)
	root := realTempDir(t)
	makeTree(t, root, map[string]string{
		"home/me/work/sub/dir/":    "",
		"home/me/work/deep":        "->/home/me/work/sub/dir",
		"home/me/work/keys":        "->/home/me/.ssh",
		"home/me/work/.env":        "API_TOKEN=from-dot-env",
		"home/me/.ssh/id_rsa":      "PRIVATE KEY MATERIAL",
		"home/me/work/sub/main.go": "package main",
	})
	src, err := os.ReadFile(filepath.Join("..", "policies", "developer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The policy's workspace, /home/me/work, moved under the temporary root.
	pol := strings.ReplaceAll(string(src), `"/home/me/work"`, `"`+root+`/home/me/work"`)
	if pol == string(src) {
		t.Fatal("developer.yaml no longer names /home/me/work; update this test")
	}
	// No elicitation capability: what the policy asks about is refused.
	g := gateCommand(t, map[string]server{"filesystem": filesystem(root)}, "--policy", writePolicy(t, pol))
	sess := g.connect(t, nil)

	work := root + "/home/me/work"
	res := call(t, sess, "filesystem__write_file", map[string]any{"path": work + "/sub/ok.txt", "content": "inside"})
	if res.IsError {
		t.Fatalf("a write inside the workspace was refused: %s", resultText(res))
	}
	if b, _ := os.ReadFile(work + "/sub/ok.txt"); string(b) != "inside" {
		t.Fatalf("the write inside the workspace did not reach the disk: %q", b)
	}

	// deep/../.. is the workspace for the kernel, its parent for the server.
	res = call(t, sess, "filesystem__write_file", map[string]any{"path": work + "/deep/../../escaped.txt", "content": "escaped"})
	if !res.IsError || !strings.Contains(resultText(res), "`..` applied before symlinks") {
		t.Errorf("a write through `..` after a symlink was not refused for the server's reading: %s", resultText(res))
	}
	for _, p := range []string{root + "/home/me/escaped.txt", work + "/escaped.txt"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written: the call reached the upstream", p)
		}
	}

	for _, c := range []struct {
		tool, path, secret string
	}{
		{"filesystem__read_text_file", work + "/.env/", "from-dot-env"},  // the server strips the slash
		{"filesystem__list_directory", root + "/home/me/.ssh", "id_rsa"}, // .ssh itself
		{"filesystem__read_text_file", work + "/keys/id_rsa", "PRIVATE"}, // a symlink into .ssh
		{"filesystem__read_text_file", root + "/home/me/.ssh/id_rsa", "PRIVATE"},
	} {
		res := call(t, sess, c.tool, map[string]any{"path": c.path})
		if !res.IsError || strings.Contains(resultText(res), c.secret) || !strings.Contains(resultText(res), "no-secret-files") {
			t.Errorf("%s %s: got %q; want a refusal by no-secret-files", c.tool, c.path, resultText(res))
		}
	}
}

// Issue #8: a deny on a directory is not walked around by
// <dir>/<file-symlink>/../<name>, which the kernel resolves elsewhere and
// the server opens inside the directory.
func TestBypassPathsDenyThroughFileSymlink(t *testing.T) {
	t.Parallel()
	needNode(t)
	root := realTempDir(t)
	makeTree(t, root, map[string]string{
		"etc/passwd":    "root:x:0:0:secret-entry",
		"etc/localtime": "->/zoneinfo/UTC",
		"zoneinfo/UTC":  "TZif",
	})
	pol := `version: 1
fallback: deny
allow: [mcp:filesystem:read_text_file]
rules:
  - name: never-etc
    match: mcp:filesystem:*
    when: path.within(args.path, "` + root + `/etc")
    action: deny
`
	g := gateCommand(t, map[string]server{"filesystem": filesystem(root)}, "--policy", writePolicy(t, pol))
	sess := g.connect(t, nil)
	if got := resultText(call(t, sess, "filesystem__read_text_file", map[string]any{"path": root + "/zoneinfo/UTC"})); got != "TZif" {
		t.Fatalf("an allowed read: %q", got)
	}
	res := call(t, sess, "filesystem__read_text_file", map[string]any{"path": root + "/etc/localtime/../passwd"})
	if !res.IsError || strings.Contains(resultText(res), "secret-entry") || !strings.Contains(resultText(res), "never-etc") {
		t.Errorf("/etc/<file>/../passwd: got %q; want a refusal by never-etc", resultText(res))
	}
}

// Issue #8: a resource deny holds for every spelling of a URI inside the
// denied tree; the upstream, which decodes and cleans file: URIs, never
// reads any of them.
func TestBypassPathsResourceURIForms(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	makeTree(t, root, map[string]string{
		"etc/passwd":    "root:x:0:0:secret-entry",
		"etc/localtime": "->/zoneinfo/UTC",
		"zoneinfo/UTC":  "TZif",
		"pub/readme":    "public text",
		"pub/etclink":   "->/etc",
	})
	events := filepath.Join(t.TempDir(), "events")
	pol := "version: 1\nfallback: deny\ndeny: [\"resource:files:file://" + root + "/etc/**\"]\n"
	g := gateCommand(t, map[string]server{"files": testserver("paths", "--events", events)}, "--policy", writePolicy(t, pol))
	sess := g.connect(t, nil)

	rr, err := sess.ReadResource(ctxT(t, 30*time.Second), &mcp.ReadResourceParams{URI: "file://" + root + "/pub/readme"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "public text" {
		t.Fatalf("an allowed resource: %v %+v", err, rr)
	}
	etc := strings.TrimSuffix(root, "/") + "/etc"
	for _, uri := range []string{
		"file://" + etc + "/passwd",
		"file://" + root + "/pub/../etc/passwd",
		"file://" + etc + "//passwd",
		"file://" + etc + "/./passwd",
		"file://" + root + "/%65tc/passwd",
		"file://" + etc + "%2Fpasswd",
		"file://" + etc + "/passwd#fragment",
		"file://" + etc + "/localtime/../passwd", // the server's reading only
		"file://" + root + "/pub/etclink/passwd", // a symlink into the tree
	} {
		rr, err := sess.ReadResource(ctxT(t, 30*time.Second), &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			t.Errorf("%s was read: %+v", uri, rr.Contents)
			continue
		}
		if !strings.Contains(err.Error(), "deny[0]") {
			t.Errorf("%s: %v; want a refusal by deny[0]", uri, err)
		}
	}
	b, _ := os.ReadFile(events)
	if strings.Count(string(b), "read ") != 1 || strings.Contains(string(b), "passwd") {
		t.Errorf("the upstream read more than the allowed resource:\n%s", b)
	}
}
