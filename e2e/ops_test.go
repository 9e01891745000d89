package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// configMapDir lays out files as the kubelet mounts a ConfigMap or a
// Secret volume: the files live in a timestamped directory, `..data`
// points at it, and each visible name is a symlink through `..data`.
type configMapDir struct {
	t    *testing.T
	root string
	gen  int
}

func newConfigMapDir(t *testing.T, files map[string]string) *configMapDir {
	c := &configMapDir{t: t, root: t.TempDir()}
	c.update(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(c.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *configMapDir) path(name string) string { return filepath.Join(c.root, name) }

// update writes a new generation and swaps `..data` to it atomically (a
// new symlink renamed over the old), then removes the old generation, as
// the kubelet's atomic writer does when the ConfigMap changes.
func (c *configMapDir) update(files map[string]string) {
	t := c.t
	c.gen++
	dir := fmt.Sprintf("..2026_12_01_00_00_%02d.%09d", c.gen, c.gen)
	if err := os.Mkdir(filepath.Join(c.root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(c.root, dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := os.Readlink(filepath.Join(c.root, "..data"))
	tmp := filepath.Join(c.root, "..data_tmp")
	if err := os.Symlink(dir, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.root, "..data")); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(c.root, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// opsAddr waits for the gate to say where its ops endpoints listen.
func (g *gate) opsAddr(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`msg="ops endpoints listening" addr=(\S+)`)
	var addr string
	waitFor(t, "the ops address on stderr", 30*time.Second, func() bool {
		if m := re.FindStringSubmatch(g.stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return "http://" + addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// metricLine finds the sample of name with exactly these labels and
// returns its value text, or "".
func metricLine(body, series string) string {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

func serversJSON(t *testing.T, servers map[string]server) string {
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue #12, as deployed: the policy and the servers file come from a
// ConfigMap volume, an auth Secret beside them; the binary reads them
// through the `..data` symlinks, is ready, and a ConfigMap update (the
// kubelet's `..data` swap) changes the verdict with no restart. The
// metrics follow: the reload, the revision in force, and the decisions.
func TestConfigMapMountAndDataSwap(t *testing.T) {
	t.Parallel()
	allowPolicy := "version: 1\nfallback: deny\nallow: [mcp:honest:echo]\n"
	denyPolicy := "version: 1\nfallback: deny\ndeny: [mcp:honest:echo]\n"
	cfg := newConfigMapDir(t, map[string]string{
		"policy.yaml":  allowPolicy,
		"servers.json": serversJSON(t, map[string]server{"honest": testserver("honest")}),
	})
	// The Secret is mounted the same way; the HTTP front end reads
	// --auth-tokens from it. Here it shows the layout only: stdio serve
	// has no token to check.
	secret := newConfigMapDir(t, map[string]string{"tokens.yaml": "tokens: {}\n"})
	if _, err := os.Stat(secret.path("tokens.yaml")); err != nil {
		t.Fatal(err)
	}
	g := gateCommand(t, nil, "--policy", cfg.path("policy.yaml"), "--servers", cfg.path("servers.json"), "--ops-addr", "127.0.0.1:0")
	sess := g.connect(t, nil)
	base := g.opsAddr(t)
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz with a valid policy from the ConfigMap: %d %q", code, body)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	_, body := httpGet(t, base+"/metrics")
	rev1 := regexp.MustCompile(`mcp_gate_policy_info\{revision="([^"]+)"\} 1`).FindStringSubmatch(body)
	if rev1 == nil {
		t.Fatalf("no mcp_gate_policy_info in /metrics")
	}
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "a"})); got != "a" {
		t.Fatalf("before the swap: %q", got)
	}
	pid := g.cmd.Process.Pid

	cfg.update(map[string]string{
		"policy.yaml":  denyPolicy,
		"servers.json": serversJSON(t, map[string]server{"honest": testserver("honest")}),
	})
	waitFor(t, "the ConfigMap update to deny echo", 15*time.Second, func() bool {
		r := call(t, sess, "honest__echo", map[string]any{"text": "b"})
		return r.IsError && strings.Contains(resultText(r), "deny[0]")
	})
	if g.cmd.ProcessState != nil || g.cmd.Process.Pid != pid {
		t.Fatal("the gate restarted")
	}

	_, body = httpGet(t, base+"/metrics")
	for series, want := range map[string]string{
		`mcp_gate_policy_reloads_total{result="ok"}`:                                            "1",
		`mcp_gate_policy_reloads_total{result="failed"}`:                                        "0",
		`mcp_gate_policy_last_reload_success`:                                                   "1",
		`mcp_gate_decisions_total{kind="tool",rule="allow[0]",server="honest",verdict="allow"}`: "+",
		`mcp_gate_call_duration_seconds_count{method="tools/call",result="ok",server="honest"}`: "+",
		`mcp_gate_sessions`: "1",
		`mcp_gate_upstream_starts_total{server="honest"}`:  "1",
		`mcp_gate_policy_info{revision="` + rev1[1] + `"}`: "",
	} {
		if got := metricLine(body, series); got != want && (want != "+" || got == "" || got == "0") {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	if !regexp.MustCompile(`mcp_gate_decisions_total\{kind="tool",rule="deny\[0\]",server="honest",verdict="deny"\} [1-9]`).MatchString(body) {
		t.Error("no deny decision counted after the swap")
	}
	if !regexp.MustCompile(`mcp_gate_policy_info\{revision="sha256:[0-9a-f]{12}"\} 1`).MatchString(body) {
		t.Error("no revision in force after the swap")
	}

	// An invalid ConfigMap update changes nothing, is counted, and the
	// gate stays ready: the last good policy is valid and in force.
	cfg.update(map[string]string{
		"policy.yaml":  "version: 1\nfallback: allow-everything\n",
		"servers.json": serversJSON(t, map[string]server{"honest": testserver("honest")}),
	})
	waitFor(t, "the failed reload to be counted", 15*time.Second, func() bool {
		_, body = httpGet(t, base+"/metrics")
		return metricLine(body, `mcp_gate_policy_reloads_total{result="failed"}`) == "1"
	})
	if metricLine(body, "mcp_gate_policy_last_reload_success") != "0" {
		t.Error("mcp_gate_policy_last_reload_success is not 0 after a refused update")
	}
	if code, _ := httpGet(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz after a refused update: %d; the last good policy still serves", code)
	}
	if !call(t, sess, "honest__echo", map[string]any{"text": "c"}).IsError {
		t.Error("an invalid update changed the verdict")
	}
}

// Issue #12: an allowed and a denied call, a guard refusal, and an
// upstream crash and restart each show in /metrics with their labels.
func TestMetricsOverOpsAddr(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, "version: 1\nfallback: deny\nallow: [mcp:honest:echo, mcp:honest:crash]\ndeny: [mcp:honest:blob]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol, "--ops-addr", "127.0.0.1:0")
	sess := g.connect(t, nil)
	base := g.opsAddr(t)
	if r := call(t, sess, "honest__echo", map[string]any{"text": "a"}); r.IsError {
		t.Fatalf("echo: %q", resultText(r))
	}
	if r := call(t, sess, "honest__blob", map[string]any{"bytes": 1}); !r.IsError {
		t.Fatal("blob was not denied")
	}
	// The server exits in the middle of the call: a crash; the next call
	// restarts it (after the pool's backoff).
	if _, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "honest__crash", Arguments: map[string]any{}}); err == nil {
		t.Log("the crash call returned a result")
	}
	waitFor(t, "echo after the restart", 30*time.Second, func() bool {
		r, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "b"}})
		return err == nil && !r.IsError
	})

	_, body := httpGet(t, base+"/metrics")
	for series, want := range map[string]string{
		`mcp_gate_decisions_total{kind="tool",rule="allow[0]",server="honest",verdict="allow"}`: "", // checked below: echo twice or more
		`mcp_gate_decisions_total{kind="tool",rule="deny[0]",server="honest",verdict="deny"}`:   "1",
		`mcp_gate_upstream_crashes_total{server="honest"}`:                                      "1",
		`mcp_gate_upstream_restarts_total{server="honest"}`:                                     "1",
		`mcp_gate_upstream_starts_total{server="honest"}`:                                       "2",
		`mcp_gate_sessions`:               "1",
		`mcp_gate_sessions_started_total`: "1",
	} {
		if want == "" {
			continue
		}
		if got := metricLine(body, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	if !regexp.MustCompile(`mcp_gate_decisions_total\{kind="tool",rule="allow\[0\]",server="honest",verdict="allow"\} [2-9]`).MatchString(body) {
		t.Errorf("allowed echo calls not counted:\n%s", grepLines(body, "decisions_total"))
	}
	if !regexp.MustCompile(`mcp_gate_call_duration_seconds_count\{method="tools/call",result="error",server="honest"\} [1-9]`).MatchString(body) {
		t.Errorf("the crashed call is not observed as an error:\n%s", grepLines(body, "call_duration_seconds_count"))
	}
	if strings.Contains(body, "honest__") || strings.Contains(body, `"echo"`) {
		t.Error("a wire or tool name reached a label")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Issue #12: the ConfigMap the manifests ship, laid out as the kubelet
// mounts it, is a policy and a servers file the binary accepts: `mcp-gate
// check` reads them through the `..data` links, as serve will in the pod.
func TestShippedConfigMapChecks(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind string            `yaml:"kind"`
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil || cm.Kind != "ConfigMap" {
		t.Fatalf("configmap.yaml: %v (kind %q)", err, cm.Kind)
	}
	for _, k := range []string{"policy.yaml", "servers.json"} {
		if cm.Data[k] == "" {
			t.Fatalf("the ConfigMap has no %s", k)
		}
	}
	dir := newConfigMapDir(t, cm.Data)
	out, err := exec.Command(gateBin, "check", "--policy", dir.path("policy.yaml"), "--servers", dir.path("servers.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("mcp-gate check of the shipped ConfigMap: %v\n%s", err, out)
	}
}
