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
	atomic_t fail_cmds;	/* fault injection: the next N commands fail with -EIO */
	u32 forced_status;	/* STATUS of an injected failure, 0 when none */
};

#endif /* VREX_SIM_H */
