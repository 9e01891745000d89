// Command mcp-gate is an MCP proxy that decides every tool call under a
// policy file: a host runs it as its one MCP server, and it runs the
// upstream servers of a servers file behind it.
//
//	mcp-gate serve   [--servers FILE] [--policy FILE] [--name NAME] [--audit-log FILE]
//	mcp-gate check   [--servers FILE] [--policy FILE] [--tests FILE] [--strict]
//	mcp-gate explain [--policy FILE] [--args JSON] [--name NAME] TOOL
//	mcp-gate warm    [--servers FILE] [--capabilities JSON]
//	mcp-gate pins    [accept SERVER[:NAME]]
//	mcp-gate install   [--dry-run] [--scope user|project] [--name NAME] HOST
//	mcp-gate uninstall [--dry-run] HOST
//	mcp-gate doctor    [--name NAME]
//	mcp-gate approvals [list | approve ID [--session] | deny ID | watch | web]
//	mcp-gate version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/mcp-gate/mcp-gate/proxy"
)

// version is set at build time with -ldflags "-X main.version=...";
// otherwise the module version the binary was built at serves
// (versionString).
var version = "dev"

// versionString is the version and the commit the binary was built from,
// as the Go toolchain recorded them (runtime/debug.ReadBuildInfo): the
// module version for `go install ...@v1.2.3`, the VCS revision and whether
// the tree had changes for a build in a checkout.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	return describeBuild(version, bi)
}

// describeBuild is versionString for given build information.
func describeBuild(v string, bi *debug.BuildInfo) string {
	if v == "dev" && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		case "vcs.time":
			at = ", " + s.Value
		}
	}
	if rev == "" {
		return fmt.Sprintf("%s (commit unknown, %s)", v, bi.GoVersion)
	}
	return fmt.Sprintf("%s (commit %s%s%s, %s)", v, rev, at, modified, bi.GoVersion)
}

func main() {
	stopProfile := startCPUProfile()
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	os.Exit(code)
}

const usage = `mcp-gate decides every MCP tool call under a policy file.

Usage:
  mcp-gate serve   [--servers FILE] [--policy FILE] [--name NAME] [--audit-log FILE]
  mcp-gate check   [--servers FILE] [--policy FILE] [--tests FILE] [--strict]
  mcp-gate explain [--policy FILE] [--args JSON] [--name NAME] TOOL
  mcp-gate warm    [--servers FILE] [--capabilities JSON]   # fill the catalog cache
  mcp-gate pins    [accept SERVER[:NAME]]                   # list or accept tool changes
  mcp-gate install   [--dry-run] [--scope user|project] [--name NAME] claude-code|codex|claude-desktop
  mcp-gate uninstall [--dry-run] claude-code|codex|claude-desktop
  mcp-gate doctor    [--name NAME]
  mcp-gate approvals [list | approve ID [--session] | deny ID | watch | web]
  mcp-gate version

Run "mcp-gate COMMAND --help" for a command's flags.
`

// exitUsage is the exit status for a command line that cannot be run.
const exitUsage = 2

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	proxy.Version = version
	if proxy.Version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			proxy.Version = bi.Main.Version
		}
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	// SIGHUP (the terminal closed) is a shutdown like SIGTERM: the
	// upstreams are stopped, not left to the kernel's default of killing
	// the gate alone.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cmd, rest := args[0], args[1:]
	if cmd != "serve" {
		procsFor(false) // serve decides once its flags are read
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, rest, stdin, stdout, stderr)
	case "check":
		err = check(ctx, rest, stdout, stderr)
	case "explain":
		err = explain(rest, stdout, stderr)
	case "warm":
		err = warm(ctx, rest, stdout, stderr)
	case "pins":
		err = pinsCmd(rest, stdout, stderr)
	case "install":
		err = install(rest, stdout, stderr)
	case "uninstall":
		err = uninstall(rest, stdout, stderr)
	case "doctor":
		err = doctor(ctx, rest, stdout, stderr)
	case "approvals":
		err = approvalsCmd(ctx, rest, stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "mcp-gate %s\n", versionString())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "mcp-gate: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcp-gate %s: %v\n", cmd, err)
		return exitUsage
	case errors.Is(err, errSilentFailure):
		return 1
	default:
		fmt.Fprintf(stderr, "mcp-gate %s: %v\n", cmd, err)
		return 1
	}
}

// usageError is a command line that cannot be run as given.
type usageError struct{ error }

// errSilentFailure means the command has already said what went wrong.
var errSilentFailure = errors.New("failed")

// configDir is $XDG_CONFIG_HOME/mcp-gate, or ~/.config/mcp-gate.
func configDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "mcp-gate")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "mcp-gate")
}

func defaultServersPath() string { return filepath.Join(configDir(), "servers.json") }
func defaultPolicyPath() string  { return filepath.Join(configDir(), "policy.yaml") }

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
