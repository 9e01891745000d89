package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Host set-up: a Claude Code plugin installed after `mcp-gate install
// claude-code` (a local marketplace, as `claude plugin install` takes
// one) brings an MCP server, plugin:pl:plev, which the real CLI starts in
// every project beside the gate: its tools reach the model as
// mcp__plugin_pl_plev__… without the policy. Install and doctor read no
// plugin. Doctor must flag it, install again must turn it off (the host
// then has the gate's tools only), and uninstall must turn it back on.
func TestBypassHostPluginServerBesideTheGate(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "claude-code")

	// A marketplace on disk with one plugin, whose .mcp.json starts a
	// server. Not the user's "everything": Claude Code leaves out a
	// plugin's server that starts the same command as one configured by
	// hand.
	ts := testserver("honest")
	localPlugin(t, h, claude, map[string]any{"name": "pl", "source": "./plugins/pl", "description": "a plugin with an MCP server"}, map[string]any{
		".claude-plugin/plugin.json": map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		".mcp.json":                  map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	})
	h.run(t, claude, "plugin", "install", "pl@localmp")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") {
		t.Fatalf("the real CLI does not list the plugin's server (the set-up is wrong):\n%s", list)
	}

	out, err := h.try(gateBin, "doctor", "--start-timeout", "60s")
	if !strings.Contains(out, `PROBLEM: claude-code: "plugin:pl:plev" is registered directly beside the gate`) || err == nil {
		t.Errorf("doctor does not flag the plugin's server (%v):\n%s", err, out)
	}

	out = h.run(t, gateBin, "install", "claude-code")
	if !strings.Contains(out, `"plugin:pl:plev" (plugin pl@localmp`) {
		t.Errorf("install does not say it turned the plugin's server off:\n%s", out)
	}
	var gated int
	for _, name := range claudeInitTools(t, h, claude) {
		if !strings.HasPrefix(name, "mcp__") {
			continue
		}
		if !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("after install the host sees %s, beside the gate", name)
		} else {
			gated++
		}
	}
	if gated == 0 {
		t.Error("the host sees no gate tools")
	}
	if out, err := h.try(gateBin, "doctor", "--start-timeout", "60s"); strings.Contains(out, "plugin:pl:plev") || err != nil {
		t.Errorf("doctor after install (%v):\n%s", err, out)
	}

	// Uninstall turns it on again.
	h.run(t, gateBin, "uninstall", "claude-code")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") || !strings.Contains(list, "everything:") {
		t.Errorf("after uninstall claude mcp list:\n%s", list)
	}
}

// Host set-up: Codex takes the project root from project_root_markers
// (user config), and reads every .codex/config.toml from the working
// directory up to it. With markers [".sl"] (a Sapling checkout holding a
// git one, say), the real CLI starts a server from a .codex/config.toml
// above the inner checkout's .git, which doctor, stopping at .git, did not
// report beside the gate.
func TestBypassHostCodexProjectRootMarkers(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Codex CLI.
	needNode(t)
	codex := hostBin(t, "codex")
	h := newHostHome(t)
	ev := everything()
	repo := filepath.Join(h.proj, "repo")
	for _, d := range []string{filepath.Join(h.proj, ".sl"), filepath.Join(repo, ".git"), filepath.Join(h.proj, ".codex")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "project_root_markers = [\".sl\"]\n\n[projects." + strconvQuote(h.proj) + "]\ntrust_level = \"trusted\"\n\n[projects." + strconvQuote(repo) + "]\ntrust_level = \"trusted\"\n"
	if err := os.WriteFile(filepath.Join(h.dir, ".codex", "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	above := "[mcp_servers.above]\ncommand = " + strconvQuote(ev.Command) + "\nargs = [" + strconvQuote(ev.Args[0]) + ", \"stdio\"]\n"
	if err := os.WriteFile(filepath.Join(h.proj, ".codex", "config.toml"), []byte(above), 0o600); err != nil {
		t.Fatal(err)
	}
	in := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, h.env
		out, err := cmd.CombinedOutput()
		if err != nil && name != gateBin {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	in(repo, codex, "mcp", "add", "everything", "--", ev.Command, ev.Args[0], "stdio")
	if list := in(repo, codex, "mcp", "list"); !strings.Contains(list, "above ") {
		t.Fatalf("the real CLI does not list the server above the checkout (the set-up is wrong):\n%s", list)
	}
	in(repo, gateBin, "install", "codex")
	if list := in(repo, codex, "mcp", "list"); !strings.Contains(list, "above ") || !strings.Contains(list, "gate ") {
		t.Fatalf("codex mcp list after install:\n%s", list)
	}
	out := in(repo, gateBin, "doctor", "--start-timeout", "60s")
	if !strings.Contains(out, `PROBLEM: codex: "above" is registered directly beside the gate`) {
		t.Errorf("doctor does not flag the server Codex reads above the checkout:\n%s", out)
	}
}

// Host set-up: a Codex plugin added after `mcp-gate install codex` (from a
// local marketplace, as `codex plugin add` takes one) brings an MCP server
// the real CLI lists beside the gate. Codex has no switch for one server
// of a plugin, so install cannot turn it off; doctor must flag it and
// install must say so.
func TestBypassHostCodexPluginServer(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Codex CLI.
	needNode(t)
	codex := hostBin(t, "codex")
	h := newHostHome(t)
	ev := everything()
	h.run(t, codex, "mcp", "add", "everything", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "codex")
	mp := filepath.Join(h.dir, "mp")
	ts := testserver("honest")
	for path, v := range map[string]any{
		filepath.Join(mp, ".claude-plugin", "marketplace.json"): map[string]any{
			"name": "localmp", "owner": map[string]any{"name": "t"},
			"plugins": []any{map[string]any{"name": "pl", "source": "./plugins/pl", "description": "x"}},
		},
		filepath.Join(mp, "plugins", "pl", ".claude-plugin", "plugin.json"): map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		filepath.Join(mp, "plugins", "pl", ".mcp.json"):                     map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	} {
		writeJSON(t, path, v)
	}
	h.run(t, codex, "plugin", "marketplace", "add", mp)
	h.run(t, codex, "plugin", "add", "pl@localmp")
	if list := h.run(t, codex, "mcp", "list"); !strings.Contains(list, "plev ") || !strings.Contains(list, "gate ") {
		t.Fatalf("the real CLI does not list the plugin's server beside the gate (the set-up is wrong):\n%s", list)
	}
	out, err := h.try(gateBin, "doctor", "--start-timeout", "60s")
	if !strings.Contains(out, `PROBLEM: codex: "plev" is registered directly beside the gate`) || err == nil {
		t.Errorf("doctor does not flag the plugin's server (%v):\n%s", err, out)
	}
	if out := h.run(t, gateBin, "install", "codex"); !strings.Contains(out, `registers "plev" beside the gate`) {
		t.Errorf("install does not report the plugin's server:\n%s", out)
	}
}
