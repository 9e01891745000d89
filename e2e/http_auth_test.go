package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// issuer is an OIDC issuer on loopback: discovery and JWKS, with keys the
// test can rotate, and a signer of access tokens.
type issuer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys []jose.JSONWebKey // public keys published
}

type signingKey struct {
	kid  string
	priv *rsa.PrivateKey
}

func newSigningKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, k}
}

func newIssuer(t *testing.T) *issuer {
	iss := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/jwks",
			"authorization_endpoint": iss.srv.URL + "/authorize", "token_endpoint": iss.srv.URL + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.mu.Lock()
		defer iss.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: iss.keys})
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// publish makes keys the issuer's only published keys (a rotation).
func (iss *issuer) publish(keys ...signingKey) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys = nil
	for _, k := range keys {
		iss.keys = append(iss.keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig"})
	}
}

// token signs claims with k; iss, iat and a 10-minute exp are filled in
// unless given.
func (iss *issuer) token(t *testing.T, k signingKey, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": iss.srv.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(10 * time.Minute).Unix()}
	for key, v := range claims {
		c[key] = v
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(c)
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The policy of the two-user tests: echo only for the dev group, blob for
// everyone.
const groupPolicy = `version: 1
fallback: deny
allow: [mcp:honest:blob]
rules:
  - name: devs-echo
    match: [mcp:honest:echo]
    when: '"dev" in user.groups'
    action: allow
`

const audience = "https://gate.test/mcp"

// Issue 12: the gate as an OAuth resource server of an OIDC issuer run by
// the test: missing, expired, wrong-audience and wrongly-signed tokens get
// 401 pointing at the Protected Resource Metadata; a key rotation
// mid-test is followed; two users get different verdicts for the same call
// (a condition on user.groups), separate upstream processes, and their own
// names in the audit log.
func TestHTTPOIDC(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	k1, k2, stranger := newSigningKey(t, "k1"), newSigningKey(t, "k2"), newSigningKey(t, "k1")
	iss.publish(k1)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, groupPolicy),
		"--oidc-issuer", iss.srv.URL, "--oidc-audience", audience)
	url := g.serveHTTP(t)
	base := strings.TrimSuffix(url, "/mcp")

	// The Protected Resource Metadata names the issuer.
	resp, err := http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if prm.Resource != url || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != iss.srv.URL {
		t.Errorf("protected resource metadata: %+v", prm)
	}

	alice := iss.token(t, k1, map[string]any{"sub": "alice", "aud": audience, "email": "alice@example.com", "groups": []string{"dev"}})
	for _, c := range []struct {
		name, token, says string
	}{
		{"missing", "", "a bearer token is required"},
		{"expired", iss.token(t, k1, map[string]any{"sub": "alice", "aud": audience, "exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()}), "expired"},
		{"wrong audience", iss.token(t, k1, map[string]any{"sub": "alice", "aud": "https://other.test"}), "audience"},
		{"wrongly signed", iss.token(t, stranger, map[string]any{"sub": "alice", "aud": audience}), "signature"},
		{"not a jwt", "not-a-jwt", "invalid token"},
	} {
		hdr := map[string]string{}
		if c.token != "" {
			hdr["Authorization"] = "Bearer " + c.token
		}
		resp, body := post(t, url, hdr, initBody)
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, c.says) || !strings.Contains(wa, `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("%s token: %d %q WWW-Authenticate %q; want 401 saying %q", c.name, resp.StatusCode, body, wa, c.says)
		}
	}

	// Hosts without roots (a host with roots has children of its own
	// whoever it is), so that separate processes come from identity alone.
	noRoots := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	sa := connectHTTP(t, url, bearerClient(alice), noRoots, false)
	if res := call(t, sa, "honest__echo", map[string]any{"text": "hi"}); res.IsError || resultText(res) != "hi" {
		t.Fatalf("alice (dev) echo: %q", resultText(res))
	}

	// The issuer rotates: k2 is published beside k1. A token under k2 is
	// accepted (the gate fetches the key set again for a key id it has
	// not seen), and alice's k1 token still is.
	iss.publish(k1, k2)
	bob := iss.token(t, k2, map[string]any{"sub": "bob", "aud": audience, "groups": []string{"ops"}})
	sb := connectHTTP(t, url, bearerClient(bob), noRoots, false)
	if res := call(t, sb, "honest__echo", map[string]any{"text": "hi"}); !res.IsError || !strings.Contains(resultText(res), "fallback") {
		t.Fatalf("bob (ops) echo: %q, want refused by the fallback", resultText(res))
	}
	if res := call(t, sb, "honest__blob", map[string]any{"bytes": 3}); res.IsError {
		t.Fatalf("bob blob: %q", resultText(res))
	}
	if res := call(t, sa, "honest__blob", map[string]any{"bytes": 3}); res.IsError {
		t.Fatalf("alice blob after the rotation: %q", resultText(res))
	}
	// One upstream process per user.
	if n := len(children(t, g.cmd.Process.Pid)); n != 2 {
		t.Errorf("the gate runs %d upstream processes for two users, want 2", n)
	}
	// Bob cannot use Alice's session id.
	resp, body := post(t, url, map[string]string{"Authorization": "Bearer " + bob, "Mcp-Session-Id": sa.ID()}, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob on alice's session: %d %s, want 404", resp.StatusCode, body)
	}
	// k1 is retired. Once the gate fetches the key set again (here for a
	// token under a third key), a k1 token is refused.
	k3 := newSigningKey(t, "k3")
	iss.publish(k2, k3)
	carol := iss.token(t, k3, map[string]any{"sub": "carol", "aud": audience})
	if resp, body := post(t, url, map[string]string{"Authorization": "Bearer " + carol}, initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("carol under k3: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, url, map[string]string{"Authorization": "Bearer " + alice}, initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice's token under the retired k1: %d %s, want 401", resp.StatusCode, body)
	}
	verdicts := map[string]string{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "decision" && l["tool"] == "echo" {
			verdicts[l["user"].(string)] = l["verdict"].(string)
		}
	}
	if verdicts["alice"] != "allow" || verdicts["bob"] != "deny" {
		t.Errorf("audit verdicts by user: %v, want alice allow, bob deny", verdicts)
	}
}

// Issue 12: a static token file: tokens in clear or as sha256: digests,
// the TypeScript client with a bearer token, revocation by editing the
// file (no restart), and a broken edit that keeps the last good tokens.
func TestHTTPTokenFile(t *testing.T) {
	t.Parallel()
	needNode(t)
	aliceTok, bobTok := "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	sum := sha256.Sum256([]byte(bobTok))
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	write := func(s string) {
		if err := os.WriteFile(file+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	both := aliceTok + ": {sub: alice, groups: [dev]}\n\"sha256:" + hex.EncodeToString(sum[:]) + "\": {sub: bob, email: bob@example.com, groups: [ops]}\n"
	write(both)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, groupPolicy), "--auth-tokens", file)
	url := g.serveHTTP(t)

	out, err := runNodeClient(t, url, "honest__echo", `{"text":"from ts"}`, aliceTok)
	if err != nil || !strings.Contains(out, `"text":"from ts"`) {
		t.Fatalf("TypeScript client as alice: %v\n%s", err, out)
	}
	out, err = runNodeClient(t, url, "honest__echo", `{"text":"from ts"}`, bobTok)
	if err != nil || !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "fallback") {
		t.Fatalf("TypeScript client as bob: %v\n%s", err, out)
	}

	status := func(tok string) int {
		resp, _ := post(t, url, map[string]string{"Authorization": "Bearer " + tok}, initBody)
		return resp.StatusCode
	}
	// A broken edit changes nothing.
	write(both + "carol-token-0123456789: {sub: carol, role: admin}\n")
	waitFor(t, "the broken edit to be reported", 10*time.Second, func() bool {
		return strings.Contains(g.stderr.String(), `unknown key \"role\"; expected sub, email or groups`)
	})
	if status(bobTok) != http.StatusOK || status(aliceTok) != http.StatusOK {
		t.Fatal("a broken token file took tokens away")
	}
	// Bob is revoked by editing the file.
	write(aliceTok + ": {sub: alice, groups: [dev]}\n")
	waitFor(t, "bob's token to be revoked", 10*time.Second, func() bool { return status(bobTok) == http.StatusUnauthorized })
	if status(aliceTok) != http.StatusOK {
		t.Error("alice lost access when bob was revoked")
	}
}

// Issue 12: an approval question goes to the session of the user whose
// call it is, never to another user's, with both connected and able to
// answer.
func TestHTTPApprovalGoesToTheCaller(t *testing.T) {
	t.Parallel()
	aliceTok, bobTok := "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	os.WriteFile(file, []byte(aliceTok+": {sub: alice}\n"+bobTok+": {sub: bob}\n"), 0o600)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, askEchoPolicy), "--auth-tokens", file)
	url := g.serveHTTP(t)
	alice, bob := &asker{}, &asker{}
	alice.set(reply("accept", map[string]any{"approve": true}))
	bob.set(reply("accept", map[string]any{"approve": false}))
	sa := connectHTTP(t, url, bearerClient(aliceTok), &mcp.ClientOptions{ElicitationHandler: alice.handler}, false)
	sb := connectHTTP(t, url, bearerClient(bobTok), &mcp.ClientOptions{ElicitationHandler: bob.handler}, false)
	if res := call(t, sa, "honest__echo", map[string]any{"text": "alice's"}); res.IsError {
		t.Fatalf("alice's call: %q", resultText(res))
	}
	if alice.asked.Load() != 1 || bob.asked.Load() != 0 {
		t.Fatalf("alice's call asked alice %d and bob %d times", alice.asked.Load(), bob.asked.Load())
	}
	if res := call(t, sb, "honest__echo", map[string]any{"text": "bob's"}); !res.IsError || !strings.Contains(resultText(res), "the user answered no") {
		t.Fatalf("bob's call: %q", resultText(res))
	}
	if alice.asked.Load() != 1 || bob.asked.Load() != 1 {
		t.Fatalf("bob's call asked alice %d and bob %d times in all", alice.asked.Load(), bob.asked.Load())
	}
	users := map[string]string{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			users[l["user"].(string)] = l["outcome"].(string)
		}
	}
	if users["alice"] != "approved" || users["bob"] != "declined" {
		t.Errorf("approval audit by user: %v", users)
	}
}

// Issue 12: upstreams are per user unless their entry says "shared": true;
// a shared server has one process for every user (of the same host
// capabilities), and each user's calls to it are still decided for them.
func TestHTTPSharedUpstream(t *testing.T) {
	t.Parallel()
	aliceTok, bobTok := "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	os.WriteFile(file, []byte(aliceTok+": {sub: alice, groups: [dev]}\n"+bobTok+": {sub: bob, groups: [ops]}\n"), 0o600)
	pol := writePolicy(t, `version: 1
fallback: deny
allow: [mcp:common:blob, mcp:own:blob]
rules:
  - name: devs-echo
    match: [mcp:common:echo]
    when: '"dev" in user.groups'
    action: allow
`)
	g := gateCommand(t, map[string]server{"own": testserver("honest"), "common": testserver("honest")}, "--policy", pol, "--auth-tokens", file)
	// The harness writes no "shared" key: write the servers file again.
	i := slices.Index(g.cmd.Args, "--servers")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"own":    testserver("honest"),
		"common": map[string]any{"command": testserverBin, "args": []string{"--mode", "honest"}, "shared": true},
	}})
	if err := os.WriteFile(g.cmd.Args[i+1], b, 0o600); err != nil {
		t.Fatal(err)
	}
	url := g.serveHTTP(t)
	// Hosts without roots: a host with roots has children of its own.
	noRoots := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	sa := connectHTTP(t, url, bearerClient(aliceTok), noRoots, false)
	sb := connectHTTP(t, url, bearerClient(bobTok), noRoots, false)
	for _, s := range []*mcp.ClientSession{sa, sb} {
		for _, tool := range []string{"own__blob", "common__blob"} {
			if res := call(t, s, tool, map[string]any{"bytes": 2}); res.IsError {
				t.Fatalf("%s: %q", tool, resultText(res))
			}
		}
	}
	if res := call(t, sa, "common__echo", map[string]any{"text": "a"}); res.IsError {
		t.Fatalf("alice's echo on the shared server: %q", resultText(res))
	}
	if res := call(t, sb, "common__echo", map[string]any{"text": "b"}); !res.IsError {
		t.Fatalf("bob's echo on the shared server was allowed: %q", resultText(res))
	}
	// own: one per user; common: one for both.
	if n := len(children(t, g.cmd.Process.Pid)); n != 3 {
		t.Errorf("the gate runs %d upstream processes for two users of one per-user and one shared server, want 3", n)
	}
	// The shared child outlives one user's session, and ends with the last.
	sa.Close()
	waitFor(t, "alice's own child to stop", 10*time.Second, func() bool { return len(children(t, g.cmd.Process.Pid)) == 2 })
	if res := call(t, sb, "common__blob", map[string]any{"bytes": 2}); res.IsError {
		t.Fatalf("bob after alice left: %q", resultText(res))
	}
	if n := len(children(t, g.cmd.Process.Pid)); n != 2 {
		t.Errorf("after alice left: %d upstream processes, want 2 (bob's own and the shared one, still running)", n)
	}
	if countStderr(g.stderr, `msg="upstream started" server=common`, 1) != 1 {
		t.Errorf("the shared server was started more than once:\n%s", g.stderr.String())
	}
	sb.Close()
	waitFor(t, "the shared child to stop with its last session", 10*time.Second, func() bool { return len(children(t, g.cmd.Process.Pid)) == 0 })
}
