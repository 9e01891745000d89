package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ClaudeCodeConfigPath is Claude Code's own state file, which holds its
// user-scope servers (mcpServers) and, per project directory, its
// local-scope servers and the project's disabledMcpjsonServers:
// $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json.
func ClaudeCodeConfigPath(o Options) string {
	return filepath.Join(claudeDir(o), ".claude.json")
}

func claudeDir(o Options) string {
	if d := o.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return o.Home
}

// claudeProjectKey is the key Claude Code files the local-scope settings
// of a session in dir under (.claude.json projects[KEY]: its mcpServers,
// disabledMcpServers, allowedTools): the root of the git checkout holding
// dir, a linked worktree's main checkout, else dir itself (as the pinned
// CLI's "claude mcp add --scope local" writes them), spelled as
// claudeConfigKey spells it for o.GOOS.
func claudeProjectKey(o Options, dir string) string {
	dir = filepath.Clean(dir)
	for d := dir; ; d = filepath.Dir(d) {
		g := filepath.Join(d, ".git")
		if fi, err := os.Stat(g); err == nil {
			if !fi.IsDir() {
				if main := worktreeMain(d, g); main != "" {
					return claudeConfigKey(o.GOOS, main)
				}
			}
			return claudeConfigKey(o.GOOS, d)
		}
		if d == filepath.Dir(d) {
			return claudeConfigKey(o.GOOS, dir)
		}
	}
}

// claudeConfigKey is how Claude Code spells a directory as a key of
// .claude.json's projects: the path as given (already clean), with every
// backslash made a forward slash on Windows (the pinned 2.1.332 CLI's
// normalizePathForConfigKey: path.normalize, then replaceAll("\\", "/")
// when the platform is windows), so C:\Users\me\proj is filed under
// C:/Users/me/proj. Elsewhere a backslash is a file name's character and
// stays.
func claudeConfigKey(goos, dir string) string {
	if goos == "windows" {
		return strings.ReplaceAll(dir, `\`, "/")
	}
	return dir
}

// worktreeMain is the main checkout of the linked worktree at root whose
// .git file is g ("gitdir: DIR", DIR holding commondir), or "".
func worktreeMain(root, g string) string {
	data, err := os.ReadFile(g)
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	cd, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return "" // a submodule's: its own root
	}
	common := strings.TrimSpace(string(cd))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	if filepath.Base(common) != ".git" {
		return ""
	}
	return filepath.Dir(common)
}

// claudeSettingsDir holds Claude Code's user settings.json.
func claudeSettingsDir(o Options) string {
	if d := o.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(o.Home, ".claude")
}

// planClaudeCode registers the gate at user scope (top-level mcpServers)
// or for the project only (Claude Code's local scope, the project's entry
// in .claude.json), moves the servers registered at those scopes, and
// disables the project's .mcp.json servers for this user instead of editing
// the file the project shares.
func planClaudeCode(o Options, p *Plan, sf *serversFile) error {
	path := ClaudeCodeConfigPath(o)
	f, err := loadJSONFile(path)
	if err != nil {
		return err
	}
	proj := o.Cwd
	if proj == "" || !filepath.IsAbs(proj) {
		return fmt.Errorf("claude-code: the project directory must be absolute, got %q", proj)
	}
	key := claudeProjectKey(o, proj)
	local := []string{"projects", key, "mcpServers"}
	user := []string{"mcpServers"}
	var at []string
	switch o.Scope {
	case "", "user":
		at = user
	case "project", "local":
		at = local
	default:
		return fmt.Errorf("unknown scope %q; expected user or project", o.Scope)
	}
	gate, _ := FromValue(map[string]any{"type": "stdio", "command": o.Command, "args": gateArgs(o), "env": map[string]string{}})
	gate = reorder(gate, "type", "command", "args", "env")

	if slices.Equal(at, user) {
		if err := moveJSONServers(o, p, sf, f, user, "user scope", gate, true, ""); err != nil {
			return err
		}
	} else if u := lookup(f.tree, user); u != nil {
		for _, name := range u.Keys {
			if name != o.Name {
				p.Notes = append(p.Notes, fmt.Sprintf("server %q stays registered directly at user scope, beside the gate: the model can call it without the policy; \"mcp-gate install claude-code --scope user\" moves it", name))
			}
		}
	}
	if err := moveJSONServers(o, p, sf, f, local, "local scope, "+key, gate, true, proj); err != nil {
		return err
	}
	// Claude Code 2.1 keeps a project's disabledMcpjsonServers in the
	// project's .claude/settings.local.json (the user's, not shared; it
	// migrates the old projects[dir] list of .claude.json there itself).
	lf, err := loadJSONFile(filepath.Join(proj, ".claude", "settings.local.json"))
	if err != nil {
		return err
	}
	if lf.before == nil {
		lf.style.newline = true
	}
	if err := disableMCPJSON(o, p, sf, lf, proj); err != nil {
		return err
	}
	lf.edit(p)
	if err := disableClaudePlugins(o, p, f, key, slices.Equal(at, user)); err != nil {
		return err
	}
	managed, notes := claudeManaged(o)
	p.Notes = append(p.Notes, notes...)
	for _, d := range managed {
		p.Notes = append(p.Notes, fmt.Sprintf("%q (%s) stays beside the gate: %s", d.Name, d.Where, d.Fix))
	}
	if err := registerJSONGate(o, p, f, at, gate); err != nil {
		return err
	}
	// Other projects' local servers are not this install's to move, but
	// they are a way around the gate there.
	if projects := lookup(f.tree, []string{"projects"}); projects != nil {
		for i, dir := range projects.Keys {
			if dir == key {
				continue
			}
			if ms := projects.Vals[i].Get("mcpServers"); ms != nil && ms.Kind == '{' {
				for _, name := range ms.Keys {
					if name != o.Name {
						p.Notes = append(p.Notes, fmt.Sprintf("project %s registers %q directly (local scope); run \"mcp-gate install claude-code\" there to move it", dir, name))
					}
				}
			}
		}
	}
	reportClaudeRules(o, p, f, proj)
	f.edit(p)
	return nil
}

// disableMCPJSON moves the servers of the project's .mcp.json files (the
// project directory's and its parents', ClaudeProjectServers) into the
// servers file and lists them in the project's disabledMcpjsonServers, so
// Claude Code no longer starts them for this user; the shared files stay
// as the project wrote them. An entry there that starts mcp-gate is
// disabled and not moved: it runs with the project's policy and servers.
func disableMCPJSON(o Options, p *Plan, sf *serversFile, f *jsonFile, proj string) error {
	servers, err := ClaudeProjectServers(o)
	if err != nil {
		return err
	}
	if len(servers) == 0 {
		return nil // no .mcp.json: nothing to disable
	}
	entry := f.tree
	disabled := entry.Get("disabledMcpjsonServers")
	if disabled == nil {
		disabled = &Node{Kind: '['}
		entry.Set("disabledMcpjsonServers", disabled)
	}
	names, ok := disabled.Strings()
	if !ok {
		return fmt.Errorf("%s: disabledMcpjsonServers is not a list of names", f.path)
	}
	for _, s := range servers {
		name, e, mcpPath := s.Name, s.Entry, s.File
		if slices.Contains(names, name) {
			continue
		}
		if s.Foreign {
			disabled.Elems = append(disabled.Elems, Leaf(name))
			p.state.Disabled = append(p.state.Disabled, Record{File: f.path, Path: []string{"disabledMcpjsonServers"}, Name: name})
			p.Notes = append(p.Notes, fmt.Sprintf("%s is not yours or others may write it: %q is disabled for this user in %s and not moved into your servers file (move it by hand if you trust it)", mcpPath, name, f.path))
			continue
		}
		args, _ := e.Get("args").Strings()
		if looksLikeGate(o, e.Get("command").String(), args) {
			disabled.Elems = append(disabled.Elems, Leaf(name))
			p.state.Disabled = append(p.state.Disabled, Record{File: f.path, Path: []string{"disabledMcpjsonServers"}, Name: name})
			p.Notes = append(p.Notes, fmt.Sprintf("%s: %q starts mcp-gate with the project's own settings (its policy, servers, env and directory are the repository's); it is disabled for this user in %s and not moved: the gate install registers serves your servers under your policy", mcpPath, name, f.path))
			continue
		}
		conv, err := convertJSONEntry(mcpPath, name, e, true, proj)
		if err != nil {
			return err
		}
		key, err := sf.add(p, o.Name, name, conv)
		if err != nil {
			return err
		}
		disabled.Elems = append(disabled.Elems, Leaf(name))
		p.state.Disabled = append(p.state.Disabled, Record{File: f.path, Path: []string{"disabledMcpjsonServers"}, Name: name})
		p.Moved = append(p.Moved, fmt.Sprintf("%s (%s, disabled there for this user) -> %s", name, mcpPath, key))
		p.Notes = append(p.Notes, fmt.Sprintf("%s is not edited: %q is disabled for this user in %s (disabledMcpjsonServers)", mcpPath, name, f.path))
	}
	p.state.snapshotList(f.path, disabled, "disabledMcpjsonServers")
	return nil
}

// reportClaudeRules reports permission rules that name a moved server's
// tools: the host sees those tools under the gate's name now, so such a
// rule no longer matches anything, and a deny rule that stops applying is
// a rule to carry into the policy.
func reportClaudeRules(o Options, p *Plan, f *jsonFile, proj string) {
	moved := map[string]bool{}
	for _, r := range p.state.Moved {
		moved[r.Name] = true
	}
	for _, r := range p.state.Disabled {
		moved[r.Name] = true
	}
	if len(moved) == 0 {
		return
	}
	check := func(where, list string, rules []string) {
		for _, rule := range rules {
			tool, _, _ := strings.Cut(rule, "(")
			rest, ok := strings.CutPrefix(tool, "mcp__")
			if !ok {
				continue
			}
			server, _, _ := strings.Cut(rest, "__")
			if !moved[server] {
				continue
			}
			advice := "write it as a policy rule (mcp:" + server + ":<tool>)"
			if list == "deny" {
				advice = "it no longer applies; deny the tool in the policy instead (mcp:" + server + ":<tool>)"
			}
			p.Notes = append(p.Notes, fmt.Sprintf("permission rule %q (%s, permissions.%s) names moved server %q, whose tools the host now calls mcp__%s__<server>__<tool>: %s", rule, where, list, server, o.Name, advice))
		}
	}
	settings := []string{
		filepath.Join(claudeSettingsDir(o), "settings.json"),
		filepath.Join(claudeSettingsDir(o), "settings.local.json"),
		filepath.Join(proj, ".claude", "settings.json"),
		filepath.Join(proj, ".claude", "settings.local.json"),
	}
	for _, path := range settings {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		tree, err := ParseTree(data)
		if err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("%s could not be read for permission rules: %v", path, err))
			continue
		}
		perms := tree.Get("permissions")
		for _, list := range []string{"allow", "ask", "deny"} {
			rules, _ := perms.Get(list).Strings()
			check(path, list, rules)
		}
	}
	if pe := lookup(f.tree, []string{"projects", claudeProjectKey(o, proj)}); pe != nil {
		rules, _ := pe.Get("allowedTools").Strings()
		check(f.path, "allowedTools", rules)
	}
}
