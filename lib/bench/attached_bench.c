// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * attached_bench: the hit path of the attached-stream cache, natively,
 * beside baselines measured in the same run.
 *
 *   attached_bench [-r REPS] [-n LOOKUPS] [-w]
 *
 * For keys of 4, 16 and 40 bytes and 1, 8 and 64 keys cached, it times
 * LOOKUPS hits (1000000) REPS times (21) and prints the median ns per
 * lookup of:
 *
 *   floor    the loop alone: pick the next key, keep a result
 *   call     a call of an empty function that is not inlined
 *   strcmp   a linear search with strcmp() in a plain array of the keys
 *   owner    snpu_owner_attached_stream()
 *   request  snpu_op_ctx_request_attached_stream() inside snpu_op_run()
 *   checked  the same with the join check on (SNPU_OPEN_CHECK_JOINS),
 *            which also remembers the stream for the check; only for up
 *            to SNPU_OP_TRACKED keys, since past that every request of
 *            an untracked key prints a warning
 *
 * A row's keys are a dotted name cut to the length, with the key's index
 * in two digits at the end ("end", as in model.layer.at07), at the start
 * ("start", as in 07del.layer.at) or, for 40 bytes, in the middle
 * ("middle": same length and same first and last 8 bytes). "chain" is
 * the longest bucket chain the row's keys make in the cache.
 *
 * Time is the CPU time of the thread (CLOCK_THREAD_CPUTIME_ID), so that
 * the time the thread spends preempted by other processes does not count;
 * -w takes the wall clock (CLOCK_MONOTONIC) instead.
 *
 * The library is compiled into this program (it needs the internal API to
 * give the owner a fake driver), with -O2 and no sanitizers. A malloc,
 * calloc and realloc of this program count every heap allocation; the
 * hit loops must make none. The program exits 1 if they do, and 2 if the
 * counter did not see the allocations of the misses (it would prove
 * nothing). Timing never changes the exit status.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"
#include "../internal.h"
#include "../tools/bench.h"

#define KEY_MAX		SNPU_ATTACHED_KEY_MAX
#define MAX_KEYS	64
#define MAX_REPS	1001

/* ---- allocation counter ------------------------------------------- */

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static atomic_ulong allocs;

void *malloc(size_t size)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
	return __libc_realloc(p, size);
}

static unsigned long alloc_count(void)
{
	return atomic_load_explicit(&allocs, memory_order_relaxed);
}

/* ---- timing ------------------------------------------------------- */

static clockid_t bench_clock = CLOCK_THREAD_CPUTIME_ID;

static uint64_t clock_ns(void)
{
	return bench_clock_ns(bench_clock);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "attached_bench: %s: %s\n", what, strerror(-err));
	exit(3);
}

/* ---- what is measured --------------------------------------------- */

/* One row: the keys the loops look up (the caller's own strings). */
struct row {
	unsigned int len;
	unsigned int nkeys;
	const char *where;
	const char *keys[MAX_KEYS];
	char buf[MAX_KEYS][KEY_MAX];
};

/* The plain array of the strcmp baseline, with its own copies. */
struct plain {
	const char *key;
	uint32_t stream;
};

static volatile uint32_t sink;
static uint32_t next_handle = 1;

static int fake_get(struct snpu_owner *owner, const char *key, size_t len,
		    uint32_t *stream)
{
	*stream = next_handle++;
	return 0;
}

__attribute__((noinline, noipa))
static int empty_call(void *owner, const char *key, uint32_t *stream)
{
	*stream = 1;
	return 0;
}

__attribute__((noinline, noipa))
static int plain_find(const struct plain *p, unsigned int n, const char *key,
		      uint32_t *stream)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!strcmp(p[i].key, key)) {
			*stream = p[i].stream;
			return 0;
		}
	}
	return -ENOENT;
}

enum method { FLOOR, CALL, STRCMP, OWNER, REQUEST, CHECKED, NMETHODS };

static const char *const method_name[NMETHODS] = {
	"floor", "call", "strcmp", "owner", "request", "checked",
};

struct loop {
	const struct row *row;
	struct snpu_owner *owner;
	const struct plain *plain;
	unsigned int lookups;
};

/* ns for @l->lookups lookups with @m; @ctx for REQUEST and CHECKED. */
__attribute__((noinline))
static uint64_t run_loop(const struct loop *l, enum method m,
			 struct snpu_op_ctx *ctx)
{
	const char *const *keys = l->row->keys;
	unsigned int mask = l->row->nkeys - 1, n = l->lookups, i;
	uint32_t stream = 0, sum = 0;
	uint64_t t0, t1;
	int ret = 0;

	t0 = clock_ns();
	switch (m) {
	case FLOOR:
		for (i = 0; i < n; i++) {
			const char *key = keys[i & mask];

			/* Keep the load; the compiler cannot drop the loop. */
			__asm__ volatile("" : : "r"(key) : "memory");
			sum += i;
		}
		break;
	case CALL:
		for (i = 0; i < n && !ret; i++) {
			ret = empty_call(l->owner, keys[i & mask], &stream);
			sum += stream;
		}
		break;
	case STRCMP:
		for (i = 0; i < n && !ret; i++) {
			ret = plain_find(l->plain, l->row->nkeys, keys[i & mask],
					 &stream);
			sum += stream;
		}
		break;
	case OWNER:
		for (i = 0; i < n && !ret; i++) {
			ret = snpu_owner_attached_stream(l->owner,
							 keys[i & mask],
							 &stream);
			sum += stream;
		}
		break;
	case REQUEST:
	case CHECKED:
		for (i = 0; i < n && !ret; i++) {
			ret = snpu_op_ctx_request_attached_stream(ctx,
							keys[i & mask],
							&stream);
			sum += stream;
		}
		break;
	default:
		break;
	}
	t1 = clock_ns();
	if (ret)
		die(method_name[m], ret);
	sink += sum;
	return t1 - t0;
}

struct op_arg {
	const struct loop *loop;
	enum method m;
	unsigned int reps;
	uint64_t *v;
	uint64_t median;
};

static int op_loops(struct snpu_op_ctx *ctx, void *p)
{
	struct op_arg *o = p;
	unsigned int r;

	for (r = 0; r < o->reps; r++)
		o->v[r] = run_loop(o->loop, o->m, ctx);
	o->median = median(o->v, o->reps);
	return 0;
}

/* Keys of @len bytes: a dotted name cut to @len, the index at @where. */
static void make_keys(struct row *row, unsigned int len, unsigned int nkeys,
		      const char *where)
{
	static const char name[] =
		"model.layer.attention.kv.cache.side.stream.of.an.operator.xyz";
	unsigned int i, at;

	if (!strcmp(where, "end"))
		at = len - 2;
	else if (!strcmp(where, "start"))
		at = 0;
	else
		at = len / 2 - 1;
	row->len = len;
	row->nkeys = nkeys;
	row->where = where;
	memset(row->buf, 0, sizeof(row->buf));
	for (i = 0; i < nkeys; i++) {
		memcpy(row->buf[i], name, len);
		row->buf[i][at] = '0' + i / 10;
		row->buf[i][at + 1] = '0' + i % 10;
		row->keys[i] = row->buf[i];
	}
}

struct result {
	double ns[NMETHODS];
	unsigned long allocs;
	unsigned int chain;
};

/* The longest bucket chain of @owner. */
static unsigned int longest_chain(struct snpu_owner *owner)
{
	struct snpu_attached *a;
	unsigned int b, n, max = 0;

	for (b = 0; b < SNPU_OWNER_BUCKETS; b++) {
		n = 0;
		for (a = owner->bucket[b]; a; a = a->next)
			n++;
		if (n > max)
			max = n;
	}
	return max;
}

static void measure(const struct row *row, unsigned int reps,
		    unsigned int lookups, uint64_t *v, struct result *res,
		    int *counter_ok)
{
	struct snpu_device dev = { .fd = -1 };
	struct plain plain[MAX_KEYS];
	char copies[MAX_KEYS][KEY_MAX];
	struct snpu_owner owner;
	struct loop l = {
		.row = row, .owner = &owner, .plain = plain,
		.lookups = lookups,
	};
	struct op_arg o = { .loop = &l, .reps = reps, .v = v };
	unsigned long before;
	uint32_t stream;
	unsigned int i, r;
	int m, ret;

	ret = snpu_owner_init(&owner, &dev, fake_get);
	if (ret)
		die("owner init", ret);
	/* Fill the cache: these are the misses, and they allocate. */
	before = alloc_count();
	for (i = 0; i < row->nkeys; i++) {
		ret = snpu_owner_attached_stream(&owner, row->keys[i], &stream);
		if (ret)
			die("miss", ret);
		memcpy(copies[i], row->keys[i], KEY_MAX);
		plain[i].key = copies[i];
		plain[i].stream = stream;
	}
	if (alloc_count() - before < row->nkeys)
		*counter_ok = 0;
	res->chain = longest_chain(&owner);

	before = alloc_count();
	for (m = FLOOR; m <= OWNER; m++) {
		run_loop(&l, m, NULL);	/* warm up */
		for (r = 0; r < reps; r++)
			v[r] = run_loop(&l, m, NULL);
		res->ns[m] = (double)median(v, reps) / lookups;
	}
	o.m = REQUEST;
	ret = snpu_op_run(&owner, 1, "bench", op_loops, &o);
	if (ret)
		die("snpu_op_run", ret);
	res->ns[REQUEST] = (double)o.median / lookups;
	res->allocs = alloc_count() - before;

	res->ns[CHECKED] = 0;
	if (row->nkeys > SNPU_OP_TRACKED) {
		snpu_owner_fini(&owner);
		return;
	}
	/*
	 * The join check: on for this device. The check itself runs when the
	 * operator returns and fails here (no driver behind fd -1); only the
	 * loop inside is timed, and its allocations counted.
	 */
	ret = snpu_joins_init(&dev, SNPU_OPEN_CHECK_JOINS);
	if (ret)
		die("joins init", ret);
	o.m = CHECKED;
	before = alloc_count();
	snpu_op_run(&owner, 1, "bench", op_loops, &o);
	res->allocs += alloc_count() - before;
	res->ns[CHECKED] = (double)o.median / lookups;
	snpu_joins_fini(&dev);

	snpu_owner_fini(&owner);
}

int main(int argc, char **argv)
{
	static const struct {
		unsigned int len, nkeys;
		const char *where;
	} rows[] = {
		{ 4, 1, "end" }, { 4, 8, "end" }, { 4, 8, "start" },
		{ 4, 64, "end" }, { 4, 64, "start" },
		{ 16, 1, "end" }, { 16, 8, "end" }, { 16, 8, "start" },
		{ 16, 64, "end" }, { 16, 64, "start" },
		{ 40, 1, "end" }, { 40, 8, "end" }, { 40, 8, "start" },
		{ 40, 64, "end" }, { 40, 64, "start" }, { 40, 64, "middle" },
	};
	unsigned int reps = 21, lookups = 1000000, i, m;
	unsigned long total_allocs = 0;
	static struct row row;
	struct result res;
	int opt, counter_ok = 1;
	uint64_t *v;

	while ((opt = getopt(argc, argv, "r:n:wh")) != -1) {
		switch (opt) {
		case 'r':
			reps = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			lookups = strtoul(optarg, NULL, 10);
			break;
		case 'w':
			bench_clock = CLOCK_MONOTONIC;
			break;
		default:
			fprintf(stderr, "usage: %s [-r REPS] [-n LOOKUPS] [-w]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!reps || reps > MAX_REPS || !lookups) {
		fprintf(stderr, "attached_bench: REPS in 1..%d, LOOKUPS > 0\n",
			MAX_REPS);
		return 2;
	}
	v = calloc(reps, sizeof(*v));
	if (!v)
		return 3;

	printf("attached-stream cache hits: median ns/lookup of %u x %u lookups (%s time)\n",
	       reps, lookups,
	       bench_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU");
	printf("%-4s %4s %-6s %5s", "len", "keys", "index", "chain");
	for (m = 0; m < NMETHODS; m++)
		printf(" %8s", method_name[m]);
	printf(" %7s\n", "allocs");
	fflush(stdout);

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		make_keys(&row, rows[i].len, rows[i].nkeys, rows[i].where);
		measure(&row, reps, lookups, v, &res, &counter_ok);
		total_allocs += res.allocs;
		printf("%-4u %4u %-6s %5u", row.len, row.nkeys, row.where,
		       res.chain);
		for (m = 0; m < NMETHODS; m++) {
			if (res.ns[m] > 0)
				printf(" %8.1f", res.ns[m]);
			else
				printf(" %8s", "-");
		}
		printf(" %7lu\n", res.allocs);
		fflush(stdout);
	}
	free(v);

	if (!counter_ok) {
		fprintf(stderr, "attached_bench: the allocation counter missed the allocations of the misses\n");
		return 2;
	}
	if (total_allocs) {
		fprintf(stderr, "attached_bench: %lu heap allocations on the hit path (want 0)\n",
			total_allocs);
		return 1;
	}
	printf("heap allocations during the hit loops: 0\n");
	return 0;
}
