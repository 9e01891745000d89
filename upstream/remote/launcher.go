package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// Launcher connects to http and sse servers and hands stdio ones to Stdio.
type Launcher struct {
	Stdio  upstream.Launcher // stdio entries; nil refuses them
	Logger *slog.Logger
}

// Launch returns a connection to cfg's server. For an http server nothing
// is sent yet (the pool's initialize is the first request); for an sse one
// the stream is opened and its endpoint awaited, within ctx.
func (l *Launcher) Launch(ctx context.Context, cfg upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch cfg.Type {
	case upstream.TypeHTTP, upstream.TypeSSE:
	default:
		if l.Stdio == nil {
			return nil, fmt.Errorf("server %q: no launcher for %s servers", cfg.Name, cfg.Type)
		}
		return l.Stdio.Launch(ctx, cfg, lim)
	}
	if err := upstream.ValidateRemote(cfg.URL, cfg.Headers); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, errors.New("the url is not a URL") // ValidateRemote said it was
	}
	if cfg.Type == upstream.TypeHTTP {
		return dialStreamable(cfg.Name, u, cfg.Headers, log, lim), nil
	}
	return dialLegacy(ctx, cfg.Name, u, cfg.Headers, log, lim)
}

// WarnPlainHTTP says, at every start, which remote servers get their
// headers, or a URL with user info or a query (a token, as a rule), over
// plain http to a host that is not this machine: anyone on the path can
// read them.
func WarnPlainHTTP(servers []upstream.Config, log *slog.Logger) {
	for _, s := range servers {
		if s.Type != upstream.TypeHTTP && s.Type != upstream.TypeSSE {
			continue
		}
		u, err := url.Parse(s.URL)
		if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
			continue
		}
		switch {
		case len(s.Headers) > 0:
			log.Warn("server's headers go over plain http to another machine: anyone on the path can read them; use https", "server", s.Name, "host", u.Hostname())
		case u.User != nil || u.RawQuery != "":
			log.Warn("server's url has user info or a query, which go over plain http to another machine: anyone on the path can read them; use https", "server", s.Name, "host", u.Hostname())
		}
	}
}

// isLoopback reports whether host is this machine whatever the resolver
// says: a loopback address, or localhost (from the hosts file). A name
// under .localhost is not one: the gate's resolver (Go's own) asks DNS for
// it like any other name.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
