//go:build race

#include "textflag.h"

// func xadd64(p *uint64, n uint64) uint64
TEXT ·xadd64(SB), NOSPLIT, $0-24
	MOVQ	p+0(FP), BX
	MOVQ	n+8(FP), AX
	MOVQ	AX, CX
	LOCK
	XADDQ	AX, 0(BX)
	ADDQ	CX, AX
	MOVQ	AX, ret+16(FP)
	RET
