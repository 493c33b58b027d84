// SPDX-License-Identifier: GPL-2.0
/*
 * Liveness of rt2's relation waits (lib/rt2/relation.c, sched.c,
 * alloc.c), with one memory worker:
 *
 * - the rule book's open scenario: the memory worker blocks in an
 *   allocation on a relation whose launch waits for a memory-worker node
 *   queued behind that allocation. Without the liveness edges the
 *   checker below finds the deadlock; with them the checker finds none
 *   and the executor runs the graph to its end;
 * - an exhaustive schedule checker: for every model of up to MC_OPS (3)
 *   ADD and RELU ops over two fed inputs, and of up to 2 ADD, RELU and
 *   MATMUL ops over two fed inputs and a parameter (every way of choosing
 *   the operands: 1238 models), and every pool limit from one block to
 *   none, every
 *   interleaving of the three workers' steps, explored depth first over
 *   the distinct states, ends with every node run or with -ENOMEM; none
 *   ends with a worker asleep that nothing will wake (a deadlock), nor
 *   with the memory worker asleep while its generation was reached (a
 *   lost wake-up).
 *
 * The checker drives the real code: the execution graph of the real
 * passes, its ExecutionData, the schedule state's rt2_sched_*() (whose
 * return value is the only thing that wakes the waiting memory worker,
 * as the executor's condition signal is) and the allocator's
 * rt2_alloc_*() on a fake device, for a first run from an empty pool and
 * a second run from the pool and addresses the first left (so that
 * allocations also wait for their value's held block of the last run).
 * A step is one node run by one worker:
 * the launch worker's next launch in launch order, the memory worker's
 * next node in ID order (or its blocked allocation, once signalled), or
 * any ready node of the normal worker (a superset of its FIFO order).
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

#define MC_NODES	64U	/* nodes of a checked graph, at most */
#define MC_VALS		8U
#define MC_RANKS	12U
#define MC_OPS		3	/* the bound: models of up to 3 ops */

/* One state of the three workers, the schedule state and the pool. */
struct mc_state {
	uint64_t done;
	uint16_t launch_next, mem_next;
	uint8_t blocked;	/* memory worker asleep in an allocation */
	uint8_t signalled;	/* ... and woken */
	uint16_t pad;
	uint32_t gen;		/* the generation it waits for */
	uint32_t submitted, freed, required, unmet, wait_gen;
	uint32_t act[MC_RANKS];
	uint32_t nblk, nheld, dev_allocs, pad2;
	uint64_t bytes;
	struct rt2_block blk[MC_VALS];
	uint64_t addr[MC_VALS];	/* per value */
};

struct mc {
	const struct rt2_graph *g;
	const struct rt2_xdata *x;
	const uint64_t *vbytes;	/* per value */
	uint64_t hint[MC_VALS];	/* per value: its address in the last run */
	uint32_t *mem_order;
	unsigned int nmem;
	uint64_t limit;
	struct snpu_rt2_dev dev;
	const struct rt2_pool *pool;	/* of the step running */
	/* the depth-first stack, and the visited states */
	struct mc_state *stack;
	unsigned long stack_cap;
	struct mc_state *seen;
	uint32_t *table, *stamp, cur;
	unsigned long nseen, cap, tsize;
	unsigned long states, ends, oom, deadlocks, lost;
};

static struct mc *mc_of(struct snpu_rt2_dev *d)
{
	return (struct mc *)((char *)d - offsetof(struct mc, dev));
}

static int fake_alloc(struct snpu_rt2_dev *d, uint64_t bytes, uint64_t *addr)
{
	struct mc *c = mc_of(d);

	/* The n-th device block of a path: a state's addresses are its own. */
	*addr = 0x1000 * (c->pool->dev_allocs + 1);
	return 0;
}

static int fake_free(struct snpu_rt2_dev *d, uint64_t addr)
{
	return 0;
}

static const struct rt2_dev_ops fake_ops = {
	.mem_alloc = fake_alloc,
	.mem_free = fake_free,
};

static uint64_t mc_hash(const struct mc_state *s)
{
	const unsigned char *p = (const void *)s;
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < sizeof(*s); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* Returns true when @s is new (and records it). */
static bool mc_visit(struct mc *c, const struct mc_state *s)
{
	uint64_t h = mc_hash(s);
	unsigned long i = h & (c->tsize - 1);

	while (c->stamp[i] == c->cur) {
		if (!memcmp(&c->seen[c->table[i] - 1], s, sizeof(*s)))
			return false;
		i = (i + 1) & (c->tsize - 1);
	}
	if (c->nseen == c->cap)
		return false;	/* out of room: counted by the caller */
	c->seen[c->nseen++] = *s;
	c->table[i] = (uint32_t)c->nseen;
	c->stamp[i] = c->cur;
	return true;
}

/* Load the real structures from @s, run, store back. */
static void mc_load(struct mc *c, struct mc_state *s, struct rt2_sched *sc,
		    struct rt2_pool *p, struct rt2_xdata *x)
{
	memset(sc, 0, sizeof(*sc));
	sc->epoch = 1;
	sc->submitted = s->submitted;
	sc->freed = s->freed;
	sc->required = s->required;
	sc->unmet = s->unmet;
	sc->wait_gen = s->wait_gen;
	memset(p, 0, sizeof(*p));
	p->blk = s->blk;
	p->nblk = s->nblk;
	p->cap = MC_VALS;
	p->nheld = s->nheld;
	p->limit = c->limit;
	p->bytes = s->bytes;
	p->dev_allocs = s->dev_allocs;
	p->submitted = &sc->submitted;
	c->pool = p;
	*x = *c->x;
	x->act = s->act;
}

static void mc_store(struct mc_state *s, const struct rt2_sched *sc,
		     const struct rt2_pool *p)
{
	s->submitted = sc->submitted;
	s->freed = sc->freed;
	s->required = sc->required;
	s->unmet = sc->unmet;
	s->wait_gen = sc->wait_gen;
	s->nblk = p->nblk;
	s->nheld = p->nheld;
	s->bytes = p->bytes;
	s->dev_allocs = (uint32_t)p->dev_allocs;
	memset(&s->blk[p->nblk], 0, (MC_VALS - p->nblk) * sizeof(s->blk[0]));
}

static bool mc_ready(const struct mc *c, const struct mc_state *s, uint32_t id)
{
	const struct rt2_node *n = &c->g->nodes[id];
	uint32_t j;

	if (s->done >> id & 1)
		return false;
	for (j = 0; j < n->npred; j++)
		if (!(s->done >> c->g->preds[n->pred_off + j] & 1))
			return false;
	return true;
}

/*
 * The allocation of memory node @n (its values), as rt2_pool_get() does:
 * fast path, else wait (block) / sync / recycle / retry. Return: 0 done,
 * 1 blocked, -ENOMEM.
 */
static int mc_alloc(struct mc *c, struct mc_state *s, const struct rt2_node *n,
		    struct rt2_sched *sc, struct rt2_pool *p)
{
	unsigned int i;

	for (i = 0; i < n->nout; i++) {
		int32_t v = n->out[i];
		uint32_t gen = 0;
		uint64_t a;
		int ret;

		if (s->addr[v])
			continue;	/* done before this step blocked */
		a = c->hint[v];
		ret = rt2_alloc_get(p, &c->dev, c->vbytes[v], &a, &gen);
		if (ret == RT2_ALLOC_RECYCLE) {
			if (gen && rt2_sched_check(sc, gen)) {
				sc->wait_gen = gen;
				s->gen = gen;
				return 1;
			}
			sc->wait_gen = 0;
			rt2_alloc_recycle(p, &c->dev, sc->submitted,
					  c->vbytes[v]);
			a = c->hint[v];
			ret = rt2_alloc_get(p, &c->dev, c->vbytes[v], &a, &gen);
			if (ret)
				return -ENOMEM;
		}
		if (ret)
			return ret;
		s->addr[v] = a;
	}
	return 0;
}

static bool mc_is_alloc(unsigned int k)
{
	return k == RT2_K_ALLOC_OUTPUT || k == RT2_K_ALLOC_MEM_HBM ||
	       k == RT2_K_ALLOC_COPY_FLOW_HBM;
}

/* Run memory node @id in @s. Return: 0 done, 1 blocked, -ENOMEM. */
static int mc_mem_step(struct mc *c, struct mc_state *s, uint32_t id)
{
	const struct rt2_node *n = &c->g->nodes[id];
	struct rt2_sched sc;
	struct rt2_pool p;
	struct rt2_xdata x;
	int ret = 0;

	mc_load(c, s, &sc, &p, &x);
	if (mc_is_alloc(n->kernel)) {
		ret = mc_alloc(c, s, n, &sc, &p);
	} else if (n->type == RT2_NT_FREE_HOLD) {
		rt2_alloc_put(&p, s->addr[n->in[0]], x.req[id]);
		rt2_sched_free_done(&sc, &x, id, 0);
	} else if (n->type == RT2_NT_FREE) {
		rt2_alloc_put(&p, s->addr[n->in[0]], 0);
	}
	mc_store(s, &sc, &p);
	return ret;
}

static void mc_explore(struct __test_metadata *_metadata, struct mc *c,
		       const struct mc_state *s0)
{
	struct mc_state *stack = c->stack;
	unsigned long sp = 0, cap = c->stack_cap;
	uint64_t all = c->g->nnodes == 64 ? ~0ULL :
		       (1ULL << c->g->nnodes) - 1;

	if (mc_visit(c, s0))
		stack[sp++] = *s0;
	while (sp) {
		struct mc_state s = stack[--sp], t;
		unsigned int succ = 0, i;

		c->states++;
		if (s.done == all) {
			c->ends++;
			continue;
		}
#define PUSH(st) do { \
		if (mc_visit(c, &(st))) { \
			ASSERT_LT(sp, cap); \
			stack[sp++] = (st); \
		} \
		succ++; \
	} while (0)
		/* Launch worker. */
		if (s.launch_next < c->g->nlaunch &&
		    mc_ready(c, &s, c->g->launch_order[s.launch_next])) {
			uint32_t id = c->g->launch_order[s.launch_next];
			struct rt2_sched sc;
			struct rt2_pool p;
			struct rt2_xdata x;

			t = s;
			t.launch_next++;
			t.done |= 1ULL << id;
			mc_load(c, &t, &sc, &p, &x);
			if (rt2_sched_launch_done(&sc, &x, id, 0) && t.blocked)
				t.signalled = 1;
			mc_store(&t, &sc, &p);
			PUSH(t);
		}
		/* Normal worker: any ready node. */
		for (i = 0; i < c->g->nnodes; i++) {
			if (c->g->nodes[i].worker != RT2_W_NORMAL ||
			    !mc_ready(c, &s, i))
				continue;
			t = s;
			t.done |= 1ULL << i;
			PUSH(t);
		}
		/* Memory worker: woken, or its next node in ID order. */
		if (s.blocked ? s.signalled :
		    s.mem_next < c->nmem &&
		    mc_ready(c, &s, c->mem_order[s.mem_next])) {
			uint32_t id = c->mem_order[s.mem_next];
			int ret;

			t = s;
			t.signalled = 0;
			ret = mc_mem_step(c, &t, id);
			if (ret < 0) {
				c->oom++;	/* the run fails: an end */
				succ++;
			} else {
				t.blocked = ret == 1;
				if (!t.blocked) {
					t.gen = 0;
					t.done |= 1ULL << id;
					t.mem_next++;
				}
				PUSH(t);
			}
		}
#undef PUSH
		if (succ)
			continue;
		/* Stuck. */
		if (s.blocked && s.submitted >= s.gen)
			c->lost++;
		else
			c->deadlocks++;
	}
}

/*
 * Check graph @g with relations @x, values of @vbytes, pool limit @limit.
 */
/*
 * One run in ID order (a schedule the three workers can take): the pool
 * and the addresses a first run leaves. Return: false if it ran out of
 * memory.
 */
static bool mc_first_run(struct mc *c, struct mc_state *s)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	memset(c->hint, 0, sizeof(c->hint));
	for (i = 0; i < c->g->nnodes; i++) {
		const struct rt2_node *n = &c->g->nodes[i];
		struct rt2_sched sc;
		struct rt2_pool p;
		struct rt2_xdata x;

		if (n->worker == RT2_W_MEMORY) {
			if (mc_mem_step(c, s, i))
				return false;	/* ID order never waits */
		} else if (n->worker == RT2_W_LAUNCH) {
			mc_load(c, s, &sc, &p, &x);
			rt2_sched_launch_done(&sc, &x, i, 0);
			mc_store(s, &sc, &p);
		}
	}
	return true;
}

/*
 * Check graph @g with relations @x, values of @vbytes, pool limit @limit:
 * every schedule of a first run from an empty pool, and every schedule
 * of a second run from the pool and addresses a first run left (held
 * blocks of a value's last address are waited for).
 */
static void mc_check(struct __test_metadata *_metadata, struct mc *c,
		     const struct rt2_graph *g, const struct rt2_xdata *x,
		     const uint64_t *vbytes, uint64_t limit)
{
	struct mc_state s0, s1;
	unsigned int i;

	ASSERT_LE(g->nnodes, MC_NODES);
	ASSERT_LE(x->nranks, MC_RANKS);
	ASSERT_LE(x->nnodes, MC_NODES);
	c->g = g;
	c->x = x;
	c->vbytes = vbytes;
	c->limit = limit;
	c->dev.ops = &fake_ops;
	c->nmem = 0;
	for (i = 0; i < g->nnodes; i++)
		if (g->nodes[i].worker == RT2_W_MEMORY)
			c->mem_order[c->nmem++] = i;
	memset(c->hint, 0, sizeof(c->hint));
	c->cur++;
	c->nseen = 0;
	memset(&s0, 0, sizeof(s0));
	mc_explore(_metadata, c, &s0);
	ASSERT_LT(c->nseen, c->cap);	/* exhaustive: never out of room */
	/* The second run. */
	if (!mc_first_run(c, &s1))
		return;
	memcpy(c->hint, s1.addr, sizeof(c->hint));
	memset(&s0, 0, sizeof(s0));
	memcpy(s0.blk, s1.blk, sizeof(s0.blk));
	for (i = 0; i < s1.nblk; i++)
		s0.blk[i].state = RT2_BLK_FREE;	/* rt2_alloc_release() */
	s0.nblk = s1.nblk;
	s0.bytes = s1.bytes;
	s0.dev_allocs = s1.dev_allocs;
	c->cur++;
	c->nseen = 0;
	mc_explore(_metadata, c, &s0);
	ASSERT_LT(c->nseen, c->cap);
}

static void mc_init(struct __test_metadata *_metadata, struct mc *c)
{
	memset(c, 0, sizeof(*c));
	c->cap = 1UL << 18;
	c->tsize = 1UL << 19;
	c->seen = malloc(c->cap * sizeof(*c->seen));
	c->table = malloc(c->tsize * sizeof(*c->table));
	c->stamp = calloc(c->tsize, sizeof(*c->stamp));
	ASSERT_NE(NULL, c->stamp);
	c->mem_order = malloc(MC_NODES * sizeof(*c->mem_order));
	/* Allocated once: a checker makes thousands of explorations. */
	c->stack_cap = 1UL << 16;
	c->stack = malloc(c->stack_cap * sizeof(*c->stack));
	ASSERT_NE(NULL, c->stack);
	ASSERT_NE(NULL, c->seen);
	ASSERT_NE(NULL, c->table);
	ASSERT_NE(NULL, c->mem_order);
}

static void mc_fini(struct mc *c)
{
	free(c->stack);
	free(c->seen);
	free(c->table);
	free(c->stamp);
	free(c->mem_order);
}

/* Finalize @b and build its ExecutionData. */
static int mc_graph(struct rt2_build *b, struct rt2_graph *g,
		    struct rt2_xdata *x)
{
	struct rt2_rel *r = NULL;
	int ret = rt2_finalize(b, g);

	if (!ret)
		ret = rt2_rels_to_ids(b, g, &r);
	if (!ret)
		ret = rt2_xdata_build(x, g, r, b->nrels);
	if (!ret)
		ret = rt2_xdata_validate(x, g);
	free(r);
	return ret;
}

/* ---- the rule book's scenario ------------------------------------------- */

/*
 * A0 allocates v0 and P0 makes it; launch L1 reads it, and also waits for
 * M2, a memory-worker node; F0 frees v0 (eligible: P0's). A3 allocates v1
 * (same size). In ID order the memory worker runs A0, P0, F0, A3, M2: with
 * room for one block, A3 must recycle v0's block and waits for L1, which
 * waits for M2, queued behind A3 on the sole memory worker.
 */
static void scenario(struct __test_metadata *_metadata, struct rt2_build *b,
		     bool liveness)
{
	int a0, p0, f0, l1, a3, m2;

	memset(b, 0, sizeof(*b));
	b->flags = SNPU_RT2_EXEC_THREADS;
	b->no_liveness = !liveness;
	a0 = rt2_build_node(b, RT2_K_ALLOC_OUTPUT, -1, 0);
	p0 = rt2_build_node(b, RT2_K_EMPTY_MEMORY, -1, 0);
	f0 = rt2_build_node(b, RT2_K_FREE_MEM, -1, -1);
	l1 = rt2_build_node(b, RT2_K_EMPTY_LAUNCH, -1, 0);
	a3 = rt2_build_node(b, RT2_K_ALLOC_OUTPUT, -1, 0);
	m2 = rt2_build_node(b, RT2_K_EMPTY_MEMORY, -1, 0);
	ASSERT_GE(m2, 0);
	b->nodes[a0].out[b->nodes[a0].nout++] = 0;
	b->nodes[p0].out[b->nodes[p0].nout++] = 0;
	b->nodes[l1].in[b->nodes[l1].nin++] = 0;
	b->nodes[f0].in[b->nodes[f0].nin++] = 0;
	b->nodes[a3].out[b->nodes[a3].nout++] = 1;
	ASSERT_EQ(0, rt2_build_edge(b, a0, p0));
	ASSERT_EQ(0, rt2_build_edge(b, p0, l1));
	ASSERT_EQ(0, rt2_build_edge(b, p0, f0));
	ASSERT_EQ(0, rt2_build_edge(b, l1, f0));
	ASSERT_EQ(0, rt2_build_edge(b, m2, l1));
	ASSERT_EQ(0, rt2_run_passes(b));
	ASSERT_EQ(1U, b->nrels);
	ASSERT_EQ(RT2_K_FREE_MEM_HOLD, b->nodes[f0].kernel);
}

static const uint64_t scenario_bytes[2] = { 16, 16 };

/* Without the liveness edges: the checker finds the deadlock. */
TEST(scenario_deadlocks_without_liveness_edges)
{
	struct rt2_build b;
	struct rt2_graph g;
	struct rt2_xdata x;
	struct mc c;

	mc_init(_metadata, &c);
	scenario(_metadata, &b, false);
	EXPECT_EQ(0U, b.liveness_edges);
	ASSERT_EQ(0, mc_graph(&b, &g, &x));
	mc_check(_metadata, &c, &g, &x, scenario_bytes, 16);
	EXPECT_GT(c.deadlocks, 0UL);
	TH_LOG("%lu states, %lu deadlocks", c.states, c.deadlocks);
	rt2_xdata_fini(&x);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
	mc_fini(&c);
}

/* With them: no schedule deadlocks, at either pool size. */
TEST(scenario_live_with_liveness_edges)
{
	struct rt2_build b;
	struct rt2_graph g;
	struct rt2_xdata x;
	struct mc c;

	mc_init(_metadata, &c);
	scenario(_metadata, &b, true);
	EXPECT_GT(b.liveness_edges, 0U);
	ASSERT_EQ(0, mc_graph(&b, &g, &x));
	mc_check(_metadata, &c, &g, &x, scenario_bytes, 16);
	EXPECT_EQ(0UL, c.deadlocks);
	EXPECT_EQ(0UL, c.lost);
	EXPECT_GT(c.oom, 0UL);	/* one block cannot hold v0 and v1 */
	mc_check(_metadata, &c, &g, &x, scenario_bytes, 32);
	EXPECT_EQ(0UL, c.deadlocks);
	EXPECT_EQ(0UL, c.lost);
	EXPECT_GT(c.ends, 0UL);
	rt2_xdata_fini(&x);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
	mc_fini(&c);
}

/* The executor runs it to the end: -ENOMEM with one block, else 0. */
TEST(scenario_executor_finishes)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 2, 2);
	struct snpu_rt2_model *m;
	struct snpu_rt2_exec *e;
	struct rt2_build b;
	struct hostdev *h;
	unsigned int run;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ASSERT_EQ(0, snpu_rt2_model_input(m, &s));	/* v0, 16 B */
	ASSERT_EQ(1, snpu_rt2_model_input(m, &s));	/* v1 */
	scenario(_metadata, &b, true);
	ASSERT_EQ(0, rt2_exec_create_graph(m, &h->head, &o, &b, &e));
	rt2_build_fini(&b);
	ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e, 16));
	for (run = 0; run < 50; run++)
		ASSERT_EQ(-ENOMEM, snpu_rt2_exec_run(e));
	ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e, 32));
	for (run = 0; run < 50; run++)
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
	snpu_rt2_exec_destroy(e);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

/* ---- exhaustive: every model of up to MC_OPS ops, every pool size ------ */

struct mc_sum {
	unsigned long models, graphs, states, ends, oom, deadlocks, lost;
};

static void mc_model(struct __test_metadata *_metadata, struct mc *c,
		     struct snpu_rt2_model *m, bool liveness,
		     struct mc_sum *sum)
{
	uint64_t vbytes[MC_VALS] = { 0 };
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	struct rt2_graph g;
	struct rt2_xdata x;
	unsigned int i, k;

	b.no_liveness = !liveness;
	ASSERT_LE(m->ntensors, MC_VALS);
	for (i = 0; i < m->ntensors; i++)
		vbytes[i] = rt2_shape_bytes(&m->tensors[i].shape);
	ASSERT_EQ(0, rt2_lower(&b, m));
	ASSERT_EQ(0, rt2_run_passes(&b));
	ASSERT_EQ(0, mc_graph(&b, &g, &x));
	sum->models++;
	/* Pool limits: one block, two, ... every value; then none. */
	for (k = 1; k <= m->ntensors + 1; k++) {
		c->states = c->ends = c->oom = c->deadlocks = c->lost = 0;
		mc_check(_metadata, c, &g, &x, vbytes,
			 k <= m->ntensors ? 16ULL * k : 0);
		sum->graphs++;
		sum->states += c->states;
		sum->ends += c->ends;
		sum->oom += c->oom;
		sum->deadlocks += c->deadlocks;
		sum->lost += c->lost;
		if (!k || k == m->ntensors + 1)
			ASSERT_EQ(0UL, c->oom);	/* no limit: no failure */
	}
	rt2_xdata_fini(&x);
	rt2_graph_fini(&g);
	rt2_build_fini(&b);
}

/*
 * A family of models: two fed inputs (tensors 0 and 1), with @param a
 * parameter (tensor 2), all 2 x 2 f32; then every op over the tensors so
 * far (RELU of each, ADD of every pair, with @matmul MATMUL of every
 * ordered pair), up to @left more ops; each model is checked with its
 * last result as the output.
 */
struct mc_family {
	bool param, matmul, liveness;
	unsigned int base;
};

static void mc_models(struct __test_metadata *_metadata, struct mc *c,
		      const struct mc_family *f, int *ops, unsigned int nops,
		      unsigned int left, struct mc_sum *sum)
{
	static const float zero4[4];
	unsigned int n = f->base + nops, a, bb, k;

	if (nops) {
		struct snpu_rt2_shape s = shape2(SNPU_RT2_F32, 2, 2);
		struct snpu_rt2_model *m;
		unsigned int i;
		int t = -1;

		ASSERT_EQ(0, snpu_rt2_model_create(&m));
		ASSERT_EQ(0, snpu_rt2_model_input(m, &s));
		ASSERT_EQ(1, snpu_rt2_model_input(m, &s));
		if (f->param)
			ASSERT_EQ(2, snpu_rt2_model_param(m, &s, zero4));
		for (i = 0; i < nops; i++) {
			t = op2(m, (uint32_t)ops[3 * i], ops[3 * i + 1],
				ops[3 * i + 2]);
			ASSERT_GE(t, 0);
		}
		ASSERT_EQ(0, snpu_rt2_model_output(m, t));
		mc_model(_metadata, c, m, f->liveness, sum);
		snpu_rt2_model_destroy(m);
	}
	if (!left)
		return;
	for (a = 0; a < n; a++) {
		for (k = 0; k <= n; k++) {
			unsigned int type = k == n ? SNPU_RT2_OP_RELU :
					    SNPU_RT2_OP_ADD;

			bb = k;
			if (k < n && bb < a)
				continue;	/* ADD: unordered pairs */
			ops[3 * nops] = (int)type;
			ops[3 * nops + 1] = (int)a;
			ops[3 * nops + 2] = k == n ? -1 : (int)bb;
			mc_models(_metadata, c, f, ops, nops + 1, left - 1,
				  sum);
		}
		for (bb = 0; f->matmul && bb < n; bb++) {
			ops[3 * nops] = SNPU_RT2_OP_MATMUL;
			ops[3 * nops + 1] = (int)a;
			ops[3 * nops + 2] = (int)bb;
			mc_models(_metadata, c, f, ops, nops + 1, left - 1,
				  sum);
		}
	}
}

static void mc_log(struct __test_metadata *_metadata, const char *what,
		   const struct mc_sum *sum)
{
	TH_LOG("%s: %lu models, %lu graph x limit checks, %lu states, %lu complete runs, %lu -ENOMEM ends, %lu deadlocks, %lu lost wake-ups",
	       what, sum->models, sum->graphs, sum->states, sum->ends,
	       sum->oom, sum->deadlocks, sum->lost);
}

/*
 * The bound: ADD and RELU models of up to MC_OPS (3) ops over two inputs,
 * and ADD, RELU and MATMUL models of up to 2 ops over two inputs and a
 * parameter; each with every pool limit from one block to none.
 */
FIXTURE(checker) {
	int unused;
};

FIXTURE_SETUP(checker)
{
}

FIXTURE_TEARDOWN(checker)
{
}

/*
 * About 5 s of CPU under ASan, 11 s of wall time on 2 cores at load 7:
 * the guard is past the harness's default 30 s, for a machine many times
 * slower. (It used to take 40 s to over 300 s: each of its 14 710
 * explorations allocated and freed a 20 MB stack, which ASan poisons and
 * unpoisons, in system time that grew with the host's memory pressure.)
 */
TEST_F_TIMEOUT(checker, exhaustive_schedules_no_deadlock_no_lost_wakeup, 300)
{
	struct mc_family small = { .liveness = true, .base = 2 };
	struct mc_family mm = { .param = true, .matmul = true,
				.liveness = true, .base = 3 };
	struct mc_sum sum = { 0 };
	int ops[3 * MC_OPS];
	struct mc c;

	mc_init(_metadata, &c);
	mc_models(_metadata, &c, &small, ops, 0, MC_OPS, &sum);
	mc_models(_metadata, &c, &mm, ops, 0, 2, &sum);
	mc_log(_metadata, "with liveness edges", &sum);
	EXPECT_EQ(0UL, sum.deadlocks);
	EXPECT_EQ(0UL, sum.lost);
	EXPECT_GT(sum.ends, 0UL);
	mc_fini(&c);
}

TEST_HARNESS_MAIN
