// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Built-in kernels: the argument rules of a launch, the slicing of its
 * elements among blocks and the compute of one chunk of a slice.
 *
 * This file is built without any FPU in the kernel: it holds no floating
 * point type or operation. The f32 kernels are dispatched to the table of
 * kernels_f32.c (SSE2) or kernels_f32_avx2.c (AVX2), the objects built
 * with the FPU, whichever snpu_kernel_set_isa() chose.
 */
#include "kernels.h"
#include "kernels_f32.h"

#ifdef __KERNEL__
#include <linux/instrumented.h>
#include <linux/math64.h>
#include <linux/string.h>
#else
#include <string.h>
#endif

/* Largest m, n and k of the GEMMs, n of BIAS_ADD and COLSUM, and ncls. */
#define SNPU_GEMM_MAX_DIM	65536

/**
 * struct snpu_kernel_desc - the argument list of one built-in kernel
 * @nargs: number of arguments; the ones after must be all zero
 * @buffers: bit i set when argument i is a buffer, else it is a scalar
 * @bytewise: bit i set when buffer i is read as bytes; the other buffers
 *            hold 32-bit elements and must be 4-byte aligned
 * @writes: bit i set when the kernel writes buffer i (the others it only
 *          reads); what graphs order their nodes by
 * @fpu: the kernel computes in f32 (kernels_f32.c)
 */
struct snpu_kernel_desc {
	__u8 nargs;
	__u8 buffers;
	__u8 bytewise;
	__u8 writes;
	bool fpu;
};

static const struct snpu_kernel_desc snpu_kernel_descs[SNPU_KERNEL_COUNT] = {
	[SNPU_KERNEL_NOP]		= { .nargs = 0, .buffers = 0x00 },
	[SNPU_KERNEL_COPY]		= { .nargs = 2, .buffers = 0x03,
					    .bytewise = 0x03, .writes = 0x01 },
	[SNPU_KERNEL_FILL]		= { .nargs = 2, .buffers = 0x01,
					    .writes = 0x01 },
	[SNPU_KERNEL_ADD_I32]		= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01 },
	[SNPU_KERNEL_ADD_F32]		= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_MUL_I32]		= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01 },
	[SNPU_KERNEL_MUL_F32]		= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_AXPY_F32]		= { .nargs = 3, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_RELU_F32]		= { .nargs = 2, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_GEMM_F32]		= { .nargs = 6, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_REDUCE_SUM_I32]	= { .nargs = 2, .buffers = 0x03,
					    .writes = 0x01 },
	[SNPU_KERNEL_REDUCE_SUM_F32]	= { .nargs = 2, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_CRC32C]		= { .nargs = 2, .buffers = 0x03,
					    .bytewise = 0x02, .writes = 0x01 },
	[SNPU_KERNEL_SPIN]		= { .nargs = 1, .buffers = 0x00 },
	[SNPU_KERNEL_FAIL]		= { .nargs = 1, .buffers = 0x00 },
	[SNPU_KERNEL_GEMM_TN_F32]	= { .nargs = 6, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_GEMM_NT_F32]	= { .nargs = 6, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_BIAS_ADD_F32]	= { .nargs = 4, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_RELU_BWD_F32]	= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_SOFTMAX_XENT_F32]	= { .nargs = 6, .buffers = 0x0f,
					    .writes = 0x03, .fpu = true },
	[SNPU_KERNEL_COLSUM_F32]	= { .nargs = 3, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_ARGMAX_F32]	= { .nargs = 3, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
	[SNPU_KERNEL_COUNT_EQ_I32]	= { .nargs = 3, .buffers = 0x07,
					    .writes = 0x01 },
	[SNPU_KERNEL_AFFINE_F32]	= { .nargs = 4, .buffers = 0x03,
					    .writes = 0x01, .fpu = true },
};

/*
 * The f32 loops the kernels run: one table for the whole module (or
 * program), chosen before any launch runs and not changed while one does.
 */
static const struct snpu_f32_ops *snpu_f32 = &snpu_f32_sse2;

/**
 * snpu_kernel_set_isa() - choose the instruction set of the f32 kernels
 * @isa: SNPU_ISA_SSE2 (every x86-64 CPU) or SNPU_ISA_AVX2
 *
 * Both give the same bits; AVX2 does eight lanes an instruction where
 * SSE2 does four. The caller has checked that the CPU has @isa (and, in
 * the kernel, that the FPU state it saves covers the YMM registers), and
 * calls this before any kernel runs: the module once at load, a test
 * between launches.
 *
 * Return: 0, or -EINVAL for an unknown @isa.
 */
int snpu_kernel_set_isa(unsigned int isa)
{
	switch (isa) {
	case SNPU_ISA_SSE2:
		snpu_f32 = &snpu_f32_sse2;
		return 0;
	case SNPU_ISA_AVX2:
		snpu_f32 = &snpu_f32_avx2;
		return 0;
	default:
		return -EINVAL;
	}
}

/**
 * snpu_kernel_isa_name() - the instruction set the f32 kernels use
 *
 * Return: "sse2" or "avx2".
 */
const char *snpu_kernel_isa_name(void)
{
	return snpu_f32->name;
}

/**
 * snpu_div_round_up() - ceil(@n / @d)
 * @n: the dividend
 * @d: the divisor, > 0
 *
 * Without a 64-bit division helper on 32-bit.
 *
 * Return: the quotient, rounded up.
 */
__u64 snpu_div_round_up(__u64 n, __u32 d)
{
	__u64 q;
	__u32 rem;

#ifdef __KERNEL__
	q = div_u64_rem(n, d, &rem);
#else
	q = n / d;
	rem = n % d;
#endif
	return q + (rem != 0);
}

/* n / d and n % d for d > 0. */
static __u64 snpu_div_rem(__u64 n, __u32 d, __u32 *rem)
{
#ifdef __KERNEL__
	return div_u64_rem(n, d, rem);
#else
	*rem = n % d;
	return n / d;
#endif
}

/*
 * n / d for any d, 0 for d == 0: the units of a launch not yet checked,
 * whose scalars may be anything.
 */
static __u64 snpu_div64(__u64 n, __u64 d)
{
	if (!d)
		return 0;
#ifdef __KERNEL__
	return div64_u64(n, d);
#else
	return n / d;
#endif
}

/*
 * Set @n words at @p to @v: the kernel's string instructions if any, eight
 * bytes a step (under TCG each step of a string instruction costs about
 * the same whatever its width: a 4 KiB fill takes half the time of
 * memset32()).
 */
static void snpu_fill32(__u32 *p, __u32 v, __u64 n)
{
#ifdef __KERNEL__
	/* x86's string instructions are not seen by KASAN: say what they write. */
	instrument_write(p, n * sizeof(*p));
	if (n && !IS_ALIGNED((unsigned long)p, sizeof(u64))) {
		*p++ = v;
		n--;
	}
	memset64((u64 *)p, (u64)v << 32 | v, n / 2);
	if (n & 1)
		p[n - 1] = v;
#else
	__u64 i;

	for (i = 0; i < n; i++)
		p[i] = v;
#endif
}

/* Is a 32-bit scalar dimension in 1..SNPU_GEMM_MAX_DIM? */
static bool snpu_dim_ok(__u64 v)
{
	return v >= 1 && v <= SNPU_GEMM_MAX_DIM;
}

/*
 * A buffer of 32-bit elements holding whole rows of @cols columns: its
 * bytes a multiple of 4, its elements a multiple of @cols (1..65536).
 * Return: the number of rows, 0 when the buffer breaks the rule.
 */
static __u64 snpu_rows(__u64 bytes, __u64 cols)
{
	__u32 rem;
	__u64 rows;

	if (bytes & 3 || !snpu_dim_ok(cols))
		return 0;
	rows = snpu_div_rem(bytes / 4, (__u32)cols, &rem);
	return rem ? 0 : rows;
}

/* The sizes of the two-operand GEMMs: @a_rows x @a_cols, @b_rows x @b_cols. */
static int snpu_check_gemm(const struct snpu_kernel_arg *args,
			   __u64 a_rows, __u64 a_cols,
			   __u64 b_rows, __u64 b_cols)
{
	__u64 m = args[3].value, n = args[4].value, k = args[5].value;

	if (!snpu_dim_ok(m) || !snpu_dim_ok(n) || !snpu_dim_ok(k))
		return -EINVAL;
	/* At most 2^34 each: no overflow. */
	if (args[0].bytes < m * n * 4 || args[1].bytes < a_rows * a_cols * 4 ||
	    args[2].bytes < b_rows * b_cols * 4)
		return -EINVAL;
	return 0;
}

/* The rules on sizes and scalars of a kernel whose argument list is fine. */
static int snpu_kernel_check_values(__u32 kernel, __u32 block_dim,
				    const struct snpu_kernel_arg *args)
{
	__u64 n, rows;

	switch (kernel) {
	case SNPU_KERNEL_COPY:
		if (args[0].bytes < args[1].bytes)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_FILL:
		if (args[0].bytes & 3 || args[1].value >> 32)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_ADD_I32:
	case SNPU_KERNEL_ADD_F32:
	case SNPU_KERNEL_MUL_I32:
	case SNPU_KERNEL_MUL_F32:
		if (args[0].bytes & 3 || args[1].bytes < args[0].bytes ||
		    args[2].bytes < args[0].bytes)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_AXPY_F32:
		if (args[0].bytes & 3 || args[1].bytes < args[0].bytes ||
		    args[2].value >> 32)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_RELU_F32:
		if (args[0].bytes & 3 || args[1].bytes < args[0].bytes)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_GEMM_F32:
		/* a is [m x k], b is [k x n]. */
		return snpu_check_gemm(args, args[3].value, args[5].value,
				       args[5].value, args[4].value);
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
		if (args[1].bytes & 3 || args[0].bytes < (__u64)block_dim * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_CRC32C:
		if (args[0].bytes < (__u64)block_dim * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_SPIN:
		if (args[0].value > SNPU_KERNEL_SPIN_MAX_NS)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_FAIL:
		if (args[0].value < 1 || args[0].value > 4095)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_GEMM_TN_F32:
		/* a is [k x m], b is [k x n]. */
		return snpu_check_gemm(args, args[5].value, args[3].value,
				       args[5].value, args[4].value);
	case SNPU_KERNEL_GEMM_NT_F32:
		/* a is [m x k], b is [n x k]. */
		return snpu_check_gemm(args, args[3].value, args[5].value,
				       args[4].value, args[5].value);
	case SNPU_KERNEL_BIAS_ADD_F32:
		n = args[3].value;
		if (!snpu_rows(args[0].bytes, n) ||
		    args[1].bytes < args[0].bytes || args[2].bytes < n * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_RELU_BWD_F32:
		if (args[0].bytes & 3 || args[1].bytes < args[0].bytes ||
		    args[2].bytes < args[0].bytes)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		rows = snpu_rows(args[2].bytes, args[4].value);
		if (!rows || args[5].value >> 32)
			return -EINVAL;
		/* rows * ncls * 4 is logits.bytes: no overflow. */
		if (args[0].bytes < rows * 4 || args[1].bytes < args[2].bytes ||
		    args[3].bytes < rows * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_COLSUM_F32:
		n = args[2].value;
		if (!snpu_rows(args[1].bytes, n) || args[0].bytes < n * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_ARGMAX_F32:
		rows = snpu_rows(args[1].bytes, args[2].value);
		if (!rows || args[0].bytes < rows * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_COUNT_EQ_I32:
		if (args[1].bytes & 3 || args[2].bytes < args[1].bytes ||
		    args[0].bytes < (__u64)block_dim * 4)
			return -EINVAL;
		return 0;
	case SNPU_KERNEL_AFFINE_F32:
		if (args[0].bytes & 3 || args[1].bytes < args[0].bytes ||
		    args[2].value >> 32 || args[3].value >> 32)
			return -EINVAL;
		return 0;
	default:
		return 0;
	}
}

/* Does a unit of @kernel cost more than one step (see below)? */
static bool snpu_kernel_costed(__u32 kernel)
{
	switch (kernel) {
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
	case SNPU_KERNEL_ARGMAX_F32:
	case SNPU_KERNEL_COLSUM_F32:
		return true;
	default:
		return false;
	}
}

/*
 * Where a launch's units and unit cost are read from: the bytes of its
 * buffer arguments and the values of its scalar ones, in a resolved launch
 * (stride 1) or in the task's arguments (stride 2). Passed by value, so
 * that no caller needs a copy of the launch on its stack.
 */
struct snpu_kdims {
	const __u64 *bytes;
	const __u64 *scalar;
	unsigned int stride;
};

static_assert(sizeof(struct snpu_kernel_arg) == 2 * sizeof(__u64),
	      "snpu_kdims strides over the arguments");

static __u64 snpu_b(struct snpu_kdims d, unsigned int i)
{
	return d.bytes[i * d.stride];
}

static __u64 snpu_s(struct snpu_kdims d, unsigned int i)
{
	return d.scalar[i * d.stride];
}

static struct snpu_kdims snpu_kdims_launch(const struct snpu_klaunch *l)
{
	return (struct snpu_kdims){ l->bytes, l->scalar, 1 };
}

static struct snpu_kdims snpu_kdims_args(const struct snpu_kernel_arg *args)
{
	return (struct snpu_kdims){ &args[0].bytes, &args[0].value, 2 };
}

/*
 * Cost of one unit of a launch, in the units of SNPU_KERNEL_BLOCK_WORK_MAX:
 * k multiply-adds per output element of the GEMMs, ncls per row of
 * SOFTMAX_XENT and ARGMAX, rows per column of COLSUM, 1 for the other
 * kernels.
 */
static __u64 snpu_kernel_unit_cost(__u32 kernel, struct snpu_kdims d)
{
	switch (kernel) {
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		return snpu_s(d, 5);
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		return snpu_s(d, 4);
	case SNPU_KERNEL_ARGMAX_F32:
		return snpu_s(d, 2);
	case SNPU_KERNEL_COLSUM_F32:
		return snpu_div64(snpu_b(d, 1) / 4, snpu_s(d, 2));
	default:
		return 1;
	}
}

static __u64 snpu_kernel_units_of(__u32 kernel, struct snpu_kdims d);

/*
 * COLSUM's pieces: a column of more than SNPU_KERNEL_CHUNK_WORK rows is
 * summed in pieces of SNPU_KERNEL_CHUNK rows (the last one shorter), so
 * that no chunk adds more than SNPU_KERNEL_CHUNK_WORK elements; a shorter
 * column is one piece. Return: the pieces of a column, at least 1; *@seg
 * the rows of a piece.
 */
static __u64 snpu_colsum_pieces(__u64 rows, __u64 *seg)
{
	if (rows <= SNPU_KERNEL_CHUNK_WORK) {
		*seg = rows;
		return 1;
	}
	*seg = SNPU_KERNEL_CHUNK;
	return rows / SNPU_KERNEL_CHUNK + (rows % SNPU_KERNEL_CHUNK != 0);
}

/* Steps of one unit: COLSUM's pieces of a column, else 1. */
static __u64 snpu_kernel_unit_steps(__u32 kernel, struct snpu_kdims d)
{
	__u64 seg;

	if (kernel != SNPU_KERNEL_COLSUM_F32)
		return 1;
	return snpu_colsum_pieces(snpu_kernel_unit_cost(kernel, d), &seg);
}

static __u64 snpu_kernel_steps_of(__u32 kernel, struct snpu_kdims d)
{
	return snpu_kernel_units_of(kernel, d) *
	       snpu_kernel_unit_steps(kernel, d);
}

/* See snpu_kernel_chunk(). */
static __u64 snpu_kernel_chunk_of(__u32 kernel, struct snpu_kdims d)
{
	__u64 cost;

	if (!snpu_kernel_costed(kernel))
		return SNPU_KERNEL_CHUNK;
	cost = snpu_kernel_unit_cost(kernel, d);
	if (!cost)
		return 1;
	/* A piece of a long COLSUM column costs SNPU_KERNEL_CHUNK. */
	if (kernel == SNPU_KERNEL_COLSUM_F32 && cost > SNPU_KERNEL_CHUNK_WORK)
		cost = SNPU_KERNEL_CHUNK;
	/* ncls <= 65536 for a checked launch: no overflow. */
	if (kernel == SNPU_KERNEL_SOFTMAX_XENT_F32)
		cost *= SNPU_KERNEL_SOFTMAX_CLASS_WORK;
	return cost >= SNPU_KERNEL_CHUNK_WORK ? 1 :
	       SNPU_KERNEL_CHUNK_WORK / cost;
}

/**
 * snpu_kernel_work() - the units of a launch and what one costs
 * @kernel: SNPU_KERNEL_*
 * @args: the SNPU_KERNEL_MAX_ARGS arguments, as for snpu_kernel_check()
 * @units: out: the units its blocks share (snpu_kernel_units())
 * @cost: out: the work of one unit in the units of
 *        SNPU_KERNEL_BLOCK_WORK_MAX: k for the GEMMs, ncls for
 *        SOFTMAX_XENT and ARGMAX, rows for COLSUM, 1 for the others
 *
 * From the arguments alone (bytes of buffers, values of scalars), for a
 * caller sizing a launch before it is checked (libsnpu's
 * snpu_launch_dims()) as for the check. Arguments a launch leaves unused
 * must be zero, as the check requires.
 */
void snpu_kernel_work(__u32 kernel, const struct snpu_kernel_arg *args,
		      __u64 *units, __u64 *cost)
{
	/*
	 * The units and the cost read the bytes of buffer arguments and the
	 * values of scalar ones only, and unused arguments are zero: no need
	 * to tell them apart here.
	 */
	struct snpu_kdims d = snpu_kdims_args(args);

	*units = snpu_kernel_units_of(kernel, d);
	*cost = snpu_kernel_costed(kernel) ?
		snpu_kernel_unit_cost(kernel, d) : 1;
}

/*
 * The work of the largest block of a launch whose arguments are otherwise
 * valid: ceil(units / block_dim) * cost per unit, computed from the
 * arguments alone, as snpu_kernel_units() computes the units from the
 * resolved launch. Saturates at U64_MAX: COLSUM's cost (its rows) has no
 * bound of its own; the other products are at most 2^32 * 2^16.
 */
static __u64 snpu_kernel_block_work(__u32 kernel, __u32 block_dim,
				    const struct snpu_kernel_arg *args)
{
	__u64 slice, cost;

	snpu_kernel_work(kernel, args, &slice, &cost);
	if (block_dim > 1)
		slice = snpu_div_round_up(slice, block_dim);
	if (cost && slice > ~0ULL / cost)
		return ~0ULL;
	return slice * cost;
}

/**
 * snpu_kernel_check() - check the arguments of a kernel launch
 * @kernel: SNPU_KERNEL_*
 * @block_dim: number of blocks
 * @args: the SNPU_KERNEL_MAX_ARGS arguments of the launch
 *
 * Checks what the uapi header documents for each kernel: which arguments
 * are buffers (bytes > 0) and which scalars (bytes 0), that unused ones
 * are zero, the sizes of the buffers against each other and the ranges of
 * the scalars, and that no block works more than SNPU_KERNEL_BLOCK_WORK_MAX
 * (its slice of the units times the cost of a unit: k for the GEMMs, ncls
 * for SOFTMAX_XENT and ARGMAX, rows for COLSUM, else 1). Never
 * dereferences an address: whether the buffers exist is for the caller to
 * check.
 *
 * Return: 0 when the launch is valid, -EINVAL otherwise.
 */
int snpu_kernel_check(__u32 kernel, __u32 block_dim,
		      const struct snpu_kernel_arg *args)
{
	const struct snpu_kernel_desc *d;
	__u64 unused = 0;
	unsigned int i;
	int ret;

	if (kernel >= SNPU_KERNEL_COUNT)
		return -EINVAL;
	if (block_dim < 1 || block_dim > SNPU_MAX_BLOCK_DIM)
		return -EINVAL;
	d = &snpu_kernel_descs[kernel];
	for (i = 0; i < d->nargs; i++) {
		if (d->buffers & (1U << i)) {
			if (!args[i].bytes)
				return -EINVAL;
			if (!(d->bytewise & (1U << i)) && args[i].value & 3)
				return -EINVAL;
		} else if (args[i].bytes) {
			return -EINVAL;
		}
	}
	/* The unused ones, without a branch each. */
	for (; i < SNPU_KERNEL_MAX_ARGS; i++)
		unused |= args[i].value | args[i].bytes;
	if (unused)
		return -EINVAL;
	/* Without arguments (NOP): no value to check and no work. */
	if (!d->nargs)
		return 0;
	ret = snpu_kernel_check_values(kernel, block_dim, args);
	if (ret)
		return ret;
	if (snpu_kernel_block_work(kernel, block_dim, args) >
	    SNPU_KERNEL_BLOCK_WORK_MAX)
		return -EINVAL;
	return 0;
}

/**
 * snpu_kernel_is_buffer() - is an argument of a kernel a buffer
 * @kernel: SNPU_KERNEL_*
 * @arg: index of the argument
 *
 * Return: true when argument @arg of @kernel is a buffer; false when it is
 * a scalar, unused, or @kernel is unknown.
 */
bool snpu_kernel_is_buffer(__u32 kernel, unsigned int arg)
{
	if (arg >= SNPU_KERNEL_MAX_ARGS)
		return false;
	return snpu_kernel_buffers(kernel) & (1U << arg);
}

/**
 * snpu_kernel_words() - which buffers of a kernel hold 32-bit elements
 * @kernel: SNPU_KERNEL_*
 *
 * Return: bit i set when argument i is a buffer of 32-bit elements, which
 * must be 4-byte aligned; 0 for an unknown kernel.
 */
__u32 snpu_kernel_words(__u32 kernel)
{
	if (kernel >= SNPU_KERNEL_COUNT)
		return 0;
	return snpu_kernel_descs[kernel].buffers &
	       ~snpu_kernel_descs[kernel].bytewise;
}

/**
 * snpu_kernel_writes() - which buffers a kernel writes
 * @kernel: SNPU_KERNEL_*
 *
 * Return: bit i set when the kernel writes buffer argument i (it may read
 * it too); the other buffers are only read. 0 for an unknown kernel.
 */
__u32 snpu_kernel_writes(__u32 kernel)
{
	if (kernel >= SNPU_KERNEL_COUNT)
		return 0;
	return snpu_kernel_descs[kernel].writes;
}

/**
 * snpu_kernel_buffers() - which arguments of a kernel are buffers
 * @kernel: SNPU_KERNEL_*
 *
 * Return: a mask with bit i set when argument i is a buffer; 0 for an
 * unknown kernel.
 */
__u32 snpu_kernel_buffers(__u32 kernel)
{
	if (kernel >= SNPU_KERNEL_COUNT)
		return 0;
	return snpu_kernel_descs[kernel].buffers;
}

/**
 * snpu_kernel_uses_fpu() - does a kernel compute in floating point
 * @kernel: SNPU_KERNEL_*
 *
 * Return: true when snpu_kernel_run() of @kernel must be called with the
 * FPU held (kernel_fpu_begin()); false otherwise or for an unknown kernel.
 */
bool snpu_kernel_uses_fpu(__u32 kernel)
{
	if (kernel >= SNPU_KERNEL_COUNT)
		return false;
	return snpu_kernel_descs[kernel].fpu;
}

/**
 * snpu_kernel_units() - number of units a launch slices among its blocks
 * @l: a launch snpu_kernel_check() accepted
 *
 * Units are bytes of the source for COPY and CRC32C, elements of the
 * output for FILL, ADD, MUL, AXPY, RELU, the GEMMs (m * n), BIAS_ADD,
 * RELU_BWD and AFFINE, elements of the input for REDUCE_SUM and COUNT_EQ,
 * rows of the input for SOFTMAX_XENT and ARGMAX, columns for COLSUM.
 *
 * Return: the number of units, 0 for NOP, SPIN, FAIL and unknown kernels.
 */
__u64 snpu_kernel_units(const struct snpu_klaunch *l)
{
	return snpu_kernel_units_of(l->kernel, snpu_kdims_launch(l));
}

/**
 * snpu_kernel_steps() - the steps a launch's blocks run
 * @l: a launch snpu_kernel_check() accepted
 *
 * What the cores count in, and what the positions given to
 * snpu_kernel_run() are: the units (snpu_kernel_units()), except for a
 * COLSUM whose columns have more than SNPU_KERNEL_CHUNK_WORK rows, whose
 * columns are cut into pieces of SNPU_KERNEL_CHUNK rows: n * pieces
 * steps. Blocks still get whole columns (snpu_kernel_slice()).
 *
 * Return: the number of steps, 0 for NOP, SPIN, FAIL and unknown kernels.
 */
__u64 snpu_kernel_steps(const struct snpu_klaunch *l)
{
	return snpu_kernel_steps_of(l->kernel, snpu_kdims_launch(l));
}

static __u64 snpu_kernel_units_of(__u32 kernel, struct snpu_kdims d)
{
	switch (kernel) {
	case SNPU_KERNEL_COPY:
	case SNPU_KERNEL_CRC32C:
		return snpu_b(d, 1);
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
		return snpu_b(d, 0) / 4;
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		return snpu_s(d, 3) * snpu_s(d, 4);
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_COUNT_EQ_I32:
		return snpu_b(d, 1) / 4;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		return snpu_div64(snpu_b(d, 2) / 4, snpu_s(d, 4));
	case SNPU_KERNEL_ARGMAX_F32:
		return snpu_div64(snpu_b(d, 1) / 4, snpu_s(d, 2));
	case SNPU_KERNEL_COLSUM_F32:
		return snpu_s(d, 2);
	default:
		return 0;
	}
}

/**
 * snpu_kernel_split() - the units one block of @units works on
 * @units: units of the launch (snpu_kernel_units())
 * @block_dim: number of blocks
 * @block: the block, below @block_dim
 * @begin: out: first unit of the block's slice
 * @end: out: one past its last unit
 *
 * With n units and B blocks, c = ceil(n / B) and block b takes [min(n,
 * b * c), min(n, b * c + c)). A slice may be empty (n < B); a block past
 * the last gets the empty slice [n, n).
 */
void snpu_kernel_split(__u64 units, __u32 block_dim, __u32 block,
		       __u64 *begin, __u64 *end)
{
	__u64 n = units;
	__u64 c, b;

	if (!block_dim || block >= block_dim) {
		*begin = n;
		*end = n;
		return;
	}
	if (block_dim == 1) {
		*begin = 0;
		*end = n;
		return;
	}
	c = snpu_div_round_up(n, block_dim);
	/* block < B, so block * c <= n + B: no overflow for any real n. */
	b = (__u64)block * c;
	if (b > n)
		b = n;
	*begin = b;
	*end = n - b < c ? n : b + c;
}

/**
 * snpu_kernel_split_steps() - the steps one block of a launch works on
 * @l: a launch snpu_kernel_check() accepted
 * @steps: snpu_kernel_steps() of @l
 * @block: the block, below @l->block_dim
 * @begin: out: first step of the block's slice
 * @end: out: one past its last step
 *
 * snpu_kernel_split() of the launch's units, in steps: a COLSUM whose
 * columns are in P pieces gets [P * b, P * e) for the columns [b, e)
 * (its steps are @steps / n), every other launch the units themselves. A
 * block past the last gets the empty slice [@steps, @steps).
 */
void snpu_kernel_split_steps(const struct snpu_klaunch *l, __u64 steps,
			     __u32 block, __u64 *begin, __u64 *end)
{
	__u32 n = (__u32)l->scalar[2], rem;
	__u64 pieces, b, e;

	if (l->kernel != SNPU_KERNEL_COLSUM_F32) {
		snpu_kernel_split(steps, l->block_dim, block, begin, end);
		return;
	}
	pieces = n ? snpu_div_rem(steps, n, &rem) : 1;
	snpu_kernel_split(n, l->block_dim, block, &b, &e);
	*begin = b * pieces;
	*end = e * pieces;
}

/**
 * snpu_kernel_slice() - the steps one block of a launch works on
 * @l: a launch snpu_kernel_check() accepted
 * @block: the block, below @l->block_dim
 * @begin: out: first step of the block's slice
 * @end: out: one past its last step
 *
 * snpu_kernel_split_steps() of the launch's steps: the block's slice of
 * the units (snpu_kernel_split()), in the steps snpu_kernel_run() takes.
 */
void snpu_kernel_slice(const struct snpu_klaunch *l, __u32 block,
		       __u64 *begin, __u64 *end)
{
	snpu_kernel_split_steps(l, snpu_kernel_steps(l), block, begin, end);
}

/* CRC-32C, reflected polynomial 0x82f63b78: the register after each byte. */
static const __u32 snpu_crc32c_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4,
	0xc79a971f, 0x35f1141c, 0x26a1e7e8, 0xd4ca64eb,
	0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24,
	0x105ec76f, 0xe235446c, 0xf165b798, 0x030e349b,
	0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54,
	0x5d1d08bf, 0xaf768bbc, 0xbc267848, 0x4e4dfb4b,
	0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35,
	0xaa64d611, 0x580f5512, 0x4b5fa6e6, 0xb93425e5,
	0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45,
	0xf779deae, 0x05125dad, 0x1642ae59, 0xe4292d5a,
	0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595,
	0x417b1dbc, 0xb3109ebf, 0xa0406d4b, 0x522bee48,
	0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687,
	0x0c38d26c, 0xfe53516f, 0xed03a29b, 0x1f682198,
	0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38,
	0xdbfc821c, 0x2997011f, 0x3ac7f2eb, 0xc8ac71e8,
	0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096,
	0xa65c047d, 0x5437877e, 0x4767748a, 0xb50cf789,
	0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46,
	0x7198540d, 0x83f3d70e, 0x90a324fa, 0x62c8a7f9,
	0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36,
	0x3cdb9bdd, 0xceb018de, 0xdde0eb2a, 0x2f8b6829,
	0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93,
	0x082f63b7, 0xfa44e0b4, 0xe9141340, 0x1b7f9043,
	0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3,
	0x55326b08, 0xa759e80b, 0xb4091bff, 0x466298fc,
	0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033,
	0xa24bb5a6, 0x502036a5, 0x4370c551, 0xb11b4652,
	0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d,
	0xef087a76, 0x1d63f975, 0x0e330a81, 0xfc588982,
	0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622,
	0x38cc2a06, 0xcaa7a905, 0xd9f75af1, 0x2b9cd9f2,
	0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530,
	0x0417b1db, 0xf67c32d8, 0xe52cc12c, 0x1747422f,
	0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0,
	0xd3d3e1ab, 0x21b862a8, 0x32e8915c, 0xc083125f,
	0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90,
	0x9e902e7b, 0x6cfbad78, 0x7fab5e8c, 0x8dc0dd8f,
	0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1,
	0x69e9f0d5, 0x9b8273d6, 0x88d28022, 0x7ab90321,
	0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81,
	0x34f4f86a, 0xc69f7b69, 0xd5cf889d, 0x27a40b9e,
	0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

/**
 * snpu_crc32c() - update a CRC-32C (Castagnoli) register with bytes
 * @crc: the register before @buf
 * @buf: the bytes
 * @len: number of bytes
 *
 * Reflected polynomial 0x82f63b78, one byte at a time by table. No initial
 * or final xor is done here: the crc32c of a message is
 * snpu_crc32c(~0, msg, len) ^ ~0.
 *
 * Return: the register after @buf.
 */
__u32 snpu_crc32c(__u32 crc, const void *buf, __u64 len)
{
	const __u8 *p = buf;

	while (len--)
		crc = snpu_crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * COLSUM's steps [begin, end) of a block's slice [slice_begin, slice_end):
 * the slice is its columns [c0, c0 + w) times the pieces of a column, in
 * the order piece 0 of every column, piece 1 of every column, and so on,
 * so that a chunk sums a piece of rows for a run of columns (vectors
 * across the columns), starting from the sums the pieces before left in
 * out[]. Each column's rows are still added from row 0 up, one after the
 * other.
 */
static void snpu_colsum_exec(const struct snpu_klaunch *l, __u64 slice_begin,
			     __u64 slice_end, __u64 begin, __u64 end)
{
	__u64 rows = snpu_kernel_unit_cost(l->kernel, snpu_kdims_launch(l));
	__u64 seg, pieces, c0, t, t1, piece, r0, r1;
	__u32 n = (__u32)l->scalar[2], w, j, len, rem;

	if (begin == end)
		return;
	pieces = snpu_colsum_pieces(rows, &seg);
	if (pieces == 1) {
		snpu_f32->colsum(l->buf[0], l->buf[1], n, 0, rows, begin, end,
				 true);
		return;
	}
	/* pieces <= 4096 (rows <= 2^24) and w <= n: 32-bit divisors. */
	c0 = snpu_div_rem(slice_begin, (__u32)pieces, &rem);
	w = (__u32)snpu_div_rem(slice_end - slice_begin, (__u32)pieces, &rem);
	t = begin - slice_begin;
	t1 = end - slice_begin;
	while (t < t1) {
		piece = snpu_div_rem(t, w, &j);
		len = w - j;
		if (len > t1 - t)
			len = (__u32)(t1 - t);
		r0 = piece * seg;
		r1 = r0 + seg < rows ? r0 + seg : rows;
		snpu_f32->colsum(l->buf[0], l->buf[1], n, r0, r1, c0 + j,
				 c0 + j + len, !piece);
		t += len;
	}
}

/* The int and byte kernels of one chunk; f32 ones go to kernels_f32.c. */
/**
 * snpu_kernel_exec() - snpu_kernel_run() without its checks
 * @l: a launch snpu_kernel_check() accepted, of a kernel that computes
 *     (not NOP, SPIN or FAIL)
 * @block: as for snpu_kernel_run()
 * @slice_begin: as for snpu_kernel_run()
 * @slice_end: as for snpu_kernel_run()
 * @begin: as for snpu_kernel_run()
 * @end: as for snpu_kernel_run()
 *
 * For a caller that got the slice from snpu_kernel_split() of the
 * launch's units and cuts it into chunks in order, as a core does: the
 * arguments are then what snpu_kernel_run() checks, and nothing is
 * checked again per chunk.
 *
 * Return: 0, or -EDOM as snpu_kernel_run().
 */
int snpu_kernel_exec(const struct snpu_klaunch *l, __u32 block,
		     __u64 slice_begin, __u64 slice_end,
		     __u64 begin, __u64 end)
{
	__u32 *u32buf = l->buf[0];
	const __u32 *x = l->buf[1];
	const __u32 *y = l->buf[2];
	const struct snpu_f32_ops *f32 = snpu_f32;
	__u64 i;
	__u32 row_rem, sum;
	__u64 row;
	__u32 n;

	switch (l->kernel) {
	case SNPU_KERNEL_COPY:
		memmove((__u8 *)l->buf[0] + begin,
			(const __u8 *)l->buf[1] + begin, end - begin);
		break;
	case SNPU_KERNEL_FILL:
		snpu_fill32(u32buf + begin, (__u32)l->scalar[1], end - begin);
		break;
	case SNPU_KERNEL_ADD_I32:
		for (i = begin; i < end; i++)
			u32buf[i] = x[i] + y[i];
		break;
	case SNPU_KERNEL_MUL_I32:
		for (i = begin; i < end; i++)
			u32buf[i] = x[i] * y[i];
		break;
	case SNPU_KERNEL_ADD_F32:
		f32->add(l->buf[0], l->buf[1], l->buf[2], begin, end);
		break;
	case SNPU_KERNEL_MUL_F32:
		f32->mul(l->buf[0], l->buf[1], l->buf[2], begin, end);
		break;
	case SNPU_KERNEL_AXPY_F32:
		f32->axpy(l->buf[0], l->buf[1], (__u32)l->scalar[2], begin, end);
		break;
	case SNPU_KERNEL_RELU_F32:
		f32->relu(l->buf[0], l->buf[1], begin, end);
		break;
	case SNPU_KERNEL_GEMM_F32:
	case SNPU_KERNEL_GEMM_TN_F32:
	case SNPU_KERNEL_GEMM_NT_F32:
		n = (__u32)l->scalar[4];
		row = snpu_div_rem(begin, n, &row_rem);
		f32->gemm(l->buf[0], l->buf[1], l->buf[2], (__u32)l->scalar[3],
			  n, (__u32)l->scalar[5],
			  l->kernel == SNPU_KERNEL_GEMM_F32 ? SNPU_GEMM_NN :
			  l->kernel == SNPU_KERNEL_GEMM_TN_F32 ? SNPU_GEMM_TN :
			  SNPU_GEMM_NT, row, row_rem, end - begin);
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
		sum = begin == slice_begin ? 0 : u32buf[block];
		for (i = begin; i < end; i++)
			sum += x[i];
		u32buf[block] = sum;
		break;
	case SNPU_KERNEL_REDUCE_SUM_F32:
		/* The bits of +0.0f are 0. */
		if (begin == slice_begin)
			u32buf[block] = 0;
		snpu_f32_sum(&u32buf[block], l->buf[1], begin, end);
		break;
	case SNPU_KERNEL_CRC32C:
		if (begin == slice_begin)
			u32buf[block] = ~0U;
		u32buf[block] = snpu_crc32c(u32buf[block],
					    (const __u8 *)l->buf[1] + begin,
					    end - begin);
		if (end == slice_end)
			u32buf[block] ^= ~0U;
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:
		n = (__u32)l->scalar[3];
		snpu_div_rem(begin, n, &row_rem);
		f32->bias_add(l->buf[0], l->buf[1], l->buf[2], n, row_rem,
			      begin, end);
		break;
	case SNPU_KERNEL_RELU_BWD_F32:
		f32->relu_bwd(l->buf[0], l->buf[1], l->buf[2], begin, end);
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		return f32->softmax_xent(l->buf[0], l->buf[1], l->buf[2],
					 l->buf[3], (__u32)l->scalar[4],
					 (__u32)l->scalar[5], begin, end);
	case SNPU_KERNEL_COLSUM_F32:
		snpu_colsum_exec(l, slice_begin, slice_end, begin, end);
		break;
	case SNPU_KERNEL_ARGMAX_F32:
		f32->argmax(l->buf[0], l->buf[1], (__u32)l->scalar[2], begin,
			    end);
		break;
	case SNPU_KERNEL_COUNT_EQ_I32:
		sum = begin == slice_begin ? 0 : u32buf[block];
		for (i = begin; i < end; i++)
			sum += x[i] == y[i];
		u32buf[block] = sum;
		break;
	case SNPU_KERNEL_AFFINE_F32:
		f32->affine(l->buf[0], l->buf[1], (__u32)l->scalar[2],
			    (__u32)l->scalar[3], begin, end);
		break;
	}
	return 0;
}

/**
 * snpu_kernel_run() - compute one chunk of a block's slice
 * @l: a launch snpu_kernel_check() accepted, buffers resolved
 * @block: the block, below @l->block_dim
 * @slice_begin: first step of the block's slice (snpu_kernel_slice())
 * @slice_end: one past the slice's last step
 * @begin: first step of the chunk, at least @slice_begin
 * @end: one past the chunk's last step, at most @slice_end
 *
 * Computes steps [@begin, @end) (snpu_kernel_steps(): the units, or a
 * long COLSUM's pieces of columns). A slice is covered exactly once by calls
 * in increasing order, each starting where the previous ended (the call
 * that ends at @slice_end is the last one); REDUCE_SUM, COUNT_EQ and
 * CRC32C carry their running value in out[@block] from one call to the
 * next, so the first call (@begin == @slice_begin) starts it and, for
 * CRC32C, the last (@end == @slice_end) finishes it. An empty slice takes
 * one call with @begin == @end, which writes the sum, count or crc of
 * nothing, 0, for REDUCE_SUM, COUNT_EQ and CRC32C and does nothing for the
 * other kernels. f32 kernels (snpu_kernel_uses_fpu()) must be called with
 * the FPU held. NOP, SPIN and FAIL compute nothing: the caller carries
 * them out.
 *
 * Return: 0; -EINVAL for an unknown kernel, a block out of range or a
 * chunk outside its slice or the launch's steps; -EDOM when a row of
 * SOFTMAX_XENT has a label outside [0, ncls) (the rows before it in the
 * chunk are done, it and the ones after are not).
 */
int snpu_kernel_run(const struct snpu_klaunch *l, __u32 block,
		    __u64 slice_begin, __u64 slice_end,
		    __u64 begin, __u64 end)
{
	switch (l->kernel) {
	case SNPU_KERNEL_NOP:
	case SNPU_KERNEL_SPIN:
	case SNPU_KERNEL_FAIL:
		return 0;
	default:
		break;
	}
	if (l->kernel >= SNPU_KERNEL_COUNT || block >= l->block_dim)
		return -EINVAL;
	if (slice_begin > begin || begin > end || end > slice_end ||
	    slice_end > snpu_kernel_steps(l))
		return -EINVAL;
	return snpu_kernel_exec(l, block, slice_begin, slice_end, begin, end);
}

/**
 * snpu_kernel_chunk() - steps one bounded chunk of a launch covers
 * @l: the launch
 *
 * A chunk is the work done between checks for cancellation, and for f32
 * kernels inside one FPU section (preemption off): SNPU_KERNEL_CHUNK
 * units, or for the kernels whose units cost more than 1 (the GEMMs,
 * SOFTMAX_XENT, ARGMAX, COLSUM) as many units as make
 * SNPU_KERNEL_CHUNK_WORK of their cost, at least one; a class of
 * SOFTMAX_XENT counts SNPU_KERNEL_SOFTMAX_CLASS_WORK (its exp). A unit
 * costs at most SNPU_KERNEL_CHUNK_WORK (k and ncls are at most 65536),
 * so a chunk does at most that many multiply-adds, compares or adds,
 * or 65536 classes of one SOFTMAX_XENT row; but for COLSUM, whose units
 * cost their rows: a column of more than SNPU_KERNEL_CHUNK_WORK rows is
 * cut into pieces of SNPU_KERNEL_CHUNK rows (see snpu_kernel_steps()),
 * SNPU_KERNEL_CHUNK_WORK / SNPU_KERNEL_CHUNK of them a chunk.
 *
 * Return: steps per chunk, at least 1.
 */
__u64 snpu_kernel_chunk(const struct snpu_klaunch *l)
{
	return snpu_kernel_chunk_of(l->kernel, snpu_kdims_launch(l));
}

/**
 * snpu_kernel_plan() - what running a launch needs, in one call
 * @kernel: SNPU_KERNEL_* of a launch snpu_kernel_check() accepted
 * @args: its arguments, as the task gives them
 * @units: out: snpu_kernel_steps() of the launch (its units, see there)
 * @chunk: out: snpu_kernel_chunk() of the launch
 * @fpu: out: snpu_kernel_uses_fpu() of @kernel
 *
 * Computed from the arguments, before the buffers are resolved (the steps
 * and the cost read only the bytes of buffers and the values of scalars):
 * where a launch is prepared, one call instead of four. A core splits
 * @units among the blocks with snpu_kernel_split_steps().
 *
 * Return: snpu_kernel_buffers() of @kernel.
 */
__u32 snpu_kernel_plan(__u32 kernel, const struct snpu_kernel_arg *args,
		       __u64 *units, __u64 *chunk, bool *fpu)
{
	struct snpu_kdims d = snpu_kdims_args(args);

	if (kernel >= SNPU_KERNEL_COUNT) {
		*units = 0;
		*chunk = SNPU_KERNEL_CHUNK;
		*fpu = false;
		return 0;
	}
	*units = snpu_kernel_steps_of(kernel, d);
	*chunk = snpu_kernel_chunk_of(kernel, d);
	*fpu = snpu_kernel_descs[kernel].fpu;
	return snpu_kernel_descs[kernel].buffers;
}
