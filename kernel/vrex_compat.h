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
#include <drm/drm_gem.h>

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

#if VREX_HAVE_DRIVER_GEM_PRIME_MMAP
#define VREX_DRIVER_PRIME_MMAP .gem_prime_mmap = drm_gem_prime_mmap,
#else
#define VREX_DRIVER_PRIME_MMAP
#endif
#if VREX_HAVE_DRIVER_DATE
#define VREX_DRIVER_DATE .date = "20261129",
#else
#define VREX_DRIVER_DATE
#endif
#define VREX_DRIVER_COMPAT_FIELDS VREX_DRIVER_PRIME_MMAP VREX_DRIVER_DATE

/* platform_driver.remove: int until 6.10 (.remove_new is void), void from 6.11. */
#if VREX_PLATFORM_REMOVE_VOID
#define VREX_PLATFORM_REMOVE(fn) .remove = fn
#define VREX_DEFINE_PLATFORM_REMOVE(fn, body)					\
	static void fn(struct platform_device *pdev) { body(pdev); }
#elif VREX_HAVE_PLATFORM_REMOVE_NEW
#define VREX_PLATFORM_REMOVE(fn) .remove_new = fn
#define VREX_DEFINE_PLATFORM_REMOVE(fn, body)					\
	static void fn(struct platform_device *pdev) { body(pdev); }
#else
#define VREX_PLATFORM_REMOVE(fn) .remove = fn
#define VREX_DEFINE_PLATFORM_REMOVE(fn, body)					\
	static int fn(struct platform_device *pdev) { body(pdev); return 0; }
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
