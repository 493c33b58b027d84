// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Structural checks of a task descriptor: everything that can be decided
 * from the descriptor alone, before any handle or address is looked up.
 */
#include "coll.h"
#include "core.h"
#include "kernels.h"

/* Words of the task union each op uses; the rest must be zero. */
static unsigned int snpu_task_words(__u32 op)
{
	switch (op) {
	case SNPU_OP_LAUNCH:
		return 13;
	case SNPU_OP_COPY:
		return 4;
	case SNPU_OP_MEMSET:
		return 3;
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
	case SNPU_OP_FENCE_WAIT:
		return 1;
	case SNPU_OP_GRAPH:
		return 10;
	case SNPU_OP_COLL:
		return 6;
	default:
		return 0;
	}
}

/**
 * snpu_task_check() - check a task descriptor's own fields
 * @t: the task as copied from the caller
 *
 * Return: 0, or -EINVAL for an unknown op, non-zero flags, reserved or
 * unused words, a bad copy direction, a zero length, a memset value
 * above 255, a launch snpu_kernel_check() refuses or a collective
 * snpu_coll_check() refuses.
 */
int snpu_task_check(const struct snpu_task *t)
{
	unsigned int i, used;

	if (t->op < SNPU_OP_LAUNCH || t->op > SNPU_OP_FENCE_WAIT ||
	    t->op == SNPU_OP_CALLBACK_DONE || t->flags || t->reserved0)
		return -EINVAL;
	used = snpu_task_words(t->op);
	for (i = used; i < ARRAY_SIZE(t->raw); i++)
		if (t->raw[i])
			return -EINVAL;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
		return snpu_kernel_check(t->launch.kernel, t->launch.block_dim,
					 t->launch.args);
	case SNPU_OP_COPY:
		if (t->copy.dir < SNPU_COPY_H2D || t->copy.dir > SNPU_COPY_D2D ||
		    t->copy.pad || !t->copy.bytes)
			return -EINVAL;
		return 0;
	case SNPU_OP_MEMSET:
		if (t->memset.pad || t->memset.value > 0xff || !t->memset.bytes)
			return -EINVAL;
		return 0;
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
		return t->event.pad ? -EINVAL : 0;
	case SNPU_OP_GRAPH:
		return t->graph.pad ? -EINVAL : 0;
	case SNPU_OP_FENCE_WAIT:
		return t->fence.pad ? -EINVAL : 0;
	case SNPU_OP_COLL:
		return snpu_coll_check(t);
	default:
		return 0;
	}
}

/**
 * snpu_task_check_callback_done() - check an SNPU_OP_CALLBACK_DONE entry
 * @t: the SQE as copied from the ring
 *
 * Return: 0, or -EINVAL for non-zero flags, stream, reserved or unused
 * words, or a status that is neither 0 nor a -errno.
 */
int snpu_task_check_callback_done(const struct snpu_task *t)
{
	unsigned int i;

	if (t->op != SNPU_OP_CALLBACK_DONE || t->flags || t->stream ||
	    t->reserved0)
		return -EINVAL;
	for (i = 1; i < ARRAY_SIZE(t->raw); i++)
		if (t->raw[i])
			return -EINVAL;
	if (t->callback.status > 0 || t->callback.status < -SNPU_MAX_ERRNO)
		return -EINVAL;
	return 0;
}
