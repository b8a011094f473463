// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: pinned ranges of one bank of device memory. A BO is placed
 * once, in the lowest bank of its mask with room, and never moves, so a KV
 * pointer (device address) handed to the hardware stays valid for the BO's
 * lifetime. User mappings go straight to the bank memory.
 *
 * A BO can also be imported with PRIME from another driver (an inference
 * engine's own KV cache, exported as a dma-buf): it is in no bank
 * (DRM_VREX_BANK_NONE), is not charged to any quota, holds the exporter's
 * attachment and mapping for this device until freed, and can only be
 * pointed at by KV blocks (the hardware keeps the pointer with
 * VREX_KV_ADDR_EXTERNAL); the FCC and ReSV units, which read memory through
 * the device's bank address space, refuse it.
 */
#include <linux/dma-buf.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <drm/vrex_accel.h>

#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

struct vrex_bo {
	struct drm_gem_object base;
	struct list_head link;		/* vdev->bos, under mm_lock; empty before placement */
	struct drm_mm_node node;	/* device addresses: bank * bank_size + offset in bank */
	struct vrex_quota *quota;	/* charged with the BO's size, NULL before charging */
	struct sg_table *sgt;		/* imported: the exporter's mapping for this device */
	u32 bank;	/* DRM_VREX_BANK_NONE when imported */
	u32 flags;	/* DRM_VREX_BO_*: placement hints */
};

static const struct drm_gem_object_funcs vrex_gem_import_funcs;

static inline struct vrex_bo *to_vrex_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct vrex_bo, base);
}

struct vrex_quota *vrex_quota_alloc(void)
{
	struct vrex_quota *quota = kzalloc(sizeof(*quota), GFP_KERNEL);

	if (quota)
		kref_init(&quota->ref);
	return quota;
}

static void vrex_quota_release(struct kref *ref)
{
	kfree(container_of(ref, struct vrex_quota, ref));
}

void vrex_quota_put(struct vrex_quota *quota)
{
	kref_put(&quota->ref, vrex_quota_release);
}

/* Charges @bo's size to @quota, or -EDQUOT if that would pass file_max_bytes. */
static int vrex_quota_charge(struct vrex_quota *quota, struct vrex_bo *bo)
{
	u64 max = READ_ONCE(vrex_file_max_bytes);
	s64 size = bo->base.size;

	if (atomic64_add_return(size, &quota->bytes) > max && max) {
		atomic64_sub(size, &quota->bytes);
		return -EDQUOT;
	}
	kref_get(&quota->ref);
	bo->quota = quota;
	return 0;
}

bool vrex_bo_is_imported(const struct drm_gem_object *obj)
{
	return obj->funcs == &vrex_gem_import_funcs;
}

/* Where the hardware is told KV at @offset of @obj lives (pointer only, never read). */
u64 vrex_bo_kv_addr(struct drm_gem_object *obj, u64 offset)
{
	if (vrex_bo_is_imported(obj))
		return VREX_KV_ADDR_EXTERNAL | offset;
	return to_vrex_bo(obj)->node.start + offset;
}

/*
 * [@offset, @offset + @length) of @obj for a unit that reads or writes it
 * through the device's address space (FCC, ReSV): bank memory only, so an
 * imported BO is refused, then the range is checked.
 */
int vrex_bo_check_device_range(struct drm_gem_object *obj, u64 offset, u64 length)
{
	if (vrex_bo_is_imported(obj))
		return -EINVAL;
	return vrex_check_range(offset, length, obj->size);
}

u64 vrex_bo_dev_addr(struct drm_gem_object *obj)
{
	return to_vrex_bo(obj)->node.start;
}

static void vrex_gem_free(struct drm_gem_object *obj)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	struct vrex_bo *bo = to_vrex_bo(obj);

	if (drm_mm_node_allocated(&bo->node)) {
		mutex_lock(&vdev->mm_lock);
		list_del(&bo->link);
		drm_mm_remove_node(&bo->node);
		vdev->bo_bytes[bo->bank] -= obj->size;
		mutex_unlock(&vdev->mm_lock);
		atomic_dec(&vdev->live_bos);
	}
	if (bo->quota) {
		atomic64_sub(obj->size, &bo->quota->bytes);
		vrex_quota_put(bo->quota);
	}
	drm_gem_object_release(obj);
	kfree(bo);
}

/*
 * Both the DRM file's mmap and the dma-buf's (drm_gem_prime_mmap()) land
 * here. Mappings are populated now and revoked at unplug
 * (vrex_gem_unmap_user()), so no fault handler is needed; a mapping made
 * after unplug is refused. Memory without struct pages (a no-map carve-out,
 * a BAR) is mapped as raw PFNs, never through pages.
 */
static int vrex_gem_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	struct vrex_mem *mem = &vdev->mem;
	unsigned long pgoff = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	u64 addr = to_vrex_bo(obj)->node.start + ((u64)pgoff << PAGE_SHIFT);
	int ret, idx;

	/* Pinned memory: no copy-on-write private mappings of device memory. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;

	/*
	 * Newer cores set this before calling us; 5.10's leaves it to funcs.mmap,
	 * and without vm_ops->close the mapping's object reference is never put.
	 */
	vma->vm_ops = obj->funcs->vm_ops;

	if (mem->vmalloced) {
		ret = remap_vmalloc_range(vma, mem->vaddr, addr >> PAGE_SHIFT);
	} else {
		vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
		vrex_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
		ret = io_remap_pfn_range(vma, vma->vm_start, PHYS_PFN(mem->phys + addr),
					 vma->vm_end - vma->vm_start, vma->vm_page_prot);
	}
	drm_dev_exit(idx);
	return ret;
}

static struct sg_table *vrex_gem_get_sg_table(struct drm_gem_object *obj)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	struct vrex_bo *bo = to_vrex_bo(obj);
	unsigned int npages = obj->size >> PAGE_SHIFT;
	struct page **pages;
	struct sg_table *sgt;
	unsigned int i;
	int ret, idx;

	/* No struct pages (no-map carve-out, BAR): never invent them with pfn_to_page(). */
	if (!vdev->mem.has_pages)
		return ERR_PTR(-EOPNOTSUPP);
	if (!drm_dev_enter(obj->dev, &idx))
		return ERR_PTR(-ENODEV);

	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto err_exit;
	}
	for (i = 0; i < npages; i++) {
		u64 addr = bo->node.start + ((u64)i << PAGE_SHIFT);

		if (vdev->mem.vmalloced)
			pages[i] = vmalloc_to_page(vdev->mem.vaddr + addr);
		else
			pages[i] = pfn_to_page(PHYS_PFN(vdev->mem.phys + addr));
	}

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt) {
		ret = -ENOMEM;
		goto err_pages;
	}
	ret = sg_alloc_table_from_pages(sgt, pages, npages, 0, obj->size, GFP_KERNEL);
	if (ret)
		goto err_sgt;
	kvfree(pages);
	drm_dev_exit(idx);
	return sgt;

err_sgt:
	kfree(sgt);
err_pages:
	kvfree(pages);
err_exit:
	drm_dev_exit(idx);
	return ERR_PTR(ret);
}

static int vrex_gem_vmap(struct drm_gem_object *obj, struct vrex_map *map)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	u64 addr = to_vrex_bo(obj)->node.start;
	int idx;

	/* The bank mapping of real hardware is a devm resource of the bound device. */
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	if (vdev->mem.iomem)
		vrex_map_set_vaddr_iomem(map, vdev->mem.iomem + addr);
	else
		vrex_map_set_vaddr(map, vdev->mem.vaddr + addr);
	drm_dev_exit(idx);
	return 0;
}

#if !VREX_HAVE_GEM_VMAP_MAP
static void *vrex_gem_vmap_old(struct drm_gem_object *obj)
{
	return vrex_gem_vmap_ptr(obj, vrex_gem_vmap);
}
#endif

static void vrex_gem_import_free(struct drm_gem_object *obj)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	struct vrex_bo *bo = to_vrex_bo(obj);

	atomic_dec(&vdev->imported_bos);
	atomic64_sub(obj->size, &vdev->imported_bytes);
	/* Unmaps the exporter's sg_table, detaches and drops the dma-buf reference. */
	drm_prime_gem_destroy(obj, bo->sgt);
	drm_gem_object_release(obj);
	kfree(bo);
}

/*
 * Imported memory belongs to its exporter: no mmap through the vrex fd (no
 * mmap offset is created; the importer maps the dma-buf itself), no vmap,
 * no sg_table of ours (a re-export returns the original dma-buf).
 */
static const struct drm_gem_object_funcs vrex_gem_import_funcs = {
	.free = vrex_gem_import_free,
};

/*
 * drm_driver.gem_prime_import_sg_table: the DRM core has attached this device
 * to a foreign dma-buf and mapped it (@sgt); a dma-buf of a vrex BO of this
 * device never gets here (drm_gem_prime_import() returns the same object).
 * On failure the core unmaps and detaches.
 */
struct drm_gem_object *vrex_gem_prime_import_sg_table(struct drm_device *drm,
						      struct dma_buf_attachment *attach,
						      struct sg_table *sgt)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	size_t size = attach->dmabuf->size;
	struct vrex_bo *bo;
	int ret, idx;

	/* drm_gem_private_object_init() needs whole pages. */
	if (!size || !PAGE_ALIGNED(size))
		return ERR_PTR(-EINVAL);
	if (!drm_dev_enter(drm, &idx))
		return ERR_PTR(-ENODEV);
	if (atomic_dec_if_positive(&vdev->fail_alloc) >= 0) {
		ret = -ENOMEM;
		goto err_exit;
	}
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo) {
		ret = -ENOMEM;
		goto err_exit;
	}
	INIT_LIST_HEAD(&bo->link);
	bo->sgt = sgt;
	bo->bank = DRM_VREX_BANK_NONE;
	bo->base.funcs = &vrex_gem_import_funcs;
	drm_gem_private_object_init(drm, &bo->base, size);
	atomic_inc(&vdev->imported_bos);
	atomic64_add(size, &vdev->imported_bytes);
	drm_dev_exit(idx);
	return &bo->base;

err_exit:
	drm_dev_exit(idx);
	return ERR_PTR(ret);
}

static const struct vm_operations_struct vrex_gem_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs vrex_gem_funcs = {
	.free = vrex_gem_free,
	.mmap = vrex_gem_mmap,
	.get_sg_table = vrex_gem_get_sg_table,
#if VREX_HAVE_GEM_VMAP_MAP
	.vmap = vrex_gem_vmap,
#else
	.vmap = vrex_gem_vmap_old,
#endif
	.vm_ops = &vrex_gem_vm_ops,
};

/*
 * Lowest bank of @mask with room; the node is left allocated on success.
 * STAGING-only buffers go to the top of the bank, everything else to the
 * best-fitting hole from the bottom (the uAPI's placement hints).
 */
static int vrex_bo_place(struct vrex_device *vdev, struct vrex_bo *bo, u64 mask)
{
	enum drm_mm_insert_mode mode = bo->flags == DRM_VREX_BO_STAGING ? DRM_MM_INSERT_HIGH :
									  DRM_MM_INSERT_BEST;
	u32 b;
	int ret = -ENOSPC;

	mutex_lock(&vdev->mm_lock);
	for (b = 0; b < vdev->nbanks; b++) {
		if (!(mask & BIT_ULL(b)))
			continue;
		ret = drm_mm_insert_node_generic(&vdev->bank_mm[b], &bo->node, bo->base.size,
						 PAGE_SIZE, 0, mode);
		if (!ret) {
			bo->bank = b;
			vdev->bo_bytes[b] += bo->base.size;
			list_add_tail(&bo->link, &vdev->bos);
			break;
		}
	}
	mutex_unlock(&vdev->mm_lock);
	return ret ? -ENOSPC : 0;
}

/* Fresh BOs never show a previous owner's KV data. */
static void vrex_bo_clear(struct vrex_device *vdev, struct vrex_bo *bo)
{
	if (vdev->mem.iomem)
		memset_io(vdev->mem.iomem + bo->node.start, 0, bo->base.size);
	else
		memset(vdev->mem.vaddr + bo->node.start, 0, bo->base.size);
}

int vrex_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct drm_vrex_bo_create *args = data;
	struct vrex_check_limits lim;
	struct vrex_bo *bo;
	u32 handle;
	int ret, idx;

	vrex_check_limits_init(vdev, &lim);
	ret = vrex_check_bo_create(args, &lim);
	if (ret)
		return ret;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (atomic_dec_if_positive(&vdev->fail_alloc) >= 0) {
		ret = -ENOMEM;
		goto out_exit;
	}

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo) {
		ret = -ENOMEM;
		goto out_exit;
	}
	bo->flags = args->flags;
	bo->base.funcs = &vrex_gem_funcs;
	drm_gem_private_object_init(drm, &bo->base, PAGE_ALIGN(args->size));

	ret = vrex_quota_charge(to_vrex_file(file)->quota, bo);
	if (ret)
		goto err_put;
	ret = vrex_bo_place(vdev, bo, args->bank_mask);
	if (ret)
		goto err_put;
	atomic_inc(&vdev->live_bos);
	vrex_bo_clear(vdev, bo);

	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret)
		goto err_put;
	/*
	 * Once the handle exists another thread of this file can GEM_CLOSE it
	 * and free the BO: read what is reported before publishing it, and
	 * never touch @bo after dropping the creation reference.
	 */
	args->bank = bo->bank;
	ret = drm_gem_handle_create(file, &bo->base, &handle);
	drm_gem_object_put(&bo->base);
	if (ret)
		goto out_exit;
	args->handle = handle;
	drm_dev_exit(idx);
	return 0;

err_put:
	drm_gem_object_put(&bo->base);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

int vrex_ioctl_bo_mmap_offset(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_vrex_bo_mmap_offset *args = data;
	struct drm_gem_object *obj;
	int ret = 0;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (vrex_bo_is_imported(obj))
		ret = -EOPNOTSUPP;
	else
		args->offset = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return ret;
}

/* debugfs banks: one "bo <device address> <size> <flags>" line per placed BO. */
void vrex_gem_debugfs_bos(struct seq_file *m, struct vrex_device *vdev)
{
	struct vrex_bo *bo;

	mutex_lock(&vdev->mm_lock);
	list_for_each_entry(bo, &vdev->bos, link)
		seq_printf(m, "bo %#llx %zu %#x\n", bo->node.start, bo->base.size, bo->flags);
	mutex_unlock(&vdev->mm_lock);
}

/*
 * Device memory must not stay mapped into processes once the device is gone
 * (recent cores do this in drm_dev_unplug() too); later accesses get SIGBUS.
 * Mappings made through the DRM file live in the device's anon inode;
 * dma-buf mappings live in each exported dma-buf's own file, so every
 * exported BO's is revoked too. After drm_dev_unplug() no new mapping can be
 * made (vrex_gem_mmap() enters the device), so nothing is mapped again.
 * object_name_lock keeps obj->dma_buf stable (the prime core sets and clears
 * it under that lock).
 */
void vrex_gem_unmap_user(struct vrex_device *vdev)
{
	struct vrex_bo *bo;

	if (vdev->drm.anon_inode)
		unmap_mapping_range(vdev->drm.anon_inode->i_mapping, 0, 0, 1);

	mutex_lock(&vdev->drm.object_name_lock);
	mutex_lock(&vdev->mm_lock);
	list_for_each_entry(bo, &vdev->bos, link) {
		struct dma_buf *buf = bo->base.dma_buf;

		if (buf && buf->file)
			unmap_mapping_range(buf->file->f_mapping, 0, 0, 1);
	}
	mutex_unlock(&vdev->mm_lock);
	mutex_unlock(&vdev->drm.object_name_lock);
}
