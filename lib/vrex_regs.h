/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * V-Rex register map. All registers are 32 bits wide, little endian, at
 * 4-byte aligned offsets inside a 4 KiB window (BAR0 / the DT "regs" region).
 * docs/hardware.md describes each field; this header is the single source of
 * the offsets for the driver, the HAL emulation and the reference model.
 *
 * Programming model: write the ARG_* registers a command needs, write its
 * opcode to CMD. Completion sets STATUS.DONE (or STATUS.ERROR with the error
 * code in STATUS.ERRNO) and raises IRQ_STATUS.CMD_DONE / CMD_ERROR; the
 * RES_* registers then hold the result until the next command.
 */
#ifndef VREX_REGS_H
#define VREX_REGS_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/types.h>
/* Records in device memory are little endian: sparse checks the driver's conversions. */
typedef __le32 vrex_le32;
typedef __le64 vrex_le64;
typedef __u8 vrex_u8;
#else
#include <assert.h>	/* C11 static_assert; a keyword in C++ */
#include <stdint.h>
typedef uint32_t vrex_le32;
typedef uint64_t vrex_le64;
typedef uint8_t vrex_u8;
#endif

#define VREX_REG_WINDOW			0x1000

/* Bit n of a 32-bit register (the kernel's BIT() is unsigned long and kernel-only). */
#define VREX_BIT(n)			(1u << (n))

/* Global block */
#define VREX_REG_ID			0x000	/* RO: VREX_ID_VALUE */
#define VREX_REG_VERSION		0x004	/* RO: major << 16 | minor */
#define VREX_REG_CAPS			0x008	/* RO: VREX_CAP_* */
#define VREX_REG_BANK_COUNT		0x00c	/* RO */
#define VREX_REG_BANK_SIZE_KB		0x010	/* RO: bank size in KiB */
#define VREX_REG_IRQ_STATUS		0x014	/* RW1C: VREX_IRQ_* */
#define VREX_REG_IRQ_MASK		0x018	/* RW: 1 = enabled */
#define VREX_REG_RESET			0x01c	/* WO: write VREX_RESET_MAGIC */
#define VREX_REG_SHIE_CAPACITY		0x020	/* RO: entries */
#define VREX_REG_MAX_STREAMS		0x024	/* RO */
#define VREX_REG_BLOCK_CAPACITY		0x028	/* RO */
#define VREX_REG_ZOMBIE_FRAMES		0x02c	/* RW: 1..255 */
#define VREX_REG_GROUP_BANKS		0x030	/* RO: banks per group */
#define VREX_REG_SCRATCH		0x034	/* RW: bus sanity checks */
/*
 * Bus interface (present when CAPS has VREX_CAP_DMA; otherwise reads 0 and
 * ignores writes). Device addresses are offsets in device memory: the banks,
 * then the staging window of STAGE_SIZE bytes right past them. The device
 * reaches the staging window by DMA at STAGE_BASE, and with VREX_CAP_HOST_MEM
 * the banks too, at MEM_BASE: bus addresses, i.e. IOVAs behind an IOMMU.
 * Without HOST_MEM the banks are the device's own memory (PCI BAR2). The
 * registers are bus configuration: RESET keeps them. A DMA fetch that
 * faults (no mapping, bus error) fails the command before it runs, with
 * VREX_STATUS_ERROR and errno VREX_DMA_FAULT_ERRNO; a store that faults
 * reports the same after the command ran, its output undefined
 * (docs/hardware.md, "DMA addressing").
 */
#define VREX_REG_MEM_BASE_LO		0x038	/* RW: bus address of device address 0 */
#define VREX_REG_MEM_BASE_HI		0x03c	/* RW */
#define VREX_REG_STAGE_BASE_LO		0x040	/* RW: bus address of the staging window */
#define VREX_REG_STAGE_BASE_HI		0x044	/* RW */
#define VREX_REG_STAGE_SIZE		0x048	/* RO: bytes of the staging window */
#define VREX_DMA_FAULT_ERRNO		5u	/* EIO */

#define VREX_ID_VALUE			0x56524558u	/* "VREX" */
#define VREX_VERSION_VALUE		0x00010001u	/* 1.1 */
#define VREX_VERSION_1_0		0x00010000u
/*
 * 1.1: ARG_NEAREST, the lookups' TIER_* flags, RESF_HOST_TIER (1.0 ignores
 * them), and the FCC_REGION_MOTION result registers (1.0 reads them as 0).
 * The reference model is either (struct vrex_model_config.hw_version).
 */
#define VREX_VERSION_NEAREST		0x00010001u
#define VREX_VERSION_REGION_MOTION	0x00010001u
#define VREX_RESET_MAGIC		0x52535421u	/* "RST!" */

#define VREX_CAP_FCC			VREX_BIT(0)
#define VREX_CAP_SHIE			VREX_BIT(1)
#define VREX_CAP_POOLED			VREX_BIT(2)
#define VREX_CAP_PREDICT_SLOTS		VREX_BIT(3)	/* temporal offsets +1, +2 */
#define VREX_CAP_RESV			VREX_BIT(4)	/* ReSV key hashing and WiCSum */
#define VREX_CAP_DMA			VREX_BIT(5)	/* bus interface: STAGE_BASE, MEM_BASE */
#define VREX_CAP_HOST_MEM		VREX_BIT(6)	/* banks in host memory at MEM_BASE */

#define VREX_IRQ_CMD_DONE		VREX_BIT(0)
#define VREX_IRQ_CMD_ERROR		VREX_BIT(1)
#define VREX_IRQ_ZOMBIES		VREX_BIT(2)	/* retire released >= 1 block */
#define VREX_IRQ_ALL			0x7u

/* Command block */
#define VREX_REG_CMD			0x100	/* WO: VREX_CMD_* starts a command */
#define VREX_REG_STATUS			0x104	/* RO */
#define VREX_STATUS_BUSY		VREX_BIT(0)
#define VREX_STATUS_DONE		VREX_BIT(1)
#define VREX_STATUS_ERROR		VREX_BIT(2)
#define VREX_STATUS_ERRNO_SHIFT		8
#define VREX_STATUS_ERRNO_MASK		(0xffu << VREX_STATUS_ERRNO_SHIFT)

#define VREX_CMD_NOP			0
#define VREX_CMD_STREAM_OPEN		1	/* STREAM, POOL */
#define VREX_CMD_STREAM_CLOSE		2	/* STREAM; releases its blocks (queued) */
#define VREX_CMD_FRAME			3	/* STREAM, SRC_ADDR, WIDTH, HEIGHT, STRIDE */
#define VREX_CMD_INSERT			4	/* STREAM REGION OFFSET FP, KV_* or BLOCK */
#define VREX_CMD_LOOKUP_TEMPORAL	5	/* STREAM, REGION, OFFSET */
#define VREX_CMD_LOOKUP_SIMILAR		6	/* STREAM, REGION, FP, RADIUS, FLAGS */
#define VREX_CMD_REMOVE			7	/* BLOCK; the block and all its entries */
#define VREX_CMD_RETIRE			8	/* STREAM; releases zombies (queued) */
#define VREX_CMD_POP_RELEASED		9	/* pops one release record into RES_* */
#define VREX_CMD_BLOCK_INFO		10	/* BLOCK */
#define VREX_CMD_RESV_HASH		11	/* HEAD, SRC, COUNT: hash and cluster keys */
#define VREX_CMD_RESV_SELECT		12	/* HEAD, SRC, DST, COUNT, FLAGS */
#define VREX_CMD_RESV_TRUNCATE		13	/* HEAD, COUNT: keep COUNT tokens */
#define VREX_CMD_LOOKUP_SIMILAR_BATCH	14	/* SRC, DST, COUNT: see below */
#define VREX_CMD_MAX			14

/* Argument registers */
#define VREX_REG_ARG_STREAM		0x108
#define VREX_REG_ARG_REGION		0x10c
#define VREX_REG_ARG_OFFSET		0x110	/* signed temporal offset, -3..+2 */
#define VREX_REG_ARG_FLAGS		0x114	/* VREX_ARGF_* */
#define VREX_REG_ARG_FP(i)		(0x118 + 4 * (i))	/* i = 0..3, bits 32i..32i+31 */
#define VREX_REG_ARG_SRC_LO		0x128
#define VREX_REG_ARG_SRC_HI		0x12c
#define VREX_REG_ARG_WIDTH		0x130
#define VREX_REG_ARG_HEIGHT		0x134
#define VREX_REG_ARG_STRIDE		0x138
#define VREX_REG_ARG_KV_TAG		0x13c
#define VREX_REG_ARG_KV_ADDR_LO		0x140
#define VREX_REG_ARG_KV_ADDR_HI		0x144
#define VREX_REG_ARG_KV_LEN		0x148

/*
 * Bit 63 of ARG_KV_ADDR: the range is outside device memory (a buffer the
 * driver imported, e.g. an inference engine's own KV cache). The device only
 * keeps the pointer; the block is in no bank (RES_BANK_FIRST = VREX_BANK_NONE)
 * and no bank's occupancy counts it.
 */
#define VREX_KV_ADDR_EXTERNAL		0x8000000000000000ull
#define VREX_BANK_NONE			0xffu
#define VREX_REG_ARG_RADIUS		0x14c
#define VREX_REG_ARG_BLOCK		0x150
#define VREX_REG_ARG_POOL		0x154
#define VREX_REG_ARG_HEAD		0x158	/* ReSV head (layer, head, sequence) */
#define VREX_REG_ARG_COUNT		0x15c
#define VREX_REG_ARG_DST_LO		0x160
#define VREX_REG_ARG_DST_HI		0x164
/*
 * INSERT with ALIAS: the generation of ARG_BLOCK the caller means (RES_BLOCK_GEN
 * of the insert or lookup that named it); the insert fails with ENOENT when
 * the slot now holds another generation. 0: any generation (the behaviour
 * before generations existed).
 */
#define VREX_REG_ARG_BLOCK_GEN_LO	0x168
#define VREX_REG_ARG_BLOCK_GEN_HI	0x16c
/*
 * LOOKUP_SIMILAR_BATCH: records per descriptor, the nearest first (0 or 1:
 * one, the behaviour before the register existed; up to
 * VREX_LOOKUP_NEAREST_MAX). See the batch below.
 */
#define VREX_REG_ARG_NEAREST		0x170
#define VREX_REG_ARG_LAST		VREX_REG_ARG_NEAREST

#define VREX_ARGF_SCOPE_POOL		VREX_BIT(0)	/* LOOKUP_SIMILAR: whole pool */
#define VREX_ARGF_PAST_ONLY		VREX_BIT(1)	/* LOOKUP_SIMILAR: frames before current */
#define VREX_ARGF_ALIAS			VREX_BIT(2)	/* INSERT: point at existing ARG_BLOCK */
#define VREX_ARGF_RESV_BLOCKS		VREX_BIT(3)	/* RESV_SELECT: block ranges */
/*
 * INSERT (not with ALIAS): a host-tier block, external memory only; OFFSET
 * may reach back to the stream's first frame and zombie release never ages
 * the block (lifecycle.h).
 */
#define VREX_ARGF_HOST_TIER		VREX_BIT(4)
/*
 * LOOKUP_SIMILAR (and batch descriptors): the tiers the lookup accepts, the
 * device's entries (vrex_model_insert) and/or host-tier ones (HOST_TIER
 * inserts). Neither bit: every tier, the behaviour before the bits existed.
 */
#define VREX_ARGF_TIER_DEVICE		VREX_BIT(5)
#define VREX_ARGF_TIER_HOST		VREX_BIT(6)
#define VREX_ARGF_VALID_MASK		0x7fu

/* Result registers */
#define VREX_REG_RES_FLAGS		0x180	/* VREX_RESF_* */
#define VREX_REG_RES_BLOCK		0x184
#define VREX_REG_RES_DISTANCE		0x188
#define VREX_REG_RES_FRAME		0x18c
#define VREX_REG_RES_FP(i)		(0x190 + 4 * (i))
#define VREX_REG_RES_KV_TAG		0x1a0
#define VREX_REG_RES_KV_ADDR_LO		0x1a4
#define VREX_REG_RES_KV_ADDR_HI		0x1a8
#define VREX_REG_RES_KV_LEN		0x1ac
#define VREX_REG_RES_GROUP		0x1b0
#define VREX_REG_RES_BANK_FIRST		0x1b4
#define VREX_REG_RES_BANK_COUNT		0x1b8
#define VREX_REG_RES_COUNT		0x1bc	/* RETIRE/CLOSE: released; POP: queued */
#define VREX_REG_RES_STREAM		0x1c0
#define VREX_REG_RES_REGION		0x1c4
#define VREX_REG_RES_REASON		0x1c8	/* POP_RELEASED: VREX_RELEASE_* */
#define VREX_REG_RES_LAST_ACCESS	0x1cc	/* BLOCK_INFO */
#define VREX_REG_RES_TOKENS		0x1d0	/* RESV_*: tokens added / selected; BATCH: hits */
#define VREX_REG_RES_CLUSTERS		0x1d4	/* RESV_*: clusters of the head / selected */
#define VREX_REG_RES_HEAD_TOKENS	0x1d8	/* RESV_*: tokens the head holds */
/*
 * Generation of RES_BLOCK (INSERT, lookup hits, REMOVE, POP_RELEASED,
 * BLOCK_INFO): every block allocation takes the next value of a 64-bit
 * counter that starts at 1 and that RESET keeps, so a generation is never 0
 * and never names two blocks, even when their slot (block id) is the same.
 */
#define VREX_REG_RES_BLOCK_GEN_LO	0x1dc
#define VREX_REG_RES_BLOCK_GEN_HI	0x1e0
#define VREX_REG_RES_LAST		VREX_REG_RES_BLOCK_GEN_HI

#define VREX_RESF_HIT			VREX_BIT(0)
#define VREX_RESF_APPROX		VREX_BIT(1)	/* similarity hit at distance > 0 */
#define VREX_RESF_OPENED		VREX_BIT(2)	/* FRAME: new scene opened a group */
#define VREX_RESF_CONFLICT		VREX_BIT(3)	/* FRAME: took another pool's group */
#define VREX_RESF_HOST_TIER		VREX_BIT(4)	/* lookup hit: a host-tier entry */

/*
 * LOOKUP_SIMILAR_BATCH: ARG_COUNT (1..VREX_LOOKUP_BATCH_MAX) similarity
 * lookups. ARG_SRC is the device address of ARG_COUNT descriptors, ARG_DST
 * the one of as many result records (both 8-aligned, inside device memory;
 * they may overlap: every descriptor is read before any record is written).
 * Record i answers descriptor i exactly as LOOKUP_SIMILAR would have in RES_*
 * (the counters and block ages move the same way), the queries share the
 * table walk (lib/shie_table.h, vrex_shie_find_similar_batch()).
 *
 * The command fails as a whole, writing no record, for COUNT 0 or above the
 * maximum (EINVAL), SRC/DST misaligned or outside device memory (ERANGE), and
 * any descriptor LOOKUP_SIMILAR would refuse for its arguments: stream not
 * open, radius > 31, other flag bits (EINVAL), region >= 16 (ERANGE). The one
 * refusal that depends on the stream's state, PAST_ONLY before its first
 * frame, is per query: that record's status is EINVAL (flags 0, block
 * VREX_NIL) and CNT_CMD_ERRORS counts it, as it counts the refused command.
 * On success RES_COUNT = queries, RES_TOKENS = hits.
 *
 * With ARG_NEAREST = k > 1, descriptor i has the k records i * k .. i * k +
 * k - 1: its k nearest entries within the radius, nearest first (the order
 * of lib/shie_table.h; record i * k is what LOOKUP_SIMILAR answers), then
 * miss records (flags 0, block VREX_NIL) for the answers it did not find; a
 * refused query has its status in all k. Each query still counts as one
 * lookup (hit or miss by its nearest answer) and every block it returns is
 * touched. k above VREX_LOOKUP_NEAREST_MAX or COUNT * k records above
 * VREX_LOOKUP_BATCH_MAX fail the command (EINVAL): a batch's records always
 * fit the space of VREX_LOOKUP_BATCH_MAX.
 */
#define VREX_LOOKUP_BATCH_MAX		64
#define VREX_LOOKUP_NEAREST_MAX		8
/* Records per descriptor for an ARG_NEAREST value. */
static inline unsigned int vrex_lookup_nearest(unsigned int arg)
{
	return arg ? arg : 1;
}

struct vrex_lookup_desc {
	vrex_le32 stream;
	vrex_le32 region;
	vrex_le32 radius;
	vrex_le32 flags;	/* VREX_ARGF_SCOPE_POOL, _PAST_ONLY, _TIER_DEVICE, _TIER_HOST */
	vrex_le64 fp[2];	/* bits 0..63, 64..127 */
};

struct vrex_lookup_rec {
	vrex_le32 status;	/* 0, or the VREX_E* code LOOKUP_SIMILAR would have failed with */
	vrex_le32 flags;	/* RES_FLAGS: VREX_RESF_HIT, _APPROX, _HOST_TIER */
	vrex_le32 block;	/* RES_BLOCK: VREX_NIL on a miss */
	vrex_le32 distance;	/* on a hit, as the RES_* registers; otherwise 0 */
	vrex_le32 frame;
	vrex_le32 stream;
	vrex_u8 region;
	vrex_u8 bank;		/* RES_BANK_FIRST */
	vrex_u8 pad[2];		/* 0 */
	vrex_le32 last_access;
	vrex_le64 fp[2];
	vrex_le64 kv_addr;
	vrex_le32 kv_tag;
	vrex_le32 kv_len;
};

static_assert(sizeof(struct vrex_lookup_desc) == 32, "descriptor layout");
static_assert(sizeof(struct vrex_lookup_rec) == 64, "record layout");

/* Descriptors then records of a whole batch: what a driver stages. */
#define VREX_LOOKUP_STAGE_SIZE \
	(VREX_LOOKUP_BATCH_MAX * (sizeof(struct vrex_lookup_desc) + sizeof(struct vrex_lookup_rec)))
/* The staging window of a device with VREX_CAP_DMA (STAGE_SIZE): two 4 KiB pages. */
#define VREX_STAGE_WINDOW		0x2000u
static_assert(VREX_LOOKUP_STAGE_SIZE <= VREX_STAGE_WINDOW, "a whole batch fits the window");

/* FCC block: features of the last FRAME command */
#define VREX_REG_FCC_CENTRE_MOTION	0x200
#define VREX_REG_FCC_STATIC_RATIO	0x204
#define VREX_REG_FCC_ROI_DX		0x208	/* signed */
#define VREX_REG_FCC_ROI_DY		0x20c	/* signed */
#define VREX_REG_FCC_MOVING_BLOCKS	0x210
/*
 * Region motion (vrex_fcc_region_motion(), 1/16 grid px per SHIE region),
 * four regions a register: byte k of REGION_MOTION(i) is region 4 * i + k.
 */
#define VREX_REG_FCC_REGION_MOTION(i)	(0x214 + 4 * (i))	/* i < 4 */
#define VREX_FCC_REGION_MOTION_REGS	4

/* Counters (64-bit, LO then HI) */
#define VREX_REG_CNT_BASE		0x300
#define VREX_CNT_LOOKUPS		0
#define VREX_CNT_EXACT_HITS		1
#define VREX_CNT_APPROX_HITS		2
#define VREX_CNT_MISSES			3
#define VREX_CNT_EVICTIONS		4	/* zombie blocks released */
#define VREX_CNT_BANK_CONFLICTS		5
#define VREX_CNT_INSERTS		6
#define VREX_CNT_REMOVES		7
#define VREX_CNT_FRAMES			8
#define VREX_CNT_LIVE_ENTRIES		9
#define VREX_CNT_LIVE_BLOCKS		10
#define VREX_CNT_CMD_ERRORS		11
#define VREX_CNT_NUM			12
#define VREX_REG_CNT_LO(i)		(VREX_REG_CNT_BASE + 8 * (i))
#define VREX_REG_CNT_HI(i)		(VREX_REG_CNT_BASE + 8 * (i) + 4)

/* Bank occupancy: live KV KiB (rounded up per block) and blocks per bank */
#define VREX_REG_BANK_KB(b)		(0x400 + 4 * (b))	/* b < 64 */
#define VREX_REG_BANK_BLOCKS(b)		(0x500 + 4 * (b))
/* Bank groups: the pool owning group g, VREX_NIL when free */
#define VREX_REG_GROUP_POOL(g)		(0x600 + 4 * (g))

/*
 * ReSV block (present when CAPS has VREX_CAP_RESV; otherwise reads 0 and
 * ignores writes). Parameters are RW and take effect at the next command;
 * SEED and DIM define the hyperplanes, so heads holding tokens must be
 * truncated when they change (their hashes are no longer comparable).
 */
#define VREX_REG_RESV_SEED_LO		0x700	/* RW */
#define VREX_REG_RESV_SEED_HI		0x704	/* RW */
#define VREX_REG_RESV_DIM		0x708	/* RW: 1..256 int16 per key */
#define VREX_REG_RESV_TH		0x70c	/* RW: 0..32, clustering radius */
#define VREX_REG_RESV_RATIO		0x710	/* RW: 0..65536, Q16 WiCSum ratio */
#define VREX_REG_RESV_MODE		0x714	/* RW: VREX_RESV_MODE_* */
#define VREX_REG_RESV_TOKENS_PER_BLOCK	0x718	/* RW: >= 1, KVMU block size */
#define VREX_REG_RESV_BYTES_PER_TOKEN	0x71c	/* RW: K+V bytes, for the byte counter */
#define VREX_REG_RESV_HEADS		0x720	/* RO */
#define VREX_REG_RESV_MAX_TOKENS	0x724	/* RO: per head */
#define VREX_REG_RESV_MAX_CLUSTERS	0x728	/* RO: per head */
#define VREX_REG_RESV_LUT(d)		(0x740 + 4 * (d))	/* RW: d = 0..32, 16 bits */

/* ReSV counters (64-bit, LO then HI) */
#define VREX_REG_RESV_CNT_BASE		0x800
#define VREX_RESV_CNT_KEYS		0	/* keys hashed */
#define VREX_RESV_CNT_CLUSTERS		1	/* clusters opened */
#define VREX_RESV_CNT_SELECTS		2
#define VREX_RESV_CNT_TOKENS_SCANNED	3	/* tokens held by the heads selected from */
#define VREX_RESV_CNT_TOKENS_SELECTED	4
#define VREX_RESV_CNT_BYTES_SELECTED	5	/* tokens selected * BYTES_PER_TOKEN */
#define VREX_RESV_CNT_RANGES		6	/* ranges the KVMU emitted */
#define VREX_RESV_CNT_NUM		7
#define VREX_REG_RESV_CNT_LO(i)		(VREX_REG_RESV_CNT_BASE + 8 * (i))
#define VREX_REG_RESV_CNT_HI(i)		(VREX_REG_RESV_CNT_BASE + 8 * (i) + 4)

/*
 * Test hooks of the QEMU device model (qemu/hw/vrex/, property test-hooks=on;
 * silicon and the model in lib/ read 0 here): the fault injection vrex_sim.ko
 * offers through debugfs, done by the device so that the same suites run on
 * the MMIO path. vrex.ko exposes them under the sim's debugfs names
 * (kernel/vrex_testhooks.c). The hooks act on the next CMD writes: when
 * FAIL_OP is 0 or equals the opcode, a pending HANG makes the command stay
 * BUSY (no interrupt) until RESET, else a pending FAIL completes it with
 * STATUS.ERROR and errno FAIL_CODE (5 if 0) without running it. FORGE makes
 * the next lookup report a hit on FORGE_BLOCK of FORGE_STREAM (RES_* and, for
 * a batch, every record), whatever the tables hold. RESET clears a forced
 * status and forging, not the counts.
 */
#define VREX_REG_TEST_ID		0xf00	/* RO: VREX_TEST_ID_VALUE when present */
#define VREX_REG_TEST_FAIL_CMDS		0xf04	/* RW: commands to fail */
#define VREX_REG_TEST_HANG_CMDS		0xf08	/* RW: commands to hang */
#define VREX_REG_TEST_FAIL_OP		0xf0c	/* RW: opcode the two apply to, 0 any */
#define VREX_REG_TEST_FAIL_CODE		0xf10	/* RW: errno of a failed command */
#define VREX_REG_TEST_FORGE_LOOKUPS	0xf14	/* RW: lookups to forge */
#define VREX_REG_TEST_FORGE_BLOCK	0xf18	/* RW */
#define VREX_REG_TEST_FORGE_STREAM	0xf1c	/* RW */
#define VREX_TEST_ID_VALUE		0x54455354u	/* "TEST" */

#endif /* VREX_REGS_H */
