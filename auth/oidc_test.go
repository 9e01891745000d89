package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// testIssuer is an OIDC issuer on loopback with one RSA key, and a signer
// of its tokens.
func testIssuer(t *testing.T) (url string, sign func(claims map[string]any) string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks", "authorization_endpoint": srv.URL + "/authorize",
			"token_endpoint": srv.URL + "/token", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, func(claims map[string]any) string {
		c := map[string]any{"iss": srv.URL, "aud": "https://gate.test/mcp", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		for k, v := range claims {
			c[k] = v
		}
		payload, _ := json.Marshal(c)
		obj, err := signer.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := obj.CompactSerialize()
		return out
	}
}

// An email the issuer has not verified is not the principal's: a user who
// typed another's address into their profile must not be read as them by
// a policy granting on user.email. Without email_verified the issuer
// vouches for the email (access tokens seldom carry the claim).
func TestOIDCUnverifiedEmailDropped(t *testing.T) {
	url, sign := testIssuer(t)
	a, err := NewOIDC(context.Background(), OIDCOptions{Issuer: url, Audience: "https://gate.test/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verified any // nil: the claim is absent
		want     string
	}{
		{nil, "admin@example.com"},
		{true, "admin@example.com"},
		{"true", "admin@example.com"},
		{false, ""},
		{"false", ""},
		{"yes", ""},
		{1, ""},
	} {
		claims := map[string]any{"sub": "mallory", "email": "admin@example.com", "groups": []string{"dev"}}
		if c.verified != nil {
			claims["email_verified"] = c.verified
		}
		p, err := a.Authenticate(context.Background(), sign(claims))
		if err != nil {
			t.Fatalf("email_verified %v: %v", c.verified, err)
		}
		if p.Email != c.want || p.Subject != "mallory" || len(p.Groups) != 1 {
			t.Errorf("email_verified %v: principal %+v, want email %q", c.verified, p, c.want)
		}
	}
}
