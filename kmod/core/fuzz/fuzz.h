/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the libFuzzer targets of kmod/core: the property
 * check, a reader of the fuzzer's bytes, and the reference rules of
 * ref.c, written from Documentation/userspace-api.rst rather than from
 * the code they are compared with.
 */
#ifndef _SNPU_FUZZ_H
#define _SNPU_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "core/kernels.h"

/*
 * A property that does not hold: say which one, then trap so libFuzzer
 * stops and writes the input as a crash artifact.
 */
#define FUZZ_CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz: %s:%d: property violated: %s: "	\
			fmt "\n", __FILE__, __LINE__, #cond,		\
			##__VA_ARGS__);					\
		__builtin_trap();					\
	}								\
} while (0)

/* The bytes of one input, consumed from the front. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

/* @bytes (1..8) little-endian bytes of the input; 0 past its end. */
static inline uint64_t fuzz_take(struct fuzz_in *in, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes; i++) {
		if (!in->n)
			break;
		v |= (uint64_t)in->p[0] << (8 * i);
		in->p++;
		in->n--;
	}
	return v;
}

/*
 * Largest extent of any device range: a buffer lies inside one
 * allocation (kmod/memory.c), an allocation inside the device memory, at
 * most SNPU_MAX_MEM_MB MiB (params.c).
 */
#define FUZZ_MAX_DEV_BYTES	((__u64)SNPU_MAX_MEM_MB << 20)

/* ref.c: the documented rules. */
unsigned int ref_task_words(__u32 op);
bool ref_launch_valid(__u32 kernel, __u32 block_dim,
		      const struct snpu_kernel_arg *args);
bool ref_task_valid(const struct snpu_task *t);
bool ref_is_buffer(__u32 kernel, unsigned int arg);
bool ref_uses_fpu(__u32 kernel);
__u32 ref_writes(__u32 kernel);
__u64 ref_unit_cost(__u32 kernel, const struct snpu_kernel_arg *args);
__u64 ref_units(__u32 kernel, const struct snpu_kernel_arg *args);
__u64 ref_unit_steps(__u32 kernel, const struct snpu_kernel_arg *args);
__u64 ref_chunk(__u32 kernel, const struct snpu_kernel_arg *args);
__u64 ref_slice_max(__u64 n, __u32 block_dim);
void ref_slice(__u64 n, __u64 c, __u32 block, __u64 *begin, __u64 *end);
bool ref_extents_ok(__u32 kernel, __u32 block_dim,
		    const struct snpu_kernel_arg *args, __u64 n);

#endif /* _SNPU_FUZZ_H */
