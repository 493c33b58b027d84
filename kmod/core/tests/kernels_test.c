// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Native unit tests of the built-in kernels (kmod/core/kernels.c and
 * kernels_f32.c): the launch argument rules, the slicing, and every
 * kernel against a reference written here, run the way the module runs
 * them (each block's slice in chunks). Built for the host under
 * ASan/UBSan; buffers are allocated to their exact size so that any
 * access past an argument's extent is caught.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels.h"

#include "kselftest_harness.h"

#define NARGS		SNPU_KERNEL_MAX_ARGS
#define GEMM_MAX	65536ULL

/*
 * The argument lists as the uapi header documents them, written out
 * again here: the number of arguments and a mask of the buffers.
 */
static const struct {
	const char name[16];
	unsigned int nargs;
	unsigned int buffers;
	bool fpu;
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

	ASSERT_EQ(15, SNPU_KERNEL_COUNT);
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
	/* COPY 2, FILL 1, ADD/MUL 4 x 3, AXPY 2, RELU 2, GEMM 3, the rest 2 */
	ASSERT_EQ(28ULL, tested);
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
	/* FILL, AXPY, GEMM x3, SPIN, FAIL */
	ASSERT_EQ(7ULL, tested);
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

		if (k == SNPU_KERNEL_NOP || k == SNPU_KERNEL_SPIN ||
		    k == SNPU_KERNEL_FAIL || k == SNPU_KERNEL_GEMM_F32)
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

TEST_HARNESS_MAIN
