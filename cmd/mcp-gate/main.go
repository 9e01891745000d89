// Command mcp-gate is an MCP proxy that decides every tool call under a
// policy file: a host runs it as its one MCP server, and it runs the
// upstream servers of a servers file behind it.
//
//	mcp-gate serve   [--servers FILE] [--policy FILE] [--name NAME] [--audit-log FILE]
//	mcp-gate check   [--servers FILE] [--policy FILE] [--tests FILE] [--strict]
//	mcp-gate explain [--policy FILE] [--args JSON] [--name NAME] TOOL
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
	"syscall"

	"github.com/mcp-gate/mcp-gate/proxy"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
  mcp-gate approvals [list | approve ID [--session] | deny ID | watch | web]
  mcp-gate version

Run "mcp-gate COMMAND --help" for a command's flags.
`

// exitUsage is the exit status for a command line that cannot be run.
const exitUsage = 2

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	proxy.Version = version
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, rest, stdin, stdout, stderr)
	case "check":
		err = check(ctx, rest, stdout, stderr)
	case "explain":
		err = explain(rest, stdout, stderr)
	case "approvals":
		err = approvalsCmd(ctx, rest, stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "mcp-gate %s\n", version)
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
