package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 13: Claude Desktop has no Linux build, so the app itself is
// unverified; its config file is tested at each documented path: install
// moves its servers behind the gate there, keeps its other settings, the
// entry it registers starts a gate that serves the moved server's tools,
// and uninstall gives the file back byte for byte.
func TestInstallClaudeDesktopLayouts(t *testing.T) {
	t.Parallel()
	needNode(t)
	for _, tc := range []struct {
		os, rel string
		env     func(home string) []string
	}{
		{"darwin", "Library/Application Support/Claude/claude_desktop_config.json", nil},
		{"windows", "roaming/Claude/claude_desktop_config.json", func(home string) []string { return []string{"APPDATA=" + filepath.Join(home, "roaming")} }},
		{"linux", ".config/Claude/claude_desktop_config.json", nil},
	} {
		t.Run(tc.os, func(t *testing.T) {
			h := newHostHome(t)
			if tc.env != nil {
				h.env = append(h.env, tc.env(h.dir)...)
			}
			ev := everything()
			desktop := map[string]any{
				"globalShortcut": "Ctrl+Space",
				"mcpServers": map[string]any{
					"Everything Server": map[string]any{"command": ev.Command, "args": ev.Args, "env": ev.Env},
				},
			}
			before, _ := json.MarshalIndent(desktop, "", "  ")
			path := filepath.Join(h.dir, tc.rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			out := h.run(t, gateBin, "install", "--host-os", tc.os, "claude-desktop")
			if !strings.Contains(out, `renamed: server "Everything Server" is "everything-server"`) {
				t.Errorf("the rename is not reported:\n%s", out)
			}
			var got struct {
				GlobalShortcut string `json:"globalShortcut"`
				MCPServers     map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal(h.read(t, tc.rel), &got); err != nil {
				t.Fatal(err)
			}
			gate, ok := got.MCPServers["gate"]
			if len(got.MCPServers) != 1 || !ok || got.GlobalShortcut != "Ctrl+Space" {
				t.Fatalf("after install the desktop config is %+v; expected only the gate and its other settings", got)
			}
			// Start the gate as the app would, from its entry.
			cmd := exec.Command(gate.Command, gate.Args...)
			cmd.Env = h.env
			client := mcp.NewClient(&mcp.Implementation{Name: "claude-ai", Version: "1"}, nil)
			ctx := ctxT(t, 60e9)
			sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("starting the registered gate: %v", err)
			}
			res, err := sess.ListTools(ctx, nil)
			sess.Close()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if !contains(names, "everything-server__echo") {
				t.Errorf("the gate the desktop starts lists %v; expected everything-server__echo", names)
			}
			installed := h.read(t, tc.rel)
			h.run(t, gateBin, "install", "--host-os", tc.os, "claude-desktop")
			if !bytes.Equal(h.read(t, tc.rel), installed) {
				t.Error("a second install changed the desktop config")
			}
			h.run(t, gateBin, "uninstall", "--host-os", tc.os, "claude-desktop")
			if got := h.read(t, tc.rel); !bytes.Equal(got, before) || !bytes.Equal(got, h.backupOf(t, "claude-desktop", "claude_desktop_config.json")) {
				t.Errorf("after uninstall the desktop config is not the backup:\n%s", got)
			}
		})
	}
}

// Issue 13: doctor finds a server registered directly beside the gate
// (the bypass) and a server that does not start, each with its fix, and
// exits 1; on a clean install it exits 0.
func TestDoctor(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI, heavy on both CPUs.
	needNode(t)
	claude := hostBin(t, "claude")
	h := newHostHome(t)
	ev := everything()
	h.run(t, claude, "mcp", "add", "everything", "-e", "GZIP_ALLOWED_DOMAINS=example.invalid", "--", ev.Command, ev.Args[0], "stdio")
	h.run(t, gateBin, "install", "claude-code")
	if out, err := h.try(gateBin, "doctor"); err != nil || !strings.Contains(out, "no problems found") || !strings.Contains(out, "ok: local approval surface") {
		t.Fatalf("doctor on a clean install: %v\n%s", err, out)
	}
	// A runtime directory others can open leaves no local approval channel.
	rt := t.TempDir()
	if err := os.Mkdir(filepath.Join(rt, "mcp-gate"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(rt, "mcp-gate"), 0o755)
	saved := h.env
	h.env = append(h.env[:len(h.env):len(h.env)], "XDG_RUNTIME_DIR="+rt)
	if out, err := h.try(gateBin, "doctor"); exitCode(err) != 1 || !strings.Contains(out, "PROBLEM: the local approval surface cannot open") {
		t.Errorf("doctor with a runtime directory open to others: %v\n%s", err, out)
	}
	h.env = saved

	// The bypass: the same server registered again, directly.
	h.run(t, claude, "mcp", "add", "--scope", "user", "everything", "--", ev.Command, ev.Args[0], "stdio")
	out, err := h.try(gateBin, "doctor")
	if code := exitCode(err); code != 1 || !strings.Contains(out, `PROBLEM: claude-code: "everything" is registered directly beside the gate`) ||
		!strings.Contains(out, "fix: mcp-gate install claude-code") {
		t.Errorf("doctor with a server beside the gate: exit %d\n%s", code, out)
	}
	h.run(t, gateBin, "install", "claude-code")

	// A gate registered under another name than its --name: the host's
	// tool names are not the ones the gate fits to 64 characters.
	servers := filepath.Join(h.dir, ".config", "mcp-gate", "servers.json")
	h.run(t, claude, "mcp", "remove", "--scope", "user", "gate")
	h.run(t, claude, "mcp", "add", "--scope", "user", "policy-gate", "--", gateBin, "serve", "--name", "gate", "--servers", servers)
	out, err = h.try(gateBin, "doctor")
	if code := exitCode(err); code != 1 || !strings.Contains(out, `the gate is registered as "policy-gate" but runs with --name gate`) {
		t.Errorf("doctor with a gate registered under another name: exit %d\n%s", code, out)
	}
	h.run(t, claude, "mcp", "remove", "--scope", "user", "policy-gate")
	h.run(t, claude, "mcp", "add", "--scope", "user", "gate", "--", gateBin, "serve", "--name", "gate", "--servers", servers)

	// A server that does not start.
	data, _ := os.ReadFile(servers)
	data = bytes.Replace(data, []byte(`"mcpServers": {`), []byte(`"mcpServers": {"broken": {"command": "/nonexistent/server"},`), 1)
	if err := os.WriteFile(servers, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = h.try(gateBin, "doctor", "--start-timeout", "20s")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "does not start") {
		t.Errorf("doctor with a server that does not start: exit %d\n%s", code, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
