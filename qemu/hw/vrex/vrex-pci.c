/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * V-Rex PCI Express function, as the FPGA card presents itself: BAR0 the
 * 4 KiB register window, BAR2 (64-bit, prefetchable) the banks, which are
 * the card's own memory; one MSI vector (INTx without MSI) signals command
 * completion. The staging window is host memory the driver provides, read
 * and written with pci_dma_*() so an IOMMU translates it.
 *
 *   -device vrex-pci[,banks=N,bank-size-kb=K,latency-ns=T]
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"
#include "sysemu/dma.h"
#include "vrex-core.h"

#define TYPE_VREX_PCI "vrex-pci"
OBJECT_DECLARE_SIMPLE_TYPE(VRexPCIState, VREX_PCI)

/* The prototype card's IDs (kernel/vrex_pci.c). */
#define VREX_PCI_VENDOR_ID 0x10ee
#define VREX_PCI_DEVICE_ID 0x5652
#define VREX_PCI_EXP_OFFSET 0xa0
/* Processing accelerator (PCI code and ID assignment guide, 12h/00h). */
#define VREX_PCI_CLASS_ACCEL 0x1200

struct VRexPCIState {
    PCIDevice parent_obj;
    VRexCore core;
    MemoryRegion regs;
    MemoryRegion mem;       /* banks + staging shadow: the card's RAM */
    MemoryRegion bar2;      /* the banks, sized to a power of two */
    MemoryRegion banks;     /* alias of @mem's banks inside @bar2 */
};

static bool vrex_pci_dma_rw(VRexCore *c, uint64_t addr, void *buf,
                            uint64_t len, bool write)
{
    VRexPCIState *s = c->opaque;
    MemTxResult r;

    if (write) {
        r = pci_dma_write(PCI_DEVICE(s), addr, buf, len);
    } else {
        r = pci_dma_read(PCI_DEVICE(s), addr, buf, len);
    }
    return r == MEMTX_OK;
}

static void vrex_pci_irq(VRexCore *c, bool level, bool completion)
{
    PCIDevice *pdev = PCI_DEVICE(c->opaque);

    if (msi_enabled(pdev)) {
        if (level && completion) {
            msi_notify(pdev, 0);
        }
        return;
    }
    pci_set_irq(pdev, level);
}

static const VRexBusOps vrex_pci_bus_ops = {
    .dma_rw = vrex_pci_dma_rw,
    .irq = vrex_pci_irq,
};

static void vrex_pci_realize(PCIDevice *pdev, Error **errp)
{
    VRexPCIState *s = VREX_PCI(pdev);
    VRexCore *c = &s->core;
    uint64_t banks = (uint64_t)c->nbanks * c->bank_size_kb * KiB;
    Error *err = NULL;

    if (!c->nbanks || !c->bank_size_kb) {
        error_setg(errp, "vrex-pci: banks and bank-size-kb must not be 0");
        return;
    }
    c->bus = &vrex_pci_bus_ops;
    c->opaque = s;
    c->host_mem = false;
    memory_region_init_ram(&s->mem, OBJECT(s), "vrex.mem",
                           vrex_core_mem_size(c), &err);
    if (err) {
        error_propagate(errp, err);
        return;
    }
    c->mem = memory_region_get_ram_ptr(&s->mem);
    if (!vrex_core_realize(c, errp)) {
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (msi_init(pdev, 0, 1, true, false, errp)) {
        vrex_core_unrealize(c);
        return;
    }
    if (pci_is_express(pdev) &&
        pcie_endpoint_cap_init(pdev, VREX_PCI_EXP_OFFSET) < 0) {
        error_setg(errp, "vrex-pci: cannot add the PCIe capability");
        msi_uninit(pdev);
        vrex_core_unrealize(c);
        return;
    }

    memory_region_init_io(&s->regs, OBJECT(s), &vrex_core_mmio_ops, c,
                          "vrex.regs", VREX_REG_WINDOW);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->regs);
    memory_region_init(&s->bar2, OBJECT(s), "vrex.bar2", pow2ceil(banks));
    memory_region_init_alias(&s->banks, OBJECT(s), "vrex.banks", &s->mem, 0,
                             banks);
    memory_region_add_subregion(&s->bar2, 0, &s->banks);
    pci_register_bar(pdev, 2, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->bar2);
}

static void vrex_pci_exit(PCIDevice *pdev)
{
    VRexPCIState *s = VREX_PCI(pdev);

    /*
     * A subregion holds a reference on its owner, here this device itself:
     * left in @bar2 it keeps the device from ever being finalized, so QEMU
     * never emits DEVICE_DELETED after the guest ejects the card and the
     * slot cannot take a device_add with the same id.
     */
    memory_region_del_subregion(&s->bar2, &s->banks);
    vrex_core_unrealize(&s->core);
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
    msi_uninit(pdev);
}

static void vrex_pci_reset(DeviceState *dev)
{
    vrex_core_reset(&VREX_PCI(dev)->core);
}

static Property vrex_pci_properties[] = {
    VREX_CORE_PROPERTIES(VRexPCIState, core),
    DEFINE_PROP_END_OF_LIST(),
};

static void vrex_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = vrex_pci_realize;
    k->exit = vrex_pci_exit;
    k->vendor_id = VREX_PCI_VENDOR_ID;
    k->device_id = VREX_PCI_DEVICE_ID;
    k->revision = 1;
    k->class_id = VREX_PCI_CLASS_ACCEL;
    dc->desc = "V-Rex KV-cache retrieval engine (PCIe)";
    dc->reset = vrex_pci_reset;
    dc->hotpluggable = true;
    device_class_set_props(dc, vrex_pci_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo vrex_pci_info = {
    .name = TYPE_VREX_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(VRexPCIState),
    .class_init = vrex_pci_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void vrex_pci_register_types(void)
{
    type_register_static(&vrex_pci_info);
}

type_init(vrex_pci_register_types)
