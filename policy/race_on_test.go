//go:build race

package policy

// raceEnabled: the race detector's instrumentation may allocate, so tests
// that count allocations skip under it.
const raceEnabled = true
