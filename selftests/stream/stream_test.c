// SPDX-License-Identifier: GPL-2.0
/*
 * snpu streams: create/destroy/query, the stream quota, in-order
 * execution, cross-stream waits, the sticky error, abort, reset,
 * synchronize timeouts, destroy with and without force, and the quota of
 * tasks in flight.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (ctx_streams=64, ctx_tasks=4096).
 *
 * Wherever a test needs a stream to be "busy" for sure, it puts a host
 * callback (SNPU_OP_HOST_FUNC) in front: the stream cannot go past it
 * until the test answers with CALLBACK_DONE, so nothing depends on how
 * fast the VM runs.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)

/* A device buffer of @n u32 set to @v (the copy is synchronous). */
static int dev_u32(int fd, size_t n, uint32_t v, uint64_t *addr)
{
	uint32_t *tmp = malloc(n * 4);
	size_t i;
	int ret;

	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		tmp[i] = v;
	ret = snpu_alloc(fd, n * 4, 0, addr);
	if (!ret)
		ret = snpu_h2d(fd, *addr, tmp, n * 4);
	free(tmp);
	return ret;
}

/* Read @n u32 at @addr; return the index of the first one not @v, or n. */
static size_t dev_check_u32(int fd, uint64_t addr, size_t n, uint32_t v)
{
	uint32_t *tmp = malloc(n * 4);
	size_t i = 0;

	if (!tmp || snpu_d2h(fd, tmp, addr, n * 4)) {
		free(tmp);
		return (size_t)-1;
	}
	for (i = 0; i < n; i++)
		if (tmp[i] != v)
			break;
	free(tmp);
	return i;
}

FIXTURE(stream) {
	int fd;
	uint32_t s;
};

FIXTURE_SETUP(stream)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(stream)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- create, destroy, query -------------------------------------------- */

TEST_F(stream, create_query_priorities)
{
	static const int32_t prios[] = {
		SNPU_PRIO_LOW, SNPU_PRIO_NORMAL, SNPU_PRIO_HIGH,
	};
	struct snpu_stream_query q;
	struct snpu_ctx_query cq;
	uint32_t h[3];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, snpu_stream_create(self->fd, prios[i], &h[i]));
		EXPECT_NE(self->s, h[i]);
		ASSERT_EQ(0, snpu_stream_query(self->fd, h[i], &q));
		EXPECT_EQ(prios[i], q.priority);
		EXPECT_EQ(0, q.error);
		EXPECT_EQ(0U, q.submitted);
		EXPECT_EQ(0U, q.completed);
		EXPECT_EQ((uint32_t)sizeof(q), q.size);
	}
	EXPECT_NE(h[0], h[1]);
	EXPECT_NE(h[1], h[2]);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(4U, cq.streams);
	EXPECT_EQ((uint32_t)SNPU_TEST_STREAMS, cq.streams_limit);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, snpu_stream_destroy(self->fd, h[i], 0));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(1U, cq.streams);
	/* A destroyed handle is gone. */
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->fd, h[0], &q));
}

TEST_F(stream, create_bad_priority_einval)
{
	static const int32_t bad[] = { 2, -2, 0x7fffffff, (int32_t)0x80000000 };
	struct snpu_ctx_query cq;
	unsigned int i;
	uint32_t h;

	for (i = 0; i < 4; i++)
		EXPECT_EQ(-EINVAL, snpu_stream_create(self->fd, bad[i], &h))
			TH_LOG("priority %d", bad[i]);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(1U, cq.streams);
}

TEST_F(stream, create_reserved_flags_einval)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	c.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_CREATE, &c));
	c.flags = 0;
	c.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_CREATE, &c));
}

TEST_F(stream, quota_enospc_and_release)
{
	struct snpu_ctx_query cq;
	uint32_t h[SNPU_TEST_STREAMS + 1];
	unsigned int n = 0, i;
	int ret = 0;

	/* The fixture's stream counts. */
	while (n <= SNPU_TEST_STREAMS) {
		ret = snpu_stream_create(self->fd, 0, &h[n]);
		if (ret)
			break;
		n++;
	}
	EXPECT_EQ(SNPU_TEST_STREAMS - 1U, n);
	EXPECT_EQ(-ENOSPC, ret);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ((uint32_t)SNPU_TEST_STREAMS, cq.streams);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, snpu_stream_destroy(self->fd, h[i], 0));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, self->s, 0));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.streams);
	/* The quota is free again. */
	EXPECT_EQ(0, snpu_stream_create(self->fd, 0, &h[0]));
}

TEST_F(stream, unknown_handle_enoent)
{
	static const uint32_t bad[] = { 0, 9999, 0x7fffffff, 0xffffffff };
	struct snpu_stream_query q;
	unsigned int i;
	uint32_t ev;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	for (i = 0; i < 5; i++) {
		/* The last round names an event: no stream either. */
		uint32_t h = i < 4 ? bad[i] : ev;

		EXPECT_EQ(-ENOENT, snpu_stream_query(self->fd, h, &q));
		EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h, 0, NULL));
		EXPECT_EQ(-ENOENT, snpu_stream_abort(self->fd, h));
		EXPECT_EQ(-ENOENT, snpu_stream_reset(self->fd, h));
		EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->fd, h, 0));
		EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_nop(h)));
	}
	/* The event survived being named as a stream. */
	EXPECT_EQ(0, snpu_event_destroy(self->fd, ev));
}

TEST_F(stream, destroy_twice_enoent)
{
	EXPECT_EQ(0, snpu_stream_destroy(self->fd, self->s, 0));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->fd, self->s, 0));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_nop(self->s)));
}

TEST_F(stream, destroy_bad_flags_einval)
{
	EXPECT_EQ(-EINVAL, snpu_stream_destroy(self->fd, self->s, 2));
	EXPECT_EQ(-EINVAL, snpu_stream_destroy(self->fd, self->s, 1U << 31));
	/* Still there. */
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
}

/* SUBMIT returns the sequence number of the last task in its stream. */
TEST_F(stream, submit_returns_seq)
{
	struct snpu_stream_query q;
	struct snpu_task t[4];
	uint64_t seq = 0;
	uint32_t s2;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	t[0] = t[1] = t[2] = snpu_t_nop(self->s);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, &seq));
	EXPECT_EQ(3U, seq);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, &seq));
	EXPECT_EQ(5U, seq);
	/* Mixed streams: the last task's stream counts. */
	t[0] = snpu_t_nop(self->s);
	t[1] = snpu_t_nop(s2);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, &seq));
	EXPECT_EQ(1U, seq);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(6U, q.submitted);
	EXPECT_EQ(6U, q.completed);
}

/* ---- in-order execution ----------------------------------------------- */

/*
 * 4000 launches on one stream, each x = x * 3 or x = x + 1 (u32) chosen by
 * a fixed pseudo-random sequence. The maps do not commute and are
 * invertible, so any two tasks run out of order, or overlapping, change
 * the result.
 */
TEST_F_TIMEOUT(stream, in_order_4000_launches, 120)
{
	const unsigned int ntasks = 4000, n = 64;
	struct snpu_task *t = calloc(ntasks, sizeof(*t));
	uint32_t want[64], got[64];
	struct snpu_stream_query q;
	uint64_t x, three, one, rng = 0x5eed;
	unsigned int i, j, adds = 0;
	int32_t err = 1;

	ASSERT_NE(NULL, t);
	for (j = 0; j < n; j++)
		want[j] = j * 7919 + 1;
	ASSERT_EQ(0, snpu_alloc(self->fd, n * 4, 0, &x));
	ASSERT_EQ(0, snpu_h2d(self->fd, x, want, sizeof(want)));
	ASSERT_EQ(0, dev_u32(self->fd, n, 3, &three));
	ASSERT_EQ(0, dev_u32(self->fd, n, 1, &one));

	for (i = 0; i < ntasks; i++) {
		bool add = snpu_rand(&rng) & 1;

		t[i] = snpu_t_binop(self->s, add ? SNPU_KERNEL_ADD_I32 :
				    SNPU_KERNEL_MUL_I32, x, x,
				    add ? one : three, n * 4, 2);
		for (j = 0; j < n; j++)
			want[j] = add ? want[j] + 1 : want[j] * 3;
		adds += add;
	}
	ASSERT_GT(adds, 1000U);
	ASSERT_GT(ntasks - adds, 1000U);
	/* Batches of 1000: all 4000 in flight at once, under the quota. */
	for (i = 0; i < ntasks; i += 1000)
		ASSERT_EQ(0, snpu_submit(self->fd, t + i, 1000, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 100 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(ntasks, q.submitted);
	EXPECT_EQ(q.submitted, q.completed);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, x, sizeof(got)));
	for (j = 0; j < n; j++)
		if (got[j] != want[j])
			break;
	EXPECT_EQ(n, j) TH_LOG("element %u: got 0x%08x want 0x%08x", j,
			       j < n ? got[j] : 0, j < n ? want[j] : 0);
	free(t);
}

/*
 * A chain through a ring of 8 buffers, mixing kinds of task: each step
 * writes ring[i + 1] from ring[i] with a launch (+1), a queued D2D copy,
 * or a queued memset followed by +1 (reset to a known value). A step that
 * runs early reads a stale buffer and the final count is wrong.
 */
TEST_F(stream, in_order_mixed_ops)
{
	const unsigned int steps = 1500, n = 16;
	struct snpu_task *t = calloc(2 * steps, sizeof(*t));
	uint64_t ring[8], one, rng = 77;
	unsigned int i, k = 0;
	uint32_t want = 0;
	int32_t err = 1;
	size_t bad;

	ASSERT_NE(NULL, t);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, dev_u32(self->fd, n, 0xdead, &ring[i]));
	ASSERT_EQ(0, dev_u32(self->fd, n, 1, &one));
	ASSERT_EQ(0, snpu_memset(self->fd, ring[0], 0, n * 4));
	for (i = 0; i < steps; i++) {
		uint64_t cur = ring[i % 8], next = ring[(i + 1) % 8];

		switch (snpu_rand(&rng) % 4) {
		case 0:
		case 1:
			t[k++] = snpu_t_binop(self->s, SNPU_KERNEL_ADD_I32,
					      next, cur, one, n * 4, 1);
			want++;
			break;
		case 2:
			t[k++] = snpu_t_copy(self->s, SNPU_COPY_D2D, next, cur,
					     n * 4);
			break;
		default:
			/* next = 0 + 1, then the chain goes on from 1. */
			t[k++] = snpu_t_memset(self->s, next, 0, n * 4);
			t[k++] = snpu_t_binop(self->s, SNPU_KERNEL_ADD_I32,
					      next, next, one, n * 4, 1);
			want = 1;
			break;
		}
	}
	ASSERT_EQ(0, snpu_submit_all(self->fd, t, k));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 100 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	bad = dev_check_u32(self->fd, ring[steps % 8], n, want);
	EXPECT_EQ(n, bad) TH_LOG("final value differs from %u", want);
	free(t);
}

/*
 * Stream A spins 100 ms, then fills X and records E; stream B waits for E
 * and copies X to Y. Y must hold A's fill, never the zeros X had before.
 */
TEST_F(stream, cross_stream_wait)
{
	const unsigned int n = 1024;
	struct snpu_event_query eq;
	uint32_t a = self->s, b, e;
	uint64_t x, y;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, n * 4, 0, &x));
	ASSERT_EQ(0, snpu_alloc(self->fd, n * 4, 0, &y));

	struct snpu_task ta[3] = {
		snpu_t_spin(a, 100 * NS_PER_MS, 1),
		snpu_t_fill(a, x, n * 4, 0xa11ce, 4),
		snpu_t_record(a, e),
	};
	struct snpu_task tb[2] = {
		snpu_t_wait(b, e),
		snpu_t_copy(b, SNPU_COPY_D2D, y, x, n * 4),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, ta, 3, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, tb, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(n, dev_check_u32(self->fd, y, n, 0xa11ce));
	/* B waited for E: E is complete by then. */
	ASSERT_EQ(0, snpu_event_query(self->fd, e, &eq));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, eq.state);
}

/* The same wait in one batch that records and waits. */
TEST_F(stream, cross_stream_wait_same_batch)
{
	const unsigned int n = 256;
	uint32_t a = self->s, b, e;
	uint64_t x, y;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, n * 4, 0, &x));
	ASSERT_EQ(0, snpu_alloc(self->fd, n * 4, 0, &y));

	struct snpu_task t[5] = {
		snpu_t_spin(a, 50 * NS_PER_MS, 1),
		snpu_t_fill(a, x, n * 4, 0xb0b, 1),
		snpu_t_record(a, e),
		snpu_t_wait(b, e),
		snpu_t_copy(b, SNPU_COPY_D2D, y, x, n * 4),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 5, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(n, dev_check_u32(self->fd, y, n, 0xb0b));
}

/*
 * "A higher [priority] is served first by the cores." Four cores are busy
 * with a low-priority 4-block spin; queued behind it are a low-priority
 * 8-block spin (stream L2) and then a high-priority 1-block 100 ms spin
 * (stream H). When the first cores free up, H's block must be taken
 * before L2's, so H completes long before L2. (Were the queues served in
 * arrival order, H would start only once all of L2's blocks had been
 * handed out and end after L2.)
 */
TEST_F(stream, high_priority_served_first)
{
	struct snpu_event_query qh, ql;
	uint32_t l1, l2, h, eh, el;
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	ASSERT_EQ(4U, info.cores) TH_LOG("the suite expects cores=4");
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_LOW, &l1));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_LOW, &l2));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_HIGH, &h));
	ASSERT_EQ(0, snpu_event_create(self->fd, &eh));
	ASSERT_EQ(0, snpu_event_create(self->fd, &el));
	struct snpu_task t[5] = {
		snpu_t_spin(l1, 300 * NS_PER_MS, 4),
		snpu_t_spin(l2, 300 * NS_PER_MS, 8),
		snpu_t_record(l2, el),
		snpu_t_spin(h, 100 * NS_PER_MS, 1),
		snpu_t_record(h, eh),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 5, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, el, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, eh, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, eh, &qh));
	ASSERT_EQ(0, snpu_event_query(self->fd, el, &ql));
	EXPECT_LT(qh.time_ns, ql.time_ns)
		TH_LOG("high done %lld ms after low",
		       (long long)(qh.time_ns - ql.time_ns) / NS_PER_MS);
}

/* A stream may wait for an event recorded on itself. */
TEST_F(stream, wait_on_own_event)
{
	uint32_t e, v = 0;
	uint64_t y;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task t[4] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, e),
		snpu_t_wait(self->s, e), snpu_t_fill(self->s, y, 64, 0x0e, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 4, NULL));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, &v, y, 4));
	EXPECT_EQ(0x0eU, v);
}

/* ---- sticky error ------------------------------------------------------ */

TEST_F(stream, fail_sets_sticky_error)
{
	struct snpu_stream_query q;
	uint64_t y;
	int32_t err = 0;

	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fail(self->s, 5)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-5, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-5, q.error);
	EXPECT_EQ(1U, q.submitted);
	EXPECT_EQ(1U, q.completed);

	/* Refused until reset, and nothing queued. */
	EXPECT_EQ(-EIO, snpu_submit1(self->fd,
			snpu_t_fill(self->s, y, 64, 1, 1)));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(1U, q.submitted);
	/* Syncing again still reports it. */
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, &err));
	EXPECT_EQ(-5, err);

	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(self->s, y, 64, 7, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(16U, dev_check_u32(self->fd, y, 16, 7));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(2U, q.submitted);
	EXPECT_EQ(2U, q.completed);
}

/* Tasks behind the failing one complete without running; first error kept. */
TEST_F(stream, tasks_behind_failure_cancelled)
{
	struct snpu_stream_query q;
	uint64_t y, z;
	int32_t err = 0;

	ASSERT_EQ(0, snpu_alloc(self->fd, 256, 0, &y));
	ASSERT_EQ(0, snpu_alloc(self->fd, 256, 0, &z));
	struct snpu_task t[5] = {
		snpu_t_fill(self->s, z, 256, 0x1234, 1),
		snpu_t_fail(self->s, 5),
		snpu_t_fill(self->s, y, 256, 0x5678, 2),
		snpu_t_fail(self->s, 7),
		snpu_t_memset(self->s, z, 0xff, 256),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 5, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-5, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-5, q.error);
	EXPECT_EQ(5U, q.submitted);
	EXPECT_EQ(5U, q.completed);
	EXPECT_EQ(64U, dev_check_u32(self->fd, y, 64, 0))
		TH_LOG("ran after a failure");
	EXPECT_EQ(64U, dev_check_u32(self->fd, z, 64, 0x1234))
		TH_LOG("the memset after the failure ran");
}

/*
 * Every kind of task behind a failure is cancelled, each by the decision
 * taken when it became ready: launches of one and of several blocks, a
 * memset and a copy leave their bytes alone, a NOP launch and an event
 * record (which need no core) complete with -ECANCELED (the record's
 * event says so), and a host callback is never delivered.
 */
TEST_F(stream, every_op_behind_failure_cancelled)
{
	struct snpu_event_query eq;
	struct snpu_callback cb;
	uint64_t y, y4, z, src, dst, last;
	uint32_t e;
	int32_t err = 0;

	ASSERT_EQ(0, dev_u32(self->fd, 64, 0xa5a5a5a5, &y));
	ASSERT_EQ(0, dev_u32(self->fd, 4096, 0xa5a5a5a5, &y4));
	ASSERT_EQ(0, dev_u32(self->fd, 64, 0xa5a5a5a5, &z));
	ASSERT_EQ(0, dev_u32(self->fd, 64, 0x11111111, &src));
	ASSERT_EQ(0, dev_u32(self->fd, 64, 0xa5a5a5a5, &dst));
	ASSERT_EQ(0, dev_u32(self->fd, 64, 0xa5a5a5a5, &last));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	struct snpu_task t[9] = {
		snpu_t_fail(self->s, 5),
		snpu_t_fill(self->s, y, 256, 1, 1),
		snpu_t_fill(self->s, y4, 4096 * 4, 2, 4),
		snpu_t_memset(self->s, z, 0, 256),
		snpu_t_copy(self->s, SNPU_COPY_D2D, dst, src, 256),
		snpu_t_nop(self->s),
		snpu_t_record(self->s, e),
		snpu_t_host_func(self->s, 9),
		snpu_t_fill(self->s, last, 256, 3, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 9, NULL));
	/* A delivered callback would hold the stream: the sync would time out. */
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-5, err);
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb))
		TH_LOG("a callback behind a failure was delivered");
	EXPECT_EQ(64U, dev_check_u32(self->fd, y, 64, 0xa5a5a5a5));
	EXPECT_EQ(4096U, dev_check_u32(self->fd, y4, 4096, 0xa5a5a5a5));
	EXPECT_EQ(64U, dev_check_u32(self->fd, z, 64, 0xa5a5a5a5));
	EXPECT_EQ(64U, dev_check_u32(self->fd, dst, 64, 0xa5a5a5a5));
	EXPECT_EQ(64U, dev_check_u32(self->fd, last, 64, 0xa5a5a5a5));
	ASSERT_EQ(0, snpu_event_query(self->fd, e, &eq));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, eq.state);
	EXPECT_EQ(-ECANCELED, eq.error);
}

/*
 * A failure inside a run of short tasks that one core runs back to back
 * (a chain, see the scheduler): the tasks after it in the same batch are
 * cancelled too, the ones before it ran.
 */
TEST_F(stream, failure_inside_a_chain_cancels_the_rest)
{
	struct snpu_task t[24];
	uint64_t before[8], after[8];
	int32_t err = 0;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, dev_u32(self->fd, 1024, 0xa5a5a5a5, &before[i]));
		ASSERT_EQ(0, dev_u32(self->fd, 1024, 0xa5a5a5a5, &after[i]));
	}
	for (i = 0; i < 8; i++)
		t[i] = snpu_t_fill(self->s, before[i], 4096, i + 1, 1);
	t[8] = snpu_t_fail(self->s, 6);
	for (i = 0; i < 8; i++)
		t[9 + i] = snpu_t_fill(self->s, after[i], 4096, i + 1, 1);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 17, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-6, err);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(1024U, dev_check_u32(self->fd, before[i], 1024, i + 1));
		EXPECT_EQ(1024U, dev_check_u32(self->fd, after[i], 1024,
					       0xa5a5a5a5))
			TH_LOG("task %u after the failure ran", i);
	}
}

/* A batch naming a stream in its error state queues nothing anywhere. */
TEST_F(stream, batch_with_error_stream_eio)
{
	struct snpu_stream_query q;
	uint32_t good;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &good));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fail(self->s, 9)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	struct snpu_task t[3] = {
		snpu_t_nop(good), snpu_t_nop(self->s), snpu_t_nop(good),
	};
	EXPECT_EQ(-EIO, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, good, &q));
	EXPECT_EQ(0U, q.submitted);
}

/*
 * Reset refuses a stream with work left: here a delivered callback keeps
 * an aborted stream busy until CALLBACK_DONE.
 */
TEST_F(stream, reset_busy_ebusy)
{
	struct snpu_callback cb;
	struct snpu_stream_query q;
	uint64_t y;
	int32_t err = 0;

	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 11)));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-ECANCELED, q.error);
	EXPECT_EQ(-EBUSY, snpu_stream_reset(self->fd, self->s));
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));

	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-ECANCELED, err);
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(self->s, y, 64, 3, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(16U, dev_check_u32(self->fd, y, 16, 3));
}

TEST_F(stream, reset_healthy_idle_stream)
{
	struct snpu_stream_query q;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	EXPECT_EQ(0, snpu_stream_reset(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(0, q.error);
	/* The timeline goes on. */
	EXPECT_EQ(1U, q.submitted);
	EXPECT_EQ(1U, q.completed);
}

/* ---- abort -------------------------------------------------------------- */

TEST_F(stream, abort_cancels_running_and_queued)
{
	struct snpu_stream_query q;
	uint64_t y;
	int32_t err = 0;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &y));
	struct snpu_task t[3] = {
		snpu_t_spin(self->s, NS_PER_SEC, 1),
		snpu_t_fill(self->s, y, 4096, 0x77, 2),
		snpu_t_memset(self->s, y, 0x55, 16),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	/* The 1 s spin stops at its next check: no 1 s wait here. */
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-ECANCELED, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-ECANCELED, q.error);
	EXPECT_EQ(3U, q.completed);
	EXPECT_EQ(1024U, dev_check_u32(self->fd, y, 1024, 0))
		TH_LOG("a task queued behind the abort ran");
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
}

/*
 * "A stream in its error state is complete when nothing of it runs any
 * more." An aborted stream whose next task waits for an event that
 * another stream (held by an unanswered callback) has not reached runs
 * nothing: its synchronize must return, with -ECANCELED.
 */
TEST_F(stream, abort_with_pending_cross_wait_completes)
{
	uint32_t other, e;
	uint64_t y;
	int32_t err = 0;
	int ret;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &other));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task to[2] = {
		snpu_t_host_func(other, 1), snpu_t_record(other, e),
	};
	struct snpu_task ts[2] = {
		snpu_t_wait(self->s, e), snpu_t_fill(self->s, y, 64, 9, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, to, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, ts, 2, NULL));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ret = snpu_stream_sync(self->fd, self->s, 5 * NS_PER_SEC, &err);
	EXPECT_EQ(0, ret) TH_LOG("sync of an aborted stream: %s",
				 strerror(-ret));
	if (!ret)
		EXPECT_EQ(-ECANCELED, err);

	/* Let the other stream go; nothing of the aborted one ran. */
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-ECANCELED, err);
	EXPECT_EQ(16U, dev_check_u32(self->fd, y, 16, 0));
}

/* The same for a stream failed by a task. */
TEST_F(stream, failed_with_pending_cross_wait_completes)
{
	uint32_t other, e;
	uint64_t y;
	int32_t err = 0;
	int ret;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &other));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task to[2] = {
		snpu_t_host_func(other, 1), snpu_t_record(other, e),
	};
	struct snpu_task ts[3] = {
		snpu_t_fail(self->s, 5), snpu_t_wait(self->s, e),
		snpu_t_fill(self->s, y, 64, 9, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, to, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, ts, 3, NULL));
	ret = snpu_stream_sync(self->fd, self->s, 5 * NS_PER_SEC, &err);
	EXPECT_EQ(0, ret) TH_LOG("sync of a failed stream: %s", strerror(-ret));
	if (!ret)
		EXPECT_EQ(-5, err);

	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-5, err);
	EXPECT_EQ(16U, dev_check_u32(self->fd, y, 16, 0));
}

/* ---- synchronize timeouts ---------------------------------------------- */

TEST_F(stream, sync_timeout_while_spinning)
{
	int32_t err = 0;

	ASSERT_EQ(0, snpu_submit1(self->fd,
			snpu_t_spin(self->s, NS_PER_SEC, 1)));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, NS_PER_MS,
					       NULL));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, 0, NULL));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, &err));
	EXPECT_EQ(-ECANCELED, err);
}

TEST_F(stream, sync_timeout_behind_callback)
{
	uint64_t t0, t1;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 5)));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, 0, NULL));
	t0 = snpu_now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s,
					       20 * NS_PER_MS, NULL));
	t1 = snpu_now_ns();
	/* The timeout is waited in full. */
	EXPECT_GE(t1 - t0, (uint64_t)20 * NS_PER_MS);
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
}

TEST_F(stream, sync_idle_poll)
{
	int32_t err = 1;

	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	err = 1;
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, &err));
	EXPECT_EQ(0, err);
}

TEST_F(stream, sync_bad_fields_einval)
{
	struct snpu_wait w = { .size = sizeof(w), .handle = self->s };

	/* error is an output: not checked. */
	w.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
	w.reserved[0] = 0;
	w.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
}

/* A signal interrupts a blocking sync: EINTR, as no SA_RESTART is set. */
static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(stream, sync_interrupted_eintr)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	/* Every 100 ms, so that one lands while the sync blocks. */
	struct itimerval it = {
		.it_value = { .tv_usec = 100000 },
		.it_interval = { .tv_usec = 100000 },
	}, off = { 0 };

	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 5)));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-EINTR, snpu_stream_sync(self->fd, self->s, -1, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &off, NULL));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
}

/*
 * "Timeouts are __s64 relative nanoseconds, -1 meaning forever": other
 * negative values are out of the documented range (EINVAL). A helper
 * thread answers the callback after 300 ms so that a kernel taking -2
 * for "forever" makes this fail instead of hang.
 */
struct late_answer {
	int fd;
};

static void *answer_after_300ms(void *p)
{
	struct late_answer *la = p;
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	snpu_callback_answer(la->fd, LONG_TIMEOUT, 0, NULL);
	return NULL;
}

TEST_F(stream, sync_negative_timeout_einval)
{
	struct late_answer la = { .fd = self->fd };
	pthread_t th;
	int ret;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(0, pthread_create(&th, NULL, answer_after_300ms, &la));
	ret = snpu_stream_sync(self->fd, self->s, -2, NULL);
	EXPECT_EQ(-EINVAL, ret);
	ret = snpu_stream_sync(self->fd, self->s, INT64_MIN, NULL);
	EXPECT_EQ(-EINVAL, ret);
	pthread_join(th, NULL);
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, NULL));
}

/* ---- destroy ------------------------------------------------------------ */

TEST_F(stream, destroy_waits_for_queued_work)
{
	struct snpu_ctx_query cq;
	uint64_t y, t0, t1;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &y));
	struct snpu_task t[2] = {
		snpu_t_spin(self->s, 200 * NS_PER_MS, 1),
		snpu_t_fill(self->s, y, 4096, 0xd00d, 3),
	};
	t0 = snpu_now_ns();
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, self->s, 0));
	t1 = snpu_now_ns();
	EXPECT_GE(t1 - t0, (uint64_t)200 * NS_PER_MS);
	EXPECT_EQ(1024U, dev_check_u32(self->fd, y, 1024, 0xd00d));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.streams);
	EXPECT_EQ(0U, cq.tasks);
}

TEST_F(stream, destroy_force_cancels)
{
	struct snpu_ctx_query cq;
	uint64_t y;

	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &y));
	struct snpu_task t[2] = {
		snpu_t_spin(self->s, NS_PER_SEC, 1),
		snpu_t_fill(self->s, y, 4096, 0xd00d, 3),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, self->s,
					 SNPU_STREAM_DESTROY_FORCE));
	EXPECT_EQ(1024U, dev_check_u32(self->fd, y, 1024, 0));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.streams);
	EXPECT_EQ(0U, cq.tasks);
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, self->s, 0, NULL));
}

/* Undelivered callbacks of a force-destroyed stream are dropped. */
TEST_F(stream, destroy_force_drops_callbacks)
{
	struct snpu_callback cb;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, self->s,
					 SNPU_STREAM_DESTROY_FORCE));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
}

struct done_arg {
	int fd;
	uint32_t cookie;
};

static void *answer_later(void *p)
{
	struct done_arg *d = p;
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	snpu_callback_done(d->fd, d->cookie, 0);
	return NULL;
}

/* Destroy without force returns once a callback in front is answered. */
TEST_F(stream, destroy_waits_for_callback)
{
	struct snpu_ctx_query cq;
	struct snpu_callback cb;
	struct done_arg d;
	pthread_t th;
	uint64_t y;

	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 1), snpu_t_fill(self->s, y, 64, 4, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	d.fd = self->fd;
	d.cookie = cb.cookie;
	ASSERT_EQ(0, pthread_create(&th, NULL, answer_later, &d));
	EXPECT_EQ(0, snpu_stream_destroy(self->fd, self->s, 0));
	pthread_join(th, NULL);
	EXPECT_EQ(16U, dev_check_u32(self->fd, y, 16, 4));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.streams);
}

/* ---- tasks in flight quota --------------------------------------------- */

/*
 * A callback holds the stream; 4095 NOPs behind it make 4096 tasks in
 * flight. One more, on any stream, is ENOSPC and changes nothing.
 */
TEST_F(stream, inflight_quota_enospc)
{
	struct snpu_task *t = calloc(SNPU_SUBMIT_MAX, sizeof(*t));
	struct snpu_stream_query q, q2;
	struct snpu_ctx_query cq;
	unsigned int i, left;
	uint32_t s2;
	int32_t err = 0;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		t[i] = snpu_t_nop(self->s);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	for (left = SNPU_TEST_TASKS - 1; left; left -= i) {
		i = left < SNPU_SUBMIT_MAX ? left : SNPU_SUBMIT_MAX;
		ASSERT_EQ(0, snpu_submit(self->fd, t, i, NULL));
	}
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ((uint32_t)SNPU_TEST_TASKS, cq.tasks);
	EXPECT_EQ((uint32_t)SNPU_TEST_TASKS, cq.tasks_limit);

	EXPECT_EQ(-ENOSPC, snpu_submit(self->fd, t, 1, NULL));
	EXPECT_EQ(-ENOSPC, snpu_submit(self->fd, t, 2, NULL));
	EXPECT_EQ(-ENOSPC, snpu_submit1(self->fd, snpu_t_nop(s2)));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ((uint64_t)SNPU_TEST_TASKS, q.submitted);
	EXPECT_EQ(0U, q.completed);
	ASSERT_EQ(0, snpu_stream_query(self->fd, s2, &q2));
	EXPECT_EQ(0U, q2.submitted);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ((uint32_t)SNPU_TEST_TASKS, cq.tasks);

	/* Let them run: all complete, and the quota is free again. */
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, 100 * NS_PER_SEC,
				      &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ((uint64_t)SNPU_TEST_TASKS, q.completed);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.tasks);
	EXPECT_EQ(0, snpu_submit(self->fd, t, SNPU_SUBMIT_MAX, NULL));
	free(t);
}

/* The quota is per context: another context still submits. */
TEST_F(stream, inflight_quota_per_context)
{
	struct snpu_task *t = calloc(SNPU_SUBMIT_MAX, sizeof(*t));
	unsigned int i;
	uint32_t sb;
	int fdb;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	for (i = 0; i < SNPU_SUBMIT_MAX; i++)
		t[i] = snpu_t_nop(self->s);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, snpu_submit(self->fd, t, SNPU_SUBMIT_MAX, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, t, SNPU_SUBMIT_MAX - 1, NULL));
	EXPECT_EQ(-ENOSPC, snpu_submit1(self->fd, snpu_t_nop(self->s)));

	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	ASSERT_EQ(0, snpu_stream_create(fdb, 0, &sb));
	EXPECT_EQ(0, snpu_submit1(fdb, snpu_t_nop(sb)));
	EXPECT_EQ(0, snpu_stream_sync(fdb, sb, LONG_TIMEOUT, NULL));
	close(fdb);
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	free(t);
}

TEST_HARNESS_MAIN
