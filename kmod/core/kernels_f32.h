/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The f32 loops of the built-in kernels, internal to kmod/core.
 *
 * kernels_f32.c is the only object built with SSE in the module; every
 * other file, kernels.c included, is built without any FPU. So this
 * header names no floating point type: buffers are passed as pointers and
 * the f32 scalars as their IEEE-754 bits. In the kernel these functions run
 * only between kernel_fpu_begin() and kernel_fpu_end().
 *
 * Element indices are those of the whole buffer; a call covers [begin,
 * end) and touches nothing else.
 */
#ifndef _SNPU_CORE_KERNELS_F32_H
#define _SNPU_CORE_KERNELS_F32_H

#include "core.h"

void snpu_f32_add(void *c, const void *a, const void *b,
		  __u64 begin, __u64 end);
void snpu_f32_mul(void *c, const void *a, const void *b,
		  __u64 begin, __u64 end);
void snpu_f32_axpy(void *y, const void *x, __u32 a_bits,
		   __u64 begin, __u64 end);
void snpu_f32_relu(void *y, const void *x, __u64 begin, __u64 end);
void snpu_f32_gemm(void *c, const void *a, const void *b, __u32 n, __u32 k,
		   __u64 row, __u32 col, __u64 count);
void snpu_f32_sum(void *acc, const void *in, __u64 begin, __u64 end);
void snpu_f32_gemm_tn(void *c, const void *a, const void *b, __u32 m,
		      __u32 n, __u32 k, __u64 row, __u32 col, __u64 count);
void snpu_f32_gemm_nt(void *c, const void *a, const void *b, __u32 n,
		      __u32 k, __u64 row, __u32 col, __u64 count);
void snpu_f32_bias_add(void *y, const void *x, const void *bias, __u32 n,
		       __u32 col, __u64 begin, __u64 end);
void snpu_f32_relu_bwd(void *dx, const void *dy, const void *y,
		       __u64 begin, __u64 end);
int snpu_f32_softmax_xent(void *loss, void *dlogits, const void *logits,
			  const void *labels, __u32 ncls, __u32 scale_bits,
			  __u64 begin, __u64 end);
void snpu_f32_colsum(void *out, const void *in, __u32 n, __u64 rows,
		     __u64 begin, __u64 end);
void snpu_f32_argmax(void *out, const void *in, __u32 ncls,
		     __u64 begin, __u64 end);
void snpu_f32_affine(void *y, const void *x, __u32 a_bits, __u32 b_bits,
		     __u64 begin, __u64 end);
__u32 snpu_f32_exp_bits(__u32 x);
__u32 snpu_f32_log_bits(__u32 x);

#endif /* _SNPU_CORE_KERNELS_F32_H */
