package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// The normal test suite compiles the benchmark through this file and checks
// its table's arithmetic and its token file; it never runs the benchmark
// (the load generator's own test drives its HTTP client against the echo
// server, and e2e's TestHTTPHeldSessionsMemory drives the held sessions
// against the gate).
func TestReport(t *testing.T) {
	us := func(n int) []time.Duration {
		return slices.Repeat([]time.Duration{time.Duration(n) * time.Microsecond}, 10)
	}
	d := &side{echo1: us(100), cpu1: 500 * time.Microsecond, concN: 2000, concT: time.Second, hwm: 14 << 10}
	g := &side{echo1: us(250), cpu1: 2 * time.Millisecond, concN: 500, concT: time.Second, hwm: 28 << 10}
	var out bytes.Buffer
	report(&out, config{cpu: "pinned", upstream: "http", rounds: 1, conc: 64}, d, g, time.Second)
	for _, want := range []string{
		"gate's upstream over http",
		"| echo c=1 p50 | 100 µs | 250 µs | 2.50× |",
		"| echo c=1 server CPU per call | 50.0 µs | 200.0 µs | 4.00× |",
		"| echo c=64 calls/s | 2000 | 500 | 0.25× |",
		"| peak RSS | 14.0 MB | 28.0 MB | |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestTokens(t *testing.T) {
	toks, file := Tokens(3)
	if len(toks) != 3 || toks[0] == toks[1] {
		t.Fatalf("tokens %q", toks)
	}
	for i, tok := range toks {
		if len(tok) < 16 || !strings.Contains(file, tok+": {sub: user"+string(rune('0'+i))+",") {
			t.Errorf("token %q (the file needs 16 characters at least) is not user%d's in:\n%s", tok, i, file)
		}
	}
}

func TestFlagsRefused(t *testing.T) {
	if err := run(config{cpu: "both", upstream: "grpc"}); err == nil || !strings.Contains(err.Error(), "-upstream") {
		t.Errorf("-upstream grpc: %v", err)
	}
	if err := run(config{cpu: "both", upstream: "http", sessions: 10}); err == nil || !strings.Contains(err.Error(), "-identities") {
		t.Errorf("-sessions without identities: %v", err)
	}
}
