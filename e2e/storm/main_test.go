package main

import (
	"testing"
	"time"
)

// The test suite builds the tool and runs one short burst of it: the
// storm itself is run by hand (it is not a timed test).
func TestStormSmoke(t *testing.T) {
	r, err := run(config{duration: time.Millisecond, c: 2, burst: 3, gap: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.clean() || r.bursts != 1 || r.decisions == 0 {
		t.Fatalf("a short storm reports:\n%s", r)
	}
}
