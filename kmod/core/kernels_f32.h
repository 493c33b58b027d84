/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The f32 loops of the built-in kernels, internal to kmod/core.
 *
 * kernels_f32.c and kernels_f32_avx2.c are the only objects built with
 * SSE (and AVX2) in the module; every other file, kernels.c included, is
 * built without any FPU. So this header names no floating point type:
 * buffers are passed as pointers and the f32 scalars as their IEEE-754
 * bits. In the kernel these functions run only between kernel_fpu_begin()
 * and kernel_fpu_end().
 *
 * The loops are written once (kernels_f32_vec.h) over a vector of
 * 4 or 8 floats and built twice: with SSE2, 4 lanes, which every
 * x86-64 CPU has, and with AVX2, 8 lanes. struct snpu_f32_ops is one
 * build's table; kernels.c calls the one snpu_kernel_set_isa() chose.
 * Both compute every output element with the same operations in the
 * same order (vectors run across independent elements, never along a
 * sum), so they give the same bits, and the same as a scalar loop.
 *
 * Element indices are those of the whole buffer; a call covers [begin,
 * end) and touches nothing else.
 */
#ifndef _SNPU_CORE_KERNELS_F32_H
#define _SNPU_CORE_KERNELS_F32_H

#include "core.h"

/* @trans of the GEMM loop: which operand is stored transposed. */
#define SNPU_GEMM_NN		0	/* c = a b, a [m x k], b [k x n] */
#define SNPU_GEMM_TN		1	/* c = a^T b, a [k x m], b [k x n] */
#define SNPU_GEMM_NT		2	/* c = a b^T, a [m x k], b [n x k] */

/**
 * struct snpu_f32_ops - the f32 loops of one instruction set
 * @name: "sse2" or "avx2"
 * @add: c[i] = a[i] + b[i] for i in [begin, end)
 * @mul: c[i] = a[i] * b[i]
 * @axpy: y[i] += a * x[i], the product rounded first
 * @relu: y[i] = x[i] if x[i] > 0, else +0.0 (-0.0 and NaN give +0.0)
 * @relu_bwd: dx[i] = dy[i] if y[i] > 0, else +0.0
 * @bias_add: y[i] = x[i] + bias[i % n], @col being begin % n
 * @affine: y[i] = a * x[i] + b, the product rounded first
 * @gemm: @count consecutive elements (row-major) of c[m x n] from
 *        (@row, @col), @col below @n: each the sum over kk of
 *        a(i, kk) * b(kk, j) in float from +0.0 in increasing kk order
 *        (@trans: SNPU_GEMM_NN, _TN or _NT says how a and b are stored)
 * @colsum: for the columns [@col0, @col1) of in[. x n], out[j] = (+0.0
 *          if @first, else out[j]) + in[row0][j] + ... + in[row1 - 1][j],
 *          in that order
 * @softmax_xent: rows [begin, end) of SOFTMAX_XENT_F32 (see
 *                snpu_f32_softmax_xent()); 0, or -EDOM at the first row
 *                whose label is outside [0, ncls)
 * @argmax: out[r] = index of the first maximum of row r, for r in
 *          [begin, end)
 * @exp: y[i] = snpu_f32_exp_bits(x[i]) for i in [0, n), the softmax's
 *       exp over a buffer (what the tests compare with the scalar one)
 */
struct snpu_f32_ops {
	const char *name;
	void (*add)(void *c, const void *a, const void *b, __u64 begin,
		    __u64 end);
	void (*mul)(void *c, const void *a, const void *b, __u64 begin,
		    __u64 end);
	void (*axpy)(void *y, const void *x, __u32 a_bits, __u64 begin,
		     __u64 end);
	void (*relu)(void *y, const void *x, __u64 begin, __u64 end);
	void (*relu_bwd)(void *dx, const void *dy, const void *y, __u64 begin,
			 __u64 end);
	void (*bias_add)(void *y, const void *x, const void *bias, __u32 n,
			 __u32 col, __u64 begin, __u64 end);
	void (*affine)(void *y, const void *x, __u32 a_bits, __u32 b_bits,
		       __u64 begin, __u64 end);
	void (*gemm)(void *c, const void *a, const void *b, __u32 m, __u32 n,
		     __u32 k, __u32 trans, __u64 row, __u32 col, __u64 count);
	void (*colsum)(void *out, const void *in, __u32 n, __u64 row0,
		       __u64 row1, __u64 col0, __u64 col1, bool first);
	int (*softmax_xent)(void *loss, void *dlogits, const void *logits,
			    const void *labels, __u32 ncls, __u32 scale_bits,
			    __u64 begin, __u64 end);
	void (*argmax)(void *out, const void *in, __u32 ncls, __u64 begin,
		       __u64 end);
	void (*exp)(void *y, const void *x, __u64 n);
};

extern const struct snpu_f32_ops snpu_f32_sse2;
extern const struct snpu_f32_ops snpu_f32_avx2;

void snpu_f32_sum(void *acc, const void *in, __u64 begin, __u64 end);
__u32 snpu_f32_exp_bits(__u32 x);
__u32 snpu_f32_log_bits(__u32 x);

#endif /* _SNPU_CORE_KERNELS_F32_H */
