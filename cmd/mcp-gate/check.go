package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// check validates the servers file and the policy, and runs a policy test
// file, so that a security team can gate policy changes in CI. It exits 1
// when anything is wrong, printing every problem with its file:line.
func check(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		serversPath = fs.String("servers", "", "servers file to validate (default $XDG_CONFIG_HOME/mcp-gate/servers.json, if it exists)")
		policyPath  = fs.String("policy", "", "policy file to validate (default $XDG_CONFIG_HOME/mcp-gate/policy.yaml if it exists, else the embedded default)")
		testsPath   = fs.String("tests", "", "policy test cases (YAML) to run against the policy")
		name        = fs.String("name", "gate", "the name the host gives the gate (sets the tool-name budget)")
	)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	failed := false
	fail := func(format string, a ...any) {
		failed = true
		fmt.Fprintf(stderr, format+"\n", a...)
	}

	var known []string
	sp := *serversPath
	if sp == "" && fileExists(defaultServersPath()) {
		sp = defaultServersPath()
	}
	if sp != "" {
		servers, err := upstream.LoadServers(sp, os.LookupEnv)
		if err != nil {
			fail("%v", err)
		} else {
			budget := naming.Budget(*name)
			for _, s := range servers {
				if err := naming.ValidateServerKey(s.Name, budget); err != nil {
					fail("%s: server %q: %v", sp, s.Name, err)
				}
				if s.Type != upstream.TypeStdio {
					fmt.Fprintf(stdout, "%s: server %q: %s servers are not supported yet; serve will leave it out\n", sp, s.Name, s.Type)
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

	pol, err := loadPolicyForCheck(*policyPath, known, stdout, stderr)
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
				inline, warnings, err := cases.InlinePolicy(policy.Options{KnownServers: known})
				for _, w := range warnings {
					fmt.Fprintf(stdout, "warning: %s\n", w)
				}
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
	if failed {
		return errSilentFailure
	}
	return nil
}

func loadPolicyForCheck(path string, known []string, stdout, stderr io.Writer) (*policy.Policy, error) {
	if path == "" && fileExists(defaultPolicyPath()) {
		path = defaultPolicyPath()
	}
	if path == "" {
		p := policy.Default()
		fmt.Fprintf(stdout, "ok: policy %s (revision %s)\n", p.Source(), p.Revision())
		return p, nil
	}
	p, warnings, err := policy.LoadFile(path, policy.Options{KnownServers: known})
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "ok: policy %s (revision %s)\n", path, p.Revision())
	return p, nil
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
	)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
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
	pol, err := loadPolicyForCheck(*policyPath, nil, io.Discard, stderr)
	if err != nil {
		return err
	}
	d := pol.Decide(call)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Tool     string `json:"tool"`
		Verdict  string `json:"verdict"`
		Rule     string `json:"rule"`
		Reason   string `json:"reason"`
		Revision string `json:"revision"`
	}{call.PolicyName(), d.Verdict.String(), d.Rule, d.Reason, d.Revision})
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
