// SPDX-License-Identifier: GPL-2.0-only
/*
 * Binding-independent device core: register access (MMIO or a backend's
 * ops, see vrex_backend.h), command submission, probe and removal.
 */
#include <linux/bits.h>
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "vrex_backend.h"
#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_model.h"

u32 vrex_read(struct vrex_device *vdev, u32 off)
{
	lockdep_assert_held(&vdev->lock);
	if (vdev->backend)
		return vdev->backend->ops->read(vdev->backend, off);
	return readl(vdev->regs + off);
}

void vrex_write(struct vrex_device *vdev, u32 off, u32 val)
{
	lockdep_assert_held(&vdev->lock);
	if (vdev->backend)
		vdev->backend->ops->write(vdev->backend, off, val);
	else
		writel(val, vdev->regs + off);
}

/* The two halves are separate reads: retry until HI is stable across LO. */
u64 vrex_read_counter(struct vrex_device *vdev, u32 idx)
{
	u32 hi, lo, hi2;

	hi = vrex_read(vdev, VREX_REG_CNT_HI(idx));
	for (;;) {
		lo = vrex_read(vdev, VREX_REG_CNT_LO(idx));
		hi2 = vrex_read(vdev, VREX_REG_CNT_HI(idx));
		if (hi == hi2)
			return (u64)hi << 32 | lo;
		hi = hi2;
	}
}

void vrex_write_fp(struct vrex_device *vdev, u32 first_reg, const __u64 fp[2])
{
	vrex_write(vdev, first_reg, lower_32_bits(fp[0]));
	vrex_write(vdev, first_reg + 4, upper_32_bits(fp[0]));
	vrex_write(vdev, first_reg + 8, lower_32_bits(fp[1]));
	vrex_write(vdev, first_reg + 12, upper_32_bits(fp[1]));
}

void vrex_read_fp(struct vrex_device *vdev, u32 first_reg, __u64 fp[2])
{
	fp[0] = vrex_read(vdev, first_reg) | (u64)vrex_read(vdev, first_reg + 4) << 32;
	fp[1] = vrex_read(vdev, first_reg + 8) | (u64)vrex_read(vdev, first_reg + 12) << 32;
}

void vrex_mem_write(struct vrex_device *vdev, u64 addr, const void *src, size_t len)
{
	void *stage = vrex_dma_stage_ptr(vdev, addr, len);

	if (stage)
		memcpy(stage, src, len);
	else if (vdev->mem.iomem)
		memcpy_toio(vdev->mem.iomem + addr, src, len);
	else
		memcpy(vdev->mem.vaddr + addr, src, len);
}

void vrex_mem_read(struct vrex_device *vdev, u64 addr, void *dst, size_t len)
{
	const void *stage = vrex_dma_stage_ptr(vdev, addr, len);

	if (stage)
		memcpy(dst, stage, len);
	else if (vdev->mem.iomem)
		memcpy_fromio(dst, vdev->mem.iomem + addr, len);
	else
		memcpy(dst, vdev->mem.vaddr + addr, len);
}

unsigned int vrex_cmd_timeout_ms = 250;
module_param_named(cmd_timeout_ms, vrex_cmd_timeout_ms, uint, 0644);
MODULE_PARM_DESC(cmd_timeout_ms,
		 "Milliseconds a device command may take before the device is reset (1-10000, default 250)");

/*
 * The device's 8-bit status codes (lib/vrex_compat.h VREX_E*) mapped to
 * errnos by a fixed table, never passed through: a code this driver does not
 * know, and any that would read as EINTR/EAGAIN (which make libdrm re-submit
 * a non-idempotent command), become -EIO. docs/uapi.md lists the table.
 */
static int vrex_device_errno(u32 code)
{
	switch (code) {
	case VREX_ENOENT:
		return -ENOENT;
	case VREX_E2BIG:
		return -E2BIG;
	case VREX_ENOMEM:
		return -ENOMEM;
	case VREX_EBUSY:
		return -EBUSY;
	case VREX_EEXIST:
		return -EEXIST;
	case VREX_EINVAL:
		return -EINVAL;
	case VREX_ENOSPC:
		return -ENOSPC;
	case VREX_ERANGE:
		return -ERANGE;
	default:
		return -EIO;
	}
}

static int vrex_status_to_errno(u32 status)
{
	if (status & VREX_STATUS_ERROR)
		return vrex_device_errno((status & VREX_STATUS_ERRNO_MASK) >>
					 VREX_STATUS_ERRNO_SHIFT);
	if (!(status & VREX_STATUS_DONE) || (status & VREX_STATUS_BUSY))
		return -EIO;
	return 0;
}

/*
 * Waits for the command in flight: 0 once it completed, -ETIMEDOUT, or -EINTR
 * on a fatal signal. A task that is exiting (closing its files) waits without
 * being killable, still bounded by the timeout, so its teardown commands run.
 */
static int vrex_cmd_wait(struct vrex_device *vdev)
{
	unsigned long timeout = msecs_to_jiffies(clamp(READ_ONCE(vrex_cmd_timeout_ms), 1u, 10000u));
	bool killable = !(current->flags & PF_EXITING);
	unsigned long deadline = jiffies + timeout;
	u32 pending;
	long left;

	if (vdev->irq > 0) {
		if (killable)
			left = wait_for_completion_killable_timeout(&vdev->cmd_done, timeout);
		else
			left = wait_for_completion_timeout(&vdev->cmd_done, timeout);
		if (left < 0)
			return -EINTR;
		return left ? 0 : -ETIMEDOUT;
	}

	/* A backend completes inside the CMD write unless a hang was injected. */
	while (vrex_read(vdev, VREX_REG_STATUS) & VREX_STATUS_BUSY) {
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (killable && fatal_signal_pending(current))
			return -EINTR;
		usleep_range(500, 1000);
	}
	/* Ack as the IRQ handler would. */
	pending = vrex_read(vdev, VREX_REG_IRQ_STATUS);
	if (pending)
		vrex_write(vdev, VREX_REG_IRQ_STATUS, pending);
	return 0;
}

static int vrex_cmd_raw(struct vrex_device *vdev, u32 cmd)
{
	int ret;

	if (vdev->cmd_inflight) {
		/* A killed waiter's command: the registers are not ours until it is done. */
		ret = vrex_cmd_wait(vdev);
		if (ret)
			return ret;
		vdev->cmd_inflight = false;
	}
	if (vdev->irq > 0)
		reinit_completion(&vdev->cmd_done);
	vrex_write(vdev, VREX_REG_CMD, cmd);
	ret = vrex_cmd_wait(vdev);
	if (ret == -EINTR)
		vdev->cmd_inflight = true;
	if (ret)
		return ret;
	return vrex_status_to_errno(vrex_read(vdev, VREX_REG_STATUS));
}

int vrex_cmd(struct vrex_device *vdev, u32 cmd)
{
	int ret;

	lockdep_assert_held(&vdev->lock);
	/* Nothing reaches a wedged device: it answers nothing in time. */
	if (vdev->wedged)
		return -EIO;
	ret = vrex_cmd_raw(vdev, cmd);
	if (ret == -ETIMEDOUT && !vdev->resetting) {
		drm_err(&vdev->drm, "command %u timed out after %u ms: resetting the device\n",
			cmd, READ_ONCE(vrex_cmd_timeout_ms));
		vrex_device_reset(vdev);
	}
	return ret;
}

int vrex_lock_interruptible(struct vrex_device *vdev)
{
	return mutex_lock_interruptible(&vdev->lock) ? -ERESTARTSYS : 0;
}

/* Resets tried after a timeout before the device is declared wedged. */
#define VREX_RESET_TRIES 3

/*
 * One reset: the engine is reset, which empties the SHIE table, the block
 * table and the release FIFO and closes every stream slot. A NOP then proves
 * the engine answers again, and every open stream slot is opened again,
 * empty, with its pool. The first command that does not complete fails the
 * reset at once: a device that stopped answering costs one timeout per try,
 * not one per stream.
 */
static int vrex_device_reset_once(struct vrex_device *vdev)
{
	struct vrex_file_stream *stream;
	u32 hw;
	int ret;

	vdev->resets++;
	vdev->reset_epoch++;
	vrex_write(vdev, VREX_REG_RESET, VREX_RESET_MAGIC);
	vdev->cmd_inflight = false;
	if (vdev->irq > 0) {
		vrex_write(vdev, VREX_REG_IRQ_STATUS, VREX_IRQ_ALL);
		vrex_write(vdev, VREX_REG_IRQ_MASK, VREX_IRQ_ALL);
	}
	vrex_blocks_reset(vdev);
	ret = vrex_cmd(vdev, VREX_CMD_NOP);
	if (vrex_cmd_failed(ret))
		return ret;
	for (hw = 0; hw < vdev->max_streams; hw++) {
		stream = vdev->hw_streams[hw];
		if (!stream)
			continue;
		vrex_write(vdev, VREX_REG_ARG_STREAM, hw);
		vrex_write(vdev, VREX_REG_ARG_POOL,
			   stream->pool ? stream->pool->hw_pool : VREX_POOL_PRIVATE + hw);
		ret = vrex_cmd(vdev, VREX_CMD_STREAM_OPEN);
		if (vrex_cmd_failed(ret))
			return ret;
		if (ret)
			drm_err(&vdev->drm, "reopening stream slot %u after reset: %d\n", hw, ret);
	}
	return 0;
}

/*
 * After a command timed out. Every block the kernel tracked is released to
 * its stream with reason DRM_VREX_RELEASE_RESET (reported by that stream's
 * next RETIRE, so user space frees its KV memory); streams keep their ids,
 * their frame numbers restart. The ReSV heads are emptied too: the new reset
 * epoch makes each of them report -ESTALE to its owner until acknowledged
 * (vrex_resv.c). A device that still does not answer after VREX_RESET_TRIES
 * resets is wedged: every later command fails with -EIO at once, without
 * touching it, until the device is bound again. The lock is held for at
 * most VREX_RESET_TRIES command timeouts.
 */
void vrex_device_reset(struct vrex_device *vdev)
{
	int ret = 0, n;

	lockdep_assert_held(&vdev->lock);
	if (vdev->wedged)
		return;
	vdev->resetting = true;
	for (n = 0; n < VREX_RESET_TRIES; n++) {
		ret = vrex_device_reset_once(vdev);
		if (!ret)
			break;
	}
	vdev->resetting = false;
	if (ret) {
		WRITE_ONCE(vdev->wedged, true);
		drm_err(&vdev->drm,
			"device wedged: %d resets did not bring it back (%d); commands fail with -EIO until it is bound again\n",
			VREX_RESET_TRIES, ret);
	}
}

static irqreturn_t vrex_irq(int irq, void *arg)
{
	struct vrex_device *vdev = arg;
	u32 pending;

	/* MMIO only (a backend has no interrupt); no lock needed for IRQ_STATUS. */
	pending = readl(vdev->regs + VREX_REG_IRQ_STATUS);
	if (!pending)
		return IRQ_NONE;
	writel(pending, vdev->regs + VREX_REG_IRQ_STATUS);
	if (pending & (VREX_IRQ_CMD_DONE | VREX_IRQ_CMD_ERROR))
		complete(&vdev->cmd_done);
	return IRQ_HANDLED;
}

static void vrex_mm_fini(struct drm_device *drm, void *arg)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	u32 b;

	for (b = 0; b < vdev->nbanks; b++)
		drm_mm_takedown(&vdev->bank_mm[b]);
	WARN_ON(!xa_empty(&vdev->blocks));
	xa_destroy(&vdev->blocks);
	ida_destroy(&vdev->stream_ida);
	ida_destroy(&vdev->pool_ida);
}

static int vrex_read_config(struct vrex_device *vdev)
{
	struct device *dev = vdev->drm.dev;
	u32 id, size_kb;

	mutex_lock(&vdev->lock);
	id = vrex_read(vdev, VREX_REG_ID);
	vdev->hw_version = vrex_read(vdev, VREX_REG_VERSION);
	if (id != VREX_ID_VALUE || (vdev->hw_version >> 16) != (VREX_VERSION_VALUE >> 16)) {
		mutex_unlock(&vdev->lock);
		return dev_err_probe(dev, -ENODEV,
				     "no V-Rex 1.x at the register window (id %#x version %#x)\n",
				     id, vdev->hw_version);
	}
	vdev->hw_id = id;
	vrex_write(vdev, VREX_REG_RESET, VREX_RESET_MAGIC);
	vdev->caps = vrex_read(vdev, VREX_REG_CAPS);
	vdev->nbanks = vrex_read(vdev, VREX_REG_BANK_COUNT);
	size_kb = vrex_read(vdev, VREX_REG_BANK_SIZE_KB);
	vdev->group_banks = vrex_read(vdev, VREX_REG_GROUP_BANKS);
	vdev->max_streams = vrex_read(vdev, VREX_REG_MAX_STREAMS);
	vdev->shie_capacity = vrex_read(vdev, VREX_REG_SHIE_CAPACITY);
	vdev->block_capacity = vrex_read(vdev, VREX_REG_BLOCK_CAPACITY);
	vdev->zombie_frames = vrex_read(vdev, VREX_REG_ZOMBIE_FRAMES);
	mutex_unlock(&vdev->lock);

	vdev->bank_size = (u64)size_kb * SZ_1K;
	if (!vdev->nbanks || vdev->nbanks > VREX_MAX_BANKS_HW || !vdev->bank_size ||
	    !IS_ALIGNED(vdev->bank_size, PAGE_SIZE))
		return dev_err_probe(dev, -EINVAL,
				     "unsupported bank layout: %u banks of %llu bytes\n",
				     vdev->nbanks, vdev->bank_size);
	if ((u64)vdev->nbanks * vdev->bank_size > vdev->mem.size)
		return dev_err_probe(dev, -EINVAL, "bank memory is %llu bytes, banks need %llu\n",
				     vdev->mem.size, (u64)vdev->nbanks * vdev->bank_size);
	/*
	 * Every limit below sizes an allocator or bounds a table index (stream
	 * slots index hw_streams[], the release FIFO drain is bounded by the
	 * block capacity): a device reporting none refuses to bind rather than
	 * let ida_alloc_max(max_streams - 1) wrap.
	 */
	if (!vdev->max_streams || !vdev->shie_capacity || !vdev->block_capacity)
		return dev_err_probe(dev, -EINVAL,
				     "unsupported limits: %u streams, %u SHIE entries, %u blocks\n",
				     vdev->max_streams, vdev->shie_capacity, vdev->block_capacity);
	if (!vdev->group_banks || vdev->group_banks > vdev->nbanks ||
	    vdev->nbanks % vdev->group_banks)
		return dev_err_probe(dev, -EINVAL, "unsupported bank groups: %u of %u banks\n",
				     vdev->group_banks, vdev->nbanks);
	if (vdev->max_streams > VREX_MAX_STREAMS_HW)
		vdev->max_streams = VREX_MAX_STREAMS_HW;
	/* Lookup batches are staged past the banks, where no BO can be placed. */
	return vrex_dma_init(vdev);
}

int vrex_device_probe(struct vrex_device *vdev)
{
	struct drm_device *drm = &vdev->drm;
	struct device *dev = drm->dev;
	u32 b;
	int ret;

	ret = vrex_drmm_mutex_init(drm, &vdev->lock);
	if (ret)
		return ret;
	ret = vrex_drmm_mutex_init(drm, &vdev->mm_lock);
	if (ret)
		return ret;
	init_completion(&vdev->cmd_done);
	spin_lock_init(&vdev->cnt_snap_lock);
	INIT_LIST_HEAD(&vdev->bos);
	xa_init(&vdev->blocks);
	ida_init(&vdev->stream_ida);
	ida_init(&vdev->pool_ida);

	ret = vrex_read_config(vdev);
	if (ret)
		return ret;
	ret = vrex_users_init(vdev);
	if (ret)
		return ret;
	ret = vrex_resv_init(vdev);
	if (ret)
		return ret;

	for (b = 0; b < vdev->nbanks; b++)
		drm_mm_init(&vdev->bank_mm[b], b * vdev->bank_size, vdev->bank_size);
	ret = drmm_add_action_or_reset(drm, vrex_mm_fini, NULL);
	if (ret)
		return ret;

	if (vdev->irq > 0) {
		ret = devm_request_irq(dev, vdev->irq, vrex_irq, IRQF_SHARED, dev_name(dev), vdev);
		if (ret)
			return dev_err_probe(dev, ret, "cannot request IRQ %d\n", vdev->irq);
		mutex_lock(&vdev->lock);
		vrex_write(vdev, VREX_REG_IRQ_STATUS, VREX_IRQ_ALL);
		vrex_write(vdev, VREX_REG_IRQ_MASK, VREX_IRQ_ALL);
		mutex_unlock(&vdev->lock);
	}

	ret = drm_dev_register(drm, 0);
	if (ret)
		return dev_err_probe(dev, ret, "cannot register DRM device\n");

	vrex_debugfs_init(vdev);
	drm_info(drm, "V-Rex %u.%u%s: %u banks x %llu KiB, %u streams, %u SHIE entries\n",
		 vdev->hw_version >> 16, vdev->hw_version & 0xffff,
		 vdev->backend ? " (simulated)" : "",
		 vdev->nbanks, vdev->bank_size / SZ_1K, vdev->max_streams, vdev->shie_capacity);
	return 0;
}

/*
 * Unbind with files still open: new ioctls see drm_dev_enter() fail, user
 * mappings of device memory are revoked, and the per-file state is torn down
 * when the last file closes (a backend lives until the DRM device
 * is released, so late frees of BOs and blocks never touch freed memory).
 */
void vrex_device_remove(struct vrex_device *vdev)
{
	/* Also removes the debugfs files (with the minor's directory). */
	drm_dev_unplug(&vdev->drm);
	vrex_gem_unmap_user(vdev);

	if (vdev->irq > 0) {
		mutex_lock(&vdev->lock);
		vrex_write(vdev, VREX_REG_IRQ_MASK, 0);
		mutex_unlock(&vdev->lock);
	}
}
