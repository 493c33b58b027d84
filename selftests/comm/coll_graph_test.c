// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives in graphs and through the submission ring: graph nodes
 * matched with the other ranks' tasks or nodes, launched again and
 * again; what GRAPH_CREATE refuses; a launch whose rank is gone, one
 * unwound, one cancelled; SQEs, good and refused.
 *
 * Runs as root in the test VM with the module loaded with devices=4.
 */
#include "kselftest_harness.h"
#include "comm_util.h"
#include "../graph/graph_util.h"

#define N	3
#define COUNT	3001
#define BYTES	(COUNT * 4)

FIXTURE(cg) {
	struct rgroup g;
	uint64_t slot[N][3];
};

FIXTURE_SETUP(cg)
{
	unsigned int r, i;

	ASSERT_GE(comm_devices(), (unsigned int)N);
	ASSERT_EQ(0, group_init(&self->g, N, N));
	for (r = 0; r < N; r++)
		for (i = 0; i < 3; i++)
			ASSERT_EQ(0, snpu_alloc(self->g.r[r].fd, BYTES, 0,
						&self->slot[r][i]));
}

FIXTURE_TEARDOWN(cg)
{
	group_fini(&self->g);
}

/* A collective node of the last-built kind; refs set by hand. */
static int g_coll(struct gdef *g, uint32_t comm, uint32_t coll,
		  uint32_t redop, uint64_t count, struct gref send,
		  struct gref recv, uint32_t root)
{
	struct snpu_task t = t_coll(0, comm, coll, SNPU_DTYPE_I32, redop,
				    count, send.v, recv.v, root);
	int n = g_node(g, &t);

	if (n >= 0) {
		g->nodes[n].ref[0] = recv.kind;
		g->nodes[n].ref[1] = send.kind;
	}
	return n;
}

/*
 * Rank @r's graph: FILL slot 0 with r + 1, all-reduce (sum) slot 0 into
 * slot 1, slot 2 = slot 1 + slot 1.
 */
static int make_graph(struct rank *k, unsigned int r, uint32_t *h)
{
	const uint64_t bytes[3] = { BYTES, BYTES, BYTES };
	struct gdef g;
	int ret;

	ret = g_init(&g, 3, bytes, 0);
	if (ret)
		return ret;
	if (g_fill(&g, g_slot(0, 0), BYTES, r + 1, 2) < 0 ||
	    g_coll(&g, k->comm, SNPU_COLL_ALLREDUCE, SNPU_REDOP_SUM, COUNT,
		   g_slot(0, 0), g_slot(1, 0), 0) < 0 || g_pred(&g, 0) ||
	    g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(2, 0), g_slot(1, 0),
		    g_slot(1, 0), BYTES, 2) < 0 || g_pred(&g, 1)) {
		g_free(&g);
		return -ENOMEM;
	}
	ret = g_create(k->fd, &g, h);
	g_free(&g);
	return ret;
}

/* Every rank's slot 2 holds 2 * (1 + ... + N). */
static int check_slot2(struct __test_metadata *_metadata, FIXTURE_DATA(cg) *self)
{
	uint32_t *v = malloc(BYTES);
	unsigned int r, i;
	int ret = 0;

	for (r = 0; r < N && !ret; r++) {
		ret = snpu_d2h(self->g.r[r].fd, v, self->slot[r][2], BYTES);
		for (i = 0; i < COUNT && !ret; i++)
			if (v[i] != N * (N + 1)) {
				TH_LOG("rank %u element %u: %u", r, i, v[i]);
				ret = 1;
			}
	}
	free(v);
	return ret;
}

TEST_F(cg, graph_launches_on_every_rank)
{
	uint32_t h[N];
	unsigned int r, k;

	for (r = 0; r < N; r++)
		ASSERT_EQ(0, make_graph(&self->g.r[r], r, &h[r]));
	for (k = 0; k < 5; k++)
		for (r = 0; r < N; r++)
			ASSERT_EQ(0, g_launch(self->g.r[r].fd,
					      self->g.r[r].stream, h[r],
					      self->slot[r], 3, 0, NULL));
	ASSERT_EQ(0, group_sync(&self->g, NULL));
	EXPECT_EQ(0, check_slot2(_metadata, self));
}

/* Rank 1 runs the same collective as plain tasks. */
TEST_F(cg, graph_nodes_match_plain_tasks)
{
	uint32_t h[N];
	unsigned int r, k;

	for (r = 0; r < N; r += 2)
		ASSERT_EQ(0, make_graph(&self->g.r[r], r, &h[r]));
	for (k = 0; k < 3; k++) {
		struct rank *q = &self->g.r[1];
		struct snpu_task t[3];

		for (r = 0; r < N; r += 2)
			ASSERT_EQ(0, g_launch(self->g.r[r].fd,
					      self->g.r[r].stream, h[r],
					      self->slot[r], 3, 0, NULL));
		t[0] = snpu_t_fill(q->stream, self->slot[1][0], BYTES, 2, 1);
		t[1] = t_coll(q->stream, q->comm, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_I32, SNPU_REDOP_SUM, COUNT,
			      self->slot[1][0], self->slot[1][1], 0);
		t[2] = snpu_t_binop(q->stream, SNPU_KERNEL_ADD_I32,
				    self->slot[1][2], self->slot[1][1],
				    self->slot[1][1], BYTES, 1);
		ASSERT_EQ(0, snpu_submit(q->fd, t, 3, NULL));
	}
	ASSERT_EQ(0, group_sync(&self->g, NULL));
	EXPECT_EQ(0, check_slot2(_metadata, self));
}

TEST_F(cg, create_refuses_bad_collective_nodes)
{
	struct rank *k = &self->g.r[1];
	const uint64_t bytes[2] = { BYTES, BYTES };
	struct gdef g;
	uint32_t h;

	/* A handle that names no rank. */
	ASSERT_EQ(0, g_init(&g, 2, bytes, 0));
	ASSERT_LE(0, g_coll(&g, k->stream, SNPU_COLL_ALLREDUCE,
			    SNPU_REDOP_SUM, COUNT, g_slot(0, 0), g_slot(1, 0),
			    0));
	EXPECT_EQ(-ENOENT, g_create(k->fd, &g, &h));
	g_free(&g);
	/* A reference where a collective has no address. */
	ASSERT_EQ(0, g_init(&g, 2, bytes, 0));
	ASSERT_LE(0, g_coll(&g, k->comm, SNPU_COLL_ALLREDUCE,
			    SNPU_REDOP_SUM, COUNT, g_slot(0, 0), g_slot(1, 0),
			    0));
	g.nodes[0].ref[2] = SNPU_GRAPH_REF_SLOT(0);
	EXPECT_EQ(-EINVAL, g_create(k->fd, &g, &h));
	g_free(&g);
	/* All-gather's recv is N * count: past the slot. */
	ASSERT_EQ(0, g_init(&g, 2, bytes, 0));
	ASSERT_LE(0, g_coll(&g, k->comm, SNPU_COLL_ALLGATHER, 0, COUNT,
			    g_slot(0, 0), g_slot(1, 0), 0));
	EXPECT_EQ(-EINVAL, g_create(k->fd, &g, &h));
	g_free(&g);
	/* Off the root, a broadcast binds no send; a root past the ranks. */
	ASSERT_EQ(0, g_init(&g, 2, bytes, 0));
	ASSERT_LE(0, g_coll(&g, k->comm, SNPU_COLL_BROADCAST, 0, COUNT,
			    g_slot(0, 0), g_slot(1, 0), 0));
	EXPECT_EQ(-EINVAL, g_create(k->fd, &g, &h));
	g.nodes[0].task.coll.root = N;
	g.nodes[0].task.coll.send = 0;
	g.nodes[0].ref[1] = 0;
	EXPECT_EQ(-EINVAL, g_create(k->fd, &g, &h));
	g.nodes[0].task.coll.root = 0;
	EXPECT_EQ(0, g_create(k->fd, &g, &h));
	g_free(&g);
	/* Nothing queued anywhere. */
	EXPECT_EQ(0, snpu_stream_sync(k->fd, k->stream, 0, NULL));
}

/* A launch whose rank is gone is refused; the graph stays. */
TEST_F(cg, launch_of_a_destroyed_rank_is_enoent)
{
	struct rank *k = &self->g.r[0];
	uint32_t h;

	ASSERT_EQ(0, make_graph(k, 0, &h));
	ASSERT_EQ(0, comm_destroy(k->fd, k->comm, 0));
	EXPECT_EQ(-ENOENT, g_launch(k->fd, k->stream, h, self->slot[0], 3, 0,
				    NULL));
	EXPECT_EQ(0, g_destroy(k->fd, h));
}

/* A launch unwound with its batch gives its collective back. */
TEST_F(cg, unwound_launch_leaves_no_collective_behind)
{
	struct rank *k = &self->g.r[0];
	struct snpu_task t[2];
	uint32_t h[N];
	unsigned int r;

	for (r = 0; r < N; r++)
		ASSERT_EQ(0, make_graph(&self->g.r[r], r, &h[r]));
	t[0] = g_launch_task(k->stream, h[0], self->slot[0], 3, 0);
	t[1] = snpu_t_fill(k->stream, self->slot[0][0], 6, 1, 1);
	EXPECT_EQ(-EINVAL, snpu_submit(k->fd, t, 2, NULL));
	for (r = 0; r < N; r++)
		ASSERT_EQ(0, g_launch(self->g.r[r].fd, self->g.r[r].stream,
				      h[r], self->slot[r], 3, 0, NULL));
	ASSERT_EQ(0, group_sync(&self->g, NULL));
	EXPECT_EQ(0, check_slot2(_metadata, self));
}

/* A launch cancelled (its stream aborted): the others get ECONNABORTED. */
TEST_F(cg, cancelled_launch_aborts_the_others)
{
	struct rank *k = &self->g.r[2];
	uint32_t h[N];
	unsigned int r;
	int errs[N];

	for (r = 0; r < N; r++)
		ASSERT_EQ(0, make_graph(&self->g.r[r], r, &h[r]));
	ASSERT_EQ(0, snpu_submit1(k->fd, snpu_t_host_func(k->stream, 1)));
	for (r = 0; r < N; r++)
		ASSERT_EQ(0, g_launch(self->g.r[r].fd, self->g.r[r].stream,
				      h[r], self->slot[r], 3, 0, NULL));
	ASSERT_EQ(0, snpu_stream_abort(k->fd, k->stream));
	EXPECT_NE(0, group_sync(&self->g, errs));
	EXPECT_EQ(-ECONNABORTED, errs[0]);
	EXPECT_EQ(-ECONNABORTED, errs[1]);
	EXPECT_EQ(-ECANCELED, errs[2]);
}

/* Through the submission ring: a collective SQE, and one refused. */
TEST_F(cg, collectives_through_the_ring)
{
	struct rank *k = &self->g.r[0];
	struct snpu_cqe cqe[2];
	struct snpu_task t[2];
	struct gring ring;
	uint32_t v[COUNT], sub;
	unsigned int r, i;

	ASSERT_EQ(0, gr_init(k->fd, 8, &ring));
	for (r = 0; r < N; r++) {
		for (i = 0; i < COUNT; i++)
			v[i] = r;
		ASSERT_EQ(0, snpu_h2d(self->g.r[r].fd, self->slot[r][0], v,
				      BYTES));
	}
	/*
	 * Rank 0's entry binds the collective first; the others' task of
	 * another reduction is refused, then theirs matches.
	 */
	t[0] = t_coll(k->stream, k->comm, SNPU_COLL_ALLREDUCE, SNPU_DTYPE_I32,
		      SNPU_REDOP_MAX, COUNT, self->slot[0][0],
		      self->slot[0][1], 0);
	t[0].user_data = 1;
	ASSERT_EQ(0, gr_push(&ring, &t[0]));
	ASSERT_EQ(0, gr_enter(k->fd, 1, 0, &sub));
	ASSERT_EQ(1u, sub);
	for (r = 1; r < N; r++) {
		struct rank *q = &self->g.r[r];

		t[1] = t_coll(q->stream, q->comm, SNPU_COLL_ALLREDUCE,
			      SNPU_DTYPE_I32, SNPU_REDOP_SUM, COUNT,
			      self->slot[r][0], self->slot[r][1], 0);
		EXPECT_EQ(-EINVAL, snpu_submit1(q->fd, t[1]));
		t[1].coll.redop = SNPU_REDOP_MAX;
		ASSERT_EQ(0, snpu_submit1(q->fd, t[1]));
	}
	ASSERT_EQ(0, group_sync(&self->g, NULL));
	ASSERT_EQ(0, gr_enter(k->fd, 0, 1, NULL));
	ASSERT_EQ(1u, gr_reap(&ring, cqe, 1));
	EXPECT_EQ(1u, cqe[0].user_data);
	EXPECT_EQ(0, cqe[0].result);
	/* An entry naming no rank of the file is refused through its CQE. */
	t[1] = t[0];
	t[1].coll.comm = k->comm + 1000;
	t[1].user_data = 2;
	ASSERT_EQ(0, gr_run(k->fd, &ring, &t[1], 1, cqe));
	EXPECT_EQ(2u, cqe[0].user_data);
	EXPECT_EQ(-ENOENT, cqe[0].result);
	/* The SQE's collective ran: every rank has the max, N - 1. */
	for (r = 0; r < N; r++) {
		ASSERT_EQ(0, snpu_d2h(self->g.r[r].fd, v, self->slot[r][1],
				      BYTES));
		for (i = 0; i < COUNT; i++)
			ASSERT_EQ(N - 1u, v[i]);
	}
	gr_fini(&ring);
}

TEST_HARNESS_MAIN
