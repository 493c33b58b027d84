// SPDX-License-Identifier: GPL-2.0
/*
 * snpu graphs: what a launch computes. Random DAGs (seeded: SNPU_GRAPH_SEED,
 * else the clock; printed) of FILL, ADD_I32, the COPY kernel, D2D copies
 * and memsets over a few KiB of boundary slots, scratch and plain buffers,
 * with an edge for every pair of nodes that conflict (read after write,
 * write after read, write after write on overlapping bytes) and random
 * extra edges, are run
 *   (a) as one graph launch,
 *   (b) as the same tasks on one stream in index order,
 *   (c) by a plain C reference in index order in host memory,
 * through SUBMIT and through the SQ; all three must agree byte for byte.
 * Back-to-back launches of one graph with the same bindings (stitched)
 * must equal the reference run as many times, for graphs whose nodes
 * overlap and graphs whose nodes are disjoint; the device's graph
 * statistics show hazard visits and no invalid one. A launch is one
 * completion and one sequence number; an event recorded after it
 * captures all of its nodes; a failing node fails the launch with its
 * errno, puts the stream in its error state and the nodes after it never
 * run.
 *
 * Runs as root in the test VM, module loaded with test_hooks=1 and its
 * defaults. Raw ioctls only.
 */
#include "kselftest_harness.h"
#include "graph_util.h"

#define WAIT_NS		(60 * NS_PER_SEC)
#define MAX_REGS	8
#define MAX_RNODES	48
#define RANGE_MAX	2048

static uint64_t g_seed;

static void __attribute__((constructor)) seed_init(void)
{
	const char *s = getenv("SNPU_GRAPH_SEED");

	g_seed = s && *s ? strtoull(s, NULL, 0) : snpu_now_ns();
	printf("# seed: %llu (SNPU_GRAPH_SEED to replay)\n",
	       (unsigned long long)g_seed);
}

/* ---- a random DAG and its reference ------------------------------------------ */

enum { R_FILL, R_ADD, R_COPYK, R_COPY, R_MEMSET, R_SPIN, R_KINDS };

struct range {
	int reg;
	uint32_t off, bytes;
};

struct rnode {
	int kind;
	struct range dst, a, b;	/* a: FILL none; COPY src; ADD a, b */
	uint32_t val, blocks;
};

/*
 * The memory a graph works on: regions 0..nslots-1 are the slots,
 * then the scratch (if any), then plain buffers. @bind is where each
 * region is on the device for the launch; @init the bytes every run
 * starts from, @ref the reference's copy.
 */
struct world {
	int fd;
	int nslots, nregs;
	bool scratch;
	uint32_t reg_bytes;
	uint64_t alloc[MAX_REGS], bind[MAX_REGS];
	unsigned char *init[MAX_REGS], *ref[MAX_REGS], *got[MAX_REGS];
	int nnodes;
	struct rnode n[MAX_RNODES];
	bool pred[MAX_RNODES][MAX_RNODES];	/* pred[j][i]: j waits for i */
};

static bool is_scratch(const struct world *w, int reg)
{
	return w->scratch && reg == w->nslots;
}

static struct gref ref_of(const struct world *w, struct range r)
{
	if (r.reg < w->nslots)
		return g_slot(r.reg, r.off);
	if (is_scratch(w, r.reg))
		return g_scratch(r.off);
	return g_addr(w->bind[r.reg] + r.off);
}

static uint64_t addr_of(const struct world *w, struct range r)
{
	return w->bind[r.reg] + r.off;
}

static bool overlap(struct range x, struct range y)
{
	return x.bytes && y.bytes && x.reg == y.reg &&
	       x.off < y.off + y.bytes && y.off < x.off + x.bytes;
}

/* The node's reads, up to 2; Return: how many. */
static int reads_of(const struct rnode *n, struct range *r)
{
	switch (n->kind) {
	case R_ADD:
		r[0] = n->a;
		r[1] = n->b;
		return 2;
	case R_COPYK:
	case R_COPY:
		r[0] = n->a;
		return 1;
	}
	return 0;
}

static bool writes(const struct rnode *n)
{
	return n->kind != R_SPIN;
}

static bool conflict(const struct rnode *x, const struct rnode *y)
{
	struct range rx[2], ry[2];
	int nx = reads_of(x, rx), ny = reads_of(y, ry), i;

	if (writes(x) && writes(y) && overlap(x->dst, y->dst))
		return true;
	for (i = 0; i < ny; i++)
		if (writes(x) && overlap(x->dst, ry[i]))
			return true;
	for (i = 0; i < nx; i++)
		if (writes(y) && overlap(y->dst, rx[i]))
			return true;
	return false;
}

static struct range rand_range(uint64_t *st, const struct world *w, int reg)
{
	uint32_t words = w->reg_bytes / 4, len, max;
	struct range r;

	max = RANGE_MAX / 4 < words ? RANGE_MAX / 4 : words;
	len = 1 + snpu_rand(st) % max;
	r.reg = reg;
	r.bytes = len * 4;
	r.off = 4 * (snpu_rand(st) % (words - len + 1));
	return r;
}

/* A range of @bytes in @reg that does not overlap @x (tries a few). */
static bool range_apart(uint64_t *st, const struct world *w, int reg,
			uint32_t bytes, struct range x, struct range *out)
{
	uint32_t words = w->reg_bytes / 4, i;
	struct range r = { .reg = reg, .bytes = bytes };

	for (i = 0; i < 16; i++) {
		r.off = 4 * (snpu_rand(st) % (words - bytes / 4 + 1));
		if (!overlap(r, x)) {
			*out = r;
			return true;
		}
	}
	return false;
}

/*
 * A random node. Its sources never overlap its destination, except an
 * ADD's first source that may be the destination itself (element-wise,
 * in place): what one block reads another one never writes.
 */
static void rand_node(uint64_t *st, const struct world *w, struct rnode *n)
{
	int k;

	memset(n, 0, sizeof(*n));
	for (;;) {
		k = snpu_rand(st) % R_SPIN;
		n->kind = k;
		n->blocks = 1 + snpu_rand(st) % 4;
		n->val = (uint32_t)snpu_rand(st);
		n->dst = rand_range(st, w, snpu_rand(st) % w->nregs);
		if (k == R_FILL)
			return;
		if (k == R_MEMSET) {
			n->val &= 0xff;
			return;
		}
		if (k == R_ADD && snpu_rand(st) % 3 == 0)
			n->a = n->dst;
		else if (!range_apart(st, w, snpu_rand(st) % w->nregs,
				      n->dst.bytes, n->dst, &n->a))
			continue;
		if (k != R_ADD)
			return;
		if (range_apart(st, w, snpu_rand(st) % w->nregs, n->dst.bytes,
				n->dst, &n->b))
			return;
	}
}

/* Edges: every conflicting pair, plus about @extra_pct % of the others. */
static void rand_edges(uint64_t *st, struct world *w, unsigned int extra_pct)
{
	int i, j;

	memset(w->pred, 0, sizeof(w->pred));
	for (j = 0; j < w->nnodes; j++)
		for (i = 0; i < j; i++)
			w->pred[j][i] = conflict(&w->n[i], &w->n[j]) ||
					snpu_rand(st) % 100 < extra_pct;
}

/* The reference: node @n on the host copy @mem. */
static void ref_node(struct world *w, unsigned char **mem,
		     const struct rnode *n)
{
	unsigned char *d = mem[n->dst.reg] + n->dst.off;
	uint32_t i, x, y;

	switch (n->kind) {
	case R_FILL:
		for (i = 0; i < n->dst.bytes; i += 4)
			memcpy(d + i, &n->val, 4);
		break;
	case R_MEMSET:
		memset(d, n->val, n->dst.bytes);
		break;
	case R_COPYK:
	case R_COPY:
		memmove(d, mem[n->a.reg] + n->a.off, n->dst.bytes);
		break;
	case R_ADD:
		for (i = 0; i < n->dst.bytes; i += 4) {
			memcpy(&x, mem[n->a.reg] + n->a.off + i, 4);
			memcpy(&y, mem[n->b.reg] + n->b.off + i, 4);
			x += y;
			memcpy(d + i, &x, 4);
		}
		break;
	}
}

static void ref_run(struct world *w, int times)
{
	int t, i;

	for (t = 0; t < times; t++)
		for (i = 0; i < w->nnodes; i++)
			ref_node(w, w->ref, &w->n[i]);
}

/* The node as a task on @stream with the world's addresses. */
static struct snpu_task task_of(const struct world *w, const struct rnode *n,
				uint32_t stream)
{
	switch (n->kind) {
	case R_FILL:
		return snpu_t_fill(stream, addr_of(w, n->dst), n->dst.bytes,
				   n->val, n->blocks);
	case R_ADD:
		return snpu_t_binop(stream, SNPU_KERNEL_ADD_I32,
				    addr_of(w, n->dst), addr_of(w, n->a),
				    addr_of(w, n->b), n->dst.bytes, n->blocks);
	case R_COPYK: {
		struct snpu_task t = snpu_t_launch(stream, SNPU_KERNEL_COPY,
						   n->blocks);

		snpu_t_buf(&t, 0, addr_of(w, n->dst), n->dst.bytes);
		snpu_t_buf(&t, 1, addr_of(w, n->a), n->dst.bytes);
		return t;
	}
	case R_COPY:
		return snpu_t_copy(stream, SNPU_COPY_D2D, addr_of(w, n->dst),
				   addr_of(w, n->a), n->dst.bytes);
	case R_MEMSET:
		return snpu_t_memset(stream, addr_of(w, n->dst), n->val,
				     n->dst.bytes);
	}
	return snpu_t_spin(stream, n->val, n->blocks);
}

/* The world's nodes and edges as a definition. */
static int build_graph(const struct world *w, struct gdef *g)
{
	uint64_t sb[SNPU_GRAPH_MAX_SLOTS];
	int i, j, ret = 0;

	for (i = 0; i < w->nslots; i++)
		sb[i] = w->reg_bytes;
	if (g_init(g, w->nslots, sb, w->scratch ? w->reg_bytes : 0))
		return -ENOMEM;
	for (j = 0; j < w->nnodes && ret >= 0; j++) {
		const struct rnode *n = &w->n[j];

		switch (n->kind) {
		case R_FILL:
			ret = g_fill(g, ref_of(w, n->dst), n->dst.bytes,
				     n->val, n->blocks);
			break;
		case R_ADD:
			ret = g_binop(g, SNPU_KERNEL_ADD_I32, ref_of(w, n->dst),
				      ref_of(w, n->a), ref_of(w, n->b),
				      n->dst.bytes, n->blocks);
			break;
		case R_COPYK:
			ret = g_copyk(g, ref_of(w, n->dst), ref_of(w, n->a),
				      n->dst.bytes, n->blocks);
			break;
		case R_COPY:
			ret = g_copy(g, ref_of(w, n->dst), ref_of(w, n->a),
				     n->dst.bytes);
			break;
		case R_MEMSET:
			ret = g_memset(g, ref_of(w, n->dst), n->val,
				       n->dst.bytes);
			break;
		default:
			ret = g_spin(g, n->val, n->blocks);
		}
		for (i = 0; i < j && ret >= 0; i++)
			if (w->pred[j][i])
				ret = g_pred(g, i);
	}
	return ret < 0 ? ret : 0;
}

/* Allocate the world's regions; each slot bound at an offset inside. */
static int world_init(struct world *w, int fd, uint64_t *st, int nslots,
		      bool scratch, int nplain, uint32_t reg_bytes)
{
	int i, ret;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->nslots = nslots;
	w->scratch = scratch;
	w->nregs = nslots + scratch + nplain;
	w->reg_bytes = reg_bytes;
	for (i = 0; i < w->nregs; i++) {
		ret = snpu_alloc(fd, 2 * reg_bytes, 0, &w->alloc[i]);
		if (ret)
			return ret;
		w->bind[i] = w->alloc[i] + 256 * (snpu_rand(st) % 4);
		w->init[i] = malloc(reg_bytes);
		w->ref[i] = malloc(reg_bytes);
		w->got[i] = malloc(reg_bytes);
		if (!w->init[i] || !w->ref[i] || !w->got[i])
			return -ENOMEM;
		snpu_fill_random(w->init[i], reg_bytes, snpu_rand(st));
	}
	return 0;
}

static void world_fini(struct world *w)
{
	int i;

	for (i = 0; i < w->nregs; i++) {
		if (w->alloc[i])
			snpu_free(w->fd, w->alloc[i]);
		free(w->init[i]);
		free(w->ref[i]);
		free(w->got[i]);
	}
	memset(w, 0, sizeof(*w));
}

/* Every region back to its initial bytes, on the device and the host. */
static int world_reset(struct world *w)
{
	int i, ret;

	for (i = 0; i < w->nregs; i++) {
		memcpy(w->ref[i], w->init[i], w->reg_bytes);
		ret = snpu_h2d(w->fd, w->bind[i], w->init[i], w->reg_bytes);
		if (ret)
			return ret;
	}
	return 0;
}

/* Read the device back and compare with the reference. */
static int world_check(struct world *w, const char *what)
{
	uint32_t i;
	int r, ret;

	for (r = 0; r < w->nregs; r++) {
		ret = snpu_d2h(w->fd, w->got[r], w->bind[r], w->reg_bytes);
		if (ret)
			return ret;
		if (!memcmp(w->got[r], w->ref[r], w->reg_bytes))
			continue;
		for (i = 0; w->got[r][i] == w->ref[r][i]; i++)
			;
		printf("# %s: region %d (%s) differs at byte %u: 0x%02x, reference 0x%02x\n",
		       what, r, r < w->nslots ? "slot" :
		       is_scratch(w, r) ? "scratch" : "plain", i,
		       w->got[r][i], w->ref[r][i]);
		return -EIO;
	}
	return 0;
}

static void world_dump(const struct world *w)
{
	static const char *const kn[] = {
		"FILL", "ADD", "COPYK", "COPY", "MEMSET", "SPIN",
	};
	int i, j;

	for (j = 0; j < w->nnodes; j++) {
		const struct rnode *n = &w->n[j];

		printf("# n%d %s dst r%d+%u/%u a r%d+%u b r%d+%u val %#x blocks %u preds",
		       j, kn[n->kind], n->dst.reg, n->dst.off, n->dst.bytes,
		       n->a.reg, n->a.off, n->b.reg, n->b.off, n->val,
		       n->blocks);
		for (i = 0; i < j; i++)
			if (w->pred[j][i])
				printf(" %d", i);
		printf("\n");
	}
}

/* ---- running: SUBMIT or the SQ ---------------------------------------------------- */

FIXTURE(run) {
	int fd;
	uint32_t stream;
	struct gring ring;
	uint64_t st;
	unsigned int nodes, edges;	/* of the DAGs run */
};

FIXTURE_VARIANT(run) {
	bool ring;
};

FIXTURE_VARIANT_ADD(run, submit) {
	.ring = false,
};

FIXTURE_VARIANT_ADD(run, ring) {
	.ring = true,
};

FIXTURE_SETUP(run)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, gr_init(self->fd, 256, &self->ring));
	self->st = g_seed ^ 0x9e3779b97f4a7c15ULL;
	if (!self->st)
		self->st = 1;
}

FIXTURE_TEARDOWN(run)
{
	TH_LOG("%u nodes, %u edges in all", self->nodes, self->edges);
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Run @n tasks in order on the fixture's stream by the variant's
 * transport and wait for them: every completion must be a success.
 * With @cqe (ring) the completions are returned.
 */
static int run_tasks(FIXTURE_DATA(run) *self, bool ring, struct snpu_task *t,
		     unsigned int n, struct snpu_cqe *cqe)
{
	struct snpu_cqe *c = cqe ? cqe : calloc(n, sizeof(*c));
	unsigned int i;
	int32_t err = 0;
	int ret;

	if (!ring) {
		ret = snpu_submit_all(self->fd, t, n);
		if (!ret)
			ret = snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					       &err);
		if (c != cqe)
			free(c);
		return ret ?: err;
	}
	if (!c)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		t[i].user_data = i + 1;
	ret = gr_run(self->fd, &self->ring, t, n, c);
	for (i = 0; !ret && i < n; i++) {
		if (c[i].result)
			ret = c[i].result;
		else if (c[i].user_data != i + 1)
			ret = -EPROTO;	/* one stream: in order */
	}
	if (c != cqe)
		free(c);
	return ret;
}

/* @times launches of @h back to back with the world's bindings. */
static int run_graph(FIXTURE_DATA(run) *self, bool ring,
		     const struct world *w, uint32_t h, unsigned int times,
		     struct snpu_cqe *cqe)
{
	struct snpu_task t[16];
	unsigned int i;

	for (i = 0; i < times && i < 16; i++)
		t[i] = g_launch_task(self->stream, h, w->bind, w->nslots,
				     w->scratch ? w->bind[w->nslots] : 0);
	return run_tasks(self, ring, t, times, cqe);
}

/*
 * One random DAG, checked three ways (@times launches back to back
 * against the reference run as often; the task-by-task run once).
 */
static int one_dag(struct __test_metadata *_metadata,
		   FIXTURE_DATA(run) *self, bool ring, int idx,
		   bool disjoint, unsigned int times)
{
	struct snpu_task t[MAX_RNODES];
	struct world w;
	struct gdef g;
	uint32_t h;
	int i, ret, fail = 0;
	uint64_t st = self->st + idx * 0x100000001ULL;

	ASSERT_EQ(0, world_init(&w, self->fd, &st, 1 + snpu_rand(&st) % 3,
				snpu_rand(&st) % 2, 1 + snpu_rand(&st) % 2,
				disjoint ? 16384 : 2048 + 2048 *
				(snpu_rand(&st) % 3)));
	w.nnodes = 1 + snpu_rand(&st) % (MAX_RNODES - 1);
	for (i = 0; i < w.nnodes; i++) {
		rand_node(&st, &w, &w.n[i]);
		if (disjoint) {
			/* Node i alone in its 1/48th of one region. */
			uint32_t share = w.reg_bytes / MAX_RNODES & ~3U;
			int reg = i % w.nregs;
			struct range *rr[3] = { &w.n[i].dst, &w.n[i].a,
						&w.n[i].b };
			int k;

			for (k = 0; k < 3; k++) {
				rr[k]->reg = reg;
				rr[k]->off = i * share + k * (share / 3 & ~3U);
				rr[k]->bytes = (share / 3 & ~3U);
			}
		}
	}
	rand_edges(&st, &w, disjoint ? 0 : 10);

	ASSERT_EQ(0, build_graph(&w, &g));
	self->nodes += g.nodes_count;
	self->edges += g.edges_count;
	ret = g_create(self->fd, &g, &h);
	g_free(&g);
	if (ret) {
		world_dump(&w);
		ASSERT_EQ(0, ret) TH_LOG("dag %d: create", idx);
	}

	/* (a) the graph, @times back to back */
	ASSERT_EQ(0, world_reset(&w));
	ref_run(&w, times);
	ret = run_graph(self, ring, &w, h, times, NULL);
	EXPECT_EQ(0, ret) TH_LOG("dag %d: launch", idx);
	ret = world_check(&w, "graph");
	EXPECT_EQ(0, ret) TH_LOG("dag %d: graph launch x%u differs from the reference",
				 idx, times);
	fail |= ret;

	/* (b) the same tasks one by one, in index order */
	ASSERT_EQ(0, world_reset(&w));
	ref_run(&w, 1);
	for (i = 0; i < w.nnodes; i++)
		t[i] = task_of(&w, &w.n[i], self->stream);
	EXPECT_EQ(0, run_tasks(self, ring, t, w.nnodes, NULL));
	ret = world_check(&w, "tasks");
	EXPECT_EQ(0, ret) TH_LOG("dag %d: the tasks differ from the reference",
				 idx);
	fail |= ret;
	if (fail)
		world_dump(&w);

	EXPECT_EQ(0, g_destroy(self->fd, h));
	world_fini(&w);
	return fail;
}

#define DAGS	12

TEST_F_TIMEOUT(run, random_dags, 300)
{
	int i;

	for (i = 0; i < DAGS; i++)
		if (one_dag(_metadata, self, variant->ring, i, false, 1))
			break;
}

TEST_F_TIMEOUT(run, stitched_overlapping, 300)
{
	struct gstats s0, s1;
	int i;

	ASSERT_EQ(0, g_stats(&s0));
	for (i = 0; i < DAGS / 2; i++)
		if (one_dag(_metadata, self, variant->ring, 100 + i, false, 4))
			break;
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(0, s1.hazard_invalid);
	EXPECT_GE(s1.launches - s0.launches, (long long)(DAGS / 2) * 4);
}

TEST_F_TIMEOUT(run, stitched_disjoint, 300)
{
	struct gstats s0, s1;
	int i;

	ASSERT_EQ(0, g_stats(&s0));
	for (i = 0; i < DAGS / 2; i++)
		if (one_dag(_metadata, self, variant->ring, 200 + i, true, 4))
			break;
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(0, s1.hazard_invalid);
}

/* ---- an accumulating graph: the result depends on the order -------------------------- */

#define ACC_BYTES	1024
#define ACC_N		8

/*
 * slot0 acc, slot1 inc, scratch tmp, plain out:
 *   n0 SPIN 2 ms          (keeps each launch in flight while the next
 *                          is queued, so that it is stitched)
 *   n1 acc = acc + inc
 *   n2 tmp = acc + acc    pred n1
 *   n3 inc = inc + tmp    pred n2
 *   n4 out <- inc (copy)  pred n3
 * Launch k + 1's n1 conflicts with launch k's n1 (acc), n2 (acc read),
 * n3 (inc): it must wait for them, and gives a different sum otherwise.
 */
static int acc_graph(struct gdef *g, uint64_t out)
{
	static const uint64_t sb[2] = { ACC_BYTES, ACC_BYTES };

	if (g_init(g, 2, sb, ACC_BYTES) ||
	    g_spin(g, 2 * NS_PER_MS, 1) < 0 ||
	    g_binop(g, SNPU_KERNEL_ADD_I32, g_slot(0, 0), g_slot(0, 0),
		    g_slot(1, 0), ACC_BYTES, 2) < 0 ||
	    g_binop(g, SNPU_KERNEL_ADD_I32, g_scratch(0), g_slot(0, 0),
		    g_slot(0, 0), ACC_BYTES, 3) < 0 || g_pred(g, 1) ||
	    g_binop(g, SNPU_KERNEL_ADD_I32, g_slot(1, 0), g_slot(1, 0),
		    g_scratch(0), ACC_BYTES, 2) < 0 || g_pred(g, 2) ||
	    g_copy(g, g_addr(out), g_slot(1, 0), ACC_BYTES) < 0 ||
	    g_pred(g, 3))
		return -ENOMEM;
	return 0;
}

static void acc_ref(uint32_t *acc, uint32_t *inc, unsigned int times)
{
	unsigned int t, i;

	for (t = 0; t < times; t++)
		for (i = 0; i < ACC_BYTES / 4; i++) {
			acc[i] += inc[i];
			inc[i] += acc[i] + acc[i];
		}
}

FIXTURE(acc) {
	int fd;
	uint32_t stream, h;
	struct gring ring;
	uint64_t acc, inc, tmp, out;
	uint32_t a0[ACC_BYTES / 4], i0[ACC_BYTES / 4];
};

FIXTURE_VARIANT(acc) {
	bool ring;
};

FIXTURE_VARIANT_ADD(acc, submit) {
	.ring = false,
};

FIXTURE_VARIANT_ADD(acc, ring) {
	.ring = true,
};

FIXTURE_SETUP(acc)
{
	struct gdef g;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, gr_init(self->fd, 64, &self->ring));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &self->acc));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &self->inc));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &self->tmp));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &self->out));
	snpu_fill_random(self->a0, ACC_BYTES, g_seed + 1);
	snpu_fill_random(self->i0, ACC_BYTES, g_seed + 2);
	ASSERT_EQ(0, snpu_h2d(self->fd, self->acc, self->a0, ACC_BYTES));
	ASSERT_EQ(0, snpu_h2d(self->fd, self->inc, self->i0, ACC_BYTES));
	ASSERT_EQ(0, acc_graph(&g, self->out));
	ASSERT_EQ(0, g_create(self->fd, &g, &self->h));
	g_free(&g);
}

FIXTURE_TEARDOWN(acc)
{
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

static struct snpu_task acc_launch(FIXTURE_DATA(acc) *self, uint64_t ud)
{
	uint64_t slots[2] = { self->acc, self->inc };
	struct snpu_task t = g_launch_task(self->stream, self->h, slots, 2,
					   self->tmp);

	t.user_data = ud;
	return t;
}

/*
 * ACC_N launches in one go: the reference run ACC_N times, one
 * completion and one sequence number each, and the statistics.
 */
TEST_F_TIMEOUT(acc, stitched_in_order, 120)
{
	uint32_t acc[ACC_BYTES / 4], inc[ACC_BYTES / 4], got[ACC_BYTES / 4];
	struct snpu_task t[ACC_N];
	struct snpu_cqe cqe[ACC_N];
	struct snpu_stream_query q0, q1;
	struct gstats s0, s1;
	uint64_t seq = 0;
	unsigned int i;

	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q0));
	ASSERT_EQ(0, g_stats(&s0));
	for (i = 0; i < ACC_N; i++)
		t[i] = acc_launch(self, 0x1000 + i);
	if (variant->ring) {
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, ACC_N, cqe));
		for (i = 0; i < ACC_N; i++) {
			EXPECT_EQ(0x1000ULL + i, cqe[i].user_data);
			EXPECT_EQ(0, cqe[i].result);
			EXPECT_EQ(q0.submitted + 1 + i, cqe[i].seq);
		}
		/* No further completion: one per launch. */
		EXPECT_EQ(0U, gr_reap(&self->ring, cqe, ACC_N));
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, ACC_N, &seq));
		EXPECT_EQ(q0.submitted + ACC_N, seq);
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      NULL));
	}
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q1));
	EXPECT_EQ(q0.submitted + ACC_N, q1.submitted);
	EXPECT_EQ(q0.submitted + ACC_N, q1.completed);
	EXPECT_EQ(0, q1.error);
	ASSERT_EQ(0, g_stats(&s1));

	memcpy(acc, self->a0, ACC_BYTES);
	memcpy(inc, self->i0, ACC_BYTES);
	acc_ref(acc, inc, ACC_N);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES)) TH_LOG("acc");
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->inc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES)) TH_LOG("inc");
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->out, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES)) TH_LOG("out");

	TH_LOG("launches +%lld stitched +%lld nodes +%lld hazard_visits +%lld hazard_invalid %lld",
	       s1.launches - s0.launches, s1.stitched - s0.stitched,
	       s1.nodes - s0.nodes, s1.hazard_visits - s0.hazard_visits,
	       s1.hazard_invalid);
	EXPECT_EQ(ACC_N, s1.launches - s0.launches);
	EXPECT_EQ(ACC_N * 5, s1.nodes - s0.nodes);
	/*
	 * Every launch but the first directly follows one of the same graph
	 * with the same addresses, queued while it ran (its SPIN).
	 */
	EXPECT_EQ(ACC_N - 1, s1.stitched - s0.stitched);
	EXPECT_GT(s1.hazard_visits, s0.hazard_visits);
	EXPECT_EQ(0, s1.hazard_invalid - s0.hazard_invalid);
	EXPECT_EQ(0, s1.hazard_invalid);
}

/*
 * A launch refused at submit (a binding inside no allocation) counts in
 * no statistic: its warm instance still holds the counts of the launch
 * before it, which must not be added a second time.
 */
TEST_F_TIMEOUT(acc, refused_launch_counts_nothing, 120)
{
	uint64_t slots[2] = { 0x10, self->inc };
	struct snpu_task t[2];
	struct gstats s0, s1;

	t[0] = acc_launch(self, 1);
	t[1] = g_launch_task(self->stream, self->h, slots, 2, self->tmp);
	t[1].user_data = 2;
	if (variant->ring) {
		struct snpu_cqe cqe;

		ASSERT_EQ(0, gr_run(self->fd, &self->ring, &t[0], 1, &cqe));
		EXPECT_EQ(0, cqe.result);
		ASSERT_EQ(0, g_stats(&s0));
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, &t[1], 1, &cqe));
		EXPECT_EQ(-EFAULT, cqe.result);
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, &t[0], 1, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      NULL));
		ASSERT_EQ(0, g_stats(&s0));
		EXPECT_EQ(-EFAULT, snpu_submit(self->fd, &t[1], 1, NULL));
	}
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(s0.launches, s1.launches);
	EXPECT_EQ(s0.nodes, s1.nodes);
	EXPECT_EQ(s0.hazard_visits, s1.hazard_visits);
}

/*
 * Other bindings break the stitch: a launch with another acc is not
 * stitched to the one before, and both results are right.
 */
TEST_F_TIMEOUT(acc, other_bindings_not_stitched, 120)
{
	uint32_t acc[ACC_BYTES / 4], inc[ACC_BYTES / 4], got[ACC_BYTES / 4];
	uint64_t acc2, slots[2];
	struct snpu_task t[2];
	struct gstats s0, s1;

	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &acc2));
	ASSERT_EQ(0, snpu_h2d(self->fd, acc2, self->a0, ACC_BYTES));
	t[0] = acc_launch(self, 1);
	slots[0] = acc2;
	slots[1] = self->inc;
	t[1] = g_launch_task(self->stream, self->h, slots, 2, self->tmp);
	t[1].user_data = 2;
	ASSERT_EQ(0, g_stats(&s0));
	if (variant->ring) {
		struct snpu_cqe cqe[2];

		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 2, cqe));
		EXPECT_EQ(0, cqe[0].result);
		EXPECT_EQ(0, cqe[1].result);
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      NULL));
	}
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(0, s1.stitched - s0.stitched);
	EXPECT_EQ(0, s1.hazard_invalid);

	/* First launch on (acc, inc); the second on (acc2, inc'). */
	memcpy(acc, self->a0, ACC_BYTES);
	memcpy(inc, self->i0, ACC_BYTES);
	acc_ref(acc, inc, 1);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES));
	memcpy(acc, self->a0, ACC_BYTES);
	acc_ref(acc, inc, 1);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, acc2, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES));
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->inc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES));
}

/*
 * A task between two launches of the graph: the second is not stitched
 * (it does not directly follow the first), and the task runs between
 * them: launch, inc <- FILL 3, launch.
 */
TEST_F_TIMEOUT(acc, task_between_not_stitched, 120)
{
	uint32_t acc[ACC_BYTES / 4], inc[ACC_BYTES / 4], got[ACC_BYTES / 4];
	struct snpu_task t[3];
	struct gstats s0, s1;
	unsigned int i;

	t[0] = acc_launch(self, 1);
	t[1] = snpu_t_fill(self->stream, self->inc, ACC_BYTES, 3, 2);
	t[1].user_data = 2;
	t[2] = acc_launch(self, 3);
	ASSERT_EQ(0, g_stats(&s0));
	if (variant->ring) {
		struct snpu_cqe cqe[3];

		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 3, cqe));
		for (i = 0; i < 3; i++) {
			EXPECT_EQ(i + 1ULL, cqe[i].user_data);
			EXPECT_EQ(0, cqe[i].result);
		}
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      NULL));
	}
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(2, s1.launches - s0.launches);
	EXPECT_EQ(0, s1.stitched - s0.stitched);

	memcpy(acc, self->a0, ACC_BYTES);
	memcpy(inc, self->i0, ACC_BYTES);
	acc_ref(acc, inc, 1);
	for (i = 0; i < ACC_BYTES / 4; i++)
		inc[i] = 3;
	acc_ref(acc, inc, 1);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES));
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->inc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES));
}

/*
 * The same graph on two streams at once, each with its own bindings
 * (and scratch): launches in flight together never share state.
 */
TEST_F_TIMEOUT(acc, two_streams_own_bindings, 120)
{
	uint32_t acc[ACC_BYTES / 4], inc[ACC_BYTES / 4], got[ACC_BYTES / 4];
	uint64_t b[4], slots[2];
	struct snpu_task t[2 * ACC_N];
	uint32_t s2;
	unsigned int i;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &b[i]));
	}
	ASSERT_EQ(0, snpu_h2d(self->fd, b[0], self->i0, ACC_BYTES));
	ASSERT_EQ(0, snpu_h2d(self->fd, b[1], self->a0, ACC_BYTES));
	/* Stream 2 starts from (acc, inc) swapped. */
	slots[0] = b[0];
	slots[1] = b[1];
	for (i = 0; i < ACC_N; i++) {
		t[2 * i] = acc_launch(self, 0);
		t[2 * i + 1] = g_launch_task(s2, self->h, slots, 2, b[2]);
	}
	/* Interleaved in one batch: both streams run side by side. */
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2 * ACC_N, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s2, WAIT_NS, &err));
	EXPECT_EQ(0, err);

	memcpy(acc, self->a0, ACC_BYTES);
	memcpy(inc, self->i0, ACC_BYTES);
	acc_ref(acc, inc, ACC_N);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES)) TH_LOG("stream 1 acc");
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->inc, ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES)) TH_LOG("stream 1 inc");
	memcpy(acc, self->i0, ACC_BYTES);
	memcpy(inc, self->a0, ACC_BYTES);
	acc_ref(acc, inc, ACC_N);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, b[0], ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, acc, ACC_BYTES)) TH_LOG("stream 2 acc");
	ASSERT_EQ(0, snpu_d2h(self->fd, got, b[1], ACC_BYTES));
	EXPECT_EQ(0, memcmp(got, inc, ACC_BYTES)) TH_LOG("stream 2 inc");
}

/*
 * Bindings that alias: the create-time hazard lists cannot see that two
 * slots (or a slot and a plain buffer of the graph) are the same bytes,
 * so such launches must not be stitched. The graph reads X early and
 * writes it late:
 *   n0 out <- slot0 (copy)        reads X
 *   n1 SPIN 20 ms                 pred n0
 *   n2 dst = dst + inc            pred n1, dst: slot1 or the plain P
 * with slot0 bound to the same bytes as dst. In stream order launch k+1
 * reads what launch k wrote: after N launches X = X0 + N inc and
 * out = X0 + (N - 1) inc. Launch k+1's n0 has no hazard with launch k's
 * n2 in the lists (other slot), so a stitch would read X too early.
 */
enum { AL_SLOT, AL_PLAIN, AL_SCRATCH };

static struct gref alias_dst(int mode, uint64_t x)
{
	return mode == AL_PLAIN ? g_addr(x) :
		mode == AL_SCRATCH ? g_scratch(0) : g_slot(1, 0);
}

static void alias_case(struct __test_metadata *_metadata,
		       FIXTURE_DATA(acc) *self, bool ring, int mode)
{
	uint32_t want[ACC_BYTES / 4], got[ACC_BYTES / 4];
	uint64_t x, inc, out, spare, slots[4];
	struct snpu_task t[ACC_N];
	struct snpu_cqe cqe[ACC_N];
	struct gstats s0, s1;
	struct gdef g;
	unsigned int i, k;
	uint32_t h;

	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &x));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &inc));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &out));
	ASSERT_EQ(0, snpu_alloc(self->fd, ACC_BYTES, 0, &spare));
	ASSERT_EQ(0, snpu_h2d(self->fd, x, self->a0, ACC_BYTES));
	ASSERT_EQ(0, snpu_h2d(self->fd, inc, self->i0, ACC_BYTES));
	ASSERT_EQ(0, g_init(&g, 4, (uint64_t[]){ ACC_BYTES, ACC_BYTES,
			    ACC_BYTES, ACC_BYTES },
			    mode == AL_SCRATCH ? ACC_BYTES : 0));
	ASSERT_LE(0, g_copy(&g, g_slot(3, 0), g_slot(0, 0), ACC_BYTES));
	ASSERT_LE(0, g_spin(&g, 20 * NS_PER_MS, 1));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_LE(0, g_binop(&g, SNPU_KERNEL_ADD_I32, alias_dst(mode, x),
			     alias_dst(mode, x), g_slot(2, 0), ACC_BYTES, 2));
	ASSERT_EQ(0, g_pred(&g, 1));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);

	/*
	 * Only the aliasing the case is named for: slot 1, unused unless
	 * the destination is a slot, gets bytes of its own, so that no
	 * other pair of bindings overlaps and hides the check under test.
	 */
	slots[0] = x;
	slots[1] = mode == AL_SLOT ? x : spare;
	slots[2] = inc;
	slots[3] = out;
	for (i = 0; i < ACC_N; i++) {
		t[i] = g_launch_task(self->stream, h, slots, 4,
				     mode == AL_SCRATCH ? x : 0);
		t[i].user_data = i + 1;
	}
	ASSERT_EQ(0, g_stats(&s0));
	if (ring) {
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, ACC_N, cqe));
		for (i = 0; i < ACC_N; i++) {
			EXPECT_EQ(0, cqe[i].result);
		}
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, ACC_N, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      NULL));
	}
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(0, s1.stitched - s0.stitched);

	for (k = 0; k < 2; k++) {
		for (i = 0; i < ACC_BYTES / 4; i++)
			want[i] = self->a0[i] + (ACC_N - 1 + k) * self->i0[i];
		ASSERT_EQ(0, snpu_d2h(self->fd, got, k ? x : out, ACC_BYTES));
		EXPECT_EQ(0, memcmp(got, want, ACC_BYTES))
			TH_LOG("%s: %s", k ? "X" : "out",
			       "a launch ran before the one it follows");
	}
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

TEST_F_TIMEOUT(acc, aliased_slots_not_stitched, 120)
{
	alias_case(_metadata, self, variant->ring, AL_SLOT);
}

TEST_F_TIMEOUT(acc, slot_aliasing_plain_not_stitched, 120)
{
	alias_case(_metadata, self, variant->ring, AL_PLAIN);
}

TEST_F_TIMEOUT(acc, scratch_aliasing_slot_not_stitched, 120)
{
	alias_case(_metadata, self, variant->ring, AL_SCRATCH);
}

/*
 * A failure in a stitched chain: every launch's n1 fails 20 ms in, its
 * n2 (acc = acc + inc, no predecessor) may already have run. The first
 * launch fails with the node's errno, the stream is in its error state,
 * and the ones behind it complete in stream order with an error: ECANCELED
 * when the failure cancelled them, or their own EDOM when their FAIL node
 * had started first (stitched, their SPIN ran alongside the first one's:
 * which ends first is timing, so both are accepted and counted in the
 * log). How many launches' n2 ran is only logged too; each element of
 * acc must hold a whole number of additions.
 *   n0 SPIN 20 ms;  n1 FAIL(EDOM) pred n0;  n2 acc = acc + inc
 */
TEST_F_TIMEOUT(acc, failure_in_stitched_chain, 120)
{
	uint32_t got[ACC_BYTES / 4], h;
	uint64_t slots[2] = { self->acc, self->inc };
	struct snpu_task t[4];
	struct snpu_cqe cqe[4];
	struct snpu_stream_query q;
	struct gstats s0, s1;
	struct gdef g;
	unsigned int i, k, ran[6], own = 0;
	int32_t err = 0;

	ASSERT_EQ(0, g_init(&g, 2, (uint64_t[]){ ACC_BYTES, ACC_BYTES }, 0));
	ASSERT_LE(0, g_spin(&g, 20 * NS_PER_MS, 1));
	ASSERT_LE(0, g_failnode(&g, EDOM));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_LE(0, g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(0, 0),
			     g_slot(0, 0), g_slot(1, 0), ACC_BYTES, 2));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);
	for (i = 0; i < 4; i++) {
		t[i] = g_launch_task(self->stream, h, slots, 2, 0);
		t[i].user_data = i + 1;
	}
	ASSERT_EQ(0, g_stats(&s0));
	if (variant->ring) {
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 4, cqe));
		for (i = 0; i < 4; i++) {
			EXPECT_EQ(i + 1ULL, cqe[i].user_data);
		}
		EXPECT_EQ(-EDOM, cqe[0].result);
		for (i = 1; i < 4; i++) {
			EXPECT_TRUE(cqe[i].result == -ECANCELED ||
				    cqe[i].result == -EDOM)
				TH_LOG("launch %u: %d", i + 1, cqe[i].result);
			own += cqe[i].result == -EDOM;
		}
		TH_LOG("launches behind the failed one with their own EDOM: %u of 3",
		       own);
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, 4, NULL));
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(-EDOM, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q));
	EXPECT_EQ(q.submitted, q.completed);
	EXPECT_EQ(-EDOM, q.error);
	ASSERT_EQ(0, g_stats(&s1));
	EXPECT_EQ(0, s1.hazard_invalid);
	/*
	 * How many launches' n2 ran, element by element: 0 to 4 whole
	 * additions each. A launch's n2 running when the stream failed
	 * stops at its next chunk, so the two blocks may differ.
	 */
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, ACC_BYTES));
	memset(ran, 0, sizeof(ran));
	for (i = 0; i < ACC_BYTES / 4; i++) {
		for (k = 0; k <= 4; k++)
			if (got[i] == self->a0[i] + k * self->i0[i])
				break;
		ran[k]++;
	}
	EXPECT_EQ(0U, ran[5]) TH_LOG("%u elements are no sum of whole additions",
				    ran[5]);
	TH_LOG("stitched +%lld; elements with n2 of 0..4 launches: %u %u %u %u %u",
	       s1.stitched - s0.stitched, ran[0], ran[1], ran[2], ran[3],
	       ran[4]);
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->stream)));
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/* ---- events and failures ------------------------------------------------------------------ */

#define EV_BYTES	4096

FIXTURE(ev) {
	int fd;
	uint32_t stream, event;
	struct gring ring;
	uint64_t a, b, c;
};

FIXTURE_VARIANT(ev) {
	bool ring;
};

FIXTURE_VARIANT_ADD(ev, submit) {
	.ring = false,
};

FIXTURE_VARIANT_ADD(ev, ring) {
	.ring = true,
};

FIXTURE_SETUP(ev)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->event));
	ASSERT_EQ(0, gr_init(self->fd, 16, &self->ring));
	ASSERT_EQ(0, snpu_alloc(self->fd, EV_BYTES, 0, &self->a));
	ASSERT_EQ(0, snpu_alloc(self->fd, EV_BYTES, 0, &self->b));
	ASSERT_EQ(0, snpu_alloc(self->fd, EV_BYTES, 0, &self->c));
}

FIXTURE_TEARDOWN(ev)
{
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

static bool all_u32(const uint32_t *p, size_t bytes, uint32_t v)
{
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Submit @t[0..n) by the variant's transport (no wait). */
static int ev_submit(FIXTURE_DATA(ev) *self, bool ring, struct snpu_task *t,
		     unsigned int n)
{
	unsigned int i;
	uint32_t sub;
	int ret;

	if (!ring)
		return snpu_submit(self->fd, t, n, NULL);
	for (i = 0; i < n; i++) {
		t[i].user_data = i + 1;
		ret = gr_push(&self->ring, &t[i]);
		if (ret)
			return ret;
	}
	ret = gr_enter(self->fd, n, 0, &sub);
	return ret ?: (sub == n ? 0 : -EIO);
}

/*
 * An event recorded after a launch whose last nodes come 50 ms of SPIN
 * after its first: once the event completes, every node has run. A host
 * callback in front holds everything until the event was seen pending.
 */
TEST_F_TIMEOUT(ev, record_captures_whole_launch, 60)
{
	struct snpu_event_query q;
	struct snpu_task t[3];
	uint32_t buf[EV_BYTES / 4], h;
	struct gdef g;
	int32_t err = 1;

	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_fill(&g, g_addr(self->a), EV_BYTES, 0x0a0a0a0a, 2));
	ASSERT_LE(0, g_spin(&g, 50 * NS_PER_MS, 1));
	ASSERT_LE(0, g_fill(&g, g_addr(self->b), EV_BYTES, 0x0b0b0b0b, 2));
	ASSERT_EQ(0, g_pred(&g, 1));
	ASSERT_LE(0, g_memset(&g, g_addr(self->c), 0xcc, EV_BYTES));
	ASSERT_EQ(0, g_pred(&g, 2));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);

	t[0] = snpu_t_host_func(self->stream, 9);
	t[1] = g_launch_task(self->stream, h, NULL, 0, 0);
	t[2] = snpu_t_record(self->stream, self->event);
	ASSERT_EQ(0, ev_submit(self, variant->ring, t, 3));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->event, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_PENDING, q.state);
	EXPECT_EQ(3ULL, q.seq) TH_LOG("callback 1, launch 2, record 3");
	ASSERT_EQ(0, snpu_callback_answer(self->fd, WAIT_NS, 0, NULL));
	ASSERT_EQ(0, snpu_event_sync(self->fd, self->event, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	/* Not the stream: only the event was waited for. */
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0x0a0a0a0a));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0x0b0b0b0b));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->c, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0xcccccccc));
	ASSERT_EQ(0, snpu_event_query(self->fd, self->event, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(self->stream, q.stream);
	EXPECT_EQ(0, q.error);
	/* One sequence number for the whole launch. */
	EXPECT_EQ(3ULL, q.seq);
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/*
 * Another stream waits for an event recorded after a launch, then reads
 * what the launch's last node wrote: a callback holds the launch until
 * everything is queued.
 */
TEST_F_TIMEOUT(ev, stream_wait_on_launch, 60)
{
	uint32_t buf[EV_BYTES / 4], h, s2;
	struct snpu_task t[3], w[2];
	struct gdef g;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s2));
	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_spin(&g, 20 * NS_PER_MS, 1));
	ASSERT_LE(0, g_fill(&g, g_addr(self->a), EV_BYTES, 0x0f0f0f0f, 2));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);

	t[0] = snpu_t_host_func(self->stream, 5);
	t[1] = g_launch_task(self->stream, h, NULL, 0, 0);
	t[2] = snpu_t_record(self->stream, self->event);
	ASSERT_EQ(0, ev_submit(self, variant->ring, t, 3));
	w[0] = snpu_t_wait(s2, self->event);
	w[1] = snpu_t_copy(s2, SNPU_COPY_D2D, self->b, self->a, EV_BYTES);
	ASSERT_EQ(0, snpu_submit(self->fd, w, 2, NULL));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, WAIT_NS, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s2, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0x0f0f0f0f));
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/*
 * a <- FILL; FAIL(EDOM) after it; b <- FILL after the FAIL; c <- MEMSET
 * after b: the launch fails with -EDOM, a is written, b and c are not,
 * the stream is in its error state (EIO for the next SUBMIT) until reset.
 */
TEST_F_TIMEOUT(ev, failing_node, 60)
{
	uint32_t buf[EV_BYTES / 4], h;
	struct snpu_stream_query q;
	struct snpu_task t;
	struct gdef g;
	int32_t err = 0;

	ASSERT_EQ(0, g_init(&g, 1, (uint64_t[]){ EV_BYTES }, 0));
	ASSERT_LE(0, g_fill(&g, g_slot(0, 0), EV_BYTES, 0x5a5a5a5a, 2));
	ASSERT_LE(0, g_failnode(&g, EDOM));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_LE(0, g_fill(&g, g_addr(self->b), EV_BYTES, 0x77777777, 2));
	ASSERT_EQ(0, g_pred(&g, 1));
	ASSERT_LE(0, g_memset(&g, g_addr(self->c), 0x99, EV_BYTES));
	ASSERT_EQ(0, g_pred(&g, 2));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);

	t = g_launch_task(self->stream, h, &self->a, 1, 0);
	if (variant->ring) {
		struct snpu_cqe cqe;

		t.user_data = 77;
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, &t, 1, &cqe));
		EXPECT_EQ(77ULL, cqe.user_data);
		EXPECT_EQ(-EDOM, cqe.result);
		EXPECT_NE(0ULL, cqe.seq);
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, &t, 1, NULL));
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(-EDOM, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q));
	EXPECT_EQ(-EDOM, q.error);

	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0x5a5a5a5a)) TH_LOG("node 0 ran");
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0)) TH_LOG("node 2 must not run");
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->c, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0)) TH_LOG("node 3 must not run");

	/* The stream refuses work until reset, graph launches included. */
	t = g_launch_task(self->stream, h, &self->a, 1, 0);
	EXPECT_EQ(-EIO, snpu_submit(self->fd, &t, 1, NULL));
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->stream)));
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->stream));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(self->stream, self->c,
							EV_BYTES, 3, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/* A launch behind a failing one on its stream is cancelled. */
TEST_F_TIMEOUT(ev, launch_after_failure_cancelled, 60)
{
	uint32_t buf[EV_BYTES / 4], h;
	struct snpu_task t[2];
	struct gdef g;
	int32_t err = 0;

	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_fill(&g, g_addr(self->b), EV_BYTES, 0x12345678, 1));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);
	t[0] = snpu_t_fail(self->stream, EXDEV);
	t[1] = g_launch_task(self->stream, h, NULL, 0, 0);
	if (variant->ring) {
		struct snpu_cqe cqe[2];

		t[0].user_data = 1;
		t[1].user_data = 2;
		ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 2, cqe));
		EXPECT_EQ(-EXDEV, cqe[0].result);
		EXPECT_EQ(-ECANCELED, cqe[1].result);
	} else {
		ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(-EXDEV, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, EV_BYTES));
	EXPECT_TRUE(all_u32(buf, EV_BYTES, 0));
}

/* ---- last: a crash here stops the program ------------------------------ */

/*
 * Launches of one small graph, each committed while the one before may
 * be completing on a core: the stitch check at commit looks at the
 * stream's last launch while its completion releases it. Many rounds,
 * one SUBMIT (or one SQE: consumed by ENTER, or by the kernel poller)
 * each, then the sum must be whole: acc = acc0 + RACE_N inc. Last in
 * the program: a kernel crash here leaves the others' results.
 */
#define RACE_N		20000

enum { T_SUBMIT, T_RING, T_SQPOLL };

FIXTURE(race) {
	int fd;
	uint32_t stream, h;
	struct gring ring;
	uint64_t acc, inc;
	uint32_t a0[16], i0[16];
};

FIXTURE_VARIANT(race) {
	int transport;
};

FIXTURE_VARIANT_ADD(race, submit) {
	.transport = T_SUBMIT,
};

FIXTURE_VARIANT_ADD(race, ring) {
	.transport = T_RING,
};

FIXTURE_VARIANT_ADD(race, sqpoll) {
	.transport = T_SQPOLL,
};

FIXTURE_SETUP(race)
{
	struct gdef g;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, gr_init_flags(self->fd, 64, variant->transport ==
				   T_SQPOLL ? SNPU_RING_SQPOLL : 0,
				   &self->ring));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &self->acc));
	ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &self->inc));
	snpu_fill_random(self->a0, 64, g_seed + 3);
	snpu_fill_random(self->i0, 64, g_seed + 4);
	ASSERT_EQ(0, snpu_h2d(self->fd, self->acc, self->a0, 64));
	ASSERT_EQ(0, snpu_h2d(self->fd, self->inc, self->i0, 64));
	ASSERT_EQ(0, g_init(&g, 2, (uint64_t[]){ 64, 64 }, 0));
	ASSERT_LE(0, g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(0, 0),
			     g_slot(0, 0), g_slot(1, 0), 64, 1));
	ASSERT_EQ(0, g_create(self->fd, &g, &self->h));
	g_free(&g);
}

FIXTURE_TEARDOWN(race)
{
	gr_fini(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F_TIMEOUT(race, commit_races_completion, 600)
{
	uint64_t slots[2] = { self->acc, self->inc };
	uint32_t want[16], got[16], sub;
	unsigned int i, reaped = 0;
	struct snpu_cqe cqe[64];
	struct snpu_task t;
	bool sqpoll = variant->transport == T_SQPOLL;
	int32_t err = 1;

	t = g_launch_task(self->stream, self->h, slots, 2, 0);
	for (i = 0; i < RACE_N; i++) {
		if (variant->transport == T_SUBMIT) {
			int ret = snpu_submit(self->fd, &t, 1, NULL);

			/*
			 * The task quota (4096 in flight) is reached when the
			 * cores fall behind, as on a loaded machine: drain,
			 * then go on racing.
			 */
			if (ret == -ENOSPC) {
				ASSERT_EQ(0, snpu_stream_sync(self->fd,
							      self->stream,
							      WAIT_NS, NULL));
				ret = snpu_submit(self->fd, &t, 1, NULL);
			}
			ASSERT_EQ(0, ret) TH_LOG("launch %u", i);
			continue;
		}
		ASSERT_EQ(0, gr_push(&self->ring, &t));
		if (sqpoll) {
			ASSERT_EQ(0, gr_enter_flags(self->fd, 0, 0,
						    SNPU_ENTER_SQ_WAKEUP,
						    NULL));
		} else {
			ASSERT_EQ(0, gr_enter(self->fd, 1, 0, &sub));
			ASSERT_EQ(1U, sub);
		}
		reaped += gr_reap(&self->ring, cqe, 64);
		/* Keep the CQ from filling: wait when many are out. */
		while (i + 1 - reaped >= 32) {
			ASSERT_EQ(0, gr_enter_flags(self->fd, 0, 1,
						    sqpoll ?
						    SNPU_ENTER_SQ_WAKEUP : 0,
						    NULL));
			reaped += gr_reap(&self->ring, cqe, 64);
		}
	}
	while (variant->transport != T_SUBMIT && reaped < RACE_N) {
		ASSERT_EQ(0, gr_enter_flags(self->fd, 0, 1, sqpoll ?
					    SNPU_ENTER_SQ_WAKEUP : 0, NULL));
		reaped += gr_reap(&self->ring, cqe, 64);
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	for (i = 0; i < 16; i++)
		want[i] = self->a0[i] + RACE_N * self->i0[i];
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, 64));
	EXPECT_EQ(0, memcmp(got, want, 64));
	EXPECT_EQ(0, g_destroy(self->fd, self->h));
}

TEST_HARNESS_MAIN
