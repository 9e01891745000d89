package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// startTrouble is what went wrong reading the configuration, for the host
// (proxy.Trouble) and for the exit status.
type startTrouble struct {
	serversErr error    // nothing in the servers file can be served
	notes      []string // entries left out
	// policy is the store holding policy.FailClosed while the policy file
	// does not load; policyErr why it did not at the start.
	policy     *policy.Store
	policyErr  error
	policyPath string
}

func (t *startTrouble) empty() bool {
	return t.serversErr == nil && len(t.notes) == 0 && t.policyErr == nil
}

// err is every problem, for a gate with a terminal on stdin.
func (t *startTrouble) err() error {
	var errs []error
	if t.serversErr != nil {
		errs = append(errs, t.serversErr)
	}
	for _, n := range t.notes {
		errs = append(errs, errors.New(n))
	}
	if t.policyErr != nil {
		errs = append(errs, t.policyErr)
	}
	return errors.Join(errs...)
}

// report is proxy.Options.Trouble: the policy part clears itself when a
// fixed file has replaced the fail-closed policy.
func (t *startTrouble) report() proxy.Trouble {
	var r proxy.Trouble
	var fatal []string
	if t.serversErr != nil {
		fatal = append(fatal, t.serversErr.Error())
	}
	if t.policyErr != nil && t.policy.Current() == policy.FailClosed() {
		fatal = append(fatal, fmt.Sprintf("the policy file %s did not load (fix it: the gate reloads it): %v", filepath.Base(t.policyPath), t.policyErr))
	}
	r.Fatal = strings.Join(fatal, "; ")
	r.Notes = t.notes
	return r
}

// loadServersTrouble reads the servers file: the one given, else the
// default one. A file that cannot be read or is not a servers file leaves
// nothing to serve; a bad entry leaves that server out. Both are recorded
// in tr and logged. It returns the usable servers and the path read.
func loadServersTrouble(path string, log *slog.Logger, tr *startTrouble) ([]upstream.Config, string) {
	if path == "" {
		path = defaultServersPath()
		if !fileExists(path) {
			// There is no embedded default: a gate with no servers would
			// be a silent no-op, so a missing file says where it looked.
			tr.serversErr = fmt.Errorf("no servers file: give --servers FILE (the mcpServers JSON of Claude Desktop or a .mcp.json), or create %s", path)
			log.Error("nothing to serve", "error", tr.serversErr.Error())
			return nil, path
		}
	}
	rep, err := upstream.ReadServers(path, os.LookupEnv)
	if err != nil {
		tr.serversErr = err
		log.Error("nothing to serve", "servers_file", path, "error", err.Error())
		return nil, path
	}
	for _, w := range rep.Warnings {
		log.Warn("servers file: key accepted and ignored", "warning", w)
	}
	for _, name := range rep.Disabled {
		log.Warn(`server disabled in the servers file ("disabled": true): not started`, "server", name)
	}
	for _, e := range rep.Errors {
		for _, line := range strings.Split(e.Error(), "\n") {
			tr.notes = append(tr.notes, "entry left out: "+line)
		}
		log.Error("servers file: entry left out", "error", e.Error())
	}
	return rep.Servers, path
}

// nestingEnv carries, to every child, the servers files of the gates above
// it (os.PathListSeparator between them). A gate that finds its own file in
// it was started, however indirectly (npx, a wrapper script), by a gate
// reading the same file: a loop that would start gates until the machine
// gives out. Such a gate serves nothing and says why.
const nestingEnv = "MCP_GATE_NESTED_IN"

// maxNesting bounds gates behind gates whatever their files.
const maxNesting = 4

// refuseNesting leaves out every entry that would start the gate on its
// own servers file again, and returns the marker to set as nestingEnv in
// every child's environment (upstream.ExecLauncher.Mark); a gate already
// nested in a gate on the same file (or too deep) serves nothing.
func refuseNesting(servers []upstream.Config, serversPath string, log *slog.Logger, tr *startTrouble) ([]upstream.Config, map[string]string) {
	self := canonicalPath(serversPath)
	var chain []string
	if v := os.Getenv(nestingEnv); v != "" {
		chain = filepath.SplitList(v)
	}
	if slices.Contains(chain, self) || len(chain) >= maxNesting {
		if tr.serversErr == nil {
			why := fmt.Sprintf("this gate was started by a gate reading the same servers file %s", serversPath)
			if !slices.Contains(chain, self) {
				why = fmt.Sprintf("this gate is %d gates deep (%s)", len(chain)+1, strings.Join(chain, " → "))
			}
			tr.serversErr = fmt.Errorf("%s: it would start gates again and again; remove the gate's own entry from that file", why)
		}
		log.Error("gate nested in itself: serving nothing", "servers_file", serversPath, "nested_in", strings.Join(chain, string(os.PathListSeparator)))
		return nil, nil
	}
	marker := strings.Join(append(chain, self), string(os.PathListSeparator))
	exe, _ := os.Executable()
	out := servers[:0:0]
	for _, s := range servers {
		if isSelf(s, exe, self) {
			n := fmt.Sprintf("server %q runs this gate on its own servers file (%s %s): it would start itself again and again; left out — remove the entry, or give the inner gate another --servers file", s.Name, s.Command, strings.Join(s.Args, " "))
			tr.notes = append(tr.notes, n)
			log.Error("servers file: entry left out", "server", s.Name, "error", n)
			continue
		}
		out = append(out, s)
	}
	return out, map[string]string{nestingEnv: marker}
}

// isSelf reports whether an entry starts this very executable on the
// servers file at self: its command resolves to the same file as the
// running gate, and its --servers names self (or, without one, the default
// file is self).
func isSelf(s upstream.Config, exe, self string) bool {
	if exe == "" || s.Command == "" {
		return false
	}
	cmd := s.Command
	if !strings.ContainsRune(cmd, filepath.Separator) {
		p, err := exec.LookPath(cmd)
		if err != nil {
			return false
		}
		cmd = p
	} else if !filepath.IsAbs(cmd) && s.Cwd != "" {
		cmd = filepath.Join(s.Cwd, cmd)
	}
	a, err1 := os.Stat(cmd)
	b, err2 := os.Stat(exe)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		return false
	}
	target := ""
	for i, arg := range s.Args {
		if v, ok := strings.CutPrefix(arg, "--servers="); ok {
			target = v
		} else if arg == "--servers" && i+1 < len(s.Args) {
			target = s.Args[i+1]
		}
	}
	if target == "" {
		return canonicalPath(defaultServersPath()) == self
	}
	if !filepath.IsAbs(target) && s.Cwd != "" {
		target = filepath.Join(s.Cwd, target)
	}
	return canonicalPath(target) == self
}

// canonicalPath is p absolute with its symlinks resolved, as far as they
// resolve.
func canonicalPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// syncWriter serialises whole lines to stderr from the operational log and
// the audit, so that the two never interleave within a line. A line cut
// short (a pipe nobody read for the audit's pipeWait) is ended before the
// next, so that the next line, an audit record perhaps, starts a line of
// its own.
type syncWriter struct {
	mu   sync.Mutex
	w    io.Writer
	torn bool
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.torn {
		if _, err := s.w.Write([]byte{'\n'}); err != nil {
			return 0, err
		}
		s.torn = false
	}
	n, err := s.w.Write(p)
	if err != nil && n > 0 && n < len(p) {
		s.torn = true
	}
	return n, err
}

// newLogger returns the operational logger, in the chosen format at the
// chosen level, and the serialised stderr the audit shares with it.
func newLogger(w io.Writer, level, format string) (*slog.Logger, io.Writer, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: expected debug, info, warn or error", level)
	}
	// Raw writes where they cannot wait, so that an audit line on stderr
	// does not wake the runtime's monitor thread on every call
	// (audit/filewrite_linux.go).
	sw := &syncWriter{w: audit.FileWriter(w)}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(sw, opts)), sw, nil
	case "json":
		return slog.New(slog.NewJSONHandler(sw, opts)), sw, nil
	}
	return nil, nil, fmt.Errorf("--log-format %q: expected text or json", format)
}

// openAudit opens the audit destination: a file opened for appending
// (JSON lines, whatever --log-format says: it is for machines), or stderr
// in the log format. Every line is written to the OS (one write(2)) before
// the request it records is forwarded: the writers are unbuffered. stdout
// is never used: it belongs to the protocol. The level of the operational
// log never filters the audit.
func openAudit(path string, stderr io.Writer, format string) (*audit.Logger, func(), error) {
	if path == "" {
		if format == "text" {
			return audit.NewHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug})), func() {}, nil
		}
		return audit.New(stderr), func() {}, nil
	}
	// Opened by path, and again should the file be deleted or replaced
	// while the gate runs (audit/reopen.go).
	l, closeFile, err := audit.OpenFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--audit-log: %w", err)
	}
	return l, func() { closeFile() }, nil
}

// flagError is a flag set's parse error as the command's result: --help
// is a success (the usage went to stderr), anything else a usage error.
func flagError(err error) error {
	if errors.Is(err, pflag.ErrHelp) {
		return nil
	}
	return usageError{err}
}

// refuseLongKeys leaves out the servers whose key leaves no room for tool
// names under the gate's name (proxy.New would refuse the whole gate),
// saying so, as for any other bad entry.
func refuseLongKeys(servers []upstream.Config, gateName string, log *slog.Logger, tr *startTrouble) []upstream.Config {
	if naming.ValidateGateName(gateName) != nil {
		return servers // a usage error proxy.New reports
	}
	budget := naming.Budget(gateName)
	out := servers[:0:0]
	for _, s := range servers {
		if err := naming.ValidateServerKey(s.Name, budget); err != nil {
			n := fmt.Sprintf("server %q left out: %v", s.Name, err)
			tr.notes = append(tr.notes, n)
			log.Error("servers file: entry left out", "server", s.Name, "error", err.Error())
			continue
		}
		out = append(out, s)
	}
	return out
}
