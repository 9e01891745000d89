package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/remote"
)

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		serversPath = fs.String("servers", "", "servers file in the mcpServers JSON format (default $XDG_CONFIG_HOME/mcp-gate/servers.json)")
		policyPath  = fs.String("policy", "", "policy file (default $XDG_CONFIG_HOME/mcp-gate/policy.yaml if it exists, else the embedded default)")
		name        = fs.String("name", "gate", "the name the host gives the gate; tool names must fit 64 - len(\"mcp__NAME__\")")
		auditPath   = fs.String("audit-log", "", "append the decision audit (JSON lines) to this file (default: stderr)")
		logLevel    = fs.String("log-level", "info", "stderr log level: debug, info, warn or error")
		startTO     = fs.Duration("start-timeout", 30*time.Second, "how long an upstream may take to start and initialise")
		idleTO      = fs.Duration("idle-timeout", 10*time.Minute, "stop an upstream after this long with nothing in flight (0: never)")
		maxMsg      = fs.Int("max-message-bytes", rpc.DefaultMaxMessageBytes, "largest message accepted from the host or an upstream")
		opsAddr     = fs.String("ops-addr", "", "serve /healthz, /readyz and /metrics on this loopback HOST:PORT (tests; the HTTP front end serves them itself)")
		stallTO     = fs.Duration("upstream-stall", upstream.DefaultReadStall, "fail an upstream that leaves part of a message unfinished this long")
		localAsk    = fs.Bool("local-approvals", true, "answer asks the host cannot carry on the local approval surface (mcp-gate approvals)")
	)
	_ = fs.MarkHidden("ops-addr")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return usageError{err}
	}
	var probes *opsState // nil: metrics and probes off, at no cost
	if *opsAddr != "" {
		if probes, err = serveOps(ctx, *opsAddr, logger); err != nil {
			return err
		}
		defer probes.close()
	}
	auditLog, closeAudit, err := openAudit(*auditPath, stderr)
	if err != nil {
		return err
	}
	defer closeAudit()

	servers, err := loadServers(*serversPath)
	if err != nil {
		return err
	}
	warnInheritAll(servers, logger)
	remote.WarnPlainHTTP(servers, logger)
	// Reloads are audit events and operator news: both logs get them (once,
	// when the audit log is stderr itself).
	reloadLog := auditLog.Slog()
	if *auditPath != "" {
		reloadLog = slog.New(slog.NewMultiHandler(auditLog.Slog().Handler(), logger.Handler()))
	}
	var gate atomic.Pointer[proxy.Gate]
	store, err := openPolicy(ctx, *policyPath, serverNames(servers), reloadLog, func(old, new *policy.Policy) {
		if g := gate.Load(); g != nil {
			g.PolicyChanged(old, new)
		}
	})
	if err != nil {
		return err
	}
	probes.policyLoaded(store)
	local := startLocalApprovals(*localAsk, logger)
	if local != nil {
		defer local.Close()
	}
	g, err := proxy.New(proxy.Options{
		Name:            *name,
		Servers:         servers,
		Launcher:        &remote.Launcher{Stdio: &upstream.ExecLauncher{Logger: logger}, Logger: logger},
		StartTimeout:    *startTO,
		IdleTimeout:     *idleTO,
		MaxMessageBytes: *maxMsg,
		UpstreamStall:   *stallTO,
		Policy:          store,
		Logger:          logger,
		Audit:           auditLog,
		Observer:        probes.observer(),
		LocalApprover:   localApprover(local),
	})
	if err != nil {
		return err
	}
	gate.Store(g)
	// stdin and stdout as non-blocking pipes where that changes no other
	// process's view of them, so that a waiting read does not hold the
	// runtime's only P on a one-CPU machine (rpc.Stdio says why).
	in, out, closeStdio := rpc.Stdio(stdin, stdout)
	defer closeStdio()
	return g.Serve(ctx, in, out, proxy.WithIdentity(proxy.OSUser()))
}

// openPolicy loads the policy: the file given, else the default file if it
// exists, else the embedded default. A file is watched and hot-reloaded; a
// file that is missing or invalid at start-up is a refusal to start, with
// every problem listed.
func openPolicy(ctx context.Context, path string, known []string, log *slog.Logger, onChange func(old, new *policy.Policy)) (*policy.Store, error) {
	if path == "" {
		if def := defaultPolicyPath(); fileExists(def) {
			path = def
		}
	}
	if path == "" {
		p := policy.Default()
		log.Info("no policy file; the embedded default serves", "event", audit.EventPolicyLoad, "revision", p.Revision(), "fallback", p.Fallback().String())
		return policy.NewStatic(p), nil
	}
	store, err := policy.Watch(ctx, path, policy.Options{KnownServers: known}, log, onChange)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	p := store.Current()
	for _, w := range p.Warnings() {
		log.Warn("policy warning", "event", audit.EventPolicyLoad, "warning", w.String())
	}
	log.Info("policy loaded", "event", audit.EventPolicyLoad, "policy_file", p.Source(), "revision", p.Revision())
	return store, nil
}

// warnInheritAll says, at every start, which servers get the gate's whole
// environment: every secret in it reaches them, which the operator chose
// but should not forget.
func warnInheritAll(servers []upstream.Config, log *slog.Logger) {
	for _, s := range servers {
		if s.InheritAll {
			log.Warn(`server inherits the gate's whole environment ("inheritEnv": true): every secret in it reaches the server; list the variables it needs instead`, "server", s.Name)
		}
	}
}

func serverNames(servers []upstream.Config) []string {
	names := make([]string, 0, len(servers))
	for _, s := range servers {
		names = append(names, s.Name)
	}
	return names
}

// loadServers reads the servers file: the one given, else the default one.
// There is no embedded default: a gate with no servers would be a silent
// no-op, so a missing file is an error that says where the gate looked.
func loadServers(path string) ([]upstream.Config, error) {
	if path == "" {
		path = defaultServersPath()
		if !fileExists(path) {
			return nil, fmt.Errorf("no servers file: give --servers FILE (the mcpServers JSON of Claude Desktop or a .mcp.json), or create %s", path)
		}
	}
	return upstream.LoadServers(path, os.LookupEnv)
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: expected debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// openAudit opens the audit destination: a file opened for appending, or
// stderr. stdout is never used: it belongs to the protocol.
func openAudit(path string, stderr io.Writer) (*audit.Logger, func(), error) {
	if path == "" {
		return audit.New(stderr), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--audit-log: %w", err)
	}
	return audit.New(f), func() { f.Close() }, nil
}
