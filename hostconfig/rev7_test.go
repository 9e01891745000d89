package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A plugin installed for one project (claude plugin install --scope
// project) is enabled in that project's .claude/settings.json only, as is
// one a repository's own settings turn on. A user-scope install run
// anywhere else denied none of its servers, though it says it turns them
// off in every project: in the project they ran beside the gate, and a
// doctor run there said nothing of the install having missed them.
func TestClaudeUserScopeDeniesPluginsEnabledElsewhere(t *testing.T) {
	o := testOptions(t)
	other := filepath.Join(o.Home, "repo")
	dir := filepath.Join(o.Home, ".claude", "plugins", "cache", "mp", "pl", "1.0.0")
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"a":{"command":"a"}}}`)
	write(t, filepath.Join(o.Home, ".claude", "plugins", "installed_plugins.json"),
		`{"version":2,"plugins":{"pl@mp":[{"scope":"project","projectPath":`+strconvQuote(other)+`,"installPath":`+strconvQuote(dir)+`}]}}`)
	write(t, filepath.Join(other, ".claude", "settings.json"), `{"enabledPlugins":{"pl@mp":true}}`)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}}}`)
	install(t, o, "claude-code") // in o.Cwd, not the repository
	in := o
	in.Cwd = other
	if names := directNames(claudeReport(t, in)); len(names) != 0 {
		t.Errorf("in %s after a user-scope install: %v beside the gate", other, names)
	}
	if _, _, err := Uninstall(o, "claude-code", false); err != nil {
		t.Fatal(err)
	}
	// Install made the user's settings.json: uninstall removes it.
	if got, err := os.ReadFile(filepath.Join(o.Home, ".claude", "settings.json")); err == nil {
		t.Errorf("uninstall left the settings.json install made:\n%s", got)
	}
}

// Uninstall restores a file still as the last install left it from the
// backup the first install took. A second install that edited the file
// again (a plugin installed since) took no backup of what the user wrote
// between the two: uninstall then put back the file of before the first
// install, and the user's own settings were lost.
func TestUninstallKeepsEditsBetweenInstalls(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{"mcpServers":{"u":{"command":"x"}}}`)
	install(t, o, "claude-code")
	// The user's own edit, and a second plugin enabled since.
	dir := filepath.Join(o.Home, ".claude", "plugins", "cache", "mp", "two", "1.0.0")
	write(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers":{"t":{"command":"t"}}}`)
	reg := filepath.Join(o.Home, ".claude", "plugins", "installed_plugins.json")
	write(t, reg, strings.Replace(read(t, reg), `"plugins":{`, `"plugins":{"two@mp":[{"installPath":`+strconvQuote(dir)+`}],`, 1))
	s := read(t, settings)
	s = strings.Replace(s, `"enabledPlugins": {`, `"enabledPlugins": {"two@mp": true,`, 1)
	s = strings.Replace(s, "{\n", "{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"]},\n", 1)
	write(t, settings, s)
	install(t, o, "claude-code")
	if got := read(t, settings); !strings.Contains(got, "plugin:two:t") {
		t.Fatalf("the second install did not deny plugin:two:t:\n%s", got)
	}
	if _, _, err := Uninstall(o, "claude-code", false); err != nil {
		t.Fatal(err)
	}
	got := read(t, settings)
	if !strings.Contains(got, `Bash(rm:*)`) || !strings.Contains(got, `"two@mp": true`) {
		t.Errorf("uninstall lost what the user wrote between the installs:\n%s", got)
	}
	if strings.Contains(got, "plugin:pl:") || strings.Contains(got, "plugin:two:") {
		t.Errorf("uninstall left install's denials:\n%s", got)
	}
	if _, err := os.Stat(o.statePath("claude-code")); err == nil {
		t.Errorf("the install record is still there")
	}
}

// Claude Code files a directory's local-scope settings (.claude.json
// projects[KEY]: mcpServers, disabledMcpServers) under the root of the git
// checkout holding it, and a linked worktree's under its main checkout
// (the pinned CLI, "claude mcp add --scope local" run in a subdirectory
// and in a worktree, wrote projects[<main checkout>]). A project-scope
// install run in a subdirectory wrote the gate and the plugin servers it
// turned off under projects[<subdirectory>], which the CLI never reads: the
// gate was not started and the plugin's servers were, while a scan in the
// subdirectory read the same key install wrote and reported nothing.
func TestClaudeProjectKeyIsCheckoutRoot(t *testing.T) {
	for _, worktree := range []bool{false, true} {
		o := testOptions(t)
		claudePlugin(t, o)
		root := o.Cwd
		if err := os.MkdirAll(filepath.Join(root, ".git", "worktrees", "wt"), 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, ".git", "worktrees", "wt", "commondir"), "../..\n")
		dir := filepath.Join(root, "sub")
		if worktree {
			wt := filepath.Join(o.Home, "wt")
			write(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(root, ".git", "worktrees", "wt")+"\n")
			dir = filepath.Join(wt, "sub")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, ClaudeCodeConfigPath(o), `{"projects":{}}`)
		o.Cwd, o.Scope = dir, "project"
		install(t, o, "claude-code")
		var cfg struct {
			Projects map[string]struct {
				McpServers         map[string]any
				DisabledMcpServers []string
			}
		}
		if err := json.Unmarshal([]byte(read(t, ClaudeCodeConfigPath(o))), &cfg); err != nil {
			t.Fatal(err)
		}
		// Six: pl@mp's three and those of off@mp, installed and off in the
		// user's settings, which the project's may override.
		if p := cfg.Projects[root]; p.McpServers["gate"] == nil || len(p.DisabledMcpServers) != 6 {
			t.Errorf("worktree %v: projects[%s] = %+v; want the gate and six plugin servers disabled (all: %v)", worktree, root, p, cfg.Projects)
		}
	}
}

// A marketplace entry may declare its plugin's MCP servers itself
// ("strict": false entries have no manifest; the cached copy then holds
// neither a .mcp.json nor a plugin.json): the pinned CLI started
// plugin:pl:inl from such an entry, which install and doctor, reading the
// copy only, did not see.
func TestClaudePluginServersFromMarketplaceEntry(t *testing.T) {
	o := testOptions(t)
	plugins := filepath.Join(o.Home, ".claude", "plugins")
	mp := filepath.Join(o.Home, "mp")
	dir := filepath.Join(plugins, "cache", "localmp", "pl", "unknown")
	write(t, filepath.Join(dir, "README.md"), "x")
	write(t, filepath.Join(mp, ".claude-plugin", "marketplace.json"), `{"name":"localmp","plugins":[{"name":"pl","source":"./plugins/pl","strict":false,"mcpServers":{"inl":{"command":"echo"}}}]}`)
	write(t, filepath.Join(plugins, "known_marketplaces.json"), `{"localmp":{"source":{"source":"directory","path":`+strconvQuote(mp)+`},"installLocation":`+strconvQuote(mp)+`}}`)
	write(t, filepath.Join(plugins, "installed_plugins.json"), `{"version":2,"plugins":{"pl@localmp":[{"scope":"user","installPath":`+strconvQuote(dir)+`}]}}`)
	write(t, filepath.Join(o.Home, ".claude", "settings.json"), `{"enabledPlugins":{"pl@localmp":true}}`)
	write(t, ClaudeCodeConfigPath(o), `{}`)
	if names := directNames(claudeReport(t, o)); len(names) != 1 || names[0] != "plugin:pl:inl" {
		t.Errorf("scan: %v; want plugin:pl:inl", names)
	}
	install(t, o, "claude-code")
	if got := read(t, filepath.Join(o.Home, ".claude", "settings.json")); !strings.Contains(got, `"serverName": "plugin:pl:inl"`) {
		t.Errorf("install did not turn plugin:pl:inl off:\n%s", got)
	}
}

// Claude Code merges deniedMcpServers from every settings file of a
// session: a plugin's server the user turned off in the project's
// .claude/settings.local.json (or an administrator in the managed
// settings) does not start, but a scan read only the user's settings.json
// and flagged it beside the gate, so doctor failed a clean set-up.
func TestClaudePluginDeniedInProjectSettings(t *testing.T) {
	o := testOptions(t)
	claudePlugin(t, o)
	write(t, ClaudeCodeConfigPath(o), `{}`)
	write(t, filepath.Join(o.Cwd, ".claude", "settings.local.json"), `{"deniedMcpServers":[{"serverName":"plugin:pl:a"},{"serverName":"plugin:pl:b"},{"serverName":"plugin:off:a"},{"serverName":"plugin:off:b"},{"serverName":"plugin:off:c"}]}`)
	write(t, filepath.Join(o.ClaudeManagedDir, "managed-settings.json"), `{"deniedMcpServers":[{"serverName":"plugin:pl:c"}]}`)
	if names := directNames(claudeReport(t, o)); len(names) != 0 {
		t.Errorf("scan: %v beside the gate, though each is denied", names)
	}
}

// Install refuses a deniedMcpServers it cannot add to, and says what it
// found there and what it expected.
func TestClaudeDeniedNotAListSaysWhat(t *testing.T) {
	o := testOptions(t)
	settings := claudePlugin(t, o)
	write(t, settings, strings.Replace(read(t, settings), "{\n", "{\n  \"deniedMcpServers\": {\"serverName\": \"x\"},\n", 1))
	write(t, ClaudeCodeConfigPath(o), `{}`)
	_, err := PlanInstall(o, "claude-code")
	if err == nil || !strings.Contains(err.Error(), `{"serverName":"x"}`) || !strings.Contains(err.Error(), "not a list") {
		t.Errorf("install with deniedMcpServers an object: %v", err)
	}
}
