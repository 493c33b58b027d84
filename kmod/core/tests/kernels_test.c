// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Native unit tests of the built-in kernels (kmod/core/kernels.c and
 * kernels_f32.c): the launch argument rules, the slicing, and every
 * kernel against a reference written here, run the way the module runs
 * them (each block's slice in chunks). Built for the host under
 * ASan/UBSan; buffers are allocated to their exact size so that any
 * access past an argument's extent is caught.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels.h"
#include "core/kernels_f32.h"

#include "kselftest_harness.h"

#define NARGS		SNPU_KERNEL_MAX_ARGS
#define GEMM_MAX	65536ULL

/*
 * The argument lists as the uapi header documents them, written out
 * again here: the number of arguments and a mask of the buffers.
 */
static const struct {
	const char name[20];
	unsigned int nargs;
	unsigned int buffers;
	bool fpu;
	unsigned int writes;
} kinfo[SNPU_KERNEL_COUNT] = {
	[SNPU_KERNEL_NOP]		= { "nop", 0, 0x0, false },
	[SNPU_KERNEL_COPY]		= { "copy", 2, 0x3, false },
	[SNPU_KERNEL_FILL]		= { "fill", 2, 0x1, false },
	[SNPU_KERNEL_ADD_I32]		= { "add_i32", 3, 0x7, false },
	[SNPU_KERNEL_ADD_F32]		= { "add_f32", 3, 0x7, true },
	[SNPU_KERNEL_MUL_I32]		= { "mul_i32", 3, 0x7, false },
	[SNPU_KERNEL_MUL_F32]		= { "mul_f32", 3, 0x7, true },
	[SNPU_KERNEL_AXPY_F32]		= { "axpy_f32", 3, 0x3, true },
	[SNPU_KERNEL_RELU_F32]		= { "relu_f32", 2, 0x3, true },
	[SNPU_KERNEL_GEMM_F32]		= { "gemm_f32", 6, 0x7, true },
	[SNPU_KERNEL_REDUCE_SUM_I32]	= { "reduce_sum_i32", 2, 0x3, false },
	[SNPU_KERNEL_REDUCE_SUM_F32]	= { "reduce_sum_f32", 2, 0x3, true },
	[SNPU_KERNEL_CRC32C]		= { "crc32c", 2, 0x3, false },
	[SNPU_KERNEL_SPIN]		= { "spin", 1, 0x0, false },
	[SNPU_KERNEL_FAIL]		= { "fail", 1, 0x0, false },
	[SNPU_KERNEL_GEMM_TN_F32]	= { "gemm_tn_f32", 6, 0x7, true },
	[SNPU_KERNEL_GEMM_NT_F32]	= { "gemm_nt_f32", 6, 0x7, true },
	[SNPU_KERNEL_BIAS_ADD_F32]	= { "bias_add_f32", 4, 0x7, true },
	[SNPU_KERNEL_RELU_BWD_F32]	= { "relu_bwd_f32", 3, 0x7, true },
	[SNPU_KERNEL_SOFTMAX_XENT_F32]	= { "softmax_xent_f32", 6, 0xf, true,
					    0x3 },
	[SNPU_KERNEL_COLSUM_F32]	= { "colsum_f32", 3, 0x3, true },
	[SNPU_KERNEL_ARGMAX_F32]	= { "argmax_f32", 3, 0x3, true },
	[SNPU_KERNEL_COUNT_EQ_I32]	= { "count_eq_i32", 3, 0x7, false },
	[SNPU_KERNEL_AFFINE_F32]	= { "affine_f32", 4, 0x3, true },
};

static const __u32 block_dims[] = { 1, 3, 64 };
static const __u64 sizes[] = { 1, 7, 4096, 10007 };

/* ---- helpers ------------------------------------------------------------ */

static struct snpu_kernel_arg buf_arg(const void *p, __u64 bytes)
{
	struct snpu_kernel_arg a = { .value = (uintptr_t)p, .bytes = bytes };

	return a;
}

static struct snpu_kernel_arg scalar_arg(__u64 v)
{
	struct snpu_kernel_arg a = { .value = v, .bytes = 0 };

	return a;
}

/* A fake device address: snpu_kernel_check() never dereferences it. */
#define FAKE(i)		(0x10000000ULL * ((i) + 1))

/* Arguments snpu_kernel_check() accepts for @kernel with @block_dim blocks. */
static void valid_args(__u32 kernel, __u32 block_dim,
		       struct snpu_kernel_arg *a)
{
	int i;

	memset(a, 0, sizeof(*a) * NARGS);
	for (i = 0; i < NARGS; i++)
		if (kinfo[kernel].buffers & (1U << i))
			a[i] = buf_arg((void *)(uintptr_t)FAKE(i), 64);
	switch (kernel) {
	case SNPU_KERNEL_FILL:
		a[1] = scalar_arg(0xdeadbeef);
		break;
	case SNPU_KERNEL_AXPY_F32:
		a[2] = scalar_arg(0x3f800000);
		break;
	case SNPU_KERNEL_GEMM_F32:
		a[0].bytes = 2 * 3 * 4;
		a[1].bytes = 2 * 4 * 4;
		a[2].bytes = 4 * 3 * 4;
		a[3] = scalar_arg(2);
		a[4] = scalar_arg(3);
		a[5] = scalar_arg(4);
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_CRC32C:
		a[0].bytes = (__u64)block_dim * 4;
		break;
	case SNPU_KERNEL_SPIN:
		a[0] = scalar_arg(1000);
		break;
	case SNPU_KERNEL_FAIL:
		a[0] = scalar_arg(5);
		break;
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		/* m 2, n 3, k 4: every operand 12 or 8 floats, 64 bytes do. */
		a[3] = scalar_arg(2);
		a[4] = scalar_arg(3);
		a[5] = scalar_arg(4);
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:
		a[3] = scalar_arg(4);
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/* 4 rows of 4 classes. */
		a[4] = scalar_arg(4);
		a[5] = scalar_arg(0x3f800000);
		break;
	case SNPU_KERNEL_COLSUM_F32:
	case SNPU_KERNEL_ARGMAX_F32:
		a[2] = scalar_arg(4);
		break;
	case SNPU_KERNEL_COUNT_EQ_I32:
		a[0].bytes = (__u64)block_dim * 4;
		break;
	case SNPU_KERNEL_AFFINE_F32:
		a[2] = scalar_arg(0x40000000);
		a[3] = scalar_arg(0xbf800000);
		break;
	}
}

static int check(__u32 kernel, __u32 block_dim,
		 const struct snpu_kernel_arg *a)
{
	return snpu_kernel_check(kernel, block_dim, a);
}

/* The launch the module builds after the check: buffers map to themselves. */
static void resolve(__u32 kernel, __u32 block_dim,
		    const struct snpu_kernel_arg *a, struct snpu_klaunch *l)
{
	int i;

	memset(l, 0, sizeof(*l));
	l->kernel = kernel;
	l->block_dim = block_dim;
	for (i = 0; i < NARGS; i++) {
		if (snpu_kernel_is_buffer(kernel, i)) {
			l->buf[i] = (void *)(uintptr_t)a[i].value;
			l->bytes[i] = a[i].bytes;
		} else {
			l->scalar[i] = a[i].value;
		}
	}
}

/*
 * Run a launch like the module: check it, resolve it, then every block's
 * slice in chunks of at most @chunk units (an empty slice in one empty
 * call). The blocks take turns chunk by chunk, last block first, as
 * parallel cores might interleave them.
 */
static int launch(__u32 kernel, __u32 block_dim,
		  const struct snpu_kernel_arg *a, __u64 chunk)
{
	struct snpu_klaunch l;
	__u64 *sb, *se, *pos;
	bool busy = true, first = true;
	int ret;
	__u32 b;

	ret = check(kernel, block_dim, a);
	if (ret)
		return ret;
	resolve(kernel, block_dim, a, &l);
	sb = calloc(block_dim, sizeof(*sb));
	se = calloc(block_dim, sizeof(*se));
	pos = calloc(block_dim, sizeof(*pos));
	if (!sb || !se || !pos)
		abort();
	for (b = 0; b < block_dim; b++) {
		snpu_kernel_slice(&l, b, &sb[b], &se[b]);
		pos[b] = sb[b];
	}
	while (busy && !ret) {
		busy = false;
		for (b = block_dim; b-- > 0 && !ret;) {
			__u64 end;

			if (pos[b] == se[b] && !(first && sb[b] == se[b]))
				continue;
			end = se[b] - pos[b] < chunk ? se[b] : pos[b] + chunk;
			ret = snpu_kernel_run(&l, b, sb[b], se[b], pos[b], end);
			pos[b] = end;
			busy = true;
		}
		first = false;
	}
	free(sb);
	free(se);
	free(pos);
	return ret;
}

/* The slicing rule of the uapi header, written again. */
static void ref_slice(__u64 n, __u32 nb, __u32 b, __u64 *begin, __u64 *end)
{
	__u64 c = n / nb + (n % nb ? 1 : 0);
	__u64 s = (__u64)b * c;

	*begin = s < n ? s : n;
	*end = *begin + c < n ? *begin + c : n;
}

static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u64 rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void fill_random(void *p, __u64 bytes)
{
	__u8 *q = p;
	__u64 i;

	for (i = 0; i < bytes; i++)
		q[i] = (__u8)(rnd() >> 32);
}

static float f32_of(__u32 bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static __u32 bits_of(float f)
{
	__u32 bits;

	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

/*
 * A finite float: mostly normal numbers of moderate exponent, some zeros
 * of either sign and some denormals; never NaN or infinity, so results
 * never depend on which NaN an instruction propagates.
 */
static float rnd_f32(void)
{
	__u64 r = rnd();
	__u32 sign = (__u32)(r & 1) << 31;
	__u32 mant = (__u32)(r >> 8) & 0x7fffff;
	__u32 sel = (__u32)(r >> 40) & 15;
	__u32 exp;

	if (sel == 0)
		return f32_of(sign);
	if (sel == 1)
		return f32_of(sign | mant);
	exp = 127 - 12 + (__u32)((r >> 48) % 25);
	return f32_of(sign | exp << 23 | mant);
}

/* Test buffers are small: anything else is a bug of the test. */
#define MAX_TEST_BYTES	0x40000000ULL

static float *alloc_f32(__u64 n)
{
	float *p;
	__u64 i;

	if (n > MAX_TEST_BYTES / sizeof(float))
		abort();
	p = malloc(n ? n * sizeof(float) : 1);
	if (!p)
		abort();
	for (i = 0; i < n; i++)
		p[i] = rnd_f32();
	return p;
}

static void *alloc_bytes(__u64 bytes)
{
	void *p;

	if (bytes > MAX_TEST_BYTES)
		abort();
	p = malloc(bytes ? bytes : 1);
	if (!p)
		abort();
	fill_random(p, bytes);
	return p;
}

/* Bit by bit CRC-32C of a message, initial and final xor ~0. */
static __u32 ref_crc32c(const void *buf, __u64 len)
{
	const __u8 *p = buf;
	__u32 crc = 0xffffffff;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return crc ^ 0xffffffff;
}

/* ---- snpu_kernel_check ------------------------------------------------- */

TEST(check_valid_every_kernel)
{
	static const __u32 bds[] = { 1, 2, 3, 64, 1000, SNPU_MAX_BLOCK_DIM };
	struct snpu_kernel_arg a[NARGS];
	__u32 k;
	unsigned int i;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (i = 0; i < ARRAY_SIZE(bds); i++) {
			valid_args(k, bds[i], a);
			ASSERT_EQ(0, check(k, bds[i], a))
				TH_LOG("%s block_dim %u", kinfo[k].name,
				       bds[i]);
		}
	}
}

TEST(check_unknown_kernel)
{
	static const __u32 bad[] = {
		SNPU_KERNEL_COUNT, SNPU_KERNEL_COUNT + 1, 0x100, 0x80000000,
		0xffffffff,
	};
	struct snpu_kernel_arg zero[NARGS] = { 0 };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;

	ASSERT_EQ(24, SNPU_KERNEL_COUNT);
	valid_args(SNPU_KERNEL_COPY, 1, a);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_EQ(-EINVAL, check(bad[i], 1, zero));
		ASSERT_EQ(-EINVAL, check(bad[i], 1, a));
	}
}

TEST(check_block_dim)
{
	static const __u32 bad[] = {
		0, SNPU_MAX_BLOCK_DIM + 1, 0x10000, 0x80000000, 0xffffffff,
	};
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;
	__u32 k;

	ASSERT_EQ(65535, SNPU_MAX_BLOCK_DIM);
	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			/* Out buffers large enough for any block_dim. */
			valid_args(k, SNPU_MAX_BLOCK_DIM, a);
			if (k == SNPU_KERNEL_REDUCE_SUM_I32 ||
			    k == SNPU_KERNEL_REDUCE_SUM_F32 ||
			    k == SNPU_KERNEL_CRC32C)
				a[0].bytes = 1ULL << 40;
			ASSERT_EQ(-EINVAL, check(k, bad[i], a))
				TH_LOG("%s block_dim %u", kinfo[k].name,
				       bad[i]);
		}
		valid_args(k, 1, a);
		ASSERT_EQ(0, check(k, 1, a));
		valid_args(k, SNPU_MAX_BLOCK_DIM, a);
		ASSERT_EQ(0, check(k, SNPU_MAX_BLOCK_DIM, a));
	}
}

TEST(check_buffer_bytes_zero)
{
	struct snpu_kernel_arg a[NARGS];
	unsigned int i, tested = 0;
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (i = 0; i < kinfo[k].nargs; i++) {
			if (!(kinfo[k].buffers & (1U << i)))
				continue;
			valid_args(k, 3, a);
			a[i].bytes = 0;
			ASSERT_EQ(-EINVAL, check(k, 3, a))
				TH_LOG("%s arg %u", kinfo[k].name, i);
			/* A zero address is the module's business. */
			valid_args(k, 3, a);
			a[i].value = 0;
			ASSERT_EQ(0, check(k, 3, a));
			tested++;
		}
	}
	/*
	 * COPY 2, FILL 1, ADD/MUL 4 x 3, AXPY 2, RELU 2, GEMM 3, the rest 2;
	 * ABI 0.8: GEMM_TN/NT 3 + 3, BIAS_ADD 3, RELU_BWD 3, SOFTMAX_XENT 4,
	 * COLSUM 2, ARGMAX 2, COUNT_EQ 3, AFFINE 2.
	 */
	ASSERT_EQ(53ULL, tested);
}

TEST(check_scalar_with_bytes)
{
	static const __u64 bytes[] = { 1, 4, 8, 1ULL << 63 };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i, j, tested = 0;
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (i = 0; i < kinfo[k].nargs; i++) {
			if (kinfo[k].buffers & (1U << i))
				continue;
			for (j = 0; j < ARRAY_SIZE(bytes); j++) {
				valid_args(k, 3, a);
				a[i].bytes = bytes[j];
				ASSERT_EQ(-EINVAL, check(k, 3, a))
					TH_LOG("%s arg %u", kinfo[k].name, i);
			}
			tested++;
		}
	}
	/*
	 * FILL, AXPY, GEMM x3, SPIN, FAIL; ABI 0.8: GEMM_TN/NT x3 each,
	 * BIAS_ADD, SOFTMAX_XENT x2, COLSUM, ARGMAX, AFFINE x2.
	 */
	ASSERT_EQ(20ULL, tested);
}

TEST(check_unused_args_zero)
{
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (i = kinfo[k].nargs; i < NARGS; i++) {
			valid_args(k, 3, a);
			a[i].value = 1;
			ASSERT_EQ(-EINVAL, check(k, 3, a))
				TH_LOG("%s arg %u value", kinfo[k].name, i);
			valid_args(k, 3, a);
			a[i].bytes = 4;
			ASSERT_EQ(-EINVAL, check(k, 3, a))
				TH_LOG("%s arg %u bytes", kinfo[k].name, i);
			valid_args(k, 3, a);
			a[i] = buf_arg((void *)(uintptr_t)FAKE(i), 64);
			ASSERT_EQ(-EINVAL, check(k, 3, a));
			valid_args(k, 3, a);
			a[i].value = 1ULL << 63;
			ASSERT_EQ(-EINVAL, check(k, 3, a));
		}
	}
}

TEST(check_copy_sizes)
{
	struct snpu_kernel_arg a[NARGS];

	valid_args(SNPU_KERNEL_COPY, 1, a);
	a[0].bytes = 100;
	a[1].bytes = 101;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COPY, 1, a));
	a[1].bytes = 100;
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	a[1].bytes = 1;
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	a[0].bytes = 1;
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	/* Any byte count, no multiple of 4 needed. */
	a[0].bytes = 7;
	a[1].bytes = 3;
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	a[0].bytes = 1ULL << 40;
	a[1].bytes = (1ULL << 40) + 1;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COPY, 1, a));
}

TEST(check_fill)
{
	static const __u64 bad_bytes[] = { 1, 2, 3, 5, 6, 7, 4097 };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_bytes); i++) {
		valid_args(SNPU_KERNEL_FILL, 1, a);
		a[0].bytes = bad_bytes[i];
		ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_FILL, 1, a));
	}
	valid_args(SNPU_KERNEL_FILL, 1, a);
	a[0].bytes = 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_FILL, 1, a));
	a[1].value = 0;
	ASSERT_EQ(0, check(SNPU_KERNEL_FILL, 1, a));
	a[1].value = 0xffffffff;
	ASSERT_EQ(0, check(SNPU_KERNEL_FILL, 1, a));
	a[1].value = 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_FILL, 1, a));
	a[1].value = 0xffffffffffffffffULL;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_FILL, 1, a));
	a[1].value = (1ULL << 63) | 5;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_FILL, 1, a));
}

TEST(check_add_mul_sizes)
{
	static const __u32 ks[] = {
		SNPU_KERNEL_ADD_I32, SNPU_KERNEL_ADD_F32,
		SNPU_KERNEL_MUL_I32, SNPU_KERNEL_MUL_F32,
	};
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;
	__u32 k;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		k = ks[i];
		valid_args(k, 1, a);
		a[0].bytes = 6;
		a[1].bytes = 8;
		a[2].bytes = 8;
		ASSERT_EQ(-EINVAL, check(k, 1, a)) TH_LOG("%s", kinfo[k].name);
		a[0].bytes = 3;
		ASSERT_EQ(-EINVAL, check(k, 1, a));
		a[0].bytes = 8;
		ASSERT_EQ(0, check(k, 1, a));
		a[1].bytes = 7;
		ASSERT_EQ(-EINVAL, check(k, 1, a));
		a[1].bytes = 8;
		a[2].bytes = 4;
		ASSERT_EQ(-EINVAL, check(k, 1, a));
		/* Inputs larger than c, and of any size, are fine. */
		a[1].bytes = 9;
		a[2].bytes = 1ULL << 40;
		ASSERT_EQ(0, check(k, 1, a));
		a[0].bytes = 4;
		a[1].bytes = 4;
		a[2].bytes = 4;
		ASSERT_EQ(0, check(k, 1, a));
	}
}

TEST(check_axpy)
{
	struct snpu_kernel_arg a[NARGS];

	valid_args(SNPU_KERNEL_AXPY_F32, 1, a);
	a[0].bytes = 10;
	a[1].bytes = 12;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[0].bytes = 12;
	ASSERT_EQ(0, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[1].bytes = 11;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[1].bytes = 13;
	ASSERT_EQ(0, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[2].value = 0xffffffff;
	ASSERT_EQ(0, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[2].value = 0;
	ASSERT_EQ(0, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[2].value = 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_AXPY_F32, 1, a));
	a[2].value = 0x800000003f800000ULL;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_AXPY_F32, 1, a));
}

TEST(check_relu)
{
	struct snpu_kernel_arg a[NARGS];

	valid_args(SNPU_KERNEL_RELU_F32, 1, a);
	a[0].bytes = 2;
	a[1].bytes = 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_RELU_F32, 1, a));
	a[0].bytes = 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_RELU_F32, 1, a));
	a[0].bytes = 4000;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_RELU_F32, 1, a));
	a[1].bytes = 3999;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_RELU_F32, 1, a));
	a[1].bytes = 4000;
	ASSERT_EQ(0, check(SNPU_KERNEL_RELU_F32, 1, a));
	a[1].bytes = 4001;
	ASSERT_EQ(0, check(SNPU_KERNEL_RELU_F32, 1, a));
}

static void gemm_args(struct snpu_kernel_arg *a, __u64 m, __u64 n, __u64 k)
{
	valid_args(SNPU_KERNEL_GEMM_F32, 1, a);
	a[0].bytes = m * n * 4;
	a[1].bytes = m * k * 4;
	a[2].bytes = k * n * 4;
	a[3].value = m;
	a[4].value = n;
	a[5].value = k;
}

TEST(check_gemm)
{
	static const __u64 bad[] = {
		0, GEMM_MAX + 1, 1ULL << 32, (1ULL << 32) + 2,
		0xffffffffffffffffULL,
	};
	static const __u64 good[] = { 1, 2, 7, GEMM_MAX - 1, GEMM_MAX };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i, j, d;

	/*
	 * Every valid dimension, each with exact sizes, over the most blocks:
	 * accepted unless a block's work (ceil(m * n / 65535) * k) is above
	 * the bound (check_block_work).
	 */
	for (i = 0; i < ARRAY_SIZE(good); i++) {
		for (j = 0; j < ARRAY_SIZE(good); j++) {
			__u64 k = good[(i + j) % 5];
			__u64 mn = good[i] * good[j];
			__u64 work = (mn + SNPU_MAX_BLOCK_DIM - 1) /
				     SNPU_MAX_BLOCK_DIM * k;

			gemm_args(a, good[i], good[j], k);
			ASSERT_EQ(work <= SNPU_KERNEL_BLOCK_WORK_MAX ?
				  0 : -EINVAL,
				  check(SNPU_KERNEL_GEMM_F32,
					SNPU_MAX_BLOCK_DIM, a));
		}
	}
	/* Each of m, n, k out of range; sizes large enough anyway. */
	for (d = 3; d < 6; d++) {
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			gemm_args(a, 5, 6, 7);
			a[0].bytes = 1ULL << 62;
			a[1].bytes = 1ULL << 62;
			a[2].bytes = 1ULL << 62;
			a[d].value = bad[i];
			ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a))
				TH_LOG("arg %u = %llu", d,
				       (unsigned long long)bad[i]);
		}
	}
	/* Each buffer one byte short, then larger than needed. */
	for (d = 0; d < 3; d++) {
		gemm_args(a, 5, 6, 7);
		a[d].bytes--;
		ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a));
		/* The largest m, within the work of one block. */
		gemm_args(a, GEMM_MAX, 1, 256);
		ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 1, a));
		a[d].bytes--;
		ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a));
		gemm_args(a, 5, 6, 7);
		a[d].bytes += 3;
		ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 1, a));
	}
	/* a one element short. */
	gemm_args(a, 3, 1, 1);
	ASSERT_EQ(12ULL, a[0].bytes);
	a[1].bytes = 11;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a));
}

/*
 * No block works more than SNPU_KERNEL_BLOCK_WORK_MAX: ceil(units /
 * block_dim) times k for GEMM_F32, times 1 for the other kernels. At the
 * bound accepted, one unit above refused, the same split over two blocks
 * accepted again.
 */
TEST(check_block_work)
{
	const __u64 max = SNPU_KERNEL_BLOCK_WORK_MAX;
	struct snpu_kernel_arg a[NARGS];
	__u32 k;

	ASSERT_EQ(1ULL << 24, max);
	/* GEMM: k = 64, so max / 64 = 2^18 elements of c at most. */
	gemm_args(a, 512, 512, 64);
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 1, a));
	/* 2^18 + 1 = 5 * 52429 elements. */
	gemm_args(a, 5, 52429, 64);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 2, a));
	/* One element of c costs k: k alone at the bound, not above it. */
	gemm_args(a, 256, 1, GEMM_MAX);
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 1, a));
	gemm_args(a, 257, 1, GEMM_MAX);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 2, a));
	/* m = n = k = 4096 (2^36 multiply-adds) needs 4096 blocks. */
	gemm_args(a, 4096, 4096, 4096);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, 4095, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_F32, 4096, a));
	/* The largest product fits no launch: 2^32 / 65535 blocks * 2^16. */
	gemm_args(a, GEMM_MAX, GEMM_MAX, GEMM_MAX);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_F32, SNPU_MAX_BLOCK_DIM,
				 a));

	/* Elementwise: units are 4-byte elements. */
	valid_args(SNPU_KERNEL_ADD_F32, 1, a);
	a[0].bytes = max * 4;
	a[1].bytes = max * 4;
	a[2].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_ADD_F32, 1, a));
	a[0].bytes = (max + 1) * 4;
	a[1].bytes = (max + 1) * 4;
	a[2].bytes = (max + 1) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_ADD_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_ADD_F32, 2, a));
	/* Extra bytes of the inputs are not units: c decides. */
	a[0].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_ADD_F32, 1, a));

	/* Bytes for COPY and CRC32C, input elements for REDUCE_SUM. */
	valid_args(SNPU_KERNEL_COPY, 1, a);
	a[0].bytes = max + 1;
	a[1].bytes = max;
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	a[1].bytes = max + 1;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COPY, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 2, a));
	valid_args(SNPU_KERNEL_CRC32C, 2, a);
	a[1].bytes = 2 * max;
	ASSERT_EQ(0, check(SNPU_KERNEL_CRC32C, 2, a));
	a[1].bytes = 2 * max + 1;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_CRC32C, 2, a));
	valid_args(SNPU_KERNEL_REDUCE_SUM_I32, 1, a);
	a[1].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_REDUCE_SUM_I32, 1, a));
	a[1].bytes = (max + 1) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_REDUCE_SUM_I32, 1, a));

	/* Every kernel with units, at the bound and one unit above. */
	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		__u64 unit = k == SNPU_KERNEL_COPY || k == SNPU_KERNEL_CRC32C ?
			     1 : 4;
		unsigned int i, src;

		/* The kernels of ABI 0.8: check_block_work_training. */
		if (k == SNPU_KERNEL_NOP || k == SNPU_KERNEL_SPIN ||
		    k == SNPU_KERNEL_FAIL || k == SNPU_KERNEL_GEMM_F32 ||
		    k >= SNPU_KERNEL_GEMM_TN_F32)
			continue;
		src = k == SNPU_KERNEL_COPY || k == SNPU_KERNEL_CRC32C ||
		      k == SNPU_KERNEL_REDUCE_SUM_I32 ||
		      k == SNPU_KERNEL_REDUCE_SUM_F32 ? 1 : 0;
		valid_args(k, 1, a);
		for (i = 0; i < NARGS; i++)
			if (kinfo[k].buffers & (1U << i) && i != 0)
				a[i].bytes = (max + 1) * unit;
		a[src].bytes = max * unit;
		if (src == 0)
			a[0].bytes = max * unit;
		else if (k == SNPU_KERNEL_COPY)
			a[0].bytes = (max + 1) * unit;
		ASSERT_EQ(0, check(k, 1, a)) TH_LOG("%s", kinfo[k].name);
		a[src].bytes += unit;
		ASSERT_EQ(-EINVAL, check(k, 1, a)) TH_LOG("%s", kinfo[k].name);
	}
	/* NOP, SPIN and FAIL have no units: any block_dim. */
	valid_args(SNPU_KERNEL_SPIN, 1, a);
	ASSERT_EQ(0, check(SNPU_KERNEL_SPIN, 1, a));
}

TEST(check_reduce)
{
	static const __u32 ks[] = {
		SNPU_KERNEL_REDUCE_SUM_I32, SNPU_KERNEL_REDUCE_SUM_F32,
	};
	static const __u32 bds[] = { 1, 3, 64, SNPU_MAX_BLOCK_DIM };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i, j;
	__u32 k, bd;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		k = ks[i];
		for (j = 0; j < ARRAY_SIZE(bds); j++) {
			bd = bds[j];
			valid_args(k, bd, a);
			ASSERT_EQ(0, check(k, bd, a));
			a[0].bytes = (__u64)bd * 4 - 1;
			ASSERT_EQ(-EINVAL, check(k, bd, a));
			a[0].bytes = (__u64)bd * 4 + 1;
			ASSERT_EQ(0, check(k, bd, a));
			a[1].bytes = 6;
			ASSERT_EQ(-EINVAL, check(k, bd, a));
			a[1].bytes = 1;
			ASSERT_EQ(-EINVAL, check(k, bd, a));
			/* Fewer elements than blocks is fine. */
			a[1].bytes = 4;
			ASSERT_EQ(0, check(k, bd, a));
		}
	}
}

TEST(check_crc32c)
{
	static const __u32 bds[] = { 1, 3, 64, SNPU_MAX_BLOCK_DIM };
	struct snpu_kernel_arg a[NARGS];
	unsigned int j;
	__u32 bd;

	for (j = 0; j < ARRAY_SIZE(bds); j++) {
		bd = bds[j];
		valid_args(SNPU_KERNEL_CRC32C, bd, a);
		ASSERT_EQ(0, check(SNPU_KERNEL_CRC32C, bd, a));
		a[0].bytes = (__u64)bd * 4 - 1;
		ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_CRC32C, bd, a));
		a[0].bytes = (__u64)bd * 4 + 3;
		ASSERT_EQ(0, check(SNPU_KERNEL_CRC32C, bd, a));
		/* The input is bytes: any count. */
		a[1].bytes = 1;
		ASSERT_EQ(0, check(SNPU_KERNEL_CRC32C, bd, a));
		a[1].bytes = 4099;
		ASSERT_EQ(0, check(SNPU_KERNEL_CRC32C, bd, a));
	}
}

TEST(check_spin)
{
	struct snpu_kernel_arg a[NARGS] = { 0 };

	ASSERT_EQ(1000000000ULL, SNPU_KERNEL_SPIN_MAX_NS);
	a[0].value = 0;
	ASSERT_EQ(0, check(SNPU_KERNEL_SPIN, 1, a));
	a[0].value = SNPU_KERNEL_SPIN_MAX_NS;
	ASSERT_EQ(0, check(SNPU_KERNEL_SPIN, 1, a));
	a[0].value = SNPU_KERNEL_SPIN_MAX_NS + 1;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_SPIN, 1, a));
	a[0].value = 0xffffffffffffffffULL;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_SPIN, 1, a));
}

TEST(check_fail)
{
	static const __u64 bad[] = {
		0, 4096, 65536, (1ULL << 32) | 5, 0xffffffffffffffffULL,
		(__u64)-5LL,
	};
	struct snpu_kernel_arg a[NARGS] = { 0 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		a[0].value = bad[i];
		ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_FAIL, 1, a));
	}
	a[0].value = 1;
	ASSERT_EQ(0, check(SNPU_KERNEL_FAIL, 1, a));
	a[0].value = EIO;
	ASSERT_EQ(0, check(SNPU_KERNEL_FAIL, 1, a));
	a[0].value = 4095;
	ASSERT_EQ(0, check(SNPU_KERNEL_FAIL, 1, a));
}

TEST(check_never_dereferences)
{
	struct snpu_kernel_arg a[NARGS];
	__u32 k;

	/* Addresses no process could map: a dereference would fault. */
	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		unsigned int i;

		valid_args(k, 3, a);
		for (i = 0; i < NARGS; i++)
			if (kinfo[k].buffers & (1U << i))
				a[i].value = 0xdead000000000000ULL + 16 * i;
		ASSERT_EQ(0, check(k, 3, a));
	}
}

/* 32-bit element buffers must be aligned; byte buffers need not be. */
TEST(check_element_alignment)
{
	struct snpu_kernel_arg a[NARGS];
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		unsigned int i;

		for (i = 0; i < NARGS; i++) {
			bool bytes = k == SNPU_KERNEL_COPY ||
				     (k == SNPU_KERNEL_CRC32C && i == 1);

			if (!(kinfo[k].buffers & (1U << i)))
				continue;
			valid_args(k, 3, a);
			a[i].value += 2;
			ASSERT_EQ(bytes ? 0 : -EINVAL, check(k, 3, a))
				TH_LOG("%s arg %u at +2", kinfo[k].name, i);
		}
	}
}

TEST(chunk_bounds_gemm_work)
{
	struct snpu_klaunch l = { .kernel = SNPU_KERNEL_GEMM_F32 };

	l.scalar[5] = 1;
	ASSERT_EQ(SNPU_KERNEL_CHUNK_WORK, snpu_kernel_chunk(&l));
	l.scalar[5] = 1000;
	ASSERT_EQ(SNPU_KERNEL_CHUNK_WORK / 1000, snpu_kernel_chunk(&l));
	l.scalar[5] = 65536;
	ASSERT_EQ(1, snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_ADD_F32;
	ASSERT_EQ(SNPU_KERNEL_CHUNK, snpu_kernel_chunk(&l));
}

/* ---- argument table, fpu, units, slicing ------------------------------- */

TEST(is_buffer)
{
	unsigned int i;
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++)
		for (i = 0; i < NARGS + 2; i++)
			ASSERT_EQ(i < NARGS && (kinfo[k].buffers & (1U << i)),
				  snpu_kernel_is_buffer(k, i))
				TH_LOG("%s arg %u", kinfo[k].name, i);
	ASSERT_FALSE(snpu_kernel_is_buffer(SNPU_KERNEL_COUNT, 0));
	ASSERT_FALSE(snpu_kernel_is_buffer(0xffffffff, 0));
	ASSERT_FALSE(snpu_kernel_is_buffer(SNPU_KERNEL_COPY, 0xffffffff));
}

/* The mask the submit path reads once per launch, from the same table. */
TEST(buffers_mask)
{
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++)
		ASSERT_EQ(kinfo[k].buffers, snpu_kernel_buffers(k))
			TH_LOG("%s", kinfo[k].name);
	ASSERT_EQ(0U, snpu_kernel_buffers(SNPU_KERNEL_COUNT));
	ASSERT_EQ(0U, snpu_kernel_buffers(0xffffffff));
}

TEST(uses_fpu)
{
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++)
		ASSERT_EQ(kinfo[k].fpu, snpu_kernel_uses_fpu(k))
			TH_LOG("%s", kinfo[k].name);
	ASSERT_FALSE(snpu_kernel_uses_fpu(SNPU_KERNEL_COUNT));
	ASSERT_FALSE(snpu_kernel_uses_fpu(0xffffffff));
}

/* What graphs order nodes by: argument 0, and both outputs of SOFTMAX_XENT. */
TEST(writes_mask)
{
	__u32 k;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		unsigned int want = kinfo[k].writes ? kinfo[k].writes :
				    kinfo[k].buffers & 0x1;

		ASSERT_EQ(want, snpu_kernel_writes(k))
			TH_LOG("%s", kinfo[k].name);
		ASSERT_EQ(0U, snpu_kernel_writes(k) & ~kinfo[k].buffers);
	}
	ASSERT_EQ(0U, snpu_kernel_writes(SNPU_KERNEL_COUNT));
	ASSERT_EQ(0U, snpu_kernel_writes(0xffffffff));
}

TEST(units)
{
	struct snpu_klaunch l = { .block_dim = 1 };
	int i;

	for (i = 0; i < NARGS; i++)
		l.bytes[i] = 1000 + i * 100;
	l.scalar[3] = 3;
	l.scalar[4] = 5;
	l.scalar[5] = 7;

	l.kernel = SNPU_KERNEL_COPY;
	ASSERT_EQ(1100ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_CRC32C;
	ASSERT_EQ(1100ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_FILL;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_ADD_I32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_ADD_F32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_MUL_I32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_MUL_F32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_AXPY_F32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_RELU_F32;
	ASSERT_EQ(250ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_GEMM_F32;
	ASSERT_EQ(15ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_REDUCE_SUM_I32;
	ASSERT_EQ(275ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_REDUCE_SUM_F32;
	ASSERT_EQ(275ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_NOP;
	ASSERT_EQ(0ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_SPIN;
	ASSERT_EQ(0ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_FAIL;
	ASSERT_EQ(0ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_COUNT;
	ASSERT_EQ(0ULL, snpu_kernel_units(&l));

	l.kernel = SNPU_KERNEL_GEMM_F32;
	l.scalar[3] = GEMM_MAX;
	l.scalar[4] = GEMM_MAX;
	ASSERT_EQ(1ULL << 32, snpu_kernel_units(&l));
}

/*
 * For n units and nb blocks: the slices follow each other from 0 to n,
 * each as the uapi rule says, so every unit belongs to exactly one block.
 */
static void check_slices(struct __test_metadata *_metadata, __u64 n, __u32 nb)
{
	struct snpu_klaunch l = {
		.kernel = SNPU_KERNEL_CRC32C,
		.block_dim = nb,
	};
	__u64 c = n / nb + (n % nb ? 1 : 0);
	__u64 next = 0, begin, end, rb, re;
	__u32 *seen = NULL;
	__u64 i;
	__u32 b;

	l.bytes[1] = n;
	ASSERT_EQ(n, snpu_kernel_units(&l));
	if (n <= 100000) {
		seen = calloc(n ? n : 1, sizeof(*seen));
		ASSERT_NE(NULL, seen);
	}
	for (b = 0; b < nb; b++) {
		snpu_kernel_slice(&l, b, &begin, &end);
		ref_slice(n, nb, b, &rb, &re);
		ASSERT_EQ(rb, begin) TH_LOG("n %llu nb %u b %u",
					    (unsigned long long)n, nb, b);
		ASSERT_EQ(re, end);
		ASSERT_EQ(next, begin);
		ASSERT_LE(begin, end);
		ASSERT_LE(end - begin, c);
		/* Only the last non-empty slice may be short. */
		if (end < n)
			ASSERT_EQ(c, end - begin);
		for (i = begin; seen && i < end; i++)
			seen[i]++;
		next = end;
	}
	ASSERT_EQ(n, next);
	for (i = 0; seen && i < n; i++)
		ASSERT_EQ(1ULL, seen[i]) TH_LOG("unit %llu", (unsigned long long)i);
	free(seen);

	/* A block past the last gets an empty slice. */
	snpu_kernel_slice(&l, nb, &begin, &end);
	ASSERT_EQ(begin, end);
}

TEST(slice_covers_every_unit_once)
{
	static const __u64 ns[] = {
		0, 1, 2, 3, 5, 7, 63, 64, 65, 100, 4095, 4096, 4097, 10007,
		65535, 65536, 99991, 1ULL << 32, (1ULL << 34) + 12345,
	};
	static const __u32 nbs[] = {
		1, 2, 3, 7, 63, 64, 65, 100, 1000, 4096, 65534, 65535,
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(ns); i++)
		for (j = 0; j < ARRAY_SIZE(nbs); j++)
			check_slices(_metadata, ns[i], nbs[j]);
}

TEST(slice_examples)
{
	struct snpu_klaunch l = {
		.kernel = SNPU_KERNEL_COPY,
		.block_dim = 3,
	};
	__u64 b, e;

	/* 10 units in 3 blocks: c = 4, slices [0,4) [4,8) [8,10). */
	l.bytes[0] = 10;
	l.bytes[1] = 10;
	snpu_kernel_slice(&l, 0, &b, &e);
	ASSERT_EQ(0ULL, b);
	ASSERT_EQ(4ULL, e);
	snpu_kernel_slice(&l, 1, &b, &e);
	ASSERT_EQ(4ULL, b);
	ASSERT_EQ(8ULL, e);
	snpu_kernel_slice(&l, 2, &b, &e);
	ASSERT_EQ(8ULL, b);
	ASSERT_EQ(10ULL, e);
	/* 2 units in 3 blocks: [0,1) [1,2) [2,2). */
	l.bytes[1] = 2;
	snpu_kernel_slice(&l, 1, &b, &e);
	ASSERT_EQ(1ULL, b);
	ASSERT_EQ(2ULL, e);
	snpu_kernel_slice(&l, 2, &b, &e);
	ASSERT_EQ(2ULL, b);
	ASSERT_EQ(2ULL, e);
	/* 9 units in 5 blocks: c = 2, the last block is empty. */
	l.block_dim = 5;
	l.bytes[1] = 9;
	snpu_kernel_slice(&l, 4, &b, &e);
	ASSERT_EQ(8ULL, b);
	ASSERT_EQ(9ULL, e);
	l.bytes[1] = 7;
	snpu_kernel_slice(&l, 4, &b, &e);
	ASSERT_EQ(7ULL, b);
	ASSERT_EQ(7ULL, e);
	/* NOP has no units: every slice is empty. */
	l.kernel = SNPU_KERNEL_NOP;
	snpu_kernel_slice(&l, 0, &b, &e);
	ASSERT_EQ(0ULL, b);
	ASSERT_EQ(0ULL, e);
}

/* ---- snpu_kernel_run: defensive refusals ------------------------------- */

TEST(run_refuses_bad_ranges)
{
	__u32 out[2] = { 0 }, in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct snpu_kernel_arg a[NARGS] = { 0 };
	struct snpu_klaunch l;

	a[0] = buf_arg(out, sizeof(out));
	a[1] = buf_arg(in, sizeof(in));
	ASSERT_EQ(0, check(SNPU_KERNEL_REDUCE_SUM_I32, 2, a));
	resolve(SNPU_KERNEL_REDUCE_SUM_I32, 2, a, &l);
	ASSERT_EQ(0, snpu_kernel_run(&l, 0, 0, 4, 0, 4));
	ASSERT_EQ(10ULL, out[0]);
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 2, 0, 4, 0, 4));
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 0, 0, 4, 3, 2));
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 0, 1, 4, 0, 4));
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 0, 0, 4, 0, 5));
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 1, 4, 9, 4, 9));
	ASSERT_EQ(10ULL, out[0]);

	l.kernel = SNPU_KERNEL_COUNT;
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 0, 0, 4, 0, 4));
	l.kernel = 0xffffffff;
	ASSERT_EQ(-EINVAL, snpu_kernel_run(&l, 0, 0, 4, 0, 4));
	ASSERT_EQ(10ULL, out[0]);
}

TEST(run_nop_spin_fail_do_nothing)
{
	static const __u32 ks[] = {
		SNPU_KERNEL_NOP, SNPU_KERNEL_SPIN, SNPU_KERNEL_FAIL,
	};
	struct snpu_kernel_arg a[NARGS];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		valid_args(ks[i], 3, a);
		ASSERT_EQ(0, launch(ks[i], 3, a, SNPU_KERNEL_CHUNK));
	}
}

/* ---- snpu_kernel_run: every kernel against the references -------------- */

TEST(run_copy)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (j = 0; j < ARRAY_SIZE(block_dims); j++) {
			__u64 n = sizes[i], extra = 5;
			__u8 *src = alloc_bytes(n);
			__u8 *dst = alloc_bytes(n + extra);
			__u8 *tail = malloc(extra);
			struct snpu_kernel_arg a[NARGS] = { 0 };

			ASSERT_NE(NULL, tail);
			memcpy(tail, dst + n, extra);
			a[0] = buf_arg(dst, n + extra);
			a[1] = buf_arg(src, n);
			ASSERT_EQ(0, launch(SNPU_KERNEL_COPY, block_dims[j], a,
					    SNPU_KERNEL_CHUNK));
			ASSERT_EQ(0, memcmp(dst, src, n));
			ASSERT_EQ(0, memcmp(dst + n, tail, extra));
			free(src);
			free(dst);
			free(tail);
		}
	}
}

TEST(run_fill)
{
	static const __u32 patterns[] = { 0, 0xdeadbeef, 0xffffffff };
	unsigned int i, j, p;

	for (p = 0; p < ARRAY_SIZE(patterns); p++) {
		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (j = 0; j < ARRAY_SIZE(block_dims); j++) {
				__u64 n = sizes[i], x;
				__u32 *dst = alloc_bytes(n * 4);
				struct snpu_kernel_arg a[NARGS] = { 0 };

				a[0] = buf_arg(dst, n * 4);
				a[1] = scalar_arg(patterns[p]);
				ASSERT_EQ(0, launch(SNPU_KERNEL_FILL,
						    block_dims[j], a,
						    SNPU_KERNEL_CHUNK));
				for (x = 0; x < n; x++)
					ASSERT_EQ(patterns[p], dst[x]);
				free(dst);
			}
		}
	}
}

/* c = a op b for the four element-wise kernels, a and b 8 bytes longer. */
static void run_binary(struct __test_metadata *_metadata, __u32 kernel)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (j = 0; j < ARRAY_SIZE(block_dims); j++) {
			__u64 n = sizes[i], x;
			bool f32 = kernel == SNPU_KERNEL_ADD_F32 ||
				   kernel == SNPU_KERNEL_MUL_F32;
			void *va = f32 ? (void *)alloc_f32(n + 2) :
					 alloc_bytes((n + 2) * 4);
			void *vb = f32 ? (void *)alloc_f32(n + 2) :
					 alloc_bytes((n + 2) * 4);
			void *vc = alloc_bytes(n * 4);
			struct snpu_kernel_arg a[NARGS] = { 0 };

			a[0] = buf_arg(vc, n * 4);
			a[1] = buf_arg(va, (n + 2) * 4);
			a[2] = buf_arg(vb, (n + 2) * 4);
			ASSERT_EQ(0, launch(kernel, block_dims[j], a,
					    SNPU_KERNEL_CHUNK));
			for (x = 0; x < n; x++) {
				__u32 ua = ((__u32 *)va)[x];
				__u32 ub = ((__u32 *)vb)[x];
				__u32 want = 0;

				switch (kernel) {
				case SNPU_KERNEL_ADD_I32:
					want = (__u32)((__u64)ua + ub);
					break;
				case SNPU_KERNEL_MUL_I32:
					want = (__u32)((__u64)ua * ub);
					break;
				case SNPU_KERNEL_ADD_F32:
					want = bits_of(f32_of(ua) +
						       f32_of(ub));
					break;
				case SNPU_KERNEL_MUL_F32:
					want = bits_of(f32_of(ua) *
						       f32_of(ub));
					break;
				}
				ASSERT_EQ(want, ((__u32 *)vc)[x])
					TH_LOG("%s n %llu element %llu",
					       kinfo[kernel].name,
					       (unsigned long long)n,
					       (unsigned long long)x);
			}
			free(va);
			free(vb);
			free(vc);
		}
	}
}

TEST(run_add_i32)
{
	run_binary(_metadata, SNPU_KERNEL_ADD_I32);
}

TEST(run_mul_i32)
{
	run_binary(_metadata, SNPU_KERNEL_MUL_I32);
}

TEST(run_add_f32)
{
	run_binary(_metadata, SNPU_KERNEL_ADD_F32);
}

TEST(run_mul_f32)
{
	run_binary(_metadata, SNPU_KERNEL_MUL_F32);
}

TEST(run_i32_wraps)
{
	__s32 av[4] = { INT32_MAX, INT32_MIN, -1, 65536 };
	__s32 bv[4] = { 1, -1, INT32_MIN, 65536 };
	__s32 c[4] = { 0 };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(c, sizeof(c));
	a[1] = buf_arg(av, sizeof(av));
	a[2] = buf_arg(bv, sizeof(bv));
	ASSERT_EQ(0, launch(SNPU_KERNEL_ADD_I32, 1, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(INT32_MIN, c[0]);
	ASSERT_EQ(INT32_MAX, c[1]);
	ASSERT_EQ(INT32_MAX, c[2]);
	ASSERT_EQ(131072, c[3]);
	ASSERT_EQ(0, launch(SNPU_KERNEL_MUL_I32, 1, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(INT32_MAX, c[0]);
	ASSERT_EQ(INT32_MIN, c[1]);
	ASSERT_EQ(INT32_MIN, c[2]);
	ASSERT_EQ(0, c[3]);
}

TEST(run_axpy_f32)
{
	unsigned int i, j, s;

	for (s = 0; s < 4; s++) {
		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (j = 0; j < ARRAY_SIZE(block_dims); j++) {
				__u64 n = sizes[i], x;
				float av = s == 0 ? 0.0f : s == 1 ? -1.5f :
					   rnd_f32();
				float *y = alloc_f32(n);
				float *y0 = malloc(n * 4);
				float *xv = alloc_f32(n + 3);
				struct snpu_kernel_arg a[NARGS] = { 0 };

				ASSERT_NE(NULL, y0);
				memcpy(y0, y, n * 4);
				a[0] = buf_arg(y, n * 4);
				a[1] = buf_arg(xv, (n + 3) * 4);
				a[2] = scalar_arg(bits_of(av));
				ASSERT_EQ(0, launch(SNPU_KERNEL_AXPY_F32,
						    block_dims[j], a,
						    SNPU_KERNEL_CHUNK));
				for (x = 0; x < n; x++) {
					float p = av * xv[x];
					float want = y0[x] + p;

					ASSERT_EQ(bits_of(want), bits_of(y[x]))
						TH_LOG("n %llu element %llu",
						       (unsigned long long)n,
						       (unsigned long long)x);
				}
				free(y);
				free(y0);
				free(xv);
			}
		}
	}
}

TEST(run_relu_f32)
{
	static const __u32 special[] = {
		0x00000000, 0x80000000, 0x7fc00000, 0xffc00000, 0x7f800001,
		0x7f800000, 0xff800000, 0x00000001, 0x80000001, 0x3f800000,
		0xbf800000, 0x7f7fffff, 0xff7fffff,
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (j = 0; j < ARRAY_SIZE(block_dims); j++) {
			__u64 n = sizes[i], x;
			__u32 *xv = alloc_bytes((n + 1) * 4);
			__u32 *y = alloc_bytes(n * 4);
			struct snpu_kernel_arg a[NARGS] = { 0 };

			/* Any bits at all, NaNs included, and the specials. */
			for (x = 0; x < n && x < ARRAY_SIZE(special); x++)
				xv[x] = special[x];
			a[0] = buf_arg(y, n * 4);
			a[1] = buf_arg(xv, (n + 1) * 4);
			ASSERT_EQ(0, launch(SNPU_KERNEL_RELU_F32,
					    block_dims[j], a,
					    SNPU_KERNEL_CHUNK));
			for (x = 0; x < n; x++) {
				float in = f32_of(xv[x]);
				__u32 want = in > 0.0f ? xv[x] : 0;

				ASSERT_EQ(want, y[x])
					TH_LOG("x bits %08x", xv[x]);
			}
			free(xv);
			free(y);
		}
	}
}

TEST(run_relu_f32_specials)
{
	__u32 xv[6] = {
		0x80000000, 0x7fc00000, 0xffc00000, 0x3f800000, 0xbf800000,
		0x7f800000,
	};
	__u32 want[6] = { 0, 0, 0, 0x3f800000, 0, 0x7f800000 };
	__u32 y[6];
	struct snpu_kernel_arg a[NARGS] = { 0 };

	memset(y, 0xaa, sizeof(y));
	a[0] = buf_arg(y, sizeof(y));
	a[1] = buf_arg(xv, sizeof(xv));
	ASSERT_EQ(0, launch(SNPU_KERNEL_RELU_F32, 2, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(want, y, sizeof(y)));
}

static void run_gemm(struct __test_metadata *_metadata, __u64 m, __u64 n,
		     __u64 k, __u32 nb, __u64 chunk)
{
	float *av = alloc_f32(m * k);
	float *bv = alloc_f32(k * n);
	float *cv = alloc_f32(m * n);
	struct snpu_kernel_arg a[NARGS] = { 0 };
	__u64 r, col, kk;

	a[0] = buf_arg(cv, m * n * 4);
	a[1] = buf_arg(av, m * k * 4);
	a[2] = buf_arg(bv, k * n * 4);
	a[3] = scalar_arg(m);
	a[4] = scalar_arg(n);
	a[5] = scalar_arg(k);
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_F32, nb, a, chunk));
	for (r = 0; r < m; r++) {
		for (col = 0; col < n; col++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++)
				acc += av[r * k + kk] * bv[kk * n + col];
			ASSERT_EQ(bits_of(acc), bits_of(cv[r * n + col]))
				TH_LOG("%llux%llux%llu blocks %u c[%llu][%llu]",
				       (unsigned long long)m,
				       (unsigned long long)n,
				       (unsigned long long)k, nb,
				       (unsigned long long)r,
				       (unsigned long long)col);
		}
	}
	free(av);
	free(bv);
	free(cv);
}

TEST(run_gemm_f32)
{
	static const __u64 shapes[][3] = {
		{ 1, 1, 1 }, { 2, 3, 4 }, { 7, 5, 3 }, { 1, 7, 9 },
		{ 7, 1, 9 }, { 33, 17, 9 }, { 64, 64, 64 }, { 70, 70, 5 },
		{ 3, 5000, 2 }, { 5000, 1, 2 }, { 2, 2, 3000 },
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(shapes); i++)
		for (j = 0; j < ARRAY_SIZE(block_dims); j++)
			run_gemm(_metadata, shapes[i][0], shapes[i][1],
				 shapes[i][2], block_dims[j],
				 SNPU_KERNEL_CHUNK);
}

TEST(run_gemm_f32_chunks)
{
	/* Chunks that start and end inside rows, rows longer than chunks. */
	run_gemm(_metadata, 9, 11, 6, 1, 1);
	run_gemm(_metadata, 9, 11, 6, 3, 7);
	run_gemm(_metadata, 9, 11, 6, 4, 13);
	run_gemm(_metadata, 4, 100, 3, 2, 7);
	run_gemm(_metadata, 3, 3, 3, 64, 2);
}

TEST(run_gemm_f32_identity)
{
	float av[4] = { 1, 2, 3, 4 };		/* 2 x 2 */
	float id[4] = { 1, 0, 0, 1 };
	float bv[6] = { 1, 2, 3, 4, 5, 6 };	/* 2 x 3 */
	float cv[6] = { 0 };
	float want[6] = { 9, 12, 15, 19, 26, 33 };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(cv, 16);
	a[1] = buf_arg(av, 16);
	a[2] = buf_arg(id, 16);
	a[3] = scalar_arg(2);
	a[4] = scalar_arg(2);
	a[5] = scalar_arg(2);
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_F32, 3, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(cv, av, 16));

	a[0] = buf_arg(cv, sizeof(cv));
	a[2] = buf_arg(bv, sizeof(bv));
	a[4] = scalar_arg(3);
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_F32, 2, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(cv, want, sizeof(want)));
}

/*
 * REDUCE_SUM and CRC32C of n units in nb blocks with chunks of @chunk,
 * against the reference per block. out is filled with garbage first:
 * every block, an empty one included, must write its element.
 */
static void run_per_block(struct __test_metadata *_metadata, __u32 kernel,
			  __u64 n, __u32 nb, __u64 chunk, __u32 *result)
{
	__u64 in_bytes = kernel == SNPU_KERNEL_CRC32C ? n : n * 4;
	void *in = kernel == SNPU_KERNEL_REDUCE_SUM_F32 ?
		   (void *)alloc_f32(n) : alloc_bytes(in_bytes);
	__u32 *out = alloc_bytes((__u64)nb * 4 + 4);
	__u32 guard = out[nb];
	struct snpu_kernel_arg a[NARGS] = { 0 };
	__u64 sb, se, i;
	__u32 b;

	a[0] = buf_arg(out, (__u64)nb * 4);
	a[1] = buf_arg(in, in_bytes);
	ASSERT_EQ(0, launch(kernel, nb, a, chunk));
	for (b = 0; b < nb; b++) {
		__u32 want = 0;
		float fs = 0.0f;

		ref_slice(n, nb, b, &sb, &se);
		switch (kernel) {
		case SNPU_KERNEL_REDUCE_SUM_I32:
			for (i = sb; i < se; i++)
				want += ((__u32 *)in)[i];
			break;
		case SNPU_KERNEL_REDUCE_SUM_F32:
			for (i = sb; i < se; i++)
				fs += ((float *)in)[i];
			want = bits_of(fs);
			break;
		case SNPU_KERNEL_CRC32C:
			want = ref_crc32c((__u8 *)in + sb, se - sb);
			break;
		}
		ASSERT_EQ(want, out[b])
			TH_LOG("%s n %llu blocks %u chunk %llu block %u",
			       kinfo[kernel].name, (unsigned long long)n, nb,
			       (unsigned long long)chunk, b);
		if (result)
			result[b] = out[b];
	}
	ASSERT_EQ(guard, out[nb]);
	free(in);
	free(out);
}

static void run_per_block_sizes(struct __test_metadata *_metadata,
				__u32 kernel)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		for (j = 0; j < ARRAY_SIZE(block_dims); j++)
			run_per_block(_metadata, kernel, sizes[i],
				      block_dims[j], SNPU_KERNEL_CHUNK, NULL);
	/* Fewer units than blocks: trailing blocks write 0. */
	run_per_block(_metadata, kernel, 2, 3, SNPU_KERNEL_CHUNK, NULL);
	run_per_block(_metadata, kernel, 1, SNPU_MAX_BLOCK_DIM,
		      SNPU_KERNEL_CHUNK, NULL);
}

TEST(run_reduce_sum_i32)
{
	run_per_block_sizes(_metadata, SNPU_KERNEL_REDUCE_SUM_I32);
}

TEST(run_reduce_sum_f32)
{
	run_per_block_sizes(_metadata, SNPU_KERNEL_REDUCE_SUM_F32);
}

TEST(run_crc32c)
{
	run_per_block_sizes(_metadata, SNPU_KERNEL_CRC32C);
}

TEST(run_reduce_sum_i32_wraps)
{
	__u32 in[3] = { 0xffffffff, 0xffffffff, 3 };
	__u32 out[1] = { 0 };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(out, sizeof(out));
	a[1] = buf_arg(in, sizeof(in));
	ASSERT_EQ(0, launch(SNPU_KERNEL_REDUCE_SUM_I32, 1, a, 2));
	ASSERT_EQ(1ULL, out[0]);
}

TEST(run_reduce_sum_f32_order)
{
	/* Left to right: (1e8 + 1) + ... loses every 1; any other order not. */
	float in[5] = { 1e8f, 1.0f, 1.0f, 1.0f, -1e8f };
	float out[1] = { 0 };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(out, sizeof(out));
	a[1] = buf_arg(in, sizeof(in));
	ASSERT_EQ(0, launch(SNPU_KERNEL_REDUCE_SUM_F32, 1, a, 2));
	ASSERT_EQ(0ULL, bits_of(out[0]));
	ASSERT_EQ(0, launch(SNPU_KERNEL_REDUCE_SUM_F32, 1, a, 1));
	ASSERT_EQ(0ULL, bits_of(out[0]));
}

/* ---- chunking invariance ----------------------------------------------- */

TEST(chunking_invariance)
{
	static const __u32 ks[] = {
		SNPU_KERNEL_REDUCE_SUM_I32, SNPU_KERNEL_REDUCE_SUM_F32,
		SNPU_KERNEL_CRC32C,
	};
	static const __u64 chunks[] = { 1, 7, SNPU_KERNEL_CHUNK };
	static const __u64 ns[] = { 1, 7, 4096, 10007 };
	__u32 first[64], res[64];
	unsigned int i, j, c, d;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		for (j = 0; j < ARRAY_SIZE(ns); j++) {
			for (d = 0; d < ARRAY_SIZE(block_dims); d++) {
				__u32 nb = block_dims[d];
				__u64 seed = rng_state;

				for (c = 0; c < ARRAY_SIZE(chunks); c++) {
					/* The same input every time. */
					rng_state = seed;
					run_per_block(_metadata, ks[i], ns[j],
						      nb, chunks[c],
						      c ? res : first);
					if (c)
						ASSERT_EQ(0, memcmp(first, res,
								    nb * 4));
				}
			}
		}
	}
}

/* Uneven chunks, called directly: 1, 2, 3, ... units long. */
TEST(chunking_uneven)
{
	__u64 n = 10007, pos, len;
	__u8 *in = alloc_bytes(n * 4);
	__u32 out[2], once[2];
	struct snpu_kernel_arg a[NARGS] = { 0 };
	struct snpu_klaunch l;
	__u32 k;

	a[0] = buf_arg(out, sizeof(out));
	a[1] = buf_arg(in, n * 4);
	for (k = SNPU_KERNEL_REDUCE_SUM_I32; k <= SNPU_KERNEL_CRC32C; k++) {
		__u64 units = k == SNPU_KERNEL_CRC32C ? n * 4 : n;

		ASSERT_EQ(0, check(k, 1, a));
		resolve(k, 1, a, &l);
		ASSERT_EQ(units, snpu_kernel_units(&l));
		ASSERT_EQ(0, snpu_kernel_run(&l, 0, 0, units, 0, units));
		once[0] = out[0];
		out[0] = 0x55555555;
		for (pos = 0, len = 1; pos < units; pos += len, len++) {
			__u64 end = units - pos < len ? units : pos + len;

			ASSERT_EQ(0, snpu_kernel_run(&l, 0, 0, units, pos,
						     end));
			/* Empty chunks inside the slice change nothing. */
			if (end < units)
				ASSERT_EQ(0, snpu_kernel_run(&l, 0, 0, units,
							     end, end));
		}
		ASSERT_EQ(once[0], out[0]) TH_LOG("%s", kinfo[k].name);
	}
	free(in);
}

/* ---- CRC-32C ------------------------------------------------------------ */

TEST(crc32c_check_value)
{
	static const char msg[] = "123456789";

	ASSERT_EQ(0xe3069283, snpu_crc32c(~0U, msg, 9) ^ ~0U);
	ASSERT_EQ(0xe3069283, ref_crc32c(msg, 9));
	/* Nothing: the register is unchanged, the crc of no bytes is 0. */
	ASSERT_EQ(0x12345678ULL, snpu_crc32c(0x12345678, msg, 0));
	ASSERT_EQ(0ULL, snpu_crc32c(~0U, msg, 0) ^ ~0U);
}

TEST(crc32c_rfc3720_vectors)
{
	__u8 buf[32];
	int i;

	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0x8a9136aa, snpu_crc32c(~0U, buf, 32) ^ ~0U);
	memset(buf, 0xff, sizeof(buf));
	ASSERT_EQ(0x62a8ab43ULL, snpu_crc32c(~0U, buf, 32) ^ ~0U);
	for (i = 0; i < 32; i++)
		buf[i] = i;
	ASSERT_EQ(0x46dd794eULL, snpu_crc32c(~0U, buf, 32) ^ ~0U);
	for (i = 0; i < 32; i++)
		buf[i] = 31 - i;
	ASSERT_EQ(0x113fdb5cULL, snpu_crc32c(~0U, buf, 32) ^ ~0U);
}

TEST(crc32c_against_bitwise)
{
	static const __u64 lens[] = { 1, 2, 3, 4, 5, 7, 8, 63, 64, 255, 4096,
				      10007 };
	unsigned int i;
	__u64 split;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		__u8 *buf = alloc_bytes(lens[i]);
		__u32 want = ref_crc32c(buf, lens[i]);

		ASSERT_EQ(want, snpu_crc32c(~0U, buf, lens[i]) ^ ~0U);
		/* The register carries over any split. */
		for (split = 0; split <= lens[i]; split += 1 + split / 3) {
			__u32 r = snpu_crc32c(~0U, buf, split);

			r = snpu_crc32c(r, buf + split, lens[i] - split);
			ASSERT_EQ(want, r ^ ~0U);
		}
		free(buf);
	}
}

/* ---- a chunk touches only its own units --------------------------------- */

TEST(run_touches_only_its_chunk)
{
	__u32 c[16], c0[16], av[16], bv[16];
	struct snpu_kernel_arg a[NARGS] = { 0 };
	struct snpu_klaunch l;
	int i;

	fill_random(av, sizeof(av));
	fill_random(bv, sizeof(bv));
	fill_random(c, sizeof(c));
	memcpy(c0, c, sizeof(c));
	a[0] = buf_arg(c, sizeof(c));
	a[1] = buf_arg(av, sizeof(av));
	a[2] = buf_arg(bv, sizeof(bv));
	ASSERT_EQ(0, check(SNPU_KERNEL_ADD_I32, 2, a));
	resolve(SNPU_KERNEL_ADD_I32, 2, a, &l);
	/* Block 1's slice is [8, 16); compute only [10, 13). */
	ASSERT_EQ(0, snpu_kernel_run(&l, 1, 8, 16, 10, 13));
	for (i = 0; i < 16; i++) {
		__u32 want = i >= 10 && i < 13 ? av[i] + bv[i] : c0[i];

		ASSERT_EQ(want, c[i]) TH_LOG("element %d", i);
	}

	/* COPY, bytes [3, 9) only. */
	memcpy(c, c0, sizeof(c));
	a[0] = buf_arg(c, sizeof(c));
	a[1] = buf_arg(av, 20);
	a[2] = scalar_arg(0);
	ASSERT_EQ(0, check(SNPU_KERNEL_COPY, 1, a));
	resolve(SNPU_KERNEL_COPY, 1, a, &l);
	ASSERT_EQ(0, snpu_kernel_run(&l, 0, 0, 20, 3, 9));
	ASSERT_EQ(0, memcmp(c, c0, 3));
	ASSERT_EQ(0, memcmp((__u8 *)c + 3, (__u8 *)av + 3, 6));
	ASSERT_EQ(0, memcmp((__u8 *)c + 9, (__u8 *)c0 + 9, sizeof(c) - 9));
}

/* ---- the kernels for training (ABI 0.8) -------------------------------- */

/* Each of the ABI 0.8 kernels refuses one broken rule at a time. */

static void gemm2_args(struct snpu_kernel_arg *a, __u32 kernel,
		       __u64 m, __u64 n, __u64 k)
{
	memset(a, 0, sizeof(*a) * NARGS);
	a[0] = buf_arg((void *)(uintptr_t)FAKE(0), m * n * 4);
	if (kernel == SNPU_KERNEL_GEMM_TN_F32) {
		a[1] = buf_arg((void *)(uintptr_t)FAKE(1), k * m * 4);
		a[2] = buf_arg((void *)(uintptr_t)FAKE(2), k * n * 4);
	} else {
		a[1] = buf_arg((void *)(uintptr_t)FAKE(1), m * k * 4);
		a[2] = buf_arg((void *)(uintptr_t)FAKE(2), n * k * 4);
	}
	a[3] = scalar_arg(m);
	a[4] = scalar_arg(n);
	a[5] = scalar_arg(k);
}

TEST(check_gemm_tn_nt)
{
	static const __u32 ks[] = { SNPU_KERNEL_GEMM_TN_F32,
				    SNPU_KERNEL_GEMM_NT_F32 };
	struct snpu_kernel_arg a[NARGS];
	unsigned int i, d;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		__u32 k = ks[i];

		/* Operands of m != n != k sized exactly: accepted. */
		gemm2_args(a, k, 2, 3, 5);
		ASSERT_EQ(0, check(k, 1, a));
		gemm2_args(a, k, 1, 1, GEMM_MAX);
		ASSERT_EQ(0, check(k, 1, a));
		/* Each operand one float short. */
		for (d = 0; d < 3; d++) {
			gemm2_args(a, k, 2, 3, 5);
			a[d].bytes -= 4;
			ASSERT_EQ(-EINVAL, check(k, 1, a))
				TH_LOG("%s arg %u", kinfo[k].name, d);
		}
		/* The transposed operand is sized by its own shape. */
		gemm2_args(a, k, 2, 3, 5);
		a[1].bytes = 2 * 5 * 4;
		a[2].bytes = 3 * 5 * 4;
		ASSERT_EQ(0, check(k, 1, a));
		/* m, n, k: 0, above 65536, upper bits. */
		for (d = 3; d < 6; d++) {
			gemm2_args(a, k, 2, 3, 5);
			a[d].value = 0;
			ASSERT_EQ(-EINVAL, check(k, 1, a));
			a[d].value = GEMM_MAX + 1;
			ASSERT_EQ(-EINVAL, check(k, 1, a));
			a[d].value = (1ULL << 32) | 2;
			ASSERT_EQ(-EINVAL, check(k, 1, a));
		}
	}
}

TEST(check_bias_add)
{
	const __u32 k = SNPU_KERNEL_BIAS_ADD_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);		/* 16 elements, n = 4 */
	ASSERT_EQ(0, check(k, 1, a));
	a[2].bytes = 16;
	ASSERT_EQ(0, check(k, 1, a));		/* bias of n = 4: enough */
	a[3].value = 16;
	ASSERT_EQ(-EINVAL, check(k, 1, a));	/* n = 16: too small */
	a[2].bytes = 64;
	ASSERT_EQ(0, check(k, 1, a));
	a[3].value = 3;				/* 16 not a multiple of 3 */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[3].value = 0;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[3].value = 65537;
	a[0].bytes = 65537 * 4;
	a[1].bytes = 65537 * 4;
	a[2].bytes = 65537 * 4;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[3].value = 65536;
	a[0].bytes = a[1].bytes = a[2].bytes = 65536 * 4;
	ASSERT_EQ(0, check(k, 1, a));
	a[3].value |= 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[0].bytes = 62;			/* not whole elements */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 60;			/* x smaller than y */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[1].bytes = 128;			/* larger is fine */
	ASSERT_EQ(0, check(k, 1, a));
}

TEST(check_relu_bwd)
{
	const __u32 k = SNPU_KERNEL_RELU_BWD_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);
	ASSERT_EQ(0, check(k, 1, a));
	a[0].bytes = 63;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 60;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[2].bytes = 60;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[0].bytes = 4;
	ASSERT_EQ(0, check(k, 1, a));
}

TEST(check_softmax_xent)
{
	const __u32 k = SNPU_KERNEL_SOFTMAX_XENT_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);		/* 4 rows of 4 */
	ASSERT_EQ(0, check(k, 1, a));
	a[4].value = 3;			/* 16 logits: not whole rows of 3 */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[4].value = 16;		/* one row: loss, labels of 1 do */
	a[0].bytes = 4;
	a[3].bytes = 4;
	ASSERT_EQ(0, check(k, 1, a));
	a[4].value = 0;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[4].value = 65537;
	a[1].bytes = a[2].bytes = 65537 * 4;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[4].value = 65536;
	a[1].bytes = a[2].bytes = 65536 * 4;
	ASSERT_EQ(0, check(k, 1, a));
	a[4].value |= 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(k, 1, a));

	valid_args(k, 1, a);
	a[2].bytes = 66;		/* logits not whole floats */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[0].bytes = 12;		/* loss: 3 of 4 rows */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 60;		/* dlogits below the logits */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[3].bytes = 12;		/* labels: 3 of 4 rows */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[5].value = 1ULL << 32;	/* scale: upper bits */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[5].value = 0xffffffff;	/* any f32 bits, even a NaN */
	ASSERT_EQ(0, check(k, 1, a));
}

TEST(check_colsum)
{
	const __u32 k = SNPU_KERNEL_COLSUM_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);		/* 4 rows of 4 */
	ASSERT_EQ(0, check(k, 1, a));
	a[2].value = 16;		/* one row of 16 */
	a[0].bytes = 60;		/* out: 15 of 16 columns */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[0].bytes = 64;
	ASSERT_EQ(0, check(k, 1, a));
	a[2].value = 5;			/* not whole rows */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 0;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 65537;
	a[0].bytes = a[1].bytes = 65537 * 4;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 65536;
	a[0].bytes = a[1].bytes = 65536 * 4;
	ASSERT_EQ(0, check(k, 1, a));
	a[2].value |= 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 66;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
}

TEST(check_argmax)
{
	const __u32 k = SNPU_KERNEL_ARGMAX_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);		/* 4 rows of 4 */
	ASSERT_EQ(0, check(k, 1, a));
	a[0].bytes = 12;		/* out: 3 of 4 rows */
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[0].bytes = 16;
	ASSERT_EQ(0, check(k, 1, a));
	a[2].value = 6;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 0;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 65537;
	a[1].bytes = 65537 * 4;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	a[2].value = 65536;
	a[1].bytes = 65536 * 4;
	ASSERT_EQ(0, check(k, 1, a));
	a[2].value |= 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 62;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
}

TEST(check_count_eq)
{
	const __u32 k = SNPU_KERNEL_COUNT_EQ_I32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 5, a);
	ASSERT_EQ(0, check(k, 5, a));
	a[0].bytes = 16;		/* out: one element per block */
	ASSERT_EQ(-EINVAL, check(k, 5, a));
	valid_args(k, 5, a);
	a[1].bytes = 62;
	a[2].bytes = 62;
	ASSERT_EQ(-EINVAL, check(k, 5, a));
	valid_args(k, 5, a);
	a[2].bytes = 60;		/* b smaller than a */
	ASSERT_EQ(-EINVAL, check(k, 5, a));
	a[2].bytes = 68;
	ASSERT_EQ(0, check(k, 5, a));
}

TEST(check_affine)
{
	const __u32 k = SNPU_KERNEL_AFFINE_F32;
	struct snpu_kernel_arg a[NARGS];

	valid_args(k, 1, a);
	ASSERT_EQ(0, check(k, 1, a));
	a[0].bytes = 62;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[1].bytes = 60;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[2].value |= 1ULL << 32;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
	valid_args(k, 1, a);
	a[3].value |= 1ULL << 63;
	ASSERT_EQ(-EINVAL, check(k, 1, a));
}

/*
 * The work bound with the ABI 0.8 units: elements of c times k for the
 * GEMMs, rows times ncls for SOFTMAX_XENT and ARGMAX, columns times rows
 * for COLSUM, elements for the others. At the bound accepted, one unit
 * above refused, two blocks accepted again.
 */
TEST(check_block_work_training)
{
	const __u64 max = SNPU_KERNEL_BLOCK_WORK_MAX;
	struct snpu_kernel_arg a[NARGS];
	static const __u32 ew[] = {
		SNPU_KERNEL_BIAS_ADD_F32, SNPU_KERNEL_RELU_BWD_F32,
		SNPU_KERNEL_AFFINE_F32,
	};
	unsigned int i;

	gemm2_args(a, SNPU_KERNEL_GEMM_TN_F32, 512, 512, 64);
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_TN_F32, 1, a));
	gemm2_args(a, SNPU_KERNEL_GEMM_TN_F32, 5, 52429, 64);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_TN_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_TN_F32, 2, a));
	gemm2_args(a, SNPU_KERNEL_GEMM_NT_F32, 256, 1, GEMM_MAX);
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_NT_F32, 1, a));
	gemm2_args(a, SNPU_KERNEL_GEMM_NT_F32, 257, 1, GEMM_MAX);
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_GEMM_NT_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_GEMM_NT_F32, 2, a));

	/* SOFTMAX_XENT: 2^14 rows of 1024 classes in one block. */
	valid_args(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a);
	a[4].value = 1024;
	a[0].bytes = a[3].bytes = (max / 1024 + 1) * 4;
	a[1].bytes = a[2].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a));
	a[1].bytes = a[2].bytes = (max + 1024) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_SOFTMAX_XENT_F32, 2, a));

	/* ARGMAX likewise. */
	valid_args(SNPU_KERNEL_ARGMAX_F32, 1, a);
	a[2].value = 1024;
	a[0].bytes = (max / 1024 + 1) * 4;
	a[1].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_ARGMAX_F32, 1, a));
	a[1].bytes = (max + 1024) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_ARGMAX_F32, 1, a));
	ASSERT_EQ(0, check(SNPU_KERNEL_ARGMAX_F32, 2, a));

	/* COLSUM: a column costs its rows; 16 columns of 2^20 rows. */
	valid_args(SNPU_KERNEL_COLSUM_F32, 1, a);
	a[2].value = 16;
	a[0].bytes = 64;
	a[1].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_COLSUM_F32, 1, a));
	a[1].bytes = (max + 16) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COLSUM_F32, 1, a));
	/* 2^20 + 1 rows: two blocks of 8 columns each do. */
	ASSERT_EQ(0, check(SNPU_KERNEL_COLSUM_F32, 2, a));
	/* One column of more than the bound of rows: no block_dim helps. */
	a[2].value = 1;
	a[1].bytes = (max + 1) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COLSUM_F32,
				 SNPU_MAX_BLOCK_DIM, a));
	/* Rows near 2^62: the product must not wrap to something small. */
	a[2].value = 65536;
	a[0].bytes = 65536 * 4;
	a[1].bytes = 1ULL << 63;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COLSUM_F32,
				 SNPU_MAX_BLOCK_DIM, a));

	/* COUNT_EQ: input elements. */
	valid_args(SNPU_KERNEL_COUNT_EQ_I32, 1, a);
	a[1].bytes = a[2].bytes = max * 4;
	ASSERT_EQ(0, check(SNPU_KERNEL_COUNT_EQ_I32, 1, a));
	a[1].bytes = a[2].bytes = (max + 1) * 4;
	ASSERT_EQ(-EINVAL, check(SNPU_KERNEL_COUNT_EQ_I32, 1, a));

	/* Elementwise: output elements. */
	for (i = 0; i < ARRAY_SIZE(ew); i++) {
		__u32 k = ew[i];
		unsigned int j;

		valid_args(k, 1, a);
		if (k == SNPU_KERNEL_BIAS_ADD_F32)
			a[3].value = 1;
		for (j = 0; j < 3; j++)
			if (kinfo[k].buffers & (1U << j))
				a[j].bytes = (max + 1) * 4;
		a[0].bytes = max * 4;
		ASSERT_EQ(0, check(k, 1, a)) TH_LOG("%s", kinfo[k].name);
		a[0].bytes += 4;
		ASSERT_EQ(-EINVAL, check(k, 1, a)) TH_LOG("%s", kinfo[k].name);
		ASSERT_EQ(0, check(k, 2, a)) TH_LOG("%s", kinfo[k].name);
	}
}

/*
 * The plan of a launch, from its arguments, is what the separate calls
 * give for the resolved launch (its steps, its chunk): for every kernel,
 * with arguments of random sizes and values (none dereferenced), and for
 * an unknown kernel.
 */
TEST(plan_matches_the_separate_calls)
{
	struct snpu_kernel_arg a[NARGS];
	struct snpu_klaunch l;
	__u64 units, chunk;
	unsigned int i, round;
	__u32 k, bufs;
	bool fpu;

	for (k = 0; k < SNPU_KERNEL_COUNT; k++) {
		for (round = 0; round < 200; round++) {
			for (i = 0; i < NARGS; i++) {
				a[i].value = round & 1 ? rnd() : rnd() % 70000;
				a[i].bytes = round & 2 ? rnd() :
					     4 * (rnd() % 100000);
			}
			bufs = snpu_kernel_plan(k, a, &units, &chunk, &fpu);
			resolve(k, 1, a, &l);
			ASSERT_EQ(snpu_kernel_buffers(k), bufs)
				TH_LOG("%s", kinfo[k].name);
			ASSERT_EQ(snpu_kernel_steps(&l), units)
				TH_LOG("%s", kinfo[k].name);
			ASSERT_EQ(snpu_kernel_chunk(&l), chunk)
				TH_LOG("%s", kinfo[k].name);
			ASSERT_EQ(snpu_kernel_uses_fpu(k), fpu)
				TH_LOG("%s", kinfo[k].name);
		}
	}
	ASSERT_EQ(0U, snpu_kernel_plan(SNPU_KERNEL_COUNT, a, &units, &chunk,
				       &fpu));
	ASSERT_EQ(0ULL, units);
	ASSERT_FALSE(fpu);
}

TEST(units_training)
{
	struct snpu_klaunch l = { .block_dim = 1 };

	l.scalar[3] = 3;
	l.scalar[4] = 5;
	l.scalar[5] = 7;
	l.kernel = SNPU_KERNEL_GEMM_TN_F32;
	ASSERT_EQ(15ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_GEMM_NT_F32;
	ASSERT_EQ(15ULL, snpu_kernel_units(&l));

	memset(&l, 0, sizeof(l));
	l.block_dim = 1;
	l.bytes[0] = 400;
	l.bytes[1] = 800;
	l.bytes[2] = 1200;
	l.kernel = SNPU_KERNEL_BIAS_ADD_F32;
	ASSERT_EQ(100ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_RELU_BWD_F32;
	ASSERT_EQ(100ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_AFFINE_F32;
	ASSERT_EQ(100ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_COUNT_EQ_I32;
	ASSERT_EQ(200ULL, snpu_kernel_units(&l));
	/* Rows of the logits (arg 2), rows of the input (arg 1), columns. */
	l.kernel = SNPU_KERNEL_SOFTMAX_XENT_F32;
	l.scalar[4] = 10;
	ASSERT_EQ(30ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_ARGMAX_F32;
	l.scalar[2] = 10;
	ASSERT_EQ(20ULL, snpu_kernel_units(&l));
	l.kernel = SNPU_KERNEL_COLSUM_F32;
	ASSERT_EQ(10ULL, snpu_kernel_units(&l));
}

/* A chunk of a costed kernel is about SNPU_KERNEL_CHUNK_WORK of its cost. */
TEST(chunk_bounds_training)
{
	struct snpu_klaunch l = { .block_dim = 1 };

	l.kernel = SNPU_KERNEL_GEMM_TN_F32;
	l.scalar[5] = 1000;
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK_WORK / 1000), snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_GEMM_NT_F32;
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK_WORK / 1000), snpu_kernel_chunk(&l));
	/* A class of the softmax counts SNPU_KERNEL_SOFTMAX_CLASS_WORK. */
	l.kernel = SNPU_KERNEL_SOFTMAX_XENT_F32;
	l.scalar[4] = 10;
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK_WORK / 10 /
			  SNPU_KERNEL_SOFTMAX_CLASS_WORK), snpu_kernel_chunk(&l));
	l.scalar[4] = SNPU_KERNEL_CHUNK_WORK / SNPU_KERNEL_SOFTMAX_CLASS_WORK;
	ASSERT_EQ(1ULL, snpu_kernel_chunk(&l));
	l.scalar[4] = 65536;
	ASSERT_EQ(1ULL, snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_ARGMAX_F32;
	l.scalar[2] = 65536;
	ASSERT_EQ(1ULL, snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_COLSUM_F32;
	l.scalar[2] = 4;
	l.bytes[1] = 4 * 4 * 100;	/* 100 rows */
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK_WORK / 100), snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_BIAS_ADD_F32;
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK), snpu_kernel_chunk(&l));
	l.kernel = SNPU_KERNEL_COUNT_EQ_I32;
	ASSERT_EQ((__u64)(SNPU_KERNEL_CHUNK), snpu_kernel_chunk(&l));
}

/*
 * No FPU section does more than SNPU_KERNEL_CHUNK_WORK of work (or
 * SNPU_KERNEL_CHUNK elements of an element-wise kernel), for every f32
 * kernel, at the block-work bound: one block of 2^24 work, the most a
 * launch may give a block. A chunk's work is its steps times the work of
 * a step, the launch's work (units times the documented cost of a unit)
 * over its steps, from snpu_kernel_plan() as the module plans a launch.
 * A COLSUM column's cost is its rows, bounded only by the block-work
 * bound: such a column must not be one chunk.
 */
TEST(chunk_work_bounded_at_the_block_bound)
{
	static const struct {
		__u32 kernel;
		__u64 m, n, k;	/* GEMM m n k; SOFTMAX, ARGMAX rows ncls;
				 * COLSUM rows n; element-wise count */
	} cases[] = {
		{ SNPU_KERNEL_GEMM_F32, 1, 256, 65536 },
		{ SNPU_KERNEL_GEMM_F32, 4096, 4096, 1 },
		{ SNPU_KERNEL_GEMM_F32, 64, 128, 784 },
		{ SNPU_KERNEL_GEMM_TN_F32, 1, 256, 65536 },
		{ SNPU_KERNEL_GEMM_TN_F32, 784, 128, 64 },
		{ SNPU_KERNEL_GEMM_NT_F32, 1, 256, 65536 },
		{ SNPU_KERNEL_GEMM_NT_F32, 64, 128, 10 },
		{ SNPU_KERNEL_SOFTMAX_XENT_F32, 256, 65536, 0 },
		{ SNPU_KERNEL_SOFTMAX_XENT_F32, 1ULL << 24, 1, 0 },
		{ SNPU_KERNEL_SOFTMAX_XENT_F32, 64, 10, 0 },
		{ SNPU_KERNEL_ARGMAX_F32, 256, 65536, 0 },
		{ SNPU_KERNEL_ARGMAX_F32, 64, 10, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 1ULL << 24, 1, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 1ULL << 20, 16, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 65537, 3, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 65536, 256, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 256, 65536, 0 },
		{ SNPU_KERNEL_COLSUM_F32, 64, 128, 0 },
		{ SNPU_KERNEL_ADD_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_MUL_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_AXPY_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_RELU_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_RELU_BWD_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_BIAS_ADD_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_AFFINE_F32, 1ULL << 24, 0, 0 },
		{ SNPU_KERNEL_REDUCE_SUM_F32, 1ULL << 24, 0, 0 },
	};
	struct snpu_kernel_arg a[NARGS];
	__u64 steps, chunk, units, cost, step_work;
	unsigned int i;
	bool fpu, elementwise;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		__u32 k = cases[i].kernel;
		__u64 m = cases[i].m, n = cases[i].n, kk = cases[i].k;

		elementwise = false;
		valid_args(k, 1, a);
		switch (k) {
		case SNPU_KERNEL_GEMM_F32:
		case SNPU_KERNEL_GEMM_TN_F32:
		case SNPU_KERNEL_GEMM_NT_F32:
			gemm2_args(a, k, m, n, kk);
			units = m * n;
			cost = kk;
			break;
		case SNPU_KERNEL_SOFTMAX_XENT_F32:
			a[0].bytes = m * 4;
			a[1].bytes = m * n * 4;
			a[2].bytes = m * n * 4;
			a[3].bytes = m * 4;
			a[4] = scalar_arg(n);
			units = m;
			cost = n;
			break;
		case SNPU_KERNEL_ARGMAX_F32:
			a[0].bytes = m * 4;
			a[1].bytes = m * n * 4;
			a[2] = scalar_arg(n);
			units = m;
			cost = n;
			break;
		case SNPU_KERNEL_COLSUM_F32:
			a[0].bytes = n * 4;
			a[1].bytes = m * n * 4;
			a[2] = scalar_arg(n);
			units = n;
			cost = m;
			break;
		case SNPU_KERNEL_REDUCE_SUM_F32:
			a[1].bytes = m * 4;
			units = m;
			cost = 1;
			elementwise = true;
			break;
		default:
			a[0].bytes = m * 4;
			a[1].bytes = m * 4;
			if (kinfo[k].buffers & 4)
				a[2].bytes = k == SNPU_KERNEL_BIAS_ADD_F32 ?
					     16 : m * 4;
			units = m;
			cost = 1;
			elementwise = true;
			break;
		}
		ASSERT_EQ(0, check(k, 1, a))
			TH_LOG("%s case %u is not a valid launch",
			       kinfo[k].name, i);
		ASSERT_LE(units * cost, SNPU_KERNEL_BLOCK_WORK_MAX);
		snpu_kernel_plan(k, a, &steps, &chunk, &fpu);
		ASSERT_TRUE(fpu);
		ASSERT_GE(steps, units);
		step_work = (units * cost + steps - 1) / steps;
		if (elementwise) {
			ASSERT_LE(chunk, (__u64)SNPU_KERNEL_CHUNK)
				TH_LOG("%s: chunk of %llu elements",
				       kinfo[k].name, (unsigned long long)chunk);
		} else {
			ASSERT_LE(chunk * step_work,
				  (__u64)SNPU_KERNEL_CHUNK_WORK)
				TH_LOG("%s %llu %llu %llu: a chunk of %llu steps of %llu work",
				       kinfo[k].name, (unsigned long long)m,
				       (unsigned long long)n,
				       (unsigned long long)kk,
				       (unsigned long long)chunk,
				       (unsigned long long)step_work);
		}
	}
}

/* The chunk sizes the run tests use: the module's, and awkward ones. */
static __u64 train_chunk(const struct snpu_kernel_arg *a, __u32 kernel,
			 __u32 nb, unsigned int variant)
{
	struct snpu_klaunch l;

	if (variant == 1)
		return 1;
	if (variant == 2)
		return 7;
	resolve(kernel, nb, a, &l);
	return snpu_kernel_chunk(&l);
}

#define TRAIN_VARIANTS	3

static void run_gemm2(struct __test_metadata *_metadata, __u32 kernel,
		      __u64 m, __u64 n, __u64 k)
{
	float *av = alloc_f32(m * k);
	float *bv = alloc_f32(k * n);
	float *cv = alloc_f32(m * n);
	float *want = alloc_f32(m * n);
	struct snpu_kernel_arg a[NARGS];
	__u64 r, col, kk;
	unsigned int i, v;

	for (r = 0; r < m; r++) {
		for (col = 0; col < n; col++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++)
				acc += kernel == SNPU_KERNEL_GEMM_TN_F32 ?
				       av[kk * m + r] * bv[kk * n + col] :
				       av[r * k + kk] * bv[col * k + kk];
			want[r * n + col] = acc;
		}
	}
	gemm2_args(a, kernel, m, n, k);
	a[0].value = (uintptr_t)cv;
	a[1].value = (uintptr_t)av;
	a[2].value = (uintptr_t)bv;
	for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
		for (v = 0; v < TRAIN_VARIANTS; v++) {
			memset(cv, 0xa5, m * n * 4);
			ASSERT_EQ(0, launch(kernel, block_dims[i], a,
					    train_chunk(a, kernel,
							block_dims[i], v)));
			ASSERT_EQ(0, memcmp(want, cv, m * n * 4))
				TH_LOG("%s %llux%llux%llu blocks %u chunks %u",
				       kinfo[kernel].name,
				       (unsigned long long)m,
				       (unsigned long long)n,
				       (unsigned long long)k, block_dims[i], v);
		}
	}
	free(av);
	free(bv);
	free(cv);
	free(want);
}

static const __u64 gemm2_shapes[][3] = {
	{ 1, 1, 1 }, { 2, 3, 4 }, { 7, 5, 3 }, { 1, 7, 9 }, { 7, 1, 9 },
	{ 33, 17, 9 }, { 64, 10, 128 }, { 10, 64, 32 }, { 3, 700, 2 },
	{ 2, 2, 3000 },
};

TEST(run_gemm_tn_f32)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(gemm2_shapes); i++)
		run_gemm2(_metadata, SNPU_KERNEL_GEMM_TN_F32,
			  gemm2_shapes[i][0], gemm2_shapes[i][1],
			  gemm2_shapes[i][2]);
}

TEST(run_gemm_nt_f32)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(gemm2_shapes); i++)
		run_gemm2(_metadata, SNPU_KERNEL_GEMM_NT_F32,
			  gemm2_shapes[i][0], gemm2_shapes[i][1],
			  gemm2_shapes[i][2]);
}

/* a^T b and a b^T against GEMM_F32 of the transposed operand. */
TEST(run_gemm_tn_nt_match_gemm)
{
	const __u64 m = 5, n = 6, k = 7;
	float *a = alloc_f32(m * k), *at = alloc_f32(k * m);
	float *b = alloc_f32(k * n), *bt = alloc_f32(n * k);
	float *c = alloc_f32(m * n), *c2 = alloc_f32(m * n);
	struct snpu_kernel_arg g[NARGS];
	__u64 i, j;

	for (i = 0; i < m; i++)
		for (j = 0; j < k; j++)
			at[j * m + i] = a[i * k + j];
	for (i = 0; i < k; i++)
		for (j = 0; j < n; j++)
			bt[j * k + i] = b[i * n + j];
	gemm_args(g, m, n, k);
	g[0].value = (uintptr_t)c;
	g[1].value = (uintptr_t)a;
	g[2].value = (uintptr_t)b;
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_F32, 2, g, SNPU_KERNEL_CHUNK));
	g[0].value = (uintptr_t)c2;
	g[1].value = (uintptr_t)at;
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_TN_F32, 3, g, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(c, c2, m * n * 4));
	memset(c2, 0, m * n * 4);
	g[1].value = (uintptr_t)a;
	g[2].value = (uintptr_t)bt;
	ASSERT_EQ(0, launch(SNPU_KERNEL_GEMM_NT_F32, 4, g, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(c, c2, m * n * 4));
	free(a);
	free(at);
	free(b);
	free(bt);
	free(c);
	free(c2);
}

TEST(run_bias_add_f32)
{
	static const __u64 shapes[][2] = {	/* rows, n */
		{ 1, 1 }, { 1, 7 }, { 7, 1 }, { 5, 3 }, { 64, 128 },
		{ 3, 5000 }, { 1000, 10 },
	};
	unsigned int s, i, v;

	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		__u64 rows = shapes[s][0], n = shapes[s][1], cnt = rows * n;
		float *x = alloc_f32(cnt + 3), *bias = alloc_f32(n);
		float *y = alloc_f32(cnt), *want = alloc_f32(cnt);
		struct snpu_kernel_arg a[NARGS] = { 0 };
		__u64 e;

		for (e = 0; e < cnt; e++)
			want[e] = x[e] + bias[e % n];
		a[0] = buf_arg(y, cnt * 4);
		a[1] = buf_arg(x, (cnt + 3) * 4);
		a[2] = buf_arg(bias, n * 4);
		a[3] = scalar_arg(n);
		for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
			for (v = 0; v < TRAIN_VARIANTS; v++) {
				memset(y, 0xa5, cnt * 4);
				ASSERT_EQ(0, launch(SNPU_KERNEL_BIAS_ADD_F32,
						    block_dims[i], a,
						    train_chunk(a,
							SNPU_KERNEL_BIAS_ADD_F32,
							block_dims[i], v)));
				ASSERT_EQ(0, memcmp(want, y, cnt * 4))
					TH_LOG("%llu x %llu blocks %u",
					       (unsigned long long)rows,
					       (unsigned long long)n,
					       block_dims[i]);
			}
		}
		free(x);
		free(bias);
		free(y);
		free(want);
	}
}

TEST(run_relu_bwd_f32)
{
	unsigned int s, i, v;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		__u64 n = sizes[s], e;
		float *dy = alloc_f32(n), *yv = alloc_f32(n + 1);
		float *dx = alloc_f32(n), *want = alloc_f32(n);
		struct snpu_kernel_arg a[NARGS] = { 0 };

		for (e = 0; e < n; e++)
			want[e] = yv[e] > 0.0f ? dy[e] : 0.0f;
		a[0] = buf_arg(dx, n * 4);
		a[1] = buf_arg(dy, n * 4);
		a[2] = buf_arg(yv, (n + 1) * 4);
		for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
			for (v = 0; v < TRAIN_VARIANTS; v++) {
				memset(dx, 0xa5, n * 4);
				ASSERT_EQ(0, launch(SNPU_KERNEL_RELU_BWD_F32,
						    block_dims[i], a,
						    train_chunk(a,
							SNPU_KERNEL_RELU_BWD_F32,
							block_dims[i], v)));
				ASSERT_EQ(0, memcmp(want, dx, n * 4));
			}
		}
		free(dy);
		free(yv);
		free(dx);
		free(want);
	}
}

/* -0.0, +0.0 and NaN outputs of the ReLU pass no gradient. */
TEST(run_relu_bwd_f32_specials)
{
	float yv[5] = { -0.0f, 0.0f, f32_of(0x7fc00000), 1e-45f, -1.0f };
	float dy[5] = { 2.0f, 3.0f, 4.0f, 5.0f, 6.0f };
	float dx[5];
	float want[5] = { 0.0f, 0.0f, 0.0f, 5.0f, 0.0f };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(dx, sizeof(dx));
	a[1] = buf_arg(dy, sizeof(dy));
	a[2] = buf_arg(yv, sizeof(yv));
	ASSERT_EQ(0, launch(SNPU_KERNEL_RELU_BWD_F32, 2, a,
			    SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(want, dx, sizeof(dx)));
}

/*
 * Logits like a network's: moderate values, so that exp's whole range
 * of interest is used without every row being dominated by one class.
 */
static void fill_logits(float *x, __u64 n, float spread)
{
	__u64 i;

	for (i = 0; i < n; i++)
		x[i] = ((float)(rnd() >> 40) / (float)(1 << 24) - 0.5f) *
		       spread;
}

/*
 * The kernel's formula, written again with the kernel's exp and log (so
 * the comparison can be bit for bit), and checked against libm in double
 * within a tolerance.
 */
static void ref_softmax_xent(const float *x, const __s32 *lab, __u64 rows,
			     __u32 ncls, float scale, float *loss, float *d)
{
	__u64 r;
	__u32 j;

	for (r = 0; r < rows; r++) {
		const float *xr = x + r * ncls;
		float *dr = d + r * ncls;
		float mx = xr[0], s = 0.0f;

		for (j = 1; j < ncls; j++)
			mx = xr[j] > mx ? xr[j] : mx;
		for (j = 0; j < ncls; j++) {
			dr[j] = f32_of(snpu_f32_exp_bits(bits_of(xr[j] - mx)));
			s += dr[j];
		}
		loss[r] = f32_of(snpu_f32_log_bits(bits_of(s))) -
			  (xr[lab[r]] - mx);
		for (j = 0; j < ncls; j++)
			dr[j] = (dr[j] / s - (j == (__u32)lab[r] ? 1.0f : 0.0f)) *
				scale;
	}
}

static void run_softmax(struct __test_metadata *_metadata, __u64 rows,
			__u32 ncls, float spread)
{
	float *x = alloc_f32(rows * ncls);
	float *loss = alloc_f32(rows), *d = alloc_f32(rows * ncls);
	float *wl = alloc_f32(rows), *wd = alloc_f32(rows * ncls);
	__s32 *lab = alloc_bytes(rows * 4);
	const float scale = 1.0f / 32.0f;
	struct snpu_kernel_arg a[NARGS] = { 0 };
	unsigned int i, v;
	__u64 r;
	__u32 j;

	fill_logits(x, rows * ncls, spread);
	for (r = 0; r < rows; r++)
		lab[r] = (__s32)(rnd() % ncls);
	ref_softmax_xent(x, lab, rows, ncls, scale, wl, wd);
	/* The formula itself against libm in double. */
	for (r = 0; r < rows; r++) {
		double mx = x[r * ncls], s = 0.0, l;

		for (j = 1; j < ncls; j++)
			mx = x[r * ncls + j] > mx ? x[r * ncls + j] : mx;
		for (j = 0; j < ncls; j++)
			s += exp((double)x[r * ncls + j] - mx);
		l = log(s) - ((double)x[r * ncls + lab[r]] - mx);
		ASSERT_LT(fabs(l - wl[r]), 1e-5 * (1.0 + fabs(l)))
			TH_LOG("row %llu: %g vs %g", (unsigned long long)r,
			       l, (double)wl[r]);
		for (j = 0; j < ncls; j++) {
			double p = exp((double)x[r * ncls + j] - mx) / s;
			double g = (p - (j == (__u32)lab[r])) * scale;

			ASSERT_LT(fabs(g - wd[r * ncls + j]), 1e-6 * scale);
		}
	}
	a[0] = buf_arg(loss, rows * 4);
	a[1] = buf_arg(d, rows * ncls * 4);
	a[2] = buf_arg(x, rows * ncls * 4);
	a[3] = buf_arg(lab, rows * 4);
	a[4] = scalar_arg(ncls);
	a[5] = scalar_arg(bits_of(scale));
	for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
		for (v = 0; v < TRAIN_VARIANTS; v++) {
			memset(loss, 0xa5, rows * 4);
			memset(d, 0xa5, rows * ncls * 4);
			ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32,
					    block_dims[i], a,
					    train_chunk(a,
						SNPU_KERNEL_SOFTMAX_XENT_F32,
						block_dims[i], v)));
			ASSERT_EQ(0, memcmp(wl, loss, rows * 4))
				TH_LOG("%llu x %u blocks %u",
				       (unsigned long long)rows, ncls,
				       block_dims[i]);
			ASSERT_EQ(0, memcmp(wd, d, rows * ncls * 4));
		}
	}
	free(x);
	free(loss);
	free(d);
	free(wl);
	free(wd);
	free(lab);
}

TEST(run_softmax_xent_f32)
{
	run_softmax(_metadata, 1, 1, 4.0f);
	run_softmax(_metadata, 1, 10, 4.0f);
	run_softmax(_metadata, 7, 10, 20.0f);
	run_softmax(_metadata, 100, 10, 8.0f);
	run_softmax(_metadata, 3, 1000, 60.0f);
	run_softmax(_metadata, 65, 3, 200.0f);
}

/* One class: p = 1, loss 0, gradient 0 whatever the logit. */
TEST(run_softmax_xent_one_class)
{
	float x[3] = { -5.0f, 0.0f, 1e30f }, loss[3], d[3];
	__s32 lab[3] = { 0, 0, 0 };
	struct snpu_kernel_arg a[NARGS] = { 0 };
	int r;

	a[0] = buf_arg(loss, sizeof(loss));
	a[1] = buf_arg(d, sizeof(d));
	a[2] = buf_arg(x, sizeof(x));
	a[3] = buf_arg(lab, sizeof(lab));
	a[4] = scalar_arg(1);
	a[5] = scalar_arg(0x3f800000);
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 2, a,
			    SNPU_KERNEL_CHUNK));
	for (r = 0; r < 3; r++) {
		ASSERT_EQ(0U, bits_of(loss[r]));
		ASSERT_EQ(0U, bits_of(d[r]));
	}
}

/* Known values: uniform logits give log(ncls) and (1/ncls - [j == t]). */
TEST(run_softmax_xent_uniform)
{
	float x[8] = { 3, 3, 3, 3, -1, -1, -1, -1 }, loss[2], d[8];
	__s32 lab[2] = { 2, 0 };
	struct snpu_kernel_arg a[NARGS] = { 0 };
	int j;

	a[0] = buf_arg(loss, sizeof(loss));
	a[1] = buf_arg(d, sizeof(d));
	a[2] = buf_arg(x, sizeof(x));
	a[3] = buf_arg(lab, sizeof(lab));
	a[4] = scalar_arg(4);
	a[5] = scalar_arg(bits_of(2.0f));
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a,
			    SNPU_KERNEL_CHUNK));
	ASSERT_LT(fabs(loss[0] - log(4.0)), 2e-7);
	ASSERT_EQ(bits_of(loss[0]), bits_of(loss[1]));
	for (j = 0; j < 4; j++) {
		ASSERT_EQ(bits_of(j == 2 ? -1.5f : 0.5f), bits_of(d[j]));
		ASSERT_EQ(bits_of(j == 0 ? -1.5f : 0.5f), bits_of(d[4 + j]));
	}
}

/* Large logits do not overflow: the row's maximum is subtracted first. */
TEST(run_softmax_xent_large_logits)
{
	float x[3] = { 1000.0f, 999.0f, -1000.0f }, loss[1], d[3];
	__s32 lab[1] = { 1 };
	struct snpu_kernel_arg a[NARGS] = { 0 };
	double s = 1.0 + exp(-1.0);

	a[0] = buf_arg(loss, sizeof(loss));
	a[1] = buf_arg(d, sizeof(d));
	a[2] = buf_arg(x, sizeof(x));
	a[3] = buf_arg(lab, sizeof(lab));
	a[4] = scalar_arg(3);
	a[5] = scalar_arg(0x3f800000);
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a,
			    SNPU_KERNEL_CHUNK));
	ASSERT_LT(fabs(loss[0] - (log(s) + 1.0)), 1e-6);
	ASSERT_LT(fabs(d[0] - 1.0 / s), 1e-6);
	ASSERT_LT(fabs(d[1] - (exp(-1.0) / s - 1.0)), 1e-6);
	ASSERT_EQ(0U, bits_of(d[2]));
}

/* dlogits may be the logits buffer itself: the same results. */
TEST(run_softmax_xent_in_place)
{
	const __u64 rows = 9;
	const __u32 ncls = 10;
	float *x = alloc_f32(rows * ncls), *d = alloc_f32(rows * ncls);
	float *loss = alloc_f32(rows), *loss2 = alloc_f32(rows);
	__s32 *lab = alloc_bytes(rows * 4);
	struct snpu_kernel_arg a[NARGS] = { 0 };
	__u64 r;

	fill_logits(x, rows * ncls, 10.0f);
	for (r = 0; r < rows; r++)
		lab[r] = (__s32)(rnd() % ncls);
	a[0] = buf_arg(loss, rows * 4);
	a[1] = buf_arg(d, rows * ncls * 4);
	a[2] = buf_arg(x, rows * ncls * 4);
	a[3] = buf_arg(lab, rows * 4);
	a[4] = scalar_arg(ncls);
	a[5] = scalar_arg(0x3f800000);
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 3, a, 2));
	a[0] = buf_arg(loss2, rows * 4);
	a[1] = buf_arg(x, rows * ncls * 4);
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 3, a, 2));
	ASSERT_EQ(0, memcmp(loss, loss2, rows * 4));
	ASSERT_EQ(0, memcmp(d, x, rows * ncls * 4));
	free(x);
	free(d);
	free(loss);
	free(loss2);
	free(lab);
}

/*
 * A label outside [0, ncls) fails the run with -EDOM at its row: the rows
 * before it in the chunk are written, it is not.
 */
TEST(run_softmax_xent_bad_label)
{
	static const __s32 bad[] = { -1, 10, 11, 0x7fffffff, INT32_MIN };
	const __u64 rows = 6;
	const __u32 ncls = 10;
	float *x = alloc_f32(rows * ncls), *d = alloc_f32(rows * ncls);
	float *loss = alloc_f32(rows);
	__s32 lab[6] = { 0, 9, 3, 4, 5, 6 };
	struct snpu_kernel_arg a[NARGS] = { 0 };
	struct snpu_klaunch l;
	unsigned int i;

	fill_logits(x, rows * ncls, 4.0f);
	a[0] = buf_arg(loss, rows * 4);
	a[1] = buf_arg(d, rows * ncls * 4);
	a[2] = buf_arg(x, rows * ncls * 4);
	a[3] = buf_arg(lab, sizeof(lab));
	a[4] = scalar_arg(ncls);
	a[5] = scalar_arg(0x3f800000);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		lab[3] = bad[i];
		ASSERT_EQ(0, check(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a));
		memset(loss, 0xa5, rows * 4);
		resolve(SNPU_KERNEL_SOFTMAX_XENT_F32, 1, a, &l);
		ASSERT_EQ(-EDOM, snpu_kernel_run(&l, 0, 0, rows, 0, rows));
		ASSERT_NE(0xa5a5a5a5U, bits_of(loss[2]));
		ASSERT_EQ(0xa5a5a5a5U, bits_of(loss[3]));
		ASSERT_EQ(0xa5a5a5a5U, bits_of(loss[4]));
		/* The blocks of other rows are not stopped by it. */
		ASSERT_EQ(-EDOM, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 6, a, 1));
		ASSERT_NE(0xa5a5a5a5U, bits_of(loss[4]));
	}
	lab[3] = 9;
	ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32, 6, a, 1));
	free(x);
	free(d);
	free(loss);
}

TEST(run_colsum_f32)
{
	static const __u64 shapes[][2] = {	/* rows, n */
		{ 1, 1 }, { 1, 9 }, { 9, 1 }, { 5, 3 }, { 64, 128 },
		{ 2, 5000 }, { 1000, 10 }, { 4097, 2 },
	};
	unsigned int s, i, v;

	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		__u64 rows = shapes[s][0], n = shapes[s][1], r, j;
		float *in = alloc_f32(rows * n), *out = alloc_f32(n + 2);
		float *want = alloc_f32(n);
		struct snpu_kernel_arg a[NARGS] = { 0 };

		for (j = 0; j < n; j++) {
			float acc = 0.0f;

			for (r = 0; r < rows; r++)
				acc += in[r * n + j];
			want[j] = acc;
		}
		a[0] = buf_arg(out, (n + 2) * 4);
		a[1] = buf_arg(in, rows * n * 4);
		a[2] = scalar_arg(n);
		for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
			for (v = 0; v < TRAIN_VARIANTS; v++) {
				memset(out, 0xa5, (n + 2) * 4);
				ASSERT_EQ(0, launch(SNPU_KERNEL_COLSUM_F32,
						    block_dims[i], a,
						    train_chunk(a,
							SNPU_KERNEL_COLSUM_F32,
							block_dims[i], v)));
				ASSERT_EQ(0, memcmp(want, out, n * 4))
					TH_LOG("%llu x %llu blocks %u",
					       (unsigned long long)rows,
					       (unsigned long long)n,
					       block_dims[i]);
				/* Past n, out is not touched. */
				ASSERT_EQ(0xa5a5a5a5U, bits_of(out[n]));
			}
		}
		free(in);
		free(out);
		free(want);
	}
}

static void run_argmax(struct __test_metadata *_metadata, __u64 rows,
		       __u32 ncls, bool ties)
{
	float *in = alloc_f32(rows * ncls);
	__s32 *out = alloc_bytes(rows * 4), *want = alloc_bytes(rows * 4);
	struct snpu_kernel_arg a[NARGS] = { 0 };
	unsigned int i, v;
	__u64 r;
	__u32 j;

	if (ties)
		for (r = 0; r < rows * ncls; r++)
			in[r] = (float)(rnd() % 4);
	for (r = 0; r < rows; r++) {
		__u32 best = 0;

		for (j = 1; j < ncls; j++)
			if (in[r * ncls + j] > in[r * ncls + best])
				best = j;
		want[r] = (__s32)best;
	}
	a[0] = buf_arg(out, rows * 4);
	a[1] = buf_arg(in, rows * ncls * 4);
	a[2] = scalar_arg(ncls);
	for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
		for (v = 0; v < TRAIN_VARIANTS; v++) {
			memset(out, 0xa5, rows * 4);
			ASSERT_EQ(0, launch(SNPU_KERNEL_ARGMAX_F32,
					    block_dims[i], a,
					    train_chunk(a,
							SNPU_KERNEL_ARGMAX_F32,
							block_dims[i], v)));
			ASSERT_EQ(0, memcmp(want, out, rows * 4));
		}
	}
	free(in);
	free(out);
	free(want);
}

TEST(run_argmax_f32)
{
	run_argmax(_metadata, 1, 1, false);
	run_argmax(_metadata, 10, 1, false);
	run_argmax(_metadata, 1, 10, false);
	run_argmax(_metadata, 100, 10, false);
	run_argmax(_metadata, 100, 10, true);
	run_argmax(_metadata, 3, 5000, true);
	run_argmax(_metadata, 1000, 2, true);
}

/* Ties go to the first; a NaN never wins; -0.0 and +0.0 are equal. */
TEST(run_argmax_f32_specials)
{
	float in[16] = {
		1, 5, 5, 2,
		f32_of(0x7fc00000), -3, -2, -2,
		-0.0f, 0.0f, -1, -0.0f,
		-1, f32_of(0x7fc00000), f32_of(0xff800000), -0.5f,
	};
	__s32 out[4];
	const __s32 want[4] = { 1, 0, 0, 3 };
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(out, sizeof(out));
	a[1] = buf_arg(in, sizeof(in));
	a[2] = scalar_arg(4);
	ASSERT_EQ(0, launch(SNPU_KERNEL_ARGMAX_F32, 2, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0, memcmp(want, out, sizeof(out)));
}

TEST(run_count_eq_i32)
{
	unsigned int s, i, v;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		__u64 n = sizes[s], e;
		__u32 *x = alloc_bytes(n * 4), *y = alloc_bytes(n * 4 + 8);

		/* About half equal. */
		for (e = 0; e < n; e++)
			if (rnd() & 1)
				y[e] = x[e];
		for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
			__u32 nb = block_dims[i], b;
			__u32 *out = alloc_bytes((__u64)nb * 4);
			struct snpu_kernel_arg a[NARGS] = { 0 };
			__u64 total = 0, sum = 0;

			a[0] = buf_arg(out, (__u64)nb * 4);
			a[1] = buf_arg(x, n * 4);
			a[2] = buf_arg(y, n * 4 + 8);
			for (v = 0; v < TRAIN_VARIANTS; v++) {
				memset(out, 0xa5, (__u64)nb * 4);
				ASSERT_EQ(0, launch(SNPU_KERNEL_COUNT_EQ_I32,
						    nb, a,
						    train_chunk(a,
							SNPU_KERNEL_COUNT_EQ_I32,
							nb, v)));
				sum = 0;
				for (b = 0; b < nb; b++) {
					__u64 lo, hi, cnt = 0;

					ref_slice(n, nb, b, &lo, &hi);
					for (e = lo; e < hi; e++)
						cnt += x[e] == y[e];
					ASSERT_EQ(cnt, out[b]);
					sum += out[b];
				}
				if (!total)
					for (e = 0; e < n; e++)
						total += x[e] == y[e];
				ASSERT_EQ(total, sum);
			}
			free(out);
		}
		free(x);
		free(y);
	}
}

TEST(run_affine_f32)
{
	static const __u32 coef[][2] = {
		{ 0x3f800000, 0x00000000 },	/* 1, 0 */
		{ 0x3b808081, 0xbf000000 },	/* 1/255, -0.5 */
		{ 0xc0490fdb, 0x42f60000 },	/* -pi, 123 */
		{ 0x00000000, 0x80000000 },	/* 0, -0 */
	};
	unsigned int s, c, i, v;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		__u64 n = sizes[s], e;
		float *x = alloc_f32(n + 1), *y = alloc_f32(n);
		float *want = alloc_f32(n);

		for (c = 0; c < ARRAY_SIZE(coef); c++) {
			float av = f32_of(coef[c][0]), bv = f32_of(coef[c][1]);
			struct snpu_kernel_arg a[NARGS] = { 0 };

			for (e = 0; e < n; e++)
				want[e] = av * x[e] + bv;
			a[0] = buf_arg(y, n * 4);
			a[1] = buf_arg(x, (n + 1) * 4);
			a[2] = scalar_arg(coef[c][0]);
			a[3] = scalar_arg(coef[c][1]);
			for (i = 0; i < ARRAY_SIZE(block_dims); i++) {
				for (v = 0; v < TRAIN_VARIANTS; v++) {
					memset(y, 0xa5, n * 4);
					ASSERT_EQ(0, launch(
						SNPU_KERNEL_AFFINE_F32,
						block_dims[i], a,
						train_chunk(a,
							SNPU_KERNEL_AFFINE_F32,
							block_dims[i], v)));
					ASSERT_EQ(0, memcmp(want, y, n * 4));
				}
			}
		}
		free(x);
		free(y);
		free(want);
	}
}

/*
 * The product is rounded before the sum: with a = x = 1 + 2^-12, a * x =
 * 1 + 2^-11 + 2^-24, which rounds to 1 + 2^-11 (a tie, to even); adding
 * -(1 + 2^-11) gives 0. A fused multiply-add would give 2^-24.
 */
TEST(run_affine_f32_not_fused)
{
	float x[1] = { 1.0f + 0x1p-12f }, y[1];
	struct snpu_kernel_arg a[NARGS] = { 0 };

	a[0] = buf_arg(y, sizeof(y));
	a[1] = buf_arg(x, sizeof(x));
	a[2] = scalar_arg(bits_of(1.0f + 0x1p-12f));
	a[3] = scalar_arg(bits_of(-(1.0f + 0x1p-11f)));
	ASSERT_EQ(0, launch(SNPU_KERNEL_AFFINE_F32, 1, a, SNPU_KERNEL_CHUNK));
	ASSERT_EQ(0U, bits_of(y[0]));
}

/* ---- exp and log of kmod/core, against libm ---------------------------- */

/* Relative error of a float result against a double reference. */
static double rel_err(float got, double want)
{
	if (want == 0.0)
		return got == 0.0f ? 0.0 : 1.0;
	return fabs(((double)got - want) / want);
}

/*
 * Every 61st float from -103.9 up to 88.72 (about 37 million inputs, from
 * the tiniest magnitudes up), against exp() of libm in double. Results in the normal range: relative error at
 * most 2^-23 (measured: 8.3e-8, 0.70 * 2^-23), as the uapi header says.
 * Subnormal results: absolute error at most 2^-149 (one subnormal ulp).
 */
TEST(exp_accuracy)
{
	double worst = 0.0, worst_at = 0.0;
	__u32 b, start, stop;
	__u64 n = 0;
	int side;

	for (side = 0; side < 2; side++) {
		/* Negative floats count up in bits as they go down. */
		start = side ? 0x00000000 : 0x80000000;
		stop = side ? bits_of(88.72283f) : bits_of(-103.9f);
		for (b = start; b <= stop; b += 61) {
			float x = f32_of(b);
			double want = exp((double)x);
			float got = f32_of(snpu_f32_exp_bits(b));

			n++;
			if (want < 0x1p-126) {
				ASSERT_LE(fabs((double)got - want), 0x1p-149)
					TH_LOG("exp(%a) = %a, libm %a", x, got,
					       want);
				continue;
			}
			if (rel_err(got, want) > worst) {
				worst = rel_err(got, want);
				worst_at = x;
			}
		}
	}
	TH_LOG("exp: %llu inputs, max relative error %.3g (%.2f ulp of 2^-23) at %a",
	       (unsigned long long)n, worst, worst / 0x1p-23, worst_at);
	ASSERT_LE(worst, 0x1p-23);
}

TEST(exp_specials)
{
	ASSERT_EQ(bits_of(1.0f), snpu_f32_exp_bits(0));
	ASSERT_EQ(bits_of(1.0f), snpu_f32_exp_bits(0x80000000));
	ASSERT_EQ(0x7f800000U, snpu_f32_exp_bits(0x7f800000));	/* +inf */
	ASSERT_EQ(0U, snpu_f32_exp_bits(0xff800000));		/* -inf */
	ASSERT_EQ(0x7f800000U, snpu_f32_exp_bits(bits_of(89.0f)));
	ASSERT_EQ(0x7f800000U, snpu_f32_exp_bits(bits_of(1e30f)));
	ASSERT_EQ(0U, snpu_f32_exp_bits(bits_of(-104.5f)));
	ASSERT_EQ(0U, snpu_f32_exp_bits(bits_of(-1e30f)));
	ASSERT_TRUE(isnan(f32_of(snpu_f32_exp_bits(0x7fc00000))));
	ASSERT_TRUE(isnan(f32_of(snpu_f32_exp_bits(0xffc00001))));
	/* The largest finite result and the smallest subnormal one. */
	ASSERT_LT(f32_of(snpu_f32_exp_bits(bits_of(88.72283f))), INFINITY);
	ASSERT_GT(f32_of(snpu_f32_exp_bits(bits_of(88.72283f))), 3.4e38f);
	ASSERT_EQ(1U, snpu_f32_exp_bits(bits_of(-103.2f)));
}

/* Monotone over a fine sweep of [-20, 20]: softmax keeps the order. */
TEST(exp_monotone)
{
	float prev = 0.0f, x;

	for (x = -20.0f; x <= 20.0f; x += 0.001f) {
		float e = f32_of(snpu_f32_exp_bits(bits_of(x)));

		ASSERT_GE(e, prev) TH_LOG("at %a", x);
		prev = e;
	}
}

/*
 * Every 61st positive float from the smallest subnormal to the largest
 * finite (about 35 million inputs), against log() of libm in double:
 * relative error at most 2^-23 (measured: 8.6e-8, 0.72 * 2^-23), as the
 * uapi header says. Around 1,
 * where log is near 0, every float of [1 - 2^-8, 1 + 2^-8].
 */
TEST(log_accuracy)
{
	double worst = 0.0, worst_at = 0.0;
	__u32 b;
	__u64 n = 0;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		__u32 lo = pass ? bits_of(1.0f - 0x1p-8f) : 1;
		__u32 hi = pass ? bits_of(1.0f + 0x1p-8f) : 0x7f7fffff;
		__u32 step = pass ? 1 : 61;

		for (b = lo; b <= hi && b >= lo; b += step) {
			float x = f32_of(b);
			double want = log((double)x);
			float got = f32_of(snpu_f32_log_bits(b));

			n++;
			if (x == 1.0f) {
				ASSERT_EQ(0U, bits_of(got));
				continue;
			}
			if (rel_err(got, want) > worst) {
				worst = rel_err(got, want);
				worst_at = x;
			}
		}
	}
	TH_LOG("log: %llu inputs, max relative error %.3g (%.2f ulp of 2^-23) at %a",
	       (unsigned long long)n, worst, worst / 0x1p-23, worst_at);
	ASSERT_LE(worst, 0x1p-23);
}

TEST(log_specials)
{
	ASSERT_EQ(0U, snpu_f32_log_bits(bits_of(1.0f)));
	ASSERT_EQ(0xff800000U, snpu_f32_log_bits(0));		/* -inf */
	ASSERT_EQ(0xff800000U, snpu_f32_log_bits(0x80000000));
	ASSERT_EQ(0x7f800000U, snpu_f32_log_bits(0x7f800000));
	ASSERT_TRUE(isnan(f32_of(snpu_f32_log_bits(bits_of(-1.0f)))));
	ASSERT_TRUE(isnan(f32_of(snpu_f32_log_bits(0xff800000))));
	ASSERT_TRUE(isnan(f32_of(snpu_f32_log_bits(0x7fc00000))));
	ASSERT_LT(fabs(f32_of(snpu_f32_log_bits(1)) - log(0x1p-149)), 1e-4);
	ASSERT_LT(fabs(f32_of(snpu_f32_log_bits(bits_of(10.0f))) - log(10.0)),
		  1e-6);
}

/*
 * ---- both instruction sets ------------------------------------------------
 *
 * Every f32 kernel with the SSE2 loops and with the AVX2 ones (where the
 * CPU has it: else the variant runs SSE2 again and says so), against the
 * references above, bit for bit, with the block counts of the issue: 1,
 * 2, 4 (the device's default cores) and 65535, odd shapes (1, 3, 17, 129
 * rows and columns; k and class counts that are no multiple of 4 or 8),
 * the module's chunks and short ones (7 units), and a guard of sentinel
 * floats after every output, which must stay untouched.
 */

#define GUARD_FLOATS	17
#define SENTINEL_BITS	0x7fa5a5a5U	/* a NaN no kernel computes */

static const __u32 isa_block_dims[] = { 1, 2, 4, 65535 };

FIXTURE(isa) {
	bool ran_other;		/* the AVX2 variant on a CPU without it */
};

FIXTURE_VARIANT(isa) {
	unsigned int isa;
};

FIXTURE_VARIANT_ADD(isa, sse2) { .isa = SNPU_ISA_SSE2 };
FIXTURE_VARIANT_ADD(isa, avx2) { .isa = SNPU_ISA_AVX2 };

FIXTURE_SETUP(isa)
{
	unsigned int isa = variant->isa;

	__builtin_cpu_init();
	if (isa == SNPU_ISA_AVX2 && !__builtin_cpu_supports("avx2")) {
		TH_LOG("this CPU has no AVX2: the SSE2 loops instead");
		isa = SNPU_ISA_SSE2;
		self->ran_other = true;
	}
	ASSERT_EQ(0, snpu_kernel_set_isa(isa));
	ASSERT_STREQ(isa == SNPU_ISA_AVX2 ? "avx2" : "sse2",
		     snpu_kernel_isa_name());
}

FIXTURE_TEARDOWN(isa)
{
	snpu_kernel_set_isa(SNPU_ISA_SSE2);
}

/* @n floats and a guard of sentinels after them. */
static float *alloc_guarded(__u64 n)
{
	float *p = alloc_f32(n + GUARD_FLOATS);
	__u64 i;

	for (i = n; i < n + GUARD_FLOATS; i++)
		p[i] = f32_of(SENTINEL_BITS);
	return p;
}

static bool guard_intact(const float *p, __u64 n)
{
	__u64 i;

	for (i = n; i < n + GUARD_FLOATS; i++)
		if (bits_of(p[i]) != SENTINEL_BITS)
			return false;
	return true;
}

/* Same bits, or both NaN (which NaN a kernel propagates is the CPU's). */
static bool same_f32(float a, float b)
{
	return bits_of(a) == bits_of(b) || (a != a && b != b);
}

static __u64 first_diff(const float *want, const float *got, __u64 n)
{
	__u64 i;

	for (i = 0; i < n; i++)
		if (!same_f32(want[i], got[i]))
			return i;
	return n;
}

/* The module's chunk for @a, or 7 (chunks that cut rows and vectors). */
static __u64 isa_chunk(const struct snpu_kernel_arg *a, __u32 kernel,
		       __u32 nb, bool odd)
{
	struct snpu_klaunch l;

	if (odd)
		return 7;
	resolve(kernel, nb, a, &l);
	return snpu_kernel_chunk(&l);
}

/*
 * Launch @kernel with every block count (the module's chunks, and for 2
 * blocks also chunks of 7), output @out of @n floats filled with garbage
 * first, and compare it (and @out2, @n2 floats, when not NULL) with the
 * references; the guards after them stay.
 */
static void isa_run(struct __test_metadata *_metadata, __u32 kernel,
		    const struct snpu_kernel_arg *a, float *out,
		    const float *want, __u64 n, float *out2,
		    const float *want2, __u64 n2, const char *what)
{
	unsigned int i, odd;

	for (i = 0; i < ARRAY_SIZE(isa_block_dims); i++) {
		for (odd = 0; odd < 2; odd++) {
			__u32 nb = isa_block_dims[i];
			__u64 d;

			if (odd && nb != 2)
				continue;
			memset(out, 0x5a, n * 4);
			if (out2)
				memset(out2, 0x5a, n2 * 4);
			ASSERT_EQ(0, launch(kernel, nb, a,
					    isa_chunk(a, kernel, nb, odd)));
			d = first_diff(want, out, n);
			ASSERT_EQ(n, d)
				TH_LOG("%s %s, %u blocks%s: element %llu is %a, want %a",
				       kinfo[kernel].name, what, nb,
				       odd ? ", chunks of 7" : "",
				       (unsigned long long)d, out[d], want[d]);
			ASSERT_TRUE(guard_intact(out, n))
				TH_LOG("%s %s: written past the output",
				       kinfo[kernel].name, what);
			if (!out2)
				continue;
			d = first_diff(want2, out2, n2);
			ASSERT_EQ(n2, d)
				TH_LOG("%s %s, %u blocks: element %llu of the second output",
				       kinfo[kernel].name, what, nb,
				       (unsigned long long)d);
			ASSERT_TRUE(guard_intact(out2, n2));
		}
	}
}

/* c[m x n] of @kernel as documented: each sum over kk from +0.0 up. */
static void ref_gemm(__u32 kernel, const float *a, const float *b, float *c,
		     __u64 m, __u64 n, __u64 k)
{
	__u64 i, j, kk;

	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++) {
				float x, y;

				if (kernel == SNPU_KERNEL_GEMM_TN_F32)
					x = a[kk * m + i];
				else
					x = a[i * k + kk];
				if (kernel == SNPU_KERNEL_GEMM_NT_F32)
					y = b[j * k + kk];
				else
					y = b[kk * n + j];
				acc += x * y;
			}
			c[i * n + j] = acc;
		}
	}
}

static void isa_gemm(struct __test_metadata *_metadata, __u32 kernel)
{
	static const __u64 shapes[][3] = {	/* m, n, k */
		{ 1, 1, 1 }, { 3, 17, 129 }, { 17, 3, 13 }, { 129, 129, 3 },
		{ 129, 17, 1 }, { 17, 129, 17 }, { 1, 129, 3 }, { 3, 1, 784 },
		{ 64, 10, 128 }, { 10, 64, 7 }, { 5, 23, 2 },
	};
	unsigned int s;
	char what[64];

	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		__u64 m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *av = alloc_f32(m * k), *bv = alloc_f32(k * n);
		float *c = alloc_guarded(m * n), *want = alloc_f32(m * n);
		struct snpu_kernel_arg a[NARGS] = { 0 };

		ref_gemm(kernel, av, bv, want, m, n, k);
		a[0] = buf_arg(c, m * n * 4);
		a[1] = buf_arg(av, m * k * 4);
		a[2] = buf_arg(bv, k * n * 4);
		a[3] = scalar_arg(m);
		a[4] = scalar_arg(n);
		a[5] = scalar_arg(k);
		snprintf(what, sizeof(what), "%llux%llux%llu",
			 (unsigned long long)m, (unsigned long long)n,
			 (unsigned long long)k);
		isa_run(_metadata, kernel, a, c, want, m * n, NULL, NULL, 0,
			what);
		free(av);
		free(bv);
		free(c);
		free(want);
	}
}

TEST_F(isa, gemm_f32)
{
	isa_gemm(_metadata, SNPU_KERNEL_GEMM_F32);
}

TEST_F(isa, gemm_tn_f32)
{
	isa_gemm(_metadata, SNPU_KERNEL_GEMM_TN_F32);
}

TEST_F(isa, gemm_nt_f32)
{
	isa_gemm(_metadata, SNPU_KERNEL_GEMM_NT_F32);
}

/* The special values the element-wise kernels must carry through. */
static const __u32 isa_specials[] = {
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
	0x00000001, 0x807fffff, 0x3f800000, 0xbf800000, 0x7f7fffff,
};

static float *alloc_with_specials(__u64 n)
{
	float *p = alloc_f32(n);
	__u64 i;

	for (i = 0; i < n; i += 3)
		p[i] = f32_of(isa_specials[rnd() % ARRAY_SIZE(isa_specials)]);
	return p;
}

static const __u64 isa_counts[] = { 1, 3, 17, 129, 4097, 8195 };

/* y = f(x, z) element by element, as each kernel documents it. */
static float ref_elem(__u32 kernel, float x, float z, float y0, float sa,
		      float sb)
{
	switch (kernel) {
	case SNPU_KERNEL_ADD_F32:
		return x + z;
	case SNPU_KERNEL_MUL_F32:
		return x * z;
	case SNPU_KERNEL_AXPY_F32:
		return y0 + sa * x;
	case SNPU_KERNEL_RELU_F32:
		return x > 0.0f ? x : 0.0f;
	case SNPU_KERNEL_RELU_BWD_F32:
		return z > 0.0f ? x : 0.0f;
	default:	/* AFFINE */
		return sa * x + sb;
	}
}

TEST_F(isa, elementwise_f32)
{
	static const __u32 ks[] = {
		SNPU_KERNEL_ADD_F32, SNPU_KERNEL_MUL_F32, SNPU_KERNEL_AXPY_F32,
		SNPU_KERNEL_RELU_F32, SNPU_KERNEL_RELU_BWD_F32,
		SNPU_KERNEL_AFFINE_F32,
	};
	const float sa = -1.75f, sb = 0.3125f;
	unsigned int i, c;

	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		for (c = 0; c < ARRAY_SIZE(isa_counts); c++) {
			__u32 k = ks[i];
			__u64 n = isa_counts[c], e;
			float *x = alloc_with_specials(n);
			float *z = alloc_with_specials(n);
			float *y = alloc_guarded(n), *want = alloc_f32(n);
			float *y0 = alloc_f32(n);
			struct snpu_kernel_arg a[NARGS] = { 0 };
			unsigned int b, odd;

			a[0] = buf_arg(y, n * 4);
			a[1] = buf_arg(x, n * 4);
			switch (k) {
			case SNPU_KERNEL_AXPY_F32:
				a[2] = scalar_arg(bits_of(sa));
				break;
			case SNPU_KERNEL_RELU_F32:
				break;
			case SNPU_KERNEL_AFFINE_F32:
				a[2] = scalar_arg(bits_of(sa));
				a[3] = scalar_arg(bits_of(sb));
				break;
			default:
				a[2] = buf_arg(z, n * 4);
				break;
			}
			for (e = 0; e < n; e++)
				want[e] = ref_elem(k, x[e], z[e], y0[e], sa,
						   sb);
			/* AXPY reads y: each launch starts from y0. */
			for (b = 0; b < ARRAY_SIZE(isa_block_dims); b++) {
				for (odd = 0; odd < 2; odd++) {
					__u32 nb = isa_block_dims[b];
					__u64 d;

					if (odd && nb != 2)
						continue;
					memcpy(y, y0, n * 4);
					ASSERT_EQ(0, launch(k, nb, a,
						  isa_chunk(a, k, nb, odd)));
					d = first_diff(want, y, n);
					ASSERT_EQ(n, d)
						TH_LOG("%s n %llu blocks %u: element %llu",
						       kinfo[k].name,
						       (unsigned long long)n,
						       nb, (unsigned long long)d);
					ASSERT_TRUE(guard_intact(y, n));
				}
			}
			free(x);
			free(z);
			free(y);
			free(want);
			free(y0);
		}
	}
}

TEST_F(isa, bias_add_f32)
{
	static const __u64 shapes[][2] = {	/* rows, n */
		{ 1, 1 }, { 3, 17 }, { 17, 3 }, { 129, 129 }, { 1, 129 },
		{ 64, 128 }, { 7, 9 },
	};
	unsigned int s;
	char what[64];

	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		__u64 rows = shapes[s][0], n = shapes[s][1], cnt = rows * n, e;
		float *x = alloc_with_specials(cnt), *bias = alloc_f32(n);
		float *y = alloc_guarded(cnt), *want = alloc_f32(cnt);
		struct snpu_kernel_arg a[NARGS] = { 0 };

		for (e = 0; e < cnt; e++)
			want[e] = x[e] + bias[e % n];
		a[0] = buf_arg(y, cnt * 4);
		a[1] = buf_arg(x, cnt * 4);
		a[2] = buf_arg(bias, n * 4);
		a[3] = scalar_arg(n);
		snprintf(what, sizeof(what), "%llu x %llu",
			 (unsigned long long)rows, (unsigned long long)n);
		isa_run(_metadata, SNPU_KERNEL_BIAS_ADD_F32, a, y, want, cnt,
			NULL, NULL, 0, what);
		free(x);
		free(bias);
		free(y);
		free(want);
	}
}

/*
 * Columns of up to 65536 rows in one piece, and longer ones in pieces of
 * 4096 rows (70001: 18 pieces, the last of 369 rows).
 */
TEST_F(isa, colsum_f32)
{
	static const __u64 shapes[][2] = {	/* rows, n */
		{ 1, 1 }, { 3, 17 }, { 17, 3 }, { 129, 129 }, { 129, 1 },
		{ 64, 128 }, { 70001, 3 }, { 65537, 17 },
	};
	unsigned int s;
	char what[64];

	for (s = 0; s < ARRAY_SIZE(shapes); s++) {
		__u64 rows = shapes[s][0], n = shapes[s][1], r, j;
		float *in = alloc_with_specials(rows * n);
		float *out = alloc_guarded(n), *want = alloc_f32(n);
		struct snpu_kernel_arg a[NARGS] = { 0 };

		for (j = 0; j < n; j++) {
			float acc = 0.0f;

			for (r = 0; r < rows; r++)
				acc += in[r * n + j];
			want[j] = acc;
		}
		a[0] = buf_arg(out, n * 4);
		a[1] = buf_arg(in, rows * n * 4);
		a[2] = scalar_arg(n);
		snprintf(what, sizeof(what), "%llu x %llu",
			 (unsigned long long)rows, (unsigned long long)n);
		isa_run(_metadata, SNPU_KERNEL_COLSUM_F32, a, out, want, n,
			NULL, NULL, 0, what);
		free(in);
		free(out);
		free(want);
	}
}

/*
 * SOFTMAX_XENT bit for bit against ref_softmax_xent(), also in place, with
 * rows whose maximum is in the last class (and far above the others, so
 * that a maximum that missed it would overflow exp), and rows of equal
 * values.
 */
TEST_F(isa, softmax_xent_f32)
{
	static const __u32 nclss[] = { 1, 3, 8, 9, 10, 17, 129 };
	const __u64 rows = 17;
	const float scale = 1.0f / 17.0f;
	unsigned int c, inplace;
	char what[64];

	for (c = 0; c < ARRAY_SIZE(nclss); c++) {
		for (inplace = 0; inplace < 2; inplace++) {
			__u32 ncls = nclss[c], j;
			__u64 cnt = rows * ncls, r;
			float *x = alloc_f32(cnt), *x0 = alloc_f32(cnt);
			float *d = alloc_guarded(cnt), *loss = alloc_guarded(rows);
			float *wd = alloc_f32(cnt), *wl = alloc_f32(rows);
			__s32 *lab = alloc_bytes(rows * 4);
			struct snpu_kernel_arg a[NARGS] = { 0 };
			unsigned int b;

			fill_logits(x0, cnt, 8.0f);
			for (r = 0; r < rows; r++) {
				lab[r] = (__s32)(rnd() % ncls);
				if (r % 3 == 0)	/* the maximum last, far up */
					x0[r * ncls + ncls - 1] = 100.0f;
				if (r % 5 == 1)	/* every class equal */
					for (j = 0; j < ncls; j++)
						x0[r * ncls + j] = -2.5f;
			}
			ref_softmax_xent(x0, lab, rows, ncls, scale, wl, wd);
			for (r = 0; r < rows; r++)
				ASSERT_TRUE(wl[r] == wl[r] && wl[r] < 1e30f)
					TH_LOG("the reference's loss %llu",
					       (unsigned long long)r);
			a[0] = buf_arg(loss, rows * 4);
			a[1] = buf_arg(inplace ? x : d, cnt * 4);
			a[2] = buf_arg(x, cnt * 4);
			a[3] = buf_arg(lab, rows * 4);
			a[4] = scalar_arg(ncls);
			a[5] = scalar_arg(bits_of(scale));
			for (b = 0; b < ARRAY_SIZE(isa_block_dims); b++) {
				__u32 nb = isa_block_dims[b];
				float *dd = inplace ? x : d;
				__u64 e;

				memcpy(x, x0, cnt * 4);
				if (!inplace)
					memset(d, 0x5a, cnt * 4);
				memset(loss, 0x5a, rows * 4);
				ASSERT_EQ(0, launch(SNPU_KERNEL_SOFTMAX_XENT_F32,
						    nb, a,
						    isa_chunk(a,
							SNPU_KERNEL_SOFTMAX_XENT_F32,
							nb, false)));
				snprintf(what, sizeof(what), "%llu x %u%s",
					 (unsigned long long)rows, ncls,
					 inplace ? " in place" : "");
				e = first_diff(wl, loss, rows);
				ASSERT_EQ(rows, e)
					TH_LOG("%s, %u blocks: loss %llu %a want %a",
					       what, nb, (unsigned long long)e,
					       loss[e], wl[e]);
				e = first_diff(wd, dd, cnt);
				ASSERT_EQ(cnt, e)
					TH_LOG("%s, %u blocks: dlogits %llu",
					       what, nb, (unsigned long long)e);
				ASSERT_TRUE(guard_intact(loss, rows));
				if (!inplace)
					ASSERT_TRUE(guard_intact(d, cnt));
			}
			free(x);
			free(x0);
			free(d);
			free(loss);
			free(wd);
			free(wl);
			free(lab);
		}
	}
}

TEST_F(isa, argmax_f32)
{
	static const __u32 nclss[] = { 1, 3, 8, 9, 16, 17, 129 };
	const __u64 rows = 33;
	unsigned int c;

	for (c = 0; c < ARRAY_SIZE(nclss); c++) {
		__u32 ncls = nclss[c], j;
		__u64 cnt = rows * ncls, r;
		float *in = alloc_f32(cnt), *out = alloc_guarded(rows);
		float *want = alloc_f32(rows);
		struct snpu_kernel_arg a[NARGS] = { 0 };
		char what[32];

		for (r = 0; r < rows; r++) {
			float *x = in + r * ncls;
			__u32 best = 0;

			switch (r % 6) {
			case 0:		/* the maximum in the last class */
				x[ncls - 1] = 1e30f;
				break;
			case 1:		/* ties: the first wins */
				for (j = 0; j < ncls; j++)
					x[j] = (float)(rnd() % 3);
				break;
			case 2:		/* NaNs never win */
				for (j = 0; j < ncls; j += 2)
					x[j] = f32_of(0x7fc00000);
				break;
			case 3:		/* zeros of both signs */
				for (j = 0; j < ncls; j++)
					x[j] = j % 2 ? 0.0f : -0.0f;
				break;
			}
			for (j = 1; j < ncls; j++)
				if (x[j] > x[best])
					best = j;
			memcpy(&want[r], &best, 4);
		}
		a[0] = buf_arg(out, rows * 4);
		a[1] = buf_arg(in, cnt * 4);
		a[2] = scalar_arg(ncls);
		snprintf(what, sizeof(what), "ncls %u", ncls);
		isa_run(_metadata, SNPU_KERNEL_ARGMAX_F32, a, out, want, rows,
			NULL, NULL, 0, what);
		free(in);
		free(out);
		free(want);
	}
}

/*
 * The vector exp of the softmax gives snpu_f32_exp_bits()'s bits: on a
 * sweep of every 4099th float (a million and more, both signs, all
 * exponents) and on the edges of its cases (overflow, underflow to
 * subnormals and 0, NaN, infinities, zeros).
 */
TEST_F(isa, exp_matches_scalar)
{
	static const __u32 edges[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
		0xffc00001, 0x42b1999a, 0x42b2cccd, 0x42b17218, 0x42b17217,
		0xc2d00000, 0xc2cfffff, 0xc2ce0000, 0xc2aeac50, 0xc2aeac4f,
		0xc2bc0000, 0x3f000000, 0xbf000000, 0x3f317218, 0xb4000000,
	};
	const __u64 n = (1ULL << 32) / 4099 + ARRAY_SIZE(edges);
	float *x = alloc_f32(n), *y = alloc_f32(n);
	const struct snpu_f32_ops *ops = strcmp(snpu_kernel_isa_name(),
						"avx2") ? &snpu_f32_sse2 :
						&snpu_f32_avx2;
	__u64 i, bad = n;

	for (i = 0; i < n - ARRAY_SIZE(edges); i++)
		x[i] = f32_of((__u32)(i * 4099));
	for (i = 0; i < ARRAY_SIZE(edges); i++)
		x[n - ARRAY_SIZE(edges) + i] = f32_of(edges[i]);
	/* Odd lengths and starts: the padded last vector too. */
	ops->exp(y, x, n);
	ops->exp(y + 1, x + 1, 5);
	for (i = 0; i < n && bad == n; i++) {
		__u32 want = snpu_f32_exp_bits(bits_of(x[i]));

		if (!same_f32(f32_of(want), y[i]))
			bad = i;
	}
	ASSERT_EQ(n, bad)
		TH_LOG("exp(%a): %a, the scalar exp %a", x[bad], y[bad],
		       f32_of(snpu_f32_exp_bits(bits_of(x[bad]))));
	free(x);
	free(y);
}

TEST(set_isa_unknown)
{
	ASSERT_EQ(0, snpu_kernel_set_isa(SNPU_ISA_SSE2));
	ASSERT_EQ(-EINVAL, snpu_kernel_set_isa(2));
	ASSERT_EQ(-EINVAL, snpu_kernel_set_isa(~0U));
	ASSERT_STREQ("sse2", snpu_kernel_isa_name());
}

TEST_HARNESS_MAIN
