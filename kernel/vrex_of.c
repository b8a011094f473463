// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device-tree binding: Jetson Orin, RK3588 and a generic compatible. The node
 * gives the register window (reg), the interrupt, the bank memory
 * (memory-region, mapped for the engine through the DMA API, so an SMMU
 * given by iommus translates it) and the bank layout (vrex,bank-count,
 * vrex,bank-size). A node with "vrex,simulated" (or compatible
 * "vrex,vrex-sim") is bound to the
 * simulated register backend instead, with host memory as banks: that is how
 * the DT path runs on boards and VMs without the hardware.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/platform_device.h>
#include <drm/drm_drv.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

static void vrex_of_unmap_banks(void *arg)
{
	struct vrex_device *vdev = arg;

	dma_unmap_resource(vdev->drm.dev, vdev->mem.dma, vdev->mem.size, DMA_BIDIRECTIONAL,
			   DMA_ATTR_SKIP_CPU_SYNC);
}

static int vrex_of_bank_memory(struct vrex_device *vdev, struct device_node *np)
{
	struct device *dev = vdev->drm.dev;
	struct device_node *mem_np;
	struct resource res;
	bool no_map;
	int ret;

	mem_np = of_parse_phandle(np, "memory-region", 0);
	if (!mem_np)
		return dev_err_probe(dev, -EINVAL, "no memory-region for the banks\n");
	ret = of_address_to_resource(mem_np, 0, &res);
	/*
	 * A no-map carve-out is outside the kernel's linear map and has no
	 * usable struct pages, although pfn_valid() says otherwise on arm64
	 * since 5.14 (memblock keeps its memmap): decide from the node itself.
	 */
	no_map = of_property_read_bool(mem_np, "no-map");
	of_node_put(mem_np);
	if (ret)
		return dev_err_probe(dev, ret, "bad memory-region\n");

	vdev->mem.phys = res.start;
	vdev->mem.size = resource_size(&res);
	vdev->mem.vaddr = devm_memremap(dev, res.start, vdev->mem.size, MEMREMAP_WC);
	if (IS_ERR(vdev->mem.vaddr))
		return dev_err_probe(dev, PTR_ERR(vdev->mem.vaddr), "cannot map bank memory\n");
	/* mmap works either way (PFN mapping); dma-buf export needs pages. */
	vdev->mem.has_pages = !no_map && pfn_valid(PHYS_PFN(res.start));

	/*
	 * The engine reaches the carve-out through the DMA API, not by its CPU
	 * physical address: behind an SMMU (iommus) this creates the IOVA
	 * mapping it needs, without one it is the bus address.
	 */
	vdev->mem.dma = dma_map_resource(dev, res.start, vdev->mem.size, DMA_BIDIRECTIONAL,
					 DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(dev, vdev->mem.dma))
		return dev_err_probe(dev, -ENOMEM, "cannot map the bank memory for DMA\n");
	return devm_add_action_or_reset(dev, vrex_of_unmap_banks, vdev);
}

static int vrex_of_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct device_node *np = dev->of_node;
	struct vrex_device *vdev;
	u32 nbanks = 0, bank_size = 0;
	int ret;

	vdev = devm_drm_dev_alloc(dev, &vrex_drm_driver, struct vrex_device, drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	of_property_read_u32(np, "vrex,bank-count", &nbanks);
	of_property_read_u32(np, "vrex,bank-size", &bank_size);

	if (of_property_read_bool(np, "vrex,simulated") ||
	    of_device_is_compatible(np, "vrex,vrex-sim")) {
		ret = vrex_sim_attach(vdev, nbanks ? nbanks : 16, bank_size ? bank_size : SZ_1M);
		if (ret)
			return ret;
	} else {
		vdev->regs = devm_platform_ioremap_resource(pdev, 0);
		if (IS_ERR(vdev->regs))
			return PTR_ERR(vdev->regs);
		vdev->irq = platform_get_irq(pdev, 0);
		if (vdev->irq < 0)
			return vdev->irq;
		vdev->expect_banks = nbanks;
		vdev->expect_bank_size = bank_size;
		ret = vrex_of_bank_memory(vdev, np);
		if (ret)
			return ret;
	}
	platform_set_drvdata(pdev, vdev);
	return vrex_device_probe(vdev);
}

static const struct of_device_id vrex_of_match[] = {
	{ .compatible = "nvidia,tegra234-vrex" },
	{ .compatible = "rockchip,rk3588-vrex" },
	{ .compatible = "vrex,vrex-v1" },
	{ .compatible = "vrex,vrex-sim" },
	{ }
};
MODULE_DEVICE_TABLE(of, vrex_of_match);

static struct platform_driver vrex_of_driver = {
	.driver = {
		.name = "vrex",
		.of_match_table = vrex_of_match,
	},
	.probe = vrex_of_probe,
	.vrex_platform_remove_hook = vrex_platform_remove,
};

int vrex_of_driver_register(void)
{
	return platform_driver_register(&vrex_of_driver);
}

void vrex_of_driver_unregister(void)
{
	platform_driver_unregister(&vrex_of_driver);
}
