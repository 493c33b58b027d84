// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * capture_bench: what graph capture costs the host, natively, with a fake
 * driver (the device's graph_ops) that does nothing: the library's own
 * work, no system call.
 *
 *   capture_bench [-r REPS]
 *
 * For bodies of 8, 64, 512 and 4096 nodes (launches, copies and memsets
 * on random overlapping ranges of 64 KiB, a task per snpu_submit()), it
 * times REPS times (21) and prints the median ns per node of:
 *
 *   check    the descriptor checks alone (snpu_rec_check(), the kernel's
 *            own, which every recorded task passes)
 *   record   snpu_graph_begin(), the body recorded, snpu_graph_end()
 *            (definition handed to the fake create, one launch)
 *   replay   snpu_graph_begin() of the cached key, per node of the body
 *
 * and the edges the recorder found. Time is the thread's CPU time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"
#include "../internal.h"
#include "../tools/bench.h"

#define MAX_REPS	1001
#define SPAN		65536ULL
#define BASE		0x100000ULL

static uint32_t edges_seen;

static int fake_create(struct snpu_device *dev,
		       const struct snpu_graph_desc *desc, uint32_t *graph)
{
	edges_seen = desc->edges_count;
	*graph = 1;
	return 0;
}

static int fake_destroy(struct snpu_device *dev, uint32_t graph)
{
	return 0;
}

static int fake_submit(struct snpu_device *dev, const struct snpu_task *t,
		       unsigned int count, uint64_t *seq)
{
	if (seq)
		*seq = count;
	return 0;
}

static const struct snpu_graph_ops fake_ops = {
	.create = fake_create,
	.destroy = fake_destroy,
	.submit = fake_submit,
	.caps = SNPU_CAP_GRAPHS,
};

static uint64_t rnd_at(unsigned int *seed, uint64_t bytes)
{
	return BASE + 4 * (rand_r(seed) % ((SPAN - bytes) / 4 + 1));
}

static void make_body(struct snpu_task *t, unsigned int n)
{
	unsigned int seed = n, i;
	uint64_t bytes;

	for (i = 0; i < n; i++) {
		bytes = 4 * (1 + rand_r(&seed) % 256);
		switch (rand_r(&seed) % 3) {
		case 0:
			snpu_prep_memset(&t[i], 1, rnd_at(&seed, bytes), 0,
					 bytes);
			break;
		case 1:
			snpu_prep_copy(&t[i], 1, SNPU_COPY_D2D,
				       rnd_at(&seed, bytes),
				       rnd_at(&seed, bytes), bytes);
			break;
		default: {
			struct snpu_kernel_arg a[3] = {
				snpu_arg_buf(rnd_at(&seed, bytes), bytes),
				snpu_arg_buf(rnd_at(&seed, bytes), bytes),
				snpu_arg_buf(rnd_at(&seed, bytes), bytes),
			};

			snpu_prep_launch(&t[i], 1, SNPU_KERNEL_ADD_I32, 1, a,
					 3);
		}
		}
	}
}

static int submit_all(struct snpu_device *dev, const struct snpu_task *t,
		      unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = snpu_submit(dev, &t[i], 1, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

static int check_all(const struct snpu_task *t, unsigned int n)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++)
		ret |= snpu_rec_check(&t[i], 0);
	return ret;
}

int main(int argc, char **argv)
{
	static const unsigned int sizes[] = { 8, 64, 512, 4096 };
	static uint64_t v[3][MAX_REPS];
	struct snpu_device *dev;
	struct snpu_task *body;
	unsigned int reps = 21, r, k, n;
	uint64_t t0, key = 0;
	int opt, ret;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			goto usage;
		reps = (unsigned int)atoi(optarg);
		if (!reps || reps > MAX_REPS)
			goto usage;
	}
	dev = calloc(1, sizeof(*dev));
	body = calloc(4096, sizeof(*body));
	if (!dev || !body)
		return 1;
	dev->fd = -1;
	snpu_graph_init(dev);
	dev->graph_ops = &fake_ops;

	printf("%-6s %8s %10s %10s %10s  (ns per node, median of %u)\n",
	       "nodes", "edges", "check", "record", "replay", reps);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		n = sizes[k];
		make_body(body, n);
		for (r = 0; r < reps; r++) {
			t0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
			ret = check_all(body, n);
			v[0][r] = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;

			t0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
			ret = ret ? ret : snpu_graph_begin(dev, 1, ++key);
			ret = ret ? ret : submit_all(dev, body, n);
			ret = ret ? ret : snpu_graph_end(dev);
			v[1][r] = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;

			t0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
			if (!ret && snpu_graph_begin(dev, 1, key) !=
			    SNPU_GRAPH_CACHED)
				ret = -EPROTO;
			v[2][r] = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
			if (ret) {
				fprintf(stderr, "capture_bench: %s\n",
					strerror(-ret));
				return 1;
			}
		}
		printf("%-6u %8u %10.1f %10.1f %10.2f\n", n, edges_seen,
		       (double)median(v[0], reps) / n,
		       (double)median(v[1], reps) / n,
		       (double)median(v[2], reps) / n);
	}
	snpu_graph_fini(dev);
	free(dev);
	free(body);
	return 0;
usage:
	fprintf(stderr, "usage: capture_bench [-r REPS]\n");
	return 2;
}
