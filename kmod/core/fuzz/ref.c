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
	case SNPU_OP_COLL:
		return MEMBER_WORDS(coll);
	case SNPU_OP_FENCE_WAIT:
		return MEMBER_WORDS(fence);
	default:
		return 0;
	}
}

static bool in_range(__u64 v, __u64 lo, __u64 hi)
{
	return v >= lo && v <= hi;
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
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:		return "wwwsss";
	case SNPU_KERNEL_BIAS_ADD_F32:		return "wwws";
	case SNPU_KERNEL_RELU_BWD_F32:		return "www";
	case SNPU_KERNEL_SOFTMAX_XENT_F32:	return "wwwwsu";
	case SNPU_KERNEL_COLSUM_F32:
	case SNPU_KERNEL_ARGMAX_F32:		return "wws";
	case SNPU_KERNEL_COUNT_EQ_I32:		return "www";
	case SNPU_KERNEL_AFFINE_F32:		return "wwuu";
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
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
	case SNPU_KERNEL_BIAS_ADD_F32:
	case SNPU_KERNEL_RELU_BWD_F32:
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
	case SNPU_KERNEL_COLSUM_F32:
	case SNPU_KERNEL_ARGMAX_F32:
	case SNPU_KERNEL_AFFINE_F32:
		return true;
	default:
		return false;
	}
}

/*
 * Rows of a matrix of @cols columns (1..65536) in a buffer of 32-bit
 * elements: its element count divided by @cols, 0 when the bytes are not
 * whole elements or the elements not whole rows.
 */
static u128 ref_rows(__u64 bytes, __u64 cols)
{
	if (!in_range(cols, 1, 65536) || bytes % 4 || (bytes / 4) % cols)
		return 0;
	return bytes / 4 / cols;
}

/* Buffers a kernel writes: its first, and SOFTMAX_XENT its second too. */
__u32 ref_writes(__u32 kernel)
{
	const char *sig = ref_signature(kernel);

	if (kernel == SNPU_KERNEL_SOFTMAX_XENT_F32)
		return 0x3;
	return sig && (sig[0] == 'b' || sig[0] == 'w') ? 0x1 : 0;
}

/*
 * The rules on sizes and scalars of each kernel ("Built-in kernels"),
 * the argument list being fine.
 */
static bool ref_values_valid(__u32 kernel, __u32 block_dim,
			     const struct snpu_kernel_arg *a)
{
	u128 m, n, k, rows;

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
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		m = a[3].value;
		n = a[4].value;
		k = a[5].value;
		if (!in_range(a[3].value, 1, 65536) ||
		    !in_range(a[4].value, 1, 65536) ||
		    !in_range(a[5].value, 1, 65536))
			return false;
		/* a is k x m or m x k, b is k x n or n x k: same sizes. */
		return a[0].bytes >= 4 * m * n && a[1].bytes >= 4 * m * k &&
		       a[2].bytes >= 4 * k * n;
	case SNPU_KERNEL_BIAS_ADD_F32:
		return ref_rows(a[0].bytes, a[3].value) &&
		       a[1].bytes >= a[0].bytes &&
		       a[2].bytes >= 4 * (u128)a[3].value;
	case SNPU_KERNEL_RELU_BWD_F32:
		return a[0].bytes % 4 == 0 && a[1].bytes >= a[0].bytes &&
		       a[2].bytes >= a[0].bytes;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		rows = ref_rows(a[2].bytes, a[4].value);
		return rows && a[0].bytes >= 4 * rows &&
		       a[1].bytes >= a[2].bytes && a[3].bytes >= 4 * rows;
	case SNPU_KERNEL_COLSUM_F32:
		return ref_rows(a[1].bytes, a[2].value) &&
		       a[0].bytes >= 4 * (u128)a[2].value;
	case SNPU_KERNEL_ARGMAX_F32:
		rows = ref_rows(a[1].bytes, a[2].value);
		return rows && a[0].bytes >= 4 * rows;
	case SNPU_KERNEL_COUNT_EQ_I32:
		return a[1].bytes % 4 == 0 && a[2].bytes >= a[1].bytes &&
		       a[0].bytes >= 4 * (u128)block_dim;
	case SNPU_KERNEL_AFFINE_F32:
		return a[0].bytes % 4 == 0 && a[1].bytes >= a[0].bytes;
	default:
		return true;
	}
}

/*
 * Cost of one unit: k multiply-adds for the GEMMs, ncls for a row of
 * SOFTMAX_XENT or ARGMAX, rows for a column of COLSUM, else 1.
 */
__u64 ref_unit_cost(__u32 kernel, const struct snpu_kernel_arg *a)
{
	switch (kernel) {
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		return a[5].value;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		return a[4].value;
	case SNPU_KERNEL_ARGMAX_F32:
		return a[2].value;
	case SNPU_KERNEL_COLSUM_F32:
		return a[2].value ? a[1].bytes / 4 / a[2].value : 0;
	default:
		return 1;
	}
}

/*
 * "A block keeps its core until it ends": ceil(n / block_dim) units of
 * the kernel, each costing ref_unit_cost(), at most
 * SNPU_KERNEL_BLOCK_WORK_MAX (2^24). In 128 bits: m * n * k reaches 2^48,
 * COLSUM's columns times rows 2^78.
 */
static bool ref_block_work_ok(__u32 kernel, __u32 block_dim,
			      const struct snpu_kernel_arg *a)
{
	u128 per_block = ((u128)ref_units(kernel, a) + block_dim - 1) /
			 block_dim;
	u128 cost = ref_unit_cost(kernel, a);

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

/*
 * A collective task (uapi header, "Collectives"): a known collective,
 * type and operator (an operator only for the reducing ones), a root
 * only for a broadcast and below the most ranks, a count > 0 whose
 * largest buffer (ranks times count elements of 4 bytes) is addressable,
 * 4-byte aligned addresses, a zero pad.
 */
static bool ref_coll_valid(const struct snpu_task *t)
{
	bool reduces = t->coll.coll == SNPU_COLL_ALLREDUCE ||
		       t->coll.coll == SNPU_COLL_REDUCE_SCATTER;

	if (!in_range(t->coll.coll, SNPU_COLL_ALLREDUCE,
		      SNPU_COLL_REDUCE_SCATTER))
		return false;
	if (t->coll.dtype != SNPU_DTYPE_I32 && t->coll.dtype != SNPU_DTYPE_F32)
		return false;
	if (reduces ? !in_range(t->coll.redop, SNPU_REDOP_SUM, SNPU_REDOP_MAX) :
	    t->coll.redop != 0)
		return false;
	if (t->coll.root && (t->coll.coll != SNPU_COLL_BROADCAST ||
			     t->coll.root >= SNPU_COMM_MAX_RANKS))
		return false;
	if (!t->coll.count ||
	    (u128)t->coll.count * 4 * SNPU_COMM_MAX_RANKS > ~0ULL)
		return false;
	return t->coll.send % 4 == 0 && t->coll.recv % 4 == 0 && !t->coll.pad;
}

bool ref_task_valid(const struct snpu_task *t)
{
	unsigned int i;

	if (!(in_range(t->op, SNPU_OP_LAUNCH, SNPU_OP_GRAPH) ||
	      t->op == SNPU_OP_COLL || t->op == SNPU_OP_FENCE_WAIT) ||
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
	case SNPU_OP_COLL:
		return ref_coll_valid(t);
	case SNPU_OP_FENCE_WAIT:
		return !t->fence.pad;
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
	case SNPU_KERNEL_BIAS_ADD_F32:
	case SNPU_KERNEL_RELU_BWD_F32:
	case SNPU_KERNEL_AFFINE_F32:
		return a[0].bytes / 4;
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		return a[3].value * a[4].value;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_COUNT_EQ_I32:
		return a[1].bytes / 4;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		return a[4].value ? a[2].bytes / 4 / a[4].value : 0;
	case SNPU_KERNEL_ARGMAX_F32:
		return a[2].value ? a[1].bytes / 4 / a[2].value : 0;
	case SNPU_KERNEL_COLSUM_F32:
		return a[2].value;
	default:
		return 0;
	}
}

/*
 * Steps of one unit: a COLSUM column of more than 65536 rows is summed in
 * pieces of 4096 rows, ceil(rows / 4096) of them; every other unit is one
 * step.
 */
__u64 ref_unit_steps(__u32 kernel, const struct snpu_kernel_arg *a)
{
	__u64 rows = ref_unit_cost(kernel, a);

	if (kernel != SNPU_KERNEL_COLSUM_F32 || rows <= 65536)
		return 1;
	return rows / 4096 + (rows % 4096 != 0);
}

/*
 * At most 4096 units, or for the kernels whose unit costs more (the GEMMs,
 * SOFTMAX_XENT, ARGMAX, COLSUM) 65536 of that cost: max(1, 65536 / cost),
 * a class of SOFTMAX_XENT costing 32; a COLSUM in pieces takes 16 pieces
 * (65536 rows) a chunk.
 */
__u64 ref_chunk(__u32 kernel, const struct snpu_kernel_arg *a)
{
	u128 cost = ref_unit_cost(kernel, a), per;

	if (ref_unit_steps(kernel, a) > 1)
		return 16;
	switch (kernel) {
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
	case SNPU_KERNEL_ARGMAX_F32:
	case SNPU_KERNEL_COLSUM_F32:
		break;
	default:
		return 4096;
	}
	if (kernel == SNPU_KERNEL_SOFTMAX_XENT_F32)
		cost *= 32;
	per = cost ? 65536 / cost : 1;
	return per ? (__u64)per : 1;
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
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		/* Every element reads a whole k x m (m x k) and k x n. */
		m = a[3].value;
		cols = a[4].value;
		k = a[5].value;
		return 4 * units <= a[0].bytes && units <= m * cols &&
		       (units == 0 || (4 * m * k <= a[1].bytes &&
				       4 * k * cols <= a[2].bytes));
	case SNPU_KERNEL_BIAS_ADD_F32:
		return 4 * units <= a[0].bytes && 4 * units <= a[1].bytes &&
		       4 * (u128)a[3].value <= a[2].bytes;
	case SNPU_KERNEL_RELU_BWD_F32:
		return 4 * units <= a[0].bytes && 4 * units <= a[1].bytes &&
		       4 * units <= a[2].bytes;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/* units rows of ncls. */
		cols = a[4].value;
		return 4 * units <= a[0].bytes && 4 * units <= a[3].bytes &&
		       4 * units * cols <= a[1].bytes &&
		       4 * units * cols <= a[2].bytes;
	case SNPU_KERNEL_COLSUM_F32:
		/* units columns, each over every row of in. */
		cols = a[2].value;
		return 4 * units <= a[0].bytes && units <= cols &&
		       (units == 0 || ref_rows(a[1].bytes, cols));
	case SNPU_KERNEL_ARGMAX_F32:
		cols = a[2].value;
		return 4 * units <= a[0].bytes &&
		       4 * units * cols <= a[1].bytes;
	case SNPU_KERNEL_COUNT_EQ_I32:
		return 4 * blocks <= a[0].bytes && 4 * units <= a[1].bytes &&
		       4 * units <= a[2].bytes;
	case SNPU_KERNEL_AFFINE_F32:
		return 4 * units <= a[0].bytes && 4 * units <= a[1].bytes;
	default:
		return units == 0;
	}
}
