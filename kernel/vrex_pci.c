// SPDX-License-Identifier: GPL-2.0-only
/*
 * PCI binding for the FPGA card: BAR0 holds the 4 KiB register window, BAR2
 * the bank memory (the card's own), one MSI vector signals command
 * completion. The staging window past the banks is host memory the card
 * reaches by DMA (vrex_dma.c), so bus mastering and the DMA mask matter and
 * an IOMMU translates those accesses. qemu/hw/vrex/vrex-pci.c models the card.
 *
 * ID: vendor 0x10ee (Xilinx, the FPGA vendor of the prototype card), device
 * 0x5652 ("VR"), as programmed into the card's PCIe IP. A production card
 * needs an ID assigned by its vendor; add it to vrex_pci_ids.
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <drm/drm_drv.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

#define VREX_PCI_VENDOR_ID	0x10ee
#define VREX_PCI_DEVICE_ID	0x5652
#define VREX_PCI_BAR_REGS	0
#define VREX_PCI_BAR_MEM	2

static int vrex_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct vrex_device *vdev;
	resource_size_t start, len;
	int ret;

	vdev = devm_drm_dev_alloc(dev, &vrex_drm_driver, struct vrex_device, drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);

	ret = pcim_enable_device(pdev);
	if (ret)
		return dev_err_probe(dev, ret, "cannot enable device\n");
	ret = pci_request_regions(pdev, "vrex");
	if (ret)
		return dev_err_probe(dev, ret, "cannot claim BARs\n");
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return dev_err_probe(dev, ret, "no 64-bit DMA\n");

	if (pci_resource_len(pdev, VREX_PCI_BAR_REGS) < VREX_REG_WINDOW)
		return dev_err_probe(dev, -ENODEV, "BAR%d too small\n", VREX_PCI_BAR_REGS);
	vdev->regs = devm_ioremap(dev, pci_resource_start(pdev, VREX_PCI_BAR_REGS),
				  VREX_REG_WINDOW);
	if (!vdev->regs)
		return -ENOMEM;

	start = pci_resource_start(pdev, VREX_PCI_BAR_MEM);
	len = pci_resource_len(pdev, VREX_PCI_BAR_MEM);
	if (!len)
		return dev_err_probe(dev, -ENODEV, "no bank memory BAR\n");
	vdev->mem.iomem = devm_ioremap_wc(dev, start, len);
	if (!vdev->mem.iomem)
		return -ENOMEM;
	vdev->mem.phys = start;
	vdev->mem.size = len;
	/* BAR memory has no struct pages: mmap yes, dma-buf export no (needs P2PDMA). */
	vdev->mem.has_pages = false;

	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
	if (ret < 0)
		return dev_err_probe(dev, ret, "no MSI vector\n");
	vdev->irq = pci_irq_vector(pdev, 0);

	pci_set_drvdata(pdev, vdev);
	return vrex_device_probe(vdev);
}

static void vrex_pci_remove(struct pci_dev *pdev)
{
	vrex_device_remove(pci_get_drvdata(pdev));
}

static const struct pci_device_id vrex_pci_ids[] = {
	{ PCI_DEVICE(VREX_PCI_VENDOR_ID, VREX_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vrex_pci_ids);

static struct pci_driver vrex_pci_driver = {
	.name = "vrex",
	.id_table = vrex_pci_ids,
	.probe = vrex_pci_probe,
	.remove = vrex_pci_remove,
#if VREX_HAVE_PCI_DEV_GROUPS
	.dev_groups = vrex_dev_groups,
#else
	.driver.dev_groups = vrex_dev_groups,
#endif
};

int vrex_pci_driver_register(void)
{
	return pci_register_driver(&vrex_pci_driver);
}

void vrex_pci_driver_unregister(void)
{
	pci_unregister_driver(&vrex_pci_driver);
}
