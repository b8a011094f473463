// SPDX-License-Identifier: GPL-2.0-only
/*
 * The platform driver "vrex": a device-tree node (vrex_of.c: Jetson Orin,
 * RK3588, the generic compatible), or a device whose platform data supplies a
 * register backend instead of MMIO (struct vrex_platform_data, see
 * vrex_backend.h; vrex_sim.ko creates those). Both end in vrex_device_probe().
 */
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "vrex_backend.h"
#include "vrex_compat.h"
#include "vrex_device.h"
#include "vrex_drv.h"

static void vrex_backend_kref_release(struct kref *ref)
{
	struct vrex_backend *be = container_of(ref, struct vrex_backend, ref);

	be->ops->release(be);
}

/* With the DRM device: its BOs (mappings, dma-bufs) may outlive the unbind. */
static void vrex_backend_put(struct drm_device *drm, void *arg)
{
	struct vrex_backend *be = arg;
	struct module *owner = be->owner;

	kref_put(&be->ref, vrex_backend_kref_release);
	module_put(owner);
}

static int vrex_backend_attach(struct vrex_device *vdev, struct vrex_backend *be)
{
	struct device *dev = vdev->drm.dev;

	if (!be || !be->ops || !be->ops->read || !be->ops->write || !be->ops->release || !be->mem)
		return dev_err_probe(dev, -EINVAL, "incomplete register backend\n");
	if (!try_module_get(be->owner))
		return -ENODEV;
	kref_get(&be->ref);
	vdev->backend = be;
	vdev->mem.vaddr = be->mem;
	vdev->mem.size = be->mem_size;
	vdev->mem.vmalloced = true;
	vdev->mem.has_pages = true;
	vdev->irq = 0;
	return drmm_add_action_or_reset(&vdev->drm, vrex_backend_put, be);
}

static int vrex_platform_probe(struct platform_device *pdev)
{
	const struct vrex_platform_data *pd = dev_get_platdata(&pdev->dev);
	struct device *dev = &pdev->dev;
	struct vrex_device *vdev;
	int ret;

	if (!pd && !dev->of_node)
		return dev_err_probe(dev, -ENODEV, "no device-tree node and no backend\n");
	vdev = devm_drm_dev_alloc(dev, &vrex_drm_driver, struct vrex_device, drm);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	if (pd)
		ret = vrex_backend_attach(vdev, pd->backend);
	else
		ret = vrex_of_init(vdev, pdev);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, vdev);
	return vrex_device_probe(vdev);
}

static struct platform_driver vrex_platform_driver = {
	.driver = {
		.name = VREX_PLATFORM_NAME,
		.of_match_table = VREX_OF_MATCH,
		.dev_groups = vrex_dev_groups,
	},
	.probe = vrex_platform_probe,
	.vrex_platform_remove_hook = vrex_platform_remove,
};

int vrex_platform_driver_register(void)
{
	return platform_driver_register(&vrex_platform_driver);
}

void vrex_platform_driver_unregister(void)
{
	platform_driver_unregister(&vrex_platform_driver);
}
