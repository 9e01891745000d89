package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Claude Code on Windows files a project in .claude.json under its path
// with forward slashes (the pinned CLI's normalizePathForConfigKey:
// C:\Users\me\proj is projects["C:/Users/me/proj"]); the gate looked up
// and wrote projects["C:\\Users\\me\\proj"], a key the CLI never reads, so
// a project-scope install registered a gate that was never started and
// disabled plugin servers that still ran, and a scan read nothing of the
// project's own entry. Elsewhere a backslash is part of a file name.
func TestClaudeConfigKeyWindowsSlashes(t *testing.T) {
	for _, c := range []struct{ goos, dir, want string }{
		{"windows", `C:\Users\me\proj`, "C:/Users/me/proj"},
		{"windows", `\\server\share\proj`, "//server/share/proj"},
		{"windows", "C:/Users/me/proj", "C:/Users/me/proj"},
		{"linux", `/home/me/a\b`, `/home/me/a\b`},
		{"darwin", "/Users/me/proj", "/Users/me/proj"},
	} {
		if got := claudeConfigKey(c.goos, c.dir); got != c.want {
			t.Errorf("%s %q: %q; want %q", c.goos, c.dir, got, c.want)
		}
	}
	// The key install and the scan use goes through it.
	o := testOptions(t)
	o.GOOS = "windows"
	if got := claudeProjectKey(o, o.Cwd); got != claudeConfigKey("windows", o.Cwd) {
		t.Errorf("claudeProjectKey: %q", got)
	}
}

// A Claude Code settings.json with comments or trailing commas: the
// pinned CLI ignores such a file whole (a plugin it enables does not
// start, a server it denies does), and install, which must add to its
// deniedMcpServers when plugins exist, failed with a bare JSON syntax
// error. It refuses, writes nothing, and says what is wrong and that the
// host does not read the file either; a file elsewhere with comments is
// refused with what to do.
func TestClaudeSettingsWithCommentsRefusedClearly(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{}`)
	for _, body := range []string{
		"{\n  // mine\n  \"enabledPlugins\": {\"pl@mp\": true}\n}\n",
		"{\n  \"enabledPlugins\": {\"pl@mp\": true,},\n}\n",
		"{\n  /* mine */ \"enabledPlugins\": {\"pl@mp\": true}\n}\n",
	} {
		write(t, settings, body)
		_, err := PlanInstall(o, "claude-code")
		if err == nil || !strings.Contains(err.Error(), "comments or trailing commas") || !strings.Contains(err.Error(), "Claude Code does not read such a settings file either") {
			t.Errorf("install with %q: %v", body, err)
		}
		if got := read(t, settings); got != body {
			t.Errorf("settings.json changed:\n%s", got)
		}
	}
	// A string holding // or a comma before a bracket is JSON.
	if hasJSONCSyntax([]byte(`{"a": "http://x/*", "b": ",]"}`)) {
		t.Error("a string's // or ,] taken for JSONC")
	}
	write(t, ClaudeCodeConfigPath(o), "{\n  // mine\n}\n")
	write(t, settings, "{}\n")
	if _, err := PlanInstall(o, "claude-code"); err == nil || !strings.Contains(err.Error(), "comments or trailing commas") || strings.Contains(err.Error(), "settings file") {
		t.Errorf("install with a .claude.json with comments: %v", err)
	}
}

// Codex merges its config from layers, lowest first: the system
// config.toml, the user's, a trusted project's .codex/config.toml files
// and the administrators' managed_config.toml over them all (the pinned
// CLI: project_root_markers set in /etc/codex/managed_config.toml win over
// the user's, and a [plugins."pl@mp"] table enables the plugin from any of
// those layers, a higher one's enabled = false turning it off; a
// managed_config.toml in CODEX_HOME is not read on Linux). The gate read
// the markers from the user's and the system's config only, and the
// plugins from the user's only: a server in a .codex/config.toml above the
// checkout, and a plugin's servers enabled by any other layer, ran beside
// the gate unreported.
func TestCodexLayersReadAsCodexMergesThem(t *testing.T) {
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
	o.Cwd = repo
	managed := filepath.Join(o.CodexSystemDir, "managed_config.toml")
	write(t, CodexConfigPath(o), "project_root_markers = [\".git\"]\n")
	write(t, managed, "project_root_markers = [\".sl\"]\n")
	if got := CodexProjectConfigs(o); !reflect.DeepEqual(got, []string{above}) {
		t.Errorf("markers [.sl] in managed_config.toml over the user's [.git]: %v", got)
	}
	// Not read from CODEX_HOME on Linux; read there on Windows.
	if err := os.Remove(managed); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(filepath.Dir(CodexConfigPath(o)), "managed_config.toml"), "project_root_markers = [\".sl\"]\n")
	if got := CodexProjectConfigs(o); len(got) != 0 {
		t.Errorf("markers in CODEX_HOME/managed_config.toml on Linux: %v", got)
	}
	win := o
	win.GOOS = "windows"
	if got := CodexProjectConfigs(win); !reflect.DeepEqual(got, []string{above}) {
		t.Errorf("markers in CODEX_HOME/managed_config.toml on Windows: %v", got)
	}
	if err := os.Remove(filepath.Join(filepath.Dir(CodexConfigPath(o)), "managed_config.toml")); err != nil {
		t.Fatal(err)
	}

	// Plugins, from every layer.
	for _, pl := range []string{"sys", "proj", "mdm", "off", "user"} {
		dir := filepath.Join(filepath.Dir(CodexConfigPath(o)), "plugins", "cache", "mp", pl, "1.0.0")
		write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"`+pl+`srv":{"command":"node"}}}`)
	}
	write(t, CodexConfigPath(o), "project_root_markers = [\".sl\"]\n\n[plugins.\"user@mp\"]\nenabled = true\n\n[plugins.\"off@mp\"]\nenabled = true\n")
	write(t, filepath.Join(o.CodexSystemDir, "config.toml"), "[plugins.\"sys@mp\"]\nenabled = true\n")
	write(t, above, "[plugins.\"proj@mp\"]\nenabled = true\n")
	write(t, managed, "[plugins.\"mdm@mp\"]\nenabled = true\n\n[plugins.\"off@mp\"]\nenabled = false\n")
	servers, _ := CodexPluginServers(o)
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if want := []string{"mdmsrv", "projsrv", "syssrv", "usersrv"}; !reflect.DeepEqual(names, want) {
		t.Errorf("plugin servers: %v; want %v", names, want)
	}
	// The scan (doctor) reads the same.
	for _, r := range Scan(o) {
		if r.Host == "codex" {
			if got := directNames(r); !slices.Contains(got, "projsrv") || !slices.Contains(got, "mdmsrv") || slices.Contains(got, "offsrv") {
				t.Errorf("scan: %v", got)
			}
		}
	}
}

// Doctor read the servers of the plugins the settings of its working
// directory enable, install (at user scope) those of every plugin
// installed: run outside the project whose settings enable a plugin, doctor
// did not see its servers, which run in that project beside the gate. Both
// read one set now (ClaudePluginServers), which also takes in the places
// the pinned CLI reads plugins from that neither read: a plugins directory
// whose registry is still installed_plugins_v2.json (renamed over
// installed_plugins.json at the CLI's next start), the cowork plugins
// directory (with its own user settings, cowork_settings.json, where
// install turns them off too), and a plugin the administrator's settings
// enable from a local marketplace, which the CLI starts from the
// marketplace's directory with no copy installed.
func TestClaudeDoctorReadsWhatInstallTurnsOff(t *testing.T) {
	o := testOptions(t)
	home := filepath.Join(o.Home, ".claude")
	other := filepath.Join(o.Home, "repo")
	// Installed for one project, enabled in its settings only.
	dir := filepath.Join(home, "plugins", "cache", "mp", "pp", "1.0.0")
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"a":{"command":"a"}}}`)
	write(t, filepath.Join(home, "plugins", "installed_plugins.json"), `{"version":2,"plugins":{"gone@mp":[{"installPath":`+strconvQuote(dir)+`}]}}`)
	write(t, filepath.Join(home, "plugins", "installed_plugins_v2.json"),
		`{"version":2,"plugins":{"pp@mp":[{"scope":"project","projectPath":`+strconvQuote(other)+`,"installPath":`+strconvQuote(dir)+`}]}}`)
	write(t, filepath.Join(other, ".claude", "settings.json"), `{"enabledPlugins":{"pp@mp":true}}`)
	// The cowork plugins directory.
	cdir := filepath.Join(home, "cowork_plugins", "cache", "mp", "cw", "1.0.0")
	write(t, filepath.Join(cdir, ".mcp.json"), `{"mcpServers":{"c":{"command":"c"}}}`)
	write(t, filepath.Join(home, "cowork_plugins", "installed_plugins.json"), `{"version":2,"plugins":{"cw@mp":[{"installPath":`+strconvQuote(cdir)+`}]}}`)
	// Enabled by the administrator, from a local marketplace, not installed.
	lm := filepath.Join(o.Home, "lm")
	write(t, filepath.Join(lm, ".claude-plugin", "marketplace.json"), `{"name":"lm","plugins":[{"name":"org","source":"./plugins/org"}]}`)
	write(t, filepath.Join(lm, "plugins", "org", ".mcp.json"), `{"mcpServers":{"o":{"command":"o"}}}`)
	write(t, filepath.Join(home, "plugins", "known_marketplaces.json"), `{"lm":{"source":{"source":"directory","path":`+strconvQuote(lm)+`},"installLocation":`+strconvQuote(lm)+`}}`)
	write(t, filepath.Join(o.ClaudeManagedDir, "managed-settings.json"), `{"enabledPlugins":{"org@lm":true}}`)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}}}`)

	want := []string{"plugin:cw:c", "plugin:org:o", "plugin:pp:a"}
	servers, _ := ClaudePluginServers(o)
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, want) {
		t.Errorf("plugin servers: %v; want %v", names, want)
	}
	// Doctor outside the project sees what runs in it.
	scanned := directNames(claudeReport(t, o))
	for _, w := range want {
		if !slices.Contains(scanned, w) {
			t.Errorf("scan in %s: %v; %s missing", o.Cwd, scanned, w)
		}
	}
	install(t, o, "claude-code")
	for _, f := range []string{"settings.json", "cowork_settings.json"} {
		got := read(t, filepath.Join(home, f))
		for _, w := range want {
			if !strings.Contains(got, `"serverName": "`+w+`"`) {
				t.Errorf("%s does not deny %s:\n%s", f, w, got)
			}
		}
	}
	for _, cwd := range []string{o.Cwd, other} {
		in := o
		in.Cwd = cwd
		if names := directNames(claudeReport(t, in)); len(names) != 0 {
			t.Errorf("scan in %s after install: %v", cwd, names)
		}
	}
	// A settings file the CLI cannot read is named.
	write(t, filepath.Join(home, "settings.json"), "{\n  // x\n}\n")
	if notes := strings.Join(claudeReport(t, o).Notes, "\n"); !strings.Contains(notes, "ignores this file whole") {
		t.Errorf("scan notes: %s", notes)
	}
}

// Uninstall took out of deniedMcpServers every entry equal to one install
// added, the user's own too: one the user wrote again after taking
// install's away, and a copy the user added. An entry that comes after one
// the list did not hold when install left it was written after install and
// stays (with a note); of two equal entries one goes.
func TestUninstallKeepsDenialsTheUserWroteAgain(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{}`)
	install(t, o, "claude-code")
	s := read(t, settings)
	// The user takes install's plugin:pl:b away, adds a denial of theirs,
	// writes plugin:pl:b again, and adds a copy of plugin:pl:c.
	s = strings.Replace(s, "    {\n      \"serverName\": \"plugin:pl:b\"\n    },\n", "", 1)
	if strings.Contains(s, `"plugin:pl:b"`) {
		t.Fatalf("the fixture did not take plugin:pl:b away:\n%s", s)
	}
	i := strings.LastIndex(s, "}\n  ]")
	s = s[:i] + "},\n    {\"serverName\": \"mine\"},\n    {\"serverName\": \"plugin:pl:b\"},\n    {\"serverName\": \"plugin:pl:c\"}\n  ]" + s[i+len("}\n  ]"):]
	write(t, settings, s)
	_, notes, err := Uninstall(o, "claude-code", false)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ DeniedMcpServers []struct{ ServerName string } }
	if err := json.Unmarshal([]byte(read(t, settings)), &doc); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range doc.DeniedMcpServers {
		left = append(left, d.ServerName)
	}
	if want := []string{"mine", "plugin:pl:b", "plugin:pl:c"}; !reflect.DeepEqual(left, want) {
		t.Errorf("deniedMcpServers after uninstall: %v; want %v", left, want)
	}
	if !strings.Contains(strings.Join(notes, "\n"), `plugin:pl:b"} in deniedMcpServers was added again after install`) {
		t.Errorf("notes: %v", notes)
	}
}
