package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/remote"
)

// openPins opens the user's pins (nil with a warning when there is no
// state directory: the gate then pins nothing, and says so).
func openPins(log *slog.Logger) *pins.Store {
	dir, err := pins.DefaultDir()
	if err != nil {
		log.Warn("no state directory: tool definitions are not pinned", "error", err)
		return nil
	}
	return pins.Open(dir)
}

// preloadPins reads a server's pins into the store's cache (guardAhead
// runs it while the server starts), nil without a store. An error is left
// for the pin check, which reads the file again and refuses the call with
// it.
func preloadPins(s *pins.Store) func(server string) {
	if s == nil {
		return nil
	}
	return func(server string) { _, _ = s.Load(server) }
}

// openCatalogCache opens the user's catalog cache (nil with a warning when
// there is no cache directory: every session then lists live).
func openCatalogCache(log *slog.Logger) *catalogcache.Store {
	dir, err := catalogcache.DefaultDir()
	if err != nil {
		log.Warn("no cache directory: every session starts the servers to list them", "error", err)
		return nil
	}
	return catalogcache.Open(dir)
}

// pinsCmd lists the pins and the pending changes, or accepts changes:
//
//	mcp-gate pins                        every server's pins and pending changes
//	mcp-gate pins accept SERVER[:NAME]   accept the server's pending changes (or NAME's)
func pinsCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("pins", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	dir, err := pins.DefaultDir()
	if err != nil {
		return err
	}
	store := pins.Open(dir)
	switch {
	case fs.NArg() == 0:
		return listPins(store, stdout)
	case fs.Arg(0) == "accept" && fs.NArg() == 2:
		return acceptPins(store, fs.Arg(1), stdout)
	}
	return usageError{errors.New("expected no arguments (list), or accept SERVER[:NAME]")}
}

func listPins(store *pins.Store, w io.Writer) error {
	servers, err := store.Servers()
	if err != nil {
		return err
	}
	if len(servers) == 0 {
		fmt.Fprintf(w, "no pins yet in %s\n", store.Dir())
		return nil
	}
	var errs []error
	for _, server := range servers {
		f, err := store.Load(server)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "server %s: %d pinned, %d changed\n", server, len(f.Pinned), len(f.Pending))
		keys := make([]string, 0, len(f.Pinned))
		for k := range f.Pinned {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := f.Pinned[k]
			state := "pinned"
			if _, ok := f.Pending[k]; ok {
				state = "CHANGED"
			}
			fmt.Fprintf(w, "  %-7s %s %s since %s\n", state, shown(k), pins.Short(p.Digest), p.Since.Format(time.RFC3339))
			if n, ok := f.Pending[k]; ok {
				changes, more := pins.Diff(orEmpty(p.Definition), orEmpty(n.Definition))
				c := &elicitation.DefinitionChange{Pinned: pins.Short(p.Digest), Now: pins.Short(n.Digest), More: more}
				for _, ch := range changes {
					c.Changes = append(c.Changes, elicitation.Change{Path: ch.Path, Before: ch.Before, After: ch.After})
				}
				fmt.Fprintf(w, "    now %s, seen %s; what changed:\n", pins.Short(n.Digest), n.Since.Format(time.RFC3339))
				for _, line := range strings.Split(elicitation.ChangesView(c), "\n") {
					fmt.Fprintf(w, "    %s\n", line)
				}
				fmt.Fprintf(w, "    accept with: mcp-gate pins accept %s:%s\n", server, shownName(k))
			}
		}
	}
	return errors.Join(errs...)
}

func orEmpty(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return json.RawMessage(`{}`)
	}
	return d
}

// shown renders a pin key (upstream text) for a terminal: neutralised and
// quoted, so it can neither move the cursor nor add a line.
func shown(key string) string {
	kind, name, _ := strings.Cut(key, ":")
	return kind + " " + strconv.Quote(neutral(name))
}

// shownName is key's name as a word of the suggested accept command
// (guard.ShellArg): strconv.Quote's double quotes let "$(…)" run.
func shownName(key string) string {
	_, name, _ := strings.Cut(key, ":")
	return guard.ShellArg(name)
}

func neutral(s string) string {
	v, _ := guard.Neutralize(s)
	return v
}

// acceptPins accepts the pending changes of SERVER, or of SERVER:NAME (a
// tool, prompt or resource template of that name).
func acceptPins(store *pins.Store, target string, w io.Writer) error {
	server, name, one := strings.Cut(target, ":")
	if !upstream.ServerKeyPattern.MatchString(server) {
		return usageError{fmt.Errorf("%q is not a server key; expected SERVER or SERVER:NAME", server)}
	}
	var match func(string) bool
	if one {
		match = func(k string) bool {
			_, n, _ := strings.Cut(k, ":")
			return n == name || k == name
		}
	}
	keys, err := store.AcceptPending(server, match)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return fmt.Errorf("no pending change of %s to accept (mcp-gate pins lists them)", strconv.Quote(target))
	}
	for _, k := range keys {
		fmt.Fprintf(w, "accepted %s of server %s\n", shown(k), server)
	}
	return nil
}

// warm fills the catalog cache (and the pins) by starting every server
// and listing it, so that the next host session lists from the cache.
func warm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("warm", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		serversPath = fs.String("servers", "", "servers file (default $XDG_CONFIG_HOME/mcp-gate/servers.json)")
		name        = fs.String("name", "gate", "the name the host gives the gate")
		capsJSON    = fs.String("capabilities", "{}", "the capabilities the host declares in initialize (the cache is kept per elicitation, sampling and roots capabilities)")
		startTO     = fs.Duration("start-timeout", 30*time.Second, "how long a server may take to start and initialise")
		logLevel    = fs.String("log-level", "warn", "stderr log level: debug, info, warn or error")
	)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*capsJSON), &probe); err != nil {
		return usageError{fmt.Errorf("--capabilities: %v; expected a JSON object", err)}
	}
	logger, _, err := newLogger(stderr, *logLevel, "text")
	if err != nil {
		return usageError{err}
	}
	path := *serversPath
	if path == "" {
		path = defaultServersPath()
	}
	// warm lists what serve would serve: a file with a bad entry is
	// refused whole here (as check does), since a cache warmed without an
	// entry would look complete.
	rep, err := upstream.ReadServers(path, os.LookupEnv)
	if err == nil && len(rep.Errors) > 0 {
		err = errors.Join(rep.Errors...)
	}
	if err != nil {
		return err
	}
	servers := rep.Servers
	cache := openCatalogCache(logger)
	if cache == nil {
		return errors.New("no cache directory to warm")
	}
	g, err := proxy.New(proxy.Options{
		Name: *name, Servers: servers, Launcher: &remote.Launcher{Stdio: &upstream.ExecLauncher{Logger: logger}, Logger: logger},
		StartTimeout: *startTO, Logger: logger, CatalogCache: cache, Pins: openPins(logger),
	})
	if err != nil {
		return err
	}
	defer g.Close()
	werr := g.Warm(ctx, json.RawMessage(*capsJSON), proxy.WithIdentity(proxy.OSUser()))
	if werr != nil {
		fmt.Fprintf(stderr, "mcp-gate warm: some servers could not be listed:\n%v\n", werr)
		return errSilentFailure
	}
	fmt.Fprintf(stdout, "ok: catalog cache %s: %d servers listed\n", cache.Dir(), len(servers))
	return nil
}
