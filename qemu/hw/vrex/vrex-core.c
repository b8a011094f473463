/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * V-Rex device core: register window, asynchronous commands, DMA windows.
 * See vrex-core.h for the memory model and docs/hardware.md for the device.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/units.h"
#include "vrex-core.h"

/* A range of device memory a command reads (@in) or writes (@out). */
typedef struct VRexRange {
    uint64_t addr;
    uint64_t len;
} VRexRange;

enum { VREX_MAX_RANGES = 2 };

uint64_t vrex_core_mem_size(const VRexCore *c)
{
    return (uint64_t)c->nbanks * c->bank_size_kb * KiB + VREX_STAGE_WINDOW;
}

static uint32_t arg(VRexCore *c, uint32_t off)
{
    return vrex_model_read(&c->model, off);
}

static uint64_t arg64(VRexCore *c, uint32_t lo, uint32_t hi)
{
    return (uint64_t)arg(c, hi) << 32 | arg(c, lo);
}

/*
 * The ranges of device memory @op's arguments name: what the engine fetches
 * before it runs (@in) and stores after it succeeded (@out). Ranges the model
 * will refuse (outside device memory) are clipped by the caller; the model
 * then fails the command as without DMA.
 */
static void command_ranges(VRexCore *c, uint32_t op, VRexRange *in,
                           VRexRange *out)
{
    uint64_t src = arg64(c, VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI);
    uint64_t dst = arg64(c, VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI);
    uint64_t count = arg(c, VREX_REG_ARG_COUNT);
    uint64_t dim = arg(c, VREX_REG_RESV_DIM);
    uint64_t height = arg(c, VREX_REG_ARG_HEIGHT);
    uint64_t records;

    memset(in, 0, sizeof(*in) * VREX_MAX_RANGES);
    memset(out, 0, sizeof(*out) * VREX_MAX_RANGES);
    switch (op) {
    case VREX_CMD_FRAME:
        if (height) {
            in[0].addr = src;
            in[0].len = (height - 1) * arg(c, VREX_REG_ARG_STRIDE) +
                        arg(c, VREX_REG_ARG_WIDTH);
        }
        break;
    case VREX_CMD_LOOKUP_SIMILAR_BATCH:
        /* ARG_NEAREST records per descriptor; more than the space: refused */
        records = count * vrex_lookup_nearest(arg(c, VREX_REG_ARG_NEAREST));
        if (count > VREX_LOOKUP_BATCH_MAX || records > VREX_LOOKUP_BATCH_MAX) {
            break;
        }
        in[0] = (VRexRange){ src, count * sizeof(struct vrex_lookup_desc) };
        /* Fetched too: bytes the engine does not store are written back as they were. */
        in[1] = (VRexRange){ dst, records * sizeof(struct vrex_lookup_rec) };
        out[0] = in[1];
        break;
    case VREX_CMD_RESV_HASH:
        in[0] = (VRexRange){ src, count * dim * sizeof(int16_t) };
        break;
    case VREX_CMD_RESV_SELECT:
        in[0] = (VRexRange){ src, dim * sizeof(int16_t) };
        in[1] = (VRexRange){ dst, count * sizeof(uint32_t) * 2 };
        out[0] = in[1];
        break;
    default:
        break;
    }
}

/*
 * Moves device memory [@addr, @addr + @len) between the shadow and host
 * memory, window by window; the local part (a card's own memory) is already
 * in place. Parts outside device memory are skipped (the model refuses them).
 */
static bool dma_range(VRexCore *c, const VRexRange *r, bool write)
{
    uint64_t size = c->banks_bytes + VREX_STAGE_WINDOW;
    uint64_t addr = r->addr, end;

    if (!r->len || addr >= size) {
        return true;
    }
    end = r->len > size - addr ? size : addr + r->len;
    while (addr < end) {
        uint64_t win_end, bus;

        if (addr < c->banks_bytes) {
            win_end = MIN(end, c->banks_bytes);
            if (!c->host_mem) {
                addr = win_end;
                continue;
            }
            bus = c->mem_base + addr;
        } else {
            win_end = end;
            bus = c->stage_base + (addr - c->banks_bytes);
        }
        if (!c->bus->dma_rw(c, bus, c->mem + addr, win_end - addr, write)) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "vrex: DMA %s fault at bus address 0x%" PRIx64
                          " (device address 0x%" PRIx64 ", %" PRIu64 " bytes)\n",
                          write ? "write" : "read", bus, addr, win_end - addr);
            c->dma_faults++;
            return false;
        }
        addr = win_end;
    }
    return true;
}

static void update_irq(VRexCore *c, bool completion)
{
    uint32_t pending = vrex_model_read(&c->model, VREX_REG_IRQ_STATUS) &
                       vrex_model_read(&c->model, VREX_REG_IRQ_MASK);

    c->bus->irq(c, pending != 0, completion);
}

/* A DMA fault: the command fails as a whole, as a refused command does. */
static void fail_dma(VRexCore *c)
{
    struct vrex_model *m = &c->model;

    m->status = VREX_STATUS_ERROR |
                (VREX_DMA_FAULT_ERRNO << VREX_STATUS_ERRNO_SHIFT);
    m->irq_status |= VREX_IRQ_CMD_ERROR;
    m->cnt[VREX_CNT_CMD_ERRORS]++;
}

#define T_REG(c, off) ((c)->t_regs[((off) - VREX_REG_TEST_ID) / 4])

static bool is_test_reg(VRexCore *c, hwaddr off)
{
    return c->test_hooks && off >= VREX_REG_TEST_ID &&
           off <= VREX_REG_TEST_FORGE_STREAM;
}

/* Takes one from the test counter at @off; true if it was non-zero. */
static bool take(VRexCore *c, hwaddr off)
{
    if (!T_REG(c, off)) {
        return false;
    }
    T_REG(c, off)--;
    return true;
}

/*
 * At the CMD write, as vrex_sim.ko decides: forging for a lookup, then an
 * injected hang (stays BUSY, no timer) or failure. True if the command runs
 * (possibly as a faked failure) later from the timer.
 */
static bool test_hooks_at_cmd(VRexCore *c, uint32_t op)
{
    uint32_t fail_op = T_REG(c, VREX_REG_TEST_FAIL_OP);

    c->forced_status = 0;
    c->forced_fail = false;
    c->forging = (op == VREX_CMD_LOOKUP_TEMPORAL ||
                  op == VREX_CMD_LOOKUP_SIMILAR ||
                  op == VREX_CMD_LOOKUP_SIMILAR_BATCH) &&
                 take(c, VREX_REG_TEST_FORGE_LOOKUPS);
    if (fail_op && fail_op != op) {
        return true;
    }
    if (take(c, VREX_REG_TEST_HANG_CMDS)) {
        c->forced_status = VREX_STATUS_BUSY;
        return false;
    }
    c->forced_fail = take(c, VREX_REG_TEST_FAIL_CMDS);
    return true;
}

/*
 * A forged batch: every record the model wrote (ARG_NEAREST per query) becomes
 * a hit on the forged block.
 */
static void forge_batch(VRexCore *c)
{
    uint64_t dst = arg64(c, VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI);
    uint32_t i, count = arg(c, VREX_REG_ARG_COUNT) *
                        vrex_lookup_nearest(arg(c, VREX_REG_ARG_NEAREST));
    struct vrex_lookup_rec rec;

    for (i = 0; i < count; i++) {
        uint8_t *p = c->mem + dst + (uint64_t)i * sizeof(rec);

        memcpy(&rec, p, sizeof(rec));
        rec.status = 0;
        rec.flags = cpu_to_le32(VREX_RESF_HIT);
        rec.block = cpu_to_le32(T_REG(c, VREX_REG_TEST_FORGE_BLOCK));
        rec.stream = cpu_to_le32(T_REG(c, VREX_REG_TEST_FORGE_STREAM));
        memcpy(p, &rec, sizeof(rec));
    }
}

static void run_command(void *opaque)
{
    VRexCore *c = opaque;
    VRexRange in[VREX_MAX_RANGES], out[VREX_MAX_RANGES];
    uint32_t op = c->pending_op;
    int i;

    command_ranges(c, op, in, out);
    c->busy = false;
    if (c->forced_fail) {
        uint32_t code = T_REG(c, VREX_REG_TEST_FAIL_CODE) & 0xff;

        c->forced_status = VREX_STATUS_ERROR |
                           ((code ? code : 5) << VREX_STATUS_ERRNO_SHIFT);
        c->model.irq_status |= VREX_IRQ_CMD_ERROR;
        update_irq(c, true);
        return;
    }
    for (i = 0; i < VREX_MAX_RANGES; i++) {
        if (!dma_range(c, &in[i], false)) {
            fail_dma(c);
            update_irq(c, true);
            return;
        }
    }
    vrex_model_write(&c->model, VREX_REG_CMD, op);
    if (c->forging && op == VREX_CMD_LOOKUP_SIMILAR_BATCH &&
        (c->model.status & VREX_STATUS_DONE)) {
        forge_batch(c);
    }
    if (c->model.status & VREX_STATUS_DONE) {
        for (i = 0; i < VREX_MAX_RANGES; i++) {
            if (!dma_range(c, &out[i], true)) {
                fail_dma(c);
                break;
            }
        }
    }
    update_irq(c, true);
}

static uint64_t vrex_core_read(void *opaque, hwaddr off, unsigned size)
{
    VRexCore *c = opaque;

    if (is_test_reg(c, off)) {
        return off == VREX_REG_TEST_ID ? VREX_TEST_ID_VALUE : T_REG(c, off);
    }
    switch (off) {
    case VREX_REG_STATUS:
        if (c->forced_status) {
            return c->forced_status;
        }
        if (c->busy) {
            return VREX_STATUS_BUSY;
        }
        break;
    case VREX_REG_RES_FLAGS:
        if (c->forging) {
            return VREX_RESF_HIT;
        }
        break;
    case VREX_REG_RES_BLOCK:
        if (c->forging) {
            return T_REG(c, VREX_REG_TEST_FORGE_BLOCK);
        }
        break;
    case VREX_REG_RES_STREAM:
        if (c->forging) {
            return T_REG(c, VREX_REG_TEST_FORGE_STREAM);
        }
        break;
    case VREX_REG_CAPS:
        return vrex_model_read(&c->model, off) | VREX_CAP_DMA |
               (c->host_mem ? VREX_CAP_HOST_MEM : 0);
    case VREX_REG_MEM_BASE_LO:
        return (uint32_t)c->mem_base;
    case VREX_REG_MEM_BASE_HI:
        return c->mem_base >> 32;
    case VREX_REG_STAGE_BASE_LO:
        return (uint32_t)c->stage_base;
    case VREX_REG_STAGE_BASE_HI:
        return c->stage_base >> 32;
    case VREX_REG_STAGE_SIZE:
        return VREX_STAGE_WINDOW;
    default:
        break;
    }
    return vrex_model_read(&c->model, off);
}

static void set_lo(uint64_t *reg, uint32_t val)
{
    *reg = (*reg & ~0xffffffffull) | val;
}

static void set_hi(uint64_t *reg, uint32_t val)
{
    *reg = (*reg & 0xffffffffull) | (uint64_t)val << 32;
}

static void vrex_core_write(void *opaque, hwaddr off, uint64_t val,
                            unsigned size)
{
    VRexCore *c = opaque;

    if (is_test_reg(c, off)) {
        if (off != VREX_REG_TEST_ID) {
            T_REG(c, off) = val;
        }
        return;
    }
    switch (off) {
    case VREX_REG_CMD:
        if (c->busy || c->forced_status == VREX_STATUS_BUSY) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "vrex: CMD %" PRIu64 " written while busy: dropped\n",
                          val);
            return;
        }
        c->pending_op = val;
        c->forced_status = 0;
        c->forging = false;
        c->forced_fail = false;
        if (c->test_hooks && !test_hooks_at_cmd(c, val)) {
            return;
        }
        c->busy = true;
        timer_mod(c->timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + c->latency_ns);
        return;
    case VREX_REG_RESET:
        if (val == VREX_RESET_MAGIC) {
            timer_del(c->timer);
            c->busy = false;
        }
        c->forced_status = 0;
        c->forging = false;
        vrex_model_write(&c->model, off, val);
        update_irq(c, false);
        return;
    case VREX_REG_IRQ_STATUS:
    case VREX_REG_IRQ_MASK:
        vrex_model_write(&c->model, off, val);
        update_irq(c, false);
        return;
    case VREX_REG_MEM_BASE_LO:
        set_lo(&c->mem_base, val);
        return;
    case VREX_REG_MEM_BASE_HI:
        set_hi(&c->mem_base, val);
        return;
    case VREX_REG_STAGE_BASE_LO:
        set_lo(&c->stage_base, val);
        return;
    case VREX_REG_STAGE_BASE_HI:
        set_hi(&c->stage_base, val);
        return;
    default:
        vrex_model_write(&c->model, off, val);
        return;
    }
}

const MemoryRegionOps vrex_core_mmio_ops = {
    .read = vrex_core_read,
    .write = vrex_core_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

bool vrex_core_realize(VRexCore *c, Error **errp)
{
    struct vrex_model_config cfg;
    size_t arena_size;
    int ret;

    vrex_model_default_config(&cfg);
    /* The hardware revision (lib/vrex_regs.h lists what 1.0 lacks). */
    if (!c->hw_version || !strcmp(c->hw_version, "1.1")) {
        cfg.hw_version = VREX_VERSION_VALUE;
    } else if (!strcmp(c->hw_version, "1.0")) {
        cfg.hw_version = VREX_VERSION_1_0;
    } else {
        error_setg(errp, "vrex: hw-version=%s is not a revision the model "
                   "simulates (valid: 1.0, 1.1)", c->hw_version);
        return false;
    }
    cfg.nbanks = c->nbanks;
    cfg.bank_size = (uint64_t)c->bank_size_kb * KiB;
    cfg.max_streams = c->streams;
    cfg.shie_capacity = c->shie_capacity;
    cfg.block_capacity = c->shie_capacity;
    if (cfg.nbanks % cfg.group_banks) {
        cfg.group_banks = 1;
    }
    arena_size = vrex_model_arena_size(&cfg);
    if (!arena_size) {
        error_setg(errp, "vrex: unsupported configuration: %u banks of %u KiB, "
                   "%u streams, %u SHIE entries", c->nbanks, c->bank_size_kb,
                   c->streams, c->shie_capacity);
        return false;
    }
    c->banks_bytes = cfg.bank_size * cfg.nbanks;
    c->arena = g_malloc(arena_size);
    ret = vrex_model_init(&c->model, &cfg, c->arena, arena_size, c->mem,
                          vrex_core_mem_size(c));
    if (ret) {
        g_free(c->arena);
        c->arena = NULL;
        error_setg(errp, "vrex: model init failed: %d", ret);
        return false;
    }
    c->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, run_command, c);
    return true;
}

void vrex_core_unrealize(VRexCore *c)
{
    if (c->timer) {
        timer_free(c->timer);
        c->timer = NULL;
    }
    g_free(c->arena);
    c->arena = NULL;
}

/* Bus reset: engine reset, bus interface registers cleared. */
void vrex_core_reset(VRexCore *c)
{
    timer_del(c->timer);
    c->busy = false;
    c->mem_base = 0;
    c->stage_base = 0;
    c->forced_status = 0;
    c->forging = false;
    memset(c->t_regs, 0, sizeof(c->t_regs));
    vrex_model_reset(&c->model);
    update_irq(c, false);
}
