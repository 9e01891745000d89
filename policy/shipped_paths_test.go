package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/policies"
)

// TestShippedPoliciesPaths runs every shipped policy against the path cases
// that need real symlinks, which a case file cannot carry: a `.env`
// directory, ~/.ssh itself, a key inside it, a symlink into it,
// /etc/<file>/../passwd, and `..` through a symlink out of the directory
// the policy's path rules are about, under either reading.
//
// The policies name fixed directories (/home/me/work, /srv/shared); the
// test moves every absolute path literal of a policy under a temporary root
// where it builds the tree, so the policy decides exactly as it would on a
// machine with those directories.
func TestShippedPoliciesPaths(t *testing.T) {
	root := pathTree(t, map[string]string{
		"home/me/.ssh/id_rsa": "",
		"etc/passwd":          "",
		"etc/localtime":       "/zoneinfo/UTC",
		"zoneinfo/UTC":        "",
		"elsewhere/sub/":      "",
		// The workspace of developer.yaml and the shared directory of
		// locked-down.yaml, each with:
		"home/me/work/.env":          "",
		"home/me/work/keys":          "/home/me/.ssh",         // a symlink into ~/.ssh
		"home/me/work/sub/dir/":      "",                      //
		"home/me/work/deep":          "/home/me/work/sub/dir", // deep/../.. is work for the kernel only
		"home/me/work/out":           "/elsewhere/sub",        // out/.. is work for a normalising server only
		"srv/shared/.env":            "",
		"srv/shared/keys":            "/home/me/.ssh",
		"srv/shared/sub/dir/":        "",
		"srv/shared/deep":            "/srv/shared/sub/dir",
		"srv/shared/out":             "/elsewhere/sub",
		"home/me/work/sub/main.go":   "",
		"srv/shared/sub/handbook.md": "",
	})
	type want struct{ verdict, rule string }
	// Per policy: the directory its path rules are about, the tool those
	// rules govern, and the expected decisions of the cases below.
	shipped := map[string]struct {
		base, tool string
		want       map[string]want
	}{
		"developer.yaml": {"/home/me/work", "write_file", map[string]want{
			"env-dir": {"deny", "no-secret-files"}, "ssh-itself": {"deny", "no-secret-files"},
			"ssh-key": {"deny", "no-secret-files"}, "ssh-link": {"deny", "no-secret-files"},
			"ssh-batch":       {"deny", "no-secret-files-in-batches"},
			"etc-file-dotdot": {"allow", "allow[1]"}, "lexical-escape": {"ask", "fallback"},
			"kernel-escape": {"ask", "fallback"}, "inside": {"allow", "fs-writes-inside-workspace"},
		}},
		"read-only.yaml": {"/home/me/work", "write_file", map[string]want{
			"env-dir": {"deny", "no-secret-files"}, "ssh-itself": {"deny", "no-secret-files"},
			"ssh-key": {"deny", "no-secret-files"}, "ssh-link": {"deny", "no-secret-files"},
			"ssh-batch":       {"deny", "no-secret-files-in-batches"},
			"etc-file-dotdot": {"allow", "allow[1]"}, "lexical-escape": {"deny", "deny[4]"},
			"kernel-escape": {"deny", "deny[4]"}, "inside": {"deny", "deny[4]"},
		}},
		"locked-down.yaml": {"/srv/shared", "read_text_file", map[string]want{
			"env-dir": {"deny", "no-secret-files"}, "ssh-itself": {"deny", "no-secret-files"},
			"ssh-key": {"deny", "no-secret-files"}, "ssh-link": {"deny", "no-secret-files"},
			"ssh-batch":       {"deny", "fallback"},
			"etc-file-dotdot": {"deny", "fallback"}, "lexical-escape": {"deny", "fallback"},
			"kernel-escape": {"deny", "fallback"}, "inside": {"allow", "shared-reads"},
		}},
		"default.yaml": {"/home/me/work", "write_file", map[string]want{
			"env-dir": {"ask", "fallback"}, "ssh-itself": {"ask", "fallback"},
			"ssh-key": {"ask", "fallback"}, "ssh-link": {"ask", "fallback"},
			"ssh-batch":       {"ask", "fallback"},
			"etc-file-dotdot": {"ask", "fallback"}, "lexical-escape": {"ask", "fallback"},
			"kernel-escape": {"ask", "fallback"}, "inside": {"ask", "fallback"},
		}},
	}
	entries, err := policies.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		sp, ok := shipped[name]
		if !ok {
			t.Errorf("policies/%s has no path cases here; add it", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			src, err := policies.FS.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			moved := strings.ReplaceAll(string(src), `"/`, `"`+root+`/`)
			if strings.Contains(string(src), "path.within(") && moved == string(src) {
				t.Fatal("the policy has path.within conditions but no absolute path literal was moved")
			}
			p, _, err := Parse(name, []byte(moved), Options{})
			if err != nil {
				t.Fatal(err)
			}
			base := root + sp.base
			args := func(kv ...any) json.RawMessage {
				m := map[string]any{}
				for i := 0; i+1 < len(kv); i += 2 {
					m[kv[i].(string)] = kv[i+1]
				}
				b, _ := json.Marshal(m)
				return b
			}
			cases := []struct {
				id, tool string
				args     json.RawMessage
			}{
				{"env-dir", "read_text_file", args("path", base+"/.env/")},
				{"ssh-itself", "list_directory", args("path", root+"/home/me/.ssh")},
				{"ssh-key", "read_text_file", args("path", root+"/home/me/.ssh/id_rsa")},
				{"ssh-link", "read_text_file", args("path", base+"/keys/id_rsa")},
				{"ssh-batch", "read_multiple_files", args("paths", []string{base + "/sub/main.go", base + "/keys"})},
				{"etc-file-dotdot", "read_text_file", args("path", root+"/etc/localtime/../passwd")},
				{"lexical-escape", sp.tool, args("path", base+"/deep/../../escaped.txt", "content", "x")},
				{"kernel-escape", sp.tool, args("path", base+"/out/../escaped.txt", "content", "x")},
				{"inside", sp.tool, args("path", base+"/sub/main.go", "content", "x")},
			}
			if len(cases) != len(sp.want) {
				t.Fatalf("%d cases, %d expectations", len(cases), len(sp.want))
			}
			for _, c := range cases {
				w := sp.want[c.id]
				d := p.Decide(Call{Server: "filesystem", Name: c.tool, Args: c.args})
				if d.Verdict.String() != w.verdict || d.Rule != w.rule {
					t.Errorf("%s (%s %s): got %s by %s (%s); want %s by %s", c.id, c.tool, c.args, d.Verdict, d.Rule, d.Reason, w.verdict, w.rule)
				}
			}
		})
	}
}
