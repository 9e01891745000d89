package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/auth"
	"github.com/mcp-gate/mcp-gate/httpfront"
	"github.com/mcp-gate/mcp-gate/proxy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// httpFlags are serve's flags of the Streamable HTTP front end.
type httpFlags struct {
	addr, path               *string
	allowedHosts, origins    *[]string
	tlsCert, tlsKey          *string
	issuer, audience, groups *string
	tokens, resource         *string
	maxSessions, perUser     *int
	sessionIdle, drain       *time.Duration
}

// httpMaxMessageBytes is --max-message-bytes' default with --http. The
// stdio default (rpc.DefaultMaxMessageBytes, 8 MiB) is set by the stdio
// hosts' readers, which end their whole connection on a longer line;
// hosts over HTTP read no line, and the team deployments behind an
// ingress relayed results up to 32 MiB before the stdio default was
// lowered: a 12 MB resources/read failed there once it was.
const httpMaxMessageBytes = 32 << 20

func registerHTTPFlags(fs *pflag.FlagSet) *httpFlags {
	return &httpFlags{
		addr:         fs.String("http", "", "serve Streamable HTTP on ADDR (host:port; port 0 picks one, printed on stderr) instead of stdio"),
		path:         fs.String("http-path", "/mcp", "the MCP endpoint's path"),
		allowedHosts: fs.StringSlice("allowed-hosts", nil, "Host header values accepted besides the loopback names: host (any port) or host:port; * leaves the check to an ingress"),
		origins:      fs.StringSlice("allowed-origins", nil, "Origin values accepted besides those whose host is accepted (e.g. https://ide.example)"),
		tlsCert:      fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)"),
		tlsKey:       fs.String("tls-key", "", "the private key of --tls-cert (PEM)"),
		issuer:       fs.String("oidc-issuer", "", "accept bearer JWTs of this OIDC issuer (discovery and JWKS from it; with --oidc-audience)"),
		audience:     fs.String("oidc-audience", "", "the audience a token must hold (the gate's resource identifier)"),
		groups:       fs.String("oidc-groups-claim", "groups", "the token claim holding the user's groups"),
		tokens:       fs.String("auth-tokens", "", "accept the bearer tokens of this YAML file (token or sha256:DIGEST → sub, email, groups); reloaded on change"),
		resource:     fs.String("resource-url", "", "the resource identifier in the Protected Resource Metadata (default: derived from each request's Host)"),
		maxSessions:  fs.Int("max-sessions", 1000, "most HTTP sessions held at once"),
		perUser:      fs.Int("max-sessions-per-user", 200, "most HTTP sessions one identity may hold"),
		sessionIdle:  fs.Duration("session-idle-timeout", 30*time.Minute, "end an HTTP session unused for this long"),
		drain:        fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long calls in flight get to finish"),
	}
}

// enabled reports whether --http was given.
func (f *httpFlags) enabled() bool { return *f.addr != "" }

// validate checks the flags' combinations before anything starts.
func (f *httpFlags) validate() error {
	if !f.enabled() {
		for name, v := range map[string]string{"tls-cert": *f.tlsCert, "tls-key": *f.tlsKey, "oidc-issuer": *f.issuer, "oidc-audience": *f.audience, "auth-tokens": *f.tokens, "resource-url": *f.resource} {
			if v != "" {
				return fmt.Errorf("--%s is an option of the HTTP front end; give --http ADDR too", name)
			}
		}
		return nil
	}
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if (*f.issuer == "") != (*f.audience == "") {
		return errors.New("--oidc-issuer and --oidc-audience go together: a token must be checked for this gate's audience")
	}
	if *f.issuer != "" && *f.tokens != "" {
		return errors.New("give one of --oidc-issuer and --auth-tokens, not both")
	}
	return nil
}

// authenticator builds the Authenticator of the flags; nil when none was
// asked for.
func (f *httpFlags) authenticator(ctx context.Context, log *slog.Logger) (auth.Authenticator, error) {
	switch {
	case *f.issuer != "":
		return auth.NewOIDC(ctx, auth.OIDCOptions{Issuer: *f.issuer, Audience: *f.audience, GroupsClaim: *f.groups})
	case *f.tokens != "":
		return auth.OpenTokenFile(ctx, *f.tokens, log)
	}
	return nil, nil
}

// isLoopbackAddr reports whether a listen address binds loopback only.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveHTTP serves g's sessions over Streamable HTTP until ctx ends (the
// signal), then drains: it stops accepting, lets calls in flight finish
// for up to the drain timeout, and ends every session.
func serveHTTP(ctx context.Context, g *proxy.Gate, f *httpFlags, maxBody int64, log *slog.Logger, probes *opsState) error {
	if !isLoopbackAddr(*f.addr) && *f.issuer == "" && *f.tokens == "" {
		return fmt.Errorf("--http %s: refusing to serve a non-loopback address without authentication; give --oidc-issuer/--oidc-audience or --auth-tokens, or bind 127.0.0.1", *f.addr)
	}
	authn, err := f.authenticator(ctx, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	// The address bound, when it is one address, is a name of the gate
	// too: a client may well connect to http://10.0.0.5:8080/mcp.
	allowed := *f.allowedHosts
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		allowed = append(allowed, tcp.String())
	}
	front, err := httpfront.New(httpfront.Options{
		Path: *f.path,
		Serve: func(ctx context.Context, id proxy.Identity, t rpc.Transport) error {
			return g.NewSession(proxy.WithIdentity(id)).ServeTransport(ctx, t)
		},
		ServeRequest: func(ctx context.Context, id proxy.Identity, t rpc.Transport) error {
			return g.NewSession(proxy.WithIdentity(id), proxy.PerRequest()).ServeTransport(ctx, t)
		},
		Auth:               authn,
		Anonymous:          proxy.OSUser(),
		OnRefused:          g.RefusedBeforeSession,
		AllowedHosts:       allowed,
		AllowedOrigins:     *f.origins,
		Resource:           *f.resource,
		MaxBodyBytes:       maxBody,
		MaxSessions:        *f.maxSessions,
		MaxSessionsPerUser: *f.perUser,
		IdleTimeout:        *f.sessionIdle,
		TLS:                *f.tlsCert != "",
		Logger:             log,
	})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	front.Mount(mux)
	// The operations endpoints (/metrics, /healthz, /readyz) share the
	// port, outside the front end's Host, Origin and token checks: kubelet
	// probes and scrapers come by pod address with no token. They carry no
	// message content (metrics labels are configuration); keep them off
	// the Ingress (docs/deploy.md).
	probes.mount(mux, front.Draining)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if *f.tlsCert != "" {
		scheme = "https"
	}
	authMode := "none (loopback only)"
	switch {
	case *f.issuer != "":
		authMode = "oidc " + *f.issuer
	case *f.tokens != "":
		authMode = "token file " + *f.tokens
	}
	log.Info("serving Streamable HTTP", "url", scheme+"://"+ln.Addr().String()+*f.path, "auth", authMode)
	errc := make(chan error, 1)
	go func() {
		if *f.tlsCert != "" {
			errc <- srv.ServeTLS(ln, *f.tlsCert, *f.tlsKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		front.Close()
		g.Close()
		return fmt.Errorf("--http: %w", err)
	case <-ctx.Done():
	}
	log.Info("draining: no new connections; calls in flight get time to finish", "timeout", *f.drain)
	dctx, cancel := context.WithTimeout(context.Background(), *f.drain)
	defer cancel()
	// Shutdown closes the listener at once, then waits for every
	// connection to be idle; the front end's drain meanwhile waits for the
	// calls in flight, and closing it then ends the streams that would
	// keep Shutdown waiting.
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(dctx) }()
	if err := front.Drain(dctx); err != nil {
		log.Warn("drain timed out; ending the calls still in flight", "error", err)
	}
	front.Close()
	if err := <-shut; err != nil {
		srv.Close()
	}
	g.Close()
	log.Info("stopped")
	return nil
}
