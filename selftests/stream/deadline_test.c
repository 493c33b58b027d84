// SPDX-License-Identifier: GPL-2.0
/*
 * Absolute deadlines (SNPU_WAIT_ABSOLUTE) for the waits that take one:
 * STREAM_SYNC, EVENT_SYNC, CALLBACK_WAIT and ENTER. The timeout is then a
 * CLOCK_MONOTONIC time: a deadline already past polls, a future one ends
 * the wait no earlier than the deadline, and a signal whose handler asks
 * for restarts (SA_RESTART) restarts the wait with the same deadline
 * instead of ending it with EINTR, which is what a relative timeout gets.
 *
 * What blocks the waits is a host callback nobody answers yet, so nothing
 * here depends on how fast the device runs.
 */
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

static volatile sig_atomic_t signals;

static void on_usr1(int sig)
{
	signals++;
}

FIXTURE(dl) {
	int fd;
	uint32_t stream;
	uint32_t event;
	pthread_t pinger;
	volatile bool stop;
	bool pinging;
};

FIXTURE_SETUP(dl)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->stream));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->event));
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	signals = 0;
}

FIXTURE_TEARDOWN(dl)
{
	if (self->pinging) {
		self->stop = true;
		pthread_join(self->pinger, NULL);
	}
	close(self->fd);
}

static pthread_t waiter;

static void *ping_fn(void *arg)
{
	volatile bool *stop = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	while (!*stop) {
		pthread_kill(waiter, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void start_pings(FIXTURE_DATA(dl) *self)
{
	waiter = pthread_self();
	self->stop = false;
	self->pinging = !pthread_create(&self->pinger, NULL, ping_fn,
					(void *)&self->stop);
}

static void stop_pings(FIXTURE_DATA(dl) *self)
{
	self->stop = true;
	pthread_join(self->pinger, NULL);
	self->pinging = false;
}

/* Block the stream behind a host callback; record the event after it. */
static int block(FIXTURE_DATA(dl) *self)
{
	struct snpu_task t[2] = {
		snpu_t_host_func(self->stream, 7),
		snpu_t_record(self->stream, self->event),
	};

	return snpu_submit(self->fd, t, 2, NULL);
}

static int unblock(FIXTURE_DATA(dl) *self)
{
	int32_t err = 1;
	int ret = snpu_callback_answer(self->fd, 10 * NS_PER_SEC, 0, NULL);

	if (ret)
		return ret;
	ret = snpu_stream_sync(self->fd, self->stream, 10 * NS_PER_SEC, &err);
	return ret ?: err;
}

static int wait_abs(int fd, unsigned long cmd, uint32_t handle,
		    int64_t deadline)
{
	struct snpu_wait w = {
		.size = sizeof(w), .flags = SNPU_WAIT_ABSOLUTE,
		.handle = handle, .timeout_ns = deadline,
	};

	return snpu_ioc(fd, cmd, &w);
}

TEST_F(dl, stream_sync_past_deadline_polls)
{
	ASSERT_EQ(0, block(self));
	EXPECT_EQ(-ETIMEDOUT, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC,
				       self->stream, 1));
	EXPECT_EQ(-ETIMEDOUT, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC,
				       self->stream, snpu_now_ns() - 1));
	ASSERT_EQ(0, unblock(self));
	/* Done work: a past deadline succeeds. */
	EXPECT_EQ(0, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC, self->stream,
			      1));
}

TEST_F(dl, stream_sync_ends_no_earlier_than_deadline)
{
	int64_t deadline = snpu_now_ns() + 50 * NS_PER_MS;

	ASSERT_EQ(0, block(self));
	EXPECT_EQ(-ETIMEDOUT, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC,
				       self->stream, deadline));
	EXPECT_GE((int64_t)snpu_now_ns(), deadline);
	ASSERT_EQ(0, unblock(self));
}

TEST_F(dl, stream_sync_done_before_deadline)
{
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->stream)));
	EXPECT_EQ(0, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC, self->stream,
			      snpu_now_ns() + 30 * NS_PER_SEC));
	/* -1 still waits forever (here: for done work). */
	EXPECT_EQ(0, wait_abs(self->fd, SNPU_IOC_STREAM_SYNC, self->stream,
			      -1));
}

/*
 * Signals with SA_RESTART: an absolute deadline restarts and ends with
 * ETIMEDOUT at the deadline; a relative timeout ends with EINTR.
 */
TEST_F(dl, stream_sync_restarts_after_signal)
{
	int64_t deadline;
	int ret;

	ASSERT_EQ(0, block(self));
	start_pings(self);
	ASSERT_TRUE(self->pinging);
	deadline = snpu_now_ns() + 300 * NS_PER_MS;
	ret = wait_abs(self->fd, SNPU_IOC_STREAM_SYNC, self->stream, deadline);
	EXPECT_EQ(-ETIMEDOUT, ret);
	EXPECT_GE((int64_t)snpu_now_ns(), deadline);
	EXPECT_GT(signals, 1);
	signals = 0;
	ret = snpu_stream_sync(self->fd, self->stream, 10 * NS_PER_SEC, NULL);
	stop_pings(self);
	EXPECT_EQ(-EINTR, ret);
	EXPECT_GE(signals, 1);
	ASSERT_EQ(0, unblock(self));
}

TEST_F(dl, event_sync_deadline_and_restart)
{
	int64_t deadline;

	ASSERT_EQ(0, block(self));
	EXPECT_EQ(-ETIMEDOUT, wait_abs(self->fd, SNPU_IOC_EVENT_SYNC,
				       self->event, 1));
	start_pings(self);
	ASSERT_TRUE(self->pinging);
	deadline = snpu_now_ns() + 200 * NS_PER_MS;
	EXPECT_EQ(-ETIMEDOUT, wait_abs(self->fd, SNPU_IOC_EVENT_SYNC,
				       self->event, deadline));
	stop_pings(self);
	EXPECT_GE((int64_t)snpu_now_ns(), deadline);
	EXPECT_GT(signals, 1);
	ASSERT_EQ(0, unblock(self));
	EXPECT_EQ(0, wait_abs(self->fd, SNPU_IOC_EVENT_SYNC, self->event, 1));
}

TEST_F(dl, callback_wait_deadline_and_restart)
{
	struct snpu_callback cb = {
		.size = sizeof(cb), .flags = SNPU_WAIT_ABSOLUTE, .timeout_ns = 1,
	};
	int64_t deadline;

	EXPECT_EQ(-ETIMEDOUT, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, &cb));
	start_pings(self);
	ASSERT_TRUE(self->pinging);
	deadline = snpu_now_ns() + 200 * NS_PER_MS;
	memset(&cb, 0, sizeof(cb));
	cb.size = sizeof(cb);
	cb.flags = SNPU_WAIT_ABSOLUTE;
	cb.timeout_ns = deadline;
	EXPECT_EQ(-ETIMEDOUT, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, &cb));
	stop_pings(self);
	EXPECT_GE((int64_t)snpu_now_ns(), deadline);
	EXPECT_GT(signals, 1);
	/* A pending callback is taken at once, deadline or not. */
	ASSERT_EQ(0, block(self));
	memset(&cb, 0, sizeof(cb));
	cb.size = sizeof(cb);
	cb.flags = SNPU_WAIT_ABSOLUTE;
	cb.timeout_ns = 1;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, &cb));
	EXPECT_EQ(7ULL, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->stream, 10 * NS_PER_SEC,
				      NULL));
}

TEST_F(dl, enter_deadline_and_restart)
{
	struct snpu_ring_setup rs = { .size = sizeof(rs), .sq_entries = 4 };
	struct snpu_enter e = {
		.size = sizeof(e),
		.flags = SNPU_ENTER_GETEVENTS | SNPU_WAIT_ABSOLUTE,
		.min_complete = 1, .timeout_ns = 1,
	};
	int64_t deadline;

	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &rs));
	EXPECT_EQ(-ETIMEDOUT, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	start_pings(self);
	ASSERT_TRUE(self->pinging);
	deadline = snpu_now_ns() + 200 * NS_PER_MS;
	e.timeout_ns = deadline;
	EXPECT_EQ(-ETIMEDOUT, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	stop_pings(self);
	EXPECT_GE((int64_t)snpu_now_ns(), deadline);
	EXPECT_GT(signals, 1);
}

TEST_F(dl, bad_flags_and_timeouts_einval)
{
	struct snpu_wait w = {
		.size = sizeof(w), .flags = SNPU_WAIT_ABSOLUTE << 1,
		.handle = self->stream, .timeout_ns = -1,
	};

	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
	w.flags = SNPU_WAIT_ABSOLUTE;
	w.timeout_ns = -2;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
	w.timeout_ns = 1;
	w.handle = 0x7fff0000;
	EXPECT_EQ(-ENOENT, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
}

TEST_HARNESS_MAIN
