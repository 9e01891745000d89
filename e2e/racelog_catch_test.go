package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 9: a race in a gate reaches the suite whoever starts the gate. A
// gate built with -race and a deliberate race (testdata/racehook, added to
// package main by `go build -overlay` in this test only: nothing racy is in
// the product's tree) races as it starts, then serves. Started by the real
// Claude Code, its report is in the file of the test's prefix, where the
// test's cleanup would fail it; started by a test's own gate helpers, the
// gate's check has it; started by supergateway or by a gate, likewise;
// started by the real Codex, which passes its servers
// only some of its environment, likewise; started with the run's environment only, the end of
// the run finds it unclaimed and says whose pid it was. Each is claimed
// here, so the run passes.
func TestRaceReportsReachTheSuite(t *testing.T) {
	// Not parallel (see harness_test.go): runs the real Claude Code CLI, heavy on both CPUs.
	if !raceEnabled {
		t.Skip("the gate has a race detector only when the suite runs with -race")
	}
	racy := racyGateBin
	if racy == "" {
		t.Fatal("TestMain did not build the racy gate (buildRacyGate: its guess of -run left it out)")
	}
	isReport := func(r string) bool {
		return strings.Contains(r, "WARNING: DATA RACE") && strings.Contains(r, "racehook_e2e.go") // the overlay's name in package main
	}

	t.Run("claude", func(t *testing.T) {
		claude := hostBin(t, "claude")
		h := newHostHome(t)
		claimLateReports(t, racy, h) // as for Codex below
		servers := writeServers(t, t.TempDir(), map[string]server{"honest": testserver("honest")})
		wd, _ := os.Getwd()
		h.run(t, claude, "mcp", "add", "gate", "--", racy, "serve", "--servers", servers,
			"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--local-approvals=false")
		if list := h.run(t, claude, "mcp", "list"); !strings.Contains(list, "Connected") {
			t.Fatalf("claude mcp list does not show the racy gate connected:\n%s", list)
		}
		if r := takeRaceReports(racePrefixOf(h.race)); !isReport(r) {
			t.Fatalf("the race of the gate Claude Code started is not in the test's report files (%s.*): %q", racePrefixOf(h.race), r)
		}
	})

	t.Run("codex", func(t *testing.T) {
		// Codex passes its servers an allowlist of its environment:
		// GORACE reaches the gate only through codexRaceArgs.
		codex := hostBin(t, "codex")
		h := newHostHome(t)
		// Codex starts two gates: one for mcpServerStatus/list, which the
		// check below waits for, and the thread's own, which nothing waits
		// for and whose report may come after that check. This cleanup
		// runs after startAppServer's has stopped Codex and before
		// newHostHome's claims what is left: once no racy gate runs, every
		// report is written, and each must be the deliberate one.
		claimLateReports(t, racy, h)
		servers := writeServers(t, t.TempDir(), map[string]server{"honest": testserver("honest")})
		wd, _ := os.Getwd()
		h.run(t, codex, "mcp", "add", "gate", "--", racy, "serve", "--servers", servers,
			"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--local-approvals=false")
		a := startAppServer(t, h, codex)
		a.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1"}})
		a.send(map[string]any{"method": "initialized"})
		a.call("thread/start", map[string]any{})
		var status struct {
			Data []struct {
				Tools map[string]json.RawMessage `json:"tools"`
			} `json:"data"`
		}
		if err := json.Unmarshal(a.call("mcpServerStatus/list", map[string]any{}), &status); err != nil {
			t.Fatal(err)
		}
		if len(status.Data) != 1 || status.Data[0].Tools["honest__echo"] == nil {
			t.Fatalf("codex lists %+v; expected the racy gate, serving honest__echo", status.Data)
		}
		if r := takeRaceReports(racePrefixOf(h.race)); !isReport(r) {
			t.Fatalf("the race of the gate Codex started is not in the test's report files (%s.*): %q", racePrefixOf(h.race), r)
		}
	})

	t.Run("supergateway", func(t *testing.T) {
		// The stdio→HTTP bridge of TestRelayConformance, which passes
		// its environment on, with raceEnv in it as runConformance has.
		needNode(t)
		wd, _ := os.Getwd()
		servers := writeServers(t, t.TempDir(), map[string]server{"honest": testserver("honest")})
		stdio := fmt.Sprintf("%s serve --servers %s --policy %s --local-approvals=false", racy, servers, filepath.Join(wd, "testdata", "allow-all.yaml"))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		race := raceEnv(t)
		sg := exec.Command(filepath.Join(nodeModules, ".bin", "node"), filepath.Join(nodeModules, ".bin", "supergateway"),
			"--stdio", stdio, "--outputTransport", "streamableHttp", "--port", strconv.Itoa(port), "--stateful", "--logLevel", "none")
		sg.Env = append(os.Environ(), race)
		inNewGroup(sg)
		logs := &syncBuffer{}
		sg.Stdout, sg.Stderr = logs, logs
		if err := sg.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = signalGroup(sg, syscall.SIGKILL)
			_ = sg.Wait()
		})
		waitFor(t, "supergateway to listen", 30*time.Second, func() bool {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		// Each session's initialize starts a gate behind the bridge.
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var r string
		waitFor(t, "the gate behind supergateway to report its race", 30*time.Second, func() bool {
			r += takeRaceReports(racePrefixOf(race))
			return r != ""
		})
		if !isReport(r) {
			t.Fatalf("the report of the gate supergateway started: %q\nsupergateway: %s", r, logs.String())
		}
	})

	t.Run("nested", func(t *testing.T) {
		// A gate passes its servers an allowlist of its environment:
		// GORACE reaches a gate behind it through the entry's env, which
		// writeServers sets.
		wd, _ := os.Getwd()
		inner := writeServers(t, t.TempDir(), map[string]server{"honest": testserver("honest")})
		g := gateCommand(t, map[string]server{"inner": {Command: racy, Args: []string{"serve", "--servers", inner,
			"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--local-approvals=false"}}})
		sess := g.connect(t, nil)
		if tools := toolNames(t, sess); tools["inner__honest__echo"] == nil {
			t.Fatalf("the outer gate lists %v; expected the inner gate's tools", keys(tools))
		}
		sess.Close()
		var entries struct {
			MCPServers map[string]server `json:"mcpServers"`
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(g.audit), "servers.json"))
		if err == nil {
			err = json.Unmarshal(b, &entries)
		}
		if err != nil {
			t.Fatal(err)
		}
		prefix := racePrefixOf(entries.MCPServers["inner"].Env["GORACE"])
		if r := takeRaceReports(prefix); !isReport(r) {
			t.Fatalf("the race of the gate behind the gate is not in the test's report files (%s.*): %q", prefix, r)
		}
	})

	t.Run("owned", func(t *testing.T) {
		g := gateCommand(t, map[string]server{"honest": testserver("honest")})
		g.cmd.Path, g.cmd.Args[0] = racy, racy
		g.connect(t, nil).Close()
		if r := g.raced(); !isReport(r) {
			t.Fatalf("the owned gate's check does not have its race: %q", r)
		}
	})

	t.Run("unclaimed", func(t *testing.T) {
		// The run's environment only, as a test that uses no helper of
		// the harness starts a gate (this one is running as its other
		// helpers have it).
		noteSpan(t)
		cmd := exec.Command(racy, "version")
		if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), "DATA RACE") {
			// The race runtime exits 66 after a race; the report is
			// not in stderr but in the run's file.
			t.Fatalf("racy gate version: %v\n%s", err, out)
		}
		f := filepath.Join(raceDir, unclaimedPrefix+"."+strconv.Itoa(cmd.Process.Pid))
		files, err := unclaimedRaces()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, u := range files {
			if u == f {
				found = true
			}
		}
		if !found {
			t.Fatalf("the end of the run would not see %s; unclaimed: %v", f, files)
		}
		d := describeRace(f)
		claimedRaces.Store(f, true)
		if !isReport(d) || !strings.Contains(d, "pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(d, "no test named") || !strings.Contains(d, t.Name()) {
			t.Fatalf("the end of the run would say:\n%s", d)
		}
	})
}

// racyGateBin is the gate built with -race and testdata/racehook added to
// its package main, by TestMain (a go build in a running test once met the
// build cache mid-trim), when the run may run TestRaceReportsReachTheSuite.
var racyGateBin string

// buildRacyGate builds racyGateBin into dir when -run selects the test
// (about: the top-level part of the pattern matches its name).
func buildRacyGate(dir string) error {
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		top, _, _ := strings.Cut(f.Value.String(), "/")
		if ok, err := regexp.MatchString(top, "TestRaceReportsReachTheSuite"); err != nil || !ok {
			return nil
		}
	}
	wd, _ := os.Getwd()
	main, err := filepath.Abs(filepath.Join(wd, "..", "cmd", "mcp-gate"))
	if err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(main, "racehook_e2e.go"): filepath.Join(wd, "testdata", "racehook", "racehook.go"),
	}})
	if err != nil {
		return err
	}
	ov := filepath.Join(dir, "racehook-overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		return err
	}
	bin := filepath.Join(dir, "mcp-gate-racy")
	if out, err := exec.Command("go", "build", "-race", "-overlay", ov, "-o", bin, "../cmd/mcp-gate").CombinedOutput(); err != nil {
		return fmt.Errorf("building the racy gate: %v\n%s", err, out)
	}
	racyGateBin = bin
	return nil
}

// claimLateReports registers a cleanup that runs after those registered
// later (the host's stop) and before newHostHome's, which fails the test
// with any report left: once no racy gate runs, every report is written,
// and each must be the deliberate one.
func claimLateReports(t *testing.T, racy string, h *hostHome) {
	t.Cleanup(func() {
		waitNoProcessRuns(t, racy)
		if r := takeRaceReports(racePrefixOf(h.race)); r != "" && !onlyRacehook(r) {
			t.Errorf("a race other than the deliberate one:\n%s", r)
		}
	})
}

// waitNoProcessRuns waits, for up to 30 s, until no process runs the
// executable bin (read from /proc/PID/exe).
func waitNoProcessRuns(t *testing.T, bin string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		running := false
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && exe == bin {
				running = true
				break
			}
		}
		if !running {
			return
		}
	}
	t.Errorf("%s still runs after 30 s", bin)
}

// onlyRacehook reports whether every race in the reports r is the racy
// gate's deliberate one.
func onlyRacehook(r string) bool {
	races := strings.Split(r, "WARNING: DATA RACE")[1:]
	for _, race := range races {
		if !strings.Contains(race, "racehook_e2e.go") {
			return false
		}
	}
	return len(races) > 0
}
