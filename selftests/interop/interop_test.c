// SPDX-License-Identifier: GPL-2.0
/*
 * snpu and a real foreign driver: QEMU's virtio-gpu and Debian's
 * virtio-gpu DRM module (run_vm.sh's snpu-vm-gpu brings it up; scripts/vm
 * gives every guest the device).
 *
 * Fences: an snpu event's sync_file imported into a DRM syncobj
 * (DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE with IMPORT_SYNC_FILE) and waited on
 * with DRM_IOCTL_SYNCOBJ_WAIT; a syncobj's sync_file (HANDLE_TO_FD with
 * EXPORT_SYNC_FILE) as an snpu in-fence (SNPU_OP_FENCE_WAIT). virtio-gpu
 * has DRIVER_SYNCOBJ from Linux 6.6 ("drm/virtio: Support sync objects");
 * Debian 12's 6.1 (and the debug kernel, built from its source) has not,
 * and there every syncobj ioctl answers EOPNOTSUPP: the tests assert
 * that answer on those kernels, and the syncobj paths on the others.
 *
 * Permissions (snpu-vm-gpu, as Debian's udev rules): the render node
 * /dev/dri/renderD128 is 0666, the primary node /dev/dri/card0 0660
 * root:video. The syncobj tests also run as nobody on the render node.
 */
#include <poll.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/sync_file.h>

#include <drm/drm.h>

#include "snpu_test.h"

#include "kselftest_harness.h"

#define DRM_RENDER	"/dev/dri/renderD128"
#define DRM_CARD	"/dev/dri/card0"

/* ---- snpu side --------------------------------------------------------- */

static int export_fence(int fd, uint32_t event, int *out)
{
	struct snpu_event_export x = {
		.size = sizeof(x), .flags = SNPU_EXPORT_CLOEXEC,
		.handle = event, .fd = -1,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_EVENT_EXPORT, &x);

	if (!ret)
		*out = x.fd;
	return ret;
}

static struct snpu_task fence_wait(uint32_t stream, int fence_fd)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_FENCE_WAIT;
	t.stream = stream;
	t.fence.fd = fence_fd;
	return t;
}

/* SPIN of @ns (at most 1 s, the kernel's bound) then a record of @event. */
static int spin_and_record(int fd, uint32_t s, uint32_t event, uint64_t ns)
{
	struct snpu_task t[2] = {
		snpu_t_spin(s, ns, 1), snpu_t_record(s, event),
	};

	return snpu_submit(fd, t, 2, NULL);
}

/* Return: 1 when every task submitted to @s completed, 0 if not, -errno. */
static int stream_idle(int fd, uint32_t s)
{
	struct snpu_stream_query q;
	int ret = snpu_stream_query(fd, s, &q);

	if (ret)
		return ret;
	return q.completed == q.submitted;
}

/* poll(2) for POLLIN within @ms. Return: 1 readable, 0 not, -errno. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return -errno;
	return n == 1 && (p.revents & POLLIN);
}

/* SYNC_IOC_FILE_INFO of a one-fence sync_file. Return: 0 or -errno. */
static int fence_info(int fd, struct sync_file_info *info,
		      struct sync_fence_info *fi)
{
	memset(info, 0, sizeof(*info));
	memset(fi, 0, sizeof(*fi));
	info->num_fences = 1;
	info->sync_fence_info = (uintptr_t)fi;
	return ioctl(fd, SYNC_IOC_FILE_INFO, info) ? -errno : 0;
}

/* ---- DRM side ---------------------------------------------------------- */

static int drm_open(const char *node)
{
	int fd = open(node, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Return: the kernel's major * 100 + minor (601 for 6.1). */
static int kernel_version(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 100 + minor;
}

/*
 * Whether this kernel's virtio-gpu has DRIVER_SYNCOBJ: from Linux 6.6
 * (seen here: 6.1 has not, 6.12 and 7.x have).
 */
static bool virtio_gpu_has_syncobj(void)
{
	return kernel_version() >= 606;
}

static int syncobj_create(int fd, uint32_t flags, uint32_t *handle)
{
	struct drm_syncobj_create c = { .flags = flags };
	int ret = snpu_ioc(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static int syncobj_destroy(int fd, uint32_t handle)
{
	struct drm_syncobj_destroy d = { .handle = handle };

	return snpu_ioc(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

/* A sync_file's fence into the syncobj @handle. */
static int syncobj_import_sync_file(int fd, uint32_t handle, int sync_file)
{
	struct drm_syncobj_handle h = {
		.handle = handle, .fd = sync_file,
		.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE,
	};

	return snpu_ioc(fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &h);
}

/* The syncobj's fence as a new sync_file, in *@out. */
static int syncobj_export_sync_file(int fd, uint32_t handle, int *out)
{
	struct drm_syncobj_handle h = {
		.handle = handle, .fd = -1,
		.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE,
	};
	int ret = snpu_ioc(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h);

	if (!ret)
		*out = h.fd;
	return ret;
}

/* DRM_IOCTL_SYNCOBJ_WAIT on one syncobj until @rel_ns from now. */
static int syncobj_wait(int fd, uint32_t handle, int64_t rel_ns)
{
	struct drm_syncobj_wait w = {
		.handles = (uintptr_t)&handle, .count_handles = 1,
		/* Absolute CLOCK_MONOTONIC, drm_timeout_abs_to_jiffies(). */
		.timeout_nsec = (int64_t)snpu_now_ns() + rel_ns,
	};

	return snpu_ioc(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w);
}

/* ---- the foreign driver ------------------------------------------------ */

/* The nodes are virtio-gpu's, with snpu-vm-gpu's (Debian's) modes. */
TEST(virtio_gpu_nodes)
{
	char name[64] = "";
	struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
	struct stat st;
	int fd;

	ASSERT_EQ(0, stat(DRM_RENDER, &st))
		TH_LOG("no " DRM_RENDER ": run snpu-vm-gpu first");
	EXPECT_EQ(0666U, st.st_mode & 0777);
	ASSERT_EQ(0, stat(DRM_CARD, &st));
	EXPECT_EQ(0660U, st.st_mode & 0777);
	EXPECT_EQ(44U, st.st_gid);
	fd = drm_open(DRM_RENDER);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snpu_ioc(fd, DRM_IOCTL_VERSION, &v));
	EXPECT_STREQ("virtio_gpu", name);
	close(fd);
}

/* DRM_CAP_SYNCOBJ is what this kernel's virtio-gpu really has. */
TEST(syncobj_capability)
{
	struct drm_get_cap cap = { .capability = DRM_CAP_SYNCOBJ };
	int fd = drm_open(DRM_RENDER);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snpu_ioc(fd, DRM_IOCTL_GET_CAP, &cap));
	EXPECT_EQ(virtio_gpu_has_syncobj(), cap.value)
		TH_LOG("kernel %d.%02d", kernel_version() / 100,
		       kernel_version() % 100);
	close(fd);
}

/* ---- fences: snpu sync_file <-> DRM syncobj ---------------------------- */

FIXTURE(syncobj) {
	int fd, drm;
	uint32_t s, s2, e;
};

FIXTURE_SETUP(syncobj)
{
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s2));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->e));
	self->drm = drm_open(DRM_RENDER);
	ASSERT_LE(0, self->drm);
}

FIXTURE_TEARDOWN(syncobj)
{
	close(self->drm);
	close(self->fd);
}

/*
 * An snpu fence imported into a syncobj: SYNCOBJ_WAIT times out while a
 * SPIN runs, returns 0 once it completed. Without DRIVER_SYNCOBJ (6.1)
 * the syncobj ioctls answer EOPNOTSUPP, even with a valid sync_file.
 */
TEST_F(syncobj, snpu_fence_into_syncobj_wait)
{
	uint32_t h = 0;
	int f;

	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     500 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(self->fd, self->e, &f));
	if (!virtio_gpu_has_syncobj()) {
		EXPECT_EQ(-EOPNOTSUPP, syncobj_create(self->drm, 0, &h));
		EXPECT_EQ(-EOPNOTSUPP,
			  syncobj_import_sync_file(self->drm, 1, f));
		EXPECT_EQ(-EOPNOTSUPP, syncobj_wait(self->drm, 1, 0));
		close(f);
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
		return;
	}
	ASSERT_EQ(0, syncobj_create(self->drm, 0, &h));
	ASSERT_EQ(0, syncobj_import_sync_file(self->drm, h, f));
	/* The syncobj holds the fence: the sync_file may go. */
	close(f);
	EXPECT_EQ(-ETIME, syncobj_wait(self->drm, h, 0));
	EXPECT_EQ(0, stream_idle(self->fd, self->s));
	ASSERT_EQ(0, syncobj_wait(self->drm, h, 10 * NS_PER_SEC));
	EXPECT_EQ(1, stream_idle(self->fd, self->s));
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
}

/* A fence signalled with an error still signals the syncobj. */
TEST_F(syncobj, failed_work_signals_syncobj)
{
	struct snpu_task t[2] = {
		snpu_t_fail(self->s, 5), snpu_t_record(self->s, self->e),
	};
	uint32_t h = 0;
	int f;

	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, export_fence(self->fd, self->e, &f));
	if (!virtio_gpu_has_syncobj()) {
		EXPECT_EQ(-EOPNOTSUPP, syncobj_create(self->drm, 0, &h));
		close(f);
		return;
	}
	ASSERT_EQ(0, syncobj_create(self->drm, 0, &h));
	ASSERT_EQ(0, syncobj_import_sync_file(self->drm, h, f));
	EXPECT_EQ(0, syncobj_wait(self->drm, h, 10 * NS_PER_SEC));
	EXPECT_EQ(1, readable(f, 0));
	close(f);
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
}

/* Something that is not a sync_file: DRM refuses it (EINVAL). */
TEST_F(syncobj, import_not_a_sync_file)
{
	uint32_t h = 0;

	if (!virtio_gpu_has_syncobj()) {
		EXPECT_EQ(-EOPNOTSUPP,
			  syncobj_import_sync_file(self->drm, 1, self->fd));
		return;
	}
	ASSERT_EQ(0, syncobj_create(self->drm, 0, &h));
	EXPECT_EQ(-EINVAL, syncobj_import_sync_file(self->drm, h, self->fd));
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
}

/*
 * The other way: a syncobj's sync_file as an snpu in-fence. A syncobj
 * created signalled holds DRM's stub fence, a foreign fence ("stub"
 * driver): SNPU_OP_FENCE_WAIT takes it and the stream goes on.
 */
TEST_F(syncobj, drm_sync_file_as_snpu_in_fence)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	uint32_t h = 0;
	int f = -1;

	if (!virtio_gpu_has_syncobj()) {
		EXPECT_EQ(-EOPNOTSUPP,
			  syncobj_create(self->drm, DRM_SYNCOBJ_CREATE_SIGNALED,
					 &h));
		EXPECT_EQ(-EOPNOTSUPP,
			  syncobj_export_sync_file(self->drm, 1, &f));
		return;
	}
	ASSERT_EQ(0, syncobj_create(self->drm, DRM_SYNCOBJ_CREATE_SIGNALED,
				    &h));
	ASSERT_EQ(0, syncobj_export_sync_file(self->drm, h, &f));
	ASSERT_EQ(0, fence_info(f, &info, &fi));
	EXPECT_EQ(1, info.status);
	EXPECT_STRNE("snpu", fi.driver_name);
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(self->s2, f)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s2)));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s2, 10 * NS_PER_SEC,
				      NULL));
	close(f);
	/* An empty syncobj has no fence to export. */
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
	ASSERT_EQ(0, syncobj_create(self->drm, 0, &h));
	EXPECT_EQ(-EINVAL, syncobj_export_sync_file(self->drm, h, &f));
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
}

/*
 * A round trip: snpu fence -> syncobj -> DRM's sync_file -> snpu in-fence
 * of another stream, which waits while the first one's SPIN runs.
 */
TEST_F(syncobj, round_trip_pending_fence)
{
	uint32_t h = 0;
	int f, g = -1;

	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     500 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(self->fd, self->e, &f));
	if (!virtio_gpu_has_syncobj()) {
		EXPECT_EQ(-EOPNOTSUPP, syncobj_import_sync_file(self->drm, 1, f));
		EXPECT_EQ(-EOPNOTSUPP,
			  syncobj_export_sync_file(self->drm, 1, &g));
		close(f);
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
		return;
	}
	ASSERT_EQ(0, syncobj_create(self->drm, 0, &h));
	ASSERT_EQ(0, syncobj_import_sync_file(self->drm, h, f));
	close(f);
	ASSERT_EQ(0, syncobj_export_sync_file(self->drm, h, &g));
	EXPECT_EQ(0, readable(g, 0));
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(self->s2, g)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s2)));
	EXPECT_EQ(0, stream_idle(self->fd, self->s2));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s2, 10 * NS_PER_SEC,
				      NULL));
	/* The in-fence was the first stream's work: it is done too. */
	EXPECT_EQ(1, stream_idle(self->fd, self->s));
	EXPECT_EQ(1, readable(g, 0));
	close(g);
	EXPECT_EQ(0, syncobj_destroy(self->drm, h));
}

/*
 * Nobody: the render node is theirs to open, the primary node is not;
 * their own snpu fence goes through a syncobj of their own.
 */
TEST(unprivileged_syncobj)
{
	pid_t kid = fork();
	int status;

	ASSERT_LE(0, kid);
	if (!kid) {
		uint32_t s, e, h;
		int fd, drm, f;

		if (snpu_drop_to_nobody())
			_exit(10);
		if (drm_open(DRM_CARD) != -EACCES)
			_exit(11);
		drm = drm_open(DRM_RENDER);
		fd = snpu_open_dev();
		if (drm < 0 || fd < 0 || snpu_stream_create(fd, 0, &s) ||
		    snpu_event_create(fd, &e))
			_exit(12);
		if (spin_and_record(fd, s, e, 200 * NS_PER_MS) ||
		    export_fence(fd, e, &f))
			_exit(13);
		if (!virtio_gpu_has_syncobj()) {
			if (syncobj_create(drm, 0, &h) != -EOPNOTSUPP)
				_exit(14);
			_exit(snpu_stream_sync(fd, s, -1, NULL) ? 15 : 0);
		}
		if (syncobj_create(drm, 0, &h) ||
		    syncobj_import_sync_file(drm, h, f))
			_exit(16);
		if (syncobj_wait(drm, h, 0) != -ETIME)
			_exit(17);
		if (syncobj_wait(drm, h, 10 * NS_PER_SEC) ||
		    stream_idle(fd, s) != 1)
			_exit(18);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody's side failed at step %d", WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
