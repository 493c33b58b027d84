/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * exp and log in single precision, without libm: the ones SOFTMAX_XENT
 * computes with (kernels_f32.c, and the vector exp of kernels_f32_vec.h,
 * which gives the same bits), in one place so that a CPU reference can
 * compute with the very same (lib/tools/mlp.h, snpu-train's, includes
 * this header). Plain single precision arithmetic in source order, each
 * operation rounded once: build with -ffp-contract=off, as every user
 * does; in the kernel only from an object built with the FPU, between
 * kernel_fpu_begin() and kernel_fpu_end().
 */
#ifndef _SNPU_CORE_KERNELS_F32_MATH_H
#define _SNPU_CORE_KERNELS_F32_MATH_H

#include <linux/types.h>

union snpu_f32_bits {
	__u32 bits;
	float f;
};

static inline float snpu_f32_of(__u32 bits)
{
	union snpu_f32_bits u = { .bits = bits };

	return u.f;
}

static inline __u32 snpu_f32_bits_of(float f)
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
static inline float snpu_f32_exp(float x)
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
static inline float snpu_f32_log(float x)
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

#endif /* _SNPU_CORE_KERNELS_F32_MATH_H */
