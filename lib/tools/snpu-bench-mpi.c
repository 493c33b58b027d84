// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-mpi: what libsnpu_mpi's fixed order of f32 sums costs. Run
 * under mpirun -np P (each process a host of the module's devices / P
 * devices, as selftests/mpi/hier_mpi_test):
 *
 *   mpirun -np P snpu-bench-mpi [-b MIN] [-e MAX] [-r ROUNDS]
 *
 * For each size from MIN (default 4 KiB) to MAX (default 16 MiB) in steps
 * of 4x, it times snpu_mpi_allreduce() of f32 with SUM, whose inter-host
 * step gathers every host's shard (MPI_Allgather) and adds them in host
 * order, and with MAX, whose inter-host step is MPI_Allreduce (the path
 * every f32 sum took before), taking turns in the same rounds: the same
 * bytes, the same device steps (reduce-scatter, copies, all-gather), a
 * device kernel of the same cost. A round is ITERS collectives of one kind
 * queued back to back, then every stream synchronised, then an
 * MPI_Barrier; ITERS makes about 16 MiB a round, 1 to 16. The figure is
 * the median of ROUNDS rounds (default 5), over ITERS, in microseconds,
 * and the ratio sum / max. Process 0 prints.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "snpu.h"
#include "snpu_mpi.h"
#include "bench.h"

#define MAXL		8
#define ROUND_BYTES	(16ull << 20)
#define MAX_ITERS	16
#define MAX_ROUNDS	101

static int me, np;

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-mpi: [%d] %s: %s\n", me, what,
		strerror(err < 0 ? -err : err));
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static uint64_t size_arg(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (!*s || *end || v < 4 || v % 4 || v > (1ull << 30)) {
		fprintf(stderr, "snpu-bench-mpi: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct snpu_device *devs[MAXL];
	uint32_t streams[MAXL];
	uint64_t send[MAXL], recv[MAXL];
	uint64_t min = 4 << 10, max = 16 << 20, size, t[2][MAX_ROUNDS];
	unsigned int ndev = 0, L, l, rounds = 5, r, i, iters, k;
	struct snpu_mpi_comm *hc;
	char path[32];
	int provided, c, ret;
	float *h;

	while ((c = getopt(argc, argv, "b:e:r:h")) != -1) {
		switch (c) {
		case 'b': min = size_arg(optarg); break;
		case 'e': max = size_arg(optarg); break;
		case 'r':
			rounds = (unsigned int)atoi(optarg);
			if (!rounds || rounds > MAX_ROUNDS) {
				fprintf(stderr, "snpu-bench-mpi: 1 to %d rounds\n",
					MAX_ROUNDS);
				exit(2);
			}
			break;
		default:
			fprintf(stderr, "usage: mpirun -np P snpu-bench-mpi "
				"[-b MIN] [-e MAX] [-r ROUNDS]\n");
			exit(c == 'h' ? 0 : 2);
		}
	}
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
	    MPI_SUCCESS)
		return 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	for (;;) {
		snprintf(path, sizeof(path), "/dev/snpu%u", ndev);
		if (access(path, F_OK))
			break;
		ndev++;
	}
	L = ndev / (unsigned int)np;
	if (L > MAXL)
		L = MAXL;
	if (!L)
		die("fewer devices than processes", ENODEV);
	h = malloc(max);
	if (!h)
		die("memory", ENOMEM);
	for (l = 0; l < L; l++) {
		ret = snpu_open(me * L + l, 0, &devs[l]);
		if (!ret)
			ret = snpu_stream_create(devs[l], SNPU_PRIO_NORMAL, 0,
						 &streams[l]);
		if (!ret)
			ret = snpu_mem_alloc(devs[l], max, 0, 0, &send[l]);
		if (!ret)
			ret = snpu_mem_alloc(devs[l], max, 0, 0, &recv[l]);
		for (i = 0; !ret && i < max / 4; i++)
			h[i] = (float)((i * 7 + (me * L + l) * 13) % 1024) / 3;
		if (!ret)
			ret = snpu_memcpy_h2d(devs[l], send[l], h, max);
		if (ret)
			die("device", ret);
	}
	ret = snpu_mpi_comm_init(MPI_COMM_WORLD, devs, L, &hc);
	if (ret)
		die("snpu_mpi_comm_init", ret);
	if (!me)
		printf("snpu-bench-mpi: %d hosts of %u devices, f32 all-reduce, "
		       "median of %u rounds\n%10s %12s %12s %8s\n", np, L,
		       rounds, "size", "sum_us", "max_us", "sum/max");
	for (size = min; size <= max; size *= 4) {
		iters = (unsigned int)(ROUND_BYTES / size);
		iters = iters < 1 ? 1 : iters > MAX_ITERS ? MAX_ITERS : iters;
		for (r = 0; r < rounds; r++)
			for (k = 0; k < 2; k++) {
				uint64_t t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = now_ns();
				for (i = 0; i < iters; i++) {
					ret = snpu_mpi_allreduce(hc, streams,
						send, recv, size / 4,
						SNPU_DTYPE_F32,
						k ? SNPU_REDOP_MAX :
						    SNPU_REDOP_SUM);
					if (ret)
						die("allreduce", ret);
				}
				for (l = 0; l < L; l++) {
					ret = snpu_stream_synchronize(devs[l],
						streams[l], -1);
					if (ret)
						die("stream sync", ret);
				}
				MPI_Barrier(MPI_COMM_WORLD);
				t[k][r] = (now_ns() - t0) / iters;
			}
		if (!me) {
			double s = median(t[0], rounds) / 1e3;
			double m = median(t[1], rounds) / 1e3;

			printf("%10llu %12.1f %12.1f %8.2f\n",
			       (unsigned long long)size, s, m, s / m);
			fflush(stdout);
		}
	}
	ret = snpu_mpi_comm_destroy(hc);
	if (ret)
		die("destroy", ret);
	for (l = 0; l < L; l++) {
		snpu_mem_free(devs[l], send[l]);
		snpu_mem_free(devs[l], recv[l]);
		snpu_close(devs[l]);
	}
	free(h);
	MPI_Finalize();
	return 0;
}
