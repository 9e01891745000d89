package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Host set-up: a local marketplace names its plugin bare ("source": "pl")
// under "metadata": {"pluginRoot": "./plugins"}; the user enables the
// plugin without installing it. The real CLI starts its server from
// ./plugins/pl; install and doctor looked for the plugin in ./pl, found
// nothing, and left the server running beside the gate, unreported.
func TestBypassHostMarketplacePluginRoot(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	ts := testserver("honest")
	mp := filepath.Join(h.dir, "mp")
	for path, v := range map[string]any{
		filepath.Join(mp, ".claude-plugin", "marketplace.json"): map[string]any{
			"name": "localmp", "owner": map[string]any{"name": "t"}, "metadata": map[string]any{"pluginRoot": "./plugins"},
			"plugins": []any{map[string]any{"name": "pl", "source": "pl", "description": "x"}},
		},
		filepath.Join(mp, "plugins", "pl", ".claude-plugin", "plugin.json"): map[string]any{"name": "pl", "version": "1.0.0", "description": "x"},
		filepath.Join(mp, "plugins", "pl", ".mcp.json"):                     map[string]any{"mcpServers": map[string]any{"plev": map[string]any{"command": ts.Command, "args": ts.Args}}},
	} {
		writeJSON(t, path, v)
	}
	h.run(t, claude, "plugin", "marketplace", "add", mp)
	settings := filepath.Join(h.dir, ".claude", "settings.json")
	var s map[string]any
	data, err := os.ReadFile(settings)
	if err != nil || json.Unmarshal(data, &s) != nil {
		t.Fatalf("settings.json after marketplace add: %v\n%s", err, data)
	}
	s["enabledPlugins"] = map[string]any{"pl@localmp": true}
	writeJSON(t, settings, s)
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "plugin:pl:plev:") {
		t.Fatalf("the real CLI does not list the plugin's server (the set-up is wrong):\n%s", list)
	}
	h.run(t, gateBin, "install", "claude-code")
	for _, name := range claudeInitTools(t, h, claude) {
		if strings.HasPrefix(name, "mcp__") && !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("after install the host sees %s, beside the gate", name)
		}
	}
}
