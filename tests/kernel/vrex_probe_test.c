// SPDX-License-Identifier: MIT
/*
 * vrex probe against a device reporting limits it cannot have, run as root in
 * the QEMU guests. vrex_sim's configfs knob max_streams_reg makes a new
 * simulated device's MAX_STREAMS register read a chosen value: 0 must make
 * vrex.ko refuse to bind (a device with no stream slots would make
 * ida_alloc_max(max_streams - 1) wrap and hw_streams[] be written out of
 * bounds), while a value above the driver's table (65) binds clamped to 64.
 * A device that binds with 0 is driven to the out-of-bounds write (65 stream
 * creates) so a KASAN kernel shows it. Ends with "probe: N passed, M failed".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vrex_test_util.h"

#define CFS "/sys/kernel/config/vrex_sim"

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Creates simulated device @name whose MAX_STREAMS reads @reg; its platform device in @dev. */
static int sim_create(const char *name, const char *reg, char *dev, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), CFS "/%s", name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), CFS "/%s/max_streams_reg", name);
	if (vt_write_str(path, reg))
		return -EINVAL;
	snprintf(path, sizeof(path), CFS "/%s/enable", name);
	if (vt_write_str(path, "1"))
		return -EIO;
	snprintf(path, sizeof(path), CFS "/%s/dev_name", name);
	return read_str(path, dev, len);
}

static void sim_remove(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), CFS "/%s", name);
	rmdir(path);
}

/* 1 when vrex.ko is bound to platform device @dev (probing is synchronous for platform devices). */
static int bound(const char *dev)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/driver", dev);
	return !lstat(path, &st);
}

/* Opens the node of platform device @dev (accel or render minor); -1 if it has none. */
static int open_dev_node(const char *dev)
{
	static const char *const kinds[][3] = {
		{ "accel", "accel", "/dev/accel" },
		{ "drm", "renderD", "/dev/dri" },
	};
	char path[512];
	struct dirent *de;
	unsigned int k;
	DIR *d;

	for (k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "/sys/bus/platform/devices/%s/%s", dev, kinds[k][0]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			if (strncmp(de->d_name, kinds[k][1], strlen(kinds[k][1])))
				continue;
			snprintf(path, sizeof(path), "%s/%s", kinds[k][2], de->d_name);
			closedir(d);
			return open(path, O_RDWR | O_CLOEXEC);
		}
		closedir(d);
	}
	return -1;
}

static void test_zero_streams(void)
{
	char dev[128];
	uint32_t id;
	int r, fd, n, created = 0;

	r = sim_create("probe0", "0", dev, sizeof(dev));
	if (r) {
		vt_report(0, "MAX_STREAMS 0: create the simulated device (%d)", r);
		return;
	}
	vt_report(!bound(dev), "MAX_STREAMS 0: vrex.ko refuses to bind %s", dev);
	if (bound(dev)) {
		/* The defect itself: slots past hw_streams[63] (KASAN: slab-out-of-bounds). */
		fd = open_dev_node(dev);
		for (n = 0; fd >= 0 && n < 66; n++)
			created += !vt_stream_create(fd, 0, 0, &id);
		printf("probe: bound with 0 slots: %d of 66 stream creates succeeded\n", created);
		if (fd >= 0)
			close(fd);
	}
	sim_remove("probe0");
}

static void test_clamped_streams(void)
{
	struct drm_vrex_device_info info = { 0 };
	struct drm_vrex_query q = { .param = DRM_VREX_QUERY_DEVICE_INFO, .size = sizeof(info),
				    .ptr = (uintptr_t)&info };
	char dev[128];
	int r, fd;

	r = sim_create("probe1", "65", dev, sizeof(dev));
	if (r) {
		vt_report(0, "MAX_STREAMS 65: create the simulated device (%d)", r);
		return;
	}
	vt_report(bound(dev), "MAX_STREAMS 65: control: vrex.ko binds %s", dev);
	fd = open_dev_node(dev);
	r = fd >= 0 ? vt_ioctl(fd, DRM_IOCTL_VREX_QUERY, &q) : -ENODEV;
	vt_report(!r && info.max_streams == 64, "MAX_STREAMS 65: reported as the driver's 64 slots "
		  "(query %d, max_streams %u)", r, info.max_streams);
	if (fd >= 0)
		close(fd);
	sim_remove("probe1");
}

int main(void)
{
	struct stat st;

	if (stat(CFS, &st)) {
		printf("no %s\nprobe: 0 passed, 1 failed\n", CFS);
		return 1;
	}
	test_zero_streams();
	test_clamped_streams();
	return vt_finish("probe");
}
