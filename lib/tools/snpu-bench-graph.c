// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-graph: the cost of a graph launch per node, beside the same
 * tasks submitted one by one through the command queue in the same run,
 * and the effect of stitching back-to-back launches.
 *
 *   snpu-bench-graph [-d N] [-r ROUNDS] [-n NODES] [-l LAUNCHES] [-b BYTES]
 *                    [-c CHAINS] [-f]
 *
 * NODES a multiple of 512, LAUNCHES even; BYTES (default 4096) replaces
 * the 4 KiB of every region below (a multiple of 4, up to 64 KiB).
 *
 * node: graphs of 8, 64 and 512 nodes in min(CHAINS, nodes) parallel
 *       chains (CHAINS 8 unless told; 1 makes every graph one chain).
 *       Each node writes its own 4 KiB region: the first of a chain FILLs
 *       it with the chain's pattern, the others are ADD_I32 of the
 *       previous node's region and a region of ones, so the chain is a
 *       data flow (and an edge of the graph). All the regions are one
 *       allocation, bound as boundary slot 0. Per round, NODES nodes of
 *       work (default 2048) are run four ways:
 *         ring     the nodes as plain tasks on one stream through the SQ
 *                  (256 entries), 32 per submit, every CQE reaped;
 *         graph    launches of the graph through the same SQ, up to 32
 *                  per submit (back to back, so stitched);
 *         ioctl    launches through SNPU_IOC_SUBMIT, one per call, then
 *                  one synchronize;
 *         latency  from the first submit to the last completion of one
 *                  graph's worth of work: the N tasks through the SQ
 *                  against one launch through the SQ.
 *       ns per node of each, and graph / ring as the median of the
 *       rounds' ratios (the two run in alternating order). The results
 *       are checked once for each size and transport before timing.
 *       Beside them, the kernel's own cost: ns per region of one ADD_I32
 *       launch over NODES regions and at least 8 MiB at once ("work"). Then the same with
 *       regions of 64 bytes, where the task path outweighs the kernel,
 *       and with NOP launches (no work, no arguments; the same edges): a
 *       synthetic row, since a NOP task on an idle stream completes
 *       without a core and a NOP node does not.
 * fit:  one launch of N independent one-block nodes (FILLs of BYTES each
 *       into their own region, or NOPs) for N = 1, 8, 64, 512, 4096,
 *       back to back through the SQ, against the same N nodes as ring
 *       entries: ns per launch and per graph's worth of tasks, and the
 *       least-squares line fixed + N x per-node of each side. -f runs
 *       only this part.
 * stitch: LAUNCHES (default 100) back-to-back launches, one
 *       SNPU_IOC_SUBMIT, then one synchronize, of graphs whose
 *       consecutive launches are independent but for node i against node
 *       i: every node is ADD_I32 of its chain's seed and the ones (read
 *       only) into its own region, so it conflicts (write after write)
 *       with the same node of the previous launch and nothing else. Two
 *       shapes: 8 chains of 8 nodes, and a ragged one, a chain of 48 and
 *       7 of 2, whose long chain is the critical path. Stitched: every
 *       launch is of one graph. Unstitched: two graphs with identical
 *       definitions alternate (B A B A ...), so no launch directly
 *       follows a launch of its own graph. The counters of
 *       /sys/kernel/debug/snpu/snpuN/graph_stats (stitched,
 *       hazard_visits, hazard_invalid) are read around every run.
 *
 * Medians of ROUNDS rounds (default 7); each figure of a round is paired
 * with its baseline, measured in the same round.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "snpu.h"
#include "bench.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_CHAINS	8
#define RING_ENTRIES	256
#define RING_BATCH	32
#define SMALL		64	/* bytes a node writes in the small rows */
#define FLOOR_BYTES	(8u << 20)	/* the least work_floor() adds */

/*
 * Slot 0 of a graph whose nodes write @rb bytes each: the ones at 0, one
 * seed per chain, then the nodes' regions.
 */
#define ONES		0
#define SEEDS(rb)	((uint64_t)(rb))
#define DATA(rb)	((1 + MAX_CHAINS) * (uint64_t)(rb))

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-graph: %s: %s\n", what, strerror(-err));
	exit(1);
}

static void *zalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("calloc", -ENOMEM);
	return p;
}

enum work {
	WORK_CHAIN,	/* FILL, then ADD_I32 of the previous region and ones */
	WORK_INDEP,	/* ADD_I32 of the chain's seed and ones, each node */
	WORK_NOP,	/* NOP launches: no work, no argument */
};

/*
 * A graph and the same work as plain tasks. Nodes are laid out level by
 * level: the j-th node of every chain that has one, then the (j+1)-th, so
 * a node's predecessor (the previous node of its chain) has a lower index.
 */
struct bgraph {
	unsigned int n, edges, chains;
	unsigned int region;		/* bytes each node writes */
	struct snpu_graph_node *nodes;
	uint32_t *fanin_offsets, *fanin;
	struct snpu_task *tasks;	/* stream and addresses filled in */
	uint32_t *expect;		/* each node's words after a run */
	uint64_t slot_bytes;
	uint64_t base;			/* the allocation bound to slot 0 */
	uint32_t handle[2];		/* two graphs of this definition */
};

static uint32_t pattern(unsigned int chain)
{
	return 0x01000000u * (chain + 1);
}

static uint32_t seed(unsigned int chain)
{
	return 0x00100000u * (chain + 1);
}

/* Node @i's kernel task, with device offsets (@base 0) or addresses. */
static void node_task(struct snpu_task *t, enum work w, int first,
		      uint64_t base, uint64_t dst, uint64_t src,
		      unsigned int chain, unsigned int region)
{
	struct snpu_kernel_arg a[3];

	if (w == WORK_NOP) {
		snpu_prep_launch(t, 0, SNPU_KERNEL_NOP, 1, NULL, 0);
		return;
	}
	if (w == WORK_CHAIN && first) {
		a[0] = snpu_arg_buf(base + dst, region);
		a[1] = snpu_arg_u64(pattern(chain));
		snpu_prep_launch(t, 0, SNPU_KERNEL_FILL, 1, a, 2);
		return;
	}
	a[0] = snpu_arg_buf(base + dst, region);
	a[1] = snpu_arg_buf(base + src, region);
	a[2] = snpu_arg_buf(base + ONES, region);
	snpu_prep_launch(t, 0, SNPU_KERNEL_ADD_I32, 1, a, 3);
}

static int graph_create(int fd, const struct bgraph *g, uint32_t *handle)
{
	struct snpu_graph_create c = {
		.size = sizeof(c),
		.nodes_count = g->n,
		.edges_count = g->edges,
		.slots_count = 1,
		.node_size = sizeof(struct snpu_graph_node),
		.nodes = (uintptr_t)g->nodes,
		.fanin_offsets = (uintptr_t)g->fanin_offsets,
		.fanin = g->edges ? (uintptr_t)g->fanin : 0,
		.slot_bytes = (uintptr_t)&g->slot_bytes,
	};

	if (ioctl(fd, SNPU_IOC_GRAPH_CREATE, &c) < 0)
		return -errno;
	*handle = c.graph;
	return 0;
}

static int graph_destroy(int fd, uint32_t handle)
{
	struct snpu_handle_op op = { .size = sizeof(op), .handle = handle };

	return ioctl(fd, SNPU_IOC_GRAPH_DESTROY, &op) < 0 ? -errno : 0;
}

/*
 * Build the graph of @chains chains of @len[c] nodes, allocate and fill
 * its read-only regions (ones, seeds), create two graph handles of it.
 */
static void bgraph_init(struct snpu_device *dev, struct bgraph *g,
			enum work w, unsigned int region, unsigned int chains,
			const unsigned int *len, uint32_t stream)
{
	unsigned int words = region / 4;
	uint32_t last[MAX_CHAINS], depth[MAX_CHAINS] = { 0 };
	unsigned int c, i, j, maxlen = 0, n = 0;
	uint32_t *buf;
	int ret;

	memset(g, 0, sizeof(*g));
	for (c = 0; c < chains; c++) {
		n += len[c];
		if (len[c] > maxlen)
			maxlen = len[c];
	}
	g->n = n;
	g->chains = chains;
	g->region = region;
	g->nodes = zalloc(n, sizeof(*g->nodes));
	g->tasks = zalloc(n, sizeof(*g->tasks));
	g->expect = zalloc(n, sizeof(*g->expect));
	g->fanin_offsets = zalloc(n + 1, sizeof(uint32_t));
	g->fanin = zalloc(n, sizeof(uint32_t));
	g->slot_bytes = DATA(region) + (uint64_t)n * region;

	ret = snpu_mem_alloc(dev, g->slot_bytes, 0, 0, &g->base);
	if (ret)
		die("mem alloc", ret);
	buf = zalloc(words * (1 + MAX_CHAINS), sizeof(*buf));
	for (i = 0; i < words; i++)
		buf[i] = 1;
	for (c = 0; c < MAX_CHAINS; c++)
		for (i = 0; i < words; i++)
			buf[(c + 1) * words + i] = seed(c);
	ret = snpu_memcpy_h2d(dev, g->base, buf, DATA(region));
	if (ret)
		die("memcpy h2d", ret);
	free(buf);

	i = 0;
	for (j = 0; j < maxlen; j++) {
		for (c = 0; c < chains; c++) {
			struct snpu_graph_node *node = &g->nodes[i];
			uint64_t dst = DATA(region) + (uint64_t)i * region;
			uint64_t src = w == WORK_INDEP ?
				       SEEDS(region) + c * region :
				       DATA(region) + (uint64_t)last[c] * region;

			if (j >= len[c])
				continue;
			node_task(&node->task, w, !j, 0, dst, src, c, region);
			node_task(&g->tasks[i], w, !j, g->base, dst, src, c,
				  region);
			g->tasks[i].stream = stream;
			if (w != WORK_NOP) {
				node->ref[0] = SNPU_GRAPH_REF_SLOT(0);
				if (w == WORK_INDEP || j) {
					node->ref[1] = SNPU_GRAPH_REF_SLOT(0);
					node->ref[2] = SNPU_GRAPH_REF_SLOT(0);
				}
			}
			if (w == WORK_CHAIN)
				g->expect[i] = pattern(c) + depth[c];
			else if (w == WORK_INDEP)
				g->expect[i] = seed(c) + 1;
			if (j)
				g->fanin[g->edges++] = last[c];
			g->fanin_offsets[i + 1] = g->edges;
			depth[c]++;
			last[c] = i++;
		}
	}

	for (i = 0; i < 2; i++) {
		ret = graph_create(snpu_device_fd(dev), g, &g->handle[i]);
		if (ret)
			die("SNPU_IOC_GRAPH_CREATE", ret);
	}
}

static void bgraph_fini(struct snpu_device *dev, struct bgraph *g)
{
	unsigned int i;

	for (i = 0; i < 2; i++)
		graph_destroy(snpu_device_fd(dev), g->handle[i]);
	snpu_mem_free(dev, g->base);
	free(g->nodes);
	free(g->tasks);
	free(g->expect);
	free(g->fanin_offsets);
	free(g->fanin);
}

static void prep_graph(struct snpu_task *t, uint32_t stream, uint32_t handle,
		       uint64_t slot0)
{
	memset(t, 0, sizeof(*t));
	t->op = SNPU_OP_GRAPH;
	t->stream = stream;
	t->graph.graph = handle;
	t->graph.slots[0] = slot0;
}

/* Zero the nodes' regions, so that a run's results can be checked. */
static void bgraph_clear(struct snpu_device *dev, const struct bgraph *g)
{
	uint64_t data = DATA(g->region);
	int ret = snpu_memset(dev, g->base + data, 0, g->slot_bytes - data);

	if (ret)
		die("memset", ret);
}

/* Every word of every node's region holds what the node computes. */
static void bgraph_check(struct snpu_device *dev, const struct bgraph *g,
			 const char *how)
{
	unsigned int i, k, words = g->region / 4;
	uint32_t *buf = zalloc(g->n, g->region);
	int ret;

	ret = snpu_memcpy_d2h(dev, buf, g->base + DATA(g->region),
			      (size_t)g->n * g->region);
	if (ret)
		die("memcpy d2h", ret);
	for (i = 0; i < g->n; i++)
		for (k = 0; k < words; k++)
			if (buf[i * words + k] != g->expect[i]) {
				fprintf(stderr, "snpu-bench-graph: %s, %u nodes:\n",
					how, g->n);
				fprintf(stderr, "  node %u word %u is %#x, not %#x\n",
					i, k, buf[i * words + k], g->expect[i]);
				exit(1);
			}
	free(buf);
}

/*
 * ns per entry: @count entries through the SQ, entry i a copy of
 * tmpl[i % ntmpl], @batch per submit, at most the SQ's entries in flight
 * (waiting for half of them whenever the window is full), every CQE
 * reaped and checked.
 */
static uint64_t ring_run(struct snpu_ring *ring, const struct snpu_task *tmpl,
			 unsigned int ntmpl, unsigned int batch,
			 unsigned int count)
{
	unsigned int sent = 0, done = 0, i;
	uint64_t t0 = now_ns();
	struct snpu_cqe *cqe;
	int ret;

	while (done < count) {
		while (sent < count && sent - done < ring->sq.entries) {
			for (i = 0; i < batch && sent + i < count &&
			     sent + i - done < ring->sq.entries; i++) {
				struct snpu_task *sqe = snpu_ring_get_sqe(ring);

				/* The kernel still copies earlier entries. */
				if (!sqe)
					break;
				*sqe = tmpl[(sent + i) % ntmpl];
				sqe->user_data = sent + i;
			}
			sent += i;
			ret = snpu_ring_submit(ring);
			if (ret < 0)
				die("ring submit", ret);
			if (!i)
				break;
		}
		if (snpu_ring_peek_cqe(ring, &cqe)) {
			unsigned int want = (sent - done + 1) / 2;

			ret = snpu_ring_submit_and_wait(ring, want);
			if (ret < 0)
				die("ring wait", ret);
			continue;
		}
		do {
			if (cqe->result)
				die("ring task", cqe->result);
			snpu_ring_cqe_seen(ring, cqe);
			done++;
		} while (!snpu_ring_peek_cqe(ring, &cqe));
	}
	return now_ns() - t0;
}

/* ns of @count launches of @t, one SNPU_IOC_SUBMIT each, one synchronize. */
static uint64_t ioctl_run(struct snpu_device *dev, const struct snpu_task *t,
			  unsigned int count)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < count; i++) {
		ret = snpu_submit(dev, t, 1, NULL);
		if (ret)
			die("submit", ret);
	}
	ret = snpu_stream_synchronize(dev, t->stream, -1);
	if (ret)
		die("synchronize", ret);
	return now_ns() - t0;
}

/* ---- graph_stats ------------------------------------------------------- */

struct gstats {
	uint64_t launches, stitched, nodes, visits, invalid;
	int ok;
};

static void gstats_read(unsigned int index, struct gstats *s)
{
	char path[64], name[32];
	unsigned long long v;
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "/sys/kernel/debug/snpu/snpu%u/graph_stats",
		 index);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%31s %llu", name, &v) == 2) {
		if (!strcmp(name, "launches"))
			s->launches = v;
		else if (!strcmp(name, "stitched"))
			s->stitched = v;
		else if (!strcmp(name, "nodes"))
			s->nodes = v;
		else if (!strcmp(name, "hazard_visits"))
			s->visits = v;
		else if (!strcmp(name, "hazard_invalid"))
			s->invalid = v;
	}
	s->ok = 1;
	fclose(f);
}

static void gstats_sub(struct gstats *d, const struct gstats *a,
		       const struct gstats *b)
{
	d->launches = b->launches - a->launches;
	d->stitched = b->stitched - a->stitched;
	d->nodes = b->nodes - a->nodes;
	d->visits = b->visits - a->visits;
	d->invalid = b->invalid - a->invalid;
	d->ok = a->ok && b->ok;
}

/* ---- per node ---------------------------------------------------------- */

enum node_metric {
	NM_RING, NM_GRAPH, NM_IOCTL, NM_RATIO, NM_IOCTL_RATIO,
	NM_RING_LAT, NM_GRAPH_LAT, NM_LAT_RATIO, NM_METRICS
};

/* One row: a graph of @n nodes against its tasks through the ring. */
static void node_row(struct snpu_device *dev, struct snpu_ring *ring,
		     uint32_t stream, enum work w, unsigned int region,
		     uint64_t work_ns, unsigned int n, unsigned int rounds,
		     unsigned int total, unsigned int maxchains)
{
	unsigned int chains = n < maxchains ? n : maxchains;
	unsigned int len[MAX_CHAINS], c, r, k, launches = total / n;
	uint64_t *m[NM_METRICS], ns_ring, ns_graph = 0;
	struct snpu_task launch;
	struct bgraph g;

	for (c = 0; c < chains; c++)
		len[c] = n / chains;
	bgraph_init(dev, &g, w, region, chains, len, stream);
	prep_graph(&launch, stream, g.handle[0], g.base);

	/* The same results both ways, before anything is timed. */
	if (w != WORK_NOP) {
		bgraph_clear(dev, &g);
		ring_run(ring, g.tasks, n, RING_BATCH, n);
		bgraph_check(dev, &g, "ring");
		bgraph_clear(dev, &g);
		ring_run(ring, &launch, 1, RING_BATCH, 1);
		bgraph_check(dev, &g, "graph launch (ring)");
		bgraph_clear(dev, &g);
		ioctl_run(dev, &launch, 1);
		bgraph_check(dev, &g, "graph launch (SNPU_IOC_SUBMIT)");
	}

	for (k = 0; k < NM_METRICS; k++)
		m[k] = zalloc(rounds, sizeof(uint64_t));
	for (r = 0; r < rounds; r++) {
		/* Alternate which side runs first: drift weighs on both. */
		if (r & 1)
			ns_graph = ring_run(ring, &launch, 1, RING_BATCH,
					    launches);
		ns_ring = ring_run(ring, g.tasks, n, RING_BATCH, total);
		if (!(r & 1))
			ns_graph = ring_run(ring, &launch, 1, RING_BATCH,
					    launches);
		m[NM_RING][r] = ns_ring / total;
		m[NM_GRAPH][r] = ns_graph / total;
		m[NM_IOCTL][r] = ioctl_run(dev, &launch, launches) / total;
		m[NM_RATIO][r] = ns_graph * 1000 / ns_ring;
		m[NM_IOCTL_RATIO][r] = m[NM_IOCTL][r] * 1000 /
				       (m[NM_RING][r] ? m[NM_RING][r] : 1);
		m[NM_RING_LAT][r] = ring_run(ring, g.tasks, n, RING_BATCH, n);
		m[NM_GRAPH_LAT][r] = ring_run(ring, &launch, 1, 1, 1);
		m[NM_LAT_RATIO][r] = m[NM_GRAPH_LAT][r] * 1000 /
				     m[NM_RING_LAT][r];
	}
	if (w == WORK_NOP)
		printf("%-4s %5s %5u %6u %5s", "nop", "-", n, chains, "-");
	else
		printf("%-4s %5u %5u %6u %5llu", "real", region, n, chains,
		       (unsigned long long)work_ns);
	printf(" %6llu %6llu %6.3fx %6llu %6.3fx %9llu %9llu %6.3fx\n",
	       (unsigned long long)median(m[NM_RING], rounds),
	       (unsigned long long)median(m[NM_GRAPH], rounds),
	       (double)median(m[NM_RATIO], rounds) / 1000,
	       (unsigned long long)median(m[NM_IOCTL], rounds),
	       (double)median(m[NM_IOCTL_RATIO], rounds) / 1000,
	       (unsigned long long)median(m[NM_RING_LAT], rounds),
	       (unsigned long long)median(m[NM_GRAPH_LAT], rounds),
	       (double)median(m[NM_LAT_RATIO], rounds) / 1000);
	for (k = 0; k < NM_METRICS; k++)
		free(m[k]);
	bgraph_fini(dev, &g);
}

/*
 * The kernels' own cost: ns per @region bytes of one ADD_I32 launch
 * (block_dim 1) over at least @total regions and 8 MiB at once (less if
 * one block may not do that much), so that the launch's own latency
 * weighs little; median of @rounds. The cost of a node can then be split
 * into its work and its trip through the task path.
 */
static uint64_t work_floor(struct snpu_device *dev, uint32_t stream,
			   unsigned int region, unsigned int rounds,
			   unsigned int total)
{
	uint64_t *v = zalloc(rounds, sizeof(*v));
	struct snpu_kernel_arg a[3];
	uint64_t bytes, addr, t0;
	struct snpu_task t;
	unsigned int r;
	int ret;

	if ((uint64_t)total * region < FLOOR_BYTES)
		total = FLOOR_BYTES / region;
	if ((uint64_t)total * (region / 4) > SNPU_KERNEL_BLOCK_WORK_MAX)
		total = SNPU_KERNEL_BLOCK_WORK_MAX / (region / 4);
	bytes = (uint64_t)total * region;
	ret = snpu_mem_alloc(dev, bytes, 0, 0, &addr);
	if (ret)
		die("mem alloc", ret);
	ret = snpu_memset(dev, addr, 0, bytes);
	if (ret)
		die("memset", ret);
	a[0] = snpu_arg_buf(addr, bytes);
	a[1] = snpu_arg_buf(addr, bytes);
	a[2] = snpu_arg_buf(addr, bytes);
	snpu_prep_launch(&t, stream, SNPU_KERNEL_ADD_I32, 1, a, 3);
	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		ret = snpu_submit(dev, &t, 1, NULL);
		if (ret)
			die("submit", ret);
		ret = snpu_stream_synchronize(dev, stream, -1);
		if (ret)
			die("synchronize", ret);
		v[r] = (now_ns() - t0) / total;
	}
	t0 = median(v, rounds);
	free(v);
	snpu_mem_free(dev, addr);
	return t0;
}

static void node_bench(unsigned int index, unsigned int rounds,
		       unsigned int total, unsigned int region,
		       unsigned int maxchains)
{
	static const unsigned int sizes[] = { 8, 64, 512 };
	unsigned int regions[2] = { region, SMALL }, b, s;
	struct snpu_device *dev;
	struct snpu_ring ring;
	uint32_t stream;
	uint64_t work;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	ret = snpu_ring_init(dev, RING_ENTRIES, 0, &ring);
	if (ret)
		die("ring init", ret);

	printf("graph per node: %u nodes of work a round, ns per node, medians of %u rounds\n",
	       total, rounds);
	printf("  real: chains of FILL, then ADD_I32 of the previous node's region\n");
	printf("  and ones, each node writing its own region of bytes\n");
	printf("  work: the kernel alone, ns per region in one ADD_I32 of many\n");
	printf("  ring: the nodes as tasks through the SQ (%u entries, %u per submit)\n",
	       RING_ENTRIES, RING_BATCH);
	printf("  graph: launches through the same SQ; ioctl: one launch per SNPU_IOC_SUBMIT\n");
	printf("  lat: ns from submit to the last completion of one graph's worth\n");
	printf("  x: median of the rounds' ratios to ring\n");
	printf("  nop: NOP launches, synthetic: a NOP task on an idle stream takes\n");
	printf("  no core, a NOP node does\n");
	printf("%-4s %5s %5s %6s %5s %6s %6s %7s %6s %7s %9s %9s %7s\n",
	       "", "bytes", "nodes", "chains", "work", "ring", "graph",
	       "x ring", "ioctl", "x ring", "ring lat", "graph lat", "x");
	for (b = 0; b < (region == SMALL ? 1 : 2); b++) {
		work = work_floor(dev, stream, regions[b], rounds, total);
		for (s = 0; s < ARRAY_SIZE(sizes); s++)
			node_row(dev, &ring, stream, WORK_CHAIN, regions[b],
				 work, sizes[s], rounds, total, maxchains);
	}
	for (s = 0; s < ARRAY_SIZE(sizes); s++)
		node_row(dev, &ring, stream, WORK_NOP, 4, 0, sizes[s], rounds,
			 total, maxchains);
	snpu_ring_exit(&ring);
	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
}

/* ---- fixed and per-node cost ------------------------------------------- */

/*
 * A graph of @n independent nodes, each a one-block FILL of its own
 * @region bytes of slot 0 (or a NOP, @region 0), and the same nodes as
 * tasks on @stream; nodes of launch k + 1 conflict only with the same
 * node of launch k, so back-to-back launches are stitched.
 */
struct fgraph {
	unsigned int n, region;
	struct snpu_task *tasks;
	uint64_t base;
	uint32_t handle;
};

static void fgraph_init(struct snpu_device *dev, struct fgraph *f,
			unsigned int n, unsigned int region, uint32_t stream)
{
	struct snpu_graph_node *nodes = zalloc(n, sizeof(*nodes));
	uint64_t bytes = (uint64_t)n * (region ? region : 4);
	struct snpu_graph_create c = {
		.size = sizeof(c), .nodes_count = n, .slots_count = 1,
		.node_size = sizeof(struct snpu_graph_node),
		.nodes = (uintptr_t)nodes, .slot_bytes = (uintptr_t)&bytes,
	};
	struct snpu_kernel_arg a[2];
	unsigned int i;
	int ret;

	memset(f, 0, sizeof(*f));
	f->n = n;
	f->region = region;
	f->tasks = zalloc(n, sizeof(*f->tasks));
	ret = snpu_mem_alloc(dev, bytes, 0, 0, &f->base);
	if (ret)
		die("mem alloc", ret);
	for (i = 0; i < n; i++) {
		if (!region) {
			snpu_prep_launch(&nodes[i].task, 0, SNPU_KERNEL_NOP, 1,
					 NULL, 0);
			snpu_prep_launch(&f->tasks[i], stream, SNPU_KERNEL_NOP,
					 1, NULL, 0);
			continue;
		}
		a[0] = snpu_arg_buf((uint64_t)i * region, region);
		a[1] = snpu_arg_u64(0x01000000u + i);
		snpu_prep_launch(&nodes[i].task, 0, SNPU_KERNEL_FILL, 1, a, 2);
		nodes[i].ref[0] = SNPU_GRAPH_REF_SLOT(0);
		a[0] = snpu_arg_buf(f->base + (uint64_t)i * region, region);
		snpu_prep_launch(&f->tasks[i], stream, SNPU_KERNEL_FILL, 1, a,
				 2);
	}
	if (ioctl(snpu_device_fd(dev), SNPU_IOC_GRAPH_CREATE, &c) < 0)
		die("SNPU_IOC_GRAPH_CREATE", -errno);
	f->handle = c.graph;
	free(nodes);
}

static void fgraph_fini(struct snpu_device *dev, struct fgraph *f)
{
	graph_destroy(snpu_device_fd(dev), f->handle);
	snpu_mem_free(dev, f->base);
	free(f->tasks);
}

/*
 * The regions zeroed, @t (@nt entries) run once through the ring, then
 * every region must hold its node's pattern.
 */
static void fgraph_check(struct snpu_device *dev, struct snpu_ring *ring,
			 const struct fgraph *f, const struct snpu_task *t,
			 unsigned int nt, const char *how)
{
	unsigned int i, k, words = f->region / 4;
	uint64_t bytes = (uint64_t)f->n * f->region;
	uint32_t *buf;
	int ret;

	if (!f->region)
		return;
	ret = snpu_memset(dev, f->base, 0, bytes);
	if (ret)
		die("memset", ret);
	ring_run(ring, t, nt, RING_BATCH, nt);
	buf = zalloc(f->n, f->region);
	ret = snpu_memcpy_d2h(dev, buf, f->base, bytes);
	if (ret)
		die("memcpy d2h", ret);
	for (i = 0; i < f->n; i++)
		for (k = 0; k < words; k++)
			if (buf[i * words + k] != 0x01000000u + i) {
				fprintf(stderr, "snpu-bench-graph: %s, %u nodes: node %u word %u is %#x\n",
					how, f->n, i, k, buf[i * words + k]);
				exit(1);
			}
	free(buf);
}

/* Least squares of y = a + b x over @n points: *a, *b. */
static void fit_line(const double *x, const double *y, unsigned int n,
		     double *a, double *b)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		sxx += x[i] * x[i];
		sxy += x[i] * y[i];
	}
	*b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	*a = (sy - *b * sx) / n;
}

#define FIT_SIZES	5

/*
 * One launch of N nodes against the same N nodes as ring entries (32 per
 * submit), for N = 1, 8, 64, 512, 4096: ns per launch and per graph's
 * worth of tasks (medians), and the least-squares line fixed + N x
 * per-node through each side's points.
 */
static void fit_bench(unsigned int index, unsigned int rounds,
		      unsigned int region)
{
	static const unsigned int sizes[FIT_SIZES] = { 1, 8, 64, 512, 4096 };
	unsigned int kinds[2] = { region, 0 }, k, s, r;
	double x[FIT_SIZES], yg[FIT_SIZES], yr[FIT_SIZES], a, b, ar, br;
	uint64_t *vg = zalloc(rounds, sizeof(uint64_t));
	uint64_t *vr = zalloc(rounds, sizeof(uint64_t));
	uint64_t *vx = zalloc(rounds, sizeof(uint64_t));
	struct snpu_device *dev;
	struct snpu_ring ring;
	struct snpu_task launch;
	uint32_t stream;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	ret = snpu_ring_init(dev, RING_ENTRIES, 0, &ring);
	if (ret)
		die("ring init", ret);
	printf("fixed and per-node cost: one launch of N independent one-block nodes\n");
	printf("  through the SQ (back to back, %u per submit) against the same N\n",
	       RING_BATCH);
	printf("  nodes as ring entries (%u per submit); ns per launch and per N\n",
	       RING_BATCH);
	printf("  tasks (medians of %u rounds), x: median of the rounds' ratios;\n",
	       rounds);
	printf("  fit: least squares of ns = fixed + N x per-node over the sizes\n");
	printf("%-10s %5s %10s %10s %8s %8s %7s\n", "nodes", "N", "graph",
	       "ring", "g/node", "r/node", "x");
	for (k = 0; k < 2; k++) {
		const char *kind = kinds[k] ? "fill" : "nop";

		for (s = 0; s < FIT_SIZES; s++) {
			unsigned int n = sizes[s];
			unsigned int launches = n >= 2048 ? 2 : 4096 / n;
			struct fgraph f;

			fgraph_init(dev, &f, n, kinds[k], stream);
			prep_graph(&launch, stream, f.handle, f.base);
			/* Checked, and warm: the instances, the job pool. */
			fgraph_check(dev, &ring, &f, &launch, 1, "graph");
			fgraph_check(dev, &ring, &f, f.tasks, n, "ring");
			ring_run(&ring, &launch, 1, RING_BATCH, launches);
			for (r = 0; r < rounds; r++) {
				uint64_t g = 0, t;

				if (r & 1)
					g = ring_run(&ring, &launch, 1,
						     RING_BATCH, launches);
				t = ring_run(&ring, f.tasks, n, RING_BATCH,
					     n * launches);
				if (!(r & 1))
					g = ring_run(&ring, &launch, 1,
						     RING_BATCH, launches);
				vg[r] = g / launches;
				vr[r] = t / launches;
				vx[r] = g * 1000 / t;
			}
			x[s] = n;
			yg[s] = median(vg, rounds);
			yr[s] = median(vr, rounds);
			printf("%-10s %5u %10.0f %10.0f %8.0f %8.0f %6.3fx\n",
			       kind, n, yg[s], yr[s], yg[s] / n, yr[s] / n,
			       (double)median(vx, rounds) / 1000);
			fgraph_fini(dev, &f);
		}
		fit_line(x, yg, FIT_SIZES, &a, &b);
		fit_line(x, yr, FIT_SIZES, &ar, &br);
		printf("%-10s fit: graph %.0f ns + N x %.0f ns; ring %.0f ns + N x %.0f ns; per node %.3fx\n",
		       kind, a, b, ar, br, b / br);
	}
	snpu_ring_exit(&ring);
	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
	free(vg);
	free(vr);
	free(vx);
}

/* ---- stitch -------------------------------------------------------------- */

/* ns of @launches launches in one SNPU_IOC_SUBMIT, then one synchronize. */
static uint64_t stitch_run(struct snpu_device *dev, unsigned int index,
			   struct snpu_task *t, unsigned int launches,
			   struct gstats *d)
{
	struct gstats a, b;
	unsigned int tries;
	uint64_t t0, ns;
	int ret;

	gstats_read(index, &a);
	t0 = now_ns();
	ret = snpu_submit(dev, t, launches, NULL);
	if (ret)
		die("submit", ret);
	ret = snpu_stream_synchronize(dev, t->stream, -1);
	if (ret)
		die("synchronize", ret);
	ns = now_ns() - t0;
	/*
	 * A launch is counted when its job is given back, which may come
	 * just after the synchronize returns: wait for all of them.
	 */
	for (tries = 0; tries < 100; tries++) {
		gstats_read(index, &b);
		gstats_sub(d, &a, &b);
		if (!d->ok || d->launches >= launches)
			break;
		usleep(1000);
	}
	return ns;
}

enum stitch_metric {
	SM_ON, SM_OFF, SM_RATIO, SM_ON_STITCHED, SM_OFF_STITCHED,
	SM_VISITS, SM_METRICS
};

static void stitch_row(struct snpu_device *dev, unsigned int index,
		       uint32_t stream, const char *name, unsigned int region,
		       unsigned int chains, const unsigned int *len,
		       unsigned int rounds, unsigned int launches)
{
	struct snpu_task *on = zalloc(launches, sizeof(*on));
	struct snpu_task *off = zalloc(launches, sizeof(*off));
	uint64_t *m[SM_METRICS], ns_on = 0, ns_off = 0, invalid = 0;
	struct gstats d_on, d_off;
	unsigned int i, k, r;
	int stats = 1;
	struct bgraph g;

	bgraph_init(dev, &g, WORK_INDEP, region, chains, len, stream);
	for (i = 0; i < launches; i++) {
		prep_graph(&on[i], stream, g.handle[0], g.base);
		/*
		 * B first: the run before ends with A (a stitched run, or an
		 * unstitched one of an even count), so no launch of this run
		 * follows one of its own graph.
		 */
		prep_graph(&off[i], stream, g.handle[(i + 1) & 1], g.base);
	}
	bgraph_clear(dev, &g);
	stitch_run(dev, index, on, launches, &d_on);
	bgraph_check(dev, &g, "stitched launches");
	bgraph_clear(dev, &g);
	stitch_run(dev, index, off, launches, &d_off);
	bgraph_check(dev, &g, "alternated launches");
	invalid = d_on.invalid + d_off.invalid;

	for (k = 0; k < SM_METRICS; k++)
		m[k] = zalloc(rounds, sizeof(uint64_t));
	for (r = 0; r < rounds; r++) {
		if (r & 1)
			ns_off = stitch_run(dev, index, off, launches, &d_off);
		ns_on = stitch_run(dev, index, on, launches, &d_on);
		if (!(r & 1))
			ns_off = stitch_run(dev, index, off, launches, &d_off);
		stats &= d_on.ok && d_off.ok;
		m[SM_ON][r] = ns_on;
		m[SM_OFF][r] = ns_off;
		m[SM_RATIO][r] = ns_on * 1000 / ns_off;
		m[SM_ON_STITCHED][r] = d_on.stitched;
		m[SM_OFF_STITCHED][r] = d_off.stitched;
		m[SM_VISITS][r] = d_on.visits * 1000 / launches;
		/* Every run, both ways: no visit may be an invalid one. */
		invalid += d_on.invalid + d_off.invalid;
	}
	printf("%-9s %5u %6u %11llu %11llu %6.3fx",
	       name, g.n, chains,
	       (unsigned long long)median(m[SM_ON], rounds) / 1000,
	       (unsigned long long)median(m[SM_OFF], rounds) / 1000,
	       (double)median(m[SM_RATIO], rounds) / 1000);
	if (stats)
		printf(" %4llu/%-4llu %4llu/%-4llu %9.2f %8.3f %7llu\n",
		       (unsigned long long)median(m[SM_ON_STITCHED], rounds),
		       (unsigned long long)launches,
		       (unsigned long long)median(m[SM_OFF_STITCHED], rounds),
		       (unsigned long long)launches,
		       (double)median(m[SM_VISITS], rounds) / 1000,
		       (double)median(m[SM_VISITS], rounds) / 1000 / g.n,
		       (unsigned long long)invalid);
	else
		printf("  (no /sys/kernel/debug/snpu/snpu%u/graph_stats)\n",
		       index);
	for (k = 0; k < SM_METRICS; k++)
		free(m[k]);
	bgraph_fini(dev, &g);
	free(on);
	free(off);
}

static void stitch_bench(unsigned int index, unsigned int rounds,
			 unsigned int launches, unsigned int region)
{
	static const unsigned int equal[MAX_CHAINS] = {
		8, 8, 8, 8, 8, 8, 8, 8
	};
	static const unsigned int ragged[MAX_CHAINS] = {
		48, 2, 2, 2, 2, 2, 2, 2
	};
	struct snpu_device *dev;
	uint32_t stream;
	int ret;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	printf("stitch: %u launches in one SNPU_IOC_SUBMIT, then one synchronize\n",
	       launches);
	printf("  us per run, medians of %u rounds\n", rounds);
	printf("  nodes: ADD_I32 of read-only %u-byte regions into their own: node i\n",
	       region);
	printf("  conflicts only with node i of the launch before\n");
	printf("  stitched: one graph; unstitched: two graphs of the same definition\n");
	printf("  alternated (B A B A); x: median of the rounds' ratios\n");
	printf("  graph_stats deltas: stitched launches of each run, hazard visits\n");
	printf("  per launch and per node (stitched run), invalid visits (all runs)\n");
	printf("%-9s %5s %6s %11s %11s %7s %9s %9s %9s %8s %7s\n",
	       "graph", "nodes", "chains", "stitched", "unstitched", "x",
	       "stitched", "(alt.)", "visits", "/node", "invalid");
	stitch_row(dev, index, stream, "8x8", region, MAX_CHAINS, equal,
		   rounds, launches);
	stitch_row(dev, index, stream, "48+7x2", region, MAX_CHAINS, ragged,
		   rounds, launches);
	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
}

int main(int argc, char **argv)
{
	unsigned int rounds = 7, total = 2048, launches = 100, index = 0;
	unsigned int region = 4096, maxchains = MAX_CHAINS, only_fit = 0;
	struct snpu_device *dev;
	struct snpu_info info;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:n:l:b:c:fh")) != -1) {
		switch (opt) {
		case 'f':
			only_fit = 1;
			break;
		case 'b':
			region = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			maxchains = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			total = strtoul(optarg, NULL, 10);
			break;
		case 'l':
			launches = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [-n NODES] [-l LAUNCHES]\n",
				argv[0]);
			fprintf(stderr, "       [-b BYTES] [-c CHAINS] [-f]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!rounds || !total || total % 512 || launches < 2 || launches % 2 ||
	    launches > SNPU_SUBMIT_MAX || !region || region % 4 ||
	    region > 65536 || !maxchains || maxchains > MAX_CHAINS) {
		fprintf(stderr, "snpu-bench-graph: ROUNDS > 0, NODES a multiple of 512,\n");
		fprintf(stderr, "  LAUNCHES even, 2..%d, BYTES a multiple of 4 up to 65536,\n",
			SNPU_SUBMIT_MAX);
		fprintf(stderr, "  CHAINS 1..%d\n", MAX_CHAINS);
		return 2;
	}
	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_get_info(dev, &info);
	if (ret)
		die("get info", ret);
	snpu_close(dev);
	if (!(info.caps & SNPU_CAP_GRAPHS)) {
		fprintf(stderr, "snpu-bench-graph: the driver (ABI %u.%u) has no graphs\n",
			info.abi_major, info.abi_minor);
		return 1;
	}
	if (only_fit) {
		fit_bench(index, rounds, region);
		return 0;
	}
	node_bench(index, rounds, total, region, maxchains);
	fit_bench(index, rounds, region);
	stitch_bench(index, rounds, launches, region);
	return 0;
}
