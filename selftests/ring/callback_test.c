// SPDX-License-Identifier: GPL-2.0
/*
 * Host callbacks through the command queues (ABI 0.10): a ring set up
 * with SNPU_RING_CALLBACK_CQE delivers each ready callback as a CQE
 * flagged SNPU_CQE_F_CALLBACK (cookie, stream, seq, user_data), and an
 * SQE of op SNPU_OP_CALLBACK_DONE completes it, so a process that serves
 * its callbacks from its ring loop makes no system call of its own per
 * callback. Delivered exactly once, in the order they became ready (so in
 * stream order per stream), also when the CQ was full; a cookie names a
 * callback of its own file only; bad DONE entries get an error CQE and
 * change nothing; a process killed with callbacks delivered leaves
 * nothing behind.
 *
 * Runs as root in the test VM with the module's defaults, through
 * libsnpu (snpu_ring_*). Every wait has a deadline far above what it
 * needs: nothing depends on the VM's speed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NS_PER_SEC	1000000000LL
#define WAIT_NS		(30 * NS_PER_SEC)
#define SYSFS_CONTEXTS	"/sys/class/misc/snpu0/contexts"

/* The next CQE, waiting at most WAIT_NS. Return: 0 or -errno. */
static int next_cqe(struct snpu_ring *r, struct snpu_cqe *out)
{
	struct snpu_cqe *c;
	int ret;

	while (snpu_ring_peek_cqe(r, &c)) {
		ret = snpu_ring_enter(r, 0, 1, SNPU_ENTER_GETEVENTS, WAIT_NS);
		if (ret == -ETIMEDOUT)
			return ret;
		if (ret < 0 && ret != -EBUSY)
			return ret;
	}
	*out = *c;
	snpu_ring_cqe_seen(r, c);
	return 0;
}

/* Queue one SQE made by @prep and submit it. Return: 0 or -errno. */
static int push(struct snpu_ring *r, const struct snpu_task *t)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(r);
	int ret;

	if (!sqe)
		return -ENOSPC;
	*sqe = *t;
	ret = snpu_ring_submit(r);
	return ret < 0 ? ret : 0;
}

static int push_done(struct snpu_ring *r, uint32_t cookie, int status,
		     uint64_t ud)
{
	struct snpu_task t;

	snpu_prep_callback_done(&t, cookie, status);
	t.user_data = ud;
	return push(r, &t);
}

FIXTURE(cb) {
	struct snpu_device *dev;
	uint32_t stream;
	struct snpu_ring ring;
	uint64_t mem;
};

FIXTURE_SETUP(cb)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->stream));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, SNPU_RING_CALLBACK_CQE,
				    &self->ring));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &self->mem));
	ASSERT_EQ(0, snpu_memset(self->dev, self->mem, 0, 4096));
}

FIXTURE_TEARDOWN(cb)
{
	snpu_ring_exit(&self->ring);
	snpu_close(self->dev);
}

TEST_F(cb, caps_report_ring_callbacks)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->dev, &info));
	EXPECT_NE(0ULL, info.caps & SNPU_CAP_RING_CALLBACKS);
	EXPECT_LE(10U, info.abi_minor);
}

/*
 * A callback, then a FILL behind it: the callback CQE first (no WAIT
 * sees it), the FILL waits until the DONE entry, then the callback's
 * completion and the FILL's, in stream order; the DONE itself has none.
 */
TEST_F(cb, delivered_as_cqe_completed_by_sqe)
{
	struct snpu_kernel_arg a[2] = {
		snpu_arg_buf(self->mem, 4096), snpu_arg_u64(0x5a5a5a5a),
	};
	struct snpu_callback_info info;
	struct snpu_task t;
	struct snpu_cqe c;
	uint32_t word;

	snpu_prep_host_func(&t, self->stream, 0xc0ffee);
	ASSERT_EQ(0, push(&self->ring, &t));
	snpu_prep_launch(&t, self->stream, SNPU_KERNEL_FILL, 1, a, 2);
	t.user_data = 2;
	ASSERT_EQ(0, push(&self->ring, &t));

	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	ASSERT_TRUE(snpu_cqe_is_callback(&c));
	EXPECT_EQ(0xc0ffeeULL, c.user_data);
	EXPECT_EQ(0, c.result);
	EXPECT_EQ(1ULL, c.seq);
	EXPECT_EQ(self->stream, c.callback.stream);
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->dev, 0, &info));
	/* Nothing behind it has run. */
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, &word, self->mem, 4));
	EXPECT_EQ(0U, word);

	ASSERT_EQ(0, push_done(&self->ring, c.callback.cookie, 0, 99));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_FALSE(snpu_cqe_is_callback(&c));
	EXPECT_EQ(0xc0ffeeULL, c.user_data);
	EXPECT_EQ(0, c.result);
	EXPECT_EQ(1ULL, c.seq);
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_EQ(2ULL, c.user_data);
	EXPECT_EQ(0, c.result);
	EXPECT_EQ(2ULL, c.seq);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, &word, self->mem, 4));
	EXPECT_EQ(0x5a5a5a5aU, word);
	/* The DONE wrote no completion. */
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
}

/* A status fails the callback's task and its stream, as the ioctl's. */
TEST_F(cb, done_status_fails_the_stream)
{
	struct snpu_stream_query q;
	struct snpu_task t;
	struct snpu_cqe c;

	snpu_prep_host_func(&t, self->stream, 7);
	ASSERT_EQ(0, push(&self->ring, &t));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	ASSERT_TRUE(snpu_cqe_is_callback(&c));
	ASSERT_EQ(0, push_done(&self->ring, c.callback.cookie, -EDOM, 8));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_EQ(7ULL, c.user_data);
	EXPECT_EQ(-EDOM, c.result);
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->stream, &q));
	EXPECT_EQ(-EDOM, q.error);
}

/* The ioctl completes a callback the ring delivered, too. */
TEST_F(cb, ioctl_done_completes_a_ring_callback)
{
	struct snpu_task t;
	struct snpu_cqe c;

	snpu_prep_host_func(&t, self->stream, 3);
	ASSERT_EQ(0, push(&self->ring, &t));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	ASSERT_TRUE(snpu_cqe_is_callback(&c));
	ASSERT_EQ(0, snpu_callback_done(self->dev, c.callback.cookie, 0));
	/* Twice: the cookie names nothing any more. */
	EXPECT_EQ(-ENOENT, snpu_callback_done(self->dev, c.callback.cookie,
					      0));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_EQ(3ULL, c.user_data);
	EXPECT_EQ(0, c.result);
}

/* Callbacks submitted with SNPU_IOC_SUBMIT come through the ring too. */
TEST_F(cb, submit_ioctl_callbacks_come_as_cqes)
{
	struct snpu_task t;
	struct snpu_cqe c;

	snpu_prep_host_func(&t, self->stream, 11);
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	ASSERT_TRUE(snpu_cqe_is_callback(&c));
	EXPECT_EQ(11ULL, c.user_data);
	ASSERT_EQ(0, push_done(&self->ring, c.callback.cookie, 0, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream,
					     WAIT_NS));
	/* A SUBMIT task's completion has no CQE. */
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
}

/* ---- bad DONE entries -------------------------------------------------- */

/*
 * Each bad DONE gets one CQE with its error and user_data, and the
 * callback stays delivered: the right DONE still completes it.
 */
TEST_F(cb, bad_done_entries_refused)
{
	struct snpu_task t, bad[6];
	struct snpu_cqe c;
	uint32_t cookie;
	int i;

	snpu_prep_host_func(&t, self->stream, 5);
	ASSERT_EQ(0, push(&self->ring, &t));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	ASSERT_TRUE(snpu_cqe_is_callback(&c));
	cookie = c.callback.cookie;
	for (i = 0; i < 6; i++) {
		snpu_prep_callback_done(&bad[i], cookie, 0);
		bad[i].user_data = 100 + i;
	}
	bad[0].flags = 1;
	bad[1].stream = self->stream;
	bad[2].callback.status = 1;
	bad[3].callback.status = -4096;
	bad[4].raw[5] = 1;
	bad[5].callback.cookie = cookie ^ 0x10000;	/* another use */
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, push(&self->ring, &bad[i]));
		ASSERT_EQ(0, next_cqe(&self->ring, &c));
		EXPECT_EQ(100ULL + i, c.user_data);
		EXPECT_EQ(i == 5 ? -ENOENT : -EINVAL, c.result)
			TH_LOG("entry %d", i);
		EXPECT_FALSE(snpu_cqe_is_callback(&c));
	}
	ASSERT_EQ(0, push_done(&self->ring, cookie, 0, 0));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_EQ(5ULL, c.user_data);
	EXPECT_EQ(0, c.result);
}

/* DONE is an SQE only: SUBMIT refuses it. */
TEST_F(cb, done_through_submit_einval)
{
	struct snpu_task t;

	snpu_prep_callback_done(&t, 1, 0);
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, &t, 1, NULL));
}

/* A cookie of another file completes nothing there. */
TEST_F(cb, cookie_of_another_context_refused)
{
	struct snpu_device *other;
	struct snpu_ring r2;
	struct snpu_task t;
	struct snpu_cqe c, c2;
	uint32_t s2;

	ASSERT_EQ(0, snpu_open(0, 0, &other));
	ASSERT_EQ(0, snpu_stream_create(other, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_ring_init(other, 8, SNPU_RING_CALLBACK_CQE, &r2));
	snpu_prep_host_func(&t, self->stream, 1);
	ASSERT_EQ(0, push(&self->ring, &t));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	snpu_prep_host_func(&t, s2, 2);
	ASSERT_EQ(0, push(&r2, &t));
	ASSERT_EQ(0, next_cqe(&r2, &c2));
	/* The first file's cookie in the second file's ring. */
	ASSERT_EQ(0, push_done(&r2, c.callback.cookie, 0, 77));
	if (c.callback.cookie != c2.callback.cookie) {
		ASSERT_EQ(0, next_cqe(&r2, &c2));
		EXPECT_EQ(77ULL, c2.user_data);
		EXPECT_EQ(-ENOENT, c2.result);
	}
	EXPECT_EQ(-ENOENT, snpu_callback_done(other, c.callback.cookie ^ 0x10000,
					      0));
	/* Each completes with its own cookie. */
	ASSERT_EQ(0, push_done(&self->ring, c.callback.cookie, 0, 0));
	ASSERT_EQ(0, next_cqe(&self->ring, &c));
	EXPECT_EQ(1ULL, c.user_data);
	EXPECT_EQ(0, c.result);
	snpu_ring_exit(&r2);
	snpu_close(other);
}

/* ---- many streams, threads, a full CQ --------------------------------- */

#define STREAMS		8
#define PER_STREAM	64

struct server {
	struct snpu_ring *ring;
	unsigned int want_completions;	/* tasks that post a CQE */
	unsigned int served[STREAMS];
	uint64_t last_seq[STREAMS];
	unsigned int total, completions, order_errors, dup_errors;
	int err;
};

/*
 * The ring loop: callback CQEs are answered with DONE entries, batched;
 * completions counted. user_data is (stream index << 32) | i.
 */
static void *serve(void *arg)
{
	struct server *sv = arg;
	struct snpu_ring *r = sv->ring;
	unsigned int want = STREAMS * PER_STREAM;
	struct snpu_cqe *c;
	int ret;

	while (sv->total < want || sv->completions < sv->want_completions) {
		unsigned int queued = 0;

		while (!snpu_ring_peek_cqe(r, &c)) {
			unsigned int s = c->user_data >> 32;
			unsigned int i = (uint32_t)c->user_data;

			if (s >= STREAMS) {
				sv->err = -EPROTO;
				return NULL;
			}
			if (snpu_cqe_is_callback(c)) {
				struct snpu_task *sqe = snpu_ring_get_sqe(r);

				if (i != sv->served[s] ||
				    c->seq <= sv->last_seq[s])
					sv->order_errors++;
				if (i < sv->served[s])
					sv->dup_errors++;
				sv->served[s] = i + 1;
				sv->last_seq[s] = c->seq;
				sv->total++;
				if (!sqe) {
					sv->err = -ENOSPC;
					return NULL;
				}
				snpu_prep_callback_done(sqe,
							c->callback.cookie, 0);
				queued++;
			} else if (c->result) {
				sv->err = c->result;
				return NULL;
			} else {
				sv->completions++;
			}
			snpu_ring_cqe_seen(r, c);
		}
		if (!queued && sv->total == want &&
		    sv->completions == sv->want_completions)
			break;
		/* The DONE entries go in, or the loop waits for a CQE. */
		ret = queued ? snpu_ring_submit(r) :
		      snpu_ring_enter(r, 0, 1, SNPU_ENTER_GETEVENTS, WAIT_NS);
		if (ret < 0 && ret != -EBUSY) {
			sv->err = ret;
			return NULL;
		}
	}
	return NULL;
}

/*
 * STREAMS streams with PER_STREAM callbacks each, submitted by a second
 * thread through SUBMIT, served by the ring loop on a CQ of 16 entries:
 * the CQ is full again and again, the callbacks wait for room. Each is
 * delivered once, in stream order, and every one completes.
 */
TEST_F_TIMEOUT(cb, many_streams_exactly_once_in_order, 300)
{
	struct snpu_device *dev;
	struct snpu_ring r;
	struct server sv;
	struct snpu_task t[STREAMS];
	uint32_t s[STREAMS];
	pthread_t th;
	unsigned int i, k;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_ring_init(dev, 16, SNPU_RING_CALLBACK_CQE, &r));
	for (k = 0; k < STREAMS; k++)
		ASSERT_EQ(0, snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0,
						&s[k]));
	memset(&sv, 0, sizeof(sv));
	sv.ring = &r;
	ASSERT_EQ(0, pthread_create(&th, NULL, serve, &sv));
	for (i = 0; i < PER_STREAM; i++) {
		for (k = 0; k < STREAMS; k++)
			snpu_prep_host_func(&t[k], s[k],
					    ((uint64_t)k << 32) | i);
		ASSERT_EQ(0, snpu_submit(dev, t, STREAMS, NULL));
	}
	/* SUBMIT's tasks post no completion: the loop ends once all served. */
	pthread_join(th, NULL);
	for (k = 0; k < STREAMS; k++) {
		EXPECT_EQ(0, snpu_stream_synchronize(dev, s[k], WAIT_NS));
	}
	EXPECT_EQ(0, sv.err);
	EXPECT_EQ(0U, sv.order_errors);
	EXPECT_EQ(0U, sv.dup_errors);
	for (k = 0; k < STREAMS; k++)
		EXPECT_EQ((unsigned int)PER_STREAM, sv.served[k]);
	snpu_ring_exit(&r);
	snpu_close(dev);
}

/*
 * The same through the SQ: every callback and its completion in the
 * ring, all submitted first, served by the loop in this thread.
 */
TEST_F_TIMEOUT(cb, ring_submitted_exactly_once_in_order, 300)
{
	struct snpu_device *dev;
	struct snpu_ring r;
	struct server sv;
	uint32_t s[STREAMS];
	unsigned int i, k;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_ring_init(dev, 1024, SNPU_RING_CALLBACK_CQE, &r));
	for (k = 0; k < STREAMS; k++)
		ASSERT_EQ(0, snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0,
						&s[k]));
	for (i = 0; i < PER_STREAM; i++)
		for (k = 0; k < STREAMS; k++) {
			struct snpu_task *sqe = snpu_ring_get_sqe(&r);

			ASSERT_NE(NULL, sqe);
			snpu_prep_host_func(sqe, s[k],
					    ((uint64_t)k << 32) | i);
		}
	ASSERT_EQ(STREAMS * PER_STREAM, snpu_ring_submit(&r));
	memset(&sv, 0, sizeof(sv));
	sv.ring = &r;
	sv.want_completions = STREAMS * PER_STREAM;
	serve(&sv);
	EXPECT_EQ(0, sv.err);
	EXPECT_EQ(0U, sv.order_errors);
	EXPECT_EQ(0U, sv.dup_errors);
	EXPECT_EQ((unsigned int)(STREAMS * PER_STREAM), sv.completions);
	for (k = 0; k < STREAMS; k++)
		EXPECT_EQ((unsigned int)PER_STREAM, sv.served[k]);
	snpu_ring_exit(&r);
	snpu_close(dev);
}

/* ---- a process killed with callbacks delivered ------------------------- */

static long long contexts(void)
{
	char buf[32];
	long long v = -1;
	FILE *f = fopen(SYSFS_CONTEXTS, "r");

	if (f && fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

TEST_F_TIMEOUT(cb, killed_with_callbacks_delivered, 120)
{
	long long before = contexts();
	int pfd[2], status, i;
	char c;
	pid_t kid;

	ASSERT_LE(1, before);
	ASSERT_EQ(0, pipe(pfd));
	kid = fork();
	if (!kid) {
		struct snpu_device *dev;
		struct snpu_ring r;
		struct snpu_task t;
		struct snpu_cqe cqe;
		uint32_t s;

		if (snpu_open(0, 0, &dev) ||
		    snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &s) ||
		    snpu_ring_init(dev, 8, SNPU_RING_CALLBACK_CQE, &r))
			_exit(1);
		for (i = 0; i < 3; i++) {
			snpu_prep_host_func(&t, s, i);
			if (push(&r, &t))
				_exit(2);
		}
		/* One delivered; the two behind it wait on the stream. */
		if (next_cqe(&r, &cqe) || !snpu_cqe_is_callback(&cqe))
			_exit(3);
		if (write(pfd[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(5);
	}
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	ASSERT_EQ(0, kill(kid, SIGKILL));
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	/* Its file is released with the process: the count is back. */
	for (i = 0; i < 3000 && contexts() != before; i++)
		usleep(10000);
	EXPECT_EQ(before, contexts());
}

/* Without SNPU_RING_CALLBACK_CQE, callbacks still go to CALLBACK_WAIT. */
TEST(without_the_flag_callbacks_go_to_wait)
{
	struct snpu_callback_info info;
	struct snpu_device *dev;
	struct snpu_ring r;
	struct snpu_task t;
	struct snpu_cqe c;
	uint32_t s;

	ASSERT_EQ(0, snpu_open(0, 0, &dev));
	ASSERT_EQ(0, snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &s));
	ASSERT_EQ(0, snpu_ring_init(dev, 8, 0, &r));
	snpu_prep_host_func(&t, s, 4);
	ASSERT_EQ(0, push(&r, &t));
	ASSERT_EQ(0, snpu_callback_wait(dev, WAIT_NS, &info));
	EXPECT_EQ(4ULL, info.user_data);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&r));
	ASSERT_EQ(0, snpu_callback_done(dev, info.cookie, 0));
	ASSERT_EQ(0, next_cqe(&r, &c));
	EXPECT_FALSE(snpu_cqe_is_callback(&c));
	EXPECT_EQ(4ULL, c.user_data);
	snpu_ring_exit(&r);
	snpu_close(dev);
}

TEST_HARNESS_MAIN
