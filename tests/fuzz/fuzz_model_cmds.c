/* SPDX-License-Identifier: MIT */
/*
 * The device model driven only through its register file, as the driver and the emulation drive it,
 * with arbitrary argument values and opcodes. Invariants checked after every command:
 * - STATUS is DONE or ERROR with an errno, never both, never neither;
 * - a failed command changes no counter but CMD_ERRORS;
 * - a lookup hit names a block that the host knows to be live (inserted and not yet released):
 *   no lookup ever returns a released block;
 * - the LIVE_BLOCKS counter equals the number of blocks the host knows to be live.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "vrex_model.h"

#define BANKS 4
#define BANK_SIZE (64u * 1024)
#define BLOCKS 32

static u8 mem[BANKS * BANK_SIZE];
static u8 *arena;
static u8 block_live[BLOCKS];

static u64 cnt(struct vrex_model *m, u32 i)
{
	return vrex_model_read(m, VREX_REG_CNT_LO(i)) | (u64)vrex_model_read(m, VREX_REG_CNT_HI(i)) << 32;
}

static void drain_released(struct vrex_model *m)
{
	for (;;) {
		vrex_model_write(m, VREX_REG_CMD, VREX_CMD_POP_RELEASED);
		if (!(vrex_model_read(m, VREX_REG_RES_FLAGS) & VREX_RESF_HIT))
			break;
		u32 b = vrex_model_read(m, VREX_REG_RES_BLOCK);

		if (b >= BLOCKS || !block_live[b])
			abort();
		block_live[b] = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vrex_model m;
	struct fuzz_input in = { data, size, 0 };
	struct vrex_model_config cfg;
	size_t need;

	vrex_model_default_config(&cfg);
	cfg.nbanks = BANKS;
	cfg.group_banks = 2;
	cfg.bank_size = BANK_SIZE;
	cfg.max_streams = 4;
	cfg.shie_capacity = 48;
	cfg.block_capacity = BLOCKS;
	cfg.zombie_frames = 2;
	/* Small ReSV heads, so that RESV_HASH also runs into full tables. */
	cfg.resv_heads = 2;
	cfg.resv_tokens = 64;
	cfg.resv_clusters = 32;
	need = vrex_model_arena_size(&cfg);
	if (!arena)
		arena = malloc(need);
	if (!need || !arena || vrex_model_init(&m, &cfg, arena, need, mem, sizeof(mem)))
		abort();
	memset(block_live, 0, sizeof(block_live));
	for (u32 i = 0; i < sizeof(mem); i++)
		mem[i] = (u8)(i * 7 + (i >> 9));

	for (int step = 0; step < 300 && !fuzz_done(&in); step++) {
		u32 op = (u32)fuzz_take(&in, 1) % (VREX_CMD_MAX + 2);
		u64 before[VREX_CNT_NUM];
		u32 status, live = 0;

		/* Arguments: mostly plausible, sometimes wild. */
		vrex_model_write(&m, VREX_REG_ARG_STREAM, (u32)fuzz_take(&in, 1) % 6);
		vrex_model_write(&m, VREX_REG_ARG_REGION, (u32)fuzz_take(&in, 1) % 18);
		vrex_model_write(&m, VREX_REG_ARG_OFFSET, (u32)((s32)(fuzz_take(&in, 1) % 8) - 4));
		vrex_model_write(&m, VREX_REG_ARG_FLAGS, (u32)fuzz_take(&in, 1) % 16);
		for (u32 i = 0; i < 4; i++)
			vrex_model_write(&m, VREX_REG_ARG_FP(i), (u32)fuzz_take(&in, 1) * 0x01010101u);
		vrex_model_write(&m, VREX_REG_ARG_SRC_LO, (u32)fuzz_take(&in, 3));
		vrex_model_write(&m, VREX_REG_ARG_SRC_HI, fuzz_take(&in, 1) == 0xff ? 1 : 0);
		vrex_model_write(&m, VREX_REG_ARG_WIDTH, 60 + (u32)fuzz_take(&in, 1));
		vrex_model_write(&m, VREX_REG_ARG_HEIGHT, 60 + (u32)fuzz_take(&in, 1));
		vrex_model_write(&m, VREX_REG_ARG_STRIDE, 60 + (u32)fuzz_take(&in, 2) % 400);
		vrex_model_write(&m, VREX_REG_ARG_KV_TAG, (u32)fuzz_take(&in, 1));
		vrex_model_write(&m, VREX_REG_ARG_KV_ADDR_LO, (u32)fuzz_take(&in, 3) & ~0xfffu);
		vrex_model_write(&m, VREX_REG_ARG_KV_ADDR_HI, 0);
		vrex_model_write(&m, VREX_REG_ARG_KV_LEN, (u32)fuzz_take(&in, 2) * 4);
		vrex_model_write(&m, VREX_REG_ARG_RADIUS, (u32)fuzz_take(&in, 1) % 40);
		vrex_model_write(&m, VREX_REG_ARG_BLOCK, (u32)fuzz_take(&in, 1) % (BLOCKS + 4));
		vrex_model_write(&m, VREX_REG_ARG_POOL,
				 fuzz_take(&in, 1) & 1 ? (u32)fuzz_take(&in, 1) % 3
						       : VREX_POOL_PRIVATE + vrex_model_read(&m, VREX_REG_ARG_STREAM));
		if (op == VREX_CMD_LOOKUP_SIMILAR_BATCH) {
			/* Descriptors and records in the banks, over the luma pattern or not. */
			vrex_model_write(&m, VREX_REG_ARG_COUNT, (u32)fuzz_take(&in, 1) % 70);
			vrex_model_write(&m, VREX_REG_ARG_DST_LO, (u32)fuzz_take(&in, 3));
		}
		if (op == VREX_CMD_POP_RELEASED)
			op = VREX_CMD_RETIRE;	/* popping is the host's job, done below */

		for (u32 i = 0; i < VREX_CNT_NUM; i++)
			before[i] = cnt(&m, i);
		vrex_model_write(&m, VREX_REG_CMD, op);
		status = vrex_model_read(&m, VREX_REG_STATUS);
		if (!!(status & VREX_STATUS_DONE) == !!(status & VREX_STATUS_ERROR))
			abort();
		if (status & VREX_STATUS_ERROR) {
			if (!(status & VREX_STATUS_ERRNO_MASK))
				abort();
			for (u32 i = 0; i < VREX_CNT_NUM; i++)
				if (i != VREX_CNT_CMD_ERRORS && cnt(&m, i) != before[i])
					abort();
			continue;
		}
		if (op == VREX_CMD_INSERT && !(vrex_model_read(&m, VREX_REG_ARG_FLAGS) & VREX_ARGF_ALIAS)) {
			u32 b = vrex_model_read(&m, VREX_REG_RES_BLOCK);

			if (b >= BLOCKS || block_live[b])
				abort();
			block_live[b] = 1;
		}
		if ((op == VREX_CMD_LOOKUP_TEMPORAL || op == VREX_CMD_LOOKUP_SIMILAR) &&
		    (vrex_model_read(&m, VREX_REG_RES_FLAGS) & VREX_RESF_HIT)) {
			u32 b = vrex_model_read(&m, VREX_REG_RES_BLOCK);

			if (b >= BLOCKS || !block_live[b])
				abort();
		}
		if (op == VREX_CMD_LOOKUP_SIMILAR_BATCH) {
			u64 dst = vrex_model_read(&m, VREX_REG_ARG_DST_LO);
			u32 n = vrex_model_read(&m, VREX_REG_ARG_COUNT);

			for (u32 i = 0; i < n; i++) {
				struct vrex_lookup_rec r;

				memcpy(&r, mem + dst + i * sizeof(r), sizeof(r));
				if ((r.flags & VREX_RESF_HIT) && (r.block >= BLOCKS || !block_live[r.block]))
					abort();
			}
		}
		if (op == VREX_CMD_REMOVE)
			block_live[vrex_model_read(&m, VREX_REG_ARG_BLOCK)] = 0;
		drain_released(&m);
		for (u32 i = 0; i < BLOCKS; i++)
			live += block_live[i];
		if (cnt(&m, VREX_CNT_LIVE_BLOCKS) != live)
			abort();
	}
	return 0;
}
