// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrex_sim.ko front end for kernels built without CONFIGFS_FS, where the
 * configfs interface (vrex_sim_configfs.c) cannot exist: the devices are
 * given at load time, "insmod vrex_sim.ko devices=N [banks=B bank_size=S]",
 * and removed at unload. Out-of-tree builds only pick this file when the
 * target kernel lacks configfs (the QEMU matrix's minimal debug kernel);
 * Kconfig makes vrex_sim depend on CONFIGFS_FS in tree.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>

#include "vrex_sim.h"

#define VREX_SIM_MAX_DEVICES 8

static unsigned int devices;
module_param(devices, uint, 0444);
MODULE_PARM_DESC(devices, "Simulated devices to create (0-8; kernels without configfs only)");

static unsigned int banks = VREX_DEFAULT_BANKS;
module_param(banks, uint, 0444);
MODULE_PARM_DESC(banks, "Banks per simulated device (1-64, default 16)");

static unsigned int bank_size = SZ_1M;
module_param(bank_size, uint, 0444);
MODULE_PARM_DESC(bank_size, "Bytes per bank, a page multiple (default 1 MiB)");

static struct vrex_sim_device vrex_sim_devs[VREX_SIM_MAX_DEVICES];

static void vrex_sim_remove_all(void)
{
	int i;

	for (i = VREX_SIM_MAX_DEVICES - 1; i >= 0; i--)
		if (vrex_sim_devs[i].pdev)
			vrex_sim_device_remove(&vrex_sim_devs[i]);
}

static int __init vrex_sim_init(void)
{
	unsigned int i;
	int ret;

	if (devices > VREX_SIM_MAX_DEVICES) {
		pr_err("vrex_sim: devices=%u, at most %u\n", devices, VREX_SIM_MAX_DEVICES);
		return -EINVAL;
	}
	for (i = 0; i < devices; i++) {
		ret = vrex_sim_device_add(&vrex_sim_devs[i], "param", banks, bank_size);
		if (ret) {
			vrex_sim_remove_all();
			return ret;
		}
	}
	return 0;
}

static void __exit vrex_sim_exit(void)
{
	vrex_sim_remove_all();
}

module_init(vrex_sim_init);
module_exit(vrex_sim_exit);
