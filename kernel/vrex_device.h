/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vrex device: one register window, one bank memory, one command at a time.
 * The bindings (DT, PCI, a backend's platform data) fill in where the registers and the bank
 * memory live, then hand over to vrex_device_probe(); everything above this
 * header is binding-agnostic.
 */
#ifndef VREX_DEVICE_H
#define VREX_DEVICE_H

#include <linux/completion.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <drm/drm_device.h>
#include <drm/drm_mm.h>

#include "vrex_compat.h"
#include "vrex_regs.h"

struct clk_bulk_data;
struct dentry;
struct vrex_backend;

#define VREX_MAX_BANKS_HW	64
#define VREX_MAX_STREAMS_HW	64

/* Command timeout in milliseconds (module parameter cmd_timeout_ms). */
extern unsigned int vrex_cmd_timeout_ms;

/* Where the banks live. Exactly one of @vaddr (cached or vmalloc) and @iomem is set. */
struct vrex_mem {
	void *vaddr;
	void __iomem *iomem;
	phys_addr_t phys;	/* real memory: base for mmap; unused when @vmalloced */
	dma_addr_t dma;		/* real memory: the engine's (IOMMU or bus) address of it */
	bool dma_mapped;	/* @dma is valid (the binding mapped the banks for the engine) */
	u64 size;
	bool vmalloced;		/* a backend's vmalloc_user() memory */
	bool has_pages;		/* struct pages back it: dma-buf export can build an sg_table */
};

/* The ReSV unit (vrex_resv.c): hardware heads, handed to files by id. */
struct vrex_resv_dev {
	u32 heads;		/* RESV_HEADS, 0: no unit */
	u32 max_tokens;		/* per head */
	u32 max_clusters;	/* per head */
	u32 in_use;		/* under vrex_device.lock */
	struct ida ida;		/* hardware head slots */
};

struct vrex_device {
	struct drm_device drm;

	/* Set by the binding before vrex_device_probe(). */
	void __iomem *regs;
	struct vrex_backend *backend;	/* instead of @regs: vrex_backend.h */
	struct vrex_mem mem;
	int irq;		/* <= 0: none (the backend completes synchronously) */
	struct clk_bulk_data *clks;	/* DT: enabled while bound */
	int nclks;

	/* Read from the registers at probe. */
	u32 hw_id;
	u32 hw_version;
	u32 caps;
	u32 nbanks;
	u64 bank_size;
	u32 group_banks;
	u32 max_streams;
	u32 shie_capacity;
	u32 block_capacity;
	u32 zombie_frames;

	/*
	 * @lock serialises commands (the register file holds one command's
	 * arguments and results) and guards everything the commands change:
	 * @blocks, @hw_streams and the per-file stream and pool tables.
	 */
	struct mutex lock;
	struct completion cmd_done;
	bool cmd_inflight;		/* a waiter was killed before its command completed */
	bool resetting;			/* inside vrex_device_reset(): no nested reset */
	bool wedged;			/* resets failed: commands get -EIO (set under @lock) */
	u32 resets;			/* resets after a command timed out */
	/*
	 * Bumped by every reset (under @lock). A reset empties every ReSV
	 * head: a head created in an older epoch reports -ESTALE until its
	 * owner acknowledges the loss (vrex_resv.c).
	 */
	u32 reset_epoch;
	struct xarray blocks;		/* hw block id -> struct vrex_block_ref */
	struct vrex_file_stream *hw_streams[VREX_MAX_STREAMS_HW];
	struct ida stream_ida;		/* hardware stream slots */
	struct ida pool_ida;		/* hardware pool ids of pooled streams */
	struct vrex_resv_dev resv;

	/* Bank allocator, one range manager per bank. */
	struct mutex mm_lock;
	struct drm_mm bank_mm[VREX_MAX_BANKS_HW];
	u64 bo_bytes[VREX_MAX_BANKS_HW];
	struct list_head bos;		/* placed BOs (debugfs) */
	atomic64_t bo_gen;		/* last BO generation handed out */
	u64 stream_serial;		/* last stream serial, under @lock */

	/* Per-uid quotas (vrex_quota.c): uid -> struct vrex_user, under users_lock. */
	struct mutex users_lock;
	struct xarray users;

	/* Live objects, for leak checks (debugfs "counts"). */
	atomic_t live_bos;
	atomic_t live_streams;
	atomic_t live_blocks;

	/* sg_tables built for importers of this device's BOs (debugfs "counts": export_maps). */
	atomic_t export_maps;

	/* PRIME-imported BOs (in no bank): objects and bytes, all files. */
	atomic_t imported_bos;
	atomic64_t imported_bytes;
	/* KV blocks pointing into imported BOs, under @lock. */
	u32 imported_kv_blocks;
	u64 imported_kv_bytes;

	/*
	 * LOOKUP_SIMILAR_BATCH staging (VREX_LOOKUP_STAGE_SIZE bytes at device
	 * address @stage_addr, right past the banks, used under @lock):
	 * descriptors, then records. Not reachable by any BO. A device with the
	 * bus interface reaches it by DMA in @stage; a backend without one only
	 * has it when its memory extends past the banks (vrex_dma.c).
	 */
	bool has_stage;
	u64 stage_addr;
	/* With VREX_CAP_DMA the staging window is this coherent memory (vrex_dma.c). */
	struct {
		void *vaddr;
		dma_addr_t dma;
		u32 size;
	} stage;

	/* The counters as last read, for sysfs readers that find @lock busy. */
	spinlock_t cnt_snap_lock;
	u64 cnt_snap[VREX_CNT_NUM];

	/* Fault injection (debugfs): the next N allocations fail. */
	atomic_t fail_alloc;
};

static inline struct vrex_device *to_vrex_device(struct drm_device *drm)
{
	return container_of(drm, struct vrex_device, drm);
}

/* Register access; callers hold vdev->lock and are inside drm_dev_enter(). */
u32 vrex_read(struct vrex_device *vdev, u32 off);
void vrex_write(struct vrex_device *vdev, u32 off, u32 val);
u64 vrex_read_counter(struct vrex_device *vdev, u32 idx);
void vrex_write_fp(struct vrex_device *vdev, u32 first_reg, const __u64 fp[2]);
void vrex_read_fp(struct vrex_device *vdev, u32 first_reg, __u64 fp[2]);

/*
 * Starts the command whose arguments are programmed and waits for it, at most
 * cmd_timeout_ms. 0, a device outcome (vrex_status_to_errno()), or a failure of
 * the command itself (vrex_cmd_failed()): -ETIMEDOUT after the device was reset,
 * -EIO when the device reports an unknown status, -EINTR when the caller got a
 * fatal signal (it never returns to user space).
 */
int vrex_cmd(struct vrex_device *vdev, u32 cmd);

/*
 * Takes vdev->lock for an ioctl: a signal ends the wait (-ERESTARTSYS, the
 * ioctl is restarted or fails with -EINTR), since the holder may be a reset
 * taking several command timeouts. Teardown paths lock uninterruptibly.
 */
int vrex_lock_interruptible(struct vrex_device *vdev);

/* The command did not run to a device outcome: a batch stops here. */
static inline bool vrex_cmd_failed(int ret)
{
	return ret == -ETIMEDOUT || ret == -EIO || ret == -EINTR;
}

/* CPU copies to and from device memory (@addr, @len inside vdev->mem). */
void vrex_mem_write(struct vrex_device *vdev, u64 addr, const void *src, size_t len);
void vrex_mem_read(struct vrex_device *vdev, u64 addr, void *dst, size_t len);

void vrex_device_reset(struct vrex_device *vdev);
int vrex_device_probe(struct vrex_device *vdev);
void vrex_device_remove(struct vrex_device *vdev);

/* vrex_drv.c; const where the kernel allows (vrex_compat.h) */
extern VREX_DRM_DRIVER_CONST struct drm_driver vrex_drm_driver;

#endif /* VREX_DEVICE_H */
