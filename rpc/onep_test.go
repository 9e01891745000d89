package rpc

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
)

// A process on one P counts the bursts it reads, with more CPUs too, so
// that the audit log gathers their records (auditburst.go); with more Ps
// and more CPUs it counts none, and each record is written at once. Not
// parallel: it sets GOMAXPROCS, and reads the process-wide count.
func TestBurstsCountOnOneP(t *testing.T) {
	if oneCPU {
		t.Skip("on one CPU every burst counts, whatever GOMAXPROCS is")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		procs int
		want  uint64
	}{{2, 0}, {1, 2}} {
		runtime.GOMAXPROCS(tc.procs)
		// Three lines read at once: the first two have more behind them.
		burst := strings.Repeat(`{"jsonrpc":"2.0","method":"m"}`+"\n", 3)
		s := NewStream(strings.NewReader(burst), io.Discard, nopCloser{}, Limits{})
		before := burstReads.Load()
		for range 3 {
			if _, err := s.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got := burstReads.Load() - before; got != tc.want {
			t.Errorf("GOMAXPROCS=%d: %d lines of a burst counted, want %d", tc.procs, got, tc.want)
		}
		s.Close()
	}
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
