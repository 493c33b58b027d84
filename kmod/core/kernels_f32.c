// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The f32 loops of the built-in kernels, SSE2 build (with
 * kernels_f32_avx2.c, the objects of the module built with the FPU, see
 * Kbuild); its functions must only be called with the FPU held. Plain
 * single precision arithmetic in source order: no libm (exp and log are
 * below), no double, so a result is the same bits whether it is computed
 * by the module, by the library or by a test on the host, with SSE2 or
 * with AVX2.
 *
 * Here: exp and log, REDUCE_SUM's running sum (one add after the other,
 * a chain no vector shortens), and the vector loops of
 * kernels_f32_vec.h with 4 lanes, the table snpu_f32_sse2.
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

#define SNPU_VW		4
#define SNPU_VFN(x)	snpu_sse2_##x
#define SNPU_VATTR
#include "kernels_f32_vec.h"
#undef SNPU_VW
#undef SNPU_VFN
#undef SNPU_VATTR

const struct snpu_f32_ops snpu_f32_sse2 = {
	.name = "sse2",
	.add = snpu_sse2_add,
	.mul = snpu_sse2_mul,
	.axpy = snpu_sse2_axpy,
	.relu = snpu_sse2_relu,
	.relu_bwd = snpu_sse2_relu_bwd,
	.bias_add = snpu_sse2_bias_add,
	.affine = snpu_sse2_affine,
	.gemm = snpu_sse2_gemm,
	.colsum = snpu_sse2_colsum,
	.softmax_xent = snpu_sse2_softmax_xent,
	.argmax = snpu_sse2_argmax,
	.exp = snpu_sse2_exp,
};
