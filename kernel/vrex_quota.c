// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-user quotas: what one uid holds on one device across all its files
 * and processes. BO bytes, stream slots, ReSV heads, SHIE entries and
 * imported BOs are charged when created and uncharged when released; going
 * past a limit fails with -EDQUOT. Each limit is a module parameter, a share
 * of the device's own capacity (non-zero by default, so one user cannot take
 * a whole shared device); 0 lifts it. Files opened with CAP_SYS_ADMIN are
 * counted but not limited. The kernel memory behind these objects is
 * charged to the caller's memory cgroup as well (GFP_KERNEL_ACCOUNT).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "vrex_device.h"
#include "vrex_drv.h"
#include "vrex_quota.h"

/* Defaults and limit arithmetic: lib/vrex_quota.h, which the HAL's emulation uses too. */
static unsigned int vrex_uid_pct[VREX_RES_NUM] = {
	[VREX_RES_BYTES] = VREX_QUOTA_DEFAULT_PCT,
	[VREX_RES_STREAMS] = VREX_QUOTA_DEFAULT_PCT,
	[VREX_RES_HEADS] = VREX_QUOTA_DEFAULT_PCT,
	[VREX_RES_ENTRIES] = VREX_QUOTA_DEFAULT_PCT,
	[VREX_RES_IMPORTS] = 0,
};
module_param_named(uid_bytes_pct, vrex_uid_pct[VREX_RES_BYTES], uint, 0644);
MODULE_PARM_DESC(uid_bytes_pct,
		 "Percent of the device's bank memory one uid may hold in BOs (default 50, 0: no limit)");
module_param_named(uid_streams_pct, vrex_uid_pct[VREX_RES_STREAMS], uint, 0644);
MODULE_PARM_DESC(uid_streams_pct,
		 "Percent of the stream slots one uid may hold, at least 1 (default 50, 0: no limit)");
module_param_named(uid_heads_pct, vrex_uid_pct[VREX_RES_HEADS], uint, 0644);
MODULE_PARM_DESC(uid_heads_pct,
		 "Percent of the ReSV heads one uid may hold, at least 1 (default 50, 0: no limit)");
module_param_named(uid_entries_pct, vrex_uid_pct[VREX_RES_ENTRIES], uint, 0644);
MODULE_PARM_DESC(uid_entries_pct,
		 "Percent of the SHIE entries one uid may hold, at least 1 (default 50, 0: no limit)");

static unsigned int vrex_uid_max_imports = VREX_QUOTA_DEFAULT_IMPORTS;
module_param_named(uid_max_imports, vrex_uid_max_imports, uint, 0644);
MODULE_PARM_DESC(uid_max_imports, "PRIME-imported BOs one uid may hold (default 256, 0: no limit)");

/* What @res is a share of on @vdev. */
static u64 vrex_res_capacity(const struct vrex_device *vdev, enum vrex_res res)
{
	switch (res) {
	case VREX_RES_BYTES:
		return (u64)vdev->nbanks * vdev->bank_size;
	case VREX_RES_STREAMS:
		return vdev->max_streams;
	case VREX_RES_HEADS:
		return vdev->resv.heads;
	case VREX_RES_ENTRIES:
		return vdev->shie_capacity;
	default:
		return 0;
	}
}

/* The limit of @res for one uid now; U64_MAX when there is none. */
static u64 vrex_user_limit(const struct vrex_device *vdev, enum vrex_res res)
{
	unsigned int pct;

	if (res == VREX_RES_IMPORTS) {
		pct = READ_ONCE(vrex_uid_max_imports);
		return pct ? pct : U64_MAX;
	}
	pct = READ_ONCE(vrex_uid_pct[res]);
	return vrex_quota_limit(vrex_res_capacity(vdev, res), pct);
}

/* The user object of @uid on @vdev, created on first use; NULL without memory. */
struct vrex_user *vrex_user_get(struct vrex_device *vdev, kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	struct vrex_user *u;

	mutex_lock(&vdev->users_lock);
	u = xa_load(&vdev->users, key);
	if (u) {
		kref_get(&u->ref);
		goto out;
	}
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		goto out;
	kref_init(&u->ref);
	u->vdev = vdev;
	u->uid = uid;
	if (xa_err(xa_store(&vdev->users, key, u, GFP_KERNEL))) {
		kfree(u);
		u = NULL;
	}
out:
	mutex_unlock(&vdev->users_lock);
	return u;
}

struct vrex_user *vrex_user_get_current(struct vrex_device *vdev)
{
	return vrex_user_get(vdev, current_euid());
}

static void vrex_user_release(struct kref *ref)
{
	struct vrex_user *u = container_of(ref, struct vrex_user, ref);
	struct vrex_device *vdev = u->vdev;

	xa_erase(&vdev->users, from_kuid(&init_user_ns, u->uid));
	mutex_unlock(&vdev->users_lock);
	kfree(u);
}

void vrex_user_put(struct vrex_user *u)
{
	if (u)
		kref_put_mutex(&u->ref, vrex_user_release, &u->vdev->users_lock);
}

/* Whether the caller's charges are limited: everybody but CAP_SYS_ADMIN. */
bool vrex_user_limited(void)
{
	return !capable(CAP_SYS_ADMIN);
}

/**
 * vrex_user_charge - charge @n of @res to @u
 * @u: the user
 * @res: what is charged
 * @n: how much
 * @limited: enforce the limit (vrex_user_limited() of the file or caller)
 *
 * Return: 0, or -EDQUOT (nothing charged) when @u would pass its limit.
 */
int vrex_user_charge(struct vrex_user *u, enum vrex_res res, u64 n, bool limited)
{
	u64 used = atomic64_add_return(n, &u->used[res]);

	if (limited && used > vrex_user_limit(u->vdev, res)) {
		atomic64_sub(n, &u->used[res]);
		return -EDQUOT;
	}
	return 0;
}

void vrex_user_uncharge(struct vrex_user *u, enum vrex_res res, u64 n)
{
	atomic64_sub(n, &u->used[res]);
}

static void vrex_users_fini(struct drm_device *drm, void *arg)
{
	struct vrex_device *vdev = to_vrex_device(drm);

	WARN_ON(!xa_empty(&vdev->users));
	xa_destroy(&vdev->users);
}

int vrex_users_init(struct vrex_device *vdev)
{
	int ret;

	xa_init(&vdev->users);
	ret = vrex_drmm_mutex_init(&vdev->drm, &vdev->users_lock);
	if (ret)
		return ret;
	return drmm_add_action_or_reset(&vdev->drm, vrex_users_fini, NULL);
}

/* debugfs "users": one line per uid with what it holds. */
void vrex_users_debugfs(struct seq_file *m, struct vrex_device *vdev)
{
	struct vrex_user *u;
	unsigned long key;

	seq_puts(m, "uid bytes streams heads entries imports\n");
	mutex_lock(&vdev->users_lock);
	xa_for_each(&vdev->users, key, u)
		seq_printf(m, "%lu %lld %lld %lld %lld %lld\n", key,
			   atomic64_read(&u->used[VREX_RES_BYTES]),
			   atomic64_read(&u->used[VREX_RES_STREAMS]),
			   atomic64_read(&u->used[VREX_RES_HEADS]),
			   atomic64_read(&u->used[VREX_RES_ENTRIES]),
			   atomic64_read(&u->used[VREX_RES_IMPORTS]));
	mutex_unlock(&vdev->users_lock);
}
