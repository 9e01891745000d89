package hostconfig

import (
	"path/filepath"
	"testing"
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
