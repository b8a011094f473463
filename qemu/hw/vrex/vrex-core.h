/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * V-Rex device core shared by the PCI (vrex-pci.c) and MMIO (vrex-mmio.c)
 * front ends: the register window, asynchronous command completion and the
 * DMA windows around the lib/ reference model (compiled in unchanged).
 *
 * The model works on one contiguous buffer, "device memory": the banks, then
 * the staging window (VREX_STAGE_WINDOW bytes). Parts of it are local (a PCI
 * card's own memory behind BAR2: the buffer is that RAM); the rest is a
 * shadow of host memory that the core fills by DMA before a command and
 * writes back after it, for exactly the ranges the command's arguments name
 * (FRAME's luma plane, a batch's descriptors and records, ReSV keys, query
 * and ranges). So the device sees host memory only at the bus addresses the
 * driver programmed (MEM_BASE, STAGE_BASE), through the IOMMU when there is
 * one.
 */
#ifndef HW_VREX_CORE_H
#define HW_VREX_CORE_H

#include "exec/memory.h"
#include "qemu/timer.h"
#include "vrex_model.h"

typedef struct VRexCore VRexCore;

/*
 * A front end's bus: DMA and the interrupt line.
 * @dma_rw: reads or writes @len bytes at bus address @addr; false on a fault
 * @irq: the engine's interrupt output (IRQ_STATUS & IRQ_MASK) is now @level;
 *	@completion is set when a command just completed (an MSI fires then)
 */
typedef struct VRexBusOps {
    bool (*dma_rw)(VRexCore *c, uint64_t addr, void *buf, uint64_t len,
                   bool write);
    void (*irq)(VRexCore *c, bool level, bool completion);
} VRexBusOps;

struct VRexCore {
    /* Properties (set before vrex_core_realize()). */
    uint32_t nbanks;
    uint32_t bank_size_kb;
    uint32_t streams;
    uint32_t shie_capacity;
    uint32_t latency_ns;        /* command latency: CMD write to completion */
    bool test_hooks;            /* VREX_REG_TEST_* (fault injection) */
    char *hw_version;           /* "1.1" (also when unset) or "1.0" */

    /* Set by the front end. */
    const VRexBusOps *bus;
    void *opaque;               /* the front end */
    bool host_mem;              /* banks in host memory (MEM_BASE) */
    uint8_t *mem;               /* device memory: banks + staging window */
    uint64_t banks_bytes;

    /* State. */
    struct vrex_model model;
    void *arena;
    QEMUTimer *timer;
    bool busy;
    uint32_t pending_op;
    uint64_t mem_base;
    uint64_t stage_base;
    uint64_t dma_faults;

    /* Test hooks (vrex_regs.h VREX_REG_TEST_*). */
    uint32_t t_regs[8];         /* TEST_ID .. TEST_FORGE_STREAM, by (off - 0xf00) / 4 */
    uint32_t forced_status;     /* STATUS while a failed/hung command is faked */
    bool forced_fail;           /* the pending command fails without running */
    bool forging;               /* the command in flight reports a forged hit */
};

/* Bytes of device memory a front end provides for @c's properties. */
uint64_t vrex_core_mem_size(const VRexCore *c);
bool vrex_core_realize(VRexCore *c, Error **errp);
void vrex_core_unrealize(VRexCore *c);
void vrex_core_reset(VRexCore *c);
extern const MemoryRegionOps vrex_core_mmio_ops;

#define VREX_CORE_PROPERTIES(state, field)                                    \
    DEFINE_PROP_UINT32("banks", state, field.nbanks, VREX_DEFAULT_BANKS),     \
    DEFINE_PROP_UINT32("bank-size-kb", state, field.bank_size_kb, 4096),      \
    DEFINE_PROP_UINT32("streams", state, field.streams, 16),                  \
    DEFINE_PROP_UINT32("shie-capacity", state, field.shie_capacity, 16384),   \
    DEFINE_PROP_UINT32("latency-ns", state, field.latency_ns, 20000),        \
    DEFINE_PROP_BOOL("test-hooks", state, field.test_hooks, false),          \
    DEFINE_PROP_STRING("hw-version", state, field.hw_version)

#endif
