//go:build race

package e2e

// raceEnabled builds the gate with the race detector when the tests
// themselves run with -race, so races in the gate fail the suite too (the
// harness looks for the detector's report in each gate's stderr).
const raceEnabled = true
