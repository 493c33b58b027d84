// SPDX-License-Identifier: GPL-2.0
/*
 * The high priority takes CAP_SYS_NICE: SNPU_IOC_STREAM_CREATE and
 * SNPU_IOC_OWNER_CREATE with SNPU_PRIO_HIGH fail with EACCES and create
 * nothing for a caller without it (the unprivileged user nobody, and root
 * that dropped the capability), while the normal and low priorities stay
 * open to everyone and root gets the high one. A snapshot restore never
 * changes a stream's priority.
 *
 * Runs as root in the test VM with the module loaded. The unprivileged
 * cases run in a forked child that drops to uid/gid 65534 (which clears
 * every capability) or drops CAP_SYS_NICE alone, opens the device itself
 * and reports each result to the test through a pipe.
 */
#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define NOBODY		SNPU_TEST_NOBODY

/* What the child tries, and what it reports. */
enum { R_STREAM_HIGH, R_STREAM_NORMAL, R_STREAM_LOW, R_OWNER_HIGH,
       R_OWNER_NORMAL, R_STREAMS_AFTER, R_HAS_NICE, R_SETUP, R_NR };

static int owner_create(int fd, int32_t prio, uint32_t *handle)
{
	struct snpu_stream_create c = { .size = sizeof(c), .priority = prio };
	int ret = snpu_ioc(fd, SNPU_IOC_OWNER_CREATE, &c);

	if (!ret && handle)
		*handle = c.handle;
	return ret;
}

static int caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return syscall(SYS_capget, &h, d) ? -errno : 0;
}

static int caps_set(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

/* Return: 1 when CAP_SYS_NICE is effective, 0 when not, or -errno. */
static int has_sys_nice(void)
{
	struct __user_cap_data_struct d[2];
	int ret = caps_get(d);

	if (ret)
		return ret;
	return !!(d[CAP_TO_INDEX(CAP_SYS_NICE)].effective &
		  CAP_TO_MASK(CAP_SYS_NICE));
}

/* Stay root, but without CAP_SYS_NICE (effective and permitted). */
static int drop_sys_nice(void)
{
	struct __user_cap_data_struct d[2];
	int ret = caps_get(d);

	if (ret)
		return ret;
	d[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
	d[CAP_TO_INDEX(CAP_SYS_NICE)].permitted &= ~CAP_TO_MASK(CAP_SYS_NICE);
	d[CAP_TO_INDEX(CAP_SYS_NICE)].inheritable &= ~CAP_TO_MASK(CAP_SYS_NICE);
	return caps_set(d);
}

/* In the child, after @drop: every create of the table, on a fresh file. */
static void child_try(int (*drop)(void), int out)
{
	struct snpu_ctx_query q;
	int r[R_NR], fd;
	uint32_t h;

	memset(r, 0, sizeof(r));
	r[R_SETUP] = drop ? drop() : 0;
	fd = snpu_open_dev();
	if (!r[R_SETUP] && fd < 0)
		r[R_SETUP] = fd;
	if (!r[R_SETUP]) {
		r[R_HAS_NICE] = has_sys_nice();
		r[R_STREAM_HIGH] = snpu_stream_create(fd, SNPU_PRIO_HIGH, &h);
		/* Nothing was created by the refused call. */
		r[R_STREAMS_AFTER] = snpu_ctx_query(fd, &q) ?: (int)q.streams;
		r[R_STREAM_NORMAL] = snpu_stream_create(fd, SNPU_PRIO_NORMAL,
							&h);
		r[R_STREAM_LOW] = snpu_stream_create(fd, SNPU_PRIO_LOW, &h);
		r[R_OWNER_HIGH] = owner_create(fd, SNPU_PRIO_HIGH, NULL);
		r[R_OWNER_NORMAL] = owner_create(fd, SNPU_PRIO_NORMAL, NULL);
	}
	_exit(write(out, r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/* Run child_try() in a child; *@r gets its results. */
static int run_child(int (*drop)(void), int r[R_NR])
{
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe(pfd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(pfd[0]);
		child_try(drop, pfd[1]);
	}
	close(pfd[1]);
	n = read(pfd[0], r, R_NR * sizeof(int));
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -ECHILD;
	return n == (ssize_t)(R_NR * sizeof(int)) ? 0 : -EIO;
}

FIXTURE(prio) {
	int r[R_NR];
};

FIXTURE_SETUP(prio)
{
	memset(self->r, 0, sizeof(self->r));
}

FIXTURE_TEARDOWN(prio)
{
}

TEST_F(prio, nobody_high_stream_eacces)
{
	ASSERT_EQ(0, run_child(snpu_drop_to_nobody, self->r));
	ASSERT_EQ(0, self->r[R_SETUP]);
	ASSERT_EQ(0, self->r[R_HAS_NICE]);
	EXPECT_EQ(-EACCES, self->r[R_STREAM_HIGH]);
	EXPECT_EQ(0, self->r[R_STREAMS_AFTER]);
}

TEST_F(prio, nobody_normal_and_low_streams_allowed)
{
	ASSERT_EQ(0, run_child(snpu_drop_to_nobody, self->r));
	ASSERT_EQ(0, self->r[R_SETUP]);
	EXPECT_EQ(0, self->r[R_STREAM_NORMAL]);
	EXPECT_EQ(0, self->r[R_STREAM_LOW]);
}

TEST_F(prio, nobody_high_owner_eacces)
{
	ASSERT_EQ(0, run_child(snpu_drop_to_nobody, self->r));
	ASSERT_EQ(0, self->r[R_SETUP]);
	EXPECT_EQ(-EACCES, self->r[R_OWNER_HIGH]);
	EXPECT_EQ(0, self->r[R_OWNER_NORMAL]);
}

TEST_F(prio, root_without_sys_nice_eacces)
{
	ASSERT_EQ(0, run_child(drop_sys_nice, self->r));
	ASSERT_EQ(0, self->r[R_SETUP]);
	ASSERT_EQ(0, self->r[R_HAS_NICE]);
	EXPECT_EQ(-EACCES, self->r[R_STREAM_HIGH]);
	EXPECT_EQ(0, self->r[R_STREAMS_AFTER]);
	EXPECT_EQ(-EACCES, self->r[R_OWNER_HIGH]);
	EXPECT_EQ(0, self->r[R_STREAM_NORMAL]);
	EXPECT_EQ(0, self->r[R_OWNER_NORMAL]);
}

TEST_F(prio, root_high_allowed)
{
	ASSERT_EQ(0, run_child(NULL, self->r));
	ASSERT_EQ(0, self->r[R_SETUP]);
	ASSERT_EQ(1, self->r[R_HAS_NICE]);
	EXPECT_EQ(0, self->r[R_STREAM_HIGH]);
	EXPECT_EQ(1, self->r[R_STREAMS_AFTER]);
	EXPECT_EQ(0, self->r[R_OWNER_HIGH]);
}

TEST_F(prio, out_of_range_einval_before_eacces)
{
	int fd = snpu_open_dev();
	uint32_t h;

	ASSERT_GE(fd, 0);
	EXPECT_EQ(-EINVAL, snpu_stream_create(fd, SNPU_PRIO_HIGH + 1, &h));
	EXPECT_EQ(-EINVAL, owner_create(fd, SNPU_PRIO_HIGH + 1, NULL));
	close(fd);
}

/* A high-priority owner's attached streams are high: root made it. */
TEST_F(prio, root_high_owner_attached_stream_high)
{
	struct snpu_attached_stream a;
	struct snpu_stream_query q;
	int fd = snpu_open_dev();
	uint32_t owner;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, owner_create(fd, SNPU_PRIO_HIGH, &owner));
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.owner = owner;
	strcpy(a.key, "k");
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	ASSERT_EQ(0, snpu_stream_query(fd, a.handle, &q));
	EXPECT_EQ(SNPU_PRIO_HIGH, q.priority);
	close(fd);
}

static int snap(int fd, unsigned long cmd, int64_t timeout_ns)
{
	struct snpu_snapshot s = { .size = sizeof(s), .timeout_ns = timeout_ns };

	return snpu_ioc(fd, cmd, &s);
}

/*
 * As nobody: LOCK, BACKUP, RESTORE, UNLOCK leave a normal stream normal.
 * Child's exit status: 0, or the step that failed.
 */
static int restore_keeps_priority(void)
{
	struct snpu_stream_query q;
	uint32_t s;
	int fd;

	if (snpu_drop_to_nobody())
		return 1;
	fd = snpu_open_dev();
	if (fd < 0 || snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s))
		return 2;
	if (snap(fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC) ||
	    snap(fd, SNPU_IOC_SNAPSHOT_BACKUP, 0) ||
	    snap(fd, SNPU_IOC_SNAPSHOT_RESTORE, 0) ||
	    snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0))
		return 3;
	if (snpu_stream_query(fd, s, &q) || q.priority != SNPU_PRIO_NORMAL)
		return 4;
	return 0;
}

TEST_F(prio, nobody_restore_keeps_priority)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(restore_keeps_priority());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
