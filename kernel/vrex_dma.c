// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's bus interface (VREX_CAP_DMA, docs/hardware.md "DMA
 * addressing"): where the device reaches device memory by DMA. The staging
 * window past the banks, where lookup batches are staged, is coherent host
 * memory whose bus address goes to STAGE_BASE; with VREX_CAP_HOST_MEM the
 * banks are host memory too (the DT carve-out), at the address the binding
 * mapped for the device (vdev->mem.dma: an IOVA behind an IOMMU), which goes
 * to MEM_BASE. Both registers survive an engine reset.
 *
 * A device without the bus interface (vrex_sim.ko's backend) shares its
 * memory with the CPU: the staging area is the memory past the banks, if the
 * backend provides it.
 */
#include <linux/dma-mapping.h>
#include <linux/kernel.h>
#include <linux/sizes.h>
#include <drm/drm_print.h>

#include "vrex_device.h"
#include "vrex_drv.h"

static int vrex_dma_program(struct vrex_device *vdev)
{
	struct device *dev = vdev->drm.dev;

	if (vdev->caps & VREX_CAP_HOST_MEM) {
		if (!vdev->mem.dma_mapped)
			return dev_err_probe(dev, -ENODEV,
					     "banks in host memory, but the binding mapped none\n");
		vrex_write(vdev, VREX_REG_MEM_BASE_LO, lower_32_bits(vdev->mem.dma));
		vrex_write(vdev, VREX_REG_MEM_BASE_HI, upper_32_bits(vdev->mem.dma));
	}
	vrex_write(vdev, VREX_REG_STAGE_BASE_LO, lower_32_bits(vdev->stage.dma));
	vrex_write(vdev, VREX_REG_STAGE_BASE_HI, upper_32_bits(vdev->stage.dma));
	return 0;
}

int vrex_dma_init(struct vrex_device *vdev)
{
	struct device *dev = vdev->drm.dev;
	u64 banks_end = (u64)vdev->nbanks * vdev->bank_size;
	u32 size;
	int ret;

	vdev->stage_addr = banks_end;
	if (vdev->backend || !(vdev->caps & VREX_CAP_DMA)) {
		vdev->has_stage = vdev->mem.size >= banks_end &&
				  vdev->mem.size - banks_end >= VREX_LOOKUP_STAGE_SIZE;
		if (!vdev->has_stage)
			drm_info(&vdev->drm, "no device memory past the banks: lookups go one by one\n");
		return 0;
	}

	mutex_lock(&vdev->lock);
	size = vrex_read(vdev, VREX_REG_STAGE_SIZE);
	mutex_unlock(&vdev->lock);
	if (size < VREX_LOOKUP_STAGE_SIZE)
		return dev_err_probe(dev, -ENODEV,
				     "staging window of %u bytes, a batch needs %zu\n",
				     size, VREX_LOOKUP_STAGE_SIZE);
	vdev->stage.vaddr = dmam_alloc_coherent(dev, size, &vdev->stage.dma, GFP_KERNEL);
	if (!vdev->stage.vaddr)
		return -ENOMEM;
	vdev->stage.size = size;

	mutex_lock(&vdev->lock);
	ret = vrex_dma_program(vdev);
	mutex_unlock(&vdev->lock);
	if (ret)
		return ret;
	vdev->has_stage = true;
	return 0;
}

/* The CPU's view of device address @addr: the staging window or the banks. */
void *vrex_dma_stage_ptr(struct vrex_device *vdev, u64 addr, size_t len)
{
	u64 off = addr - vdev->stage_addr;

	if (!vdev->stage.vaddr || addr < vdev->stage_addr)
		return NULL;
	if (WARN_ON(off > vdev->stage.size || len > vdev->stage.size - off))
		return NULL;
	return vdev->stage.vaddr + off;
}
