// SPDX-License-Identifier: GPL-2.0
/*
 * Fences (ABI 0.12): an event's capture exported as a sync_file
 * (SNPU_IOC_EVENT_EXPORT) with the kernel's sync_file behaviour (poll,
 * epoll, SYNC_IOC_MERGE, SYNC_IOC_FILE_INFO) and the capture's error as
 * the fence's; any sync_file as a stream wait (SNPU_OP_FENCE_WAIT), from
 * another file and another device; the errors; a file closed or a device
 * reset while a fence is held. Raw ioctls (common/snpu_test.h). Runs with
 * devices=2 (run_vm.sh's PARAMS_fence).
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <linux/sync_file.h>

#include "snpu_test.h"

#include "kselftest_harness.h"

#define SNPU_TEST_DEV1	"/dev/snpu1"
#define RESET_KNOB	"/sys/kernel/debug/snpu/snpu0/reset"
#define MODULE_REFCNT	"/sys/module/snpu/refcnt"

static int export_fence(int fd, uint32_t event, uint32_t flags, int *out)
{
	struct snpu_event_export x = {
		.size = sizeof(x), .flags = flags, .handle = event, .fd = -1,
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

/* poll(2) for POLLIN within @ms. Return: 1 readable, 0 not, -errno. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return -errno;
	return n == 1 && (p.revents & POLLIN);
}

/* SYNC_IOC_FILE_INFO with room for @n fence infos. Return: 0 or -errno. */
static int file_info(int fd, struct sync_file_info *info,
		     struct sync_fence_info *fences, unsigned int n)
{
	memset(info, 0, sizeof(*info));
	memset(fences, 0, n * sizeof(*fences));
	info->num_fences = n;
	info->sync_fence_info = (uintptr_t)fences;
	return ioctl(fd, SYNC_IOC_FILE_INFO, info) ? -errno : 0;
}

static long long read_ll(const char *path)
{
	char buf[32] = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] ? strtoll(buf, NULL, 10) : -1;
}

/*
 * A stream's work: SPINs of @ns in all (at most 1 s each, the kernel's
 * bound, so at most 60 s), then a record of @event.
 */
static int spin_and_record(int fd, uint32_t s, uint32_t event, uint64_t ns)
{
	struct snpu_task t[61];
	unsigned int n = 0;

	for (; ns; n++) {
		uint64_t step = ns > NS_PER_SEC ? NS_PER_SEC : ns;

		if (n == 60)
			return -E2BIG;
		t[n] = snpu_t_spin(s, step, 1);
		ns -= step;
	}
	t[n++] = snpu_t_record(s, event);
	return snpu_submit(fd, t, n, NULL);
}

FIXTURE(fence) {
	int fd;
	uint32_t s, e;
};

FIXTURE_SETUP(fence)
{
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->e));
}

FIXTURE_TEARDOWN(fence)
{
	close(self->fd);
}

/* GET_INFO says 0.12 or later, the header's, and SNPU_CAP_FENCES. */
TEST_F(fence, abi_and_capability)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_LE(12U, info.abi_minor);
	EXPECT_EQ((uint32_t)SNPU_ABI_MINOR, info.abi_minor);
	EXPECT_NE(0ULL, info.caps & SNPU_CAP_FENCES);
}

/* A pending capture's fence is not readable until the work completes. */
TEST_F(fence, poll_readable_after_completion)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	int f;

	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     300 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	EXPECT_EQ(0, readable(f, 0));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(0, info.status);
	/* Names while pending: from 7.x a signalled fence is detached. */
	EXPECT_STREQ("snpu", fi.driver_name);
	EXPECT_STREQ("snpu0", fi.obj_name);
	EXPECT_EQ(1, readable(f, 10000));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(1, info.status);
	EXPECT_EQ(1U, info.num_fences);
	EXPECT_EQ(1, fi.status);
	EXPECT_NE(0ULL, fi.timestamp_ns);
	close(f);
}

/* epoll reports the fd once, when the fence signals. */
TEST_F(fence, epoll_wakes_on_signal)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int f, ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, ep);
	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     200 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 10000));
	EXPECT_NE(0U, out.events & EPOLLIN);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, NULL));
	close(ep);
	close(f);
}

/* A capture already complete exports a signalled fence. */
TEST_F(fence, complete_capture_is_signalled)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	int f;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, -1, NULL));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	EXPECT_EQ(1, readable(f, 0));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(1, info.status);
	close(f);
}

/* Two exports of one pending capture share its fence. */
TEST_F(fence, exports_of_one_capture_share_the_fence)
{
	struct sync_file_info info;
	struct sync_fence_info a, b;
	int f1, f2;

	/* A second, so that both exports find it pending. */
	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e, NS_PER_SEC));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f1));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f2));
	EXPECT_EQ(1, readable(f2, 10000));
	EXPECT_EQ(1, readable(f1, 0));
	ASSERT_EQ(0, file_info(f1, &info, &a, 1));
	ASSERT_EQ(0, file_info(f2, &info, &b, 1));
	EXPECT_EQ(a.timestamp_ns, b.timestamp_ns);
	close(f1);
	close(f2);
}

/* The fence's error is the failed task's, whether pending or not. */
TEST_F(fence, fence_error_is_task_error)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	struct snpu_task t[3] = {
		snpu_t_spin(self->s, 100 * NS_PER_MS, 1),
		snpu_t_fail(self->s, EIO),
		snpu_t_record(self->s, self->e),
	};
	int f, g;

	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	EXPECT_EQ(1, readable(f, 10000));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(-EIO, info.status);
	EXPECT_EQ(-EIO, fi.status);
	/* Exported after the fact: the same error. */
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &g));
	ASSERT_EQ(0, file_info(g, &info, &fi, 1));
	EXPECT_EQ(-EIO, info.status);
	close(f);
	close(g);
}

/* A FAIL whose own error is the fence's (not a following cancel). */
TEST_F(fence, fence_error_of_custom_errno)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	struct snpu_task t[2] = {
		snpu_t_fail(self->s, ENOSPC), snpu_t_record(self->s, self->e),
	};
	int f;

	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	EXPECT_EQ(1, readable(f, 10000));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(-ENOSPC, info.status);
	close(f);
}

/* SYNC_IOC_MERGE of two streams' fences signals when both did. */
TEST_F(fence, merge_and_file_info)
{
	struct sync_merge_data m = { .name = "both" };
	struct sync_fence_info fi[2];
	struct sync_file_info info;
	uint32_t s2, e2;
	int f1, f2;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	/*
	 * Both pending when merged: a merge leaves signalled fences out.
	 * Seconds, so that a loaded machine still merges in time.
	 */
	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e, NS_PER_SEC));
	ASSERT_EQ(0, spin_and_record(self->fd, s2, e2, 2 * NS_PER_SEC));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f1));
	ASSERT_EQ(0, export_fence(self->fd, e2, 0, &f2));
	m.fd2 = f2;
	ASSERT_EQ(0, ioctl(f1, SYNC_IOC_MERGE, &m));
	ASSERT_LE(0, m.fence);
	ASSERT_EQ(0, file_info(m.fence, &info, fi, 2));
	EXPECT_STREQ("both", info.name);
	EXPECT_EQ(2U, info.num_fences);
	EXPECT_STREQ("snpu", fi[0].driver_name);
	EXPECT_STREQ("snpu", fi[1].driver_name);
	EXPECT_EQ(1, readable(f1, 10000));
	EXPECT_EQ(1, readable(m.fence, 10000));
	EXPECT_EQ(1, readable(f2, 0));
	ASSERT_EQ(0, file_info(m.fence, &info, fi, 2));
	EXPECT_EQ(1, info.status);
	close(m.fence);
	close(f1);
	close(f2);
}

/* Export with SNPU_EXPORT_CLOEXEC sets FD_CLOEXEC, without it not. */
TEST_F(fence, export_cloexec_flag)
{
	int f, g;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	ASSERT_EQ(0, export_fence(self->fd, self->e, SNPU_EXPORT_CLOEXEC, &f));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &g));
	EXPECT_EQ(FD_CLOEXEC, fcntl(f, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(g, F_GETFD) & FD_CLOEXEC);
	close(f);
	close(g);
}

/* EXPORT of no event, a never-recorded one, bad flags or reserved. */
TEST_F(fence, export_errors)
{
	struct snpu_event_export x = { .size = sizeof(x), .handle = self->e };
	int f;

	EXPECT_EQ(-ENOENT, export_fence(self->fd, 9999, 0, &f));
	EXPECT_EQ(-ENOENT, export_fence(self->fd, self->s, 0, &f));
	EXPECT_EQ(-EINVAL, export_fence(self->fd, self->e, 0, &f));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	EXPECT_EQ(-EINVAL, export_fence(self->fd, self->e, 2, &f));
	x.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_EXPORT, &x));
	x.reserved[1] = 0;
	x.size = 16;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_EXPORT, &x));
}

/*
 * Another file's fence as a stream wait: the waiting stream's record
 * completes after the exported capture.
 */
static void wait_across(struct __test_metadata *_metadata, int fd,
			uint32_t s, uint32_t e, const char *other_dev)
{
	struct snpu_event_query qa, qb;
	int other = open(other_dev, O_RDWR | O_CLOEXEC);
	uint32_t os, oe;
	int f;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, snpu_stream_create(other, 0, &os));
	ASSERT_EQ(0, snpu_event_create(other, &oe));
	ASSERT_EQ(0, spin_and_record(other, os, oe, 200 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(other, oe, SNPU_EXPORT_CLOEXEC, &f));
	ASSERT_EQ(0, snpu_submit1(fd, fence_wait(s, f)));
	/* The submit took the fence: the fd may go. */
	close(f);
	ASSERT_EQ(0, snpu_submit1(fd, snpu_t_record(s, e)));
	ASSERT_EQ(0, snpu_stream_sync(fd, s, 10 * NS_PER_SEC, NULL));
	ASSERT_EQ(0, snpu_event_query(other, oe, &qa));
	ASSERT_EQ(0, snpu_event_query(fd, e, &qb));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, qa.state);
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, qb.state);
	EXPECT_EQ(0, qb.error);
	EXPECT_GE(qb.time_ns, qa.time_ns);
	close(other);
}

TEST_F(fence, wait_for_another_file)
{
	wait_across(_metadata, self->fd, self->s, self->e, SNPU_TEST_DEV);
}

TEST_F(fence, wait_for_another_device)
{
	wait_across(_metadata, self->fd, self->s, self->e, SNPU_TEST_DEV1);
}

/* A fence of this file's own stream, waited for on another stream. */
TEST_F(fence, wait_for_own_fence)
{
	struct snpu_event_query q;
	uint32_t s2, e2;
	int f;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     100 * NS_PER_MS));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(s2, f)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(s2, e2)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s2, 10 * NS_PER_SEC, NULL));
	EXPECT_EQ(1, readable(f, 0));
	ASSERT_EQ(0, snpu_event_query(self->fd, e2, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, q.state);
	close(f);
}

/* A signalled fence is no wait at all. */
TEST_F(fence, wait_for_signalled_fence)
{
	int32_t err = 1;
	int f;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, -1, NULL));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(self->s, f)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	close(f);
}

/* A fence with an error fails the waiting task and its stream. */
TEST_F(fence, wait_for_failed_fence_fails_stream)
{
	int other = snpu_open_dev();
	struct snpu_task t[2];
	int32_t err = 0;
	uint32_t os, oe;
	int f;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, snpu_stream_create(other, 0, &os));
	ASSERT_EQ(0, snpu_event_create(other, &oe));
	t[0] = snpu_t_fail(os, EDOM);
	t[1] = snpu_t_record(os, oe);
	ASSERT_EQ(0, snpu_submit(other, t, 2, NULL));
	ASSERT_EQ(0, export_fence(other, oe, 0, &f));
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(self->s, f)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(-EDOM, err);
	/* Sticky: the stream refuses work until reset. */
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	close(f);
	close(other);
}

/* FENCE_WAIT of an fd that is no sync_file, no fd, or a bad field. */
TEST_F(fence, wait_bad_fd)
{
	struct snpu_task t = fence_wait(self->s, 0);
	int p[2];

	ASSERT_EQ(0, pipe(p));
	t.fence.fd = p[0];
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, t));
	t.fence.fd = self->fd;
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, t));
	t.fence.fd = -1;
	EXPECT_EQ(-EBADF, snpu_submit1(self->fd, t));
	close(p[1]);
	t.fence.fd = p[1];
	EXPECT_EQ(-EBADF, snpu_submit1(self->fd, t));
	t.fence.fd = p[0];
	t.fence.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, t));
	close(p[0]);
	/* Nothing was queued. */
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, NULL));
}

/*
 * A file closed while its fence is held: the fence signals with
 * -ECANCELED, the module stays referenced until the fd closes, and the
 * fence is then freed (the module's reference count comes back).
 */
TEST_F(fence, file_closed_signals_with_error)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	int other = snpu_open_dev();
	long long ref0, ref1, ref2;
	uint32_t os, oe;
	int f;

	ASSERT_LE(0, other);
	ref0 = read_ll(MODULE_REFCNT);
	ASSERT_EQ(0, snpu_stream_create(other, 0, &os));
	ASSERT_EQ(0, snpu_event_create(other, &oe));
	ASSERT_EQ(0, spin_and_record(other, os, oe, 60 * NS_PER_SEC));
	ASSERT_EQ(0, export_fence(other, oe, 0, &f));
	EXPECT_EQ(0, readable(f, 0));
	close(other);
	EXPECT_EQ(1, readable(f, 10000));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(-ECANCELED, info.status);
	/* The file is gone, the fence holds the module. */
	ref1 = read_ll(MODULE_REFCNT);
	EXPECT_EQ(ref0, ref1);
	close(f);
	/* The fence is freed after an RCU grace period. */
	usleep(200000);
	ref2 = read_ll(MODULE_REFCNT);
	EXPECT_EQ(ref0 - 1, ref2);
}

/* A file closed while its stream waits for a fence that never comes. */
TEST_F(fence, file_closed_while_waiting)
{
	int other = snpu_open_dev(), waiter = snpu_open_dev();
	uint64_t t0 = snpu_now_ns();
	uint32_t os, oe, ws;
	int f;

	ASSERT_LE(0, other);
	ASSERT_LE(0, waiter);
	ASSERT_EQ(0, snpu_stream_create(other, 0, &os));
	ASSERT_EQ(0, snpu_event_create(other, &oe));
	ASSERT_EQ(0, snpu_stream_create(waiter, 0, &ws));
	ASSERT_EQ(0, spin_and_record(other, os, oe, 60 * NS_PER_SEC));
	ASSERT_EQ(0, export_fence(other, oe, 0, &f));
	ASSERT_EQ(0, snpu_submit1(waiter, fence_wait(ws, f)));
	ASSERT_EQ(0, snpu_submit1(waiter, snpu_t_nop(ws)));
	/* Close returns at once: the wait is cancelled, not waited for. */
	close(waiter);
	EXPECT_LT(snpu_now_ns() - t0, (uint64_t)30 * NS_PER_SEC);
	EXPECT_EQ(0, readable(f, 0));
	close(other);
	EXPECT_EQ(1, readable(f, 10000));
	close(f);
}

/* An aborted stream stops waiting for its fence. */
TEST_F(fence, abort_cancels_wait)
{
	int other = snpu_open_dev();
	uint32_t os, oe;
	int32_t err = 0;
	int f;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, snpu_stream_create(other, 0, &os));
	ASSERT_EQ(0, snpu_event_create(other, &oe));
	ASSERT_EQ(0, spin_and_record(other, os, oe, 60 * NS_PER_SEC));
	ASSERT_EQ(0, export_fence(other, oe, 0, &f));
	ASSERT_EQ(0, snpu_submit1(self->fd, fence_wait(self->s, f)));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 10 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(-ECANCELED, err);
	EXPECT_EQ(0, readable(f, 0));
	close(other);
	close(f);
}

/* A device reset fails a pending capture's fence with -EIO. */
TEST_F(fence, device_reset_signals_eio)
{
	struct sync_file_info info;
	struct sync_fence_info fi;
	int f, knob;

	if (access(RESET_KNOB, W_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	ASSERT_EQ(0, spin_and_record(self->fd, self->s, self->e,
				     60 * NS_PER_SEC));
	ASSERT_EQ(0, export_fence(self->fd, self->e, 0, &f));
	knob = open(RESET_KNOB, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, knob);
	ASSERT_EQ(1, write(knob, "1", 1));
	close(knob);
	EXPECT_EQ(1, readable(f, 10000));
	ASSERT_EQ(0, file_info(f, &info, &fi, 1));
	EXPECT_EQ(-EIO, info.status);
	close(f);
}

/* Nobody exports, waits for and inspects its own fence. */
TEST_F(fence, unprivileged_export_and_wait)
{
	pid_t kid = fork();
	int status;

	ASSERT_LE(0, kid);
	if (!kid) {
		struct sync_file_info info;
		struct sync_fence_info fi;
		uint32_t s, e, s2;
		int fd, f;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		fd = snpu_open_dev();
		if (fd < 0 || snpu_stream_create(fd, 0, &s) ||
		    snpu_stream_create(fd, 0, &s2) ||
		    snpu_event_create(fd, &e))
			_exit(11);
		if (spin_and_record(fd, s, e, 50 * NS_PER_MS) ||
		    export_fence(fd, e, SNPU_EXPORT_CLOEXEC, &f))
			_exit(12);
		if (snpu_submit1(fd, fence_wait(s2, f)) ||
		    snpu_stream_sync(fd, s2, 10 * NS_PER_SEC, NULL))
			_exit(13);
		if (readable(f, 0) != 1 || file_info(f, &info, &fi, 1) ||
		    info.status != 1)
			_exit(14);
		close(f);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("nobody's side failed at step %d", WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
