//go:build amd64 && !purego

#include "textflag.h"

// quietAVX2 is quietGo's loop, 32 bytes a step in one YMM register, with
// the same answer for every block (see quietGo for what a passed block
// is):
//   - the stem look: the block's eight aligned 4-byte windows, each
//     folded (OR 0x20 in every byte) and hashed as bloomHash does
//     (multiplied by 0x9E3779B1, the top 18 bits kept), are eight bit
//     numbers in the 2^18-bit filter; one gather fetches the 32-bit words
//     that hold them (bit x is bit x&31 of word x>>5, on little-endian),
//     a variable shift brings each bit down, and any set bit stops.
//   - the neutraliser's look: a byte below 0x20 or from 0x7F up stops
//     (one signed compare for below 0x20 and >= 0x80, one for DEL); a
//     backslash stops when the byte after it (the block loaded again one
//     byte on) is 'u', '\\', 'b' or 'f', or when it ends the block.
// Hence the one byte read past each block. Y15 is left alone (Go's
// internal ABI keeps zero in X15; the wrapper would restore it anyway).

// func quietAVX2(bloom *[4096]uint64, b *byte, n int, stems bool) int
TEXT ·quietAVX2(SB), NOSPLIT, $0-40
	MOVQ    bloom+0(FP), AX
	MOVQ    b+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVBLZX stems+24(FP), DX
	XORQ    BX, BX

	VMOVDQU quietK20<>(SB), Y1  // 0x20 in every byte
	VMOVDQU quietMul<>(SB), Y2  // bloomHash's multiplier in every dword
	VMOVDQU quietK5C<>(SB), Y13 // '\\'
	VMOVDQU quietK7F<>(SB), Y14 // DEL

loop:
	LEAQ 33(BX), R8
	CMPQ R8, CX
	JGT  done
	VMOVDQU (SI)(BX*1), Y0
	TESTQ   DX, DX
	JEQ     text

	// The stem look.
	VPOR       Y1, Y0, Y6
	VPMULLD    Y2, Y6, Y6
	VPSRLD     $14, Y6, Y6              // x = bloomHash(window)
	VPSRLD     $5, Y6, Y7               // the 32-bit word of bit x
	VPAND      quietK31<>(SB), Y6, Y8   // and the bit in it
	VPCMPEQD   Y9, Y9, Y9               // gather all eight
	VPXOR      Y10, Y10, Y10
	VPGATHERDD Y9, (AX)(Y7*4), Y10
	VPSRLVD    Y8, Y10, Y10
	VPTEST     quietD1<>(SB), Y10
	JNE        done

text:
	// The neutraliser's look.
	VMOVDQU  1(SI)(BX*1), Y5   // each byte's follower
	VPCMPGTB Y0, Y1, Y3        // 0x20 > c, signed: controls and bytes >= 0x80
	VPCMPEQB Y0, Y14, Y4
	VPOR     Y4, Y3, Y3        // and DEL
	VPCMPEQB Y0, Y13, Y4       // backslashes
	VPCMPEQB Y5, Y13, Y11      // followers that are '\\'
	VPCMPEQB quietK75<>(SB), Y5, Y12 // 'u'
	VPOR     Y12, Y11, Y11
	VPOR     quietK04<>(SB), Y5, Y12
	VPCMPEQB quietK66<>(SB), Y12, Y12 // 'b' or 'f'
	VPOR     Y12, Y11, Y11
	VPAND    Y4, Y11, Y11      // a backslash before one of them
	VPOR     Y11, Y3, Y3
	VPMOVMSKB Y3, R9
	VPMOVMSKB Y4, R10
	SHRL     $31, R10          // a backslash that ends the block
	ORL      R10, R9
	JNE      done
	ADDQ     $32, BX
	JMP      loop

done:
	VZEROUPPER
	MOVQ BX, ret+32(FP)
	RET

DATA quietK20<>+0(SB)/8, $0x2020202020202020
DATA quietK20<>+8(SB)/8, $0x2020202020202020
DATA quietK20<>+16(SB)/8, $0x2020202020202020
DATA quietK20<>+24(SB)/8, $0x2020202020202020
GLOBL quietK20<>(SB), RODATA|NOPTR, $32

DATA quietMul<>+0(SB)/8, $0x9E3779B19E3779B1
DATA quietMul<>+8(SB)/8, $0x9E3779B19E3779B1
DATA quietMul<>+16(SB)/8, $0x9E3779B19E3779B1
DATA quietMul<>+24(SB)/8, $0x9E3779B19E3779B1
GLOBL quietMul<>(SB), RODATA|NOPTR, $32

DATA quietK5C<>+0(SB)/8, $0x5C5C5C5C5C5C5C5C
DATA quietK5C<>+8(SB)/8, $0x5C5C5C5C5C5C5C5C
DATA quietK5C<>+16(SB)/8, $0x5C5C5C5C5C5C5C5C
DATA quietK5C<>+24(SB)/8, $0x5C5C5C5C5C5C5C5C
GLOBL quietK5C<>(SB), RODATA|NOPTR, $32

DATA quietK7F<>+0(SB)/8, $0x7F7F7F7F7F7F7F7F
DATA quietK7F<>+8(SB)/8, $0x7F7F7F7F7F7F7F7F
DATA quietK7F<>+16(SB)/8, $0x7F7F7F7F7F7F7F7F
DATA quietK7F<>+24(SB)/8, $0x7F7F7F7F7F7F7F7F
GLOBL quietK7F<>(SB), RODATA|NOPTR, $32

DATA quietK75<>+0(SB)/8, $0x7575757575757575
DATA quietK75<>+8(SB)/8, $0x7575757575757575
DATA quietK75<>+16(SB)/8, $0x7575757575757575
DATA quietK75<>+24(SB)/8, $0x7575757575757575
GLOBL quietK75<>(SB), RODATA|NOPTR, $32

DATA quietK04<>+0(SB)/8, $0x0404040404040404
DATA quietK04<>+8(SB)/8, $0x0404040404040404
DATA quietK04<>+16(SB)/8, $0x0404040404040404
DATA quietK04<>+24(SB)/8, $0x0404040404040404
GLOBL quietK04<>(SB), RODATA|NOPTR, $32

DATA quietK66<>+0(SB)/8, $0x6666666666666666
DATA quietK66<>+8(SB)/8, $0x6666666666666666
DATA quietK66<>+16(SB)/8, $0x6666666666666666
DATA quietK66<>+24(SB)/8, $0x6666666666666666
GLOBL quietK66<>(SB), RODATA|NOPTR, $32

DATA quietK31<>+0(SB)/8, $0x0000001F0000001F
DATA quietK31<>+8(SB)/8, $0x0000001F0000001F
DATA quietK31<>+16(SB)/8, $0x0000001F0000001F
DATA quietK31<>+24(SB)/8, $0x0000001F0000001F
GLOBL quietK31<>(SB), RODATA|NOPTR, $32

DATA quietD1<>+0(SB)/8, $0x0000000100000001
DATA quietD1<>+8(SB)/8, $0x0000000100000001
DATA quietD1<>+16(SB)/8, $0x0000000100000001
DATA quietD1<>+24(SB)/8, $0x0000000100000001
GLOBL quietD1<>(SB), RODATA|NOPTR, $32
