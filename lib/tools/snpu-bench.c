// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench: throughput and latency of the task path, each beside a
 * baseline measured in the same run.
 *
 *   snpu-bench [-d N] [-r ROUNDS] [-n TASKS]
 *
 * submit: NOP launches (block_dim 1) through SNPU_IOC_SUBMIT in batches of
 *         1, 8, 32 and 128, then one synchronize: tasks per second and ns
 *         per task, and that cost as a ratio of the syscall floor.
 * latency: one batch submitted and synchronized at once, per batch size.
 * floor: SNPU_IOC_NOP, an ioctl that does nothing.
 *
 * Throughput figures are the median of ROUNDS rounds; latencies the
 * median of LAT_SAMPLES batches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#define MAX_BATCH	128
#define LAT_SAMPLES	101

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* ns per SNPU_IOC_NOP over @n calls. */
static uint64_t floor_round(struct snpu_device *dev, unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = snpu_nop(dev);
		if (ret)
			die("nop", ret);
	}
	return (now_ns() - t0) / n;
}

/* ns per task: @n NOP tasks in batches of @batch, then synchronize. */
static uint64_t submit_round(struct snpu_device *dev, uint32_t stream,
			     struct snpu_task *tasks, unsigned int batch,
			     unsigned int n)
{
	uint64_t t0 = now_ns();
	unsigned int done;
	int ret;

	for (done = 0; done < n; done += batch) {
		ret = snpu_submit(dev, tasks, batch, NULL);
		if (ret < 0)
			die("submit", ret);
	}
	ret = snpu_stream_synchronize(dev, stream, -1);
	if (ret)
		die("synchronize", ret);
	return (now_ns() - t0) / n;
}

/* ns from submitting one batch to its completion being seen. */
static uint64_t latency_round(struct snpu_device *dev, uint32_t stream,
			      struct snpu_task *tasks, unsigned int batch)
{
	uint64_t t0 = now_ns();
	int ret;

	ret = snpu_submit(dev, tasks, batch, NULL);
	if (ret < 0)
		die("submit", ret);
	ret = snpu_stream_synchronize(dev, stream, -1);
	if (ret)
		die("synchronize", ret);
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	static const unsigned int batches[] = { 1, 8, 32, 128 };
	struct snpu_task tasks[MAX_BATCH];
	unsigned int rounds = 7, n = 2048, index = 0, b, r, i;
	uint64_t *v, floor_ns;
	struct snpu_device *dev;
	uint32_t stream;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:n:h")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [-n TASKS]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!rounds || n < MAX_BATCH || n % MAX_BATCH) {
		fprintf(stderr, "snpu-bench: ROUNDS > 0, TASKS a multiple of %d\n",
			MAX_BATCH);
		return 2;
	}
	v = calloc(rounds > LAT_SAMPLES ? rounds : LAT_SAMPLES, sizeof(*v));
	if (!v)
		return 1;

	ret = snpu_open(index, 0, &dev);
	if (ret)
		die("open", ret);
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		die("stream create", ret);
	for (i = 0; i < MAX_BATCH; i++)
		snpu_prep_launch(&tasks[i], stream, SNPU_KERNEL_NOP, 1, NULL, 0);

	for (r = 0; r < rounds; r++)
		v[r] = floor_round(dev, n);
	floor_ns = median(v, rounds);
	printf("floor   SNPU_IOC_NOP                 %8llu ns/ioctl\n",
	       (unsigned long long)floor_ns);

	for (b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		unsigned int batch = batches[b];
		uint64_t per_task, lat;

		for (r = 0; r < rounds; r++)
			v[r] = submit_round(dev, stream, tasks, batch, n);
		per_task = median(v, rounds);
		for (r = 0; r < LAT_SAMPLES; r++)
			v[r] = latency_round(dev, stream, tasks, batch);
		lat = median(v, LAT_SAMPLES);
		printf("submit  batch %3u  %9.0f tasks/s %8llu ns/task %6.2fx floor   latency %8llu ns\n",
		       batch, 1e9 / (double)per_task,
		       (unsigned long long)per_task,
		       (double)per_task / (double)floor_ns,
		       (unsigned long long)lat);
	}

	snpu_stream_destroy(dev, stream, 0);
	snpu_close(dev);
	free(v);
	return 0;
}
