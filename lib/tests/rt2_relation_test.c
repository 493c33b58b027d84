// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of rt2 part 2: RemoveLaunchFreeEdge's eligibility
 * rules one by one (lib/rt2/relation.c), ExecutionData's CSR and its
 * validation (fuzzed: every malformed CSR is rejected), the generation
 * rules of the schedule state (lib/rt2/sched.c), the caching allocator
 * (lib/rt2/alloc.c) and its waits in the executor, and the liveness of
 * the relation waits: the rule book's open scenario, and an exhaustive
 * schedule checker (every interleaving of the three workers, see
 * check_graph()). Built under ASan/UBSan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "rt2/hostdev.h"
#include "rt2/models.h"

#include "kselftest_harness.h"

#define F32	SNPU_RT2_F32

/* ---- the pass, one eligibility rule per test ------------------------ */

/*
 * P (kernel @pk) writes value 0; launch L reads it; free F (kernel @fk)
 * frees it. Edges P->L, P->F, L->F (and P->F only when @edge_pf).
 */
struct tiny {
	struct rt2_build b;
	int p, l, f;
};

static void tiny_build(struct __test_metadata *_metadata, struct tiny *t,
		       unsigned int pk, unsigned int fk, bool edge_pf)
{
	memset(t, 0, sizeof(*t));
	t->b.flags = SNPU_RT2_EXEC_THREADS;
	t->p = rt2_build_node(&t->b, pk, -1, 0);
	t->l = rt2_build_node(&t->b, RT2_K_EMPTY_LAUNCH, -1, 0);
	t->f = rt2_build_node(&t->b, fk, -1, -1);
	ASSERT_GE(t->f, 0);
	t->b.nodes[t->p].out[t->b.nodes[t->p].nout++] = 0;
	t->b.nodes[t->l].in[t->b.nodes[t->l].nin++] = 0;
	t->b.nodes[t->f].in[t->b.nodes[t->f].nin++] = 0;
	ASSERT_EQ(0, rt2_build_edge(&t->b, t->p, t->l));
	if (edge_pf)
		ASSERT_EQ(0, rt2_build_edge(&t->b, t->p, t->f));
	ASSERT_EQ(0, rt2_build_edge(&t->b, t->l, t->f));
}

static bool has_edge(const struct rt2_build *b, int from, int to)
{
	unsigned int i;

	for (i = 0; i < b->nedges; i++)
		if ((int)b->edges[i].from == from && (int)b->edges[i].to == to)
			return true;
	return false;
}

/* Ineligible: the free keeps its kernel, type and every edge; no relation. */
static void expect_kept(struct __test_metadata *_metadata, struct tiny *t,
			unsigned int fk)
{
	unsigned int nedges = t->b.nedges;
	struct rt2_edge before[8];

	memcpy(before, t->b.edges, nedges * sizeof(before[0]));
	ASSERT_EQ(0, rt2_pass_remove_launch_free_edge(&t->b));
	EXPECT_EQ(fk, t->b.nodes[t->f].kernel);
	EXPECT_EQ(rt2_kernel_node_type(fk), t->b.nodes[t->f].type);
	EXPECT_EQ(-1, t->b.nodes[t->f].prio);
	EXPECT_EQ(0U, t->b.nrels);
	ASSERT_EQ(nedges, t->b.nedges);
	EXPECT_EQ(0, memcmp(before, t->b.edges, nedges * sizeof(before[0])));
	rt2_build_fini(&t->b);
}

TEST(pass_memory_producer_eligible)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_MEM, true);
	ASSERT_TRUE(rt2_free_eligible(&t.b, t.f));
	ASSERT_EQ(0, rt2_pass_remove_launch_free_edge(&t.b));
	EXPECT_EQ(RT2_K_FREE_MEM_HOLD, t.b.nodes[t.f].kernel);
	EXPECT_EQ(RT2_NT_FREE_HOLD, t.b.nodes[t.f].type);
	EXPECT_FALSE(has_edge(&t.b, t.l, t.f));
	EXPECT_TRUE(has_edge(&t.b, t.p, t.f));
	ASSERT_EQ(1U, t.b.nrels);
	EXPECT_EQ((uint32_t)t.f, t.b.rels[0].free);
	EXPECT_EQ((uint32_t)t.l, t.b.rels[0].launch);
	rt2_build_fini(&t.b);
}

TEST(pass_host_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_ALLOC_HOST_CPU_OUTPUT, RT2_K_FREE_MEM,
		   true);
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

TEST(pass_normal_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY, RT2_K_FREE_MEM, true);
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

/* The only writer before the free is a launch. */
TEST(pass_launch_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_LAUNCH, RT2_K_FREE_MEM, true);
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

TEST(pass_unregistered_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_MEM, true);
	t.b.nodes[t.p].kernel = RT2_K_COUNT + 3;
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

/* No direct producer: the writer is not a predecessor of the free. */
TEST(pass_missing_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_MEM, false);
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

TEST(pass_free_tensor_memory_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_TENSOR_MEM,
		   true);
	expect_kept(_metadata, &t, RT2_K_FREE_TENSOR_MEM);
}

/* AccessMemCrossStream-like: placed at run time, conservatively kept. */
TEST(pass_runtime_placed_producer_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_ACCESS_MEM_CROSS_STREAM,
		   RT2_K_FREE_MEM, true);
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

/* Relations never cross owner graphs. */
TEST(pass_other_owner_kept)
{
	struct tiny t;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_MEM, true);
	t.b.nodes[t.l].owner = 1;
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

/* A free something depends on is never relaxed. */
TEST(pass_free_with_successor_kept)
{
	struct tiny t;
	int x;

	tiny_build(_metadata, &t, RT2_K_EMPTY_MEMORY, RT2_K_FREE_MEM, true);
	x = rt2_build_node(&t.b, RT2_K_EMPTY, -1, 0);
	ASSERT_EQ(0, rt2_build_edge(&t.b, t.f, x));
	expect_kept(_metadata, &t, RT2_K_FREE_MEM);
}

/*
 * One launch, two eligible frees with producers P0, P1: the Cartesian
 * ordering puts both producers before both frees, then the duplicate
 * Launch -> Free edges make one relation each.
 */
TEST(pass_cartesian_then_dedup)
{
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	int p[2], f[2], l, i;

	l = rt2_build_node(&b, RT2_K_EMPTY_LAUNCH, -1, 0);
	for (i = 0; i < 2; i++) {
		p[i] = rt2_build_node(&b, RT2_K_EMPTY_MEMORY, -1, 0);
		f[i] = rt2_build_node(&b, RT2_K_FREE_MEM, -1, -1);
		b.nodes[p[i]].out[b.nodes[p[i]].nout++] = i;
		b.nodes[f[i]].in[b.nodes[f[i]].nin++] = i;
		b.nodes[l].in[b.nodes[l].nin++] = i;
		ASSERT_EQ(0, rt2_build_edge(&b, p[i], l));
		ASSERT_EQ(0, rt2_build_edge(&b, p[i], f[i]));
		ASSERT_EQ(0, rt2_build_edge(&b, l, f[i]));
		ASSERT_EQ(0, rt2_build_edge(&b, l, f[i]));
	}
	ASSERT_EQ(0, rt2_pass_remove_launch_free_edge(&b));
	EXPECT_TRUE(has_edge(&b, p[0], f[1]));
	EXPECT_TRUE(has_edge(&b, p[1], f[0]));
	EXPECT_FALSE(has_edge(&b, l, f[0]));
	EXPECT_FALSE(has_edge(&b, l, f[1]));
	ASSERT_EQ(2U, b.nrels);
	EXPECT_EQ((uint32_t)f[0], b.rels[0].free);
	EXPECT_EQ((uint32_t)f[1], b.rels[1].free);
	rt2_build_fini(&b);
}

/* The model of the executor tests: relu(x * w + b), output r. */
static struct snpu_rt2_model *model_chain(void)
{
	struct snpu_rt2_shape sx = shape2(F32, 5, 7), sw = shape2(F32, 7, 3);
	struct snpu_rt2_shape sb = shape2(F32, 5, 3);
	static float wv[21];
	struct snpu_rt2_model *m;
	int x, w, b, y;

	if (snpu_rt2_model_create(&m))
		return NULL;
	x = snpu_rt2_model_input(m, &sx);
	w = snpu_rt2_model_param(m, &sw, wv);
	b = snpu_rt2_model_input(m, &sb);
	y = op2(m, SNPU_RT2_OP_MATMUL, x, w);
	y = op2(m, SNPU_RT2_OP_ADD, y, b);
	y = op2(m, SNPU_RT2_OP_RELU, y, -1);
	snpu_rt2_model_output(m, y);
	return m;
}

/* Lowered, with the passes of @flags. */
static int lower(const struct snpu_rt2_model *m, unsigned int flags,
		 struct rt2_build *b)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->flags = flags;
	ret = rt2_lower(b, m);
	return ret ? ret : rt2_run_passes(b);
}

/* Count the frees of each type and the Launch -> Free edges left. */
static void count_frees(const struct rt2_build *b, unsigned int *plain,
			unsigned int *hold, unsigned int *lf)
{
	unsigned int i;

	*plain = *hold = *lf = 0;
	for (i = 0; i < b->nnodes; i++) {
		*plain += !b->nodes[i].dead && b->nodes[i].type == RT2_NT_FREE;
		*hold += !b->nodes[i].dead &&
			 b->nodes[i].type == RT2_NT_FREE_HOLD;
	}
	for (i = 0; i < b->nedges; i++)
		*lf += rt2_kernel_is_launch(b->nodes[b->edges[i].from].kernel) &&
		       b->nodes[b->edges[i].to].type == RT2_NT_FREE_HOLD;
}

/* Three workers: every free of the model is eligible, no edge is left. */
TEST(pass_model_three_workers)
{
	struct snpu_rt2_model *m = model_chain();
	unsigned int plain, hold, lf;
	struct rt2_build b;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower(m, SNPU_RT2_EXEC_THREADS, &b));
	count_frees(&b, &plain, &hold, &lf);
	EXPECT_EQ(0U, plain);
	EXPECT_EQ(5U, hold);
	EXPECT_EQ(0U, lf);
	EXPECT_EQ(10U, b.nrels);
	rt2_build_fini(&b);
	snpu_rt2_model_destroy(m);
}

/* One thread, and the multi-stream option: nothing relaxed. */
TEST(pass_model_other_modes_keep_edges)
{
	static const unsigned int flags[2] = {
		0, SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_DYN_MULTI_STREAM };
	struct snpu_rt2_model *m = model_chain();
	unsigned int plain, hold, lf, i;
	struct rt2_build b;

	ASSERT_NE(NULL, m);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, lower(m, flags[i], &b));
		count_frees(&b, &plain, &hold, &lf);
		EXPECT_EQ(5U, plain);
		EXPECT_EQ(0U, hold);
		EXPECT_EQ(0U, b.nrels);
		rt2_build_fini(&b);
	}
	snpu_rt2_model_destroy(m);
}

/* ---- ExecutionData ------------------------------------------------------ */

struct xfix {
	struct rt2_build b;
	struct rt2_graph g;
	struct rt2_rel *r;
	struct rt2_xdata x;
};

static void xfix_make(struct __test_metadata *_metadata, struct xfix *f)
{
	struct snpu_rt2_model *m = model_chain();

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, lower(m, SNPU_RT2_EXEC_THREADS, &f->b));
	snpu_rt2_model_destroy(m);	/* the graph no longer needs it */
	ASSERT_EQ(0, rt2_finalize(&f->b, &f->g));
	ASSERT_EQ(0, rt2_rels_to_ids(&f->b, &f->g, &f->r));
	ASSERT_EQ(0, rt2_xdata_build(&f->x, &f->g, f->r, f->b.nrels));
}

static void xfix_fini(struct xfix *f)
{
	rt2_xdata_fini(&f->x);
	free(f->r);
	rt2_graph_fini(&f->g);
	rt2_build_fini(&f->b);
}

TEST(xdata_valid_and_deterministic)
{
	struct rt2_xdata y;
	struct xfix f;
	unsigned int i, n;

	xfix_make(_metadata, &f);
	ASSERT_EQ(0, rt2_xdata_validate(&f.x, &f.g));
	n = f.b.nrels;
	/* Reversed input: the same arrays. */
	for (i = 0; i < n / 2; i++) {
		struct rt2_rel t = f.r[i];

		f.r[i] = f.r[n - 1 - i];
		f.r[n - 1 - i] = t;
	}
	ASSERT_EQ(0, rt2_xdata_build(&y, &f.g, f.r, n));
	EXPECT_EQ(0, memcmp(f.x.off, y.off, (f.g.nnodes + 1) * 4));
	EXPECT_EQ(0, memcmp(f.x.col, y.col, n * 4));
	EXPECT_EQ(0, memcmp(f.x.rank, y.rank, f.g.nnodes * 4));
	EXPECT_EQ(0, memcmp(f.x.req, y.req, f.g.nnodes * 4));
	EXPECT_EQ(0, rt2_xdata_validate(&y, &f.g));
	rt2_xdata_fini(&y);
	/* Ranks follow the launch order; req is 1 + the highest rank. */
	for (i = 0; i < f.g.nnodes; i++) {
		uint32_t j, req = 0;

		for (j = f.x.off[i]; j < f.x.off[i + 1]; j++)
			if ((uint32_t)f.x.rank[f.x.col[j]] + 1 > req)
				req = (uint32_t)f.x.rank[f.x.col[j]] + 1;
		EXPECT_EQ(req, f.x.req[i]);
	}
	xfix_fini(&f);
}

TEST(xdata_ids_out_of_range)
{
	struct rt2_rel bad = { 0, 0 };
	struct xfix f;

	xfix_make(_metadata, &f);
	bad.free = f.g.nnodes;
	EXPECT_EQ(-EPROTO, rt2_xdata_build(&f.x, &f.g, &bad, 1));
	xfix_fini(&f);
}

/*
 * A relation dropped: the free's edge is gone without protection. The
 * build refuses the relations, and the check refuses the CSR with that
 * column taken out.
 */
TEST(xdata_unprotected_removal_rejected)
{
	struct rt2_xdata y;
	struct xfix f;
	uint32_t q;

	xfix_make(_metadata, &f);
	EXPECT_EQ(-EPROTO, rt2_xdata_build(&y, &f.g, f.r + 1, f.b.nrels - 1));
	ASSERT_EQ(0, rt2_xdata_build(&y, &f.g, f.r, f.b.nrels));
	/* Take out the first relation of the first row, as if never made. */
	for (q = 0; q + 1 < y.nrels; q++)
		y.col[q] = y.col[q + 1];
	for (q = 0; q <= f.g.nnodes; q++)
		if (y.off[q] > 0)
			y.off[q]--;
	y.nrels--;
	EXPECT_EQ(-EPROTO, rt2_xdata_validate(&y, &f.g));
	rt2_xdata_fini(&y);
	xfix_fini(&f);
}

static unsigned int rnd(unsigned int *st)
{
	*st = *st * 1103515245U + 12345U;
	return (*st >> 16) & 0x7fff;
}

/*
 * The three input orders the build takes (grouped by free with each row
 * sorted, grouped with rows out of order, and shuffled) give the arrays
 * of the pass's own order, which is grouped.
 */
TEST(xdata_build_any_order_same_arrays)
{
	unsigned int st = 7, i, j, n, order;
	struct rt2_rel *r;
	struct rt2_xdata y;
	struct xfix f;

	xfix_make(_metadata, &f);
	n = f.b.nrels;
	/* The pass hands them over grouped, the frees ascending. */
	for (i = 1; i < n; i++)
		ASSERT_LE(f.r[i - 1].free, f.r[i].free);
	r = malloc(n * sizeof(*r));
	ASSERT_NE(NULL, r);
	for (order = 0; order < 3; order++) {
		memcpy(r, f.r, n * sizeof(*r));
		for (i = 0; i < n; i++) {
			/* 0: rows sorted; 1: each row reversed; 2: shuffled */
			for (j = i; order == 0 && j + 1 < n &&
			     r[j + 1].free == r[i].free; j++)
				;
			if (order == 0) {
				unsigned int a, b;

				for (a = i; a < j; a++)
					for (b = j; b > a; b--)
						if (r[b - 1].launch > r[b].launch) {
							struct rt2_rel t = r[b];

							r[b] = r[b - 1];
							r[b - 1] = t;
						}
				i = j;
			}
		}
		if (order == 1)
			for (i = 0; i < n; i = j) {
				for (j = i + 1; j < n && r[j].free == r[i].free; j++)
					;
				for (unsigned int a = i, b = j - 1; a < b; a++, b--) {
					struct rt2_rel t = r[a];

					r[a] = r[b];
					r[b] = t;
				}
			}
		if (order == 2)
			for (i = n - 1; i > 0; i--) {
				struct rt2_rel t;

				j = rnd(&st) % (i + 1);
				t = r[i];
				r[i] = r[j];
				r[j] = t;
			}
		ASSERT_EQ(0, rt2_xdata_build(&y, &f.g, r, n));
		EXPECT_EQ(0, memcmp(f.x.off, y.off, (f.g.nnodes + 1) * 4));
		EXPECT_EQ(0, memcmp(f.x.col, y.col, n * 4));
		EXPECT_EQ(0, memcmp(f.x.rank, y.rank, f.g.nnodes * 4));
		EXPECT_EQ(0, memcmp(f.x.req, y.req, f.g.nnodes * 4));
		EXPECT_EQ(f.x.nranks, y.nranks);
		EXPECT_EQ(0, rt2_xdata_validate(&y, &f.g));
		rt2_xdata_fini(&y);
	}
	free(r);
	xfix_fini(&f);
}

/* A free and a launch of the fixture: the first relation's. */
static void xfix_pair(struct xfix *f, uint32_t *fr, uint32_t *la)
{
	*fr = f->r[0].free;
	*la = f->r[0].launch;
}

/* The first node of type @type, or the node count. */
static uint32_t xfix_node_of(const struct xfix *f, unsigned int type)
{
	uint32_t i;

	for (i = 0; i < f->g.nnodes && f->g.nodes[i].type != type; i++)
		;
	return i;
}

static int cmp_rel_fl(const void *a, const void *b)
{
	const struct rt2_rel *x = a, *y = b;

	if (x->free != y->free)
		return x->free < y->free ? -1 : 1;
	return x->launch < y->launch ? -1 : x->launch > y->launch;
}

/*
 * The build refuses relations @r (@n of them) with -EPROTO both when they
 * come grouped by free, rows sorted (the one-pass path, no row sort), and
 * when they come in the reverse order (the transposing sort).
 */
static void xbuild_refused(struct __test_metadata *_metadata,
			   const struct xfix *f, struct rt2_rel *r,
			   unsigned int n)
{
	struct rt2_xdata y;
	unsigned int i;

	qsort(r, n, sizeof(*r), cmp_rel_fl);
	EXPECT_EQ(-EPROTO, rt2_xdata_build(&y, &f->g, r, n));
	for (i = 0; i < n / 2; i++) {
		struct rt2_rel t = r[i];

		r[i] = r[n - 1 - i];
		r[n - 1 - i] = t;
	}
	EXPECT_EQ(-EPROTO, rt2_xdata_build(&y, &f->g, r, n));
}

/* The fixture's relations and @extra. */
static void xbuild_refused_extra(struct __test_metadata *_metadata,
				 const struct xfix *f,
				 const struct rt2_rel *extra)
{
	unsigned int n = f->b.nrels;
	struct rt2_rel *r = malloc((n + 1) * sizeof(*r));

	ASSERT_NE(NULL, r);
	memcpy(r, f->r, n * sizeof(*r));
	r[n] = *extra;
	xbuild_refused(_metadata, f, r, n + 1);
	free(r);
}

TEST(xdata_build_refuses_duplicate)
{
	struct rt2_rel bad;
	struct xfix f;

	xfix_make(_metadata, &f);
	xfix_pair(&f, &bad.free, &bad.launch);
	xbuild_refused_extra(_metadata, &f, &bad);
	xfix_fini(&f);
}

/* A memory node, even one the launch order were to name. */
TEST(xdata_build_refuses_column_not_a_launch)
{
	struct rt2_rel bad;
	struct xfix f;

	xfix_make(_metadata, &f);
	xfix_pair(&f, &bad.free, &bad.launch);
	bad.launch = xfix_node_of(&f, RT2_NT_MEMORY);
	ASSERT_LT(bad.launch, f.g.nnodes);
	f.g.launch_order[f.g.nlaunch++] = bad.launch;	/* room: per node */
	xbuild_refused_extra(_metadata, &f, &bad);
	xfix_fini(&f);
}

/*
 * A hold-address free's relations moved onto a node that is not one (the
 * free's value then used by no launch, and the row count unchanged, so
 * that only this rule can object).
 */
TEST(xdata_build_refuses_row_not_a_hold_free)
{
	struct xfix f;
	uint32_t fr, other;
	unsigned int i;

	xfix_make(_metadata, &f);
	fr = f.r[0].free;
	other = xfix_node_of(&f, RT2_NT_NORMAL);
	ASSERT_LT(other, f.g.nnodes);
	for (i = 0; i < f.b.nrels; i++)
		if (f.r[i].free == fr)
			f.r[i].free = other;
	f.g.nodes[fr].in[0] = 1000;
	xbuild_refused(_metadata, &f, f.r, f.b.nrels);
	xfix_fini(&f);
}

TEST(xdata_build_refuses_other_owner)
{
	struct rt2_rel bad;
	struct xfix f;

	xfix_make(_metadata, &f);
	xfix_pair(&f, &bad.free, &bad.launch);
	/* The first relation's launch moves to another owner graph. */
	f.g.nodes[bad.launch].owner = 3;
	xbuild_refused(_metadata, &f, f.r, f.b.nrels);
	xfix_fini(&f);
}

/* A launch that is also a predecessor of the free: the edge stayed. */
TEST(xdata_build_refuses_column_that_is_a_predecessor)
{
	struct rt2_rel bad;
	struct xfix f;
	uint32_t p;

	xfix_make(_metadata, &f);
	xfix_pair(&f, &bad.free, &bad.launch);
	/* Make the free's first predecessor a launch of the order. */
	ASSERT_GT(f.g.nodes[bad.free].npred, 0U);
	p = f.g.preds[f.g.nodes[bad.free].pred_off];
	f.g.nodes[p].type = RT2_NT_LAUNCH;
	f.g.nodes[p].nin = f.g.nodes[p].nout = 0;
	f.g.launch_order[f.g.nlaunch++] = p;	/* room: one per node */
	bad.launch = p;
	xbuild_refused_extra(_metadata, &f, &bad);
	xfix_fini(&f);
}

/* A relation launch that the strict launch order does not have. */
TEST(xdata_build_refuses_launch_outside_order)
{
	struct rt2_rel bad;
	struct xfix f;
	uint32_t m;

	xfix_make(_metadata, &f);
	xfix_pair(&f, &bad.free, &bad.launch);
	m = xfix_node_of(&f, RT2_NT_MEMORY);
	ASSERT_LT(m, f.g.nnodes);
	/* A launch that uses no value, so that only the order can object. */
	f.g.nodes[m].type = RT2_NT_LAUNCH;
	f.g.nodes[m].nin = f.g.nodes[m].nout = 0;
	bad.launch = m;
	xbuild_refused_extra(_metadata, &f, &bad);
	xfix_fini(&f);
}

/*
 * Every hold-address free has relations: one without is refused (here
 * one whose value no launch uses, so that only this rule can object).
 */
TEST(xdata_build_refuses_hold_free_without_row)
{
	struct xfix f;
	unsigned int i, n;
	uint32_t fr;

	xfix_make(_metadata, &f);
	fr = f.r[0].free;
	for (i = 0, n = 0; i < f.b.nrels; i++)
		if (f.r[i].free != fr)
			f.r[n++] = f.r[i];
	f.g.nodes[fr].in[0] = 1000;
	xbuild_refused(_metadata, &f, f.r, n);
	xfix_fini(&f);
}

/* A row with at least @min entries, at random. */
static int pick_row(const struct rt2_xdata *x, unsigned int *st,
		    unsigned int min)
{
	unsigned int i, n = x->nnodes, s = rnd(st) % n;

	for (i = 0; i < n; i++) {
		unsigned int r = (s + i) % n;

		if (x->off[r + 1] - x->off[r] >= min)
			return (int)r;
	}
	return -1;
}

/*
 * One malformation, each certain to break a rule: a column that is not a
 * launch, out of range, or repeated; a row out of order; offsets that
 * decrease or miss the count; a launch of another owner; a row on a
 * node that is not a hold-address free; a hold-address free turned plain;
 * a column that is still a predecessor; a wrong required generation; a
 * dropped relation (unprotected). Returns its class.
 */
static unsigned int mutate(struct rt2_xdata *x, struct rt2_graph *g,
			   unsigned int *st)
{
	unsigned int k = rnd(st) % 11, i;
	int r = pick_row(x, st, 1);
	uint32_t j = x->off[r] + rnd(st) % (x->off[r + 1] - x->off[r]);

	switch (k) {
	case 0:		/* a column that is not a launch */
		for (i = 0; g->nodes[i].type == RT2_NT_LAUNCH; i++)
			;
		x->col[j] = i;
		break;
	case 1:
		x->col[j] = g->nnodes + rnd(st) % 5;
		break;
	case 2:
		r = pick_row(x, st, 2);
		x->col[x->off[r] + 1] = x->col[x->off[r]];
		break;
	case 3: {
		uint32_t t;

		r = pick_row(x, st, 2);
		t = x->col[x->off[r]];
		x->col[x->off[r]] = x->col[x->off[r] + 1];
		x->col[x->off[r] + 1] = t;
		break;
	}
	case 4:		/* offsets: one decreases */
		x->off[r + 1] = x->off[r] - 1 + 0 * j;
		if (!x->off[r])
			x->off[r] = 1, x->off[r + 1] = 0;
		break;
	case 5:
		x->off[g->nnodes] = x->nrels + 1 + rnd(st) % 3;
		break;
	case 6:
		g->nodes[x->col[j]].owner = 7;
		break;
	case 7:		/* a row on a launch: retype the free */
		g->nodes[r].type = RT2_NT_LAUNCH;
		break;
	case 8:
		g->nodes[r].type = RT2_NT_FREE;
		break;
	case 9:
		x->req[r] += 1 + rnd(st) % 3;
		break;
	default: {	/* drop the relation: shift the rest down */
		uint32_t q;

		for (q = j; q + 1 < x->nrels; q++)
			x->col[q] = x->col[q + 1];
		for (q = (uint32_t)r + 1; q <= g->nnodes; q++)
			x->off[q]--;
		x->nrels--;
		break;
	}
	}
	return k;
}

/* Every malformed CSR is rejected: 3000 random malformations. */
TEST(xdata_fuzz_malformed_rejected)
{
	unsigned int st = 12345, it, seen[11] = { 0 }, i;
	struct rt2_node *nodes;
	struct xfix f;
	struct rt2_xdata y;

	xfix_make(_metadata, &f);
	nodes = malloc(f.g.nnodes * sizeof(*nodes));
	ASSERT_NE(NULL, nodes);
	memcpy(nodes, f.g.nodes, f.g.nnodes * sizeof(*nodes));
	for (it = 0; it < 3000; it++) {
		ASSERT_EQ(0, rt2_xdata_build(&y, &f.g, f.r, f.b.nrels));
		ASSERT_EQ(0, rt2_xdata_validate(&y, &f.g));
		seen[mutate(&y, &f.g, &st)]++;
		ASSERT_EQ(-EPROTO, rt2_xdata_validate(&y, &f.g)) {
			TH_LOG("iteration %u", it);
		}
		rt2_xdata_fini(&y);
		memcpy(f.g.nodes, nodes, f.g.nnodes * sizeof(*nodes));
	}
	for (i = 0; i < 11; i++)
		EXPECT_GT(seen[i], 100U);
	free(nodes);
	xfix_fini(&f);
}

/* One thread would run a hold-address free before its launches. */
TEST(xdata_only_with_three_workers)
{
	struct snpu_rt2_model *m = model_chain();
	struct snpu_rt2_exec_opts o = { .flags = 0 };
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	struct rt2_build b;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, lower(m, SNPU_RT2_EXEC_THREADS, &b));
	EXPECT_EQ(-EINVAL, rt2_exec_create_graph(m, &h->head, &o, &b, &e));
	rt2_build_fini(&b);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/* ---- generation rules --------------------------------------------------- */

/*
 * A hand-made ExecutionData over 6 nodes: launches 0, 1, 2 (ranks 0, 1
 * and none: 2 is unrelated), frees 3 -> {0}, 4 -> {0, 1}, 5 -> {1}.
 */
struct sfix {
	uint32_t off[7], col[4], req[6], act[2];
	int32_t rank[6];
	struct rt2_xdata x;
	struct rt2_sched s;
};

static void sfix_make(struct sfix *f)
{
	static const uint32_t off[7] = { 0, 0, 0, 0, 1, 3, 4 };
	static const uint32_t col[4] = { 0, 0, 1, 1 };
	static const uint32_t req[6] = { 0, 0, 0, 1, 2, 2 };
	static const int32_t rank[6] = { 0, 1, -1, -1, -1, -1 };

	memset(f, 0, sizeof(*f));
	memcpy(f->off, off, sizeof(off));
	memcpy(f->col, col, sizeof(col));
	memcpy(f->req, req, sizeof(req));
	memcpy(f->rank, rank, sizeof(rank));
	f->x = (struct rt2_xdata){ 6, 4, 2, f->off, f->col, f->rank, f->req,
				   f->act };
	rt2_sched_begin(&f->s);
}

TEST(gen_only_successful_free_activates)
{
	struct sfix f;

	sfix_make(&f);
	rt2_sched_free_done(&f.s, &f.x, 3, -EIO);
	EXPECT_EQ(0U, f.s.unmet);
	EXPECT_EQ(0U, f.s.freed);
	EXPECT_EQ(0U, f.s.required);
	rt2_sched_free_done(&f.s, &f.x, 3, 0);
	EXPECT_EQ(1U, f.s.unmet);
	EXPECT_EQ(1U, f.s.freed);
	EXPECT_EQ(1U, f.s.required);
}

TEST(gen_only_successful_relation_launch_advances)
{
	struct sfix f;

	sfix_make(&f);
	EXPECT_FALSE(rt2_sched_launch_done(&f.s, &f.x, 0, -EIO));
	EXPECT_EQ(0U, f.s.submitted);
	EXPECT_FALSE(rt2_sched_launch_done(&f.s, &f.x, 2, 0));
	EXPECT_EQ(0U, f.s.submitted);
	EXPECT_FALSE(rt2_sched_launch_done(&f.s, &f.x, 3, 0));
	EXPECT_EQ(0U, f.s.submitted);
	rt2_sched_launch_done(&f.s, &f.x, 0, 0);
	EXPECT_EQ(1U, f.s.submitted);
	EXPECT_EQ(0, rt2_sched_check(&f.s, 1));
	EXPECT_EQ(-EAGAIN, rt2_sched_check(&f.s, 2));
}

/* Frees 3 and 4 both on launch 0: one unmet launch for it. */
TEST(gen_several_frees_one_launch_count_once)
{
	struct sfix f;

	sfix_make(&f);
	rt2_sched_free_done(&f.s, &f.x, 3, 0);
	rt2_sched_free_done(&f.s, &f.x, 4, 0);
	EXPECT_EQ(2U, f.s.unmet);	/* launches 0 and 1 */
	rt2_sched_free_done(&f.s, &f.x, 5, 0);
	EXPECT_EQ(2U, f.s.unmet);
	EXPECT_EQ(3U, f.s.freed);
	rt2_sched_launch_done(&f.s, &f.x, 0, 0);
	EXPECT_EQ(1U, f.s.unmet);
	rt2_sched_launch_done(&f.s, &f.x, 1, 0);
	EXPECT_EQ(0U, f.s.unmet);
	/* A free after its launch was submitted activates nothing. */
	rt2_sched_free_done(&f.s, &f.x, 3, 0);
	EXPECT_EQ(0U, f.s.unmet);
}

/* A waiter is woken exactly when its generation is reached. */
TEST(gen_wake_at_generation)
{
	struct sfix f;

	sfix_make(&f);
	f.s.wait_gen = 2;
	EXPECT_FALSE(rt2_sched_launch_done(&f.s, &f.x, 0, 0));
	EXPECT_FALSE(rt2_sched_launch_done(&f.s, &f.x, 2, 0));
	EXPECT_TRUE(rt2_sched_launch_done(&f.s, &f.x, 1, 0));
	EXPECT_EQ(1UL, f.s.wakeups);
}

/* Failure: no generation moves, the first status stays, all wake. */
TEST(gen_failure_keeps_status_and_wakes)
{
	struct sfix f;

	sfix_make(&f);
	rt2_sched_free_done(&f.s, &f.x, 4, 0);
	EXPECT_TRUE(rt2_sched_abort(&f.s, -EL2HLT));
	EXPECT_TRUE(rt2_sched_abort(&f.s, -EIO));
	EXPECT_EQ(-EL2HLT, f.s.status);
	EXPECT_EQ(0U, f.s.submitted);
	EXPECT_EQ(2U, f.s.unmet);
	EXPECT_EQ(-EL2HLT, rt2_sched_check(&f.s, 1));
	/* A reached generation is still reached. */
	EXPECT_EQ(0, rt2_sched_check(&f.s, 0));
}

TEST(gen_end_of_sequence_wakes)
{
	struct sfix f;

	sfix_make(&f);
	rt2_sched_launch_done(&f.s, &f.x, 0, 0);
	EXPECT_TRUE(rt2_sched_eos(&f.s));
	EXPECT_EQ(1U, f.s.submitted);
	EXPECT_EQ(0, f.s.status);
	EXPECT_EQ(0, rt2_sched_check(&f.s, 1));
	EXPECT_EQ(-EDEADLK, rt2_sched_check(&f.s, 2));
}

/* Each run its own epoch: nothing of the last run counts. */
TEST(gen_epochs_isolated)
{
	struct sfix f;
	uint32_t ep;

	sfix_make(&f);
	rt2_sched_free_done(&f.s, &f.x, 4, 0);
	rt2_sched_abort(&f.s, -EIO);
	ep = f.s.epoch;
	rt2_sched_begin(&f.s);
	EXPECT_NE(ep, f.s.epoch);
	EXPECT_EQ(0U, f.s.unmet);
	EXPECT_EQ(0, f.s.status);
	EXPECT_EQ(0U, f.s.required);
	/* Launch 0 was activated last run: not counted now. */
	rt2_sched_launch_done(&f.s, &f.x, 0, 0);
	EXPECT_EQ(0U, f.s.unmet);
	rt2_sched_free_done(&f.s, &f.x, 5, 0);
	EXPECT_EQ(1U, f.s.unmet);
}

/* ---- the caching allocator ------------------------------------------- */

TEST(alloc_held_until_submitted)
{
	struct rt2_pool p = { 0 };
	uint32_t sub = 0, gen = 0;
	uint64_t a, b2;
	struct hostdev *h;

	ASSERT_EQ(0, hostdev_open(&h));
	p.submitted = &sub;
	a = 0;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &a, &gen));
	ASSERT_EQ(0, rt2_alloc_put(&p, a, 2));
	EXPECT_EQ(1U, p.nheld);
	/* Its launches not submitted: no limit, so a new block, no wait. */
	b2 = 0;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &b2, &gen));
	EXPECT_NE(a, b2);
	ASSERT_EQ(0, rt2_alloc_put(&p, b2, 0));
	/* Submitted: the held block comes back first when hinted. */
	sub = 2;
	b2 = a;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &b2, &gen));
	EXPECT_EQ(a, b2);
	EXPECT_EQ(0U, p.nheld);
	EXPECT_EQ(2UL, p.dev_allocs);
	EXPECT_EQ(-ENOENT, rt2_alloc_put(&p, 12345, 0));
	rt2_alloc_fini(&p, &h->head);
	hostdev_close(h);
}

/*
 * At the limit: recycle, waiting for the held block of the size (the
 * lowest such generation), or for every held block; no held block (the
 * relations were not executed): nothing to wait for.
 */
TEST(alloc_recycle_waits_only_for_activated)
{
	struct rt2_pool p = { .limit = 128 };
	uint32_t sub = 0, gen = 99;
	uint64_t a = 0, b = 0, c = 0;
	struct hostdev *h;

	ASSERT_EQ(0, hostdev_open(&h));
	p.submitted = &sub;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &a, &gen));
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &b, &gen));
	ASSERT_EQ(RT2_ALLOC_RECYCLE, rt2_alloc_get(&p, &h->head, 64, &c, &gen));
	EXPECT_EQ(0U, gen);	/* nothing held: no wait */
	ASSERT_EQ(0, rt2_alloc_put(&p, a, 3));
	ASSERT_EQ(0, rt2_alloc_put(&p, b, 5));
	ASSERT_EQ(RT2_ALLOC_RECYCLE, rt2_alloc_get(&p, &h->head, 64, &c, &gen));
	EXPECT_EQ(3U, gen);
	ASSERT_EQ(RT2_ALLOC_RECYCLE, rt2_alloc_get(&p, &h->head, 32, &c, &gen));
	EXPECT_EQ(5U, gen);
	/* Recycling below the generation frees nothing held. */
	EXPECT_EQ(0U, rt2_alloc_recycle(&p, &h->head, 2, 64));
	EXPECT_EQ(2U, p.nheld);
	EXPECT_EQ(1U, rt2_alloc_recycle(&p, &h->head, 3, 64));
	c = 0;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 64, &c, &gen));
	EXPECT_EQ(a, c);
	/* Another size: free blocks go back to the device to make room. */
	ASSERT_EQ(0, rt2_alloc_put(&p, c, 0));
	EXPECT_EQ(3U, rt2_alloc_recycle(&p, &h->head, 5, 96));
	EXPECT_EQ(2UL, p.dev_frees);
	EXPECT_EQ(0U, p.bytes);
	c = 0;
	ASSERT_EQ(0, rt2_alloc_get(&p, &h->head, 96, &c, &gen));
	EXPECT_EQ(128U, p.peak);
	rt2_alloc_fini(&p, &h->head);
	hostdev_close(h);
}

/* ---- the executor: waits, recycling, results -------------------------- */

/* relu(x * w + b) with outputs y and r, and the inputs of run @run. */
static void chain_ref(struct snpu_rt2_exec *e, unsigned int run, float *r)
{
	float *x, *b, y[15];
	static float wv[21];
	unsigned int i;

	snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
	snpu_rt2_exec_input(e, 1, NULL, (void **)&b);
	for (i = 0; i < 35; i++)
		x[i] = (float)((int)((i + run) * 5 % 13) - 6) / 3.0f;
	for (i = 0; i < 15; i++)
		b[i] = (float)((int)((i + 2 * run) % 5) - 2) / 2.0f;
	ref_matmul(y, x, wv, 5, 3, 7);
	for (i = 0; i < 15; i++)
		r[i] = y[i] + b[i] > 0 ? y[i] + b[i] : 0.0f;
}

/*
 * Without a limit the pool never recycles: no run, the first or a later
 * one, waits for a relation launch or synchronises the stream from an
 * allocation (the only sync of a run is its own drain); it keeps the
 * blocks it needed, at most one per value, and results stay exact.
 */
TEST(exec_no_limit_never_recycles)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_model *m = model_chain();
	struct snpu_rt2_pool_stats st;
	unsigned long syncs;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int run;
	float r[15];
	const void *out;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e));
	for (run = 0; run < 30; run++) {
		syncs = h->waits;
		chain_ref(e, run, r);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		EXPECT_EQ(syncs + 1, h->waits);	/* the run's own drain only */
		ASSERT_EQ(0, snpu_rt2_exec_output(e, 0, &out, NULL));
		ASSERT_EQ(0, memcmp(out, r, sizeof(r)));
		ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e, &st));
		ASSERT_EQ(0U, st.recycles);
		ASSERT_EQ(0U, st.waits);
		ASSERT_EQ(0UL, e->sched.waits);
	}
	EXPECT_EQ(0U, st.dev_frees);
	EXPECT_LE(st.dev_allocs, (uint64_t)e->nvals);
	EXPECT_EQ(5U, st.hold_frees);
	EXPECT_EQ(10U, st.relations);
	snpu_rt2_exec_destroy(e);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/*
 * Eight ops over 4 x 4 values, all of one size, so that any block may go
 * to any value: t1 = relu(x), t2 = t1 + b, t3 = relu(t2), t4 = t3 + x,
 * t5 = t4 + t2, t6 = relu(t5), t7 = t6 + t3, t8 = t7 + b; output t8.
 */
static struct snpu_rt2_model *model_same_size(void)
{
	struct snpu_rt2_shape s = shape2(F32, 4, 4);
	struct snpu_rt2_model *m;
	int x, b, t1, t2, t3, t4, t5, t6, t7, t8;

	if (snpu_rt2_model_create(&m))
		return NULL;
	x = snpu_rt2_model_input(m, &s);
	b = snpu_rt2_model_input(m, &s);
	t1 = op2(m, SNPU_RT2_OP_RELU, x, -1);
	t2 = op2(m, SNPU_RT2_OP_ADD, t1, b);
	t3 = op2(m, SNPU_RT2_OP_RELU, t2, -1);
	t4 = op2(m, SNPU_RT2_OP_ADD, t3, x);
	t5 = op2(m, SNPU_RT2_OP_ADD, t4, t2);
	t6 = op2(m, SNPU_RT2_OP_RELU, t5, -1);
	t7 = op2(m, SNPU_RT2_OP_ADD, t6, t3);
	t8 = op2(m, SNPU_RT2_OP_ADD, t7, b);
	if (t8 < 0 || snpu_rt2_model_output(m, t8) < 0) {
		snpu_rt2_model_destroy(m);
		return NULL;
	}
	return m;
}

static void same_size_inputs(struct snpu_rt2_exec *e, unsigned int run)
{
	float *x, *b;
	unsigned int i;

	snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
	snpu_rt2_exec_input(e, 1, NULL, (void **)&b);
	for (i = 0; i < 16; i++) {
		x[i] = (float)((int)((i + run) * 5 % 13) - 6) / 3.0f;
		b[i] = (float)((int)((i + 2 * run) % 7) - 3) / 2.0f;
	}
}

/* FILL launches the host device ran, from its log. */
static unsigned long fills(const struct hostdev *h)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < h->nlog; i++)
		n += h->log[i].op == SNPU_OP_LAUNCH &&
		     h->log[i].kernel == SNPU_KERNEL_FILL;
	return n;
}

/*
 * Reuse checked end to end: with SNPU_RT2_EXEC_POISON every block the
 * pool hands out again is filled with a NaN pattern on the stream first,
 * so a block reused before its last user's launch was submitted (a held
 * block recycled a generation early, say) gives a NaN in the results.
 * Three workers, alone in ID order and with helpers for parallel work,
 * under every limit from one block to none: each run that does not fail
 * with -ENOMEM equals one thread's, bit for bit, and blocks were reused.
 */
TEST(exec_poisoned_reuse_exact_under_limits)
{
	struct snpu_rt2_exec_opts o1 = { 0 };
	struct snpu_rt2_exec_opts o3 = {
		.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_POISON };
	struct snpu_rt2_model *m = model_same_size();
	struct snpu_rt2_exec *e1, *e3;
	const void *out1, *out3;
	unsigned int run, ok = 0, pol;
	unsigned long filled = 0;
	struct hostdev *h;
	uint64_t limit;
	int ret;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o1, &e1));
	for (pol = 0; pol < 2; pol++) {
		for (limit = 64; limit <= 12 * 64; limit += 64) {
			ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o3,
							  &e3));
			e3->hand.policy = pol ? RT2_HAND_EAGER : RT2_HAND_AUTO;
			ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e3,
					limit < 12 * 64 ? limit : 0));
			for (run = 0; run < 24; run++) {
				h->nlog = 0;
				same_size_inputs(e1, run);
				same_size_inputs(e3, run);
				ASSERT_EQ(0, snpu_rt2_exec_run(e1));
				ret = snpu_rt2_exec_run(e3);
				ASSERT_TRUE(ret == 0 || ret == -ENOMEM);
				filled += fills(h);
				if (ret)
					continue;
				ok++;
				snpu_rt2_exec_output(e1, 0, &out1, NULL);
				snpu_rt2_exec_output(e3, 0, &out3, NULL);
				ASSERT_EQ(0, memcmp(out3, out1, 16 * 4)) {
					TH_LOG("policy %u, limit %llu, run %u",
					       pol, (unsigned long long)limit,
					       run);
				}
			}
			snpu_rt2_exec_destroy(e3);
		}
	}
	TH_LOG("%u exact runs, %lu blocks poisoned on reuse", ok, filled);
	EXPECT_GT(ok, 0U);
	EXPECT_GT(filled, 0UL);
	snpu_rt2_exec_destroy(e1);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/*
 * A0 allocates v0, producer P (kernel @pk) writes it, launch L reads it,
 * F frees it: through the passes of three workers into an executor.
 */
static int placed_exec(struct hostdev *h, struct snpu_rt2_model *m,
		       unsigned int pk, struct snpu_rt2_exec **ep)
{
	struct snpu_rt2_exec_opts o = {
		.flags = SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_POISON };
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	int a0, p, l, f, ret;

	a0 = rt2_build_node(&b, RT2_K_ALLOC_OUTPUT, -1, 0);
	p = rt2_build_node(&b, pk, -1, 0);
	l = rt2_build_node(&b, RT2_K_EMPTY_LAUNCH, -1, 0);
	f = rt2_build_node(&b, RT2_K_FREE_MEM, -1, -1);
	if (f < 0)
		return f;
	b.nodes[a0].out[b.nodes[a0].nout++] = 0;
	b.nodes[p].out[b.nodes[p].nout++] = 0;
	b.nodes[l].in[b.nodes[l].nin++] = 0;
	b.nodes[f].in[b.nodes[f].nin++] = 0;
	ret = rt2_build_edge(&b, a0, p);
	ret |= rt2_build_edge(&b, p, l);
	ret |= rt2_build_edge(&b, p, f);
	ret |= rt2_build_edge(&b, l, f);
	if (!ret)
		ret = rt2_run_passes(&b);
	if (!ret)
		ret = rt2_exec_create_graph(m, &h->head, &o, &b, ep);
	rt2_build_fini(&b);
	return ret;
}

/* The dump's type of the free, and whether the launch still leads to it. */
static void placed_free(struct __test_metadata *_metadata,
			struct snpu_rt2_exec *e, char *type, bool *edge)
{
	char buf[1024], *line, *save = NULL, k[64], t;
	unsigned int id, free_id = ~0U;

	*type = '?';
	*edge = false;
	ASSERT_GT(snpu_rt2_exec_dump(e, buf, sizeof(buf)), 0);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %63s %c", &id, k, &t) != 3)
			continue;
		if (!strncmp(k, "FreeMemory", 10)) {
			*type = t;
			free_id = id;
		}
	}
	ASSERT_NE(~0U, free_id);
	ASSERT_GT(snpu_rt2_exec_dump(e, buf, sizeof(buf)), 0);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " -> ");
		unsigned int succ;

		if (sscanf(line, "%u %63s %c", &id, k, &t) != 3 ||
		    strcmp(k, "EmptyLaunch") || !arrow)
			continue;
		for (arrow += 4; sscanf(arrow, "%u", &succ) == 1;
		     arrow = strchr(arrow, ',') + 1) {
			*edge |= succ == free_id;
			if (!strchr(arrow, ','))
				break;
		}
	}
}

/*
 * Through the executor, a producer placed at run time
 * (AccessMemCrossStream) keeps the free a plain one, with its Launch ->
 * Free edge (no relation, no held block); a memory producer of static
 * placement makes it a hold-address free without the edge. Both run
 * (with reused blocks poisoned), twenty times each. (The placeholder
 * kernel of AccessMemCrossStream does nothing: what a wrong eligibility
 * changes is this, the graph the executor runs.)
 */
TEST(exec_runtime_placed_producer_keeps_edge)
{
	struct snpu_rt2_shape sh = shape2(F32, 2, 2);
	struct snpu_rt2_pool_stats st;
	struct snpu_rt2_model *m;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int run, k;
	bool edge;
	char type;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ASSERT_EQ(0, snpu_rt2_model_input(m, &sh));	/* v0 */
	for (k = 0; k < 2; k++) {
		bool placed = k == 0;

		ASSERT_EQ(0, placed_exec(h, m, placed ?
					 RT2_K_ACCESS_MEM_CROSS_STREAM :
					 RT2_K_EMPTY_MEMORY, &e));
		placed_free(_metadata, e, &type, &edge);
		ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e, &st));
		EXPECT_EQ(placed ? 'F' : 'H', type);
		EXPECT_EQ(placed, edge);
		EXPECT_EQ(placed ? 0U : 1U, st.relations);
		EXPECT_EQ(placed ? 0U : 1U, st.hold_frees);
		for (run = 0; run < 20; run++)
			ASSERT_EQ(0, snpu_rt2_exec_run(e));
		snpu_rt2_exec_destroy(e);
	}
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/*
 * A pool limit: three workers recycle (wait, sync, recycle, retry) when
 * they reach it. Every limit gives either the single thread's results
 * exactly or -ENOMEM, never a hang nor a wrong result; a limit at the
 * unlimited peak always runs, and so does the smallest one possible,
 * x + y = 200 B (the matmul's input and output live together), which
 * only runs by waiting for relation launches and recycling: in less
 * device memory than one thread without a limit.
 */
TEST(exec_pool_limit_never_hangs)
{
	struct snpu_rt2_exec_opts o1 = { 0 };
	struct snpu_rt2_exec_opts o3 = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_model *m = model_chain();
	struct snpu_rt2_pool_stats s1, s3, tot, small = { 0 };
	struct snpu_rt2_exec *e1, *e3;
	const void *out1, *out3;
	unsigned int run, ok = 0, oom = 0;
	struct hostdev *h;
	uint64_t limit, peak;
	float r[15];
	int ret;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o1, &e1));
	ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o3, &e3));
	for (run = 0; run < 10; run++) {
		chain_ref(e3, run, r);
		ASSERT_EQ(0, snpu_rt2_exec_run(e3));
	}
	ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e3, &s3));
	peak = s3.peak_bytes;
	snpu_rt2_exec_destroy(e3);
	memset(&tot, 0, sizeof(tot));
	for (limit = 20; limit <= peak + 40; limit += 20) {
		ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o3, &e3));
		ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e3, limit));
		for (run = 0; run < 8; run++) {
			chain_ref(e1, run, r);
			chain_ref(e3, run, r);
			ASSERT_EQ(0, snpu_rt2_exec_run(e1));
			ret = snpu_rt2_exec_run(e3);
			ASSERT_TRUE(ret == 0 || ret == -ENOMEM);
			if (limit >= peak || limit == 200)
				ASSERT_EQ(0, ret);
			if (ret) {
				oom++;
				continue;
			}
			ok++;
			snpu_rt2_exec_output(e1, 0, &out1, NULL);
			snpu_rt2_exec_output(e3, 0, &out3, NULL);
			ASSERT_EQ(0, memcmp(out1, r, sizeof(r)));
			ASSERT_EQ(0, memcmp(out3, out1, sizeof(r)));
		}
		ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e3, &s3));
		ASSERT_LE(s3.peak_bytes, limit);
		if (limit == 200) {
			EXPECT_GT(s3.waits, 0U);
			EXPECT_GT(s3.dev_frees, 0U);
			small = s3;
		}
		tot.recycles += s3.recycles;
		tot.waits += s3.waits;
		snpu_rt2_exec_destroy(e3);
	}
	ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e1, &s1));
	s3 = tot;
	EXPECT_GT(s3.recycles, 0U);
	EXPECT_LT(small.peak_bytes, s1.peak_bytes);
	EXPECT_GT(ok, 0U);
	TH_LOG("peak: one thread %llu B, three workers %llu B; %u runs, %u -ENOMEM, recycles %llu, waits %llu",
	       (unsigned long long)s1.peak_bytes, (unsigned long long)peak,
	       ok, oom, (unsigned long long)s3.recycles,
	       (unsigned long long)s3.waits);
	snpu_rt2_exec_destroy(e1);
	EXPECT_EQ(h->mem_allocs, h->mem_frees);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/*
 * Graph replay needs the addresses of the last run: with the same shapes,
 * every value gets the address it had, run after run, in both modes
 * (three workers recycle for a value's block while it is held rather
 * than take another).
 */
TEST(exec_same_shapes_same_addresses)
{
	static const unsigned int modes[2] = { 0, SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_model *m = model_chain();
	uint64_t first[16];
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	unsigned int run, i, mode, same;
	float r[15];

	ASSERT_EQ(0, hostdev_open(&h));
	for (mode = 0; mode < 2; mode++) {
		struct snpu_rt2_exec_opts o = { .flags = modes[mode] };

		ASSERT_EQ(0, snpu_rt2_exec_create(m, &h->head, &o, &e));
		ASSERT_LE(e->nvals, 16U);
		chain_ref(e, 0, r);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		memcpy(first, e->hint, e->nvals * sizeof(first[0]));
		for (i = 0; i < e->nvals; i++)
			if (m->tensors[i].kind != RT2_T_PARAM)
				ASSERT_NE(0U, first[i]);
		same = 0;
		for (run = 1; run < 50; run++) {
			chain_ref(e, run, r);
			ASSERT_EQ(0, snpu_rt2_exec_run(e));
			same += !memcmp(first, e->hint,
					e->nvals * sizeof(first[0]));
		}
		EXPECT_EQ(49U, same);
		TH_LOG("%s: %u of 49 runs with the first run's addresses",
		       modes[mode] ? "three workers" : "one thread", same);
		snpu_rt2_exec_destroy(e);
	}
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

TEST_HARNESS_MAIN
