// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: sizing a launch to the device - snpu_launch_dims(), the one
 * policy rt2, snpu-train and the benchmarks use to choose block_dim (see
 * Documentation/lib/snpu_launch_dims.rst).
 *
 * The work of a launch is its units times the cost of one, by the rules
 * the driver checks launches with (kmod/core/kernels.c, built into the
 * library by core.c): the same function computes both, so the policy
 * never picks a block_dim the driver would refuse for its work.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "../kmod/core/kernels.h"

/* Do the blocks of @kernel each write their own result (out[block])? */
static bool snpu_per_block_result(uint32_t kernel)
{
	switch (kernel) {
	case SNPU_KERNEL_REDUCE_SUM_I32:
	case SNPU_KERNEL_REDUCE_SUM_F32:
	case SNPU_KERNEL_CRC32C:
	case SNPU_KERNEL_COUNT_EQ_I32:
		return true;
	default:
		return false;
	}
}

int snpu_launch_dims(const struct snpu_info *info, uint32_t kernel,
		     const struct snpu_kernel_arg *args, unsigned int nargs)
{
	struct snpu_kernel_arg a[SNPU_KERNEL_MAX_ARGS];
	__u64 units, cost, work, per, need, blocks, limit, max_work;
	uint32_t cores;
	int ret;

	if (!info || !info->cores || kernel >= SNPU_KERNEL_COUNT ||
	    nargs > SNPU_KERNEL_MAX_ARGS || (nargs && !args))
		return -EINVAL;
	memset(a, 0, sizeof(a));
	if (nargs)
		memcpy(a, args, nargs * sizeof(*a));
	cores = info->cores;
	limit = info->max_block_dim ? info->max_block_dim : 1;
	max_work = info->max_block_work ? info->max_block_work :
		   SNPU_KERNEL_BLOCK_WORK_MAX;

	switch (kernel) {
	case SNPU_KERNEL_NOP:
	case SNPU_KERNEL_SPIN:
	case SNPU_KERNEL_FAIL:
		/* No work to share: every block of a SPIN spins. */
		ret = snpu_kernel_check(kernel, 1, a);
		return ret ? ret : 1;
	}
	snpu_kernel_work(kernel, a, &units, &cost);
	if (!cost)
		cost = 1;
	/* The fewest blocks whose slices stay within the work bound. */
	per = max_work / cost;
	if (!per)
		return -E2BIG;
	need = units / per + (units % per != 0);
	/* Every core busy, but no block below SNPU_LAUNCH_MIN_WORK. */
	work = units > UINT64_MAX / cost ? UINT64_MAX : units * cost;
	blocks = work / SNPU_LAUNCH_MIN_WORK;
	if (blocks > cores)
		blocks = cores;
	/* More blocks than cores: a multiple of them, evenly shared. */
	if (blocks < need) {
		blocks = need;
		if (blocks > cores && blocks % cores)
			blocks += cores - blocks % cores;
	}
	if (blocks > units)
		blocks = units;
	if (blocks > limit)
		blocks = limit;
	/* A result per block: no more blocks than out has room for. */
	if (snpu_per_block_result(kernel) && blocks > a[0].bytes / 4)
		blocks = a[0].bytes / 4;
	if (!blocks)
		blocks = 1;
	if (blocks < need)
		return -E2BIG;
	ret = snpu_kernel_check(kernel, (uint32_t)blocks, a);
	return ret ? ret : (int)blocks;
}
