//go:build race

#include "textflag.h"

// func xadd64(p *uint64, n uint64) uint64
TEXT ·xadd64(SB), NOSPLIT, $0-24
	MOVD	p+0(FP), R0
	MOVD	n+8(FP), R1
again:
	LDAXR	(R0), R2
	ADD	R1, R2, R2
	STLXR	R2, (R0), R3
	CBNZ	R3, again
	MOVD	R2, ret+16(FP)
	RET
