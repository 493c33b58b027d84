// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-coll: what a collective moves per second, in nccl-tests'
 * terms, beside what memcpy(3) moves in the same run.
 *
 *   snpu-bench-coll [-c COLL] [-t f32|i32] [-g N[,N...]] [-b MIN] [-e MAX]
 *                   [-r ROUNDS]
 *
 * One process opens N devices (default 2 and 4, as many as there are),
 * makes one communicator over them (snpu_comm_init_all()) and, for each
 * size from MIN (default 4 KiB) to MAX (default 64 MiB) in steps of 4x,
 * queues ITERS collectives of f32 (or i32) on every rank's stream and waits for
 * them all: ITERS is what makes about 64 MiB a round, 1 to 64. A round's
 * time over ITERS is one collective's time; the figure is the median of
 * ROUNDS rounds (default 5). Columns, as nccl-tests prints them:
 *
 *   size     bytes of the collective's buffer (nccl-tests' "size": the
 *            recv buffer of all-gather, the send of reduce-scatter)
 *   time     one collective, microseconds
 *   algbw    size / time, GB/s
 *   busbw    algbw times the collective's factor: 2(n-1)/n for
 *            all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for
 *            broadcast; what each rank's links would carry
 *   memcpy   one thread's memcpy(3) of the same size between two host
 *            buffers, GB/s, timed in the same rounds, alternating sides
 *   ratio    busbw / memcpy
 *
 * Each size's result is checked once against a loop over the ranks in
 * rank order (the collective's own order); a mismatch ends the run with
 * status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snpu.h"
#include "bench.h"

#define MAX_RANKS	8
#define ROUND_BYTES	(64ull << 20)
#define MAX_ITERS	64

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-coll: %s: %s\n", what, strerror(-err));
	exit(1);
}

struct rank {
	struct snpu_device *dev;
	struct snpu_comm *comm;
	uint32_t stream;
	uint64_t send, recv;
};

struct bench {
	struct rank r[MAX_RANKS];
	unsigned int n;
	uint32_t coll;
	uint32_t dtype;
	uint64_t max;
	uint32_t *host;		/* max bytes of inputs, then results */
	uint32_t *ref;
};

/* The send and recv elements of a collective of @size bytes (see above). */
static void coll_counts(const struct bench *b, uint64_t size, uint64_t *send,
			uint64_t *recv)
{
	uint64_t e = size / 4;

	switch (b->coll) {
	case SNPU_COLL_ALLGATHER:
		*send = e / b->n;
		*recv = *send * b->n;
		break;
	case SNPU_COLL_REDUCE_SCATTER:
		*recv = e / b->n;
		*send = *recv * b->n;
		break;
	default:
		*send = e;
		*recv = e;
	}
}

static double bus_factor(const struct bench *b)
{
	switch (b->coll) {
	case SNPU_COLL_ALLREDUCE:
		return 2.0 * (b->n - 1) / b->n;
	case SNPU_COLL_BROADCAST:
		return 1.0;
	default:
		return (double)(b->n - 1) / b->n;
	}
}

static int coll_queue(struct bench *b, struct rank *k, uint64_t size)
{
	uint64_t ns, nr;

	coll_counts(b, size, &ns, &nr);
	switch (b->coll) {
	case SNPU_COLL_ALLREDUCE:
		return snpu_comm_allreduce(k->comm, k->stream, k->send, k->recv,
					   ns, b->dtype, SNPU_REDOP_SUM);
	case SNPU_COLL_BROADCAST:
		/* Off the root, a broadcast reads no send buffer. */
		return snpu_comm_broadcast(k->comm, k->stream,
					   k == b->r ? k->send : 0, k->recv,
					   ns, b->dtype, 0);
	case SNPU_COLL_ALLGATHER:
		return snpu_comm_allgather(k->comm, k->stream, k->send, k->recv,
					   ns, b->dtype);
	default:
		return snpu_comm_reduce_scatter(k->comm, k->stream, k->send,
						k->recv, nr, b->dtype,
						SNPU_REDOP_SUM);
	}
}

/* @iters collectives of @size bytes on every rank; ns for all of them. */
static uint64_t coll_round(struct bench *b, uint64_t size, unsigned int iters)
{
	uint64_t t0 = now_ns();
	unsigned int i, r;
	int ret;

	for (i = 0; i < iters; i++)
		for (r = 0; r < b->n; r++) {
			ret = coll_queue(b, &b->r[r], size);
			if (ret)
				die("collective", ret);
		}
	for (r = 0; r < b->n; r++) {
		ret = snpu_stream_synchronize(b->r[r].dev, b->r[r].stream, -1);
		if (ret)
			die("stream sync", ret);
	}
	return now_ns() - t0;
}

static uint64_t memcpy_round(void *dst, const void *src, uint64_t size,
			     unsigned int iters)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	for (i = 0; i < iters; i++) {
		memcpy(dst, src, size);
		/* Keep the copies: the compiler may not drop or merge them. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	return now_ns() - t0;
}

/*
 * Rank r's input element i: small integers, exact in f32 sums, as the
 * bits of the buffer's type.
 */
static uint32_t input(const struct bench *b, unsigned int r, uint64_t i)
{
	int32_t v = (int32_t)((i * 7 + r * 13) % 1024) - 512;
	float f = (float)v;
	uint32_t u;

	if (b->dtype == SNPU_DTYPE_I32)
		return (uint32_t)v;
	memcpy(&u, &f, 4);
	return u;
}

/* a + b in the buffer's type. */
static uint32_t add(const struct bench *b, uint32_t x, uint32_t y)
{
	float f, g;

	if (b->dtype == SNPU_DTYPE_I32)
		return x + y;
	memcpy(&f, &x, 4);
	memcpy(&g, &y, 4);
	f = f + g;
	memcpy(&x, &f, 4);
	return x;
}

/* Fill every rank's send for @size bytes and check one collective. */
static void coll_check(struct bench *b, uint64_t size)
{
	uint64_t ns, nr, i, j;
	unsigned int r, q;
	int ret;

	coll_counts(b, size, &ns, &nr);
	for (r = 0; r < b->n; r++) {
		for (i = 0; i < ns; i++)
			b->host[i] = input(b, r, i);
		ret = snpu_memcpy_h2d(b->r[r].dev, b->r[r].send, b->host,
				      ns * 4);
		if (ret)
			die("h2d", ret);
	}
	coll_round(b, size, 1);
	for (r = 0; r < b->n; r++) {
		for (i = 0; i < nr; i++) {
			uint32_t v = 0;

			switch (b->coll) {
			case SNPU_COLL_ALLREDUCE:
				for (q = 0; q < b->n; q++)
					v = q ? add(b, v, input(b, q, i)) :
						input(b, q, i);
				break;
			case SNPU_COLL_BROADCAST:
				v = input(b, 0, i);
				break;
			case SNPU_COLL_ALLGATHER:
				v = input(b, i / ns, i % ns);
				break;
			default:
				j = r * nr + i;
				for (q = 0; q < b->n; q++)
					v = q ? add(b, v, input(b, q, j)) :
						input(b, q, j);
			}
			b->ref[i] = v;
		}
		ret = snpu_memcpy_d2h(b->r[r].dev, b->host, b->r[r].recv,
				      nr * 4);
		if (ret)
			die("d2h", ret);
		if (memcmp(b->host, b->ref, nr * 4)) {
			fprintf(stderr,
				"snpu-bench-coll: rank %u of %u: %llu bytes differ from the host loop\n",
				r, b->n, (unsigned long long)size);
			exit(1);
		}
	}
}

static void setup(struct bench *b, unsigned int n)
{
	struct snpu_device *devs[MAX_RANKS];
	struct snpu_comm *comms[MAX_RANKS];
	unsigned int r;
	int ret;

	b->n = n;
	for (r = 0; r < n; r++) {
		struct rank *k = &b->r[r];

		ret = snpu_open(r, 0, &k->dev);
		if (ret)
			die("open", ret);
		ret = snpu_stream_create(k->dev, 0, 0, &k->stream);
		if (!ret)
			ret = snpu_mem_alloc(k->dev, b->max, 4096, 0, &k->send);
		if (!ret)
			ret = snpu_mem_alloc(k->dev, b->max, 4096, 0, &k->recv);
		if (ret)
			die("stream or device memory", ret);
		devs[r] = k->dev;
	}
	ret = snpu_comm_init_all(devs, n, comms);
	if (ret)
		die("snpu_comm_init_all", ret);
	for (r = 0; r < n; r++)
		b->r[r].comm = comms[r];
}

static void teardown(struct bench *b)
{
	unsigned int r;
	int ret;

	for (r = 0; r < b->n; r++) {
		ret = snpu_comm_destroy(b->r[r].comm);
		if (ret)
			die("snpu_comm_destroy", ret);
		snpu_close(b->r[r].dev);
	}
}

static void run(struct bench *b, unsigned int n, uint64_t min,
		unsigned int rounds, void *mdst, const void *msrc)
{
	uint64_t size, tc[64], tm[64];
	unsigned int i;

	setup(b, n);
	printf("# %u ranks on %u devices, %s, sum where it reduces, %u rounds\n",
	       n, n, b->dtype == SNPU_DTYPE_I32 ? "i32" : "f32", rounds);
	printf("%12s %10s %9s %9s %9s %7s\n", "size", "time(us)",
	       "algbw", "busbw", "memcpy", "ratio");
	for (size = min; size <= b->max; size *= 4) {
		unsigned int iters = ROUND_BYTES / size;
		double t, mt, algbw, busbw, mbw;

		if (iters > MAX_ITERS)
			iters = MAX_ITERS;
		if (!iters)
			iters = 1;
		coll_check(b, size);
		for (i = 0; i < rounds; i++) {
			if (i % 2) {
				tm[i] = memcpy_round(mdst, msrc, size, iters);
				tc[i] = coll_round(b, size, iters);
			} else {
				tc[i] = coll_round(b, size, iters);
				tm[i] = memcpy_round(mdst, msrc, size, iters);
			}
		}
		t = (double)median(tc, rounds) / iters;
		mt = (double)median(tm, rounds) / iters;
		algbw = size / t;
		busbw = algbw * bus_factor(b);
		mbw = size / mt;
		printf("%12llu %10.1f %9.3f %9.3f %9.3f %6.2fx\n",
		       (unsigned long long)size, t / 1000, algbw, busbw, mbw,
		       busbw / mbw);
		fflush(stdout);
	}
	teardown(b);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K': case 'k':
		return v << 10;
	case 'M': case 'm':
		return v << 20;
	default:
		return v;
	}
}

static uint32_t parse_coll(const char *s)
{
	if (!strcmp(s, "allreduce"))
		return SNPU_COLL_ALLREDUCE;
	if (!strcmp(s, "broadcast"))
		return SNPU_COLL_BROADCAST;
	if (!strcmp(s, "allgather"))
		return SNPU_COLL_ALLGATHER;
	if (!strcmp(s, "reduce_scatter"))
		return SNPU_COLL_REDUCE_SCATTER;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: snpu-bench-coll [-c allreduce|broadcast|allgather|reduce_scatter]\n"
		"       [-t f32|i32] [-g N[,N...]] [-b MIN] [-e MAX] [-r ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int ranks[MAX_RANKS] = { 2, 4 }, nr = 2, rounds = 5, i;
	struct bench b = { .coll = SNPU_COLL_ALLREDUCE, .dtype = SNPU_DTYPE_F32,
			   .max = 64ull << 20 };
	uint64_t min = 4096;
	struct snpu_device *d;
	unsigned int ndev = 0;
	char *mdst, *msrc;
	int opt;

	while ((opt = getopt(argc, argv, "c:t:g:b:e:r:")) != -1) {
		switch (opt) {
		case 'c':
			b.coll = parse_coll(optarg);
			if (!b.coll)
				usage();
			break;
		case 't':
			if (!strcmp(optarg, "f32"))
				b.dtype = SNPU_DTYPE_F32;
			else if (!strcmp(optarg, "i32"))
				b.dtype = SNPU_DTYPE_I32;
			else
				usage();
			break;
		case 'g': {
			char *s = optarg, *end;

			for (nr = 0; nr < MAX_RANKS && *s; nr++) {
				ranks[nr] = strtoul(s, &end, 10);
				if (end == s || ranks[nr] < 1 ||
				    ranks[nr] > MAX_RANKS)
					usage();
				s = *end == ',' ? end + 1 : end;
			}
			break;
		}
		case 'b':
			min = parse_size(optarg);
			break;
		case 'e':
			b.max = parse_size(optarg);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!rounds || rounds > 64 || min < 4 * MAX_RANKS || min > b.max)
		usage();
	while (ndev < MAX_RANKS && !snpu_open(ndev, 0, &d)) {
		snpu_close(d);
		ndev++;
	}
	b.host = malloc(b.max);
	b.ref = malloc(b.max);
	mdst = malloc(b.max);
	msrc = malloc(b.max);
	if (!b.host || !b.ref || !mdst || !msrc)
		die("malloc", -ENOMEM);
	memset(mdst, 1, b.max);
	memset(msrc, 2, b.max);
	for (i = 0; i < nr; i++) {
		if (ranks[i] > ndev) {
			printf("# %u ranks: only %u devices (load the module with devices=%u)\n",
			       ranks[i], ndev, ranks[i]);
			continue;
		}
		run(&b, ranks[i], min, rounds, mdst, msrc);
	}
	return 0;
}
