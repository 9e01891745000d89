package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/hostconfig"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policy"
)

// installOptions are the flags install, uninstall and doctor share.
func installFlags(fs *pflag.FlagSet) func() (hostconfig.Options, error) {
	var (
		name    = fs.String("name", "gate", "the name the host gives the gate (its tools are mcp__NAME__<server>__<tool>)")
		servers = fs.String("servers", "", "the gate's servers file (default $XDG_CONFIG_HOME/mcp-gate/servers.json)")
		pol     = fs.String("policy", "", "policy file the gate runs with (default: serve's default)")
		scope   = fs.String("scope", "user", "claude-code: register the gate for the user (user) or for this project only (project)")
		project = fs.String("project", "", "claude-code: the project directory (default: the working directory)")
		command = fs.String("command", "", "the mcp-gate binary the host starts (default: this binary)")
		hostOS  = fs.String("host-os", runtime.GOOS, "the OS whose config layout to use (tests: Claude Desktop's paths differ per OS)")
	)
	_ = fs.MarkHidden("host-os")
	return func() (hostconfig.Options, error) {
		o := hostconfig.Options{Getenv: os.Getenv, GOOS: *hostOS, Name: *name, Scope: *scope, StateDir: filepath.Join(configDir(), "installs")}
		if err := naming.ValidateGateName(o.Name); err != nil {
			return o, usageError{fmt.Errorf("--name: %w", err)}
		}
		var err error
		if o.Home, err = os.UserHomeDir(); err != nil {
			return o, err
		}
		abs := func(p string) (string, error) {
			if p == "" {
				return "", nil
			}
			return filepath.Abs(p)
		}
		if o.Servers, err = abs(*servers); err != nil {
			return o, err
		}
		if o.Servers == "" {
			o.Servers = defaultServersPath()
		}
		if o.Policy, err = abs(*pol); err != nil {
			return o, err
		}
		if o.Cwd, err = abs(*project); err != nil {
			return o, err
		}
		if o.Cwd == "" {
			if o.Cwd, err = os.Getwd(); err != nil {
				return o, err
			}
		}
		o.Command = *command
		if o.Command == "" {
			if o.Command, err = os.Executable(); err != nil {
				return o, fmt.Errorf("finding this binary (pass --command): %w", err)
			}
		}
		if o.Command, err = filepath.Abs(o.Command); err != nil {
			return o, err
		}
		// Codex's tool_timeout_sec must outlast an approval.
		p := policy.Default()
		pp := o.Policy
		if pp == "" && fileExists(defaultPolicyPath()) {
			pp = defaultPolicyPath()
		}
		if pp != "" {
			if p, _, err = policy.LoadFile(pp, policy.Options{}); err != nil {
				return o, fmt.Errorf("the policy: %w", err)
			}
		}
		o.Timeout = p.ApprovalTimeout()
		return o, nil
	}
}

// install puts the gate in front of a host: see package hostconfig.
func install(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("install", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	dryRun := fs.Bool("dry-run", false, "show the change as a diff and write nothing")
	opts := installFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 1 || !slices.Contains(hostconfig.Hosts, fs.Arg(0)) {
		return usageError{fmt.Errorf("expected one host: %s", strings.Join(hostconfig.Hosts, ", "))}
	}
	host := fs.Arg(0)
	o, err := opts()
	if err != nil {
		return err
	}
	plan, err := hostconfig.PlanInstall(o, host)
	if err != nil {
		return err
	}
	for _, m := range plan.Moved {
		fmt.Fprintf(stdout, "move: %s\n", m)
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	if !plan.Changed() {
		fmt.Fprintf(stdout, "%s: the gate %q is already in place; nothing to change\n", host, o.Name)
		return nil
	}
	if *dryRun {
		fmt.Fprint(stdout, plan.Diff())
		fmt.Fprintln(stdout, "dry run: nothing was written")
		return nil
	}
	if err := hostconfig.Apply(o, plan); err != nil {
		return err
	}
	for _, e := range plan.Edits {
		fmt.Fprintf(stdout, "wrote %s\n", e.Path)
	}
	fmt.Fprintf(stdout, "%s now starts the gate %q in place of the servers it moved; backups and the install record are in %s; \"mcp-gate uninstall %s\" undoes this; \"mcp-gate doctor\" checks the result\n", host, o.Name, o.StateDir, host)
	return nil
}

// uninstall undoes install's own edits to a host.
func uninstall(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("uninstall", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	dryRun := fs.Bool("dry-run", false, "show the change as a diff and write nothing")
	opts := installFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 1 || !slices.Contains(hostconfig.Hosts, fs.Arg(0)) {
		return usageError{fmt.Errorf("expected one host: %s", strings.Join(hostconfig.Hosts, ", "))}
	}
	o, err := opts()
	if err != nil {
		return err
	}
	edits, notes, err := hostconfig.Uninstall(o, fs.Arg(0), *dryRun)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	for _, e := range edits {
		if *dryRun {
			fmt.Fprint(stdout, hostconfig.Diff(e.Path, e.Before, e.After))
		} else if e.After == nil {
			fmt.Fprintf(stdout, "removed %s (install created it)\n", e.Path)
		} else {
			fmt.Fprintf(stdout, "restored %s\n", e.Path)
		}
	}
	if *dryRun {
		fmt.Fprintln(stdout, "dry run: nothing was written")
	}
	return nil
}
