// SPDX-License-Identifier: GPL-2.0
/*
 * snpu owners and attached streams (ABI 0.4) through raw ioctls:
 * SNPU_IOC_OWNER_CREATE, SNPU_IOC_OWNER_DESTROY and
 * SNPU_IOC_ATTACHED_STREAM_GET, their argument checks, keys, handles
 * across files, the stream quota, attached streams used as streams, the
 * EPERM of STREAM_DESTROY, a destroy that waits for queued work (and one
 * interrupted by a signal), lookups racing a destroy, and files closed or
 * processes killed with owners still holding work.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (ctx_streams=64). Every test runs in its own process with its own
 * context; the fixture opens /dev/snpu0 and creates one plain stream and
 * one owner of normal priority.
 *
 * Where a stream must stay busy for sure, a host callback is queued in
 * front of its work: nothing behind it runs until the test completes the
 * callback, so no test depends on how fast the VM is.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)
#define KEY_MAX		SNPU_ATTACHED_KEY_MAX

/* ---- helpers ------------------------------------------------------------ */

static int owner_create(int fd, int32_t prio, uint32_t *handle)
{
	struct snpu_stream_create c = { .size = sizeof(c), .priority = prio };
	int ret = snpu_ioc(fd, SNPU_IOC_OWNER_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static int owner_destroy(int fd, uint32_t owner)
{
	return snpu_handle_op(fd, SNPU_IOC_OWNER_DESTROY, owner, 0);
}

/* A zeroed ATTACHED_STREAM_GET argument for @owner and @key. */
static void att_arg(struct snpu_attached_stream *a, uint32_t owner,
		    const char *key)
{
	size_t len;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->owner = owner;
	len = strlen(key);
	memcpy(a->key, key, len < KEY_MAX ? len : KEY_MAX);
}

/*
 * ATTACHED_STREAM_GET of @key (at most KEY_MAX - 1 bytes) of @owner.
 * Return: 0 or -errno; *@handle and *@created (if given) set on success.
 */
static int att_get(int fd, uint32_t owner, const char *key, uint32_t *handle,
		   uint32_t *created)
{
	struct snpu_attached_stream a;
	int ret;

	att_arg(&a, owner, key);
	ret = snpu_ioc(fd, SNPU_IOC_ATTACHED_STREAM_GET, &a);
	if (!ret) {
		if (handle)
			*handle = a.handle;
		if (created)
			*created = a.created;
	}
	return ret;
}

/* Streams of the context (plain and attached), or -1 on error. */
static long nstreams(int fd)
{
	struct snpu_ctx_query q;

	return snpu_ctx_query(fd, &q) ? -1 : (long)q.streams;
}

/* A device buffer of @n u32, all zero (allocations are zero-filled). */
static int dev_buf(int fd, size_t n, uint64_t *addr)
{
	return snpu_alloc(fd, n * 4, 0, addr);
}

/*
 * Compare @n u32 at device address @addr with @v.
 * Return: the index of the first mismatch, n when all match, or
 * (size_t)-1 when the buffer could not be read.
 */
static size_t dev_all(int fd, uint64_t addr, size_t n, uint32_t v)
{
	uint32_t *tmp = malloc(n * 4);
	size_t i;

	if (!tmp || snpu_d2h(fd, tmp, addr, n * 4)) {
		free(tmp);
		return (size_t)-1;
	}
	for (i = 0; i < n && tmp[i] == v; i++)
		;
	free(tmp);
	return i;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * NS_PER_MS };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * A thread that takes @n callbacks in turn; each must carry @user_data[i]
 * and is completed @delay_ms after it arrived. @t_done is the time just
 * before the last CALLBACK_DONE, so anything that waits for all that work
 * returns after @t_done.
 */
#define ANSWER_MAX	4

struct answerer {
	pthread_t th;
	int fd;
	unsigned int n;
	uint64_t user_data[ANSWER_MAX];
	long delay_ms;
	uint64_t t_done;
	int ret;
};

static void *answer_fn(void *p)
{
	struct answerer *a = p;
	struct snpu_callback cb;
	unsigned int i;

	for (i = 0; i < a->n; i++) {
		a->ret = snpu_callback_wait(a->fd, LONG_TIMEOUT, &cb);
		if (a->ret)
			return NULL;
		if (cb.user_data != a->user_data[i]) {
			a->ret = -EBADMSG;
			return NULL;
		}
		sleep_ms(a->delay_ms);
		a->t_done = snpu_now_ns();
		a->ret = snpu_callback_done(a->fd, cb.cookie, 0);
		if (a->ret)
			return NULL;
	}
	return NULL;
}

/*
 * Start an answerer of the @n callbacks @user_data, with SIGALRM blocked
 * so that it never takes one.
 */
static int answerer_start(struct answerer *a, int fd, long delay_ms,
			  unsigned int n, const uint64_t *user_data)
{
	sigset_t set, old;
	int ret;

	if (n > ANSWER_MAX)
		return -EINVAL;
	a->fd = fd;
	a->n = n;
	memcpy(a->user_data, user_data, n * sizeof(*user_data));
	a->delay_ms = delay_ms;
	a->t_done = 0;
	a->ret = -EINPROGRESS;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	ret = pthread_create(&a->th, NULL, answer_fn, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -ret;
}

/* Take the next callback, which must carry @user_data; *@cookie set. */
static int take_callback(int fd, uint64_t user_data, uint32_t *cookie)
{
	struct snpu_callback cb;
	int ret = snpu_callback_wait(fd, LONG_TIMEOUT, &cb);

	if (ret)
		return ret;
	if (cb.user_data != user_data)
		return -EBADMSG;
	*cookie = cb.cookie;
	return 0;
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* SIGALRM counted in @alarms, with sa_flags @flags (0 or SA_RESTART). */
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

/* A periodic SIGALRM every @ms milliseconds; 0 stops it. */
static int alarm_every_ms(long ms)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	it.it_interval = it.it_value;
	return setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- the fixture -------------------------------------------------------- */

FIXTURE(att) {
	int fd;
	uint32_t s;	/* a plain stream */
	uint32_t o;	/* an owner, SNPU_PRIO_NORMAL */
};

FIXTURE_SETUP(att)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &self->s));
	ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &self->o));
}

FIXTURE_TEARDOWN(att)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- device info -------------------------------------------------------- */

TEST_F(att, info_reports_abi_0_4_and_cap)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_EQ(0U, info.abi_major);
	EXPECT_GE(info.abi_minor, 4U);
	EXPECT_EQ((uint64_t)SNPU_CAP_ATTACHED, info.caps & SNPU_CAP_ATTACHED);
	/* Every feature; the test hooks are a module parameter. */
	EXPECT_EQ((uint64_t)(SNPU_CAPS_KNOWN & ~SNPU_CAP_TEST_HOOKS),
		  info.caps & SNPU_CAPS_KNOWN & ~SNPU_CAP_TEST_HOOKS);
}

/* ---- OWNER_CREATE ------------------------------------------------------- */

/*
 * A context has at most as many owners as its stream quota; one more is
 * ENOSPC, and destroying one makes room again.
 */
TEST_F(att, owner_create_past_quota_enospc)
{
	struct snpu_ctx_query q;
	uint32_t o, last = 0;
	unsigned int n;

	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	/* The fixture's owner is the first. */
	for (n = 1; n < q.streams_limit; n++)
		ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &last))
			TH_LOG("owner %u of %u", n + 1, q.streams_limit);
	EXPECT_EQ(-ENOSPC, owner_create(self->fd, SNPU_PRIO_NORMAL, &o));
	ASSERT_EQ(0, owner_destroy(self->fd, last));
	EXPECT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &o));
}

/* Each priority is accepted; the owner's streams get its priority. */
TEST_F(att, owner_create_priorities)
{
	static const int32_t prios[] = {
		SNPU_PRIO_LOW, SNPU_PRIO_NORMAL, SNPU_PRIO_HIGH,
	};
	struct snpu_stream_create c;
	struct snpu_stream_query q;
	uint32_t o[3], h[3];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		memset(&c, 0, sizeof(c));
		c.size = sizeof(c);
		c.priority = prios[i];
		ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
		EXPECT_EQ((uint32_t)sizeof(c), c.size);
		EXPECT_NE(0U, c.handle);
		o[i] = c.handle;
		EXPECT_NE(self->o, o[i]);
		EXPECT_NE(self->s, o[i]);
		ASSERT_EQ(0, att_get(self->fd, o[i], "prio", &h[i], NULL));
		ASSERT_EQ(0, snpu_stream_query(self->fd, h[i], &q));
		EXPECT_EQ(prios[i], q.priority);
		EXPECT_EQ(0, q.error);
		EXPECT_EQ(0U, q.submitted);
	}
	EXPECT_NE(o[0], o[1]);
	EXPECT_NE(o[1], o[2]);
	EXPECT_NE(o[0], o[2]);
	/* An owner is not a stream. */
	EXPECT_EQ(4, nstreams(self->fd));
}

TEST_F(att, owner_create_bad_priority_einval)
{
	static const int32_t bad[] = { 2, -2, 100, 0x7fffffff,
				       (int32_t)0x80000000 };
	unsigned int i;
	uint32_t o = 0xdeadU;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, owner_create(self->fd, bad[i], &o))
			TH_LOG("priority %d", bad[i]);
	EXPECT_EQ(0xdeadU, o);
	EXPECT_EQ(1, nstreams(self->fd));
}

TEST_F(att, owner_create_reserved_einval)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	c.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	c.reserved[0] = 0;
	c.reserved[1] = 1ULL << 63;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	/* The same struct with the fields zero again is fine. */
	c.reserved[1] = 0;
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
}

TEST_F(att, owner_create_flags_einval)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	c.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	c.flags = 1U << 31;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
}

/* handle is an output: whatever it holds, a new owner is returned in it. */
TEST_F(att, owner_create_handle_in_ignored)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	c.handle = self->o;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	EXPECT_NE(self->o, c.handle);
	EXPECT_NE(0U, c.handle);
	EXPECT_EQ(0, snpu_handle_op(self->fd, SNPU_IOC_OWNER_DESTROY, c.handle,
				    0));
	c.handle = 0xffffffffU;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	EXPECT_NE(0xffffffffU, c.handle);
	EXPECT_EQ(0, snpu_handle_op(self->fd, SNPU_IOC_OWNER_DESTROY, c.handle,
				    0));
}

/* ---- ATTACHED_STREAM_GET ------------------------------------------------ */

TEST_F(att, get_creates_once_then_same_stream)
{
	struct snpu_attached_stream a;
	struct snpu_stream_query q;
	uint32_t h, h2, created;
	unsigned int i;

	att_arg(&a, self->o, "matmul");
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ((uint32_t)sizeof(a), a.size);
	EXPECT_EQ(1U, a.created);
	EXPECT_NE(0U, a.handle);
	EXPECT_NE(self->s, a.handle);
	EXPECT_NE(self->o, a.handle);
	h = a.handle;
	/* A new stream: idle, the owner's priority. */
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(SNPU_PRIO_NORMAL, q.priority);
	EXPECT_EQ(0U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	EXPECT_EQ(2, nstreams(self->fd));

	for (i = 0; i < 1000; i++) {
		created = 7;
		h2 = 0;
		ASSERT_EQ(0, att_get(self->fd, self->o, "matmul", &h2,
				     &created)) TH_LOG("call %u", i);
		ASSERT_EQ(h, h2) TH_LOG("call %u", i);
		ASSERT_EQ(0U, created) TH_LOG("call %u", i);
	}
	EXPECT_EQ(2, nstreams(self->fd));
}

#define MANY_KEYS	48

TEST_F(att, get_many_keys_each_created_once)
{
	uint32_t h[MANY_KEYS], got, created;
	char key[KEY_MAX];
	unsigned int i, j;

	for (i = 0; i < MANY_KEYS; i++) {
		snprintf(key, sizeof(key), "layer.%u.attn", i);
		ASSERT_EQ(0, att_get(self->fd, self->o, key, &h[i], &created));
		EXPECT_EQ(1U, created) TH_LOG("key %s", key);
		for (j = 0; j < i; j++)
			ASSERT_NE(h[j], h[i]) TH_LOG("keys %u and %u", j, i);
	}
	EXPECT_EQ(1 + MANY_KEYS, nstreams(self->fd));
	/* 1000 more calls over the keys in a scrambled order. */
	for (j = 0; j < 1000; j++) {
		i = (j * 7 + j / MANY_KEYS) % MANY_KEYS;
		snprintf(key, sizeof(key), "layer.%u.attn", i);
		ASSERT_EQ(0, att_get(self->fd, self->o, key, &got, &created));
		ASSERT_EQ(h[i], got) TH_LOG("key %s, call %u", key, j);
		ASSERT_EQ(0U, created) TH_LOG("key %s, call %u", key, j);
	}
	EXPECT_EQ(1 + MANY_KEYS, nstreams(self->fd));
}

/* Keys that differ in one byte, by case, or as prefixes are different. */
TEST_F(att, get_different_keys_different_streams)
{
	static const char *const keys[] = {
		"a", "b", "A", "ab", "abc", "abd", "a b", "ab ", " ab",
		"stream/0", "stream/1", "\x01", "\xff",
	};
	const unsigned int n = sizeof(keys) / sizeof(keys[0]);
	uint32_t h[sizeof(keys) / sizeof(keys[0])], got, created;
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, att_get(self->fd, self->o, keys[i], &h[i],
				     &created));
		EXPECT_EQ(1U, created) TH_LOG("key '%s'", keys[i]);
		for (j = 0; j < i; j++)
			EXPECT_NE(h[j], h[i])
				TH_LOG("'%s' and '%s'", keys[j], keys[i]);
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, att_get(self->fd, self->o, keys[i], &got,
				     &created));
		EXPECT_EQ(h[i], got) TH_LOG("key '%s'", keys[i]);
		EXPECT_EQ(0U, created) TH_LOG("key '%s'", keys[i]);
	}
	EXPECT_EQ(1 + (long)n, nstreams(self->fd));
}

TEST_F(att, two_owners_same_key_different_streams)
{
	uint32_t o2, h1, h2, c1, c2, again;

	ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &o2));
	ASSERT_EQ(0, att_get(self->fd, self->o, "shared", &h1, &c1));
	ASSERT_EQ(0, att_get(self->fd, o2, "shared", &h2, &c2));
	EXPECT_EQ(1U, c1);
	/* Created for o2 too: the first owner's stream is not shared. */
	EXPECT_EQ(1U, c2);
	EXPECT_NE(h1, h2);
	ASSERT_EQ(0, att_get(self->fd, self->o, "shared", &again, &c1));
	EXPECT_EQ(h1, again);
	EXPECT_EQ(0U, c1);
	ASSERT_EQ(0, att_get(self->fd, o2, "shared", &again, &c2));
	EXPECT_EQ(h2, again);
	EXPECT_EQ(0U, c2);
	EXPECT_EQ(3, nstreams(self->fd));
	/* Destroying one owner leaves the other's stream alone. */
	ASSERT_EQ(0, owner_destroy(self->fd, o2));
	ASSERT_EQ(0, att_get(self->fd, self->o, "shared", &again, &c1));
	EXPECT_EQ(h1, again);
	EXPECT_EQ(0U, c1);
	EXPECT_EQ(0, snpu_stream_sync(self->fd, h1, 0, NULL));
	EXPECT_EQ(2, nstreams(self->fd));
}

/* Handles are per file: another file's owner and streams are not seen. */
TEST_F(att, owners_isolated_across_files)
{
	struct snpu_stream_query q;
	uint32_t h, again, o2, created;
	int fd2 = snpu_open_dev();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, att_get(self->fd, self->o, "mine", &h, NULL));
	/* A fresh file: neither the owner nor its stream exist there. */
	EXPECT_EQ(-ENOENT, att_get(fd2, self->o, "mine", NULL, NULL));
	EXPECT_EQ(-ENOENT, att_get(fd2, self->o, "other", NULL, NULL));
	EXPECT_EQ(-ENOENT, owner_destroy(fd2, self->o));
	EXPECT_EQ(-ENOENT, snpu_stream_query(fd2, h, &q));
	EXPECT_EQ(0, nstreams(fd2));
	/* The other file's own owner is a different one. */
	ASSERT_EQ(0, owner_create(fd2, SNPU_PRIO_NORMAL, &o2));
	ASSERT_EQ(0, att_get(fd2, o2, "mine", NULL, &created));
	EXPECT_EQ(1U, created);
	EXPECT_EQ(1, nstreams(fd2));
	ASSERT_EQ(0, owner_destroy(fd2, o2));
	close(fd2);
	/* Nothing happened to this file's owner. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "mine", &again, &created));
	EXPECT_EQ(h, again);
	EXPECT_EQ(0U, created);
	EXPECT_EQ(2, nstreams(self->fd));
}

/* ---- keys --------------------------------------------------------------- */

TEST_F(att, key_empty_einval)
{
	struct snpu_attached_stream a;

	att_arg(&a, self->o, "");
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	/* An all-zero key, however it is spelled, is empty. */
	a.key[KEY_MAX - 1] = 0;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1, nstreams(self->fd));
}

TEST_F(att, key_63_bytes_ok)
{
	struct snpu_attached_stream a;
	char key[KEY_MAX];
	uint32_t h, h62, created;

	memset(key, 'k', KEY_MAX - 1);
	key[KEY_MAX - 1] = 0;
	att_arg(&a, self->o, key);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1U, a.created);
	h = a.handle;
	/* The whole key counts: its 62-byte prefix is another stream. */
	key[KEY_MAX - 2] = 0;
	ASSERT_EQ(0, att_get(self->fd, self->o, key, &h62, &created));
	EXPECT_EQ(1U, created);
	EXPECT_NE(h, h62);
	key[KEY_MAX - 2] = 'k';
	ASSERT_EQ(0, att_get(self->fd, self->o, key, &h62, &created));
	EXPECT_EQ(h, h62);
	EXPECT_EQ(0U, created);
	/* Differing only in its last byte: another stream. */
	key[KEY_MAX - 2] = 'z';
	ASSERT_EQ(0, att_get(self->fd, self->o, key, &h62, &created));
	EXPECT_EQ(1U, created);
	EXPECT_NE(h, h62);
}

TEST_F(att, key_64_bytes_unterminated_einval)
{
	struct snpu_attached_stream a;

	att_arg(&a, self->o, "x");
	memset(a.key, 'k', KEY_MAX);
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	/* Non-zero bytes only, of any value. */
	memset(a.key, 0xff, KEY_MAX);
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1, nstreams(self->fd));
}

TEST_F(att, key_garbage_after_nul_einval)
{
	static const unsigned int pos[] = { 4, 5, 31, KEY_MAX - 1 };
	struct snpu_attached_stream a;
	unsigned int i;

	for (i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		att_arg(&a, self->o, "abc");	/* NUL at 3 */
		a.key[pos[i]] = 'x';
		EXPECT_EQ(-EINVAL,
			  snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a))
			TH_LOG("byte %u after the NUL", pos[i]);
	}
	/* Same for a key of 62 bytes with a non-zero last byte. */
	att_arg(&a, self->o, "x");
	memset(a.key, 'k', KEY_MAX - 2);
	a.key[KEY_MAX - 2] = 0;
	a.key[KEY_MAX - 1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1, nstreams(self->fd));
	/* The clean "abc" is accepted. */
	att_arg(&a, self->o, "abc");
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1U, a.created);
}

/* pad, reserved and flags must be zero (handle, created: outputs). */
TEST_F(att, get_nonzero_input_fields_einval)
{
	struct snpu_attached_stream a;
	uint32_t h;

	att_arg(&a, self->o, "k");
	a.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, self->o, "k");
	a.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, self->o, "k");
	a.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, self->o, "k");
	a.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, self->o, "k");
	a.size = SNPU_ATTACHED_STREAM_SIZE_VER0 - 8;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	/* None of them created the stream. */
	EXPECT_EQ(1, nstreams(self->fd));
	/* The handle is not input: another one there finds the stream. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "k", &h, NULL));
	att_arg(&a, self->o, "k");
	a.handle = self->s;
	a.created = 1;
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(h, a.handle);
	EXPECT_EQ(0U, a.created);
	EXPECT_EQ(2, nstreams(self->fd));
}

/* An owner handle that names a stream, an event or nothing: ENOENT. */
TEST_F(att, get_owner_not_an_owner_enoent)
{
	uint32_t ev, h, bad[5];
	unsigned int i;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	ASSERT_EQ(0, att_get(self->fd, self->o, "real", &h, NULL));
	bad[0] = self->s;	/* plain stream */
	bad[1] = ev;		/* event */
	bad[2] = h;		/* attached stream */
	bad[3] = 0;
	bad[4] = 0x7ffffff0U;
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(-ENOENT, att_get(self->fd, bad[i], "real", NULL,
					   NULL)) TH_LOG("handle %u", bad[i]);
		EXPECT_EQ(-ENOENT, att_get(self->fd, bad[i], "new", NULL,
					   NULL)) TH_LOG("handle %u", bad[i]);
	}
	EXPECT_EQ(2, nstreams(self->fd));
	/* The objects named are unharmed. */
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->s, 0, NULL));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, h, 0, NULL));
	EXPECT_EQ(0, snpu_event_destroy(self->fd, ev));
}

/* The checks come in order: fields and key (EINVAL), then the owner. */
TEST_F(att, get_einval_before_enoent)
{
	struct snpu_attached_stream a;

	att_arg(&a, 0x7ffffff0U, "");
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, self->s, "k");
	a.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	att_arg(&a, 0, "k");
	memset(a.key, 'z', KEY_MAX);
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1, nstreams(self->fd));
}

/*
 * Threads racing on new keys of one owner: for every key exactly one call
 * in all the threads reports created=1, and all of them get the same
 * stream.
 */
#define RACE_THREADS	4
#define RACE_KEYS	16
#define RACE_ROUNDS	50

struct racer {
	pthread_t th;
	int fd;
	uint32_t owner;
	pthread_barrier_t *barrier;
	unsigned int id;
	uint32_t handle[RACE_KEYS];
	unsigned int created[RACE_KEYS];
	int ret;
	int mismatches;
};

static void *race_fn(void *arg)
{
	struct racer *r = arg;
	unsigned int round, j, k;
	uint32_t h, created;
	char key[16];

	pthread_barrier_wait(r->barrier);
	for (round = 0; round < RACE_ROUNDS; round++) {
		for (j = 0; j < RACE_KEYS; j++) {
			k = (j + r->id * 5) % RACE_KEYS;
			snprintf(key, sizeof(key), "race.%u", k);
			r->ret = att_get(r->fd, r->owner, key, &h, &created);
			if (r->ret)
				return NULL;
			r->created[k] += created;
			if (!r->handle[k])
				r->handle[k] = h;
			else if (r->handle[k] != h)
				r->mismatches++;
		}
	}
	return NULL;
}

TEST_F(att, concurrent_get_creates_each_key_once)
{
	struct racer r[RACE_THREADS];
	pthread_barrier_t barrier;
	unsigned int i, k, total;

	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, RACE_THREADS));
	for (i = 0; i < RACE_THREADS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].fd = self->fd;
		r[i].owner = self->o;
		r[i].barrier = &barrier;
		r[i].id = i;
		ASSERT_EQ(0, pthread_create(&r[i].th, NULL, race_fn, &r[i]));
	}
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(r[i].th, NULL);
	pthread_barrier_destroy(&barrier);
	for (i = 0; i < RACE_THREADS; i++) {
		EXPECT_EQ(0, r[i].ret) TH_LOG("thread %u", i);
		EXPECT_EQ(0, r[i].mismatches) TH_LOG("thread %u", i);
	}
	for (k = 0; k < RACE_KEYS; k++) {
		total = 0;
		for (i = 0; i < RACE_THREADS; i++) {
			total += r[i].created[k];
			EXPECT_EQ(r[0].handle[k], r[i].handle[k])
				TH_LOG("key %u, thread %u", k, i);
		}
		EXPECT_EQ(1U, total) TH_LOG("key %u", k);
	}
	EXPECT_EQ(1 + RACE_KEYS, nstreams(self->fd));
}

/* ---- the stream quota --------------------------------------------------- */

TEST_F(att, quota_counts_attached_streams)
{
	struct snpu_ctx_query cq;
	uint32_t *plain, h1, h2, again, created, x, o2;
	unsigned int n = 0, i, limit;
	int ret = 0;

	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	limit = cq.streams_limit;
	ASSERT_GE(limit, 3U);
	plain = calloc(limit, sizeof(*plain));
	ASSERT_NE(NULL, plain);

	ASSERT_EQ(0, att_get(self->fd, self->o, "k1", &h1, &created));
	EXPECT_EQ(1U, created);
	/* The fixture's stream and k1 count: limit - 2 plain ones fit. */
	while (n < limit) {
		ret = snpu_stream_create(self->fd, 0, &plain[n]);
		if (ret)
			break;
		n++;
	}
	EXPECT_EQ(-ENOSPC, ret);
	ASSERT_EQ(limit - 2, n);
	EXPECT_EQ((long)limit, nstreams(self->fd));

	/* A new key is over the quota; nothing is created. */
	EXPECT_EQ(-ENOSPC, att_get(self->fd, self->o, "k2", &x, &created));
	EXPECT_EQ(-ENOSPC, att_get(self->fd, self->o, "k2", &x, &created));
	EXPECT_EQ((long)limit, nstreams(self->fd));
	/* An existing key still answers. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "k1", &again, &created));
	EXPECT_EQ(h1, again);
	EXPECT_EQ(0U, created);
	/* Owners have no quota: one more is fine, its first key is not. */
	ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &o2));
	EXPECT_EQ(-ENOSPC, att_get(self->fd, o2, "k1", &x, &created));
	/* The owner is checked before the quota. */
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->s, "k3", &x, &created));
	EXPECT_EQ((long)limit, nstreams(self->fd));

	/* One plain stream less: now k2 is created, once. */
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, plain[--n], 0));
	EXPECT_EQ((long)limit - 1, nstreams(self->fd));
	ASSERT_EQ(0, att_get(self->fd, self->o, "k2", &h2, &created));
	EXPECT_EQ(1U, created);
	EXPECT_NE(h1, h2);
	EXPECT_EQ((long)limit, nstreams(self->fd));
	ASSERT_EQ(0, att_get(self->fd, self->o, "k2", &again, &created));
	EXPECT_EQ(h2, again);
	EXPECT_EQ(0U, created);
	/* And the attached streams keep plain ones out. */
	EXPECT_EQ(-ENOSPC, snpu_stream_create(self->fd, 0, &x));

	/* Destroying the owner gives both back. */
	ASSERT_EQ(0, owner_destroy(self->fd, self->o));
	EXPECT_EQ((long)limit - 2, nstreams(self->fd));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, snpu_stream_create(self->fd, 0, &x));
	EXPECT_EQ(-ENOSPC, snpu_stream_create(self->fd, 0, &x));
	free(plain);
}

/* ---- attached streams as streams ---------------------------------------- */

#define N_ELEMS		4096

TEST_F(att, stream_destroy_attached_eperm)
{
	uint32_t h, again, created;
	uint64_t y;

	ASSERT_EQ(0, att_get(self->fd, self->o, "keep", &h, NULL));
	EXPECT_EQ(-EPERM, snpu_stream_destroy(self->fd, h, 0));
	EXPECT_EQ(-EPERM, snpu_stream_destroy(self->fd, h,
					      SNPU_STREAM_DESTROY_FORCE));
	EXPECT_EQ(2, nstreams(self->fd));
	/* Still the owner's, and still a working stream. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "keep", &again, &created));
	EXPECT_EQ(h, again);
	EXPECT_EQ(0U, created);
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(h, y, N_ELEMS * 4,
							0x5eed, 4)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, NULL));
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 0x5eed));
}

/* A refused forced destroy does not abort the queued work either. */
TEST_F(att, stream_destroy_force_attached_keeps_work)
{
	struct snpu_stream_query q;
	uint32_t h, cookie;
	uint64_t y;
	int32_t err = 1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "busy", &h, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(h, 0xb10c),
		snpu_t_fill(h, y, N_ELEMS * 4, 0xabcd, 3),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, take_callback(self->fd, 0xb10c, &cookie));
	EXPECT_EQ(-EPERM, snpu_stream_destroy(self->fd, h,
					      SNPU_STREAM_DESTROY_FORCE));
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(2U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 0xabcd));
}

/*
 * Launches, sync, query and events across an attached stream and the
 * plain one: main fills x and records e1; the attached stream waits for
 * e1, computes y = x + x and records e2; main waits for e2 and computes
 * z = y * x. A callback in front of main holds everything until the
 * checks of the pending state are done.
 */
TEST_F(att, attached_stream_launch_sync_query_events)
{
	struct snpu_stream_query q;
	struct snpu_event_query eq;
	uint32_t h, e1, e2, cookie;
	uint64_t x, y, z, seq;
	int32_t err = 1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "side", &h, NULL));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e1));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &x));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &z));

	struct snpu_task m1[3] = {
		snpu_t_host_func(self->s, 0x51de),
		snpu_t_fill(self->s, x, N_ELEMS * 4, 6, 4),
		snpu_t_record(self->s, e1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, m1, 3, NULL));
	struct snpu_task a[3] = {
		snpu_t_wait(h, e1),
		snpu_t_binop(h, SNPU_KERNEL_ADD_I32, y, x, x, N_ELEMS * 4, 3),
		snpu_t_record(h, e2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, a, 3, &seq));
	EXPECT_EQ(3U, seq);
	struct snpu_task m2[2] = {
		snpu_t_wait(self->s, e2),
		snpu_t_binop(self->s, SNPU_KERNEL_MUL_I32, z, y, x,
			     N_ELEMS * 4, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, m2, 2, NULL));

	/* Held behind the callback. */
	ASSERT_EQ(0, take_callback(self->fd, 0x51de, &cookie));
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, h, 0, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(3U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	ASSERT_EQ(0, snpu_event_query(self->fd, e2, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_PENDING, eq.state);
	EXPECT_EQ(h, eq.stream);
	EXPECT_EQ(3U, eq.seq);

	ASSERT_EQ(0, snpu_callback_done(self->fd, cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	err = 1;
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(3U, q.submitted);
	EXPECT_EQ(3U, q.completed);
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_event_query(self->fd, e2, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, eq.state);
	EXPECT_EQ(0, eq.error);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 12));
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, z, N_ELEMS, 72));
}

/* The sticky error, abort and reset work on an attached stream too. */
TEST_F(att, attached_stream_error_abort_reset)
{
	struct snpu_stream_query q;
	uint32_t h, again, created;
	int32_t err = 0;
	uint64_t y;

	ASSERT_EQ(0, att_get(self->fd, self->o, "flaky", &h, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, 64, &y));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fail(h, EIO)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(-EIO, err);
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(h)));
	/* The key still names the same (failed) stream. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "flaky", &again, &created));
	EXPECT_EQ(h, again);
	EXPECT_EQ(0U, created);
	ASSERT_EQ(0, snpu_stream_reset(self->fd, h));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(h, y, 256, 9, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(64U, dev_all(self->fd, y, 64, 9));
	/* Abort cancels what is queued behind a callback. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(h, 3)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(h, y, 256, 10, 1)));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, h));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(-ECANCELED, err);
	EXPECT_EQ(64U, dev_all(self->fd, y, 64, 9));
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(q.submitted, q.completed);
	/* A failed, aborted attached stream does not hold up its owner. */
	ASSERT_EQ(0, owner_destroy(self->fd, self->o));
	EXPECT_EQ(1, nstreams(self->fd));
}

/* ---- OWNER_DESTROY ------------------------------------------------------ */

TEST_F(att, owner_destroy_empty_and_idle)
{
	uint32_t o2, h[3], created;
	char key[8];
	unsigned int i;

	/* No stream at all. */
	ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_HIGH, &o2));
	EXPECT_EQ(0, owner_destroy(self->fd, o2));
	EXPECT_EQ(-ENOENT, att_get(self->fd, o2, "x", NULL, NULL));
	/* Idle streams, some never used, some used. */
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "s%u", i);
		ASSERT_EQ(0, att_get(self->fd, self->o, key, &h[i], NULL));
	}
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(h[1])));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h[1], LONG_TIMEOUT, NULL));
	EXPECT_EQ(4, nstreams(self->fd));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	EXPECT_EQ(1, nstreams(self->fd));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h[i], 0, NULL));
	/* A new owner starts from scratch with the same keys. */
	ASSERT_EQ(0, owner_create(self->fd, SNPU_PRIO_NORMAL, &o2));
	ASSERT_EQ(0, att_get(self->fd, o2, "s0", NULL, &created));
	EXPECT_EQ(1U, created);
	EXPECT_EQ(2, nstreams(self->fd));
}

TEST_F(att, owner_destroy_twice_enoent)
{
	ASSERT_EQ(0, att_get(self->fd, self->o, "k", NULL, NULL));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, self->o));
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "k", NULL, NULL));
	EXPECT_EQ(1, nstreams(self->fd));
}

TEST_F(att, owner_destroy_bad_fields_einval)
{
	struct snpu_handle_op op = { .size = sizeof(op), .handle = self->o };
	uint32_t created;

	ASSERT_EQ(0, att_get(self->fd, self->o, "k", NULL, NULL));
	op.flags = SNPU_STREAM_DESTROY_FORCE;	/* no flags defined */
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_DESTROY, &op));
	op.flags = 0;
	op.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_DESTROY, &op));
	op.pad = 0;
	op.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_OWNER_DESTROY, &op));
	/* The owner and its stream are still there. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "k", NULL, &created));
	EXPECT_EQ(0U, created);
	EXPECT_EQ(2, nstreams(self->fd));
}

/* Stream, event and unknown handles are not owners: ENOENT, unharmed. */
TEST_F(att, owner_destroy_not_an_owner_enoent)
{
	uint32_t ev, h;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	ASSERT_EQ(0, att_get(self->fd, self->o, "k", &h, NULL));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, self->s));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, ev));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, 0));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, 0x7ffffff0U));
	EXPECT_EQ(2, nstreams(self->fd));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(h)));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, NULL));
	EXPECT_EQ(0, snpu_event_destroy(self->fd, ev));
}

/* An owner handle given to stream and event calls: ENOENT, unharmed. */
TEST_F(att, owner_handle_in_stream_and_event_calls_enoent)
{
	struct snpu_stream_query sq;
	struct snpu_event_query eq;
	uint32_t created;

	ASSERT_EQ(0, att_get(self->fd, self->o, "k", NULL, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, self->o, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, self->o, -1, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->fd, self->o, &sq));
	EXPECT_EQ(-ENOENT, snpu_stream_abort(self->fd, self->o));
	EXPECT_EQ(-ENOENT, snpu_stream_reset(self->fd, self->o));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->fd, self->o, 0));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_nop(self->o)));
	EXPECT_EQ(-ENOENT, snpu_event_query(self->fd, self->o, &eq));
	EXPECT_EQ(-ENOENT, snpu_event_sync(self->fd, self->o, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->fd, self->o));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd,
					snpu_t_record(self->s, self->o)));
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, self->o));
	/* The owner survived being named as the wrong type. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "k", NULL, &created));
	EXPECT_EQ(0U, created);
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
}

/*
 * Destroy with work queued on two attached streams, each held by its own
 * callback: stream A's callback is completed by a thread 300 ms after it
 * arrives, then A fills x and records ea; stream B waits for ea, then its
 * callback (completed 300 ms after it arrives), then B copies x to y and
 * spins. The destroy returns only after all of it ran, on both streams,
 * whatever their order. Then the owner and its streams are gone, the
 * events of their work stay readable and usable, and the stream count
 * dropped.
 */
TEST_F_TIMEOUT(att, owner_destroy_waits_for_queued_work, 60)
{
	static const uint64_t uds[2] = { 0xaaaa, 0xbbbb };
	struct snpu_ctx_query cq;
	struct snpu_event_query eq;
	struct answerer ans;
	uint32_t a, b, ea, eb;
	uint64_t x, y, z, t0, t1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "A", &a, NULL));
	ASSERT_EQ(0, att_get(self->fd, self->o, "B", &b, NULL));
	ASSERT_EQ(0, snpu_event_create(self->fd, &ea));
	ASSERT_EQ(0, snpu_event_create(self->fd, &eb));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &x));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &z));
	EXPECT_EQ(3, nstreams(self->fd));

	struct snpu_task ta[4] = {
		snpu_t_host_func(a, uds[0]),
		snpu_t_fill(a, x, N_ELEMS * 4, 0x600d, 4),
		snpu_t_spin(a, 20 * NS_PER_MS, 2),
		snpu_t_record(a, ea),
	};
	struct snpu_task tb[6] = {
		snpu_t_wait(b, ea),
		snpu_t_host_func(b, uds[1]),
		snpu_t_launch(b, SNPU_KERNEL_COPY, 3),
		snpu_t_spin(b, 30 * NS_PER_MS, 1),
		snpu_t_spin(b, 30 * NS_PER_MS, 2),
		snpu_t_record(b, eb),
	};
	snpu_t_buf(&tb[2], 0, y, N_ELEMS * 4);
	snpu_t_buf(&tb[2], 1, x, N_ELEMS * 4);
	ASSERT_EQ(0, snpu_submit(self->fd, ta, 4, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, tb, 6, NULL));

	t0 = snpu_now_ns();
	ASSERT_EQ(0, answerer_start(&ans, self->fd, 300, 2, uds));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	t1 = snpu_now_ns();
	pthread_join(ans.th, NULL);
	ASSERT_EQ(0, ans.ret);
	/* It returned after the last callback was completed, not before. */
	EXPECT_GT(t1, ans.t_done);
	EXPECT_GE(t1 - t0, (uint64_t)600 * NS_PER_MS);

	/* All the work ran. */
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, x, N_ELEMS, 0x600d));
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 0x600d));
	ASSERT_EQ(0, snpu_event_query(self->fd, eb, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, eq.state);
	EXPECT_EQ(0, eq.error);
	EXPECT_EQ(b, eq.stream);
	EXPECT_EQ(6U, eq.seq);
	EXPECT_LE(eq.time_ns, t1);
	ASSERT_EQ(0, snpu_event_query(self->fd, ea, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, eq.state);
	EXPECT_EQ(4U, eq.seq);

	/* The owner and its streams are gone. */
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "A", NULL, NULL));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, self->o));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, a, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, b, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_nop(a)));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->fd, b, 0));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(1U, cq.streams);
	EXPECT_EQ(0U, cq.tasks);
	EXPECT_EQ(2U, cq.events);

	/* A plain stream can still wait for the dead stream's event. */
	struct snpu_task tm[2] = {
		snpu_t_wait(self->s, eb),
		snpu_t_binop(self->s, SNPU_KERNEL_ADD_I32, z, x, y,
			     N_ELEMS * 4, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, tm, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, z, N_ELEMS, 0xc01a));
}

/* A stream made to wait for a plain stream's callback holds the destroy. */
TEST_F(att, owner_destroy_waits_for_cross_stream_wait)
{
	static const uint64_t ud = 0xcafe;
	struct answerer ans;
	uint32_t h, e;
	uint64_t y, t1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "waiter", &h, NULL));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	struct snpu_task tm[2] = {
		snpu_t_host_func(self->s, 0xcafe),
		snpu_t_record(self->s, e),
	};
	struct snpu_task th[2] = {
		snpu_t_wait(h, e),
		snpu_t_fill(h, y, N_ELEMS * 4, 0x77, 4),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, tm, 2, NULL));
	ASSERT_EQ(0, snpu_submit(self->fd, th, 2, NULL));
	ASSERT_EQ(0, answerer_start(&ans, self->fd, 200, 1, &ud));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	t1 = snpu_now_ns();
	pthread_join(ans.th, NULL);
	ASSERT_EQ(0, ans.ret);
	EXPECT_GT(t1, ans.t_done);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 0x77));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h, 0, NULL));
	EXPECT_EQ(1, nstreams(self->fd));
}

/*
 * A signal interrupts a destroy waiting for a callback (the handler has
 * no SA_RESTART): EINTR, and nothing was destroyed. The owner still
 * answers lookups (and creates new streams), its stream still takes and
 * runs work; once the callback is completed, the destroy succeeds.
 */
TEST_F_TIMEOUT(att, owner_destroy_interrupted_eintr, 60)
{
	struct snpu_stream_query q;
	uint32_t h, again, created, cookie, h2;
	uint64_t y;
	int32_t err = 1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "held", &h, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(h, 0x1e1e),
		snpu_t_fill(h, y, N_ELEMS * 4, 1, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, take_callback(self->fd, 0x1e1e, &cookie));

	ASSERT_EQ(0, alarm_handler(0));
	ASSERT_EQ(0, alarm_every_ms(50));
	EXPECT_EQ(-EINTR, owner_destroy(self->fd, self->o));
	ASSERT_EQ(0, alarm_every_ms(0));
	EXPECT_GE(alarms, 1);

	/* Everything is still there and usable. */
	EXPECT_EQ(2, nstreams(self->fd));
	ASSERT_EQ(0, att_get(self->fd, self->o, "held", &again, &created));
	EXPECT_EQ(h, again);
	EXPECT_EQ(0U, created);
	ASSERT_EQ(0, att_get(self->fd, self->o, "after", &h2, &created));
	EXPECT_EQ(1U, created);
	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(2U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_binop(h, SNPU_KERNEL_ADD_I32,
							 y, y, y, N_ELEMS * 4,
							 3)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(h2)));

	ASSERT_EQ(0, snpu_callback_done(self->fd, cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 2));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h, 0, NULL));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h2, 0, NULL));
	EXPECT_EQ(1, nstreams(self->fd));
}

/*
 * With SA_RESTART the interrupted destroy (a wait without timeout) is
 * restarted: signals keep arriving while it waits, and it returns 0 once
 * a thread (that does not take the signals) completes the callback.
 */
TEST_F_TIMEOUT(att, owner_destroy_restarted_with_sa_restart, 60)
{
	static const uint64_t ud = 0x2e2e;
	struct answerer ans;
	uint32_t h;
	uint64_t y, t0, t1;

	ASSERT_EQ(0, att_get(self->fd, self->o, "held", &h, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(h, 0x2e2e),
		snpu_t_fill(h, y, N_ELEMS * 4, 3, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, alarm_handler(SA_RESTART));
	t0 = snpu_now_ns();
	ASSERT_EQ(0, answerer_start(&ans, self->fd, 500, 1, &ud));
	ASSERT_EQ(0, alarm_every_ms(40));
	EXPECT_EQ(0, owner_destroy(self->fd, self->o));
	t1 = snpu_now_ns();
	ASSERT_EQ(0, alarm_every_ms(0));
	pthread_join(ans.th, NULL);
	ASSERT_EQ(0, ans.ret);
	EXPECT_GE(t1 - t0, (uint64_t)500 * NS_PER_MS);
	/* Signals did land during the destroy. */
	EXPECT_GE(alarms, 2);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 3));
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "held", NULL, NULL));
	EXPECT_EQ(1, nstreams(self->fd));
}

/*
 * While a destroy waits (in another thread), the owner refuses lookups,
 * old key or new, with ENOENT and creates nothing, and its streams refuse
 * new work; the destroy is still waiting through all of it.
 */
struct destroyer {
	pthread_t th;
	int fd;
	uint32_t owner;
	int ret;
	atomic_int done;
};

static void *destroy_fn(void *p)
{
	struct destroyer *d = p;

	d->ret = owner_destroy(d->fd, d->owner);
	atomic_store(&d->done, 1);
	return NULL;
}

TEST_F_TIMEOUT(att, get_during_destroy_enoent, 60)
{
	struct destroyer d = { .ret = 1 };
	uint32_t h, got, cookie;
	uint64_t y, deadline;
	int ret;

	ASSERT_EQ(0, att_get(self->fd, self->o, "busy", &h, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, N_ELEMS, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(h, 0xd1e),
		snpu_t_fill(h, y, N_ELEMS * 4, 0xd1e, 2),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, take_callback(self->fd, 0xd1e, &cookie));
	EXPECT_EQ(2, nstreams(self->fd));

	d.fd = self->fd;
	d.owner = self->o;
	atomic_init(&d.done, 0);
	ASSERT_EQ(0, pthread_create(&d.th, NULL, destroy_fn, &d));
	/* Until the destroy has started, the key answers as before. */
	deadline = snpu_now_ns() + 20 * NS_PER_SEC;
	do {
		got = 0;
		ret = att_get(self->fd, self->o, "busy", &got, NULL);
		if (ret)
			break;
		ASSERT_EQ(h, got);
		sleep_ms(1);
	} while (snpu_now_ns() < deadline);
	EXPECT_EQ(-ENOENT, ret);
	EXPECT_EQ(0, atomic_load(&d.done));
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "new", NULL, NULL));
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "busy", NULL, NULL));
	EXPECT_EQ(-ENOENT, snpu_submit1(self->fd, snpu_t_nop(h)));
	EXPECT_EQ(2, nstreams(self->fd));
	EXPECT_EQ(0, atomic_load(&d.done));

	ASSERT_EQ(0, snpu_callback_done(self->fd, cookie, 0));
	pthread_join(d.th, NULL);
	EXPECT_EQ(0, d.ret);
	EXPECT_EQ((size_t)N_ELEMS, dev_all(self->fd, y, N_ELEMS, 0xd1e));
	EXPECT_EQ(-ENOENT, att_get(self->fd, self->o, "busy", NULL, NULL));
	EXPECT_EQ(1, nstreams(self->fd));
}

/* A second destroy of an owner whose destroy waits: EBUSY, no effect. */
TEST_F_TIMEOUT(att, owner_destroy_concurrent_ebusy, 60)
{
	struct destroyer d = { .ret = 1 };
	uint32_t h, cookie;
	uint64_t deadline;
	int ret;

	ASSERT_EQ(0, att_get(self->fd, self->o, "busy", &h, NULL));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(h, 0xeb)));
	ASSERT_EQ(0, take_callback(self->fd, 0xeb, &cookie));
	d.fd = self->fd;
	d.owner = self->o;
	atomic_init(&d.done, 0);
	ASSERT_EQ(0, pthread_create(&d.th, NULL, destroy_fn, &d));
	/* Wait until the first destroy has marked the owner. */
	deadline = snpu_now_ns() + 20 * NS_PER_SEC;
	while (!(ret = att_get(self->fd, self->o, "busy", NULL, NULL)) &&
	       snpu_now_ns() < deadline)
		sleep_ms(1);
	ASSERT_EQ(-ENOENT, ret);
	EXPECT_EQ(-EBUSY, owner_destroy(self->fd, self->o));
	EXPECT_EQ(-EBUSY, owner_destroy(self->fd, self->o));
	EXPECT_EQ(0, atomic_load(&d.done));
	ASSERT_EQ(0, snpu_callback_done(self->fd, cookie, 0));
	pthread_join(d.th, NULL);
	EXPECT_EQ(0, d.ret);
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, self->o));
	EXPECT_EQ(1, nstreams(self->fd));
}

/*
 * While a destroy waits, the other stream commands still work on the
 * owner's streams: query, sync with a timeout, and an abort of a stream
 * whose work would never end (a callback nobody takes), which lets the
 * destroy finish without the callback ever being delivered.
 */
TEST_F_TIMEOUT(att, owner_destroy_unblocked_by_abort, 60)
{
	struct destroyer d = { .ret = 1 };
	struct snpu_stream_query q;
	struct snpu_callback cb;
	uint32_t h, idle;
	uint64_t y, deadline;
	int32_t err = 0;
	int ret;

	ASSERT_EQ(0, att_get(self->fd, self->o, "stuck", &h, NULL));
	ASSERT_EQ(0, att_get(self->fd, self->o, "idle", &idle, NULL));
	ASSERT_EQ(0, dev_buf(self->fd, 64, &y));
	struct snpu_task t[2] = {
		snpu_t_host_func(h, 0xab),
		snpu_t_fill(h, y, 256, 0xab, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	d.fd = self->fd;
	d.owner = self->o;
	atomic_init(&d.done, 0);
	ASSERT_EQ(0, pthread_create(&d.th, NULL, destroy_fn, &d));
	deadline = snpu_now_ns() + 20 * NS_PER_SEC;
	while (!(ret = att_get(self->fd, self->o, "stuck", NULL, NULL)) &&
	       snpu_now_ns() < deadline)
		sleep_ms(1);
	ASSERT_EQ(-ENOENT, ret);

	ASSERT_EQ(0, snpu_stream_query(self->fd, h, &q));
	EXPECT_EQ(2U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_sync(self->fd, h, 20 * NS_PER_MS,
					       NULL));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, idle, 0, NULL));
	EXPECT_EQ(0, atomic_load(&d.done));
	ASSERT_EQ(0, snpu_stream_abort(self->fd, h));
	pthread_join(d.th, NULL);
	EXPECT_EQ(0, d.ret);
	/* The callback was dropped, the fill cancelled, the streams gone. */
	EXPECT_EQ(-ETIMEDOUT, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(64U, dev_all(self->fd, y, 64, 0));
	EXPECT_EQ(-ENOENT, snpu_stream_sync(self->fd, h, 0, &err));
	EXPECT_EQ(1, nstreams(self->fd));
}

/* ---- files closed, processes killed ------------------------------------- */

/*
 * Two owners with three attached streams each, device and host memory,
 * work queued on all of them: spins, copies, a callback that is never
 * completed and a plain stream waiting for an attached one. The host
 * memory is mapped at *@map (HOST_MAP_PAGES pages): the mapping holds
 * the file open until it is unmapped.
 * Return: 0, or the step that failed.
 */
#define HOST_MAP_PAGES	4

static int load_owners(int fd, uint32_t *owners, void **map)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t s, h, e, hh;
	uint64_t mem;
	unsigned int i, k;
	char key[16];
	void *p = NULL;

	if (snpu_stream_create(fd, SNPU_PRIO_LOW, &s) ||
	    snpu_event_create(fd, &e) || snpu_alloc(fd, 1 << 20, 0, &mem) ||
	    snpu_host_map(fd, HOST_MAP_PAGES * page, &hh, &p))
		return 1;
	*map = p;
	for (i = 0; i < 2; i++) {
		if (owner_create(fd, (int32_t)i, &owners[i]))
			return 2;
		for (k = 0; k < 3; k++) {
			snprintf(key, sizeof(key), "o%u.s%u", i, k);
			if (att_get(fd, owners[i], key, &h, NULL))
				return 3;
			struct snpu_task t[6] = {
				snpu_t_spin(h, 5 * NS_PER_MS, 2),
				snpu_t_fill(h, mem, 1 << 20, i * 3 + k, 4),
				snpu_t_copy(h, SNPU_COPY_D2H, (uintptr_t)p,
					    mem, HOST_MAP_PAGES * page),
				snpu_t_spin(h, 50 * NS_PER_MS, 1),
				snpu_t_record(h, e),
				snpu_t_spin(h, 50 * NS_PER_MS, 1),
			};
			if (i == 1 && k == 2)
				t[3] = snpu_t_host_func(h, 0xdead);
			if (snpu_submit(fd, t, 6, NULL))
				return 4;
		}
	}
	struct snpu_task w[2] = {
		snpu_t_wait(s, e), snpu_t_fill(s, mem, 4096, 1, 1),
	};
	if (snpu_submit(fd, w, 2, NULL))
		return 5;
	return 0;
}

/* Device-wide: contexts back to @contexts0, no device memory used. */
static void check_device_clean(struct __test_metadata *_metadata,
			       long long contexts0)
{
	long long ctxs = -1, used = -1;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs));
	EXPECT_EQ(contexts0, ctxs);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(0, used);
}

/*
 * The file is closed with all that queued; the context goes when its
 * host memory is unmapped too (the mapping holds the file), and takes
 * everything with it.
 */
TEST_F_TIMEOUT(att, close_with_owners_and_queued_work, 60)
{
	long page = sysconf(_SC_PAGESIZE);
	struct snpu_ctx_query cq;
	long long c0 = -1, used = -1, ctxs = -1;
	uint32_t owners[2], h, created;
	void *map = NULL;
	uint64_t y;
	int fd2;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, load_owners(fd2, owners, &map));
	ASSERT_EQ(0, snpu_ctx_query(fd2, &cq));
	EXPECT_EQ(7U, cq.streams);
	EXPECT_GT(cq.tasks, 0U);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(1 << 20, used);
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs));
	EXPECT_EQ(c0 + 1, ctxs);
	close(fd2);
	/* Still mapped: the context lives on. */
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs));
	EXPECT_EQ(c0 + 1, ctxs);
	ASSERT_EQ(0, munmap(map, HOST_MAP_PAGES * page));
	check_device_clean(_metadata, c0);

	/* This file is unaffected and the device still works. */
	ASSERT_EQ(0, att_get(self->fd, self->o, "after", &h, &created));
	EXPECT_EQ(1U, created);
	ASSERT_EQ(0, dev_buf(self->fd, 64, &y));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(h, y, 256, 0xf00, 2)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, h, LONG_TIMEOUT, NULL));
	EXPECT_EQ(64U, dev_all(self->fd, y, 64, 0xf00));
}

/* The same from a process killed while it waits in OWNER_DESTROY. */
TEST_F_TIMEOUT(att, killed_during_owner_destroy, 60)
{
	long long c0 = -1;
	int pfd[2], st;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		uint32_t owners[2];
		int fd = snpu_open_dev();
		void *map;

		close(pfd[0]);
		if (fd < 0 || load_owners(fd, owners, &map))
			_exit(1);
		c = 'r';
		if (write(pfd[1], &c, 1) != 1)
			_exit(2);
		/* Blocks: owner 1 has a callback nobody completes. */
		owner_destroy(fd, owners[1]);
		_exit(3);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1)) TH_LOG("the child failed early");
	close(pfd[0]);
	sleep_ms(150);
	/* Still blocked in the destroy. */
	ASSERT_EQ(0, waitpid(pid, &st, WNOHANG));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		TH_LOG("child status 0x%x", st);
	check_device_clean(_metadata, c0);
}

TEST_HARNESS_MAIN
