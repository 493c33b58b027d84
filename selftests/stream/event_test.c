// SPDX-License-Identifier: GPL-2.0
/*
 * snpu events: create/destroy/query, the event quota, what a record
 * captures, re-recording, stream waits, EVENT_SYNC and EVENT_ELAPSED.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (ctx_events=1024). A host callback in front of a record keeps its
 * capture pending for as long as the test needs.
 */
#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)

FIXTURE(event) {
	int fd;
	uint32_t s, e;
};

FIXTURE_SETUP(event)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &self->s));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->e));
}

FIXTURE_TEARDOWN(event)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int32_t first_u32(int fd, uint64_t addr, uint32_t *v)
{
	return snpu_d2h(fd, v, addr, 4);
}

/* ---- create, destroy, query -------------------------------------------- */

TEST_F(event, new_event_never_recorded)
{
	struct snpu_event_query q;

	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_NEVER_RECORDED, q.state);
	EXPECT_EQ(0U, q.stream);
	EXPECT_EQ(0U, q.seq);
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(0U, q.time_ns);
	EXPECT_EQ((uint32_t)sizeof(q), q.size);
}

TEST_F(event, create_bad_args_einval)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	struct snpu_ctx_query cq;

	c.priority = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_CREATE, &c));
	c.priority = 0;
	c.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_CREATE, &c));
	c.reserved[0] = 0;
	c.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_CREATE, &c));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(1U, cq.events);
}

TEST_F(event, query_bad_fields_einval)
{
	struct snpu_event_query q;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.handle = self->e;
	/* The outputs (state, stream, error, ...) are not checked. */
	q.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_QUERY, &q));
}

TEST_F(event, unknown_handle_enoent)
{
	struct snpu_event_query q;
	int64_t ns = 0;

	EXPECT_EQ(-ENOENT, snpu_event_query(self->fd, 0, &q));
	EXPECT_EQ(-ENOENT, snpu_event_query(self->fd, 4242, &q));
	/* A stream is no event. */
	EXPECT_EQ(-ENOENT, snpu_event_query(self->fd, self->s, &q));
	EXPECT_EQ(-ENOENT, snpu_event_sync(self->fd, 4242, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->fd, 4242));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->fd, self->s));
	EXPECT_EQ(-ENOENT, snpu_event_elapsed(self->fd, 4242, self->e, &ns));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd,
			snpu_t_record(self->s, 4242)));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_wait(self->s, 4242)));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd,
			snpu_t_record(self->s, self->s)));
}

TEST_F(event, destroy)
{
	struct snpu_event_query q;
	struct snpu_ctx_query cq;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	EXPECT_EQ(0, snpu_event_destroy(self->fd, self->e));
	EXPECT_EQ(-ENOENT, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->fd, self->e));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_wait(self->s,
								self->e)));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.events);
}

TEST_F_TIMEOUT(event, quota_enospc_and_release, 60)
{
	uint32_t *h = calloc(SNPU_TEST_EVENTS + 1, sizeof(*h));
	struct snpu_task *t2;
	struct snpu_ctx_query cq;
	unsigned int n = 0, i;
	int ret = 0;

	ASSERT_NE(NULL, h);
	while (n <= SNPU_TEST_EVENTS) {
		ret = snpu_event_create(self->fd, &h[n]);
		if (ret)
			break;
		n++;
	}
	/* The fixture's event counts. */
	EXPECT_EQ(SNPU_TEST_EVENTS - 1U, n);
	EXPECT_EQ(-ENOSPC, ret);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ((uint32_t)SNPU_TEST_EVENTS, cq.events);
	EXPECT_EQ((uint32_t)SNPU_TEST_EVENTS, cq.events_limit);
	/* Every event holds a capture: the pool has room for all of them. */
	for (i = 0; i < n; i += 256) {
		struct snpu_task t[256];
		unsigned int j, m = n - i < 256 ? n - i : 256;

		for (j = 0; j < m; j++)
			t[j] = snpu_t_record(self->s, h[i + j]);
		ASSERT_EQ(0, snpu_submit(self->fd, t, m, NULL));
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	/* And tasks still fit up to the task quota on top of them. */
	t2 = calloc(SNPU_SUBMIT_MAX, sizeof(*t2));
	ASSERT_NE(NULL, t2);
	t2[0] = snpu_t_host_func(self->s, 1);
	for (i = 1; i < SNPU_SUBMIT_MAX; i++)
		t2[i] = snpu_t_nop(self->s);
	ASSERT_EQ(0, snpu_submit(self->fd, t2, SNPU_SUBMIT_MAX, NULL));
	t2[0] = snpu_t_nop(self->s);
	for (i = 1; i < SNPU_TEST_TASKS / SNPU_SUBMIT_MAX; i++)
		ASSERT_EQ(0, snpu_submit(self->fd, t2, SNPU_SUBMIT_MAX, NULL));
	EXPECT_EQ(-ENOSPC, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	free(t2);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, snpu_event_destroy(self->fd, h[i]));
	ASSERT_EQ(0, snpu_event_destroy(self->fd, self->e));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.events);
	EXPECT_EQ(0, snpu_event_create(self->fd, &h[0]));
	free(h);
}

/* ---- record ------------------------------------------------------------- */

/* A record on an idle stream captures nothing: complete at once. */
TEST_F(event, record_on_idle_stream_completes)
{
	struct snpu_event_query q;
	uint64_t t0 = snpu_now_ns(), seq = 0;
	struct snpu_task t = snpu_t_record(self->s, self->e);
	int32_t err = 1;

	ASSERT_EQ(0, snpu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(1U, seq);
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(self->s, q.stream);
	EXPECT_EQ(1U, q.seq);
	EXPECT_EQ(0, q.error);
	EXPECT_GE(q.time_ns, t0);
	EXPECT_LE(q.time_ns, snpu_now_ns());
	EXPECT_EQ(0, snpu_event_sync(self->fd, self->e, 0, &err));
	EXPECT_EQ(0, err);
}

TEST_F(event, record_pending_then_complete)
{
	struct snpu_event_query q;
	uint64_t before;
	int32_t err = 1;

	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_PENDING, q.state);
	EXPECT_EQ(self->s, q.stream);
	EXPECT_EQ(2U, q.seq);
	EXPECT_EQ(0U, q.time_ns);
	EXPECT_EQ(-ETIMEDOUT, snpu_event_sync(self->fd, self->e, 0, NULL));
	EXPECT_EQ(-ETIMEDOUT, snpu_event_sync(self->fd, self->e, NS_PER_MS,
					      NULL));

	before = snpu_now_ns();
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(2U, q.seq);
	EXPECT_GE(q.time_ns, before);
}

/*
 * A record captures only the work submitted before it: with a second
 * unanswered callback behind the record, the event completes once the
 * first callback is answered.
 */
TEST_F(event, record_captures_only_prior_work)
{
	struct snpu_callback cb1, cb2;
	struct snpu_event_query q;
	int ret;

	struct snpu_task t[3] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
		snpu_t_host_func(self->s, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb1));
	ASSERT_EQ(1U, cb1.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb1.cookie, 0));
	ret = snpu_event_sync(self->fd, self->e, 10 * NS_PER_SEC, NULL);
	EXPECT_EQ(0, ret) TH_LOG("the event waits for later work: %s",
				 strerror(-ret));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q.state);
	/* The stream itself is still held by the second callback. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, 0, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb2));
	EXPECT_EQ(2U, cb2.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb2.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
}

/*
 * Re-recording replaces the capture; a wait queued before the re-record
 * keeps the first capture. Stream A: cb1, record E (capture 1), cb2,
 * record E (capture 2). Stream B, submitted between the two records:
 * wait E, fill Y. Answering only cb1 must let B finish, while capture 2
 * is still held by cb2.
 */
TEST_F(event, rerecord_keeps_queued_waits)
{
	struct snpu_callback cb;
	struct snpu_event_query q;
	uint32_t b, y0 = 0;
	uint64_t y;
	int32_t err = 1;
	int ret;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task a1[2] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
	};
	struct snpu_task b1[2] = {
		snpu_t_wait(b, self->e), snpu_t_fill(b, y, 64, 0xbeef, 1),
	};
	struct snpu_task a2[2] = {
		snpu_t_host_func(self->s, 2), snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, a1, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, b1, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, a2, 2, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_PENDING, q.state);
	EXPECT_EQ(4U, q.seq) TH_LOG("the event names the new capture");

	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	ASSERT_EQ(1U, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ret = snpu_stream_sync(self->fd, b, 10 * NS_PER_SEC, &err);
	EXPECT_EQ(0, ret) TH_LOG("B waits for the second capture: %s",
				 strerror(-ret));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, first_u32(self->fd, y, &y0));
	EXPECT_EQ(0xbeefU, y0);
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_PENDING, q.state);

	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, NULL));
}

#define PP_ROUNDS	300
#define PP_WORDS	256

/*
 * A ping-pong: stream A adds one to x and records E1; stream B waits for
 * E1, copies x to y and records E2; A waits for E2 before its next add.
 * Records and waits complete where the work before them completes, so
 * only the events order the two streams: any early start shows in y.
 */
TEST_F_TIMEOUT(event, ping_pong_orders_two_streams, 120)
{
	struct snpu_task *t = calloc(6 * PP_ROUNDS, sizeof(*t));
	uint32_t *buf = calloc(PP_WORDS, 4), b, e2, i;
	uint64_t x, y, ones;
	int32_t err = 1;

	ASSERT_NE(NULL, t);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4 * PP_WORDS, 0, &x));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4 * PP_WORDS, 0, &y));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4 * PP_WORDS, 0, &ones));
	ASSERT_EQ(0, snpu_memset(self->fd, x, 0, 4 * PP_WORDS));
	ASSERT_EQ(0, snpu_memset(self->fd, y, 0, 4 * PP_WORDS));
	for (i = 0; i < PP_WORDS; i++)
		buf[i] = 1;
	ASSERT_EQ(0, snpu_h2d(self->fd, ones, buf, 4 * PP_WORDS));
	for (i = 0; i < PP_ROUNDS; i++) {
		struct snpu_task *r = &t[6 * i];

		r[0] = snpu_t_binop(self->s, SNPU_KERNEL_ADD_I32, x, x, ones,
				    4 * PP_WORDS, 1);
		r[1] = snpu_t_record(self->s, self->e);
		r[2] = snpu_t_wait(b, self->e);
		r[3] = snpu_t_copy(b, SNPU_COPY_D2D, y, x, 4 * PP_WORDS);
		r[4] = snpu_t_record(b, e2);
		r[5] = snpu_t_wait(self->s, e2);
	}
	ASSERT_EQ(0, snpu_submit_all(self->fd, t, 6 * PP_ROUNDS));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, y, 4 * PP_WORDS));
	for (i = 0; i < PP_WORDS; i++)
		if (buf[i] != PP_ROUNDS)
			break;
	EXPECT_EQ((uint32_t)PP_WORDS, i) TH_LOG("y[%u] = %u", i, buf[i % PP_WORDS]);
	free(t);
	free(buf);
}

/*
 * The same with timestamps: A spins 100 ms, records E, spins 1 s more and
 * records E again; B (submitted between) waits E and records E2. E2 must
 * complete before E's second capture.
 */
TEST_F(event, rerecord_timestamps)
{
	struct snpu_event_query q1, q2;
	uint32_t b, e2;
	int64_t ns = 0;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	struct snpu_task a1[2] = {
		snpu_t_spin(self->s, 100 * NS_PER_MS, 1),
		snpu_t_record(self->s, self->e),
	};
	struct snpu_task b1[2] = {
		snpu_t_wait(b, self->e), snpu_t_record(b, e2),
	};
	struct snpu_task a2[2] = {
		snpu_t_spin(self->s, NS_PER_SEC, 1),
		snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, a1, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, b1, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, a2, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q1));
	ASSERT_EQ(0, snpu_event_query(self->fd, e2, &q2));
	EXPECT_EQ(4U, q1.seq);
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q1.state);
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q2.state);
	EXPECT_LT(q2.time_ns, q1.time_ns);
	ASSERT_EQ(0, snpu_event_elapsed(self->fd, e2, self->e, &ns));
	/* E's second capture came after B's record and the 1 s spin. */
	EXPECT_GT(ns, 0);
	EXPECT_EQ((int64_t)(q1.time_ns - q2.time_ns), ns);
}

/*
 * Records and waits in one batch bind in batch order: the wait between
 * two records of E waits for the first one.
 */
TEST_F(event, rerecord_in_one_batch)
{
	struct snpu_callback cb;
	uint32_t b, v = 0;
	uint64_t y;
	int32_t err = 1;
	int ret;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task t[6] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
		snpu_t_wait(b, self->e), snpu_t_fill(b, y, 64, 0x5eed, 1),
		snpu_t_host_func(self->s, 2), snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 6, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	ASSERT_EQ(1U, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ret = snpu_stream_sync(self->fd, b, 10 * NS_PER_SEC, &err);
	EXPECT_EQ(0, ret) TH_LOG("the wait took the later record: %s",
				 strerror(-ret));
	ASSERT_EQ(0, snpu_d2h(self->fd, &v, y, 4));
	EXPECT_EQ(0x5eedU, v);
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, NULL));
}

/* ---- stream wait -------------------------------------------------------- */

TEST_F(event, wait_never_recorded_einval)
{
	struct snpu_stream_query q;
	uint32_t b;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_wait(self->s,
								self->e)));
	/* In a batch, after good tasks: nothing queued. */
	struct snpu_task t[3] = {
		snpu_t_nop(self->s), snpu_t_wait(b, self->e), snpu_t_nop(b),
	};
	EXPECT_EQ(-EINVAL, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(0U, q.submitted);
	ASSERT_EQ(0, snpu_stream_query(self->fd, b, &q));
	EXPECT_EQ(0U, q.submitted);
}

/* A wait before the batch's own record is still on a never-recorded event. */
TEST_F(event, wait_before_record_in_batch_einval)
{
	struct snpu_event_query q;
	uint32_t b;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	struct snpu_task t[2] = {
		snpu_t_wait(b, self->e), snpu_t_record(self->s, self->e),
	};
	EXPECT_EQ(-EINVAL, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_NEVER_RECORDED, q.state);
}

/* A refused batch that recorded the event leaves it never recorded. */
TEST_F(event, failed_batch_record_does_not_stick)
{
	struct snpu_event_query q;

	struct snpu_task t[2] = {
		snpu_t_record(self->s, self->e), snpu_t_fail(self->s, 0),
	};
	EXPECT_EQ(-EINVAL, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_NEVER_RECORDED, q.state);
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_wait(self->s,
								self->e)));
}

/* A wait on a complete capture does not hold the stream. */
TEST_F(event, wait_on_complete_event)
{
	uint32_t b;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_wait(b, self->e)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
}

/* Destroying an event does not drop waits already queued on it. */
TEST_F(event, destroy_with_queued_wait)
{
	uint32_t b, y0 = 0;
	uint64_t y;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &b));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y));
	struct snpu_task t[4] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
		snpu_t_wait(b, self->e), snpu_t_fill(b, y, 64, 0x600d, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 4, NULL));
	ASSERT_EQ(0, snpu_event_destroy(self->fd, self->e));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, b, 0, NULL))
		TH_LOG("the wait must still wait for the capture");
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, first_u32(self->fd, y, &y0));
	EXPECT_EQ(0x600dU, y0);
}

/* A capture of failed work reports an error. */
TEST_F(event, capture_of_failed_work_reports_error)
{
	struct snpu_event_query q;
	int32_t err = 0;

	struct snpu_task t[2] = {
		snpu_t_fail(self->s, 5), snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, &err));
	EXPECT_NE(0, err);
	ASSERT_EQ(0, snpu_event_query(self->fd, self->e, &q));
	EXPECT_EQ((__u32)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(err, q.error);
	TH_LOG("capture error after FAIL(5): %d", q.error);
}

/* ---- event sync ---------------------------------------------------------- */

TEST_F(event, sync_timeouts)
{
	uint64_t t0, t1;

	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 1), snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	EXPECT_EQ(-ETIMEDOUT, snpu_event_sync(self->fd, self->e, 0, NULL));
	t0 = snpu_now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_event_sync(self->fd, self->e,
					      30 * NS_PER_MS, NULL));
	t1 = snpu_now_ns();
	EXPECT_GE(t1 - t0, (uint64_t)30 * NS_PER_MS);
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	EXPECT_EQ(0, snpu_event_sync(self->fd, self->e, -1, NULL));
	EXPECT_EQ(0, snpu_event_sync(self->fd, self->e, 0, NULL));
}

TEST_F(event, sync_spin_timeout)
{
	ASSERT_EQ(0, snpu_submit1(self->fd,
			snpu_t_spin(self->s, NS_PER_SEC, 1)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e)));
	EXPECT_EQ(-ETIMEDOUT, snpu_event_sync(self->fd, self->e, NS_PER_MS,
					      NULL));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	EXPECT_EQ(0, snpu_event_sync(self->fd, self->e, LONG_TIMEOUT, NULL));
}

/* -1 is forever; other negative timeouts are out of range (EINVAL). */
TEST_F(event, sync_negative_timeout_einval)
{
	struct snpu_task t[2] = {
		snpu_t_spin(self->s, 300 * NS_PER_MS, 1),
		snpu_t_record(self->s, self->e),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_sync(self->fd, self->e, -2, NULL));
	EXPECT_EQ(0, snpu_event_sync(self->fd, self->e, -1, NULL));
}

/* ---- elapsed ------------------------------------------------------------ */

FIXTURE(elapsed) {
	int fd;
	uint32_t s, e1, e2;
};

FIXTURE_VARIANT(elapsed) {
	uint64_t ns;
	uint32_t blocks;
};

FIXTURE_VARIANT_ADD(elapsed, spin_20ms) { .ns = 20 * NS_PER_MS, .blocks = 1 };
FIXTURE_VARIANT_ADD(elapsed, spin_150ms) { .ns = 150 * NS_PER_MS, .blocks = 1 };
FIXTURE_VARIANT_ADD(elapsed, spin_50ms_x3) {
	.ns = 50 * NS_PER_MS, .blocks = 3,
};

FIXTURE_SETUP(elapsed)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->e1));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->e2));
}

FIXTURE_TEARDOWN(elapsed)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(elapsed, at_least_the_spin)
{
	int64_t ns = 0, back = 0;

	struct snpu_task t[3] = {
		snpu_t_record(self->s, self->e1),
		snpu_t_spin(self->s, variant->ns, variant->blocks),
		snpu_t_record(self->s, self->e2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e2, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_event_elapsed(self->fd, self->e1, self->e2, &ns));
	EXPECT_GE(ns, (int64_t)variant->ns);
	ASSERT_EQ(0, snpu_event_elapsed(self->fd, self->e2, self->e1, &back));
	EXPECT_EQ(-ns, back);
	ASSERT_EQ(0, snpu_event_elapsed(self->fd, self->e1, self->e1, &back));
	EXPECT_EQ(0, back);
}

TEST_F(elapsed, never_recorded_einval)
{
	int64_t ns = 0;

	EXPECT_EQ(-EINVAL, snpu_event_elapsed(self->fd, self->e1, self->e2,
					      &ns));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e1)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e1, LONG_TIMEOUT, NULL));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed(self->fd, self->e1, self->e2,
					      &ns));
	EXPECT_EQ(-EINVAL, snpu_event_elapsed(self->fd, self->e2, self->e1,
					      &ns));
}

TEST_F(elapsed, pending_ebusy)
{
	int64_t ns = -1;

	struct snpu_task t[3] = {
		snpu_t_record(self->s, self->e1),
		snpu_t_host_func(self->s, 1),
		snpu_t_record(self->s, self->e2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e1, LONG_TIMEOUT, NULL));
	EXPECT_EQ(-EBUSY, snpu_event_elapsed(self->fd, self->e1, self->e2,
					     &ns));
	EXPECT_EQ(-EBUSY, snpu_event_elapsed(self->fd, self->e2, self->e1,
					     &ns));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->e2, LONG_TIMEOUT, NULL));
	EXPECT_EQ(0, snpu_event_elapsed(self->fd, self->e1, self->e2, &ns));
	EXPECT_GE(ns, 0);
}

TEST_F(elapsed, bad_fields_einval)
{
	struct snpu_event_elapsed e = {
		.size = sizeof(e), .start = self->e1, .end = self->e2,
	};

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e1)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, self->e2)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	e.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_ELAPSED, &e));
	e.reserved[0] = 0;
	e.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_EVENT_ELAPSED, &e));
	e.flags = 0;
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_ELAPSED, &e));
	EXPECT_GE(e.ns, 0);
}

TEST_HARNESS_MAIN
