//go:build race

package proxy

// The race detector drops sync.Pool items at random and allocates for its
// own bookkeeping: allocation counts are checked without it.
const raceEnabled = true
