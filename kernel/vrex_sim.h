/* SPDX-License-Identifier: GPL-2.0-only */
/* The simulated register backend: the lib/ reference model plus host memory as banks. */
#ifndef VREX_SIM_H
#define VREX_SIM_H

#include <linux/atomic.h>
#include <linux/types.h>

#include "vrex_model.h"

struct vrex_sim {
	struct vrex_model model;
	void *arena;
	u8 *mem;
	u64 mem_size;
	/* Fault injection: the next N commands (of opcode @fail_cmd_op if not 0) ... */
	atomic_t fail_cmds;	/* ... fail with status code @fail_cmd_code (0: 5, unknown) */
	atomic_t hang_cmds;	/* ... never complete (STATUS stays BUSY until a reset) */
	u32 fail_cmd_op;
	u32 fail_cmd_code;
	u32 forced_status;	/* STATUS of an injected failure or hang, 0 when none */
	/*
	 * A misbehaving device: the next @forge_lookups lookups report a hit on
	 * block @forge_block of hardware stream @forge_stream, whatever the pool
	 * scoping says, so the driver's own ownership filter can be tested.
	 */
	atomic_t forge_lookups;
	u32 forge_block;
	u32 forge_stream;
	bool forging;		/* RES_* of the last command are forged */
};

#endif /* VREX_SIM_H */
