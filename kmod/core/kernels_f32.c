// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The f32 loops of the built-in kernels. This is the one object of the
 * module built with SSE (see Kbuild); its functions must only be called
 * with the FPU held. Plain single precision arithmetic in source order: no
 * libm, no division, no double, so a result is the same bits whether it is
 * computed by the module or by a test on the host.
 */
#include "kernels_f32.h"

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
	float *cf = c;
	const float *af = a;
	const float *bf = b;

	if (!n || col >= n)
		return;
	while (count) {
		float *crow = cf + row * n + col;
		const float *arow = af + row * k;
		const float *brow = bf + col;
		__u64 len = n - col;
		__u64 j;
		__u32 kk;

		if (len > count)
			len = count;
		for (j = 0; j < len; j++)
			crow[j] = 0.0f;
		for (kk = 0; kk < k; kk++) {
			float av = arow[kk];

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
