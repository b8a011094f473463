// SPDX-License-Identifier: MIT
/*
 * Real hot-unplug of the V-Rex PCIe function (QEMU's device model) under a
 * busy process: scripts/qemu-test.sh's "unplug" line boots a guest with the
 * function in a PCIe root port (a hot-plug slot) and a monitor socket. This
 * program sets up, asks the host for `device_del` (a "@@VREX UNPLUG-REQUEST"
 * line on the console), waits until the kernel removed the device, checks
 * what the process sees, asks for `device_add` ("@@VREX REPLUG-REQUEST") and
 * checks that the new device works.
 *
 * Held across the unplug: a file with a stream, a BO mapping (BAR memory), a
 * second file and a thread submitting frames in a loop (a command is in
 * flight or queued at any time), a dma-buf of the simulated device
 * (vrex_sim.ko) imported into the PCI device, and two dma-bufs of the PCI
 * device, each mapped through its dma-buf file: one whose GEM handle is still
 * open, one whose handle was closed after the export (the dma-buf alone keeps
 * that BO), the first also imported by the simulated device (an importer
 * attached to the unplugged exporter). The PCI device's BOs are BAR memory
 * without struct pages: an importer can attach but never map or vmap them
 * (EOPNOTSUPP, kernel/vrex_gem.c), so there is no importer's kernel mapping
 * to outlive the unplug.
 *
 * Expected: the submitting thread ends with ENODEV and saw no other error;
 * ioctls on the open files fail with ENODEV; every user mapping (the BO's,
 * both dma-bufs') raises SIGBUS; a new mmap of a dma-buf is refused; the
 * importer detaches cleanly; closing everything afterwards is clean; after
 * device_add a node appears again and a new open, stream, BO and frame work.
 * The kernel log is checked for splats by the guest's init
 * (scripts/qemu/init.sh; on the debug kernel KASAN, lockdep and kmemleak).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vrex_test_util.h"

/* Reports one case; returns whether it passed. */
static int check(const char *msg, int ok)
{
	vt_report(ok, "%s", msg);
	return ok;
}

#define CHECK(msg, cond) check((msg), !!(cond))
#define BO_SIZE 65536u

/* The first vrex node whose device sits on @bus ("pci" or "platform"), opened; -1 if none. */
static int open_on_bus(const char *bus, char *sysdev, size_t len)
{
	static const char *const fmts[] = { "/dev/accel/accel%d", "/dev/dri/renderD%d" };
	char node[64], link[PATH_MAX], sub[PATH_MAX];
	struct drm_version v;
	char name[16];
	unsigned int f;
	struct stat st;
	int i, fd;
	ssize_t n;

	for (f = 0; f < 2; f++) {
		for (i = 0; i < 8; i++) {
			snprintf(node, sizeof(node), fmts[f], f ? 128 + i : i);
			fd = open(node, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				continue;
			memset(&v, 0, sizeof(v));
			memset(name, 0, sizeof(name));
			v.name = name;
			v.name_len = sizeof(name) - 1;
			if (fstat(fd, &st) || ioctl(fd, DRM_IOCTL_VERSION, &v) || strcmp(name, "vrex")) {
				close(fd);
				continue;
			}
			snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device/subsystem",
				 major(st.st_rdev), minor(st.st_rdev));
			n = readlink(link, sub, sizeof(sub) - 1);
			if (n > 0) {
				sub[n] = 0;
				if (!strcmp(strrchr(sub, '/') + 1, bus)) {
					snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device",
						 major(st.st_rdev), minor(st.st_rdev));
					if (realpath(link, sysdev) || len == 0)
						return fd;
				}
			}
			close(fd);
		}
	}
	return -1;
}

static int faults_on_read(volatile uint8_t *p)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(p[0] == 0x5a ? 0 : 1);
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS;
}

/* Waits until @path exists (@want 1) or not (0); 1 on time. */
static int wait_path(const char *path, int want, int seconds)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int i;

	for (i = 0; i < seconds * 50; i++) {
		if ((access(path, F_OK) == 0) == want)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

struct submitter {
	int fd;
	uint32_t stream, luma;
	atomic_int stop;
	long ok;
	int last_err;		/* errno of the first failure */
	int other_errors;	/* failures other than ENODEV */
};

static void *submit_loop(void *arg)
{
	struct submitter *s = arg;
	int r;

	while (!atomic_load(&s->stop)) {
		r = vt_frame_submit(s->fd, s->stream, s->luma, 0, 0, NULL);
		if (!r) {
			s->ok++;
			continue;
		}
		if (!s->last_err)
			s->last_err = -r;
		if (r != -ENODEV)
			s->other_errors++;
		if (r == -ENODEV)
			break;
	}
	return NULL;
}

/* A new BO of @fd exported as a dma-buf; the dma-buf fd, -1 on failure. */
static int export_new_bo(int fd, uint32_t *handle)
{
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR };

	if (vt_bo_create(fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, handle, NULL))
		return -1;
	ph.handle = *handle;
	return vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph) ? -1 : ph.fd;
}

/* A shared mapping of a dma-buf's first page, written with @val; NULL on failure. */
static volatile uint8_t *map_dmabuf(int buf_fd, uint8_t val)
{
	uint8_t *m = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, buf_fd, 0);

	if (m == MAP_FAILED)
		return NULL;
	m[0] = val;
	return m;
}

/* A dma-buf of the simulated device's BO, imported into @fd; the handle, 0 on failure. */
static uint32_t import_from_sim(int fd, int *sim_fd, int *buf_fd)
{
	struct drm_prime_handle exp = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_prime_handle imp = { 0 };
	char sysdev[PATH_MAX];
	uint32_t h;

	*sim_fd = open_on_bus("platform", sysdev, sizeof(sysdev));
	if (*sim_fd < 0 || vt_bo_create(*sim_fd, BO_SIZE, 1, 0, &h, NULL))
		return 0;
	exp.handle = h;
	if (vt_ioctl(*sim_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &exp))
		return 0;
	*buf_fd = exp.fd;
	imp.fd = exp.fd;
	if (vt_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp))
		return 0;
	return imp.handle;
}

int main(void)
{
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR };
	char sysdev[PATH_MAX] = "", sysdev2[PATH_MAX];
	struct submitter sub = { 0 };
	int fd, fd2, sim_fd = -1, buf_fd = -1, exp_fd, r;
	uint32_t stream, bo, imported, bo2, sim_imported = 0;
	volatile uint8_t *dm_open = NULL, *dm_closed = NULL;
	int buf2_fd = -1;
	pthread_t thr;
	uint8_t *p;
	long before;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open_on_bus("pci", sysdev, sizeof(sysdev));
	if (!CHECK("setup: a vrex node on the PCI bus", fd >= 0))
		return vt_finish("hotunplug");
	printf("PCI device %s\n", sysdev);
	fd2 = open_on_bus("pci", sysdev2, sizeof(sysdev2));
	if (!CHECK("setup: stream, BO, mapping, second file",
		   fd2 >= 0 && !vt_stream_create(fd, 0, 0, &stream) &&
		   !vt_bo_create(fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, &bo, NULL) &&
		   (p = vt_bo_map(fd, bo, BO_SIZE)) != NULL))
		return vt_finish("hotunplug");
	memset(p, 0x5a, VT_FRAME_W * VT_FRAME_H);
	CHECK("setup: BO mapping readable", !faults_on_read(p));
	/* BAR memory: export may succeed (its mapping for an importer is refused). */
	ph.handle = bo;
	r = vt_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);
	CHECK("setup: export of a BAR BO succeeds or is refused with EOPNOTSUPP",
	      !r || r == -EOPNOTSUPP);
	exp_fd = r ? -1 : ph.fd;
	imported = import_from_sim(fd, &sim_fd, &buf_fd);
	CHECK("setup: a dma-buf of vrex_sim's device imported into the PCI device", imported);
	if (exp_fd >= 0) {
		struct drm_prime_handle imp = { .fd = exp_fd };

		dm_open = map_dmabuf(exp_fd, 0x5b);
		CHECK("setup: the exported dma-buf (handle open) maps and reads back",
		      dm_open && !faults_on_read(dm_open) && dm_open[0] == 0x5b);
		r = sim_fd < 0 ? -EBADF : vt_ioctl(sim_fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &imp);
		vt_report(!r, "setup: vrex_sim's device imports the PCI device's dma-buf (an attached "
			  "importer; got %d)", r);
		sim_imported = r ? 0 : imp.handle;
		buf2_fd = export_new_bo(fd, &bo2);
		r = buf2_fd < 0 ? -1 : vt_gem_close(fd, bo2);
		dm_closed = r ? NULL : map_dmabuf(buf2_fd, 0x5c);
		CHECK("setup: a dma-buf whose GEM handle is closed maps and reads back",
		      dm_closed && !faults_on_read(dm_closed) && dm_closed[0] == 0x5c);
	}

	sub.fd = fd2;
	sub.luma = 0;
	r = vt_stream_create(fd2, 0, 0, &sub.stream) ||
	    vt_bo_create(fd2, BO_SIZE, 2, DRM_VREX_BO_STAGING, &sub.luma, NULL);
	if (!CHECK("setup: submitter's stream and luma BO", !r) ||
	    !CHECK("setup: submitter thread", !pthread_create(&thr, NULL, submit_loop, &sub)))
		return vt_finish("hotunplug");
	while (sub.ok < 20 && !sub.last_err)
		usleep(1000);
	CHECK("frames complete before the unplug (MSI completion)", sub.ok >= 20 && !sub.last_err);

	/* The host sees this line and sends device_del. */
	printf("@@VREX UNPLUG-REQUEST\n");
	before = sub.ok;
	r = wait_path(sysdev, 0, 60);
	CHECK("device_del: the kernel removed the PCI device within 60 s", r);
	if (!r)
		return vt_finish("hotunplug");
	pthread_join(thr, NULL);
	printf("submitter: %ld frames, %ld while the unplug was pending, then errno %d\n", sub.ok,
	       sub.ok - before, sub.last_err);
	CHECK("in-flight submitter ends with ENODEV, no other error",
	      sub.last_err == ENODEV && !sub.other_errors);
	CHECK("ioctl after unplug: stream create fails with ENODEV",
	      vt_stream_create(fd, 0, 0, &stream) == -ENODEV);
	CHECK("ioctl after unplug: BO create fails with ENODEV",
	      vt_bo_create(fd, BO_SIZE, 1, 0, &bo, NULL) == -ENODEV);
	CHECK("BO mapping after unplug: SIGBUS", faults_on_read(p));
	CHECK("munmap after unplug", !munmap(p, BO_SIZE));
	if (dm_open) {
		CHECK("dma-buf mapping (handle open) after unplug: SIGBUS", faults_on_read(dm_open));
		CHECK("munmap of the dma-buf mapping (handle open)",
		      !munmap((void *)dm_open, BO_SIZE));
	}
	if (dm_closed) {
		CHECK("dma-buf mapping (handle closed) after unplug: SIGBUS",
		      faults_on_read(dm_closed));
		CHECK("munmap of the dma-buf mapping (handle closed)",
		      !munmap((void *)dm_closed, BO_SIZE));
	}
	if (buf2_fd >= 0) {
		void *m = mmap(NULL, BO_SIZE, PROT_READ, MAP_SHARED, buf2_fd, 0);

		CHECK("mmap of the handle-less dma-buf after unplug is refused", m == MAP_FAILED);
		if (m != MAP_FAILED)
			munmap(m, BO_SIZE);
		CHECK("the handle-less dma-buf closes after unplug (frees its BO)", !close(buf2_fd));
	}
	if (sim_imported)
		CHECK("the importer (vrex_sim) detaches from the unplugged exporter: GEM_CLOSE",
		      !vt_gem_close(sim_fd, sim_imported));
	if (imported)
		CHECK("GEM_CLOSE of the imported handle after unplug: ENODEV (close(fd) frees it)",
		      vt_gem_close(fd, imported) == -ENODEV);
	if (exp_fd >= 0) {
		void *m = mmap(NULL, BO_SIZE, PROT_READ, MAP_SHARED, exp_fd, 0);

		CHECK("mmap of the exported dma-buf after unplug is refused", m == MAP_FAILED);
		if (m != MAP_FAILED)
			munmap(m, BO_SIZE);
		CHECK("the exported dma-buf closes after unplug", !close(exp_fd));
	}
	CHECK("close of both files after unplug", !close(fd2) && !close(fd));
	if (buf_fd >= 0)
		close(buf_fd);
	if (sim_fd >= 0)
		CHECK("the exporter (vrex_sim) is unaffected: stream create",
		      !vt_stream_create(sim_fd, 0, 0, &stream) && !vt_stream_destroy(sim_fd, stream));

	/* The host sees this line and sends device_add. */
	printf("@@VREX REPLUG-REQUEST\n");
	fd = -1;
	for (r = 0; r < 3000 && fd < 0; r++) {
		fd = open_on_bus("pci", sysdev, sizeof(sysdev));
		if (fd < 0)
			usleep(20000);
	}
	if (CHECK("device_add: a vrex node on the PCI bus again within 60 s (new open)", fd >= 0)) {
		printf("PCI device %s\n", sysdev);
		r = vt_stream_create(fd, 0, 0, &stream) ||
		    vt_bo_create(fd, BO_SIZE, 1, DRM_VREX_BO_STAGING, &bo, NULL);
		CHECK("after rebind: stream and BO", !r);
		p = r ? NULL : vt_bo_map(fd, bo, BO_SIZE);
		if (p) {
			memset(p, 0x11, VT_FRAME_W * VT_FRAME_H);
			CHECK("after rebind: a frame completes", !vt_frame_submit(fd, stream, bo, 0, 0, NULL));
			munmap(p, BO_SIZE);
		}
		close(fd);
	}
	if (sim_fd >= 0)
		close(sim_fd);
	return vt_finish("hotunplug");
}
