// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of graph capture (lib/capture.c, lib/graph.c): the
 * definitions the recorder builds from a body (edges from read after
 * write, write after read and write after write, deduplicated), what
 * breaks a capture and how its tasks then go the ordinary way, the errno
 * of a task refused during recording, the cache of keys, and collectives
 * (nodes with their communicator's extents, refusals as SUBMIT's).
 *
 * The device is a struct snpu_device on /dev/null whose graph_ops are a
 * test double: it keeps what would be created and submitted. Addresses
 * are made up: nothing runs. A ring is plain memory flagged
 * SNPU_RING_SQPOLL, so that a submit only publishes its tail.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snpu.h"
#include "../internal.h"

#include "kselftest_harness.h"

#define S	5U		/* the captured stream */
#define OTHER	6U		/* another stream */
#define A	0x100000ULL	/* made-up device buffers */
#define B	0x200000ULL
#define C	0x300000ULL
#define D	0x400000ULL
#define N	4096ULL		/* their bytes */
#define BAD	0x10ULL		/* no allocation: the double's EFAULT */

/* ---- the recorder alone ---------------------------------------------- */

static struct snpu_task launch3(uint32_t kernel, uint64_t c, uint64_t a,
				uint64_t b, uint64_t bytes)
{
	struct snpu_kernel_arg args[3] = {
		snpu_arg_buf(c, bytes), snpu_arg_buf(a, bytes),
		snpu_arg_buf(b, bytes),
	};
	struct snpu_task t;

	snpu_prep_launch(&t, S, kernel, 1, args, 3);
	return t;
}

static struct snpu_task fill(uint64_t dst, uint64_t bytes)
{
	struct snpu_kernel_arg args[2] = {
		snpu_arg_buf(dst, bytes), snpu_arg_u64(7),
	};
	struct snpu_task t;

	snpu_prep_launch(&t, S, SNPU_KERNEL_FILL, 1, args, 2);
	return t;
}

static struct snpu_task mset(uint64_t addr, uint64_t bytes)
{
	struct snpu_task t;

	snpu_prep_memset(&t, S, addr, 1, bytes);
	return t;
}

static struct snpu_task d2d(uint64_t dst, uint64_t src, uint64_t bytes)
{
	struct snpu_task t;

	snpu_prep_copy(&t, S, SNPU_COPY_D2D, dst, src, bytes);
	return t;
}

FIXTURE(rec)
{
	struct snpu_rec r;
};

FIXTURE_SETUP(rec)
{
	snpu_rec_init(&self->r);
}

FIXTURE_TEARDOWN(rec)
{
	snpu_rec_fini(&self->r);
}

/* Add @t, expecting it to be accepted. */
static int add(struct snpu_rec *r, struct snpu_task t)
{
	int ret = snpu_rec_check(&t, SNPU_CAP_TEST_HOOKS);

	return ret ? ret : snpu_rec_add(r, &t);
}

/* The predecessors of node @n, as a bit mask of node indices < 32. */
static uint32_t preds(const struct snpu_rec *r, uint32_t n)
{
	uint32_t i, m = 0;

	for (i = r->fanin_offsets[n]; i < r->fanin_offsets[n + 1]; i++)
		m |= 1U << r->fanin[i];
	return m;
}

TEST_F(rec, read_after_write)
{
	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	ASSERT_EQ(0, add(&self->r, d2d(B, A, N)));
	ASSERT_EQ(2U, self->r.nodes_count);
	EXPECT_EQ(0U, preds(&self->r, 0));
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
	EXPECT_EQ(1U, self->r.edges_count);
}

TEST_F(rec, write_after_read)
{
	ASSERT_EQ(0, add(&self->r, d2d(B, A, N)));	/* reads A */
	ASSERT_EQ(0, add(&self->r, fill(A, N)));	/* writes A */
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
}

TEST_F(rec, write_after_write)
{
	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	ASSERT_EQ(0, add(&self->r, fill(A, N)));
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
}

TEST_F(rec, read_after_read_is_free)
{
	ASSERT_EQ(0, add(&self->r, d2d(B, A, N)));
	ASSERT_EQ(0, add(&self->r, d2d(C, A, N)));
	EXPECT_EQ(0U, preds(&self->r, 1));
	EXPECT_EQ(0U, self->r.edges_count);
}

TEST_F(rec, disjoint_and_adjacent_ranges)
{
	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	/* [A + N, A + 2N) touches [A, A + N) but shares no byte. */
	ASSERT_EQ(0, add(&self->r, mset(A + N, N)));
	ASSERT_EQ(0, add(&self->r, d2d(B, A + N, 4)));
	EXPECT_EQ(0U, preds(&self->r, 1));
	EXPECT_EQ(1U << 1, preds(&self->r, 2));
}

TEST_F(rec, partial_overlap)
{
	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	ASSERT_EQ(0, add(&self->r, d2d(B, A + N - 4, 8)));
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
}

/* A write in the middle of a range splits it: each side keeps its node. */
TEST_F(rec, split_range)
{
	ASSERT_EQ(0, add(&self->r, mset(A, 3 * N)));		/* 0 */
	ASSERT_EQ(0, add(&self->r, mset(A + N, N)));		/* 1 */
	ASSERT_EQ(0, add(&self->r, d2d(B, A, 4)));		/* 2: head */
	ASSERT_EQ(0, add(&self->r, d2d(C, A + 2 * N, 4)));	/* 3: tail */
	ASSERT_EQ(0, add(&self->r, d2d(D, A + N, 4)));		/* 4: middle */
	ASSERT_EQ(0, add(&self->r, d2d(D + N, A, 3 * N)));	/* 5: all */
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
	EXPECT_EQ(1U << 0, preds(&self->r, 2));
	EXPECT_EQ(1U << 0, preds(&self->r, 3));
	EXPECT_EQ(1U << 1, preds(&self->r, 4));
	EXPECT_EQ((1U << 0) | (1U << 1), preds(&self->r, 5));
}

/* Two buffers of one writer; a read and a write of one buffer: one edge. */
TEST_F(rec, dedup)
{
	ASSERT_EQ(0, add(&self->r, mset(A, 2 * N)));			/* 0 */
	ASSERT_EQ(0, add(&self->r, launch3(SNPU_KERNEL_ADD_I32,
					   C, A, A + N, N)));		/* 1 */
	ASSERT_EQ(0, add(&self->r, launch3(SNPU_KERNEL_ADD_I32,
					   C, C, C, N)));		/* 2 */
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
	EXPECT_EQ(1U << 1, preds(&self->r, 2));
	EXPECT_EQ(2U, self->r.edges_count);
	EXPECT_EQ(0U, self->r.fanin_offsets[0]);
	EXPECT_EQ(2U, self->r.fanin_offsets[3]);
}

/* A write after many reads depends on each reader, in order. */
TEST_F(rec, fanin_sorted)
{
	unsigned int i;

	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, add(&self->r, d2d(B + i * N, A, N)));
	ASSERT_EQ(0, add(&self->r, fill(A, N)));
	EXPECT_EQ(0x3fU, preds(&self->r, 6));
	for (i = self->r.fanin_offsets[6] + 1;
	     i < self->r.fanin_offsets[7]; i++)
		EXPECT_LT(self->r.fanin[i - 1], self->r.fanin[i]);
	/* Every predecessor is an earlier node. */
	for (i = 0; i < self->r.nodes_count; i++)
		for (uint32_t e = self->r.fanin_offsets[i];
		     e < self->r.fanin_offsets[i + 1]; e++)
			EXPECT_LT(self->r.fanin[e], i);
}

/*
 * SOFTMAX_XENT_F32 writes its loss and its dlogits (arguments 0 and 1):
 * a later reader of dlogits follows it, a later reader of the logits
 * (only read) does not.
 */
TEST_F(rec, softmax_xent_writes_dlogits)
{
	struct snpu_kernel_arg args[6] = {
		snpu_arg_buf(A, 64), snpu_arg_buf(B, 640),
		snpu_arg_buf(C, 640), snpu_arg_buf(D, 64),
		snpu_arg_u64(10), snpu_arg_f32(1.0f),
	};
	struct snpu_task t;

	snpu_prep_launch(&t, S, SNPU_KERNEL_SOFTMAX_XENT_F32, 2, args, 6);
	ASSERT_EQ(0, add(&self->r, t));				/* 0 */
	ASSERT_EQ(0, add(&self->r, d2d(D + N, B, 640)));	/* 1: dlogits */
	ASSERT_EQ(0, add(&self->r, d2d(D + 2 * N, C, 640)));	/* 2: logits */
	ASSERT_EQ(0, add(&self->r, d2d(D + 3 * N, A, 64)));	/* 3: loss */
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
	EXPECT_EQ(0U, preds(&self->r, 2));
	EXPECT_EQ(1U << 0, preds(&self->r, 3));
}

/* Scalars and the kernel's own arguments: only buffers make edges. */
TEST_F(rec, scalars_make_no_edge)
{
	struct snpu_kernel_arg spin = snpu_arg_u64(A);
	struct snpu_task t;

	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	snpu_prep_launch(&t, S, SNPU_KERNEL_SPIN, 1, &spin, 1);
	ASSERT_EQ(0, add(&self->r, t));
	EXPECT_EQ(0U, preds(&self->r, 1));
}

/* The node as the kernel takes it: no stream, no user_data, refs plain. */
TEST_F(rec, node_fields)
{
	struct snpu_task t = d2d(B, A, N);
	const struct snpu_graph_node *n;

	t.user_data = 99;
	ASSERT_EQ(0, add(&self->r, t));
	n = &self->r.nodes[0];
	EXPECT_EQ((uint32_t)SNPU_OP_COPY, n->task.op);
	EXPECT_EQ(0U, n->task.stream);
	EXPECT_EQ(0U, n->task.user_data);
	EXPECT_EQ(B, n->task.copy.dst);
	for (int i = 0; i < 6; i++)
		EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_ADDR, n->ref[i]);
	EXPECT_EQ(0U, n->reserved);
}

/* Ranges inside a slot become offsets into it; the rest stay plain. */
TEST_F(rec, slots_bind)
{
	const struct snpu_graph_node *n;

	self->r.slot_base[0] = A;
	self->r.slot_bytes[0] = N;
	self->r.slot_base[1] = C;
	self->r.slot_bytes[1] = 2 * N;
	self->r.slots_count = 2;
	ASSERT_EQ(0, add(&self->r, d2d(C + N, A + 8, 16)));
	ASSERT_EQ(0, add(&self->r, launch3(SNPU_KERNEL_ADD_I32, B, A, C + 4,
					   N)));
	ASSERT_EQ(0, add(&self->r, mset(C + N + 4, 4)));
	n = &self->r.nodes[0];
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(1), n->ref[0]);
	EXPECT_EQ(N, n->task.copy.dst);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(0), n->ref[1]);
	EXPECT_EQ(8U, n->task.copy.src);
	n = &self->r.nodes[1];
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_ADDR, n->ref[0]);
	EXPECT_EQ(B, n->task.launch.args[0].value);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(0), n->ref[1]);
	EXPECT_EQ(0U, n->task.launch.args[1].value);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(1), n->ref[2]);
	EXPECT_EQ(4U, n->task.launch.args[2].value);
	/* Edges from the recorded addresses: the memset after the copy. */
	EXPECT_EQ(1U << 0, preds(&self->r, 2));
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
}

/* A range that is partly in a slot cannot be bound. */
TEST_F(rec, slots_partial)
{
	struct snpu_task t = mset(A + N - 4, 8);

	self->r.slot_base[0] = A;
	self->r.slot_bytes[0] = N;
	self->r.slots_count = 1;
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	t = mset(A - 4, 8);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	EXPECT_EQ(0U, self->r.nodes_count);
	t = mset(A + N, 8);
	EXPECT_EQ(0, snpu_rec_add(&self->r, &t));
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_ADDR, self->r.nodes[0].ref[0]);
}

TEST_F(rec, unsupported)
{
	struct snpu_task t;

	snpu_prep_host_func(&t, S, 1);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	snpu_prep_copy(&t, S, SNPU_COPY_H2D, A, 0x1000, N);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	snpu_prep_copy(&t, S, SNPU_COPY_D2H, 0x1000, A, N);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	snpu_prep_stream_wait(&t, S, 3);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	snpu_prep_graph(&t, S, 1, NULL, 0, 0);
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	EXPECT_EQ(0U, self->r.nodes_count);
}

/* A collective of rank @rank (4 ranks) on stream S. */
static struct snpu_task coll(uint32_t kind, uint64_t send, uint64_t recv,
			     uint64_t count, uint32_t root)
{
	struct snpu_task t;

	snpu_prep_coll(&t, S, 3, kind, SNPU_DTYPE_I32,
		       kind == SNPU_COLL_ALLREDUCE ||
		       kind == SNPU_COLL_REDUCE_SCATTER ? SNPU_REDOP_SUM : 0,
		       count, send, recv, root);
	return t;
}

static int add_coll(struct snpu_rec *r, struct snpu_task t, uint32_t rank)
{
	int ret = snpu_rec_check(&t, 0);

	return ret ? ret : snpu_rec_add_coll(r, &t, 4, rank);
}

/*
 * A collective node writes recv and reads send: edges as for any node;
 * @ref[0] binds recv, @ref[1] send; stream and user_data cleared.
 */
TEST_F(rec, coll_node)
{
	struct snpu_task t = coll(SNPU_COLL_ALLREDUCE, A, B, N / 4, 0);
	const struct snpu_graph_node *n;

	self->r.slot_base[0] = A;
	self->r.slot_bytes[0] = N;
	self->r.slot_base[1] = B;
	self->r.slot_bytes[1] = N;
	self->r.slots_count = 2;
	t.user_data = 5;
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	ASSERT_EQ(0, add_coll(&self->r, t, 1));
	ASSERT_EQ(0, add(&self->r, d2d(C, B, N)));
	ASSERT_EQ(0, add(&self->r, mset(A, 4)));
	n = &self->r.nodes[1];
	EXPECT_EQ((uint32_t)SNPU_OP_COLL, n->task.op);
	EXPECT_EQ(0U, n->task.stream);
	EXPECT_EQ(0U, n->task.user_data);
	EXPECT_EQ(3U, n->task.coll.comm);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(1), n->ref[0]);
	EXPECT_EQ(0U, n->task.coll.recv);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(0), n->ref[1]);
	EXPECT_EQ(0U, n->task.coll.send);
	EXPECT_EQ(1U << 0, preds(&self->r, 1));	/* reads what 0 wrote */
	EXPECT_EQ(1U << 1, preds(&self->r, 2));	/* reads what 1 wrote */
	/* Writes what 1 read and 0 wrote. */
	EXPECT_EQ((1U << 0) | (1U << 1), preds(&self->r, 3));
}

/* The extents are the communicator's: all-gather's recv, n * count. */
TEST_F(rec, coll_extents_by_nranks)
{
	ASSERT_EQ(0, add_coll(&self->r, coll(SNPU_COLL_ALLGATHER, A, B,
					     16, 0), 2));
	ASSERT_EQ(0, add(&self->r, d2d(C, B + 3 * 64, 64)));
	ASSERT_EQ(0, add(&self->r, d2d(D, B + 4 * 64, 64)));
	EXPECT_EQ(1U << 0, preds(&self->r, 1));
	EXPECT_EQ(0U, preds(&self->r, 2));
	/* Reduce-scatter's send, n * count: a write of its end waits. */
	ASSERT_EQ(0, add_coll(&self->r, coll(SNPU_COLL_REDUCE_SCATTER, C + N,
					     D + N, 16, 0), 2));
	ASSERT_EQ(0, add(&self->r, mset(C + N + 3 * 64, 64)));
	EXPECT_EQ(1U << 3, preds(&self->r, 4));
}

/* Off a broadcast's root, no send: in place, it is cleared. */
TEST_F(rec, coll_broadcast_off_the_root)
{
	const struct snpu_graph_node *n;

	ASSERT_EQ(0, add_coll(&self->r, coll(SNPU_COLL_BROADCAST, B, B, 16,
					     2), 1));
	n = &self->r.nodes[0];
	EXPECT_EQ(0U, n->task.coll.send);
	EXPECT_EQ(B, n->task.coll.recv);
	EXPECT_EQ(0U, n->ref[1]);
	ASSERT_EQ(0, add_coll(&self->r, coll(SNPU_COLL_BROADCAST, 0, C, 16,
					     2), 3));
	/* The root keeps it. */
	ASSERT_EQ(0, add_coll(&self->r, coll(SNPU_COLL_BROADCAST, A, D, 16,
					     2), 2));
	EXPECT_EQ(A, self->r.nodes[2].task.coll.send);
	EXPECT_EQ(3U, self->r.nodes_count);
}

/* What SUBMIT would refuse for the rank is not recorded. */
TEST_F(rec, coll_refused)
{
	/* Root past the ranks; a rank past them. */
	EXPECT_EQ(SNPU_REC_UNSUPPORTED,
		  add_coll(&self->r, coll(SNPU_COLL_BROADCAST, A, B, 16, 4), 0));
	EXPECT_EQ(SNPU_REC_UNSUPPORTED,
		  add_coll(&self->r, coll(SNPU_COLL_ALLREDUCE, A, B, 16, 0),
			   4));
	/* Overlap other than in place; off the root, a send of its own. */
	EXPECT_EQ(SNPU_REC_UNSUPPORTED,
		  add_coll(&self->r, coll(SNPU_COLL_ALLREDUCE, A, A + 4, 16,
					  0), 0));
	EXPECT_EQ(SNPU_REC_UNSUPPORTED,
		  add_coll(&self->r, coll(SNPU_COLL_BROADCAST, A, B, 16, 0),
			   1));
	/* Not a collective. */
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, add_coll(&self->r, mset(A, N), 0));
	/* The descriptor's own checks. */
	EXPECT_EQ(-EINVAL, add_coll(&self->r, coll(SNPU_COLL_ALLREDUCE, A, B,
						   0, 0), 0));
	EXPECT_EQ(0U, self->r.nodes_count);
}

TEST_F(rec, event_pair_is_order)
{
	struct snpu_task t;

	ASSERT_EQ(0, add(&self->r, mset(A, N)));
	snpu_prep_event_record(&t, S, 3);
	ASSERT_EQ(0, snpu_rec_add(&self->r, &t));
	snpu_prep_stream_wait(&t, S, 3);
	ASSERT_EQ(0, snpu_rec_add(&self->r, &t));
	ASSERT_EQ(0, add(&self->r, d2d(B, A, N)));
	EXPECT_EQ(2U, self->r.nodes_count);
	EXPECT_EQ(1U, self->r.events_count);
}

TEST_F(rec, node_limit)
{
	struct snpu_task t = mset(A, N);
	unsigned int i;

	for (i = 0; i < SNPU_GRAPH_MAX_NODES; i++)
		ASSERT_EQ(0, snpu_rec_add(&self->r, &t));
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &t));
	EXPECT_EQ((uint32_t)SNPU_GRAPH_MAX_NODES, self->r.nodes_count);
	/* A chain: one edge each. */
	EXPECT_EQ((uint32_t)(SNPU_GRAPH_MAX_NODES - 1), self->r.edges_count);
}

/* Readers of 2000 separate writes: 2000 edges each, past the limit. */
TEST_F(rec, edge_limit)
{
	struct snpu_task wr = mset(A, 4), rd = d2d(B, A, 8000);
	uint32_t edges, nodes;
	unsigned int i;

	for (i = 0; i < 2000; i++) {
		wr.memset.addr = A + 4 * i;
		ASSERT_EQ(0, snpu_rec_add(&self->r, &wr));
	}
	for (i = 0; i < SNPU_GRAPH_MAX_EDGES / 2000; i++) {
		rd.copy.dst = B + 8000 * i;
		ASSERT_EQ(0, snpu_rec_add(&self->r, &rd));
	}
	EXPECT_EQ(2000 * i, self->r.edges_count);
	edges = self->r.edges_count;
	nodes = self->r.nodes_count;
	rd.copy.dst = B + 8000 * i;
	EXPECT_EQ(SNPU_REC_UNSUPPORTED, snpu_rec_add(&self->r, &rd));
	EXPECT_EQ(edges, self->r.edges_count);
	EXPECT_EQ(nodes, self->r.nodes_count);
}

TEST(rec_check_errno)
{
	struct snpu_kernel_arg args[2] = {
		snpu_arg_buf(A, N), snpu_arg_u64(1),
	};
	struct snpu_kernel_arg spin = snpu_arg_u64(10);
	struct snpu_task t;

	snpu_prep_launch(&t, S, SNPU_KERNEL_FILL, 0, args, 2);
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));		/* block_dim 0 */
	t.launch.block_dim = 65536;
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));		/* too many */
	t.launch.block_dim = 1;
	EXPECT_EQ(0, snpu_rec_check(&t, 0));
	t.launch.args[0].bytes = N - 2;				/* not x4 */
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));
	t.launch.args[0].bytes = N;
	t.launch.kernel = SNPU_KERNEL_COUNT;
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));
	t = mset(A, N);
	t.memset.value = 256;
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));
	t = mset(A, 0);
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));
	t = d2d(A, B, N);
	t.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_rec_check(&t, 0));
	snpu_prep_launch(&t, S, SNPU_KERNEL_SPIN, 1, &spin, 1);
	EXPECT_EQ(-EOPNOTSUPP, snpu_rec_check(&t, 0));
	EXPECT_EQ(0, snpu_rec_check(&t, SNPU_CAP_TEST_HOOKS));
}

/* ---- random bodies: any order the edges allow gives the same bytes ---- */

/*
 * A model of the device memory [A, A + MEM): the nodes the recorder
 * keeps, run on the CPU one at a time. When the edges miss a conflict,
 * some order they allow swaps the two nodes, and the bytes differ.
 */
#define MEM	512U

static uint8_t *at(uint8_t *mem, uint64_t addr)
{
	return mem + (addr - A);
}

static void run_node(uint8_t *mem, const struct snpu_task *t)
{
	uint64_t i, n;
	uint32_t x, y;

	switch (t->op) {
	case SNPU_OP_MEMSET:
		memset(at(mem, t->memset.addr), (int)t->memset.value,
		       t->memset.bytes);
		return;
	case SNPU_OP_COPY:
		for (i = 0; i < t->copy.bytes; i++)
			*at(mem, t->copy.dst + i) = *at(mem, t->copy.src + i);
		return;
	}
	n = t->launch.args[0].bytes / 4;
	for (i = 0; i < n; i++) {
		uint8_t *c = at(mem, t->launch.args[0].value + 4 * i);

		switch (t->launch.kernel) {
		case SNPU_KERNEL_FILL:
			x = (uint32_t)t->launch.args[1].value;
			memcpy(c, &x, 4);
			break;
		case SNPU_KERNEL_COPY:
			memcpy(c, at(mem, t->launch.args[1].value + 4 * i), 4);
			break;
		default:
			memcpy(&x, at(mem, t->launch.args[1].value + 4 * i), 4);
			memcpy(&y, at(mem, t->launch.args[2].value + 4 * i), 4);
			x = t->launch.kernel == SNPU_KERNEL_ADD_I32 ?
				x + y : x * y;
			memcpy(c, &x, 4);
		}
	}
}

/* A random range of @bytes inside the model, 4-byte aligned. */
static uint64_t rnd_at(unsigned int *seed, uint64_t bytes)
{
	return A + 4 * (rand_r(seed) % ((MEM - bytes) / 4 + 1));
}

static struct snpu_task rnd_task(unsigned int *seed)
{
	uint64_t bytes = 4 * (1 + rand_r(seed) % 24);
	struct snpu_task t;

	switch (rand_r(seed) % 6) {
	case 0:
		return mset(rnd_at(seed, bytes), bytes);
	case 1:
		t = d2d(rnd_at(seed, bytes), rnd_at(seed, bytes), bytes);
		return t;
	case 2:
		t = fill(rnd_at(seed, bytes), bytes);
		t.launch.args[1].value = (uint32_t)rand_r(seed);
		return t;
	case 3: {
		struct snpu_kernel_arg args[2] = {
			snpu_arg_buf(rnd_at(seed, bytes), bytes),
			snpu_arg_buf(rnd_at(seed, bytes), bytes),
		};

		snpu_prep_launch(&t, S, SNPU_KERNEL_COPY, 1, args, 2);
		return t;
	}
	case 4:
		return launch3(SNPU_KERNEL_ADD_I32, rnd_at(seed, bytes),
			       rnd_at(seed, bytes), rnd_at(seed, bytes),
			       bytes);
	default:
		return launch3(SNPU_KERNEL_MUL_I32, rnd_at(seed, bytes),
			       rnd_at(seed, bytes), rnd_at(seed, bytes),
			       bytes);
	}
}

/*
 * Run the recorded nodes in a random order that the edges allow: a node
 * is ready when all its predecessors ran.
 */
static void run_any_order(const struct snpu_rec *r, uint8_t *mem,
			  unsigned int *seed)
{
	uint32_t n = r->nodes_count, i, e, k, nready;
	uint32_t *left = calloc(n, sizeof(*left));
	uint32_t *ready = calloc(n, sizeof(*ready));
	uint8_t *done = calloc(n, 1);

	for (i = 0; i < n; i++)
		left[i] = r->fanin_offsets[i + 1] - r->fanin_offsets[i];
	nready = 0;
	for (i = 0; i < n; i++)
		if (!left[i])
			ready[nready++] = i;
	while (nready) {
		k = rand_r(seed) % nready;
		i = ready[k];
		ready[k] = ready[--nready];
		run_node(mem, &r->nodes[i].task);
		done[i] = 1;
		/* Successors: the nodes whose fanin names i. */
		for (k = i + 1; k < n; k++)
			for (e = r->fanin_offsets[k];
			     e < r->fanin_offsets[k + 1]; e++)
				if (r->fanin[e] == i && !--left[k])
					ready[nready++] = k;
	}
	for (i = 0; i < n; i++)
		assert(done[i]);
	free(left);
	free(ready);
	free(done);
}

TEST_F(rec, random_bodies_any_order)
{
	static uint8_t init[MEM], in_order[MEM], mem[MEM];
	struct snpu_task body[64];
	unsigned int seed = 1, iter, i, n, k;
	uint32_t e;

	for (iter = 0; iter < 400; iter++) {
		snpu_rec_fini(&self->r);
		snpu_rec_init(&self->r);
		for (i = 0; i < MEM; i++)
			init[i] = (uint8_t)rand_r(&seed);
		n = 1 + rand_r(&seed) % 64;
		memcpy(in_order, init, MEM);
		for (i = 0; i < n; i++) {
			body[i] = rnd_task(&seed);
			ASSERT_EQ(0, snpu_rec_check(&body[i], 0));
			ASSERT_EQ(0, snpu_rec_add(&self->r, &body[i]));
			run_node(in_order, &body[i]);
		}
		ASSERT_EQ(n, self->r.nodes_count);
		/* The CSR as GRAPH_CREATE wants it. */
		ASSERT_EQ(0U, self->r.fanin_offsets[0]);
		ASSERT_EQ(self->r.edges_count, self->r.fanin_offsets[n]);
		for (i = 0; i < n; i++)
			for (e = self->r.fanin_offsets[i];
			     e < self->r.fanin_offsets[i + 1]; e++) {
				ASSERT_LT(self->r.fanin[e], i);
				if (e > self->r.fanin_offsets[i])
					ASSERT_LT(self->r.fanin[e - 1],
						  self->r.fanin[e]);
			}
		for (k = 0; k < 8; k++) {
			memcpy(mem, init, MEM);
			run_any_order(&self->r, mem, &seed);
			ASSERT_EQ(0, memcmp(mem, in_order, MEM));
		}
	}
}

/*
 * The test of the test: the same bodies without their edges are not
 * order-free, so the comparison above can fail.
 */
TEST_F(rec, random_bodies_need_their_edges)
{
	static uint8_t init[MEM], in_order[MEM], mem[MEM];
	struct snpu_task t;
	unsigned int seed = 1, iter, i, n, differ = 0;

	for (iter = 0; iter < 50; iter++) {
		snpu_rec_fini(&self->r);
		snpu_rec_init(&self->r);
		for (i = 0; i < MEM; i++)
			init[i] = (uint8_t)rand_r(&seed);
		n = 16 + rand_r(&seed) % 48;
		memcpy(in_order, init, MEM);
		for (i = 0; i < n; i++) {
			t = rnd_task(&seed);
			ASSERT_EQ(0, snpu_rec_add(&self->r, &t));
			run_node(in_order, &t);
		}
		memset(self->r.fanin_offsets, 0,
		       (n + 1) * sizeof(*self->r.fanin_offsets));
		memcpy(mem, init, MEM);
		run_any_order(&self->r, mem, &seed);
		differ += !!memcmp(mem, in_order, MEM);
	}
	EXPECT_LT(25U, differ);
}

/* ---- capture on a device --------------------------------------------- */

#define MAX_CALLS	8192

/* What the test double saw. */
struct fake {
	struct snpu_device dev;
	int create_ret;			/* what create returns */
	unsigned int creates, destroys, submits;
	uint32_t next_graph;
	uint32_t destroyed;
	/* The last definition created. */
	struct snpu_graph_node *nodes;
	uint32_t *offsets, *fanin;
	uint32_t nodes_count, edges_count;
	/* Every task submitted, in order, and each batch's size. */
	struct snpu_task tasks[MAX_CALLS];
	unsigned int ntasks;
	unsigned int batch[MAX_CALLS];
	int submit_ret;
	int launch_ret;		/* what a batch with a graph launch gets */
	unsigned int queries;	/* comm_query calls */
};

#define FAKE(d) ((struct fake *)(d))

static int fake_create(struct snpu_device *dev,
		       const struct snpu_graph_desc *desc, uint32_t *graph)
{
	struct fake *f = FAKE(dev);
	size_t nb = desc->nodes_count * sizeof(*desc->nodes);

	f->creates++;
	if (f->create_ret)
		return f->create_ret;
	free(f->nodes);
	free(f->offsets);
	free(f->fanin);
	f->nodes = malloc(nb);
	memcpy(f->nodes, desc->nodes, nb);
	f->offsets = calloc(desc->nodes_count + 1, sizeof(uint32_t));
	f->fanin = calloc(desc->edges_count + 1, sizeof(uint32_t));
	if (desc->edges_count) {
		memcpy(f->offsets, desc->fanin_offsets,
		       (desc->nodes_count + 1) * sizeof(uint32_t));
		memcpy(f->fanin, desc->fanin,
		       desc->edges_count * sizeof(uint32_t));
	}
	f->nodes_count = desc->nodes_count;
	f->edges_count = desc->edges_count;
	*graph = ++f->next_graph;
	return 0;
}

static int fake_destroy(struct snpu_device *dev, uint32_t graph)
{
	FAKE(dev)->destroys++;
	FAKE(dev)->destroyed = graph;
	return 0;
}

static int fake_submit(struct snpu_device *dev, const struct snpu_task *t,
		       unsigned int count, uint64_t *seq)
{
	struct fake *f = FAKE(dev);

	unsigned int i;

	if (f->submit_ret)
		return f->submit_ret;
	/* An address outside the allocations, as the kernel refuses it. */
	for (i = 0; i < count; i++) {
		if (t[i].op == SNPU_OP_MEMSET && t[i].memset.addr == BAD)
			return -EFAULT;
		if (t[i].op == SNPU_OP_GRAPH && f->launch_ret)
			return f->launch_ret;
	}
	if (f->ntasks + count > MAX_CALLS)
		return -ENOSPC;
	memcpy(&f->tasks[f->ntasks], t, count * sizeof(*t));
	f->ntasks += count;
	f->batch[f->submits++] = count;
	if (seq)
		*seq = 1000 + f->ntasks;
	return 0;
}

static const struct snpu_graph_ops fake_ops = {
	.create = fake_create,
	.destroy = fake_destroy,
	.submit = fake_submit,
	.caps = SNPU_CAP_GRAPHS | SNPU_CAP_TEST_HOOKS,
};

/*
 * The double's ranks: handle 3 is rank 1 of 4, handle 4 a rank of a
 * broken communicator, any other no rank.
 */
static int fake_comm_query(struct snpu_device *dev, uint32_t handle,
			   struct snpu_comm_query *q)
{
	FAKE(dev)->queries++;
	memset(q, 0, sizeof(*q));
	if (handle != 3 && handle != 4)
		return -ENOENT;
	q->handle = handle;
	q->nranks = 4;
	q->rank = 1;
	q->joined = 4;
	q->error = handle == 4 ? -ECONNRESET : 0;
	return 0;
}

static const struct snpu_graph_ops fake_ops_comm = {
	.create = fake_create,
	.destroy = fake_destroy,
	.submit = fake_submit,
	.comm_query = fake_comm_query,
	.caps = SNPU_CAP_GRAPHS | SNPU_CAP_COLLECTIVES,
};

static const struct snpu_graph_ops fake_ops_nohooks = {
	.create = fake_create,
	.destroy = fake_destroy,
	.submit = fake_submit,
	.caps = SNPU_CAP_GRAPHS,
};

FIXTURE(cap)
{
	struct fake *f;
	struct snpu_device *dev;
};

FIXTURE_SETUP(cap)
{
	self->f = calloc(1, sizeof(*self->f));
	ASSERT_NE(NULL, self->f);
	self->dev = &self->f->dev;
	self->dev->fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev->fd);
	snpu_graph_init(self->dev);
	self->dev->graph_ops = &fake_ops;
}

FIXTURE_TEARDOWN(cap)
{
	snpu_graph_fini(self->dev);
	close(self->dev->fd);
	free(self->f->nodes);
	free(self->f->offsets);
	free(self->f->fanin);
	free(self->f);
}

static int sub(struct snpu_device *dev, struct snpu_task t)
{
	return snpu_submit(dev, &t, 1, NULL);
}

/* A body of 4 nodes: A = 1s, B = 1s, C = A + B, D = copy of C. */
static int body(struct snpu_device *dev)
{
	int ret = 0;

	ret = ret ? ret : sub(dev, mset(A, N));
	ret = ret ? ret : sub(dev, mset(B, N));
	ret = ret ? ret : sub(dev, launch3(SNPU_KERNEL_ADD_I32, C, A, B, N));
	ret = ret ? ret : sub(dev, d2d(D, C, N));
	return ret;
}

TEST_F(cap, first_invocation_is_one_launch)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 42));
	ASSERT_EQ(0, body(self->dev));
	/* Nothing submitted while recording. */
	EXPECT_EQ(0U, self->f->submits);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, self->f->creates);
	ASSERT_EQ(1U, self->f->submits);
	ASSERT_EQ(1U, self->f->batch[0]);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[0].op);
	EXPECT_EQ(S, self->f->tasks[0].stream);
	EXPECT_EQ(1U, self->f->tasks[0].graph.graph);
	EXPECT_EQ(0U, self->f->tasks[0].graph.scratch);
	EXPECT_EQ(0U, self->f->tasks[0].graph.slots[0]);
	/* The definition: 4 nodes, C after A and B, D after C. */
	ASSERT_EQ(4U, self->f->nodes_count);
	ASSERT_EQ(3U, self->f->edges_count);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, self->f->nodes[0].task.op);
	EXPECT_EQ((uint32_t)SNPU_OP_LAUNCH, self->f->nodes[2].task.op);
	EXPECT_EQ((uint32_t)SNPU_OP_COPY, self->f->nodes[3].task.op);
	EXPECT_EQ(0U, self->f->offsets[0]);
	EXPECT_EQ(0U, self->f->offsets[2]);
	EXPECT_EQ(2U, self->f->offsets[3]);
	EXPECT_EQ(3U, self->f->offsets[4]);
	EXPECT_EQ(0U, self->f->fanin[0]);
	EXPECT_EQ(1U, self->f->fanin[1]);
	EXPECT_EQ(2U, self->f->fanin[2]);
}

TEST_F(cap, replay_is_one_launch)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 42));
	ASSERT_EQ(0, body(self->dev));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	/* Cached: launched, no body, no end. On another stream too. */
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 42));
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, OTHER, 42));
	EXPECT_EQ(1U, self->f->creates);
	ASSERT_EQ(3U, self->f->submits);
	EXPECT_EQ(1U, self->f->batch[1]);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[1].op);
	EXPECT_EQ(1U, self->f->tasks[1].graph.graph);
	EXPECT_EQ(OTHER, self->f->tasks[2].stream);
	/* No capture is in progress after a hit. */
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
}

TEST_F(cap, keys_are_distinct)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 2));
	ASSERT_EQ(0, body(self->dev));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->creates);
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 1));
	EXPECT_EQ(1U, self->f->tasks[2].graph.graph);
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 2));
	EXPECT_EQ(2U, self->f->tasks[3].graph.graph);
}

/* Many keys, several per bucket: each replays its own graph. */
TEST_F(cap, many_keys)
{
	uint64_t key;
	unsigned int i;

	for (i = 0; i < 300; i++) {
		key = i % 2 ? i : (uint64_t)i << 40;
		ASSERT_EQ(0, snpu_graph_begin(self->dev, S, key));
		ASSERT_EQ(0, sub(self->dev, mset(A + 4 * i, 4)));
		ASSERT_EQ(0, snpu_graph_end(self->dev));
	}
	for (i = 0; i < 300; i++) {
		key = i % 2 ? i : (uint64_t)i << 40;
		ASSERT_EQ(SNPU_GRAPH_CACHED,
			  snpu_graph_begin(self->dev, S, key));
		ASSERT_EQ(i + 1, self->f->tasks[300 + i].graph.graph);
	}
	for (i = 0; i < 300; i += 3) {
		key = i % 2 ? i : (uint64_t)i << 40;
		ASSERT_EQ(0, snpu_graph_forget(self->dev, key));
		ASSERT_EQ(i + 1, self->f->destroyed);
	}
	EXPECT_EQ(100U, self->f->destroys);
	EXPECT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 1));
	EXPECT_EQ(0, snpu_graph_forget(self->dev, 1));
}

/* Slots: recorded as offsets, bound anew by each launch. */
TEST_F(cap, slots_launches)
{
	const uint64_t slots[2] = { A, B }, bytes[2] = { N, N };
	const uint64_t other[2] = { C, D }, bigger[2] = { N, 2 * N };

	ASSERT_EQ(0, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0, slots,
					    bytes, 2));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, d2d(B, A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(2U, self->f->nodes_count);
	EXPECT_EQ((uint32_t)SNPU_GRAPH_REF_SLOT(1), self->f->nodes[1].ref[0]);
	EXPECT_EQ(0U, self->f->nodes[1].task.copy.dst);
	EXPECT_EQ(A, self->f->tasks[0].graph.slots[0]);
	EXPECT_EQ(B, self->f->tasks[0].graph.slots[1]);
	EXPECT_EQ(0U, self->f->tasks[0].graph.slots[2]);
	/* A replay elsewhere. */
	ASSERT_EQ(SNPU_GRAPH_CACHED,
		  snpu_graph_begin_slots(self->dev, NULL, S, 1, 0, other,
					 bytes, 2));
	EXPECT_EQ(C, self->f->tasks[1].graph.slots[0]);
	EXPECT_EQ(D, self->f->tasks[1].graph.slots[1]);
	/* Not the recorded slots: refused, nothing launched. */
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  other, bigger, 2));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  other, bytes, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_begin(self->dev, S, 1));
	EXPECT_EQ(2U, self->f->submits);
	EXPECT_EQ(1U, self->f->creates);
}

TEST_F(cap, slots_refused)
{
	uint64_t slots[9] = { A, A + N / 2 }, bytes[9] = { N, N };

	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  slots, bytes, 2));
	slots[1] = B;
	bytes[1] = 0;
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  slots, bytes, 2));
	bytes[1] = N;
	slots[1] = UINT64_MAX - 8;
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  slots, bytes, 2));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  slots, bytes, 9));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0,
						  NULL, bytes, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_slots(NULL, NULL, S, 1, 0,
						  slots, bytes, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
}

/* A task partly in a slot breaks the capture. */
TEST_F(cap, slots_partial_falls_back)
{
	const uint64_t slots[1] = { A }, bytes[1] = { N };

	ASSERT_EQ(0, snpu_graph_begin_slots(self->dev, NULL, S, 1, 0, slots,
					    bytes, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, d2d(B, A + 8, N)));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->ntasks);
	EXPECT_EQ(0U, self->f->creates);
}

TEST_F(cap, forget)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 9));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(-ENOENT, snpu_graph_forget(self->dev, 10));
	ASSERT_EQ(0, snpu_graph_forget(self->dev, 9));
	EXPECT_EQ(1U, self->f->destroys);
	EXPECT_EQ(1U, self->f->destroyed);
	EXPECT_EQ(-ENOENT, snpu_graph_forget(self->dev, 9));
	/* Recorded again. */
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 9));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->creates);
}

TEST_F(cap, begin_end_misuse)
{
	EXPECT_EQ(-EINVAL, snpu_graph_begin(NULL, S, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_end(NULL));
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
	EXPECT_EQ(-EINVAL, snpu_graph_forget(NULL, 1));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	EXPECT_EQ(-EBUSY, snpu_graph_begin(self->dev, S, 2));
	EXPECT_EQ(-EBUSY, snpu_graph_begin(self->dev, OTHER, 2));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
}

/* A cached key during another capture: launched, on another stream at once. */
TEST_F(cap, hit_during_capture_other_stream)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 2));
	ASSERT_EQ(0, sub(self->dev, mset(B, N)));
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, OTHER, 1));
	ASSERT_EQ(2U, self->f->submits);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[1].op);
	EXPECT_EQ(OTHER, self->f->tasks[1].stream);
	/* The capture goes on. */
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->next_graph);
}

/* On the captured stream: inside the body, so the capture breaks, in order. */
TEST_F(cap, hit_during_capture_same_stream)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 2));
	ASSERT_EQ(0, sub(self->dev, mset(B, N)));
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(3U, self->f->submits);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, self->f->tasks[1].op);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[2].op);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
}

/* The ordinary path's errno at the submit call; nothing recorded. */
TEST_F(cap, invalid_task_refused)
{
	struct snpu_kernel_arg args[2] = {
		snpu_arg_buf(A, N), snpu_arg_u64(1),
	};
	struct snpu_task t[2];
	uint64_t seq = 77;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	snpu_prep_launch(&t[0], S, SNPU_KERNEL_FILL, 0, args, 2);
	EXPECT_EQ(-EINVAL, sub(self->dev, t[0]));
	t[0].launch.block_dim = 65536;
	EXPECT_EQ(-EINVAL, sub(self->dev, t[0]));
	t[0].launch.block_dim = 1;
	t[0].launch.args[1].bytes = 4;		/* a scalar with bytes */
	EXPECT_EQ(-EINVAL, sub(self->dev, t[0]));
	/* A batch with a bad second task: nothing of it is recorded. */
	t[0] = mset(A, N);
	t[1] = mset(B, N);
	t[1].memset.value = 300;
	EXPECT_EQ(-EINVAL, snpu_submit(self->dev, t, 2, &seq));
	EXPECT_EQ(77U, seq);
	EXPECT_EQ(0U, self->f->submits);
	/* The capture goes on. */
	ASSERT_EQ(0, snpu_submit(self->dev, t, 1, &seq));
	EXPECT_EQ(0U, seq);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(1U, self->f->nodes_count);
}

TEST_F(cap, test_hook_refused_without_hooks)
{
	struct snpu_kernel_arg spin = snpu_arg_u64(10);
	struct snpu_task t;

	self->dev->graph_ops = &fake_ops_nohooks;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	snpu_prep_launch(&t, S, SNPU_KERNEL_SPIN, 1, &spin, 1);
	EXPECT_EQ(-EOPNOTSUPP, sub(self->dev, t));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
}

/*
 * After a break, the tasks kept so far went the ordinary way, batch by
 * batch, in order, followed by the rest of the body.
 */
static void expect_body_ordinary(struct __test_metadata *_metadata,
				 struct fake *f, unsigned int from)
{
	ASSERT_LE(from + 4, f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, f->tasks[from].op);
	EXPECT_EQ(A, f->tasks[from].memset.addr);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, f->tasks[from + 1].op);
	EXPECT_EQ(B, f->tasks[from + 1].memset.addr);
	EXPECT_EQ((uint32_t)SNPU_OP_LAUNCH, f->tasks[from + 2].op);
	EXPECT_EQ((uint32_t)SNPU_OP_COPY, f->tasks[from + 3].op);
	EXPECT_EQ(S, f->tasks[from + 3].stream);
}

TEST_F(cap, host_func_falls_back)
{
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, mset(B, N)));
	snpu_prep_host_func(&t, S, 0x55);
	ASSERT_EQ(0, sub(self->dev, t));
	/* Broken at once: what was kept, then the callback, went out. */
	EXPECT_EQ(3U, self->f->ntasks);
	EXPECT_EQ(3U, self->f->submits);
	ASSERT_EQ(0, sub(self->dev, launch3(SNPU_KERNEL_ADD_I32, C, A, B, N)));
	ASSERT_EQ(0, sub(self->dev, d2d(D, C, N)));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(0U, self->f->creates);
	ASSERT_EQ(5U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_HOST_FUNC, self->f->tasks[2].op);
	EXPECT_EQ(0x55U, self->f->tasks[2].user_data);
	EXPECT_EQ((uint32_t)SNPU_OP_LAUNCH, self->f->tasks[3].op);
	EXPECT_EQ((uint32_t)SNPU_OP_COPY, self->f->tasks[4].op);
	/* Not cached: the next begin records again. */
	EXPECT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	EXPECT_EQ(0, snpu_graph_end(self->dev));
}

/* A collective is a node of the graph, launched at end. */
TEST_F(cap, coll_is_a_node)
{
	self->dev->graph_ops = &fake_ops_comm;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, coll(SNPU_COLL_ALLREDUCE, A, B, N / 4,
					 0)));
	/* Twice: the driver is asked once per handle. */
	ASSERT_EQ(0, sub(self->dev, coll(SNPU_COLL_ALLGATHER, A, C, 16, 0)));
	EXPECT_EQ(0U, self->f->submits);
	EXPECT_EQ(1U, self->f->queries);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(3U, self->f->nodes_count);
	EXPECT_EQ((uint32_t)SNPU_OP_COLL, self->f->nodes[1].task.op);
	EXPECT_EQ((uint32_t)SNPU_OP_COLL, self->f->nodes[2].task.op);
	ASSERT_EQ(1U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[0].op);
}

/* Refused as SUBMIT refuses it: nothing recorded, nothing submitted. */
TEST_F(cap, coll_refused_like_submit)
{
	struct snpu_task t = coll(SNPU_COLL_ALLREDUCE, A, B, 16, 0);

	self->dev->graph_ops = &fake_ops_comm;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	t.coll.comm = 9;
	EXPECT_EQ(-ENOENT, sub(self->dev, t));
	t.coll.comm = 4;
	EXPECT_EQ(-ECONNRESET, sub(self->dev, t));
	EXPECT_EQ(-EINVAL, sub(self->dev, coll(SNPU_COLL_ALLREDUCE, A, A + 4,
					       16, 0)));
	EXPECT_EQ(-EINVAL, sub(self->dev, coll(SNPU_COLL_BROADCAST, A, B, 16,
					       4)));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(0U, self->f->creates);
	EXPECT_EQ(0U, self->f->ntasks);
}

/* A device that cannot tell the rank: the ordinary way, in order. */
TEST_F(cap, coll_without_rank_falls_back)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, coll(SNPU_COLL_ALLREDUCE, A, B, 16, 0)));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(0U, self->f->creates);
	ASSERT_EQ(2U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, self->f->tasks[0].op);
	EXPECT_EQ((uint32_t)SNPU_OP_COLL, self->f->tasks[1].op);
}

TEST_F(cap, host_copy_falls_back)
{
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	snpu_prep_copy(&t, S, SNPU_COPY_D2H, 0x7000, D, N);
	ASSERT_EQ(0, sub(self->dev, t));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	expect_body_ordinary(_metadata, self->f, 0);
	ASSERT_EQ(5U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_COPY_D2H, self->f->tasks[4].copy.dir);
	EXPECT_EQ(5U, self->f->submits);
}

TEST_F(cap, wait_outside_falls_back)
{
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	snpu_prep_stream_wait(&t, S, 3);
	ASSERT_EQ(0, sub(self->dev, t));
	ASSERT_EQ(0, body(self->dev));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	ASSERT_EQ(5U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_STREAM_WAIT, self->f->tasks[0].op);
	expect_body_ordinary(_metadata, self->f, 1);
}

/* A record and a wait of one event in the body: order, and recorded after. */
TEST_F(cap, event_pair_inside)
{
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	snpu_prep_event_record(&t, S, 3);
	ASSERT_EQ(0, sub(self->dev, t));
	snpu_prep_stream_wait(&t, S, 3);
	ASSERT_EQ(0, sub(self->dev, t));
	ASSERT_EQ(0, sub(self->dev, d2d(B, A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->nodes_count);
	/* One batch: the launch, then the event's record. */
	ASSERT_EQ(1U, self->f->submits);
	ASSERT_EQ(2U, self->f->batch[0]);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, self->f->tasks[0].op);
	EXPECT_EQ((uint32_t)SNPU_OP_EVENT_RECORD, self->f->tasks[1].op);
	EXPECT_EQ(3U, self->f->tasks[1].event.event);
	EXPECT_EQ(S, self->f->tasks[1].stream);
	/* And so on every replay. */
	ASSERT_EQ(SNPU_GRAPH_CACHED, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(2U, self->f->batch[1]);
	EXPECT_EQ((uint32_t)SNPU_OP_EVENT_RECORD, self->f->tasks[3].op);
}

TEST_F(cap, node_limit_falls_back)
{
	unsigned int i;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	for (i = 0; i < SNPU_GRAPH_MAX_NODES; i++)
		ASSERT_EQ(0, sub(self->dev, mset(A + 4 * i, 4)));
	EXPECT_EQ(0U, self->f->submits);
	ASSERT_EQ(0, sub(self->dev, mset(B, 4)));
	/* The 4097th broke it: all of them went out, one batch each. */
	EXPECT_EQ((uint32_t)(SNPU_GRAPH_MAX_NODES + 1), self->f->submits);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(0U, self->f->creates);
	for (i = 0; i < SNPU_GRAPH_MAX_NODES; i++)
		ASSERT_EQ(A + 4 * i, self->f->tasks[i].memset.addr);
	EXPECT_EQ(B, self->f->tasks[i].memset.addr);
}

TEST_F(cap, create_enospc_falls_back)
{
	struct snpu_task two[2];

	self->f->create_ret = -ENOSPC;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	two[0] = mset(A, N);
	two[1] = mset(B, N);
	ASSERT_EQ(0, snpu_submit(self->dev, two, 2, NULL));
	ASSERT_EQ(0, sub(self->dev, launch3(SNPU_KERNEL_ADD_I32, C, A, B, N)));
	ASSERT_EQ(0, sub(self->dev, d2d(D, C, N)));
	EXPECT_EQ(0U, self->f->submits);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, self->f->creates);
	/* The batches as the body made them. */
	ASSERT_EQ(3U, self->f->submits);
	EXPECT_EQ(2U, self->f->batch[0]);
	EXPECT_EQ(1U, self->f->batch[1]);
	EXPECT_EQ(1U, self->f->batch[2]);
	expect_body_ordinary(_metadata, self->f, 0);
	/* Not cached. */
	self->f->create_ret = 0;
	EXPECT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	EXPECT_EQ(0, snpu_graph_end(self->dev));
}

/* The fallback's first error is snpu_graph_end()'s. */
TEST_F(cap, fallback_error)
{
	self->f->create_ret = -EFAULT;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	self->f->submit_ret = -EFAULT;
	EXPECT_EQ(-EFAULT, snpu_graph_end(self->dev));
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
}

/* A refused batch does not stop the ones after it: they were taken. */
TEST_F(cap, fallback_refused_batch_then_more)
{
	self->f->create_ret = -EFAULT;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	ASSERT_EQ(0, sub(self->dev, mset(BAD, N)));
	ASSERT_EQ(0, sub(self->dev, mset(B, N)));
	EXPECT_EQ(-EFAULT, snpu_graph_end(self->dev));
	ASSERT_EQ(2U, self->f->ntasks);
	EXPECT_EQ(A, self->f->tasks[0].memset.addr);
	EXPECT_EQ(B, self->f->tasks[1].memset.addr);
}

/* The batch that breaks a capture gets its own result and sequence. */
TEST_F(cap, breaking_batch_result)
{
	struct snpu_task t[2];
	uint64_t seq = 0;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(BAD, N)));
	snpu_prep_host_func(&t[0], S, 1);
	t[1] = mset(A, N);
	ASSERT_EQ(0, snpu_submit(self->dev, t, 2, &seq));
	EXPECT_EQ(1002U, seq);
	EXPECT_EQ(-EFAULT, snpu_graph_end(self->dev));
	ASSERT_EQ(2U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_HOST_FUNC, self->f->tasks[0].op);
}

/* The first launch refused: not cached, the body the ordinary way. */
TEST_F(cap, launch_refused_falls_back)
{
	self->f->launch_ret = -ENOSPC;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, self->f->creates);
	EXPECT_EQ(1U, self->f->destroys);
	expect_body_ordinary(_metadata, self->f, 0);
	EXPECT_EQ(4U, self->f->ntasks);
	self->f->launch_ret = 0;
	EXPECT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, body(self->dev));
	EXPECT_EQ(0, snpu_graph_end(self->dev));
}

TEST_F(cap, empty_body)
{
	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(0U, self->f->creates);
	EXPECT_EQ(0U, self->f->submits);
}

/* Work of other streams goes on during a capture. */
TEST_F(cap, other_stream_passes)
{
	struct snpu_task t = mset(A, N);
	uint64_t seq = 0;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(C, N)));
	t.stream = OTHER;
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, &seq));
	EXPECT_EQ(1001U, seq);
	ASSERT_EQ(1U, self->f->submits);
	EXPECT_EQ(OTHER, self->f->tasks[0].stream);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, self->f->nodes_count);
}

/* A wait of another stream on an event of the body breaks the capture first. */
TEST_F(cap, other_stream_waits_inside)
{
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(A, N)));
	snpu_prep_event_record(&t, S, 3);
	ASSERT_EQ(0, sub(self->dev, t));
	snpu_prep_stream_wait(&t, OTHER, 3);
	ASSERT_EQ(0, sub(self->dev, t));
	ASSERT_EQ(3U, self->f->ntasks);
	EXPECT_EQ((uint32_t)SNPU_OP_MEMSET, self->f->tasks[0].op);
	EXPECT_EQ((uint32_t)SNPU_OP_EVENT_RECORD, self->f->tasks[1].op);
	EXPECT_EQ((uint32_t)SNPU_OP_STREAM_WAIT, self->f->tasks[2].op);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
}

TEST_F(cap, mixed_batch_breaks)
{
	struct snpu_task t[2];

	ASSERT_EQ(0, snpu_graph_begin(self->dev, S, 1));
	ASSERT_EQ(0, sub(self->dev, mset(C, N)));
	t[0] = mset(A, N);
	t[1] = mset(B, N);
	t[1].stream = OTHER;
	ASSERT_EQ(0, snpu_submit(self->dev, t, 2, NULL));
	ASSERT_EQ(2U, self->f->submits);
	EXPECT_EQ(2U, self->f->batch[1]);
	EXPECT_EQ(C, self->f->tasks[0].memset.addr);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
}

/* ---- capture on a ring ------------------------------------------------ */

#define RING_ENTRIES	8

struct fake_ring {
	uint32_t head, tail, flags, dropped;
	struct snpu_task sqes[RING_ENTRIES];
};

static void fake_ring_init(struct snpu_ring *ring, struct fake_ring *m,
			   int fd)
{
	memset(ring, 0, sizeof(*ring));
	memset(m, 0, sizeof(*m));
	ring->fd = fd;
	ring->flags = SNPU_RING_SQPOLL;	/* submit publishes, no ioctl */
	ring->mem = m;
	ring->bytes = sizeof(*m);
	ring->sq.khead = &m->head;
	ring->sq.ktail = &m->tail;
	ring->sq.kflags = &m->flags;
	ring->sq.kdropped = &m->dropped;
	ring->sq.mask = RING_ENTRIES - 1;
	ring->sq.entries = RING_ENTRIES;
	ring->sq.sqes = m->sqes;
}

/* Put @t in the ring as a body does. */
static int ring_put(struct snpu_ring *ring, struct snpu_task t)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	*sqe = t;
	return 0;
}

/* The kernel taking every published entry. */
static void fake_ring_consume(struct fake_ring *m)
{
	m->head = m->tail;
}

TEST_F(cap, ring_first_and_replay_one_entry)
{
	struct snpu_ring ring;
	struct fake_ring m;
	int i;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0xabc));
	/* 12 entries through an 8-entry ring: the body submits in between. */
	for (i = 0; i < 12; i++) {
		ASSERT_EQ(0, ring_put(&ring, mset(A + 4 * i, 4)));
		if (i % 4 == 3)
			ASSERT_EQ(4, snpu_ring_submit(&ring));
	}
	EXPECT_EQ(0U, m.tail);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	/* One entry: the launch, with the begin's user_data. */
	EXPECT_EQ(1U, m.tail);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, m.sqes[0].op);
	EXPECT_EQ(0xabcU, m.sqes[0].user_data);
	EXPECT_EQ(S, m.sqes[0].stream);
	EXPECT_EQ(12U, self->f->nodes_count);
	EXPECT_EQ(0U, self->f->submits);
	/* The ring is the caller's again. */
	EXPECT_EQ(&m.head, ring.sq.khead);
	EXPECT_EQ(0U, ring.flags & SNPU_RING_LIB_CAPTURE);
	fake_ring_consume(&m);
	ASSERT_EQ(SNPU_GRAPH_CACHED,
		  snpu_graph_begin_ring(self->dev, &ring, S, 3, 0xdef));
	EXPECT_EQ(2U, m.tail);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, m.sqes[1].op);
	EXPECT_EQ(0xdefU, m.sqes[1].user_data);
	EXPECT_EQ(1U, self->f->creates);
}

TEST_F(cap, ring_fallback_in_order)
{
	struct snpu_ring ring;
	struct fake_ring m;
	struct snpu_task t;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	t = mset(A, N);
	t.user_data = 1;
	ASSERT_EQ(0, ring_put(&ring, t));
	t = mset(B, N);
	t.user_data = 2;
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(2, snpu_ring_submit(&ring));
	EXPECT_EQ(0U, m.tail);
	snpu_prep_host_func(&t, S, 3);
	ASSERT_EQ(0, ring_put(&ring, t));
	t = d2d(C, A, N);
	t.user_data = 4;
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(2, snpu_ring_submit(&ring));
	/* Everything in the real SQ, in order, with its user_data. */
	ASSERT_EQ(4U, m.tail);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ((uint64_t)i + 1, m.sqes[i].user_data);
	EXPECT_EQ((uint32_t)SNPU_OP_HOST_FUNC, m.sqes[2].op);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(4U, m.tail);
	EXPECT_EQ(&m.head, ring.sq.khead);
}

/* A task the kernel would refuse: the kernel gets it, and says so in a CQE. */
TEST_F(cap, ring_invalid_goes_to_kernel)
{
	struct snpu_ring ring;
	struct fake_ring m;
	struct snpu_task t;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	t = mset(B, 0);
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(2, snpu_ring_submit(&ring));
	ASSERT_EQ(2U, m.tail);
	EXPECT_EQ(0U, m.sqes[1].memset.bytes);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
}

/* Entries of other streams go to the real SQ at once. */
/* A collective SQE is a node; one the kernel would refuse goes to it. */
TEST_F(cap, ring_coll)
{
	struct snpu_ring ring;
	struct fake_ring m;
	struct snpu_task t = coll(SNPU_COLL_ALLREDUCE, A, B, 16, 0);

	self->dev->graph_ops = &fake_ops_comm;
	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(2, snpu_ring_submit(&ring));
	EXPECT_EQ(0U, m.tail);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, m.tail);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, m.sqes[0].op);
	ASSERT_EQ(2U, self->f->nodes_count);
	EXPECT_EQ((uint32_t)SNPU_OP_COLL, self->f->nodes[1].task.op);
	fake_ring_consume(&m);
	/* A handle of no rank: the capture breaks, the kernel answers. */
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 4, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	t.coll.comm = 9;
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(2, snpu_ring_submit(&ring));
	EXPECT_EQ(3U, m.tail);
	EXPECT_EQ(9U, m.sqes[2].coll.comm);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(1U, self->f->creates);
}

TEST_F(cap, ring_other_stream)
{
	struct snpu_ring ring;
	struct fake_ring m;
	struct snpu_task t;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	t = mset(B, N);
	t.stream = OTHER;
	ASSERT_EQ(0, ring_put(&ring, t));
	ASSERT_EQ(0, ring_put(&ring, mset(C, N)));
	ASSERT_EQ(3, snpu_ring_submit(&ring));
	ASSERT_EQ(1U, m.tail);
	EXPECT_EQ(OTHER, m.sqes[0].stream);
	fake_ring_consume(&m);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->nodes_count);
	ASSERT_EQ(2U, m.tail);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, m.sqes[1].op);
}

/* A wait for completions inside the body breaks the capture first. */
TEST_F(cap, ring_wait_breaks)
{
	struct snpu_ring ring;
	struct fake_ring m;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	ASSERT_EQ(0, ring_put(&ring, mset(B, N)));
	/* The wait itself reaches ioctl(2): /dev/null says ENOTTY. */
	EXPECT_EQ(-ENOTTY, snpu_ring_submit_and_wait(&ring, 1));
	ASSERT_EQ(2U, m.tail);
	EXPECT_EQ(A, m.sqes[0].memset.addr);
	EXPECT_EQ(B, m.sqes[1].memset.addr);
	EXPECT_EQ(&m.head, ring.sq.khead);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
}

/* Entries handed out but not submitted at end are part of the body. */
TEST_F(cap, ring_end_takes_unsubmitted)
{
	struct snpu_ring ring;
	struct fake_ring m;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	ASSERT_EQ(0, ring_put(&ring, d2d(B, A, N)));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(2U, self->f->nodes_count);
	EXPECT_EQ(1U, self->f->edges_count);
	EXPECT_EQ(1U, m.tail);
}

/* Closing the device during a capture gives the ring its fields back. */
TEST_F(cap, ring_fini_restores)
{
	struct snpu_ring ring;
	struct fake_ring m;

	fake_ring_init(&ring, &m, self->dev->fd);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	ASSERT_EQ(0, ring_put(&ring, mset(A, N)));
	snpu_graph_fini(self->dev);
	snpu_graph_init(self->dev);
	EXPECT_EQ(&m.head, ring.sq.khead);
	EXPECT_EQ(&m.sqes[0], ring.sq.sqes);
	EXPECT_EQ(0U, ring.flags & SNPU_RING_LIB_CAPTURE);
	EXPECT_EQ(0U, m.tail);
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
}

TEST_F(cap, ring_begin_misuse)
{
	struct snpu_ring ring;
	struct fake_ring m;

	fake_ring_init(&ring, &m, self->dev->fd + 100);
	EXPECT_EQ(-EINVAL, snpu_graph_begin_ring(self->dev, &ring, S, 3, 0));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_ring(self->dev, NULL, S, 3, 0));
	EXPECT_EQ(-EINVAL, snpu_graph_begin_ring(NULL, &ring, S, 3, 0));
}

/* ---- the wrappers ----------------------------------------------------- */

TEST(wrappers_args)
{
	struct snpu_graph_desc desc;
	uint64_t slots[9] = { 0 };
	uint32_t g;
	struct snpu_task t;

	memset(&desc, 0, sizeof(desc));
	EXPECT_EQ(-EINVAL, snpu_graph_create(NULL, &desc, &g));
	EXPECT_EQ(-EINVAL, snpu_graph_destroy(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_launch(NULL, S, 1, NULL, 0, 0));
	snpu_prep_graph(&t, S, 7, slots, 9, 0x5000);
	EXPECT_EQ((uint32_t)SNPU_OP_GRAPH, t.op);
	EXPECT_EQ(7U, t.graph.graph);
	EXPECT_EQ(0x5000U, t.graph.scratch);
}

TEST(wrappers_fake_fd)
{
	struct snpu_device dev;
	struct snpu_graph_desc desc;
	uint64_t slots[9] = { 1, 2 };
	uint32_t g;

	memset(&dev, 0, sizeof(dev));
	dev.fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev.fd);
	memset(&desc, 0, sizeof(desc));
	EXPECT_EQ(-EINVAL, snpu_graph_create(&dev, NULL, &g));
	EXPECT_EQ(-EINVAL, snpu_graph_create(&dev, &desc, NULL));
	desc.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_graph_create(&dev, &desc, &g));
	desc.pad = 0;
	EXPECT_EQ(-ENOTTY, snpu_graph_create(&dev, &desc, &g));
	EXPECT_EQ(-ENOTTY, snpu_graph_destroy(&dev, 1));
	EXPECT_EQ(-EINVAL, snpu_graph_launch(&dev, S, 1, slots, 9, 0));
	EXPECT_EQ(-EINVAL, snpu_graph_launch(&dev, S, 1, NULL, 1, 0));
	EXPECT_EQ(-ENOTTY, snpu_graph_launch(&dev, S, 1, slots, 2, 0));
	close(dev.fd);
}

TEST_HARNESS_MAIN
