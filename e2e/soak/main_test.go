package main

import (
	"strings"
	"testing"
	"time"
)

// The test suite builds the tool and runs a few calls of it: the soak
// itself is run by hand (it is not a timed test).
func TestSoakSmoke(t *testing.T) {
	r, err := run(config{calls: 50, c: 4, stall: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !r.clean() || r.tally.OK != 50 {
		t.Fatalf("a clean soak of 50 calls reports:\n%s", r)
	}
	if !strings.Contains(r.String(), "lost 0, duplicated 0") {
		t.Fatalf("report: %s", r)
	}
}
