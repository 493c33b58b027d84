// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of kmod/core/coll.c and coll_vec.c: the checks of a
 * collective task, the buffers' placement, the chunks, the plan of every
 * rank's steps (run in random orders that respect only the plan's own
 * waits, against a reference computed rank by rank) and the reductions
 * (bit for bit against a scalar loop).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll.h"

#include "kselftest_harness.h"

static void make_coll(struct snpu_task *t, __u32 coll)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_COLL;
	t->stream = 1;
	t->coll.comm = 1;
	t->coll.coll = coll;
	t->coll.dtype = SNPU_DTYPE_F32;
	t->coll.redop = snpu_coll_reduces(coll) ? SNPU_REDOP_SUM : 0;
	t->coll.count = 100;
	t->coll.send = 0x100000;
	t->coll.recv = 0x200000;
}

TEST(check_accepts_each_collective)
{
	struct snpu_task t;
	__u32 c;

	for (c = SNPU_COLL_ALLREDUCE; c <= SNPU_COLL_REDUCE_SCATTER; c++) {
		make_coll(&t, c);
		EXPECT_EQ(0, snpu_task_check(&t));
		t.coll.dtype = SNPU_DTYPE_I32;
		EXPECT_EQ(0, snpu_task_check(&t));
	}
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.redop = SNPU_REDOP_MAX;
	EXPECT_EQ(0, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_BROADCAST);
	t.coll.root = SNPU_COMM_MAX_RANKS - 1;
	t.coll.send = 0;
	EXPECT_EQ(0, snpu_task_check(&t));
}

TEST(check_refuses_bad_fields)
{
	struct snpu_task t;

	make_coll(&t, 0);
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_REDUCE_SCATTER + 1);
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.dtype = 3;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.redop = 0;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	t.coll.redop = SNPU_REDOP_MAX + 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	/* An operator for a collective that does not reduce. */
	make_coll(&t, SNPU_COLL_ALLGATHER);
	t.coll.redop = SNPU_REDOP_SUM;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	/* A root off a broadcast, or past the most ranks. */
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.root = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_BROADCAST);
	t.coll.root = SNPU_COMM_MAX_RANKS;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.count = 0;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	t.coll.count = ~0ULL / (4 * SNPU_COMM_MAX_RANKS) + 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.send += 2;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.recv += 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.coll.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	/* Words past the collective's. */
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	t.raw[6] = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
	/* SNPU_OP_CALLBACK_DONE is an SQE, never a task. */
	make_coll(&t, SNPU_COLL_ALLREDUCE);
	memset(&t.coll, 0, sizeof(t.coll));
	t.op = SNPU_OP_CALLBACK_DONE;
	EXPECT_EQ(-EINVAL, snpu_task_check(&t));
}

static struct snpu_coll_desc desc(__u32 coll, __u32 nranks, __u64 count)
{
	struct snpu_coll_desc d = {
		.coll = coll, .dtype = SNPU_DTYPE_I32, .nranks = nranks,
		.count = count,
		.redop = snpu_coll_reduces(coll) ? SNPU_REDOP_SUM : 0,
	};

	return d;
}

TEST(buffers_in_place_and_apart)
{
	struct snpu_coll_desc d = desc(SNPU_COLL_ALLREDUCE, 4, 10);

	/* Apart, touching, the same: all fine for an all-reduce. */
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1000, 2000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1000, 1040));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1040, 1000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1000, 1000));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 1, 1000, 1036));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 1, 1036, 1000));

	/* All-gather in place: the send is the rank's place in recv. */
	d = desc(SNPU_COLL_ALLGATHER, 4, 10);
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 2, 1080, 1000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 0, 1000, 1000));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 2, 1040, 1000));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 1, 1000, 1000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1160, 1000));

	/* Reduce-scatter in place: recv is the rank's chunk of send. */
	d = desc(SNPU_COLL_REDUCE_SCATTER, 4, 10);
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 3, 1000, 1120));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 0, 1000, 1000));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 3, 1000, 1040));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 3, 1000, 1160));

	/* Broadcast: off the root, send is 0 or recv. */
	d = desc(SNPU_COLL_BROADCAST, 4, 10);
	d.root = 2;
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 0, 1000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 1, 1000, 1000));
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 1, 2000, 1000));
	EXPECT_EQ(0, snpu_coll_check_buffers(&d, 2, 2000, 1000));
	d.root = 4;
	EXPECT_EQ(-EINVAL, snpu_coll_check_buffers(&d, 2, 2000, 1000));
}

TEST(chunks_cover_the_elements_once)
{
	static const __u64 counts[] = { 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000 };
	__u32 n, c, i;

	for (n = 1; n <= 9; n++) {
		for (i = 0; i < ARRAY_SIZE(counts); i++) {
			struct snpu_coll_desc d = desc(SNPU_COLL_ALLREDUCE, n,
						       counts[i]);
			__u64 next = 0, b, len;

			for (c = 0; c < n; c++) {
				snpu_coll_chunk(&d, c, &b, &len);
				ASSERT_EQ(next, b);
				next += len;
			}
			ASSERT_EQ(counts[i], next);
		}
	}
}

/* ---- the plan, run in random orders ------------------------------------ */

#define MAXR	9

struct sim {
	struct snpu_coll_desc d;
	__u32 rank_done[MAXR];
	__u32 steps[MAXR];
	bool busy[MAXR];
	/* A running step's sources, read when it started. */
	__s32 *snap[MAXR];
	struct snpu_coll_step st[MAXR];
	__s32 *send[MAXR];
	__s32 *recv[MAXR];
	__s32 *mem[MAXR];
	__s32 *base;
};

static __u32 rnd(__u32 *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static bool sim_ready(struct sim *s, __u32 q)
{
	struct snpu_coll_step st;

	if (s->busy[q] || s->rank_done[q] == s->steps[q])
		return false;
	snpu_coll_step(&s->d, q, s->rank_done[q], &st);
	return st.wait_rank == SNPU_CSTEP_NO_WAIT ||
	       s->rank_done[st.wait_rank] >= st.wait_done;
}

/* A step starts: what it reads is read now. */
static void sim_start(struct sim *s, __u32 q)
{
	struct snpu_coll_step *st = &s->st[q];
	__u64 i;
	__u32 j;

	snpu_coll_step(&s->d, q, s->rank_done[q], st);
	s->busy[q] = true;
	for (i = 0; i < st->elems; i++) {
		if (st->kind == SNPU_CSTEP_COPY) {
			__s32 *src = st->peer_buf == SNPU_CBUF_SEND ?
				     s->send[st->peer] : s->recv[st->peer];

			s->snap[q][i] = src[st->src_off + i];
			continue;
		}
		s->snap[q][i] = s->send[0][st->src_off + i];
		for (j = 1; j < s->d.nranks; j++)
			s->snap[q][i] += s->send[j][st->src_off + i];
	}
}

/* It ends: what it writes is written now. */
static void sim_end(struct sim *s, __u32 q)
{
	struct snpu_coll_step *st = &s->st[q];
	__u64 i;

	for (i = 0; i < st->elems; i++)
		s->recv[q][st->dst_off + i] = s->snap[q][i];
	s->busy[q] = false;
	s->rank_done[q]++;
}

/*
 * Run one collective of @n ranks on @count i32 elements (sum), in place or
 * not, in an order drawn from @seed among those the plan allows, and
 * compare every recv with what the collective must give.
 */
static bool sim_run(__u32 coll, __u32 n, __u64 count, bool in_place,
		    __u32 root, __u32 seed)
{
	struct snpu_coll_desc d = desc(coll, n, count);
	__u64 sb, rb, i, room;
	struct sim s = { 0 };
	bool ok = true;
	__u32 q, j;

	d.root = root;
	s.d = d;
	snpu_coll_extents(&d, &sb, &rb);
	sb /= 4;
	rb /= 4;
	room = sb > rb ? sb : rb;
	for (q = 0; q < n; q++) {
		/* In place, one buffer holds both as the uapi says. */
		s.base = calloc(2 * room, 4);
		s.mem[q] = s.base;
		s.recv[q] = s.base;
		s.send[q] = s.base + room;
		if (in_place && coll == SNPU_COLL_ALLGATHER)
			s.send[q] = s.recv[q] + q * count;
		else if (in_place && coll == SNPU_COLL_REDUCE_SCATTER)
			s.recv[q] = s.send[q] + q * count;
		else if (in_place)
			s.send[q] = s.recv[q];
		s.snap[q] = calloc(room, 4);
		s.steps[q] = snpu_coll_nsteps(&d, q);
		for (i = 0; i < sb; i++)
			s.send[q][i] = (__s32)(q * 100003 + i * 7 + 1);
	}
	/* The expected results, from the inputs as they are now. */
	__s32 *want[MAXR];

	for (q = 0; q < n; q++) {
		want[q] = calloc(rb, 4);
		for (i = 0; i < rb; i++) {
			__u64 e = i;
			__s32 v = 0;

			switch (coll) {
			case SNPU_COLL_ALLREDUCE:
				for (j = 0; j < n; j++)
					v += s.send[j][e];
				break;
			case SNPU_COLL_REDUCE_SCATTER:
				for (j = 0; j < n; j++)
					v += s.send[j][q * count + e];
				break;
			case SNPU_COLL_ALLGATHER:
				v = s.send[e / count][e % count];
				break;
			case SNPU_COLL_BROADCAST:
				v = s.send[root][e];
				break;
			}
			want[q][i] = v;
		}
	}

	for (;;) {
		__u32 cand[2 * MAXR], nc = 0;

		for (q = 0; q < n; q++) {
			if (sim_ready(&s, q))
				cand[nc++] = q;
			if (s.busy[q])
				cand[nc++] = MAXR + q;
		}
		if (!nc)
			break;
		q = cand[rnd(&seed) % nc];
		if (q >= MAXR)
			sim_end(&s, q - MAXR);
		else
			sim_start(&s, q);
	}
	for (q = 0; q < n; q++) {
		if (s.rank_done[q] != s.steps[q])
			ok = false;
		for (i = 0; i < rb && ok; i++)
			if (s.recv[q][i] != want[q][i])
				ok = false;
	}
	for (q = 0; q < n; q++) {
		free(want[q]);
		free(s.snap[q]);
		free(s.mem[q]);
	}
	return ok;
}

TEST(plan_gives_the_results_in_any_order)
{
	static const __u64 counts[] = { 1, 2, 3, 4, 5, 9, 37, 100 };
	__u32 coll, n, i, seed, root;
	int in_place;

	for (coll = SNPU_COLL_ALLREDUCE; coll <= SNPU_COLL_REDUCE_SCATTER;
	     coll++)
		for (n = 1; n <= MAXR; n++)
			for (i = 0; i < ARRAY_SIZE(counts); i++)
				for (in_place = 0; in_place < 2; in_place++)
					for (seed = 1; seed <= 12; seed++) {
						root = coll == SNPU_COLL_BROADCAST ?
						       seed % n : 0;
						ASSERT_TRUE(sim_run(coll, n, counts[i],
								    in_place,
								    root, seed))
							TH_LOG("coll %u n %u count %llu in place %d seed %u",
							       coll, n,
							       (unsigned long long)counts[i],
							       in_place, seed);
					}
}

/*
 * Reduce-scatter in place is special: recv is the rank's chunk of its own
 * send buffer. Covered above only for rank 0's layout; here the recv of
 * each rank is inside its send.
 */
TEST(plan_reduce_scatter_in_place)
{
	__u32 n = 4, q, j;
	__u64 count = 7, i;
	__s32 *buf[4];
	struct snpu_coll_desc d = desc(SNPU_COLL_REDUCE_SCATTER, n, count);
	struct snpu_coll_step st;
	__s32 want[4][7];

	for (q = 0; q < n; q++) {
		buf[q] = calloc(n * count, 4);
		for (i = 0; i < n * count; i++)
			buf[q][i] = (__s32)(q * 1000 + i);
	}
	for (q = 0; q < n; q++)
		for (i = 0; i < count; i++) {
			want[q][i] = 0;
			for (j = 0; j < n; j++)
				want[q][i] += buf[j][q * count + i];
		}
	/* One step per rank, no waits: any order. */
	for (q = n; q-- > 0;) {
		snpu_coll_step(&d, q, 0, &st);
		ASSERT_EQ((__u32)SNPU_CSTEP_REDUCE, st.kind);
		ASSERT_EQ((__u32)SNPU_CSTEP_NO_WAIT, st.wait_rank);
		for (i = 0; i < st.elems; i++) {
			__s32 v = 0;

			for (j = 0; j < n; j++)
				v += buf[j][st.src_off + i];
			buf[q][q * count + st.dst_off + i] = v;
		}
	}
	for (q = 0; q < n; q++) {
		for (i = 0; i < count; i++)
			ASSERT_EQ(want[q][i], buf[q][q * count + i]);
		free(buf[q]);
	}
}

/* ---- reductions ----------------------------------------------------------- */

static __u32 f2u(float f)
{
	__u32 u;

	memcpy(&u, &f, 4);
	return u;
}

static float u2f(__u32 u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* The scalar reference: rank by rank, in order. */
static __u32 ref_op(__u32 dtype, __u32 redop, __u32 a, __u32 b)
{
	if (dtype == SNPU_DTYPE_F32)
		return redop == SNPU_REDOP_SUM ? f2u(u2f(a) + u2f(b)) :
		       f2u(u2f(a) > u2f(b) ? u2f(a) : u2f(b));
	return redop == SNPU_REDOP_SUM ? a + b :
	       ((__s32)a > (__s32)b ? a : b);
}

/* Values that make the order visible: sums that round, -0, +0, inf. */
static __u32 pick(__u32 dtype, __u32 *seed)
{
	static const float special[] = {
		0.0f, -0.0f, 1e30f, -1e30f, INFINITY, -INFINITY, 1.0f, 3e-8f,
	};
	__u32 r = rnd(seed);

	if (dtype == SNPU_DTYPE_I32)
		return r % 5 ? r * 2654435761u : 0x7fffffffu + r % 3;
	if (r % 7 == 0)
		return f2u(special[r / 7 % ARRAY_SIZE(special)]);
	return f2u(((float)(r % 20001) - 10000.0f) / (float)(r % 97 + 1));
}

static void check_reduce(struct __test_metadata *_metadata, __u32 dtype,
			 __u32 redop, __u32 nsrc, __u64 n, int alias,
			 __u64 off)
{
	__u32 *src[MAXR], *dst, *want, seed = nsrc * 131 + (__u32)n;
	__u32 scratch[SNPU_COLL_TILE];
	__u64 i;
	__u32 j;

	for (j = 0; j < nsrc; j++) {
		src[j] = malloc((off + n + 1) * 4);
		for (i = 0; i < off + n + 1; i++)
			src[j][i] = pick(dtype, &seed);
	}
	want = malloc((n + 1) * 4);
	for (i = 0; i < n; i++) {
		__u32 v = src[0][off + i];

		for (j = 1; j < nsrc; j++)
			v = ref_op(dtype, redop, v, src[j][off + i]);
		want[i] = v;
	}
	dst = alias >= 0 ? src[alias] + off : malloc((n + 1) * 4);
	dst[n] = 0xdeadbeef;
	snpu_coll_reduce(dtype, redop, dst, (const void *const *)src, off,
			 nsrc, scratch, n);
	for (i = 0; i < n; i++)
		ASSERT_EQ(want[i], dst[i])
			TH_LOG("dtype %u op %u nsrc %u n %llu alias %d at %llu",
			       dtype, redop, nsrc, (unsigned long long)n, alias,
			       (unsigned long long)i);
	/* Nothing past the elements. */
	ASSERT_EQ(alias >= 0 ? dst[n] : 0xdeadbeef, dst[n]);
	if (alias < 0)
		free(dst);
	free(want);
	for (j = 0; j < nsrc; j++)
		free(src[j]);
}

TEST(reduce_equals_rank_by_rank_bits)
{
	static const __u64 lens[] = {
		0, 1, 3, 4, 5, 7, 8, 33, SNPU_COLL_TILE - 1, SNPU_COLL_TILE,
		SNPU_COLL_TILE + 5, 3 * SNPU_COLL_TILE + 2,
	};
	__u32 dtype, redop, nsrc, i;

	for (dtype = SNPU_DTYPE_I32; dtype <= SNPU_DTYPE_F32; dtype++)
		for (redop = SNPU_REDOP_SUM; redop <= SNPU_REDOP_MAX; redop++)
			for (nsrc = 1; nsrc <= MAXR; nsrc++)
				for (i = 0; i < ARRAY_SIZE(lens); i++)
					check_reduce(_metadata, dtype, redop,
						     nsrc, lens[i], -1, i % 3);
}

/* The result written where one of the sources is (in place). */
TEST(reduce_in_place_over_any_source)
{
	__u32 dtype, nsrc;
	int alias;

	for (dtype = SNPU_DTYPE_I32; dtype <= SNPU_DTYPE_F32; dtype++)
		for (nsrc = 1; nsrc <= MAXR; nsrc++)
			for (alias = 0; alias < (int)nsrc; alias++) {
				check_reduce(_metadata, dtype, SNPU_REDOP_SUM,
					     nsrc, 2 * SNPU_COLL_TILE + 3, alias,
					     1);
				check_reduce(_metadata, dtype, SNPU_REDOP_MAX,
					     nsrc, 37, alias, 0);
			}
}

/* The order shows in f32: (a + b) + c is not a + (b + c). */
TEST(reduce_f32_sums_in_rank_order)
{
	float a = 1e8f, b = -1e8f, c = 1.0f, out;
	const void *src[3] = { &a, &b, &c };

	snpu_coll_reduce(SNPU_DTYPE_F32, SNPU_REDOP_SUM, &out, src, 0, 3,
			 NULL, 1);
	EXPECT_EQ(f2u(1.0f), f2u(out));
	src[0] = &c;
	src[2] = &a;
	snpu_coll_reduce(SNPU_DTYPE_F32, SNPU_REDOP_SUM, &out, src, 0, 3,
			 NULL, 1);
	EXPECT_EQ(f2u(0.0f), f2u(out));
}

/* MAX keeps the later rank's on equal -0.0 and 0.0, and on a NaN. */
TEST(reduce_max_ties_and_nan)
{
	float a[4] = { 0.0f, -0.0f, NAN, 1.0f };
	float b[4] = { -0.0f, 0.0f, 1.0f, NAN };
	const void *src[2];
	float out[4];

	src[0] = a;
	src[1] = b;
	snpu_coll_reduce(SNPU_DTYPE_F32, SNPU_REDOP_MAX, out, src, 0, 2,
			 NULL, 4);
	EXPECT_EQ(f2u(-0.0f), f2u(out[0]));
	EXPECT_EQ(f2u(0.0f), f2u(out[1]));
	EXPECT_EQ(f2u(1.0f), f2u(out[2]));
	EXPECT_TRUE(isnan(out[3]));
}

TEST_HARNESS_MAIN
