package upstream_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// The probe's timeout is counted from when the server read the probe, not
// from its launch: a modern-only server that takes longer than the timeout
// to start reading (a Node server on a busy machine, npx fetching its
// package) is still found modern, where it used to be taken for a silent
// older one (and its start failed, or the wrong era was remembered). A
// server that reads the probe and stays silent is still found older once
// the timeout has passed after its read, however slowly it started: the
// start timeout (hang) is not what ends its probe.
//
// The margins are the start delay (2 s of sh's sleep) against the probe's
// timeout (400 ms): without the read-based clock the probe ends while the
// server is asleep, whatever the machine's load, so the test fails; with
// it, the server has 400 ms after its read to answer one line.
func TestProbeTimedFromTheServersRead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the gate sees a child's unread input on Linux only")
	}
	old := upstream.ProbeTimeout
	upstream.ProbeTimeout = 400 * time.Millisecond
	t.Cleanup(func() { upstream.ProbeTimeout = old })
	slowly := func(name, mode string) upstream.Config {
		return upstream.Config{
			Name: name, Type: upstream.TypeStdio, Protocol: upstream.ProtocolAuto,
			Command: "sh", Args: []string{"-c", `sleep 2; exec "$0" --mode "$1"`, testserverBin(t), mode},
		}
	}
	p := newPool(t, []upstream.Config{slowly("modern", "modern-only"), slowly("silent", "preinit-silent")}, execLauncher(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*hang)
	defer cancel()
	for name, want := range map[string]string{"modern": upstream.ModernVersion, "silent": upstream.ProtocolVersion} {
		s, err := p.Session(ctx, "", name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.ProtocolVersion != want {
			t.Errorf("%s was found to speak %s; want %s", name, s.ProtocolVersion, want)
		}
	}
}
