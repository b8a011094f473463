// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device-tree resources of the platform driver (vrex_platform.c): Jetson
 * Orin, RK3588 and the generic compatible. The node gives the register window
 * (reg), the interrupt, the bank memory (memory-region, mapped for the engine
 * through the DMA API, so an SMMU given by iommus translates it, and
 * programmed into the engine's MEM_BASE by vrex_dma.c), and the
 * clocks, resets and power domain the engine needs while bound. The bank
 * layout is read from the engine's registers, not described here.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/clk.h>
#include <linux/pm_runtime.h>
#include <linux/reset.h>
#include <linux/platform_device.h>
#include <drm/drm_drv.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

static void vrex_of_unmap_banks(void *arg)
{
	struct vrex_device *vdev = arg;
	struct device *dev = vdev->drm.dev;

	if (vdev->mem.has_pages)
		dma_unmap_page(dev, vdev->mem.dma, vdev->mem.size, DMA_BIDIRECTIONAL);
	else
		dma_unmap_resource(dev, vdev->mem.dma, vdev->mem.size, DMA_BIDIRECTIONAL,
				   DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * The banks: a reserved-memory carve-out. With no-map it is outside the
 * kernel's linear map and has no usable struct pages, although pfn_valid()
 * says otherwise on arm64 since 5.14 (memblock keeps its memmap), so the
 * node decides: mapped write-combined, mmap only, and given to the engine
 * with dma_map_resource(). Without no-map it is RAM in the linear map, with
 * pages (dma-buf export works): mapped write-back like the linear map (a WC
 * alias of RAM is refused by memremap() and forbidden on arm64), which is
 * only correct for an engine that snoops the CPU caches, so the node must be
 * dma-coherent; given to the engine with dma_map_page().
 */
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
	no_map = of_property_read_bool(mem_np, "no-map");
	of_node_put(mem_np);
	if (ret)
		return dev_err_probe(dev, ret, "bad memory-region\n");
	if (!no_map && !of_dma_is_coherent(np))
		return dev_err_probe(dev, -EINVAL,
				     "a carve-out without no-map is cached RAM: the engine must be dma-coherent\n");

	vdev->mem.phys = res.start;
	vdev->mem.size = resource_size(&res);
	vdev->mem.has_pages = !no_map;
	vdev->mem.vaddr = devm_memremap(dev, res.start, vdev->mem.size,
					no_map ? MEMREMAP_WC : MEMREMAP_WB);
	if (IS_ERR(vdev->mem.vaddr))
		return dev_err_probe(dev, PTR_ERR(vdev->mem.vaddr), "cannot map bank memory\n");

	/*
	 * The engine reaches the carve-out through the DMA API, not by its CPU
	 * physical address: behind an SMMU (iommus) this creates the IOVA
	 * mapping it needs, without one it is the bus address. vrex_dma.c
	 * programs it into MEM_BASE.
	 */
	if (vdev->mem.has_pages)
		vdev->mem.dma = dma_map_page(dev, pfn_to_page(PHYS_PFN(res.start)), 0,
					     vdev->mem.size, DMA_BIDIRECTIONAL);
	else
		vdev->mem.dma = dma_map_resource(dev, res.start, vdev->mem.size,
						 DMA_BIDIRECTIONAL, DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(dev, vdev->mem.dma))
		return dev_err_probe(dev, -ENOMEM, "cannot map the bank memory for DMA\n");
	vdev->mem.dma_mapped = true;
	dev_info(dev, "banks in a %s carve-out at %pa, bus address %pad\n",
		 no_map ? "no-map" : "linear-map", &res.start, &vdev->mem.dma);
	return devm_add_action_or_reset(dev, vrex_of_unmap_banks, vdev);
}

static void vrex_of_clks_off(void *arg)
{
	struct vrex_device *vdev = arg;

	clk_bulk_disable_unprepare(vdev->nclks, vdev->clks);
}

static void vrex_of_reset_assert(void *rst)
{
	reset_control_assert(rst);
}

static void vrex_of_pm_put(void *dev)
{
	pm_runtime_put_sync(dev);
	pm_runtime_disable(dev);
}

/*
 * Power domain (pm_runtime: genpd powers it on at the first get), every
 * clock of the node, then the resets: the engine is powered, clocked and out
 * of reset for as long as the driver is bound. Undone in reverse by devres.
 * devm_clk_bulk_get_all_enable() and devm_pm_runtime_enable() do the same
 * from 6.x / 5.15 on; spelled out here for 5.10.
 */
static int vrex_of_power_on(struct vrex_device *vdev)
{
	struct device *dev = vdev->drm.dev;
	struct reset_control *rst;
	int ret;

	pm_runtime_enable(dev);
	ret = pm_runtime_resume_and_get(dev);
	if (ret) {
		pm_runtime_disable(dev);
		return dev_err_probe(dev, ret, "cannot power the engine on\n");
	}
	ret = devm_add_action_or_reset(dev, vrex_of_pm_put, dev);
	if (ret)
		return ret;

	ret = devm_clk_bulk_get_all(dev, &vdev->clks);
	if (ret < 0)
		return dev_err_probe(dev, ret, "cannot get the clocks\n");
	vdev->nclks = ret;
	ret = clk_bulk_prepare_enable(vdev->nclks, vdev->clks);
	if (ret)
		return dev_err_probe(dev, ret, "cannot enable the clocks\n");
	ret = devm_add_action_or_reset(dev, vrex_of_clks_off, vdev);
	if (ret)
		return ret;

	rst = devm_reset_control_array_get_optional_exclusive(dev);
	if (IS_ERR(rst))
		return dev_err_probe(dev, PTR_ERR(rst), "cannot get the resets\n");
	ret = reset_control_deassert(rst);
	if (ret)
		return dev_err_probe(dev, ret, "cannot take the engine out of reset\n");
	return devm_add_action_or_reset(dev, vrex_of_reset_assert, rst);
}

int vrex_of_init(struct vrex_device *vdev, struct platform_device *pdev)
{
	int ret;

	ret = vrex_of_power_on(vdev);
	if (ret)
		return ret;
	vdev->regs = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(vdev->regs))
		return PTR_ERR(vdev->regs);
	vdev->irq = platform_get_irq(pdev, 0);
	if (vdev->irq < 0)
		return vdev->irq;
	/* The engine's address registers are 64 bits; dma-ranges narrow it. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return dev_err_probe(&pdev->dev, ret, "no usable DMA mask\n");
	return vrex_of_bank_memory(vdev, pdev->dev.of_node);
}

const struct of_device_id vrex_of_match[] = {
	{ .compatible = "nvidia,tegra234-vrex" },
	{ .compatible = "rockchip,rk3588-vrex" },
	{ .compatible = "vrex,vrex-v1" },
	{ }
};
MODULE_DEVICE_TABLE(of, vrex_of_match);
