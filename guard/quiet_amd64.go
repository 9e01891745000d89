//go:build amd64 && !purego

package guard

import "golang.org/x/sys/cpu"

// quietVector says that quiet may hand its blocks to quietAVX2. A
// variable so that the tests can run both paths.
var quietVector = cpu.X86.HasAVX2

// quietAVX2 is quiet's loop in AVX2 (quiet_amd64.s): from b, it passes
// 32-byte blocks while one more byte than the block is inside n, and
// returns how many bytes it passed. It passes exactly the blocks quietGo
// passes; TestQuietVectorMatchesGo holds it to that.
//
//go:noescape
func quietAVX2(bloom *[1 << 12]uint64, b *byte, n int, stems bool) int
