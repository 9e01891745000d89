package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 12: --tls-cert/--tls-key serve HTTPS, and the Protected Resource
// Metadata names an https resource.
func TestHTTPTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--tls-cert", certPath, "--tls-key", keyPath)
	url := g.serveHTTP(t)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("url %s", url)
	}
	sess := connectHTTP(t, url, hc, nil, false)
	if res := call(t, sess, "honest__echo", map[string]any{"text": "over tls"}); res.IsError || resultText(res) != "over tls" {
		t.Fatalf("echo over TLS: %q", resultText(res))
	}
	resp, err := hc.Get(strings.TrimSuffix(url, "/mcp") + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	if !strings.Contains(b.String(), `"resource":"`+url+`"`) {
		t.Errorf("metadata over TLS: %s", b.String())
	}
}

// Issue 12: in stdio mode a condition's user is the OS user running the
// gate (uid:N, no groups), and the audit log names it.
func TestStdioUserIsTheOSUser(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, `version: 1
fallback: deny
rules:
  - name: me
    match: [mcp:honest:echo]
    when: 'user.sub == "uid:`+itoa(os.Getuid())+`" && size(user.groups) == 0'
    action: allow
`)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	sess := g.connect(t, nil)
	if res := call(t, sess, "honest__echo", map[string]any{"text": "me"}); res.IsError {
		t.Fatalf("echo as the OS user: %q", resultText(res))
	}
	found := false
	for _, l := range g.auditLines(t) {
		if l["event"] == "decision" {
			found = l["user"] == "uid:"+itoa(os.Getuid())
		}
	}
	if !found {
		t.Errorf("the decision's audit line does not name uid:%d", os.Getuid())
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }
