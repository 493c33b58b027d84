// SPDX-License-Identifier: GPL-2.0
/*
 * snpu host callbacks: SNPU_OP_HOST_FUNC tasks delivered by CALLBACK_WAIT,
 * completed by CALLBACK_DONE, poll(2) of the device file, and the stream
 * holding still until the callback is answered.
 *
 * Runs as root in the test VM with the module loaded with its defaults.
 */
#include <poll.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)

FIXTURE(cb) {
	int fd;
	uint32_t s;
	uint64_t y;	/* 64 bytes of device memory, zero */
};

FIXTURE_SETUP(cb)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &self->s));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &self->y));
}

FIXTURE_TEARDOWN(cb)
{
	if (self->fd >= 0)
		close(self->fd);
}

static uint32_t read_u32(int fd, uint64_t addr)
{
	uint32_t v = 0xffffffff;

	snpu_d2h(fd, &v, addr, 4);
	return v;
}

static short poll_fd(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) < 0)
		return -1;
	return p.revents;
}

TEST_F(cb, delivered_with_user_data_and_holds_stream)
{
	struct snpu_stream_query q;
	struct snpu_callback cb;
	int32_t err = 1;

	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 0xdeadbeefcafe1234ULL),
		snpu_t_fill(self->s, self->y, 64, 0x1111, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	EXPECT_EQ(0xdeadbeefcafe1234ULL, cb.user_data);
	EXPECT_EQ(self->s, cb.stream);
	EXPECT_EQ((uint32_t)sizeof(cb), cb.size);

	/* Until DONE the next task does not run. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s,
					       20 * NS_PER_MS, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(2U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	EXPECT_EQ(0U, read_u32(self->fd, self->y));

	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0x1111U, read_u32(self->fd, self->y));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(2U, q.completed);
}

/*
 * A NOP launch on an idle stream is complete when SUBMIT returns; behind
 * a held stream it waits its turn like any task.
 */
TEST_F(cb, nop_done_at_submit_only_on_idle_stream)
{
	struct snpu_task nop = snpu_t_launch(self->s, SNPU_KERNEL_NOP, 1);
	struct snpu_stream_query q;
	struct snpu_callback cb;
	uint64_t seq = 0;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_submit(self->fd, &nop, 1, &seq));
	EXPECT_EQ(1U, seq);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(1U, q.submitted);
	EXPECT_EQ(1U, q.completed);

	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 0x40b),
		nop,
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, &seq));
	EXPECT_EQ(3U, seq);
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(3U, q.submitted);
	EXPECT_EQ(1U, q.completed);

	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(3U, q.completed);
}

/* Callbacks of one stream come in stream order, one at a time. */
TEST_F(cb, stream_order_of_callbacks)
{
	struct snpu_task t[50];
	struct snpu_callback cb;
	unsigned int i;

	for (i = 0; i < 50; i++)
		t[i] = snpu_t_host_func(self->s, 1000 + i);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 50, NULL));
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
		EXPECT_EQ(1000U + i, cb.user_data);
		/* The next one is not ready before this one is done. */
		EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0,
				&(struct snpu_callback){ 0 }));
		ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	}
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
}

/* Two streams: both callbacks out at once, answered in reverse order. */
TEST_F(cb, two_streams_answered_out_of_order)
{
	struct snpu_callback c1, c2;
	uint32_t s2;
	uint64_t y2;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &y2));
	struct snpu_task t[4] = {
		snpu_t_host_func(self->s, 1),
		snpu_t_fill(self->s, self->y, 64, 1, 1),
		snpu_t_host_func(s2, 2),
		snpu_t_fill(s2, y2, 64, 2, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 4, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &c1));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &c2));
	EXPECT_NE(c1.cookie, c2.cookie);
	EXPECT_NE(c1.stream, c2.stream);
	EXPECT_EQ(c1.stream == self->s ? 1U : 2U, c1.user_data);
	EXPECT_EQ(c2.stream == self->s ? 1U : 2U, c2.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, c2.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, c2.stream, LONG_TIMEOUT, NULL));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, c1.stream, 0, NULL));
	ASSERT_EQ(0, snpu_callback_done(self->fd, c1.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, c1.stream, LONG_TIMEOUT, NULL));
	EXPECT_EQ(1U, read_u32(self->fd, self->y));
	EXPECT_EQ(2U, read_u32(self->fd, y2));
}

TEST_F(cb, poll_reports_pending_callback)
{
	struct snpu_callback cb;

	EXPECT_EQ(0, poll_fd(self->fd, 0)) TH_LOG("nothing pending yet");
	/* Becomes ready after a spin: poll must wake up for it. */
	struct snpu_task t[2] = {
		snpu_t_spin(self->s, 50 * NS_PER_MS, 1),
		snpu_t_host_func(self->s, 7),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	EXPECT_EQ(POLLIN, poll_fd(self->fd, 20000) & (POLLIN | POLLERR));
	/* Still pending: poll says so again, at once. */
	EXPECT_EQ(POLLIN, poll_fd(self->fd, 0) & POLLIN);
	ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(7U, cb.user_data);
	/* Delivered: nothing pending any more. */
	EXPECT_EQ(0, poll_fd(self->fd, 0));
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	EXPECT_EQ(0, poll_fd(self->fd, 0));
}

TEST_F(cb, done_bogus_cookie_enoent)
{
	struct snpu_callback cb;

	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, 0, 0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, 0xffffffff, 0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, 0x12345, 0));

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	/* Near misses of the real cookie. */
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, cb.cookie + 1, 0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, cb.cookie ^ 0x10000,
					      0));
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, cb.cookie ^ 0x80000000,
					      0));
	/* None of those completed it. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, 0, NULL));
	EXPECT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	/* A cookie is good once. */
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
}

/* A stale cookie does not complete a newer callback in the same slot. */
TEST_F(cb, stale_cookie_enoent)
{
	struct snpu_callback c1, c2;
	int i;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &c1));
	ASSERT_EQ(0, snpu_callback_done(self->fd, c1.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	/* Whichever slot the next ones get, the old cookie must not fit. */
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, snpu_submit1(self->fd,
				snpu_t_host_func(self->s, 2)));
		ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &c2));
		EXPECT_EQ(-ENOENT, snpu_callback_done(self->fd, c1.cookie, 0));
		ASSERT_EQ(0, snpu_callback_done(self->fd, c2.cookie, 0));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT,
					      NULL));
	}
}

TEST_F(cb, done_with_error_fails_stream)
{
	struct snpu_stream_query q;
	struct snpu_callback cb;
	int32_t err = 0;

	struct snpu_task t[2] = {
		snpu_t_host_func(self->s, 1),
		snpu_t_fill(self->s, self->y, 64, 0x2222, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, -7));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-7, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-7, q.error);
	EXPECT_EQ(2U, q.completed);
	EXPECT_EQ(0U, read_u32(self->fd, self->y))
		TH_LOG("ran after the failure");
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));
}

TEST_F(cb, done_bad_fields_einval)
{
	struct snpu_callback cb, d;
	int i;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, LONG_TIMEOUT, &cb));
	/* WAIT's fields (timeout_ns, the outputs) are ignored by DONE. */
	for (i = 0; i < 5; i++) {
		memset(&d, 0, sizeof(d));
		d.size = sizeof(d);
		d.cookie = cb.cookie;
		switch (i) {
		case 0: d.status = 1; break;
		case 1: d.status = -4096; break;
		case 2: d.pad = 1; break;
		case 3: d.reserved[0] = 1; break;
		case 4: d.flags = 1; break;
		}
		EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_DONE,
					    &d)) TH_LOG("case %d", i);
	}
	/* The refusals left it delivered and not done. */
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, self->s, 0, NULL));
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, -4095));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &i));
	EXPECT_EQ(-4095, i);
}

TEST_F(cb, wait_nothing_pending_etimedout)
{
	struct snpu_callback cb;
	uint64_t t0, t1;

	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
	t0 = snpu_now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 20 * NS_PER_MS,
						 &cb));
	t1 = snpu_now_ns();
	EXPECT_GE(t1 - t0, (uint64_t)20 * NS_PER_MS);
	/* A task that is no callback is never delivered. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
}

TEST_F(cb, wait_bad_fields_einval)
{
	struct snpu_callback cb;
	int i;

	/* The outputs, and DONE's status, are ignored by WAIT. */
	for (i = 0; i < 2; i++) {
		memset(&cb, 0, sizeof(cb));
		cb.size = sizeof(cb);
		switch (i) {
		case 0: cb.pad = 1; break;
		case 1: cb.reserved[1] = 1; break;
		}
		EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT,
					    &cb)) TH_LOG("case %d", i);
	}
}

/*
 * -1 is forever; other negative timeouts are out of range (EINVAL). A
 * callback becomes ready after a 300 ms spin, so that a kernel taking -2
 * for "forever" makes this fail instead of hang.
 */
TEST_F(cb, wait_negative_timeout_einval)
{
	struct snpu_callback cb;
	int ret;

	struct snpu_task t[2] = {
		snpu_t_spin(self->s, 300 * NS_PER_MS, 1),
		snpu_t_host_func(self->s, 3),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ret = snpu_callback_wait(self->fd, -2, &cb);
	EXPECT_EQ(-EINVAL, ret);
	if (!ret) {
		ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	} else {
		ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0,
						  NULL));
	}
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
}

/* A blocked CALLBACK_WAIT wakes up for a callback that becomes ready. */
struct waiter {
	int fd;
	int ret;
	uint64_t user_data;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	struct snpu_callback cb;

	w->ret = snpu_callback_wait(w->fd, LONG_TIMEOUT, &cb);
	if (!w->ret) {
		w->user_data = cb.user_data;
		w->ret = snpu_callback_done(w->fd, cb.cookie, 0);
	}
	return NULL;
}

TEST_F(cb, blocked_wait_wakes_up)
{
	struct waiter w = { .fd = self->fd, .ret = 1 };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, wait_thread, &w));
	struct snpu_task t[3] = {
		snpu_t_spin(self->s, 50 * NS_PER_MS, 1),
		snpu_t_host_func(self->s, 99),
		snpu_t_fill(self->s, self->y, 64, 5, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(99U, w.user_data);
	EXPECT_EQ(5U, read_u32(self->fd, self->y));
}

/* An undelivered callback of an aborted stream is dropped. */
TEST_F(cb, abort_drops_pending_callback)
{
	struct snpu_callback cb;
	int32_t err = 0;

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(self->s, 1)));
	ASSERT_EQ(POLLIN, poll_fd(self->fd, 20000) & POLLIN);
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(0, poll_fd(self->fd, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-ECANCELED, err);
}

/* A callback behind a failed task is never delivered. */
TEST_F(cb, not_delivered_after_failure)
{
	struct snpu_callback cb;
	int32_t err = 0;

	struct snpu_task t[2] = {
		snpu_t_fail(self->s, 3), snpu_t_host_func(self->s, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-3, err);
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
}

/* Closing a context with a delivered, unanswered callback does not hang. */
TEST_F(cb, close_with_delivered_callback)
{
	struct snpu_callback cb;
	long long c0 = -1, c1 = -1;
	uint32_t s;
	int fdb;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	fdb = snpu_open_dev();
	ASSERT_GE(fdb, 0);
	ASSERT_EQ(0, snpu_stream_create(fdb, 0, &s));
	ASSERT_EQ(0, snpu_submit1(fdb, snpu_t_host_func(s, 1)));
	ASSERT_EQ(0, snpu_submit1(fdb, snpu_t_host_func(s, 2)));
	ASSERT_EQ(0, snpu_callback_wait(fdb, LONG_TIMEOUT, &cb));
	close(fdb);
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c1));
	EXPECT_EQ(c0, c1);
	/* The other context never sees B's callbacks. */
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
}

TEST_HARNESS_MAIN
