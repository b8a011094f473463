// SPDX-License-Identifier: GPL-2.0-only
/*
 * Simulated V-Rex register backend: the register file is the lib/ reference
 * model, the banks are vmalloc'd host memory. vrex.ko programs it with the
 * same register writes it issues to silicon (through struct vrex_backend_ops
 * instead of MMIO); commands complete inside the CMD write. Devices are
 * created through configfs (vrex_sim_configfs.c).
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "vrex_sim.h"

/*
 * The hardware revision of every simulated device: "1.1" (the newest) or
 * "1.0", which lacks what lib/vrex_regs.h lists for 1.1, so that vrex.ko's
 * 1.0 paths run. Read-only: all devices of one load are the same revision.
 */
static char *vrex_sim_hw_version_param = "1.1";
module_param_named(hw_version, vrex_sim_hw_version_param, charp, 0444);
MODULE_PARM_DESC(hw_version, "Hardware revision of the simulated devices: 1.1 (default) or 1.0");

static u32 vrex_sim_hw_version = VREX_VERSION_VALUE;

int vrex_sim_parse_hw_version(void)
{
	const char *v = vrex_sim_hw_version_param;

	if (v && sysfs_streq(v, "1.1")) {
		vrex_sim_hw_version = VREX_VERSION_VALUE;
	} else if (v && sysfs_streq(v, "1.0")) {
		vrex_sim_hw_version = VREX_VERSION_1_0;
	} else {
		pr_err("vrex_sim: hw_version=%s is not a revision the model simulates (valid: 1.0, 1.1)\n",
		       v ? v : "(null)");
		return -EINVAL;
	}
	return 0;
}

static struct vrex_sim *to_vrex_sim(struct vrex_backend *be)
{
	return container_of(be, struct vrex_sim, be);
}

static u32 vrex_sim_read(struct vrex_backend *be, u32 off)
{
	struct vrex_sim *s = to_vrex_sim(be);

	if (off == VREX_REG_STATUS && s->forced_status)
		return s->forced_status;
	if (off == VREX_REG_MAX_STREAMS && s->forge_max_streams)
		return s->bad_max_streams;
	if (s->forging) {
		switch (off) {
		case VREX_REG_RES_FLAGS:
			return VREX_RESF_HIT;
		case VREX_REG_RES_BLOCK:
			return s->forge_block;
		case VREX_REG_RES_STREAM:
			return s->forge_stream;
		default:
			break;
		}
	}
	return vrex_model_read(&s->model, off);
}

/*
 * Rewrites the records a successful LOOKUP_SIMILAR_BATCH wrote as hits on
 * the forged block; the model checked DST and COUNT, so they are in memory.
 */
static void vrex_sim_forge_batch(struct vrex_sim *s)
{
	struct vrex_model *m = &s->model;
	u64 dst = (u64)vrex_model_read(m, VREX_REG_ARG_DST_HI) << 32 |
		  vrex_model_read(m, VREX_REG_ARG_DST_LO);
	u32 i, count = vrex_model_read(m, VREX_REG_ARG_COUNT);
	struct vrex_lookup_rec rec;

	if (!(vrex_model_read(m, VREX_REG_STATUS) & VREX_STATUS_DONE))
		return;
	for (i = 0; i < count; i++) {
		u8 *p = s->be.mem + dst + (size_t)i * sizeof(rec);

		memcpy(&rec, p, sizeof(rec));
		rec.status = 0;
		rec.flags = cpu_to_le32(VREX_RESF_HIT);
		rec.block = cpu_to_le32(s->forge_block);
		rec.stream = cpu_to_le32(s->forge_stream);
		memcpy(p, &rec, sizeof(rec));
	}
}

/* The generic fault_attr (debugfs "fail_cmd/"), where the kernel has it. */
static bool vrex_sim_should_fail(struct vrex_sim *s)
{
#ifdef CONFIG_FAULT_INJECTION
	return should_fail(&s->fail_attr, 1);
#else
	return false;
#endif
}

static void vrex_sim_write(struct vrex_backend *be, u32 off, u32 val)
{
	struct vrex_sim *s = to_vrex_sim(be);
	u32 op = READ_ONCE(s->fail_cmd_op), code = READ_ONCE(s->fail_cmd_code) & 0xff;

	if (off == VREX_REG_RESET) {
		s->forced_status = 0;
		s->forging = false;
	}
	if (off == VREX_REG_CMD) {
		s->forced_status = 0;
		s->forging = (val == VREX_CMD_LOOKUP_TEMPORAL || val == VREX_CMD_LOOKUP_SIMILAR ||
			      val == VREX_CMD_LOOKUP_SIMILAR_BATCH) &&
			     atomic_dec_if_positive(&s->forge_lookups) >= 0;
		/* Injected failure or hang: the command never reaches the model. */
		if (!op || val == op) {
			if (atomic_dec_if_positive(&s->hang_cmds) >= 0)
				s->forced_status = VREX_STATUS_BUSY;
			else if (atomic_dec_if_positive(&s->fail_cmds) >= 0 ||
				 vrex_sim_should_fail(s))
				s->forced_status = VREX_STATUS_ERROR |
						   ((code ? code : 5) << VREX_STATUS_ERRNO_SHIFT);
		}
		if (s->forced_status)
			return;
	}
	vrex_model_write(&s->model, off, val);
	if (off == VREX_REG_CMD && s->forging && val == VREX_CMD_LOOKUP_SIMILAR_BATCH)
		vrex_sim_forge_batch(s);
}

/* The SHIE table as the device holds it; the driver only sees its own view. */
static int vrex_sim_entries_show(struct seq_file *m, void *unused)
{
	struct vrex_sim *s = m->private;
	u32 i;

	/* Racy by design (no device lock here): a diagnostic snapshot. */
	seq_puts(m, "entry stream region frame block fingerprint\n");
	for (i = 0; i < s->model.shie.capacity; i++) {
		const struct vrex_shie_entry *e = &s->model.shie.e[i];

		if (e->valid)
			seq_printf(m, "%6u %6u %6u %6u %6u %016llx%016llx\n", i, e->stream,
				   e->region, e->frame, e->block, e->fp.w[1], e->fp.w[0]);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrex_sim_entries);

static bool vrex_sim_have_fault_attr = IS_ENABLED(CONFIG_FAULT_INJECTION_DEBUG_FS);

static void vrex_sim_debugfs_init(struct vrex_backend *be, struct dentry *d)
{
	struct vrex_sim *s = to_vrex_sim(be);

	debugfs_create_file("sim_entries", 0400, d, s, &vrex_sim_entries_fops);
	debugfs_create_atomic_t("fail_cmds", 0600, d, &s->fail_cmds);
	debugfs_create_atomic_t("hang_cmds", 0600, d, &s->hang_cmds);
	debugfs_create_u32("fail_cmd_op", 0600, d, &s->fail_cmd_op);
	debugfs_create_u32("fail_cmd_code", 0600, d, &s->fail_cmd_code);
	debugfs_create_atomic_t("forge_lookups", 0600, d, &s->forge_lookups);
	debugfs_create_u32("forge_block", 0600, d, &s->forge_block);
	debugfs_create_u32("forge_stream", 0600, d, &s->forge_stream);
	/* Tells tests whether "fail_cmd/" must be there. */
	debugfs_create_bool("fault_attr", 0400, d, &vrex_sim_have_fault_attr);
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	fault_create_debugfs_attr("fail_cmd", d, &s->fail_attr);
#endif
}

static void vrex_sim_free(struct vrex_sim *s)
{
	vfree(s->be.mem);
	kvfree(s->arena);
	kfree(s);
}

static void vrex_sim_release(struct vrex_backend *be)
{
	vrex_sim_free(to_vrex_sim(be));
}

static const struct vrex_backend_ops vrex_sim_ops = {
	.read = vrex_sim_read,
	.write = vrex_sim_write,
	.debugfs_init = vrex_sim_debugfs_init,
	.release = vrex_sim_release,
};

static void vrex_sim_kref_release(struct kref *ref)
{
	struct vrex_backend *be = container_of(ref, struct vrex_backend, ref);

	be->ops->release(be);
}

void vrex_sim_put(struct vrex_sim *sim)
{
	kref_put(&sim->be.ref, vrex_sim_kref_release);
}

struct vrex_sim *vrex_sim_create(u32 nbanks, u32 bank_size)
{
	struct vrex_model_config cfg;
	struct vrex_sim *s;
	size_t arena_size;
	int ret;

	if (!nbanks || nbanks > VREX_MAX_BANKS || !bank_size || !IS_ALIGNED(bank_size, PAGE_SIZE))
		return ERR_PTR(-EINVAL);
	vrex_model_default_config(&cfg);
	cfg.nbanks = nbanks;
	cfg.bank_size = bank_size;
	cfg.hw_version = vrex_sim_hw_version;
	if (nbanks % cfg.group_banks)
		cfg.group_banks = 1;
	arena_size = vrex_model_arena_size(&cfg);
	if (!arena_size)
		return ERR_PTR(-EINVAL);

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->arena = kvzalloc(arena_size, GFP_KERNEL);
	/* The banks, then room for lookup batches that no BO can take (vrex.ko stages there). */
	s->be.mem_size = (u64)nbanks * bank_size + VREX_STAGE_WINDOW;
	s->be.mem = vmalloc_user(s->be.mem_size);
	if (!s->arena || !s->be.mem) {
		ret = -ENOMEM;
		goto err_free;
	}
	/* The model's status codes are positive errnos. */
	ret = -vrex_model_init(&s->model, &cfg, s->arena, arena_size, s->be.mem,
			       s->be.mem_size);
	if (ret)
		goto err_free;
	s->be.ops = &vrex_sim_ops;
	s->be.owner = THIS_MODULE;
	kref_init(&s->be.ref);
#ifdef CONFIG_FAULT_INJECTION
	s->fail_attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
#endif
	return s;

err_free:
	vrex_sim_free(s);
	return ERR_PTR(ret);
}

int vrex_sim_device_add(struct vrex_sim_device *d, const char *name, u32 banks, u32 bank_size,
			s64 max_streams_reg)
{
	struct vrex_platform_data pd = {};
	struct platform_device_info info = {
		.name = VREX_PLATFORM_NAME,
		.id = PLATFORM_DEVID_AUTO,
		.data = &pd,
		.size_data = sizeof(pd),
		.dma_mask = DMA_BIT_MASK(64),
	};
	struct platform_device *pdev;
	struct vrex_sim *sim;

	sim = vrex_sim_create(banks, bank_size);
	if (IS_ERR(sim)) {
		pr_err("vrex_sim: %s: cannot simulate %u banks of %u bytes: %pe\n", name, banks,
		       bank_size, sim);
		return PTR_ERR(sim);
	}
	if (max_streams_reg >= 0) {
		sim->forge_max_streams = true;
		sim->bad_max_streams = (u32)max_streams_reg;
	}
	pd.backend = &sim->be;
	/*
	 * Registered like a board's device: vrex.ko binds it now if loaded,
	 * else when it loads (and logs why if probing fails).
	 */
	pdev = platform_device_register_full(&info);
	if (IS_ERR(pdev)) {
		vrex_sim_put(sim);
		return PTR_ERR(pdev);
	}
	d->sim = sim;
	d->pdev = pdev;
	return 0;
}

void vrex_sim_device_remove(struct vrex_sim_device *d)
{
	/* Unbinds vrex.ko, which keeps its own backend reference while files are open. */
	platform_device_unregister(d->pdev);
	vrex_sim_put(d->sim);
	d->pdev = NULL;
	d->sim = NULL;
}

/* modprobe vrex_sim also loads the driver that binds its devices. */
MODULE_SOFTDEP("post: vrex");
MODULE_DESCRIPTION("Simulated V-Rex devices (reference model)");
MODULE_LICENSE("GPL");
