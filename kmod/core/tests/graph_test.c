// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of the graph definition checks and of the hazard
 * lists (kmod/core/graph.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"

#include "kselftest_harness.h"

static const __u64 slot_bytes[2] = { 4096, 8192 };

/* FILL of @bytes at @value bound by @ref. */
static struct snpu_graph_node fill(__u32 ref, __u64 value, __u64 bytes)
{
	struct snpu_graph_node n;

	memset(&n, 0, sizeof(n));
	n.task.op = SNPU_OP_LAUNCH;
	n.task.launch.kernel = SNPU_KERNEL_FILL;
	n.task.launch.block_dim = 1;
	n.task.launch.args[0].value = value;
	n.task.launch.args[0].bytes = bytes;
	n.task.launch.args[1].value = 7;
	n.ref[0] = ref;
	return n;
}

/* COPY (device to device) of @bytes from @src to @dst. */
static struct snpu_graph_node copy(__u32 rdst, __u64 dst, __u32 rsrc,
				   __u64 src, __u64 bytes)
{
	struct snpu_graph_node n;

	memset(&n, 0, sizeof(n));
	n.task.op = SNPU_OP_COPY;
	n.task.copy.dir = SNPU_COPY_D2D;
	n.task.copy.dst = dst;
	n.task.copy.src = src;
	n.task.copy.bytes = bytes;
	n.ref[0] = rdst;
	n.ref[1] = rsrc;
	return n;
}

static int acc_of(const struct snpu_graph_node *n, struct snpu_gacc *acc)
{
	return snpu_graph_node_acc(n, 3, 2, slot_bytes, 1024, acc);
}

TEST(node_slot_and_scratch_bound)
{
	struct snpu_graph_node n = copy(SNPU_GRAPH_REF_SLOT(1), 4096,
					SNPU_GRAPH_REF_SCRATCH, 0, 1024);
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC];

	ASSERT_EQ(2, acc_of(&n, acc));
	EXPECT_EQ(1, acc[0].res);
	EXPECT_EQ(4096ULL, acc[0].start);
	EXPECT_EQ(5120ULL, acc[0].end);
	EXPECT_EQ(1, acc[0].write);
	EXPECT_EQ(3U, acc[0].node);
	EXPECT_EQ(SNPU_GRES_SCRATCH, acc[1].res);
	EXPECT_EQ(0, acc[1].write);
	EXPECT_EQ(1, acc[1].addr);
}

TEST(node_word_buffers_marked)
{
	struct snpu_graph_node n = fill(SNPU_GRAPH_REF_SLOT(0), 8, 64);
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC];

	ASSERT_EQ(1, acc_of(&n, acc));
	EXPECT_EQ(1, acc[0].word);
	/* An offset that leaves the 32-bit elements misaligned. */
	n = fill(SNPU_GRAPH_REF_SLOT(0), 2, 64);
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	/* COPY moves bytes. */
	n = copy(SNPU_GRAPH_REF_SLOT(0), 1, SNPU_GRAPH_REF_SLOT(1), 3, 64);
	ASSERT_EQ(2, acc_of(&n, acc));
	EXPECT_EQ(0, acc[0].word);
	EXPECT_EQ(0, acc[1].word);
}

/*
 * A node's writes are the kernel's: SOFTMAX_XENT_F32 writes its loss and
 * its dlogits (arguments 0 and 1) and reads the logits and labels, so a
 * later reader of dlogits is ordered after it.
 */
TEST(node_softmax_xent_writes_two)
{
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC], rd[SNPU_GNODE_MAX_ACC];
	struct snpu_graph_node n, r;
	int i;

	memset(&n, 0, sizeof(n));
	n.task.op = SNPU_OP_LAUNCH;
	n.task.launch.kernel = SNPU_KERNEL_SOFTMAX_XENT_F32;
	n.task.launch.block_dim = 2;
	n.task.launch.args[0].bytes = 8;		/* loss, 2 rows */
	n.task.launch.args[1].value = 64;		/* dlogits */
	n.task.launch.args[1].bytes = 80;
	n.task.launch.args[2].value = 256;		/* logits */
	n.task.launch.args[2].bytes = 80;
	n.task.launch.args[3].value = 512;		/* labels */
	n.task.launch.args[3].bytes = 8;
	n.task.launch.args[4].value = 10;
	n.task.launch.args[5].value = 0x3f800000;
	for (i = 0; i < 4; i++)
		n.ref[i] = SNPU_GRAPH_REF_SLOT(0);
	ASSERT_EQ(4, acc_of(&n, acc));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(i < 2, acc[i].write);
		EXPECT_EQ(i, acc[i].addr);
		EXPECT_EQ(1, acc[i].word);
	}
	/* A FILL of the dlogits conflicts; of the logits only if it writes. */
	r = fill(SNPU_GRAPH_REF_SLOT(0), 64, 80);
	ASSERT_EQ(1, acc_of(&r, rd));
	EXPECT_TRUE(snpu_gnode_conflict(acc, 4, rd, 1));
	rd[0].write = 0;
	EXPECT_TRUE(snpu_gnode_conflict(acc, 4, rd, 1));
	r = fill(SNPU_GRAPH_REF_SLOT(0), 256, 80);
	ASSERT_EQ(1, acc_of(&r, rd));
	rd[0].write = 0;
	EXPECT_FALSE(snpu_gnode_conflict(acc, 4, rd, 1));
}

TEST(node_range_past_slot_or_scratch_refused)
{
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC];
	struct snpu_graph_node n = fill(SNPU_GRAPH_REF_SLOT(0), 4, 4096);

	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(SNPU_GRAPH_REF_SLOT(0), 0, 4096);
	ASSERT_EQ(1, acc_of(&n, acc));
	n = copy(SNPU_GRAPH_REF_SLOT(0), 0, SNPU_GRAPH_REF_SCRATCH, 8, 1024);
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(SNPU_GRAPH_REF_SLOT(0), ~0ULL - 3, 8);
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
}

TEST(node_bad_refs_refused)
{
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC];
	struct snpu_graph_node n = fill(SNPU_GRAPH_REF_SLOT(2), 0, 64);

	/* Slot 2 of a definition with two slots. */
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(0x300, 0, 64);
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	/* A reference on FILL's scalar argument. */
	n = fill(SNPU_GRAPH_REF_ADDR, 0x10000, 64);
	n.ref[1] = SNPU_GRAPH_REF_SLOT(0);
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	/* A plain range that wraps. */
	n = fill(SNPU_GRAPH_REF_ADDR, ~0ULL - 3, 8);
	ASSERT_EQ(-EFAULT, acc_of(&n, acc));
}

TEST(node_ops_and_fields_refused)
{
	struct snpu_gacc acc[SNPU_GNODE_MAX_ACC];
	struct snpu_graph_node n = copy(0, 0x1000, 0, 0x2000, 64);

	n.task.copy.dir = SNPU_COPY_H2D;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(0, 0x1000, 64);
	n.task.stream = 1;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(0, 0x1000, 64);
	n.task.user_data = 1;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(0, 0x1000, 64);
	n.reserved = 1;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n = fill(0, 0x1000, 64);
	n.task.launch.block_dim = 0;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	memset(&n, 0, sizeof(n));
	n.task.op = SNPU_OP_EVENT_RECORD;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n.task.op = SNPU_OP_GRAPH;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
	n.task.op = SNPU_OP_HOST_FUNC;
	ASSERT_EQ(-EINVAL, acc_of(&n, acc));
}

TEST(fanin_rules)
{
	__u32 mark[4], off[5] = { 0, 0, 1, 3, 3 }, fanin[3] = { 0, 0, 1 };

	memset(mark, 0, sizeof(mark));
	ASSERT_EQ(0, snpu_graph_check_fanin(off, fanin, 4, 3, mark));
	ASSERT_EQ(0, snpu_graph_check_fanin(NULL, NULL, 4, 0, mark));
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(NULL, NULL, 4, 1, mark));

	/* A predecessor not below its node. */
	memset(mark, 0, sizeof(mark));
	fanin[2] = 2;
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 3, mark));
	/* A duplicate. */
	memset(mark, 0, sizeof(mark));
	fanin[2] = 0;
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 3, mark));
	/* Offsets: not from 0, decreasing, not ending at the edge count. */
	fanin[2] = 1;
	memset(mark, 0, sizeof(mark));
	off[0] = 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 3, mark));
	off[0] = 0;
	off[2] = 0;
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 3, mark));
	off[2] = 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 2, mark));
}

TEST(fanin_offset_past_the_edges_refused_before_reading)
{
	/* Only as many edges as the last offset: ASan sees any read past. */
	__u32 *fanin = malloc(sizeof(*fanin));
	__u32 mark[4] = { 0 }, off[5] = { 0, 0, 3, 1, 1 };

	ASSERT_NE(NULL, fanin);
	fanin[0] = 0;
	EXPECT_EQ(-EINVAL, snpu_graph_check_fanin(off, fanin, 4, 1, mark));
	free(fanin);
}

/* Hazard lists of @n nodes with one access each. */
static int hazards(const struct snpu_gacc *in, __u32 n, __u32 *off,
		   __u32 *list, __u32 *count)
{
	struct snpu_gacc acc[16];
	__u64 pairs[64];

	memcpy(acc, in, n * sizeof(*in));
	return snpu_graph_hazards(acc, n, n, pairs, 64, off, list, count);
}

TEST(hazards_only_conflicting_pairs)
{
	/* 0 writes A, 1 reads A, 2 reads A, 3 writes B, 4 reads C. */
	const struct snpu_gacc acc[5] = {
		{ .start = 0, .end = 64, .node = 0, .res = 0, .write = 1 },
		{ .start = 32, .end = 96, .node = 1, .res = 0 },
		{ .start = 0, .end = 16, .node = 2, .res = 0 },
		{ .start = 0, .end = 64, .node = 3, .res = 1, .write = 1 },
		{ .start = 0, .end = 64, .node = 4, .res = SNPU_GRES_PLAIN },
	};
	__u32 off[6], list[64], count, n, i;

	ASSERT_EQ(0, hazards(acc, 5, off, list, &count));
	/* 0: {0, 1, 2}; 1: {0}; 2: {0}; 3: {3}; 4: {}. */
	ASSERT_EQ(6U, count);
	ASSERT_EQ(3U, off[1] - off[0]);
	EXPECT_EQ(0U, list[0]);
	EXPECT_EQ(1U, list[1]);
	EXPECT_EQ(2U, list[2]);
	ASSERT_EQ(1U, off[2] - off[1]);
	EXPECT_EQ(0U, list[off[1]]);
	ASSERT_EQ(1U, off[3] - off[2]);
	EXPECT_EQ(0U, list[off[2]]);
	ASSERT_EQ(1U, off[4] - off[3]);
	EXPECT_EQ(3U, list[off[3]]);
	EXPECT_EQ(off[4], off[5]);
	/* Every entry is a real conflict, and every conflict is listed. */
	for (n = 0; n < 5; n++)
		for (i = 0; i < 5; i++) {
			bool listed = false;
			__u32 e;

			for (e = off[n]; e < off[n + 1]; e++)
				listed |= list[e] == i;
			EXPECT_EQ(snpu_gacc_conflict(&acc[n], &acc[i]), listed);
		}
}

/* Is @m in node @n's list? */
static bool listed(const __u32 *off, const __u32 *list, __u32 n, __u32 m)
{
	__u32 e;

	for (e = off[n]; e < off[n + 1]; e++)
		if (list[e] == m)
			return true;
	return false;
}

/*
 * A read that starts strictly before the write it overlaps: the sweep
 * meets the reader first, so the pair is a write after read from its
 * side. 0 reads A [0, 64), 1 writes A [32, 96), 2 reads A [40, 48),
 * 3 writes B [8, 16) and 4 reads B [0, 12).
 */
TEST(hazards_write_after_read_listed)
{
	const struct snpu_gacc acc[5] = {
		{ .start = 0, .end = 64, .node = 0, .res = 0 },
		{ .start = 32, .end = 96, .node = 1, .res = 0, .write = 1 },
		{ .start = 40, .end = 48, .node = 2, .res = 0 },
		{ .start = 8, .end = 16, .node = 3, .res = 1, .write = 1 },
		{ .start = 0, .end = 12, .node = 4, .res = 1 },
	};
	__u32 off[6], list[64], count;

	ASSERT_EQ(0, hazards(acc, 5, off, list, &count));
	EXPECT_TRUE(listed(off, list, 0, 1));
	EXPECT_TRUE(listed(off, list, 1, 0));
	EXPECT_TRUE(listed(off, list, 1, 2));
	EXPECT_TRUE(listed(off, list, 2, 1));
	EXPECT_TRUE(listed(off, list, 3, 4));
	EXPECT_TRUE(listed(off, list, 4, 3));
	EXPECT_FALSE(listed(off, list, 0, 2));
	EXPECT_FALSE(listed(off, list, 0, 0));
	/* 0: {1}, 1: {0, 1, 2}, 2: {1}, 3: {3, 4}, 4: {3}. */
	EXPECT_EQ(8U, count);
}

/*
 * Random access sets of up to 16 nodes on 3 resources, small ranges so
 * that reads and writes overlap in every order: each list holds exactly
 * the nodes that conflict, each once, in ascending order.
 */
TEST(hazards_random_sets_equal_every_pair)
{
	struct snpu_gacc acc[16];
	__u32 off[17], list[64], count, n, m, i, round;

	srand(1);
	for (round = 0; round < 2000; round++) {
		__u32 nodes = 1 + rand() % 16;

		for (i = 0; i < nodes; i++) {
			acc[i].start = rand() % 48;
			acc[i].end = acc[i].start + 1 + rand() % 16;
			acc[i].node = i;
			acc[i].res = rand() % 3;
			acc[i].write = rand() % 3 == 0;
			acc[i].addr = 0;
			acc[i].word = 0;
		}
		if (hazards(acc, nodes, off, list, &count))
			continue;	/* past the bound: no lists */
		for (n = 0; n < nodes; n++) {
			for (i = off[n] + 1; i < off[n + 1]; i++)
				ASSERT_LT(list[i - 1], list[i]);
			for (m = 0; m < nodes; m++)
				ASSERT_EQ(snpu_gacc_conflict(&acc[n], &acc[m]),
					  listed(off, list, n, m))
					TH_LOG("round %u: nodes %u and %u",
					       round, n, m);
		}
	}
}

TEST(hazards_past_the_bound_refused)
{
	struct snpu_gacc acc[16];
	__u32 off[17], list[64], count, i;

	/* 16 writers of one range: 256 entries, above a bound of 64. */
	for (i = 0; i < 16; i++)
		acc[i] = (struct snpu_gacc){ .start = 0, .end = 8, .node = i,
					     .res = 2, .write = 1 };
	ASSERT_EQ(-E2BIG, hazards(acc, 16, off, list, &count));
	/* 16 readers: no entry, but 120 overlapping pairs to visit. */
	for (i = 0; i < 16; i++)
		acc[i].write = 0;
	ASSERT_EQ(0, hazards(acc, 16, off, list, &count));
	ASSERT_EQ(0U, count);
}

TEST(plain_intervals_merged_and_searched)
{
	struct snpu_gacc acc[4] = {
		{ .start = 100, .end = 200, .res = SNPU_GRES_PLAIN },
		{ .start = 0, .end = 50, .res = SNPU_GRES_PLAIN },
		{ .start = 150, .end = 300, .res = SNPU_GRES_PLAIN },
		{ .start = 300, .end = 310, .res = SNPU_GRES_PLAIN },
	};
	__u32 n = snpu_graph_plain_merge(acc, 4);

	ASSERT_EQ(2U, n);
	EXPECT_EQ(0ULL, acc[0].start);
	EXPECT_EQ(50ULL, acc[0].end);
	EXPECT_EQ(100ULL, acc[1].start);
	EXPECT_EQ(310ULL, acc[1].end);
	EXPECT_FALSE(snpu_graph_plain_overlaps(acc, n, 50, 100));
	EXPECT_TRUE(snpu_graph_plain_overlaps(acc, n, 49, 51));
	EXPECT_TRUE(snpu_graph_plain_overlaps(acc, n, 309, 400));
	EXPECT_FALSE(snpu_graph_plain_overlaps(acc, n, 310, 400));
	EXPECT_FALSE(snpu_graph_plain_overlaps(acc, 0, 0, 400));
}

TEST(create_fixed_fields)
{
	struct snpu_graph_create c = {
		.size = sizeof(c), .nodes_count = 1,
		.node_size = SNPU_GRAPH_NODE_SIZE,
	};

	ASSERT_EQ(0, snpu_graph_check_create(&c));
	c.node_size--;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.node_size++;
	c.nodes_count = SNPU_GRAPH_MAX_NODES + 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.nodes_count = 0;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.nodes_count = 1;
	c.slots_count = SNPU_GRAPH_MAX_SLOTS + 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.slots_count = 0;
	c.edges_count = SNPU_GRAPH_MAX_EDGES + 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.edges_count = 0;
	c.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
	c.pad = 0;
	c.reserved[1] = 1;
	ASSERT_EQ(-EINVAL, snpu_graph_check_create(&c));
}

TEST_HARNESS_MAIN
