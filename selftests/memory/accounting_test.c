// SPDX-License-Identifier: GPL-2.0
/*
 * snpu accounting and limits: what a process makes the driver allocate is
 * charged to its memory cgroup, driver host memory to RLIMIT_MEMLOCK, an
 * open costs a small first chunk of the job pool, and the background
 * thread list of a process stays bounded. At a limit the calls fail with
 * ENOMEM (ENOSPC for SNPU_BG_MAX), nobody is OOM-killed, nothing leaks.
 *
 * Runs as root in the test VM with the module's defaults. The RLIMIT_MEMLOCK
 * tests drop to uid/gid 65534 (no CAP_IPC_LOCK); the memory cgroup tests
 * mount cgroup2 on /sys/fs/cgroup when the VM has not, and move the test
 * process into a cgroup of its own.
 */
#include <grp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"
#include "snpu_proc.h"
#include "snpu_cgroup.h"

#define KiB		(1ULL << 10)
#define MiB		(1ULL << 20)
#define NOBODY		SNPU_TEST_NOBODY

/* ---- helpers ---------------------------------------------------------- */

static int set_memlock(uint64_t bytes)
{
	struct rlimit r = { .rlim_cur = bytes, .rlim_max = bytes };

	return setrlimit(RLIMIT_MEMLOCK, &r) ? -errno : 0;
}

/* A "Name:  N kB" line of the proc file @path, in bytes; -1 if absent. */
static long long proc_bytes(const char *path, const char *name)
{
	long long kb = snpu_proc_kb(path, name);

	return kb < 0 ? -1 : kb * 1024;
}

static long long status_kb(const char *name)
{
	return proc_bytes("/proc/self/status", name);
}

static long long meminfo(const char *name)
{
	return proc_bytes("/proc/meminfo", name);
}

/* The device's mem_used; the test is the device's only user. */
static long long dev_mem_used(void)
{
	long long v = -1;

	snpu_sysfs_read("mem_used", &v);
	return v;
}

static int host_alloc(int fd, uint64_t bytes, uint32_t *h)
{
	uint64_t off;

	return snpu_host_alloc(fd, bytes, h, &off);
}

static uint64_t host_used(int fd)
{
	struct snpu_ctx_query q;

	if (snpu_ctx_query(fd, &q))
		return ~0ULL;
	return q.host_used;
}

/* ---- RLIMIT_MEMLOCK --------------------------------------------------- */

FIXTURE(memlock) {
	int fd;
};

FIXTURE_SETUP(memlock)
{
	self->fd = -1;
}

FIXTURE_TEARDOWN(memlock)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Limit @limit, then uid 65534 and an open device. */
static void memlock_enter(struct __test_metadata *_metadata,
			  FIXTURE_DATA(memlock) *self, uint64_t limit)
{
	ASSERT_EQ(0, set_memlock(limit));
	ASSERT_EQ(0, snpu_drop_to_nobody());
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
}

TEST_F(memlock, alloc_beyond_limit_is_enomem)
{
	uint32_t h;

	memlock_enter(_metadata, self, 256 * KiB);
	EXPECT_EQ(-ENOMEM, host_alloc(self->fd, 1 * MiB, &h));
	EXPECT_EQ(0ULL, host_used(self->fd));
	EXPECT_EQ(0LL, status_kb("VmPin"));
}

TEST_F(memlock, alloc_is_charged_until_free)
{
	uint32_t a, b;

	memlock_enter(_metadata, self, 256 * KiB);
	ASSERT_EQ(0, host_alloc(self->fd, 128 * KiB, &a));
	EXPECT_EQ((long long)(128 * KiB), status_kb("VmPin"));
	/* 128 + 192 KiB > 256 KiB */
	EXPECT_EQ(-ENOMEM, host_alloc(self->fd, 192 * KiB, &b));
	ASSERT_EQ(0, snpu_host_free(self->fd, a));
	EXPECT_EQ(0LL, status_kb("VmPin"));
	ASSERT_EQ(0, host_alloc(self->fd, 192 * KiB, &b));
	EXPECT_EQ((long long)(192 * KiB), status_kb("VmPin"));
	ASSERT_EQ(0, snpu_host_free(self->fd, b));
	EXPECT_EQ(0ULL, host_used(self->fd));
}

TEST_F(memlock, mapping_keeps_charge_until_munmap)
{
	uint32_t a, b;
	void *p = NULL;

	memlock_enter(_metadata, self, 256 * KiB);
	ASSERT_EQ(0, snpu_host_map(self->fd, 192 * KiB, &a, &p));
	memset(p, 0x5a, 192 * KiB);
	ASSERT_EQ(0, snpu_host_free(self->fd, a));
	/* Still mapped: still charged. */
	EXPECT_EQ((long long)(192 * KiB), status_kb("VmPin"));
	EXPECT_EQ(-ENOMEM, host_alloc(self->fd, 128 * KiB, &b));
	ASSERT_EQ(0, munmap(p, 192 * KiB));
	EXPECT_EQ(0LL, status_kb("VmPin"));
	ASSERT_EQ(0, host_alloc(self->fd, 128 * KiB, &b));
}

TEST_F(memlock, close_uncharges)
{
	uint32_t a;
	int fd2;

	memlock_enter(_metadata, self, 256 * KiB);
	ASSERT_EQ(0, host_alloc(self->fd, 192 * KiB, &a));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0LL, status_kb("VmPin"));
	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	EXPECT_EQ(0, host_alloc(fd2, 192 * KiB, &a));
	close(fd2);
}

/* Registered (locked) and allocated (pinned) memory share the limit. */
TEST_F(memlock, limit_shared_with_registered_memory)
{
	uint32_t r, a;
	void *buf;

	memlock_enter(_metadata, self, 256 * KiB);
	buf = mmap(NULL, 192 * KiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, snpu_host_register(self->fd, buf, 192 * KiB, &r));
	EXPECT_EQ(-ENOMEM, host_alloc(self->fd, 128 * KiB, &a));
	ASSERT_EQ(0, snpu_host_free(self->fd, r));
	EXPECT_EQ(0, host_alloc(self->fd, 128 * KiB, &a));
	munmap(buf, 192 * KiB);
}

/* CAP_IPC_LOCK goes past RLIMIT_MEMLOCK, as for HOST_REGISTER. */
TEST_F(memlock, cap_ipc_lock_is_exempt)
{
	uint32_t h;

	ASSERT_EQ(0, set_memlock(64 * KiB));
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	EXPECT_EQ(0, host_alloc(self->fd, 1 * MiB, &h));
}

/* ---- memory cgroup ---------------------------------------------------- */

FIXTURE(memcg) {
	struct snpu_cg cg;
	int fd;
};

static long long cg_current(FIXTURE_DATA(memcg) *self)
{
	return snpu_cg_current(&self->cg);
}

static int cg_set_max(FIXTURE_DATA(memcg) *self, long long bytes)
{
	return snpu_cg_set_max(&self->cg, bytes);
}

static long long cg_event(FIXTURE_DATA(memcg) *self, const char *name)
{
	return snpu_cg_event(&self->cg, name);
}

/*
 * memory.current once the kernel has given back the pages of a refused
 * allocation: below @below, or the last value read after 20 s. The
 * module's vmalloc'ed backings (device memory, host memory, rings) that
 * fail part way are freed by __vmalloc() itself, before it returns, on
 * 6.1 and 6.12; 7.x (mm/vmalloc.c, defer_vm_area_cleanup()) hands the area to a
 * workqueue instead, so the pages it had charged stay in memory.current
 * until that work runs (measured on 7.3: 6.2 MiB still charged right after
 * the refusal, gone a moment later). The driver has released all of its
 * own by then (its counters say so at once). The bound only limits how
 * long a failing run waits: what passes is a charge that goes away.
 */
static long long cg_settled(FIXTURE_DATA(memcg) *self, long long below)
{
	long long v = cg_current(self);
	int i;

	for (i = 0; i < 2000 && v >= below; i++) {
		usleep(10000);
		v = cg_current(self);
	}
	return v;
}

FIXTURE_SETUP(memcg)
{
	self->fd = -1;
	ASSERT_EQ(0, snpu_cg_enter(&self->cg, "acct"))
		TH_LOG("a memory cgroup of the test's own (CONFIG_MEMCG)");
}

FIXTURE_TEARDOWN(memcg)
{
	if (self->fd >= 0)
		close(self->fd);
	snpu_cg_leave(&self->cg);
}

TEST_F(memcg, host_alloc_is_charged)
{
	long long before, during, after;
	uint32_t h;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	before = cg_current(self);
	ASSERT_EQ(0, host_alloc(self->fd, 16 * MiB, &h));
	during = cg_current(self);
	ASSERT_EQ(0, snpu_host_free(self->fd, h));
	after = cg_current(self);
	TH_LOG("memory.current %lld, %lld with 16 MiB, %lld freed",
	       before, during, after);
	EXPECT_GE(during - before, (long long)(16 * MiB));
	EXPECT_LT(after - before, (long long)(1 * MiB));
}

TEST_F(memcg, host_alloc_over_max_is_enomem)
{
	long long before;
	uint32_t h;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	before = cg_current(self);
	ASSERT_EQ(0, cg_set_max(self, before + 8 * MiB));
	EXPECT_EQ(-ENOMEM, host_alloc(self->fd, 32 * MiB, &h));
	/*
	 * The limit goes first: until the kernel has given the refused
	 * pages back (cg_settled()), any charge, even an open(), could fail.
	 */
	ASSERT_EQ(0, cg_set_max(self, -1));
	EXPECT_EQ(0ULL, host_used(self->fd));
	EXPECT_LT(cg_settled(self, before + MiB) - before, (long long)(1 * MiB));
	/* A size that fits still works. */
	ASSERT_EQ(0, cg_set_max(self, before + 8 * MiB));
	EXPECT_EQ(0, host_alloc(self->fd, 1 * MiB, &h));
	ASSERT_EQ(0, cg_set_max(self, -1));
	/* Failed, not OOM-killed: the OOM path was never taken. */
	EXPECT_EQ(0LL, cg_event(self, "oom"));
}

TEST_F(memcg, mem_alloc_over_max_is_enomem)
{
	struct snpu_ctx_query q;
	long long before;
	uint64_t addr;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	before = cg_current(self);
	ASSERT_EQ(0, cg_set_max(self, before + 8 * MiB));
	EXPECT_EQ(-ENOMEM, snpu_alloc(self->fd, 32 * MiB, 0, &addr));
	/* The limit goes first, as above (cg_settled()). */
	ASSERT_EQ(0, cg_set_max(self, -1));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0ULL, q.mem_used);
	EXPECT_EQ(0, dev_mem_used());
	EXPECT_LT(cg_settled(self, before + MiB) - before, (long long)(1 * MiB));
	/* Failed, not OOM-killed: the OOM path was never taken. */
	EXPECT_EQ(0LL, cg_event(self, "oom"));
}

TEST_F(memcg, ring_setup_over_max_is_enomem)
{
	struct snpu_ring_setup s = {
		.size = sizeof(s), .sq_entries = SNPU_RING_MAX_ENTRIES,
		.cq_entries = 2 * SNPU_RING_MAX_ENTRIES,
	};
	long long before;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	before = cg_current(self);
	ASSERT_EQ(0, cg_set_max(self, before + 128 * KiB));
	EXPECT_EQ(-ENOMEM, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &s));
	ASSERT_EQ(0, cg_set_max(self, -1));
	EXPECT_EQ(0LL, cg_event(self, "oom"));
	EXPECT_LT(cg_settled(self, before + 256 * KiB) - before,
		  (long long)(256 * KiB));
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &s));
}

#define NOPEN	64

/*
 * An open charges its context and the first chunk of its job pool to the
 * opener's cgroup: at least the first chunk's 32 jobs, 64 bytes each at
 * the very least. Prints what an open costs (memory.current and MemFree).
 */
TEST_F(memcg, open_is_charged_and_small)
{
	long long cg0, cg1, free0, free1;
	int fds[NOPEN], i;

	cg0 = cg_current(self);
	free0 = meminfo("MemFree");
	for (i = 0; i < NOPEN; i++) {
		fds[i] = snpu_open_dev();
		ASSERT_GE(fds[i], 0);
	}
	cg1 = cg_current(self);
	free1 = meminfo("MemFree");
	for (i = 0; i < NOPEN; i++)
		close(fds[i]);
	TH_LOG("%d opens: memory.current +%lld KiB (%lld B each), MemFree -%lld KiB (%lld B each)",
	       NOPEN, (cg1 - cg0) / 1024, (cg1 - cg0) / NOPEN,
	       (free0 - free1) / 1024, (free0 - free1) / NOPEN);
	EXPECT_GE(cg1 - cg0, (long long)NOPEN * 32 * 64);
	/* The whole pool would be about 2 MiB an open. */
	EXPECT_LT((free0 - free1) / NOPEN, (long long)(256 * KiB));
	EXPECT_LT(cg_current(self) - cg0, (long long)(512 * KiB));
}

/*
 * 512 KiB hold far fewer than OPEN_MAX opens (about 16 KiB each); when
 * opens are not charged, OPEN_MAX of them all succeed.
 */
#define OPEN_MAX	100
static int opens[OPEN_MAX];

TEST_F(memcg, opens_over_max_are_enomem)
{
	long long before;
	int i, n, err = 0;

	/*
	 * The driver's allocations fail at the limit; the kernel's own file
	 * allocation of an open would invoke the OOM killer if it were the
	 * one to cross it: let that fail with ENOMEM too.
	 */
	ASSERT_EQ(0, snpu_write_file("/proc/self/oom_score_adj", "-1000"));
	memset(opens, 0xff, sizeof(opens));
	before = cg_current(self);
	ASSERT_EQ(0, cg_set_max(self, before + 512 * KiB));
	/* Nothing but opens until they fail: no page faults, no output. */
	for (n = 0; n < OPEN_MAX; n++) {
		opens[n] = open(SNPU_TEST_DEV, O_RDWR | O_CLOEXEC);
		if (opens[n] < 0) {
			err = errno;
			break;
		}
	}
	for (i = 0; i < n; i++)
		close(opens[i]);
	ASSERT_EQ(0, cg_set_max(self, -1));
	TH_LOG("%d opens in 512 KiB", n);
	EXPECT_EQ(ENOMEM, err);
	EXPECT_LT(n, OPEN_MAX);
	EXPECT_EQ(0LL, cg_event(self, "oom_kill"));
	EXPECT_LT(cg_current(self) - before, (long long)(256 * KiB));
}

/* Tasks beyond the first pool chunk grow the pool: charged, ENOMEM. */
TEST_F(memcg, pool_growth_over_max_is_enomem)
{
	static struct snpu_task t[SNPU_SUBMIT_MAX];
	struct snpu_ctx_query q;
	struct snpu_callback cb;
	long long before;
	uint32_t s;
	uint64_t addr;
	int i, ret = 0;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &addr));
	/* A callback at the head keeps everything behind it in flight. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(s, 1)));
	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		t[i] = snpu_t_memset(s, addr, i & 0xff, 64);
	before = cg_current(self);
	ASSERT_EQ(0, cg_set_max(self, before + 256 * KiB));
	for (i = 0; i < 4 && !ret; i++)
		ret = snpu_submit(self->fd, t, SNPU_SUBMIT_MAX - 1, NULL);
	ASSERT_EQ(0, cg_set_max(self, -1));
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(0LL, cg_event(self, "oom"));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	/* The failed batch queued nothing. */
	EXPECT_EQ(0U, (q.tasks - 1) % (SNPU_SUBMIT_MAX - 1));
	/* Without the limit the pool grows to the quota. */
	do
		ret = snpu_submit(self->fd, t, SNPU_SUBMIT_MAX - 1, NULL);
	while (!ret);
	EXPECT_EQ(-ENOSPC, ret);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_GE(q.tasks, q.tasks_limit - SNPU_SUBMIT_MAX + 2);
	ASSERT_EQ(0, snpu_callback_wait(self->fd, 5 * NS_PER_SEC, &cb));
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, 30 * NS_PER_SEC, NULL));
}

/* After a full workout and close, the cgroup and device are back. */
TEST_F(memcg, nothing_leaks_after_close)
{
	struct snpu_ring_setup rs = {
		.size = sizeof(rs), .sq_entries = 256,
	};
	static struct snpu_task t[512];
	long long before, during;
	uint32_t s, e, h, r;
	void *p = NULL, *buf;
	uint64_t addr;
	int i;

	buf = mmap(NULL, 1 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	before = cg_current(self);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4 * MiB, 0, &addr));
	ASSERT_EQ(0, snpu_host_map(self->fd, 4 * MiB, &h, &p));
	ASSERT_EQ(0, snpu_host_register(self->fd, buf, 1 * MiB, &r));
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &rs));
	for (i = 0; i < 512; i++)
		t[i] = snpu_t_memset(s, addr, i & 0xff, 4096);
	t[511] = snpu_t_record(s, e);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 512, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, 30 * NS_PER_SEC, NULL));
	during = cg_current(self);
	munmap(p, 4 * MiB);
	close(self->fd);
	self->fd = -1;
	TH_LOG("memory.current %lld, %lld in use, %lld closed",
	       before, during, cg_current(self));
	EXPECT_GE(during - before, (long long)(8 * MiB));
	EXPECT_LT(cg_current(self) - before, (long long)(512 * KiB));
	EXPECT_EQ(0, dev_mem_used());
	munmap(buf, 1 * MiB);
}

/* ---- background threads ----------------------------------------------- */

static int bg_ioc(int fd, unsigned long cmd, struct snpu_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	return snpu_ioc(fd, cmd, s);
}

struct bg_arg {
	int fd;
	int ret;
	pid_t tid;
	pthread_barrier_t *hold;
};

/*
 * pthread_join() returns before the kernel has released the thread: its
 * /proc/self/task entry goes when the driver's pid_task() lookup fails.
 */
static void wait_released(pid_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	while (!stat(path, &st))
		sched_yield();
}

static void *bg_thread(void *p)
{
	struct bg_arg *a = p;
	struct snpu_snapshot s;

	a->tid = syscall(SYS_gettid);
	a->ret = bg_ioc(a->fd, SNPU_IOC_BG_REGISTER, &s);
	if (a->hold)
		pthread_barrier_wait(a->hold);
	/* Exits without unregistering. */
	return NULL;
}

FIXTURE(bg) {
	int fd;
	pthread_attr_t attr;
};

FIXTURE_SETUP(bg)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	pthread_attr_init(&self->attr);
	pthread_attr_setstacksize(&self->attr, 64 * 1024);
}

FIXTURE_TEARDOWN(bg)
{
	pthread_attr_destroy(&self->attr);
	close(self->fd);
}

TEST_F(bg, exited_threads_are_pruned)
{
	struct bg_arg a = { .fd = self->fd };
	struct snpu_snapshot s;
	pthread_t th;
	int i;

	for (i = 0; i < SNPU_BG_MAX + 44; i++) {
		ASSERT_EQ(0, pthread_create(&th, &self->attr, bg_thread, &a));
		ASSERT_EQ(0, pthread_join(th, NULL));
		ASSERT_EQ(0, a.ret) TH_LOG("thread %d", i);
		wait_released(a.tid);
	}
	ASSERT_EQ(0, bg_ioc(self->fd, SNPU_IOC_BG_REGISTER, &s));
	EXPECT_EQ(1U, s.bg_threads);
	ASSERT_EQ(0, bg_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &s));
	EXPECT_EQ(1U, s.bg_threads);
	ASSERT_EQ(0, bg_ioc(self->fd, SNPU_IOC_BG_UNREGISTER, &s));
}

TEST_F_TIMEOUT(bg, live_threads_are_bounded, 120)
{
	static struct bg_arg a[SNPU_BG_MAX];
	static pthread_t th[SNPU_BG_MAX];
	pthread_barrier_t hold;
	struct snpu_snapshot s;
	int i;

	ASSERT_EQ(0, pthread_barrier_init(&hold, NULL, SNPU_BG_MAX + 1));
	for (i = 0; i < SNPU_BG_MAX; i++) {
		a[i].fd = self->fd;
		a[i].hold = &hold;
		ASSERT_EQ(0, pthread_create(&th[i], &self->attr, bg_thread,
					    &a[i]));
	}
	/* Every thread has registered once all wait here... */
	for (i = 0; i < 100000; i++) {
		ASSERT_EQ(0, bg_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &s));
		if (s.bg_threads == SNPU_BG_MAX)
			break;
		usleep(1000);
	}
	ASSERT_EQ((uint32_t)SNPU_BG_MAX, s.bg_threads);
	EXPECT_EQ(-ENOSPC, bg_ioc(self->fd, SNPU_IOC_BG_REGISTER, &s));
	pthread_barrier_wait(&hold);
	for (i = 0; i < SNPU_BG_MAX; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, a[i].ret);
		wait_released(a[i].tid);
	}
	/* ...and once they have exited, there is room again. */
	EXPECT_EQ(0, bg_ioc(self->fd, SNPU_IOC_BG_REGISTER, &s));
	EXPECT_EQ(1U, s.bg_threads);
	pthread_barrier_destroy(&hold);
}

TEST_HARNESS_MAIN
