// SPDX-License-Identifier: GPL-2.0
/*
 * snpu built-in kernels: every kernel against a CPU reference written
 * here, over several element counts and block counts (including more
 * blocks than elements), then every way a launch or a task descriptor
 * can be refused at SUBMIT.
 *
 * The slicing rule (uapi header): with n units and B blocks, c = ceil(n /
 * B) and block b takes [b * c, min(n, (b + 1) * c)). REDUCE_SUM and CRC32C
 * write one result per block, so they check the rule exactly; the other
 * kernels must give the same result whatever the slicing.
 *
 * f32 results are compared bit for bit: the device computes in single
 * precision, in source order, one rounding per operation (see
 * kmod/core/kernels_f32.c), and so does this file (x86-64 SSE arithmetic,
 * built with -ffp-contract=off so that no product is fused into an add).
 * GEMM accumulates each element from +0.0f in increasing k order, and so
 * does the reference. NaN results only need to be NaN.
 *
 * Every output buffer is allocated with a guard area after the extent the
 * launch names, pre-filled with a sentinel, and checked untouched.
 *
 * Runs as root in the test VM with the module loaded with its defaults.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(60 * NS_PER_SEC)
#define GUARD		256
#define SENTINEL	0xa5

/* Block @b's slice of @n units among @nb blocks. */
static void slice(uint64_t n, uint32_t nb, uint32_t b, uint64_t *lo,
		  uint64_t *hi)
{
	uint64_t c = (n + nb - 1) / nb, s = (uint64_t)b * c;

	if (s > n)
		s = n;
	*lo = s;
	*hi = n - s < c ? n : s + c;
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Same bits, or both NaN. */
static bool f32_same(uint32_t a, uint32_t b)
{
	return a == b || (isnan(u2f(a)) && isnan(u2f(b)));
}

/* Bitwise CRC-32C (Castagnoli, reflected 0x82f63b78), init/final xor ~0. */
static uint32_t ref_crc32c(const unsigned char *p, size_t len)
{
	uint32_t crc = ~0U;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78U : crc >> 1;
	}
	return ~crc;
}

/* Random floats with the special values sprinkled in. */
static void fill_f32(float *f, size_t n, uint64_t seed)
{
	static const uint32_t special[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
		0x00000001, 0x807fffff, 0x3f800000, 0xbf800000, 0x7f7fffff,
	};
	uint64_t st = seed | 1;
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t r = snpu_rand(&st);

		if (r % 17 == 0)
			f[i] = u2f(special[(r >> 8) % 10]);
		else
			f[i] = (float)((int64_t)(r >> 20) % 200000) / 1000.0f;
	}
}

FIXTURE(k) {
	int fd;
	uint32_t s;
	uint64_t n;	/* units: elements, or bytes for COPY and CRC32C */
	uint32_t nb;	/* blocks */
};

FIXTURE_VARIANT(k) {
	uint64_t n;
	uint32_t nb;
};

FIXTURE_VARIANT_ADD(k, n1_b1) { .n = 1, .nb = 1 };
FIXTURE_VARIANT_ADD(k, n1_b3) { .n = 1, .nb = 3 };
FIXTURE_VARIANT_ADD(k, n1_b64) { .n = 1, .nb = 64 };
FIXTURE_VARIANT_ADD(k, n1000_b1) { .n = 1000, .nb = 1 };
FIXTURE_VARIANT_ADD(k, n1000_b3) { .n = 1000, .nb = 3 };
FIXTURE_VARIANT_ADD(k, n1000_b64) { .n = 1000, .nb = 64 };
FIXTURE_VARIANT_ADD(k, n1000_b2000) { .n = 1000, .nb = 2000 };
/* Odd counts around the vector widths, with 2 and 4 (the cores) blocks. */
FIXTURE_VARIANT_ADD(k, n3_b2) { .n = 3, .nb = 2 };
FIXTURE_VARIANT_ADD(k, n17_b4) { .n = 17, .nb = 4 };
FIXTURE_VARIANT_ADD(k, n129_b2) { .n = 129, .nb = 2 };
FIXTURE_VARIANT_ADD(k, n129_b65535) { .n = 129, .nb = 65535 };
FIXTURE_VARIANT_ADD(k, n4099_b4) { .n = 4099, .nb = 4 };
FIXTURE_VARIANT_ADD(k, n65543_b1) { .n = 65543, .nb = 1 };
FIXTURE_VARIANT_ADD(k, n65543_b3) { .n = 65543, .nb = 3 };
FIXTURE_VARIANT_ADD(k, n65543_b64) { .n = 65543, .nb = 64 };
FIXTURE_VARIANT_ADD(k, n65543_b40000) { .n = 65543, .nb = 40000 };
FIXTURE_VARIANT_ADD(k, n65543_b65535) { .n = 65543, .nb = 65535 };

/*
 * Seconds a test of k may take: the variants of 40000 and 65535 blocks
 * run tens of thousands of blocks per launch, which on the debug kernel
 * under TCG, with the host busy, takes more than the harness's default
 * 30 s. Not a timing check: only a bound against a hang.
 */
#define K_TIMEOUT	180

FIXTURE_SETUP(k)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	self->n = variant->n;
	self->nb = variant->nb;
}

FIXTURE_TEARDOWN(k)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* FAIL with @nb blocks. */
static struct snpu_task snpu_t_launch_fail(uint32_t s, uint64_t err,
					   uint32_t nb)
{
	struct snpu_task t = snpu_t_launch(s, SNPU_KERNEL_FAIL, nb);

	snpu_t_scalar(&t, 0, err);
	return t;
}

/* Device buffer of @bytes + GUARD, filled with @src or the sentinel. */
static int dbuf(int fd, const void *src, uint64_t bytes, uint64_t *addr)
{
	int ret = snpu_alloc(fd, bytes + GUARD, 0, addr);

	if (ret)
		return ret;
	ret = snpu_memset(fd, *addr, SENTINEL, bytes + GUARD);
	if (!ret && src)
		ret = snpu_h2d(fd, *addr, src, bytes);
	return ret;
}

/*
 * Read @bytes at @addr into @out. Return: 0, -errno, or 1 when the guard
 * after @bytes is not intact.
 */
static int dread(int fd, uint64_t addr, void *out, uint64_t bytes)
{
	unsigned char g[GUARD];
	int ret, i;

	ret = snpu_d2h(fd, out, addr, bytes);
	if (!ret)
		ret = snpu_d2h(fd, g, addr + bytes, GUARD);
	if (ret)
		return ret;
	for (i = 0; i < GUARD; i++)
		if (g[i] != SENTINEL)
			return 1;
	return 0;
}

/* Submit @t, sync; return the SUBMIT error, else the stream's error. */
static int run(int fd, uint32_t s, struct snpu_task t)
{
	int32_t err = 0;
	int ret = snpu_submit1(fd, t);

	if (!ret)
		ret = snpu_stream_sync(fd, s, LONG_TIMEOUT, &err);
	return ret ? ret : err;
}

TEST_F_TIMEOUT(k, nop, K_TIMEOUT)
{
	struct snpu_stream_query q;

	ASSERT_EQ(0, run(self->fd, self->s, snpu_t_launch(self->s,
					SNPU_KERNEL_NOP, self->nb)));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(1U, q.completed);
}

TEST_F_TIMEOUT(k, copy, K_TIMEOUT)
{
	uint64_t n = self->n, src, dst;
	unsigned char *in = malloc(n), *out = malloc(n);

	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	snpu_fill_random(in, n, n + 11);
	ASSERT_EQ(0, dbuf(self->fd, in, n, &src));
	ASSERT_EQ(0, dbuf(self->fd, NULL, n, &dst));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_COPY, self->nb);

	snpu_t_buf(&t, 0, dst, n);
	snpu_t_buf(&t, 1, src, n);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, dst, out, n));
	EXPECT_EQ(0, memcmp(in, out, n));
	free(in);
	free(out);
}

/* COPY copies src's bytes into a larger dst and leaves the rest alone. */
TEST_F_TIMEOUT(k, copy_into_larger_dst, K_TIMEOUT)
{
	uint64_t n = self->n, src, dst;
	unsigned char *in = malloc(n), *out = malloc(n + 100);
	uint64_t i;

	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	snpu_fill_random(in, n, 3);
	ASSERT_EQ(0, dbuf(self->fd, in, n, &src));
	ASSERT_EQ(0, dbuf(self->fd, NULL, n + 100, &dst));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_COPY, self->nb);

	snpu_t_buf(&t, 0, dst, n + 100);
	snpu_t_buf(&t, 1, src, n);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, dst, out, n + 100));
	EXPECT_EQ(0, memcmp(in, out, n));
	for (i = n; i < n + 100; i++)
		if (out[i] != SENTINEL)
			break;
	EXPECT_EQ(n + 100, i);
	free(in);
	free(out);
}

TEST_F_TIMEOUT(k, fill, K_TIMEOUT)
{
	uint64_t n = self->n, dst, i;
	uint32_t *out = malloc(n * 4);

	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &dst));
	ASSERT_EQ(0, run(self->fd, self->s, snpu_t_fill(self->s, dst, n * 4,
						      0x89abcdefU, self->nb)));
	ASSERT_EQ(0, dread(self->fd, dst, out, n * 4));
	for (i = 0; i < n; i++)
		if (out[i] != 0x89abcdefU)
			break;
	EXPECT_EQ(n, i);
	free(out);
}

/* c = a op b for the four element-wise kernels; a and b larger than c. */
static void binop_check(struct __test_metadata *_metadata,
			FIXTURE_DATA(k) *self, uint32_t kernel)
{
	uint64_t n = self->n, i, a, b, c;
	uint32_t *x = malloc((n + 8) * 4), *y = malloc((n + 8) * 4);
	uint32_t *out = malloc(n * 4);
	bool f32 = kernel == SNPU_KERNEL_ADD_F32 ||
		   kernel == SNPU_KERNEL_MUL_F32;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, out);
	if (f32) {
		fill_f32((float *)x, n + 8, n * 3 + kernel);
		fill_f32((float *)y, n + 8, n * 5 + kernel);
	} else {
		snpu_fill_random(x, (n + 8) * 4, n * 3 + kernel);
		snpu_fill_random(y, (n + 8) * 4, n * 5 + kernel);
	}
	ASSERT_EQ(0, dbuf(self->fd, x, (n + 8) * 4, &a));
	ASSERT_EQ(0, dbuf(self->fd, y, (n + 8) * 4, &b));
	ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &c));
	struct snpu_task t = snpu_t_launch(self->s, kernel, self->nb);

	snpu_t_buf(&t, 0, c, n * 4);
	snpu_t_buf(&t, 1, a, (n + 8) * 4);
	snpu_t_buf(&t, 2, b, (n + 3) * 4);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, c, out, n * 4));
	for (i = 0; i < n; i++) {
		uint32_t want;

		switch (kernel) {
		case SNPU_KERNEL_ADD_I32:
			want = x[i] + y[i];
			break;
		case SNPU_KERNEL_MUL_I32:
			want = x[i] * y[i];
			break;
		case SNPU_KERNEL_ADD_F32:
			want = f2u(u2f(x[i]) + u2f(y[i]));
			break;
		default:
			want = f2u(u2f(x[i]) * u2f(y[i]));
			break;
		}
		if (f32 ? !f32_same(want, out[i]) : want != out[i]) {
			TH_LOG("element %llu: got 0x%08x want 0x%08x",
			       (unsigned long long)i, out[i], want);
			break;
		}
	}
	EXPECT_EQ(n, i);
	free(x);
	free(y);
	free(out);
}

TEST_F_TIMEOUT(k, add_i32, K_TIMEOUT)
{
	binop_check(_metadata, self, SNPU_KERNEL_ADD_I32);
}

TEST_F_TIMEOUT(k, mul_i32, K_TIMEOUT)
{
	binop_check(_metadata, self, SNPU_KERNEL_MUL_I32);
}

TEST_F_TIMEOUT(k, add_f32, K_TIMEOUT)
{
	binop_check(_metadata, self, SNPU_KERNEL_ADD_F32);
}

TEST_F_TIMEOUT(k, mul_f32, K_TIMEOUT)
{
	binop_check(_metadata, self, SNPU_KERNEL_MUL_F32);
}

/* In place: c is a. */
TEST_F_TIMEOUT(k, add_i32_in_place, K_TIMEOUT)
{
	uint64_t n = self->n, i, a, b;
	uint32_t *x = malloc(n * 4), *y = malloc(n * 4), *out = malloc(n * 4);

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, out);
	snpu_fill_random(x, n * 4, 1);
	snpu_fill_random(y, n * 4, 2);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &a));
	ASSERT_EQ(0, dbuf(self->fd, y, n * 4, &b));
	ASSERT_EQ(0, run(self->fd, self->s, snpu_t_binop(self->s,
			SNPU_KERNEL_ADD_I32, a, a, b, n * 4, self->nb)));
	ASSERT_EQ(0, dread(self->fd, a, out, n * 4));
	for (i = 0; i < n; i++)
		if (out[i] != x[i] + y[i])
			break;
	EXPECT_EQ(n, i);
	free(x);
	free(y);
	free(out);
}

TEST_F_TIMEOUT(k, axpy_f32, K_TIMEOUT)
{
	const float alpha = -1.75f;
	uint64_t n = self->n, i, xa, ya;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	uint32_t *out = malloc(n * 4);

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, out);
	fill_f32(x, n, 21);
	fill_f32(y, n, 22);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &xa));
	ASSERT_EQ(0, dbuf(self->fd, y, n * 4, &ya));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_AXPY_F32,
					   self->nb);

	snpu_t_buf(&t, 0, ya, n * 4);
	snpu_t_buf(&t, 1, xa, n * 4);
	snpu_t_scalar(&t, 2, f2u(alpha));
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, ya, out, n * 4));
	for (i = 0; i < n; i++) {
		float p = alpha * x[i];
		uint32_t want = f2u(y[i] + p);

		if (!f32_same(want, out[i])) {
			TH_LOG("element %llu: got 0x%08x want 0x%08x",
			       (unsigned long long)i, out[i], want);
			break;
		}
	}
	EXPECT_EQ(n, i);
	free(x);
	free(y);
	free(out);
}

/* RELU: negatives, -0.0 and NaN give +0.0; bit-exact. */
TEST_F_TIMEOUT(k, relu_f32, K_TIMEOUT)
{
	static const uint32_t special[] = {
		0x80000000, 0x00000000, 0x7fc00000, 0xffc00000, 0x7f800001,
		0xff800000, 0x7f800000, 0x00000001, 0x80000001, 0xbf800000,
	};
	uint64_t n = self->n, i, xa, ya;
	float *x = malloc(n * 4);
	uint32_t *out = malloc(n * 4);

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, out);
	fill_f32(x, n, 31);
	for (i = 0; i < n; i++)
		if (i % 7 == 0)
			x[i] = -x[i];
	for (i = 0; i < 10 && i < n; i++)
		x[n - 1 - i] = u2f(special[i]);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &xa));
	ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &ya));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_RELU_F32,
					   self->nb);

	snpu_t_buf(&t, 0, ya, n * 4);
	snpu_t_buf(&t, 1, xa, n * 4);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, ya, out, n * 4));
	for (i = 0; i < n; i++) {
		uint32_t want = x[i] > 0.0f ? f2u(x[i]) : 0;

		if (out[i] != want) {
			TH_LOG("element %llu: relu(0x%08x) got 0x%08x want 0x%08x",
			       (unsigned long long)i, f2u(x[i]), out[i], want);
			break;
		}
	}
	EXPECT_EQ(n, i);
	free(x);
	free(out);
}

/* out[b] = sum of block b's slice; out holds more than block_dim. */
TEST_F_TIMEOUT(k, reduce_sum_i32, K_TIMEOUT)
{
	uint64_t n = self->n, lo, hi, i, in, outa;
	uint32_t *x = malloc(n * 4), *out = malloc((self->nb + 4) * 4);
	uint32_t b;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, out);
	snpu_fill_random(x, n * 4, 41);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &in));
	ASSERT_EQ(0, dbuf(self->fd, NULL, (self->nb + 4) * 4, &outa));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_REDUCE_SUM_I32,
					   self->nb);

	snpu_t_buf(&t, 0, outa, (self->nb + 4) * 4);
	snpu_t_buf(&t, 1, in, n * 4);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, outa, out, (self->nb + 4) * 4));
	for (b = 0; b < self->nb; b++) {
		uint32_t want = 0;

		slice(n, self->nb, b, &lo, &hi);
		for (i = lo; i < hi; i++)
			want += x[i];
		if (out[b] != want) {
			TH_LOG("block %u [%llu, %llu): got 0x%08x want 0x%08x",
			       b, (unsigned long long)lo,
			       (unsigned long long)hi, out[b], want);
			break;
		}
	}
	EXPECT_EQ(self->nb, b);
	/* Past block_dim: not written. */
	for (b = self->nb; b < self->nb + 4; b++)
		EXPECT_EQ(0xa5a5a5a5U, out[b]);
	free(x);
	free(out);
}

TEST_F_TIMEOUT(k, reduce_sum_f32, K_TIMEOUT)
{
	uint64_t n = self->n, lo, hi, i, in, outa;
	float *x = malloc(n * 4);
	uint32_t *out = malloc(self->nb * 4);
	uint32_t b;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, out);
	fill_f32(x, n, 51);
	/* Keep the sums finite so that the order shows in the bits. */
	for (i = 0; i < n; i++)
		if (!isfinite(x[i]) || fabsf(x[i]) > 1e30f)
			x[i] = (float)i * 0.001f;
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &in));
	ASSERT_EQ(0, dbuf(self->fd, NULL, self->nb * 4, &outa));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_REDUCE_SUM_F32,
					   self->nb);

	snpu_t_buf(&t, 0, outa, self->nb * 4);
	snpu_t_buf(&t, 1, in, n * 4);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, outa, out, self->nb * 4));
	for (b = 0; b < self->nb; b++) {
		float want = 0.0f;

		slice(n, self->nb, b, &lo, &hi);
		for (i = lo; i < hi; i++)
			want += x[i];
		if (out[b] != f2u(want)) {
			TH_LOG("block %u [%llu, %llu): got %a want %a",
			       b, (unsigned long long)lo,
			       (unsigned long long)hi, u2f(out[b]), want);
			break;
		}
	}
	EXPECT_EQ(self->nb, b);
	free(x);
	free(out);
}

TEST_F_TIMEOUT(k, crc32c, K_TIMEOUT)
{
	uint64_t n = self->n, lo, hi, in, outa;
	unsigned char *x = malloc(n);
	uint32_t *out = malloc(self->nb * 4);
	uint32_t b;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, out);
	snpu_fill_random(x, n, 61);
	ASSERT_EQ(0, dbuf(self->fd, x, n, &in));
	ASSERT_EQ(0, dbuf(self->fd, NULL, self->nb * 4, &outa));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_CRC32C,
					   self->nb);

	snpu_t_buf(&t, 0, outa, self->nb * 4);
	snpu_t_buf(&t, 1, in, n);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, outa, out, self->nb * 4));
	for (b = 0; b < self->nb; b++) {
		uint32_t want;

		slice(n, self->nb, b, &lo, &hi);
		want = ref_crc32c(x + lo, hi - lo);
		if (out[b] != want) {
			TH_LOG("block %u [%llu, %llu): got 0x%08x want 0x%08x",
			       b, (unsigned long long)lo,
			       (unsigned long long)hi, out[b], want);
			break;
		}
	}
	EXPECT_EQ(self->nb, b);
	free(x);
	free(out);
}

TEST_F_TIMEOUT(k, fail_errno_propagated, K_TIMEOUT)
{
	static const uint32_t errs[] = { 1, 5, 4095 };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-(int)errs[i], run(self->fd, self->s,
			snpu_t_launch_fail(self->s, errs[i], self->nb)));
		ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	}
}

/* ---- kernels outside the size matrix ------------------------------------ */

FIXTURE(one) {
	int fd;
	uint32_t s;
	struct snpu_info info;
};

FIXTURE_SETUP(one)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_get_info(self->fd, &self->info));
}

FIXTURE_TEARDOWN(one)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(one, crc32c_check_value)
{
	static const char msg[] = "123456789";
	uint64_t in, outa;
	uint32_t out = 0;

	EXPECT_EQ(0xe3069283U, ref_crc32c((const unsigned char *)msg, 9));
	ASSERT_EQ(0, dbuf(self->fd, msg, 9, &in));
	ASSERT_EQ(0, dbuf(self->fd, NULL, 4, &outa));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_CRC32C, 1);

	snpu_t_buf(&t, 0, outa, 4);
	snpu_t_buf(&t, 1, in, 9);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, outa, &out, 4));
	EXPECT_EQ(0xe3069283U, out);
}

/* "123456789" in 3 blocks: the crc of "123", "456" and "789". */
TEST_F(one, crc32c_check_value_sliced)
{
	static const char msg[] = "123456789";
	uint32_t out[3] = { 0 }, b;
	uint64_t in, outa;

	ASSERT_EQ(0, dbuf(self->fd, msg, 9, &in));
	ASSERT_EQ(0, dbuf(self->fd, NULL, 12, &outa));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_CRC32C, 3);

	snpu_t_buf(&t, 0, outa, 12);
	snpu_t_buf(&t, 1, in, 9);
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, outa, out, 12));
	for (b = 0; b < 3; b++)
		EXPECT_EQ(ref_crc32c((const unsigned char *)msg + 3 * b, 3),
			  out[b]);
}

/* NOP at the largest block_dim the device reports. */
TEST_F(one, nop_max_block_dim)
{
	EXPECT_EQ(65535U, self->info.max_block_dim);
	EXPECT_EQ(0, run(self->fd, self->s, snpu_t_launch(self->s,
			SNPU_KERNEL_NOP, self->info.max_block_dim)));
}

/* GEMM against the sequential f32 reference, bit for bit. */
static void gemm_check(struct __test_metadata *_metadata, int fd, uint32_t s,
		       uint32_t m, uint32_t n, uint32_t k, uint32_t nb)
{
	float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4);
	uint32_t *c = malloc((size_t)m * n * 4);
	uint64_t da, db, dc;
	uint32_t r, col, kk, bad = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	fill_f32(a, (size_t)m * k, m * 7 + k);
	fill_f32(b, (size_t)k * n, n * 13 + k);
	for (r = 0; r < m * k; r++)
		if (!isfinite(a[r]))
			a[r] = 0.5f;
	for (r = 0; r < k * n; r++)
		if (!isfinite(b[r]))
			b[r] = -0.25f;
	ASSERT_EQ(0, dbuf(fd, a, (uint64_t)m * k * 4, &da));
	ASSERT_EQ(0, dbuf(fd, b, (uint64_t)k * n * 4, &db));
	ASSERT_EQ(0, dbuf(fd, NULL, (uint64_t)m * n * 4, &dc));
	struct snpu_task t = snpu_t_launch(s, SNPU_KERNEL_GEMM_F32, nb);

	snpu_t_buf(&t, 0, dc, (uint64_t)m * n * 4);
	snpu_t_buf(&t, 1, da, (uint64_t)m * k * 4);
	snpu_t_buf(&t, 2, db, (uint64_t)k * n * 4);
	snpu_t_scalar(&t, 3, m);
	snpu_t_scalar(&t, 4, n);
	snpu_t_scalar(&t, 5, k);
	ASSERT_EQ(0, run(fd, s, t));
	ASSERT_EQ(0, dread(fd, dc, c, (uint64_t)m * n * 4));
	for (r = 0; r < m && !bad; r++) {
		for (col = 0; col < n; col++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++) {
				float p = a[r * k + kk] * b[kk * n + col];

				acc += p;
			}
			if (c[r * n + col] != f2u(acc)) {
				TH_LOG("c[%u][%u] got %a want %a", r, col,
				       u2f(c[r * n + col]), acc);
				bad = 1;
				break;
			}
		}
	}
	EXPECT_EQ(0U, bad);
	free(a);
	free(b);
	free(c);
}

TEST_F(one, gemm_17x33x9)
{
	static const uint32_t nbs[] = { 1, 3, 64, 600 };
	unsigned int i;

	for (i = 0; i < 4; i++)
		gemm_check(_metadata, self->fd, self->s, 17, 33, 9, nbs[i]);
}

TEST_F(one, gemm_64x64x64)
{
	static const uint32_t nbs[] = { 1, 3, 64 };
	unsigned int i;

	for (i = 0; i < 3; i++)
		gemm_check(_metadata, self->fd, self->s, 64, 64, 64, nbs[i]);
}

TEST_F(one, gemm_thin_shapes)
{
	gemm_check(_metadata, self->fd, self->s, 1, 1, 1, 1);
	gemm_check(_metadata, self->fd, self->s, 1, 1, 1, 5);
	gemm_check(_metadata, self->fd, self->s, 1, 40, 3, 7);
	gemm_check(_metadata, self->fd, self->s, 40, 1, 300, 6);
	gemm_check(_metadata, self->fd, self->s, 3, 5, 1000, 4);
}

/*
 * ---- the work of one block ----------------------------------------------
 *
 * A block keeps its core until it ends: ceil(units / block_dim) times the
 * cost of a unit (k for GEMM_F32, else 1) is at most
 * SNPU_KERNEL_BLOCK_WORK_MAX, EINVAL above, and the same work split over
 * more blocks runs.
 */

/* GEMM one element of c (k multiply-adds) above the bound: 2^18 + 1. */
#define BW_GEMM_M	5U
#define BW_GEMM_N	52429U
#define BW_GEMM_K	64U

TEST_F(one, block_work_reported)
{
	EXPECT_EQ(1ULL << 24, SNPU_KERNEL_BLOCK_WORK_MAX);
	EXPECT_EQ(SNPU_KERNEL_BLOCK_WORK_MAX,
		  (unsigned long long)self->info.max_block_work);
}

/* Submit @t alone: -EINVAL and nothing queued on @s. */
static void expect_refused_einval(struct __test_metadata *_metadata, int fd,
				  uint32_t s, struct snpu_task t)
{
	struct snpu_stream_query q;

	EXPECT_EQ(-EINVAL, snpu_submit1(fd, t));
	ASSERT_EQ(0, snpu_stream_query(fd, s, &q));
	EXPECT_EQ(0U, q.submitted);
}

TEST_F(one, block_work_gemm_above_bound_einval)
{
	const uint64_t cb = (uint64_t)BW_GEMM_M * BW_GEMM_N * 4;
	const uint64_t ab = (uint64_t)BW_GEMM_M * BW_GEMM_K * 4;
	const uint64_t bb = (uint64_t)BW_GEMM_K * 65536 * 4;
	uint64_t da, db, dc;

	ASSERT_EQ(1ULL << 18, SNPU_KERNEL_BLOCK_WORK_MAX / BW_GEMM_K);
	ASSERT_EQ((1ULL << 18) + 1, (uint64_t)BW_GEMM_M * BW_GEMM_N);
	ASSERT_EQ(0, dbuf(self->fd, NULL, cb, &dc));
	ASSERT_EQ(0, dbuf(self->fd, NULL, ab, &da));
	ASSERT_EQ(0, dbuf(self->fd, NULL, bb, &db));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_GEMM_F32, 1);

	snpu_t_buf(&t, 0, dc, cb);
	snpu_t_buf(&t, 1, da, ab);
	snpu_t_buf(&t, 2, db, (uint64_t)BW_GEMM_K * BW_GEMM_N * 4);
	snpu_t_scalar(&t, 3, BW_GEMM_M);
	snpu_t_scalar(&t, 4, BW_GEMM_N);
	snpu_t_scalar(&t, 5, BW_GEMM_K);
	expect_refused_einval(_metadata, self->fd, self->s, t);
	/* At the bound, 4 x 65536 x 64, the one block runs. */
	snpu_t_buf(&t, 0, dc, 4ULL * 65536 * 4);
	snpu_t_buf(&t, 1, da, 4ULL * BW_GEMM_K * 4);
	snpu_t_buf(&t, 2, db, bb);
	snpu_t_scalar(&t, 3, 4);
	snpu_t_scalar(&t, 4, 65536);
	EXPECT_EQ(0, run(self->fd, self->s, t));
}

/* The same GEMM over 2 blocks runs, bit for bit the reference. */
TEST_F_TIMEOUT(one, block_work_gemm_split_runs, 300)
{
	gemm_check(_metadata, self->fd, self->s, BW_GEMM_M, BW_GEMM_N,
		   BW_GEMM_K, 2);
}

/* ADD_F32 of 2^24 + 1 elements: refused in one block, right in two. */
TEST_F_TIMEOUT(one, block_work_add_f32, 300)
{
	const uint64_t n = SNPU_KERNEL_BLOCK_WORK_MAX + 1;
	uint32_t *x = malloc(n * 4), *y = malloc(n * 4), *out = malloc(n * 4);
	uint64_t a, b, c, i;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, out);
	fill_f32((float *)x, n, 11);
	fill_f32((float *)y, n, 12);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &a));
	ASSERT_EQ(0, dbuf(self->fd, y, n * 4, &b));
	ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &c));
	struct snpu_task t = snpu_t_launch(self->s, SNPU_KERNEL_ADD_F32, 1);

	snpu_t_buf(&t, 0, c, n * 4);
	snpu_t_buf(&t, 1, a, n * 4);
	snpu_t_buf(&t, 2, b, n * 4);
	expect_refused_einval(_metadata, self->fd, self->s, t);
	t.launch.block_dim = 2;
	ASSERT_EQ(0, run(self->fd, self->s, t));
	ASSERT_EQ(0, dread(self->fd, c, out, n * 4));
	for (i = 0; i < n; i++) {
		uint32_t want = f2u(u2f(x[i]) + u2f(y[i]));

		if (!f32_same(want, out[i])) {
			TH_LOG("element %llu: got 0x%08x want 0x%08x",
			       (unsigned long long)i, out[i], want);
			break;
		}
	}
	EXPECT_EQ(n, i);
	free(x);
	free(y);
	free(out);
}

/* SPIN: every block busy-waits ns; events around it see at least that. */
TEST_F(one, spin_elapsed)
{
	static const struct { uint64_t ns; uint32_t nb; } c[] = {
		{ 30 * NS_PER_MS, 1 }, { 20 * NS_PER_MS, 3 },
		{ 2 * NS_PER_MS, 64 }, { 0, 1 },
	};
	uint32_t e1, e2;
	unsigned int i;

	ASSERT_EQ(0, snpu_event_create(self->fd, &e1));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e2));
	for (i = 0; i < 4; i++) {
		uint64_t t0 = snpu_now_ns(), t1;
		int64_t ns = -1;

		struct snpu_task t[3] = {
			snpu_t_record(self->s, e1),
			snpu_t_spin(self->s, c[i].ns, c[i].nb),
			snpu_t_record(self->s, e2),
		};
		ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT,
					      NULL));
		t1 = snpu_now_ns();
		ASSERT_EQ(0, snpu_event_elapsed(self->fd, e1, e2, &ns));
		EXPECT_GE(ns, (int64_t)c[i].ns) TH_LOG("case %u", i);
		EXPECT_GE(t1 - t0, c[i].ns);
	}
}

/* The FAIL launch fails its task whatever the block count. */
TEST_F(one, fail_stream_error_is_first_block_error)
{
	int32_t err = 0;

	ASSERT_EQ(0, snpu_submit1(self->fd,
			snpu_t_launch_fail(self->s, 42, 100)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-42, err);
}

/* ---- launches refused at SUBMIT ---------------------------------------- */

/*
 * ---- the kernels for training (ABI 0.8) -------------------------------
 *
 * Each against a reference written here, for block_dim 1, 2, 3, 4 (the
 * module's default cores), 64 and 65535 (more blocks than units):
 * GEMM_TN/NT, BIAS_ADD, RELU_BWD, COLSUM, ARGMAX, COUNT_EQ and AFFINE bit
 * for bit. SOFTMAX_XENT uses the driver's own exp and log: its results
 * are checked against libm in double within a tolerance, and bit for bit
 * between block counts.
 */

FIXTURE(train) {
	int fd;
	uint32_t s;
	struct snpu_info info;
};

FIXTURE_SETUP(train)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_get_info(self->fd, &self->info));
}

FIXTURE_TEARDOWN(train)
{
	if (self->fd >= 0)
		close(self->fd);
}

static const uint32_t train_nbs[] = { 1, 2, 3, 4, 64, 65535 };

/* Finite values of moderate size: for the GEMMs and softmax. */
static void fill_finite(float *f, size_t n, uint64_t seed, float scale)
{
	uint64_t st = seed | 1;
	size_t i;

	for (i = 0; i < n; i++)
		f[i] = ((float)(int64_t)(snpu_rand(&st) % 2001) - 1000.0f) /
		       1000.0f * scale;
}

static void gemm2_check(struct __test_metadata *_metadata, int fd,
			uint32_t s, uint32_t kernel, uint32_t m, uint32_t n,
			uint32_t k, uint32_t nb)
{
	float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4);
	uint32_t *c = malloc((size_t)m * n * 4);
	uint64_t da, db, dc;
	uint32_t r, col, kk, bad = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	fill_finite(a, (size_t)m * k, m * 7 + k, 3.0f);
	fill_finite(b, (size_t)k * n, n * 13 + k, 2.0f);
	ASSERT_EQ(0, dbuf(fd, a, (uint64_t)m * k * 4, &da));
	ASSERT_EQ(0, dbuf(fd, b, (uint64_t)k * n * 4, &db));
	ASSERT_EQ(0, dbuf(fd, NULL, (uint64_t)m * n * 4, &dc));
	struct snpu_task t = snpu_t_launch(s, kernel, nb);

	snpu_t_buf(&t, 0, dc, (uint64_t)m * n * 4);
	snpu_t_buf(&t, 1, da, (uint64_t)m * k * 4);
	snpu_t_buf(&t, 2, db, (uint64_t)k * n * 4);
	snpu_t_scalar(&t, 3, m);
	snpu_t_scalar(&t, 4, n);
	snpu_t_scalar(&t, 5, k);
	ASSERT_EQ(0, run(fd, s, t));
	ASSERT_EQ(0, dread(fd, dc, c, (uint64_t)m * n * 4));
	for (r = 0; r < m && !bad; r++) {
		for (col = 0; col < n; col++) {
			float acc = 0.0f;

			/* TN: a is k x m; NT: b is n x k. */
			for (kk = 0; kk < k; kk++)
				acc += kernel == SNPU_KERNEL_GEMM_TN_F32 ?
				       a[kk * m + r] * b[kk * n + col] :
				       kernel == SNPU_KERNEL_GEMM_NT_F32 ?
				       a[r * k + kk] * b[col * k + kk] :
				       a[r * k + kk] * b[kk * n + col];
			if (c[r * n + col] != f2u(acc)) {
				TH_LOG("kernel %u %ux%ux%u blocks %u: c[%u][%u] got %a want %a",
				       kernel, m, n, k, nb, r, col,
				       u2f(c[r * n + col]), acc);
				bad = 1;
				break;
			}
		}
	}
	EXPECT_EQ(0U, bad);
	ASSERT_EQ(0, snpu_free(fd, da));
	ASSERT_EQ(0, snpu_free(fd, db));
	ASSERT_EQ(0, snpu_free(fd, dc));
	free(a);
	free(b);
	free(c);
}

static const uint32_t gemm2_shapes[][3] = {
	{ 17, 33, 9 }, { 64, 10, 128 }, { 10, 64, 32 }, { 1, 40, 3 },
	{ 40, 1, 300 },
};

/*
 * ---- a user's vector registers while the cores compute ------------------
 *
 * One thread per CPU, pinned to it, holds known values in xmm0..xmm14
 * (all 256 bits of ymm0..ymm14 where the CPU has AVX2) and an MXCSR of
 * its own (rounding toward zero, denormals are zero), and compares them
 * with memory in a loop of its own instructions, so that nothing of the
 * program touches them, until it is told to stop. Meanwhile the device's
 * cores, kernel threads on the same CPUs, run f32 kernels in hundreds of
 * blocks and FPU sections: kernel_fpu_begin() must save what the thread
 * holds before a core uses the registers, and have it back before the
 * thread runs again. The threads must have been preempted on their CPUs
 * while they held the values, and see every register and the MXCSR
 * intact; the device's results are right too.
 */

#define HOLD_REGS	15
#define HOLD_MXCSR	0x7fc0U	/* all masked, toward zero, DAZ */
#define MXCSR_DEFAULT	0x1f80U

struct holder {
	pthread_t thread;
	int cpu;
	bool avx2;
	volatile int *stop;
	const unsigned char *pat;	/* HOLD_REGS x 32 bytes, 32-aligned */
	uint64_t iters;
	uint32_t mxcsr;
	long nivcsw;
	int bad;
	int err;
};

#define XMM_LOAD(n)	"movdqa " #n "*32(%[p]), %%xmm" #n "\n\t"
#define XMM_CHECK(n)	"movdqa %%xmm" #n ", %%xmm15\n\t"		\
			"pcmpeqb " #n "*32(%[p]), %%xmm15\n\t"		\
			"pmovmskb %%xmm15, %%eax\n\t"			\
			"cmp $0xffff, %%eax\n\t"			\
			"jne 2f\n\t"
#define YMM_LOAD(n)	"vmovdqa " #n "*32(%[p]), %%ymm" #n "\n\t"
#define YMM_CHECK(n)	"vpcmpeqb " #n "*32(%[p]), %%ymm" #n ", %%ymm15\n\t" \
			"vpmovmskb %%ymm15, %%eax\n\t"			\
			"cmp $-1, %%eax\n\t"				\
			"jne 2f\n\t"
#define REGS(m)		m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8)	\
			m(9) m(10) m(11) m(12) m(13) m(14)
#define HOLD_CLOBBERS	"eax", "ecx", "cc", "memory", "xmm0", "xmm1",	\
			"xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",	\
			"xmm8", "xmm9", "xmm10", "xmm11", "xmm12",	\
			"xmm13", "xmm14", "xmm15"

/* Hold the values until *stop; return 1 as soon as one has changed. */
static int hold_xmm(struct holder *h, uint32_t mxcsr)
{
	int bad;

	asm volatile("ldmxcsr %[mxin]\n\t"
		     REGS(XMM_LOAD)
		     "1:\n\t"
		     REGS(XMM_CHECK)
		     "incq %[it]\n\t"
		     "cmpl $0, %[stop]\n\t"
		     "je 1b\n\t"
		     "xor %%ecx, %%ecx\n\t"
		     "jmp 3f\n\t"
		     "2:\n\t"
		     "mov $1, %%ecx\n\t"
		     "3:\n\t"
		     "stmxcsr %[mxout]\n\t"
		     "mov %%ecx, %[bad]\n\t"
		     : [bad] "=r" (bad), [it] "+m" (h->iters),
		       [mxout] "=m" (h->mxcsr)
		     : [p] "r" (h->pat), [stop] "m" (*h->stop),
		       [mxin] "m" (mxcsr)
		     : HOLD_CLOBBERS);
	return bad;
}

static int hold_ymm(struct holder *h, uint32_t mxcsr)
{
	int bad;

	asm volatile("ldmxcsr %[mxin]\n\t"
		     REGS(YMM_LOAD)
		     "1:\n\t"
		     REGS(YMM_CHECK)
		     "incq %[it]\n\t"
		     "cmpl $0, %[stop]\n\t"
		     "je 1b\n\t"
		     "xor %%ecx, %%ecx\n\t"
		     "jmp 3f\n\t"
		     "2:\n\t"
		     "mov $1, %%ecx\n\t"
		     "3:\n\t"
		     "stmxcsr %[mxout]\n\t"
		     "vzeroupper\n\t"
		     "mov %%ecx, %[bad]\n\t"
		     : [bad] "=r" (bad), [it] "+m" (h->iters),
		       [mxout] "=m" (h->mxcsr)
		     : [p] "r" (h->pat), [stop] "m" (*h->stop),
		       [mxin] "m" (mxcsr)
		     : HOLD_CLOBBERS);
	return bad;
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	uint32_t def = MXCSR_DEFAULT;
	struct rusage ru;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	h->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (h->err)
		return NULL;
	h->bad = h->avx2 ? hold_ymm(h, HOLD_MXCSR) : hold_xmm(h, HOLD_MXCSR);
	asm volatile("ldmxcsr %0" : : "m" (def));
	if (getrusage(RUSAGE_THREAD, &ru))
		h->err = errno;
	h->nivcsw = ru.ru_nivcsw;
	return NULL;
}

TEST_F(train, user_vector_registers_survive_device_kernels)
{
	static unsigned char pat[HOLD_REGS * 32] __attribute__((aligned(32)));
	const uint32_t m = 96, n = 96, k = 200, launches = 40;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4);
	float *c = malloc((size_t)m * n * 4);
	volatile int stop = 0;
	struct holder *h;
	uint64_t da, db, dc, st = 4242;
	uint32_t r, col, kk, i;
	long preempted = 0;
	bool avx2;

	ASSERT_GT(ncpu, 0);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	h = calloc(ncpu, sizeof(*h));
	ASSERT_NE(NULL, h);
	for (i = 0; i < sizeof(pat); i++)
		pat[i] = (unsigned char)snpu_rand(&st);
	__builtin_cpu_init();
	avx2 = __builtin_cpu_supports("avx2");
	TH_LOG("%ld CPUs, holding %s registers", ncpu,
	       avx2 ? "ymm (AVX2)" : "xmm");
	fill_finite(a, (size_t)m * k, 1, 2.0f);
	fill_finite(b, (size_t)k * n, 2, 2.0f);
	ASSERT_EQ(0, dbuf(self->fd, a, (uint64_t)m * k * 4, &da));
	ASSERT_EQ(0, dbuf(self->fd, b, (uint64_t)k * n * 4, &db));
	ASSERT_EQ(0, dbuf(self->fd, NULL, (uint64_t)m * n * 4, &dc));

	for (i = 0; i < ncpu; i++) {
		h[i].cpu = (int)i;
		h[i].avx2 = avx2;
		h[i].stop = &stop;
		h[i].pat = pat;
		ASSERT_EQ(0, pthread_create(&h[i].thread, NULL, holder_main,
					    &h[i]));
	}
	/* GEMMs of 96 blocks of 96 elements, an FPU section each. */
	for (i = 0; i < launches; i++) {
		struct snpu_task t = snpu_t_launch(self->s,
						   SNPU_KERNEL_GEMM_F32, 96);

		snpu_t_buf(&t, 0, dc, (uint64_t)m * n * 4);
		snpu_t_buf(&t, 1, da, (uint64_t)m * k * 4);
		snpu_t_buf(&t, 2, db, (uint64_t)k * n * 4);
		snpu_t_scalar(&t, 3, m);
		snpu_t_scalar(&t, 4, n);
		snpu_t_scalar(&t, 5, k);
		ASSERT_EQ(0, run(self->fd, self->s, t));
	}
	stop = 1;
	for (i = 0; i < ncpu; i++) {
		ASSERT_EQ(0, pthread_join(h[i].thread, NULL));
		ASSERT_EQ(0, h[i].err);
		EXPECT_EQ(0, h[i].bad)
			TH_LOG("CPU %d: a register changed under the thread after %llu checks",
			       h[i].cpu, (unsigned long long)h[i].iters);
		EXPECT_EQ(HOLD_MXCSR, h[i].mxcsr)
			TH_LOG("CPU %d: MXCSR %#x", h[i].cpu, h[i].mxcsr);
		EXPECT_GT(h[i].iters, 0ULL);
		preempted += h[i].nivcsw;
	}
	/* The cores ran while the threads held their values. */
	EXPECT_GT(preempted, 0L);
	TH_LOG("threads preempted %ld times", preempted);
	ASSERT_EQ(0, dread(self->fd, dc, c, (uint64_t)m * n * 4));
	for (r = 0; r < m; r++) {
		for (col = 0; col < n; col++) {
			float acc = 0.0f;

			for (kk = 0; kk < k; kk++)
				acc += a[r * k + kk] * b[kk * n + col];
			ASSERT_EQ(f2u(acc), f2u(c[r * n + col]))
				TH_LOG("c[%u][%u]", r, col);
		}
	}
	free(h);
	free(a);
	free(b);
	free(c);
}

TEST_F(train, gemm_tn_f32)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(gemm2_shapes); i++)
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++)
			gemm2_check(_metadata, self->fd, self->s,
				    SNPU_KERNEL_GEMM_TN_F32, gemm2_shapes[i][0],
				    gemm2_shapes[i][1], gemm2_shapes[i][2],
				    train_nbs[j]);
	/* More blocks than elements of c. */
	gemm2_check(_metadata, self->fd, self->s, SNPU_KERNEL_GEMM_TN_F32,
		    3, 5, 7, 600);
}

TEST_F(train, gemm_nt_f32)
{
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(gemm2_shapes); i++)
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++)
			gemm2_check(_metadata, self->fd, self->s,
				    SNPU_KERNEL_GEMM_NT_F32, gemm2_shapes[i][0],
				    gemm2_shapes[i][1], gemm2_shapes[i][2],
				    train_nbs[j]);
	gemm2_check(_metadata, self->fd, self->s, SNPU_KERNEL_GEMM_NT_F32,
		    3, 5, 7, 600);
}

/*
 * The three GEMMs on odd shapes (1, 3, 17, 129 rows and columns; k of 1,
 * 3, 17, 129, 784, no multiple of the vector widths) with 1, 2, the
 * device's cores and 65535 blocks, bit for bit the reference summed over
 * k from 0 up; and the default MLP's forward GEMM.
 */
TEST_F(train, gemm_family_odd_shapes_and_block_dims)
{
	static const uint32_t kernels[] = {
		SNPU_KERNEL_GEMM_F32, SNPU_KERNEL_GEMM_TN_F32,
		SNPU_KERNEL_GEMM_NT_F32,
	};
	static const uint32_t shapes[][3] = {	/* m, n, k */
		{ 1, 1, 1 }, { 3, 17, 129 }, { 17, 3, 784 }, { 129, 129, 3 },
		{ 129, 17, 1 }, { 17, 129, 17 }, { 1, 129, 3 },
		{ 64, 128, 784 },
	};
	const uint32_t nbs[] = { 1, 2, self->info.cores, 65535 };
	unsigned int i, j, q;

	for (q = 0; q < ARRAY_SIZE(kernels); q++)
		for (i = 0; i < ARRAY_SIZE(shapes); i++)
			for (j = 0; j < ARRAY_SIZE(nbs); j++)
				gemm2_check(_metadata, self->fd, self->s,
					    kernels[q], shapes[i][0],
					    shapes[i][1], shapes[i][2], nbs[j]);
}

TEST_F(train, bias_add_f32)
{
	static const uint32_t shapes[][2] = {	/* rows, n */
		{ 1000, 10 }, { 3, 5000 }, { 7, 1 }, { 1, 128 },
	};
	unsigned int i, j;
	size_t e;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		size_t cnt = (size_t)shapes[i][0] * shapes[i][1];
		uint32_t n = shapes[i][1];
		float *x = malloc(cnt * 4), *bias = malloc(n * 4);
		uint32_t *y = malloc(cnt * 4);
		uint64_t dx, dbias, dy;

		ASSERT_NE(NULL, x);
		ASSERT_NE(NULL, bias);
		ASSERT_NE(NULL, y);
		fill_f32(x, cnt, cnt);
		fill_f32(bias, n, n + 1);
		ASSERT_EQ(0, dbuf(self->fd, x, cnt * 4, &dx));
		ASSERT_EQ(0, dbuf(self->fd, bias, n * 4, &dbias));
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++) {
			ASSERT_EQ(0, dbuf(self->fd, NULL, cnt * 4, &dy));
			struct snpu_task t = snpu_t_launch(self->s,
				SNPU_KERNEL_BIAS_ADD_F32, train_nbs[j]);

			snpu_t_buf(&t, 0, dy, cnt * 4);
			snpu_t_buf(&t, 1, dx, cnt * 4);
			snpu_t_buf(&t, 2, dbias, n * 4);
			snpu_t_scalar(&t, 3, n);
			ASSERT_EQ(0, run(self->fd, self->s, t));
			ASSERT_EQ(0, dread(self->fd, dy, y, cnt * 4));
			for (e = 0; e < cnt; e++)
				ASSERT_TRUE(f32_same(f2u(x[e] + bias[e % n]),
						     y[e]))
					TH_LOG("%u x %u blocks %u: y[%zu]",
					       shapes[i][0], n, train_nbs[j], e);
			ASSERT_EQ(0, snpu_free(self->fd, dy));
		}
		ASSERT_EQ(0, snpu_free(self->fd, dx));
		ASSERT_EQ(0, snpu_free(self->fd, dbias));
		free(x);
		free(bias);
		free(y);
	}
}

TEST_F(train, relu_bwd_f32)
{
	static const uint32_t nbs[] = { 1, 3, 64, 40000 };
	const size_t n = 65543;
	float *dy = malloc(n * 4), *yv = malloc(n * 4);
	uint32_t *dx = malloc(n * 4);
	uint64_t ddy, dyv, ddx;
	unsigned int j;
	size_t e;

	ASSERT_NE(NULL, dy);
	ASSERT_NE(NULL, yv);
	ASSERT_NE(NULL, dx);
	fill_f32(dy, n, 3);
	fill_f32(yv, n, 4);
	for (e = 0; e < n; e++)
		if (e % 2)
			yv[e] = -yv[e];
	ASSERT_EQ(0, dbuf(self->fd, dy, n * 4, &ddy));
	ASSERT_EQ(0, dbuf(self->fd, yv, n * 4, &dyv));
	for (j = 0; j < ARRAY_SIZE(nbs); j++) {
		ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &ddx));
		struct snpu_task t = snpu_t_launch(self->s,
			SNPU_KERNEL_RELU_BWD_F32, nbs[j]);

		snpu_t_buf(&t, 0, ddx, n * 4);
		snpu_t_buf(&t, 1, ddy, n * 4);
		snpu_t_buf(&t, 2, dyv, n * 4);
		ASSERT_EQ(0, run(self->fd, self->s, t));
		ASSERT_EQ(0, dread(self->fd, ddx, dx, n * 4));
		for (e = 0; e < n; e++)
			ASSERT_TRUE(f32_same(f2u(yv[e] > 0.0f ? dy[e] : 0.0f),
					     dx[e]))
				TH_LOG("blocks %u: dx[%zu]", nbs[j], e);
		ASSERT_EQ(0, snpu_free(self->fd, ddx));
	}
	free(dy);
	free(yv);
	free(dx);
}

/*
 * SOFTMAX_XENT of @rows x @ncls against libm in double: loss within 1e-5
 * relative (plus 1e-6), each gradient within 1e-6 * scale; and the same
 * bits for every block count.
 */
static void softmax_check(struct __test_metadata *_metadata, int fd,
			  uint32_t s, uint32_t rows, uint32_t ncls,
			  float spread, float last)
{
	size_t cnt = (size_t)rows * ncls;
	const float scale = 1.0f / 64.0f;
	float *x = malloc(cnt * 4), *d = malloc(cnt * 4);
	float *loss = malloc(rows * 4), *d0 = malloc(cnt * 4);
	float *loss0 = malloc(rows * 4);
	int32_t *lab = malloc(rows * 4);
	uint64_t dx, dd, dl, dlab, st = rows * 31 + ncls;
	uint32_t r, c;
	unsigned int j;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, d);
	ASSERT_NE(NULL, loss);
	ASSERT_NE(NULL, d0);
	ASSERT_NE(NULL, loss0);
	ASSERT_NE(NULL, lab);
	fill_finite(x, cnt, cnt + 5, spread);
	for (r = 0; r < rows; r++)
		lab[r] = (int32_t)(snpu_rand(&st) % ncls);
	/*
	 * @last above the spread in the last class of every other row: its
	 * maximum. The sums are shifted by it, so a maximum that missed it
	 * would take exp of about @last, which overflows past 88.7.
	 */
	if (last != 0.0f)
		for (r = 0; r < rows; r += 2)
			x[(size_t)r * ncls + ncls - 1] = spread + last;
	ASSERT_EQ(0, dbuf(fd, x, cnt * 4, &dx));
	ASSERT_EQ(0, dbuf(fd, lab, rows * 4, &dlab));
	for (j = 0; j < ARRAY_SIZE(train_nbs); j++) {
		ASSERT_EQ(0, dbuf(fd, NULL, cnt * 4, &dd));
		ASSERT_EQ(0, dbuf(fd, NULL, rows * 4, &dl));
		struct snpu_task t = snpu_t_launch(s,
			SNPU_KERNEL_SOFTMAX_XENT_F32, train_nbs[j]);

		snpu_t_buf(&t, 0, dl, rows * 4);
		snpu_t_buf(&t, 1, dd, cnt * 4);
		snpu_t_buf(&t, 2, dx, cnt * 4);
		snpu_t_buf(&t, 3, dlab, rows * 4);
		snpu_t_scalar(&t, 4, ncls);
		snpu_t_scalar(&t, 5, f2u(scale));
		ASSERT_EQ(0, run(fd, s, t));
		ASSERT_EQ(0, dread(fd, dl, loss, rows * 4));
		ASSERT_EQ(0, dread(fd, dd, d, cnt * 4));
		ASSERT_EQ(0, snpu_free(fd, dd));
		ASSERT_EQ(0, snpu_free(fd, dl));
		if (j) {
			EXPECT_EQ(0, memcmp(loss0, loss, rows * 4))
				TH_LOG("loss differs at %u blocks", train_nbs[j]);
			EXPECT_EQ(0, memcmp(d0, d, cnt * 4))
				TH_LOG("dlogits differ at %u blocks",
				       train_nbs[j]);
			continue;
		}
		memcpy(loss0, loss, rows * 4);
		memcpy(d0, d, cnt * 4);
		for (r = 0; r < rows; r++) {
			const float *xr = x + (size_t)r * ncls;
			double mx = xr[0], sum = 0.0, l;

			for (c = 1; c < ncls; c++)
				mx = xr[c] > mx ? xr[c] : mx;
			for (c = 0; c < ncls; c++)
				sum += exp((double)xr[c] - mx);
			l = log(sum) - ((double)xr[lab[r]] - mx);
			ASSERT_LE(fabs(l - loss[r]), 1e-5 * fabs(l) + 1e-6)
				TH_LOG("%u x %u: loss[%u] %a, libm %a", rows,
				       ncls, r, loss[r], l);
			for (c = 0; c < ncls; c++) {
				double g = (exp((double)xr[c] - mx) / sum -
					    (c == (uint32_t)lab[r])) * scale;

				ASSERT_LE(fabs(g - d[(size_t)r * ncls + c]),
					  1e-6 * scale)
					TH_LOG("%u x %u: d[%u][%u]", rows, ncls,
					       r, c);
			}
		}
	}
	ASSERT_EQ(0, snpu_free(fd, dx));
	ASSERT_EQ(0, snpu_free(fd, dlab));
	free(x);
	free(d);
	free(loss);
	free(d0);
	free(loss0);
	free(lab);
}

/*
 * Half the rows of each case have their maximum in the last class, 100
 * above the others (see below); the 300-row case none.
 */
TEST_F(train, softmax_xent_f32)
{
	softmax_check(_metadata, self->fd, self->s, 64, 10, 8.0f, 100.0f);
	softmax_check(_metadata, self->fd, self->s, 300, 10, 40.0f, 0.0f);
	softmax_check(_metadata, self->fd, self->s, 3, 1000, 20.0f, 100.0f);
	softmax_check(_metadata, self->fd, self->s, 5, 1, 5.0f, 0.0f);
}

/*
 * The maximum in the last class, 100 above the rest: a maximum loop that
 * skipped the last class would shift by the wrong one and overflow exp,
 * giving an infinite or NaN loss. Class counts around the vector widths.
 */
TEST_F(train, softmax_xent_f32_max_in_last_class)
{
	static const uint32_t nclss[] = { 2, 3, 9, 10, 17, 129 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nclss); i++)
		softmax_check(_metadata, self->fd, self->s, 33, nclss[i], 6.0f,
			      100.0f);
}

/*
 * A label outside [0, ncls) fails the task at run time with EDOM (the
 * stream's error); the rows before it, in its block, are written.
 */
TEST_F(train, softmax_xent_bad_label_edom)
{
	static const int32_t bad[] = { 10, -1, 0x7fffffff };
	int32_t lab[4] = { 1, 2, 3, 4 };
	float x[40], loss[4];
	uint64_t dx, dd, dl, dlab;
	unsigned int i;

	fill_finite(x, 40, 9, 4.0f);
	ASSERT_EQ(0, dbuf(self->fd, x, sizeof(x), &dx));
	ASSERT_EQ(0, dbuf(self->fd, NULL, sizeof(x), &dd));
	ASSERT_EQ(0, dbuf(self->fd, NULL, sizeof(loss), &dl));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		lab[2] = bad[i];
		ASSERT_EQ(0, dbuf(self->fd, lab, sizeof(lab), &dlab));
		ASSERT_EQ(0, snpu_memset(self->fd, dl, SENTINEL,
					 sizeof(loss)));
		struct snpu_task t = snpu_t_launch(self->s,
			SNPU_KERNEL_SOFTMAX_XENT_F32, 1);

		snpu_t_buf(&t, 0, dl, sizeof(loss));
		snpu_t_buf(&t, 1, dd, sizeof(x));
		snpu_t_buf(&t, 2, dx, sizeof(x));
		snpu_t_buf(&t, 3, dlab, sizeof(lab));
		snpu_t_scalar(&t, 4, 10);
		snpu_t_scalar(&t, 5, 0x3f800000);
		/* Accepted at SUBMIT: labels are data. */
		EXPECT_EQ(-EDOM, run(self->fd, self->s, t))
			TH_LOG("label %d", bad[i]);
		ASSERT_EQ(0, dread(self->fd, dl, loss, sizeof(loss)));
		EXPECT_NE(0xa5a5a5a5U, f2u(loss[1]));
		EXPECT_EQ(0xa5a5a5a5U, f2u(loss[2]));
		EXPECT_EQ(0xa5a5a5a5U, f2u(loss[3]));
		/* The stream keeps the error until it is reset. */
		EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));
		ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
		ASSERT_EQ(0, snpu_free(self->fd, dlab));
	}
	/* Good labels again: runs. */
	lab[2] = 9;
	ASSERT_EQ(0, dbuf(self->fd, lab, sizeof(lab), &dlab));
	struct snpu_task t = snpu_t_launch(self->s,
		SNPU_KERNEL_SOFTMAX_XENT_F32, 4);

	snpu_t_buf(&t, 0, dl, sizeof(loss));
	snpu_t_buf(&t, 1, dd, sizeof(x));
	snpu_t_buf(&t, 2, dx, sizeof(x));
	snpu_t_buf(&t, 3, dlab, sizeof(lab));
	snpu_t_scalar(&t, 4, 10);
	snpu_t_scalar(&t, 5, 0x3f800000);
	EXPECT_EQ(0, run(self->fd, self->s, t));
}

TEST_F(train, colsum_f32)
{
	static const uint32_t shapes[][2] = {	/* rows, n */
		{ 1000, 10 }, { 2, 5000 }, { 4097, 2 }, { 1, 7 },
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		uint32_t rows = shapes[i][0], n = shapes[i][1], r, c;
		size_t cnt = (size_t)rows * n;
		float *in = malloc(cnt * 4);
		uint32_t *out = malloc(n * 4);
		uint64_t din, dout;

		ASSERT_NE(NULL, in);
		ASSERT_NE(NULL, out);
		fill_f32(in, cnt, cnt + 11);
		ASSERT_EQ(0, dbuf(self->fd, in, cnt * 4, &din));
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++) {
			ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &dout));
			struct snpu_task t = snpu_t_launch(self->s,
				SNPU_KERNEL_COLSUM_F32, train_nbs[j]);

			snpu_t_buf(&t, 0, dout, n * 4);
			snpu_t_buf(&t, 1, din, cnt * 4);
			snpu_t_scalar(&t, 2, n);
			ASSERT_EQ(0, run(self->fd, self->s, t));
			ASSERT_EQ(0, dread(self->fd, dout, out, n * 4));
			for (c = 0; c < n; c++) {
				float acc = 0.0f;

				for (r = 0; r < rows; r++)
					acc += in[(size_t)r * n + c];
				ASSERT_TRUE(f32_same(f2u(acc), out[c]))
					TH_LOG("%u x %u blocks %u: out[%u]",
					       rows, n, train_nbs[j], c);
			}
			ASSERT_EQ(0, snpu_free(self->fd, dout));
		}
		ASSERT_EQ(0, snpu_free(self->fd, din));
		free(in);
		free(out);
	}
}

TEST_F(train, argmax_f32)
{
	static const uint32_t shapes[][2] = {	/* rows, ncls */
		{ 1000, 10 }, { 3, 5000 }, { 100, 1 },
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		uint32_t rows = shapes[i][0], ncls = shapes[i][1], r, c;
		size_t cnt = (size_t)rows * ncls;
		float *in = malloc(cnt * 4);
		uint32_t *out = malloc(rows * 4);
		uint64_t din, dout, st = cnt;

		ASSERT_NE(NULL, in);
		ASSERT_NE(NULL, out);
		/*
		 * Few distinct values: ties, which go to the first; every
		 * third row's maximum alone in its last class.
		 */
		for (r = 0; r < cnt; r++)
			in[r] = (float)(snpu_rand(&st) % 5);
		for (r = 0; r < rows; r += 3)
			in[(size_t)r * ncls + ncls - 1] = 9.0f;
		ASSERT_EQ(0, dbuf(self->fd, in, cnt * 4, &din));
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++) {
			ASSERT_EQ(0, dbuf(self->fd, NULL, rows * 4, &dout));
			struct snpu_task t = snpu_t_launch(self->s,
				SNPU_KERNEL_ARGMAX_F32, train_nbs[j]);

			snpu_t_buf(&t, 0, dout, rows * 4);
			snpu_t_buf(&t, 1, din, cnt * 4);
			snpu_t_scalar(&t, 2, ncls);
			ASSERT_EQ(0, run(self->fd, self->s, t));
			ASSERT_EQ(0, dread(self->fd, dout, out, rows * 4));
			for (r = 0; r < rows; r++) {
				uint32_t best = 0;

				for (c = 1; c < ncls; c++)
					if (in[(size_t)r * ncls + c] >
					    in[(size_t)r * ncls + best])
						best = c;
				ASSERT_EQ(best, out[r])
					TH_LOG("%u x %u blocks %u: row %u",
					       rows, ncls, train_nbs[j], r);
			}
			ASSERT_EQ(0, snpu_free(self->fd, dout));
		}
		ASSERT_EQ(0, snpu_free(self->fd, din));
		free(in);
		free(out);
	}
}

TEST_F(train, count_eq_i32)
{
	static const uint32_t nbs[] = { 1, 3, 64, 40000 };
	const uint64_t n = 65543;
	uint32_t *a = malloc(n * 4), *b = malloc(n * 4);
	uint32_t *out = malloc(40000 * 4);
	uint64_t da, db, dout, st = 77, lo, hi, e, total = 0, sum;
	unsigned int j, blk;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, out);
	for (e = 0; e < n; e++) {
		a[e] = (uint32_t)(snpu_rand(&st) % 10);
		b[e] = (uint32_t)(snpu_rand(&st) % 10);
		total += a[e] == b[e];
	}
	ASSERT_EQ(0, dbuf(self->fd, a, n * 4, &da));
	ASSERT_EQ(0, dbuf(self->fd, b, n * 4, &db));
	for (j = 0; j < ARRAY_SIZE(nbs); j++) {
		ASSERT_EQ(0, dbuf(self->fd, NULL, nbs[j] * 4ULL, &dout));
		struct snpu_task t = snpu_t_launch(self->s,
			SNPU_KERNEL_COUNT_EQ_I32, nbs[j]);

		snpu_t_buf(&t, 0, dout, nbs[j] * 4ULL);
		snpu_t_buf(&t, 1, da, n * 4);
		snpu_t_buf(&t, 2, db, n * 4);
		ASSERT_EQ(0, run(self->fd, self->s, t));
		ASSERT_EQ(0, dread(self->fd, dout, out, nbs[j] * 4ULL));
		sum = 0;
		for (blk = 0; blk < nbs[j]; blk++) {
			uint32_t want = 0;

			slice(n, nbs[j], blk, &lo, &hi);
			for (e = lo; e < hi; e++)
				want += a[e] == b[e];
			ASSERT_EQ(want, out[blk])
				TH_LOG("blocks %u: block %u", nbs[j], blk);
			sum += out[blk];
		}
		EXPECT_EQ(total, sum);
		ASSERT_EQ(0, snpu_free(self->fd, dout));
	}
	free(a);
	free(b);
	free(out);
}

TEST_F(train, affine_f32)
{
	static const uint32_t coef[][2] = {
		{ 0x3b808081, 0xbf000000 },	/* 1/255, -0.5 */
		{ 0xc0490fdb, 0x42f60000 },	/* -pi, 123 */
		/* 1 + 2^-12 twice: a fused multiply-add would differ. */
		{ 0x3f800800, 0xbf801000 },
	};
	const size_t n = 65543;
	float *x = malloc(n * 4);
	uint32_t *y = malloc(n * 4);
	uint64_t dx, dy;
	unsigned int c, j;
	size_t e;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	fill_f32(x, n, 21);
	x[0] = u2f(0x3f800800);
	ASSERT_EQ(0, dbuf(self->fd, x, n * 4, &dx));
	for (c = 0; c < ARRAY_SIZE(coef); c++) {
		for (j = 0; j < ARRAY_SIZE(train_nbs); j++) {
			ASSERT_EQ(0, dbuf(self->fd, NULL, n * 4, &dy));
			struct snpu_task t = snpu_t_launch(self->s,
				SNPU_KERNEL_AFFINE_F32, train_nbs[j]);

			snpu_t_buf(&t, 0, dy, n * 4);
			snpu_t_buf(&t, 1, dx, n * 4);
			snpu_t_scalar(&t, 2, coef[c][0]);
			snpu_t_scalar(&t, 3, coef[c][1]);
			ASSERT_EQ(0, run(self->fd, self->s, t));
			ASSERT_EQ(0, dread(self->fd, dy, y, n * 4));
			/* The product rounded first: (1 + 2^-12)^2 - (1 + 2^-11). */
			if (c == 2)
				EXPECT_EQ(0U, y[0]);
			for (e = 0; e < n; e++) {
				float p = u2f(coef[c][0]) * x[e];

				ASSERT_TRUE(f32_same(f2u(p + u2f(coef[c][1])),
						     y[e]))
					TH_LOG("coef %u blocks %u: y[%zu]", c,
					       train_nbs[j], e);
			}
			ASSERT_EQ(0, snpu_free(self->fd, dy));
		}
	}
	free(x);
	free(y);
}

FIXTURE(bad) {
	int fd;
	uint32_t s;
	uint64_t a, b, c;	/* 4096-byte buffers */
};

FIXTURE_SETUP(bad)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &self->a));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &self->b));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &self->c));
}

FIXTURE_TEARDOWN(bad)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Submit @t alone: expect @err and nothing queued. */
#define EXPECT_REFUSED(err, t) do {					\
	struct snpu_stream_query __q;					\
	EXPECT_EQ(-(err), snpu_submit1(self->fd, (t)));			\
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &__q));	\
	EXPECT_EQ(0U, __q.submitted);					\
} while (0)

/* A valid launch of each kind, to break one rule at a time. */
static struct snpu_task good(FIXTURE_DATA(bad) *self, uint32_t kernel)
{
	struct snpu_task t = snpu_t_launch(self->s, kernel, 2);

	switch (kernel) {
	case SNPU_KERNEL_COPY:
	case SNPU_KERNEL_RELU_F32:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		break;
	case SNPU_KERNEL_FILL:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_scalar(&t, 1, 7);
		break;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_buf(&t, 2, self->c, 4096);
		break;
	case SNPU_KERNEL_AXPY_F32:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_scalar(&t, 2, 0x3f800000);
		break;
	case SNPU_KERNEL_GEMM_F32:	/* 16 x 16 x 16 */
		snpu_t_buf(&t, 0, self->a, 1024);
		snpu_t_buf(&t, 1, self->b, 1024);
		snpu_t_buf(&t, 2, self->c, 1024);
		snpu_t_scalar(&t, 3, 16);
		snpu_t_scalar(&t, 4, 16);
		snpu_t_scalar(&t, 5, 16);
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_CRC32C:
		snpu_t_buf(&t, 0, self->a, 8);
		snpu_t_buf(&t, 1, self->b, 4096);
		break;
	case SNPU_KERNEL_SPIN:
		snpu_t_scalar(&t, 0, 1000);
		break;
	case SNPU_KERNEL_FAIL:
		snpu_t_scalar(&t, 0, 1);
		break;
	case SNPU_KERNEL_GEMM_TN_F32:	/* 16 x 16 x 16 */
	case SNPU_KERNEL_GEMM_NT_F32:
		snpu_t_buf(&t, 0, self->a, 1024);
		snpu_t_buf(&t, 1, self->b, 1024);
		snpu_t_buf(&t, 2, self->c, 1024);
		snpu_t_scalar(&t, 3, 16);
		snpu_t_scalar(&t, 4, 16);
		snpu_t_scalar(&t, 5, 16);
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:	/* 64 rows of 16 */
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_buf(&t, 2, self->c, 64);
		snpu_t_scalar(&t, 3, 16);
		break;
	case SNPU_KERNEL_RELU_BWD_F32:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_buf(&t, 2, self->c, 4096);
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/*
		 * 2 rows of 16 classes; the labels in c past what any other
		 * good launch writes, zero as allocated.
		 */
		snpu_t_buf(&t, 0, self->a, 8);
		snpu_t_buf(&t, 1, self->a + 1024, 128);
		snpu_t_buf(&t, 2, self->b, 128);
		snpu_t_buf(&t, 3, self->c + 2048, 8);
		snpu_t_scalar(&t, 4, 16);
		snpu_t_scalar(&t, 5, 0x3f800000);
		break;
	case SNPU_KERNEL_COLSUM_F32:	/* 64 rows of 16 */
		snpu_t_buf(&t, 0, self->a, 64);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_scalar(&t, 2, 16);
		break;
	case SNPU_KERNEL_ARGMAX_F32:	/* 64 rows of 16 */
		snpu_t_buf(&t, 0, self->a, 256);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_scalar(&t, 2, 16);
		break;
	case SNPU_KERNEL_COUNT_EQ_I32:
		snpu_t_buf(&t, 0, self->a, 8);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_buf(&t, 2, self->c, 4096);
		break;
	case SNPU_KERNEL_AFFINE_F32:
		snpu_t_buf(&t, 0, self->a, 4096);
		snpu_t_buf(&t, 1, self->b, 4096);
		snpu_t_scalar(&t, 2, 0x3f800000);
		snpu_t_scalar(&t, 3, 0xbf000000);
		break;
	}
	return t;
}

/* Sanity: every "good" launch is accepted and runs (FAIL fails). */
TEST_F(bad, good_launches_accepted)
{
	uint32_t kernel;
	int32_t err = 1;

	for (kernel = 0; kernel < SNPU_KERNEL_COUNT; kernel++) {
		if (kernel == SNPU_KERNEL_FAIL)
			continue;
		EXPECT_EQ(0, snpu_submit1(self->fd, good(self, kernel)))
			TH_LOG("kernel %u", kernel);
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, snpu_submit1(self->fd, good(self, SNPU_KERNEL_FAIL)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-1, err);
}

TEST_F(bad, unknown_kernel)
{
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, SNPU_KERNEL_COUNT, 1));
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, 0xffffffff, 1));
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, 100, 1));
}

TEST_F(bad, block_dim_out_of_range)
{
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, SNPU_KERNEL_NOP, 0));
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, SNPU_KERNEL_NOP, 65536));
	EXPECT_REFUSED(EINVAL, snpu_t_launch(self->s, SNPU_KERNEL_NOP,
					     0xffffffff));
	struct snpu_task t = good(self, SNPU_KERNEL_FILL);

	t.launch.block_dim = 0;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, scalar_given_as_buffer)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_FILL);
	snpu_t_buf(&t, 1, self->b, 4);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AXPY_F32);
	snpu_t_buf(&t, 2, self->c, 4);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SPIN);
	snpu_t_buf(&t, 0, self->a, 8);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FAIL);
	t.launch.args[0].bytes = 1;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	t.launch.args[4].bytes = 4;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, buffer_given_as_scalar)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_COPY);
	snpu_t_scalar(&t, 1, self->b);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_ADD_I32);
	snpu_t_scalar(&t, 2, self->c);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FILL);
	snpu_t_scalar(&t, 0, self->a);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_CRC32C);
	t.launch.args[0].bytes = 0;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, unused_args_nonzero)
{
	struct snpu_task t;
	unsigned int i;

	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		t = snpu_t_launch(self->s, SNPU_KERNEL_NOP, 1);
		t.launch.args[i].value = 1;
		EXPECT_REFUSED(EINVAL, t);
		t = snpu_t_launch(self->s, SNPU_KERNEL_NOP, 1);
		t.launch.args[i].bytes = 1;
		EXPECT_REFUSED(EINVAL, t);
	}
	t = good(self, SNPU_KERNEL_COPY);
	t.launch.args[2].value = 1;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_ADD_I32);
	t.launch.args[5].bytes = 4;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SPIN);
	t.launch.args[1].value = 1;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FAIL);
	t.launch.args[3].value = 1;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, buffer_too_small)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_COPY);	/* dst smaller than src */
	t.launch.args[0].bytes = 4095;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_ADD_I32);	/* a smaller than c */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_MUL_F32);	/* b smaller than c */
	t.launch.args[2].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AXPY_F32);	/* x smaller than y */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_RELU_F32);	/* x smaller than y */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);	/* c < m * n * 4 */
	t.launch.args[0].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);	/* a < m * k * 4 */
	t.launch.args[1].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);	/* b < k * n * 4 */
	t.launch.args[2].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);	/* m grows past a and c */
	snpu_t_scalar(&t, 3, 17);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_REDUCE_SUM_I32);	/* out < block_dim */
	t.launch.block_dim = 3;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_REDUCE_SUM_F32);
	t.launch.args[0].bytes = 7;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_CRC32C);
	t.launch.block_dim = 3;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, sizes_not_whole_elements)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_FILL);
	t.launch.args[0].bytes = 4094;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_ADD_I32);
	t.launch.args[0].bytes = 4093;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_RELU_F32);
	t.launch.args[0].bytes = 4095;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AXPY_F32);
	t.launch.args[0].bytes = 6;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_REDUCE_SUM_I32);
	t.launch.args[1].bytes = 4093;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, scalars_out_of_range)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_FILL);
	snpu_t_scalar(&t, 1, 1ULL << 32);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AXPY_F32);
	snpu_t_scalar(&t, 2, 0x13f800000ULL);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SPIN);
	snpu_t_scalar(&t, 0, NS_PER_SEC + 1);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FAIL);
	snpu_t_scalar(&t, 0, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FAIL);
	snpu_t_scalar(&t, 0, 4096);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_FAIL);
	snpu_t_scalar(&t, 0, (uint64_t)-5);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	snpu_t_scalar(&t, 3, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	snpu_t_scalar(&t, 4, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	snpu_t_scalar(&t, 5, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	snpu_t_scalar(&t, 5, 65537);
	EXPECT_REFUSED(EINVAL, t);
	/* A huge m * n must not wrap around into "small enough". */
	t = good(self, SNPU_KERNEL_GEMM_F32);
	snpu_t_scalar(&t, 3, 1ULL << 32);
	snpu_t_scalar(&t, 4, 1ULL << 32);
	EXPECT_REFUSED(EINVAL, t);
}

/* The edges of the scalar ranges are accepted. */
TEST_F(bad, scalar_range_edges_accepted)
{
	struct snpu_task t;
	int32_t err = 0;

	t = good(self, SNPU_KERNEL_FILL);
	snpu_t_scalar(&t, 1, 0xffffffffULL);
	EXPECT_EQ(0, snpu_submit1(self->fd, t));
	t = good(self, SNPU_KERNEL_SPIN);
	snpu_t_scalar(&t, 0, NS_PER_SEC);
	EXPECT_EQ(0, snpu_submit1(self->fd, t));
	/* Do not wait 1 s for it. */
	ASSERT_EQ(0, snpu_stream_abort(self->fd, self->s));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	t = good(self, SNPU_KERNEL_FAIL);
	snpu_t_scalar(&t, 0, 4095);
	EXPECT_EQ(0, snpu_submit1(self->fd, t));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, &err));
	EXPECT_EQ(-4095, err);
}

/* Device addresses are checked with their extent at SUBMIT: EFAULT. */
TEST_F(bad, address_outside_allocations_efault)
{
	struct snpu_task t;
	uint64_t freed;

	t = good(self, SNPU_KERNEL_COPY);
	t.launch.args[1].value = 0x1000;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_COPY);
	t.launch.args[0].value = self->a + (1ULL << 32);
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_ADD_I32);
	t.launch.args[2].value = 0;
	EXPECT_REFUSED(EFAULT, t);
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &freed));
	ASSERT_EQ(0, snpu_free(self->fd, freed));
	t = good(self, SNPU_KERNEL_RELU_F32);
	t.launch.args[1].value = freed;
	EXPECT_REFUSED(EFAULT, t);
}

TEST_F(bad, extent_past_allocation_efault)
{
	struct snpu_task t;

	/* Both grown together so that only the extent is wrong. */
	t = good(self, SNPU_KERNEL_COPY);
	t.launch.args[0].bytes = 4097;
	t.launch.args[1].bytes = 4097;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_COPY);
	t.launch.args[0].value = self->a + 8;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_FILL);
	t.launch.args[0].value = self->a + 4092;
	t.launch.args[0].bytes = 8;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_CRC32C);
	t.launch.args[1].value = self->b + 1;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_GEMM_F32);
	t.launch.args[2].value = self->c + 4096 - 1020;
	EXPECT_REFUSED(EFAULT, t);
	/* COPY and MEMSET tasks too. */
	EXPECT_REFUSED(EFAULT, snpu_t_copy(self->s, SNPU_COPY_D2D, self->a,
					   self->b + 1, 4096));
	EXPECT_REFUSED(EFAULT, snpu_t_memset(self->s, self->c + 4000, 0, 97));
}

/* ---- the kernels for training (ABI 0.8): refused at SUBMIT -------------- */

/* Sizes that break each one's rules: EINVAL, nothing queued. */
TEST_F(bad, training_sizes_einval)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_GEMM_TN_F32);	/* a < k * m * 4 */
	t.launch.args[1].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_NT_F32);	/* b < n * k * 4 */
	t.launch.args[2].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_GEMM_NT_F32);	/* c < m * n * 4 */
	t.launch.args[0].bytes = 1020;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_BIAS_ADD_F32);	/* not whole rows */
	t.launch.args[0].bytes = 4092;
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_BIAS_ADD_F32);	/* bias < n */
	t.launch.args[2].bytes = 60;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_BIAS_ADD_F32);	/* x < y */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_RELU_BWD_F32);	/* y < dx */
	t.launch.args[2].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_RELU_BWD_F32);	/* not whole floats */
	t.launch.args[0].bytes = 4094;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* not whole rows */
	t.launch.args[2].bytes = 124;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* loss < rows */
	t.launch.args[0].bytes = 4;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* dlogits short */
	t.launch.args[1].bytes = 124;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* labels < rows */
	t.launch.args[3].bytes = 4;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_COLSUM_F32);		/* out < n */
	t.launch.args[0].bytes = 60;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_COLSUM_F32);		/* not whole rows */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_ARGMAX_F32);		/* out < rows */
	t.launch.args[0].bytes = 252;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_COUNT_EQ_I32);	/* out < block_dim */
	t.launch.block_dim = 3;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_COUNT_EQ_I32);	/* b < a */
	t.launch.args[2].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AFFINE_F32);		/* x < y */
	t.launch.args[1].bytes = 4092;
	EXPECT_REFUSED(EINVAL, t);
}

/* Scalars out of range, and the edges accepted. */
TEST_F(bad, training_scalars_einval)
{
	static const uint64_t bad_dims[] = { 0, 65537, 1ULL << 32 | 16 };
	struct snpu_task t;
	unsigned int i, d;

	for (i = 0; i < ARRAY_SIZE(bad_dims); i++) {
		for (d = 3; d < 6; d++) {
			t = good(self, SNPU_KERNEL_GEMM_TN_F32);
			snpu_t_scalar(&t, d, bad_dims[i]);
			EXPECT_REFUSED(EINVAL, t);
		}
		t = good(self, SNPU_KERNEL_BIAS_ADD_F32);
		snpu_t_scalar(&t, 3, bad_dims[i]);
		EXPECT_REFUSED(EINVAL, t);
		t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);
		snpu_t_scalar(&t, 4, bad_dims[i]);
		EXPECT_REFUSED(EINVAL, t);
		t = good(self, SNPU_KERNEL_COLSUM_F32);
		snpu_t_scalar(&t, 2, bad_dims[i]);
		EXPECT_REFUSED(EINVAL, t);
		t = good(self, SNPU_KERNEL_ARGMAX_F32);
		snpu_t_scalar(&t, 2, bad_dims[i]);
		EXPECT_REFUSED(EINVAL, t);
	}
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* scale: 32 bits */
	snpu_t_scalar(&t, 5, 0x13f800000ULL);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AFFINE_F32);
	snpu_t_scalar(&t, 2, 0x13f800000ULL);
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_AFFINE_F32);
	snpu_t_scalar(&t, 3, 1ULL << 63);
	EXPECT_REFUSED(EINVAL, t);
	/* A buffer given as a scalar and the other way round. */
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);
	t.launch.args[5].bytes = 4;
	EXPECT_REFUSED(EINVAL, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);
	t.launch.args[3].bytes = 0;
	EXPECT_REFUSED(EINVAL, t);
	/* Misaligned element buffers. */
	t = good(self, SNPU_KERNEL_ARGMAX_F32);
	t.launch.args[1].value += 2;
	EXPECT_REFUSED(EINVAL, t);
}

/*
 * The work bound with the new units: a COLSUM column costs its rows, an
 * ARGMAX row its classes. A single column of more rows than the bound
 * fits no block_dim; rows of classes above it do in two blocks.
 */
#define TW_BYTES	((1ULL << 26) + 16384)	/* (2^24 + 4096) floats */

TEST_F(bad, training_block_work_einval)
{
	struct snpu_task colsum, argmax;
	uint64_t big, out;
	uint32_t idx[16];
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, TW_BYTES, 0, &big));
	ASSERT_EQ(0, dbuf(self->fd, NULL, 4097 * 4, &out));
	/* COLSUM: one column of 2^24 + 1 rows. */
	colsum = snpu_t_launch(self->s, SNPU_KERNEL_COLSUM_F32, 65535);
	snpu_t_buf(&colsum, 0, self->a, 4);
	snpu_t_buf(&colsum, 1, big, (1ULL << 26) + 4);
	snpu_t_scalar(&colsum, 2, 1);
	EXPECT_REFUSED(EINVAL, colsum);
	/* ARGMAX of 4097 rows of 4096: 2^24 + 4096 in one block. */
	argmax = snpu_t_launch(self->s, SNPU_KERNEL_ARGMAX_F32, 1);
	snpu_t_buf(&argmax, 0, out, 4097 * 4);
	snpu_t_buf(&argmax, 1, big, TW_BYTES);
	snpu_t_scalar(&argmax, 2, 4096);
	EXPECT_REFUSED(EINVAL, argmax);

	/* 2^24 rows: at the bound, accepted and run. */
	colsum.launch.args[1].bytes = 1ULL << 26;
	colsum.launch.block_dim = 1;
	EXPECT_EQ(0, run(self->fd, self->s, colsum));
	/* Two blocks of 2049 and 2048 rows run: all zero, index 0 each. */
	argmax.launch.block_dim = 2;
	EXPECT_EQ(0, run(self->fd, self->s, argmax));
	ASSERT_EQ(0, snpu_d2h(self->fd, idx, out, sizeof(idx)));
	for (i = 0; i < ARRAY_SIZE(idx); i++)
		EXPECT_EQ(0U, idx[i]);
	ASSERT_EQ(0, snpu_free(self->fd, big));
}

TEST_F(bad, training_efault)
{
	struct snpu_task t;

	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* labels past c */
	t.launch.args[3].value = self->c + 4092;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_SOFTMAX_XENT_F32);	/* dlogits nowhere */
	t.launch.args[1].value = 0x1000;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_GEMM_TN_F32);
	t.launch.args[2].value = self->c + 4096 - 1020;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_BIAS_ADD_F32);
	t.launch.args[2].value = self->c + 4096 - 60;
	EXPECT_REFUSED(EFAULT, t);
	t = good(self, SNPU_KERNEL_COUNT_EQ_I32);
	t.launch.args[0].value = 0;
	EXPECT_REFUSED(EFAULT, t);
}

/* ---- bad task descriptors ----------------------------------------------- */

TEST_F(bad, unknown_op)
{
	struct snpu_task t = snpu_t_nop(self->s);

	memset(&t.launch, 0, sizeof(t.launch));
	t.op = 0;
	EXPECT_REFUSED(EINVAL, t);
	t.op = SNPU_OP_GRAPH + 1;
	EXPECT_REFUSED(EINVAL, t);
	t.op = 0xffffffff;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, task_flags_and_reserved0)
{
	struct snpu_task t = snpu_t_nop(self->s);

	t.flags = 1;
	EXPECT_REFUSED(EINVAL, t);
	t.flags = 1U << 31;
	EXPECT_REFUSED(EINVAL, t);
	t.flags = 0;
	t.reserved0 = 1;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, unused_union_words)
{
	static const struct {
		uint32_t op;
		unsigned int first_unused;
	} ops[] = {
		{ SNPU_OP_COPY, 4 }, { SNPU_OP_MEMSET, 3 },
		{ SNPU_OP_EVENT_RECORD, 1 }, { SNPU_OP_STREAM_WAIT, 1 },
		{ SNPU_OP_HOST_FUNC, 0 },
	};
	struct snpu_task t;
	unsigned int i, w;
	uint32_t ev;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->s, ev)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	for (i = 0; i < 5; i++) {
		for (w = ops[i].first_unused; w < 13; w++) {
			switch (ops[i].op) {
			case SNPU_OP_COPY:
				t = snpu_t_copy(self->s, SNPU_COPY_D2D,
						self->a, self->b, 64);
				break;
			case SNPU_OP_MEMSET:
				t = snpu_t_memset(self->s, self->a, 1, 64);
				break;
			case SNPU_OP_HOST_FUNC:
				t = snpu_t_host_func(self->s, 1);
				break;
			default:
				t = snpu_t_event(self->s, ops[i].op, ev);
				break;
			}
			t.raw[w] = 1ULL << (w * 4);
			EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, t))
				TH_LOG("op %u word %u", ops[i].op, w);
		}
	}
	/* Only the record above was queued. */
	struct snpu_stream_query q;

	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(1U, q.submitted);
}

TEST_F(bad, pads_and_fields_of_other_ops)
{
	struct snpu_task t;
	uint32_t ev;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	t = snpu_t_copy(self->s, SNPU_COPY_D2D, self->a, self->b, 64);
	t.copy.pad = 1;
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_copy(self->s, 0, self->a, self->b, 64);
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_copy(self->s, 4, self->a, self->b, 64);
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_copy(self->s, SNPU_COPY_D2D, self->a, self->b, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_memset(self->s, self->a, 256, 64);
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_memset(self->s, self->a, 1, 0);
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_memset(self->s, self->a, 1, 64);
	t.memset.pad = 1;
	EXPECT_REFUSED(EINVAL, t);
	t = snpu_t_record(self->s, ev);
	t.event.pad = 1;
	EXPECT_REFUSED(EINVAL, t);
}

TEST_F(bad, task_size_too_small)
{
	struct snpu_task t[2] = { snpu_t_nop(self->s), snpu_t_nop(self->s) };
	struct snpu_stream_query q;

	EXPECT_EQ(-EINVAL, snpu_submit_raw(self->fd, t, 1, 127, NULL));
	EXPECT_EQ(-EINVAL, snpu_submit_raw(self->fd, t, 1, 120, NULL));
	EXPECT_EQ(-EINVAL, snpu_submit_raw(self->fd, t, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_submit_raw(self->fd, t, 1,
					   SNPU_IOC_MAX_SIZE + 8, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(0U, q.submitted);
}

/* A larger descriptor: a zero tail is fine, a non-zero one is E2BIG. */
TEST_F(bad, task_size_136)
{
	unsigned char buf[3 * 136];
	struct snpu_stream_query q;
	struct snpu_task t;
	uint64_t seq = 0;
	uint32_t v = 0;
	int i;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < 3; i++) {
		t = snpu_t_fill(self->s, self->a, 64, 0x10 + i, 1);
		memcpy(buf + i * 136, &t, sizeof(t));
	}
	EXPECT_EQ(0, snpu_submit_raw(self->fd, buf, 3, 136, &seq));
	EXPECT_EQ(3U, seq);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, LONG_TIMEOUT, NULL));
	/* The third one ran last: the stride was honoured. */
	ASSERT_EQ(0, snpu_d2h(self->fd, &v, self->a, 4));
	EXPECT_EQ(0x12U, v);

	buf[2 * 136 + 135] = 1;	/* the tail of the third task */
	EXPECT_EQ(-E2BIG, snpu_submit_raw(self->fd, buf, 3, 136, NULL));
	buf[2 * 136 + 135] = 0;
	buf[0 * 136 + 128] = 0x80;	/* the tail of the first */
	EXPECT_EQ(-E2BIG, snpu_submit_raw(self->fd, buf, 3, 136, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(3U, q.submitted);
}

TEST_F(bad, submit_struct_fields)
{
	struct snpu_task t[2] = { snpu_t_nop(self->s), snpu_t_nop(self->s) };
	long page = sysconf(_SC_PAGESIZE);
	struct snpu_submit s;
	struct snpu_stream_query q;
	unsigned char *m;
	int i;

	for (i = 0; i < 5; i++) {
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.count = 1;
		s.task_size = sizeof(t[0]);
		s.tasks = (uintptr_t)t;
		switch (i) {
		case 0: s.count = 0; break;
		case 1: s.count = SNPU_SUBMIT_MAX + 1; break;
		case 2: s.flags = 1; break;
		case 3: s.reserved[0] = 1; break;
		case 4: s.reserved[1] = 1; break;
		}
		EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_SUBMIT, &s))
			TH_LOG("case %d", i);
	}
	EXPECT_EQ(-EFAULT, snpu_submit_raw(self->fd, NULL, 1, sizeof(t[0]),
					   NULL));
	/* Task 2 of 2 unreadable: nothing queued. */
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, munmap(m + page, page));
	memcpy(m + page - sizeof(t[0]), &t[0], sizeof(t[0]));
	EXPECT_EQ(-EFAULT, snpu_submit_raw(self->fd, m + page - sizeof(t[0]),
					   2, sizeof(t[0]), NULL));
	munmap(m, page);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(0U, q.submitted);
}

/* A batch of 5 whose third task is bad queues nothing, on any stream. */
FIXTURE(batch) {
	int fd;
	uint32_t s1, s2;
	uint64_t a;
};

FIXTURE_VARIANT(batch) {
	int err;
	int kind;
};

FIXTURE_VARIANT_ADD(batch, bad_kernel) { .err = EINVAL, .kind = 0 };
FIXTURE_VARIANT_ADD(batch, bad_address) { .err = EFAULT, .kind = 1 };
FIXTURE_VARIANT_ADD(batch, bad_stream) { .err = ENOENT, .kind = 2 };
FIXTURE_VARIANT_ADD(batch, bad_op) { .err = EINVAL, .kind = 3 };
FIXTURE_VARIANT_ADD(batch, bad_event) { .err = ENOENT, .kind = 4 };

FIXTURE_SETUP(batch)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s1));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->s2));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &self->a));
}

FIXTURE_TEARDOWN(batch)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(batch, third_of_five_bad_queues_nothing)
{
	struct snpu_stream_query q1, q2;
	struct snpu_ctx_query cq;
	uint32_t ev, v = 0;

	ASSERT_EQ(0, snpu_event_create(self->fd, &ev));
	struct snpu_task t[5] = {
		snpu_t_fill(self->s1, self->a, 4096, 0x11, 1),
		snpu_t_record(self->s1, ev),
		snpu_t_nop(self->s2),
		snpu_t_wait(self->s2, ev),
		snpu_t_fill(self->s2, self->a, 4096, 0x22, 1),
	};
	switch (variant->kind) {
	case 0:
		t[2].launch.kernel = 99;
		break;
	case 1:
		t[2] = snpu_t_fill(self->s2, self->a + 8, 4096, 0x33, 1);
		break;
	case 2:
		t[2].stream = 12345;
		break;
	case 3:
		t[2].op = 77;
		break;
	case 4:
		t[2] = snpu_t_record(self->s2, 12345);
		break;
	}
	EXPECT_EQ(-variant->err, snpu_submit(self->fd, t, 5, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s1, &q1));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s2, &q2));
	EXPECT_EQ(0U, q1.submitted);
	EXPECT_EQ(0U, q2.submitted);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.tasks);
	ASSERT_EQ(0, snpu_d2h(self->fd, &v, self->a, 4));
	EXPECT_EQ(0U, v);
	/* The record of the refused batch did not stick either. */
	EXPECT_EQ(-EINVAL, snpu_submit1(self->fd, snpu_t_wait(self->s2, ev)));
	/* Fixed, the same batch goes through. */
	t[2] = snpu_t_nop(self->s2);
	EXPECT_EQ(0, snpu_submit(self->fd, t, 5, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s2, LONG_TIMEOUT, NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, &v, self->a, 4));
	EXPECT_EQ(0x22U, v);
}

TEST_HARNESS_MAIN
