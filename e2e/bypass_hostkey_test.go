package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Host set-up: Claude Code files a directory's local-scope servers under
// the root of its git checkout (.claude.json projects[ROOT]), wherever in
// the checkout the session starts. A project-scope install run for a
// subdirectory (--project, or the working directory) registered the gate
// under projects[SUBDIRECTORY], which the real CLI never reads: in that
// subdirectory it started the project's own server and no gate.
func TestBypassHostProjectKeyIsCheckoutRoot(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	if out, err := exec.Command("git", "init", "-q", h.proj).CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	sub := filepath.Join(h.proj, "sub")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	h.run(t, claude, "mcp", "add", "--scope", "local", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "--scope", "project", "--project", sub, "claude-code")
	list := exec.Command(claude, "mcp", "list")
	list.Dir, list.Env = sub, h.env
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("claude mcp list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "gate:") || strings.Contains(string(out), "everything:") {
		t.Errorf("in %s after a project-scope install there, claude mcp list:\n%s", sub, out)
	}
}

// Host set-up: a plugin installed for one project (claude plugin install
// --scope project) is enabled in that project's .claude/settings.json
// only. A user-scope install run anywhere else turned off none of its
// servers, though it says it turns plugin servers off in every project:
// in the project the real CLI started the plugin's server beside the gate.
func TestBypassHostProjectPluginUserScopeInstall(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	ts := testserver("honest")
	localPlugin(t, h, claude, map[string]any{"name": "pl", "source": "./plugins/pl", "description": "a plugin with an MCP server"}, map[string]any{
		".claude-plugin/plugin.json": map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		".mcp.json":                  map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	})
	h.run(t, claude, "plugin", "install", "--scope", "project", "pl@localmp")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") {
		t.Fatalf("the real CLI does not list the plugin's server in the project (the set-up is wrong):\n%s", list)
	}
	// Installed from the home directory, not the project.
	install := exec.Command(gateBin, "install", "claude-code")
	install.Dir, install.Env = h.dir, h.env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	for _, name := range claudeInitTools(t, h, claude) {
		if strings.HasPrefix(name, "mcp__") && !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("in the project after a user-scope install the host sees %s, beside the gate", name)
		}
	}
}

// Host set-up: a marketplace entry that declares its plugin's MCP server
// itself ("strict": false: the plugin has no manifest, its cached copy no
// .mcp.json). The real CLI starts it as plugin:pl:inl; install and doctor,
// reading only the cached copy, left it beside the gate unreported.
func TestBypassHostPluginServerInMarketplaceEntry(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "claude-code")
	ts := testserver("honest")
	localPlugin(t, h, claude, map[string]any{"name": "pl", "source": "./plugins/pl", "description": "x", "strict": false,
		"mcpServers": map[string]any{"inl": map[string]any{"command": ts.Command, "args": ts.Args}}},
		map[string]any{"README.md": "x"})
	h.run(t, claude, "plugin", "install", "pl@localmp")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:inl:") {
		t.Fatalf("the real CLI does not list the entry's server (the set-up is wrong):\n%s", list)
	}
	out, err := h.try(gateBin, "doctor", "--start-timeout", "60s")
	if !strings.Contains(out, `PROBLEM: claude-code: "plugin:pl:inl" is registered directly beside the gate`) || err == nil {
		t.Errorf("doctor does not flag the entry's server (%v):\n%s", err, out)
	}
	h.run(t, gateBin, "install", "claude-code")
	for _, name := range claudeInitTools(t, h, claude) {
		if strings.HasPrefix(name, "mcp__") && !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("after install the host sees %s, beside the gate", name)
		}
	}
}

// localPlugin adds a marketplace on disk, localmp, whose one plugin is
// entry (its source ./plugins/NAME), with files (paths in the plugin's
// directory; a value other than a string is written as JSON).
func localPlugin(t *testing.T, h *hostHome, claude string, entry map[string]any, files map[string]any) {
	t.Helper()
	mp := filepath.Join(h.dir, "mp")
	all := map[string]any{filepath.Join(mp, ".claude-plugin", "marketplace.json"): map[string]any{
		"name": "localmp", "owner": map[string]any{"name": "t"}, "plugins": []any{entry},
	}}
	for rel, v := range files {
		all[filepath.Join(mp, "plugins", entry["name"].(string), filepath.FromSlash(rel))] = v
	}
	for path, v := range all {
		writeJSON(t, path, v)
	}
	h.run(t, claude, "plugin", "marketplace", "add", mp)
}

// writeJSON writes v to path, its directories made: a string as it is,
// anything else as JSON.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		data = string(b)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Host set-up: doctor read the plugins the settings of the directory it
// ran in enable, while install (at user scope) turns off every installed
// plugin's servers: run outside the project whose settings enable a plugin
// (claude plugin install --scope project), doctor said nothing of the
// plugin's server, which the real CLI starts there beside the gate. It
// reads what install reads now, wherever it runs.
func TestBypassHostDoctorOutsideProjectSeesItsPlugin(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "claude-code")
	ts := testserver("honest")
	localPlugin(t, h, claude, map[string]any{"name": "pl", "source": "./plugins/pl", "description": "x"}, map[string]any{
		".claude-plugin/plugin.json": map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		".mcp.json":                  map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	})
	h.run(t, claude, "plugin", "install", "--scope", "project", "pl@localmp")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") || !strings.Contains(list, "gate:") {
		t.Fatalf("the real CLI does not list the plugin's server beside the gate in the project (the set-up is wrong):\n%s", list)
	}
	doctor := exec.Command(gateBin, "doctor", "--start-timeout", "60s")
	doctor.Dir, doctor.Env = h.dir, h.env
	out, err := doctor.CombinedOutput()
	if !strings.Contains(string(out), `PROBLEM: claude-code: "plugin:pl:plev" is registered directly beside the gate`) || err == nil {
		t.Errorf("doctor outside the project does not flag the plugin's server the project starts (%v):\n%s", err, out)
	}
}

// Host set-up: with CLAUDE_CODE_USE_COWORK_PLUGINS set (Claude's cowork
// mode), the real CLI keeps its plugins in cowork_plugins and reads its
// user settings from cowork_settings.json in place of settings.json.
// Install and doctor read neither: a cowork plugin's server ran beside
// the gate, unreported, and a denial in settings.json would not have held
// there. And a plugins registry still named installed_plugins_v2.json,
// which the CLI renames over installed_plugins.json when a session
// starts, was not read: its plugins' servers started beside the gate.
func TestBypassHostCoworkAndUnmigratedPlugins(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	ts := testserver("honest")
	localPlugin(t, h, claude, map[string]any{"name": "pl", "source": "./plugins/pl", "description": "x"}, map[string]any{
		".claude-plugin/plugin.json": map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		".mcp.json":                  map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	})
	cowork := &hostHome{dir: h.dir, proj: h.proj, race: h.race, env: append(slices.Clone(h.env), "CLAUDE_CODE_USE_COWORK_PLUGINS=1")}
	cowork.run(t, claude, "plugin", "marketplace", "add", filepath.Join(h.dir, "mp"))
	cowork.run(t, claude, "plugin", "install", "pl@localmp")
	if list := cowork.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") {
		t.Fatalf("the real CLI in cowork mode does not list the plugin's server (the set-up is wrong):\n%s", list)
	}
	// The same plugin for ordinary sessions, its registry not yet migrated.
	h.run(t, claude, "plugin", "install", "pl@localmp")
	plugins := filepath.Join(h.dir, ".claude", "plugins")
	if err := os.Rename(filepath.Join(plugins, "installed_plugins.json"), filepath.Join(plugins, "installed_plugins_v2.json")); err != nil {
		t.Fatal(err)
	}
	h.run(t, gateBin, "install", "claude-code") // without the variable: the directory says cowork is in use
	for _, hh := range []*hostHome{h, cowork} {
		for _, name := range claudeInitTools(t, hh, claude) {
			if strings.HasPrefix(name, "mcp__") && !strings.HasPrefix(name, "mcp__gate__") {
				t.Errorf("after install the host (cowork %v) sees %s, beside the gate", hh == cowork, name)
			}
		}
	}
	if out, err := h.try(gateBin, "doctor", "--start-timeout", "60s"); strings.Contains(out, "plugin:pl:plev") || err != nil {
		t.Errorf("doctor after install (%v):\n%s", err, out)
	}
}
