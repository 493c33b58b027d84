// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * snpu-bench-kernels: the built-in kernels' speed, beside the CPU they run
 * on, measured in the same run.
 *
 *   snpu-bench-kernels [-d N] [-r ROUNDS] [gemm|fpu]
 *
 * gemm: device GEMMs against OpenBLAS's cblas_sgemm and a plain loop in
 *       this process. Shapes: the five GEMMs of snpu-train's default MLP
 *       (784-128-10, batch 64: the forward GEMMs 64x128x784 and 64x10x128,
 *       the weight gradients as GEMM_TN 784x128x64 and 128x10x64, the
 *       hidden gradient as GEMM_NT 64x128x10), the real work, and square
 *       GEMMs of 256 and 512. Each shape is timed, in every round, as: the
 *       device with block_dim 1 (one core; a shape past the block-work
 *       bound as one block of its first rows, the time scaled to all of
 *       them), with block_dim = the device's cores (or the least multiple
 *       of them the work bound allows), and with the block_dim
 *       snpu_launch_dims() picks; OpenBLAS with 1 thread and with one
 *       thread per
 *       online CPU (openblas_set_num_threads()); the plain loop (for each
 *       element the sum over k from 0 up, as the CPU reference of
 *       snpu-train, lib/tools/mlp.h). Each figure is a run of back-to-back
 *       calls worth about 2^24 multiply-adds (up to 64 launches submitted
 *       at once, then one synchronize: a stream's throughput, in which
 *       the cores stay awake), so small shapes measure the kernels, not
 *       the wake-up of an idle vCPU. GFLOP/s (2mnk / time) are medians of
 *       ROUNDS rounds (default 5); the device's result is checked bit for
 *       bit against the plain loop's once per shape.
 * fpu:  how long one FPU section of each f32 kernel runs (a chunk, see
 *       Documentation/perf.rst): a launch of one block whose slice is
 *       hundreds or thousands of chunks, between two events on its
 *       stream; its device time divided by the chunks (the launch's own
 *       latency spread over them). Each kernel at the largest chunk its
 *       rule allows and at the chunk snpu-train's launches make. Medians
 *       of ROUNDS rounds.
 *
 * In the test VM, OpenBLAS needs OPENBLAS_CORETYPE=Prescott: it takes
 * QEMU's default CPU model for an Opteron and dies on a 3DNow! instruction.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "snpu.h"
#include "bench.h"
#include "mlp.h"

#define MAX_ROUNDS	101

static void die(const char *what, int err)
{
	fprintf(stderr, "snpu-bench-kernels: %s: %s\n", what,
		strerror(err < 0 ? -err : err));
	exit(1);
}

struct bench {
	struct snpu_device *dev;
	struct snpu_info info;
	uint32_t stream, e0, e1;
	unsigned int rounds, cpus;
};

/* A device buffer of @bytes holding @src (or zeros). */
static uint64_t dev_buf(struct bench *b, const void *src, uint64_t bytes)
{
	uint64_t addr;
	int ret;

	ret = snpu_mem_alloc(b->dev, bytes, 64, 0, &addr);
	if (!ret)
		ret = src ? snpu_memcpy_h2d(b->dev, addr, src, bytes) :
			    snpu_memset(b->dev, addr, 0, bytes);
	if (ret)
		die("device buffer", ret);
	return addr;
}

#define MAX_REPS	64

/*
 * ns per launch of @t, @reps of them submitted at once on one stream and
 * synchronized: the device's throughput for a stream of such launches
 * (isolated, each would also pay for waking idle cores: milliseconds for
 * a vCPU under TCG on a busy host).
 */
static uint64_t launch_wall(struct bench *b, const struct snpu_task *t,
			    unsigned int reps)
{
	struct snpu_task ts[MAX_REPS];
	uint64_t t0;
	unsigned int i;
	int ret;

	for (i = 0; i < reps; i++)
		ts[i] = *t;
	t0 = now_ns();
	ret = snpu_submit(b->dev, ts, reps, NULL);
	if (!ret)
		ret = snpu_stream_synchronize(b->dev, b->stream, -1);
	if (ret)
		die("launch", ret);
	return (now_ns() - t0) / reps;
}

/* Device ns between events recorded just before and just after @t. */
static uint64_t launch_events(struct bench *b, const struct snpu_task *t)
{
	struct snpu_task ts[3];
	int64_t ns = 0;
	int ret;

	snpu_prep_event_record(&ts[0], b->stream, b->e0);
	ts[1] = *t;
	snpu_prep_event_record(&ts[2], b->stream, b->e1);
	ret = snpu_submit(b->dev, ts, 3, NULL);
	if (!ret)
		ret = snpu_stream_synchronize(b->dev, b->stream, -1);
	if (!ret)
		ret = snpu_event_elapsed_ns(b->dev, b->e0, b->e1, &ns);
	if (ret)
		die("launch", ret);
	return ns > 0 ? (uint64_t)ns : 0;
}

/* ---- gemm ---------------------------------------------------------------- */

struct gemm_shape {
	const char *name;
	uint32_t kernel, m, n, k;
};

static const struct gemm_shape gemm_shapes[] = {
	{ "mlp fwd 64x128x784",   SNPU_KERNEL_GEMM_F32,    64, 128, 784 },
	{ "mlp fwd 64x10x128",    SNPU_KERNEL_GEMM_F32,    64, 10, 128 },
	{ "mlp dW1 TN 784x128x64", SNPU_KERNEL_GEMM_TN_F32, 784, 128, 64 },
	{ "mlp dW2 TN 128x10x64", SNPU_KERNEL_GEMM_TN_F32, 128, 10, 64 },
	{ "mlp dh1 NT 64x128x10", SNPU_KERNEL_GEMM_NT_F32, 64, 128, 10 },
	{ "square 256",           SNPU_KERNEL_GEMM_F32,    256, 256, 256 },
	{ "square 512",           SNPU_KERNEL_GEMM_F32,    512, 512, 512 },
};

/*
 * The plain loop, snpu-train's CPU reference (mlp.h): c[i][j] = the sum
 * over l from 0 up of a(i, l) b(l, j), for each shape's layout.
 */
static void plain_shape(const struct gemm_shape *s, float *c, const float *a,
			const float *b)
{
	switch (s->kernel) {
	case SNPU_KERNEL_GEMM_TN_F32:	/* a is k x m */
		mlp_gemm_strided(c, a, b, s->m, s->n, s->k, 1, s->m, s->n, 1);
		break;
	case SNPU_KERNEL_GEMM_NT_F32:	/* b is n x k */
		mlp_gemm_strided(c, a, b, s->m, s->n, s->k, s->k, 1, 1, s->k);
		break;
	default:
		mlp_gemm_strided(c, a, b, s->m, s->n, s->k, s->k, 1, s->n, 1);
		break;
	}
}

static void blas_shape(const struct gemm_shape *s, float *c, const float *a,
		       const float *b)
{
	bool ta = s->kernel == SNPU_KERNEL_GEMM_TN_F32;
	bool tb = s->kernel == SNPU_KERNEL_GEMM_NT_F32;

	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f,
		    a, ta ? s->m : s->k, b, tb ? s->k : s->n, 0.0f, c, s->n);
}

/* ns per call, over @reps calls. */
static uint64_t plain_time(const struct gemm_shape *s, float *c,
			   const float *a, const float *b, unsigned int reps)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	for (i = 0; i < reps; i++)
		plain_shape(s, c, a, b);
	return (now_ns() - t0) / reps;
}

static uint64_t blas_time(const struct gemm_shape *s, float *c,
			  const float *a, const float *b, int threads,
			  unsigned int reps)
{
	uint64_t t0;
	unsigned int i;

	openblas_set_num_threads(threads);
	t0 = now_ns();
	for (i = 0; i < reps; i++)
		blas_shape(s, c, a, b);
	return (now_ns() - t0) / reps;
}

/* Moderate finite values, so that the sums stay finite. */
static void fill(float *f, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		f[i] = (float)((int64_t)(seed >> 33) % 2001 - 1000) / 1000.0f;
	}
}

enum { G_DEV1, G_DEVN, G_DEVL, G_BLAS1, G_BLASN, G_PLAIN, G_COUNT };

static double gflops(const struct gemm_shape *s, uint64_t ns)
{
	return 2.0 * s->m * s->n * s->k / (double)(ns ? ns : 1);
}

static void gemm_bench(struct bench *b)
{
	static const char *const label[G_COUNT] = {
		"dev b1", "dev cores", "dev auto", "blas 1", "blas N", "plain",
	};
	uint64_t v[G_COUNT][MAX_ROUNDS], med[G_COUNT];
	unsigned int i, r, g;

	printf("gemm    GFLOP/s, medians of %u rounds; device cores %u, "
	       "OpenBLAS %s, N = %u threads\n", b->rounds, b->info.cores,
	       openblas_get_corename(), b->cpus);
	printf("gemm    (dev b1: one block; past the block-work bound, one "
	       "block of the first rows, its time scaled to all of them)\n");
	printf("gemm    %-22s %6s %6s %6s %6s %6s %6s  %s\n", "shape",
	       label[0], label[1], label[2], label[3], label[4], label[5],
	       "ratios");
	for (i = 0; i < sizeof(gemm_shapes) / sizeof(gemm_shapes[0]); i++) {
		const struct gemm_shape *s = &gemm_shapes[i];
		size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n;
		size_t nc = (size_t)s->m * s->n;
		float *a = malloc(na * 4), *bb = malloc(nb * 4);
		float *c = malloc(nc * 4), *ref = malloc(nc * 4);
		struct snpu_kernel_arg args[6], one[6];
		struct snpu_task t;
		uint64_t da, db, dc;
		uint32_t bd[3], rows1, reps;
		bool same;
		int ret;

		if (!a || !bb || !c || !ref)
			die("malloc", -ENOMEM);
		fill(a, na, 1 + i);
		fill(bb, nb, 100 + i);
		da = dev_buf(b, a, na * 4);
		db = dev_buf(b, bb, nb * 4);
		dc = dev_buf(b, NULL, nc * 4);
		args[0] = snpu_arg_buf(dc, nc * 4);
		args[1] = snpu_arg_buf(da, na * 4);
		args[2] = snpu_arg_buf(db, nb * 4);
		args[3] = snpu_arg_u64(s->m);
		args[4] = snpu_arg_u64(s->n);
		args[5] = snpu_arg_u64(s->k);
		ret = snpu_launch_dims(&b->info, s->kernel, args, 6);
		if (ret < 0)
			die("launch dims", ret);
		bd[0] = 1;
		bd[2] = (uint32_t)ret;
		/* The cores, or as many more as the work bound needs. */
		bd[1] = b->info.cores;
		while ((uint64_t)(nc + bd[1] - 1) / bd[1] * s->k >
		       b->info.max_block_work)
			bd[1] += b->info.cores;

		/*
		 * One block may do at most max_block_work multiply-adds: past
		 * that, one core's rate is that of a one-block launch of the
		 * first rows1 rows (the same n and k), scaled to the shape.
		 */
		rows1 = s->m;
		if ((uint64_t)s->m * s->n * s->k > b->info.max_block_work)
			rows1 = (uint32_t)(b->info.max_block_work /
					   ((uint64_t)s->n * s->k));
		one[0] = snpu_arg_buf(dc, (uint64_t)rows1 * s->n * 4);
		one[1] = snpu_arg_buf(da, (uint64_t)rows1 * s->k * 4);
		one[2] = args[2];
		one[3] = snpu_arg_u64(rows1);
		one[4] = args[4];
		one[5] = args[5];
		if (s->kernel == SNPU_KERNEL_GEMM_TN_F32 && rows1 < s->m)
			die("one block of a GEMM_TN", -E2BIG);

		/* Calls a figure spreads over: about 2^24 multiply-adds. */
		reps = (uint32_t)((1ULL << 24) / ((uint64_t)s->m * s->n * s->k));
		reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;

		/* The device's bits against the plain loop's, once. */
		plain_shape(s, ref, a, bb);
		snpu_prep_launch(&t, b->stream, s->kernel, bd[1], args, 6);
		launch_wall(b, &t, 1);
		ret = snpu_memcpy_d2h(b->dev, c, dc, nc * 4);
		if (ret)
			die("d2h", ret);
		same = !memcmp(c, ref, nc * 4);

		for (r = 0; r < b->rounds; r++) {
			snpu_prep_launch(&t, b->stream, s->kernel, 1, one, 6);
			v[G_DEV1][r] = launch_wall(b, &t, reps) * s->m / rows1;
			for (g = 1; g < 3; g++) {
				snpu_prep_launch(&t, b->stream, s->kernel,
						 bd[g], args, 6);
				v[G_DEV1 + g][r] = launch_wall(b, &t, reps);
			}
			v[G_BLAS1][r] = blas_time(s, c, a, bb, 1, reps);
			v[G_BLASN][r] = blas_time(s, c, a, bb, (int)b->cpus,
						  reps);
			v[G_PLAIN][r] = plain_time(s, c, a, bb, reps);
		}
		for (g = 0; g < G_COUNT; g++)
			med[g] = median(v[g], b->rounds);
		printf("gemm    %-22s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f  "
		       "b1/plain %.2fx  cores/blasN %.2fx  auto(%u)/blasN %.2fx  "
		       "b1/blas1 %.2fx  bits %s\n", s->name,
		       gflops(s, med[G_DEV1]), gflops(s, med[G_DEVN]),
		       gflops(s, med[G_DEVL]), gflops(s, med[G_BLAS1]),
		       gflops(s, med[G_BLASN]), gflops(s, med[G_PLAIN]),
		       (double)med[G_PLAIN] / med[G_DEV1],
		       (double)med[G_BLASN] / med[G_DEVN], bd[2],
		       (double)med[G_BLASN] / med[G_DEVL],
		       (double)med[G_BLAS1] / med[G_DEV1],
		       same ? "same as the plain loop" : "DIFFER");
		snpu_mem_free(b->dev, da);
		snpu_mem_free(b->dev, db);
		snpu_mem_free(b->dev, dc);
		free(a);
		free(bb);
		free(c);
		free(ref);
	}
}

/* ---- fpu sections ------------------------------------------------------ */

/*
 * A launch of one block whose slice is many chunks, so that the launch's
 * own latency (waking a core, completing the task: milliseconds under
 * TCG on a busy host) is a small part of its time. Buffer arguments name
 * one of three device buffers (in place where a kernel allows it: the
 * figure is the loop's time, not its result), scalars a value.
 */
struct fpu_case {
	const char *name;
	uint32_t kernel;
	unsigned int nargs;
	int buf[SNPU_KERNEL_MAX_ARGS];		/* 0: scalar, 1..3: a buffer */
	uint64_t bytes[SNPU_KERNEL_MAX_ARGS];
	uint64_t scalar[SNPU_KERNEL_MAX_ARGS];
	uint64_t units, cost;			/* for the chunk rule */
};

#define F1	0x3f800000ULL	/* 1.0f */
#define MIB(x)	((uint64_t)(x) << 20)
#define E16M	(1ULL << 24)			/* 2^24 elements */

/* The documented chunk rule (Documentation/perf.rst, "FPU sections"). */
#define CHUNK_ELEMS	4096ULL
#define CHUNK_WORK	65536ULL

static uint64_t fpu_chunks(const struct fpu_case *c)
{
	uint64_t per;

	if (c->kernel == SNPU_KERNEL_COLSUM_F32 && c->cost > CHUNK_WORK)
		/* columns in pieces of 4096 rows, 16 pieces a chunk */
		return c->units * ((c->cost + 4095) / 4096) /
		       (CHUNK_WORK / 4096);
	if (c->cost == 1)
		return (c->units + CHUNK_ELEMS - 1) / CHUNK_ELEMS;
	if (c->kernel == SNPU_KERNEL_SOFTMAX_XENT_F32)
		per = c->cost * 32 >= CHUNK_WORK ? 1 : CHUNK_WORK / (c->cost * 32);
	else
		per = c->cost >= CHUNK_WORK ? 1 : CHUNK_WORK / c->cost;
	return (c->units + per - 1) / per;
}

static const struct fpu_case fpu_cases[] = {
	/* element-wise, in place on one 64 MiB buffer: 4096 chunks */
	{ "add",            SNPU_KERNEL_ADD_F32, 3, { 1, 1, 1 },
	  { MIB(64), MIB(64), MIB(64) }, { 0 }, E16M, 1 },
	{ "mul",            SNPU_KERNEL_MUL_F32, 3, { 1, 1, 1 },
	  { MIB(64), MIB(64), MIB(64) }, { 0 }, E16M, 1 },
	{ "axpy",           SNPU_KERNEL_AXPY_F32, 3, { 1, 1, 0 },
	  { MIB(64), MIB(64) }, { 0, 0, F1 }, E16M, 1 },
	{ "relu",           SNPU_KERNEL_RELU_F32, 2, { 1, 1 },
	  { MIB(64), MIB(64) }, { 0 }, E16M, 1 },
	{ "relu_bwd",       SNPU_KERNEL_RELU_BWD_F32, 3, { 1, 1, 1 },
	  { MIB(64), MIB(64), MIB(64) }, { 0 }, E16M, 1 },
	{ "bias_add n 128", SNPU_KERNEL_BIAS_ADD_F32, 4, { 1, 1, 1, 0 },
	  { MIB(64), MIB(64), 512 }, { 0, 0, 0, 128 }, E16M, 1 },
	{ "affine",         SNPU_KERNEL_AFFINE_F32, 4, { 1, 1, 0, 0 },
	  { MIB(64), MIB(64) }, { 0, 0, F1, F1 }, E16M, 1 },
	{ "reduce_sum",     SNPU_KERNEL_REDUCE_SUM_F32, 2, { 2, 1 },
	  { 4, MIB(64) }, { 0 }, E16M, 1 },
	/* GEMMs: k 65536, an element a chunk; snpu-train's shapes */
	{ "gemm k 65536",   SNPU_KERNEL_GEMM_F32, 6, { 2, 3, 1 },
	  { 1024, MIB(1) / 4, MIB(64) }, { 0, 0, 0, 1, 256, 65536 },
	  256, 65536 },
	{ "gemm 64x128x784 (mlp)", SNPU_KERNEL_GEMM_F32, 6, { 2, 3, 1 },
	  { 32768, 200704, 401408 }, { 0, 0, 0, 64, 128, 784 }, 8192, 784 },
	{ "gemm_tn k 65536", SNPU_KERNEL_GEMM_TN_F32, 6, { 2, 3, 1 },
	  { 1024, MIB(1) / 4, MIB(64) }, { 0, 0, 0, 1, 256, 65536 },
	  256, 65536 },
	{ "gemm_tn 784x128x64 (mlp)", SNPU_KERNEL_GEMM_TN_F32, 6, { 2, 3, 1 },
	  { 401408, 200704, 32768 }, { 0, 0, 0, 784, 128, 64 }, 100352, 64 },
	{ "gemm_nt k 65536", SNPU_KERNEL_GEMM_NT_F32, 6, { 2, 3, 1 },
	  { 1024, MIB(1) / 4, MIB(64) }, { 0, 0, 0, 1, 256, 65536 },
	  256, 65536 },
	{ "gemm_nt 2048x128x10 (mlp)", SNPU_KERNEL_GEMM_NT_F32, 6, { 2, 3, 1 },
	  { MIB(1), 81920, 5120 }, { 0, 0, 0, 2048, 128, 10 }, 262144, 10 },
	/* SOFTMAX_XENT in place; labels 0 (the zeroed buffer 2) */
	{ "softmax ncls 65536", SNPU_KERNEL_SOFTMAX_XENT_F32, 6,
	  { 3, 1, 1, 2 }, { 256, MIB(16), MIB(16), 256 },
	  { 0, 0, 0, 0, 65536, F1 }, 64, 65536 },
	{ "softmax ncls 10 (mlp)", SNPU_KERNEL_SOFTMAX_XENT_F32, 6,
	  { 3, 1, 1, 2 }, { 1677720, 16777200, 16777200, 1677720 },
	  { 0, 0, 0, 0, 10, F1 }, 419430, 10 },
	{ "argmax ncls 65536", SNPU_KERNEL_ARGMAX_F32, 3, { 2, 1 },
	  { 256, MIB(16) }, { 0, 0, 65536 }, 64, 65536 },
	{ "argmax ncls 10 (mlp)", SNPU_KERNEL_ARGMAX_F32, 3, { 2, 1 },
	  { 1677720, 16777200 }, { 0, 0, 10 }, 419430, 10 },
	/* COLSUM: one column of 2^24 rows, the block-work bound */
	{ "colsum 2^24 rows",  SNPU_KERNEL_COLSUM_F32, 3, { 2, 1 },
	  { 4, MIB(64) }, { 0, 0, 1 }, 1, E16M },
	{ "colsum 64 rows (mlp)", SNPU_KERNEL_COLSUM_F32, 3, { 2, 1 },
	  { 262144, MIB(16) }, { 0, 0, 65536 }, 65536, 64 },
};

static void fpu_bench(struct bench *b)
{
	uint64_t v[MAX_ROUNDS], addr[4] = { 0 };
	struct snpu_kernel_arg args[SNPU_KERNEL_MAX_ARGS];
	struct snpu_task t;
	unsigned int i, j, r;

	/* The buffers: 1 the big one, 2 and 3 the others (zeroed). */
	addr[1] = dev_buf(b, NULL, MIB(64));
	addr[2] = dev_buf(b, NULL, MIB(2));
	addr[3] = dev_buf(b, NULL, MIB(2));
	printf("fpu     one FPU section (chunk) of each f32 kernel: a "
	       "one-block launch of many chunks between two events, "
	       "its device time / chunks; medians of %u rounds\n", b->rounds);
	for (i = 0; i < sizeof(fpu_cases) / sizeof(fpu_cases[0]); i++) {
		const struct fpu_case *c = &fpu_cases[i];
		uint64_t chunks = fpu_chunks(c), ns;

		for (j = 0; j < c->nargs; j++)
			args[j] = c->buf[j] ?
				  snpu_arg_buf(addr[c->buf[j]], c->bytes[j]) :
				  snpu_arg_u64(c->scalar[j]);
		snpu_prep_launch(&t, b->stream, c->kernel, 1, args, c->nargs);
		launch_events(b, &t);
		for (r = 0; r < b->rounds; r++)
			v[r] = launch_events(b, &t);
		ns = median(v, b->rounds);
		printf("fpu     %-26s %9.1f us/section  (%llu chunks in "
		       "%8.1f ms)\n", c->name, ns / 1e3 / chunks,
		       (unsigned long long)chunks, ns / 1e6);
	}
	for (j = 1; j < 4; j++)
		snpu_mem_free(b->dev, addr[j]);
}

int main(int argc, char **argv)
{
	struct bench b = { .rounds = 5 };
	unsigned int index = 0;
	const char *mode = NULL;
	long cpus;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:r:h")) != -1) {
		switch (opt) {
		case 'd':
			index = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			b.rounds = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-r ROUNDS] [gemm|fpu]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		mode = argv[optind];
		if (strcmp(mode, "gemm") && strcmp(mode, "fpu")) {
			fprintf(stderr, "snpu-bench-kernels: unknown mode '%s'\n",
				mode);
			return 2;
		}
	}
	if (!b.rounds || b.rounds > MAX_ROUNDS) {
		fprintf(stderr, "snpu-bench-kernels: ROUNDS in 1..%d\n",
			MAX_ROUNDS);
		return 2;
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	b.cpus = cpus > 0 ? (unsigned int)cpus : 1;

	ret = snpu_open(index, 0, &b.dev);
	if (!ret)
		ret = snpu_get_info(b.dev, &b.info);
	if (!ret)
		ret = snpu_stream_create(b.dev, SNPU_PRIO_NORMAL, 0, &b.stream);
	if (!ret)
		ret = snpu_event_create(b.dev, &b.e0);
	if (!ret)
		ret = snpu_event_create(b.dev, &b.e1);
	if (ret)
		die("open", ret);
	if (!mode || !strcmp(mode, "gemm"))
		gemm_bench(&b);
	if (!mode || !strcmp(mode, "fpu"))
		fpu_bench(&b);
	snpu_close(b.dev);
	return 0;
}
