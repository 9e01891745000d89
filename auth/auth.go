// Package auth says who an HTTP request acts for. The gate is an OAuth 2.1
// resource server (MCP authorization, 2025-11-25): a request carries a
// bearer token, and an Authenticator turns it into a Principal or refuses
// it. Two implementations exist: OIDC (JWT access tokens of one issuer,
// verified against its published keys, with the audience and expiry
// checked) and TokenFile (a static file of tokens, or their SHA-256
// digests, for small teams and tests), which reloads when the file changes
// so that revoking a token needs no restart.
//
// The token is only ever checked here: it is never logged, never kept past
// the check, and never passed to an upstream (no token passthrough).
package auth

import (
	"context"
	"errors"
)

// A Principal is who a token speaks for.
type Principal struct {
	Subject string   // the token's sub: required, never empty
	Email   string   // "" when the token has none
	Groups  []string // the token's groups, as issued
}

// An Authenticator checks bearer tokens. It is safe for concurrent use.
type Authenticator interface {
	// Authenticate returns who token speaks for, or an error that says
	// why it does not (safe to show to the client: it never quotes the
	// token).
	Authenticate(ctx context.Context, token string) (Principal, error)
	// AuthorizationServers lists the issuers a client may get a token
	// from, for the Protected Resource Metadata (none for a token file).
	AuthorizationServers() []string
}

// ErrInvalidToken is wrapped by every refusal of a token.
var ErrInvalidToken = errors.New("invalid token")
