// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz target: snpu_task_check() (kmod/core/task.c) and the launch rules
 * of snpu_kernel_check() it calls, on any 128-byte struct snpu_task.
 *
 * Input: the descriptor, zero-padded to 128 bytes; bytes past the first
 * 128 choose what the target probes (a block, a field to break).
 *
 * Properties, each a trap when it does not hold:
 * - the answer is 0 or -EINVAL, the same when asked twice, and the
 *   descriptor is left as it was;
 * - it is 0 exactly when the documented rules accept the task (ref.c,
 *   from Documentation/userspace-api.rst);
 * - an accepted launch has a known kernel, 1 <= block_dim <= 65535,
 *   bytes > 0 for every buffer and 0 for every scalar, its units (from
 *   snpu_kernel_units()) fit every buffer it touches, 32-bit scalars fit
 *   32 bits, a FAIL errno is a valid -errno, a SPIN at most 1 s, a chunk
 *   is the documented one, 1..4096 units (the GEMMs, SOFTMAX_XENT,
 *   ARGMAX and COLSUM: max(1, 65536 / cost) units, so at most 65536 of
 *   their cost unless 1, a step costing at most 65536: a COLSUM column
 *   of more rows is in pieces of 4096), the steps are the units times
 *   the pieces, and probed slices (in steps) start at 0, end at the
 *   steps and meet their neighbours;
 * - an accepted copy has a direction 1..3 and bytes > 0, a memset bytes
 *   > 0 and a value that fits a byte;
 * - an accepted task with flags, reserved0, a pad or one unused union
 *   word made non-zero is refused.
 */
#include <stdlib.h>

#include "fuzz.h"

static int check_twice(const struct snpu_task *t)
{
	struct snpu_task before = *t;
	int ret = snpu_task_check(t);

	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "ret %d", ret);
	FUZZ_CHECK(!memcmp(&before, t, sizeof(*t)), "descriptor written");
	FUZZ_CHECK(snpu_task_check(t) == ret, "not deterministic");
	return ret;
}

static void check_launch(const struct snpu_task *t, struct fuzz_in *in)
{
	const struct snpu_kernel_arg *a = t->launch.args;
	__u32 kernel = t->launch.kernel, bd = t->launch.block_dim, blk;
	struct snpu_klaunch l;
	__u64 n, chunk, c, b, e, b2, e2, per, step_cost;
	unsigned int i;

	FUZZ_CHECK(kernel < SNPU_KERNEL_COUNT, "kernel %u", kernel);
	FUZZ_CHECK(bd >= 1 && bd <= SNPU_MAX_BLOCK_DIM, "block_dim %u", bd);

	/* The launch as kmod/job.c builds it, buffers left unresolved. */
	memset(&l, 0, sizeof(l));
	l.kernel = kernel;
	l.block_dim = bd;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		FUZZ_CHECK(snpu_kernel_is_buffer(kernel, i) ==
			   ref_is_buffer(kernel, i), "kernel %u arg %u", kernel, i);
		if (snpu_kernel_is_buffer(kernel, i)) {
			FUZZ_CHECK(a[i].bytes > 0, "arg %u", i);
			l.bytes[i] = a[i].bytes;
		} else {
			FUZZ_CHECK(a[i].bytes == 0, "arg %u", i);
			l.scalar[i] = a[i].value;
		}
	}
	FUZZ_CHECK(snpu_kernel_uses_fpu(kernel) == ref_uses_fpu(kernel),
		   "kernel %u", kernel);

	n = snpu_kernel_units(&l);
	FUZZ_CHECK(n == ref_units(kernel, a), "kernel %u units %llu", kernel,
		   (unsigned long long)n);
	FUZZ_CHECK(ref_extents_ok(kernel, bd, a, n), "kernel %u units %llu",
		   kernel, (unsigned long long)n);

	switch (kernel) {
	case SNPU_KERNEL_FILL:
		FUZZ_CHECK(l.scalar[1] <= 0xffffffffULL, "pattern");
		break;
	case SNPU_KERNEL_AXPY_F32:
		FUZZ_CHECK(l.scalar[2] <= 0xffffffffULL, "a");
		break;
	case SNPU_KERNEL_SPIN:
		FUZZ_CHECK(l.scalar[0] <= SNPU_KERNEL_SPIN_MAX_NS, "ns");
		break;
	case SNPU_KERNEL_FAIL:
		/* kmod/sched.c returns -(int)errno: a valid -errno. */
		FUZZ_CHECK(-(int)l.scalar[0] < 0 && -(int)l.scalar[0] >= -4095,
			   "errno %llu", (unsigned long long)l.scalar[0]);
		break;
	case SNPU_KERNEL_SOFTMAX_XENT_F32:
		/* The core casts ncls and the scale to 32 bits. */
		FUZZ_CHECK(l.scalar[4] >= 1 && l.scalar[4] <= 65536 &&
			   l.scalar[5] <= 0xffffffffULL, "ncls, scale");
		break;
	case SNPU_KERNEL_BIAS_ADD_F32:
		FUZZ_CHECK(l.scalar[3] >= 1 && l.scalar[3] <= 65536, "n");
		break;
	case SNPU_KERNEL_COLSUM_F32:
	case SNPU_KERNEL_ARGMAX_F32:
		FUZZ_CHECK(l.scalar[2] >= 1 && l.scalar[2] <= 65536, "n");
		break;
	case SNPU_KERNEL_AFFINE_F32:
		FUZZ_CHECK(l.scalar[2] <= 0xffffffffULL &&
			   l.scalar[3] <= 0xffffffffULL, "a, b");
		break;
	}

	/*
	 * A chunk bounds the work between cancellation checks: in steps, a
	 * unit, or a piece of 4096 rows of a COLSUM column of more than
	 * 65536 (whose cost, its rows, has no bound of its own).
	 */
	chunk = snpu_kernel_chunk(&l);
	FUZZ_CHECK(chunk == ref_chunk(kernel, a), "chunk %llu",
		   (unsigned long long)chunk);
	per = ref_unit_steps(kernel, a);
	step_cost = per > 1 ? SNPU_KERNEL_CHUNK : ref_unit_cost(kernel, a);
	FUZZ_CHECK(snpu_kernel_steps(&l) == n * per, "steps %llu",
		   (unsigned long long)snpu_kernel_steps(&l));
	if (kernel == SNPU_KERNEL_GEMM_F32 ||
	    kernel == SNPU_KERNEL_GEMM_TN_F32 ||
	    kernel == SNPU_KERNEL_GEMM_NT_F32 ||
	    kernel == SNPU_KERNEL_SOFTMAX_XENT_F32 ||
	    kernel == SNPU_KERNEL_ARGMAX_F32 ||
	    kernel == SNPU_KERNEL_COLSUM_F32)
		FUZZ_CHECK(step_cost <= SNPU_KERNEL_CHUNK_WORK &&
			   (chunk == 1 ||
			    chunk * step_cost <= SNPU_KERNEL_CHUNK_WORK),
			   "chunk %llu step cost %llu",
			   (unsigned long long)chunk,
			   (unsigned long long)step_cost);
	else
		FUZZ_CHECK(chunk >= 1 && chunk <= SNPU_KERNEL_CHUNK,
			   "chunk %llu", (unsigned long long)chunk);
	/* The blocks' slices below are in steps. */
	n *= per;

	/* Probe the first, the last and one chosen block with its next. */
	c = (n / per / bd + (n / per % bd != 0)) * per;
	snpu_kernel_slice(&l, 0, &b, &e);
	FUZZ_CHECK(b == 0 && e <= n && e - b <= c, "block 0");
	snpu_kernel_slice(&l, bd - 1, &b, &e);
	FUZZ_CHECK(b <= e && e == n && e - b <= c, "last block");
	blk = (__u32)fuzz_take(in, 2) % bd;
	snpu_kernel_slice(&l, blk, &b, &e);
	FUZZ_CHECK(b <= e && e <= n && e - b <= c, "block %u", blk);
	if (blk + 1 < bd) {
		snpu_kernel_slice(&l, blk + 1, &b2, &e2);
		FUZZ_CHECK(b2 == e, "blocks %u and %u do not meet", blk, blk + 1);
	}
}

/* Break one field an accepted task must have zero: it must be refused. */
static void check_broken(const struct snpu_task *t, struct fuzz_in *in)
{
	struct snpu_task bad = *t;
	unsigned int used = ref_task_words(t->op);
	__u64 v = fuzz_take(in, 8);
	unsigned int pick = (unsigned int)fuzz_take(in, 1);

	if (!v)
		v = 1;
	switch (pick % 4) {
	case 0:
		bad.flags = (__u32)v ? (__u32)v : 1;
		break;
	case 1:
		bad.reserved0 = (__u32)v ? (__u32)v : 1;
		break;
	case 2:
		if (used == 13)
			return;
		bad.raw[used + pick / 4 % (13 - used)] = v;
		break;
	case 3:
		if (t->op == SNPU_OP_COPY)
			bad.copy.pad = (__u32)v ? (__u32)v : 1;
		else if (t->op == SNPU_OP_MEMSET)
			bad.memset.pad = (__u32)v ? (__u32)v : 1;
		else if (t->op == SNPU_OP_EVENT_RECORD ||
			 t->op == SNPU_OP_STREAM_WAIT)
			bad.event.pad = (__u32)v ? (__u32)v : 1;
		else if (t->op == SNPU_OP_GRAPH)
			bad.graph.pad = (__u32)v ? (__u32)v : 1;
		else if (t->op == SNPU_OP_COLL)
			bad.coll.pad = (__u32)v ? (__u32)v : 1;
		else if (t->op == SNPU_OP_FENCE_WAIT)
			bad.fence.pad = (__u32)v ? (__u32)v : 1;
		else
			return;
		break;
	}
	FUZZ_CHECK(check_twice(&bad) == -EINVAL, "op %u break %u accepted",
		   t->op, pick % 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct snpu_task t;
	bool want;
	int ret;

	memset(&t, 0, sizeof(t));
	memcpy(&t, data, size < sizeof(t) ? size : sizeof(t));
	in.p += size < sizeof(t) ? size : sizeof(t);
	in.n -= size < sizeof(t) ? size : sizeof(t);

	ret = check_twice(&t);
	want = ref_task_valid(&t);
	FUZZ_CHECK((ret == 0) == want, "op %u: snpu_task_check %d, rules say %s",
		   t.op, ret, want ? "valid" : "invalid");
	if (ret)
		return 0;

	FUZZ_CHECK(((t.op >= SNPU_OP_LAUNCH && t.op <= SNPU_OP_GRAPH) ||
		    t.op == SNPU_OP_COLL || t.op == SNPU_OP_FENCE_WAIT) &&
		   !t.flags && !t.reserved0,
		   "op %u", t.op);
	switch (t.op) {
	case SNPU_OP_LAUNCH:
		check_launch(&t, &in);
		break;
	case SNPU_OP_COPY:
		FUZZ_CHECK(t.copy.dir >= SNPU_COPY_H2D &&
			   t.copy.dir <= SNPU_COPY_D2D && t.copy.bytes > 0 &&
			   !t.copy.pad, "copy");
		break;
	case SNPU_OP_MEMSET:
		FUZZ_CHECK(t.memset.bytes > 0 &&
			   (__u8)t.memset.value == t.memset.value &&
			   !t.memset.pad, "memset");
		break;
	}
	check_broken(&t, &in);
	return 0;
}
