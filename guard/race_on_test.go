//go:build race

package guard

// The race detector slows the 50 MB tests ten-fold; under it they check
// correctness on 10 MB.
const largeSize = 10 << 20
