package hostconfig

import (
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
