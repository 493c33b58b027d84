// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the device interface over libsnpu - device memory, pinned host
 * memory from the driver, a stream of its own, an owner for the attached
 * streams of custom operators, and the command queues (struct snpu_ring)
 * for every task. The ring's SQ and CQ are used under one mutex, so that
 * the executors and workers sharing this interface may submit from any
 * thread; completions are reaped as tasks are queued and on wait.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt2.h"

struct rt2_sdev {
	struct snpu_rt2_dev head;
	struct snpu_device *dev;
	struct snpu_owner *owner;
	struct snpu_ring ring;
	pthread_mutex_t lock;
	uint64_t submitted, completed;
	int err;
};

static struct rt2_sdev *rt2_sdev(struct snpu_rt2_dev *d)
{
	return (struct rt2_sdev *)d;
}

static int rt2_s_mem_alloc(struct snpu_rt2_dev *d, uint64_t bytes,
			   uint64_t *addr)
{
	return snpu_mem_alloc(rt2_sdev(d)->dev, bytes, 64, 0, addr);
}

static int rt2_s_mem_free(struct snpu_rt2_dev *d, uint64_t addr)
{
	return snpu_mem_free(rt2_sdev(d)->dev, addr);
}

static int rt2_s_host_alloc(struct snpu_rt2_dev *d, size_t bytes,
			    void **ptr, uint32_t *handle)
{
	struct snpu_host_buf buf;
	int ret;

	ret = snpu_host_alloc(rt2_sdev(d)->dev, bytes, &buf);
	if (ret)
		return ret;
	*ptr = buf.ptr;
	*handle = buf.handle;
	return 0;
}

static void rt2_s_host_free(struct snpu_rt2_dev *d, void *ptr, size_t bytes,
			    uint32_t handle)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct snpu_host_buf buf = {
		.ptr = ptr,
		.bytes = (bytes + page - 1) & ~(page - 1),
		.handle = handle,
	};

	snpu_host_free(rt2_sdev(d)->dev, &buf);
}

/* Read every completion there is. Under the lock. */
static void rt2_s_reap(struct rt2_sdev *s)
{
	struct snpu_cqe *cqe;

	while (!snpu_ring_peek_cqe(&s->ring, &cqe)) {
		if (cqe->result && !s->err)
			s->err = cqe->result;
		s->completed++;
		snpu_ring_cqe_seen(&s->ring, cqe);
	}
}

/* Wait for one completion. Under the lock. */
static int rt2_s_wait_one(struct rt2_sdev *s)
{
	struct snpu_cqe *cqe;
	int ret;

	ret = snpu_ring_wait_cqe(&s->ring, &cqe);
	if (ret)
		return ret;
	rt2_s_reap(s);
	return 0;
}

static int rt2_s_submit(struct snpu_rt2_dev *d, const struct snpu_task *tasks,
			unsigned int count)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct snpu_task *sqe;
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	rt2_s_reap(s);
	for (i = 0; i < count; i++) {
		while (!(sqe = snpu_ring_get_sqe(&s->ring))) {
			/* Full: hand the SQ over, make room in the CQ. */
			ret = snpu_ring_submit(&s->ring);
			if (ret < 0 && ret != -EBUSY)
				goto out;
			if (s->completed < s->submitted) {
				ret = rt2_s_wait_one(s);
				if (ret)
					goto out;
			}
		}
		*sqe = tasks[i];
		s->submitted++;
	}
	ret = snpu_ring_submit(&s->ring);
	if (ret == -EBUSY)
		ret = 0;
out:
	pthread_mutex_unlock(&s->lock);
	return ret < 0 ? ret : 0;
}

static int rt2_s_wait(struct snpu_rt2_dev *d)
{
	struct rt2_sdev *s = rt2_sdev(d);
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		rt2_s_reap(s);
		if (s->completed == s->submitted)
			break;
		/* Entries left in the SQ (CQ full before) go in now. */
		ret = snpu_ring_submit(&s->ring);
		if (ret < 0 && ret != -EBUSY)
			break;
		ret = rt2_s_wait_one(s);
		if (ret)
			break;
	}
	if (!ret)
		ret = s->err;
	s->err = 0;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static int rt2_s_h2d(struct snpu_rt2_dev *d, uint64_t dst, const void *src,
		     size_t n)
{
	return snpu_memcpy_h2d(rt2_sdev(d)->dev, dst, src, n);
}

static int rt2_s_attached_stream(struct snpu_rt2_dev *d, const char *key,
				 uint32_t *stream)
{
	return snpu_owner_attached_stream(rt2_sdev(d)->owner, key, stream);
}

static int rt2_s_event_create(struct snpu_rt2_dev *d, uint32_t *event)
{
	return snpu_event_create(rt2_sdev(d)->dev, event);
}

static void rt2_s_event_destroy(struct snpu_rt2_dev *d, uint32_t event)
{
	snpu_event_destroy(rt2_sdev(d)->dev, event);
}

static void rt2_s_close(struct snpu_rt2_dev *d)
{
	struct rt2_sdev *s = rt2_sdev(d);

	rt2_s_wait(d);
	snpu_ring_exit(&s->ring);
	if (s->head.stream)
		snpu_stream_destroy(s->dev, s->head.stream, 0);
	if (s->owner)
		snpu_owner_destroy(s->owner);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const struct rt2_dev_ops rt2_snpu_ops = {
	.mem_alloc = rt2_s_mem_alloc,
	.mem_free = rt2_s_mem_free,
	.host_alloc = rt2_s_host_alloc,
	.host_free = rt2_s_host_free,
	.submit = rt2_s_submit,
	.wait = rt2_s_wait,
	.h2d = rt2_s_h2d,
	.attached_stream = rt2_s_attached_stream,
	.event_create = rt2_s_event_create,
	.event_destroy = rt2_s_event_destroy,
	.close = rt2_s_close,
};

int snpu_rt2_dev_open(struct snpu_device *dev, unsigned int ring_entries,
		      struct snpu_rt2_dev **rdev)
{
	struct rt2_sdev *s;
	int ret;

	if (!dev || !rdev)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->head.ops = &rt2_snpu_ops;
	s->dev = dev;
	pthread_mutex_init(&s->lock, NULL);
	ret = snpu_ring_init(dev, ring_entries ? ring_entries : 256, 0,
			     &s->ring);
	if (ret) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return ret;
	}
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &s->head.stream);
	if (!ret)
		ret = snpu_owner_create(dev, SNPU_PRIO_NORMAL, &s->owner);
	if (ret) {
		rt2_s_close(&s->head);
		return ret;
	}
	*rdev = &s->head;
	return 0;
}

void snpu_rt2_dev_close(struct snpu_rt2_dev *rdev)
{
	if (rdev)
		rdev->ops->close(rdev);
}
