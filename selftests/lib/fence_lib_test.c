// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu's fence calls (LIBSNPU_0.12, ABI 0.12): snpu_event_export_fence(),
 * snpu_stream_wait_fence() and snpu_prep_fence_wait(), on two files of
 * device 0, and their argument checks.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NS_PER_MS	1000000LL

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static int fence_status(int fd)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	return ioctl(fd, SYNC_IOC_FILE_INFO, &info) ? -errno : info.status;
}

FIXTURE(fence) {
	struct snpu_device *a, *b;
	uint32_t sa, sb, ea, eb;
};

FIXTURE_SETUP(fence)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->a));
	ASSERT_EQ(0, snpu_open(0, 0, &self->b));
	ASSERT_EQ(0, snpu_stream_create(self->a, SNPU_PRIO_NORMAL, 0,
					&self->sa));
	ASSERT_EQ(0, snpu_stream_create(self->b, SNPU_PRIO_NORMAL, 0,
					&self->sb));
	ASSERT_EQ(0, snpu_event_create(self->a, &self->ea));
	ASSERT_EQ(0, snpu_event_create(self->b, &self->eb));
}

FIXTURE_TEARDOWN(fence)
{
	snpu_close(self->a);
	snpu_close(self->b);
}

/* A's capture gates B's stream; the fd polls readable after. */
TEST_F(fence, export_then_wait_in_another_file)
{
	struct snpu_kernel_arg spin = { .value = 200 * NS_PER_MS };
	struct snpu_event_query qa, qb;
	int fd = -1;

	ASSERT_EQ(0, snpu_launch(self->a, self->sa, SNPU_KERNEL_SPIN, 1,
				 &spin, 1));
	ASSERT_EQ(0, snpu_event_record(self->a, self->ea, self->sa));
	ASSERT_EQ(0, snpu_event_export_fence(self->a, self->ea,
					     SNPU_EXPORT_CLOEXEC, &fd));
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, readable(fd, 0));
	ASSERT_EQ(0, snpu_stream_wait_fence(self->b, self->sb, fd));
	ASSERT_EQ(0, snpu_event_record(self->b, self->eb, self->sb));
	ASSERT_EQ(0, snpu_stream_synchronize(self->b, self->sb, -1));
	EXPECT_EQ(1, readable(fd, 0));
	EXPECT_EQ(1, fence_status(fd));
	ASSERT_EQ(0, snpu_event_query(self->a, self->ea, &qa));
	ASSERT_EQ(0, snpu_event_query(self->b, self->eb, &qb));
	EXPECT_GE(qb.time_ns, qa.time_ns);
	close(fd);
}

/* snpu_prep_fence_wait() in a batch, and a failed fence failing B. */
TEST_F(fence, prep_in_batch_and_failed_fence)
{
	struct snpu_kernel_arg fail = { .value = EIO };
	struct snpu_task t[2];
	int fd;

	/* One batch: the FAIL may fail the stream before a second submit. */
	ASSERT_EQ(0, snpu_prep_launch(&t[0], self->sa, SNPU_KERNEL_FAIL, 1,
				      &fail, 1));
	snpu_prep_event_record(&t[1], self->sa, self->ea);
	ASSERT_EQ(0, snpu_submit(self->a, t, 2, NULL));
	ASSERT_EQ(0, snpu_event_export_fence(self->a, self->ea, 0, &fd));
	EXPECT_EQ(1, readable(fd, 10000));
	EXPECT_EQ(-EIO, fence_status(fd));
	snpu_prep_fence_wait(&t[0], self->sb, fd);
	snpu_prep_event_record(&t[1], self->sb, self->eb);
	ASSERT_EQ(0, snpu_submit(self->b, t, 2, NULL));
	EXPECT_EQ(-EIO, snpu_stream_synchronize(self->b, self->sb, -1));
	close(fd);
}

/* The argument checks, and the kernel's errors passed through. */
TEST_F(fence, errors)
{
	int fd = -1, p[2];

	EXPECT_EQ(-EINVAL, snpu_event_export_fence(NULL, self->ea, 0, &fd));
	EXPECT_EQ(-EINVAL, snpu_event_export_fence(self->a, self->ea, 0,
						   NULL));
	EXPECT_EQ(-EINVAL, snpu_event_export_fence(self->a, self->ea, 2,
						   &fd));
	/* Never recorded; no such event. */
	EXPECT_EQ(-EINVAL, snpu_event_export_fence(self->a, self->ea, 0,
						   &fd));
	EXPECT_EQ(-ENOENT, snpu_event_export_fence(self->a, 4242, 0, &fd));
	EXPECT_EQ(-1, fd);
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, snpu_stream_wait_fence(self->b, self->sb, p[0]));
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(-EBADF, snpu_stream_wait_fence(self->b, self->sb, p[0]));
	EXPECT_EQ(-EBADF, snpu_stream_wait_fence(self->b, self->sb, -1));
	EXPECT_EQ(0, snpu_stream_synchronize(self->b, self->sb, 0));
}

TEST_HARNESS_MAIN
