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
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_drv.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
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
#define VREX_HAVE_GEM_VMAP_MAP 1
#define VREX_HAVE_DMA_BUF_MAP 0
#define VREX_HAVE_DRMM_MUTEX_INIT_MACRO 1
#define VREX_HAVE_PCI_DEV_GROUPS 1
#define VREX_HAVE_CONST_DRM_DRIVER 1
#define VREX_HAVE_IMPORT_NS_STRING 1
#endif

/* The DMA_BUF symbol namespace (5.16+; importing it earlier is harmless). */
#if VREX_HAVE_IMPORT_NS_STRING
#define VREX_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#else
#define VREX_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#endif

/* Objects map themselves (drm_gem_object_funcs.mmap) since 5.10. */
#if !VREX_HAVE_GEM_FUNCS_MMAP
#error "vrex needs drm_gem_object_funcs.mmap (Linux 5.10 or later)"
#endif

/* Compute accelerator node where the kernel has the accel framework, render node otherwise. */
#if VREX_HAVE_DRM_ACCEL_H && IS_ENABLED(CONFIG_DRM_ACCEL)
#include <drm/drm_accel.h>
#define VREX_DEFINE_FOPS(name) DEFINE_DRM_ACCEL_FOPS(name)
#define VREX_DRIVER_FEATURES (DRIVER_COMPUTE_ACCEL | DRIVER_GEM)
/* Accel nodes have no render-node permission model: no DRM_RENDER_ALLOW. */
#define VREX_IOCTL_FLAGS 0
#else
#define VREX_DEFINE_FOPS(name) DEFINE_DRM_GEM_FOPS(name)
#define VREX_DRIVER_FEATURES (DRIVER_RENDER | DRIVER_GEM)
#define VREX_IOCTL_FLAGS DRM_RENDER_ALLOW
#endif

/*
 * struct drm_driver is const for the DRM core since 5.11; 5.10's
 * drm_dev_alloc() still takes it writable.
 */
#if VREX_HAVE_CONST_DRM_DRIVER
#define VREX_DRM_DRIVER_CONST const
#else
#define VREX_DRM_DRIVER_CONST
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

/* drm_driver fields that exist on some kernels only, for its initializer. */
#if VREX_HAVE_DRIVER_GEM_PRIME_MMAP
#define VREX_DRIVER_GEM_PRIME_MMAP .gem_prime_mmap = drm_gem_prime_mmap,
#else
#define VREX_DRIVER_GEM_PRIME_MMAP
#endif
#if VREX_HAVE_DRIVER_DATE
#define VREX_DRIVER_DATE .date = "20261201",
#else
#define VREX_DRIVER_DATE
#endif

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

/*
 * The kernel address of a BO: struct iosys_map since 5.18, struct dma_buf_map
 * (linux/dma-buf-map.h) in 5.11..5.17. 5.10 has neither (its vmap returns the
 * address, see below): the same three fields are kept here.
 */
#if VREX_HAVE_IOSYS_MAP
#include <linux/iosys-map.h>
#define vrex_map iosys_map
#define vrex_map_set_vaddr iosys_map_set_vaddr
#define vrex_map_set_vaddr_iomem iosys_map_set_vaddr_iomem
#elif VREX_HAVE_DMA_BUF_MAP
#include <linux/dma-buf-map.h>
#define vrex_map dma_buf_map
#define vrex_map_set_vaddr dma_buf_map_set_vaddr
#define vrex_map_set_vaddr_iomem dma_buf_map_set_vaddr_iomem
#else
struct vrex_map {
	union {
		void __iomem *vaddr_iomem;
		void *vaddr;
	};
	bool is_iomem;
};

static inline void vrex_map_set_vaddr(struct vrex_map *map, void *vaddr)
{
	map->vaddr = vaddr;
	map->is_iomem = false;
}

static inline void vrex_map_set_vaddr_iomem(struct vrex_map *map, void __iomem *vaddr_iomem)
{
	map->vaddr_iomem = vaddr_iomem;
	map->is_iomem = true;
}
#endif

/*
 * Before 5.11 drm_gem_object_funcs.vmap returned the kernel address; the
 * object's vmap (which fills a map) is wrapped. An I/O-memory address is
 * handed out as is: 5.10's dma-buf vmap has no way to tell the importer.
 */
#if !VREX_HAVE_GEM_VMAP_MAP
static inline void *vrex_gem_vmap_ptr(struct drm_gem_object *obj,
				      int (*vmap)(struct drm_gem_object *obj, struct vrex_map *map))
{
	struct vrex_map map = {};
	int ret = vmap(obj, &map);

	if (ret)
		return ERR_PTR(ret);
	return map.is_iomem ? (void __force *)map.vaddr_iomem : map.vaddr;
}
#endif

/*
 * drmm_mutex_init() as a macro gives each call site its own lockdep class.
 * Where the kernel lacks it (before 6.0) or has it as a function (every mutex
 * in one class, so nesting two of them looks like recursive locking), the
 * same two steps are done here.
 */
#if VREX_HAVE_DRMM_MUTEX_INIT_MACRO
#define vrex_drmm_mutex_init drmm_mutex_init
#else
static inline void vrex_drmm_mutex_release(struct drm_device *drm, void *lock)
{
	mutex_destroy(lock);
}

#define vrex_drmm_mutex_init(drm, lock) ({					\
	static struct lock_class_key __vrex_key;				\
	struct mutex *__vrex_lock = (lock);					\
										\
	__mutex_init(__vrex_lock, #lock, &__vrex_key);				\
	drmm_add_action_or_reset(drm, vrex_drmm_mutex_release, __vrex_lock);	\
})
#endif

#endif /* VREX_KERNEL_COMPAT_H */
