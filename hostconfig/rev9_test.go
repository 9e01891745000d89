package hostconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every file the plugin reader follows may be malformed (a marketplace is
// often a cloned repository): a marketplace.json without a "plugins" list
// made install and doctor panic (a nil node's elements). Each file, in
// each shape JSON allows, is read or skipped, never a panic.
func TestClaudePluginFilesMalformedNoPanic(t *testing.T) {
	shapes := []string{`null`, `[]`, `"x"`, `{}`, `{"plugins":null}`, `{"plugins":{"pl@mp":[null,1,{"installPath":5}]}}`,
		`{"mp":{"installLocation":[]}}`, `{"enabledPlugins":[1]}`, `{"deniedMcpServers":[1,null,{"serverName":1}]}`,
		`{"mcpServers":[null,1,"x.json",{"a":null}]}`, `{"plugins":[{"name":"pl","source":{"x":1}},null]}`}
	files := []func(o Options) string{
		func(o Options) string { return filepath.Join(o.Home, ".claude", "plugins", "installed_plugins.json") },
		func(o Options) string {
			return filepath.Join(o.Home, ".claude", "plugins", "installed_plugins_v2.json")
		},
		func(o Options) string { return filepath.Join(o.Home, ".claude", "plugins", "known_marketplaces.json") },
		func(o Options) string { return filepath.Join(o.Home, ".claude", "settings.json") },
		func(o Options) string { return filepath.Join(o.Cwd, ".claude", "settings.json") },
		func(o Options) string { return filepath.Join(o.ClaudeManagedDir, "managed-settings.json") },
		func(o Options) string {
			return filepath.Join(o.Home, ".claude", "plugins", "cache", "mp", "pl", "1.0.0", ".claude-plugin", "plugin.json")
		},
		func(o Options) string { return filepath.Join(o.Home, "mkt", ".claude-plugin", "marketplace.json") },
	}
	for _, file := range files {
		for _, shape := range shapes {
			o := testOptions(t)
			claudePlugin(t, o)
			mkt := filepath.Join(o.Home, "mkt")
			write(t, filepath.Join(o.Home, ".claude", "plugins", "known_marketplaces.json"), `{"mp":{"installLocation":`+strconvQuote(mkt)+`}}`)
			write(t, filepath.Join(mkt, ".claude-plugin", "marketplace.json"), `{"plugins":[{"name":"pl","source":"./p"}]}`)
			write(t, ClaudeCodeConfigPath(o), `{}`)
			f := file(o)
			write(t, f, shape)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s = %s: panic: %v", f, shape, r)
					}
				}()
				Scan(o)
				_, _ = PlanInstall(o, "claude-code")
			}()
		}
	}
}

// A local marketplace may name its plugins bare ("source": "pl") under
// metadata.pluginRoot ("./plugins"): the pinned CLI starts such a plugin,
// enabled and not installed, from ./plugins/pl, while install and doctor
// looked in ./pl and found nothing, so its server ran beside the gate
// unreported. A pluginRoot the CLI ignores (outside the marketplace) or a
// source that is not a bare name leaves the source as written.
func TestClaudeMarketplacePluginRoot(t *testing.T) {
	o := testOptions(t)
	home := filepath.Join(o.Home, ".claude")
	lm := filepath.Join(o.Home, "lm")
	write(t, filepath.Join(lm, ".claude-plugin", "marketplace.json"), `{"name":"lm","metadata":{"pluginRoot":"./plugins/"},"plugins":[{"name":"pl","source":"pl"}]}`)
	write(t, filepath.Join(lm, "plugins", "pl", ".mcp.json"), `{"mcpServers":{"s":{"command":"s"}}}`)
	write(t, filepath.Join(home, "plugins", "known_marketplaces.json"), `{"lm":{"source":{"source":"directory","path":`+strconvQuote(lm)+`},"installLocation":`+strconvQuote(lm)+`}}`)
	write(t, filepath.Join(home, "settings.json"), `{"enabledPlugins":{"pl@lm":true}}`)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}}}`)
	servers, _ := ClaudePluginServers(o)
	if len(servers) != 1 || servers[0].Name != "plugin:pl:s" {
		t.Fatalf("plugin servers: %+v; want plugin:pl:s", servers)
	}
	if scanned := directNames(claudeReport(t, o)); !slices.Contains(scanned, "plugin:pl:s") {
		t.Errorf("scan: %v; plugin:pl:s missing", scanned)
	}
	install(t, o, "claude-code")
	if got := read(t, filepath.Join(home, "settings.json")); !strings.Contains(got, `"serverName": "plugin:pl:s"`) {
		t.Errorf("install did not deny plugin:pl:s:\n%s", got)
	}

	for _, c := range []struct{ root, want string }{
		{"./plugins", "plugins"}, {"plugins/", "plugins"}, {".", "."}, {"./", "."}, {"", ""},
		{"/abs", ""}, {"../up", ""}, {"a/../b", ""}, {`a\b`, ""}, {"c:x", ""}, {"a//b", ""},
	} {
		if got := marketplacePluginRoot(c.root); got != c.want {
			t.Errorf("pluginRoot %q: %q; want %q", c.root, got, c.want)
		}
	}
	for src, want := range map[string]bool{"pl": true, "p-l.v_2": true, "./pl": false, "a/b": false, "a..b": false, "-pl": false, "": false} {
		if got := bareSourceName(src); got != want {
			t.Errorf("bare %q: %v", src, got)
		}
	}
}

// Uninstall left every denial install added, each with a note calling it
// the user's, once the user added an entry at the top of the list or
// edited one of their own before install's: any entry install had not
// seen, anywhere before install's, was taken for a sign that the user
// wrote install's entry again. Only entries written after the ones that
// preceded install's are.
func TestUninstallOwnEntryAfterEditsBeforeIt(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{}`)
	write(t, settings, `{"enabledPlugins":{"pl@mp":true},"deniedMcpServers":[{"serverName":"mine"},{"serverName":"other"}]}`)
	install(t, o, "claude-code")
	s := read(t, settings)
	s = strings.Replace(s, `"deniedMcpServers": [`, `"deniedMcpServers": [{"serverName":"new"},`, 1)
	s = strings.Replace(s, `"other"`, `"other2"`, 1)
	write(t, settings, s)
	_, notes, err := Uninstall(o, "claude-code", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, settings), "{\"enabledPlugins\":{\"pl@mp\":true},\"deniedMcpServers\":[{\"serverName\":\"new\"},{\"serverName\":\"mine\"},{\"serverName\":\"other2\"}]}"; strings.Join(strings.Fields(got), "") != want {
		t.Errorf("settings.json after uninstall:\n%s\nwant %s\nnotes: %v", got, want, notes)
	}

	nodes := func(elems ...string) []*Node {
		var out []*Node
		for _, e := range elems {
			out = append(out, Leaf(e))
		}
		return out
	}
	q := func(s string) string { return Leaf(s).Compact() }
	wasC := []string{q("a"), q("b"), q("X"), q("Y")}
	for _, c := range []struct {
		list []string
		want int
	}{
		{[]string{"a", "b", "X", "Y"}, 2},            // as install left it
		{[]string{"n", "a", "b", "X", "Y"}, 3},       // one added at the top
		{[]string{"a", "b2", "X", "Y"}, 2},           // one before it edited
		{[]string{"a2", "b2", "X", "Y"}, 2},          // all before it edited
		{[]string{"a", "X", "Y"}, 1},                 // one before it taken away
		{[]string{"a", "b", "Y", "X"}, -1},           // taken away, written again at the end
		{[]string{"a", "b", "n", "X"}, -1},           // written again after one of the user's
		{[]string{"a", "b", "Y", "n", "X", "X"}, -1}, // and a copy
		{[]string{"a", "b", "Y"}, -1},                // gone
		{[]string{"n", "a2", "b", "X", "Y", "X"}, 3}, // top, edit, and a copy after
	} {
		if got := ownEntry(nodes(c.list...), q("X"), wasC); got != c.want {
			t.Errorf("ownEntry(%v): %d; want %d", c.list, got, c.want)
		}
	}
}

// A marketplace is often a cloned repository, and a link in it may name
// /dev/zero: doctor and install read it until memory ran out. A plugin's
// or marketplace's file that is not a regular file is refused, and a note
// says so.
func TestClaudePluginFileNotRegularRefused(t *testing.T) {
	o := testOptions(t)
	claudePlugin(t, o)
	mkt := filepath.Join(o.Home, "mkt")
	write(t, filepath.Join(o.Home, ".claude", "plugins", "known_marketplaces.json"), `{"mp":{"installLocation":`+strconvQuote(mkt)+`}}`)
	if err := os.MkdirAll(filepath.Join(mkt, ".claude-plugin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(mkt, ".claude-plugin", "marketplace.json")); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(o.Home, ".claude", "plugins", "installed_plugins_v2.json")); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { _, notes := ClaudePluginServers(o); done <- notes }()
	select {
	case notes := <-done:
		if !strings.Contains(strings.Join(notes, "\n"), "not a regular file") {
			t.Errorf("notes: %v", notes)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ClaudePluginServers still reading /dev/zero after 10s")
	}
}

// CLAUDE_CODE_PLUGIN_CACHE_DIR moves Claude Code's plugins directory, and
// the pinned CLI takes it from a settings file's env as from its own
// environment, with a leading ~ as the home (checked: a plugin installed
// under "~/pc" started beside the gate with the variable only in the
// user's settings.json env). The gate read the variable from its own
// environment only, without ~: install and doctor did not see the
// plugin. A project's settings may name one too.
func TestClaudePluginCacheDirFromSettingsEnv(t *testing.T) {
	for _, c := range []struct{ settings, value, dir string }{
		{".claude/settings.json", `~/pc`, "pc"},
		{"proj/.claude/settings.json", `/ABS/elsewhere`, "elsewhere"},
	} {
		o := testOptions(t)
		dir := filepath.Join(o.Home, c.dir, "cache", "mp", "pl", "1.0.0")
		write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"a":{"command":"a"}}}`)
		write(t, filepath.Join(o.Home, c.dir, "installed_plugins.json"), `{"version":2,"plugins":{"pl@mp":[{"installPath":`+strconvQuote(dir)+`}]}}`)
		value := strings.Replace(c.value, "/ABS", o.Home, 1)
		write(t, filepath.Join(o.Home, c.settings), `{"env":{"CLAUDE_CODE_PLUGIN_CACHE_DIR":`+strconvQuote(value)+`}}`)
		servers, _ := ClaudePluginServers(o)
		if len(servers) != 1 || servers[0].Name != "plugin:pl:a" {
			t.Errorf("%s env %s: plugin servers %+v; want plugin:pl:a", c.settings, value, servers)
		}
	}
	// The environment's own value, with ~.
	o := testOptions(t)
	o.Getenv = func(k string) string {
		if k == "CLAUDE_CODE_PLUGIN_CACHE_DIR" {
			return "~/pc"
		}
		return ""
	}
	if got := claudePluginDirs(o); !slices.Contains(got, filepath.Join(o.Home, "pc")) {
		t.Errorf("plugin dirs: %v", got)
	}
}
