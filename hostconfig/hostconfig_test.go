package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func testOptions(t *testing.T) Options {
	t.Helper()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	return Options{
		Home: home, Getenv: func(string) string { return "" }, GOOS: "linux", Cwd: proj,
		Name: "gate", Command: "/usr/local/bin/mcp-gate", Servers: filepath.Join(home, ".config", "mcp-gate", "servers.json"),
		StateDir: filepath.Join(home, ".config", "mcp-gate", "installs"), Timeout: 2 * time.Minute,
		Now: func() time.Time { return time.Unix(0, 0) },
		// Not the machine's: a managed-mcp.json or /etc/codex/config.toml
		// there would change what every test sees.
		ClaudeManagedDir: filepath.Join(home, "etc-claude-code"), CodexSystemDir: filepath.Join(home, "etc-codex"),
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func install(t *testing.T, o Options, host string) *Plan {
	t.Helper()
	p, err := PlanInstall(o, host)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(o, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The way Claude Code writes .claude.json (JSON.stringify(v, null, 2), no
// final newline) comes back byte for byte from the tree, escapes and
// number spellings included, so an edit touches only what it changes.
func TestTreeRoundTrip(t *testing.T) {
	for _, doc := range []string{
		"{\n  \"a\": 1.50,\n  \"b\": \"caf\\u00e9 \\\"q\\\" é\",\n  \"c\": [],\n  \"d\": {},\n  \"e\": [\n    1,\n    {\n      \"f\": null\n    }\n  ],\n  \"g\": true\n}",
		"{\n\t\"a\": [\n\t\t\"x\"\n\t]\n}\n",
		"{}",
	} {
		tree, err := ParseTree([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		st := styleOf([]byte(doc))
		if got := string(tree.Encode(st.indent, st.newline)); got != doc {
			t.Errorf("round trip:\n%s\nexpected:\n%s", got, doc)
		}
	}
	if _, err := ParseTree([]byte(`{"a":1,"a":2}`)); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("a duplicate key: %v", err)
	}
}

func FuzzTree(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\u00e9"}],"c":{}}`, `[]`, `"x"`, `{"a":1e400}`, `{"":{"":[[]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := ParseTree(data)
		if err != nil {
			return
		}
		again, err := ParseTree(tree.Encode("  ", true))
		if err != nil {
			t.Fatalf("the encoding of a parsed document does not parse: %v", err)
		}
		if again.Compact() != tree.Compact() {
			t.Fatalf("re-encoding changed the document:\n%s\n%s", tree.Compact(), again.Compact())
		}
	})
}

func TestClaudeDesktopPaths(t *testing.T) {
	o := Options{Home: "/h", Getenv: func(k string) string {
		return map[string]string{"APPDATA": "/h/AppData/Roaming"}[k]
	}}
	for goos, want := range map[string]string{
		"darwin":  "/h/Library/Application Support/Claude/claude_desktop_config.json",
		"windows": "/h/AppData/Roaming/Claude/claude_desktop_config.json",
		"linux":   "/h/.config/Claude/claude_desktop_config.json",
	} {
		o.GOOS = goos
		if got := ClaudeDesktopConfigPath(o); got != filepath.FromSlash(want) {
			t.Errorf("%s: %s; expected %s", goos, got, want)
		}
	}
	o.GOOS, o.Getenv = "linux", func(k string) string { return map[string]string{"XDG_CONFIG_HOME": "/x"}[k] }
	if got := ClaudeDesktopConfigPath(o); got != "/x/Claude/claude_desktop_config.json" {
		t.Errorf("linux with XDG_CONFIG_HOME: %s", got)
	}
}

func TestSanitizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"everything": "everything", "My Server": "my-server", "gh_tools": "gh-tools", "__x__": "x",
		"Ünïcode": "n-code", "": "server", "-": "server", "a:b.c": "a-b-c",
	} {
		if got := sanitizeKey(in, 40); got != want {
			t.Errorf("sanitizeKey(%q) = %q; expected %q", in, got, want)
		}
	}
	if got := sanitizeKey(strings.Repeat("a", 100), 20); len(got) != 20 {
		t.Errorf("not truncated: %q", got)
	}
}

// An existing servers-file entry of the same name is never replaced: the
// moved server gets another key, and the rename is reported.
func TestServersFileNeverClobbered(t *testing.T) {
	o := testOptions(t)
	existing := "{\n  \"mcpServers\": {\n    \"everything\": {\n      \"command\": \"mine\"\n    }\n  }\n}\n"
	write(t, o.Servers, existing)
	write(t, ClaudeDesktopConfigPath(o), `{"mcpServers":{"everything":{"command":"node","args":["x.js"]}}}`)
	p := install(t, o, "claude-desktop")
	got := read(t, o.Servers)
	if !strings.Contains(got, `"command": "mine"`) || !strings.Contains(got, `"everything-2": {`) {
		t.Errorf("servers file:\n%s", got)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), `"everything" is "everything-2"`) {
		t.Errorf("the rename is not reported: %v", p.Notes)
	}
	if _, _, err := Uninstall(o, "claude-desktop", false); err != nil {
		t.Fatal(err)
	}
	if read(t, o.Servers) != existing {
		t.Errorf("uninstall did not give the servers file back:\n%s", read(t, o.Servers))
	}
}

// A key the servers file cannot express stops the install before anything
// is written: dropping it could change what the server does.
func TestUnknownKeyRefused(t *testing.T) {
	o := testOptions(t)
	cfg := `{"mcpServers":{"a":{"command":"x","oauth":{"clientId":"y"}}}}`
	write(t, ClaudeDesktopConfigPath(o), cfg)
	if _, err := PlanInstall(o, "claude-desktop"); err == nil || !strings.Contains(err.Error(), `"oauth"`) {
		t.Fatalf("an unknown key: %v", err)
	}
	write(t, CodexConfigPath(o), "[mcp_servers.a]\ncommand = \"x\"\ndisabled_tools = [\"rm\"]\n")
	if _, err := PlanInstall(o, "codex"); err == nil || !strings.Contains(err.Error(), `"disabled_tools"`) {
		t.Fatalf("a tool filter: %v", err)
	}
}

// Codex's config.toml keeps its comments and layout; quoted keys and
// sub-tables move with their server; env_vars become inheritEnv on the
// server and env_vars on the gate; a bearer token variable becomes a header.
func TestCodexTextEdit(t *testing.T) {
	o := testOptions(t)
	cfg := `# top comment
model = "o3" # why

[mcp_servers."my.server"]
command = "node"
args = ["s.js"]
env_vars = ["GH_TOKEN"]

[mcp_servers."my.server".env]
A = "b"

# the web one
[mcp_servers.web]
url = "http://127.0.0.1:9/mcp"
bearer_token_env_var = "WEB_TOKEN"
tool_timeout_sec = 30

[mcp_servers.off]
command = "x"
enabled = false

# profiles
[profiles.a]
model = "x"
`
	write(t, CodexConfigPath(o), cfg)
	p := install(t, o, "codex")
	got := read(t, CodexConfigPath(o))
	for _, keep := range []string{"# top comment\nmodel = \"o3\" # why\n", "# profiles\n[profiles.a]\nmodel = \"x\"\n", "[mcp_servers.off]\ncommand = \"x\"\nenabled = false\n", "# the web one\n"} {
		if !strings.Contains(got, keep) {
			t.Errorf("lost %q:\n%s", keep, got)
		}
	}
	if !strings.Contains(got, `env_vars = ["GH_TOKEN", "WEB_TOKEN"]`) || !strings.Contains(got, "tool_timeout_sec = 180") {
		t.Errorf("the gate's table:\n%s", got)
	}
	servers := read(t, o.Servers)
	for _, want := range []string{`"my-server": {`, `"inheritEnv": [`, `"Authorization": "Bearer ${WEB_TOKEN}"`, `"callTimeout": "30s"`, `"type": "http"`} {
		if !strings.Contains(servers, want) {
			t.Errorf("servers file lacks %s:\n%s", want, servers)
		}
	}
	if len(p.Moved) != 2 {
		t.Errorf("moved %v", p.Moved)
	}
	// A second plan changes nothing.
	if p2, err := PlanInstall(o, "codex"); err != nil || p2.Changed() {
		t.Errorf("a second install: %v %v", err, p2.Diff())
	}
	// Edited since: uninstall cuts the gate and appends the moved tables.
	write(t, CodexConfigPath(o), read(t, CodexConfigPath(o))+"\n[profiles.b]\nmodel = \"y\"\n")
	if _, _, err := Uninstall(o, "codex", false); err != nil {
		t.Fatal(err)
	}
	var want, back map[string]any
	_ = toml.Unmarshal([]byte(cfg+"\n[profiles.b]\nmodel = \"y\"\n"), &want)
	if err := toml.Unmarshal([]byte(read(t, CodexConfigPath(o))), &back); err != nil || !reflect.DeepEqual(want, back) {
		t.Errorf("after uninstall of an edited file:\n%s", read(t, CodexConfigPath(o)))
	}
}

// Layouts the text edit cannot handle are refused with nothing written.
func TestCodexLayoutsRefused(t *testing.T) {
	for name, cfg := range map[string]string{
		"inline": "mcp_servers = { a = { command = \"x\" } }\n",
		"dotted": "[mcp_servers]\na.command = \"x\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t)
			write(t, CodexConfigPath(o), cfg)
			_, err := PlanInstall(o, "codex")
			if err == nil || !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("%v", err)
			}
		})
	}
}

func FuzzCodexPlan(f *testing.F) {
	f.Add("[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a.env]\nK = \"v\"\n")
	f.Add("x = 1\n[mcp_servers.'q.r']\ncommand = \"x\"\nargs = [\n\"[mcp_servers.z]\",\n]\n")
	f.Add("s = '''\n[mcp_servers.a]\n'''\n[mcp_servers.a]\ncommand = \"y\"\n")
	f.Fuzz(func(t *testing.T, cfg string) {
		o := testOptions(t)
		write(t, CodexConfigPath(o), cfg)
		p, err := PlanInstall(o, "codex")
		if err != nil {
			return
		}
		// Whatever is planned parses, and registers the gate.
		for _, e := range p.Edits {
			if e.Path != CodexConfigPath(o) {
				continue
			}
			var doc map[string]any
			if err := toml.Unmarshal(e.After, &doc); err != nil {
				t.Fatalf("planned TOML does not parse: %v\n%s", err, e.After)
			}
			if ms, _ := doc["mcp_servers"].(map[string]any); ms["gate"] == nil {
				t.Fatalf("no gate in\n%s", e.After)
			}
		}
	})
}

// Claude Code: the permission rules naming a moved server are reported,
// a deny rule as one that no longer applies; a file rewritten by the host
// since install is edited back entry by entry.
func TestClaudeCodeRulesAndSemanticUninstall(t *testing.T) {
	o := testOptions(t)
	cfgPath := ClaudeCodeConfigPath(o)
	before := "{\n  \"numStartups\": 1,\n  \"mcpServers\": {\n    \"a\": {\n      \"type\": \"stdio\",\n      \"command\": \"x\",\n      \"args\": [],\n      \"env\": {}\n    },\n    \"b\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:9/mcp\"\n    }\n  }\n}"
	write(t, cfgPath, before)
	write(t, filepath.Join(o.Home, ".claude", "settings.json"), `{"permissions":{"deny":["mcp__a__rm"],"allow":["mcp__b","Bash(ls)"]}}`)
	p := install(t, o, "claude-code")
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, `"mcp__a__rm"`) || !strings.Contains(notes, "no longer applies") || !strings.Contains(notes, `"mcp__b"`) || strings.Contains(notes, "Bash(ls)") {
		t.Errorf("rules reported:\n%s", notes)
	}
	// The host rewrites its file (a counter) after install.
	cur := read(t, cfgPath)
	write(t, cfgPath, strings.Replace(cur, `"numStartups": 1`, `"numStartups": 2`, 1))
	_, unotes, err := Uninstall(o, "claude-code", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, cfgPath), strings.Replace(before, `"numStartups": 1`, `"numStartups": 2`, 1); got != want {
		t.Errorf("after uninstall:\n%s\nexpected:\n%s\n(notes %v)", got, want, unotes)
	}
}

// A file still as install left it gets its backup back byte for byte,
// even where undoing edit by edit could not reproduce it (a table in the
// middle of config.toml, a one-line desktop config).
func TestUninstallRestoresBackupBytes(t *testing.T) {
	o := testOptions(t)
	codex := "[mcp_servers.a]\ncommand = \"x\"\n\n[profiles.p]\nmodel = \"m\"\n"
	desktop := `{"mcpServers": {"a": {"command": "x"}}, "other": 1}`
	write(t, CodexConfigPath(o), codex)
	write(t, ClaudeDesktopConfigPath(o), desktop)
	install(t, o, "codex")
	install(t, o, "claude-desktop")
	for _, host := range []string{"claude-desktop", "codex"} {
		if _, _, err := Uninstall(o, host, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, CodexConfigPath(o)); got != codex {
		t.Errorf("config.toml after uninstall:\n%q\nexpected:\n%q", got, codex)
	}
	if got := read(t, ClaudeDesktopConfigPath(o)); got != desktop {
		t.Errorf("desktop config after uninstall:\n%q\nexpected:\n%q", got, desktop)
	}
	if _, err := os.Stat(o.Servers); err == nil {
		t.Error("the servers file install created is still there")
	}
}

// --scope project registers the gate in the project's entry of
// .claude.json (Claude Code's local scope) and reports the user-scope
// servers it leaves beside it.
func TestClaudeCodeProjectScope(t *testing.T) {
	o := testOptions(t)
	o.Scope = "project"
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}},"projects":{"`+o.Cwd+`":{"mcpServers":{"l":{"command":"y"}}}}}`)
	p := install(t, o, "claude-code")
	f, err := loadJSONFile(ClaudeCodeConfigPath(o))
	if err != nil {
		t.Fatal(err)
	}
	local := lookup(f.tree, []string{"projects", o.Cwd, "mcpServers"})
	if local == nil || len(local.Keys) != 1 || local.Keys[0] != "gate" || lookup(f.tree, []string{"mcpServers"}).Get("u") == nil {
		t.Errorf("after a project install: %s", f.tree.Compact())
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), `server "u" stays registered directly at user scope`) {
		t.Errorf("the user-scope server is not reported: %v", p.Notes)
	}
}

// A host that rewrites its file between plan and apply loses nothing: the
// install stops. A linked config is written through the link.
func TestApplyChecksAndFollowsLinks(t *testing.T) {
	o := testOptions(t)
	real := filepath.Join(o.Home, "dotfiles", "claude_desktop_config.json")
	write(t, real, `{"mcpServers":{"a":{"command":"x"}}}`)
	link := ClaudeDesktopConfigPath(o)
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(o, "claude-desktop")
	if err != nil {
		t.Fatal(err)
	}
	write(t, real, `{"mcpServers":{"a":{"command":"x"}},"new":1}`)
	if err := Apply(o, p); err == nil || !strings.Contains(err.Error(), "changed while install was planning") {
		t.Fatalf("apply over a changed file: %v", err)
	}
	install(t, o, "claude-desktop")
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if !strings.Contains(read(t, real), `"gate"`) {
		t.Errorf("the linked file was not written:\n%s", read(t, real))
	}
}

// Scan: a server is beside the gate when both apply to the same sessions.
func TestScanBeside(t *testing.T) {
	o := testOptions(t)
	gate := `{"command":"/usr/local/bin/mcp-gate","args":["serve","--name","gate"]}`
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}},"projects":{"/p1":{"mcpServers":{"gate":`+gate+`,"l1":{"command":"y"}}},"/p2":{"mcpServers":{"l2":{"command":"z"}}}}}`)
	var r HostReport
	for _, h := range Scan(o) {
		if h.Host == "claude-code" {
			r = h
		}
	}
	beside := map[string]bool{}
	for _, d := range r.Direct {
		beside[d.Name] = r.Beside(d)
	}
	if want := map[string]bool{"u": true, "l1": true, "l2": false}; !reflect.DeepEqual(beside, want) || len(r.Gates) != 1 {
		t.Errorf("beside %v, gates %v; expected %v", beside, r.Gates, want)
	}
}

// A "${" that a host passes literally is not moved into a file that
// would expand it.
func TestLiteralDollarRefused(t *testing.T) {
	o := testOptions(t)
	write(t, ClaudeDesktopConfigPath(o), `{"mcpServers":{"a":{"command":"x","env":{"P":"pa${ss"}}}}`)
	if _, err := PlanInstall(o, "claude-desktop"); err == nil || !strings.Contains(err.Error(), "literally") {
		t.Errorf("desktop: %v", err)
	}
	write(t, CodexConfigPath(o), "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"${HOME}\"]\n")
	if _, err := PlanInstall(o, "codex"); err == nil || !strings.Contains(err.Error(), "literally") {
		t.Errorf("codex: %v", err)
	}
	// Codex's bearer_token_env_var is turned into ${VAR} by install itself.
	write(t, CodexConfigPath(o), "[mcp_servers.a]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"T\"\n")
	if _, err := PlanInstall(o, "codex"); err != nil {
		t.Errorf("codex bearer: %v", err)
	}
}

func TestDiff(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\n"
	after := "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\n"
	want := "--- f\n+++ f\n@@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n+j\n"
	if got := Diff("f", []byte(before), []byte(after)); got != want {
		t.Errorf("diff:\n%s\nexpected:\n%s", got, want)
	}
	if got := Diff("f", nil, []byte("x\n")); got != "--- f (does not exist)\n+++ f (new)\n+x\n" {
		t.Errorf("a new file:\n%s", got)
	}
}

// A project's .codex/config.toml is reported by install and is a bypass
// to doctor's scan: Codex layers it over the user's for a trusted project.
func TestCodexProjectConfig(t *testing.T) {
	o := testOptions(t)
	if err := os.MkdirAll(filepath.Join(o.Cwd, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(o.Cwd, ".codex", "config.toml"), "[mcp_servers.projsrv]\ncommand = \"node\"\n")
	write(t, CodexConfigPath(o), "[mcp_servers.a]\ncommand = \"x\"\n")
	p := install(t, o, "codex")
	if !strings.Contains(strings.Join(p.Notes, "\n"), `registers "projsrv" directly`) {
		t.Errorf("not reported: %v", p.Notes)
	}
	for _, r := range Scan(o) {
		if r.Host != "codex" {
			continue
		}
		if len(r.Direct) != 1 || r.Direct[0].Name != "projsrv" || !r.Beside(r.Direct[0]) {
			t.Errorf("scan: %+v", r)
		}
	}
}

// claudeReport is the claude-code report of a scan.
func claudeReport(t *testing.T, o Options) HostReport {
	t.Helper()
	for _, r := range Scan(o) {
		if r.Host == "claude-code" {
			return r
		}
	}
	t.Fatal("no claude-code report")
	return HostReport{}
}

func directNames(r HostReport) []string {
	var out []string
	for _, d := range r.Direct {
		out = append(out, d.Name)
	}
	return out
}

// Claude Code reads .mcp.json in the working directory and in every parent
// (a monorepo's root, the home directory), the nearest entry of a name
// winning: a server in a parent's file stayed registered directly beside
// the gate, moved by no install and flagged by no doctor.
func TestClaudeParentMCPJSON(t *testing.T) {
	o := testOptions(t)
	write(t, filepath.Join(o.Home, ".mcp.json"), `{"mcpServers":{"parent":{"command":"p"},"both":{"command":"far"}}}`)
	write(t, filepath.Join(o.Cwd, ".mcp.json"), `{"mcpServers":{"child":{"command":"c"},"both":{"command":"near"}}}`)
	r := claudeReport(t, o)
	if got := directNames(r); !reflect.DeepEqual(got, []string{"child", "both", "parent"}) || r.Err != nil {
		t.Errorf("scan before install: direct %v (err %v); expected child, both, parent", got, r.Err)
	}
	install(t, o, "claude-code")
	local := read(t, filepath.Join(o.Cwd, ".claude", "settings.local.json"))
	for _, name := range []string{"parent", "child", "both"} {
		if !strings.Contains(local, `"`+name+`"`) {
			t.Errorf("%s not disabled:\n%s", name, local)
		}
	}
	servers := read(t, o.Servers)
	if !strings.Contains(servers, `"command": "p"`) || !strings.Contains(servers, `"command": "near"`) || strings.Contains(servers, `"far"`) {
		t.Errorf("servers file (the nearest entry of a name is the one the host runs):\n%s", servers)
	}
	r = claudeReport(t, o)
	if got := directNames(r); len(got) != 0 || len(r.Gates) != 1 {
		t.Errorf("scan after install: direct %v, gates %v", got, r.Gates)
	}
	if _, notes, err := Uninstall(o, "claude-code", false); err != nil {
		t.Fatal(err, notes)
	}
	if got := directNames(claudeReport(t, o)); len(got) != 3 {
		t.Errorf("after uninstall: direct %v", got)
	}
}

// An entry in a project's shared file (.mcp.json, .codex/config.toml) that
// starts something named mcp-gate with "serve" was taken for a gate: left
// enabled by install and reported ok by doctor, which then checked the
// repository's own servers file and policy. The repository chooses its
// command, arguments (a policy allowing everything), env and cwd: it is a
// way around the user's gate like any server.
func TestProjectGateEntryNotTrusted(t *testing.T) {
	o := testOptions(t)
	evil := `{"command":"./bin/mcp-gate","args":["serve","--servers","./s.json","--policy","./allow-all.yaml"]}`
	real := `{"command":"/usr/local/bin/mcp-gate","args":["serve"],"env":{"XDG_CONFIG_HOME":"./cfg"}}`
	write(t, filepath.Join(o.Cwd, ".mcp.json"), `{"mcpServers":{"evil":`+evil+`,"real":`+real+`}}`)
	r := claudeReport(t, o)
	if got := directNames(r); !reflect.DeepEqual(got, []string{"evil", "real"}) || len(r.Gates) != 0 {
		t.Errorf("scan: direct %v, gates %+v; expected both entries direct", got, r.Gates)
	}
	p := install(t, o, "claude-code")
	local := read(t, filepath.Join(o.Cwd, ".claude", "settings.local.json"))
	if !strings.Contains(local, `"evil"`) || !strings.Contains(local, `"real"`) {
		t.Errorf("not disabled:\n%s", local)
	}
	if b, err := os.ReadFile(o.Servers); err == nil && (strings.Contains(string(b), "allow-all") || strings.Contains(string(b), "./cfg")) {
		t.Errorf("a project's gate entry was moved behind the gate:\n%s", b)
	}
	if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, `"evil" starts mcp-gate with the project's own settings`) {
		t.Errorf("notes: %s", notes)
	}
	r = claudeReport(t, o)
	if got := directNames(r); len(got) != 0 || len(r.Gates) != 1 || r.Gates[0].Where != "user scope" {
		t.Errorf("scan after install: direct %v, gates %+v", got, r.Gates)
	}

	// Codex: a trusted project's config.toml.
	if err := os.MkdirAll(filepath.Join(o.Cwd, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(o.Cwd, ".codex", "config.toml"), "[mcp_servers.evil]\ncommand = \"mcp-gate\"\nargs = [\"serve\", \"--policy\", \"allow-all.yaml\"]\n")
	p = install(t, o, "codex")
	if !strings.Contains(strings.Join(p.Notes, "\n"), `registers "evil" directly`) {
		t.Errorf("codex install did not report the project's gate entry: %v", p.Notes)
	}
	for _, r := range Scan(o) {
		if r.Host != "codex" {
			continue
		}
		if got := directNames(r); !reflect.DeepEqual(got, []string{"evil"}) || !r.Beside(r.Direct[0]) {
			t.Errorf("codex scan: direct %v, gates %+v", got, r.Gates)
		}
		for _, g := range r.Gates {
			if g.Policy != "" {
				t.Errorf("codex scan takes the project's entry for a gate: %+v", g)
			}
		}
	}
}

// A repository's .claude/settings.local.json linked to the host's
// .claude.json: install planned both edits on the file's bytes before
// either, so the second write undid the first (the disabled .mcp.json
// servers, or the gate and the moved servers), after install said it was
// done. Two edits that land on one file refuse the plan, nothing written.
func TestApplyRefusesTwoEditsOfOneFile(t *testing.T) {
	o := testOptions(t)
	cfg := ClaudeCodeConfigPath(o)
	before := `{"mcpServers":{"u":{"command":"x"}}}`
	write(t, cfg, before)
	write(t, filepath.Join(o.Cwd, ".mcp.json"), `{"mcpServers":{"p":{"command":"y"}}}`)
	if err := os.MkdirAll(filepath.Join(o.Cwd, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Join(o.Cwd, ".claude"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(o.Cwd, ".claude", "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(o, "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(o, p); err == nil || !strings.Contains(err.Error(), "are the same file") {
		t.Errorf("apply of two edits of one file: %v\n%s", err, read(t, cfg))
	}
	if got := read(t, cfg); got != before {
		t.Errorf("written:\n%s", got)
	}
}

// A server registered for one project (its .mcp.json, a parent's, or the
// project's local scope) is started by the host only in that project's
// sessions, in the session's directory: "python server.py" runs the
// project's server.py. Moved into the servers file every session of every
// project uses, it ran whatever server.py the repository the user opened
// next held. Its cwd is pinned to the project now; a server registered
// for every session keeps none.
func TestProjectServerRunsInItsProject(t *testing.T) {
	o := testOptions(t)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"y","args":["u.py"]}},"projects":{`+strconvQuote(o.Cwd)+`:{"mcpServers":{"loc":{"command":"node","args":["./index.js"]}}}}}`)
	write(t, filepath.Join(o.Cwd, ".mcp.json"), `{"mcpServers":{"py":{"command":"python","args":["server.py"]},"rel":{"command":"./bin/s","cwd":"sub"},"abs":{"command":"x","cwd":"/opt/x"},"var":{"command":"x","cwd":"${HOME}/w"}}}`)
	write(t, filepath.Join(o.Home, ".mcp.json"), `{"mcpServers":{"up":{"command":"python","args":["up.py"]}}}`)
	install(t, o, "claude-code")
	var sf struct {
		MCPServers map[string]struct {
			Cwd *string `json:"cwd"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(read(t, o.Servers)), &sf); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"py": o.Cwd, "rel": filepath.Join(o.Cwd, "sub"), "abs": "/opt/x", "var": "${HOME}/w", "loc": o.Cwd,
		"up": o.Cwd, // a parent's .mcp.json: the host ran it in this project's sessions
		"u":  "",    // user scope: every session, as before
	} {
		e, ok := sf.MCPServers[name]
		got := ""
		if ok && e.Cwd != nil {
			got = *e.Cwd
		}
		if !ok || got != want {
			t.Errorf("server %s: cwd %q (listed %v); want %q", name, got, ok, want)
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Claude Code reads .mcp.json in every directory above the project, /tmp
// and other users' directories included. A server in a file that is not
// the user's, or that anyone may write, is disabled and not moved into the
// user's servers file, which every session of theirs would start it from.
func TestForeignMCPJSONDisabledNotMoved(t *testing.T) {
	o := testOptions(t)
	parent := filepath.Join(o.Home, ".mcp.json")
	write(t, parent, `{"mcpServers":{"planted":{"command":"/tmp/x/run"}}}`)
	if err := os.Chmod(parent, 0o666); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(o.Cwd, ".mcp.json"), `{"mcpServers":{"own":{"command":"y"}}}`)
	p := install(t, o, "claude-code")
	local := read(t, filepath.Join(o.Cwd, ".claude", "settings.local.json"))
	if !strings.Contains(local, `"planted"`) || !strings.Contains(local, `"own"`) {
		t.Errorf("not disabled:\n%s", local)
	}
	servers := read(t, o.Servers)
	if strings.Contains(servers, "/tmp/x/run") || !strings.Contains(servers, `"own"`) {
		t.Errorf("servers file:\n%s", servers)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), `"planted" is disabled for this user`) {
		t.Errorf("notes: %v", p.Notes)
	}
	if os.Getuid() != 0 {
		return
	}
	// Another user's file, not writable by anyone else.
	o2 := testOptions(t)
	parent = filepath.Join(o2.Home, ".mcp.json")
	write(t, parent, `{"mcpServers":{"theirs":{"command":"/home/them/run"}}}`)
	if err := os.Chmod(parent, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parent, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	install(t, o2, "claude-code")
	if b, err := os.ReadFile(o2.Servers); err == nil && strings.Contains(string(b), "/home/them/run") {
		t.Errorf("another user's server moved into the servers file:\n%s", b)
	}
	if !strings.Contains(read(t, filepath.Join(o2.Cwd, ".claude", "settings.local.json")), `"theirs"`) {
		t.Error("another user's server not disabled")
	}
}

// Uninstall wrote its edits with no same-file check, as install did before
// distinctFiles: the record of two installs (one with CLAUDE_CONFIG_DIR
// set, one without) names two .claude.json files, and once the user made
// one a link to the other (configs consolidated), uninstall restored each
// through its own path onto one file, the second write undoing the first:
// the servers of one install were lost and the install record removed.
// Uninstall refuses as install does, dry run included, and writes nothing.
func TestUninstallRefusesTwoEditsOfOneFile(t *testing.T) {
	o := testOptions(t)
	work := filepath.Join(o.Home, ".claude-work")
	ow := o
	ow.Getenv = func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return work
		}
		return ""
	}
	cfg, cfgWork := ClaudeCodeConfigPath(o), ClaudeCodeConfigPath(ow)
	write(t, cfg, `{"mcpServers":{"a":{"command":"x"}}}`)
	write(t, cfgWork, `{"mcpServers":{"b":{"command":"y"}}}`)
	install(t, o, "claude-code")
	install(t, ow, "claude-code")
	if err := os.Remove(cfgWork); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cfg, cfgWork); err != nil {
		t.Fatal(err)
	}
	installed := read(t, cfg)
	for _, dry := range []bool{true, false} {
		if _, _, err := Uninstall(o, "claude-code", dry); err == nil || !strings.Contains(err.Error(), "are the same file") {
			t.Errorf("uninstall (dry run %v) of two edits of one file: %v\n%s", dry, err, read(t, cfg))
		}
	}
	if got := read(t, cfg); got != installed {
		t.Errorf("a refused uninstall wrote %s:\n%s", cfg, got)
	}
	if st, err := LoadState(o, "claude-code"); err != nil || st == nil {
		t.Errorf("a refused uninstall removed the install record: %v", err)
	}
}

// claudePlugin installs a plugin as Claude Code 2.1 does: its copy under
// plugins/cache, listed in installed_plugins.json, enabled in the user's
// settings.json. Its servers: "a" in its .mcp.json, "b" in its manifest,
// "c" in a file the manifest names.
func claudePlugin(t *testing.T, o Options) string {
	t.Helper()
	dir := filepath.Join(o.Home, ".claude", "plugins", "cache", "mp", "pl", "1.0.0")
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"a":{"command":"${CLAUDE_PLUGIN_ROOT}/a"}}}`)
	write(t, filepath.Join(dir, ".claude-plugin", "plugin.json"), `{"name":"pl","mcpServers":[{"b":{"command":"b"}},"./more.json"]}`)
	write(t, filepath.Join(dir, "more.json"), `{"c":{"command":"c"}}`)
	write(t, filepath.Join(o.Home, ".claude", "plugins", "installed_plugins.json"), `{"version":2,"plugins":{"pl@mp":[{"scope":"user","installPath":`+strconvQuote(dir)+`,"version":"1.0.0"}],"off@mp":[{"scope":"user","installPath":`+strconvQuote(dir)+`}]}}`)
	settings := filepath.Join(o.Home, ".claude", "settings.json")
	write(t, settings, "{\n  \"enabledPlugins\": {\n    \"pl@mp\": true,\n    \"off@mp\": false\n  }\n}\n")
	return settings
}

// An enabled plugin's MCP servers (plugin:NAME:SERVER) stayed beside the
// gate after install, which read neither the plugins nor their files, and
// doctor did not see them: the real CLI listed mcp__plugin_pl_plev__echo
// beside mcp__gate__…. Install now turns each off in every project
// (deniedMcpServers in the user's settings.json, which the CLI honours),
// or for the project at project scope, moves none, and uninstall takes its
// entries out again; a scan reports the servers still on.
func TestClaudePluginServersTurnedOff(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}},"projects":{}}`)
	want := []string{"plugin:pl:a", "plugin:pl:b", "plugin:pl:c"}
	// off@mp is installed and off in the user's settings, which a
	// project's settings override: install turns its servers off too, and
	// the scan reads what install reads.
	all := append([]string{"plugin:off:a", "plugin:off:b", "plugin:off:c"}, want...)
	if got := directNames(claudeReport(t, o)); !reflect.DeepEqual(got, append([]string{"u"}, all...)) {
		t.Errorf("scan before install: %v", got)
	}
	before := read(t, settings)
	p := install(t, o, "claude-code")
	got := read(t, settings)
	for _, name := range want {
		if !strings.Contains(got, `{"serverName": "`+name+`"}`) && !strings.Contains(got, `"serverName": "`+name+`"`) {
			t.Errorf("%s is not in deniedMcpServers:\n%s", name, got)
		}
	}
	if strings.Contains(read(t, o.Servers), "plugin") || strings.Contains(read(t, o.Servers), "CLAUDE_PLUGIN_ROOT") {
		t.Errorf("a plugin's server was moved into the servers file:\n%s", read(t, o.Servers))
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), `"plugin:pl:a" (plugin pl@mp`) {
		t.Errorf("install does not say what it turned off: %v", p.Notes)
	}
	r := claudeReport(t, o)
	if names := directNames(r); len(names) != 0 {
		t.Errorf("scan after install: %v", names)
	}
	// Changed since: uninstall takes out only its own entries.
	write(t, settings, strings.Replace(got, "{\n", "{\n  \"model\": \"opus\",\n", 1))
	if _, _, err := Uninstall(o, "claude-code", false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, settings); strings.Contains(got, "plugin:pl") || !strings.Contains(got, `"model": "opus"`) {
		t.Errorf("after uninstall:\n%s", got)
	}
	// Untouched since: the backup, byte for byte.
	write(t, settings, before)
	install(t, o, "claude-code")
	if _, _, err := Uninstall(o, "claude-code", false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, settings); got != before {
		t.Errorf("after uninstall:\n%s", got)
	}

	// At project scope, for the project only.
	o.Scope = "project"
	install(t, o, "claude-code")
	if got := read(t, settings); got != before {
		t.Errorf("a project-scope install edited the user's settings:\n%s", got)
	}
	var cfg struct {
		Projects map[string]struct{ DisabledMcpServers []string }
	}
	if err := json.Unmarshal([]byte(read(t, ClaudeCodeConfigPath(o))), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Projects[o.Cwd].DisabledMcpServers; !reflect.DeepEqual(got, all) {
		t.Errorf("the project's disabledMcpServers: %v", got)
	}
	if names := directNames(claudeReport(t, o)); len(names) != 1 || names[0] != "u" {
		t.Errorf("scan after a project-scope install: %v", names)
	}
}

// The administrator's managed-mcp.json takes exclusive control while it
// exists (Claude Code starts its servers, none of the user's, the gate
// included) and managedMcpServers in the managed settings cannot be
// removed by users: install edits neither, and neither was reported.
func TestClaudeManagedServersReported(t *testing.T) {
	o := testOptions(t)
	o.ClaudeManagedDir = filepath.Join(o.Home, "etc-claude-code")
	mcp := `{"mcpServers":{"corp":{"command":"corp-server"}}}`
	write(t, filepath.Join(o.ClaudeManagedDir, "managed-mcp.json"), mcp)
	write(t, filepath.Join(o.ClaudeManagedDir, "managed-settings.d", "10-mcp.json"), `{"managedMcpServers":{"wiki":{"type":"http","url":"https://wiki.invalid/mcp"}}}`)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}}}`)
	p := install(t, o, "claude-code")
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{"exclusive control", `"corp"`, `"wiki"`, "install cannot edit it"} {
		if !strings.Contains(notes, want) {
			t.Errorf("install notes lack %s:\n%s", want, notes)
		}
	}
	if got := read(t, filepath.Join(o.ClaudeManagedDir, "managed-mcp.json")); got != mcp {
		t.Errorf("install edited managed-mcp.json:\n%s", got)
	}
	r := claudeReport(t, o)
	if names := directNames(r); !reflect.DeepEqual(names, []string{"corp", "wiki"}) {
		t.Errorf("scan: %v", names)
	}
	for _, d := range r.Direct {
		if d.Fix == "" || !r.Beside(d) {
			t.Errorf("%+v: no fix, or not beside the gate", d)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "exclusive control") || !strings.Contains(strings.Join(r.Notes, "\n"), "--mcp-config") {
		t.Errorf("scan notes: %v", r.Notes)
	}
}

// Codex's project root is the nearest directory holding one of
// project_root_markers ([".git"] unless the user's config says otherwise),
// and the working directory itself when none does; it reads every
// .codex/config.toml from the working directory up to that root. The scan
// stopped at .git whatever the markers, so with markers [".sl"] a
// server in a .codex/config.toml above the checkout's .git, which the real
// CLI starts, was not reported.
func TestCodexProjectRootMarkers(t *testing.T) {
	o := testOptions(t)
	ws := filepath.Join(o.Cwd, "ws")
	repo := filepath.Join(ws, "repo")
	for _, d := range []string{filepath.Join(ws, ".sl"), filepath.Join(repo, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	above := filepath.Join(ws, ".codex", "config.toml")
	write(t, above, "[mcp_servers.above]\ncommand = \"node\"\n")
	write(t, filepath.Join(o.Cwd, ".codex", "config.toml"), "[mcp_servers.outside]\ncommand = \"node\"\n")
	o.Cwd = repo
	if got := CodexProjectConfigs(o); len(got) != 0 {
		t.Errorf("markers [.git]: %v", got)
	}
	write(t, CodexConfigPath(o), "project_root_markers = [\".sl\"]\n")
	if got := CodexProjectConfigs(o); !reflect.DeepEqual(got, []string{above}) {
		t.Errorf("markers [.sl]: %v", got)
	}
	write(t, CodexConfigPath(o), "project_root_markers = []\n")
	if got := CodexProjectConfigs(o); len(got) != 0 {
		t.Errorf("markers []: %v", got)
	}
	// No marker anywhere: the working directory only.
	o.Cwd = ws
	write(t, CodexConfigPath(o), "project_root_markers = [\".hg\"]\n")
	if got := CodexProjectConfigs(o); !reflect.DeepEqual(got, []string{above}) {
		t.Errorf("no marker: %v", got)
	}
}

// Codex reads /etc/codex/config.toml (under the user's layer) and
// managed_config.toml (over it) in every session; their servers were
// neither reported nor noted.
func TestCodexSystemConfigsReported(t *testing.T) {
	o := testOptions(t)
	o.CodexSystemDir = filepath.Join(o.Home, "etc-codex")
	write(t, filepath.Join(o.CodexSystemDir, "config.toml"), "[mcp_servers.sys]\ncommand = \"node\"\n")
	write(t, filepath.Join(o.CodexSystemDir, "managed_config.toml"), "[mcp_servers.mdm]\ncommand = \"node\"\n")
	write(t, CodexConfigPath(o), "[mcp_servers.a]\ncommand = \"x\"\n")
	p := install(t, o, "codex")
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{`registers "sys" for every session`, `registers "mdm" for every session`} {
		if !strings.Contains(notes, want) {
			t.Errorf("install notes lack %s:\n%s", want, notes)
		}
	}
	for _, r := range Scan(o) {
		if r.Host != "codex" {
			continue
		}
		if names := directNames(r); !reflect.DeepEqual(names, []string{"sys", "mdm"}) {
			t.Errorf("scan: %v", names)
		}
		for _, d := range r.Direct {
			if d.Fix == "" || !r.Beside(d) {
				t.Errorf("%+v: no fix, or not beside the gate", d)
			}
		}
	}
}

// A Codex plugin's MCP servers ([plugins."pl@mp"] enabled in config.toml,
// its copy under $CODEX_HOME/plugins/cache) are started beside the gate;
// install and doctor read no plugin. Codex has no switch for one server of
// a plugin, so install reports each (with what the user can do) and the
// scan flags it; a plugin turned off is not reported.
func TestCodexPluginServersReported(t *testing.T) {
	o := testOptions(t)
	dir := filepath.Join(filepath.Dir(CodexConfigPath(o)), "plugins", "cache", "mp", "pl", "1.0.0")
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"plev":{"command":"node"}}}`)
	write(t, filepath.Join(dir, ".codex-plugin", "plugin.json"), `{"name":"pl","mcpServers":{"plman":{"command":"node"}}}`)
	off := filepath.Join(filepath.Dir(CodexConfigPath(o)), "plugins", "cache", "mp", "off", "1.0.0")
	write(t, filepath.Join(off, ".mcp.json"), `{"mcpServers":{"offsrv":{"command":"node"}}}`)
	write(t, CodexConfigPath(o), "[mcp_servers.a]\ncommand = \"x\"\n\n[plugins.\"pl@mp\"]\nenabled = true\n\n[plugins.\"off@mp\"]\nenabled = false\n")
	p := install(t, o, "codex")
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{`registers "plev" beside the gate`, `registers "plman" beside the gate`} {
		if !strings.Contains(notes, want) {
			t.Errorf("install notes lack %s:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "offsrv") {
		t.Errorf("a plugin turned off is reported:\n%s", notes)
	}
	for _, r := range Scan(o) {
		if r.Host != "codex" {
			continue
		}
		if names := directNames(r); !reflect.DeepEqual(names, []string{"plev", "plman"}) {
			t.Errorf("scan: %v", names)
		}
		for _, d := range r.Direct {
			if d.Fix == "" || !r.Beside(d) {
				t.Errorf("%+v: no fix, or not beside the gate", d)
			}
		}
	}
}

// CLAUDE_CODE_PLUGIN_CACHE_DIR moves Claude Code's plugins directory, and
// CLAUDE_CODE_PLUGIN_SEED_DIR adds directories of pre-installed plugins:
// the servers of the plugins listed there are found too.
func TestClaudePluginDirsFromEnvironment(t *testing.T) {
	o := testOptions(t)
	claudePlugin(t, o)
	moved := filepath.Join(o.Home, "plugin-cache")
	reg := filepath.Join(o.Home, ".claude", "plugins", "installed_plugins.json")
	write(t, filepath.Join(moved, "installed_plugins.json"), read(t, reg))
	if err := os.Remove(reg); err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(o.Home, "seed")
	write(t, filepath.Join(seed, "cache", "s", ".mcp.json"), `{"mcpServers":{"seeded":{"command":"s"}}}`)
	write(t, filepath.Join(seed, "installed_plugins.json"), `{"version":2,"plugins":{"sp@mp":[{"scope":"user","installPath":`+strconvQuote(filepath.Join(seed, "cache", "s"))+`}]}}`)
	write(t, filepath.Join(o.Home, ".claude", "settings.json"), `{"enabledPlugins":{"pl@mp":true,"sp@mp":true}}`)
	o.Getenv = func(k string) string {
		switch k {
		case "CLAUDE_CODE_PLUGIN_CACHE_DIR":
			return moved
		case "CLAUDE_CODE_PLUGIN_SEED_DIR":
			return seed
		}
		return ""
	}
	var names []string
	servers, _ := ClaudePluginServers(o)
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if want := []string{"plugin:off:a", "plugin:off:b", "plugin:off:c", "plugin:pl:a", "plugin:pl:b", "plugin:pl:c", "plugin:sp:seeded"}; !reflect.DeepEqual(names, want) {
		t.Errorf("plugin servers: %v, want %v", names, want)
	}
}
