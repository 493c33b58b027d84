// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu's process snapshot (LIBSNPU_0.5) against the driver: the steps
 * snpu_snapshot_lock/backup/restore/unlock, the stage callbacks they run
 * (order across stages and devices, registration rules, the state each
 * stage sees), the rollback of a step whose callback fails, and the
 * background-thread helpers (registration, the checkpoint's fast path
 * that makes no system call, parking, the lazily mapped state page).
 *
 * Runs as root in the test VM with the module loaded with its defaults.
 * The two "devices" of the fixture are two snpu_open()s of /dev/snpu0:
 * two kernel contexts of one process, which is what the library sees as
 * two devices (the state is per process either way; snapshot_test checks
 * two real devices).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NS_PER_MS	1000000LL
#define NS_PER_SEC	1000000000LL
#define DONE_NS		(20 * NS_PER_SEC)
#define BLOCK_CHECK_NS	(300 * NS_PER_MS)
#define LOCK_NS		(10 * NS_PER_SEC)
#define PAGE		4096
#define NDEV		2
#define DEBUGFS		"/sys/kernel/debug"
#define RESET_KNOB	DEBUGFS "/snpu/snpu0/reset"

static const unsigned int all_stages[] = {
	SNPU_SNAPSHOT_LOCK_PRE, SNPU_SNAPSHOT_BACKUP_PRE,
	SNPU_SNAPSHOT_BACKUP_POST, SNPU_SNAPSHOT_RESTORE_PRE,
	SNPU_SNAPSHOT_RESTORE_POST, SNPU_SNAPSHOT_UNLOCK_POST,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / NS_PER_SEC, ns % NS_PER_SEC };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool wait_flag(atomic_int *flag, int64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (!atomic_load(flag)) {
		if (now_ns() > end)
			return false;
		sleep_ns(NS_PER_MS);
	}
	return true;
}

/* The process's state through @dev, or -errno. */
static int state_of(struct snpu_device *dev)
{
	struct snpu_snapshot s;
	int ret = snpu_snapshot_get_state(dev, &s);

	return ret ? ret : (int)s.state;
}

static int reset_device0(void)
{
	int fd, ret = 0;

	if (access(RESET_KNOB, W_OK) &&
	    mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	fd = open(RESET_KNOB, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/* Mappings of the state page in this process (/proc/self/maps). */
static int state_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], pat[32];
	int n = 0;

	/* The offset column of /proc/self/maps: hex, at least 8 digits. */
	snprintf(pat, sizeof(pat), " %08llx ",
		 (unsigned long long)SNPU_STATE_MMAP_OFFSET);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, pat) && strstr(line, "snpu"))
			n++;
	fclose(f);
	return n;
}

/* ---- the trace of callbacks ---------------------------------------------- */

struct trace_ent {
	int dev;
	unsigned int stage;
	int state;		/* the process's state inside the callback */
};

struct tracer {
	struct snpu_device *devs[NDEV];
	struct trace_ent ent[64];
	unsigned int n;
	int wrong_dev;		/* a callback got another device */
	/* The callback of (fail_dev, fail_stage) returns fail_ret. */
	int fail_dev;
	unsigned int fail_stage;
	int fail_ret;
	/* Calls made from BACKUP_POST: a modifying one and a query. */
	bool try_calls;
	int alloc_ret, query_ret;
};

struct cb_arg {
	struct tracer *t;
	int dev;
};

static int trace_cb(struct snpu_device *dev, unsigned int stage, void *arg)
{
	struct cb_arg *a = arg;
	struct tracer *t = a->t;
	struct trace_ent *e = &t->ent[t->n < 64 ? t->n++ : 63];

	e->dev = a->dev;
	e->stage = stage;
	e->state = state_of(dev);
	if (dev != t->devs[a->dev])
		t->wrong_dev++;
	if (t->try_calls && stage == SNPU_SNAPSHOT_BACKUP_POST) {
		struct snpu_ctx_query q;
		uint64_t addr;

		t->alloc_ret = snpu_mem_alloc(dev, PAGE, 0, 0, &addr);
		t->query_ret = snpu_ctx_query(dev, &q);
	}
	if (a->dev == t->fail_dev && stage == t->fail_stage)
		return t->fail_ret;
	return 0;
}

FIXTURE(lsnap) {
	struct snpu_device *d[NDEV];
	struct tracer t;
	struct cb_arg arg[NDEV];
	const struct snpu_state_page *sp;
};

FIXTURE_SETUP(lsnap)
{
	int i, ret;
	void *p;

	for (i = 0; i < NDEV; i++) {
		ret = snpu_open(0, 0, &self->d[i]);
		ASSERT_EQ(0, ret) TH_LOG("snpu_open: %s", strerror(-ret));
		self->t.devs[i] = self->d[i];
		self->arg[i].t = &self->t;
		self->arg[i].dev = i;
	}
	self->t.fail_dev = -1;
	/* The test's own view of the state page, for its counter. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED,
		 snpu_device_fd(self->d[0]), SNPU_STATE_MMAP_OFFSET);
	ASSERT_NE(MAP_FAILED, p);
	self->sp = p;
}

FIXTURE_TEARDOWN(lsnap)
{
	int i;

	if (self->sp)
		munmap((void *)self->sp, PAGE);
	for (i = 0; i < NDEV; i++)
		snpu_close(self->d[i]);
}

static uint32_t seq_of(const struct snpu_state_page *sp)
{
	return __atomic_load_n(&sp->seq, __ATOMIC_ACQUIRE);
}

/* Register the trace callback on every stage of every device. */
static int register_all(FIXTURE_DATA(lsnap) *self)
{
	unsigned int s;
	int i, ret;

	for (i = 0; i < NDEV; i++)
		for (s = 0; s < SNPU_SNAPSHOT_STAGES; s++) {
			ret = snpu_snapshot_callback_register(self->d[i], s,
							      trace_cb,
							      &self->arg[i]);
			if (ret)
				return ret;
		}
	return 0;
}

/* The trace holds exactly @n entries (dev, stage) as listed. */
static bool trace_is(const struct tracer *t, const int (*want)[2],
		     unsigned int n)
{
	unsigned int i;

	if (t->n != n)
		return false;
	for (i = 0; i < n; i++)
		if (t->ent[i].dev != want[i][0] ||
		    t->ent[i].stage != (unsigned int)want[i][1])
			return false;
	return true;
}

static void trace_dump(struct __test_metadata *_metadata,
		       const struct tracer *t)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		TH_LOG("trace[%u]: dev %d stage %u state %d", i, t->ent[i].dev,
		       t->ent[i].stage, t->ent[i].state);
}

/* ---- arguments ------------------------------------------------------------- */

TEST_F(lsnap, bad_arguments_einval)
{
	struct snpu_device *none[2] = { self->d[0], NULL };
	struct snpu_snapshot s;
	uint64_t bytes;

	EXPECT_EQ(-EINVAL, snpu_snapshot_lock(NULL, 1, 0));
	EXPECT_EQ(-EINVAL, snpu_snapshot_lock(self->d, 0, 0));
	EXPECT_EQ(-EINVAL, snpu_snapshot_lock(none, 2, 0));
	EXPECT_EQ(-EINVAL, snpu_snapshot_backup(NULL, 1, &bytes));
	EXPECT_EQ(-EINVAL, snpu_snapshot_backup(none, 2, &bytes));
	EXPECT_EQ(-EINVAL, snpu_snapshot_restore(self->d, 0));
	EXPECT_EQ(-EINVAL, snpu_snapshot_restore(none, 2));
	EXPECT_EQ(-EINVAL, snpu_snapshot_unlock(NULL, 2));
	EXPECT_EQ(-EINVAL, snpu_snapshot_unlock(none, 2));
	EXPECT_EQ(-EINVAL, snpu_snapshot_get_state(NULL, &s));
	EXPECT_EQ(-EINVAL, snpu_snapshot_get_state(self->d[0], NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(NULL, 0, trace_cb,
							   NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(self->d[0], 0,
							   NULL, NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(self->d[0],
				SNPU_SNAPSHOT_STAGES, trace_cb, NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_register(self->d[0], ~0U,
							   trace_cb, NULL));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_unregister(NULL, 0));
	EXPECT_EQ(-EINVAL, snpu_snapshot_callback_unregister(self->d[0],
						SNPU_SNAPSHOT_STAGES));
	EXPECT_EQ(-EINVAL, snpu_bg_register(NULL));
	EXPECT_EQ(-EINVAL, snpu_bg_unregister(NULL));
	EXPECT_EQ(-EINVAL, snpu_bg_checkpoint(NULL));
	EXPECT_EQ(SNPU_STATE_RUNNING, state_of(self->d[0]));
}

/* ---- the steps --------------------------------------------------------------- */

TEST_F(lsnap, full_cycle)
{
	struct snpu_snapshot s;
	uint64_t addr, image = 0;
	uint8_t in[PAGE], out[PAGE];

	memset(in, 0x6b, sizeof(in));
	ASSERT_EQ(0, snpu_mem_alloc(self->d[1], PAGE, 0, 0, &addr));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->d[1], addr, in, PAGE));
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[1], &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	EXPECT_EQ((uint32_t)getpid(), s.pid);
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	EXPECT_EQ(SNPU_STATE_LOCKED, state_of(self->d[1]));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, &image));
	EXPECT_GE(image, (uint64_t)PAGE);
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[0], &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_BACKED_UP, s.state);
	EXPECT_EQ(image, s.image_bytes);
	ASSERT_EQ(0, reset_device0());
	ASSERT_EQ(0, snpu_snapshot_restore(self->d, NDEV));
	EXPECT_EQ(SNPU_STATE_LOCKED, state_of(self->d[0]));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	EXPECT_EQ(SNPU_STATE_RUNNING, state_of(self->d[0]));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->d[1], out, addr, PAGE));
	EXPECT_EQ(0, memcmp(in, out, PAGE));
}

TEST_F(lsnap, image_bytes_optional_and_negative_timeout)
{
	/* Any negative timeout waits for ever (the kernel knows only -1). */
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, 1, -5));
	EXPECT_EQ(0, snpu_snapshot_backup(self->d, 1, NULL));
	EXPECT_EQ(0, snpu_snapshot_unlock(self->d, 1));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, 1, 0));
	EXPECT_EQ(0, snpu_snapshot_unlock(self->d, 1));
}

TEST_F(lsnap, steps_refused_by_state_run_no_callback)
{
	uint64_t image = 77;
	uint32_t seq = seq_of(self->sp);

	ASSERT_EQ(0, register_all(self));
	EXPECT_EQ(-EBADFD, snpu_snapshot_backup(self->d, NDEV, &image));
	EXPECT_EQ(77ULL, image);
	EXPECT_EQ(-EBADFD, snpu_snapshot_restore(self->d, NDEV));
	EXPECT_EQ(-EBADFD, snpu_snapshot_unlock(self->d, NDEV));
	EXPECT_EQ(0U, self->t.n);
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	self->t.n = 0;
	EXPECT_EQ(-EBADFD, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	EXPECT_EQ(-EBADFD, snpu_snapshot_restore(self->d, NDEV));
	EXPECT_EQ(0U, self->t.n);
	EXPECT_EQ(seq + 1, seq_of(self->sp));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

/* ---- callbacks ---------------------------------------------------------------- */

TEST_F(lsnap, callbacks_in_order_of_stages_and_devices)
{
	static const int want[][2] = {
		{ 0, SNPU_SNAPSHOT_LOCK_PRE }, { 1, SNPU_SNAPSHOT_LOCK_PRE },
		{ 0, SNPU_SNAPSHOT_BACKUP_PRE }, { 1, SNPU_SNAPSHOT_BACKUP_PRE },
		{ 0, SNPU_SNAPSHOT_BACKUP_POST }, { 1, SNPU_SNAPSHOT_BACKUP_POST },
		{ 0, SNPU_SNAPSHOT_RESTORE_PRE }, { 1, SNPU_SNAPSHOT_RESTORE_PRE },
		{ 0, SNPU_SNAPSHOT_RESTORE_POST }, { 1, SNPU_SNAPSHOT_RESTORE_POST },
		{ 0, SNPU_SNAPSHOT_UNLOCK_POST }, { 1, SNPU_SNAPSHOT_UNLOCK_POST },
	};
	/* The state each stage's callback sees. */
	static const int state[SNPU_SNAPSHOT_STAGES] = {
		[SNPU_SNAPSHOT_LOCK_PRE] = SNPU_STATE_RUNNING,
		[SNPU_SNAPSHOT_BACKUP_PRE] = SNPU_STATE_LOCKED,
		[SNPU_SNAPSHOT_BACKUP_POST] = SNPU_STATE_BACKED_UP,
		[SNPU_SNAPSHOT_RESTORE_PRE] = SNPU_STATE_BACKED_UP,
		[SNPU_SNAPSHOT_RESTORE_POST] = SNPU_STATE_LOCKED,
		[SNPU_SNAPSHOT_UNLOCK_POST] = SNPU_STATE_RUNNING,
	};
	unsigned int i;

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, NULL));
	ASSERT_EQ(0, snpu_snapshot_restore(self->d, NDEV));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	EXPECT_TRUE(trace_is(&self->t, want, 12))
		trace_dump(_metadata, &self->t);
	for (i = 0; i < self->t.n; i++)
		EXPECT_EQ(state[self->t.ent[i].stage], self->t.ent[i].state)
			TH_LOG("stage %u", self->t.ent[i].stage);
	EXPECT_EQ(0, self->t.wrong_dev);
}

TEST_F(lsnap, callbacks_follow_the_order_of_devs)
{
	static const int want[][2] = {
		{ 1, SNPU_SNAPSHOT_LOCK_PRE }, { 0, SNPU_SNAPSHOT_LOCK_PRE },
		{ 1, SNPU_SNAPSHOT_UNLOCK_POST }, { 0, SNPU_SNAPSHOT_UNLOCK_POST },
		/* A list of one device runs only its callbacks. */
		{ 1, SNPU_SNAPSHOT_LOCK_PRE }, { 1, SNPU_SNAPSHOT_UNLOCK_POST },
	};
	struct snpu_device *rev[NDEV] = { self->d[1], self->d[0] };

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(rev, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_unlock(rev, NDEV));
	ASSERT_EQ(0, snpu_snapshot_lock(rev, 1, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_unlock(rev, 1));
	EXPECT_TRUE(trace_is(&self->t, want, 6))
		trace_dump(_metadata, &self->t);
}

static int other_cb(struct snpu_device *dev, unsigned int stage, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

TEST_F(lsnap, duplicate_registration_eexist)
{
	int other = 0;
	unsigned int i;

	for (i = 0; i < SNPU_SNAPSHOT_STAGES; i++) {
		ASSERT_EQ(0, snpu_snapshot_callback_register(self->d[0],
				all_stages[i], trace_cb, &self->arg[0]));
		EXPECT_EQ(-EEXIST, snpu_snapshot_callback_register(self->d[0],
				all_stages[i], other_cb, &other));
		EXPECT_EQ(-EEXIST, snpu_snapshot_callback_register(self->d[0],
				all_stages[i], trace_cb, &self->arg[0]));
	}
	/* The same stage of another device is another slot. */
	EXPECT_EQ(0, snpu_snapshot_callback_register(self->d[1],
			SNPU_SNAPSHOT_LOCK_PRE, other_cb, &other));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	/* The first registration is the one that ran. */
	EXPECT_EQ(2U, self->t.n);
	EXPECT_EQ(1, other);
}

TEST_F(lsnap, unregister)
{
	int other = 0;

	EXPECT_EQ(-ENOENT, snpu_snapshot_callback_unregister(self->d[0],
			SNPU_SNAPSHOT_LOCK_PRE));
	ASSERT_EQ(0, register_all(self));
	EXPECT_EQ(0, snpu_snapshot_callback_unregister(self->d[0],
			SNPU_SNAPSHOT_LOCK_PRE));
	EXPECT_EQ(-ENOENT, snpu_snapshot_callback_unregister(self->d[0],
			SNPU_SNAPSHOT_LOCK_PRE));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	/* Only device 1's LOCK_PRE ran. */
	ASSERT_EQ(1U, self->t.n);
	EXPECT_EQ(1, self->t.ent[0].dev);
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	/* The slot is free again. */
	EXPECT_EQ(0, snpu_snapshot_callback_register(self->d[0],
			SNPU_SNAPSHOT_LOCK_PRE, other_cb, &other));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, 1, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, 1));
	EXPECT_EQ(1, other);
}

TEST_F(lsnap, callbacks_run_on_the_locking_thread)
{
	ASSERT_EQ(0, register_all(self));
	self->t.try_calls = true;
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, NULL));
	/* Modifying calls would wait for themselves; queries work. */
	EXPECT_EQ(-EDEADLK, self->t.alloc_ret);
	EXPECT_EQ(0, self->t.query_ret);
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

/* ---- aborted steps roll back ------------------------------------------------- */

/* Make (dev, stage) fail with @ret. */
static void fail_at(FIXTURE_DATA(lsnap) *self, int dev, unsigned int stage,
		    int ret)
{
	self->t.fail_dev = dev;
	self->t.fail_stage = stage;
	self->t.fail_ret = ret;
	self->t.n = 0;
}

TEST_F(lsnap, lock_pre_fails)
{
	static const int want[][2] = {
		{ 0, SNPU_SNAPSHOT_LOCK_PRE }, { 1, SNPU_SNAPSHOT_LOCK_PRE },
	};
	uint32_t seq = seq_of(self->sp);

	ASSERT_EQ(0, register_all(self));
	fail_at(self, 1, SNPU_SNAPSHOT_LOCK_PRE, -EIO);
	EXPECT_EQ(-EIO, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	EXPECT_TRUE(trace_is(&self->t, want, 2));
	/* No kernel call was made. */
	EXPECT_EQ(SNPU_STATE_RUNNING, state_of(self->d[0]));
	EXPECT_EQ(seq, seq_of(self->sp));
	/* The first device's failure stops the walk there. */
	fail_at(self, 0, SNPU_SNAPSHOT_LOCK_PRE, -EAGAIN);
	EXPECT_EQ(-EAGAIN, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	EXPECT_EQ(1U, self->t.n);
	EXPECT_EQ(seq, seq_of(self->sp));
}

TEST_F(lsnap, positive_return_is_ecanceled)
{
	ASSERT_EQ(0, register_all(self));
	fail_at(self, 0, SNPU_SNAPSHOT_LOCK_PRE, 1);
	EXPECT_EQ(-ECANCELED, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	EXPECT_EQ(SNPU_STATE_RUNNING, state_of(self->d[0]));
}

TEST_F(lsnap, backup_pre_fails)
{
	struct snpu_snapshot s;
	uint32_t seq;

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	seq = seq_of(self->sp);
	fail_at(self, 1, SNPU_SNAPSHOT_BACKUP_PRE, -ENOSPC);
	EXPECT_EQ(-ENOSPC, snpu_snapshot_backup(self->d, NDEV, NULL));
	EXPECT_EQ(2U, self->t.n);
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[0], &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, s.state);
	EXPECT_EQ(0ULL, s.image_bytes);
	EXPECT_EQ(seq, seq_of(self->sp));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

TEST_F(lsnap, backup_post_fails_from_locked)
{
	static const int want[][2] = {
		{ 0, SNPU_SNAPSHOT_BACKUP_PRE }, { 1, SNPU_SNAPSHOT_BACKUP_PRE },
		{ 0, SNPU_SNAPSHOT_BACKUP_POST },
	};
	uint8_t in[PAGE], out[PAGE];
	uint64_t addr, image = 5;
	uint32_t seq;

	memset(in, 0x42, sizeof(in));
	ASSERT_EQ(0, snpu_mem_alloc(self->d[0], PAGE, 0, 0, &addr));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->d[0], addr, in, PAGE));
	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	seq = seq_of(self->sp);
	fail_at(self, 0, SNPU_SNAPSHOT_BACKUP_POST, -EPERM);
	EXPECT_EQ(-EPERM, snpu_snapshot_backup(self->d, NDEV, &image));
	EXPECT_TRUE(trace_is(&self->t, want, 3))
		trace_dump(_metadata, &self->t);
	EXPECT_EQ(5ULL, image);
	/* BACKED_UP, then RESTORE back to LOCKED: two transitions. */
	EXPECT_EQ(SNPU_STATE_LOCKED, state_of(self->d[0]));
	EXPECT_EQ(seq + 2, seq_of(self->sp));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	/* The rollback wrote back the same bytes. */
	ASSERT_EQ(0, snpu_memcpy_d2h(self->d[0], out, addr, PAGE));
	EXPECT_EQ(0, memcmp(in, out, PAGE));
}

TEST_F(lsnap, backup_post_fails_from_backed_up)
{
	uint64_t image = 0;

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, &image));
	fail_at(self, 1, SNPU_SNAPSHOT_BACKUP_POST, -EIO);
	EXPECT_EQ(-EIO, snpu_snapshot_backup(self->d, NDEV, NULL));
	/* The state before the step was BACKED_UP, and it still is. */
	EXPECT_EQ(SNPU_STATE_BACKED_UP, state_of(self->d[0]));
	EXPECT_EQ(4U, self->t.n);
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

TEST_F(lsnap, restore_pre_fails)
{
	uint32_t seq;

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, NULL));
	seq = seq_of(self->sp);
	fail_at(self, 0, SNPU_SNAPSHOT_RESTORE_PRE, -EINVAL);
	EXPECT_EQ(-EINVAL, snpu_snapshot_restore(self->d, NDEV));
	EXPECT_EQ(1U, self->t.n);
	EXPECT_EQ(SNPU_STATE_BACKED_UP, state_of(self->d[0]));
	EXPECT_EQ(seq, seq_of(self->sp));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

TEST_F(lsnap, restore_post_fails_after_restoring)
{
	struct snpu_snapshot s;
	uint8_t in[3 * PAGE], out[3 * PAGE];
	uint64_t addr;
	uint32_t seq;
	size_t i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 1);
	ASSERT_EQ(0, snpu_mem_alloc(self->d[1], sizeof(in), 0, 0, &addr));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->d[1], addr, in, sizeof(in)));
	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, NULL));
	ASSERT_EQ(0, reset_device0());
	seq = seq_of(self->sp);
	fail_at(self, 1, SNPU_SNAPSHOT_RESTORE_POST, -EBUSY);
	EXPECT_EQ(-EBUSY, snpu_snapshot_restore(self->d, NDEV));
	EXPECT_EQ(4U, self->t.n);
	/* LOCKED, then BACKUP back to BACKED_UP. */
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[0], &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_BACKED_UP, s.state);
	EXPECT_GE(s.image_bytes, (uint64_t)sizeof(in));
	EXPECT_EQ(seq + 2, seq_of(self->sp));
	/* The bytes were restored (and are what the new image holds). */
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->d[1], out, addr, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

TEST_F(lsnap, unlock_post_fails_still_running)
{
	static const int want[][2] = {
		{ 0, SNPU_SNAPSHOT_UNLOCK_POST }, { 1, SNPU_SNAPSHOT_UNLOCK_POST },
	};
	uint64_t addr;

	ASSERT_EQ(0, register_all(self));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	fail_at(self, 0, SNPU_SNAPSHOT_UNLOCK_POST, -EIO);
	EXPECT_EQ(-EIO, snpu_snapshot_unlock(self->d, NDEV));
	/* Never left locked; every device still heard of the unlock. */
	EXPECT_EQ(SNPU_STATE_RUNNING, state_of(self->d[0]));
	EXPECT_TRUE(trace_is(&self->t, want, 2))
		trace_dump(_metadata, &self->t);
	EXPECT_EQ(0, snpu_mem_alloc(self->d[0], PAGE, 0, 0, &addr));
}

/* ---- background threads ------------------------------------------------------ */

TEST_F(lsnap, bg_register_rules)
{
	struct snpu_snapshot s;

	EXPECT_EQ(-ENOENT, snpu_bg_unregister(self->d[0]));
	ASSERT_EQ(0, snpu_bg_register(self->d[0]));
	/* The registration is the thread's, whichever device names it. */
	EXPECT_EQ(-EEXIST, snpu_bg_register(self->d[1]));
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[1], &s));
	EXPECT_EQ(1U, s.bg_threads);
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	EXPECT_EQ(0, snpu_bg_unregister(self->d[1]));
	EXPECT_EQ(-ENOENT, snpu_bg_unregister(self->d[0]));
}

TEST_F(lsnap, checkpoint_maps_once_and_close_unmaps)
{
	int base = state_mappings();

	/* The fixture maps the page once itself. */
	ASSERT_EQ(1, base);
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	EXPECT_EQ(base + 1, state_mappings());
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	EXPECT_EQ(base + 1, state_mappings());
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[1]));
	EXPECT_EQ(base + 2, state_mappings());
	snpu_close(self->d[1]);
	self->d[1] = NULL;
	EXPECT_EQ(base + 1, state_mappings());
}

struct racer {
	struct snpu_device *dev;
	atomic_int *go;
	int ret;
};

static void *race_fn(void *p)
{
	struct racer *r = p;

	while (!atomic_load(r->go))
		;
	r->ret = snpu_bg_checkpoint(r->dev);
	return NULL;
}

TEST_F(lsnap, checkpoint_first_mapping_race)
{
	struct racer r[4];
	pthread_t th[4];
	atomic_int go = 0;
	int i;

	for (i = 0; i < 4; i++) {
		r[i].dev = self->d[1];
		r[i].go = &go;
		r[i].ret = -1;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_fn, &r[i]));
	}
	atomic_store(&go, 1);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, r[i].ret);
	}
	/* The fixture's mapping and exactly one of the library's. */
	EXPECT_EQ(2, state_mappings());
}

TEST_F(lsnap, checkpoint_makes_no_syscall_while_running)
{
	int fd = snpu_device_fd(self->d[0]);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_GE(null, 0);
	/*
	 * Not registered: a running process is not asked, and the thread
	 * must not be one LOCK (made by this thread) waits for.
	 */
	ASSERT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	/*
	 * The descriptor now names /dev/null: an ioctl on it would fail.
	 * The mapping keeps the context, and the checkpoint only reads it.
	 */
	ASSERT_EQ(fd, dup3(null, fd, O_CLOEXEC));
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	/* Locked through the other device: now it does call (and fails). */
	ASSERT_EQ(0, snpu_snapshot_lock(&self->d[1], 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_bg_checkpoint(self->d[0]));
	ASSERT_EQ(0, snpu_snapshot_unlock(&self->d[1], 1));
	EXPECT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	close(null);
}

TEST_F(lsnap, checkpoint_of_unregistered_thread_when_locked)
{
	ASSERT_EQ(0, snpu_bg_checkpoint(self->d[0]));
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, 1, 0));
	/* A thread that is no background thread is not parked. */
	EXPECT_EQ(-ENOENT, snpu_bg_checkpoint(self->d[0]));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, 1));
}

struct worker {
	pthread_t th;
	struct snpu_device *dev;
	atomic_int registered;
	atomic_int stop;
	atomic_int in_checkpoint;
	atomic_int parked;	/* checkpoints that returned 1 */
	uint64_t loops;
	int err;
};

static void *worker_fn(void *p)
{
	struct worker *w = p;
	int ret;

	w->err = snpu_bg_register(w->dev);
	atomic_store(&w->registered, 1);
	if (w->err)
		return NULL;
	while (!atomic_load(&w->stop)) {
		atomic_store(&w->in_checkpoint, 1);
		ret = snpu_bg_checkpoint(w->dev);
		atomic_store(&w->in_checkpoint, 0);
		if (ret < 0) {
			w->err = ret;
			break;
		}
		if (ret == 1)
			atomic_fetch_add(&w->parked, 1);
		w->loops++;
		sched_yield();
	}
	if (!w->err)
		w->err = snpu_bg_unregister(w->dev);
	return NULL;
}

TEST_F(lsnap, checkpoint_parks_until_unlock)
{
	struct worker w = { .dev = self->d[1] };
	uint64_t loops;

	ASSERT_EQ(0, pthread_create(&w.th, NULL, worker_fn, &w));
	ASSERT_TRUE(wait_flag(&w.registered, DONE_NS));
	ASSERT_EQ(0, w.err);
	ASSERT_EQ(0, snpu_snapshot_lock(self->d, NDEV, LOCK_NS));
	/* LOCK returned: the worker sits in its checkpoint. */
	EXPECT_EQ(1, atomic_load(&w.in_checkpoint));
	loops = w.loops;
	sleep_ns(BLOCK_CHECK_NS);
	EXPECT_EQ(1, atomic_load(&w.in_checkpoint));
	EXPECT_EQ(loops, w.loops);
	ASSERT_EQ(0, snpu_snapshot_backup(self->d, NDEV, NULL));
	ASSERT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
	EXPECT_TRUE(wait_flag(&w.parked, DONE_NS));
	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(1, atomic_load(&w.parked));
}

/* Registers, then never reaches a checkpoint until told to stop. */
static void *idler_fn(void *p)
{
	struct worker *w = p;

	w->err = snpu_bg_register(w->dev);
	atomic_store(&w->registered, 1);
	while (!w->err && !atomic_load(&w->stop))
		sleep_ns(NS_PER_MS);
	if (!w->err)
		w->err = snpu_bg_unregister(w->dev);
	return NULL;
}

TEST_F(lsnap, lock_times_out_without_checkpoint)
{
	struct worker w = { .dev = self->d[0] };
	struct snpu_snapshot s;

	ASSERT_EQ(0, pthread_create(&w.th, NULL, idler_fn, &w));
	ASSERT_TRUE(wait_flag(&w.registered, DONE_NS));
	ASSERT_EQ(0, w.err);
	ASSERT_EQ(0, register_all(self));
	EXPECT_EQ(-ETIMEDOUT, snpu_snapshot_lock(self->d, NDEV,
						 50 * NS_PER_MS));
	/* LOCK_PRE ran, and the process is RUNNING again. */
	EXPECT_EQ(2U, self->t.n);
	ASSERT_EQ(0, snpu_snapshot_get_state(self->d[0], &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	EXPECT_EQ(1U, s.bg_threads);
	/* Unregistered: nothing to wait for. */
	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(0, snpu_snapshot_lock(self->d, NDEV, 50 * NS_PER_MS));
	EXPECT_EQ(0, snpu_snapshot_unlock(self->d, NDEV));
}

TEST_HARNESS_MAIN
