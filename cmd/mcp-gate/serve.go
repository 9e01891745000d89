package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
		auditPath   = fs.String("audit-log", "", "append the decision audit (JSON lines) to this file (default: stderr, in --log-format)")
		logLevel    = fs.String("log-level", "info", "operational log level on stderr: debug, info, warn or error (never filters the audit)")
		logFormat   = fs.String("log-format", "text", "stderr log format, audit lines on stderr included: text or json")
		startTO     = fs.Duration("start-timeout", 30*time.Second, "how long an upstream may take to start and initialise")
		idleTO      = fs.Duration("idle-timeout", 10*time.Minute, "stop an upstream after this long with nothing in flight (0: never)")
		maxMsg      = fs.Int("max-message-bytes", rpc.DefaultMaxMessageBytes, "largest message read from or written to the host or an upstream (a larger result fails its call alone; with --http the default is 32 MiB)")
		opsAddr     = fs.String("ops-addr", "", "serve /healthz, /readyz and /metrics on this loopback HOST:PORT (tests; the HTTP front end serves them itself)")
		stallTO     = fs.Duration("upstream-stall", upstream.DefaultReadStall, "fail an upstream that leaves part of a message unfinished this long")
		httpOpts    = registerHTTPFlags(fs)
		noCache     = fs.Bool("no-catalog-cache", false, "list every server live at each session instead of from the catalog cache")
		localAsk    = fs.Bool("local-approvals", true, "answer asks the host cannot carry on the local approval surface (mcp-gate approvals)")
	)
	_ = fs.MarkHidden("ops-addr")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if err := httpOpts.validate(); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if httpOpts.enabled() && !fs.Changed("max-message-bytes") {
		*maxMsg = httpMaxMessageBytes
	}
	procsFor(!httpOpts.enabled()) // procs.go
	logger, stderrLog, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageError{err}
	}
	// A library that logs through the standard log package (the metrics
	// library reports a /proc file it cannot read that way) writes
	// through the operational logger too, in its format, instead of a
	// bare line on stderr. At warn, as the HTTP servers' error logs
	// (ops.go, servehttp.go): what a library logs that way is trouble
	// (the metrics library's lines all begin "ERROR:"), and at the bridge's
	// default, info, --log-level warn or error would drop it unseen.
	slog.SetDefault(logger)
	slog.SetLogLoggerLevel(slog.LevelWarn)
	var probes *opsState // nil: metrics and probes off, at no cost
	if *opsAddr != "" {
		if probes, err = serveOps(ctx, *opsAddr, logger); err != nil {
			return err
		}
		defer probes.close()
	} else if httpOpts.enabled() {
		// The HTTP front end serves the operations endpoints on its own
		// port (servehttp.go); nothing of them runs in stdio mode.
		probes = newOps(ctx)
	}
	auditLog, closeAudit, err := openAudit(*auditPath, stderrLog, *logFormat)
	if err != nil {
		return err
	}
	defer closeAudit()

	// A configuration error keeps the session up with nothing served and
	// the error where hosts show it (proxy.Trouble); with a terminal on
	// stdin nobody is there to show it to but the person at it, and the
	// gate exits as any command would.
	interactive := isTerminal(stdin)
	var trouble startTrouble
	servers, serversPathUsed := loadServersTrouble(*serversPath, logger, &trouble)
	servers, mark := refuseNesting(servers, serversPathUsed, logger, &trouble)
	servers = refuseLongKeys(servers, *name, logger, &trouble)
	warnInheritAll(servers, logger)
	remote.WarnPlainHTTP(servers, logger)
	if interactive && !trouble.empty() {
		return trouble.err()
	}
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
			if old == policy.FailClosed() {
				logger.Info("the policy file loads now: serving again", "revision", new.Revision())
				g.TroubleCleared()
			}
		}
	}, !interactive)
	if err != nil {
		if interactive || store == nil {
			return err
		}
		logger.Error("policy file did not load: serving nothing until it is fixed (the file is watched)", "error", err.Error())
		trouble.policy = store
		trouble.policyErr = err
		trouble.policyPath = *policyPath
		if trouble.policyPath == "" {
			trouble.policyPath = defaultPolicyPath() // the file openPolicy read
		}
	}
	probes.policyLoaded(store)
	local := startLocalApprovals(*localAsk, logger)
	if local != nil {
		defer local.Close()
	}
	pinStore := openPins(logger)
	opts := proxy.Options{
		Name:            *name,
		Servers:         servers,
		Launcher:        &guardAhead{Launcher: &remote.Launcher{Stdio: &upstream.ExecLauncher{Logger: logger, Mark: mark}, Logger: logger}, preload: preloadPins(pinStore)},
		StartTimeout:    *startTO,
		IdleTimeout:     *idleTO,
		MaxMessageBytes: *maxMsg,
		UpstreamStall:   *stallTO,
		ProbeUnpinned:   true, // an unpinned server's era is probed, once (upstream/era.go)
		Policy:          store,
		Logger:          logger,
		Audit:           auditLog,
		Observer:        probes.observer(),
		Trouble:         trouble.report,
		Pins:            pinStore,
		LocalApprover:   localApprover(local),
	}
	if !*noCache {
		opts.CatalogCache = openCatalogCache(logger)
	}
	g, err := proxy.New(opts)
	if err != nil {
		return err
	}
	gate.Store(g)
	if httpOpts.enabled() {
		return serveHTTP(ctx, g, httpOpts, int64(*maxMsg), logger, probes)
	}
	// stdin and stdout as non-blocking pipes where that changes no other
	// process's view of them, so that a waiting read does not hold the
	// runtime's only P on a one-CPU machine (rpc.Stdio says why).
	in, out, closeStdio := rpc.Stdio(stdin, stdout)
	defer closeStdio()
	if err := g.Serve(ctx, in, out, proxy.WithIdentity(proxy.OSUser())); err != nil {
		return err
	}
	// The session is over: a configuration error still in force is the
	// exit status, so a script or supervisor sees it too.
	if t := trouble.report(); t.Fatal != "" {
		return errors.New(t.Fatal)
	}
	return nil
}

// openPolicy loads the policy: the file given, else the default file if it
// exists, else the embedded default. A file is watched and hot-reloaded; a
// file that is missing or invalid at start-up is a refusal to start, with
// every problem listed.
//
// With failClosed, a file that does not load gives the fail-closed store
// (nothing allowed, nothing listed), still watched, with the error.
func openPolicy(ctx context.Context, path string, known []string, log *slog.Logger, onChange func(old, new *policy.Policy), failClosed bool) (*policy.Store, error) {
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
	watch := policy.Watch
	if failClosed {
		watch = policy.WatchFailClosed
	}
	store, err := watch(ctx, path, policy.Options{KnownServers: known}, log, onChange)
	if err != nil {
		return store, fmt.Errorf("policy %s: %w", path, err)
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
