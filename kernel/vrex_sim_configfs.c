// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrex_sim.ko: simulated V-Rex devices, configured through configfs the way
 * vkms and gpio-sim are:
 *
 *   mkdir /sys/kernel/config/vrex_sim/sim0
 *   echo 16 > /sys/kernel/config/vrex_sim/sim0/banks        (1-64, default 16)
 *   echo 1048576 > /sys/kernel/config/vrex_sim/sim0/bank_size  (page multiple)
 *   echo 1 > /sys/kernel/config/vrex_sim/sim0/enable
 *   cat /sys/kernel/config/vrex_sim/sim0/dev_name           (vrex.N.auto)
 *   echo 0 > /sys/kernel/config/vrex_sim/sim0/enable        (or rmdir)
 *
 * Module parameter hw_version=1.0 makes every device a hardware 1.0 one
 * (default 1.1; anything else refuses to load).
 *
 * Tests of the driver's probe also set max_streams_reg before enabling:
 * "none" (default) or the value the MAX_STREAMS register reads instead of
 * the model's, e.g. 0, a limit vrex.ko must refuse.
 *
 * Enabling registers a "vrex" platform device whose platform data carries
 * the simulated register backend; vrex.ko's platform driver binds it exactly
 * as it binds a board's device, the register access going through the
 * backend's ops instead of MMIO. Nothing in vrex.ko knows about the model.
 */
#include <linux/configfs.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "vrex_sim.h"

struct vrex_sim_item {
	struct config_group group;
	struct mutex lock;		/* everything below */
	u32 banks;
	u32 bank_size;
	s64 max_streams_reg;	/* < 0: none */
	struct vrex_sim_device dev;
};

static struct vrex_sim_item *to_vrex_sim_item(struct config_item *item)
{
	return container_of(to_config_group(item), struct vrex_sim_item, group);
}

static int vrex_sim_item_enable(struct vrex_sim_item *it)
{
	return vrex_sim_device_add(&it->dev, config_item_name(&it->group.cg_item), it->banks,
				   it->bank_size, it->max_streams_reg);
}

static void vrex_sim_item_disable(struct vrex_sim_item *it)
{
	vrex_sim_device_remove(&it->dev);
}

static ssize_t vrex_sim_enable_show(struct config_item *item, char *page)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);
	bool on;

	mutex_lock(&it->lock);
	on = it->dev.pdev;
	mutex_unlock(&it->lock);
	return sprintf(page, "%d\n", on);
}

static ssize_t vrex_sim_enable_store(struct config_item *item, const char *page, size_t count)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);
	bool on;
	int ret;

	ret = kstrtobool(page, &on);
	if (ret)
		return ret;
	mutex_lock(&it->lock);
	if (on && !it->dev.pdev)
		ret = vrex_sim_item_enable(it);
	else if (!on && it->dev.pdev)
		vrex_sim_item_disable(it);
	mutex_unlock(&it->lock);
	return ret ? ret : count;
}

static ssize_t vrex_sim_dev_name_show(struct config_item *item, char *page)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);
	ssize_t n;

	mutex_lock(&it->lock);
	n = sprintf(page, "%s\n", it->dev.pdev ? dev_name(&it->dev.pdev->dev) : "");
	mutex_unlock(&it->lock);
	return n;
}

static ssize_t vrex_sim_u32_show(struct vrex_sim_item *it, u32 *val, char *page)
{
	u32 v;

	mutex_lock(&it->lock);
	v = *val;
	mutex_unlock(&it->lock);
	return sprintf(page, "%u\n", v);
}

/* The layout is fixed while the device exists; vrex_sim_create() checks the values. */
static ssize_t vrex_sim_u32_store(struct vrex_sim_item *it, u32 *val, const char *page,
				  size_t count)
{
	u32 v;
	int ret;

	ret = kstrtou32(page, 0, &v);
	if (ret)
		return ret;
	mutex_lock(&it->lock);
	if (it->dev.pdev)
		ret = -EBUSY;
	else
		*val = v;
	mutex_unlock(&it->lock);
	return ret ? ret : count;
}

static ssize_t vrex_sim_banks_show(struct config_item *item, char *page)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);

	return vrex_sim_u32_show(it, &it->banks, page);
}

static ssize_t vrex_sim_banks_store(struct config_item *item, const char *page, size_t count)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);

	return vrex_sim_u32_store(it, &it->banks, page, count);
}

static ssize_t vrex_sim_bank_size_show(struct config_item *item, char *page)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);

	return vrex_sim_u32_show(it, &it->bank_size, page);
}

static ssize_t vrex_sim_bank_size_store(struct config_item *item, const char *page, size_t count)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);

	return vrex_sim_u32_store(it, &it->bank_size, page, count);
}

static ssize_t vrex_sim_max_streams_reg_show(struct config_item *item, char *page)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);
	s64 v;

	mutex_lock(&it->lock);
	v = it->max_streams_reg;
	mutex_unlock(&it->lock);
	return v < 0 ? sprintf(page, "none\n") : sprintf(page, "%lld\n", v);
}

static ssize_t vrex_sim_max_streams_reg_store(struct config_item *item, const char *page,
					      size_t count)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);
	s64 v = -1;
	u32 u;
	int ret = 0;

	if (!sysfs_streq(page, "none")) {
		ret = kstrtou32(page, 0, &u);
		if (ret)
			return ret;
		v = u;
	}
	mutex_lock(&it->lock);
	if (it->dev.pdev)
		ret = -EBUSY;
	else
		it->max_streams_reg = v;
	mutex_unlock(&it->lock);
	return ret ? ret : count;
}

CONFIGFS_ATTR(vrex_sim_, enable);
CONFIGFS_ATTR(vrex_sim_, max_streams_reg);
CONFIGFS_ATTR_RO(vrex_sim_, dev_name);
CONFIGFS_ATTR(vrex_sim_, banks);
CONFIGFS_ATTR(vrex_sim_, bank_size);

static struct configfs_attribute *vrex_sim_item_attrs[] = {
	&vrex_sim_attr_enable,
	&vrex_sim_attr_dev_name,
	&vrex_sim_attr_banks,
	&vrex_sim_attr_bank_size,
	&vrex_sim_attr_max_streams_reg,
	NULL,
};

static void vrex_sim_item_release(struct config_item *item)
{
	struct vrex_sim_item *it = to_vrex_sim_item(item);

	mutex_lock(&it->lock);
	if (it->dev.pdev)
		vrex_sim_item_disable(it);
	mutex_unlock(&it->lock);
	mutex_destroy(&it->lock);
	kfree(it);
}

static struct configfs_item_operations vrex_sim_item_ops = {
	.release = vrex_sim_item_release,
};

static const struct config_item_type vrex_sim_item_type = {
	.ct_item_ops = &vrex_sim_item_ops,
	.ct_attrs = vrex_sim_item_attrs,
	.ct_owner = THIS_MODULE,
};

static struct config_group *vrex_sim_make_group(struct config_group *group, const char *name)
{
	struct vrex_sim_item *it;

	it = kzalloc(sizeof(*it), GFP_KERNEL);
	if (!it)
		return ERR_PTR(-ENOMEM);
	mutex_init(&it->lock);
	it->banks = VREX_DEFAULT_BANKS;
	it->bank_size = SZ_1M;
	it->max_streams_reg = -1;
	config_group_init_type_name(&it->group, name, &vrex_sim_item_type);
	return &it->group;
}

static struct configfs_group_operations vrex_sim_group_ops = {
	.make_group = vrex_sim_make_group,
};

static const struct config_item_type vrex_sim_root_type = {
	.ct_group_ops = &vrex_sim_group_ops,
	.ct_owner = THIS_MODULE,
};

static struct configfs_subsystem vrex_sim_subsys = {
	.su_group = {
		.cg_item = {
			.ci_namebuf = "vrex_sim",
			.ci_type = &vrex_sim_root_type,
		},
	},
};

static int __init vrex_sim_init(void)
{
	int ret;

	ret = vrex_sim_parse_hw_version();
	if (ret)
		return ret;
	config_group_init(&vrex_sim_subsys.su_group);
	mutex_init(&vrex_sim_subsys.su_mutex);
	return configfs_register_subsystem(&vrex_sim_subsys);
}

static void __exit vrex_sim_exit(void)
{
	/* configfs holds a module reference per item: none is left here. */
	configfs_unregister_subsystem(&vrex_sim_subsys);
	mutex_destroy(&vrex_sim_subsys.su_mutex);
}

module_init(vrex_sim_init);
module_exit(vrex_sim_exit);
