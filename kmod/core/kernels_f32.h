/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The f32 loops of the built-in kernels, internal to kmod/core.
 *
 * kernels_f32.c is the only object built with SSE in the module; every
 * other file, kernels.c included, is built without any FPU. So this
 * header names no floating point type: buffers are passed as pointers and
 * the AXPY scalar as its IEEE-754 bits. In the kernel these functions run
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

#endif /* _SNPU_CORE_KERNELS_F32_H */
