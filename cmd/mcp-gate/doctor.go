package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/approvals"
	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/hostconfig"
	"github.com/mcp-gate/mcp-gate/internal/statefile"
	"github.com/mcp-gate/mcp-gate/pins"
)

// unstartableNote starts the line check --strict prints for a server it
// could not start; doctor counts each as a problem.
const unstartableNote = "could not be started and listed"

// doctor checks a machine: each host's config (a server registered
// directly beside the gate is a way around the policy), the name each gate
// runs with, the servers file and policy each gate uses (as check --strict,
// which also starts every server), the catalog cache and the approval
// channels. Every problem is printed with its fix; it exits 1 on any.
func doctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	startTO := fs.Duration("start-timeout", 30*time.Second, "how long a server may take to start and list its names")
	opts := installFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	o, err := opts()
	if err != nil {
		return err
	}
	problems := 0
	problem := func(what, fix string) {
		problems++
		fmt.Fprintf(stdout, "PROBLEM: %s\n  fix: %s\n", what, fix)
	}
	type target struct{ servers, policy, name string }
	var targets []target
	seen := map[target]bool{}
	anyGate := false
	for _, r := range hostconfig.Scan(o) {
		switch {
		case r.Err != nil:
			problem(fmt.Sprintf("%s: %v", r.Host, r.Err), "repair the file so the host can read it too")
			continue
		case !r.Found:
			fmt.Fprintf(stdout, "ok: %s: no config at %s\n", r.Host, r.Config)
			continue
		}
		for _, g := range r.Gates {
			anyGate = true
			fmt.Fprintf(stdout, "ok: %s: gate %q (%s)\n", r.Host, g.Key, g.Where)
			if g.Key != g.Name {
				problem(fmt.Sprintf("%s: the gate is registered as %q but runs with --name %s: the host shows its tools as mcp__%s__… while the gate fits names to mcp__%s__…", r.Host, g.Key, g.Name, g.Key, g.Name),
					fmt.Sprintf("mcp-gate uninstall %s, then mcp-gate install %s --name %s", r.Host, r.Host, g.Key))
			}
			t := target{servers: g.Servers, policy: g.Policy, name: g.Name}
			if t.servers == "" {
				t.servers = defaultServersPath()
			}
			if !seen[t] {
				seen[t] = true
				targets = append(targets, t)
			}
		}
		for _, d := range r.Direct {
			fix := fmt.Sprintf("mcp-gate install %s (moves it behind the gate)", r.Host)
			if d.Fix != "" {
				fix = d.Fix
			}
			if r.Beside(d) {
				problem(fmt.Sprintf("%s: %q is registered directly beside the gate (%s): the model can call %s… without the policy", r.Host, d.Name, d.Where, toolPrefix(d.Name)), fix)
			} else if d.Fix != "" {
				fmt.Fprintf(stdout, "note: %s: %q (%s) is not behind a gate: %s\n", r.Host, d.Name, d.Where, d.Fix)
			} else {
				fmt.Fprintf(stdout, "note: %s: %q (%s) is not behind a gate; \"mcp-gate install %s\" puts it there\n", r.Host, d.Name, d.Where, r.Host)
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(stdout, "note: %s: %s\n", r.Host, n)
		}
	}
	if !anyGate {
		fmt.Fprintln(stdout, "note: no host starts the gate yet; \"mcp-gate install HOST\" registers it")
		targets = append(targets, target{servers: o.Servers, policy: o.Policy, name: o.Name})
	}

	for _, t := range targets {
		if !fileExists(t.servers) {
			problem(fmt.Sprintf("the servers file %s does not exist: the gate has no servers to run", t.servers),
				"mcp-gate install HOST moves a host's servers there; or write it (README, \"The servers file\")")
			continue
		}
		checkArgs := []string{"--strict", "--servers", t.servers, "--name", t.name, "--start-timeout", startTO.String()}
		if t.policy != "" {
			checkArgs = append(checkArgs, "--policy", t.policy)
		}
		var out bytes.Buffer
		err := check(ctx, checkArgs, &out, &out)
		for line := range strings.SplitSeq(strings.TrimRight(out.String(), "\n"), "\n") {
			fmt.Fprintf(stdout, "  check: %s\n", line)
			if strings.Contains(line, unstartableNote) {
				problem("a server of "+t.servers+" does not start (above)", "run its command by hand to see why; fix or remove its entry")
			}
		}
		if err != nil {
			problem(fmt.Sprintf("mcp-gate check --strict %s fails (above)", strings.Join(checkArgs, " ")), "fix each line it prints; README \"The policy\" and \"The servers file\"")
		} else {
			fmt.Fprintf(stdout, "ok: servers file %s and its policy pass check --strict\n", t.servers)
		}
	}

	// The catalog cache another part of the gate keeps: looked at only
	// when present.
	if cache := filepath.Join(cacheDir(), "catalog"); fileExists(cache) || dirExists(cache) {
		fmt.Fprintf(stdout, "ok: catalog cache at %s\n", cache)
	} else {
		fmt.Fprintln(stdout, "ok: no catalog cache (skipped)")
	}
	// The state directories must be this user's alone: the gate neither
	// reads nor writes one that others may write (its pins refuse every
	// call, its cache is ignored).
	for _, d := range stateDirs() {
		if root, err := statefile.OpenDir(d); err == nil {
			root.Close()
		} else if errors.Is(err, statefile.ErrNotPrivate) {
			problem(err.Error(), fmt.Sprintf("if only you wrote to it, make it yours alone (chown, chmod 700 %s); else remove it and let the gate make it again", d))
		}
	}

	// Approval channels: an ask rule needs a human, reached through the
	// host's form where it declares elicitation, else on the local
	// approval surface (mcp-gate approvals), which needs this user's
	// runtime directory.
	local := false
	if runtime.GOOS != "linux" {
		fmt.Fprintln(stdout, "note: the local approval surface is Linux-only: where the host cannot ask, an ask call is refused")
	} else if dir, err := approvals.RuntimeDir(); err != nil {
		problem(fmt.Sprintf("the local approval surface cannot open: %v", err), "make the directory yours with mode 0700 (or set XDG_RUNTIME_DIR); until then asks the host cannot carry are refused")
	} else {
		local = true
		fmt.Fprintf(stdout, "ok: local approval surface (sockets in %s): answer with `mcp-gate approvals watch` where the host cannot ask\n", dir)
	}
	for _, r := range hostconfig.Scan(o) {
		if len(r.Gates) == 0 {
			continue
		}
		switch r.Host {
		case "claude-desktop":
			if local {
				fmt.Fprintln(stdout, "note: claude-desktop does not declare elicitation: its ask calls wait for `mcp-gate approvals watch` (or approve/deny) in a terminal of yours (docs/hosts/claude-desktop.md)")
			} else {
				fmt.Fprintln(stdout, "note: claude-desktop does not declare elicitation and no local approval surface is available: its ask calls are refused (docs/hosts/claude-desktop.md)")
			}
		default:
			fmt.Fprintf(stdout, "ok: %s asks through its elicitation form (docs/hosts/%s.md)\n", r.Host, r.Host)
		}
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "%d problems\n", problems)
		return errSilentFailure
	}
	fmt.Fprintln(stdout, "no problems found")
	return nil
}

// toolPrefix is how a host names a server's tools: mcp__NAME__, with a
// plugin's server (plugin:P:S) as mcp__plugin_P_S__.
func toolPrefix(name string) string {
	if rest, ok := strings.CutPrefix(name, "plugin:"); ok {
		name = "plugin_" + strings.ReplaceAll(rest, ":", "_")
	}
	return "mcp__" + name + "__"
}

// stateDirs are the pins and catalog cache directories serve uses.
func stateDirs() []string {
	var out []string
	if d, err := pins.DefaultDir(); err == nil {
		out = append(out, d)
	}
	if d, err := catalogcache.DefaultDir(); err == nil {
		out = append(out, d)
	}
	return out
}

// cacheDir is $XDG_CACHE_HOME/mcp-gate, or ~/.cache/mcp-gate.
func cacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "mcp-gate")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "mcp-gate")
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
