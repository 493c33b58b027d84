// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: streams - in-order queues of tasks with a sticky error.
 */
#include <assert.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_stream_create) == 32,
	      "struct snpu_stream_create changed");
static_assert(sizeof(struct snpu_wait) == 40, "struct snpu_wait changed");
static_assert(sizeof(struct snpu_stream_query) == 56,
	      "struct snpu_stream_query changed");

int snpu_stream_create(struct snpu_device *dev, int priority,
		       unsigned int flags, uint32_t *stream)
{
	struct snpu_stream_create c = {
		.size = sizeof(c),
		.flags = flags,
		.priority = priority,
	};
	int ret;

	if (!dev || !stream)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_STREAM_CREATE, &c);
	if (!ret)
		*stream = c.handle;
	return ret;
}

int snpu_stream_destroy(struct snpu_device *dev, uint32_t stream,
			unsigned int flags)
{
	/* Waits for the stream's tasks: a signal may end the wait. */
	return snpu_ioctl_handle(dev, SNPU_IOC_STREAM_DESTROY, stream, flags, 1);
}

int snpu_stream_synchronize(struct snpu_device *dev, uint32_t stream,
			    int64_t timeout_ns)
{
	struct snpu_wait w = {
		.size = sizeof(w),
		.handle = stream,
		.timeout_ns = timeout_ns,
	};
	int ret;

	if (!dev)
		return -EINVAL;

	ret = snpu_ioctl_wait(dev->fd, SNPU_IOC_STREAM_SYNC, &w);
	return ret ? ret : w.error;
}

int snpu_stream_query(struct snpu_device *dev, uint32_t stream,
		      struct snpu_stream_query *q)
{
	if (!dev || !q)
		return -EINVAL;

	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = stream;
	return snpu_ioctl(dev->fd, SNPU_IOC_STREAM_QUERY, q);
}

int snpu_stream_abort(struct snpu_device *dev, uint32_t stream)
{
	return snpu_ioctl_handle(dev, SNPU_IOC_STREAM_ABORT, stream, 0, 0);
}

int snpu_stream_reset(struct snpu_device *dev, uint32_t stream)
{
	return snpu_ioctl_handle(dev, SNPU_IOC_STREAM_RESET, stream, 0, 0);
}
