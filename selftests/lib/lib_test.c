// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu against the real driver: the public calls of <snpu.h>, their
 * results checked against the CPU, and their documented error paths
 * (Documentation/lib/). Everything goes through the library, no raw ioctl.
 *
 * Runs as root in the test VM with the module loaded with its default
 * parameters (devices=1 cores=4 mem_mb=256 ctx_mem_mb=0 ctx_host_mb=256
 * ctx_streams=64 ctx_events=1024 ctx_tasks=4096). Every test runs in its
 * own process with its own context: the fixture opens /dev/snpu0 with
 * snpu_open() and creates one stream.
 *
 * Tests that need work to stay queued hold a stream with a host callback
 * that is not completed yet (BLOCKER): unlike a timed SPIN, it cannot end
 * on its own, so those tests do not depend on how fast the VM is.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"
#include "snpu_proc.h"

#define NS_PER_MS	1000000LL
#define NS_PER_SEC	1000000000LL
#define MiB		(1ULL << 20)

/* The module's defaults, as run_vm.sh loads it. */
#define DEF_MEM_TOTAL	(256 * MiB)
#define DEF_HOST_LIMIT	(256 * MiB)
#define DEF_STREAMS	64U
#define DEF_EVENTS	1024U
#define DEF_TASKS	4096U

/* A handle no object of a fresh context has. */
#define BAD_HANDLE	0x7ffffff0U
/* user_data of the callback that holds a stream. */
#define BLOCKER		0xb10cb10cULL

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * Take the next ready callback, waiting for ever, check that it carries
 * @user_data and complete it with @status.
 *
 * Return: 0, -EBADMSG for another callback, or the library's error.
 */
static int serve_one(struct snpu_device *dev, uint64_t user_data, int status)
{
	struct snpu_callback_info cb;
	int ret;

	ret = snpu_callback_wait(dev, -1, &cb);
	if (ret)
		return ret;
	if (cb.user_data != user_data)
		return -EBADMSG;
	return snpu_callback_done(dev, cb.cookie, status);
}

/* Return: 1 when every one of @n bytes at @p is @v, else 0. */
static int all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return 0;
	return 1;
}

/* Return: 1 when the @n bytes at device address @addr are all @v. */
static int dev_all_bytes(struct snpu_device *dev, uint64_t addr, size_t n,
			 unsigned char v)
{
	unsigned char *buf = malloc(n);
	int ok;

	if (!buf)
		return 0;
	ok = !snpu_memcpy_d2h(dev, buf, addr, n) && all_bytes(buf, n, v);
	free(buf);
	return ok;
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/* SIGALRM counts in @alarms; @flags 0 or SA_RESTART. Return: 0 or -1. */
static int alarm_handler(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	alarms = 0;
	return sigaction(SIGALRM, &sa, NULL);
}

/*
 * A periodic SIGALRM every @us microseconds (0 stops it). Periodic, so that
 * a wait entered after one signal is still interrupted by the next.
 */
static int alarm_every(long us)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = us;
	it.it_interval.tv_usec = us;
	return setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- the fixture -------------------------------------------------------- */

FIXTURE(lib) {
	struct snpu_device *dev;
	struct snpu_info info;
	uint32_t s;
	size_t page;
};

FIXTURE_SETUP(lib)
{
	long page = sysconf(_SC_PAGESIZE);

	ASSERT_GT(page, 0);
	self->page = (size_t)page;
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_get_info(self->dev, &self->info));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s));
}

FIXTURE_TEARDOWN(lib)
{
	/* Cancels whatever a failed test left queued or undelivered. */
	snpu_close(self->dev);
}

/* ---- device and context ------------------------------------------------- */

TEST_F(lib, get_info_abi_and_caps)
{
	const uint64_t want = SNPU_CAP_MEMORY | SNPU_CAP_STREAMS |
			      SNPU_CAP_CALLBACKS;
	struct snpu_info info;

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, snpu_get_info(self->dev, &info));
	EXPECT_EQ((uint32_t)sizeof(info), info.size);
	EXPECT_EQ(0U, info.abi_major);
	EXPECT_EQ((uint32_t)SNPU_ABI_MAJOR, info.abi_major);
	/* The LIBSNPU_0.2 calls need 0.2; the driver is this tree's. */
	EXPECT_GE(info.abi_minor, 2U);
	EXPECT_EQ((uint32_t)SNPU_ABI_MINOR, info.abi_minor);
	EXPECT_EQ(want, (uint64_t)(info.caps & want))
		TH_LOG("caps 0x%llx", (unsigned long long)info.caps);
	EXPECT_EQ(0ULL, (unsigned long long)(info.caps & ~SNPU_CAPS_KNOWN));
	EXPECT_EQ(DEF_MEM_TOTAL, (unsigned long long)info.mem_total);
	EXPECT_GT(info.max_block_dim, 0U);
	ASSERT_NE(0U, info.mem_align);
	EXPECT_EQ(0U, info.mem_align & (info.mem_align - 1));
}

TEST_F(lib, get_info_einval)
{
	struct snpu_info info;

	EXPECT_EQ(-EINVAL, snpu_get_info(self->dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_get_info(NULL, &info));
}

TEST_F(lib, open_close_errors)
{
	struct snpu_device *keep = (struct snpu_device *)&keep;
	struct snpu_device *other = NULL;

	EXPECT_EQ(-EINVAL, snpu_open(0, ~SNPU_OPEN_CHECK_JOINS, &keep));
	EXPECT_EQ(-EINVAL, snpu_open(0, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_open_path(NULL, 0, &keep));
	EXPECT_EQ(-ENOENT, snpu_open(99, 0, &keep));
	EXPECT_EQ((struct snpu_device *)&keep, keep);
	/* Each open is a new context. */
	ASSERT_EQ(0, snpu_open_path("/dev/snpu0", 0, &other));
	EXPECT_NE(snpu_device_fd(self->dev), snpu_device_fd(other));
	snpu_close(other);
	snpu_close(NULL);
}

TEST_F(lib, device_fd)
{
	int fd = snpu_device_fd(self->dev);

	EXPECT_GE(fd, 0);
	EXPECT_EQ(-EINVAL, snpu_device_fd(NULL));
}

TEST_F(lib, nop)
{
	int i;

	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, snpu_nop(self->dev));
	EXPECT_EQ(-EINVAL, snpu_nop(NULL));
}

TEST_F(lib, ctx_query_limits_are_defaults)
{
	struct snpu_ctx_query q;

	memset(&q, 0xa5, sizeof(q));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ((uint32_t)sizeof(q), q.size);
	EXPECT_EQ(DEF_STREAMS, q.streams_limit);
	EXPECT_EQ(DEF_EVENTS, q.events_limit);
	EXPECT_EQ(DEF_TASKS, q.tasks_limit);
	EXPECT_EQ(DEF_HOST_LIMIT, (unsigned long long)q.host_limit);
	/* ctx_mem_mb=0: the quota is the device's memory. */
	EXPECT_EQ((unsigned long long)self->info.mem_total,
		  (unsigned long long)q.mem_limit);
	EXPECT_EQ(DEF_MEM_TOTAL, (unsigned long long)q.mem_limit);
	/* A fresh context: only the fixture's stream. */
	EXPECT_EQ(0ULL, (unsigned long long)q.mem_used);
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	EXPECT_EQ(1U, q.streams);
	EXPECT_EQ(0U, q.events);
	EXPECT_EQ(0U, q.tasks);
}

TEST_F(lib, ctx_query_einval)
{
	struct snpu_ctx_query q;

	EXPECT_EQ(-EINVAL, snpu_ctx_query(self->dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_ctx_query(NULL, &q));
}

TEST_F(lib, ctx_query_usage_back_to_zero)
{
	const uint64_t align = self->info.mem_align;
	const size_t page = self->page;
	struct snpu_ctx_query q;
	struct snpu_host_buf hb;
	uint64_t small, big;
	uint32_t s2, e1, e2, reg_handle;
	void *reg;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 100, 0, 0, &small));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, MiB + 1, 0, 0, &big));
	ASSERT_EQ(0, snpu_host_alloc(self->dev, 10000, &hb));
	reg = aligned_alloc(page, 2 * page);
	ASSERT_NE(NULL, reg);
	memset(reg, 0, 2 * page);
	ASSERT_EQ(0, snpu_host_register(self->dev, reg, 2 * page,
					&reg_handle));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_HIGH, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e1));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e2));
	/* Three tasks in flight behind a callback nobody serves yet. */
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, small, 1, 100));
	ASSERT_EQ(0, snpu_event_record(self->dev, e1, self->s));

	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	/* Each allocation is charged its size rounded up to mem_align. */
	EXPECT_EQ((unsigned long long)(align + ((MiB + 1 + align - 1) &
						~(align - 1))),
		  (unsigned long long)q.mem_used);
	EXPECT_EQ((unsigned long long)(hb.bytes + 2 * page),
		  (unsigned long long)q.host_used);
	EXPECT_EQ(2U, q.streams);
	EXPECT_EQ(2U, q.events);
	EXPECT_EQ(3U, q.tasks);

	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0U, q.tasks);

	EXPECT_EQ(0, snpu_mem_free(self->dev, small));
	EXPECT_EQ(0, snpu_mem_free(self->dev, big));
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
	EXPECT_EQ(0, snpu_host_unregister(self->dev, reg_handle));
	free(reg);
	EXPECT_EQ(0, snpu_event_destroy(self->dev, e1));
	EXPECT_EQ(0, snpu_event_destroy(self->dev, e2));
	EXPECT_EQ(0, snpu_stream_destroy(self->dev, s2, 0));
	EXPECT_EQ(0, snpu_stream_destroy(self->dev, self->s, 0));

	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.mem_used);
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	EXPECT_EQ(0U, q.streams);
	EXPECT_EQ(0U, q.events);
	EXPECT_EQ(0U, q.tasks);
}

/* Freed memory stops resolving at once; its charge goes with the last task. */
TEST_F(lib, free_deferred_while_tasks_queued)
{
	struct snpu_ctx_query q;
	struct snpu_host_buf hb;
	uint64_t a, b;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192, 0, 0, &b));
	ASSERT_EQ(0, snpu_memset(self->dev, b, 0x3c, 8192));
	ASSERT_EQ(0, snpu_host_alloc(self->dev, 8192, &hb));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, a, 0x77, 8192));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)hb.ptr, b, 8192));

	ASSERT_EQ(0, snpu_mem_free(self->dev, a));
	ASSERT_EQ(0, snpu_mem_free(self->dev, b));
	ASSERT_EQ(0, snpu_host_free(self->dev, &hb));
	EXPECT_EQ(NULL, hb.ptr);
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, a, NULL, NULL));
	EXPECT_EQ(-EFAULT, snpu_memset(self->dev, a, 0, 1));
	EXPECT_EQ(-EFAULT, snpu_memset_async(self->dev, self->s, b, 0, 1));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(2ULL * 8192, (unsigned long long)q.mem_used);
	EXPECT_EQ(8192ULL, (unsigned long long)q.host_used);

	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.mem_used);
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	EXPECT_EQ(0U, q.tasks);
}

/* ---- device memory ------------------------------------------------------ */

TEST_F(lib, mem_alloc_query_free)
{
	uint64_t addr, base = 1, bytes = 1;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 10000, 0, 0, &addr));
	EXPECT_NE(0ULL, (unsigned long long)addr);
	EXPECT_EQ(0ULL, (unsigned long long)(addr &
					     (self->info.mem_align - 1)));
	/* Zero-filled. */
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 10000, 0));

	ASSERT_EQ(0, snpu_mem_query(self->dev, addr + 9999, &base, &bytes));
	EXPECT_EQ(addr, base);
	EXPECT_EQ(10000ULL, (unsigned long long)bytes);
	base = bytes = 0;
	ASSERT_EQ(0, snpu_mem_query(self->dev, addr, &base, NULL));
	EXPECT_EQ(addr, base);
	ASSERT_EQ(0, snpu_mem_query(self->dev, addr + 5, NULL, &bytes));
	EXPECT_EQ(10000ULL, (unsigned long long)bytes);
	EXPECT_EQ(0, snpu_mem_query(self->dev, addr, NULL, NULL));

	ASSERT_EQ(0, snpu_mem_free(self->dev, addr));
	base = bytes = 7;
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, addr, &base, &bytes));
	EXPECT_EQ(7ULL, (unsigned long long)base);
	EXPECT_EQ(7ULL, (unsigned long long)bytes);
	EXPECT_EQ(-EINVAL, snpu_mem_free(self->dev, addr));
}

TEST_F(lib, mem_alloc_align)
{
	const uint64_t aligns[] = { 0, 1, 64, 65536, 1 << 20, 1ULL << 30 };
	uint64_t addr[sizeof(aligns) / sizeof(aligns[0])];
	unsigned int i;

	for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		uint64_t want = aligns[i] > self->info.mem_align ?
				aligns[i] : self->info.mem_align;

		ASSERT_EQ(0, snpu_mem_alloc(self->dev, 100, aligns[i], 0,
					    &addr[i]))
			TH_LOG("align %llu", (unsigned long long)aligns[i]);
		EXPECT_EQ(0ULL, (unsigned long long)(addr[i] & (want - 1)))
			TH_LOG("align %llu: 0x%llx",
			       (unsigned long long)aligns[i],
			       (unsigned long long)addr[i]);
	}
	for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++)
		EXPECT_EQ(0, snpu_mem_free(self->dev, addr[i]));
}

TEST_F(lib, mem_alloc_einval)
{
	const uint64_t total = self->info.mem_total;
	struct snpu_ctx_query q;
	uint64_t addr = 0x1234;

	EXPECT_EQ(-EINVAL, snpu_mem_alloc(NULL, 4096, 0, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 4096, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 0, 0, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, total + 1, 0, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 4096, 3, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 4096, 4096 + 2048, 0,
					  &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 4096, 1ULL << 31, 0,
					  &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_alloc(self->dev, 4096, 0, 1, &addr));
	EXPECT_EQ(0x1234ULL, (unsigned long long)addr);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.mem_used);
}

TEST_F(lib, mem_free_einval)
{
	struct snpu_device *other;
	uint64_t addr, theirs;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192, 0, 0, &addr));
	ASSERT_EQ(0, snpu_open(0, 0, &other));
	ASSERT_EQ(0, snpu_mem_alloc(other, 8192, 0, 0, &theirs));

	EXPECT_EQ(-EINVAL, snpu_mem_free(NULL, addr));
	EXPECT_EQ(-EINVAL, snpu_mem_free(self->dev, addr + 4));
	EXPECT_EQ(-EINVAL, snpu_mem_free(self->dev, addr + 4096));
	EXPECT_EQ(-EINVAL, snpu_mem_free(self->dev, 0));
	EXPECT_EQ(-EINVAL, snpu_mem_free(self->dev, theirs));
	/* Another context's address does not resolve here either. */
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, theirs, NULL, NULL));
	EXPECT_EQ(0, snpu_mem_query(other, theirs, NULL, NULL));

	EXPECT_EQ(0, snpu_mem_free(other, theirs));
	snpu_close(other);
	EXPECT_EQ(0, snpu_mem_free(self->dev, addr));
}

TEST_F(lib, mem_query_errors)
{
	uint64_t addr, base = 5, bytes = 5;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 100, 0, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_mem_query(NULL, addr, &base, &bytes));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, 0, &base, &bytes));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, addr - 1, &base, &bytes));
	/* Past the 100 bytes asked for, in the allocation's rounded tail. */
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, addr + 100, &base,
					  &bytes));
	EXPECT_EQ(-EFAULT, snpu_mem_query(self->dev, addr + 200, &base,
					  &bytes));
	EXPECT_EQ(5ULL, (unsigned long long)base);
	EXPECT_EQ(5ULL, (unsigned long long)bytes);
}

/* ---- synchronous copies and memset -------------------------------------- */

TEST_F(lib, memcpy_h2d_d2h_round_trip)
{
	const size_t n = 64 * 1024;
	unsigned char *src = malloc(n), *dst = malloc(n);
	uint64_t addr;
	size_t i;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	for (i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 31 + (i >> 8));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n, 0, 0, &addr));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, addr, src, n));
	memset(dst, 0, n);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, dst, addr, n));
	EXPECT_EQ(0, memcmp(src, dst, n));

	/* A range inside the allocation, at odd offsets. */
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, addr + 1001, src + 7, 333));
	memset(dst, 0, n);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, dst, addr, n));
	EXPECT_EQ(0, memcmp(dst + 1001, src + 7, 333));
	EXPECT_EQ(0, memcmp(dst, src, 1001));
	EXPECT_EQ(0, memcmp(dst + 1334, src + 1334, n - 1334));
	free(src);
	free(dst);
}

TEST_F(lib, memcpy_d2d)
{
	const size_t n = 32 * 1024;
	unsigned char *src = malloc(n), *dst = malloc(n);
	uint64_t a, b;
	size_t i;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	for (i = 0; i < n; i++)
		src[i] = (unsigned char)(i ^ (i >> 7));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n, 0, 0, &b));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, a, src, n));
	ASSERT_EQ(0, snpu_memcpy_d2d(self->dev, b, a, n));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, dst, b, n));
	EXPECT_EQ(0, memcmp(src, dst, n));
	free(src);
	free(dst);
}

/* snpu_memcpy_d2d() of overlapping ranges behaves like memmove(3). */
static void check_d2d_overlap(struct __test_metadata *_metadata,
			      struct snpu_device *dev, size_t n, size_t shift)
{
	const size_t total = n + shift;
	unsigned char *ref = malloc(total), *got = malloc(total);
	uint64_t addr;
	size_t i;

	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, snpu_mem_alloc(dev, total, 0, 0, &addr));

	/* dst above src: a forward copy would read what it wrote. */
	for (i = 0; i < total; i++)
		ref[i] = (unsigned char)(i * 7 + i / 4096);
	ASSERT_EQ(0, snpu_memcpy_h2d(dev, addr, ref, total));
	ASSERT_EQ(0, snpu_memcpy_d2d(dev, addr + shift, addr, n));
	memmove(ref + shift, ref, n);
	ASSERT_EQ(0, snpu_memcpy_d2h(dev, got, addr, total));
	for (i = 0; i < total && got[i] == ref[i]; i++)
		;
	EXPECT_EQ(total, i)
		TH_LOG("dst > src, %zu bytes shifted by %zu: first difference at byte %zu",
		       n, shift, i);

	/* dst below src. */
	for (i = 0; i < total; i++)
		ref[i] = (unsigned char)(i * 13 + i / 4096);
	ASSERT_EQ(0, snpu_memcpy_h2d(dev, addr, ref, total));
	ASSERT_EQ(0, snpu_memcpy_d2d(dev, addr, addr + shift, n));
	memmove(ref, ref + shift, n);
	ASSERT_EQ(0, snpu_memcpy_d2h(dev, got, addr, total));
	for (i = 0; i < total && got[i] == ref[i]; i++)
		;
	EXPECT_EQ(total, i)
		TH_LOG("dst < src, %zu bytes shifted by %zu: first difference at byte %zu",
		       n, shift, i);

	EXPECT_EQ(0, snpu_mem_free(dev, addr));
	free(ref);
	free(got);
}

TEST_F(lib, memcpy_d2d_overlap)
{
	check_d2d_overlap(_metadata, self->dev, 64 * 1024, 4096);
	check_d2d_overlap(_metadata, self->dev, 64 * 1024, 3);
}

/* The same over more than the driver's 1 MiB copy chunk. */
TEST_F(lib, memcpy_d2d_overlap_large)
{
	check_d2d_overlap(_metadata, self->dev, 2 * MiB, 4096);
}

TEST_F(lib, memcpy_einval)
{
	char host[64] = { 0 };
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	EXPECT_EQ(-EINVAL, snpu_memcpy_h2d(NULL, addr, host, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_h2d(self->dev, addr, NULL, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_h2d(self->dev, addr, host, 0));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2h(NULL, host, addr, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2h(self->dev, NULL, addr, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2h(self->dev, host, addr, 0));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2d(NULL, addr, addr + 64, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_d2d(self->dev, addr, addr + 64, 0));
}

TEST_F(lib, memcpy_efault)
{
	unsigned char host[8192];
	struct snpu_device *other;
	uint64_t addr, small, theirs;
	void *none;

	memset(host, 0x5a, sizeof(host));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 100, 0, 0, &small));
	ASSERT_EQ(0, snpu_open(0, 0, &other));
	ASSERT_EQ(0, snpu_mem_alloc(other, 4096, 0, 0, &theirs));

	/* Device ranges not inside one allocation: nothing is copied. */
	EXPECT_EQ(-EFAULT, snpu_memcpy_h2d(self->dev, addr + 8, host, 4096));
	EXPECT_EQ(-EFAULT, snpu_memcpy_h2d(self->dev, addr, host, 4097));
	/* Across the end of one allocation into the next. */
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2h(self->dev, host, addr + 4000, 200));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2h(self->dev, host, 0, 16));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2d(self->dev, addr, small, 101));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2d(self->dev, addr, theirs, 16));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2d(self->dev, theirs, addr, 16));
	/* Starting in the rounded tail of a 100-byte allocation. */
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2h(self->dev, host, small + 100, 1));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2h(self->dev, host, small + 200, 4));
	EXPECT_EQ(-EFAULT, snpu_memcpy_h2d(self->dev, small + 200, host, 4));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
	EXPECT_TRUE(all_bytes(host, sizeof(host), 0x5a));

	/* A host range that is not readable. */
	none = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	EXPECT_EQ(-EFAULT, snpu_memcpy_h2d(self->dev, addr, none, 16));
	EXPECT_EQ(-EFAULT, snpu_memcpy_d2h(self->dev, none, addr, 16));
	munmap(none, self->page);
	snpu_close(other);
}

TEST_F(lib, memset_sets_bytes)
{
	unsigned char buf[4096];
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, sizeof(buf), 0, 0, &addr));
	ASSERT_EQ(0, snpu_memset(self->dev, addr + 100, 0xab, 1000));
	ASSERT_EQ(0, snpu_memset(self->dev, addr + 2000, 255, 1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, buf, addr, sizeof(buf)));
	EXPECT_TRUE(all_bytes(buf, 100, 0));
	EXPECT_TRUE(all_bytes(buf + 100, 1000, 0xab));
	EXPECT_TRUE(all_bytes(buf + 1100, 900, 0));
	EXPECT_EQ(255, buf[2000]);
	EXPECT_TRUE(all_bytes(buf + 2001, sizeof(buf) - 2001, 0));
	ASSERT_EQ(0, snpu_memset(self->dev, addr, 0, sizeof(buf)));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, sizeof(buf), 0));
}

TEST_F(lib, memset_einval)
{
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_memset(self->dev, addr, 0x5a, 4096));
	EXPECT_EQ(-EINVAL, snpu_memset(self->dev, addr, 300, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(self->dev, addr, 256, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(self->dev, addr, -1, 16));
	EXPECT_EQ(-EINVAL, snpu_memset(self->dev, addr, 0, 0));
	EXPECT_EQ(-EINVAL, snpu_memset(NULL, addr, 0, 16));
	/* Refused, not truncated: the memory is unchanged. */
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0x5a));
}

TEST_F(lib, memset_efault)
{
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	EXPECT_EQ(-EFAULT, snpu_memset(self->dev, addr + 1, 1, 4096));
	EXPECT_EQ(-EFAULT, snpu_memset(self->dev, addr + 4096, 1, 1));
	EXPECT_EQ(-EFAULT, snpu_memset(self->dev, 0, 1, 1));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
}

/* ---- host memory -------------------------------------------------------- */

TEST_F(lib, host_alloc_free)
{
	struct snpu_ctx_query q;
	struct snpu_host_buf hb;

	memset(&hb, 0xa5, sizeof(hb));
	ASSERT_EQ(0, snpu_host_alloc(self->dev, 10000, &hb));
	ASSERT_NE(NULL, hb.ptr);
	EXPECT_EQ((10000 + self->page - 1) & ~(self->page - 1), hb.bytes);
	EXPECT_EQ(0UL, (unsigned long)((uintptr_t)hb.ptr & (self->page - 1)));
	EXPECT_TRUE(all_bytes(hb.ptr, hb.bytes, 0));
	memset(hb.ptr, 0x66, hb.bytes);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ((unsigned long long)hb.bytes,
		  (unsigned long long)q.host_used);

	ASSERT_EQ(0, snpu_host_free(self->dev, &hb));
	EXPECT_EQ(NULL, hb.ptr);
	EXPECT_EQ(0UL, (unsigned long)hb.bytes);
	EXPECT_EQ(0U, hb.handle);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	EXPECT_EQ(-ENOENT, snpu_host_free(self->dev, &hb));
}

TEST_F(lib, host_alloc_einval)
{
	struct snpu_host_buf hb, orig;
	struct snpu_ctx_query q;

	memset(&hb, 0xa5, sizeof(hb));
	orig = hb;
	EXPECT_EQ(-EINVAL, snpu_host_alloc(NULL, 4096, &hb));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->dev, 4096, NULL));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->dev, 0, &hb));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->dev, DEF_HOST_LIMIT + 1,
					   &hb));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->dev, SIZE_MAX, &hb));
	EXPECT_EQ(-EINVAL, snpu_host_alloc(self->dev, SIZE_MAX - 100, &hb));
	EXPECT_EQ(0, memcmp(&hb, &orig, sizeof(hb)));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);

	EXPECT_EQ(-EINVAL, snpu_host_free(NULL, &hb));
	EXPECT_EQ(-EINVAL, snpu_host_free(self->dev, NULL));
}

/* A buffer whose ptr was changed is refused, and nothing is done. */
TEST_F(lib, host_free_changed_ptr)
{
	struct snpu_host_buf hb, bad;
	struct snpu_ctx_query q;

	ASSERT_EQ(0, snpu_host_alloc(self->dev, 8192, &hb));
	bad = hb;
	bad.ptr = (char *)hb.ptr + 1;
	EXPECT_EQ(-EINVAL, snpu_host_free(self->dev, &bad));
	EXPECT_EQ((char *)hb.ptr + 1, (char *)bad.ptr);
	EXPECT_EQ(hb.handle, bad.handle);
	/* Still mapped and still charged. */
	memset(hb.ptr, 1, hb.bytes);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(8192ULL, (unsigned long long)q.host_used);
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
}

TEST_F(lib, host_buf_async_copies)
{
	const unsigned int n = 1024;
	struct snpu_kernel_arg args[3];
	struct snpu_host_buf hb;
	int32_t *in, *out;
	uint64_t a, c;
	unsigned int i;

	ASSERT_EQ(0, snpu_host_alloc(self->dev, 3 * n * 4, &hb));
	in = hb.ptr;
	out = (int32_t *)((char *)hb.ptr + 2 * n * 4);
	for (i = 0; i < n; i++) {
		in[i] = (int32_t)(7 * i) - 3000;
		out[i] = -1;
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &c));

	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_H2D, a,
				       (uintptr_t)in, n * 4));
	args[0] = snpu_arg_buf(c, n * 4);
	args[1] = snpu_arg_buf(a, n * 4);
	args[2] = snpu_arg_buf(a, n * 4);
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_ADD_I32, 3,
				 args, 3));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)out, c, n * 4));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	for (i = 0; i < n; i++)
		ASSERT_EQ(2 * ((int32_t)(7 * i) - 3000), out[i])
			TH_LOG("element %u", i);
	/* The input half was only read. */
	for (i = 0; i < n; i++)
		ASSERT_EQ((int32_t)(7 * i) - 3000, in[i]);

	/* A D2D task on the same stream, then back out at another offset. */
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2D, a,
				       c, n * 4));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)hb.ptr + n * 4, a, n * 4));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, memcmp((char *)hb.ptr + n * 4, out, n * 4));
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
}

/* Queued copies only take host memory of the context. */
TEST_F(lib, async_copy_host_side_checked)
{
	struct snpu_stream_query q;
	struct snpu_host_buf hb;
	static char plain[8192];
	uint64_t a;
	void *old;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192, 0, 0, &a));
	ASSERT_EQ(0, snpu_host_alloc(self->dev, 4096, &hb));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_H2D, a,
					     (uintptr_t)plain, 64));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_D2H,
					     (uintptr_t)plain, a, 64));
	/* Running past the end of the host buffer. */
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_D2H,
					     (uintptr_t)hb.ptr + 4000, a,
					     200));
	/* The whole buffer is fine; 0 bytes and a bad direction are not. */
	EXPECT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)hb.ptr, a, 4096));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_D2H,
					     (uintptr_t)hb.ptr, a, 0));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s, 4,
					     a, a + 4096, 16));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(NULL, self->s, SNPU_COPY_D2D,
					     a, a + 4096, 16));
	/* Device side outside the allocation. */
	EXPECT_EQ(-EFAULT, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_H2D, a + 4097,
					     (uintptr_t)hb.ptr, 4096));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));

	old = hb.ptr;
	ASSERT_EQ(0, snpu_host_free(self->dev, &hb));
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_D2H, (uintptr_t)old,
					     a, 64));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(1ULL, (unsigned long long)q.submitted);
}

TEST_F(lib, memset_async)
{
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr, 0xc3, 4096));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr + 10, 0, 10));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 10, 0xc3));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr + 10, 10, 0));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr + 20, 4076, 0xc3));

	EXPECT_EQ(-EINVAL, snpu_memset_async(self->dev, self->s, addr, 300,
					     16));
	EXPECT_EQ(-EINVAL, snpu_memset_async(self->dev, self->s, addr, -1,
					     16));
	EXPECT_EQ(-EINVAL, snpu_memset_async(self->dev, self->s, addr, 1, 0));
	EXPECT_EQ(-EINVAL, snpu_memset_async(NULL, self->s, addr, 1, 16));
	EXPECT_EQ(-EFAULT, snpu_memset_async(self->dev, self->s, addr, 1,
					     4097));
	EXPECT_EQ(-ENOENT, snpu_memset_async(self->dev, BAD_HANDLE, addr, 1,
					     16));
}

TEST_F(lib, host_register_async_copies)
{
	const size_t page = self->page;
	struct snpu_ctx_query q;
	uint32_t handle = 0;
	uint32_t *reg;
	uint64_t a;
	size_t i, n = page / 4;

	reg = aligned_alloc(page, 2 * page);
	ASSERT_NE(NULL, reg);
	for (i = 0; i < n; i++) {
		reg[i] = (uint32_t)(i * 2654435761U);
		reg[n + i] = 0;
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 2 * page, 0, 0, &a));
	ASSERT_EQ(0, snpu_host_register(self->dev, reg, 2 * page, &handle));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ((unsigned long long)(2 * page),
		  (unsigned long long)q.host_used);

	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_H2D, a,
				       (uintptr_t)reg, page));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, a + page, 0x11,
				       page));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)&reg[n], a, page));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, memcmp(reg, &reg[n], page));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_D2H,
				       (uintptr_t)reg, a + page, page));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(all_bytes(reg, page, 0x11));

	ASSERT_EQ(0, snpu_host_unregister(self->dev, handle));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	/* The range stops resolving at once. */
	EXPECT_EQ(-EINVAL, snpu_memcpy_async(self->dev, self->s,
					     SNPU_COPY_H2D, a,
					     (uintptr_t)reg, 16));
	EXPECT_EQ(-ENOENT, snpu_host_unregister(self->dev, handle));
	EXPECT_EQ(-ENOENT, snpu_host_unregister(self->dev, BAD_HANDLE));
	EXPECT_EQ(-EINVAL, snpu_host_unregister(NULL, handle));
	free(reg);
}

TEST_F(lib, host_register_einval)
{
	const size_t page = self->page;
	struct snpu_ctx_query q;
	uint32_t handle = 0xabcd;
	char *reg;

	reg = aligned_alloc(page, 2 * page);
	ASSERT_NE(NULL, reg);
	memset(reg, 0, 2 * page);
	EXPECT_EQ(-EINVAL, snpu_host_register(NULL, reg, page, &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, NULL, page,
					      &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg, page, NULL));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg + 1, page,
					      &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg, 0, &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg, page + 1,
					      &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg, page / 2,
					      &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev, reg,
					      DEF_HOST_LIMIT + page,
					      &handle));
	/* Wrapping around, and past the user address space. */
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev,
					      (void *)(UINTPTR_MAX & ~(uintptr_t)(page - 1)),
					      2 * page, &handle));
	EXPECT_EQ(-EINVAL, snpu_host_register(self->dev,
					      (void *)(uintptr_t)(1ULL << 60),
					      page, &handle));
	EXPECT_EQ(0xabcdU, handle);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.host_used);
	free(reg);
}

TEST_F(lib, host_register_eexist)
{
	const size_t page = self->page;
	struct snpu_host_buf hb;
	uint32_t handle, h2 = 0x5555;
	char *reg;

	reg = aligned_alloc(page, 4 * page);
	ASSERT_NE(NULL, reg);
	memset(reg, 0, 4 * page);
	ASSERT_EQ(0, snpu_host_register(self->dev, reg + page, 2 * page,
					&handle));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->dev, reg + page, 2 * page,
					      &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->dev, reg, 2 * page, &h2));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->dev, reg + 2 * page,
					      2 * page, &h2));
	EXPECT_EQ(0x5555U, h2);
	/* Neighbours are fine. */
	ASSERT_EQ(0, snpu_host_register(self->dev, reg, page, &h2));
	EXPECT_EQ(0, snpu_host_unregister(self->dev, h2));

	/* Nor may it overlap a mapping of snpu_host_alloc(). */
	ASSERT_EQ(0, snpu_host_alloc(self->dev, 2 * page, &hb));
	EXPECT_EQ(-EEXIST, snpu_host_register(self->dev, hb.ptr, page, &h2));
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
	EXPECT_EQ(0, snpu_host_unregister(self->dev, handle));
	free(reg);
}

TEST_F(lib, host_register_efault)
{
	const size_t page = self->page;
	uint32_t handle = 0x77;
	void *p;

	/* Not mapped. */
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p, 2 * page));
	EXPECT_EQ(-EFAULT, snpu_host_register(self->dev, p, 2 * page,
					      &handle));
	/* Mapped but not writable. */
	p = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, snpu_host_register(self->dev, p, page, &handle));
	munmap(p, page);
	EXPECT_EQ(0x77U, handle);
}

/* ---- launches ----------------------------------------------------------- */

TEST_F(lib, launch_add_i32)
{
	const unsigned int n = 4096;
	struct snpu_kernel_arg args[3];
	int32_t *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
	uint64_t da, db, dc;
	unsigned int i;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	for (i = 0; i < n; i++) {
		a[i] = (int32_t)(i * 2654435761U);
		b[i] = (int32_t)(0x7fff0000U - i * 40503U);
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &da));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &db));
	/* c is one element larger than used: the launch names n elements. */
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4 + 4, 0, 0, &dc));
	ASSERT_EQ(0, snpu_memset(self->dev, dc, 0xee, n * 4 + 4));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, da, a, n * 4));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, db, b, n * 4));

	args[0] = snpu_arg_buf(dc, n * 4);
	args[1] = snpu_arg_buf(da, n * 4);
	args[2] = snpu_arg_buf(db, n * 4);
	/* 7 blocks: slices of ceil(4096 / 7) elements, the last one short. */
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_ADD_I32, 7,
				 args, 3));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, c, dc, n * 4));
	for (i = 0; i < n; i++)
		ASSERT_EQ((int32_t)((uint32_t)a[i] + (uint32_t)b[i]), c[i])
			TH_LOG("element %u", i);
	EXPECT_TRUE(dev_all_bytes(self->dev, dc + n * 4, 4, 0xee));
	free(a);
	free(b);
	free(c);
}

TEST_F(lib, launch_axpy_f32)
{
	const unsigned int n = 3000;
	const float alpha = 2.5f;
	struct snpu_kernel_arg args[3];
	float *x = malloc(n * 4), *y = malloc(n * 4), *got = malloc(n * 4);
	uint64_t dx, dy;
	unsigned int i;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, got);
	/* Values whose products and sums are exact in f32: no rounding. */
	for (i = 0; i < n; i++) {
		x[i] = (float)(int)(i % 97) * 0.25f - 12.0f;
		y[i] = (float)(int)(i % 13) * 0.5f - 3.0f;
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &dx));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, n * 4, 0, 0, &dy));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, dx, x, n * 4));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, dy, y, n * 4));

	args[0] = snpu_arg_buf(dy, n * 4);
	args[1] = snpu_arg_buf(dx, n * 4);
	args[2] = snpu_arg_f32(alpha);
	EXPECT_EQ(0x40200000ULL, (unsigned long long)args[2].value);
	EXPECT_EQ(0ULL, (unsigned long long)args[2].bytes);
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_AXPY_F32, 4,
				 args, 3));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, got, dy, n * 4));
	for (i = 0; i < n; i++) {
		float want = y[i] + alpha * x[i];

		ASSERT_EQ(0, memcmp(&want, &got[i], 4))
			TH_LOG("y[%u] = %g, want %g", i, (double)got[i],
			       (double)want);
	}
	free(x);
	free(y);
	free(got);
}

/*
 * snpu_launch_dims() on the real device: what it picks for a GEMM past
 * the work bound (512 x 512 x 100: 26 214 400 multiply-adds, 2 blocks at
 * least) and for one of snpu-train's is a multiple of the cores, the
 * driver takes it, and the result is the reference's, summed over k from
 * 0 up; a tiny ADD gets one block; the errors of its page.
 */
TEST_F(lib, launch_dims_sized_launches_run)
{
	static const uint32_t shapes[][3] = { { 512, 512, 100 },
					      { 64, 128, 784 } };
	struct snpu_kernel_arg args[6];
	struct snpu_info info;
	unsigned int s;

	ASSERT_EQ(0, snpu_get_info(self->dev, &info));
	for (s = 0; s < 2; s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4);
		float *c = malloc((size_t)m * n * 4);
		uint64_t da, db, dc;
		uint32_t i, j, l;
		int bd;

		ASSERT_NE(NULL, a);
		ASSERT_NE(NULL, b);
		ASSERT_NE(NULL, c);
		for (i = 0; i < m * k; i++)
			a[i] = (float)(int)(i % 7) * 0.375f - 1.0f;
		for (i = 0; i < k * n; i++)
			b[i] = (float)(int)(i % 11) * 0.1f - 0.5f;
		ASSERT_EQ(0, snpu_mem_alloc(self->dev, (uint64_t)m * k * 4, 0, 0,
					    &da));
		ASSERT_EQ(0, snpu_mem_alloc(self->dev, (uint64_t)k * n * 4, 0, 0,
					    &db));
		ASSERT_EQ(0, snpu_mem_alloc(self->dev, (uint64_t)m * n * 4, 0, 0,
					    &dc));
		ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, da, a,
					     (uint64_t)m * k * 4));
		ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, db, b,
					     (uint64_t)k * n * 4));
		args[0] = snpu_arg_buf(dc, (uint64_t)m * n * 4);
		args[1] = snpu_arg_buf(da, (uint64_t)m * k * 4);
		args[2] = snpu_arg_buf(db, (uint64_t)k * n * 4);
		args[3] = snpu_arg_u64(m);
		args[4] = snpu_arg_u64(n);
		args[5] = snpu_arg_u64(k);
		bd = snpu_launch_dims(&info, SNPU_KERNEL_GEMM_F32, args, 6);
		ASSERT_GE(bd, (int)info.cores);
		EXPECT_EQ(0, bd % (int)info.cores);
		ASSERT_EQ(0, snpu_launch(self->dev, self->s,
					 SNPU_KERNEL_GEMM_F32, (uint32_t)bd,
					 args, 6));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, c, dc,
					     (uint64_t)m * n * 4));
		for (i = 0; i < m; i++) {
			for (j = 0; j < n; j++) {
				float acc = 0.0f;

				for (l = 0; l < k; l++)
					acc += a[i * k + l] * b[l * n + j];
				ASSERT_EQ(0, memcmp(&acc, &c[i * n + j], 4))
					TH_LOG("%ux%ux%u, %d blocks: c[%u][%u]",
					       m, n, k, bd, i, j);
			}
		}
		snpu_mem_free(self->dev, da);
		snpu_mem_free(self->dev, db);
		snpu_mem_free(self->dev, dc);
		free(a);
		free(b);
		free(c);
	}
	args[0] = snpu_arg_buf(0x1000, 40);
	args[1] = snpu_arg_buf(0x2000, 40);
	args[2] = snpu_arg_buf(0x3000, 40);
	EXPECT_EQ(1, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, args, 3));
	EXPECT_EQ(-EINVAL, snpu_launch_dims(NULL, SNPU_KERNEL_ADD_F32, args,
					    3));
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_COUNT, args, 3));
	args[1].bytes = 4;
	EXPECT_EQ(-EINVAL, snpu_launch_dims(&info, SNPU_KERNEL_ADD_F32, args,
					    3));
}

TEST_F(lib, launch_einval)
{
	struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS + 1];
	struct snpu_stream_query q;
	uint64_t a, b;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &b));
	memset(args, 0, sizeof(args));

	/* Refused by the library. */
	EXPECT_EQ(-EINVAL, snpu_launch(NULL, self->s, SNPU_KERNEL_NOP, 1,
				       NULL, 0));
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				       args, SNPU_KERNEL_MAX_ARGS + 1));
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_SPIN,
				       1, NULL, 1));
	/* Refused by the driver. */
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_COUNT,
				       1, NULL, 0));
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 0,
				       NULL, 0));
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP,
				       self->info.max_block_dim + 1, NULL, 0));
	args[0] = snpu_arg_buf(a, 4096);
	args[1] = snpu_arg_buf(b, 4096);
	args[2] = snpu_arg_buf(b, 4092);	/* shorter than c */
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s,
				       SNPU_KERNEL_ADD_I32, 4, args, 3));
	args[2] = snpu_arg_u64(5);		/* a scalar for a buffer */
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s,
				       SNPU_KERNEL_ADD_I32, 4, args, 3));
	args[2] = snpu_arg_u64(1ULL << 32);	/* f32 with upper bits */
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s,
				       SNPU_KERNEL_AXPY_F32, 4, args, 3));
	args[0] = snpu_arg_u64(0);
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_FAIL,
				       1, args, 1));
	args[0] = snpu_arg_u64(4096);
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_FAIL,
				       1, args, 1));
	args[0] = snpu_arg_u64(NS_PER_SEC + 1);
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_SPIN,
				       1, args, 1));
	/* An argument the kernel does not take. */
	args[0] = snpu_arg_u64(1);
	EXPECT_EQ(-EINVAL, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				       args, 1));

	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.submitted);
}

TEST_F(lib, launch_bad_handles_and_ranges)
{
	struct snpu_kernel_arg args[3];
	struct snpu_stream_query q;
	uint64_t a, b;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &b));
	args[0] = snpu_arg_buf(a, 4096);
	args[1] = snpu_arg_buf(b, 4096);
	args[2] = snpu_arg_buf(b + 4, 4096);	/* runs past b */
	EXPECT_EQ(-EFAULT, snpu_launch(self->dev, self->s,
				       SNPU_KERNEL_ADD_I32, 4, args, 3));
	args[2] = snpu_arg_buf(0x1000, 4096);
	EXPECT_EQ(-EFAULT, snpu_launch(self->dev, self->s,
				       SNPU_KERNEL_ADD_I32, 4, args, 3));
	EXPECT_EQ(-ENOENT, snpu_launch(self->dev, BAD_HANDLE,
				       SNPU_KERNEL_NOP, 1, NULL, 0));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP,
				 self->info.max_block_dim, NULL, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
}

/* ---- batches ------------------------------------------------------------ */

TEST_F(lib, submit_batch_1024)
{
	static struct snpu_task t[SNPU_SUBMIT_MAX];
	static unsigned char got[SNPU_SUBMIT_MAX];
	struct snpu_stream_query q;
	uint64_t addr, seq = 0;
	unsigned int i;

	ASSERT_EQ(1024, SNPU_SUBMIT_MAX);
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, SNPU_SUBMIT_MAX, 0, 0, &addr));
	/* One byte each, so that every task shows in the result. */
	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		snpu_prep_memset(&t[i], self->s, addr + i, (int)((i * 7 + 1) & 0xff),
				 1);
	ASSERT_EQ(0, snpu_submit(self->dev, t, SNPU_SUBMIT_MAX, &seq));
	EXPECT_EQ((uint64_t)SNPU_SUBMIT_MAX, seq);
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ((uint64_t)SNPU_SUBMIT_MAX, q.submitted);
	EXPECT_EQ((uint64_t)SNPU_SUBMIT_MAX, q.completed);
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, got, addr, sizeof(got)));
	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		ASSERT_EQ((unsigned char)((i * 7 + 1) & 0xff), got[i])
			TH_LOG("byte %u", i);

	/* Sequence numbers go on with the next batch. */
	for (i = 0; i < 3; i++)
		snpu_prep_launch(&t[i], self->s, SNPU_KERNEL_NOP, 1, NULL, 0);
	ASSERT_EQ(0, snpu_submit(self->dev, t, 3, &seq));
	EXPECT_EQ((uint64_t)SNPU_SUBMIT_MAX + 3, seq);
	/* seq may be NULL. */
	ASSERT_EQ(0, snpu_submit(self->dev, t, 1, NULL));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ((uint64_t)SNPU_SUBMIT_MAX + 4, q.completed);
}

TEST_F(lib, submit_all_or_nothing)
{
	struct snpu_task t[8];
	struct snpu_stream_query q;
	struct snpu_ctx_query cq;
	uint64_t addr, seq;
	unsigned int i;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1, NULL,
				 0));

	for (i = 0; i < 8; i++)
		snpu_prep_memset(&t[i], self->s, addr + i * 8, 0x99, 8);
	/* Malformed: a launch with block_dim 0 at index 5. */
	ASSERT_EQ(0, snpu_prep_launch(&t[5], self->s, SNPU_KERNEL_NOP, 0,
				      NULL, 0));
	seq = 0xdead;
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 8, &seq));
	EXPECT_EQ(0xdeadULL, (unsigned long long)seq);
	/* A device range outside the allocation at the last index. */
	snpu_prep_memset(&t[5], self->s, addr + 40, 0x99, 8);
	snpu_prep_memset(&t[7], self->s, addr + 4092, 0x99, 8);
	EXPECT_EQ(-EFAULT, snpu_submit(self->dev, t, 8, &seq));
	/* An unknown stream in the middle. */
	snpu_prep_memset(&t[7], self->s, addr + 56, 0x99, 8);
	t[3].stream = BAD_HANDLE;
	EXPECT_EQ(-ENOENT, snpu_submit(self->dev, t, 8, &seq));
	/* A memset value above 255 (the prep helper stores it as is). */
	t[3].stream = self->s;
	snpu_prep_memset(&t[6], self->s, addr + 48, 256, 8);
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 8, &seq));
	/* A non-zero reserved field. */
	snpu_prep_memset(&t[6], self->s, addr + 48, 0x99, 8);
	t[2].reserved0 = 1;
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 8, &seq));
	EXPECT_EQ(0xdeadULL, (unsigned long long)seq);

	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(1ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(1ULL, (unsigned long long)q.completed);
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	EXPECT_EQ(0U, cq.tasks);
	/* None of the good tasks before the bad one ran. */
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));

	/* Fixed, the same batch goes through whole. */
	t[2].reserved0 = 0;
	ASSERT_EQ(0, snpu_submit(self->dev, t, 8, &seq));
	EXPECT_EQ(9ULL, (unsigned long long)seq);
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 64, 0x99));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr + 64, 4096 - 64, 0));
}

TEST_F(lib, submit_einval)
{
	static struct snpu_task t[SNPU_SUBMIT_MAX + 1];
	struct snpu_stream_query q;
	uint64_t seq = 0xbeef;
	unsigned int i;

	for (i = 0; i < SNPU_SUBMIT_MAX + 1; i++)
		snpu_prep_launch(&t[i], self->s, SNPU_KERNEL_NOP, 1, NULL, 0);
	EXPECT_EQ(-EINVAL, snpu_submit(NULL, t, 1, &seq));
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, NULL, 1, &seq));
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 0, &seq));
	/* Refused rather than split. */
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, SNPU_SUBMIT_MAX + 1,
				       &seq));
	EXPECT_EQ(0xbeefULL, (unsigned long long)seq);
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(-EINVAL, snpu_prep_launch(NULL, self->s, SNPU_KERNEL_NOP, 1,
					    NULL, 0));
}

/* Tasks of one batch on two streams, ordered by an event of the batch. */
TEST_F(lib, submit_two_streams_with_event)
{
	struct snpu_task t[4];
	struct snpu_stream_query q;
	uint64_t a, b, seq = 0;
	uint32_t s2, e;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_LOW, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &b));
	/* A wait on a never-recorded event: only a record before it counts. */
	snpu_prep_stream_wait(&t[0], s2, e);
	snpu_prep_event_record(&t[1], self->s, e);
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 2, NULL));

	snpu_prep_memset(&t[0], self->s, a, 0x42, 4096);
	snpu_prep_event_record(&t[1], self->s, e);
	snpu_prep_stream_wait(&t[2], s2, e);
	snpu_prep_copy(&t[3], s2, SNPU_COPY_D2D, b, a, 4096);
	ASSERT_EQ(0, snpu_submit(self->dev, t, 4, &seq));
	/* The last task's sequence number in its own stream. */
	EXPECT_EQ(2ULL, (unsigned long long)seq);
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, s2, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, b, 4096, 0x42));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(2ULL, (unsigned long long)q.submitted);
}

TEST_F(lib, submit_enospc_at_task_quota)
{
	static struct snpu_task t[SNPU_SUBMIT_MAX];
	struct snpu_ctx_query cq;
	struct snpu_stream_query q;
	unsigned int i;

	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		snpu_prep_launch(&t[i], self->s, SNPU_KERNEL_NOP, 1, NULL, 0);
	/* 1 + 3 * 1024 + 1023 = 4096 tasks in flight behind a callback. */
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, snpu_submit(self->dev, t, SNPU_SUBMIT_MAX, NULL));
	EXPECT_EQ(-ENOSPC, snpu_submit(self->dev, t, SNPU_SUBMIT_MAX, NULL));
	ASSERT_EQ(0, snpu_submit(self->dev, t, SNPU_SUBMIT_MAX - 1, NULL));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	EXPECT_EQ(DEF_TASKS, cq.tasks);
	EXPECT_EQ(-ENOSPC, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				       NULL, 0));
	EXPECT_EQ(-ENOSPC, snpu_launch_host_func(self->dev, self->s, 1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ((unsigned long long)DEF_TASKS,
		  (unsigned long long)q.submitted);

	/* Abort cancels the undelivered callback and everything behind it. */
	ASSERT_EQ(0, snpu_stream_abort(self->dev, self->s));
	EXPECT_EQ(-ECANCELED, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	EXPECT_EQ(0U, cq.tasks);
}

/* ---- streams ------------------------------------------------------------ */

TEST_F(lib, stream_create_query)
{
	const int prios[] = { SNPU_PRIO_LOW, SNPU_PRIO_NORMAL, SNPU_PRIO_HIGH };
	struct snpu_stream_query q;
	uint32_t s[3];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, snpu_stream_create(self->dev, prios[i], 0, &s[i]));
		EXPECT_NE(self->s, s[i]);
		memset(&q, 0xa5, sizeof(q));
		ASSERT_EQ(0, snpu_stream_query(self->dev, s[i], &q));
		EXPECT_EQ(prios[i], q.priority);
		EXPECT_EQ(s[i], q.handle);
		EXPECT_EQ(0, q.error);
		EXPECT_EQ(0ULL, (unsigned long long)q.submitted);
		EXPECT_EQ(0ULL, (unsigned long long)q.completed);
	}
	EXPECT_NE(s[0], s[1]);
	EXPECT_NE(s[1], s[2]);
	EXPECT_NE(s[0], s[2]);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, snpu_stream_destroy(self->dev, s[i], 0));
}

TEST_F(lib, stream_create_einval)
{
	struct snpu_ctx_query q;
	uint32_t s = 0x4242;

	EXPECT_EQ(-EINVAL, snpu_stream_create(NULL, 0, 0, &s));
	EXPECT_EQ(-EINVAL, snpu_stream_create(self->dev, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_stream_create(self->dev, 2, 0, &s));
	EXPECT_EQ(-EINVAL, snpu_stream_create(self->dev, -2, 0, &s));
	EXPECT_EQ(-EINVAL, snpu_stream_create(self->dev, 0, 1, &s));
	EXPECT_EQ(0x4242U, s);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(1U, q.streams);
}

TEST_F(lib, stream_create_enospc)
{
	struct snpu_ctx_query q;
	uint32_t s, keep = 0x99;
	unsigned int i;

	/* The fixture's stream is one of the 64. */
	for (i = 1; i < DEF_STREAMS; i++)
		ASSERT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s))
			TH_LOG("stream %u", i);
	EXPECT_EQ(-ENOSPC, snpu_stream_create(self->dev, 0, 0, &keep));
	EXPECT_EQ(0x99U, keep);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(DEF_STREAMS, q.streams);
	ASSERT_EQ(0, snpu_stream_destroy(self->dev, s, 0));
	EXPECT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s));
}

TEST_F(lib, stream_query_errors)
{
	struct snpu_stream_query q;

	EXPECT_EQ(-EINVAL, snpu_stream_query(NULL, self->s, &q));
	EXPECT_EQ(-EINVAL, snpu_stream_query(self->dev, self->s, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->dev, BAD_HANDLE, &q));
}

TEST_F(lib, stream_synchronize_timeout)
{
	struct snpu_stream_query q;
	uint64_t t0;

	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, 0));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1, NULL,
				 0));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev, self->s, 0));
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev, self->s,
						      20 * NS_PER_MS));
	EXPECT_GE(now_ns() - t0, (uint64_t)(20 * NS_PER_MS));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(2ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(0ULL, (unsigned long long)q.completed);

	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(2ULL, (unsigned long long)q.completed);

	EXPECT_EQ(-ENOENT, snpu_stream_synchronize(self->dev, BAD_HANDLE, 0));
	EXPECT_EQ(-EINVAL, snpu_stream_synchronize(NULL, self->s, 0));
}

TEST_F(lib, stream_sticky_error_fail_kernel)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(ENOEXEC);
	struct snpu_stream_query q;
	struct snpu_event_query eq;
	struct snpu_task t[3];
	uint64_t addr;
	uint32_t e;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	/* One batch: the failure cannot come before the rest is queued. */
	ASSERT_EQ(0, snpu_prep_launch(&t[0], self->s, SNPU_KERNEL_FAIL, 1,
				      &arg, 1));
	snpu_prep_memset(&t[1], self->s, addr, 0x44, 4096);
	snpu_prep_event_record(&t[2], self->s, e);
	ASSERT_EQ(0, snpu_submit(self->dev, t, 3, NULL));

	EXPECT_EQ(-ENOEXEC, snpu_stream_synchronize(self->dev, self->s, -1));
	/* Sticky. */
	EXPECT_EQ(-ENOEXEC, snpu_stream_synchronize(self->dev, self->s, 0));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(-ENOEXEC, q.error);
	EXPECT_EQ(3ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(3ULL, (unsigned long long)q.completed);
	/* The memset behind the failure was cancelled, not run. */
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
	/* The capture behind it ended with -ECANCELED. */
	EXPECT_EQ(-ECANCELED, snpu_event_synchronize(self->dev, e, -1));
	ASSERT_EQ(0, snpu_event_query(self->dev, e, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, eq.state);
	EXPECT_EQ(-ECANCELED, eq.error);

	/* New work is refused until a reset. */
	EXPECT_EQ(-EIO, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				    NULL, 0));
	EXPECT_EQ(-EIO, snpu_memset_async(self->dev, self->s, addr, 1, 1));
	EXPECT_EQ(-EIO, snpu_event_record(self->dev, e, self->s));
	EXPECT_EQ(-EIO, snpu_launch_host_func(self->dev, self->s, 1));
	/* An abort keeps the first error. */
	EXPECT_EQ(0, snpu_stream_abort(self->dev, self->s));
	EXPECT_EQ(-ENOEXEC, snpu_stream_synchronize(self->dev, self->s, -1));

	ASSERT_EQ(0, snpu_stream_reset(self->dev, self->s));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, 0));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr, 0x44, 4096));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0x44));
	/* Sequence numbers go on where they were. */
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(4ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(4ULL, (unsigned long long)q.completed);
}

TEST_F(lib, stream_reset)
{
	/* Nothing to clear: no-op. */
	EXPECT_EQ(0, snpu_stream_reset(self->dev, self->s));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	EXPECT_EQ(-EBUSY, snpu_stream_reset(self->dev, self->s));
	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, snpu_stream_reset(self->dev, self->s));
	EXPECT_EQ(-ENOENT, snpu_stream_reset(self->dev, BAD_HANDLE));
	EXPECT_EQ(-EINVAL, snpu_stream_reset(NULL, self->s));
}

TEST_F(lib, stream_abort_running_spin)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(NS_PER_SEC);
	struct snpu_stream_query q;
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_SPIN, 4,
				 &arg, 1));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr, 0x21, 4096));
	EXPECT_EQ(-EBUSY, snpu_stream_reset(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_abort(self->dev, self->s));
	EXPECT_EQ(-ECANCELED, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(-ECANCELED, q.error);
	EXPECT_EQ(2ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(2ULL, (unsigned long long)q.completed);
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
	EXPECT_EQ(-EIO, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				    NULL, 0));

	ASSERT_EQ(0, snpu_stream_reset(self->dev, self->s));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr, 0x21, 4096));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0x21));

	EXPECT_EQ(-ENOENT, snpu_stream_abort(self->dev, BAD_HANDLE));
	EXPECT_EQ(-EINVAL, snpu_stream_abort(NULL, self->s));
}

/* Abort cancels callbacks not yet taken; a taken one still needs done. */
TEST_F(lib, stream_abort_cancels_callbacks)
{
	struct snpu_callback_info cb, none;
	struct pollfd pfd = { .fd = snpu_device_fd(self->dev),
			      .events = POLLIN };

	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 1));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 2));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, -1, &cb));
	EXPECT_EQ(1ULL, (unsigned long long)cb.user_data);
	ASSERT_EQ(0, snpu_stream_abort(self->dev, self->s));
	/* The stream is not complete while callback 1 is out. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev, self->s, 0));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(-ECANCELED, snpu_stream_synchronize(self->dev, self->s, -1));
	/* Callback 2 was cancelled, never delivered. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	memset(&none, 0x5a, sizeof(none));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->dev, 0, &none));
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, (unsigned long long)none.user_data);
}

TEST_F(lib, stream_destroy_waits)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(50 * NS_PER_MS);
	struct snpu_ctx_query q;
	uint64_t addr, t0;
	uint32_t s2;

	ASSERT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s2));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	t0 = now_ns();
	ASSERT_EQ(0, snpu_launch(self->dev, s2, SNPU_KERNEL_SPIN, 1, &arg, 1));
	ASSERT_EQ(0, snpu_memset_async(self->dev, s2, addr, 0x5a, 4096));
	ASSERT_EQ(0, snpu_stream_destroy(self->dev, s2, 0));
	/* It waited for the spin, and the memset ran. */
	EXPECT_GE(now_ns() - t0, (uint64_t)(50 * NS_PER_MS));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0x5a));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(1U, q.streams);
	EXPECT_EQ(0U, q.tasks);
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->dev, s2, 0));
	EXPECT_EQ(-ENOENT, snpu_launch(self->dev, s2, SNPU_KERNEL_NOP, 1,
				       NULL, 0));
}

TEST_F(lib, stream_destroy_force)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(NS_PER_SEC);
	struct snpu_stream_query sq;
	struct snpu_ctx_query q;
	uint64_t addr;
	uint32_t s2;

	ASSERT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s2));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_launch(self->dev, s2, SNPU_KERNEL_SPIN, 1, &arg, 1));
	ASSERT_EQ(0, snpu_memset_async(self->dev, s2, addr, 0x5a, 4096));
	ASSERT_EQ(0, snpu_stream_destroy(self->dev, s2,
					 SNPU_STREAM_DESTROY_FORCE));
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->dev, s2, &sq));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(1U, q.streams);
	EXPECT_EQ(0U, q.tasks);
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->dev, s2,
					       SNPU_STREAM_DESTROY_FORCE));
}

TEST_F(lib, stream_destroy_in_error_state)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(EPIPE);

	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_FAIL, 1,
				 &arg, 1));
	EXPECT_EQ(-EPIPE, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, snpu_stream_destroy(self->dev, self->s, 0));
}

TEST_F(lib, stream_destroy_einval)
{
	struct snpu_stream_query q;

	EXPECT_EQ(-EINVAL, snpu_stream_destroy(self->dev, self->s, 2));
	EXPECT_EQ(-EINVAL, snpu_stream_destroy(self->dev, self->s,
					       SNPU_STREAM_DESTROY_FORCE | 4));
	EXPECT_EQ(-EINVAL, snpu_stream_destroy(NULL, self->s, 0));
	/* Still there, still usable. */
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1, NULL,
				 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->dev, BAD_HANDLE, 0));
}

/* ---- events ------------------------------------------------------------- */

TEST_F(lib, event_never_recorded)
{
	struct snpu_event_query q;
	uint32_t e, done;
	int64_t ns = 12345;

	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_event_create(self->dev, &done));
	EXPECT_NE(e, done);
	ASSERT_EQ(0, snpu_event_record(self->dev, done, self->s));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, done, -1));

	memset(&q, 0xa5, sizeof(q));
	ASSERT_EQ(0, snpu_event_query(self->dev, e, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_NEVER_RECORDED, q.state);
	EXPECT_EQ(0U, q.stream);
	EXPECT_EQ(-EINVAL, snpu_event_synchronize(self->dev, e, -1));
	EXPECT_EQ(-EINVAL, snpu_event_synchronize(self->dev, e, 0));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(self->dev, e, done, &ns));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(self->dev, done, e, &ns));
	EXPECT_EQ(12345LL, (long long)ns);
	EXPECT_EQ(-EINVAL, snpu_stream_wait_event(self->dev, self->s, e));
}

TEST_F(lib, event_states)
{
	struct snpu_event_query q;
	uint64_t t0, t1;
	uint32_t e, e0, s2;
	int64_t ns = 777;

	ASSERT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e0));
	ASSERT_EQ(0, snpu_event_record(self->dev, e0, s2));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, e0, -1));

	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_event_record(self->dev, e, self->s));
	ASSERT_EQ(0, snpu_event_query(self->dev, e, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_PENDING, q.state);
	EXPECT_EQ(self->s, q.stream);
	EXPECT_EQ(2ULL, (unsigned long long)q.seq);
	EXPECT_EQ(-ETIMEDOUT, snpu_event_synchronize(self->dev, e, 0));
	EXPECT_EQ(-ETIMEDOUT, snpu_event_synchronize(self->dev, e,
						     5 * NS_PER_MS));
	EXPECT_EQ(-EBUSY, snpu_event_elapsed_ns(self->dev, e0, e, &ns));
	EXPECT_EQ(-EBUSY, snpu_event_elapsed_ns(self->dev, e, e0, &ns));
	EXPECT_EQ(777LL, (long long)ns);

	t0 = now_ns();
	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	EXPECT_EQ(0, snpu_event_synchronize(self->dev, e, -1));
	t1 = now_ns();
	ASSERT_EQ(0, snpu_event_query(self->dev, e, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(self->s, q.stream);
	EXPECT_EQ(2ULL, (unsigned long long)q.seq);
	EXPECT_EQ(0, q.error);
	/* Completed between the callback's release and the wait's return. */
	EXPECT_GE((uint64_t)q.time_ns, t0);
	EXPECT_LE((uint64_t)q.time_ns, t1);
	ASSERT_EQ(0, snpu_event_elapsed_ns(self->dev, e0, e, &ns));
	EXPECT_GT(ns, 0);

	/* Recording again replaces the capture. */
	ASSERT_EQ(0, snpu_event_record(self->dev, e, s2));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, e, -1));
	ASSERT_EQ(0, snpu_event_query(self->dev, e, &q));
	EXPECT_EQ(s2, q.stream);
	EXPECT_EQ(2ULL, (unsigned long long)q.seq);
}

TEST_F(lib, event_elapsed_spin)
{
	const int64_t spin = 100 * NS_PER_MS;
	struct snpu_kernel_arg arg = snpu_arg_u64((uint64_t)spin);
	int64_t ns = 0, back = 0, self_ns = 1;
	uint32_t e0, e1;

	ASSERT_EQ(0, snpu_event_create(self->dev, &e0));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e1));
	ASSERT_EQ(0, snpu_event_record(self->dev, e0, self->s));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_SPIN, 2,
				 &arg, 1));
	ASSERT_EQ(0, snpu_event_record(self->dev, e1, self->s));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, e1, -1));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, e0, 0));
	ASSERT_EQ(0, snpu_event_elapsed_ns(self->dev, e0, e1, &ns));
	EXPECT_GE(ns, spin);
	ASSERT_EQ(0, snpu_event_elapsed_ns(self->dev, e1, e0, &back));
	EXPECT_EQ(-ns, back);
	ASSERT_EQ(0, snpu_event_elapsed_ns(self->dev, e0, e0, &self_ns));
	EXPECT_EQ(0LL, (long long)self_ns);
}

TEST_F(lib, event_errors)
{
	struct snpu_event_query q;
	struct snpu_ctx_query cq;
	uint32_t e, keep = 0x31;
	int64_t ns;

	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	EXPECT_EQ(-EINVAL, snpu_event_create(NULL, &keep));
	EXPECT_EQ(-EINVAL, snpu_event_create(self->dev, NULL));
	EXPECT_EQ(0x31U, keep);
	EXPECT_EQ(-EINVAL, snpu_event_query(NULL, e, &q));
	EXPECT_EQ(-EINVAL, snpu_event_query(self->dev, e, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_synchronize(NULL, e, 0));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(NULL, e, e, &ns));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed_ns(self->dev, e, e, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_record(NULL, e, self->s));
	EXPECT_EQ(-EINVAL, snpu_stream_wait_event(NULL, self->s, e));
	EXPECT_EQ(-EINVAL, snpu_event_destroy(NULL, e));

	EXPECT_EQ(-ENOENT, snpu_event_query(self->dev, BAD_HANDLE, &q));
	EXPECT_EQ(-ENOENT, snpu_event_synchronize(self->dev, BAD_HANDLE, 0));
	EXPECT_EQ(-ENOENT, snpu_event_elapsed_ns(self->dev, BAD_HANDLE, e,
						 &ns));
	EXPECT_EQ(-ENOENT, snpu_event_record(self->dev, BAD_HANDLE, self->s));
	EXPECT_EQ(-ENOENT, snpu_event_record(self->dev, e, BAD_HANDLE));
	EXPECT_EQ(-ENOENT, snpu_stream_wait_event(self->dev, self->s,
						  BAD_HANDLE));
	/* A stream handle is not an event, nor the other way round. */
	EXPECT_EQ(-ENOENT, snpu_event_query(self->dev, self->s, &q));
	EXPECT_EQ(-ENOENT, snpu_event_record(self->dev, e, e));

	ASSERT_EQ(0, snpu_event_destroy(self->dev, e));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->dev, e));
	EXPECT_EQ(-ENOENT, snpu_event_query(self->dev, e, &q));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	EXPECT_EQ(0U, cq.events);
}

TEST_F(lib, event_create_enospc)
{
	struct snpu_ctx_query q;
	uint32_t e, keep = 0x64;
	unsigned int i;

	for (i = 0; i < DEF_EVENTS; i++)
		ASSERT_EQ(0, snpu_event_create(self->dev, &e))
			TH_LOG("event %u", i);
	EXPECT_EQ(-ENOSPC, snpu_event_create(self->dev, &keep));
	EXPECT_EQ(0x64U, keep);
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &q));
	EXPECT_EQ(DEF_EVENTS, q.events);
	ASSERT_EQ(0, snpu_event_destroy(self->dev, e));
	EXPECT_EQ(0, snpu_event_create(self->dev, &e));
}

/* A stream that waits for an event does not start later work before it. */
TEST_F(lib, stream_wait_event_orders_streams)
{
	struct snpu_stream_query q;
	uint64_t a, b;
	uint32_t s2, e;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_HIGH, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &b));

	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, a, 0x22, 4096));
	ASSERT_EQ(0, snpu_event_record(self->dev, e, self->s));
	ASSERT_EQ(0, snpu_stream_wait_event(self->dev, s2, e));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, s2, SNPU_COPY_D2D, b, a,
				       4096));

	/* s2 is held while s1 is. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev, s2, 0));
	ASSERT_EQ(0, snpu_stream_query(self->dev, s2, &q));
	EXPECT_EQ(2ULL, (unsigned long long)q.submitted);
	EXPECT_EQ(0ULL, (unsigned long long)q.completed);
	EXPECT_TRUE(dev_all_bytes(self->dev, b, 4096, 0));

	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, s2, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, b, 4096, 0x22));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
}

/* A waiting stream goes on whatever the error of the capture. */
TEST_F(lib, stream_wait_event_no_error_inherited)
{
	struct snpu_kernel_arg arg = snpu_arg_u64(EIO);
	uint64_t a;
	uint32_t s2, e;

	ASSERT_EQ(0, snpu_stream_create(self->dev, 0, 0, &s2));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &a));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_FAIL, 1,
				 &arg, 1));
	ASSERT_EQ(0, snpu_event_record(self->dev, e, self->s));
	ASSERT_EQ(0, snpu_stream_wait_event(self->dev, s2, e));
	ASSERT_EQ(0, snpu_memset_async(self->dev, s2, a, 0x33, 4096));
	ASSERT_EQ(0, serve_one(self->dev, BLOCKER, 0));

	EXPECT_EQ(-EIO, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(-ECANCELED, snpu_event_synchronize(self->dev, e, -1));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, s2, -1));
	EXPECT_TRUE(dev_all_bytes(self->dev, a, 4096, 0x33));
}

/* ---- host callbacks ----------------------------------------------------- */

struct server {
	struct snpu_device *dev;
	uint64_t buf;
	int n;
	int ret;
	uint64_t user_data[4];
	uint32_t stream[4];
	uint32_t seen[4];
};

/* Serve @n callbacks; each reads what the stream had written so far. */
static void *serve(void *arg)
{
	struct server *sv = arg;
	struct snpu_callback_info cb;
	int i;

	for (i = 0; i < sv->n; i++) {
		sv->ret = snpu_callback_wait(sv->dev, -1, &cb);
		if (sv->ret)
			break;
		sv->user_data[i] = cb.user_data;
		sv->stream[i] = cb.stream;
		sv->ret = snpu_memcpy_d2h(sv->dev, &sv->seen[i], sv->buf, 4);
		if (!sv->ret)
			sv->ret = snpu_callback_done(sv->dev, cb.cookie, 0);
		if (sv->ret)
			break;
	}
	return NULL;
}

TEST_F(lib, callback_thread_runs_in_stream_order)
{
	struct server sv = { .dev = self->dev, .n = 2, .ret = -1 };
	pthread_t th;
	uint32_t v;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4, 0, 0, &sv.buf));
	ASSERT_EQ(0, pthread_create(&th, NULL, serve, &sv));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, sv.buf, 0x11, 4));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 101));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, sv.buf, 0x22, 4));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 102));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, sv.buf, 0x33, 4));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, pthread_join(th, NULL));

	EXPECT_EQ(0, sv.ret);
	EXPECT_EQ(101ULL, (unsigned long long)sv.user_data[0]);
	EXPECT_EQ(102ULL, (unsigned long long)sv.user_data[1]);
	EXPECT_EQ(self->s, sv.stream[0]);
	EXPECT_EQ(self->s, sv.stream[1]);
	/* Each ran after the task before it and before the task after it. */
	EXPECT_EQ(0x11111111U, sv.seen[0]);
	EXPECT_EQ(0x22222222U, sv.seen[1]);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, &v, sv.buf, 4));
	EXPECT_EQ(0x33333333U, v);
}

TEST_F(lib, callback_poll)
{
	struct pollfd pfd = { .fd = snpu_device_fd(self->dev),
			      .events = POLLIN };
	struct snpu_callback_info cb;
	uint32_t s2;

	ASSERT_GE(pfd.fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_LOW, 0, &s2));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	ASSERT_EQ(0, snpu_launch_host_func(self->dev, s2, 0xfeedULL << 32));
	ASSERT_EQ(1, poll(&pfd, 1, -1));
	EXPECT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(0, snpu_callback_wait(self->dev, 0, &cb));
	EXPECT_EQ(0xfeedULL << 32, (unsigned long long)cb.user_data);
	EXPECT_EQ(s2, cb.stream);
	/* Taken: no longer readable. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev, s2, 0));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, s2, -1));
}

TEST_F(lib, callback_status_fails_stream)
{
	struct snpu_callback_info cb;
	struct snpu_stream_query q;
	uint64_t addr;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &addr));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 7));
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1, NULL,
				 0));
	ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, addr, 0x11, 4096));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, -1, &cb));
	EXPECT_EQ(7ULL, (unsigned long long)cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, -EPERM));
	/* Done once is done. */
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, cb.cookie, -EPERM));

	EXPECT_EQ(-EPERM, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(-EPERM, q.error);
	EXPECT_EQ(3ULL, (unsigned long long)q.completed);
	EXPECT_TRUE(dev_all_bytes(self->dev, addr, 4096, 0));
	EXPECT_EQ(-EIO, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1,
				    NULL, 0));
	ASSERT_EQ(0, snpu_stream_reset(self->dev, self->s));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
}

TEST_F(lib, callback_wait_timeout)
{
	struct snpu_callback_info cb;
	uint64_t t0;

	memset(&cb, 0x5a, sizeof(cb));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->dev, 0, &cb));
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->dev, 10 * NS_PER_MS,
						 &cb));
	EXPECT_GE(now_ns() - t0, (uint64_t)(10 * NS_PER_MS));
	EXPECT_EQ(0x5a5a5a5aU, cb.cookie);
	EXPECT_EQ(0x5a5a5a5aU, cb.stream);
}

TEST_F(lib, callback_errors)
{
	struct snpu_callback_info cb;

	EXPECT_EQ(-EINVAL, snpu_callback_wait(NULL, 0, &cb));
	EXPECT_EQ(-EINVAL, snpu_callback_wait(self->dev, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_callback_done(NULL, 1, 0));
	EXPECT_EQ(-EINVAL, snpu_callback_done(self->dev, 1, 1));
	EXPECT_EQ(-EINVAL, snpu_callback_done(self->dev, 1, -4096));
	EXPECT_EQ(-EINVAL, snpu_callback_done(self->dev, 1, INT32_MIN));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, 1, -4095));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, 0x12345678, 0));
	EXPECT_EQ(-EINVAL, snpu_launch_host_func(NULL, self->s, 1));
	EXPECT_EQ(-ENOENT, snpu_launch_host_func(self->dev, BAD_HANDLE, 1));
}

/* A cookie means nothing in another context. */
TEST_F(lib, callback_done_other_context)
{
	struct snpu_device *other;
	struct snpu_callback_info cb;

	ASSERT_EQ(0, snpu_open(0, 0, &other));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, 5));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, -1, &cb));
	EXPECT_EQ(-ENOENT, snpu_callback_done(other, cb.cookie, 0));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(other, 0, &cb));
	snpu_close(other);
	EXPECT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
}

/* ---- signals ------------------------------------------------------------ */

/*
 * Hold self->s with a taken, not yet completed callback (*cb) and an event
 * recorded behind it, so that every wait below blocks.
 */
static void hold_stream(struct __test_metadata *_metadata,
			FIXTURE_DATA(lib) *self, uint32_t *e,
			struct snpu_callback_info *cb)
{
	ASSERT_EQ(0, snpu_event_create(self->dev, e));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, snpu_event_record(self->dev, *e, self->s));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, -1, cb));
	ASSERT_EQ(BLOCKER, cb->user_data);
}

TEST_F(lib, eintr_timed_waits)
{
	const int64_t to = 10 * NS_PER_SEC;
	struct snpu_callback_info cb, none;
	uint32_t e;

	hold_stream(_metadata, self, &e, &cb);
	ASSERT_EQ(0, alarm_handler(0));
	ASSERT_EQ(0, alarm_every(20000));
	EXPECT_EQ(-EINTR, snpu_stream_synchronize(self->dev, self->s, to));
	EXPECT_EQ(-EINTR, snpu_event_synchronize(self->dev, e, to));
	memset(&none, 0x5a, sizeof(none));
	EXPECT_EQ(-EINTR, snpu_callback_wait(self->dev, to, &none));
	EXPECT_EQ(0x5a5a5a5aU, none.cookie);
	ASSERT_EQ(0, alarm_every(0));
	EXPECT_GE(alarms, 3);

	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, snpu_event_synchronize(self->dev, e, -1));
}

TEST_F(lib, eintr_untimed_waits)
{
	struct snpu_callback_info cb, none;
	struct snpu_stream_query q;
	uint32_t e;

	hold_stream(_metadata, self, &e, &cb);
	ASSERT_EQ(0, alarm_handler(0));
	ASSERT_EQ(0, alarm_every(20000));
	EXPECT_EQ(-EINTR, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(-EINTR, snpu_event_synchronize(self->dev, e, -1));
	EXPECT_EQ(-EINTR, snpu_callback_wait(self->dev, -1, &none));
	EXPECT_EQ(-EINTR, snpu_stream_destroy(self->dev, self->s, 0));
	ASSERT_EQ(0, alarm_every(0));
	EXPECT_GE(alarms, 4);

	/* The interrupted destroy left the stream, which takes tasks again. */
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->s, &q));
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP, 1, NULL,
				 0));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(0, snpu_stream_destroy(self->dev, self->s, 0));
}

/*
 * Timed waits are not restarted even with SA_RESTART: a restart would
 * start the relative timeout over (uapi/linux/snpu.h, "EINTR").
 */
TEST_F(lib, eintr_timed_waits_sa_restart)
{
	const int64_t to = 10 * NS_PER_SEC;
	struct snpu_callback_info cb, none;
	uint32_t e;

	hold_stream(_metadata, self, &e, &cb);
	ASSERT_EQ(0, alarm_handler(SA_RESTART));
	ASSERT_EQ(0, alarm_every(20000));
	EXPECT_EQ(-EINTR, snpu_stream_synchronize(self->dev, self->s, to));
	EXPECT_EQ(-EINTR, snpu_event_synchronize(self->dev, e, to));
	EXPECT_EQ(-EINTR, snpu_callback_wait(self->dev, to, &none));
	ASSERT_EQ(0, alarm_every(0));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
}

struct restart_helper {
	struct snpu_device *dev;
	pid_t tid;		/* the waiting thread */
	volatile int go;
	int ret;
	int seen;		/* signals counted while it slept */
};

/*
 * With SIGALRM blocked here, the signals go to the waiting thread: once
 * it sleeps in its wait, let three of them arrive, then release it.
 */
static void *release_after_signals(void *arg)
{
	struct restart_helper *h = arg;
	int base;

	while (!h->go)
		usleep(1000);
	while (snpu_thread_state(h->tid) != 'S')
		usleep(1000);
	base = alarms;
	while (alarms < base + 3)
		usleep(1000);
	h->seen = alarms - base;
	h->ret = serve_one(h->dev, BLOCKER, 0);
	return NULL;
}

/* An untimed wait is restarted by the kernel under SA_RESTART. */
TEST_F(lib, sa_restart_untimed_wait_restarts)
{
	struct restart_helper h = { .dev = self->dev, .ret = -1 };
	sigset_t block, old;
	pthread_t th;

	h.tid = gettid();
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, BLOCKER));
	ASSERT_EQ(0, alarm_handler(SA_RESTART));
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &block, &old));
	ASSERT_EQ(0, pthread_create(&th, NULL, release_after_signals, &h));
	ASSERT_EQ(0, pthread_sigmask(SIG_SETMASK, &old, NULL));
	ASSERT_EQ(0, alarm_every(10000));
	h.go = 1;
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, alarm_every(0));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, h.ret);
	EXPECT_GE(h.seen, 3);
}

/* ---- rings restored from a checkpoint ---------------------------------- */

/* Queue a NOP with @user_data on @stream in @ring's SQ. */
static int ring_nop(struct snpu_ring *ring, uint32_t stream, uint64_t user_data)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	snpu_prep_launch(sqe, stream, SNPU_KERNEL_NOP, 1, NULL, 0);
	sqe->user_data = user_data;
	return 0;
}

/* Reap one CQE; it must be @user_data's, with that sequence number. */
static int ring_reap(struct snpu_ring *ring, uint64_t user_data)
{
	struct snpu_cqe *cqe;

	if (snpu_ring_peek_cqe(ring, &cqe))
		return -EAGAIN;
	if (cqe->user_data != user_data || cqe->result ||
	    cqe->seq != user_data)
		return -EPROTO;
	snpu_ring_cqe_seen(ring, cqe);
	return 0;
}

/*
 * A process leaves two CQEs unreaped and checkpoints itself; a new one
 * restores the image, attaches to the rings, reaps them and goes on.
 */
TEST(ring_attach_after_restore)
{
	struct snpu_device *dev;
	struct snpu_ring ring;
	uint32_t stream;
	int img, status;
	uint64_t u;
	pid_t pid;

	img = memfd_create("lib-ckpt", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	/* No rings yet. */
	EXPECT_EQ(-ENXIO, snpu_ring_attach(dev, &ring));
	EXPECT_EQ(-EINVAL, snpu_ring_attach(dev, NULL));
	EXPECT_EQ(-EINVAL, snpu_ring_attach(NULL, &ring));
	ASSERT_EQ(0, snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream));
	ASSERT_EQ(0, snpu_ring_init(dev, 4, 0, &ring));
	for (u = 1; u <= 3; u++)
		ASSERT_EQ(0, ring_nop(&ring, stream, u));
	ASSERT_EQ(3, snpu_ring_submit_and_wait(&ring, 3));
	ASSERT_EQ(0, ring_reap(&ring, 1));
	ASSERT_EQ(0, snpu_ckpt_lock(dev, 0, -1));
	ASSERT_EQ(0, snpu_ckpt_checkpoint(dev, 0, img, NULL));
	ASSERT_EQ(0, snpu_ckpt_unlock(dev, 0));
	snpu_ring_exit(&ring);
	snpu_close(dev);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (snpu_open(0, 0, &dev) || snpu_ckpt_restore(dev, img, 0, NULL))
			_exit(1);
		if (snpu_ring_attach(dev, &ring))
			_exit(2);
		if (ring.flags || ring.sq.entries != 4 || ring.cq.entries != 8 ||
		    *ring.sq.khead != 3 || *ring.cq.khead != 1)
			_exit(3);
		/* The CQEs the old process had not reaped. */
		if (snpu_ring_cq_ready(&ring) != 2 || ring_reap(&ring, 2) ||
		    ring_reap(&ring, 3))
			_exit(4);
		/* The timeline goes on: 4 is the stream's next. */
		if (ring_nop(&ring, stream, 4) ||
		    snpu_ring_submit_and_wait(&ring, 1) != 1 ||
		    ring_reap(&ring, 4))
			_exit(5);
		snpu_ring_exit(&ring);
		snpu_close(dev);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(img);
}

TEST_HARNESS_MAIN
