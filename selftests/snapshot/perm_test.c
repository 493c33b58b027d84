// SPDX-License-Identifier: GPL-2.0
/*
 * Who may make the snapshot and background-thread calls of a file: only
 * the threads of the process that opened it. Every modifying call
 * (SNAPSHOT_LOCK, _BACKUP, _RESTORE, _UNLOCK, BG_REGISTER, _UNREGISTER,
 * _PARK) made by another process holding the file fails with EPERM and
 * changes nothing, whether that process inherited the file by fork(2) or
 * received it over a unix socket (SCM_RIGHTS); the opener's own call then
 * still works. SNAPSHOT_STATE, a query, is allowed to any holder.
 *
 * Runs as root in the test VM with the module loaded. The other process
 * drops to the unprivileged user nobody (65534) before it makes the call,
 * and reports the call's result to the test through a pipe or the socket.
 */
#include <grp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define NOBODY		SNPU_TEST_NOBODY

static int snap(int fd, unsigned long cmd, int64_t timeout_ns,
		struct snpu_snapshot *out)
{
	struct snpu_snapshot s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.timeout_ns = timeout_ns;
	ret = snpu_ioc(fd, cmd, &s);
	if (out)
		*out = s;
	return ret;
}

static struct snpu_snapshot snap_state(int fd)
{
	struct snpu_snapshot s;

	if (snap(fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s))
		s.state = ~0U;
	return s;
}

/* The result a child sends: its call's result, and what STATE said. */
struct verdict {
	int ret;		/* the refused call: 0 or -errno */
	int state_ret;		/* SNAPSHOT_STATE: 0 or -errno */
	uint32_t state;		/* SNAPSHOT_STATE's state */
	uint32_t pid;		/* SNAPSHOT_STATE's pid */
};

static void child_call(int fd, unsigned long cmd, int64_t timeout_ns,
		       struct verdict *v)
{
	struct snpu_snapshot s;
	int ret = snpu_drop_to_nobody();

	memset(v, 0, sizeof(*v));
	if (ret) {
		v->ret = v->state_ret = ret;
		return;
	}
	v->ret = snap(fd, cmd, timeout_ns, NULL);
	v->state_ret = snap(fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s);
	v->state = s.state;
	v->pid = s.pid;
}

static bool wait_exit0(pid_t pid)
{
	int status;

	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       !WEXITSTATUS(status);
}

/* What the opener sets up before another process tries the command. */
enum setup {
	SETUP_RUNNING,		/* nothing */
	SETUP_LOCKED,		/* LOCK */
	SETUP_BACKED_UP,	/* LOCK, BACKUP */
	SETUP_BG,		/* the opener's thread is a background thread */
};

FIXTURE(perm) {
	int fd;
};

FIXTURE_VARIANT(perm) {
	unsigned long cmd;
	int64_t timeout_ns;
	enum setup setup;
};

FIXTURE_VARIANT_ADD(perm, lock) {
	.cmd = SNPU_IOC_SNAPSHOT_LOCK, .timeout_ns = NS_PER_SEC,
	.setup = SETUP_RUNNING,
};

FIXTURE_VARIANT_ADD(perm, backup) {
	.cmd = SNPU_IOC_SNAPSHOT_BACKUP, .setup = SETUP_LOCKED,
};

FIXTURE_VARIANT_ADD(perm, restore) {
	.cmd = SNPU_IOC_SNAPSHOT_RESTORE, .setup = SETUP_BACKED_UP,
};

FIXTURE_VARIANT_ADD(perm, unlock) {
	.cmd = SNPU_IOC_SNAPSHOT_UNLOCK, .setup = SETUP_LOCKED,
};

FIXTURE_VARIANT_ADD(perm, bg_register) {
	.cmd = SNPU_IOC_BG_REGISTER, .setup = SETUP_RUNNING,
};

FIXTURE_VARIANT_ADD(perm, bg_unregister) {
	.cmd = SNPU_IOC_BG_UNREGISTER, .setup = SETUP_BG,
};

FIXTURE_VARIANT_ADD(perm, bg_park) {
	.cmd = SNPU_IOC_BG_PARK, .setup = SETUP_BG,
};

FIXTURE_SETUP(perm)
{
	uint64_t addr;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	/* Something for a backup to save. */
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &addr));
	switch (variant->setup) {
	case SETUP_BACKED_UP:
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC,
				  NULL));
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0, NULL));
		break;
	case SETUP_LOCKED:
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC,
				  NULL));
		break;
	case SETUP_BG:
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_BG_REGISTER, 0, NULL));
		break;
	case SETUP_RUNNING:
		break;
	}
}

FIXTURE_TEARDOWN(perm)
{
	/* Whatever the test left: back to RUNNING, no background thread. */
	snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, NULL);
	snap(self->fd, SNPU_IOC_BG_UNREGISTER, 0, NULL);
	close(self->fd);
}

/* The state the opener's process is in after the setup. */
static uint32_t setup_state(enum setup setup)
{
	return setup == SETUP_LOCKED ? (uint32_t)SNPU_STATE_LOCKED :
	       setup == SETUP_BACKED_UP ? SNPU_STATE_BACKED_UP :
	       SNPU_STATE_RUNNING;
}

/*
 * After another process's refused call: nothing changed, and the opener
 * itself may make the call.
 */
static void check_unchanged_then_opener(struct __test_metadata *_metadata,
					int fd, const FIXTURE_VARIANT(perm) *v,
					const struct verdict *got)
{
	struct snpu_snapshot s = snap_state(fd);

	EXPECT_EQ(-EPERM, got->ret);
	/* The query is allowed, and tells the opener's state and pid. */
	EXPECT_EQ(0, got->state_ret);
	EXPECT_EQ(setup_state(v->setup), got->state);
	EXPECT_EQ((uint32_t)getpid(), got->pid);

	EXPECT_EQ(setup_state(v->setup), s.state);
	EXPECT_EQ(v->setup == SETUP_BG ? 1U : 0U, s.bg_threads);

	/* The opener's own call works. */
	EXPECT_EQ(0, snap(fd, v->cmd, v->timeout_ns, NULL));
}

TEST_F(perm, forked_child_eperm)
{
	struct verdict got;
	int pfd[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct verdict v;

		close(pfd[0]);
		child_call(self->fd, variant->cmd, variant->timeout_ns, &v);
		_exit(write(pfd[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(pfd[1]);
	ASSERT_EQ((ssize_t)sizeof(got), read(pfd[0], &got, sizeof(got)));
	close(pfd[0]);
	ASSERT_TRUE(wait_exit0(pid));
	check_unchanged_then_opener(_metadata, self->fd, variant, &got);
}

TEST_F(perm, scm_rights_receiver_eperm)
{
	struct verdict got;
	int sv[2], fd2;
	pid_t pid;

	/* The receiver exists before the file it gets: only the socket. */
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct verdict v;
		int fd;

		close(sv[0]);
		close(self->fd);
		fd = snpu_recv_fd(sv[1]);
		if (fd < 0) {
			memset(&v, 0, sizeof(v));
			v.ret = v.state_ret = fd;
		} else {
			child_call(fd, variant->cmd, variant->timeout_ns, &v);
		}
		_exit(write(sv[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(sv[1]);
	/* A second file of the opener's process: the same snapshot state. */
	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, snpu_send_fd(sv[0], fd2));
	close(fd2);
	ASSERT_EQ((ssize_t)sizeof(got), read(sv[0], &got, sizeof(got)));
	close(sv[0]);
	ASSERT_TRUE(wait_exit0(pid));
	check_unchanged_then_opener(_metadata, self->fd, variant, &got);
}

/* Another thread of the opener's process is the opener: it may. */
static void *thread_lock_unlock(void *p)
{
	int fd = *(int *)p;
	long ret = snap(fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC, NULL);

	if (!ret)
		ret = snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, NULL);
	return (void *)ret;
}

FIXTURE(perm_thread) {
	int fd;
};

FIXTURE_SETUP(perm_thread)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(perm_thread)
{
	close(self->fd);
}

TEST_F(perm_thread, other_thread_of_opener_allowed)
{
	pthread_t t;
	void *ret;

	ASSERT_EQ(0, pthread_create(&t, NULL, thread_lock_unlock, &self->fd));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(0L, (long)ret);
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, snap_state(self->fd).state);
}

TEST_HARNESS_MAIN
