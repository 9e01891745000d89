package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Row 3, through the MCP conformance suite: the suite speaks HTTP, so both
// server-everything alone and the gate in front of it are put behind the
// same stdio→HTTP bridge (supergateway), and the suite's results compared
// scenario by scenario. resources-subscribe and resources-unsubscribe use a
// URI server-everything does not list (test://watched-resource): the gate
// routes it to the one server with resources, as directly.
//
// Documented differences: a call of a tool no server has is a JSON-RPC
// error (-32602, "unknown tool") from the gate, as the specification
// words it, where server-everything's SDK answers an isError result; the
// suite's tools-call-error and tools-call-simple-text call such tools (they
// are written for the suite's own server) and count the error as failure.
func TestRelayConformance(t *testing.T) {
	// Not parallel (see harness_test.go): the conformance suite is heavy on both CPUs.
	needNode(t)
	node := filepath.Join(nodeModules, ".bin", "node")
	suite := filepath.Join(nodeModules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	bridge := filepath.Join(nodeModules, ".bin", "supergateway")
	for _, p := range []string{node, suite, bridge} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the conformance suite needs %s (Node 22 and the suite are pinned in e2e/package.json; run npm ci in e2e/): %v", p, err)
			}
			t.Skipf("the conformance suite needs %s (Node 22 and the suite are pinned in e2e/package.json; run npm ci in e2e/)", p)
		}
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "v22.") {
		t.Fatalf("the pinned node is not Node 22: %q %v", out, err)
	}
	ev := everything()
	direct := strings.Join(append([]string{ev.Command}, ev.Args...), " ")
	dir := t.TempDir()
	wd, _ := os.Getwd()
	gated := fmt.Sprintf("%s serve --servers %s --policy %s --start-timeout 60s", gateBin,
		writeServers(t, dir, map[string]server{"everything": ev}), filepath.Join(wd, "testdata", "allow-all.yaml"))

	results := map[string]map[string]conformanceCheck{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, stdio := range map[string]string{"direct": direct, "gate": gated} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runConformance(t, node, suite, bridge, stdio, filepath.Join(dir, name))
			mu.Lock()
			results[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	d, g := results["direct"], results["gate"]
	for _, id := range []string{"resources-subscribe", "resources-unsubscribe"} {
		if d[id].Status != "SUCCESS" || g[id].Status != "SUCCESS" {
			t.Errorf("%s: directly %s, through the gate %s %s", id, d[id].Status, g[id].Status, g[id].ErrorMessage)
		}
	}
	differs := map[string]bool{"tools-call-error": true, "tools-call-simple-text": true}
	for id, dc := range d {
		gc, ok := g[id]
		switch {
		case !ok:
			t.Errorf("check %s ran directly but not through the gate", id)
		case differs[id]:
			if !strings.Contains(gc.ErrorMessage, "-32602") || !strings.Contains(gc.ErrorMessage, "unknown tool") {
				t.Errorf("check %s through the gate: %s %s; want the documented unknown-tool error", id, gc.Status, gc.ErrorMessage)
			}
		case dc.Status != gc.Status:
			t.Errorf("check %s: directly %s, through the gate %s (%s)", id, dc.Status, gc.Status, gc.ErrorMessage)
		}
	}
	if len(d) < 20 {
		t.Errorf("only %d checks ran directly", len(d))
	}
}

type conformanceCheck struct {
	ID, Status, ErrorMessage string
}

// runConformance bridges the stdio server command to HTTP on a free
// loopback port and runs the suite's active server scenarios against it.
func runConformance(t *testing.T, node, suite, bridge, stdio, out string) map[string]conformanceCheck {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Error(err)
		return nil
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	sg := exec.Command(node, bridge, "--stdio", stdio, "--outputTransport", "streamableHttp", "--port", fmt.Sprint(port), "--stateful", "--logLevel", "none")
	// supergateway passes its environment on: the gate's race reports
	// (racelog_test.go).
	sg.Env = append(os.Environ(), raceEnv(t))
	inNewGroup(sg)
	logs := &syncBuffer{}
	sg.Stdout, sg.Stderr = logs, logs
	if err := sg.Start(); err != nil {
		t.Error(err)
		return nil
	}
	defer func() {
		_ = signalGroup(sg, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = sg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = signalGroup(sg, syscall.SIGKILL)
			<-done
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the bridge for %q did not listen: %s", stdio, logs.String())
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd := exec.Command(node, suite, "server", "--url", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		// The suite exits non-zero when a check fails, as several do
		// against a server not written for it: the results are compared.
		t.Logf("conformance against %q: %v (%d bytes of output)", stdio, err, len(b))
	}
	checks := map[string]conformanceCheck{}
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, c := range cs {
			if prev, dup := checks[c.ID]; dup && prev.Status != c.Status {
				c.Status = prev.Status + "+" + c.Status
			}
			checks[c.ID] = c
		}
	}
	if len(checks) == 0 {
		t.Errorf("no conformance results for %q: %s", stdio, logs.String())
	}
	return checks
}
