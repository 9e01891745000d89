//go:build !amd64 || purego

package guard

// quietVector is false where there is no vector loop: quiet is quietGo.
var quietVector = false

func quietAVX2(bloom *[1 << 12]uint64, b *byte, n int, stems bool) int {
	panic("guard: no vector quiet on this architecture")
}
