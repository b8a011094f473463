// SPDX-License-Identifier: GPL-2.0-only
/*
 * Simulated V-Rex: the register file is the lib/ reference model, the banks
 * are vmalloc'd host memory. The driver programs it with the same register
 * writes it issues to silicon; commands complete inside the CMD write.
 *
 * Devices come from the module parameter sim=N (platform devices "vrex-sim")
 * or from a device-tree node marked simulated (vrex_of.c).
 */
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"
#include "vrex_sim.h"

#define VREX_SIM_MAX_DEVICES 8

static unsigned int sim;
module_param(sim, uint, 0444);
MODULE_PARM_DESC(sim, "Number of simulated V-Rex devices to create (0-8)");

static unsigned int sim_banks = VREX_DEFAULT_BANKS;
module_param(sim_banks, uint, 0444);
MODULE_PARM_DESC(sim_banks, "Banks per simulated device (1-64, default 16)");

static unsigned int sim_bank_size = SZ_1M;
module_param(sim_bank_size, uint, 0444);
MODULE_PARM_DESC(sim_bank_size, "Bytes per simulated bank, a multiple of the page size (default 1 MiB)");

struct vrex_sim_pdata {
	u32 nbanks;
	u32 bank_size;
};

static struct platform_device *vrex_sim_pdevs[VREX_SIM_MAX_DEVICES];

u32 vrex_sim_read(struct vrex_sim *s, u32 off)
{
	if (off == VREX_REG_STATUS && s->forced_status)
		return s->forced_status;
	if (s->forging) {
		switch (off) {
		case VREX_REG_RES_FLAGS:
			return VREX_RESF_HIT;
		case VREX_REG_RES_BLOCK:
			return s->forge_block;
		case VREX_REG_RES_STREAM:
			return s->forge_stream;
		default:
			break;
		}
	}
	return vrex_model_read(&s->model, off);
}

void vrex_sim_write(struct vrex_sim *s, u32 off, u32 val)
{
	u32 op = READ_ONCE(s->fail_cmd_op), code = READ_ONCE(s->fail_cmd_code) & 0xff;

	if (off == VREX_REG_RESET) {
		s->forced_status = 0;
		s->forging = false;
	}
	if (off == VREX_REG_CMD) {
		s->forced_status = 0;
		s->forging = (val == VREX_CMD_LOOKUP_TEMPORAL || val == VREX_CMD_LOOKUP_SIMILAR) &&
			     atomic_dec_if_positive(&s->forge_lookups) >= 0;
		/* Injected failure or hang: the command never reaches the model. */
		if (!op || val == op) {
			if (atomic_dec_if_positive(&s->hang_cmds) >= 0)
				s->forced_status = VREX_STATUS_BUSY;
			else if (atomic_dec_if_positive(&s->fail_cmds) >= 0)
				s->forced_status = VREX_STATUS_ERROR |
						   ((code ? code : 5) << VREX_STATUS_ERRNO_SHIFT);
		}
		if (s->forced_status)
			return;
	}
	vrex_model_write(&s->model, off, val);
}

static void vrex_sim_free(struct drm_device *drm, void *arg)
{
	struct vrex_sim *s = arg;

	vfree(s->mem);
	kvfree(s->arena);
	kfree(s);
}

static int vrex_model_errno(int code)
{
	return code ? -code : 0;
}

/* Lives as long as the DRM device: user mappings of the banks may outlast an unbind. */
int vrex_sim_attach(struct vrex_device *vdev, u32 nbanks, u32 bank_size)
{
	struct device *dev = vdev->drm.dev;
	struct vrex_model_config cfg;
	struct vrex_sim *s;
	size_t arena_size;
	int ret;

	if (!nbanks || nbanks > VREX_MAX_BANKS || !bank_size || !IS_ALIGNED(bank_size, PAGE_SIZE))
		return dev_err_probe(dev, -EINVAL, "bad simulated bank layout %u x %u\n",
				     nbanks, bank_size);
	vrex_model_default_config(&cfg);
	cfg.nbanks = nbanks;
	cfg.bank_size = bank_size;
	if (nbanks % cfg.group_banks)
		cfg.group_banks = 1;
	arena_size = vrex_model_arena_size(&cfg);
	if (!arena_size)
		return dev_err_probe(dev, -EINVAL, "the model rejects %u x %u banks\n",
				     nbanks, bank_size);

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->arena = kvzalloc(arena_size, GFP_KERNEL);
	s->mem_size = (u64)nbanks * bank_size;
	s->mem = vmalloc_user(s->mem_size);
	if (!s->arena || !s->mem) {
		vrex_sim_free(&vdev->drm, s);
		return -ENOMEM;
	}
	ret = drmm_add_action_or_reset(&vdev->drm, vrex_sim_free, s);
	if (ret)
		return ret;

	ret = vrex_model_errno(vrex_model_init(&s->model, &cfg, s->arena, arena_size,
					       s->mem, s->mem_size));
	if (ret)
		return dev_err_probe(dev, ret, "model init failed\n");

	vdev->sim = s;
	vdev->mem.vaddr = s->mem;
	vdev->mem.size = s->mem_size;
	vdev->mem.vmalloced = true;
	vdev->mem.has_pages = true;
	vdev->irq = 0;
	return 0;
}

static int vrex_sim_probe(struct platform_device *pdev)
{
	const struct vrex_sim_pdata *pd = dev_get_platdata(&pdev->dev);
	struct vrex_device *vdev;
	int ret;

	if (!pd)
		return -EINVAL;
	vdev = devm_drm_dev_alloc(&pdev->dev, &vrex_drm_driver, struct vrex_device, drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	ret = vrex_sim_attach(vdev, pd->nbanks, pd->bank_size);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, vdev);
	return vrex_device_probe(vdev);
}

static struct platform_driver vrex_sim_driver = {
	.driver = {
		.name = "vrex-sim",
	},
	.probe = vrex_sim_probe,
	.vrex_platform_remove_hook = vrex_platform_remove,
};

static void vrex_sim_devices_destroy(void)
{
	int i;

	for (i = VREX_SIM_MAX_DEVICES - 1; i >= 0; i--) {
		if (vrex_sim_pdevs[i])
			platform_device_unregister(vrex_sim_pdevs[i]);
		vrex_sim_pdevs[i] = NULL;
	}
}

int vrex_sim_driver_register(void)
{
	struct vrex_sim_pdata pd = { .nbanks = sim_banks, .bank_size = sim_bank_size };
	struct platform_device_info info = {
		.name = "vrex-sim",
		.data = &pd,
		.size_data = sizeof(pd),
		.dma_mask = DMA_BIT_MASK(64),
	};
	struct platform_device *pdev;
	unsigned int i;
	int ret;

	if (sim > VREX_SIM_MAX_DEVICES) {
		pr_err("vrex: sim=%u, at most %u simulated devices\n", sim, VREX_SIM_MAX_DEVICES);
		return -EINVAL;
	}
	ret = platform_driver_register(&vrex_sim_driver);
	if (ret)
		return ret;
	for (i = 0; i < sim; i++) {
		info.id = i;
		pdev = platform_device_register_full(&info);
		if (IS_ERR(pdev)) {
			ret = PTR_ERR(pdev);
			goto err_devices;
		}
		vrex_sim_pdevs[i] = pdev;
		if (!platform_get_drvdata(pdev)) {
			/* Probe failed (it logged why): refuse to load with a dead device. */
			ret = -ENODEV;
			goto err_devices;
		}
	}
	return 0;

err_devices:
	vrex_sim_devices_destroy();
	platform_driver_unregister(&vrex_sim_driver);
	return ret;
}

void vrex_sim_driver_unregister(void)
{
	vrex_sim_devices_destroy();
	platform_driver_unregister(&vrex_sim_driver);
}
