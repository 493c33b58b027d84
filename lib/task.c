// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: submitting tasks - batches built with the snpu_prep_*()
 * helpers of <snpu.h>, and one-task shortcuts.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_task) == SNPU_TASK_SIZE, "struct snpu_task changed");
static_assert(sizeof(struct snpu_kernel_arg) == 16,
	      "struct snpu_kernel_arg changed");
static_assert(sizeof(struct snpu_submit) == 48, "struct snpu_submit changed");

int snpu_submit_direct(struct snpu_device *dev, const struct snpu_task *tasks,
		       unsigned int count, uint64_t *seq)
{
	struct snpu_submit s = {
		.size = sizeof(s),
		.count = count,
		.task_size = sizeof(*tasks),
		.tasks = (uintptr_t)tasks,
	};
	struct snpu_join_cap *caps = NULL;
	int ret;

	if (dev->joins)
		caps = snpu_joins_before(dev, tasks, count);
	ret = snpu_ioctl(dev->fd, SNPU_IOC_SUBMIT, &s);
	if (ret) {
		free(caps);
		return ret;
	}
	if (seq)
		*seq = s.seq;
	if (dev->joins)
		snpu_joins_note(dev, tasks, count, caps);
	return 0;
}

int snpu_submit(struct snpu_device *dev, const struct snpu_task *tasks,
		unsigned int count, uint64_t *seq)
{
	/*
	 * A larger batch is refused rather than split: a split batch would
	 * no longer be all or nothing.
	 */
	if (!dev || !tasks || !count || count > SNPU_SUBMIT_MAX)
		return -EINVAL;
	/* A graph capture in progress takes the batch (graph.c). */
	if (atomic_load_explicit(&dev->capture, memory_order_acquire))
		return snpu_capture_submit(dev, tasks, count, seq);
	return snpu_submit_direct(dev, tasks, count, seq);
}

int snpu_launch(struct snpu_device *dev, uint32_t stream, uint32_t kernel,
		uint32_t block_dim, const struct snpu_kernel_arg *args,
		unsigned int nargs)
{
	struct snpu_task t;
	int ret;

	ret = snpu_prep_launch(&t, stream, kernel, block_dim, args, nargs);
	if (ret)
		return ret;
	return snpu_submit(dev, &t, 1, NULL);
}

int snpu_memcpy_async(struct snpu_device *dev, uint32_t stream, uint32_t dir,
		      uint64_t dst, uint64_t src, uint64_t bytes)
{
	struct snpu_task t;

	snpu_prep_copy(&t, stream, dir, dst, src, bytes);
	return snpu_submit(dev, &t, 1, NULL);
}

int snpu_memset_async(struct snpu_device *dev, uint32_t stream,
		      uint64_t addr, int value, uint64_t bytes)
{
	struct snpu_task t;

	/* As snpu_memset(): refused here, not only by the kernel. */
	if (value < 0 || value > 255)
		return -EINVAL;
	snpu_prep_memset(&t, stream, addr, value, bytes);
	return snpu_submit(dev, &t, 1, NULL);
}
