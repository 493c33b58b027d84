// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-rt2: what the rt2 executor costs per node, beside baselines
 * measured in the same run.
 *
 *   snpu-bench-rt2 [-d N] [-r ROUNDS] [-b NODES] [-H]
 *
 * Synthetic rows: execution graphs of the do-nothing kernels (Empty on the
 * normal worker, EmptyMemory on the memory worker, EmptyLaunch on the
 * launch worker, in turn) built with rt2_build_node()/rt2_build_edge(), of
 * 64 and 1024 nodes, in three shapes:
 *
 *   indep    no edges: each worker drains its own nodes
 *   chain    node i waits for node i - 1: in three-worker mode every edge
 *            hands over to another worker (the worst case)
 *   random   up to three edges into each node from random earlier nodes
 *
 * run with one thread, with three workers (the default: the caller runs
 * the graph, helpers only when they pay) and with three workers whose
 * helpers take part from the start (SNPU_RT2_EXEC_PARALLEL: a helper is
 * woken whenever another worker has ready work, so nodes move between
 * threads). For each row a round times
 * as many runs of snpu_rt2_exec_run() as make about NODES nodes (200000)
 * and, as the baseline, as many passes of a plain loop that calls the
 * same kernel functions on the same nodes through the registry, in ID
 * order (what any executor has to do at least). The medians of ROUNDS
 * rounds (11) are printed, in ns per node, wall clock, and their
 * difference, the executor's overhead: scheduling, per-run reset, the
 * final device drain (nothing to wait for here) and, with three workers,
 * the hand-overs between workers (and between threads, when helpers run).
 *
 * The real-work row: a model of a matmul (16 x 32 by 32 x 16, a
 * parameter), an add and a relu, with two H2D inputs and a D2H output,
 * per run. Its baseline is the same device tasks, recorded from the
 * executor's first run and submitted again in the same order and the same
 * batches through the same device interface, then one wait: the device's
 * work and the transport without the executor. ROUNDS x NODES / 200 runs
 * and as many replays, in turn, each timed alone; the medians.
 *
 * A malloc, calloc, realloc, aligned_alloc and posix_memalign of this
 * program count every heap allocation of the process: the timed runs (all
 * after each executor's first run) must make none (the host-only device's
 * device memory, heap memory there, aside). The "dev" column counts the
 * device allocations of the timed runs: without a pool limit the pool
 * grows when a run's timing needs a block more than the runs before did,
 * which helpers running in parallel can do. The real-work rows' "recyc"
 * counts the pool's recycles (each a wait and a stream sync) in the timed
 * runs: none without a limit. The program exits 1 if
 * they do, 2 if the counter missed the allocations of the executors'
 * creation (it would prove nothing), 3 on an error. Timing never changes
 * the exit status.
 *
 * The library is compiled into this program: the graphs of empty kernels
 * need rt2's internal API (lib/rt2/rt2.h). Without -H it runs on the
 * module (device N, 0 by default) through the ring; with -H, when built
 * as build/bench/rt2_bench with the host-only device of the unit tests
 * (lib/tests/rt2/hostdev.c, -DSNPU_BENCH_HOSTDEV), natively without the
 * module.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"
#include "snpu_rt2.h"
#include "../rt2/rt2.h"
#include "bench.h"
#ifdef SNPU_BENCH_HOSTDEV
#include "../tests/rt2/hostdev.h"
#endif

#define MAX_ROUNDS	1001

/* ---- allocation counter ------------------------------------------- */

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);

static atomic_ulong allocs;

static void counted(void)
{
	atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
}

void *malloc(size_t size)
{
	counted();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	counted();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	counted();
	return __libc_realloc(p, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	counted();
	return __libc_memalign(align, size);
}

int posix_memalign(void **p, size_t align, size_t size)
{
	counted();
	*p = __libc_memalign(align, size);
	return *p ? 0 : ENOMEM;
}

static unsigned long alloc_count(void)
{
	return atomic_load_explicit(&allocs, memory_order_relaxed);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-rt2: %s: %s\n", what, strerror(-err));
	exit(3);
}

/* ---- a device interface that records one run's tasks -------------- */

#define REC_TASKS	64

/*
 * Forwards every call to @in; while @on, keeps the tasks submitted and
 * where each submit call ended, for the real-work row's baseline.
 */
struct rec_dev {
	struct snpu_rt2_dev head;
	struct snpu_rt2_dev *in;
	bool on;
	unsigned int ntasks, ncalls;
	struct snpu_task tasks[REC_TASKS];
	unsigned int end[REC_TASKS];
};

static struct snpu_rt2_dev *rec_in(struct snpu_rt2_dev *d)
{
	return ((struct rec_dev *)d)->in;
}

static int rec_mem_alloc(struct snpu_rt2_dev *d, uint64_t bytes,
			 uint64_t *addr)
{
	return rec_in(d)->ops->mem_alloc(rec_in(d), bytes, addr);
}

static int rec_mem_free(struct snpu_rt2_dev *d, uint64_t addr)
{
	return rec_in(d)->ops->mem_free(rec_in(d), addr);
}

static int rec_host_alloc(struct snpu_rt2_dev *d, size_t bytes, void **ptr,
			  uint32_t *handle)
{
	return rec_in(d)->ops->host_alloc(rec_in(d), bytes, ptr, handle);
}

static void rec_host_free(struct snpu_rt2_dev *d, void *ptr, size_t bytes,
			  uint32_t handle)
{
	rec_in(d)->ops->host_free(rec_in(d), ptr, bytes, handle);
}

static int rec_queue_create(struct snpu_rt2_dev *d, struct rt2_dev_queue *q)
{
	return rec_in(d)->ops->queue_create(rec_in(d), q);
}

static void rec_queue_destroy(struct snpu_rt2_dev *d, struct rt2_dev_queue *q)
{
	rec_in(d)->ops->queue_destroy(rec_in(d), q);
}

static int rec_submit(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
		      const struct snpu_task *tasks, unsigned int count)
{
	struct rec_dev *r = (struct rec_dev *)d;

	if (r->on) {
		if (r->ntasks + count > REC_TASKS)
			return -ENOSPC;
		memcpy(&r->tasks[r->ntasks], tasks, count * sizeof(*tasks));
		r->ntasks += count;
		r->end[r->ncalls++] = r->ntasks;
	}
	return r->in->ops->submit(r->in, q, tasks, count);
}

static int rec_wait(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	return rec_in(d)->ops->wait(rec_in(d), q);
}

static int rec_recover(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	return rec_in(d)->ops->recover(rec_in(d), q);
}

static int rec_h2d(struct snpu_rt2_dev *d, uint64_t dst, const void *src,
		   size_t n)
{
	return rec_in(d)->ops->h2d(rec_in(d), dst, src, n);
}

static int rec_attached_stream(struct snpu_rt2_dev *d, const char *key,
			       uint32_t *stream)
{
	return rec_in(d)->ops->attached_stream(rec_in(d), key, stream);
}

static int rec_event_create(struct snpu_rt2_dev *d, uint32_t *event)
{
	return rec_in(d)->ops->event_create(rec_in(d), event);
}

static void rec_event_destroy(struct snpu_rt2_dev *d, uint32_t event)
{
	rec_in(d)->ops->event_destroy(rec_in(d), event);
}

static void rec_close(struct snpu_rt2_dev *d)
{
}

static const struct rt2_dev_ops rec_ops = {
	.mem_alloc = rec_mem_alloc,
	.mem_free = rec_mem_free,
	.host_alloc = rec_host_alloc,
	.host_free = rec_host_free,
	.queue_create = rec_queue_create,
	.queue_destroy = rec_queue_destroy,
	.submit = rec_submit,
	.wait = rec_wait,
	.recover = rec_recover,
	.h2d = rec_h2d,
	.attached_stream = rec_attached_stream,
	.event_create = rec_event_create,
	.event_destroy = rec_event_destroy,
	.close = rec_close,
};

/* ---- synthetic graphs ---------------------------------------------- */

enum shape { INDEP, CHAIN, RANDOM, NSHAPES };

static const char *const shape_name[NSHAPES] = { "indep", "chain", "random" };

static unsigned int rnd(unsigned int *st)
{
	*st = *st * 1103515245U + 12345U;
	return (*st >> 16) & 0x7fff;
}

static struct snpu_rt2_exec *empty_graph(struct snpu_rt2_dev *dev,
					 enum shape sh, unsigned int nodes,
					 unsigned int flags)
{
	static const unsigned int kinds[3] = {
		RT2_K_EMPTY, RT2_K_EMPTY_MEMORY, RT2_K_EMPTY_LAUNCH };
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct rt2_build b = { .flags = flags };
	struct snpu_rt2_exec *e;
	unsigned int i, j, st = 12345;
	int id, ret = 0;

	for (i = 0; i < nodes && !ret; i++) {
		id = rt2_build_node(&b, kinds[i % 3], -1, (int32_t)i);
		if (id < 0)
			die("rt2_build_node", id);
		if (sh == CHAIN && i)
			ret = rt2_build_edge(&b, i - 1, i);
		for (j = 0; sh == RANDOM && j < 3 && i && !ret; j++)
			if (rnd(&st) % 2)
				ret = rt2_build_edge(&b, rnd(&st) % i, i);
	}
	if (!ret)
		ret = rt2_exec_create_graph(NULL, dev, &o, &b, &e);
	rt2_build_fini(&b);
	if (ret)
		die("rt2_exec_create_graph", ret);
	return e;
}

/* The baseline: the same kernels on the same nodes, in a plain loop. */
__attribute__((noinline))
static int plain_loop(struct snpu_rt2_exec *e)
{
	const struct rt2_node *n = e->g.nodes;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < e->g.nnodes; i++)
		ret |= rt2_kernels[n[i].kernel].run(e, &n[i]);
	return ret;
}

struct row {
	double exec, base;	/* ns per node (or per run: real work) */
	unsigned long allocs;	/* heap, the device memory of -H's aside */
	unsigned long dev;	/* device allocations */
	unsigned long recycles;	/* the pool's recycles (wait, sync) */
};

/*
 * The host-only device's device memory is heap memory: its allocations
 * (counted by the device) are not the executor's heap allocations.
 */
#ifdef SNPU_BENCH_HOSTDEV
static struct hostdev *bench_hostdev;
#endif

static unsigned long dev_heap(void)
{
#ifdef SNPU_BENCH_HOSTDEV
	return bench_hostdev ? bench_hostdev->mem_allocs : 0;
#else
	return 0;
#endif
}

/* Heap allocations since @before (of alloc_count()), device memory aside. */
static unsigned long heap_since(unsigned long before, unsigned long dev)
{
	return alloc_count() - before - (dev_heap() - dev);
}

static unsigned long pool_allocs(const struct snpu_rt2_exec *e)
{
	struct snpu_rt2_pool_stats st;

	return snpu_rt2_exec_pool_stats(e, &st) ? 0 : st.dev_allocs;
}

static unsigned long pool_recycles(const struct snpu_rt2_exec *e)
{
	struct snpu_rt2_pool_stats st;

	return snpu_rt2_exec_pool_stats(e, &st) ? 0 : st.recycles;
}

static void synth_row(struct snpu_rt2_dev *dev, enum shape sh,
		      unsigned int nodes, unsigned int flags,
		      unsigned int rounds, unsigned int budget, uint64_t *v,
		      uint64_t *w, struct row *res)
{
	unsigned int runs = (budget + nodes - 1) / nodes, r, i;
	struct snpu_rt2_exec *e = empty_graph(dev, sh, nodes, flags);
	unsigned long before, dheap, dpool;
	uint64_t t0;
	int ret;

	ret = snpu_rt2_exec_run(e);	/* the first run */
	if (ret)
		die("first run", ret);
	dheap = dev_heap();
	dpool = pool_allocs(e);
	before = alloc_count();
	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		for (i = 0; i < runs; i++) {
			ret = snpu_rt2_exec_run(e);
			if (ret)
				die("run", ret);
		}
		v[r] = now_ns() - t0;
		t0 = now_ns();
		for (i = 0; i < runs; i++)
			if (plain_loop(e))
				die("plain loop", -EPROTO);
		w[r] = now_ns() - t0;
	}
	res->allocs = heap_since(before, dheap);
	res->dev = pool_allocs(e) - dpool;
	res->exec = (double)median(v, rounds) / ((double)runs * nodes);
	res->base = (double)median(w, rounds) / ((double)runs * nodes);
	snpu_rt2_exec_destroy(e);
}

/* ---- the real-work model -------------------------------------------- */

#define RM	16U
#define RK	32U
#define RN	16U

static struct snpu_rt2_shape shape2(uint32_t a, uint32_t b)
{
	struct snpu_rt2_shape s = { .dtype = SNPU_RT2_F32, .ndim = 2 };

	s.dims[0] = a;
	s.dims[1] = b;
	return s;
}

static int op2(struct snpu_rt2_model *m, uint32_t type, int a, int b)
{
	struct snpu_rt2_op_desc d;

	memset(&d, 0, sizeof(d));
	d.type = type;
	d.nin = b < 0 ? 1 : 2;
	d.in[0] = a;
	d.in[1] = b;
	return snpu_rt2_model_op(m, &d);
}

static struct snpu_rt2_model *real_model(void)
{
	struct snpu_rt2_shape sx = shape2(RM, RK), sw = shape2(RK, RN);
	struct snpu_rt2_shape sb = shape2(RM, RN);
	static float wv[RK * RN];
	struct snpu_rt2_model *m;
	unsigned int i;
	int x, w, b, ret;

	for (i = 0; i < RK * RN; i++)
		wv[i] = (float)((int)(i % 9) - 4) / 8.0f;
	ret = snpu_rt2_model_create(&m);
	if (ret)
		die("model", ret);
	x = snpu_rt2_model_input(m, &sx);
	w = snpu_rt2_model_param(m, &sw, wv);
	b = snpu_rt2_model_input(m, &sb);
	ret = op2(m, SNPU_RT2_OP_MATMUL, x, w);
	ret = op2(m, SNPU_RT2_OP_ADD, ret, b);
	ret = op2(m, SNPU_RT2_OP_RELU, ret, -1);
	ret = snpu_rt2_model_output(m, ret);
	if (ret < 0)
		die("model ops", ret);
	return m;
}

/* The recorded tasks of one run again, batch by batch, then one wait. */
static int replay(struct rec_dev *rd, struct snpu_rt2_exec *e)
{
	unsigned int c, from = 0;
	int ret;

	for (c = 0; c < rd->ncalls; c++) {
		ret = rd->head.ops->submit(&rd->head, &e->dq, &rd->tasks[from],
					   rd->end[c] - from);
		if (ret)
			return ret;
		from = rd->end[c];
	}
	return rd->head.ops->wait(&rd->head, &e->dq);
}

static void real_row(struct snpu_rt2_dev *dev,
		     const struct snpu_rt2_model *m, unsigned int flags,
		     unsigned int rounds, unsigned int runs, uint64_t *v,
		     uint64_t *w, struct row *res, unsigned int *nodes,
		     unsigned int *tasks)
{
	struct snpu_rt2_exec_opts o = { .flags = flags };
	struct rec_dev rd = { .head.ops = &rec_ops, .head.info = dev->info,
			      .in = dev };
	unsigned long before, dheap, dpool, rec;
	struct snpu_rt2_exec *e;
	unsigned int i;
	float *x, *b;
	uint64_t t0;
	int ret;

	ret = snpu_rt2_exec_create(m, &rd.head, &o, &e);
	if (ret)
		die("exec create", ret);
	ret = snpu_rt2_exec_input(e, 0, NULL, (void **)&x);
	if (!ret)
		ret = snpu_rt2_exec_input(e, 1, NULL, (void **)&b);
	if (ret)
		die("exec input", ret);
	for (i = 0; i < RM * RK; i++)
		x[i] = (float)((int)(i % 13) - 6) / 4.0f;
	for (i = 0; i < RM * RN; i++)
		b[i] = (float)((int)(i % 5) - 2) / 2.0f;
	rd.on = true;
	ret = snpu_rt2_exec_run(e);	/* the first run, recorded */
	rd.on = false;
	if (ret)
		die("first run", ret);
	*nodes = e->g.nnodes;
	*tasks = rd.ntasks;
	/*
	 * Each run timed alone, a run and a replay in turn: the device's
	 * latency drifts (other guests, the host), and both see the same.
	 */
	dheap = dev_heap();
	dpool = pool_allocs(e);
	rec = pool_recycles(e);
	before = alloc_count();
	for (i = 0; i < rounds * runs; i++) {
		t0 = now_ns();
		ret = snpu_rt2_exec_run(e);
		v[i] = now_ns() - t0;
		if (ret)
			die("run", ret);
		t0 = now_ns();
		ret = replay(&rd, e);
		w[i] = now_ns() - t0;
		if (ret)
			die("replay", ret);
	}
	res->allocs = heap_since(before, dheap);
	res->dev = pool_allocs(e) - dpool;
	res->recycles = pool_recycles(e) - rec;
	res->exec = (double)median(v, rounds * runs);
	res->base = (double)median(w, rounds * runs);
	snpu_rt2_exec_destroy(e);
}

/* ---- main ------------------------------------------------------------ */

static const char *mode_name(unsigned int flags)
{
	if (flags & SNPU_RT2_EXEC_PARALLEL)
		return "3 w.eager";
	return flags ? "3 workers" : "1 thread";
}

#define NMODES	3

int main(int argc, char **argv)
{
	static const unsigned int sizes[2] = { 64, 1024 };
	static const unsigned int modes[NMODES] = {
		0, SNPU_RT2_EXEC_THREADS,
		SNPU_RT2_EXEC_THREADS | SNPU_RT2_EXEC_PARALLEL };
	unsigned int rounds = 11, budget = 200000, index = 0, runs;
	unsigned int sh, s, md, nodes = 0, tasks = 0;
	unsigned long total = 0, created;
	struct snpu_device *sdev = NULL;
	struct snpu_rt2_model *m;
	struct snpu_rt2_dev *dev;
	bool host = false;
	struct row res;
	uint64_t *v, *w;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:b:Hh")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			budget = strtoul(optarg, NULL, 10);
			break;
		case 'H':
			host = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [-b NODES] [-H]\n",
				argv[0]);
			return opt == 'h' ? 0 : 3;
		}
	}
	if (!rounds || rounds > MAX_ROUNDS || !budget) {
		fprintf(stderr, "snpu-bench-rt2: ROUNDS in 1..%d, NODES > 0\n",
			MAX_ROUNDS);
		return 3;
	}
	/* Enough for the real-work row's samples, one per run. */
	runs = budget / 200 ? budget / 200 : 1;
	v = calloc((size_t)rounds * runs, sizeof(*v));
	w = calloc((size_t)rounds * runs, sizeof(*w));
	if (!v || !w)
		return 3;

	if (host) {
#ifdef SNPU_BENCH_HOSTDEV
		struct hostdev *h;

		ret = hostdev_open(&h);
		if (ret)
			die("hostdev_open", ret);
		dev = &h->head;
		bench_hostdev = h;
#else
		fprintf(stderr, "snpu-bench-rt2: -H needs the host-only build (build/bench/rt2_bench)\n");
		return 3;
#endif
	} else {
		ret = snpu_open(index, 0, &sdev);
		if (ret)
			die("snpu_open", ret);
		ret = snpu_rt2_dev_open(sdev, 0, &dev);
		if (ret)
			die("snpu_rt2_dev_open", ret);
	}

	printf("rt2 executor, %s: empty kernels, median of %u rounds of about %u nodes, wall clock\n",
	       host ? "host-only device" : "the module through the ring",
	       rounds, budget);
	printf("%-7s %5s %-9s %10s %10s %10s %7s %4s\n", "graph", "nodes",
	       "mode", "ns/node", "loop ns", "overhead", "allocs", "dev");
	fflush(stdout);
	created = alloc_count();
	for (sh = 0; sh < NSHAPES; sh++) {
		for (s = 0; s < 2; s++) {
			for (md = 0; md < NMODES; md++) {
				synth_row(dev, sh, sizes[s], modes[md], rounds,
					  budget, v, w, &res);
				total += res.allocs;
				printf("%-7s %5u %-9s %10.1f %10.1f %10.1f %7lu %4lu\n",
				       shape_name[sh], sizes[s],
				       mode_name(modes[md]), res.exec,
				       res.base, res.exec - res.base,
				       res.allocs, res.dev);
				fflush(stdout);
			}
		}
	}
	created = alloc_count() - created - total;

	m = real_model();
	printf("\nreal work: relu(x[%ux%u] * w[%ux%u] + b), x and b H2D, the result D2H; median of %u runs, each timed\n",
	       RM, RK, RK, RN, rounds * runs);
	printf("%-9s %5s %5s %12s %12s %12s %9s %7s %4s %6s\n", "mode",
	       "nodes", "tasks", "us/run", "tasks us", "overhead us",
	       "ns/node", "allocs", "dev", "recyc");
	for (md = 0; md < NMODES; md++) {
		real_row(dev, m, modes[md], rounds, runs, v, w, &res, &nodes,
			 &tasks);
		total += res.allocs;
		printf("%-9s %5u %5u %12.2f %12.2f %12.2f %9.1f %7lu %4lu %6lu\n",
		       mode_name(modes[md]), nodes, tasks, res.exec / 1000,
		       res.base / 1000, (res.exec - res.base) / 1000,
		       (res.exec - res.base) / nodes, res.allocs, res.dev,
		       res.recycles);
		fflush(stdout);
	}
	snpu_rt2_model_destroy(m);
	if (host)
		dev->ops->close(dev);
	else
		snpu_rt2_dev_close(dev);
	if (sdev)
		snpu_close(sdev);
	free(v);
	free(w);

	if (!created) {
		fprintf(stderr, "snpu-bench-rt2: the allocation counter missed the executors' creation\n");
		return 2;
	}
	if (total) {
		fprintf(stderr, "snpu-bench-rt2: %lu heap allocations in runs after the first (want 0)\n",
			total);
		return 1;
	}
	printf("heap allocations during runs after the first: 0\n");
	return 0;
}
