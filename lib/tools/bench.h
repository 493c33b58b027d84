/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * Timing helpers shared by the benchmarks (lib/tools/snpu-bench*.c and
 * lib/bench/): a clock read in nanoseconds and the median of samples.
 */
#ifndef SNPU_TOOLS_BENCH_H
#define SNPU_TOOLS_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t now_ns(void)
{
	return bench_clock_ns(CLOCK_MONOTONIC);
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n samples; sorts @v. */
static inline uint64_t median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* SNPU_TOOLS_BENCH_H */
