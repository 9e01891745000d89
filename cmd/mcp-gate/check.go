package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/remote"
)

// check validates the servers file and the policy, and runs a policy test
// file, so that a security team can gate policy changes in CI. It exits 1
// when anything is wrong, printing every problem with its file:line. With
// --strict it also starts every server to learn the tools and prompts it
// lists, and exits 1 on any warning: a glob that matches no listed name, or
// names a server the servers file does not have, never applies, and a
// policy that silently does nothing is worse than one that fails its check.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		serversPath = fs.String("servers", "", "servers file to validate (default $XDG_CONFIG_HOME/mcp-gate/servers.json, if it exists)")
		policyPath  = fs.String("policy", "", "policy file to validate (default $XDG_CONFIG_HOME/mcp-gate/policy.yaml if it exists, else the embedded default)")
		testsPath   = fs.String("tests", "", "policy test cases (YAML) to run against the policy")
		name        = fs.String("name", "gate", "the name the host gives the gate (sets the tool-name budget)")
		strict      = fs.Bool("strict", false, "start each server to learn its tools and prompts, warn about globs that match none, and exit 1 on any warning")
		startTO     = fs.Duration("start-timeout", 30*time.Second, "with --strict: how long a server may take to start and list its names")
	)
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	failed := false
	fail := func(format string, a ...any) {
		failed = true
		fmt.Fprintf(stderr, format+"\n", a...)
	}

	var (
		known    []string
		servers  []upstream.Config
		warnings int
	)
	sp := *serversPath
	if sp == "" && fileExists(defaultServersPath()) {
		sp = defaultServersPath()
	}
	if sp != "" {
		rep, err := upstream.ReadServers(sp, os.LookupEnv)
		if err == nil && len(rep.Errors) > 0 {
			// serve leaves these entries out and serves the rest; check
			// fails, as it does for every problem.
			err = errors.Join(rep.Errors...)
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
			warnings++
		}
		for _, d := range rep.Disabled {
			fmt.Fprintf(stdout, "%s: server %q is disabled; serve will not start it\n", sp, d)
		}
		servers = rep.Servers
		if err != nil {
			fail("%v", err)
		} else {
			budget := naming.Budget(*name)
			for _, s := range servers {
				if err := naming.ValidateServerKey(s.Name, budget); err != nil {
					fail("%s: server %q: %v", sp, s.Name, err)
				}
				known = append(known, s.Name)
			}
			if !failed {
				fmt.Fprintf(stdout, "ok: servers %s: %d servers\n", sp, len(servers))
			}
		}
	}
	if err := naming.ValidateGateName(*name); err != nil {
		fail("--name %q: %v", *name, err)
	}

	opts := policy.Options{KnownServers: known}
	if *strict {
		if sp == "" {
			return usageError{errors.New("--strict needs the servers file (--servers FILE), to start the servers and learn their names")}
		}
		opts.Catalog = learnCatalog(ctx, servers, *startTO, stdout)
	}
	pol, ws, err := loadPolicyForCheck(*policyPath, opts, stdout, stderr)
	warnings += ws
	if err != nil {
		fail("%v", err)
	}

	if *testsPath != "" {
		data, err := os.ReadFile(*testsPath)
		if err != nil {
			return err
		}
		cases, err := policy.ParseCases(*testsPath, data)
		if err != nil {
			fail("%v", err)
		} else {
			target := pol
			if cases.HasPolicy() {
				inline, ws, err := cases.InlinePolicy(opts)
				for _, w := range ws {
					fmt.Fprintf(stderr, "warning: %s\n", w)
				}
				warnings += len(ws)
				if err != nil {
					fail("%v", err)
				}
				target = inline
			}
			if target != nil {
				passed := 0
				results := cases.Run(target)
				for _, r := range results {
					if r.Pass {
						passed++
						fmt.Fprintln(stdout, r.String())
					} else {
						fail("%s", r.String())
					}
				}
				fmt.Fprintf(stdout, "%d of %d cases passed (policy %s, revision %s)\n", passed, len(results), target.Source(), target.Revision())
			}
		}
	}
	if *strict && warnings > 0 {
		fmt.Fprintf(stderr, "%d warnings; --strict fails on any warning\n", warnings)
		failed = true
	}
	if failed {
		return errSilentFailure
	}
	return nil
}

// learnCatalog starts (or connects to) every server at once and lists its
// tools and prompts, each server within timeout. A server that cannot
// start or list is reported and left out of the catalog, so its globs are
// not judged: that is not a failure by itself, since the machine that runs
// the check may lack what the server needs.
func learnCatalog(ctx context.Context, servers []upstream.Config, timeout time.Duration, out io.Writer) map[string]policy.ServerNames {
	stdio := servers // every type: remote ones are reached as serve reaches them
	log := slog.New(slog.DiscardHandler)
	pool := upstream.NewPool(stdio, upstream.PoolOptions{
		Launcher:     &remote.Launcher{Stdio: &upstream.ExecLauncher{Logger: log}, Logger: log},
		Logger:       log,
		StartTimeout: timeout,
		InitParams: func(_, _ string) json.RawMessage {
			// Elicitation and sampling, as hosts declare them, so that
			// servers that register tools only for capable clients list
			// them; check never calls a tool, so neither is ever asked.
			b, _ := json.Marshal(map[string]any{
				"protocolVersion": upstream.ProtocolVersion,
				"capabilities":    map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}},
				"clientInfo":      map[string]any{"name": "mcp-gate check", "version": version},
			})
			return b
		},
	})
	defer pool.Close()
	type result struct {
		names policy.ServerNames
		err   error
	}
	results := make([]result, len(stdio))
	var wg sync.WaitGroup
	for i, cfg := range stdio {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			results[i].names, results[i].err = listServer(ctx, pool, cfg.Name)
		})
	}
	wg.Wait()
	catalog := map[string]policy.ServerNames{}
	for i, cfg := range stdio {
		r := results[i]
		if r.err != nil {
			// Why carries the server's words (its stderr's tail, its
			// list's error), printed to a terminal: proxy.TerminalReason.
			fmt.Fprintf(out, "note: server %q "+unstartableNote+" (%s); globs over it are not checked\n", cfg.Name, proxy.TerminalReason(r.err))
			continue
		}
		catalog[cfg.Name] = r.names
		fmt.Fprintf(out, "ok: server %q lists %d tools and %d prompts\n", cfg.Name, len(r.names.Tools), len(r.names.Prompts))
	}
	return catalog
}

func listServer(ctx context.Context, pool *upstream.Pool, server string) (policy.ServerNames, error) {
	var out policy.ServerNames
	s, err := pool.Session(ctx, "", server)
	if err != nil {
		return out, err
	}
	if s.Caps.Tools {
		if out.Tools, err = upstream.ListNames(ctx, s, "tools/list", "tools"); err != nil {
			return out, err
		}
	}
	if s.Caps.Prompts {
		if out.Prompts, err = upstream.ListNames(ctx, s, "prompts/list", "prompts"); err != nil {
			return out, err
		}
	}
	return out, nil
}

// loadPolicyForCheck loads the policy to check, printing its warnings, and
// returns how many there were.
func loadPolicyForCheck(path string, opts policy.Options, stdout, stderr io.Writer) (*policy.Policy, int, error) {
	if path == "" && fileExists(defaultPolicyPath()) {
		path = defaultPolicyPath()
	}
	if path == "" {
		p := policy.Default()
		fmt.Fprintf(stdout, "ok: policy %s (revision %s)\n", p.Source(), p.Revision())
		return p, 0, nil
	}
	p, warnings, err := policy.LoadFile(path, opts)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if err != nil {
		return nil, len(warnings), err
	}
	fmt.Fprintf(stdout, "ok: policy %s (revision %s)\n", path, p.Revision())
	return p, len(warnings), nil
}

// explain prints the decision the policy takes about one call, as one JSON
// object: {"tool","verdict","rule","reason","revision"}. TOOL may be spelled
// as the policy (mcp:s:t, prompt:s:p, resource:s:uri, sampling:s), as the
// gate's wire name (s__t) or as the host shows it (mcp__NAME__s__t).
func explain(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		policyPath = fs.String("policy", "", "policy file (default $XDG_CONFIG_HOME/mcp-gate/policy.yaml if it exists, else the embedded default)")
		argsJSON   = fs.String("args", "", "the call's arguments, a JSON object")
		name       = fs.String("name", "gate", "the name the host gives the gate, to read mcp__NAME__ spellings")
		userSub    = fs.String("user", "", "decide for this user (user.sub in conditions; default: the OS user, as in stdio mode)")
		userGroups = fs.StringSlice("groups", nil, "the user's groups (user.groups), comma-separated; only with --user")
		userEmail  = fs.String("email", "", "the user's email (user.email); only with --user")
	)
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if *userSub == "" && (len(*userGroups) > 0 || *userEmail != "") {
		return usageError{errors.New("--groups and --email describe the user given with --user; give --user SUB too")}
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("expected exactly one TOOL, e.g. mcp:github:create_issue or mcp__gate__github__create_issue")}
	}
	call, err := parseAnySpelling(fs.Arg(0), *name)
	if err != nil {
		return usageError{err}
	}
	if *argsJSON != "" {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*argsJSON), &probe); err != nil {
			return usageError{fmt.Errorf("--args: %v; expected a JSON object", err)}
		}
		call.Args = json.RawMessage(*argsJSON)
	}
	pol, _, err := loadPolicyForCheck(*policyPath, policy.Options{}, io.Discard, stderr)
	if err != nil {
		return err
	}
	if *userSub != "" {
		call.User = policy.User{Sub: *userSub, Email: *userEmail, Groups: *userGroups}
	} else {
		call.User = policy.User{Sub: proxy.OSUser().Subject}
	}
	d := pol.Decide(call)
	// pins: what a call gets when the definition of this tool or prompt
	// changed since it was pinned; shown when the policy sets it.
	pinAction := ""
	if pol.PinsSet() && (call.Kind == policy.KindTool || call.Kind == policy.KindPrompt) {
		pinAction = pol.PinAction(call.Server).String()
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Tool     string `json:"tool"`
		Verdict  string `json:"verdict"`
		Rule     string `json:"rule"`
		Reason   string `json:"reason"`
		Revision string `json:"revision"`
		Pins     string `json:"pins_changed_definition,omitempty"`
	}{call.PolicyName(), d.Verdict.String(), d.Rule, d.Reason, d.Revision, pinAction})
}

func parseAnySpelling(s, gateName string) (policy.Call, error) {
	for _, ns := range []string{"prompt:", "resource:", "sampling:"} {
		if strings.HasPrefix(s, ns) {
			return policy.ParseName(s)
		}
	}
	k, err := naming.ParseSpelling(s, gateName)
	if err != nil {
		return policy.Call{}, err
	}
	return policy.Call{Kind: policy.KindTool, Server: k.Server, Name: k.Name}, nil
}
