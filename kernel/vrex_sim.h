/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vrex_sim.ko internals: the simulated register backend (the lib/ reference
 * model plus host memory as banks) and its fault injection.
 */
#ifndef VREX_SIM_H
#define VREX_SIM_H

#include <linux/atomic.h>
#include <linux/fault-inject.h>
#include <linux/types.h>

#include "vrex_backend.h"
#include "vrex_model.h"

struct vrex_sim {
	struct vrex_backend be;
	struct vrex_model model;
	void *arena;
	/*
	 * Fault injection. The counters are deterministic (tests arm exactly
	 * one failure): the next N commands (of opcode @fail_cmd_op if not 0)
	 * fail with status code @fail_cmd_code (0: 5, unknown) or never
	 * complete (STATUS stays BUSY until a reset). @fail_attr adds the
	 * kernel's generic fault_attr controls (probability, interval, times,
	 * task filter) where CONFIG_FAULT_INJECTION is set.
	 */
	atomic_t fail_cmds;
	atomic_t hang_cmds;
	u32 fail_cmd_op;
	u32 fail_cmd_code;
#ifdef CONFIG_FAULT_INJECTION
	struct fault_attr fail_attr;
#endif
	u32 forced_status;	/* STATUS of an injected failure or hang, 0 when none */
	/*
	 * A misbehaving device: the next @forge_lookups lookup commands report
	 * a hit on block @forge_block of hardware stream @forge_stream, whatever
	 * the pool scoping says, so the driver's own ownership filter can be
	 * tested. A LOOKUP_SIMILAR_BATCH that succeeded gets every record it
	 * wrote forged that way (status 0, HIT), refused queries included.
	 */
	atomic_t forge_lookups;
	u32 forge_block;
	u32 forge_stream;
	bool forging;		/* RES_* of the last command are forged */
	/*
	 * A device reporting a limit the driver must refuse: MAX_STREAMS reads
	 * @bad_max_streams when @forge_max_streams (set before the device is
	 * registered, configfs max_streams_reg).
	 */
	bool forge_max_streams;
	u32 bad_max_streams;
};

struct platform_device;

/* One simulated device: its backend and the "vrex" platform device carrying it. */
struct vrex_sim_device {
	struct vrex_sim *sim;
	struct platform_device *pdev;	/* NULL: not created */
};

/* vrex_sim_backend.c: the hw_version parameter, checked at load (-EINVAL, logged). */
int vrex_sim_parse_hw_version(void);
/* vrex_sim_backend.c: a backend with one reference, the caller's. */
struct vrex_sim *vrex_sim_create(u32 nbanks, u32 bank_size);
void vrex_sim_put(struct vrex_sim *sim);
/* @max_streams_reg < 0: MAX_STREAMS as the model has it; else what the register reads. */
int vrex_sim_device_add(struct vrex_sim_device *d, const char *name, u32 banks, u32 bank_size,
			s64 max_streams_reg);
void vrex_sim_device_remove(struct vrex_sim_device *d);

#endif /* VREX_SIM_H */
