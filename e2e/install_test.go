package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostHome is a temporary home for a real host CLI: no API key, no
// auto-update, no non-essential traffic, and the gate's config under it.
type hostHome struct {
	dir, proj string
	env       []string
	// race is the GORACE entry of env (raceEnv), for a host that passes
	// its servers only some of its environment (codexRaceArgs).
	race string
}

// claudeWaitsForMCP makes Claude Code's print mode connect its MCP
// servers before the session starts, as its interactive mode does.
const claudeWaitsForMCP = "MCP_CONNECTION_NONBLOCKING=0"

func newHostHome(t *testing.T) *hostHome {
	t.Helper()
	dir := t.TempDir()
	h := &hostHome{dir: dir, proj: filepath.Join(dir, "proj"), race: raceEnv(t)}
	for _, d := range []string{h.proj, filepath.Join(dir, ".codex")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"CODEX_HOME=" + filepath.Join(dir, ".codex"), "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "TMPDIR=" + os.TempDir(),
		// Claude Code's print mode does not wait for its MCP servers by
		// default: a gate still starting its upstreams when the session
		// begins (under -race, beside other tests) is missing from the
		// init event's tools. Its own harness sets this to make it wait.
		claudeWaitsForMCP,
		// The gates the host starts exit without the race runtime's
		// second of sleep (TestMain), and write their race reports
		// where this test reads them (racelog_test.go).
		h.race,
		// Any model request goes to a closed loopback port: tests touch
		// loopback only, and none of them needs a model.
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9",
	}
	return h
}

// run runs a command in the project directory with the home's environment.
func (h *hostHome) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := h.try(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

func (h *hostHome) try(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = h.proj
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *hostHome) read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// backupOf is the one backup install kept of a file named base.
func (h *hostHome) backupOf(t *testing.T, host, base string) []byte {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(h.dir, ".config", "mcp-gate", "installs", "backups", host+"-*-"+base))
	if len(m) != 1 {
		t.Fatalf("backups of %s for %s: %v; expected one", base, host, m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hostBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(nodeModules, ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the pinned %s CLI is not installed: run `npm ci` in e2e/: %v", name, err)
	}
	return p
}

// Issue 13: install moves Claude Code's servers behind the gate, and the
// real CLI then sees only the gate, connected, with only mcp__gate__ tools.
func TestInstallClaudeCode(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI, heavy on both CPUs.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "everything", "-e", "GZIP_ALLOWED_DOMAINS=example.invalid", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, claude, "mcp", "add", "--scope", "project", "pev", "--", ev.Command, ev.Args[0], "stdio")
	if err := os.MkdirAll(filepath.Join(h.proj, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.proj, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["mcp__everything__echo"],"deny":["mcp__pev__get-env"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpJSON := h.read(t, "proj/.mcp.json")
	before := h.read(t, ".claude.json")

	out := h.run(t, gateBin, "install", "--dry-run", "claude-code")
	if !strings.Contains(out, "+++ ") || !strings.Contains(out, `+    "gate": {`) || !strings.Contains(out, "dry run") {
		t.Errorf("--dry-run shows no diff:\n%s", out)
	}
	if !bytes.Equal(h.read(t, ".claude.json"), before) {
		t.Fatal("--dry-run changed .claude.json")
	}
	if _, err := os.Stat(filepath.Join(h.dir, ".config", "mcp-gate", "servers.json")); err == nil {
		t.Fatal("--dry-run wrote the servers file")
	}

	out = h.run(t, gateBin, "install", "claude-code")
	for _, want := range []string{`"mcp__everything__echo"`, `"mcp__pev__get-env"`, "no longer applies", "disabledMcpjsonServers"} {
		if !strings.Contains(out, want) {
			t.Errorf("install does not report %s:\n%s", want, out)
		}
	}
	installed := h.read(t, ".claude.json")
	servers := h.read(t, ".config/mcp-gate/servers.json")
	if out := h.run(t, gateBin, "install", "claude-code"); !strings.Contains(out, "nothing to change") {
		t.Errorf("a second install: %s", out)
	}
	if !bytes.Equal(h.read(t, ".claude.json"), installed) || !bytes.Equal(h.read(t, ".config/mcp-gate/servers.json"), servers) {
		t.Error("a second install changed a file")
	}
	if !bytes.Equal(h.read(t, "proj/.mcp.json"), mcpJSON) {
		t.Error("install edited the project's .mcp.json")
	}

	// Uninstall straight away: the backups come back byte for byte.
	if out := h.run(t, gateBin, "uninstall", "--dry-run", "claude-code"); !strings.Contains(out, `-    "gate": {`) || !bytes.Equal(h.read(t, ".claude.json"), installed) {
		t.Errorf("uninstall --dry-run:\n%s", out)
	}
	backup := h.backupOf(t, "claude-code", ".claude.json")
	h.run(t, gateBin, "uninstall", "claude-code")
	if got := h.read(t, ".claude.json"); !bytes.Equal(got, before) || !bytes.Equal(got, backup) {
		t.Errorf("after uninstall .claude.json differs from before install:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(h.dir, ".config", "mcp-gate", "servers.json")); err == nil {
		t.Error("uninstall left the servers file install created")
	}

	// Install again and let the real host run it.
	h.run(t, gateBin, "install", "claude-code")
	list := h.run(t, claude, "mcp", "list")
	if !strings.Contains(list, "gate: "+gateBin) || !strings.Contains(list, "Connected") {
		t.Errorf("claude mcp list does not show the gate connected:\n%s", list)
	}
	for _, direct := range []string{"everything:", "pev:"} {
		if strings.Contains(list, direct) {
			t.Errorf("claude mcp list still shows %s directly:\n%s", direct, list)
		}
	}
	tools := claudeInitTools(t, h, claude)
	var mcpTools int
	for _, name := range tools {
		if !strings.HasPrefix(name, "mcp__") {
			continue
		}
		mcpTools++
		if !strings.HasPrefix(name, "mcp__gate__") {
			t.Errorf("the host sees %s, beside the gate", name)
		}
		if len(name) > 64 {
			t.Errorf("%s is %d characters; hosts accept 64", name, len(name))
		}
	}
	for _, want := range []string{"mcp__gate__everything__echo", "mcp__gate__pev__echo"} {
		if !contains(tools, want) {
			t.Errorf("the host's init event lacks %s: %v", want, tools)
		}
	}
	if mcpTools == 0 {
		t.Fatalf("no MCP tools in the init event: %v", tools)
	}

	// Claude Code rewrites .claude.json as it runs; uninstall undoes its
	// own edits in place and the host sees its servers directly again.
	out = h.run(t, gateBin, "uninstall", "claude-code")
	list = h.run(t, claude, "mcp", "list")
	if strings.Contains(list, "gate: ") || !strings.Contains(list, "everything:") || !strings.Contains(list, "pev:") {
		t.Errorf("after uninstall claude mcp list:\n%s\n(uninstall said: %s)", list, out)
	}
}

// claudeInitTools is the tool list of the system/init event that
// `claude -p --output-format stream-json` emits before it needs a model
// (there is no API key: the turn itself then fails, which is expected).
func claudeInitTools(t *testing.T, h *hostHome, claude string) []string {
	t.Helper()
	out, _ := h.try(claude, "-p", "--output-format", "stream-json", "--verbose", "hello")
	for line := range strings.SplitSeq(out, "\n") {
		var ev struct {
			Type, Subtype string
			Tools         []string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "system" && ev.Subtype == "init" {
			return ev.Tools
		}
	}
	t.Fatalf("no system/init event from claude -p:\n%s", out)
	return nil
}

// Issue 13: install moves Codex's [mcp_servers] tables behind the gate,
// keeping the rest of config.toml as written, and the real CLI lists only
// the gate.
func TestInstallCodex(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Codex CLI, heavy on both CPUs.
	needNode(t)
	codex := hostBin(t, "codex")
	h := newHostHome(t)
	ev := everything()
	if err := os.MkdirAll(filepath.Join(h.dir, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, ".codex", "config.toml"), []byte("# my settings\nmodel = \"o3\"\n\n[profiles.fast]\nmodel = \"o4-mini\" # inline comment\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(t, codex, "mcp", "add", "--env", "GZIP_ALLOWED_DOMAINS=example.invalid", "everything", "--", ev.Command, ev.Args[0], "stdio")
	before := h.read(t, ".codex/config.toml")

	out := h.run(t, gateBin, "install", "--dry-run", "codex")
	if !strings.Contains(out, "+[mcp_servers.gate]") || !bytes.Equal(h.read(t, ".codex/config.toml"), before) {
		t.Errorf("--dry-run: %s", out)
	}
	h.run(t, gateBin, "install", "codex")
	installed := h.read(t, ".codex/config.toml")
	if !bytes.HasPrefix(installed, []byte("# my settings\nmodel = \"o3\"\n\n[profiles.fast]\nmodel = \"o4-mini\" # inline comment\n")) {
		t.Errorf("install did not keep the rest of config.toml:\n%s", installed)
	}
	if !bytes.Contains(installed, []byte("tool_timeout_sec = 180\n")) {
		t.Errorf("tool_timeout_sec is not the approval timeout (2m) plus 60 s:\n%s", installed)
	}
	if out := h.run(t, gateBin, "install", "codex"); !strings.Contains(out, "nothing to change") || !bytes.Equal(h.read(t, ".codex/config.toml"), installed) {
		t.Errorf("a second install changed something: %s", out)
	}
	list := h.run(t, codex, "mcp", "list")
	if !strings.Contains(list, "gate ") || strings.Contains(list, "everything ") {
		t.Errorf("codex mcp list does not show only the gate:\n%s", list)
	}
	servers := string(h.read(t, ".config/mcp-gate/servers.json"))
	if !strings.Contains(servers, `"GZIP_ALLOWED_DOMAINS": "example.invalid"`) {
		t.Errorf("the moved server lost its environment:\n%s", servers)
	}
	if out := h.run(t, gateBin, "uninstall", "--dry-run", "codex"); !strings.Contains(out, "-[mcp_servers.gate]") || !bytes.Equal(h.read(t, ".codex/config.toml"), installed) {
		t.Errorf("uninstall --dry-run:\n%s", out)
	}
	h.run(t, gateBin, "uninstall", "codex")
	if got := h.read(t, ".codex/config.toml"); !bytes.Equal(got, before) || !bytes.Equal(got, h.backupOf(t, "codex", "config.toml")) {
		t.Errorf("after uninstall config.toml is not the backup:\n%s", got)
	}
	if list := h.run(t, codex, "mcp", "list"); !strings.Contains(list, "everything ") {
		t.Errorf("after uninstall codex mcp list:\n%s", list)
	}
}

// Issue 13: --name is the registration key and the gate's --name at once,
// so the names the host builds (mcp__NAME__…) are the ones the gate fits
// to 64 characters.
func TestInstallClaudeCodeName(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI, heavy on both CPUs.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "-e", "GZIP_ALLOWED_DOMAINS=example.invalid", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "--name", "policy", "claude-code")
	if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "policy: "+gateBin+" serve --name policy ") {
		t.Errorf("claude mcp list:\n%s", list)
	}
	tools := claudeInitTools(t, h, claude)
	if !contains(tools, "mcp__policy__everything__echo") {
		t.Errorf("init tools %v lack mcp__policy__everything__echo", tools)
	}
	if out, err := h.try(gateBin, "install", "--name", "bad__name", "claude-code"); exitCode(err) != 2 || !strings.Contains(out, "__") {
		t.Errorf("an invalid --name: %v\n%s", err, out)
	}
}
