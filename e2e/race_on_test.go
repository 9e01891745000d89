//go:build race

package e2e

// raceEnabled builds the binaries under test with the race detector when the
// tests themselves run with -race, so races in the gate fail the suite too.
const raceEnabled = true
