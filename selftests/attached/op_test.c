// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu owners, attached streams and operators (LIBSNPU_0.4) against
 * the driver: snpu_owner_*(), snpu_op_run() and the snpu_op_ctx_*()
 * calls, operators that fan work out to two attached streams and join it
 * back (checked against a CPU reference), the join check that
 * SNPU_OPEN_CHECK_JOINS or SNPU_CHECK_JOINS=1 turns on, and lookups from
 * several threads. Everything goes through the library, except a few raw
 * ATTACHED_STREAM_GET ioctls on snpu_device_fd() that check what the
 * driver holds.
 *
 * Runs as root in the test VM with the module loaded with its defaults.
 * The fixture opens /dev/snpu0 without the join check (and with
 * SNPU_CHECK_JOINS removed from the environment), creates one stream
 * (the operators' stream) and one owner of normal priority.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NS_PER_MS	1000000LL
#define NS_PER_SEC	1000000000LL
#define LONG_TIMEOUT	(30 * NS_PER_SEC)
#define KEY_MAX		SNPU_ATTACHED_KEY_MAX

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * NS_PER_MS };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Streams of the context, or -1. */
static long nstreams(struct snpu_device *dev)
{
	struct snpu_ctx_query q;

	return snpu_ctx_query(dev, &q) ? -1 : (long)q.streams;
}

/*
 * The driver's view, bypassing the library's cache: a raw
 * ATTACHED_STREAM_GET of @key on @owner. Return: 0 or -errno.
 */
static int raw_get(struct snpu_device *dev, struct snpu_owner *owner,
		   const char *key, uint32_t *handle, uint32_t *created)
{
	struct snpu_attached_stream a;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.owner = snpu_owner_handle(owner);
	len = strlen(key);
	memcpy(a.key, key, len < KEY_MAX ? len : KEY_MAX);
	if (ioctl(snpu_device_fd(dev), SNPU_IOC_ATTACHED_STREAM_GET, &a) < 0)
		return -errno;
	*handle = a.handle;
	*created = a.created;
	return 0;
}

/* ---- stderr capture ------------------------------------------------------ */

/* stderr redirected into a pipe between capture_start() and capture_end(). */
struct capture {
	int saved;
	int rd;
};

static int capture_start(struct capture *c)
{
	int p[2];

	if (pipe(p))
		return -errno;
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	if (c->saved < 0 || dup2(p[1], STDERR_FILENO) < 0) {
		close(p[0]);
		close(p[1]);
		return -EIO;
	}
	close(p[1]);
	c->rd = p[0];
	return 0;
}

/* Restore stderr; @buf gets what was written (NUL-terminated). */
static size_t capture_end(struct capture *c, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	/* The pipe's only writer is gone: read to EOF. */
	while (len + 1 < size &&
	       (n = read(c->rd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(c->rd);
	buf[len] = 0;
	return len;
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static int alarm_every_ms(long ms, int sa_flags)
{
	struct itimerval it;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	if (ms && sigaction(SIGALRM, &sa, NULL))
		return -1;
	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	it.it_interval = it.it_value;
	return setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- a thread that completes callbacks late ----------------------------- */

/*
 * Takes @n callbacks in turn, each of which must carry @user_data[i], and
 * completes each @delay_ms after it arrived. @t_done: the time just before
 * the last snpu_callback_done().
 */
struct answerer {
	pthread_t th;
	struct snpu_device *dev;
	unsigned int n;
	uint64_t user_data[4];
	long delay_ms;
	uint64_t t_done;
	int ret;
};

static void *answer_fn(void *p)
{
	struct answerer *a = p;
	struct snpu_callback_info cb;
	unsigned int i;

	for (i = 0; i < a->n; i++) {
		a->ret = snpu_callback_wait(a->dev, LONG_TIMEOUT, &cb);
		if (a->ret)
			return NULL;
		if (cb.user_data != a->user_data[i]) {
			a->ret = -EBADMSG;
			return NULL;
		}
		sleep_ms(a->delay_ms);
		a->t_done = now_ns();
		a->ret = snpu_callback_done(a->dev, cb.cookie, 0);
		if (a->ret)
			return NULL;
	}
	return NULL;
}

static int answerer_start(struct answerer *a, struct snpu_device *dev,
			  long delay_ms, unsigned int n,
			  const uint64_t *user_data)
{
	if (n > 4)
		return -EINVAL;
	a->dev = dev;
	a->n = n;
	memcpy(a->user_data, user_data, n * sizeof(*user_data));
	a->delay_ms = delay_ms;
	a->t_done = 0;
	a->ret = -EINPROGRESS;
	return -pthread_create(&a->th, NULL, answer_fn, a);
}

/* ---- the fixture -------------------------------------------------------- */

FIXTURE(op) {
	struct snpu_device *dev;
	struct snpu_owner *owner;
	uint32_t s;
};

FIXTURE_SETUP(op)
{
	unsetenv("SNPU_CHECK_JOINS");
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s));
	ASSERT_EQ(0, snpu_owner_create(self->dev, SNPU_PRIO_NORMAL,
				       &self->owner));
}

FIXTURE_TEARDOWN(op)
{
	/* The kernel destroys the owner with the file; the cache leaks. */
	snpu_close(self->dev);
}

/* Reopen the fixture's device with @flags (the old owner goes with it). */
static int reopen(struct __test_metadata *_metadata,
		  FIXTURE_DATA(op) *self, unsigned int flags)
{
	snpu_close(self->dev);
	self->dev = NULL;
	self->owner = NULL;
	if (snpu_open(0, flags, &self->dev))
		return -1;
	if (snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0, &self->s))
		return -1;
	return snpu_owner_create(self->dev, SNPU_PRIO_NORMAL, &self->owner);
}

/* ---- owners ------------------------------------------------------------- */

TEST_F(op, owner_create_destroy)
{
	struct snpu_owner *o2;
	uint32_t h, h2, stream, created;
	struct snpu_stream_query q;

	h = snpu_owner_handle(self->owner);
	EXPECT_NE(0U, h);
	EXPECT_NE(self->s, h);
	ASSERT_EQ(0, snpu_owner_create(self->dev, SNPU_PRIO_HIGH, &o2));
	h2 = snpu_owner_handle(o2);
	EXPECT_NE(0U, h2);
	EXPECT_NE(h, h2);
	/* Its streams get its priority. */
	ASSERT_EQ(0, snpu_owner_attached_stream(o2, "hi", &stream));
	ASSERT_EQ(0, snpu_stream_query(self->dev, stream, &q));
	EXPECT_EQ(SNPU_PRIO_HIGH, q.priority);
	EXPECT_EQ(2, nstreams(self->dev));
	EXPECT_EQ(0, raw_get(self->dev, o2, "hi", &h, &created));
	EXPECT_EQ(stream, h);
	EXPECT_EQ(0U, created);
	ASSERT_EQ(0, snpu_owner_destroy(o2));
	EXPECT_EQ(1, nstreams(self->dev));
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->dev, stream, &q));
}

TEST_F(op, owner_bad_args_einval)
{
	struct snpu_owner *o = (struct snpu_owner *)&o;
	struct snpu_device *d = NULL;
	uint32_t stream = 0x1234;

	EXPECT_EQ(-EINVAL, snpu_owner_create(NULL, SNPU_PRIO_NORMAL, &o));
	EXPECT_EQ(-EINVAL, snpu_owner_create(self->dev, SNPU_PRIO_NORMAL,
					     NULL));
	EXPECT_EQ(-EINVAL, snpu_owner_create(self->dev, 2, &o));
	EXPECT_EQ(-EINVAL, snpu_owner_create(self->dev, -2, &o));
	EXPECT_EQ((struct snpu_owner *)&o, o);
	EXPECT_EQ(-EINVAL, snpu_owner_destroy(NULL));
	EXPECT_EQ(0U, snpu_owner_handle(NULL));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(NULL, "k", &stream));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(self->owner, "k",
						      NULL));
	EXPECT_EQ(0x1234U, stream);
	EXPECT_EQ(1, nstreams(self->dev));
	/* Unknown open flags. */
	EXPECT_EQ(-EINVAL, snpu_open(0, 1U << 1, &d));
	EXPECT_EQ(-EINVAL, snpu_open(0, 1U << 31, &d));
	EXPECT_EQ(NULL, d);
}

TEST_F(op, attached_stream_same_key_many_calls)
{
	uint32_t first, again, h, created;
	unsigned int i;

	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "conv", &first));
	EXPECT_NE(0U, first);
	EXPECT_NE(self->s, first);
	for (i = 0; i < 1000; i++) {
		again = 0;
		ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "conv",
							&again));
		ASSERT_EQ(first, again) TH_LOG("call %u", i);
	}
	EXPECT_EQ(2, nstreams(self->dev));
	/* The driver has the stream under that key. */
	ASSERT_EQ(0, raw_get(self->dev, self->owner, "conv", &h, &created));
	EXPECT_EQ(first, h);
	EXPECT_EQ(0U, created);
	/* And it is a working stream. */
	EXPECT_EQ(0, snpu_nop(self->dev));
	ASSERT_EQ(0, snpu_launch(self->dev, first, SNPU_KERNEL_NOP, 1,
				 NULL, 0));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, first, LONG_TIMEOUT));
}

TEST_F(op, attached_stream_bad_keys_einval)
{
	char key[KEY_MAX + 1];
	uint32_t stream = 0x4321, h;

	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(self->owner, NULL,
						      &stream));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(self->owner, "",
						      &stream));
	memset(key, 'k', KEY_MAX);
	key[KEY_MAX] = 0;
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(self->owner, key,
						      &stream));
	EXPECT_EQ(0x4321U, stream);
	EXPECT_EQ(1, nstreams(self->dev));
	/* 63 bytes is the longest key. */
	key[KEY_MAX - 1] = 0;
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, key, &stream));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, key, &h));
	EXPECT_EQ(stream, h);
	EXPECT_EQ(2, nstreams(self->dev));
}

TEST_F(op, two_owners_same_key_different_streams)
{
	struct snpu_owner *o2;
	uint32_t a, b, again;

	ASSERT_EQ(0, snpu_owner_create(self->dev, SNPU_PRIO_NORMAL, &o2));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "k", &a));
	ASSERT_EQ(0, snpu_owner_attached_stream(o2, "k", &b));
	EXPECT_NE(a, b);
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "k", &again));
	EXPECT_EQ(a, again);
	ASSERT_EQ(0, snpu_owner_attached_stream(o2, "k", &again));
	EXPECT_EQ(b, again);
	EXPECT_EQ(3, nstreams(self->dev));
	ASSERT_EQ(0, snpu_owner_destroy(o2));
	EXPECT_EQ(2, nstreams(self->dev));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "k", &again));
	EXPECT_EQ(a, again);
}

/* A driver error (the stream quota) is returned, and not remembered. */
TEST_F(op, attached_stream_enospc_not_cached)
{
	struct snpu_ctx_query cq;
	uint32_t *plain, a, b;
	unsigned int n = 0;

	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	plain = calloc(cq.streams_limit, sizeof(*plain));
	ASSERT_NE(NULL, plain);
	while (n < cq.streams_limit &&
	       !snpu_stream_create(self->dev, 0, 0, &plain[n]))
		n++;
	ASSERT_EQ(cq.streams_limit - 1, n);
	EXPECT_EQ(-ENOSPC, snpu_owner_attached_stream(self->owner, "late",
						      &a));
	EXPECT_EQ(-ENOSPC, snpu_owner_attached_stream(self->owner, "late",
						      &a));
	ASSERT_EQ(0, snpu_stream_destroy(self->dev, plain[--n], 0));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "late", &a));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "late", &b));
	EXPECT_EQ(a, b);
	EXPECT_EQ((long)cq.streams_limit, nstreams(self->dev));
	free(plain);
}

/*
 * Destroy waits for the work of every attached stream, then frees them.
 * Each stream is held by a callback: a's is completed 250 ms after it
 * arrives; b waits for a's event, then for its own callback (completed
 * 250 ms after it arrives), then fills y.
 */
TEST_F_TIMEOUT(op, owner_destroy_waits_for_work, 60)
{
	static const uint64_t uds[2] = { 0xa11, 0xb11 };
	struct snpu_stream_query q;
	struct answerer ans;
	uint32_t a, b, e;
	uint64_t x, y, t1;
	int32_t got[1024];
	unsigned int i;

	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "a", &a));
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "b", &b));
	ASSERT_EQ(0, snpu_event_create(self->dev, &e));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, sizeof(got), 0, 0, &x));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, sizeof(got), 0, 0, &y));
	struct snpu_kernel_arg fill[2] = {
		snpu_arg_buf(x, sizeof(got)), snpu_arg_u64(0x5a5a),
	};
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, a, uds[0]));
	ASSERT_EQ(0, snpu_launch(self->dev, a, SNPU_KERNEL_FILL, 4, fill, 2));
	ASSERT_EQ(0, snpu_event_record(self->dev, e, a));
	ASSERT_EQ(0, snpu_stream_wait_event(self->dev, b, e));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, b, uds[1]));
	fill[0] = snpu_arg_buf(y, sizeof(got));
	fill[1] = snpu_arg_u64(0x6b6b);
	ASSERT_EQ(0, snpu_launch(self->dev, b, SNPU_KERNEL_FILL, 3, fill, 2));

	ASSERT_EQ(0, answerer_start(&ans, self->dev, 250, 2, uds));
	EXPECT_EQ(0, snpu_owner_destroy(self->owner));
	t1 = now_ns();
	self->owner = NULL;
	pthread_join(ans.th, NULL);
	ASSERT_EQ(0, ans.ret);
	EXPECT_GT(t1, ans.t_done);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, got, x, sizeof(got)));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(0x5a5a, got[i]) TH_LOG("x, element %u", i);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, got, y, sizeof(got)));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(0x6b6b, got[i]) TH_LOG("y, element %u", i);
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->dev, a, &q));
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->dev, b, &q));
	EXPECT_EQ(1, nstreams(self->dev));
}

/* Interrupted (no SA_RESTART): -EINTR, the owner and its cache live on. */
TEST_F_TIMEOUT(op, owner_destroy_interrupted_keeps_owner, 60)
{
	struct snpu_callback_info cb;
	uint32_t a, again, h, created;
	int32_t v = 0;
	uint64_t x;

	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "a", &a));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4, 0, 0, &x));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, a, 0xe1));
	ASSERT_EQ(0, snpu_memset_async(self->dev, a, x, 0x11, 4));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, LONG_TIMEOUT, &cb));
	ASSERT_EQ(0xe1U, cb.user_data);
	ASSERT_EQ(0, alarm_every_ms(50, 0));
	EXPECT_EQ(-EINTR, snpu_owner_destroy(self->owner));
	ASSERT_EQ(0, alarm_every_ms(0, 0));
	EXPECT_GE(alarms, 1);
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "a", &again));
	EXPECT_EQ(a, again);
	ASSERT_EQ(0, raw_get(self->dev, self->owner, "a", &h, &created));
	EXPECT_EQ(a, h);
	EXPECT_EQ(0U, created);
	EXPECT_EQ(2, nstreams(self->dev));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, a, LONG_TIMEOUT));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, &v, x, 4));
	EXPECT_EQ(0x11111111, v);
	EXPECT_EQ(0, snpu_owner_destroy(self->owner));
	self->owner = NULL;
	EXPECT_EQ(1, nstreams(self->dev));
}

/* ---- snpu_op_run and the operator context ------------------------------- */

struct probe {
	struct snpu_device *dev;
	uint32_t stream;
	int calls;
	int ret;
	void *self_arg;
};

static int probe_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct probe *p = arg;

	p->calls++;
	p->dev = snpu_op_ctx_device(ctx);
	p->stream = snpu_op_ctx_stream(ctx);
	p->self_arg = arg;
	return p->ret;
}

TEST_F(op, op_run_passes_context_and_returns_value)
{
	static const int rets[] = { 0, 7, -ENOTRECOVERABLE, -EIO };
	struct probe p;
	unsigned int i;

	for (i = 0; i < sizeof(rets) / sizeof(rets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.ret = rets[i];
		EXPECT_EQ(rets[i], snpu_op_run(self->owner, self->s, "probe",
					       probe_op, &p));
		EXPECT_EQ(1, p.calls);
		EXPECT_EQ(self->dev, p.dev);
		EXPECT_EQ(self->s, p.stream);
		EXPECT_EQ(&p, p.self_arg);
	}
	/* Any stream number is passed through as is, NULL name too. */
	memset(&p, 0, sizeof(p));
	EXPECT_EQ(0, snpu_op_run(self->owner, 12345, NULL, probe_op, &p));
	EXPECT_EQ(12345U, p.stream);
	/* Accessors on no context. */
	EXPECT_EQ(0U, snpu_op_ctx_stream(NULL));
	EXPECT_EQ(NULL, snpu_op_ctx_device(NULL));
}

TEST_F(op, op_run_bad_args_einval)
{
	struct probe p = { 0 };

	EXPECT_EQ(-EINVAL, snpu_op_run(NULL, self->s, "probe", probe_op, &p));
	EXPECT_EQ(-EINVAL, snpu_op_run(self->owner, self->s, "probe", NULL,
				       &p));
	EXPECT_EQ(0, p.calls);
}

struct keyprobe {
	int rets[6];
	uint32_t streams[6];
	uint32_t untouched;
};

static int keyprobe_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct keyprobe *k = arg;
	char long64[KEY_MAX + 1], long63[KEY_MAX];

	memset(long64, 'q', KEY_MAX);
	long64[KEY_MAX] = 0;
	memset(long63, 'q', KEY_MAX - 1);
	long63[KEY_MAX - 1] = 0;
	k->untouched = 0x9999;
	k->rets[0] = snpu_op_ctx_request_attached_stream(ctx, NULL,
							 &k->untouched);
	k->rets[1] = snpu_op_ctx_request_attached_stream(ctx, "",
							 &k->untouched);
	k->rets[2] = snpu_op_ctx_request_attached_stream(ctx, long64,
							 &k->untouched);
	k->rets[3] = snpu_op_ctx_request_attached_stream(ctx, "fine", NULL);
	k->rets[4] = snpu_op_ctx_request_attached_stream(ctx, long63,
							 &k->streams[4]);
	k->rets[5] = snpu_op_ctx_request_attached_stream(NULL, "fine",
							 &k->untouched);
	return 0;
}

TEST_F(op, op_ctx_request_bad_keys_einval)
{
	char long63[KEY_MAX];
	struct keyprobe k;
	uint32_t h;

	memset(&k, 0, sizeof(k));
	ASSERT_EQ(0, snpu_op_run(self->owner, self->s, "keys", keyprobe_op,
				 &k));
	EXPECT_EQ(-EINVAL, k.rets[0]);
	EXPECT_EQ(-EINVAL, k.rets[1]);
	EXPECT_EQ(-EINVAL, k.rets[2]);
	EXPECT_EQ(-EINVAL, k.rets[3]);
	EXPECT_EQ(0, k.rets[4]);
	EXPECT_EQ(-EINVAL, k.rets[5]);
	EXPECT_EQ(0x9999U, k.untouched);
	/* Only the 63-byte key made a stream, the owner's. */
	EXPECT_EQ(2, nstreams(self->dev));
	/* The same stream as the owner's own lookup of that key. */
	memset(long63, 'q', KEY_MAX - 1);
	long63[KEY_MAX - 1] = 0;
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, long63, &h));
	EXPECT_EQ(k.streams[4], h);
}

/*
 * The operator of the tests: y = a * x + b * x. The two products run on
 * two attached streams (after waiting for what the operator's stream did
 * before), each records an event, the operator's stream waits for both
 * and adds. i32 (MUL_I32 of vectors) or f32 (AXPY_F32 of scalars into
 * zeroed buffers). @join selects a bad operator: JOIN_NONE leaves both
 * products unjoined, JOIN_A only joins stream A, JOIN_A_THEN_MORE joins
 * both but then puts one more task on A.
 */
enum { JOIN_ALL, JOIN_NONE, JOIN_A, JOIN_A_THEN_MORE };

struct axpbx {
	int f32;
	int join;
	const char *key_a, *key_b;
	size_t n;
	uint64_t x, y, ta, tb;
	uint64_t va, vb;	/* i32: device vectors a and b */
	float fa, fb;		/* f32: scalars */
	uint32_t e0, ea, eb;
	uint32_t sa, sb;	/* the attached streams it got */
	int step;		/* the call that failed, for the log */
};

static int axpbx_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct axpbx *p = arg;
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	uint32_t s = snpu_op_ctx_stream(ctx);
	uint64_t bytes = p->n * 4;
	struct snpu_kernel_arg args[3];
	int ret;

/* Run one call; on failure remember its line and return its error. */
#define STEP(call) do {				\
		p->step = __LINE__;		\
		ret = (call);			\
		if (ret)			\
			return ret;		\
	} while (0)
	STEP(snpu_op_ctx_request_attached_stream(ctx, p->key_a, &p->sa));
	STEP(snpu_op_ctx_request_attached_stream(ctx, p->key_b, &p->sb));
	/* The attached streams start after the operator's stream so far. */
	STEP(snpu_event_record(dev, p->e0, s));
	STEP(snpu_stream_wait_event(dev, p->sa, p->e0));
	STEP(snpu_stream_wait_event(dev, p->sb, p->e0));
	if (p->f32) {
		STEP(snpu_memset_async(dev, p->sa, p->ta, 0, bytes));
		args[0] = snpu_arg_buf(p->ta, bytes);
		args[1] = snpu_arg_buf(p->x, bytes);
		args[2] = snpu_arg_f32(p->fa);
		STEP(snpu_launch(dev, p->sa, SNPU_KERNEL_AXPY_F32, 3, args, 3));
		STEP(snpu_memset_async(dev, p->sb, p->tb, 0, bytes));
		args[0] = snpu_arg_buf(p->tb, bytes);
		args[2] = snpu_arg_f32(p->fb);
		STEP(snpu_launch(dev, p->sb, SNPU_KERNEL_AXPY_F32, 2, args, 3));
	} else {
		args[0] = snpu_arg_buf(p->ta, bytes);
		args[1] = snpu_arg_buf(p->va, bytes);
		args[2] = snpu_arg_buf(p->x, bytes);
		STEP(snpu_launch(dev, p->sa, SNPU_KERNEL_MUL_I32, 3, args, 3));
		args[0] = snpu_arg_buf(p->tb, bytes);
		args[1] = snpu_arg_buf(p->vb, bytes);
		STEP(snpu_launch(dev, p->sb, SNPU_KERNEL_MUL_I32, 2, args, 3));
	}
	STEP(snpu_event_record(dev, p->ea, p->sa));
	STEP(snpu_event_record(dev, p->eb, p->sb));
	if (p->join != JOIN_NONE)
		STEP(snpu_stream_wait_event(dev, s, p->ea));
	if (p->join == JOIN_ALL || p->join == JOIN_A_THEN_MORE)
		STEP(snpu_stream_wait_event(dev, s, p->eb));
	if (p->join == JOIN_A_THEN_MORE)
		STEP(snpu_launch(dev, p->sa, SNPU_KERNEL_NOP, 1, NULL, 0));
	args[0] = snpu_arg_buf(p->y, bytes);
	args[1] = snpu_arg_buf(p->ta, bytes);
	args[2] = snpu_arg_buf(p->tb, bytes);
	STEP(snpu_launch(dev, s, p->f32 ? SNPU_KERNEL_ADD_F32 :
			 SNPU_KERNEL_ADD_I32, 4, args, 3));
#undef STEP
	return 0;
}

/* Buffers, events and inputs of the operator; @x_host gets x. */
static int axpbx_setup(struct snpu_device *dev, struct axpbx *p, int f32,
		       size_t n, void *x_host, void *a_host, void *b_host)
{
	uint64_t bytes = n * 4;
	int ret;

	memset(p, 0, sizeof(*p));
	p->f32 = f32;
	p->n = n;
	p->key_a = "axpbx.a";
	p->key_b = "axpbx.b";
	ret = snpu_mem_alloc(dev, bytes, 0, 0, &p->x) ?:
	      snpu_mem_alloc(dev, bytes, 0, 0, &p->y) ?:
	      snpu_mem_alloc(dev, bytes, 0, 0, &p->ta) ?:
	      snpu_mem_alloc(dev, bytes, 0, 0, &p->tb) ?:
	      snpu_event_create(dev, &p->e0) ?:
	      snpu_event_create(dev, &p->ea) ?:
	      snpu_event_create(dev, &p->eb) ?:
	      snpu_memcpy_h2d(dev, p->x, x_host, bytes);
	if (ret || f32)
		return ret;
	return snpu_mem_alloc(dev, bytes, 0, 0, &p->va) ?:
	       snpu_mem_alloc(dev, bytes, 0, 0, &p->vb) ?:
	       snpu_memcpy_h2d(dev, p->va, a_host, bytes) ?:
	       snpu_memcpy_h2d(dev, p->vb, b_host, bytes);
}

static uint32_t lcg(uint32_t *st)
{
	*st = *st * 1664525U + 1013904223U;
	return *st;
}

#define AX_N	5000	/* not a multiple of the block counts */

TEST_F(op, op_two_attached_streams_i32)
{
	uint32_t *x = malloc(AX_N * 4), *a = malloc(AX_N * 4);
	uint32_t *b = malloc(AX_N * 4), *y = malloc(AX_N * 4);
	uint32_t st = 12345, h, created;
	struct axpbx p;
	unsigned int i, round;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, y);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	for (i = 0; i < AX_N; i++) {
		x[i] = lcg(&st);
		a[i] = lcg(&st) >> (i % 29);
		b[i] = i % 3 ? lcg(&st) : (uint32_t)-(int32_t)i;
	}
	ASSERT_EQ(0, axpbx_setup(self->dev, &p, 0, AX_N, x, a, b));
	/* Several rounds on the same streams; the result is the same. */
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, snpu_memset(self->dev, p.y, 0xee, AX_N * 4));
		ASSERT_EQ(0, snpu_op_run(self->owner, self->s, "axpbx_i32",
					 axpbx_op, &p))
			TH_LOG("round %u, line %d", round, p.step);
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s,
						     LONG_TIMEOUT));
		ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, y, p.y, AX_N * 4));
		for (i = 0; i < AX_N; i++)
			ASSERT_EQ(a[i] * x[i] + b[i] * x[i], y[i])
				TH_LOG("round %u, element %u", round, i);
	}
	EXPECT_NE(p.sa, p.sb);
	EXPECT_NE(self->s, p.sa);
	EXPECT_EQ(3, nstreams(self->dev));
	ASSERT_EQ(0, raw_get(self->dev, self->owner, "axpbx.a", &h, &created));
	EXPECT_EQ(p.sa, h);
	EXPECT_EQ(0U, created);
	free(x);
	free(a);
	free(b);
	free(y);
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

TEST_F(op, op_two_attached_streams_f32)
{
	float *x = malloc(AX_N * 4), *y = malloc(AX_N * 4);
	const float fa = 1.375f, fb = -0.3f;
	uint32_t st = 777;
	struct axpbx p;
	unsigned int i;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	for (i = 0; i < AX_N; i++) {
		int32_t r = (int32_t)lcg(&st);

		x[i] = (float)(r % 2000001) / 997.0f;
		if (i % 101 == 0)
			x[i] = 0.0f;
		if (i % 103 == 0)
			x[i] = -0.0f;
	}
	x[17] = 3.4e38f;	/* the product overflows to infinity */
	x[18] = 1e-40f;	/* subnormal */
	ASSERT_EQ(0, axpbx_setup(self->dev, &p, 1, AX_N, x, NULL, NULL));
	p.fa = fa;
	p.fb = fb;
	ASSERT_EQ(0, snpu_op_run(self->owner, self->s, "axpbx_f32", axpbx_op,
				 &p)) TH_LOG("line %d", p.step);
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s,
					     LONG_TIMEOUT));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, y, p.y, AX_N * 4));
	for (i = 0; i < AX_N; i++) {
		/* Each operation rounded to f32, no fused multiply-add. */
		float pa = fa * x[i], pb = fb * x[i];
		float ta = 0.0f + pa, tb = 0.0f + pb;
		float want = ta + tb;

		ASSERT_EQ(f2u(want), f2u(y[i]))
			TH_LOG("element %u: x %a, want %a, got %a", i, x[i],
			       want, y[i]);
	}
	free(x);
	free(y);
}

/* ---- the join check ----------------------------------------------------- */

/* An operator that leaves a launch on an attached stream unjoined. */
static int stray_op(struct snpu_op_ctx *ctx, void *arg)
{
	uint32_t h;
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, (const char *)arg, &h);
	if (ret)
		return ret;
	return snpu_launch(snpu_op_ctx_device(ctx), h, SNPU_KERNEL_NOP, 1,
			   NULL, 0);
}

/* Run stray_op as @name with key @key, stderr captured into @buf. */
static int run_stray(struct snpu_owner *owner, uint32_t s, const char *name,
		     const char *key, char *buf, size_t size)
{
	struct capture c;
	int ret;

	if (capture_start(&c))
		return -EBADFD;
	ret = snpu_op_run(owner, s, name, stray_op, (void *)key);
	capture_end(&c, buf, size);
	return ret;
}

TEST_F(op, join_check_flag_bad_op_eproto)
{
	char err[4096];

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	EXPECT_EQ(-EPROTO, run_stray(self->owner, self->s, "leaky_operator",
				     "stray.stream", err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "leaky_operator")) TH_LOG("stderr: %s",
							       err);
	EXPECT_NE(NULL, strstr(err, "stray.stream")) TH_LOG("stderr: %s",
							     err);
	EXPECT_NE(NULL, strchr(err, '\n'));
	/* The work itself was queued and runs. */
	EXPECT_EQ(2, nstreams(self->dev));
}

TEST_F(op, join_check_good_op_silent)
{
	uint32_t *x = calloc(64, 4), *v = calloc(64, 4);
	struct capture c;
	struct axpbx p;
	char err[4096];
	unsigned int i;
	int ret;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, axpbx_setup(self->dev, &p, 0, 64, x, v, v));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, capture_start(&c));
		ret = snpu_op_run(self->owner, self->s, "good_operator",
				  axpbx_op, &p);
		capture_end(&c, err, sizeof(err));
		EXPECT_EQ(0, ret) TH_LOG("run %u, line %d", i, p.step);
		EXPECT_STREQ("", err);
	}
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s,
					     LONG_TIMEOUT));
	free(x);
	free(v);
}

/* Joining one of two attached streams is not enough; the other is named. */
TEST_F(op, join_check_partial_join_names_the_stream)
{
	uint32_t *x = calloc(64, 4), *v = calloc(64, 4);
	struct capture c;
	struct axpbx p;
	char err[4096];
	int ret;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, axpbx_setup(self->dev, &p, 0, 64, x, v, v));
	p.key_a = "joined.side";
	p.key_b = "forgotten.side";
	p.join = JOIN_A;
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "half_join", axpbx_op, &p);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(-EPROTO, ret) TH_LOG("line %d", p.step);
	EXPECT_NE(NULL, strstr(err, "half_join")) TH_LOG("stderr: %s", err);
	EXPECT_NE(NULL, strstr(err, "forgotten.side")) TH_LOG("stderr: %s",
							       err);
	EXPECT_EQ(NULL, strstr(err, "joined.side")) TH_LOG("stderr: %s", err);
	free(x);
	free(v);
}

/* Work put on an attached stream after the join is unjoined again. */
TEST_F(op, join_check_work_after_join_eproto)
{
	uint32_t *x = calloc(64, 4), *v = calloc(64, 4);
	struct capture c;
	struct axpbx p;
	char err[4096];
	int ret;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, axpbx_setup(self->dev, &p, 0, 64, x, v, v));
	p.join = JOIN_A_THEN_MORE;
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "late_work", axpbx_op, &p);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(-EPROTO, ret) TH_LOG("line %d", p.step);
	EXPECT_NE(NULL, strstr(err, "late_work")) TH_LOG("stderr: %s", err);
	EXPECT_NE(NULL, strstr(err, "axpbx.a")) TH_LOG("stderr: %s", err);
	EXPECT_EQ(NULL, strstr(err, "axpbx.b")) TH_LOG("stderr: %s", err);
	/* A following good run joins everything again. */
	p.join = JOIN_ALL;
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "late_work", axpbx_op, &p);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret) TH_LOG("line %d", p.step);
	EXPECT_STREQ("", err);
	free(x);
	free(v);
}

/* An operator's own error is returned as is, with no check and no line. */
TEST_F(op, join_check_operator_error_returned)
{
	struct capture c;
	struct probe p;
	char err[4096];
	int ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	memset(&p, 0, sizeof(p));
	p.ret = -ENOMEM;
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "failing", probe_op, &p);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(1, p.calls);
	EXPECT_STREQ("", err);
}

TEST_F(op, join_check_env_turns_it_on)
{
	char err[4096];

	ASSERT_EQ(0, setenv("SNPU_CHECK_JOINS", "1", 1));
	ASSERT_EQ(0, reopen(_metadata, self, 0));
	ASSERT_EQ(0, unsetenv("SNPU_CHECK_JOINS"));
	/* Read at open: unsetting it afterwards changes nothing. */
	EXPECT_EQ(-EPROTO, run_stray(self->owner, self->s, "env_operator",
				     "env.key", err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "env_operator")) TH_LOG("stderr: %s",
							     err);
	EXPECT_NE(NULL, strstr(err, "env.key")) TH_LOG("stderr: %s", err);
}

/* Any value but "" and "0" turns the check on; those two leave it off. */
TEST_F(op, join_check_env_values)
{
	static const struct { const char *v; int on; } vals[] = {
		{ "0", 0 }, { "", 0 }, { "yes", 1 }, { "2", 1 },
	};
	char err[4096];
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		ASSERT_EQ(0, setenv("SNPU_CHECK_JOINS", vals[i].v, 1));
		ASSERT_EQ(0, reopen(_metadata, self, 0));
		ASSERT_EQ(0, unsetenv("SNPU_CHECK_JOINS"));
		ret = run_stray(self->owner, self->s, "env_values", "ev.key",
				err, sizeof(err));
		EXPECT_EQ(vals[i].on ? -EPROTO : 0, ret)
			TH_LOG("SNPU_CHECK_JOINS='%s'", vals[i].v);
		EXPECT_EQ(vals[i].on, strstr(err, "ev.key") != NULL)
			TH_LOG("SNPU_CHECK_JOINS='%s': stderr '%s'", vals[i].v,
			       err);
	}
}

TEST_F(op, join_check_off_by_default)
{
	char err[4096];

	/* The fixture opened with no flag and no SNPU_CHECK_JOINS. */
	EXPECT_EQ(0, run_stray(self->owner, self->s, "unchecked_operator",
			       "free.key", err, sizeof(err)));
	EXPECT_STREQ("", err);
	/* The stray work was accepted and runs. */
	EXPECT_EQ(2, nstreams(self->dev));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s, LONG_TIMEOUT));
}

/* The join as one batch of snpu_submit(): record, then wait. */
static int batch_join_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	uint32_t s = snpu_op_ctx_stream(ctx), side, ev = *(uint32_t *)arg;
	struct snpu_task t[3];
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, "batch.side", &side);
	if (ret)
		return ret;
	snpu_prep_launch(&t[0], side, SNPU_KERNEL_NOP, 1, NULL, 0);
	snpu_prep_event_record(&t[1], side, ev);
	snpu_prep_stream_wait(&t[2], s, ev);
	return snpu_submit(dev, t, 3, NULL);
}

TEST_F(op, join_check_batched_record_and_wait)
{
	struct capture c;
	char err[4096];
	uint32_t ev;
	int i, ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, snpu_event_create(self->dev, &ev));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, capture_start(&c));
		ret = snpu_op_run(self->owner, self->s, "batch_join",
				  batch_join_op, &ev);
		capture_end(&c, err, sizeof(err));
		EXPECT_EQ(0, ret) TH_LOG("run %d", i);
		EXPECT_STREQ("", err);
	}
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->s,
					     LONG_TIMEOUT));
}

/*
 * One batch that records the same event twice: each wait is credited with
 * the record before it in the batch, not with the event's last capture.
 */
struct twice {
	uint32_t ev;
	int wrong;
};

static int record_twice_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	uint32_t s = snpu_op_ctx_stream(ctx), a, b;
	struct twice *tw = arg;
	struct snpu_task t[4];
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, "twice_a", &a);
	if (!ret)
		ret = snpu_op_ctx_request_attached_stream(ctx, "twice_b", &b);
	if (!ret)
		ret = snpu_launch(dev, a, SNPU_KERNEL_NOP, 1, NULL, 0);
	if (!ret)
		ret = snpu_launch(dev, b, SNPU_KERNEL_NOP, 1, NULL, 0);
	if (ret)
		return ret;
	if (!tw->wrong) {
		/* Both streams joined, through the one event. */
		snpu_prep_event_record(&t[0], a, tw->ev);
		snpu_prep_stream_wait(&t[1], s, tw->ev);
		snpu_prep_event_record(&t[2], b, tw->ev);
		snpu_prep_stream_wait(&t[3], s, tw->ev);
		return snpu_submit(dev, t, 4, NULL);
	}
	/* b is joined, then gets more work that is recorded, not joined. */
	snpu_prep_event_record(&t[0], b, tw->ev);
	snpu_prep_stream_wait(&t[1], s, tw->ev);
	snpu_prep_launch(&t[2], b, SNPU_KERNEL_NOP, 1, NULL, 0);
	snpu_prep_event_record(&t[3], b, tw->ev);
	ret = snpu_submit(dev, t, 4, NULL);
	if (!ret)
		ret = snpu_event_record(dev, tw->ev, a);
	if (!ret)
		ret = snpu_stream_wait_event(dev, s, tw->ev);
	return ret;
}

TEST_F(op, join_check_event_recorded_twice_in_batch_joined)
{
	struct twice tw = { 0 };
	struct capture c;
	char err[4096];
	int ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, snpu_event_create(self->dev, &tw.ev));
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "record_twice", record_twice_op,
			  &tw);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret);
	EXPECT_STREQ("", err);
}

TEST_F(op, join_check_event_recorded_twice_in_batch_unjoined)
{
	struct twice tw = { .wrong = 1 };
	struct capture c;
	char err[4096];
	int ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, snpu_event_create(self->dev, &tw.ev));
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "record_twice", record_twice_op,
			  &tw);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(-EPROTO, ret);
	EXPECT_NE(NULL, strstr(err, "'twice_b'"));
	EXPECT_EQ(NULL, strstr(err, "'twice_a'"));
}

/*
 * What the check looks at is the attached stream's last task, whoever
 * queued it: a stream requested and never used passes; one with earlier
 * work queued outside the operator must be joined even when the operator
 * queued nothing on it.
 */
struct join_only {
	const char *key;
	uint32_t ev;
	int join;
};

static int join_only_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct join_only *j = arg;
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	uint32_t side;
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, j->key, &side);
	if (ret || !j->join)
		return ret;
	ret = snpu_event_record(dev, j->ev, side);
	if (ret)
		return ret;
	return snpu_stream_wait_event(dev, snpu_op_ctx_stream(ctx), j->ev);
}

TEST_F(op, join_check_counts_work_queued_before)
{
	struct join_only j = { .key = "earlier" };
	struct capture c;
	char err[4096];
	uint32_t side;
	int ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, snpu_event_create(self->dev, &j.ev));
	/* Requested, never used: passes, silently. */
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "unused_side", join_only_op,
			  &j);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret);
	EXPECT_STREQ("", err);
	/* Work queued on it by someone else, outside any operator. */
	ASSERT_EQ(0, snpu_owner_attached_stream(self->owner, "earlier",
						&side));
	ASSERT_EQ(0, snpu_launch(self->dev, side, SNPU_KERNEL_NOP, 1, NULL,
				 0));
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "ignores_earlier",
			  join_only_op, &j);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(-EPROTO, ret);
	EXPECT_NE(NULL, strstr(err, "ignores_earlier")) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "earlier")) TH_LOG("%s", err);
	/* Joining it, with nothing new queued, satisfies the check. */
	j.join = 1;
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "joins_earlier",
			  join_only_op, &j);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret);
	EXPECT_STREQ("", err);
}

/*
 * Past 16 distinct attached streams in one operator call, a request still
 * succeeds, prints a warning naming the key, and that stream is not
 * checked (its unjoined work goes unreported).
 */
static int many_streams_op(struct snpu_op_ctx *ctx, void *arg)
{
	uint32_t *streams = arg, h;
	char key[16];
	int i, ret;

	for (i = 0; i < 17; i++) {
		snprintf(key, sizeof(key), "many.%d", i);
		ret = snpu_op_ctx_request_attached_stream(ctx, key, &h);
		if (ret)
			return ret;
		streams[i] = h;
	}
	/* Asking again for a tracked one does not count twice. */
	ret = snpu_op_ctx_request_attached_stream(ctx, "many.0", &h);
	if (ret)
		return ret;
	return snpu_launch(snpu_op_ctx_device(ctx), streams[16],
			   SNPU_KERNEL_NOP, 1, NULL, 0);
}

TEST_F(op, join_check_more_than_16_streams_warns)
{
	uint32_t streams[17];
	struct capture c;
	char err[4096];
	int ret;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "wide_operator",
			  many_streams_op, streams);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret);
	EXPECT_NE(NULL, strstr(err, "wide_operator")) TH_LOG("%s", err);
	EXPECT_NE(NULL, strstr(err, "many.16")) TH_LOG("%s", err);
	/* Only the 17th was warned about. */
	EXPECT_EQ(NULL, strstr(err, "many.15")) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strstr(err, "unjoined")) TH_LOG("%s", err);
	EXPECT_EQ(18, nstreams(self->dev));
}

/*
 * Operators nest: the outer one (stream s) runs an inner one whose stream
 * is the outer's attached stream A; the inner fills on its own attached
 * stream B and joins B into A; the outer adds on A and joins A into s,
 * which then multiplies. Both pass the check, and the result is right.
 */
struct nest {
	struct snpu_owner *owner;
	uint64_t b1, b2, b3;
	uint32_t eb, ea;
	int inner_ret;
};

#define NEST_N	2048

static int inner_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct nest *n = arg;
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	struct snpu_kernel_arg a[2] = {
		snpu_arg_buf(n->b1, NEST_N * 4), snpu_arg_u64(5),
	};
	uint32_t b;
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, "inner.b", &b);
	if (!ret)
		ret = snpu_launch(dev, b, SNPU_KERNEL_FILL, 3, a, 2);
	if (!ret)
		ret = snpu_event_record(dev, n->eb, b);
	if (!ret)
		ret = snpu_stream_wait_event(dev, snpu_op_ctx_stream(ctx),
					     n->eb);
	return ret;
}

static int outer_op(struct snpu_op_ctx *ctx, void *arg)
{
	struct nest *n = arg;
	struct snpu_device *dev = snpu_op_ctx_device(ctx);
	struct snpu_kernel_arg a[3] = {
		snpu_arg_buf(n->b2, NEST_N * 4),
		snpu_arg_buf(n->b1, NEST_N * 4),
		snpu_arg_buf(n->b1, NEST_N * 4),
	};
	uint32_t side;
	int ret;

	ret = snpu_op_ctx_request_attached_stream(ctx, "outer.a", &side);
	if (ret)
		return ret;
	n->inner_ret = snpu_op_run(n->owner, side, "inner", inner_op, n);
	if (n->inner_ret)
		return n->inner_ret;
	ret = snpu_launch(dev, side, SNPU_KERNEL_ADD_I32, 2, a, 3);
	if (!ret)
		ret = snpu_event_record(dev, n->ea, side);
	if (!ret)
		ret = snpu_stream_wait_event(dev, snpu_op_ctx_stream(ctx),
					     n->ea);
	return ret;
}

TEST_F(op, op_run_nested)
{
	int32_t *got = malloc(NEST_N * 4);
	struct capture c;
	struct nest n;
	char err[4096];
	unsigned int i;
	int ret;

	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	memset(&n, 0, sizeof(n));
	n.owner = self->owner;
	n.inner_ret = 1;
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, NEST_N * 4, 0, 0, &n.b1));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, NEST_N * 4, 0, 0, &n.b2));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, NEST_N * 4, 0, 0, &n.b3));
	ASSERT_EQ(0, snpu_event_create(self->dev, &n.ea));
	ASSERT_EQ(0, snpu_event_create(self->dev, &n.eb));
	ASSERT_EQ(0, capture_start(&c));
	ret = snpu_op_run(self->owner, self->s, "outer", outer_op, &n);
	capture_end(&c, err, sizeof(err));
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, n.inner_ret);
	EXPECT_STREQ("", err);
	struct snpu_kernel_arg a[3] = {
		snpu_arg_buf(n.b3, NEST_N * 4),
		snpu_arg_buf(n.b2, NEST_N * 4),
		snpu_arg_buf(n.b2, NEST_N * 4),
	};
	ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_MUL_I32, 4,
				 a, 3));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s,
					     LONG_TIMEOUT));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, got, n.b3, NEST_N * 4));
	for (i = 0; i < NEST_N; i++)
		ASSERT_EQ(100, got[i]) TH_LOG("element %u", i);
	free(got);
}

/* ---- several threads ---------------------------------------------------- */

#define TH_N		4
#define TH_KEYS		24
#define TH_ROUNDS	200

struct lookup_thread {
	pthread_t th;
	struct snpu_owner *owner;
	pthread_barrier_t *barrier;
	unsigned int id;
	uint32_t seen[TH_KEYS];
	int ret;
	int mismatches;
};

static void *lookup_fn(void *arg)
{
	struct lookup_thread *t = arg;
	unsigned int r, j, k;
	uint32_t h;
	char key[16];

	pthread_barrier_wait(t->barrier);
	for (r = 0; r < TH_ROUNDS; r++) {
		for (j = 0; j < TH_KEYS; j++) {
			/* Every thread walks all keys, from its own start. */
			k = (j + t->id * 7 + r) % TH_KEYS;
			snprintf(key, sizeof(key), "shared-%u", k);
			t->ret = snpu_owner_attached_stream(t->owner, key, &h);
			if (t->ret)
				return NULL;
			if (!t->seen[k])
				t->seen[k] = h;
			else if (t->seen[k] != h)
				t->mismatches++;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(op, concurrent_lookups_same_owner, 60)
{
	struct lookup_thread t[TH_N];
	pthread_barrier_t barrier;
	uint32_t h, created;
	unsigned int i, k, j;
	long base = nstreams(self->dev);
	char key[16];

	ASSERT_EQ(1, base);
	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, TH_N));
	for (i = 0; i < TH_N; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].owner = self->owner;
		t[i].barrier = &barrier;
		t[i].id = i;
		ASSERT_EQ(0, pthread_create(&t[i].th, NULL, lookup_fn, &t[i]));
	}
	for (i = 0; i < TH_N; i++)
		pthread_join(t[i].th, NULL);
	pthread_barrier_destroy(&barrier);

	for (i = 0; i < TH_N; i++) {
		EXPECT_EQ(0, t[i].ret) TH_LOG("thread %u", i);
		EXPECT_EQ(0, t[i].mismatches) TH_LOG("thread %u", i);
		for (k = 0; k < TH_KEYS; k++)
			EXPECT_EQ(t[0].seen[k], t[i].seen[k])
				TH_LOG("thread %u, key %u", i, k);
	}
	for (k = 0; k < TH_KEYS; k++) {
		EXPECT_NE(0U, t[0].seen[k]);
		for (j = 0; j < k; j++)
			EXPECT_NE(t[0].seen[j], t[0].seen[k])
				TH_LOG("keys %u and %u", j, k);
		/* The driver created each key once, the stream seen. */
		snprintf(key, sizeof(key), "shared-%u", k);
		ASSERT_EQ(0, raw_get(self->dev, self->owner, key, &h,
				     &created));
		EXPECT_EQ(t[0].seen[k], h) TH_LOG("key %u", k);
		EXPECT_EQ(0U, created) TH_LOG("key %u", k);
	}
	EXPECT_EQ(base + TH_KEYS, nstreams(self->dev));
}

/*
 * Operators of one owner run from four threads at once, each on its own
 * stream with its own keys, the check on: all pass, all results right.
 */
#define OPS_THREADS	4
#define OPS_N		1000
#define OPS_ROUNDS	8

struct op_thread {
	pthread_t th;
	struct snpu_device *dev;
	struct snpu_owner *owner;
	unsigned int id;
	char key_a[16], key_b[16];
	int started;
	int ret;
	int step;
	unsigned int bad;
};

static void *op_thread_fn(void *arg)
{
	struct op_thread *t = arg;
	uint32_t *x = malloc(OPS_N * 4), *a = malloc(OPS_N * 4);
	uint32_t *b = malloc(OPS_N * 4), *y = malloc(OPS_N * 4);
	uint32_t st = 99 + t->id, s;
	struct axpbx p;
	unsigned int i, r;

	t->ret = -ENOMEM;
	if (!x || !a || !b || !y)
		goto out;
	for (i = 0; i < OPS_N; i++) {
		x[i] = lcg(&st);
		a[i] = lcg(&st);
		b[i] = t->id + i;
	}
	t->ret = snpu_stream_create(t->dev, SNPU_PRIO_NORMAL, 0, &s);
	if (!t->ret)
		t->ret = axpbx_setup(t->dev, &p, 0, OPS_N, x, a, b);
	if (t->ret)
		goto out;
	snprintf(t->key_a, sizeof(t->key_a), "t%u.a", t->id);
	snprintf(t->key_b, sizeof(t->key_b), "t%u.b", t->id);
	p.key_a = t->key_a;
	p.key_b = t->key_b;
	for (r = 0; r < OPS_ROUNDS && !t->ret; r++) {
		t->ret = snpu_op_run(t->owner, s, "threaded_axpbx", axpbx_op,
				     &p);
		t->step = p.step;
		if (!t->ret)
			t->ret = snpu_stream_synchronize(t->dev, s,
							 LONG_TIMEOUT);
		if (!t->ret)
			t->ret = snpu_memcpy_d2h(t->dev, y, p.y, OPS_N * 4);
		for (i = 0; !t->ret && i < OPS_N; i++)
			if (y[i] != a[i] * x[i] + b[i] * x[i])
				t->bad++;
	}
out:
	free(x);
	free(a);
	free(b);
	free(y);
	return NULL;
}

TEST_F_TIMEOUT(op, concurrent_operators_one_owner, 90)
{
	struct op_thread t[OPS_THREADS];
	struct capture c;
	char err[4096];
	unsigned int i;

	ASSERT_EQ(0, reopen(_metadata, self, SNPU_OPEN_CHECK_JOINS));
	ASSERT_EQ(0, capture_start(&c));
	for (i = 0; i < OPS_THREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].dev = self->dev;
		t[i].owner = self->owner;
		t[i].id = i;
		t[i].started = !pthread_create(&t[i].th, NULL, op_thread_fn,
					       &t[i]);
	}
	for (i = 0; i < OPS_THREADS; i++)
		if (t[i].started)
			pthread_join(t[i].th, NULL);
	capture_end(&c, err, sizeof(err));
	for (i = 0; i < OPS_THREADS; i++) {
		EXPECT_TRUE(t[i].started) TH_LOG("thread %u", i);
		EXPECT_EQ(0, t[i].ret) TH_LOG("thread %u, line %d", i,
					      t[i].step);
		EXPECT_EQ(0U, t[i].bad) TH_LOG("thread %u", i);
	}
	EXPECT_STREQ("", err);
	/* The fixture's stream, one per thread, two attached per thread. */
	EXPECT_EQ(1 + 3 * OPS_THREADS, nstreams(self->dev));
}

TEST_HARNESS_MAIN
