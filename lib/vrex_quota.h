/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * Per-user quota policy (docs/uapi.md "Quotas"): what one uid may hold on
 * one device, as a share of that device's own capacity. vrex.ko's module
 * parameters start at these defaults (kernel/vrex_quota.c) and the HAL's
 * emulation applies them, so both enforce the same limits from one place.
 * A limit is at least 1; a share of 0 lifts it.
 */
#ifndef VREX_QUOTA_H
#define VREX_QUOTA_H

#include "vrex_compat.h"

/* Default percent of bank memory, stream slots, ReSV heads and SHIE entries. */
#define VREX_QUOTA_DEFAULT_PCT		50u
/* Default PRIME-imported BOs per uid (their memory is the exporter's: a count). */
#define VREX_QUOTA_DEFAULT_IMPORTS	256u
/* vrex_quota_limit() of a lifted limit. */
#define VREX_QUOTA_UNLIMITED		(~(u64)0)

/* @pct percent (at most 100) of @capacity, at least 1; VREX_QUOTA_UNLIMITED for @pct 0. */
static inline u64 vrex_quota_limit(u64 capacity, u32 pct)
{
	u64 limit;

	if (!pct)
		return VREX_QUOTA_UNLIMITED;
	if (pct > 100)
		pct = 100;
	/* Capacities are at most 2^40 bytes (64 banks x 16 GiB): no overflow. */
	limit = capacity * pct / 100;
	return limit ? limit : 1;
}

#endif /* VREX_QUOTA_H */
