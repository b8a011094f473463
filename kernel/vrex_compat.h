/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every kernel-version difference vrex cares about, in one place. The
 * VREX_HAVE_* / VREX_* facts come from vrex_compat_gen.h, written by
 * probe.sh from the target kernel's headers (the in-tree build has no
 * generated header and gets the current kernel's answers).
 */
#ifndef VREX_KERNEL_COMPAT_H
#define VREX_KERNEL_COMPAT_H

#include <linux/mm.h>
#include <linux/platform_device.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>

#ifdef VREX_OUT_OF_TREE
#include "vrex_compat_gen.h"
#else
#define VREX_HAVE_DRM_ACCEL_H 1
#define VREX_PLATFORM_REMOVE_VOID 1
#define VREX_HAVE_PLATFORM_REMOVE_NEW 0
#define VREX_HAVE_VM_FLAGS_SET 1
#define VREX_HAVE_DRIVER_GEM_PRIME_MMAP 0
#define VREX_HAVE_DRIVER_DATE 0
#define VREX_HAVE_IOSYS_MAP 1
#define VREX_HAVE_GEM_FUNCS_MMAP 1
#endif

#if !VREX_HAVE_GEM_FUNCS_MMAP
#error "vrex needs drm_gem_object_funcs.mmap (Linux 5.11 or later)"
#endif

/* Compute accelerator node where the kernel has the accel framework, render node otherwise. */
#if VREX_HAVE_DRM_ACCEL_H && IS_ENABLED(CONFIG_DRM_ACCEL)
#include <drm/drm_accel.h>
#define VREX_DEFINE_FOPS(name) DEFINE_DRM_ACCEL_FOPS(name)
#define VREX_DRIVER_FEATURES (DRIVER_COMPUTE_ACCEL | DRIVER_GEM)
#else
#define VREX_DEFINE_FOPS(name) DEFINE_DRM_GEM_FOPS(name)
#define VREX_DRIVER_FEATURES (DRIVER_RENDER | DRIVER_GEM)
#endif

/* The node user space opens: accel where the kernel has it, else render. */
static inline struct drm_minor *vrex_node_minor(struct drm_device *drm)
{
#if VREX_HAVE_DRM_ACCEL_H
	if (drm->accel)
		return drm->accel;
#endif
	return drm->render ? drm->render : drm->primary;
}

/* drm_driver fields that exist on some kernels only; set before the driver is used. */
static inline void vrex_driver_compat_init(struct drm_driver *drv)
{
#if VREX_HAVE_DRIVER_GEM_PRIME_MMAP
	drv->gem_prime_mmap = drm_gem_prime_mmap;
#endif
#if VREX_HAVE_DRIVER_DATE
	drv->date = "20261129";
#endif
}

/*
 * platform_driver.remove: int until 6.10 (6.3..6.10 also offer a void
 * .remove_new), void from 6.11. Every vrex platform binding removes the same
 * way, so the one callback lives here: .vrex_platform_remove_hook = vrex_platform_remove.
 */
struct vrex_device;
void vrex_device_remove(struct vrex_device *vdev);

#if VREX_PLATFORM_REMOVE_VOID || VREX_HAVE_PLATFORM_REMOVE_NEW
#if VREX_PLATFORM_REMOVE_VOID
#define vrex_platform_remove_hook remove
#else
#define vrex_platform_remove_hook remove_new
#endif
static inline void vrex_platform_remove(struct platform_device *pdev)
{
	vrex_device_remove(platform_get_drvdata(pdev));
}
#else
#define vrex_platform_remove_hook remove
static inline int vrex_platform_remove(struct platform_device *pdev)
{
	vrex_device_remove(platform_get_drvdata(pdev));
	return 0;
}
#endif

static inline void vrex_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
#if VREX_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#if VREX_HAVE_IOSYS_MAP
#include <linux/iosys-map.h>
#define vrex_map iosys_map
#define vrex_map_set_vaddr iosys_map_set_vaddr
#define vrex_map_set_vaddr_iomem iosys_map_set_vaddr_iomem
#else
#include <linux/dma-buf-map.h>
#define vrex_map dma_buf_map
#define vrex_map_set_vaddr dma_buf_map_set_vaddr
#define vrex_map_set_vaddr_iomem dma_buf_map_set_vaddr_iomem
#endif

#endif /* VREX_KERNEL_COMPAT_H */
