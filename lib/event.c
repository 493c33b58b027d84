// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: events - captures of a stream's work, for ordering between
 * streams, waiting and timing.
 */
#include <assert.h>
#include <string.h>

#include "internal.h"

static_assert(sizeof(struct snpu_event_query) == 56,
	      "struct snpu_event_query changed");
static_assert(sizeof(struct snpu_event_elapsed) == 40,
	      "struct snpu_event_elapsed changed");
static_assert(sizeof(struct snpu_event_export) == 32,
	      "struct snpu_event_export changed");

int snpu_event_create(struct snpu_device *dev, uint32_t *event)
{
	struct snpu_stream_create c = {
		.size = sizeof(c),
	};
	int ret;

	if (!dev || !event)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_EVENT_CREATE, &c);
	if (!ret)
		*event = c.handle;
	return ret;
}

int snpu_event_destroy(struct snpu_device *dev, uint32_t event)
{
	return snpu_ioctl_handle(dev, SNPU_IOC_EVENT_DESTROY, event, 0, 0);
}

int snpu_event_query(struct snpu_device *dev, uint32_t event,
		     struct snpu_event_query *q)
{
	if (!dev || !q)
		return -EINVAL;

	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = event;
	return snpu_ioctl(dev->fd, SNPU_IOC_EVENT_QUERY, q);
}

int snpu_event_synchronize(struct snpu_device *dev, uint32_t event,
			   int64_t timeout_ns)
{
	struct snpu_wait w = {
		.size = sizeof(w),
		.handle = event,
		.timeout_ns = timeout_ns,
	};
	int ret;

	if (!dev)
		return -EINVAL;

	ret = snpu_ioctl_wait(dev->fd, SNPU_IOC_EVENT_SYNC, &w);
	return ret ? ret : w.error;
}

int snpu_event_elapsed_ns(struct snpu_device *dev, uint32_t start,
			  uint32_t end, int64_t *ns)
{
	struct snpu_event_elapsed el = {
		.size = sizeof(el),
		.start = start,
		.end = end,
	};
	int ret;

	if (!dev || !ns)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_EVENT_ELAPSED, &el);
	if (!ret)
		*ns = el.ns;
	return ret;
}

int snpu_event_record(struct snpu_device *dev, uint32_t event,
		      uint32_t stream)
{
	struct snpu_task t;

	snpu_prep_event_record(&t, stream, event);
	return snpu_submit(dev, &t, 1, NULL);
}

int snpu_stream_wait_event(struct snpu_device *dev, uint32_t stream,
			   uint32_t event)
{
	struct snpu_task t;

	snpu_prep_stream_wait(&t, stream, event);
	return snpu_submit(dev, &t, 1, NULL);
}

int snpu_event_export_fence(struct snpu_device *dev, uint32_t event,
			    unsigned int flags, int *fence_fd)
{
	struct snpu_event_export x = {
		.size = sizeof(x),
		.flags = flags,
		.handle = event,
	};
	int ret;

	if (!dev || !fence_fd || flags & ~SNPU_EXPORT_CLOEXEC)
		return -EINVAL;

	ret = snpu_ioctl(dev->fd, SNPU_IOC_EVENT_EXPORT, &x);
	if (!ret)
		*fence_fd = x.fd;
	return ret;
}

int snpu_stream_wait_fence(struct snpu_device *dev, uint32_t stream,
			   int fence_fd)
{
	struct snpu_task t;

	snpu_prep_fence_wait(&t, stream, fence_fd);
	return snpu_submit(dev, &t, 1, NULL);
}
