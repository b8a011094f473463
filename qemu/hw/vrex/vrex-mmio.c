/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * V-Rex as a system-bus engine (the SoC integration of RK3588 or Jetson
 * Orin): one 4 KiB register window, one level interrupt, no memory of its
 * own. The banks live in a reserved-memory carve-out of system RAM that the
 * driver maps for the engine through the DMA API and programs into MEM_BASE;
 * the staging window is host memory at STAGE_BASE. Every access to either is
 * a DMA through the device's address space.
 *
 * On the arm64 `virt` machine it is a dynamic platform-bus device; the
 * machine writes its device-tree node (hw/core/sysbus-fdt.c, patched):
 *   -device vrex-mmio,carveout-base=A,carveout-size=S[,carveout-no-map=on]
 *           [,iommu-sid=N]
 *
 * With iommu-sid (and `-M virt,iommu=smmuv3`) the engine's DMA goes through
 * the SMMUv3 as stream N, as an SoC's engine sits behind its SMMU, and the
 * node gets `iommus = <&smmu N>`. QEMU 7.2's SMMUv3 model keys its
 * translation contexts by (PCI bus, devfn) of its primary bus only, so the
 * engine borrows devfn N of that (root) bus: stream ID = N, 0..255, and no
 * PCI function may sit at that devfn (the virt board has none at 0xf8).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/irq.h"
#include "hw/pci/pci_bus.h"
#include "hw/qdev-properties.h"
#include "hw/sysbus.h"
#include "qom/object.h"
#include "sysemu/dma.h"
#include "vrex-core.h"

#define TYPE_VREX_MMIO "vrex-mmio"
OBJECT_DECLARE_SIMPLE_TYPE(VRexMMIOState, VREX_MMIO)

struct VRexMMIOState {
    SysBusDevice parent_obj;
    VRexCore core;
    MemoryRegion regs;
    qemu_irq irq;
    /* Only for the device tree: the engine knows its memory by MEM_BASE. */
    uint64_t carveout_base;
    uint64_t carveout_size;
    bool carveout_no_map;
    uint32_t iommu_sid;     /* VREX_MMIO_NO_IOMMU: DMA to system memory */
    AddressSpace *dma_as;
};

#define VREX_MMIO_NO_IOMMU UINT32_MAX

static bool vrex_mmio_dma_rw(VRexCore *c, uint64_t addr, void *buf,
                             uint64_t len, bool write)
{
    VRexMMIOState *s = c->opaque;
    DMADirection dir = write ? DMA_DIRECTION_FROM_DEVICE :
                               DMA_DIRECTION_TO_DEVICE;

    return dma_memory_rw(s->dma_as, addr, buf, len, dir,
                         MEMTXATTRS_UNSPECIFIED) == MEMTX_OK;
}

static void vrex_mmio_irq(VRexCore *c, bool level, bool completion)
{
    VRexMMIOState *s = c->opaque;

    qemu_set_irq(s->irq, level);
}

static const VRexBusOps vrex_mmio_bus_ops = {
    .dma_rw = vrex_mmio_dma_rw,
    .irq = vrex_mmio_irq,
};

/* The SMMUv3's address space for stream @sid (see the top of the file). */
static AddressSpace *vrex_mmio_smmu_as(uint32_t sid, Error **errp)
{
    Object *smmu = object_resolve_path_type("", "arm-smmuv3", NULL);
    PCIBus *bus;

    if (!smmu) {
        error_setg(errp, "vrex-mmio: iommu-sid needs an SMMUv3 "
                   "(-M virt,iommu=smmuv3)");
        return NULL;
    }
    bus = (PCIBus *)object_property_get_link(smmu, "primary-bus", errp);
    if (!bus || !bus->iommu_fn) {
        error_setg(errp, "vrex-mmio: the SMMUv3 translates no bus");
        return NULL;
    }
    if (sid > 0xff || bus->devices[sid]) {
        error_setg(errp, "vrex-mmio: iommu-sid %u is not a free devfn of "
                   "the SMMU's root bus", sid);
        return NULL;
    }
    return bus->iommu_fn(bus, bus->iommu_opaque, sid);
}

static void vrex_mmio_realize(DeviceState *dev, Error **errp)
{
    VRexMMIOState *s = VREX_MMIO(dev);
    VRexCore *c = &s->core;
    uint64_t banks = (uint64_t)c->nbanks * c->bank_size_kb * KiB;

    if (!s->carveout_size || s->carveout_size < banks) {
        error_setg(errp, "vrex-mmio: carveout-size %" PRIu64
                   " does not hold the banks (%" PRIu64 " bytes)",
                   s->carveout_size, banks);
        return;
    }
    s->dma_as = &address_space_memory;
    if (s->iommu_sid != VREX_MMIO_NO_IOMMU) {
        s->dma_as = vrex_mmio_smmu_as(s->iommu_sid, errp);
        if (!s->dma_as) {
            return;
        }
    }
    c->bus = &vrex_mmio_bus_ops;
    c->opaque = s;
    c->host_mem = true;
    /* The shadow of host memory the commands name (vrex-core.h). */
    c->mem = g_malloc0(vrex_core_mem_size(c));
    if (!vrex_core_realize(c, errp)) {
        g_free(c->mem);
        c->mem = NULL;
        return;
    }
    memory_region_init_io(&s->regs, OBJECT(s), &vrex_core_mmio_ops, c,
                          "vrex.regs", VREX_REG_WINDOW);
    sysbus_init_mmio(SYS_BUS_DEVICE(s), &s->regs);
    sysbus_init_irq(SYS_BUS_DEVICE(s), &s->irq);
}

static void vrex_mmio_unrealize(DeviceState *dev)
{
    VRexMMIOState *s = VREX_MMIO(dev);

    vrex_core_unrealize(&s->core);
    g_free(s->core.mem);
    s->core.mem = NULL;
}

static void vrex_mmio_reset(DeviceState *dev)
{
    vrex_core_reset(&VREX_MMIO(dev)->core);
}

static Property vrex_mmio_properties[] = {
    VREX_CORE_PROPERTIES(VRexMMIOState, core),
    DEFINE_PROP_UINT64("carveout-base", VRexMMIOState, carveout_base, 0),
    DEFINE_PROP_UINT64("carveout-size", VRexMMIOState, carveout_size, 0),
    DEFINE_PROP_BOOL("carveout-no-map", VRexMMIOState, carveout_no_map, false),
    DEFINE_PROP_UINT32("iommu-sid", VRexMMIOState, iommu_sid,
                       VREX_MMIO_NO_IOMMU),
    DEFINE_PROP_END_OF_LIST(),
};

static void vrex_mmio_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);

    dc->realize = vrex_mmio_realize;
    dc->unrealize = vrex_mmio_unrealize;
    dc->reset = vrex_mmio_reset;
    dc->desc = "V-Rex KV-cache retrieval engine (system bus)";
    dc->user_creatable = true;
    device_class_set_props(dc, vrex_mmio_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo vrex_mmio_info = {
    .name = TYPE_VREX_MMIO,
    .parent = TYPE_SYS_BUS_DEVICE,
    .instance_size = sizeof(VRexMMIOState),
    .class_init = vrex_mmio_class_init,
};

static void vrex_mmio_register_types(void)
{
    type_register_static(&vrex_mmio_info);
}

type_init(vrex_mmio_register_types)
