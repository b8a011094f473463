/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Bit counting for the SHIE's hot loops (shie_search.c, shie_scan.h, shie_group_scan.c).
 * Without a popcount instruction in the target flags, the compiler's builtin
 * becomes a libgcc call per word, and the probe and scan loops then spend more
 * time in calls than in reading codes. So the generic x86-64 user-space build
 * counts bits inline (SHIE_POPCNT_CLONES: the loops also exist as clones with
 * the instruction, picked at run time). The kernel's hweight64() is already
 * arch-optimised, and other targets have their instruction in the base flags.
 */
#ifndef VREX_SHIE_POPCOUNT_H
#define VREX_SHIE_POPCOUNT_H

#include "vrex_compat.h"

#if defined(__KERNEL__) || defined(__POPCNT__) || !defined(__x86_64__) || \
	!(defined(__GNUC__) || defined(__clang__))
#define shie_popcount64(x) ((u32)vrex_popcount64(x))
#else
#define SHIE_POPCNT_CLONES 1
static inline u32 shie_popcount64(u64 x)
{
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (u32)((x * 0x0101010101010101ull) >> 56);
}
#endif

#endif /* VREX_SHIE_POPCOUNT_H */
