// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The f32 loops of the built-in kernels. This is the one object of the
 * module built with SSE (see Kbuild); its functions must only be called
 * with the FPU held. Plain single precision arithmetic in source order: no
 * libm (exp and log are below), no double, so a result is the same bits
 * whether it is computed by the module, by the library or by a test on
 * the host.
 */
#include "kernels_f32.h"

/*
 * A product is rounded before it is added, in every build. The module
 * (Kbuild), the unit tests and the fuzz targets pass -ffp-contract=off,
 * and the module's target has no FMA anyway; a userspace build (libsnpu
 * compiles this file through lib/core.c) may be given a -march with FMA
 * and no such flag, so contraction is turned off here for what follows.
 */
#ifndef __KERNEL__
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#endif

#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

union snpu_f32_bits {
	__u32 bits;
	float f;
};

static float snpu_f32_of(__u32 bits)
{
	union snpu_f32_bits u = { .bits = bits };

	return u.f;
}

static __u32 snpu_f32_bits_of(float f)
{
	union snpu_f32_bits u = { .f = f };

	return u.bits;
}

/* ln 2 in two parts: 9 trailing zero bits in the high one, so n * hi is exact. */
#define SNPU_LN2_HI	0.693145751953125f
#define SNPU_LN2_LO	0.00000142860677f
#define SNPU_LOG2E	1.44269502f

/**
 * snpu_f32_exp() - e to the power x, in single precision, without libm
 * @x: the exponent
 *
 * x = n ln2 + r with n the nearest integer to x / ln2 and |r| <= ln2 / 2
 * (Cody and Waite's two-part ln 2), exp(r) by its Taylor polynomial of
 * degree 7 (truncation below 1e-8 relative) in Horner form, then scaled
 * by 2^n in two exact steps so that results near overflow and in the
 * subnormal range are rounded once. Relative error against libm's exp in
 * double, over every float of [-103.9, 88.72]: at most 8.57e-8 (0.72 *
 * 2^-23) for normal results, one subnormal ulp (2^-149) for the others;
 * the unit test exp_accuracy checks 2^-23 on a sweep. NaN gives NaN, x
 * above 88.8 +inf, x below -104 +0.
 *
 * Return: an approximation of e^x.
 */
static float snpu_f32_exp(float x)
{
	float k, r, p;
	int n;

	if (x != x)
		return x;
	if (x > 88.8f)
		return snpu_f32_of(0x7f800000);
	if (x < -104.0f)
		return 0.0f;
	k = x * SNPU_LOG2E;
	n = (int)(k < 0.0f ? k - 0.5f : k + 0.5f);
	r = (x - (float)n * SNPU_LN2_HI) - (float)n * SNPU_LN2_LO;
	p = 0.000198412701f;
	p = p * r + 0.00138888892f;
	p = p * r + 0.00833333377f;
	p = p * r + 0.0416666679f;
	p = p * r + 0.166666672f;
	p = p * r + 0.5f;
	p = 1.0f + (r + r * r * p);
	/* n is in -151..129: 2^n in two factors of normal floats. */
	if (n > 127)
		return p * snpu_f32_of(254U << 23) *
		       snpu_f32_of((__u32)(n - 127 + 127) << 23);
	if (n < -126)
		return p * snpu_f32_of((__u32)(n + 126 + 127) << 23) *
		       snpu_f32_of(1U << 23);
	return p * snpu_f32_of((__u32)(n + 127) << 23);
}

/**
 * snpu_f32_log() - natural logarithm in single precision, without libm
 * @x: the argument
 *
 * x = 2^e m with m in [sqrt(1/2), sqrt(2)); with f = m - 1 (exact) and
 * s = f / (2 + f), log(m) = 2 atanh(s) = f - s (f - T) where T = 2s^2/3 +
 * 2s^4/5 + 2s^6/7 + 2s^8/9 (truncation below 1e-8 relative, |s| < 0.172),
 * then log(x) = e ln2_hi + (e ln2_lo + log(m)). Subnormal x are scaled
 * by 2^23 first. Relative error against libm's log in double, over every
 * positive finite float: at most 8.65e-8 (0.73 * 2^-23); the unit test
 * log_accuracy checks 2^-23 on a sweep. +0 and -0 give -inf, a negative
 * x NaN, +inf +inf, NaN NaN.
 *
 * Return: an approximation of ln x.
 */
static float snpu_f32_log(float x)
{
	__u32 bits = snpu_f32_bits_of(x);
	float m, f, s, z, t, l;
	int e = 0;

	if (x != x)
		return x;
	if (!(bits & 0x7fffffff))
		return snpu_f32_of(0xff800000);
	if (bits >> 31)
		return snpu_f32_of(0x7fc00000);
	if (bits == 0x7f800000)
		return x;
	if (bits < 0x00800000) {
		/* Subnormal: times 2^23. */
		bits = snpu_f32_bits_of(x * snpu_f32_of(150U << 23));
		e = -23;
	}
	e += (int)(bits >> 23) - 127;
	m = snpu_f32_of((bits & 0x7fffff) | 0x3f800000);
	if (m > 1.41421354f) {
		m *= 0.5f;
		e++;
	}
	f = m - 1.0f;
	s = f / (2.0f + f);
	z = s * s;
	t = 0.222222224f;
	t = t * z + 0.285714298f;
	t = t * z + 0.400000006f;
	t = t * z + 0.666666687f;
	t = t * z;
	l = f - s * (f - t);
	if (!e)
		return l;
	return (float)e * SNPU_LN2_HI + ((float)e * SNPU_LN2_LO + l);
}

/**
 * snpu_f32_exp_bits() - snpu_f32_exp() on IEEE-754 bits, for tests
 * @x: the argument's bits
 *
 * Return: the bits of the result of the exp the kernels use.
 */
__u32 snpu_f32_exp_bits(__u32 x)
{
	return snpu_f32_bits_of(snpu_f32_exp(snpu_f32_of(x)));
}

/**
 * snpu_f32_log_bits() - snpu_f32_log() on IEEE-754 bits, for tests
 * @x: the argument's bits
 *
 * Return: the bits of the result of the log the kernels use.
 */
__u32 snpu_f32_log_bits(__u32 x)
{
	return snpu_f32_bits_of(snpu_f32_log(snpu_f32_of(x)));
}

/**
 * snpu_f32_add() - c[i] = a[i] + b[i] for i in [begin, end)
 * @c: output buffer of floats
 * @a: first input buffer
 * @b: second input buffer
 * @begin: first element
 * @end: one past the last element
 */
void snpu_f32_add(void *c, const void *a, const void *b,
		  __u64 begin, __u64 end)
{
	float *cf = c;
	const float *af = a;
	const float *bf = b;
	__u64 i;

	for (i = begin; i < end; i++)
		cf[i] = af[i] + bf[i];
}

/**
 * snpu_f32_mul() - c[i] = a[i] * b[i] for i in [begin, end)
 * @c: output buffer of floats
 * @a: first input buffer
 * @b: second input buffer
 * @begin: first element
 * @end: one past the last element
 */
void snpu_f32_mul(void *c, const void *a, const void *b,
		  __u64 begin, __u64 end)
{
	float *cf = c;
	const float *af = a;
	const float *bf = b;
	__u64 i;

	for (i = begin; i < end; i++)
		cf[i] = af[i] * bf[i];
}

/**
 * snpu_f32_axpy() - y[i] += a * x[i] for i in [begin, end)
 * @y: input and output buffer of floats
 * @x: input buffer
 * @a_bits: the scalar a as IEEE-754 single precision bits
 * @begin: first element
 * @end: one past the last element
 *
 * The product is rounded to float before the sum (no fused multiply-add
 * is available to the SSE2 build, and the native build must not contract
 * either, see the unit test's rule in the Makefile).
 */
void snpu_f32_axpy(void *y, const void *x, __u32 a_bits,
		   __u64 begin, __u64 end)
{
	union {
		__u32 bits;
		float f;
	} a = { .bits = a_bits };
	float *yf = y;
	const float *xf = x;
	__u64 i;

	for (i = begin; i < end; i++)
		yf[i] += a.f * xf[i];
}

/**
 * snpu_f32_relu() - y[i] = x[i] if x[i] > 0, else 0, for i in [begin, end)
 * @y: output buffer of floats
 * @x: input buffer
 * @begin: first element
 * @end: one past the last element
 *
 * -0.0 and NaN inputs give +0.0.
 */
void snpu_f32_relu(void *y, const void *x, __u64 begin, __u64 end)
{
	float *yf = y;
	const float *xf = x;
	__u64 i;

	for (i = begin; i < end; i++)
		yf[i] = xf[i] > 0.0f ? xf[i] : 0.0f;
}

/*
 * Elements [row][col] onwards (@count of them, row-major) of c[. x n] =
 * sum over kk of a(row, kk) * b[kk][.], where a(i, kk) is
 * a[i * ai + kk * ak]: the loops of snpu_f32_gemm() and
 * snpu_f32_gemm_tn(), which differ only in how @a is laid out.
 */
static void snpu_f32_gemm_strided(float *cf, const float *af,
				  const float *bf, __u32 n, __u32 k, __u64 row,
				  __u32 col, __u64 count, __u64 ai, __u64 ak)
{
	if (!n || col >= n)
		return;
	while (count) {
		float *crow = cf + row * n + col;
		const float *arow = af + row * ai;
		const float *brow = bf + col;
		__u64 len = n - col;
		__u64 j;
		__u32 kk;

		if (len > count)
			len = count;
		for (j = 0; j < len; j++)
			crow[j] = 0.0f;
		for (kk = 0; kk < k; kk++) {
			float av = arow[kk * ak];

			for (j = 0; j < len; j++)
				crow[j] += av * brow[j];
			brow += n;
		}
		count -= len;
		row++;
		col = 0;
	}
}

/**
 * snpu_f32_gemm() - compute elements of row-major c[m x n] = a[m x k] * b[k x n]
 * @c: output matrix, m x n floats
 * @a: left matrix, m x k floats
 * @b: right matrix, k x n floats
 * @n: columns of @c and @b, at least 1
 * @k: columns of @a and rows of @b
 * @row: row of the first element to compute
 * @col: column of the first element, below @n
 * @count: number of consecutive elements (row-major) to compute
 *
 * Each element is the sum over kk of a[row][kk] * b[kk][col], accumulated
 * in float from 0 in increasing kk order. The loop runs kk outermost over
 * the run of elements in one row so that @b is read along its rows; the
 * partial sums live in @c, which holds floats exactly like a register
 * would, so the order of the operations on each element is unchanged.
 */
void snpu_f32_gemm(void *c, const void *a, const void *b, __u32 n, __u32 k,
		   __u64 row, __u32 col, __u64 count)
{
	snpu_f32_gemm_strided(c, a, b, n, k, row, col, count, k, 1);
}

/**
 * snpu_f32_sum() - add in[begin..end) to a float accumulator, in order
 * @acc: the accumulator, one float
 * @in: input buffer of floats
 * @begin: first element
 * @end: one past the last element
 *
 * The elements are added one at a time from left to right, so summing a
 * range in any number of consecutive calls gives the same bits.
 */
void snpu_f32_sum(void *acc, const void *in, __u64 begin, __u64 end)
{
	float *accf = acc;
	const float *src = in;
	float s = *accf;
	__u64 i;

	for (i = begin; i < end; i++)
		s += src[i];
	*accf = s;
}

/**
 * snpu_f32_gemm_tn() - compute elements of c[m x n] = a^T * b
 * @c: output matrix, m x n floats
 * @a: left matrix, stored k x m
 * @b: right matrix, k x n
 * @m: rows of @c, columns of @a
 * @n: columns of @c and @b, at least 1
 * @k: rows of @a and @b
 * @row: row of the first element to compute
 * @col: column of the first element, below @n
 * @count: number of consecutive elements (row-major) to compute
 *
 * c[i][j] is the sum over kk of a[kk][i] * b[kk][j], accumulated in float
 * from 0 in increasing kk order, the partial sums kept in @c as in
 * snpu_f32_gemm().
 */
void snpu_f32_gemm_tn(void *c, const void *a, const void *b, __u32 m,
		      __u32 n, __u32 k, __u64 row, __u32 col, __u64 count)
{
	snpu_f32_gemm_strided(c, a, b, n, k, row, col, count, 1, m);
}

/**
 * snpu_f32_gemm_nt() - compute elements of c[m x n] = a * b^T
 * @c: output matrix, m x n floats
 * @a: left matrix, m x k
 * @b: right matrix, stored n x k
 * @n: columns of @c, rows of @b, at least 1
 * @k: columns of @a and @b
 * @row: row of the first element to compute
 * @col: column of the first element, below @n
 * @count: number of consecutive elements (row-major) to compute
 *
 * c[i][j] is the dot product of row i of @a and row j of @b, accumulated
 * in float from 0 in increasing kk order.
 */
void snpu_f32_gemm_nt(void *c, const void *a, const void *b, __u32 n,
		      __u32 k, __u64 row, __u32 col, __u64 count)
{
	float *cf = c;
	const float *af = a;
	const float *bf = b;

	if (!n || col >= n)
		return;
	for (; count; count--) {
		const float *arow = af + row * k;
		const float *brow = bf + (__u64)col * k;
		float sum = 0.0f;
		__u32 kk;

		for (kk = 0; kk < k; kk++)
			sum += arow[kk] * brow[kk];
		cf[row * n + col] = sum;
		if (++col == n) {
			col = 0;
			row++;
		}
	}
}

/**
 * snpu_f32_bias_add() - y[i] = x[i] + bias[i % n] for i in [begin, end)
 * @y: output buffer of floats
 * @x: input buffer
 * @bias: n floats
 * @n: length of @bias, at least 1
 * @col: begin % n
 * @begin: first element
 * @end: one past the last element
 */
void snpu_f32_bias_add(void *y, const void *x, const void *bias, __u32 n,
		       __u32 col, __u64 begin, __u64 end)
{
	float *yf = y;
	const float *xf = x;
	const float *bf = bias;
	__u64 i;

	for (i = begin; i < end; i++) {
		yf[i] = xf[i] + bf[col];
		if (++col == n)
			col = 0;
	}
}

/**
 * snpu_f32_relu_bwd() - dx[i] = y[i] > 0 ? dy[i] : 0 for i in [begin, end)
 * @dx: output buffer of floats
 * @dy: gradient of the ReLU's output
 * @y: the ReLU's output (or input: the sign is the same)
 * @begin: first element
 * @end: one past the last element
 *
 * A y of -0.0, +0.0 or NaN gives +0.0.
 */
void snpu_f32_relu_bwd(void *dx, const void *dy, const void *y,
		       __u64 begin, __u64 end)
{
	float *dxf = dx;
	const float *dyf = dy;
	const float *yf = y;
	__u64 i;

	for (i = begin; i < end; i++)
		dxf[i] = yf[i] > 0.0f ? dyf[i] : 0.0f;
}

/**
 * snpu_f32_softmax_xent() - softmax cross-entropy of rows [begin, end)
 * @loss: one float per row
 * @dlogits: rows x ncls floats, may be @logits itself
 * @logits: rows x ncls floats
 * @labels: one __s32 per row, each in [0, ncls)
 * @ncls: columns (classes), at least 1
 * @scale_bits: the gradient's scale as IEEE-754 bits
 * @begin: first row
 * @end: one past the last row
 *
 * Per row, in this order: mx = the row's maximum (the first element, then
 * each greater one); e[j] = exp(x[j] - mx), stored in dlogits, and s their
 * sum from j = 0 up; loss = log(s) - (x[t] - mx) for the label t; then
 * dlogits[j] = (e[j] / s - (j == t)) * scale. x[t] is read before the row
 * of dlogits is written, so the two may be the same buffer.
 *
 * Return: 0, or -EDOM at the first row whose label is outside [0, ncls):
 * the rows before it are done, it and the ones after are untouched.
 */
int snpu_f32_softmax_xent(void *loss, void *dlogits, const void *logits,
			  const void *labels, __u32 ncls, __u32 scale_bits,
			  __u64 begin, __u64 end)
{
	const float scale = snpu_f32_of(scale_bits);
	const __s32 *lab = labels;
	float *lossf = loss;
	__u64 r;

	for (r = begin; r < end; r++) {
		const float *x = (const float *)logits + r * ncls;
		float *d = (float *)dlogits + r * ncls;
		__s32 t = lab[r];
		float mx, xt, s;
		__u32 j;

		if (t < 0 || (__u32)t >= ncls)
			return -EDOM;
		mx = x[0];
		for (j = 1; j < ncls; j++)
			if (x[j] > mx)
				mx = x[j];
		xt = x[t];
		s = 0.0f;
		for (j = 0; j < ncls; j++) {
			float e = snpu_f32_exp(x[j] - mx);

			d[j] = e;
			s += e;
		}
		lossf[r] = snpu_f32_log(s) - (xt - mx);
		for (j = 0; j < ncls; j++)
			d[j] = (d[j] / s - (j == (__u32)t ? 1.0f : 0.0f)) *
			       scale;
	}
	return 0;
}

/**
 * snpu_f32_colsum() - column sums of in[rows x n] for columns [begin, end)
 * @out: n floats
 * @in: rows x n floats
 * @n: columns, at least 1
 * @rows: rows of @in
 * @begin: first column
 * @end: one past the last column
 *
 * out[j] = in[0][j] + in[1][j] + ... accumulated in float from 0 in
 * increasing row order; the partial sums are kept in @out, so @in is read
 * along its rows.
 */
void snpu_f32_colsum(void *out, const void *in, __u32 n, __u64 rows,
		     __u64 begin, __u64 end)
{
	float *of = out;
	const float *row = (const float *)in;
	__u64 i, j;

	for (j = begin; j < end; j++)
		of[j] = 0.0f;
	for (i = 0; i < rows; i++, row += n)
		for (j = begin; j < end; j++)
			of[j] += row[j];
}

/**
 * snpu_f32_argmax() - index of the first maximum of rows [begin, end)
 * @out: one __s32 per row
 * @in: rows x ncls floats
 * @ncls: columns, at least 1
 * @begin: first row
 * @end: one past the last row
 *
 * An element wins when it compares greater than the best so far, so ties
 * go to the first and a NaN never wins (a NaN in column 0 keeps 0).
 */
void snpu_f32_argmax(void *out, const void *in, __u32 ncls,
		     __u64 begin, __u64 end)
{
	__s32 *o = out;
	__u64 r;

	for (r = begin; r < end; r++) {
		const float *x = (const float *)in + r * ncls;
		float best = x[0];
		__u32 j, at = 0;

		for (j = 1; j < ncls; j++) {
			if (x[j] > best) {
				best = x[j];
				at = j;
			}
		}
		o[r] = (__s32)at;
	}
}

/**
 * snpu_f32_affine() - y[i] = a * x[i] + b for i in [begin, end)
 * @y: output buffer of floats
 * @x: input buffer
 * @a_bits: the scale a as IEEE-754 bits
 * @b_bits: the offset b as IEEE-754 bits
 * @begin: first element
 * @end: one past the last element
 *
 * The product is rounded to float before the sum (see the top of the file).
 */
void snpu_f32_affine(void *y, const void *x, __u32 a_bits, __u32 b_bits,
		     __u64 begin, __u64 end)
{
	const float a = snpu_f32_of(a_bits);
	const float b = snpu_f32_of(b_bits);
	float *yf = y;
	const float *xf = x;
	__u64 i;

	for (i = begin; i < end; i++)
		yf[i] = a * xf[i] + b;
}
