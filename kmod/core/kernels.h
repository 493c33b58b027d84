/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Built-in kernels of the snpu device: argument checks and the per-slice
 * compute, pure C shared by the module and the native tests.
 *
 * The uapi header documents each kernel's arguments and the slicing rule.
 * The module resolves every buffer argument to a kernel address after
 * snpu_kernel_check() accepted the launch, then runs each block's slice in
 * chunks of snpu_kernel_chunk() steps, each chunk with
 * snpu_kernel_run(); f32 kernels (snpu_kernel_uses_fpu()) run inside a
 * kernel_fpu_begin()/kernel_fpu_end() section per chunk, with the
 * instruction set snpu_kernel_set_isa() chose. SPIN and FAIL are carried
 * out by the module, not by snpu_kernel_run().
 */
#ifndef _SNPU_CORE_KERNELS_H
#define _SNPU_CORE_KERNELS_H

#include "core.h"

/* Instruction sets of the f32 kernels (snpu_kernel_set_isa()). */
#define SNPU_ISA_SSE2		0
#define SNPU_ISA_AVX2		1

/* Most units (elements, bytes for COPY and CRC32C) one chunk covers. */
#define SNPU_KERNEL_CHUNK	4096

/*
 * Most work of one chunk of a kernel whose units cost more than 1: the
 * multiply-adds of a GEMM, the elements of SOFTMAX_XENT, ARGMAX, COLSUM
 * (a chunk holds at least one unit, and no unit costs more: COLSUM cuts
 * longer columns, see snpu_kernel_steps()).
 */
#define SNPU_KERNEL_CHUNK_WORK	65536

/*
 * What a class of SOFTMAX_XENT counts toward a chunk's
 * SNPU_KERNEL_CHUNK_WORK: its exp and its division cost about as much as
 * 32 multiply-adds, so that a chunk of rows takes about as long as a
 * chunk of a GEMM. A row is the least a chunk holds.
 */
#define SNPU_KERNEL_SOFTMAX_CLASS_WORK	32

/*
 * Longest SPIN a block may ask for, in ns: 1 s, so that no block of any
 * user holds a core for long (see the uapi header).
 */
#define SNPU_KERNEL_SPIN_MAX_NS	1000000000ULL

/**
 * struct snpu_klaunch - a checked launch with its buffers resolved
 * @kernel: SNPU_KERNEL_*
 * @block_dim: number of blocks
 * @buf: kernel address of each buffer argument (NULL for scalars)
 * @bytes: extent of each buffer argument (0 for scalars)
 * @scalar: value of each scalar argument (0 for buffers)
 */
struct snpu_klaunch {
	__u32 kernel;
	__u32 block_dim;
	void *buf[SNPU_KERNEL_MAX_ARGS];
	__u64 bytes[SNPU_KERNEL_MAX_ARGS];
	__u64 scalar[SNPU_KERNEL_MAX_ARGS];
};

int snpu_kernel_check(__u32 kernel, __u32 block_dim,
		      const struct snpu_kernel_arg *args);
void snpu_kernel_work(__u32 kernel, const struct snpu_kernel_arg *args,
		      __u64 *units, __u64 *cost);
bool snpu_kernel_is_buffer(__u32 kernel, unsigned int arg);
__u32 snpu_kernel_buffers(__u32 kernel);
__u32 snpu_kernel_words(__u32 kernel);
__u32 snpu_kernel_writes(__u32 kernel);
bool snpu_kernel_uses_fpu(__u32 kernel);
__u64 snpu_kernel_units(const struct snpu_klaunch *l);
__u64 snpu_kernel_steps(const struct snpu_klaunch *l);
__u64 snpu_div_round_up(__u64 n, __u32 d);
void snpu_kernel_split(__u64 units, __u32 block_dim, __u32 block,
		       __u64 *begin, __u64 *end);
void snpu_kernel_split_steps(const struct snpu_klaunch *l, __u64 steps,
			     __u32 block, __u64 *begin, __u64 *end);
void snpu_kernel_slice(const struct snpu_klaunch *l, __u32 block,
		       __u64 *begin, __u64 *end);
int snpu_kernel_exec(const struct snpu_klaunch *l, __u32 block,
		     __u64 slice_begin, __u64 slice_end,
		     __u64 begin, __u64 end);
int snpu_kernel_run(const struct snpu_klaunch *l, __u32 block,
		    __u64 slice_begin, __u64 slice_end,
		    __u64 begin, __u64 end);
__u64 snpu_kernel_chunk(const struct snpu_klaunch *l);
__u32 snpu_kernel_plan(__u32 kernel, const struct snpu_kernel_arg *args,
		       __u64 *units, __u64 *chunk, bool *fpu);
__u32 snpu_crc32c(__u32 crc, const void *buf, __u64 len);
int snpu_kernel_set_isa(unsigned int isa);
const char *snpu_kernel_isa_name(void);

#endif /* _SNPU_CORE_KERNELS_H */
