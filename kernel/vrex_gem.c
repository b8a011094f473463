// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: pinned ranges of one bank of device memory. A BO is placed
 * once, in the lowest bank of its mask with room, and never moves, so a KV
 * pointer (device address) handed to the hardware stays valid for the BO's
 * lifetime. User mappings go straight to the bank memory.
 *
 * A BO can also be imported with PRIME from another driver (an inference
 * engine's own KV cache, exported as a dma-buf): it is in no bank
 * (DRM_VREX_BANK_NONE), holds an attachment of this device to the
 * exporter's dma-buf until freed, and can only be pointed at by KV blocks:
 * the hardware keeps the pointer (VREX_KV_ADDR_EXTERNAL) and never reads
 * through it. So the import is never mapped for DMA (no IOMMU mappings, no
 * pinning of the exporter's memory for a device that does not access it);
 * the FCC and ReSV units, which read memory through the device's bank
 * address space, refuse it.
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
	struct vrex_user *user;		/* charged with its size (imported: one import), or NULL */
	u64 gen;	/* device-unique generation (drm_vrex_bo_create.bo_gen) */
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

u64 vrex_bo_gen(struct drm_gem_object *obj)
{
	return to_vrex_bo(obj)->gen;
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
	if (bo->user) {
		vrex_user_uncharge(bo->user, VREX_RES_BYTES, obj->size);
		vrex_user_put(bo->user);
	}
	drm_gem_object_release(obj);
	kfree(bo);
}

/*
 * Both the DRM file's mmap and the dma-buf's (drm_gem_prime_mmap()) land
 * here, and both map through the device's anon inode: the DRM core points
 * an exported dma-buf's file at it (drm_gem_dmabuf_export()), whether or
 * not the BO still has a handle. Nothing is mapped now: the mmap core links
 * the VMA into that address_space only after this returns, so PTEs inserted
 * here could escape an unmap_mapping_range() of a concurrent unplug. Pages
 * are inserted by vrex_gem_fault() inside drm_dev_enter(), and unplug
 * revokes the address_space after drm_dev_unplug() (vrex_gem_unmap_user());
 * a fault or a mapping after unplug is refused. Device memory is mapped as raw PFNs,
 * never through struct pages.
 */
static int vrex_gem_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	int idx;

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
	if (vdev->mem.vmalloced) {
		vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
		vrex_vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	} else {
		vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
		vrex_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	}
	drm_dev_exit(idx);
	return 0;
}

static vm_fault_t vrex_gem_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct vrex_device *vdev = to_vrex_device(obj->dev);
	unsigned long pgoff = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node) +
			      ((vmf->address - vma->vm_start) >> PAGE_SHIFT);
	u64 addr = to_vrex_bo(obj)->node.start + ((u64)pgoff << PAGE_SHIFT);
	unsigned long pfn;
	vm_fault_t ret;
	int idx;

	if ((u64)pgoff << PAGE_SHIFT >= obj->size)
		return VM_FAULT_SIGBUS;
	/* Unplugged: the memory may be gone (SIGBUS, as for a revoked mapping). */
	if (!drm_dev_enter(obj->dev, &idx))
		return VM_FAULT_SIGBUS;
	if (vdev->mem.vmalloced)
		pfn = vmalloc_to_pfn(vdev->mem.vaddr + addr);
	else
		pfn = PHYS_PFN(vdev->mem.phys + addr);
	ret = vmf_insert_pfn(vma, vmf->address, pfn);
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
	atomic_inc(&vdev->export_maps);
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

	/*
	 * An importer keeps its kernel mapping for as long as it likes, past an
	 * unbind. Only memory that lives until the DRM device is released (a
	 * backend's, which every dma-buf keeps alive) can be handed out; the
	 * bank mapping of real hardware is a devm resource undone at unbind, so
	 * a pointer into it would outlive the mapping: refused.
	 */
	if (!vdev->mem.vmalloced)
		return -EOPNOTSUPP;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
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
	vrex_user_uncharge(bo->user, VREX_RES_IMPORTS, 1);
	vrex_user_put(bo->user);
	/* Never mapped (NULL sg_table): detaches and drops the dma-buf reference. */
	drm_prime_gem_destroy(obj, NULL);
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
 * drm_driver.gem_prime_import. drm_gem_prime_import() would map the
 * dma-buf for this device (dma_buf_map_attachment()) only to hand the
 * mapping to the driver, which has no use for it: the engine stores KV
 * pointers into imported memory and never reads them. So the dma-buf is
 * attached (the exporter learns its importer, a re-export finds it through
 * import_attach) and never mapped. A dma-buf of a BO of this very device
 * gives back that BO, as the core helper does.
 */
struct drm_gem_object *vrex_gem_prime_import(struct drm_device *drm, struct dma_buf *dma_buf)
{
	struct vrex_device *vdev = to_vrex_device(drm);
	struct dma_buf_attachment *attach;
	size_t size = dma_buf->size;
	struct drm_gem_object *obj;
	struct vrex_bo *bo;
	int ret, idx;

	/* The DRM core's GEM exports all release through drm_gem_dmabuf_release(). */
	if (dma_buf->ops->release == drm_gem_dmabuf_release) {
		obj = dma_buf->priv;
		if (obj->dev == drm) {
			drm_gem_object_get(obj);
			return obj;
		}
	}
	/* drm_gem_private_object_init() needs whole pages. */
	if (!size || !PAGE_ALIGNED(size))
		return ERR_PTR(-EINVAL);
	if (!drm_dev_enter(drm, &idx))
		return ERR_PTR(-ENODEV);
	if (atomic_dec_if_positive(&vdev->fail_alloc) >= 0) {
		ret = -ENOMEM;
		goto err_exit;
	}
	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo) {
		ret = -ENOMEM;
		goto err_exit;
	}
	/* No file here: the importing caller's uid is charged. */
	bo->user = vrex_user_get_current(vdev);
	if (!bo->user) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = vrex_user_charge(bo->user, VREX_RES_IMPORTS, 1, vrex_user_limited());
	if (ret)
		goto err_user;
	attach = dma_buf_attach(dma_buf, drm->dev);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto err_uncharge;
	}
	get_dma_buf(dma_buf);
	INIT_LIST_HEAD(&bo->link);
	bo->gen = atomic64_inc_return(&vdev->bo_gen);
	bo->bank = DRM_VREX_BANK_NONE;
	bo->base.funcs = &vrex_gem_import_funcs;
	drm_gem_private_object_init(drm, &bo->base, size);
	bo->base.import_attach = attach;
	bo->base.resv = dma_buf->resv;
	atomic_inc(&vdev->imported_bos);
	atomic64_add(size, &vdev->imported_bytes);
	drm_dev_exit(idx);
	return &bo->base;

err_uncharge:
	vrex_user_uncharge(bo->user, VREX_RES_IMPORTS, 1);
err_user:
	vrex_user_put(bo->user);
err_free:
	kfree(bo);
err_exit:
	drm_dev_exit(idx);
	return ERR_PTR(ret);
}

static const struct vm_operations_struct vrex_gem_vm_ops = {
	.fault = vrex_gem_fault,
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
	struct vrex_file *vfile = to_vrex_file(file);
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

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo) {
		ret = -ENOMEM;
		goto out_exit;
	}
	bo->flags = args->flags;
	bo->gen = atomic64_inc_return(&vdev->bo_gen);
	bo->base.funcs = &vrex_gem_funcs;
	drm_gem_private_object_init(drm, &bo->base, PAGE_ALIGN(args->size));

	ret = vrex_quota_charge(vfile->quota, bo);
	if (ret)
		goto err_put;
	ret = vrex_user_charge(vfile->user, VREX_RES_BYTES, bo->base.size, vfile->limited);
	if (ret)
		goto err_put;
	kref_get(&vfile->user->ref);
	bo->user = vfile->user;
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
	args->bo_gen = bo->gen;
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
 * (recent cores revoke the anon inode's mappings in drm_dev_unplug() too);
 * later accesses get SIGBUS from vrex_gem_fault(). Called after
 * drm_dev_unplug(): every fault that could still insert a PTE has left its
 * drm_dev_enter() section, and none can start, so what is revoked here stays
 * revoked. The anon inode's address_space holds every user mapping: those
 * made on the DRM file and those made on exported dma-bufs (vrex_gem_mmap()).
 */
void vrex_gem_unmap_user(struct vrex_device *vdev)
{
	if (vdev->drm.anon_inode)
		unmap_mapping_range(vdev->drm.anon_inode->i_mapping, 0, 0, 1);
}
