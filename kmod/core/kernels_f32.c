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
#include "kernels_f32_math.h"

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
