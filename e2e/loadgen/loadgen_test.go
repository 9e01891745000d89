package loadgen

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEchoServer runs every scenario of the benchmark once, briefly,
// against the echo server, so that the client, the scenarios and the server
// cannot rot between benchmark runs. It times nothing.
func TestEchoServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echoserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../echoserver").CombinedOutput(); err != nil {
		t.Fatalf("building the echo server: %v\n%s", err, out)
	}
	target := Target{
		Name:    "direct",
		Command: func() *exec.Cmd { return exec.Command(bin) },
		Tool:    func(s string) string { return s },
	}
	c, err := target.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := c.ListTools()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"echo"`, `"blob"`} {
		if !strings.Contains(string(tools), name) {
			t.Errorf("tools/list has no %s tool: %s", name, tools)
		}
	}
	lat, err := Latency(c, target.Echo(), 5, nil)
	if err != nil || len(lat) != 5 {
		t.Fatalf("echo latency: %d calls, %v", len(lat), err)
	}
	if s := Summarise(lat); s.N != 5 || s.P50 <= 0 || s.P99 < s.P50 {
		t.Errorf("summary of 5 latencies: %+v", s)
	}
	if err := c.Call(target.Blob(1 << 20)); err != nil {
		t.Fatal(err)
	}
	if err := c.Pipeline(target.Blob(1<<16), 8, 20); err != nil {
		t.Fatal(err)
	}
	if n, _, err := Throughput(c, target.Echo(), 8, 0); err != nil || n != 0 {
		t.Fatalf("throughput for no time: %d calls, %v", n, err)
	}
	// A short result is not counted as a correct one.
	if err := c.Call(Call{Tool: "blob", Args: `{"bytes":3}`, MinBytes: 100}); err == nil {
		t.Error("a 3-byte blob passed for a 100-byte one")
	}
	// An error reply is an error.
	if err := c.Call(Call{Tool: "nope", Args: `{}`}); err == nil {
		t.Error("a call of an unknown tool succeeded")
	}
	if _, err := c.Request("no/such/method", `{}`); err == nil {
		t.Error("an unknown method succeeded")
	}
	if d, err := ColdStart(target, target.Echo()); err != nil || d <= 0 {
		t.Fatalf("cold start: %v, %v", d, err)
	}
	if cpu, err := CPUTime(c.Pid()); err != nil || cpu <= 0 {
		t.Fatalf("CPU time: %v, %v", cpu, err)
	}
	if _, hwm, err := PeakRSS(c.Pid()); err != nil || hwm <= 0 {
		t.Fatalf("peak RSS: %d KiB, %v", hwm, err)
	}
}

func TestWithoutGOMAXPROCS(t *testing.T) {
	got := WithoutGOMAXPROCS([]string{"A=1", "GOMAXPROCS=4", "GOMAXPROCSX=1", "B=2"})
	if want := []string{"A=1", "GOMAXPROCSX=1", "B=2"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
