// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs, in the directory the DRM core keeps for the node user space opens
 * (drm_minor.debugfs_root): register dump and raw window, bank occupancy, SHIE
 * table, live object counts for leak checks and the fault injection knobs,
 * next to the core's own files. Test and diagnostics interface only, no ABI.
 *
 * Where that directory is depends on the kernel: dri/<minor index>/ (render
 * node) or accel/<minor index>/ (accel node, 6.2..6.7); since 6.8 the core
 * keeps one directory per device named after the parent device,
 * dri/<dev_name>/ (dri/<minor index> is a symlink to it) or accel/<dev_name>/
 * (no symlink). The DRM core removes it, and so our files, in
 * drm_dev_unregister() (called by drm_dev_unplug()) on every version, after
 * drm_dev_unplug() waited for the readers inside drm_dev_enter(); files
 * without that guard only touch memory that lives until the DRM device is
 * released. "dev" names the node so user space can check it found the right
 * directory.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>

#include "vrex_backend.h"
#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

#define VREX_REG(n) { .name = #n, .offset = VREX_REG_##n }
static const struct debugfs_reg32 vrex_regs[] = {
	VREX_REG(ID), VREX_REG(VERSION), VREX_REG(CAPS), VREX_REG(BANK_COUNT),
	VREX_REG(BANK_SIZE_KB), VREX_REG(IRQ_STATUS), VREX_REG(IRQ_MASK),
	VREX_REG(SHIE_CAPACITY), VREX_REG(MAX_STREAMS), VREX_REG(BLOCK_CAPACITY),
	VREX_REG(ZOMBIE_FRAMES), VREX_REG(GROUP_BANKS), VREX_REG(SCRATCH), VREX_REG(STATUS),
	VREX_REG(ARG_STREAM), VREX_REG(ARG_REGION), VREX_REG(ARG_OFFSET), VREX_REG(ARG_FLAGS),
	VREX_REG(ARG_SRC_LO), VREX_REG(ARG_SRC_HI), VREX_REG(ARG_WIDTH), VREX_REG(ARG_HEIGHT),
	VREX_REG(ARG_STRIDE), VREX_REG(ARG_KV_TAG), VREX_REG(ARG_KV_ADDR_LO),
	VREX_REG(ARG_KV_ADDR_HI), VREX_REG(ARG_KV_LEN), VREX_REG(ARG_RADIUS), VREX_REG(ARG_BLOCK),
	VREX_REG(ARG_POOL), VREX_REG(RES_FLAGS), VREX_REG(RES_BLOCK), VREX_REG(RES_DISTANCE),
	VREX_REG(RES_FRAME), VREX_REG(RES_KV_TAG), VREX_REG(RES_KV_ADDR_LO),
	VREX_REG(RES_KV_ADDR_HI), VREX_REG(RES_KV_LEN), VREX_REG(RES_GROUP),
	VREX_REG(RES_BANK_FIRST), VREX_REG(RES_BANK_COUNT), VREX_REG(RES_COUNT),
	VREX_REG(RES_STREAM), VREX_REG(RES_REGION), VREX_REG(RES_REASON),
	VREX_REG(RES_LAST_ACCESS), VREX_REG(FCC_CENTRE_MOTION), VREX_REG(FCC_STATIC_RATIO),
	VREX_REG(FCC_ROI_DX), VREX_REG(FCC_ROI_DY), VREX_REG(FCC_MOVING_BLOCKS),
};

static const char * const vrex_counter_names[VREX_CNT_NUM] = {
	"lookups", "exact_hits", "approx_hits", "misses", "evictions", "bank_conflicts",
	"inserts", "removes", "frames", "live_entries", "live_blocks", "cmd_errors",
};

/* Runs @show with the device lock held, if the device is still there. */
typedef void (*vrex_dump_fn)(struct seq_file *m, struct vrex_device *vdev);

static int vrex_show_locked(struct seq_file *m, vrex_dump_fn show)
{
	struct vrex_device *vdev = m->private;
	int idx, ret;

	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	ret = vrex_lock_interruptible(vdev);
	if (!ret) {
		show(m, vdev);
		mutex_unlock(&vdev->lock);
	}
	drm_dev_exit(idx);
	return ret;
}

static void vrex_regs_dump(struct seq_file *m, struct vrex_device *vdev)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(vrex_regs); i++)
		seq_printf(m, "%-18s 0x%03lx = 0x%08x\n", vrex_regs[i].name, vrex_regs[i].offset,
			   vrex_read(vdev, vrex_regs[i].offset));
	for (i = 0; i < VREX_CNT_NUM; i++)
		seq_printf(m, "CNT_%-14s 0x%03x = %llu\n", vrex_counter_names[i],
			   VREX_REG_CNT_LO(i), vrex_read_counter(vdev, i));
}

static int vrex_regs_show(struct seq_file *m, void *unused)
{
	return vrex_show_locked(m, vrex_regs_dump);
}
DEFINE_SHOW_ATTRIBUTE(vrex_regs);

static void vrex_banks_dump(struct seq_file *m, struct vrex_device *vdev)
{
	u32 b, g, ngroups = vdev->group_banks ? vdev->nbanks / vdev->group_banks : 0;
	u64 bo_bytes;

	if (!vdev->mem.vmalloced)
		seq_printf(m, "bank memory: phys %pa dma %pad, %s struct pages\n",
			   &vdev->mem.phys, &vdev->mem.dma, vdev->mem.has_pages ? "with" : "no");
	seq_puts(m, "bank   bo_bytes      kv_kib  kv_blocks\n");
	for (b = 0; b < vdev->nbanks; b++) {
		mutex_lock(&vdev->mm_lock);
		bo_bytes = vdev->bo_bytes[b];
		mutex_unlock(&vdev->mm_lock);
		seq_printf(m, "%4u %10llu %10u %10u\n", b, bo_bytes,
			   vrex_read(vdev, VREX_REG_BANK_KB(b)),
			   vrex_read(vdev, VREX_REG_BANK_BLOCKS(b)));
	}
	vrex_gem_debugfs_bos(m, vdev);
	for (g = 0; g < ngroups; g++) {
		u32 pool = vrex_read(vdev, VREX_REG_GROUP_POOL(g));

		if (pool == VREX_NIL)
			seq_printf(m, "group %u: free\n", g);
		else
			seq_printf(m, "group %u: pool %#x\n", g, pool);
	}
}

static int vrex_banks_show(struct seq_file *m, void *unused)
{
	return vrex_show_locked(m, vrex_banks_dump);
}
DEFINE_SHOW_ATTRIBUTE(vrex_banks);

static void vrex_shie_dump(struct seq_file *m, struct vrex_device *vdev)
{
	struct vrex_block_ref *ref;
	unsigned long block;

	seq_puts(m, "blocks (kernel view): block stream handle offset length\n");
	xa_for_each(&vdev->blocks, block, ref)
		seq_printf(m, "%6lu %6u %6u %#10llx %8llu\n", block, ref->stream->hw, ref->handle,
			   ref->offset, ref->length);
}

static int vrex_shie_show(struct seq_file *m, void *unused)
{
	return vrex_show_locked(m, vrex_shie_dump);
}
DEFINE_SHOW_ATTRIBUTE(vrex_shie);

/*
 * Kernel objects, then what the hardware itself still holds: SHIE entries,
 * blocks and open stream slots (those stay 0 when the device is gone).
 */
static int vrex_counts_show(struct seq_file *m, void *unused)
{
	struct vrex_device *vdev = m->private;
	u64 entries = 0, hw_blocks = 0;
	int idx;

	if (drm_dev_enter(&vdev->drm, &idx)) {
		mutex_lock(&vdev->lock);
		entries = vrex_read_counter(vdev, VREX_CNT_LIVE_ENTRIES);
		hw_blocks = vrex_read_counter(vdev, VREX_CNT_LIVE_BLOCKS);
		mutex_unlock(&vdev->lock);
		drm_dev_exit(idx);
	}
	seq_printf(m, "bos %d\nstreams %d\nblocks %d\nentries %llu\nhw_blocks %llu\nimported %d\n"
		   "export_maps %d\n",
		   atomic_read(&vdev->live_bos), atomic_read(&vdev->live_streams),
		   atomic_read(&vdev->live_blocks), entries, hw_blocks,
		   atomic_read(&vdev->imported_bos), atomic_read(&vdev->export_maps));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrex_counts);

/* "users": what each uid holds against its quotas (vrex_quota.c). */
static int vrex_users_show(struct seq_file *m, void *unused)
{
	vrex_users_debugfs(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrex_users);

/*
 * "window": the raw register window, read with pread() at 4-byte aligned
 * offsets in multiples of 4 bytes (native-endian u32 per register). It
 * replaces the retired REG_READ ioctl for diagnostics (vrexctl regs); reads
 * have no side effects on the device.
 */
static ssize_t vrex_window_read(struct file *f, char __user *buf, size_t len, loff_t *ppos)
{
	struct vrex_device *vdev = f->private_data;
	u32 vals[64];
	loff_t pos = *ppos;
	size_t i, n;
	int idx;

	if ((pos & 3) || (len & 3) || pos < 0)
		return -EINVAL;
	if (pos >= VREX_REG_WINDOW || !len)
		return 0;
	n = min_t(size_t, len / 4, (VREX_REG_WINDOW - pos) / 4);
	n = min_t(size_t, n, ARRAY_SIZE(vals));
	if (!drm_dev_enter(&vdev->drm, &idx))
		return -ENODEV;
	mutex_lock(&vdev->lock);
	for (i = 0; i < n; i++)
		vals[i] = vrex_read(vdev, pos + i * 4);
	mutex_unlock(&vdev->lock);
	drm_dev_exit(idx);
	if (copy_to_user(buf, vals, n * 4))
		return -EFAULT;
	*ppos = pos + n * 4;
	return n * 4;
}

static const struct file_operations vrex_window_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = vrex_window_read,
	.llseek = default_llseek,
};

/* The char device of the primary node, so tests can match this directory to an open fd. */
static int vrex_dev_show(struct seq_file *m, void *unused)
{
	struct vrex_device *vdev = m->private;
	struct drm_minor *minor = vrex_node_minor(&vdev->drm);

	seq_printf(m, "%u:%u\n", MAJOR(minor->kdev->devt), MINOR(minor->kdev->devt));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrex_dev);

/* After drm_dev_register(): the minor's directory exists from then on. */
void vrex_debugfs_init(struct vrex_device *vdev)
{
	struct dentry *d = vrex_node_minor(&vdev->drm)->debugfs_root;

	/* No directory (debugfs failed or locked down): a NULL parent is the debugfs root. */
	if (IS_ERR_OR_NULL(d))
		return;
	debugfs_create_file("regs", 0444, d, vdev, &vrex_regs_fops);
	debugfs_create_file("banks", 0444, d, vdev, &vrex_banks_fops);
	debugfs_create_file("shie", 0444, d, vdev, &vrex_shie_fops);
	debugfs_create_file("counts", 0444, d, vdev, &vrex_counts_fops);
	debugfs_create_file("users", 0444, d, vdev, &vrex_users_fops);
	debugfs_create_file("dev", 0444, d, vdev, &vrex_dev_fops);
	/* Not in "counts": that file lists live objects only, all 0 when every file is closed. */
	debugfs_create_u32("resets", 0444, d, &vdev->resets);
	debugfs_create_file_size("window", 0400, d, vdev, &vrex_window_fops, VREX_REG_WINDOW);
	if (IS_ENABLED(CONFIG_DRM_ACCEL_VREX_FAULT_INJECTION))
		debugfs_create_atomic_t("fail_alloc", 0600, d, &vdev->fail_alloc);
	/* The backend's own files: its fault injection and internal state. */
	if (vdev->backend && vdev->backend->ops->debugfs_init)
		vdev->backend->ops->debugfs_init(vdev->backend, d);
	/* The same knobs when the device itself offers them (the QEMU device model). */
	vrex_testhooks_debugfs_init(vdev, d);
}
