// SPDX-License-Identifier: GPL-2.0
/*
 * Reference rules for the fuzz targets, written from the tables of
 * Documentation/userspace-api.rst ("Tasks", "Built-in kernels") and not
 * from kmod/core: the targets compare the core's answers with these.
 * Products and sums are done in 128 bits so that the reference cannot
 * overflow where the code under test might.
 */
#include "fuzz.h"

typedef unsigned __int128 u128;

#define MEMBER_WORDS(m) (sizeof(((struct snpu_task *)0)->m) / sizeof(__u64))

/* Union words an op uses, from the size of its union member. */
unsigned int ref_task_words(__u32 op)
{
	switch (op) {
	case SNPU_OP_LAUNCH:
		return MEMBER_WORDS(launch);
	case SNPU_OP_COPY:
		return MEMBER_WORDS(copy);
	case SNPU_OP_MEMSET:
		return MEMBER_WORDS(memset);
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
		return MEMBER_WORDS(event);
	case SNPU_OP_GRAPH:
		return MEMBER_WORDS(graph);
	default:
		return 0;
	}
}

/*
 * The argument list of each kernel, one letter per argument: 'b' a buffer
 * read as bytes, 'w' a buffer of 32-bit elements (address 4-aligned),
 * 'u' a 32-bit scalar (u32 or f32 bits), 's' a 64-bit scalar.
 */
static const char *ref_signature(__u32 kernel)
{
	switch (kernel) {
	case SNPU_KERNEL_NOP:			return "";
	case SNPU_KERNEL_COPY:			return "bb";
	case SNPU_KERNEL_FILL:			return "wu";
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:		return "www";
	case SNPU_KERNEL_AXPY_F32:		return "wwu";
	case SNPU_KERNEL_RELU_F32:		return "ww";
	case SNPU_KERNEL_GEMM_F32:		return "wwwsss";
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:	return "ww";
	case SNPU_KERNEL_CRC32C:		return "wb";
	case SNPU_KERNEL_SPIN:			return "s";
	case SNPU_KERNEL_FAIL:			return "s";
	default:				return NULL;
	}
}

bool ref_is_buffer(__u32 kernel, unsigned int arg)
{
	const char *sig = ref_signature(kernel);

	if (!sig || arg >= strlen(sig))
		return false;
	return sig[arg] == 'b' || sig[arg] == 'w';
}

bool ref_uses_fpu(__u32 kernel)
{
	switch (kernel) {
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_F32:
	case SNPU_KERNEL_AXPY_F32:
	case SNPU_KERNEL_RELU_F32:
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		return true;
	default:
		return false;
	}
}

static bool in_range(__u64 v, __u64 lo, __u64 hi)
{
	return v >= lo && v <= hi;
}

/*
 * The rules on sizes and scalars of each kernel ("Built-in kernels"),
 * the argument list being fine.
 */
static bool ref_values_valid(__u32 kernel, __u32 block_dim,
			     const struct snpu_kernel_arg *a)
{
	u128 m, n, k;

	switch (kernel) {
	case SNPU_KERNEL_COPY:
		return a[0].bytes >= a[1].bytes;
	case SNPU_KERNEL_FILL:
		return a[0].bytes % 4 == 0;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		return a[0].bytes % 4 == 0 && a[1].bytes >= a[0].bytes &&
		       a[2].bytes >= a[0].bytes;
	case SNPU_KERNEL_AXPY_F32:
	case SNPU_KERNEL_RELU_F32:
		return a[0].bytes % 4 == 0 && a[1].bytes >= a[0].bytes;
	case SNPU_KERNEL_GEMM_F32:
		m = a[3].value;
		n = a[4].value;
		k = a[5].value;
		if (!in_range(a[3].value, 1, 65536) ||
		    !in_range(a[4].value, 1, 65536) ||
		    !in_range(a[5].value, 1, 65536))
			return false;
		return a[0].bytes >= 4 * m * n && a[1].bytes >= 4 * m * k &&
		       a[2].bytes >= 4 * k * n;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		return a[1].bytes % 4 == 0 &&
		       a[0].bytes >= 4 * (u128)block_dim;
	case SNPU_KERNEL_CRC32C:
		return a[0].bytes >= 4 * (u128)block_dim;
	case SNPU_KERNEL_SPIN:
		return a[0].value <= 1000000000ULL;
	case SNPU_KERNEL_FAIL:
		return in_range(a[0].value, 1, 4095);
	default:
		return true;
	}
}

/*
 * "A block keeps its core until it ends": ceil(n / block_dim) units of
 * the kernel, each costing k multiply-adds for GEMM_F32 and 1 otherwise,
 * at most SNPU_KERNEL_BLOCK_WORK_MAX (2^24). In 128 bits: m * n * k
 * reaches 2^48.
 */
static bool ref_block_work_ok(__u32 kernel, __u32 block_dim,
			      const struct snpu_kernel_arg *a)
{
	u128 per_block = ((u128)ref_units(kernel, a) + block_dim - 1) /
			 block_dim;
	u128 cost = kernel == SNPU_KERNEL_GEMM_F32 ? a[5].value : 1;

	return per_block * cost <= (u128)1 << 24;
}

bool ref_launch_valid(__u32 kernel, __u32 block_dim,
		      const struct snpu_kernel_arg *a)
{
	const char *sig = ref_signature(kernel);
	unsigned int i;

	if (!sig || !in_range(block_dim, 1, 65535))
		return false;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		char c = i < strlen(sig) ? sig[i] : 0;

		switch (c) {
		case 0:
			if (a[i].value || a[i].bytes)
				return false;
			break;
		case 'w':
			if (a[i].value % 4)
				return false;
			/* fall through */
		case 'b':
			if (!a[i].bytes)
				return false;
			break;
		case 'u':
			if (a[i].value > 0xffffffffULL)
				return false;
			/* fall through */
		case 's':
			if (a[i].bytes)
				return false;
			break;
		}
	}

	return ref_values_valid(kernel, block_dim, a) &&
	       ref_block_work_ok(kernel, block_dim, a);
}

bool ref_task_valid(const struct snpu_task *t)
{
	unsigned int i;

	if (!in_range(t->op, SNPU_OP_LAUNCH, SNPU_OP_GRAPH) ||
	    t->flags || t->reserved0)
		return false;
	for (i = ref_task_words(t->op); i < 13; i++)
		if (t->raw[i])
			return false;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
		return ref_launch_valid(t->launch.kernel, t->launch.block_dim,
					t->launch.args);
	case SNPU_OP_COPY:
		return in_range(t->copy.dir, 1, 3) && !t->copy.pad &&
		       t->copy.bytes > 0;
	case SNPU_OP_MEMSET:
		return t->memset.bytes > 0 && t->memset.value <= 255 &&
		       !t->memset.pad;
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
		return !t->event.pad;
	case SNPU_OP_GRAPH:
		return !t->graph.pad;
	default:
		return true;
	}
}

__u64 ref_units(__u32 kernel, const struct snpu_kernel_arg *a)
{
	switch (kernel) {
	case SNPU_KERNEL_COPY:
	case SNPU_KERNEL_CRC32C:
		return a[1].bytes;
	case SNPU_KERNEL_FILL:
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
	case SNPU_KERNEL_AXPY_F32:
	case SNPU_KERNEL_RELU_F32:
		return a[0].bytes / 4;
	case SNPU_KERNEL_GEMM_F32:
		return a[3].value * a[4].value;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		return a[1].bytes / 4;
	default:
		return 0;
	}
}

/* At most 4096 units, or 65536 multiply-adds of GEMM: max(1, 65536 / k). */
__u64 ref_chunk(__u32 kernel, const struct snpu_kernel_arg *a)
{
	__u64 per;

	if (kernel != SNPU_KERNEL_GEMM_F32)
		return 4096;
	per = 65536 / a[5].value;
	return per ? per : 1;
}

/* The most units a block gets: c = ceil(n / B). */
__u64 ref_slice_max(__u64 n, __u32 block_dim)
{
	return (__u64)(((u128)n + block_dim - 1) / block_dim);
}

/* Block b takes [min(n, b * c), min(n, (b + 1) * c)), c from above. */
void ref_slice(__u64 n, __u64 c, __u32 block, __u64 *begin, __u64 *end)
{
	u128 b = (u128)block * c, e = b + c;

	*begin = b < n ? (__u64)b : n;
	*end = e < n ? (__u64)e : n;
}

/*
 * Every access the kernel makes for units [0, @n), from what each kernel
 * computes, lies inside its buffer.
 */
bool ref_extents_ok(__u32 kernel, __u32 block_dim,
		    const struct snpu_kernel_arg *a, __u64 n)
{
	u128 units = n, blocks = block_dim, m, cols, k;

	switch (kernel) {
	case SNPU_KERNEL_COPY:
		return units <= a[0].bytes && units <= a[1].bytes;
	case SNPU_KERNEL_FILL:
		return 4 * units <= a[0].bytes;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		return 4 * units <= a[0].bytes && 4 * units <= a[1].bytes &&
		       4 * units <= a[2].bytes;
	case SNPU_KERNEL_AXPY_F32:
	case SNPU_KERNEL_RELU_F32:
		return 4 * units <= a[0].bytes && 4 * units <= a[1].bytes;
	case SNPU_KERNEL_GEMM_F32:
		/* Element e of c is row e / cols, column e % cols. */
		cols = a[4].value;
		k = a[5].value;
		if (!cols)
			return false;
		m = (units + cols - 1) / cols;
		return 4 * units <= a[0].bytes && 4 * m * k <= a[1].bytes &&
		       (units == 0 || 4 * k * cols <= a[2].bytes);
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		return 4 * blocks <= a[0].bytes && 4 * units <= a[1].bytes;
	case SNPU_KERNEL_CRC32C:
		return 4 * blocks <= a[0].bytes && units <= a[1].bytes;
	default:
		return units == 0;
	}
}
