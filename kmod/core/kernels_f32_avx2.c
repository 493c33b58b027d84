// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The f32 loops of the built-in kernels, AVX2 build: kernels_f32_vec.h
 * with 8 lanes, the table snpu_f32_avx2. The same operations on each
 * element as the SSE2 build, so the same bits; twice the lanes an
 * instruction. Only for a CPU that has AVX2 and whose kernel saves the
 * YMM registers (kmod/isa.c decides, once, at load); the functions must
 * only be called with the FPU held.
 *
 * The module builds this object with -mavx -mavx2 (Kbuild); a userspace
 * build (unit tests, fuzz targets, libsnpu through lib/core.c) compiles
 * it with everything else, so each function carries the target itself.
 * No FMA either way: the target has none and products are rounded before
 * they are added (-ffp-contract=off, and the pragma below).
 */
#include "kernels_f32.h"

#ifndef __KERNEL__
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#endif

#define SNPU_VW		8
#define SNPU_VFN(x)	snpu_avx2_##x
#ifdef __KERNEL__
#define SNPU_VATTR
#else
#define SNPU_VATTR	__attribute__((target("avx,avx2")))
#endif
#include "kernels_f32_vec.h"
#undef SNPU_VW
#undef SNPU_VFN
#undef SNPU_VATTR

const struct snpu_f32_ops snpu_f32_avx2 = {
	.name = "avx2",
	.add = snpu_avx2_add,
	.mul = snpu_avx2_mul,
	.axpy = snpu_avx2_axpy,
	.relu = snpu_avx2_relu,
	.relu_bwd = snpu_avx2_relu_bwd,
	.bias_add = snpu_avx2_bias_add,
	.affine = snpu_avx2_affine,
	.gemm = snpu_avx2_gemm,
	.colsum = snpu_avx2_colsum,
	.softmax_xent = snpu_avx2_softmax_xent,
	.argmax = snpu_avx2_argmax,
	.exp = snpu_avx2_exp,
};
