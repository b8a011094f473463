/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The contract between vrex.ko and a register backend that is not MMIO: the
 * platform data of a "vrex" platform device that has no device-tree node.
 * vrex_sim.ko (kernel/vrex_sim_*.c) is the one provider: it creates such a
 * device per configfs item and hands over the lib/ reference model as the
 * register file and host memory as the banks. In tree this header would be
 * include/linux/platform_data/vrex.h.
 *
 * Lifetime: the backend is reference counted. vrex.ko takes a reference and
 * a reference on @owner at probe and drops both when its DRM device is
 * released, which can be long after the platform device went away (open
 * files, exported dma-bufs): the bank memory they map must stay valid until
 * then. Register access itself stops at unbind (drm_dev_enter()).
 */
#ifndef VREX_BACKEND_H
#define VREX_BACKEND_H

#include <linux/kref.h>
#include <linux/types.h>

struct dentry;
struct module;
struct vrex_backend;

/**
 * struct vrex_backend_ops - register access of a non-MMIO V-Rex
 * @read: reads the 32-bit register at byte offset @off of the window
 * @write: writes it; a write to VREX_REG_CMD runs the command
 * @debugfs_init: optional, adds backend files (fault injection, internal
 *	state) to @dir, the DRM node's debugfs directory, which the DRM core
 *	and vrex.ko share: names must not clash with theirs. The DRM core
 *	removes them when vrex.ko unregisters the device.
 * @release: frees the backend once the last reference is gone
 *
 * Calls are serialised by the caller (vrex_device.lock), except @release.
 */
struct vrex_backend_ops {
	u32 (*read)(struct vrex_backend *be, u32 off);
	void (*write)(struct vrex_backend *be, u32 off, u32 val);
	void (*debugfs_init)(struct vrex_backend *be, struct dentry *dir);
	void (*release)(struct vrex_backend *be);
};

/**
 * struct vrex_backend - a V-Rex reached through function calls
 * @ops: register access
 * @owner: the module providing @ops
 * @ref: references: the provider's and one per DRM device using it
 * @mem: bank memory, vmalloc_user() memory of @mem_size bytes
 * @mem_size: bytes of @mem, at least what the registers report
 */
struct vrex_backend {
	const struct vrex_backend_ops *ops;
	struct module *owner;
	struct kref ref;
	void *mem;
	u64 mem_size;
};

/**
 * struct vrex_platform_data - platform data of a "vrex" device without DT node
 * @backend: the register backend; required
 */
struct vrex_platform_data {
	struct vrex_backend *backend;
};

/* The platform driver's name: the device a backend provider registers. */
#define VREX_PLATFORM_NAME "vrex"

#endif /* VREX_BACKEND_H */
