// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the owner cache of attached streams (lib/owner.c)
 * and of the operator context (lib/op.c), through the library's internal
 * API: snpu_owner_init() with a fake `get` in place of the driver. The
 * fake counts its calls per key and hands out handles, so the tests see
 * exactly when the cache asks the driver. Built for the host under
 * ASan/UBSan.
 *
 * Allocations are counted with the sanitizer allocator's malloc hook
 * (__sanitizer_install_malloc_and_free_hooks()): ASan owns malloc, calloc
 * and realloc, and calls the hook for each of them, from any code of the
 * process. Without ASan the allocation tests are skipped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "snpu.h"
#include "../internal.h"

#include "alloc_count.h"

#include "kselftest_harness.h"

#define KEY_MAX		SNPU_ATTACHED_KEY_MAX
#define FAKE_KEYS	256U
#define FIRST_HANDLE	1000U

static unsigned long alloc_count(void)
{
	return atomic_load(&allocs);
}

/* ---- the fake driver ---------------------------------------------- */

struct fake_key {
	char key[KEY_MAX];
	uint32_t stream;
	int calls;
};

/*
 * The test double behind a miss. @fail, when not 0, is returned by every
 * call (and nothing is handed out) until the test clears it. @delay_ns
 * makes each call sleep, so that other threads pile up behind the miss.
 */
struct fake {
	struct snpu_owner owner;
	atomic_int calls;
	atomic_uint inflight;
	atomic_bool overlap;	/* two calls ran at once */
	atomic_bool bad_len;	/* len was not the key's length */
	int fail;
	long delay_ns;
	pthread_mutex_t lock;	/* @nkeys, @keys, @next */
	int nkeys;
	uint32_t next;
	struct fake_key keys[FAKE_KEYS];
};

static int fake_get(struct snpu_owner *owner, const char *key, size_t len,
		    uint32_t *stream)
{
	struct fake *f = (struct fake *)((char *)owner -
					 offsetof(struct fake, owner));
	struct fake_key *k = NULL;
	int i, ret = 0;

	if (atomic_fetch_add(&f->inflight, 1))
		atomic_store(&f->overlap, true);
	atomic_fetch_add(&f->calls, 1);
	if (len == 0 || len >= KEY_MAX || strnlen(key, KEY_MAX) != len)
		atomic_store(&f->bad_len, true);
	if (f->delay_ns) {
		struct timespec ts = { 0, f->delay_ns };

		nanosleep(&ts, NULL);
	}

	pthread_mutex_lock(&f->lock);
	if (f->fail) {
		ret = f->fail;
		goto out;
	}
	for (i = 0; i < f->nkeys; i++)
		if (!strcmp(f->keys[i].key, key))
			k = &f->keys[i];
	if (!k) {
		if (f->nkeys == FAKE_KEYS) {
			ret = -ENOSPC;
			goto out;
		}
		k = &f->keys[f->nkeys++];
		memcpy(k->key, key, len);
		k->key[len] = 0;
	}
	/* A new handle each call: a second call per key shows up. */
	k->stream = f->next++;
	k->calls++;
	*stream = k->stream;
out:
	pthread_mutex_unlock(&f->lock);
	atomic_fetch_sub(&f->inflight, 1);
	return ret;
}

static int fake_init(struct fake *f, struct snpu_device *dev)
{
	memset(f, 0, sizeof(*f));
	f->next = FIRST_HANDLE;
	pthread_mutex_init(&f->lock, NULL);
	return snpu_owner_init(&f->owner, dev, fake_get);
}

static void fake_fini(struct fake *f)
{
	snpu_owner_fini(&f->owner);
	pthread_mutex_destroy(&f->lock);
}

/* The fake's record of @key, or NULL if the driver never saw it. */
static struct fake_key *fake_key(struct fake *f, const char *key)
{
	int i;

	for (i = 0; i < f->nkeys; i++)
		if (!strcmp(f->keys[i].key, key))
			return &f->keys[i];
	return NULL;
}

/* Is anything cached? */
static bool owner_empty(struct snpu_owner *owner)
{
	unsigned int b;

	if (owner->all)
		return false;
	for (b = 0; b < SNPU_OWNER_BUCKETS; b++)
		if (atomic_load(&owner->bucket[b]))
			return false;
	return true;
}

FIXTURE(owner)
{
	struct fake f;
};

FIXTURE_SETUP(owner)
{
	ASSERT_EQ(0, fake_init(&self->f, NULL));
}

FIXTURE_TEARDOWN(owner)
{
	fake_fini(&self->f);
}

/* ---- one key ------------------------------------------------------ */

TEST_F(owner, same_key_same_entry)
{
	struct snpu_attached *a, *b;
	uint32_t s1, s2;

	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "conv", &a));
	ASSERT_NE(NULL, a);
	EXPECT_EQ(1, atomic_load(&self->f.calls));
	EXPECT_EQ(FIRST_HANDLE, a->stream);
	EXPECT_EQ(4U, a->len);
	EXPECT_STREQ("conv", a->key);

	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "conv", &b));
	EXPECT_EQ(a, b);
	ASSERT_EQ(0, snpu_owner_attached_stream(&self->f.owner, "conv", &s1));
	ASSERT_EQ(0, snpu_owner_attached_stream(&self->f.owner, "conv", &s2));
	EXPECT_EQ(a->stream, s1);
	EXPECT_EQ(a->stream, s2);
	EXPECT_EQ(1, atomic_load(&self->f.calls));
	EXPECT_FALSE(atomic_load(&self->f.bad_len));
}

/* The key's bytes are the caller's: a lookup keeps no pointer to them. */
TEST_F(owner, key_copied)
{
	struct snpu_attached *a, *b;
	char key[KEY_MAX] = "temporary";

	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, key, &a));
	memset(key, 'x', 9);
	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "temporary", &b));
	EXPECT_EQ(a, b);
	EXPECT_EQ(1, atomic_load(&self->f.calls));
}

/* ---- different keys ----------------------------------------------- */

/* Check that @n keys got @n different streams, one driver call each. */
static void check_distinct(struct __test_metadata *_metadata, struct fake *f,
			   char (*keys)[KEY_MAX], unsigned int n)
{
	uint32_t stream[FAKE_KEYS], again;
	unsigned int i, j;

	ASSERT_LE(n, FAKE_KEYS);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, snpu_owner_attached_stream(&f->owner, keys[i],
							&stream[i]));
	ASSERT_EQ((int)n, atomic_load(&f->calls));
	for (i = 0; i < n; i++) {
		struct fake_key *k = fake_key(f, keys[i]);

		ASSERT_NE(NULL, k);
		EXPECT_EQ(1, k->calls);
		EXPECT_EQ(k->stream, stream[i]);
		for (j = 0; j < i; j++)
			EXPECT_NE(stream[j], stream[i]);
	}
	/* All hits now, in the other order. */
	for (i = n; i-- > 0;) {
		ASSERT_EQ(0, snpu_owner_attached_stream(&f->owner, keys[i],
							&again));
		EXPECT_EQ(stream[i], again);
	}
	EXPECT_EQ((int)n, atomic_load(&f->calls));
	EXPECT_FALSE(atomic_load(&f->bad_len));
}

/* "k", "kk", ... 63 k's: each a prefix of the next. */
TEST_F(owner, lengths_1_to_63)
{
	char keys[KEY_MAX - 1][KEY_MAX];
	unsigned int i;

	memset(keys, 0, sizeof(keys));
	for (i = 0; i < KEY_MAX - 1; i++)
		memset(keys[i], 'k', i + 1);
	check_distinct(_metadata, &self->f, keys, KEY_MAX - 1);
}

/*
 * Same length, same first 8 and last 8 bytes: the bucket cannot tell them
 * apart, only the compare of the whole key can.
 */
TEST_F(owner, same_head_tail_len)
{
	static const unsigned int lens[] = { 17, 24, 40, 63 };
	char keys[4 * 26][KEY_MAX];
	unsigned int l, c, n = 0;

	memset(keys, 0, sizeof(keys));
	for (l = 0; l < 4; l++) {
		for (c = 0; c < 26; c++, n++) {
			memset(keys[n], 'm', lens[l]);
			memcpy(keys[n], "HEADHEAD", 8);
			memcpy(keys[n] + lens[l] - 8, "TAILTAIL", 8);
			/* One byte in the middle differs. */
			keys[n][8 + (c % (lens[l] - 16))] = 'a' + c;
		}
	}
	check_distinct(_metadata, &self->f, keys, n);
}

/* Keys that differ in one byte only, at every position of a 40-byte key. */
TEST_F(owner, one_byte_differs)
{
	char keys[40][KEY_MAX];
	unsigned int i;

	memset(keys, 0, sizeof(keys));
	for (i = 0; i < 40; i++) {
		memset(keys[i], 'q', 40);
		keys[i][i] = 'Q';
	}
	check_distinct(_metadata, &self->f, keys, 40);
}

/* Short keys (< 8 bytes) of every length, and some that differ in case. */
TEST_F(owner, short_keys)
{
	static const char *const text[] = {
		"a", "b", "A", "ab", "ba", "abc", "abd", "abcd", "abce",
		"abcde", "abcdef", "abcdefg", "abcdefh", "abcdefgh",
		"abcdefgi", "Abcdefgh",
	};
	char keys[16][KEY_MAX];
	unsigned int i;

	memset(keys, 0, sizeof(keys));
	for (i = 0; i < 16; i++)
		strcpy(keys[i], text[i]);
	check_distinct(_metadata, &self->f, keys, 16);
}

/* Enough keys to chain in every bucket. */
TEST_F(owner, many_keys)
{
	char keys[FAKE_KEYS][KEY_MAX];
	unsigned int i;

	memset(keys, 0, sizeof(keys));
	for (i = 0; i < FAKE_KEYS; i++)
		snprintf(keys[i], KEY_MAX, "layer.%u.attn.stream", i);
	check_distinct(_metadata, &self->f, keys, FAKE_KEYS);
}

/* Two owners never share an entry, even for the same key. */
TEST(two_owners)
{
	struct snpu_attached *a, *b, *a2;
	struct fake *f1, *f2;

	f1 = calloc(1, sizeof(*f1));
	f2 = calloc(1, sizeof(*f2));
	ASSERT_NE(NULL, f1);
	ASSERT_NE(NULL, f2);
	ASSERT_EQ(0, fake_init(f1, NULL));
	ASSERT_EQ(0, fake_init(f2, NULL));
	f2->next = 2 * FIRST_HANDLE;

	ASSERT_EQ(0, snpu_owner_lookup(&f1->owner, "shared", &a));
	ASSERT_EQ(0, snpu_owner_lookup(&f2->owner, "shared", &b));
	EXPECT_NE(a, b);
	EXPECT_NE(a->stream, b->stream);
	ASSERT_EQ(0, snpu_owner_lookup(&f1->owner, "shared", &a2));
	EXPECT_EQ(a, a2);
	EXPECT_EQ(1, atomic_load(&f1->calls));
	EXPECT_EQ(1, atomic_load(&f2->calls));

	fake_fini(f1);
	fake_fini(f2);
	free(f1);
	free(f2);
}

/* ---- bad keys and arguments --------------------------------------- */

TEST_F(owner, bad_keys)
{
	struct snpu_attached *a = (struct snpu_attached *)&a;
	char unterminated[KEY_MAX];
	uint32_t stream = 7;

	memset(unterminated, 'u', sizeof(unterminated));
	EXPECT_EQ(-EINVAL, snpu_owner_lookup(&self->f.owner, NULL, &a));
	EXPECT_EQ(-EINVAL, snpu_owner_lookup(&self->f.owner, "", &a));
	EXPECT_EQ(-EINVAL, snpu_owner_lookup(&self->f.owner, unterminated, &a));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(&self->f.owner, NULL,
						      &stream));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(&self->f.owner, "",
						      &stream));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(&self->f.owner,
						      unterminated, &stream));
	EXPECT_EQ(7U, stream);
	EXPECT_EQ(0, atomic_load(&self->f.calls));
	EXPECT_TRUE(owner_empty(&self->f.owner));
}

TEST_F(owner, bad_arguments)
{
	struct snpu_attached *a;
	uint32_t stream;

	EXPECT_EQ(-EINVAL, snpu_owner_lookup(NULL, "k", &a));
	EXPECT_EQ(-EINVAL, snpu_owner_lookup(&self->f.owner, "k", NULL));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(NULL, "k", &stream));
	EXPECT_EQ(-EINVAL, snpu_owner_attached_stream(&self->f.owner, "k",
						      NULL));
	EXPECT_EQ(0, atomic_load(&self->f.calls));
	EXPECT_EQ(0U, snpu_owner_handle(NULL));
}

/* 63 bytes and the NUL fill the 64-byte field exactly: accepted. */
TEST_F(owner, longest_key)
{
	struct snpu_attached *a;
	char key[KEY_MAX];

	memset(key, 'L', KEY_MAX - 1);
	key[KEY_MAX - 1] = 0;
	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, key, &a));
	EXPECT_EQ(KEY_MAX - 1U, a->len);
	EXPECT_EQ(0, memcmp(a->key, key, KEY_MAX));
	EXPECT_EQ(1, atomic_load(&self->f.calls));
}

/* ---- a failing driver --------------------------------------------- */

TEST_F(owner, failed_get_not_cached)
{
	struct snpu_attached *a = (struct snpu_attached *)&a;
	uint32_t stream = 7;

	self->f.fail = -ENOSPC;
	EXPECT_EQ(-ENOSPC, snpu_owner_lookup(&self->f.owner, "full", &a));
	EXPECT_NULL(a);
	EXPECT_EQ(1, atomic_load(&self->f.calls));
	EXPECT_TRUE(owner_empty(&self->f.owner));

	/* Each call asks again. */
	EXPECT_EQ(-ENOSPC, snpu_owner_attached_stream(&self->f.owner, "full",
						      &stream));
	EXPECT_EQ(7U, stream);
	EXPECT_EQ(2, atomic_load(&self->f.calls));
	EXPECT_TRUE(owner_empty(&self->f.owner));

	self->f.fail = 0;
	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "full", &a));
	ASSERT_NE(NULL, a);
	EXPECT_EQ(3, atomic_load(&self->f.calls));
	EXPECT_EQ(1, fake_key(&self->f, "full")->calls);
	EXPECT_EQ(a->stream, fake_key(&self->f, "full")->stream);

	/* Cached now, even if the driver would fail. */
	self->f.fail = -EIO;
	ASSERT_EQ(0, snpu_owner_attached_stream(&self->f.owner, "full",
						&stream));
	EXPECT_EQ(a->stream, stream);
	EXPECT_EQ(3, atomic_load(&self->f.calls));
}

/* A failure for one key leaves the other keys of the bucket alone. */
TEST_F(owner, failed_get_keeps_others)
{
	struct snpu_attached *a, *b;
	uint32_t stream;

	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "kept", &a));
	self->f.fail = -ENOMEM;
	EXPECT_EQ(-ENOMEM, snpu_owner_attached_stream(&self->f.owner, "lost",
						      &stream));
	ASSERT_EQ(0, snpu_owner_lookup(&self->f.owner, "kept", &b));
	EXPECT_EQ(a, b);
	EXPECT_EQ(a, self->f.owner.all);
	EXPECT_NULL(a->all);
	EXPECT_EQ(2, atomic_load(&self->f.calls));
}

/* ---- threads ------------------------------------------------------ */

#define THREADS		4
#define THREAD_KEYS	96
#define THREAD_LOOKUPS	100000

struct thread_arg {
	struct fake *f;
	pthread_barrier_t *start;
	char (*keys)[KEY_MAX];
	unsigned int id;
	int err;
	uint32_t stream[THREAD_KEYS];
	bool seen[THREAD_KEYS];
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;
	unsigned int i, k;
	uint32_t stream;
	int ret;

	pthread_barrier_wait(t->start);
	for (i = 0; i < THREAD_LOOKUPS; i++) {
		/* The threads walk the keys almost in step: misses collide. */
		k = (i + t->id) % THREAD_KEYS;
		ret = snpu_owner_attached_stream(&t->f->owner, t->keys[k],
						 &stream);
		if (ret) {
			t->err = ret;
			break;
		}
		if (!t->seen[k]) {
			t->seen[k] = true;
			t->stream[k] = stream;
		} else if (t->stream[k] != stream) {
			t->err = -ESTALE;
			break;
		}
	}
	return NULL;
}

TEST_F(owner, threads_one_call_per_key)
{
	static char keys[THREAD_KEYS][KEY_MAX];
	static struct thread_arg arg[THREADS];
	pthread_t tid[THREADS];
	pthread_barrier_t start;
	unsigned int t, k;

	/* Short, long and same-head-tail keys, in every bucket. */
	memset(keys, 0, sizeof(keys));
	for (k = 0; k < THREAD_KEYS; k++) {
		if (k % 3 == 0)
			snprintf(keys[k], KEY_MAX, "s%u", k);
		else if (k % 3 == 1)
			snprintf(keys[k], KEY_MAX,
				 "HEADHEAD.%03u.middle.of.a.long.key.TAILTAIL", k);
		else
			snprintf(keys[k], KEY_MAX, "op/%u/stream", k);
	}
	/* Each miss takes a while, so that other threads wait on it. */
	self->f.delay_ns = 20000;
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, THREADS));
	for (t = 0; t < THREADS; t++) {
		memset(&arg[t], 0, sizeof(arg[t]));
		arg[t].f = &self->f;
		arg[t].start = &start;
		arg[t].keys = keys;
		arg[t].id = t;
		ASSERT_EQ(0, pthread_create(&tid[t], NULL, thread_main,
					    &arg[t]));
	}
	for (t = 0; t < THREADS; t++)
		ASSERT_EQ(0, pthread_join(tid[t], NULL));
	pthread_barrier_destroy(&start);

	EXPECT_EQ(THREAD_KEYS, atomic_load(&self->f.calls));
	EXPECT_EQ(THREAD_KEYS, self->f.nkeys);
	EXPECT_FALSE(atomic_load(&self->f.overlap));
	EXPECT_FALSE(atomic_load(&self->f.bad_len));
	for (k = 0; k < THREAD_KEYS; k++) {
		struct fake_key *fk = fake_key(&self->f, keys[k]);

		ASSERT_NE(NULL, fk);
		EXPECT_EQ(1, fk->calls);
		for (t = 0; t < THREADS; t++) {
			ASSERT_EQ(0, arg[t].err);
			ASSERT_TRUE(arg[t].seen[k]);
			EXPECT_EQ(fk->stream, arg[t].stream[k]);
		}
	}
}

/* ---- allocations -------------------------------------------------- */

#define HITS	10000

struct hit_arg {
	char (*keys)[KEY_MAX];
	int nkeys;
	unsigned long allocs;
	uint32_t sum;
	int err;
};

static int hit_op(struct snpu_op_ctx *ctx, void *p)
{
	struct hit_arg *h = p;
	unsigned long before = alloc_count();
	uint32_t stream;
	unsigned int i;
	int ret;

	for (i = 0; i < HITS; i++) {
		ret = snpu_op_ctx_request_attached_stream(ctx,
						h->keys[i % h->nkeys], &stream);
		if (ret)
			return ret;
		h->sum += stream;
	}
	h->allocs = alloc_count() - before;
	return 0;
}

TEST(hits_allocate_nothing)
{
	struct snpu_device dev = { .fd = -1 };
	char keys[8][KEY_MAX];
	struct hit_arg h = { .keys = keys, .nkeys = 8 };
	struct snpu_attached *a;
	unsigned long before;
	struct fake *f;
	uint32_t stream;
	unsigned int i;

	if (!alloc_counter_on())
		SKIP(return, "no sanitizer allocator hooks (not built with ASan)");
	f = calloc(1, sizeof(*f));
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, fake_init(f, &dev));
	memset(keys, 0, sizeof(keys));
	for (i = 0; i < 8; i++)
		snprintf(keys[i], KEY_MAX, "%.*s", 4 + 7 * i,
			 "hit.key.of.some.length.with.enough.bytes.for.sixty.three.");

	/* The counter works: a miss allocates its entry. */
	before = alloc_count();
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, snpu_owner_lookup(&f->owner, keys[i], &a));
	EXPECT_LE(8UL, alloc_count() - before);

	before = alloc_count();
	for (i = 0; i < HITS; i++)
		ASSERT_EQ(0, snpu_owner_lookup(&f->owner, keys[i % 8], &a));
	EXPECT_EQ(0UL, alloc_count() - before);

	before = alloc_count();
	for (i = 0; i < HITS; i++)
		ASSERT_EQ(0, snpu_owner_attached_stream(&f->owner, keys[i % 8],
							&stream));
	EXPECT_EQ(0UL, alloc_count() - before);

	before = alloc_count();
	ASSERT_EQ(0, snpu_op_run(&f->owner, 1, "hits", hit_op, &h));
	EXPECT_EQ(0UL, alloc_count() - before);
	EXPECT_EQ(0UL, h.allocs);
	EXPECT_EQ(8, atomic_load(&f->calls));

	fake_fini(f);
	free(f);
}

/* ---- the operator context ----------------------------------------- */

struct op_arg {
	struct snpu_device *dev;
	uint32_t stream;
	const char *key;
	uint32_t attached;
	int calls;
	int ret;
};

static int op_check(struct snpu_op_ctx *ctx, void *p)
{
	struct op_arg *o = p;
	int ret;

	o->calls++;
	if (snpu_op_ctx_stream(ctx) != o->stream ||
	    snpu_op_ctx_device(ctx) != o->dev)
		return -EFAULT;
	if (o->key) {
		ret = snpu_op_ctx_request_attached_stream(ctx, o->key,
							  &o->attached);
		if (ret)
			return ret;
	}
	return o->ret;
}

TEST_F(owner, op_run)
{
	struct snpu_device dev = { .fd = -1 };
	struct op_arg o = { .dev = &dev, .stream = 5, .key = "side" };
	uint32_t stream;

	self->f.owner.dev = &dev;
	ASSERT_EQ(0, snpu_op_run(&self->f.owner, 5, "op", op_check, &o));
	EXPECT_EQ(1, o.calls);
	ASSERT_EQ(0, snpu_owner_attached_stream(&self->f.owner, "side",
						&stream));
	EXPECT_EQ(stream, o.attached);
	EXPECT_EQ(1, atomic_load(&self->f.calls));

	/* The operator's error comes back as it is; no name is fine. */
	o.ret = -EIO;
	EXPECT_EQ(-EIO, snpu_op_run(&self->f.owner, 5, NULL, op_check, &o));
	EXPECT_EQ(2, o.calls);
	EXPECT_EQ(stream, o.attached);
	EXPECT_EQ(1, atomic_load(&self->f.calls));
}

TEST_F(owner, op_run_errors)
{
	struct op_arg o = { .key = "" };

	EXPECT_EQ(-EINVAL, snpu_op_run(NULL, 1, "op", op_check, &o));
	EXPECT_EQ(-EINVAL, snpu_op_run(&self->f.owner, 1, "op", NULL, &o));
	EXPECT_EQ(0, o.calls);

	/* A bad key inside the operator: -EINVAL, no driver call. */
	o.stream = 1;
	EXPECT_EQ(-EINVAL, snpu_op_run(&self->f.owner, 1, "op", op_check, &o));
	EXPECT_EQ(1, o.calls);
	EXPECT_EQ(0, atomic_load(&self->f.calls));

	/* A failing driver inside the operator. */
	o.key = "k";
	self->f.fail = -ENOSPC;
	EXPECT_EQ(-ENOSPC, snpu_op_run(&self->f.owner, 1, "op", op_check, &o));
	EXPECT_EQ(1, atomic_load(&self->f.calls));
	EXPECT_TRUE(owner_empty(&self->f.owner));

	EXPECT_EQ(0U, snpu_op_ctx_stream(NULL));
	EXPECT_NULL(snpu_op_ctx_device(NULL));
	EXPECT_EQ(-EINVAL, snpu_op_ctx_request_attached_stream(NULL, "k",
								&o.attached));
}

static int op_null_stream(struct snpu_op_ctx *ctx, void *p)
{
	return snpu_op_ctx_request_attached_stream(ctx, "k", NULL);
}

TEST_F(owner, op_request_null_stream)
{
	EXPECT_EQ(-EINVAL, snpu_op_run(&self->f.owner, 1, "op",
				       op_null_stream, NULL));
	EXPECT_EQ(0, atomic_load(&self->f.calls));
}

/*
 * An owner without a device (dev NULL): the operator context and the
 * cache work on the path where the operator fails, since the join check
 * is then not looked at.
 */
TEST_F(owner, op_run_no_device_failing_op)
{
	struct op_arg o = { .dev = NULL, .stream = 3, .key = "nodev",
			    .ret = -EAGAIN };

	ASSERT_NULL(self->f.owner.dev);
	EXPECT_EQ(-EAGAIN, snpu_op_run(&self->f.owner, 3, "op", op_check, &o));
	EXPECT_EQ(1, o.calls);
	EXPECT_EQ(FIRST_HANDLE, o.attached);
}

/* With the join check on, the context remembers each stream once. */
struct track_arg {
	unsigned int ntracked[3];
};

static int op_track(struct snpu_op_ctx *ctx, void *p)
{
	struct track_arg *t = p;
	char key[KEY_MAX];
	uint32_t stream;
	unsigned int i;

	for (i = 0; i < 4; i++)
		if (snpu_op_ctx_request_attached_stream(ctx, "same", &stream))
			return -EFAULT;
	t->ntracked[0] = ctx->ntracked;
	for (i = 0; i < SNPU_OP_TRACKED; i++) {
		snprintf(key, sizeof(key), "t%u", i % (SNPU_OP_TRACKED - 1));
		if (snpu_op_ctx_request_attached_stream(ctx, key, &stream))
			return -EFAULT;
	}
	t->ntracked[1] = ctx->ntracked;
	/* Past SNPU_OP_TRACKED: still served, not tracked (a warning). */
	if (snpu_op_ctx_request_attached_stream(ctx, "one.too.many", &stream))
		return -EFAULT;
	t->ntracked[2] = ctx->ntracked;
	/* Not 0: snpu_op_run() skips the check, which needs a driver. */
	return -ECHILD;
}

TEST_F(owner, op_tracks_streams_once)
{
	struct snpu_device dev = { .fd = -1 };
	struct track_arg t = { 0 };
	int dummy;

	/*
	 * Any non-NULL table turns the check on; op_track fails, so that
	 * snpu_op_run() never reads it.
	 */
	dev.joins = (struct snpu_joins *)&dummy;
	self->f.owner.dev = &dev;
	EXPECT_EQ(-ECHILD, snpu_op_run(&self->f.owner, 1, "track", op_track,
				       &t));
	EXPECT_EQ(1U, t.ntracked[0]);
	EXPECT_EQ(SNPU_OP_TRACKED + 0U, t.ntracked[1]);
	EXPECT_EQ(SNPU_OP_TRACKED + 0U, t.ntracked[2]);
	EXPECT_EQ(SNPU_OP_TRACKED + 1, atomic_load(&self->f.calls));
}

TEST_HARNESS_MAIN
