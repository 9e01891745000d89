package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDC authenticates JWT access tokens of one issuer: the issuer's keys
// come from its discovery document's jwks_uri (fetched again when a token
// names a key the gate has not seen, which is how a rotation reaches it),
// and a token is accepted only when its signature verifies under one of
// them, its iss is the issuer, its aud holds the gate's audience and it
// has not expired.
type OIDC struct {
	issuer      string
	verifier    *oidc.IDTokenVerifier
	groupsClaim string
}

// OIDCOptions configure NewOIDC.
type OIDCOptions struct {
	Issuer   string // the issuer URL, as its tokens' iss says
	Audience string // required: what a token's aud must hold (the gate's resource)
	// GroupsClaim names the claim holding the groups; default "groups".
	GroupsClaim string
}

// NewOIDC fetches the issuer's discovery document and returns an
// Authenticator for its tokens.
func NewOIDC(ctx context.Context, o OIDCOptions) (*OIDC, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("OIDC: the issuer and the audience are required (a token minted for another service must not open the gate)")
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	p, err := oidc.NewProvider(ctx, o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery of %s: %w", o.Issuer, err)
	}
	return &OIDC{issuer: o.Issuer, groupsClaim: o.GroupsClaim, verifier: p.Verifier(&oidc.Config{ClientID: o.Audience})}, nil
}

// Authenticate verifies token and reads its sub, email and groups.
func (a *OIDC) Authenticate(ctx context.Context, token string) (Principal, error) {
	t, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %s", ErrInvalidToken, describeVerifyError(err))
	}
	var claims map[string]json.RawMessage
	if err := t.Claims(&claims); err != nil {
		return Principal{}, fmt.Errorf("%w: its claims do not decode", ErrInvalidToken)
	}
	p := Principal{Subject: t.Subject}
	if p.Subject == "" {
		return Principal{}, fmt.Errorf("%w: it has no sub claim", ErrInvalidToken)
	}
	if raw, ok := claims["email"]; ok {
		if json.Unmarshal(raw, &p.Email) != nil {
			return Principal{}, fmt.Errorf("%w: its email claim is not a string", ErrInvalidToken)
		}
	}
	// An email the issuer says it has not verified is whatever the user
	// typed into their profile (another's address included): it names no
	// one, and a policy granting by user.email must not read it. Without
	// email_verified (most access tokens) the issuer vouches for it.
	if raw, ok := claims["email_verified"]; ok && !verified(raw) {
		p.Email = ""
	}
	if raw, ok := claims[a.groupsClaim]; ok {
		if json.Unmarshal(raw, &p.Groups) != nil {
			return Principal{}, fmt.Errorf("%w: its %s claim is not a list of strings", ErrInvalidToken, a.groupsClaim)
		}
	}
	return p, nil
}

// verified reports whether an email_verified claim says true (a boolean,
// or the string some issuers send).
func verified(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.EqualFold(s, "true")
}

// AuthorizationServers is the issuer.
func (a *OIDC) AuthorizationServers() []string { return []string{a.issuer} }

// describeVerifyError says what was wrong with a token in words a client
// can act on, without its content.
func describeVerifyError(err error) string {
	var exp *oidc.TokenExpiredError
	if errors.As(err, &exp) {
		return "the token has expired"
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "expected audience"):
		return "the token is not for this gate (audience mismatch)"
	case strings.Contains(s, "id token issued by a different provider"):
		return "the token is from another issuer"
	case strings.Contains(s, "failed to verify signature"), strings.Contains(s, "signature"):
		return "the token's signature does not verify under the issuer's keys"
	case strings.Contains(s, "malformed"):
		return "the token is not a JWT"
	}
	return strings.TrimPrefix(s, "oidc: ")
}
