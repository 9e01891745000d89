//go:build !race

package guard

const largeSize = 50 << 20
