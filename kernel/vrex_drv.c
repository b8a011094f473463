// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrex: DRM driver of the V-Rex frame-aware KV-cache retrieval engine.
 * Module entry points, the drm_driver, per-file contexts and the ioctl table.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_prime.h>
#include <drm/vrex_accel.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

unsigned int vrex_file_max_streams;
module_param_named(file_max_streams, vrex_file_max_streams, uint, 0644);
MODULE_PARM_DESC(file_max_streams,
		 "Streams one open file may hold; more fail with EDQUOT (0: the device's slots)");

unsigned long long vrex_file_max_bytes;
module_param_named(file_max_bytes, vrex_file_max_bytes, ullong, 0644);
MODULE_PARM_DESC(file_max_bytes,
		 "Bytes of BOs one open file may create, page-rounded; more fail with EDQUOT (0: no limit)");

static int vrex_open(struct drm_device *drm, struct drm_file *file)
{
	struct vrex_file *vfile;

	vfile = kzalloc(sizeof(*vfile), GFP_KERNEL_ACCOUNT);
	if (!vfile)
		return -ENOMEM;
	vfile->quota = vrex_quota_alloc();
	if (!vfile->quota)
		goto err_free;
	vfile->vdev = to_vrex_device(drm);
	vfile->user = vrex_user_get_current(vfile->vdev);
	if (!vfile->user)
		goto err_quota;
	vfile->limited = vrex_user_limited();
	xa_init_flags(&vfile->streams, XA_FLAGS_ALLOC1);
	xa_init(&vfile->pools);
	vrex_resv_file_init(vfile);
	file->driver_priv = vfile;
	return 0;

err_quota:
	vrex_quota_put(vfile->quota);
err_free:
	kfree(vfile);
	return -ENOMEM;
}

static void vrex_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct vrex_file *vfile = to_vrex_file(file);

	vrex_resv_release_all(vfile);
	vrex_stream_release_all(vfile);
	xa_destroy(&vfile->streams);
	xa_destroy(&vfile->pools);
	vrex_quota_put(vfile->quota);
	vrex_user_put(vfile->user);
	kfree(vfile);
}

static const struct drm_ioctl_desc vrex_ioctls[] = {
#define VREX_IOCTL(n, func) DRM_IOCTL_DEF_DRV(VREX_##n, vrex_ioctl_##func, VREX_IOCTL_FLAGS)
	VREX_IOCTL(QUERY, query),
	VREX_IOCTL(BO_CREATE, bo_create),
	VREX_IOCTL(BO_MMAP_OFFSET, bo_mmap_offset),
	VREX_IOCTL(STREAM_CREATE, stream_create),
	VREX_IOCTL(STREAM_DESTROY, stream_destroy),
	VREX_IOCTL(FRAME_SUBMIT, frame_submit),
	VREX_IOCTL(SHIE_INSERT, shie_insert),
	VREX_IOCTL(SHIE_LOOKUP, shie_lookup),
	VREX_IOCTL(SHIE_RETIRE, shie_retire),
	VREX_IOCTL(STATS, stats),
	/* DRM_VREX_RESERVED_10 (was REG_READ): no handler, the DRM core returns -EINVAL. */
	VREX_IOCTL(RESV_HEAD_CREATE, resv_head_create),
	VREX_IOCTL(RESV_HEAD_DESTROY, resv_head_destroy),
	VREX_IOCTL(RESV_HASH, resv_hash),
	VREX_IOCTL(RESV_SELECT, resv_select),
	VREX_IOCTL(RESV_TRUNCATE, resv_truncate),
#undef VREX_IOCTL
};

VREX_DEFINE_FOPS(vrex_fops);

VREX_DRM_DRIVER_CONST struct drm_driver vrex_drm_driver = {
	.driver_features = VREX_DRIVER_FEATURES,
	.open = vrex_open,
	.postclose = vrex_postclose,
	.ioctls = vrex_ioctls,
	.num_ioctls = ARRAY_SIZE(vrex_ioctls),
	.fops = &vrex_fops,
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd,
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
	.gem_prime_import = vrex_gem_prime_import,
	VREX_DRIVER_GEM_PRIME_MMAP
	VREX_DRIVER_DATE
	.name = DRM_VREX_DRIVER_NAME,
	.desc = "V-Rex frame-aware KV-cache retrieval engine",
	/* The uAPI header's version: what user space checks features against. */
	.major = DRM_VREX_VERSION_MAJOR,
	.minor = DRM_VREX_VERSION_MINOR,
};

static int __init vrex_init(void)
{
	int ret;

	ret = vrex_platform_driver_register();
	if (ret)
		return ret;
	ret = vrex_pci_driver_register();
	if (ret)
		goto err_platform;
	return 0;

err_platform:
	vrex_platform_driver_unregister();
	return ret;
}

static void __exit vrex_exit(void)
{
	vrex_pci_driver_unregister();
	vrex_platform_driver_unregister();
}

module_init(vrex_init);
module_exit(vrex_exit);

/* PRIME import attaches to foreign dma-bufs (vrex_gem_prime_import()). */
VREX_IMPORT_NS_DMA_BUF();
MODULE_DESCRIPTION("V-Rex frame-aware KV-cache retrieval engine");
MODULE_LICENSE("GPL");
