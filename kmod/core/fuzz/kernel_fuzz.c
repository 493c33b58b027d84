// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: the built-in kernels of kmod/core/kernels.c, a launch at a
 * time: snpu_kernel_check(), snpu_kernel_units(), snpu_kernel_slice(),
 * snpu_kernel_chunk() and snpu_kernel_run().
 *
 * Input: kernel (4 bytes), block_dim (4), the six arguments (value and
 * bytes, 8 each), then the bytes that choose the rest: a block and chunk
 * to give snpu_kernel_run() (4 + 4 * 8), where a window of slices is
 * checked (2), and for a launch that is run a PRNG seed of the buffers'
 * contents (8) and a mode (1: f32 inputs as small integers, 2 and 4:
 * block order, 8: one SOFTMAX_XENT label out of range, 16: which one,
 * 32: the AVX2 loops when the CPU has them, else SSE2).
 *
 * Properties, each a trap when it does not hold:
 * - snpu_kernel_check() answers 0 or -EINVAL, 0 exactly when the
 *   documented rules accept the launch (ref.c); which arguments are
 *   buffers and which kernels use the FPU is as documented;
 * - snpu_kernel_run() refuses (-EINVAL, before touching a buffer) an
 *   unknown kernel, a block >= block_dim and a chunk outside its slice or
 *   the units, and returns 0 for NOP, SPIN and FAIL, whatever the chunk;
 * - for an accepted launch, of any size: the units are the documented
 *   ones and fit every buffer; the steps are the units times the
 *   documented steps of a unit (a long COLSUM column's pieces); the chunk
 *   is the documented one; the slices of blocks 0..block_dim-1 (up to
 *   4096 of them, else windows of 256 at both ends and at a chosen place)
 *   are the documented ones in steps, computed without overflow, start at
 *   0, meet one another and end at the steps, so they cover them exactly
 *   once; blocks past the last get [steps, steps); with buffers no larger
 *   than device memory, walking a slice chunk by chunk cannot wrap;
 * - for an accepted launch with small buffers: the buffers are allocated
 *   at their exact size (ASan catches one byte past), every block runs
 *   its slice in chunks exactly as kmod/sched.c does, in a chosen block
 *   order; each call returns 0 and writes only its own chunk (or its
 *   block's out element); the inputs are left unchanged; and the outputs
 *   are, bit for bit, those of a plain reference loop (f32: both NaN is a
 *   match), CRC32C against a bitwise CRC, not the table; a SOFTMAX_XENT
 *   label out of range makes the call of its chunk return -EDOM, with the
 *   rows before it done and it and the rest of its block's slice not.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "core/kernels_f32.h"

/* Largest buffer, and GEMM multiply-adds, of a launch that is run. */
#define RUN_MAX_BYTES	(64 * 1024)
#define RUN_MAX_WORK	(1 << 18)
/* Check the untouched bytes after each call while this stays cheap. */
#define RUN_MAX_FENCE	(4 * 1024 * 1024)

struct launch {
	__u32 kernel;
	__u32 block_dim;
	struct snpu_kernel_arg a[SNPU_KERNEL_MAX_ARGS];
};

static __u64 prng(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void build(const struct launch *ln, struct snpu_klaunch *l)
{
	unsigned int i;

	memset(l, 0, sizeof(*l));
	l->kernel = ln->kernel;
	l->block_dim = ln->block_dim;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		if (snpu_kernel_is_buffer(ln->kernel, i))
			l->bytes[i] = ln->a[i].bytes;
		else
			l->scalar[i] = ln->a[i].value;
	}
}

static bool no_compute(__u32 kernel)
{
	return kernel == SNPU_KERNEL_NOP || kernel == SNPU_KERNEL_SPIN ||
	       kernel == SNPU_KERNEL_FAIL;
}

/*
 * snpu_kernel_run() with a chosen chunk and, for buffers, one byte each:
 * a chunk it must refuse is refused before any buffer is touched (ASan
 * reports the first byte past, the property an empty chunk accepted).
 */
static void check_run_refusals(const struct launch *ln, struct fuzz_in *in)
{
	struct snpu_klaunch l;
	__u32 block = (__u32)fuzz_take(in, 4);
	__u64 sb = fuzz_take(in, 8), se = fuzz_take(in, 8);
	__u64 b = fuzz_take(in, 8), e = fuzz_take(in, 8);
	__u64 n;
	unsigned int i;
	bool fine;
	int ret;

	build(ln, &l);
	/* The steps (wrapping, as the kernel's, for absurd arguments). */
	n = ref_units(ln->kernel, ln->a) * ref_unit_steps(ln->kernel, ln->a);
	fine = ln->kernel < SNPU_KERNEL_COUNT && block < ln->block_dim &&
	       sb <= b && b <= e && e <= se && se <= n;
	if (fine && !no_compute(ln->kernel))
		return;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		l.buf[i] = malloc(1);
		FUZZ_CHECK(l.buf[i], "out of memory");
	}
	ret = snpu_kernel_run(&l, block, sb, se, b, e);
	if (no_compute(ln->kernel))
		FUZZ_CHECK(ret == 0, "kernel %u ret %d", ln->kernel, ret);
	else
		FUZZ_CHECK(ret == -EINVAL, "kernel %u block %u [%llu, %llu) of [%llu, %llu) n %llu ret %d",
			   ln->kernel, block, (unsigned long long)b,
			   (unsigned long long)e, (unsigned long long)sb,
			   (unsigned long long)se, (unsigned long long)n, ret);
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
		free(l.buf[i]);
}

/*
 * Blocks whose slices are compared: all of them up to SLICE_ALL blocks;
 * past that the first and last SLICE_WINDOW and a window at a chosen
 * place (every block costs a division, which would slow the target down
 * for every large launch).
 */
#define SLICE_ALL	4096
#define SLICE_WINDOW	256

static void check_slices(const struct snpu_klaunch *l, __u64 n, __u64 per,
			 __u32 at)
{
	__u32 bd = l->block_dim, from[3], to[3], blk, next = 0;
	__u64 c = ref_slice_max(n, bd), b, e, rb, re, prev = 0;
	unsigned int r, nr = 0;

	if (bd <= SLICE_ALL) {
		from[nr] = 0;
		to[nr++] = bd;
	} else {
		at %= bd;
		from[nr] = 0;
		to[nr++] = SLICE_WINDOW;
		if (at < bd - SLICE_WINDOW) {
			from[nr] = at;
			to[nr++] = at + SLICE_WINDOW < bd - SLICE_WINDOW ?
				   at + SLICE_WINDOW : bd - SLICE_WINDOW;
		}
		from[nr] = bd - SLICE_WINDOW;
		to[nr++] = bd;
	}
	for (r = 0; r < nr; r++) {
		for (blk = from[r] > next ? from[r] : next; blk < to[r]; blk++) {
			/* After a gap, the documented end of the block before. */
			if (blk != next) {
				ref_slice(n, c, blk - 1, &rb, &prev);
				prev *= per;
			}
			snpu_kernel_slice(l, blk, &b, &e);
			ref_slice(n, c, blk, &rb, &re);
			rb *= per;
			re *= per;
			FUZZ_CHECK(b == rb && e == re,
				   "block %u of %u, n %llu: [%llu, %llu), documented [%llu, %llu)",
				   blk, bd, (unsigned long long)n,
				   (unsigned long long)b, (unsigned long long)e,
				   (unsigned long long)rb, (unsigned long long)re);
			FUZZ_CHECK(b == prev && b <= e && e <= n * per &&
				   e - b <= c * per,
				   "block %u: [%llu, %llu) after %llu, n %llu",
				   blk, (unsigned long long)b,
				   (unsigned long long)e,
				   (unsigned long long)prev,
				   (unsigned long long)n);
			prev = e;
			next = blk + 1;
		}
	}
	FUZZ_CHECK(next == bd && prev == n * per,
		   "slices end at %llu, not %llu", (unsigned long long)prev,
		   (unsigned long long)(n * per));
	snpu_kernel_slice(l, bd, &b, &e);
	FUZZ_CHECK(b == n * per && e == n * per, "block past the last");
	snpu_kernel_slice(l, 0xffffffffU, &b, &e);
	FUZZ_CHECK(b == n * per && e == n * per, "block ~0");
}

static void check_math(const struct launch *ln, const struct snpu_klaunch *l,
		       struct fuzz_in *in)
{
	__u64 n = snpu_kernel_units(l), chunk = snpu_kernel_chunk(l), max = 0;
	__u64 per = ref_unit_steps(ln->kernel, ln->a);
	unsigned int i;

	FUZZ_CHECK(ref_extents_ok(ln->kernel, ln->block_dim, ln->a, n),
		   "kernel %u units %llu", ln->kernel, (unsigned long long)n);
	FUZZ_CHECK(snpu_kernel_steps(l) == n * per, "kernel %u steps %llu",
		   ln->kernel, (unsigned long long)snpu_kernel_steps(l));
	FUZZ_CHECK(chunk == ref_chunk(ln->kernel, ln->a), "chunk %llu",
		   (unsigned long long)chunk);
	FUZZ_CHECK(chunk >= 1, "chunk 0");

	check_slices(l, n, per, (__u32)fuzz_take(in, 2));
	n *= per;

	/*
	 * kmod/sched.c ends a chunk at min(end, pos + chunk) with pos < end
	 * <= n: that sum must not wrap for any buffer that can exist.
	 */
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
		if (l->bytes[i] > max)
			max = l->bytes[i];
	if (max <= FUZZ_MAX_DEV_BYTES)
		FUZZ_CHECK(n + chunk > n, "n %llu chunk %llu wraps",
			   (unsigned long long)n, (unsigned long long)chunk);
}

/* Bitwise CRC-32C (reflected 0x82f63b78), initial and final xor ~0. */
static __u32 ref_crc32c(const __u8 *p, __u64 len)
{
	__u32 crc = ~0U;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return ~crc;
}

static float f32(const void *buf, __u64 i)
{
	float f;

	memcpy(&f, (const __u8 *)buf + 4 * i, 4);
	return f;
}

static void put32(void *buf, __u64 i, const void *v)
{
	memcpy((__u8 *)buf + 4 * i, v, 4);
}

static __u32 u32(const void *buf, __u64 i)
{
	__u32 v;

	memcpy(&v, (const __u8 *)buf + 4 * i, 4);
	return v;
}

/* SOFTMAX_XENT_F32 of row @r as documented, with the core's exp and log. */
static void ref_softmax_row(const struct snpu_klaunch *l, void *const *in,
			    void *loss, void *dl, __u64 r)
{
	__u64 nc = l->scalar[4], j;
	float mx = f32(in[2], r * nc), s = 0.0f, e, x, sc, xt;
	__u32 k32 = (__u32)l->scalar[5], t = u32(in[3], r);

	/* A row with a bad label is not computed (see run()). */
	if (t >= nc)
		return;
	memcpy(&sc, &k32, 4);
	for (j = 1; j < nc; j++)
		if (f32(in[2], r * nc + j) > mx)
			mx = f32(in[2], r * nc + j);
	xt = f32(in[2], r * nc + t);
	for (j = 0; j < nc; j++) {
		x = f32(in[2], r * nc + j) - mx;
		memcpy(&k32, &x, 4);
		k32 = snpu_f32_exp_bits(k32);
		memcpy(&e, &k32, 4);
		put32(dl, r * nc + j, &e);
		s += e;
	}
	memcpy(&k32, &s, 4);
	k32 = snpu_f32_log_bits(k32);
	memcpy(&x, &k32, 4);
	x = x - (xt - mx);
	put32(loss, r, &x);
	for (j = 0; j < nc; j++) {
		e = (f32(dl, r * nc + j) / s - (j == t ? 1.0f : 0.0f)) * sc;
		put32(dl, r * nc + j, &e);
	}
}

/*
 * What the launch must leave in its first buffer, from the inputs, and
 * for SOFTMAX_XENT_F32 in its second (@out1).
 */
static void reference(const struct snpu_klaunch *l, void *const *in, void *out,
		      void *out1)
{
	__u64 n = snpu_kernel_units(l), c, i, b, e, kk, m, nn, k, r;
	__u32 blk, v, k32, best;
	float f, a, bb;

	for (i = 0; i < n; i++) {
		switch (l->kernel) {
		case SNPU_KERNEL_COPY:
			((__u8 *)out)[i] = ((const __u8 *)in[1])[i];
			break;
		case SNPU_KERNEL_FILL:
			v = (__u32)l->scalar[1];
			put32(out, i, &v);
			break;
		case SNPU_KERNEL_ADD_I32:
			v = u32(in[1], i) + u32(in[2], i);
			put32(out, i, &v);
			break;
		case SNPU_KERNEL_MUL_I32:
			v = u32(in[1], i) * u32(in[2], i);
			put32(out, i, &v);
			break;
		case SNPU_KERNEL_ADD_F32:
			f = f32(in[1], i) + f32(in[2], i);
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_MUL_F32:
			f = f32(in[1], i) * f32(in[2], i);
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_AXPY_F32:
			k32 = (__u32)l->scalar[2];
			memcpy(&a, &k32, 4);
			f = a * f32(in[1], i);
			f = f32(in[0], i) + f;
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_RELU_F32:
			f = f32(in[1], i) > 0.0f ? f32(in[1], i) : 0.0f;
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_GEMM_F32:
			/* Element i is row i / n, column i % n, summed from 0. */
			f = 0.0f;
			for (kk = 0; kk < l->scalar[5]; kk++)
				f += f32(in[1], i / l->scalar[4] * l->scalar[5] + kk) *
				     f32(in[2], kk * l->scalar[4] + i % l->scalar[4]);
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_GEMM_TN_F32:
		case SNPU_KERNEL_GEMM_NT_F32:
			/* c[i / n][i % n]; a is k x m (TN) or m x k (NT). */
			m = l->scalar[3];
			nn = l->scalar[4];
			k = l->scalar[5];
			f = 0.0f;
			for (kk = 0; kk < k; kk++) {
				if (l->kernel == SNPU_KERNEL_GEMM_TN_F32)
					f += f32(in[1], kk * m + i / nn) *
					     f32(in[2], kk * nn + i % nn);
				else
					f += f32(in[1], i / nn * k + kk) *
					     f32(in[2], i % nn * k + kk);
			}
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_BIAS_ADD_F32:
			f = f32(in[1], i) + f32(in[2], i % l->scalar[3]);
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_RELU_BWD_F32:
			f = f32(in[2], i) > 0.0f ? f32(in[1], i) : 0.0f;
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_SOFTMAX_XENT_F32:
			ref_softmax_row(l, in, out, out1, i);
			break;
		case SNPU_KERNEL_COLSUM_F32:
			/* Column i over every row, from row 0. */
			nn = l->scalar[2];
			f = 0.0f;
			for (r = 0; r < l->bytes[1] / 4 / nn; r++)
				f += f32(in[1], r * nn + i);
			put32(out, i, &f);
			break;
		case SNPU_KERNEL_ARGMAX_F32:
			nn = l->scalar[2];
			best = 0;
			for (kk = 1; kk < nn; kk++)
				if (f32(in[1], i * nn + kk) >
				    f32(in[1], i * nn + best))
					best = (__u32)kk;
			put32(out, i, &best);
			break;
		case SNPU_KERNEL_AFFINE_F32:
			k32 = (__u32)l->scalar[2];
			memcpy(&a, &k32, 4);
			k32 = (__u32)l->scalar[3];
			memcpy(&bb, &k32, 4);
			f = a * f32(in[1], i);
			f = f + bb;
			put32(out, i, &f);
			break;
		}
	}
	c = ref_slice_max(n, l->block_dim);
	for (blk = 0; blk < l->block_dim; blk++) {
		ref_slice(n, c, blk, &b, &e);
		switch (l->kernel) {
		case SNPU_KERNEL_REDUCE_SUM_I32:
			for (v = 0, i = b; i < e; i++)
				v += u32(in[1], i);
			put32(out, blk, &v);
			break;
		case SNPU_KERNEL_REDUCE_SUM_F32:
			for (f = 0.0f, i = b; i < e; i++)
				f += f32(in[1], i);
			put32(out, blk, &f);
			break;
		case SNPU_KERNEL_CRC32C:
			v = ref_crc32c((const __u8 *)in[1] + b, e - b);
			put32(out, blk, &v);
			break;
		case SNPU_KERNEL_COUNT_EQ_I32:
			for (v = 0, i = b; i < e; i++)
				v += u32(in[1], i) == u32(in[2], i);
			put32(out, blk, &v);
			break;
		}
	}
}

/* Bytes [from, to) of the first buffer one call may write. */
static void write_range(const struct snpu_klaunch *l, __u32 blk, __u64 b,
			__u64 e, __u64 *from, __u64 *to)
{
	switch (l->kernel) {
	case SNPU_KERNEL_COPY:
		*from = b;
		*to = e;
		break;
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_CRC32C:
	case SNPU_KERNEL_COUNT_EQ_I32:
		*from = 4ULL * blk;
		*to = *from + 4;
		break;
	default:
		*from = 4 * b;
		*to = 4 * e;
		break;
	}
}

static bool same_outside(const __u8 *x, const __u8 *y, __u64 size,
			 __u64 from, __u64 to)
{
	return !memcmp(x, y, from) && !memcmp(x + to, y + to, size - to);
}

/* Buffer @a of the launch against @want, bit for bit (f32: NaN = NaN). */
static void compare(const struct snpu_klaunch *l, unsigned int a,
		    const __u8 *want, __u64 n, __u64 chunk)
{
	bool f32k = snpu_kernel_uses_fpu(l->kernel);
	__u64 size = l->bytes[a], i;

	for (i = 0; i < size; i += 4) {
		__u64 len = size - i < 4 ? size - i : 4;
		float x, y;

		if (!memcmp(want + i, (__u8 *)l->buf[a] + i, len))
			continue;
		if (f32k && len == 4) {
			memcpy(&x, want + i, 4);
			memcpy(&y, (__u8 *)l->buf[a] + i, 4);
			if (x != x && y != y)
				continue;
		}
		FUZZ_CHECK(0, "kernel %u: byte %llu of %llu of buffer %u differs from the reference (n %llu, %u blocks, chunk %llu)",
			   l->kernel, (unsigned long long)i,
			   (unsigned long long)size, a, (unsigned long long)n,
			   l->block_dim, (unsigned long long)chunk);
	}
}

static void run(const struct launch *ln, struct snpu_klaunch *l,
		struct fuzz_in *in)
{
	void *init[SNPU_KERNEL_MAX_ARGS] = { NULL };
	__u64 seed = fuzz_take(in, 8), mode = fuzz_take(in, 1);
	__u64 n = snpu_kernel_steps(l), chunk = snpu_kernel_chunk(l);
	__u64 size0 = l->bytes[0], calls = 0, i, b, e, pos, stop, from, to;
	__u64 bad = ~0ULL, want_calls;
	__u32 *order, blk, j, t, writes = ref_writes(l->kernel);
	__u8 *want, *want1 = NULL, *fence = NULL;
	unsigned int a;
	bool f32k = snpu_kernel_uses_fpu(l->kernel);
	int ret, want_ret;

	/* Each buffer at its exact size, so that ASan sees one byte past. */
	for (a = 0; a < SNPU_KERNEL_MAX_ARGS; a++) {
		if (!l->bytes[a])
			continue;
		l->buf[a] = malloc(l->bytes[a]);
		init[a] = malloc(l->bytes[a]);
		FUZZ_CHECK(l->buf[a] && init[a], "out of memory");
		for (i = 0; i < l->bytes[a]; i++) {
			__u64 r = prng(&seed);

			/* Mode 1: small integral floats, no NaN to hide in. */
			if (mode & 1 && f32k && i % 4 == 0 &&
			    i + 4 <= l->bytes[a]) {
				float f = (float)((int)(r % 17) - 8);

				memcpy((__u8 *)l->buf[a] + i, &f, 4);
				i += 3;
				continue;
			}
			((__u8 *)l->buf[a])[i] = (__u8)r;
		}
		/*
		 * SOFTMAX_XENT's labels in [0, ncls), but with mode 8 one row's
		 * out of range: its block must stop there with -EDOM.
		 */
		if (l->kernel == SNPU_KERNEL_SOFTMAX_XENT_F32 && a == 3) {
			for (i = 0; i < l->bytes[3] / 4; i++) {
				t = (__u32)(prng(&seed) % l->scalar[4]);
				put32(l->buf[3], i, &t);
			}
			if (mode & 8 && n) {
				bad = prng(&seed) % n;
				t = mode & 16 ? (__u32)l->scalar[4] : ~0U;
				put32(l->buf[3], bad, &t);
			}
		}
		memcpy(init[a], l->buf[a], l->bytes[a]);
	}
	want = malloc(size0);
	FUZZ_CHECK(want, "out of memory");
	memcpy(want, init[0], size0);
	if (writes & 2) {
		want1 = malloc(l->bytes[1]);
		FUZZ_CHECK(want1, "out of memory");
		memcpy(want1, init[1], l->bytes[1]);
	}
	reference(l, init, want, want1);
	if (bad != ~0ULL) {
		/* The bad row and the rest of its block's slice: untouched. */
		__u64 nc = l->scalar[4];

		ref_slice(n, ref_slice_max(n, l->block_dim),
			  (__u32)(bad / ref_slice_max(n, l->block_dim)), &b, &e);
		memcpy(want + 4 * bad, (__u8 *)init[0] + 4 * bad,
		       4 * (e - bad));
		memcpy(want1 + 4 * bad * nc, (__u8 *)init[1] + 4 * bad * nc,
		       4 * (e - bad) * nc);
	}

	/* Blocks in order, reversed or shuffled; chunks always in order. */
	order = malloc(sizeof(*order) * l->block_dim);
	FUZZ_CHECK(order, "out of memory");
	for (blk = 0; blk < l->block_dim; blk++)
		order[blk] = mode & 2 ? l->block_dim - 1 - blk : blk;
	if (mode & 4) {
		for (blk = l->block_dim - 1; blk > 0; blk--) {
			j = (__u32)(prng(&seed) % (blk + 1));
			t = order[blk];
			order[blk] = order[j];
			order[j] = t;
		}
	}
	if ((__u64)size0 * (l->block_dim + n / chunk + 1) <= RUN_MAX_FENCE)
		fence = malloc(size0);

	if (mode & 32 && __builtin_cpu_supports("avx2"))
		FUZZ_CHECK(!snpu_kernel_set_isa(SNPU_ISA_AVX2), "avx2");
	for (j = 0; j < l->block_dim; j++) {
		blk = order[j];
		snpu_kernel_slice(l, blk, &b, &e);
		pos = b;
		calls = 0;
		want_ret = 0;
		/* The loop of snpu_run_block() in kmod/sched.c. */
		do {
			stop = pos + chunk < e ? pos + chunk : e;
			if (fence)
				memcpy(fence, l->buf[0], size0);
			ret = snpu_kernel_run(l, blk, b, e, pos, stop);
			want_ret = bad >= pos && bad < stop ? -EDOM : 0;
			FUZZ_CHECK(ret == want_ret,
				   "block %u [%llu, %llu) ret %d", blk,
				   (unsigned long long)pos,
				   (unsigned long long)stop, ret);
			if (fence && ret) {
				/* Rows before the bad one only. */
				write_range(l, blk, pos, bad, &from, &to);
				FUZZ_CHECK(same_outside(fence, l->buf[0], size0,
							from, to),
					   "block %u wrote past row %llu",
					   blk, (unsigned long long)bad);
			}
			if (fence) {
				write_range(l, blk, pos, stop, &from, &to);
				FUZZ_CHECK(same_outside(fence, l->buf[0], size0,
							from, to),
					   "block %u chunk [%llu, %llu) wrote outside bytes [%llu, %llu)",
					   blk, (unsigned long long)pos,
					   (unsigned long long)stop,
					   (unsigned long long)from,
					   (unsigned long long)to);
			}
			pos = stop;
			calls++;
		} while (!ret && pos < e);
		/* A block that met the bad row stops there, as sched.c does. */
		want_calls = e == b ? 1 : (e - b + chunk - 1) / chunk;
		if (bad >= b && bad < e)
			want_calls = (bad - b) / chunk + 1;
		FUZZ_CHECK(calls == want_calls, "block %u: %llu calls", blk,
			   (unsigned long long)calls);
	}
	snpu_kernel_set_isa(SNPU_ISA_SSE2);

	for (a = 1; a < SNPU_KERNEL_MAX_ARGS; a++)
		if (init[a] && !(writes & (1U << a)))
			FUZZ_CHECK(!memcmp(init[a], l->buf[a], l->bytes[a]),
				   "input %u written", a);
	compare(l, 0, want, n, chunk);
	if (want1)
		compare(l, 1, want1, n, chunk);

	free(fence);
	free(order);
	free(want);
	free(want1);
	for (a = 0; a < SNPU_KERNEL_MAX_ARGS; a++) {
		free(l->buf[a]);
		free(init[a]);
		l->buf[a] = NULL;
	}
}

static bool small(const struct snpu_klaunch *l)
{
	unsigned int i;

	if (no_compute(l->kernel))
		return false;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
		if (l->bytes[i] > RUN_MAX_BYTES)
			return false;
	if ((l->kernel == SNPU_KERNEL_GEMM_F32 ||
	     l->kernel == SNPU_KERNEL_GEMM_TN_F32 ||
	     l->kernel == SNPU_KERNEL_GEMM_NT_F32) &&
	    l->scalar[3] * l->scalar[4] * l->scalar[5] > RUN_MAX_WORK)
		return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct snpu_klaunch l;
	struct launch ln;
	unsigned int i;
	bool want;
	int ret;

	ln.kernel = (__u32)fuzz_take(&in, 4);
	ln.block_dim = (__u32)fuzz_take(&in, 4);
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		ln.a[i].value = fuzz_take(&in, 8);
		ln.a[i].bytes = fuzz_take(&in, 8);
	}

	for (i = 0; i < SNPU_KERNEL_MAX_ARGS + 2; i++)
		FUZZ_CHECK(snpu_kernel_is_buffer(ln.kernel, i) ==
			   ref_is_buffer(ln.kernel, i), "kernel %u arg %u",
			   ln.kernel, i);
	FUZZ_CHECK(snpu_kernel_uses_fpu(ln.kernel) == ref_uses_fpu(ln.kernel),
		   "kernel %u", ln.kernel);
	FUZZ_CHECK(snpu_kernel_writes(ln.kernel) == ref_writes(ln.kernel),
		   "kernel %u writes", ln.kernel);

	ret = snpu_kernel_check(ln.kernel, ln.block_dim, ln.a);
	want = ref_launch_valid(ln.kernel, ln.block_dim, ln.a);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "ret %d", ret);
	FUZZ_CHECK((ret == 0) == want, "kernel %u: snpu_kernel_check %d, rules say %s",
		   ln.kernel, ret, want ? "valid" : "invalid");

	build(&ln, &l);
	if (ln.kernel < SNPU_KERNEL_COUNT)
		FUZZ_CHECK(snpu_kernel_units(&l) == ref_units(ln.kernel, ln.a),
			   "kernel %u units", ln.kernel);
	check_run_refusals(&ln, &in);
	if (ret)
		return 0;
	check_math(&ln, &l, &in);
	if (small(&l))
		run(&ln, &l, &in);
	return 0;
}
