package upstream_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// A server that takes any first request for initialize answers the
// server/discover probe with an initialize result: the probe takes it as
// the older era, already opened, instead of sending initialize to a server
// that will not answer it (envScript answers one line, then reads on).
func TestProbeTakesInitializeAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	configs := []upstream.Config{{Name: "plain", Type: upstream.TypeStdio, Command: "sh", Args: []string{"-c", envScript}, Protocol: upstream.ProtocolAuto}}
	p := newPool(t, configs, &upstream.ExecLauncher{Logger: testLogger(t)}, nil)
	s := session(t, p, "plain")
	if s.ProtocolVersion != "2025-11-25" || !strings.Contains(string(s.InitResult), `"serverInfo"`) {
		t.Fatalf("session %s %s", s.ProtocolVersion, s.InitResult)
	}
}
