// SPDX-License-Identifier: GPL-2.0
/*
 * snpu graphs: the node path at scale. A core that completes a node
 * releases its successors itself, runs one of them next and hands the
 * rest to the other cores; NOP nodes complete where they become ready;
 * completions take no lock until the launch's last one. These shapes
 * push every part of that: a chain of 4096 nodes (with NOP links), a
 * fan-out of 2000 nodes from one root into one sink, a lattice 8 wide and
 * 64 deep where every node has two predecessors, and a tree of NOPs.
 * Each is launched back to back through SNPU_IOC_SUBMIT and through the
 * ring, and run as plain tasks in index order: all three must equal a C
 * reference. A failing node cancels every node that depends on it.
 *
 * Runs as root in the test VM, module loaded with test_hooks=1.
 */
#include "kselftest_harness.h"
#include "graph_util.h"

#define WAIT_NS		(120 * NS_PER_SEC)
#define LAUNCHES	3

/* A shape: its definition over slot 0 and the words it must leave. */
struct shape {
	struct gdef g;
	uint32_t bytes;		/* of slot 0 */
	uint32_t *want;		/* bytes / 4 words */
	uint32_t *init;		/* what the slot starts from */
};

static int shape_init(struct shape *s, uint32_t bytes)
{
	memset(s, 0, sizeof(*s));
	s->bytes = bytes;
	s->want = calloc(bytes / 4, 4);
	s->init = calloc(bytes / 4, 4);
	if (!s->want || !s->init)
		return -ENOMEM;
	return g_init(&s->g, 1, (uint64_t[]){ bytes }, 0);
}

static void shape_fini(struct shape *s)
{
	g_free(&s->g);
	free(s->want);
	free(s->init);
}

static void set_words(uint32_t *w, uint32_t off, uint32_t bytes, uint32_t v)
{
	uint32_t i;

	for (i = 0; i < bytes / 4; i++)
		w[off / 4 + i] = v;
}

static int nop_node(struct gdef *g)
{
	struct snpu_task t = snpu_t_nop(0);

	return g_node(g, &t);
}

#define CHAIN_N		4096
#define CHAIN_R		256

/*
 * A chain: node 0 FILLs region r with 5, every later node adds the ones
 * to r in place, but each eighth node is a NOP link of the chain.
 * Region r at 0, the ones after it.
 */
static int chain_shape(struct shape *s)
{
	uint32_t i, adds = 0;
	int n;

	if (shape_init(s, 2 * CHAIN_R))
		return -ENOMEM;
	set_words(s->init, CHAIN_R, CHAIN_R, 1);
	set_words(s->want, CHAIN_R, CHAIN_R, 1);
	if (g_fill(&s->g, g_slot(0, 0), CHAIN_R, 5, 1) < 0)
		return -ENOMEM;
	for (i = 1; i < CHAIN_N; i++) {
		if (i % 8 == 0) {
			n = nop_node(&s->g);
		} else {
			n = g_binop(&s->g, SNPU_KERNEL_ADD_I32, g_slot(0, 0),
				    g_slot(0, 0), g_slot(0, CHAIN_R), CHAIN_R,
				    1);
			adds++;
		}
		if (n < 0 || g_pred(&s->g, i - 1))
			return -ENOMEM;
	}
	set_words(s->want, 0, CHAIN_R, 5 + adds);
	return 0;
}

#define FAN_N		2000
#define FAN_R		64

/*
 * One root FILLs the base with 7; FAN_N nodes each copy the base into a
 * region of their own; one sink, after all of them, adds the first and
 * the last region into its own: 14.
 */
static int fan_shape(struct shape *s)
{
	uint32_t i, sink = (FAN_N + 1) * FAN_R;

	if (shape_init(s, (FAN_N + 2) * FAN_R))
		return -ENOMEM;
	if (g_fill(&s->g, g_slot(0, 0), FAN_R, 7, 1) < 0)
		return -ENOMEM;
	set_words(s->want, 0, FAN_R, 7);
	for (i = 1; i <= FAN_N; i++) {
		if (g_copyk(&s->g, g_slot(0, i * FAN_R), g_slot(0, 0), FAN_R,
			    1) < 0 || g_pred(&s->g, 0))
			return -ENOMEM;
		set_words(s->want, i * FAN_R, FAN_R, 7);
	}
	if (g_binop(&s->g, SNPU_KERNEL_ADD_I32, g_slot(0, sink),
		    g_slot(0, FAN_R), g_slot(0, FAN_N * FAN_R), FAN_R, 1) < 0)
		return -ENOMEM;
	for (i = 1; i <= FAN_N; i++)
		if (g_pred(&s->g, i))
			return -ENOMEM;
	set_words(s->want, sink, FAN_R, 14);
	return 0;
}

#define LAT_W		8
#define LAT_D		64
#define LAT_R		128

/*
 * A lattice: layer 0 FILLs its regions with j + 1; node (l, j) adds the
 * regions (l - 1, j) and (l - 1, (j + 1) % LAT_W) into its own, and waits
 * for those two nodes. The reference adds the same way.
 */
static int lattice_shape(struct shape *s)
{
	uint32_t v[LAT_D][LAT_W], l, j;

	if (shape_init(s, LAT_D * LAT_W * LAT_R))
		return -ENOMEM;
	for (l = 0; l < LAT_D; l++) {
		for (j = 0; j < LAT_W; j++) {
			uint32_t me = (l * LAT_W + j) * LAT_R;
			uint32_t a = ((l - 1) * LAT_W + j) * LAT_R;
			uint32_t b = ((l - 1) * LAT_W + (j + 1) % LAT_W) *
				     LAT_R;

			if (!l) {
				if (g_fill(&s->g, g_slot(0, me), LAT_R, j + 1,
					   1) < 0)
					return -ENOMEM;
				v[l][j] = j + 1;
			} else {
				if (g_binop(&s->g, SNPU_KERNEL_ADD_I32,
					    g_slot(0, me), g_slot(0, a),
					    g_slot(0, b), LAT_R, 1) < 0 ||
				    g_pred(&s->g, (l - 1) * LAT_W + j) ||
				    g_pred(&s->g, (l - 1) * LAT_W +
					   (j + 1) % LAT_W))
					return -ENOMEM;
				v[l][j] = v[l - 1][j] + v[l - 1][(j + 1) %
								 LAT_W];
			}
			set_words(s->want, me, LAT_R, v[l][j]);
		}
	}
	return 0;
}

#define TREE_N		511

/*
 * A binary tree of NOP nodes (node i waits for (i - 1) / 2), then a FILL
 * that waits for every leaf: it runs once all of them are complete.
 */
static int nop_tree_shape(struct shape *s)
{
	uint32_t i;

	if (shape_init(s, 256))
		return -ENOMEM;
	for (i = 0; i < TREE_N; i++)
		if (nop_node(&s->g) < 0 || (i && g_pred(&s->g, (i - 1) / 2)))
			return -ENOMEM;
	if (g_fill(&s->g, g_slot(0, 0), 256, 9, 1) < 0)
		return -ENOMEM;
	for (i = TREE_N / 2; i < TREE_N; i++)
		if (g_pred(&s->g, i))
			return -ENOMEM;
	set_words(s->want, 0, 256, 9);
	return 0;
}

/* The nodes of @g as tasks on @stream, slot 0 bound at @base. */
static struct snpu_task *tasks_of(const struct gdef *g, uint32_t stream,
				  uint64_t base)
{
	struct snpu_task *t = calloc(g->nodes_count, sizeof(*t));
	uint32_t i, a;

	if (!t)
		return NULL;
	for (i = 0; i < g->nodes_count; i++) {
		const struct snpu_graph_node *n = &g->nodes[i];

		t[i] = n->task;
		t[i].stream = stream;
		for (a = 0; a < ARRAY_SIZE(n->ref); a++) {
			if (n->ref[a] != SNPU_GRAPH_REF_SLOT(0))
				continue;
			if (t[i].op == SNPU_OP_LAUNCH)
				t[i].launch.args[a].value += base;
			else if (t[i].op == SNPU_OP_MEMSET)
				t[i].memset.addr += base;
			else if (a)
				t[i].copy.src += base;
			else
				t[i].copy.dst += base;
		}
	}
	return t;
}

FIXTURE(shape) {
	int fd;
	uint32_t stream;
	struct gring ring;
	struct shape s;
	uint64_t base;
	uint32_t h;
};

FIXTURE_VARIANT(shape) {
	int (*build)(struct shape *s);
};

FIXTURE_VARIANT_ADD(shape, chain) { .build = chain_shape };
FIXTURE_VARIANT_ADD(shape, fan) { .build = fan_shape };
FIXTURE_VARIANT_ADD(shape, lattice) { .build = lattice_shape };
FIXTURE_VARIANT_ADD(shape, nop_tree) { .build = nop_tree_shape };

FIXTURE_SETUP(shape)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, gr_init(self->fd, 64, &self->ring));
	ASSERT_EQ(0, variant->build(&self->s));
	ASSERT_EQ(0, snpu_alloc(self->fd, self->s.bytes, 0, &self->base));
	ASSERT_EQ(0, g_create(self->fd, &self->s.g, &self->h));
}

FIXTURE_TEARDOWN(shape)
{
	shape_fini(&self->s);
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

/* The slot from its initial bytes; Return: 0 or -errno. */
static int shape_reset(FIXTURE_DATA(shape) *self)
{
	return snpu_h2d(self->fd, self->base, self->s.init, self->s.bytes);
}

/* The first word that differs from the reference, or -1. */
static long shape_diff(FIXTURE_DATA(shape) *self)
{
	uint32_t *got = malloc(self->s.bytes), i;
	long bad = -1;

	if (!got || snpu_d2h(self->fd, got, self->base, self->s.bytes)) {
		free(got);
		return 0;
	}
	for (i = 0; i < self->s.bytes / 4 && bad < 0; i++)
		if (got[i] != self->s.want[i])
			bad = i;
	free(got);
	return bad;
}

TEST_F_TIMEOUT(shape, launches_through_submit, 600)
{
	struct snpu_task t[LAUNCHES];
	unsigned int i;
	int32_t err = 1;
	long bad;

	for (i = 0; i < LAUNCHES; i++)
		t[i] = g_launch_task(self->stream, self->h, &self->base, 1, 0);
	/* The reference is the same after any number of launches. */
	ASSERT_EQ(0, shape_reset(self));
	ASSERT_EQ(0, snpu_submit(self->fd, t, LAUNCHES, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	bad = shape_diff(self);
	EXPECT_EQ(-1, bad) TH_LOG("word %ld differs from the reference", bad);
}

TEST_F_TIMEOUT(shape, launches_through_ring, 600)
{
	struct snpu_task t[LAUNCHES];
	struct snpu_cqe cqe[LAUNCHES];
	unsigned int i;
	long bad;

	for (i = 0; i < LAUNCHES; i++) {
		t[i] = g_launch_task(self->stream, self->h, &self->base, 1, 0);
		t[i].user_data = i + 1;
	}
	ASSERT_EQ(0, shape_reset(self));
	ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, LAUNCHES, cqe));
	for (i = 0; i < LAUNCHES; i++) {
		EXPECT_EQ(i + 1ULL, cqe[i].user_data);
		EXPECT_EQ(0, cqe[i].result);
	}
	bad = shape_diff(self);
	EXPECT_EQ(-1, bad) TH_LOG("word %ld differs from the reference", bad);
}

TEST_F_TIMEOUT(shape, tasks_in_index_order, 600)
{
	struct snpu_task *t = tasks_of(&self->s.g, self->stream, self->base);
	int32_t err = 1;
	long bad;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, shape_reset(self));
	ASSERT_EQ(0, snpu_submit_all(self->fd, t, self->s.g.nodes_count));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	bad = shape_diff(self);
	EXPECT_EQ(-1, bad) TH_LOG("word %ld differs from the reference", bad);
	free(t);
}

#define DEP_N		64
#define DEP_R		64

FIXTURE(fail) {
	int fd;
	uint32_t stream;
	struct gring ring;
};

FIXTURE_SETUP(fail)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, gr_init(self->fd, 64, &self->ring));
}

FIXTURE_TEARDOWN(fail)
{
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * A failing node with a tree under it: node 0 FAILs (EDOM); DEP_N nodes
 * FILL regions of their own after it, and DEP_N more after each of them.
 * None of them may run; the launch fails with EDOM. The launch of the
 * same graph behind it (stitched: its FAIL node waits for nothing) ends
 * with EDOM too or is cancelled, and none of its FILLs runs either.
 */
TEST_F_TIMEOUT(fail, failing_node_cancels_its_dependents, 300)
{
	uint32_t bytes = 2 * DEP_N * DEP_R, *got, i, h;
	uint64_t base;
	struct snpu_task t[2];
	struct snpu_cqe cqe[2];
	struct gdef g;

	ASSERT_EQ(0, g_init(&g, 1, (uint64_t[]){ bytes }, 0));
	ASSERT_LE(0, g_failnode(&g, EDOM));
	for (i = 0; i < 2 * DEP_N; i++) {
		ASSERT_LE(0, g_fill(&g, g_slot(0, i * DEP_R), DEP_R, 0x77, 1));
		ASSERT_EQ(0, g_pred(&g, i < DEP_N ? 0 : 1 + i - DEP_N));
	}
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &base));
	ASSERT_EQ(0, snpu_memset(self->fd, base, 0, bytes));
	for (i = 0; i < 2; i++) {
		t[i] = g_launch_task(self->stream, h, &base, 1, 0);
		t[i].user_data = i + 1;
	}
	ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 2, cqe));
	EXPECT_EQ(-EDOM, cqe[0].result);
	EXPECT_TRUE(cqe[1].result == -EDOM || cqe[1].result == -ECANCELED)
		TH_LOG("second launch: %d", cqe[1].result);
	got = malloc(bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, base, bytes));
	for (i = 0; i < bytes / 4; i++)
		if (got[i])
			break;
	EXPECT_EQ(bytes / 4, i) TH_LOG("node of word %u ran after the failure",
				       i);
	free(got);
}

TEST_HARNESS_MAIN
