// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2_relation_bench: what rt2's exact Free -> Launch relations cost
 * (lib/rt2/relation.c, sched.c), natively, without a device.
 *
 *   rt2_relation_bench [-r REPS] [-n NODES] [-f RELS_PER_FREE]
 *
 * A synthetic final graph of NODES nodes (100 000): half launches, half
 * hold-address frees, each free related to RELS_PER_FREE (20) distinct
 * launches: 1 000 000 relations. Medians of REPS (21) of:
 *
 *   prepare       ExecutionData built (and validated: the build checks
 *                 every rule) from the relations in execution IDs, and
 *                 the schedule state begun: what an executor's creation
 *                 does; with the relations grouped by free in increasing
 *                 order and each row sorted (what the pass hands over
 *                 when the IDs keep the rows' order), grouped with each
 *                 row in the order it was made, and shuffled; and its
 *                 structural memory
 *   validate      the independent check of the built data
 *                 (rt2_xdata_validate(), for data the build did not make)
 *   occurrence    one Free/Launch relation occurrence: a free activating
 *                 its launches and their submissions, per relation
 *   unrelated     a node event of a node in no relation
 *   wait          an immediate wait: the generation already reached (the
 *                 executor's wait reads it before it would sleep)
 *   baseline      in the same run: one read of the relations, and a
 *                 bare counting sort of the shuffled ones by free into a
 *                 CSR (no check, no row sort), to judge the machine by
 *
 * and the heap allocations made by the measured event loops (counted by
 * interposing malloc, calloc and realloc; not under ASan): 0.
 *
 * The same source, built -O0 with ASan and UBSan by hand, gives the
 * figures to compare with the rule book's (Documentation/perf.rst).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../rt2/rt2.h"
#include "../tools/bench.h"

/*
 * Every allocation of the process, counted (not under ASan, which has
 * its own allocator: then the count reads 0 and means nothing).
 */
static unsigned long heap_allocs;
#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
	__atomic_add_fetch(&heap_allocs, 1, __ATOMIC_RELAXED);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	__atomic_add_fetch(&heap_allocs, 1, __ATOMIC_RELAXED);
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	__atomic_add_fetch(&heap_allocs, 1, __ATOMIC_RELAXED);
	return __libc_realloc(p, n);
}
#endif

#define MAX_REPS	101

static uint64_t rnd64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Even IDs are launches (in launch order), odd IDs hold-address frees. */
static int make_graph(struct rt2_graph *g, unsigned int n)
{
	unsigned int i;

	memset(g, 0, sizeof(*g));
	g->nodes = calloc(n, sizeof(*g->nodes));
	g->launch_order = malloc((n / 2 + 1) * sizeof(uint32_t));
	g->preds = malloc(sizeof(uint32_t));
	g->succs = malloc(sizeof(uint32_t));
	if (!g->nodes || !g->launch_order || !g->preds || !g->succs)
		return -ENOMEM;
	g->nnodes = n;
	for (i = 0; i < n; i++) {
		struct rt2_node *x = &g->nodes[i];

		x->id = i;
		x->prio = -1;
		if (i % 2 == 0) {
			x->kernel = RT2_K_EMPTY_LAUNCH;
			x->type = RT2_NT_LAUNCH;
			x->worker = RT2_W_LAUNCH;
			g->launch_order[g->nlaunch++] = i;
		} else {
			x->kernel = RT2_K_FREE_MEM_HOLD;
			x->type = RT2_NT_FREE_HOLD;
			x->worker = RT2_W_MEMORY;
			x->nin = 1;
			x->in[0] = (int32_t)(i / 2);
		}
	}
	return 0;
}

/* @per distinct launches per free, in random order. */
static struct rt2_rel *make_rels(unsigned int n, unsigned int per,
				 unsigned int *count)
{
	unsigned int nf = n / 2, i, j, k = 0;
	struct rt2_rel *r = malloc((size_t)nf * per * sizeof(*r));
	uint64_t s = 88172645463325252ULL;

	if (!r)
		return NULL;
	for (i = 0; i < nf; i++) {
		uint32_t base = (uint32_t)(rnd64(&s) % (n / 2));

		/* distinct: consecutive launches from a random start */
		for (j = 0; j < per; j++)
			r[k++] = (struct rt2_rel){ 2 * i + 1,
				2 * ((base + j * 7) % (n / 2)) };
	}
	for (i = k - 1; i > 0; i--) {
		struct rt2_rel t;

		j = (unsigned int)(rnd64(&s) % (i + 1));
		t = r[i];
		r[i] = r[j];
		r[j] = t;
	}
	*count = k;
	return r;
}

static int cmp_rel(const void *a, const void *b)
{
	const struct rt2_rel *x = a, *y = b;

	if (x->free != y->free)
		return x->free < y->free ? -1 : 1;
	return x->launch < y->launch ? -1 : x->launch > y->launch;
}

/* A bare counting sort by free: count, prefix sums, scatter. */
static uint64_t baseline_ns(const struct rt2_rel *r, unsigned int nr,
			    unsigned int n, uint32_t *off, uint32_t *col,
			    uint64_t *read_ns)
{
	uint64_t t0 = now_ns(), t1, sum = 0;
	unsigned int i;

	for (i = 0; i < nr; i++)
		sum += r[i].free ^ r[i].launch;
	t1 = now_ns();
	*read_ns = t1 - t0 + (sum == 1);
	memset(off, 0, (n + 2) * sizeof(*off));
	for (i = 0; i < nr; i++)
		off[r[i].free + 2]++;
	for (i = 2; i < n + 2; i++)
		off[i] += off[i - 1];
	for (i = 0; i < nr; i++)
		col[off[r[i].free + 1]++] = r[i].launch;
	return now_ns() - t1;
}

static uint64_t prepare_ns(const struct rt2_graph *g, const struct rt2_rel *r,
			   unsigned int nr, struct rt2_xdata *x,
			   struct rt2_sched *s)
{
	uint64_t t0 = now_ns();
	int ret = rt2_xdata_build(x, g, r, nr);

	memset(s, 0, sizeof(*s));
	rt2_sched_begin(s);
	if (ret) {
		fprintf(stderr, "prepare: %d\n", ret);
		exit(1);
	}
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	unsigned int reps = 21, n = 100000, per = 20, nr, i, k;
	uint64_t vsh[MAX_REPS], vgr[MAX_REPS], vso[MAX_REPS], val[MAX_REPS];
	uint64_t occ[MAX_REPS], unrel[MAX_REPS], wait[MAX_REPS], t0;
	uint64_t rd[MAX_REPS], cs[MAX_REPS];
	uint32_t *boff, *bcol;
	unsigned long allocs = 0, before;
	struct rt2_rel *r, *rg, *rs;
	struct rt2_graph g;
	struct rt2_xdata x;
	struct rt2_sched s;
	volatile int sink = 0;
	int opt;

	while ((opt = getopt(argc, argv, "r:n:f:")) != -1) {
		if (opt == 'r')
			reps = (unsigned int)atoi(optarg);
		else if (opt == 'n')
			n = (unsigned int)atoi(optarg) & ~1U;
		else if (opt == 'f')
			per = (unsigned int)atoi(optarg);
		else
			return 2;
	}
	if (!reps || reps > MAX_REPS || n < 4 || !per || per > n / 2)
		return 2;
	if (make_graph(&g, n))
		return 1;
	r = make_rels(n, per, &nr);
	rg = malloc((size_t)nr * sizeof(*rg));
	rs = malloc((size_t)nr * sizeof(*rs));
	boff = malloc((n + 2) * sizeof(*boff));
	bcol = malloc((nr + 1) * sizeof(*bcol));
	if (!r || !rg || !rs || !boff || !bcol)
		return 1;
	/* r: shuffled; rg: grouped, rows as made; rs: grouped and sorted. */
	memcpy(rs, r, (size_t)nr * sizeof(*rs));
	qsort(rs, nr, sizeof(*rs), cmp_rel);
	memcpy(rg, rs, (size_t)nr * sizeof(*rg));
	{
		uint64_t st = 88172645463325252ULL;
		unsigned int a, b;

		/* Each row of rg in a random order of its own. */
		for (a = 0; a < nr; a = b) {
			for (b = a + 1; b < nr && rg[b].free == rg[a].free; b++)
				;
			for (k = b - 1; k > a; k--) {
				unsigned int q = a + (unsigned int)(rnd64(&st) % (k - a + 1));
				struct rt2_rel t = rg[k];

				rg[k] = rg[q];
				rg[q] = t;
			}
		}
	}
	/* The three orders, interleaved, so that they see the same load. */
	for (i = 0; i < reps; i++) {
		vsh[i] = prepare_ns(&g, r, nr, &x, &s);
		rt2_xdata_fini(&x);
		vgr[i] = prepare_ns(&g, rg, nr, &x, &s);
		rt2_xdata_fini(&x);
		vso[i] = prepare_ns(&g, rs, nr, &x, &s);
		t0 = now_ns();
		if (rt2_xdata_validate(&x, &g)) {
			fprintf(stderr, "validate refused what build made\n");
			return 1;
		}
		val[i] = now_ns() - t0;
		if (i + 1 < reps)
			rt2_xdata_fini(&x);
		cs[i] = baseline_ns(r, nr, n, boff, bcol, &rd[i]);
	}
	/* Events: each rep is one run over the whole graph. */
	for (i = 0; i < reps; i++) {
		before = heap_allocs;
		rt2_sched_begin(&s);
		t0 = now_ns();
		for (k = 1; k < n; k += 2)
			rt2_sched_free_done(&s, &x, k, 0);
		for (k = 0; k < g.nlaunch; k++)
			sink += rt2_sched_launch_done(&s, &x,
						      g.launch_order[k], 0);
		occ[i] = now_ns() - t0;
		/* Unrelated: a free and a launch of no relation each. */
		x.off[2] = x.off[1] = x.off[0];	/* node 1: no relation */
		t0 = now_ns();
		for (k = 0; k < n; k++)
			sink += rt2_sched_free_done(&s, &x, 1, 0) +
				rt2_sched_launch_done(&s, &x, 1, 0);
		unrel[i] = now_ns() - t0;
		t0 = now_ns();
		for (k = 0; k < n; k++)
			sink += rt2_sched_check(&s, 1);
		wait[i] = now_ns() - t0;
		allocs += heap_allocs - before;
		rt2_xdata_fini(&x);
		prepare_ns(&g, rs, nr, &x, &s);
	}
	printf("rt2 relations: %u nodes, %u relations (%u per free), %u reps, medians\n",
	       n, nr, per, reps);
	printf("prepare, grouped, rows sorted   %10.3f ms\n",
	       median(vso, reps) / 1e6);
	printf("prepare, grouped, rows unsorted %10.3f ms\n",
	       median(vgr, reps) / 1e6);
	printf("prepare, shuffled               %10.3f ms\n",
	       median(vsh, reps) / 1e6);
	printf("validate (independent check)    %10.3f ms\n",
	       median(val, reps) / 1e6);
	printf("baseline: read the relations    %10.3f ms\n",
	       median(rd, reps) / 1e6);
	printf("baseline: bare counting sort    %10.3f ms (shuffled)\n",
	       median(cs, reps) / 1e6);
	printf("structural memory               %10zu B\n",
	       rt2_xdata_bytes(&x) + sizeof(s));
	printf("one relation occurrence         %10.2f ns\n",
	       (double)median(occ, reps) / nr);
	printf("unrelated node event            %10.2f ns\n",
	       (double)median(unrel, reps) / (2.0 * n));
	printf("immediate wait                  %10.2f ns\n",
	       (double)median(wait, reps) / n);
#ifdef __SANITIZE_ADDRESS__
	printf("heap allocations in events      (not counted under ASan)\n");
	(void)allocs;
#else
	printf("heap allocations in events      %10lu\n", allocs);
#endif
	rt2_xdata_fini(&x);
	free(boff);
	free(bcol);
	free(r);
	free(rg);
	free(rs);
	rt2_graph_fini(&g);
	return sink == -1;
}
