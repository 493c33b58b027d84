// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu's communicators and collectives (LIBSNPU_0.11) against the
 * driver: snpu_comm_init_all() over 2, 3 and 4 devices, each collective
 * against a loop over the ranks on the host (bit for bit, f32 too),
 * capture of collectives into graphs (SUBMIT and ring), destroy while
 * collectives are queued, abort, init_rank across processes, another
 * user's communicator, and every documented error of the calls
 * (Documentation/lib/snpu_comm_*.rst). Everything goes through the
 * library, no raw ioctl.
 *
 * Runs as root in the test VM with the module loaded with devices=4.
 * The fixture opens each device once with snpu_open() (one file, so one
 * context, per device) and creates a stream and two buffers in each.
 * Work that must stay queued is held behind a host callback (BLOCKER),
 * never a timed spin, so that no test depends on the VM's speed.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NDEV		4
#define COUNT		1001	/* not a multiple of any rank count */
#define BUF_BYTES	((uint64_t)NDEV * COUNT * 4)
/* Hang guard of a wait: generous, never a pass condition. */
#define WAIT_NS		(120LL * 1000000000LL)
#define BLOCKER		0xb10cb10cULL
#define NOBODY		65534

FIXTURE(lc) {
	struct snpu_device *dev[NDEV];
	uint32_t stream[NDEV];
	uint64_t send[NDEV], recv[NDEV];
	struct snpu_comm *comm[NDEV];
};

FIXTURE_SETUP(lc)
{
	unsigned int i;

	memset(self, 0, sizeof(*self));
	for (i = 0; i < NDEV; i++) {
		ASSERT_EQ(0, snpu_open(i, 0, &self->dev[i]));
		ASSERT_EQ(0, snpu_stream_create(self->dev[i], 0, 0,
						&self->stream[i]));
		ASSERT_EQ(0, snpu_mem_alloc(self->dev[i], BUF_BYTES, 0, 0,
					    &self->send[i]));
		ASSERT_EQ(0, snpu_mem_alloc(self->dev[i], BUF_BYTES, 0, 0,
					    &self->recv[i]));
	}
}

FIXTURE_TEARDOWN(lc)
{
	unsigned int i;

	for (i = 0; i < NDEV; i++)
		if (self->comm[i])
			snpu_comm_abort(self->comm[i]);
	for (i = 0; i < NDEV; i++)
		snpu_close(self->dev[i]);
}

/* Element i of rank r's input: distinct per rank, negative ones too. */
static uint32_t input(uint32_t dtype, unsigned int r, uint64_t i)
{
	float f;
	uint32_t u;

	if (dtype == SNPU_DTYPE_I32)
		return (uint32_t)((int32_t)(i * 2654435761u % 20011) - 10000 +
				  (int32_t)r * 7919);
	f = (float)((int)(i % 97) - 48) * 0.37f + (float)r * 1.125f + 0.1f;
	memcpy(&u, &f, sizeof(u));
	return u;
}

/* The driver's reduction of the result so far @a with the next rank's @b. */
static uint32_t reduce(uint32_t dtype, uint32_t redop, uint32_t a, uint32_t b)
{
	float fa, fb, fr;
	uint32_t u;

	if (dtype == SNPU_DTYPE_I32) {
		if (redop == SNPU_REDOP_SUM)
			return a + b;
		return (int32_t)a > (int32_t)b ? a : b;
	}
	memcpy(&fa, &a, sizeof(fa));
	memcpy(&fb, &b, sizeof(fb));
	fr = redop == SNPU_REDOP_SUM ? fa + fb : (fa > fb ? fa : fb);
	memcpy(&u, &fr, sizeof(u));
	return u;
}

/* Elements of each rank's send and recv buffer for @coll over @n ranks. */
static void coll_elems(uint32_t coll, unsigned int n, uint64_t count,
		       uint64_t *send, uint64_t *recv)
{
	*send = coll == SNPU_COLL_REDUCE_SCATTER ? n * count : count;
	*recv = coll == SNPU_COLL_ALLGATHER ? n * count : count;
}

/* What rank @r's recv holds after @coll: a loop over the ranks. */
static uint32_t expect(uint32_t coll, uint32_t dtype, uint32_t redop,
		       unsigned int n, unsigned int root, unsigned int r,
		       uint64_t count, uint64_t i)
{
	uint64_t at = coll == SNPU_COLL_REDUCE_SCATTER ? r * count + i : i;
	uint32_t acc;
	unsigned int k;

	switch (coll) {
	case SNPU_COLL_BROADCAST:
		return input(dtype, root, i);
	case SNPU_COLL_ALLGATHER:
		return input(dtype, (unsigned int)(i / count), i % count);
	default:
		acc = input(dtype, 0, at);
		for (k = 1; k < n; k++)
			acc = reduce(dtype, redop, acc, input(dtype, k, at));
		return acc;
	}
}

/* Rank @r's input in its send buffer, its recv buffer scribbled over. */
static int put_input(FIXTURE_DATA(lc) *self, unsigned int n, unsigned int r,
		     uint32_t coll, uint32_t dtype, uint64_t count)
{
	uint64_t se, re, i;
	uint32_t *v;
	int ret;

	coll_elems(coll, n, count, &se, &re);
	v = malloc(BUF_BYTES);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < se; i++)
		v[i] = input(dtype, r, i);
	ret = snpu_memcpy_h2d(self->dev[r], self->send[r], v, se * 4);
	if (!ret)
		ret = snpu_memset(self->dev[r], self->recv[r], 0xa5, BUF_BYTES);
	free(v);
	return ret;
}

static int put_inputs(FIXTURE_DATA(lc) *self, unsigned int n, uint32_t coll,
		      uint32_t dtype, uint64_t count)
{
	unsigned int r;
	int ret = 0;

	for (r = 0; r < n && !ret; r++)
		ret = put_input(self, n, r, coll, dtype, count);
	return ret;
}

/* Compare rank @r's @addr (of n ranks) with the loop. Return: mismatches. */
static int check_rank(struct __test_metadata *_metadata,
		      FIXTURE_DATA(lc) *self, unsigned int n, unsigned int r,
		      uint32_t coll, uint32_t dtype, uint32_t redop,
		      unsigned int root, uint64_t count, uint64_t addr)
{
	uint64_t se, re, i;
	uint32_t *v, e;
	int bad = 0;

	coll_elems(coll, n, count, &se, &re);
	v = malloc(BUF_BYTES);
	if (!v)
		return -1;
	if (snpu_memcpy_d2h(self->dev[r], v, addr, re * 4)) {
		free(v);
		return 1;
	}
	for (i = 0; i < re; i++) {
		e = expect(coll, dtype, redop, n, root, r, count, i);
		if (v[i] != e && bad++ < 4)
			TH_LOG("rank %u element %llu: %#x, expected %#x",
			       r, (unsigned long long)i, v[i], e);
	}
	free(v);
	return bad;
}

/* Every rank's @addr[r]. Return: mismatches. */
static int check_ranks(struct __test_metadata *_metadata,
		       FIXTURE_DATA(lc) *self, unsigned int n, uint32_t coll,
		       uint32_t dtype, uint32_t redop, unsigned int root,
		       uint64_t count, const uint64_t *addr)
{
	unsigned int r;
	int bad = 0;

	for (r = 0; r < n; r++)
		bad += check_rank(_metadata, self, n, r, coll, dtype, redop,
				  root, count, addr[r]);
	return bad;
}

static int sync_all(FIXTURE_DATA(lc) *self, unsigned int n, int *errs)
{
	unsigned int r;
	int ret, first = 0;

	for (r = 0; r < n; r++) {
		ret = snpu_stream_synchronize(self->dev[r], self->stream[r],
					      WAIT_NS);
		if (errs)
			errs[r] = ret;
		if (ret && !first)
			first = ret;
	}
	return first;
}

/* Queue @coll on every rank of self->comm (the library's calls). */
static int queue_coll(FIXTURE_DATA(lc) *self, unsigned int n, uint32_t coll,
		      uint32_t dtype, uint32_t redop, unsigned int root,
		      uint64_t count, int inplace)
{
	uint64_t send, recv;
	unsigned int r;
	int ret = 0;

	for (r = 0; r < n && !ret; r++) {
		send = self->send[r];
		recv = self->recv[r];
		switch (coll) {
		case SNPU_COLL_ALLREDUCE:
			ret = snpu_comm_allreduce(self->comm[r],
						  self->stream[r], send,
						  inplace ? send : recv, count,
						  dtype, redop);
			break;
		case SNPU_COLL_BROADCAST:
			/* Off the root, the send buffer may be 0. */
			ret = snpu_comm_broadcast(self->comm[r],
						  self->stream[r],
						  inplace || r == root ? send : 0,
						  inplace ? send : recv, count,
						  dtype, root);
			break;
		case SNPU_COLL_ALLGATHER:
			ret = snpu_comm_allgather(self->comm[r],
						  self->stream[r], send, recv,
						  count, dtype);
			break;
		case SNPU_COLL_REDUCE_SCATTER:
			ret = snpu_comm_reduce_scatter(self->comm[r],
						       self->stream[r], send,
						       recv, count, dtype,
						       redop);
			break;
		}
	}
	return ret;
}

/* One collective on @n ranks, queued, synchronized and checked. */
static int run_coll(struct __test_metadata *_metadata,
		    FIXTURE_DATA(lc) *self, unsigned int n, uint32_t coll,
		    uint32_t dtype, uint32_t redop, unsigned int root,
		    int inplace)
{
	int ret;

	ret = put_inputs(self, n, coll, dtype, COUNT);
	if (!ret)
		ret = queue_coll(self, n, coll, dtype, redop, root, COUNT,
				 inplace);
	if (!ret)
		ret = sync_all(self, n, NULL);
	if (ret) {
		TH_LOG("queue or sync: %d", ret);
		return ret;
	}
	return check_ranks(_metadata, self, n, coll, dtype, redop, root,
			   COUNT, inplace ? self->send : self->recv);
}

/* init_all over @n devices: each rank as documented. */
static void init_all_checks(struct __test_metadata *_metadata,
			    FIXTURE_DATA(lc) *self, unsigned int n)
{
	struct snpu_comm_query q;
	unsigned int r;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, n, self->comm));
	for (r = 0; r < n; r++) {
		ASSERT_NE(NULL, self->comm[r]);
		EXPECT_EQ((int)n, snpu_comm_count(self->comm[r]));
		EXPECT_EQ((int)r, snpu_comm_user_rank(self->comm[r]));
		EXPECT_EQ(self->dev[r], snpu_comm_device(self->comm[r]));
		ASSERT_EQ(0, snpu_comm_query(self->comm[r], &q));
		EXPECT_EQ(snpu_comm_handle(self->comm[r]), q.handle);
		EXPECT_EQ(r, q.rank);
		EXPECT_EQ(n, q.nranks);
		EXPECT_EQ(n, q.joined);
		EXPECT_EQ(0, q.error);
		EXPECT_EQ(0ULL, q.queued);
	}
	EXPECT_EQ(0, run_coll(_metadata, self, n, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0, 0));
	for (r = 0; r < n; r++) {
		ASSERT_EQ(0, snpu_comm_query(self->comm[r], &q));
		EXPECT_EQ(1ULL, q.queued);
		EXPECT_EQ(0, snpu_comm_destroy(self->comm[r]));
		self->comm[r] = NULL;
	}
}

TEST_F(lc, init_all_2)
{
	init_all_checks(_metadata, self, 2);
}

TEST_F(lc, init_all_3)
{
	init_all_checks(_metadata, self, 3);
}

TEST_F(lc, init_all_4)
{
	init_all_checks(_metadata, self, 4);
}

TEST_F(lc, allreduce_f32_sum_in_rank_order)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, NDEV, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_F32, SNPU_REDOP_SUM, 0, 0));
}

TEST_F(lc, allreduce_i32_max)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, NDEV, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_I32, SNPU_REDOP_MAX, 0, 0));
}

TEST_F(lc, allreduce_f32_max_in_place)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 3, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, 3, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_F32, SNPU_REDOP_MAX, 0, 1));
}

TEST_F(lc, broadcast_from_root_2)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, NDEV, SNPU_COLL_BROADCAST,
			      SNPU_DTYPE_I32, 0, 2, 0));
}

TEST_F(lc, broadcast_in_place_from_root_0)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 3, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, 3, SNPU_COLL_BROADCAST,
			      SNPU_DTYPE_F32, 0, 0, 1));
}

TEST_F(lc, allgather)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, NDEV, SNPU_COLL_ALLGATHER,
			      SNPU_DTYPE_I32, 0, 0, 0));
}

TEST_F(lc, reduce_scatter_f32_sum)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, NDEV,
			      SNPU_COLL_REDUCE_SCATTER, SNPU_DTYPE_F32,
			      SNPU_REDOP_SUM, 0, 0));
}

TEST_F(lc, reduce_scatter_i32_max)
{
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	EXPECT_EQ(0, run_coll(_metadata, self, 2, SNPU_COLL_REDUCE_SCATTER,
			      SNPU_DTYPE_I32, SNPU_REDOP_MAX, 0, 0));
}

/* Queued back to back, without a sync between: stream order holds. */
TEST_F(lc, collectives_queue_in_stream_order)
{
	unsigned int r;
	uint64_t out[NDEV];

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	ASSERT_EQ(0, put_inputs(self, NDEV, SNPU_COLL_ALLREDUCE,
				SNPU_DTYPE_I32, COUNT));
	/* recv = sum; then send = recv of rank 1, broadcast in place. */
	ASSERT_EQ(0, queue_coll(self, NDEV, SNPU_COLL_ALLREDUCE,
				SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0, COUNT, 0));
	for (r = 0; r < NDEV; r++)
		ASSERT_EQ(0, snpu_comm_broadcast(self->comm[r],
						 self->stream[r],
						 self->recv[r], self->recv[r],
						 COUNT, SNPU_DTYPE_I32, 1));
	ASSERT_EQ(0, sync_all(self, NDEV, NULL));
	for (r = 0; r < NDEV; r++)
		out[r] = self->recv[r];
	EXPECT_EQ(0, check_ranks(_metadata, self, NDEV, SNPU_COLL_ALLREDUCE,
				 SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0, COUNT,
				 out));
}

/*
 * Capture: each rank's body (an all-reduce, then a copy of its result)
 * becomes one graph with a collective node, launched at
 * snpu_graph_end(); a second begin of the key launches it again.
 */
TEST_F(lc, capture_makes_a_collective_node)
{
	const uint64_t key = 0xc011ec7;
	uint64_t copy[NDEV];
	unsigned int r, round;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 3, self->comm));
	for (r = 0; r < 3; r++)
		copy[r] = self->recv[r] + COUNT * 4;
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, put_inputs(self, 3, SNPU_COLL_ALLREDUCE,
					SNPU_DTYPE_F32, COUNT));
		for (r = 0; r < 3; r++) {
			int ret = snpu_graph_begin(self->dev[r],
						   self->stream[r], key);

			if (round) {
				ASSERT_EQ(SNPU_GRAPH_CACHED, ret);
				continue;
			}
			ASSERT_EQ(0, ret);
			ASSERT_EQ(0, snpu_comm_allreduce(self->comm[r],
							 self->stream[r],
							 self->send[r],
							 self->recv[r], COUNT,
							 SNPU_DTYPE_F32,
							 SNPU_REDOP_SUM));
			ASSERT_EQ(0, snpu_memcpy_async(self->dev[r],
						       self->stream[r],
						       SNPU_COPY_D2D, copy[r],
						       self->recv[r],
						       COUNT * 4));
			/* Recorded, not queued: nothing matched yet. */
			ASSERT_EQ(0, snpu_graph_end(self->dev[r]));
		}
		ASSERT_EQ(0, sync_all(self, 3, NULL));
		EXPECT_EQ(0, check_ranks(_metadata, self, 3,
					 SNPU_COLL_ALLREDUCE, SNPU_DTYPE_F32,
					 SNPU_REDOP_SUM, 0, COUNT, copy));
	}
	for (r = 0; r < 3; r++) {
		struct snpu_comm_query q;

		ASSERT_EQ(0, snpu_comm_query(self->comm[r], &q));
		EXPECT_EQ(3ULL, q.queued);
	}
}

/* Off the root, the broadcast node has no send buffer (send 0). */
TEST_F(lc, capture_broadcast_off_the_root)
{
	unsigned int r;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	ASSERT_EQ(0, put_inputs(self, NDEV, SNPU_COLL_BROADCAST,
				SNPU_DTYPE_I32, COUNT));
	for (r = 0; r < NDEV; r++) {
		ASSERT_EQ(0, snpu_graph_begin(self->dev[r], self->stream[r],
					      77));
		/* send == recv off the root is in place: also no send. */
		ASSERT_EQ(0, snpu_comm_broadcast(self->comm[r],
						 self->stream[r],
						 r == 3 ? self->send[r] :
						 r == 1 ? self->recv[r] : 0,
						 self->recv[r], COUNT,
						 SNPU_DTYPE_I32, 3));
		ASSERT_EQ(0, snpu_graph_end(self->dev[r]));
	}
	ASSERT_EQ(0, sync_all(self, NDEV, NULL));
	EXPECT_EQ(0, check_ranks(_metadata, self, NDEV, SNPU_COLL_BROADCAST,
				 SNPU_DTYPE_I32, 0, 3, COUNT, self->recv));
}

/* Slots: the recorded collective runs on buffers bound at each launch. */
TEST_F(lc, capture_with_slots_rebinds_the_buffers)
{
	const uint64_t bytes[2] = { COUNT * 4, COUNT * 4 };
	uint64_t slots[NDEV][2], out[NDEV];
	unsigned int r, round;
	int ret;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, put_inputs(self, 2, SNPU_COLL_ALLREDUCE,
					SNPU_DTYPE_I32, COUNT));
		for (r = 0; r < 2; r++) {
			/* Round 1: the result goes to the upper half. */
			slots[r][0] = self->send[r];
			slots[r][1] = self->recv[r] + round * COUNT * 4;
			out[r] = slots[r][1];
			ret = snpu_graph_begin_slots(self->dev[r], NULL,
						     self->stream[r], 5, 0,
						     slots[r], bytes, 2);
			if (round) {
				ASSERT_EQ(SNPU_GRAPH_CACHED, ret);
				continue;
			}
			ASSERT_EQ(0, ret);
			ASSERT_EQ(0, snpu_comm_allreduce(self->comm[r],
							 self->stream[r],
							 slots[r][0],
							 slots[r][1], COUNT,
							 SNPU_DTYPE_I32,
							 SNPU_REDOP_SUM));
			ASSERT_EQ(0, snpu_graph_end(self->dev[r]));
		}
		ASSERT_EQ(0, sync_all(self, 2, NULL));
		EXPECT_EQ(0, check_ranks(_metadata, self, 2,
					 SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32,
					 SNPU_REDOP_SUM, 0, COUNT, out));
	}
}

/* Through the ring: an SQE built with snpu_prep_coll() is recorded too. */
TEST_F(lc, capture_from_the_ring)
{
	struct snpu_ring ring[2];
	struct snpu_cqe *cqe;
	struct snpu_task *sqe;
	unsigned int r;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	ASSERT_EQ(0, put_inputs(self, 2, SNPU_COLL_ALLGATHER, SNPU_DTYPE_I32,
				COUNT));
	for (r = 0; r < 2; r++) {
		ASSERT_EQ(0, snpu_ring_init(self->dev[r], 8, 0, &ring[r]));
		ASSERT_EQ(0, snpu_graph_begin_ring(self->dev[r], &ring[r],
						   self->stream[r], 9, 42));
		sqe = snpu_ring_get_sqe(&ring[r]);
		ASSERT_NE(NULL, sqe);
		snpu_prep_coll(sqe, self->stream[r],
			       snpu_comm_handle(self->comm[r]),
			       SNPU_COLL_ALLGATHER, SNPU_DTYPE_I32, 0, COUNT,
			       self->send[r], self->recv[r], 0);
		ASSERT_EQ(1, snpu_ring_submit(&ring[r]));
		ASSERT_EQ(0, snpu_graph_end(self->dev[r]));
	}
	for (r = 0; r < 2; r++) {
		/* One completion: the graph launch, with its user_data. */
		ASSERT_EQ(0, snpu_ring_wait_cqe(&ring[r], &cqe));
		EXPECT_EQ(42ULL, cqe->user_data);
		EXPECT_EQ(0, cqe->result);
		snpu_ring_cqe_seen(&ring[r], cqe);
		EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&ring[r], &cqe));
	}
	EXPECT_EQ(0, check_ranks(_metadata, self, 2, SNPU_COLL_ALLGATHER,
				 SNPU_DTYPE_I32, 0, 0, COUNT, self->recv));
	for (r = 0; r < 2; r++)
		snpu_ring_exit(&ring[r]);
}

/*
 * A capture refuses a collective as SUBMIT would: a handle of no rank
 * (ENOENT), buffers that overlap other than in place (EINVAL); nothing
 * is recorded or queued for it.
 */
TEST_F(lc, capture_refuses_like_submit)
{
	struct snpu_comm_query q;
	struct snpu_task t;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	ASSERT_EQ(0, snpu_graph_begin(self->dev[0], self->stream[0], 3));
	snpu_prep_coll(&t, self->stream[0], 0x7ffffff0U, SNPU_COLL_ALLREDUCE,
		       SNPU_DTYPE_I32, SNPU_REDOP_SUM, COUNT, self->send[0],
		       self->recv[0], 0);
	EXPECT_EQ(-ENOENT, snpu_submit(self->dev[0], &t, 1, NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(self->comm[0], self->stream[0],
					       self->send[0],
					       self->send[0] + 4, COUNT,
					       SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	/* Root past the ranks. */
	EXPECT_EQ(-EINVAL, snpu_comm_broadcast(self->comm[0], self->stream[0],
					       self->send[0], self->recv[0],
					       COUNT, SNPU_DTYPE_I32, 2));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev[0]));
	ASSERT_EQ(0, snpu_comm_query(self->comm[0], &q));
	EXPECT_EQ(0ULL, q.queued);
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev[0], self->stream[0],
					     WAIT_NS));
}

/* Rank 0's stream waits behind a callback that the test completes. */
static int serve_one(struct snpu_device *dev)
{
	struct snpu_callback_info cb;
	int ret;

	ret = snpu_callback_wait(dev, WAIT_NS, &cb);
	if (ret)
		return ret;
	if (cb.user_data != BLOCKER)
		return -EBADMSG;
	return snpu_callback_done(dev, cb.cookie, 0);
}

struct destroyer {
	struct snpu_comm *comm;
	int ret;
	int _Atomic done;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->ret = snpu_comm_destroy(d->comm);
	d->done = 1;
	return NULL;
}

/*
 * snpu_comm_destroy() waits for the rank's queued collectives: while
 * rank 1's stream is held, rank 0's destroy does not return; once it is
 * released, the collective completes on both, with its result, and only
 * then does the destroy return.
 */
TEST_F(lc, destroy_waits_for_queued_collectives)
{
	struct timespec ts = { .tv_nsec = 300 * 1000000L };
	struct destroyer d = { 0 };
	pthread_t th;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	ASSERT_EQ(0, put_inputs(self, 2, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32,
				COUNT));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev[1], self->stream[1],
					   BLOCKER));
	ASSERT_EQ(0, queue_coll(self, 2, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32,
				SNPU_REDOP_SUM, 0, COUNT, 0));
	d.comm = self->comm[0];
	self->comm[0] = NULL;
	ASSERT_EQ(0, pthread_create(&th, NULL, destroy_thread, &d));
	nanosleep(&ts, NULL);
	EXPECT_EQ(0, d.done);
	EXPECT_EQ(-ETIMEDOUT, snpu_stream_synchronize(self->dev[0],
						      self->stream[0], 0));
	ASSERT_EQ(0, serve_one(self->dev[1]));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, d.ret);
	EXPECT_EQ(0, sync_all(self, 2, NULL));
	EXPECT_EQ(0, check_ranks(_metadata, self, 2, SNPU_COLL_ALLREDUCE,
				 SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0, COUNT,
				 self->recv));
	/* Rank 0 has left: rank 1's communicator is broken now. */
	EXPECT_EQ(-ECONNRESET, snpu_comm_allreduce(self->comm[1],
						   self->stream[1],
						   self->send[1],
						   self->recv[1], COUNT,
						   SNPU_DTYPE_I32,
						   SNPU_REDOP_SUM));
	EXPECT_EQ(0, snpu_comm_destroy(self->comm[1]));
	self->comm[1] = NULL;
}

/*
 * snpu_comm_abort() leaves at once: the rank's queued collective ends
 * with ECANCELED, the other rank's with ECONNRESET, and the other rank
 * sees the communicator broken.
 */
TEST_F(lc, abort_leaves_at_once)
{
	struct snpu_comm_query q;
	int errs[2];

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 2, self->comm));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev[1], self->stream[1],
					   BLOCKER));
	ASSERT_EQ(0, queue_coll(self, 2, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_F32,
				SNPU_REDOP_SUM, 0, COUNT, 0));
	EXPECT_EQ(0, snpu_comm_abort(self->comm[0]));
	self->comm[0] = NULL;
	EXPECT_EQ(-ECANCELED, snpu_stream_synchronize(self->dev[0],
						      self->stream[0],
						      WAIT_NS));
	ASSERT_EQ(0, serve_one(self->dev[1]));
	EXPECT_NE(0, sync_all(self, 2, errs));
	EXPECT_EQ(-ECONNRESET, errs[1]);
	ASSERT_EQ(0, snpu_comm_query(self->comm[1], &q));
	EXPECT_EQ(-ECONNRESET, q.error);
	EXPECT_EQ(2U, q.joined);
	EXPECT_EQ(0, snpu_comm_destroy(self->comm[1]));
	self->comm[1] = NULL;
}

/* NCCL's way across processes: the id goes to each child by a pipe. */
TEST_F(lc, init_rank_across_processes)
{
	struct snpu_comm_unique_id id;
	int pipes[NDEV][2], status, bad;
	pid_t pid[NDEV];
	unsigned int r;

	ASSERT_EQ(0, snpu_comm_get_unique_id(self->dev[0], &id));
	ASSERT_EQ(0, put_input(self, NDEV, 0, SNPU_COLL_ALLREDUCE,
			       SNPU_DTYPE_F32, COUNT));
	for (r = 1; r < NDEV; r++) {
		ASSERT_EQ(0, pipe(pipes[r]));
		pid[r] = fork();
		ASSERT_LE(0, pid[r]);
		if (!pid[r]) {
			struct snpu_comm_unique_id cid;
			struct snpu_comm *c;

			close(pipes[r][1]);
			if (read(pipes[r][0], &cid, sizeof(cid)) !=
			    sizeof(cid))
				_exit(10);
			/* Its own file of device r (the inherited one is
			 * the parent's context). */
			snpu_close(self->dev[r]);
			if (snpu_open(r, 0, &self->dev[r]) ||
			    snpu_stream_create(self->dev[r], 0, 0,
					       &self->stream[r]) ||
			    snpu_mem_alloc(self->dev[r], BUF_BYTES, 0, 0,
					   &self->send[r]) ||
			    snpu_mem_alloc(self->dev[r], BUF_BYTES, 0, 0,
					   &self->recv[r]))
				_exit(11);
			if (put_input(self, NDEV, r, SNPU_COLL_ALLREDUCE,
				      SNPU_DTYPE_F32, COUNT))
				_exit(12);
			if (snpu_comm_init_rank(self->dev[r], &cid, NDEV, r,
						&c))
				_exit(13);
			if (snpu_comm_user_rank(c) != (int)r ||
			    snpu_comm_count(c) != NDEV)
				_exit(14);
			if (snpu_comm_allreduce(c, self->stream[r],
						self->send[r], self->recv[r],
						COUNT, SNPU_DTYPE_F32,
						SNPU_REDOP_SUM) ||
			    snpu_stream_synchronize(self->dev[r],
						    self->stream[r], WAIT_NS))
				_exit(15);
			if (check_rank(_metadata, self, NDEV, r,
				       SNPU_COLL_ALLREDUCE, SNPU_DTYPE_F32,
				       SNPU_REDOP_SUM, 0, COUNT,
				       self->recv[r]))
				_exit(16);
			_exit(snpu_comm_destroy(c) ? 17 : 0);
		}
		close(pipes[r][0]);
	}
	for (r = 1; r < NDEV; r++) {
		ASSERT_EQ((ssize_t)sizeof(id),
			  write(pipes[r][1], &id, sizeof(id)));
		close(pipes[r][1]);
	}
	ASSERT_EQ(0, snpu_comm_init_rank(self->dev[0], &id, NDEV, 0,
					 &self->comm[0]));
	ASSERT_EQ(0, snpu_comm_allreduce(self->comm[0], self->stream[0],
					 self->send[0], self->recv[0], COUNT,
					 SNPU_DTYPE_F32, SNPU_REDOP_SUM));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev[0], self->stream[0],
					     WAIT_NS));
	bad = check_rank(_metadata, self, NDEV, 0, SNPU_COLL_ALLREDUCE,
			 SNPU_DTYPE_F32, SNPU_REDOP_SUM, 0, COUNT,
			 self->recv[0]);
	EXPECT_EQ(0, bad);
	for (r = 1; r < NDEV; r++) {
		ASSERT_EQ(pid[r], waitpid(pid[r], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	EXPECT_EQ(0, snpu_comm_destroy(self->comm[0]));
	self->comm[0] = NULL;
}

/* Another user cannot join root's communicator, whoever has the id. */
TEST_F(lc, nobody_cannot_join_roots_communicator)
{
	struct snpu_comm_unique_id id;
	int status;
	pid_t pid;

	ASSERT_EQ(0, snpu_comm_get_unique_id(self->dev[0], &id));
	ASSERT_EQ(0, snpu_comm_init_rank(self->dev[0], &id, 2, 0,
					 &self->comm[0]));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct snpu_device *dev;
		struct snpu_comm *c;

		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ||
		    geteuid() != NOBODY)
			_exit(10);
		if (snpu_open(1, 0, &dev))
			_exit(11);
		if (snpu_comm_init_rank(dev, &id, 2, 1, &c) != -EACCES)
			_exit(12);
		/* Its own communicator is open to it. */
		if (snpu_comm_init_all(&dev, 1, &c) || snpu_comm_destroy(c))
			_exit(13);
		snpu_close(dev);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Rank 1 is still free: root's own file takes it. */
	EXPECT_EQ(0, snpu_comm_init_rank(self->dev[1], &id, 2, 1,
					 &self->comm[1]));
}

TEST_F(lc, init_rank_errors)
{
	struct snpu_comm_unique_id id, unknown;
	struct snpu_comm *c = NULL;

	ASSERT_EQ(-EINVAL, snpu_comm_get_unique_id(NULL, &id));
	ASSERT_EQ(-EINVAL, snpu_comm_get_unique_id(self->dev[0], NULL));
	ASSERT_EQ(0, snpu_comm_get_unique_id(self->dev[0], &id));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(NULL, &id, 2, 0, &c));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[0], NULL, 2, 0, &c));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[0], &id, 2, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[0], &id, 0, 0, &c));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[0], &id,
					       SNPU_COMM_MAX_RANKS + 1, 0,
					       &c));
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[0], &id, 2, 2, &c));
	EXPECT_EQ(NULL, c);
	/* An id nobody drew. */
	memset(&unknown, 0x5a, sizeof(unknown));
	EXPECT_EQ(-ENOENT, snpu_comm_init_rank(self->dev[0], &unknown, 2, 0,
					       &c));
	ASSERT_EQ(0, snpu_comm_init_rank(self->dev[0], &id, 3, 0,
					 &self->comm[0]));
	/* The first join fixed 3 ranks; a rank taken; a file with a rank. */
	EXPECT_EQ(-EINVAL, snpu_comm_init_rank(self->dev[1], &id, 2, 1, &c));
	EXPECT_EQ(-EEXIST, snpu_comm_init_rank(self->dev[1], &id, 3, 0, &c));
	EXPECT_EQ(-EEXIST, snpu_comm_init_rank(self->dev[0], &id, 3, 1, &c));
	ASSERT_EQ(0, snpu_comm_init_rank(self->dev[1], &id, 3, 1,
					 &self->comm[1]));
	ASSERT_EQ(0, snpu_comm_init_rank(self->dev[2], &id, 3, 2,
					 &self->comm[2]));
	/* Complete: no more joins. */
	EXPECT_EQ(-ENOENT, snpu_comm_init_rank(self->dev[3], &id, 3, 2, &c));
	EXPECT_EQ(NULL, c);
}

TEST_F(lc, init_all_errors)
{
	struct snpu_device *dup[2] = { self->dev[0], self->dev[0] };
	struct snpu_device *hole[2] = { self->dev[0], NULL };
	struct snpu_device *many[SNPU_COMM_MAX_RANKS + 1];
	unsigned int i;

	for (i = 0; i < SNPU_COMM_MAX_RANKS + 1; i++)
		many[i] = self->dev[0];
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(NULL, 2, self->comm));
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(self->dev, 2, NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(self->dev, 0, self->comm));
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(many, SNPU_COMM_MAX_RANKS + 1,
					      self->comm));
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(hole, 2, self->comm));
	/* One file is one rank at most. */
	EXPECT_EQ(-EINVAL, snpu_comm_init_all(dup, 2, self->comm));
	for (i = 0; i < NDEV; i++)
		EXPECT_EQ(NULL, self->comm[i]);
}

/* Join @n one-rank communicators on @dev. Return: how many joined. */
static unsigned int fill_ranks(struct snpu_device *dev, struct snpu_comm **c,
			       unsigned int n, int *err)
{
	struct snpu_comm_unique_id id;
	unsigned int i;

	*err = 0;
	for (i = 0; i < n; i++) {
		*err = snpu_comm_get_unique_id(dev, &id);
		if (!*err)
			*err = snpu_comm_init_rank(dev, &id, 1, 0, &c[i]);
		if (*err)
			break;
	}
	return i;
}

/*
 * init_all fails at rank 2 (its file holds SNPU_COMM_MAX_PER_FILE ranks):
 * -ENOSPC, and ranks 0 and 1, joined before, have left: their files
 * still take SNPU_COMM_MAX_PER_FILE ranks each.
 */
TEST_F(lc, init_all_failure_leaves_nothing)
{
	static struct snpu_comm *full[SNPU_COMM_MAX_PER_FILE];
	static struct snpu_comm *probe[SNPU_COMM_MAX_PER_FILE + 1];
	unsigned int i, d, n;
	int err;

	ASSERT_EQ((unsigned int)SNPU_COMM_MAX_PER_FILE,
		  fill_ranks(self->dev[2], full, SNPU_COMM_MAX_PER_FILE,
			     &err));
	EXPECT_EQ(-ENOSPC, snpu_comm_init_all(self->dev, NDEV, self->comm));
	for (i = 0; i < NDEV; i++)
		EXPECT_EQ(NULL, self->comm[i]);
	for (d = 0; d < 2; d++) {
		n = fill_ranks(self->dev[d], probe, SNPU_COMM_MAX_PER_FILE + 1,
			       &err);
		EXPECT_EQ((unsigned int)SNPU_COMM_MAX_PER_FILE, n);
		EXPECT_EQ(-ENOSPC, err);
		for (i = 0; i < n; i++)
			EXPECT_EQ(0, snpu_comm_destroy(probe[i]));
	}
	for (i = 0; i < SNPU_COMM_MAX_PER_FILE; i++)
		EXPECT_EQ(0, snpu_comm_destroy(full[i]));
	/* Room again: it succeeds. */
	EXPECT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
}

/* A refused collective queues nothing, on any rank. */
TEST_F(lc, collective_errors)
{
	struct snpu_comm *c;
	struct snpu_comm_query q;
	uint64_t s, rv;

	ASSERT_EQ(0, snpu_comm_init_all(self->dev, NDEV, self->comm));
	c = self->comm[0];
	s = self->send[0];
	rv = self->recv[0];
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(NULL, self->stream[0], s, rv,
					       COUNT, SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s, rv, 0,
					       SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s, rv,
					       COUNT, 3, SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s, rv,
					       COUNT, SNPU_DTYPE_I32, 0));
	EXPECT_EQ(-EINVAL, snpu_comm_reduce_scatter(c, self->stream[0], s, rv,
						    COUNT, SNPU_DTYPE_F32,
						    3));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s + 2, rv,
					       COUNT, SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_broadcast(c, self->stream[0], s, rv,
					       COUNT, SNPU_DTYPE_I32, NDEV));
	/* Overlapping, not in place. */
	EXPECT_EQ(-EINVAL, snpu_comm_allgather(c, self->stream[0], rv + 4, rv,
					       COUNT, SNPU_DTYPE_I32));
	/* Past the allocation: all-gather's recv is NDEV * count. */
	EXPECT_EQ(-EFAULT, snpu_comm_allgather(c, self->stream[0], s,
					       rv + 4 * 4, COUNT,
					       SNPU_DTYPE_I32));
	EXPECT_EQ(-EFAULT, snpu_comm_allreduce(c, self->stream[0],
					       s + BUF_BYTES * 16, rv, COUNT,
					       SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	EXPECT_EQ(-ENOENT, snpu_comm_allreduce(c, 0x7ffffff0U, s, rv, COUNT,
					       SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	ASSERT_EQ(0, snpu_comm_query(c, &q));
	EXPECT_EQ(0ULL, q.queued);
	ASSERT_EQ(0, put_inputs(self, NDEV, SNPU_COLL_ALLREDUCE,
				SNPU_DTYPE_I32, COUNT));
	/* The k-th of rank 1 fixes it; rank 0's differs. */
	EXPECT_EQ(0, snpu_comm_allreduce(self->comm[1], self->stream[1],
					 self->send[1], self->recv[1], COUNT,
					 SNPU_DTYPE_I32, SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s, rv,
					       COUNT - 1, SNPU_DTYPE_I32,
					       SNPU_REDOP_SUM));
	EXPECT_EQ(-EINVAL, snpu_comm_allreduce(c, self->stream[0], s, rv,
					       COUNT, SNPU_DTYPE_I32,
					       SNPU_REDOP_MAX));
	ASSERT_EQ(0, snpu_comm_query(c, &q));
	EXPECT_EQ(0ULL, q.queued);
	/* The matching one runs; so do the other ranks'. */
	EXPECT_EQ(0, snpu_comm_allreduce(c, self->stream[0], s, rv, COUNT,
					 SNPU_DTYPE_I32, SNPU_REDOP_SUM));
	EXPECT_EQ(0, snpu_comm_allreduce(self->comm[2], self->stream[2],
					 self->send[2], self->recv[2], COUNT,
					 SNPU_DTYPE_I32, SNPU_REDOP_SUM));
	EXPECT_EQ(0, snpu_comm_allreduce(self->comm[3], self->stream[3],
					 self->send[3], self->recv[3], COUNT,
					 SNPU_DTYPE_I32, SNPU_REDOP_SUM));
	EXPECT_EQ(0, sync_all(self, NDEV, NULL));
	EXPECT_EQ(0, check_ranks(_metadata, self, NDEV, SNPU_COLL_ALLREDUCE,
				 SNPU_DTYPE_I32, SNPU_REDOP_SUM, 0, COUNT,
				 self->recv));
}

TEST_F(lc, null_arguments)
{
	struct snpu_comm_query q;

	EXPECT_EQ(-EINVAL, snpu_comm_count(NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_user_rank(NULL));
	EXPECT_EQ(0U, snpu_comm_handle(NULL));
	EXPECT_EQ(NULL, snpu_comm_device(NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_query(NULL, &q));
	EXPECT_EQ(-EINVAL, snpu_comm_destroy(NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_abort(NULL));
	EXPECT_EQ(-EINVAL, snpu_comm_broadcast(NULL, 0, 0, 0, 1,
					       SNPU_DTYPE_I32, 0));
	EXPECT_EQ(-EINVAL, snpu_comm_allgather(NULL, 0, 0, 0, 1,
					       SNPU_DTYPE_I32));
	EXPECT_EQ(-EINVAL, snpu_comm_reduce_scatter(NULL, 0, 0, 0, 1,
						    SNPU_DTYPE_I32,
						    SNPU_REDOP_SUM));
	ASSERT_EQ(0, snpu_comm_init_all(self->dev, 1, self->comm));
	EXPECT_EQ(-EINVAL, snpu_comm_query(self->comm[0], NULL));
}

TEST_HARNESS_MAIN
