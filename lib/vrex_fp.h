/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/* The 128-bit FCC frame fingerprint and its metric. Layout: docs/hardware.md. */
#ifndef VREX_FP_H
#define VREX_FP_H

#include "vrex_compat.h"

#define VREX_FP_BITS 128

struct vrex_fp {
	u64 w[2];
};

static inline u32 vrex_fp_distance(const struct vrex_fp *a, const struct vrex_fp *b)
{
	return vrex_popcount64(a->w[0] ^ b->w[0]) + vrex_popcount64(a->w[1] ^ b->w[1]);
}

static inline int vrex_fp_equal(const struct vrex_fp *a, const struct vrex_fp *b)
{
	return a->w[0] == b->w[0] && a->w[1] == b->w[1];
}

#endif /* VREX_FP_H */
