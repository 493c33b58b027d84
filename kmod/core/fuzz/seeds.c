// SPDX-License-Identifier: GPL-2.0
/*
 * Seed corpora of the fuzz targets, written at build time so that no
 * binary file lives in the tree:
 *
 *   seeds DIR     writes DIR/<target>/<name> for every target
 *
 * Each seed is a valid input the target would take a long time to find
 * on its own (a launch of every kernel, multi-chunk launches, the
 * default module parameters), plus a few at the limits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "core/kernels.h"
#include "core/tests/ckpt_img.h"

static const char *top;
static unsigned int count;

static void emit(const char *target, const char *name, const void *buf,
		 size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, target);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", top, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	count++;
}

struct launch {
	__u32 kernel;
	__u32 block_dim;
	struct snpu_kernel_arg a[SNPU_KERNEL_MAX_ARGS];
};

/* A device address for buffer i: 4-aligned, distinct. */
#define ADDR(i) (0x100000ULL * ((i) + 1))

static void buf(struct launch *l, unsigned int i, __u64 bytes)
{
	l->a[i].value = ADDR(i);
	l->a[i].bytes = bytes;
}

/* A valid launch of @kernel over about @n units with @blocks blocks. */
static struct launch make_launch(__u32 kernel, __u32 blocks, __u64 n)
{
	struct launch l;
	__u64 k, cols;

	memset(&l, 0, sizeof(l));
	l.kernel = kernel;
	l.block_dim = blocks;
	switch (kernel) {
	case SNPU_KERNEL_COPY:
		buf(&l, 0, n + 3);
		buf(&l, 1, n);
		break;
	case SNPU_KERNEL_FILL:
		buf(&l, 0, 4 * n);
		l.a[1].value = 0xdeadbeef;
		break;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n);
		buf(&l, 2, 4 * n + 8);
		break;
	case SNPU_KERNEL_AXPY_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n);
		l.a[2].value = 0x3fc00000;	/* 1.5f */
		break;
	case SNPU_KERNEL_RELU_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n);
		break;
	case SNPU_KERNEL_GEMM_F32:
		/*
		 * c[8 x 8] = a[8 x k] * b[k x 8]; k = 2048 makes chunks of
		 * 32 elements, so the 64 of c take two.
		 */
		k = n > 65536 ? 65536 : n >= 4096 ? 2048 : n / 4 + 1;
		buf(&l, 0, 4 * 8 * 8);
		buf(&l, 1, 4 * 8 * k);
		buf(&l, 2, 4 * 8 * k);
		l.a[3].value = 8;
		l.a[4].value = 8;
		l.a[5].value = k;
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		buf(&l, 0, 4ULL * blocks + 4);
		buf(&l, 1, 4 * n);
		break;
	case SNPU_KERNEL_CRC32C:
		buf(&l, 0, 4ULL * blocks);
		buf(&l, 1, n);
		break;
	case SNPU_KERNEL_SPIN:
		l.a[0].value = 1000;
		break;
	case SNPU_KERNEL_FAIL:
		l.a[0].value = EIO;
		break;
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		/* As GEMM_F32: 8 x 8 of c, operands of 8 x k either way. */
		k = n > 65536 ? 65536 : n >= 4096 ? 2048 : n / 4 + 1;
		buf(&l, 0, 4 * 8 * 8);
		buf(&l, 1, 4 * 8 * k);
		buf(&l, 2, 4 * 8 * k);
		l.a[3].value = 8;
		l.a[4].value = 8;
		l.a[5].value = k;
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:
		/* Rows of 4 when n allows it, else one row of n. */
		cols = n % 4 ? n : 4;
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n + 4);
		buf(&l, 2, 4 * cols);
		l.a[3].value = cols;
		break;
	case SNPU_KERNEL_RELU_BWD_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n);
		buf(&l, 2, 4 * n);
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/* n rows of 10 classes. */
		buf(&l, 0, 4 * n);
		buf(&l, 1, 40 * n);
		buf(&l, 2, 40 * n);
		buf(&l, 3, 4 * n);
		l.a[4].value = 10;
		l.a[5].value = 0x3d000000;	/* 1/32 */
		break;
	case SNPU_KERNEL_COLSUM_F32:
		/* n columns (at most 65536) of 3 rows, or as many as fit. */
		cols = n > 65536 ? 65536 : n;
		buf(&l, 0, 4 * cols);
		buf(&l, 1, n > 65536 ? 4 * n : 12 * cols);
		l.a[2].value = cols;
		break;
	case SNPU_KERNEL_ARGMAX_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 40 * n);
		l.a[2].value = 10;
		break;
	case SNPU_KERNEL_COUNT_EQ_I32:
		buf(&l, 0, 4ULL * blocks);
		buf(&l, 1, 4 * n);
		buf(&l, 2, 4 * n);
		break;
	case SNPU_KERNEL_AFFINE_F32:
		buf(&l, 0, 4 * n);
		buf(&l, 1, 4 * n);
		l.a[2].value = 0x3b808081;	/* 1/255 */
		l.a[3].value = 0xbf000000;	/* -0.5 */
		break;
	}
	return l;
}

/* Little-endian @bytes of @v at @p; returns the next position. */
static __u8 *put(__u8 *p, __u64 v, unsigned int bytes)
{
	while (bytes--) {
		*p++ = (__u8)v;
		v >>= 8;
	}
	return p;
}

static void emit_launch_mode(const struct launch *l, const char *what,
			     unsigned int mode)
{
	__u8 in[sizeof(*l) + 4 + 4 * 8 + 2 + 8 + 1], *p = in;
	struct snpu_task t;
	char name[64];

	/* The launch, then what kernel_fuzz.c reads after it. */
	memcpy(p, l, sizeof(*l));
	p += sizeof(*l);
	p = put(p, 0, 4);		/* block for the refused chunk */
	p = put(p, 2, 8);		/* its slice [2, 1): refused */
	p = put(p, 1, 8);
	p = put(p, 2, 8);		/* the chunk [2, 2) */
	p = put(p, 2, 8);
	p = put(p, 1000, 2);		/* window of checked slices */
	p = put(p, 0x5eed, 8);		/* PRNG seed of the buffers */
	p = put(p, mode, 1);		/* mode */
	snprintf(name, sizeof(name), "k%02u-%s", l->kernel, what);
	emit("kernel", name, in, sizeof(in));

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_LAUNCH;
	t.stream = 1;
	t.launch.kernel = l->kernel;
	t.launch.block_dim = l->block_dim;
	memcpy(t.launch.args, l->a, sizeof(l->a));
	snprintf(name, sizeof(name), "launch-k%02u-%s", l->kernel, what);
	emit("task", name, &t, sizeof(t));
}

static void emit_launch(const struct launch *l, const char *what)
{
	emit_launch_mode(l, what, l->kernel & 7);
}

static void kernel_seeds(void)
{
	struct launch l;
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		emit_launch((l = make_launch(k, 1, 16), &l), "small");
		emit_launch((l = make_launch(k, 5, 37), &l), "uneven");
		emit_launch_mode((l = make_launch(k, 5, 37), &l), "avx2",
				 (k & 7) | 32);
		emit_launch((l = make_launch(k, 2, 9000), &l), "chunks");
		emit_launch((l = make_launch(k, 64, 3), &l), "empty");
		emit_launch((l = make_launch(k, SNPU_MAX_BLOCK_DIM, 1ULL << 30),
			     &l), "huge");
	}
	/* A label of SOFTMAX_XENT out of range, below 0 and at ncls. */
	l = make_launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 5, 37);
	emit_launch_mode(&l, "edom-neg", 8);
	emit_launch_mode(&l, "edom-ncls", 8 | 16 | 1);
}

static void task_seeds(void)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_COPY;
	t.stream = 1;
	t.copy.dir = SNPU_COPY_D2D;
	t.copy.dst = ADDR(0);
	t.copy.src = ADDR(1);
	t.copy.bytes = 4096;
	emit("task", "copy", &t, sizeof(t));

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_MEMSET;
	t.stream = 1;
	t.memset.addr = ADDR(0);
	t.memset.bytes = 100;
	t.memset.value = 0xff;
	emit("task", "memset", &t, sizeof(t));

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_EVENT_RECORD;
	t.stream = 1;
	t.event.event = 1;
	emit("task", "record", &t, sizeof(t));
	t.op = SNPU_OP_STREAM_WAIT;
	emit("task", "wait", &t, sizeof(t));

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_HOST_FUNC;
	t.stream = 1;
	t.user_data = 0x1234;
	emit("task", "host-func", &t, sizeof(t));

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_COLL;
	t.stream = 1;
	t.coll.comm = 1;
	t.coll.coll = SNPU_COLL_ALLREDUCE;
	t.coll.dtype = SNPU_DTYPE_F32;
	t.coll.redop = SNPU_REDOP_SUM;
	t.coll.count = 1000;
	t.coll.send = ADDR(0);
	t.coll.recv = ADDR(1);
	emit("task", "allreduce", &t, sizeof(t));
	t.coll.coll = SNPU_COLL_BROADCAST;
	t.coll.redop = 0;
	t.coll.root = 3;
	emit("task", "broadcast", &t, sizeof(t));
}

static void params_seeds(void)
{
	const struct snpu_params def = {
		.devices = 1, .cores = 4, .mem_mb = 256, .ctx_mem_mb = 0,
		.ctx_host_mb = 256, .ctx_streams = 64, .ctx_events = 1024,
		.ctx_tasks = 4096, .ctx_graphs = 64, .ctx_graph_mb = 64,
	};
	const struct snpu_params max = {
		.devices = SNPU_MAX_DEVICES, .cores = SNPU_MAX_CORES,
		.mem_mb = SNPU_MAX_MEM_MB, .ctx_mem_mb = SNPU_MAX_MEM_MB,
		.ctx_host_mb = SNPU_MAX_CTX_HOST_MB,
		.ctx_streams = SNPU_MAX_CTX_STREAMS,
		.ctx_events = SNPU_MAX_CTX_EVENTS,
		.ctx_tasks = SNPU_MAX_CTX_TASKS,
		.ctx_graphs = SNPU_MAX_CTX_GRAPHS,
		.ctx_graph_mb = SNPU_MAX_CTX_GRAPH_MB,
	};
	const struct snpu_params min = {
		.devices = 1, .cores = 1, .mem_mb = SNPU_MIN_MEM_MB,
		.ctx_mem_mb = 0, .ctx_host_mb = 1, .ctx_streams = 1,
		.ctx_events = 1, .ctx_tasks = 1, .ctx_graphs = 1,
		.ctx_graph_mb = 1,
	};
	struct snpu_params p = def;

	emit("params", "defaults", &def, sizeof(def));
	emit("params", "max", &max, sizeof(max));
	emit("params", "min", &min, sizeof(min));
	p.cores = SNPU_MAX_CORES + 1;
	emit("params", "bad-cores", &p, sizeof(p));
	p = def;
	p.ctx_mem_mb = p.mem_mb + 1;
	emit("params", "bad-ctx-mem", &p, sizeof(p));
}

static void ioc_seeds(void)
{
	/*
	 * usize, usize2, ver0, cmd, three picks (struct, command, key field
	 * size), then the caller's bytes: a key. See ioc_fuzz.c.
	 */
	const __u32 s[][4] = {
		{ SNPU_INFO_SIZE_VER0, sizeof(struct snpu_info),
		  SNPU_INFO_SIZE_VER0, SNPU_IOC_GET_INFO },
		{ SNPU_IOC_MAX_SIZE + 1, SNPU_IOC_MAX_SIZE, 8,
		  SNPU_IOC_SUBMIT },
		{ 7, 0, 8, SNPU_IOC_NOP },
	};
	static const char key[] = "model-7b/stream-0";
	__u8 in[sizeof(s[0]) + 3 + sizeof(key)];
	char name[32];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(s); i++) {
		memcpy(in, s[i], sizeof(s[i]));
		in[sizeof(s[i])] = (__u8)i;
		in[sizeof(s[i]) + 1] = (__u8)(3 * i);
		in[sizeof(s[i]) + 2] = (__u8)(2 * i + 1);
		memcpy(in + sizeof(s[i]) + 3, key, sizeof(key));
		snprintf(name, sizeof(name), "ioc-%u", i);
		emit("ioc", name, in, sizeof(in));
	}
}

/* The checkpoint reference images, as they are and with CRCs to fix. */
static void ckpt_seeds(void)
{
	struct img im = { 0 };
	unsigned char mode = 0;

	img_put(&im, &mode, 1);
	img_reference(&im);
	emit("ckpt", "reference", im.p, im.n);
	im.p[0] = 1;
	emit("ckpt", "reference-fix-crc", im.p, im.n);
	free(im.p);

	/* With rings: SQEs submitted, CQEs unreaped, completions parked. */
	memset(&im, 0, sizeof(im));
	mode = 0;
	img_put(&im, &mode, 1);
	img_ring(&im);
	emit("ckpt", "ring", im.p, im.n);
	im.p[0] = 1;
	emit("ckpt", "ring-fix-crc", im.p, im.n);
	free(im.p);

	/* A graph: its record and its definition in two DATA chunks. */
	memset(&im, 0, sizeof(im));
	mode = 0;
	img_put(&im, &mode, 1);
	img_graph_reference(&im);
	emit("ckpt", "graph", im.p, im.n);
	im.p[0] = 1;
	emit("ckpt", "graph-fix-crc", im.p, im.n);
	free(im.p);

	/* Ranks of communicators (SNPU_CKPT_COMM). */
	memset(&im, 0, sizeof(im));
	mode = 1;
	img_put(&im, &mode, 1);
	img_comms(&im, 3, 4, 2);
	emit("ckpt", "comms-fix-crc", im.p, im.n);
	im.p[0] = 0;
	emit("ckpt", "comms", im.p, im.n);
	free(im.p);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	top = argv[1];
	if (mkdir(top, 0755) && errno != EEXIST) {
		perror(top);
		return 1;
	}
	kernel_seeds();
	task_seeds();
	params_seeds();
	ckpt_seeds();
	ioc_seeds();
	printf("  SEEDS   %u files in %s\n", count, top);
	return 0;
}
