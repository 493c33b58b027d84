// SPDX-License-Identifier: GPL-2.0
/*
 * The hand-over of rt2's three-worker mode under stress (lib/rt2/exec.c):
 * the strands' claims, the normal worker's queue, the pending counts,
 * helpers woken, spinning and asleep, and the ordered run's switch to the
 * strands, with every thread racing every other.
 *
 * - Random graphs of the three do-nothing kernels, with helpers woken
 *   whenever another strand has work (RT2_HAND_EAGER): millions of node
 *   hand-overs over all runs. A checker sees every node through the trace
 *   hook, which runs on the node's thread right after its kernel, inside
 *   its strand's claim: each node runs exactly once a run (nothing lost,
 *   nothing run twice), after each of its predecessors, the memory
 *   worker's nodes in ID order and the launches in launch order, and no
 *   two nodes of one strand at once.
 * - The same graphs with a node that fails now and then: the run returns
 *   its error, no node runs twice, none after the failed one, and the
 *   next run is whole again.
 * - A model under a pool limit small enough that allocations wait for
 *   relation launches: the caller's ordered run hands over to the strands
 *   at each such wait; results equal one thread's bit for bit.
 *
 * Built twice: under ASan/UBSan (rt2_handover_test) and under TSan
 * (rt2_handover_tsan_test, half the runs: TSan is several times slower),
 * both run by make unit and make check: about 2 and 12 s. No timing
 * decides a result.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "rt2/hostdev.h"
#include "rt2/models.h"

#include "kselftest_harness.h"

#if defined(__SANITIZE_THREAD__)
#define HO_SCALE	2	/* half the runs under TSan */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HO_SCALE	2
#endif
#endif
#ifndef HO_SCALE
#define HO_SCALE	1
#endif

#define HO_NODES	1024U
#define HO_GRAPHS	6U
#define HO_RUNS		(400U / HO_SCALE)	/* per graph */

/* What the trace hook saw in one run. */
struct ho_seen {
	uint32_t nnodes;
	uint32_t *count;	/* per node: runs of it */
	uint32_t *ticket;	/* per node: its place among all nodes run */
	uint32_t *thread;	/* per node: the thread that ran it */
	uint32_t next_ticket;
	uint32_t active[RT2_WORKERS];	/* nodes of a strand in its hook */
	uint32_t overlaps;	/* two nodes of one strand at once */
	uint32_t threads;	/* threads seen */
};

static __thread uint32_t ho_self;	/* this thread's number, 1-based */

static void ho_trace(void *arg, const struct snpu_rt2_trace *t)
{
	struct ho_seen *s = arg;
	unsigned int spin;

	if (!ho_self)
		ho_self = __atomic_add_fetch(&s->threads, 1, __ATOMIC_RELAXED);
	/* The strand's claim holds here: no other node of it is in. */
	if (__atomic_fetch_add(&s->active[t->worker], 1, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&s->overlaps, 1, __ATOMIC_RELAXED);
	if (t->node < s->nnodes) {
		__atomic_add_fetch(&s->count[t->node], 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->ticket[t->node],
				 __atomic_fetch_add(&s->next_ticket, 1,
						    __ATOMIC_ACQ_REL),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&s->thread[t->node], ho_self,
				 __ATOMIC_RELAXED);
	}
	/* A window in which an overlap would show. */
	for (spin = 0; spin < 16; spin++)
		__atomic_load_n(&s->active[t->worker], __ATOMIC_RELAXED);
	__atomic_sub_fetch(&s->active[t->worker], 1, __ATOMIC_ACQ_REL);
}

static unsigned int rnd(unsigned int *st)
{
	*st = *st * 1103515245U + 12345U;
	return (*st >> 16) & 0x7fff;
}

/*
 * A random DAG of @nodes nodes over the three workers: each node takes up
 * to three predecessors among the 16 before it (width and depth both),
 * launches prioritised by creation index; node @fail_at, if any, is a
 * Fail node that succeeds (arg 0) until a test sets its arg.
 */
static int ho_exec(struct hostdev *h, unsigned int seed, unsigned int nodes,
		   int fail_at, struct ho_seen *s, struct snpu_rt2_exec **ep)
{
	static const unsigned int kinds[3] = {
		RT2_K_EMPTY, RT2_K_EMPTY_MEMORY, RT2_K_EMPTY_LAUNCH };
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	unsigned int i, j, st = seed, back;
	int ret = 0, id;

	o.trace = ho_trace;
	o.trace_arg = s;
	for (i = 0; i < nodes && !ret; i++) {
		unsigned int k = (int)i == fail_at ? RT2_K_FAIL :
				 kinds[rnd(&st) % 3];

		id = rt2_build_node(&b, k, -1, (int32_t)i);
		if (id < 0)
			return id;
		b.nodes[id].arg = 0;
		for (j = 0; j < 3 && i && !ret; j++) {
			if (rnd(&st) % 3 == 0)
				continue;
			back = 1 + rnd(&st) % (i < 16 ? i : 16);
			ret = rt2_build_edge(&b, i - back, i);
		}
	}
	if (!ret)
		ret = rt2_exec_create_graph(NULL, &h->head, &o, &b, ep);
	rt2_build_fini(&b);
	if (!ret)
		(*ep)->hand.policy = RT2_HAND_EAGER;
	return ret;
}

static void ho_seen_init(struct __test_metadata *_metadata,
			 struct ho_seen *s, uint32_t nnodes)
{
	memset(s, 0, sizeof(*s));
	s->nnodes = nnodes;
	s->count = calloc(nnodes, sizeof(*s->count));
	s->ticket = calloc(nnodes, sizeof(*s->ticket));
	s->thread = calloc(nnodes, sizeof(*s->thread));
	ASSERT_NE(NULL, s->count);
	ASSERT_NE(NULL, s->ticket);
	ASSERT_NE(NULL, s->thread);
}

static void ho_seen_fini(struct ho_seen *s)
{
	free(s->count);
	free(s->ticket);
	free(s->thread);
}

static void ho_seen_reset(struct ho_seen *s)
{
	memset(s->count, 0, s->nnodes * sizeof(*s->count));
	s->next_ticket = 0;
	s->overlaps = 0;
}

struct ho_sum {
	unsigned long nodes, edges, cross, runs;
};

/*
 * One run's trace against the graph. @whole: every node ran (else the run
 * stopped: nodes ran at most once, none after a node that did not run).
 * Counts the edges, and those whose two nodes ran on different threads.
 */
static void ho_check(struct __test_metadata *_metadata,
		     const struct snpu_rt2_exec *e, const struct ho_seen *s,
		     bool whole, struct ho_sum *sum)
{
	const struct rt2_graph *g = &e->g;
	uint32_t i, j, last;

	ASSERT_EQ(0U, s->overlaps);
	for (i = 0; i < g->nnodes; i++) {
		const struct rt2_node *n = &g->nodes[i];

		if (whole)
			ASSERT_EQ(1U, s->count[i]) {
				TH_LOG("node %u ran %u times", i, s->count[i]);
			}
		ASSERT_LE(s->count[i], 1U);
		sum->nodes += s->count[i];
		for (j = 0; j < n->npred; j++) {
			uint32_t p = g->preds[n->pred_off + j];

			if (!s->count[i])
				continue;
			/* A node runs only after each predecessor ran. */
			ASSERT_EQ(1U, s->count[p]);
			ASSERT_LT(s->ticket[p], s->ticket[i]);
			sum->edges++;
			sum->cross += s->thread[p] != s->thread[i];
		}
	}
	/* The memory worker in ID order, the launches in launch order. */
	for (i = 0, last = 0; i < e->nmem; i++) {
		uint32_t id = e->mem_order[i];

		if (!s->count[id])
			continue;
		ASSERT_LE(last, s->ticket[id]);
		last = s->ticket[id];
	}
	for (i = 0, last = 0; i < g->nlaunch; i++) {
		uint32_t id = g->launch_order[i];

		if (!s->count[id])
			continue;
		ASSERT_LE(last, s->ticket[id]);
		last = s->ticket[id];
	}
	sum->runs++;
}

static void ho_log(struct __test_metadata *_metadata, const char *what,
		   const struct ho_sum *sum, const struct snpu_rt2_exec *e)
{
	TH_LOG("%s: %lu runs, %lu nodes run, %lu hand-overs (edges), %lu between threads, %lu helper wakes",
	       what, sum->runs, sum->nodes, sum->edges, sum->cross,
	       e ? e->hand.wakes : 0UL);
}

/* The harness's time guard needs a fixture: an empty one. */
FIXTURE(ho) {
	int unused;
};

FIXTURE_SETUP(ho)
{
}

FIXTURE_TEARDOWN(ho)
{
}

/*
 * Random graphs, helpers woken whenever another strand has work: every
 * node once a run, in every order the workers promise. Guards: 600 s, for
 * a machine many times slower than what it needs (see make unit).
 */
TEST_F_TIMEOUT(ho, random_graphs_every_node_once, 600)
{
	struct ho_sum sum = { 0 };
	unsigned long wakes = 0;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	struct ho_seen s;
	unsigned int seed, run;

	ASSERT_EQ(0, hostdev_open(&h));
	ho_seen_init(_metadata, &s, HO_NODES);
	for (seed = 1; seed <= HO_GRAPHS; seed++) {
		ASSERT_EQ(0, ho_exec(h, seed, HO_NODES, -1, &s, &e));
		ASSERT_EQ(HO_NODES, e->g.nnodes);
		for (run = 0; run < HO_RUNS; run++) {
			ho_seen_reset(&s);
			ASSERT_EQ(0, snpu_rt2_exec_run(e));
			ho_check(_metadata, e, &s, true, &sum);
		}
		wakes += e->hand.wakes;
		snpu_rt2_exec_destroy(e);
	}
	ho_log(_metadata, "eager helpers", &sum, NULL);
	TH_LOG("%lu helper wakes, %u threads ran nodes", wakes, s.threads);
	/* Threads other than the caller took part: it tested hand-overs. */
	EXPECT_GT(sum.cross, 0UL);
	EXPECT_GT(wakes, 0UL);
	ho_seen_fini(&s);
	hostdev_close(h);
}

/*
 * A node that fails in one run of five: that run returns its error, no
 * node runs twice and none that depends on it runs; the next runs are
 * whole.
 */
TEST_F_TIMEOUT(ho, random_graphs_failure_stops_cleanly, 600)
{
	struct ho_sum sum = { 0 };
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	struct ho_seen s;
	unsigned int seed, run;
	uint32_t fail;

	ASSERT_EQ(0, hostdev_open(&h));
	ho_seen_init(_metadata, &s, HO_NODES / 4);
	for (seed = 11; seed <= 10 + HO_GRAPHS; seed++) {
		ASSERT_EQ(0, ho_exec(h, seed, HO_NODES / 4, HO_NODES / 8, &s,
				     &e));
		for (fail = 0; fail < e->g.nnodes; fail++)
			if (e->g.nodes[fail].kernel == RT2_K_FAIL)
				break;
		ASSERT_LT(fail, e->g.nnodes);
		for (run = 0; run < HO_RUNS; run++) {
			bool fails = run % 5 == 4;
			uint32_t i;

			e->g.nodes[fail].arg = fails ? -EL2HLT : 0;
			ho_seen_reset(&s);
			ASSERT_EQ(fails ? -EL2HLT : 0, snpu_rt2_exec_run(e));
			ho_check(_metadata, e, &s, !fails, &sum);
			if (!fails)
				continue;
			ASSERT_EQ(1U, s.count[fail]);
			/* Nothing after the failed node ran. */
			for (i = 0; i < e->g.nnodes; i++) {
				const struct rt2_node *n = &e->g.nodes[i];
				uint32_t j;

				for (j = 0; j < n->npred; j++)
					if (e->g.preds[n->pred_off + j] == fail)
						ASSERT_EQ(0U, s.count[i]);
			}
		}
		snpu_rt2_exec_destroy(e);
	}
	ho_log(_metadata, "with failures", &sum, NULL);
	ho_seen_fini(&s);
	hostdev_close(h);
}

/* ---- the ordered run's switch to the strands ------------------------- */

/*
 * A graph whose allocation, in ID order, must wait for a relation launch
 * that comes after it: A0 allocates v0 and P0 makes it; launch L1 reads
 * it once normal node X ran; F0 frees v0 (held for L1). A3 allocates v1,
 * of v0's size, for launch L4. Priorities put A3 (1) before X (2), hence
 * before L1: with room for one block, A3 waits for L1, which the caller,
 * running the graph alone in ID order, has not reached. The strands take
 * over: a helper runs X and L1 while the caller waits in A3.
 */
static int ho_switch_exec(struct hostdev *h, struct snpu_rt2_model *m,
			  struct ho_seen *s, struct snpu_rt2_exec **ep)
{
	struct snpu_rt2_exec_opts o = { .flags = SNPU_RT2_EXEC_THREADS };
	struct rt2_build b = { .flags = SNPU_RT2_EXEC_THREADS };
	int a0, p0, x, l1, f0, a3, l4, ret;

	o.trace = ho_trace;
	o.trace_arg = s;
	a0 = rt2_build_node(&b, RT2_K_ALLOC_OUTPUT, -1, 0);
	p0 = rt2_build_node(&b, RT2_K_EMPTY_MEMORY, -1, 0);
	x = rt2_build_node(&b, RT2_K_EMPTY, -1, 2);
	l1 = rt2_build_node(&b, RT2_K_EMPTY_LAUNCH, -1, 0);
	f0 = rt2_build_node(&b, RT2_K_FREE_MEM, -1, -1);
	a3 = rt2_build_node(&b, RT2_K_ALLOC_OUTPUT, -1, 1);
	l4 = rt2_build_node(&b, RT2_K_EMPTY_LAUNCH, -1, 1);
	if (l4 < 0)
		return l4;
	b.nodes[a0].out[b.nodes[a0].nout++] = 0;
	b.nodes[p0].out[b.nodes[p0].nout++] = 0;
	b.nodes[l1].in[b.nodes[l1].nin++] = 0;
	b.nodes[f0].in[b.nodes[f0].nin++] = 0;
	b.nodes[a3].out[b.nodes[a3].nout++] = 1;
	b.nodes[l4].in[b.nodes[l4].nin++] = 1;
	ret = rt2_build_edge(&b, a0, p0);
	ret |= rt2_build_edge(&b, p0, l1);
	ret |= rt2_build_edge(&b, x, l1);
	ret |= rt2_build_edge(&b, p0, f0);
	ret |= rt2_build_edge(&b, l1, f0);
	ret |= rt2_build_edge(&b, a3, l4);
	if (!ret)
		ret = rt2_run_passes(&b);
	if (!ret && b.nrels != 1)
		ret = -EPROTO;	/* F0 must have become a hold-address free */
	if (!ret)
		ret = rt2_exec_create_graph(m, &h->head, &o, &b, ep);
	rt2_build_fini(&b);
	return ret;
}

/*
 * Every run of that graph under a pool of one block: the caller's ordered
 * run hands over to the strands at A3's wait, a helper runs X and L1, and
 * every node runs once, in order.
 */
TEST_F_TIMEOUT(ho, ordered_run_hands_over_at_a_wait, 600)
{
	struct snpu_rt2_shape sh = shape2(SNPU_RT2_F32, 2, 2);
	struct snpu_rt2_pool_stats st;
	struct ho_sum sum = { 0 };
	struct snpu_rt2_model *m;
	struct snpu_rt2_exec *e;
	struct hostdev *h;
	struct ho_seen s;
	unsigned int run;

	ASSERT_EQ(0, hostdev_open(&h));
	ASSERT_EQ(0, snpu_rt2_model_create(&m));
	ASSERT_EQ(0, snpu_rt2_model_input(m, &sh));	/* v0, 16 B */
	ASSERT_EQ(1, snpu_rt2_model_input(m, &sh));	/* v1 */
	ho_seen_init(_metadata, &s, 7);
	ASSERT_EQ(0, ho_switch_exec(h, m, &s, &e));
	ASSERT_EQ(0, snpu_rt2_exec_set_pool_limit(e, 16));
	for (run = 0; run < 4 * HO_RUNS; run++) {
		/*
		 * The wait makes the nodes look slow: the policy would soon
		 * wake helpers from the start of a run. Keep the ordered run.
		 */
		e->hand.node_ns = 0;
		ho_seen_reset(&s);
		ASSERT_EQ(0, snpu_rt2_exec_run(e));
		ho_check(_metadata, e, &s, true, &sum);
		ASSERT_EQ(run + 1, e->hand.switches);
	}
	ASSERT_EQ(0, snpu_rt2_exec_pool_stats(e, &st));
	ho_log(_metadata, "switches", &sum, e);
	EXPECT_EQ(4UL * HO_RUNS, st.waits);
	EXPECT_GT(e->hand.wakes, 0UL);
	ho_seen_fini(&s);
	snpu_rt2_exec_destroy(e);
	snpu_rt2_model_destroy(m);
	hostdev_close(h);
}

TEST_HARNESS_MAIN
