// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives: results. Every collective on 2, 3 and 4 ranks (each a
 * file of its own device), on counts that the ranks do not divide, one
 * element and 64 MiB, in place and not, equal bit for bit to a host loop
 * that reduces in rank order; the same bits run after run; on 6 ranks
 * (more than one reduction pass); mixed with ordinary tasks, events and
 * stream waits on the same streams; many in flight.
 *
 * Runs as root in the test VM with the module loaded with devices=4.
 */
#include "kselftest_harness.h"
#include "comm_util.h"

/*
 * Run one collective on @g with inputs from cref_input(@salt) and check
 * every rank's recv. @in_place uses the in-place layout of the uapi
 * header. @cheap inputs are small integers as floats (for large counts:
 * exact sums, quick to make). Return: 0, or a negative errno (a call
 * failed), or 1 (a result differs; TH_LOG says where).
 */
static int run_check(struct __test_metadata *_metadata, struct rgroup *g,
		     uint32_t coll, uint32_t dtype, uint32_t redop,
		     uint64_t count, uint32_t root, bool in_place,
		     uint32_t salt, bool cheap)
{
	uint64_t n = g->n, one = count * 4, sb = one, rb = one, i, e;
	uint64_t send[COMM_MAX], recv[COMM_MAX], base[COMM_MAX];
	uint32_t *buf, *want;
	unsigned int r, j;
	int ret = 0, errs[COMM_MAX];

	if (coll == SNPU_COLL_ALLGATHER)
		rb = one * n;
	if (coll == SNPU_COLL_REDUCE_SCATTER)
		sb = one * n;
	buf = malloc(sb > rb ? sb : rb);
	want = malloc(rb);
	if (!buf || !want)
		return -ENOMEM;

	/* Buffers: apart, or placed as the in-place form has them. */
	for (r = 0; r < n && !ret; r++) {
		int fd = g->r[r].fd;

		if (!in_place) {
			ret = snpu_alloc(fd, sb, 0, &send[r]);
			if (!ret)
				ret = snpu_alloc(fd, rb, 0, &recv[r]);
			base[r] = 0;
			continue;
		}
		ret = snpu_alloc(fd, sb > rb ? sb : rb, 0, &base[r]);
		send[r] = recv[r] = base[r];
		if (coll == SNPU_COLL_ALLGATHER)
			send[r] = base[r] + one * r;
		if (coll == SNPU_COLL_REDUCE_SCATTER)
			recv[r] = base[r] + one * r;
	}
	/* Inputs; and a recv poisoned, so that nothing passes by luck. */
	for (r = 0; r < n && !ret; r++) {
		for (i = 0; i < sb / 4; i++)
			buf[i] = cheap ? cref_f2u((float)((int)((i * 7 + r * 13 + salt) % 2001) - 1000)) :
				 cref_input(dtype, r, i, salt);
		if (!in_place)
			ret = snpu_memset(g->r[r].fd, recv[r], 0xa5, rb);
		if (!ret)
			ret = snpu_h2d(g->r[r].fd, send[r], buf, sb);
	}
	if (ret)
		goto out;

	for (r = 0; r < n && !ret; r++) {
		struct snpu_task t = t_coll(g->r[r].stream, g->r[r].comm, coll,
					    dtype, redop, count, send[r],
					    recv[r], root);

		/* Off a broadcast's root, send is not read: pass none. */
		if (coll == SNPU_COLL_BROADCAST && r != root && !in_place)
			t.coll.send = 0;
		ret = snpu_submit1(g->r[r].fd, t);
	}
	if (!ret)
		ret = group_sync(g, errs);
	if (ret)
		goto out;

	for (r = 0; r < n && !ret; r++) {
		/* What rank r must hold. */
		for (e = 0; e < rb / 4; e++) {
			uint64_t src = e;
			unsigned int from = root;

			if (coll == SNPU_COLL_REDUCE_SCATTER)
				src = r * count + e;
			if (coll == SNPU_COLL_ALLGATHER) {
				from = e / count;
				src = e % count;
			}
#define IN(rank, idx) (cheap ? cref_f2u((float)((int)(((idx) * 7 + (rank) * 13 + salt) % 2001) - 1000)) : \
		       cref_input(dtype, rank, idx, salt))
			if (snpu_coll_reduces_t(coll)) {
				uint32_t v = IN(0, src);

				for (j = 1; j < n; j++)
					v = cref_op(dtype, redop, v, IN(j, src));
				want[e] = v;
			} else {
				want[e] = IN(from, src);
			}
#undef IN
		}
		ret = snpu_d2h(g->r[r].fd, buf, recv[r], rb);
		if (ret)
			break;
		for (e = 0; e < rb / 4; e++) {
			if (buf[e] != want[e]) {
				TH_LOG("coll %u n %llu count %llu rank %u: element %llu is 0x%08x, want 0x%08x",
				       coll, (unsigned long long)n,
				       (unsigned long long)count, r,
				       (unsigned long long)e, buf[e], want[e]);
				ret = 1;
				break;
			}
		}
	}
out:
	for (r = 0; r < n; r++) {
		if (in_place) {
			snpu_free(g->r[r].fd, base[r]);
		} else {
			snpu_free(g->r[r].fd, send[r]);
			snpu_free(g->r[r].fd, recv[r]);
		}
	}
	free(buf);
	free(want);
	return ret;
}

FIXTURE(coll) {
	struct rgroup g;
};

FIXTURE_VARIANT(coll) {
	unsigned int ranks;
};

FIXTURE_VARIANT_ADD(coll, two) { .ranks = 2 };
FIXTURE_VARIANT_ADD(coll, three) { .ranks = 3 };
FIXTURE_VARIANT_ADD(coll, four) { .ranks = 4 };

FIXTURE_SETUP(coll)
{
	ASSERT_GE(comm_devices(), 4u) TH_LOG("load the module with devices=4");
	ASSERT_EQ(0, group_init(&self->g, variant->ranks, 4));
}

FIXTURE_TEARDOWN(coll)
{
	group_fini(&self->g);
}

/* Counts the ranks do not divide, one element, a few vectors' worth. */
static const uint64_t counts[] = { 1, 2, 3, 5, 7, 1000, 4099, 65537 };

TEST_F(coll, allreduce_sum_f32)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(counts); i++)
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
				       SNPU_DTYPE_F32, SNPU_REDOP_SUM, counts[i],
				       0, false, i, false));
}

TEST_F(coll, allreduce_sum_f32_in_place)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(counts); i++)
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
				       SNPU_DTYPE_F32, SNPU_REDOP_SUM, counts[i],
				       0, true, i, false));
}

TEST_F(coll, allreduce_sum_i32_wraps)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(counts); i++)
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
				       SNPU_DTYPE_I32, SNPU_REDOP_SUM, counts[i],
				       0, i & 1, i, false));
}

TEST_F(coll, allreduce_max_f32)
{
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_MAX, 4099, 0, false,
			       1, false));
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_MAX, 3, 0, true, 2,
			       false));
}

TEST_F(coll, allreduce_max_i32)
{
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_I32, SNPU_REDOP_MAX, 4099, 0, false,
			       3, false));
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_I32, SNPU_REDOP_MAX, 1, 0, true, 4,
			       false));
}

TEST_F(coll, broadcast_from_each_root)
{
	unsigned int root;

	for (root = 0; root < self->g.n; root++) {
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_BROADCAST,
				       SNPU_DTYPE_F32, 0, 4099, root, false,
				       root, false));
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_BROADCAST,
				       SNPU_DTYPE_I32, 0, 1, root, true,
				       root, false));
	}
}

TEST_F(coll, allgather)
{
	unsigned int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLGATHER,
				       SNPU_DTYPE_F32, 0, counts[i * 2 + 1],
				       0, false, i, false));
}

TEST_F(coll, allgather_in_place)
{
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLGATHER,
			       SNPU_DTYPE_I32, 0, 1, 0, true, 5, false));
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLGATHER,
			       SNPU_DTYPE_I32, 0, 4099, 0, true, 6, false));
}

TEST_F(coll, reduce_scatter)
{
	unsigned int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, run_check(_metadata, &self->g,
				       SNPU_COLL_REDUCE_SCATTER, SNPU_DTYPE_F32,
				       SNPU_REDOP_SUM, counts[i * 2 + 1], 0,
				       false, i, false));
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_REDUCE_SCATTER,
			       SNPU_DTYPE_I32, SNPU_REDOP_MAX, 1000, 0, false, 7,
			       false));
}

TEST_F(coll, reduce_scatter_in_place)
{
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_REDUCE_SCATTER,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 1, 0, true, 8,
			       false));
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_REDUCE_SCATTER,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 4099, 0, true, 9,
			       false));
}

/*
 * 64 MiB per rank: 16 Mi f32 elements. Four ranks fill, reduce and check
 * 256 MiB under TCG: at host load 11 that took longer than the harness's
 * default 30 s (7.x, CI warm-up of 2026-12-05), so the bound is wider; it
 * still catches a hang.
 */
TEST_F_TIMEOUT(coll, allreduce_64mib, 300)
{
	ASSERT_EQ(0, run_check(_metadata, &self->g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 16 << 20, 0,
			       false, 10, true));
}

/* The same inputs twice: the same bits, and those of the host loop. */
TEST_F(coll, same_bits_run_after_run)
{
	uint64_t count = 65537, bytes = count * 4;
	uint32_t *first, *again, *in;
	unsigned int r, k;

	first = malloc(bytes * COMM_MAX);
	again = malloc(bytes);
	in = malloc(bytes);
	ASSERT_TRUE(first && again && in);
	ASSERT_EQ(0, group_alloc(&self->g, bytes, bytes));
	for (r = 0; r < self->g.n; r++) {
		uint64_t i;

		for (i = 0; i < count; i++)
			in[i] = cref_input(SNPU_DTYPE_F32, r, i, 99);
		ASSERT_EQ(0, snpu_h2d(self->g.r[r].fd, self->g.r[r].send, in,
				      bytes));
	}
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, group_coll(&self->g, SNPU_COLL_ALLREDUCE,
					SNPU_DTYPE_F32, SNPU_REDOP_SUM, count,
					0));
		ASSERT_EQ(0, group_sync(&self->g, NULL));
		for (r = 0; r < self->g.n; r++) {
			uint32_t *dst = k ? again : first + r * count;

			ASSERT_EQ(0, snpu_d2h(self->g.r[r].fd, dst,
					      self->g.r[r].recv, bytes));
			if (k || r)
				ASSERT_EQ(0, memcmp(first, dst, bytes));
		}
	}
	free(first);
	free(again);
	free(in);
}

/*
 * On each rank's stream: a FILL of its send buffer, the all-reduce, an
 * ADD of the result to itself and an event; a second stream waits for
 * the event and copies the result on. All in one submission per rank.
 */
TEST_F(coll, mixed_with_tasks_events_and_waits)
{
	uint64_t count = 10000, bytes = count * 4, out[COMM_MAX];
	uint32_t other[COMM_MAX], ev[COMM_MAX], *host;
	unsigned int r;
	uint64_t i;

	host = malloc(bytes);
	ASSERT_NE(NULL, host);
	ASSERT_EQ(0, group_alloc(&self->g, bytes, bytes));
	for (r = 0; r < self->g.n; r++) {
		struct rank *k = &self->g.r[r];
		struct snpu_task t[5];

		ASSERT_EQ(0, snpu_alloc(k->fd, bytes, 0, &out[r]));
		ASSERT_EQ(0, snpu_stream_create(k->fd, SNPU_PRIO_NORMAL,
						&other[r]));
		ASSERT_EQ(0, snpu_event_create(k->fd, &ev[r]));
		t[0] = snpu_t_fill(k->stream, k->send, bytes, r + 1, 2);
		t[1] = t_coll(k->stream, k->comm, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_I32, SNPU_REDOP_SUM, count, k->send,
			      k->recv, 0);
		t[2] = snpu_t_binop(k->stream, SNPU_KERNEL_ADD_I32, k->recv,
				    k->recv, k->recv, bytes, 2);
		t[3] = snpu_t_record(k->stream, ev[r]);
		t[4] = snpu_t_wait(other[r], ev[r]);
		ASSERT_EQ(0, snpu_submit(k->fd, t, 5, NULL));
		t[0] = snpu_t_copy(other[r], SNPU_COPY_D2D, out[r], k->recv,
				   bytes);
		ASSERT_EQ(0, snpu_submit1(k->fd, t[0]));
	}
	for (r = 0; r < self->g.n; r++) {
		int32_t err = -1;

		ASSERT_EQ(0, snpu_stream_sync(self->g.r[r].fd, other[r],
					      COMM_WAIT_NS, &err));
		ASSERT_EQ(0, err);
		ASSERT_EQ(0, snpu_d2h(self->g.r[r].fd, host, out[r], bytes));
		/* 2 * (1 + 2 + ... + n) in every element. */
		for (i = 0; i < count; i++)
			ASSERT_EQ(self->g.n * (self->g.n + 1), host[i]);
	}
	free(host);
}

/*
 * 100 collectives queued back to back on every rank, synchronized once:
 * in place, each on its own slice of one buffer.
 */
TEST_F(coll, many_in_flight)
{
	uint64_t count = 257, slice = count * 4, bytes = 100 * slice, i;
	struct snpu_task t[100];
	unsigned int r, k, n = self->g.n;
	uint32_t *host;

	host = malloc(bytes);
	ASSERT_NE(NULL, host);
	ASSERT_EQ(0, group_alloc(&self->g, 4, bytes));
	for (r = 0; r < n; r++) {
		struct rank *q = &self->g.r[r];

		for (i = 0; i < 100 * count; i++)
			host[i] = r + i / count;
		ASSERT_EQ(0, snpu_h2d(q->fd, q->recv, host, bytes));
		for (k = 0; k < 100; k++)
			t[k] = t_coll(q->stream, q->comm, SNPU_COLL_ALLREDUCE,
				      SNPU_DTYPE_I32, SNPU_REDOP_SUM, count,
				      q->recv + k * slice, q->recv + k * slice,
				      0);
		ASSERT_EQ(0, snpu_submit(q->fd, t, 100, NULL));
	}
	ASSERT_EQ(0, group_sync(&self->g, NULL));
	for (r = 0; r < n; r++) {
		ASSERT_EQ(0, snpu_d2h(self->g.r[r].fd, host, self->g.r[r].recv,
				      bytes));
		/* Slice k: the sum over the ranks of r + k. */
		for (i = 0; i < 100 * count; i++)
			ASSERT_EQ(n * (n - 1) / 2 + n * (i / count), host[i]);
	}
	free(host);
}

/* Six ranks on four devices: more ranks than one reduction pass takes. */
TEST(six_ranks_on_four_devices)
{
	struct rgroup g;

	ASSERT_GE(comm_devices(), 4u);
	ASSERT_EQ(0, group_init(&g, 6, 4));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 30011, 0, false,
			       11, false));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 30011, 0, true,
			       12, false));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_REDUCE_SCATTER,
			       SNPU_DTYPE_I32, SNPU_REDOP_MAX, 5000, 0, true, 13,
			       false));
	group_fini(&g);
}

/* One rank: a copy (or nothing, in place). */
TEST(one_rank)
{
	struct rgroup g;

	ASSERT_EQ(0, group_init(&g, 1, 1));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, SNPU_REDOP_SUM, 1001, 0, false,
			       14, false));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_ALLGATHER,
			       SNPU_DTYPE_F32, 0, 1001, 0, true, 15, false));
	ASSERT_EQ(0, run_check(_metadata, &g, SNPU_COLL_BROADCAST,
			       SNPU_DTYPE_F32, 0, 1001, 0, false, 16, false));
	group_fini(&g);
}

TEST_HARNESS_MAIN
