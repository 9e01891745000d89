package hostconfig

import (
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
