package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRelay measures per-call latency of a small echo and of a 1 MB
// result, straight to an upstream and through the gate, in one run. Each
// "gate" sub-benchmark reports its p50 as a ratio of the "direct" one run
// just before it, and the gate's resident memory.
//
//	go test -run '^$' -bench Relay -benchtime 2000x ./e2e
//
// The upstream is e2e/testserver (a go-sdk server) and the client is the
// go-sdk client in both cases, so the ratio isolates the gate's hop.
func BenchmarkRelay(b *testing.B) {
	cases := []struct {
		name string
		tool string
		args map[string]any
		size int
	}{
		{"echo", "echo", map[string]any{"text": "hello"}, 5},
		{"1MB", "blob", map[string]any{"bytes": 1 << 20}, 1 << 20},
	}
	for _, c := range cases {
		var directP50 time.Duration
		b.Run(c.name+"/direct", func(b *testing.B) {
			cmd := exec.Command(testserverBin, "--mode", "honest")
			sess := benchConnect(b, cmd)
			directP50 = benchCalls(b, sess, c.tool, c.args, c.size)
		})
		b.Run(c.name+"/gate", func(b *testing.B) {
			dir := b.TempDir()
			servers := filepath.Join(dir, "servers.json")
			err := os.WriteFile(servers, []byte(`{"mcpServers":{"up":{"command":"`+testserverBin+`","args":["--mode","honest"]}}}`), 0o600)
			if err != nil {
				b.Fatal(err)
			}
			wd, _ := os.Getwd()
			cmd := exec.Command(gateBin, "serve", "--servers", servers, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"),
				"--audit-log", filepath.Join(dir, "audit"), "--log-level", "error")
			sess := benchConnect(b, cmd)
			p50 := benchCalls(b, sess, "up__"+c.tool, c.args, c.size)
			if directP50 > 0 {
				b.ReportMetric(float64(p50)/float64(directP50), "p50-ratio-vs-direct")
			}
			if rss, hwm := procMemKB(cmd.Process.Pid); rss > 0 {
				b.ReportMetric(float64(rss)/1024, "gate-rss-MB")
				b.ReportMetric(float64(hwm)/1024, "gate-peak-rss-MB")
			}
		})
	}
}

func benchConnect(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	return sess
}

// benchCalls makes b.N calls, one at a time, and returns the median latency.
func benchCalls(b *testing.B, sess *mcp.ClientSession, tool string, args map[string]any, size int) time.Duration {
	b.Helper()
	ctx := context.Background()
	do := func() {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", tool, err, res)
		}
	}
	for range 20 { // warm up: start the upstream, fill caches
		do()
	}
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		do()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	return p50
}

// procMemKB reads a process's resident set and its peak from /proc.
func procMemKB(pid int) (rss, hwm int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.Atoi(f[1])
		case "VmHWM:":
			hwm, _ = strconv.Atoi(f[1])
		}
	}
	return rss, hwm
}
