// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs files for a device's test hooks (lib/vrex_regs.h VREX_REG_TEST_*):
 * the QEMU device model offers in registers the fault injection vrex_sim.ko
 * offers through its backend, and this file gives them the sim's names
 * (fail_cmds, hang_cmds, fail_cmd_op, fail_cmd_code, forge_lookups,
 * forge_block, forge_stream, fault_attr), so the same test suites drive
 * either. Only created when the device answers VREX_TEST_ID_VALUE; silicon
 * reads 0 there and gets none.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "vrex_device.h"
#include "vrex_drv.h"

struct vrex_test_knob {
	const char *name;
	u32 reg;
};

static const struct vrex_test_knob vrex_test_knobs[] = {
	{ "fail_cmds", VREX_REG_TEST_FAIL_CMDS },
	{ "hang_cmds", VREX_REG_TEST_HANG_CMDS },
	{ "fail_cmd_op", VREX_REG_TEST_FAIL_OP },
	{ "fail_cmd_code", VREX_REG_TEST_FAIL_CODE },
	{ "forge_lookups", VREX_REG_TEST_FORGE_LOOKUPS },
	{ "forge_block", VREX_REG_TEST_FORGE_BLOCK },
	{ "forge_stream", VREX_REG_TEST_FORGE_STREAM },
};

/* debugfs_create_file() data: the device and which knob, packed in one allocation. */
struct vrex_test_file {
	struct vrex_device *vdev;
	u32 reg;
};

/*
 * Without the device lock: a knob is one register of its own, outside the
 * command protocol the lock serialises, and the tests read hang_cmds while a
 * hung command holds the lock for its whole timeout (vrex_sim's atomics are
 * lock-free alike). With the lock, the read returned only after the timeout.
 */
static int vrex_test_knob_access(struct vrex_test_file *f, u64 *val, bool write)
{
	struct vrex_device *vdev = f->vdev;
	int idx;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	if (write)
		writel((u32)*val, vdev->regs + f->reg);
	else
		*val = readl(vdev->regs + f->reg);
	drm_dev_exit(idx);
	return 0;
}

static int vrex_test_knob_get(void *data, u64 *val)
{
	return vrex_test_knob_access(data, val, false);
}

static int vrex_test_knob_set(void *data, u64 val)
{
	if (val > U32_MAX)
		return -EINVAL;
	return vrex_test_knob_access(data, &val, true);
}
DEFINE_DEBUGFS_ATTRIBUTE(vrex_test_knob_fops, vrex_test_knob_get, vrex_test_knob_set, "%llu\n");

/* A device's fault injection is registers, never the kernel's generic fault_attr. */
static bool vrex_test_no_fault_attr;

void vrex_testhooks_debugfs_init(struct vrex_device *vdev, struct dentry *dir)
{
	struct vrex_test_file *files;
	unsigned int i;
	u32 id;

	if (vdev->backend || !vdev->regs)
		return;
	mutex_lock(&vdev->lock);
	id = vrex_read(vdev, VREX_REG_TEST_ID);
	mutex_unlock(&vdev->lock);
	if (id != VREX_TEST_ID_VALUE)
		return;
	files = drmm_kcalloc(&vdev->drm, ARRAY_SIZE(vrex_test_knobs), sizeof(*files), GFP_KERNEL);
	if (!files)
		return;
	for (i = 0; i < ARRAY_SIZE(vrex_test_knobs); i++) {
		files[i].vdev = vdev;
		files[i].reg = vrex_test_knobs[i].reg;
		debugfs_create_file_unsafe(vrex_test_knobs[i].name, 0600, dir, &files[i],
					   &vrex_test_knob_fops);
	}
	debugfs_create_bool("fault_attr", 0400, dir, &vrex_test_no_fault_attr);
	drm_info(&vdev->drm, "device test hooks present (fault injection in debugfs)\n");
}
