// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the device interface over libsnpu - device memory, pinned host
 * memory from the driver, a stream per executor, an owner for the
 * attached streams of custom operators, and the command queues (struct
 * snpu_ring) for every task. The ring's SQ side and CQ side each have a
 * mutex, so that the executors and workers sharing this interface may
 * submit from any thread while one waits; every task carries its
 * executor's slot in user_data, and completions are accounted to it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt2.h"

/* Most streams one queue's failed tasks are remembered for, per wait. */
#define RT2_SLOT_FAILED	8

/*
 * The accounting of one queue: written under @cq_lock but @submitted.
 * @failed: the streams of the tasks that completed with an error since
 * the last recovery, which left them in their error state.
 */
struct rt2_sslot {
	bool used;
	uint32_t stream;
	uint64_t submitted;	/* under sq_lock; read with acquire */
	uint64_t completed;
	int err;
	unsigned int nfailed;
	uint32_t failed[RT2_SLOT_FAILED];
	/* statistics (LIBSNPU_0.9): @entries, @seq, sub_ns under sq_lock */
	uint64_t entries;
	uint8_t seq;
	bool defer;			/* under sq_lock: submit without a flush */
	struct rt2_dev_time time;	/* the rest under cq_lock */
};

/*
 * @sq_lock serializes the SQ side of the ring (get_sqe, submit), @cq_lock
 * the CQ side (peek, wait, seen) and the completion accounting; a thread
 * that needs both takes @sq_lock first.
 */
struct rt2_sdev {
	struct snpu_rt2_dev head;
	struct snpu_device *dev;
	struct snpu_owner *owner;
	struct snpu_ring ring;
	pthread_mutex_t sq_lock, cq_lock;
	struct rt2_sslot slot[RT2_DEV_QUEUES];
	/* A capture in progress (under sq_lock): its slot, stream, tasks. */
	bool capturing;
	unsigned int cap_slot;
	uint32_t cap_stream;
	uint64_t cap_tasks;
	uint64_t cap_user_data;
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

/*
 * A task's user_data: its queue's slot in the low half, its stream in the
 * high half (a CQE does not name the stream).
 */
static uint64_t rt2_s_user_data(unsigned int slot, uint32_t stream)
{
	return (uint64_t)stream << 32 | slot;
}

static uint64_t rt2_s_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned int rt2_s_class(const struct snpu_task *t)
{
	switch (t->op) {
	case SNPU_OP_LAUNCH:
	case SNPU_OP_GRAPH:
		return RT2_TC_COMPUTE;
	case SNPU_OP_COPY:
		if (t->copy.dir == SNPU_COPY_H2D)
			return RT2_TC_H2D;
		if (t->copy.dir == SNPU_COPY_D2H)
			return RT2_TC_D2H;
		return RT2_TC_OTHER;
	}
	return RT2_TC_OTHER;
}

/*
 * The user_data of a task of slot @sl: its stream, its sequence number in
 * the slot (bits 24..31), its class (16..23) and its slot (0..15), and its
 * submission time noted. Under sq_lock.
 */
static uint64_t rt2_s_tag(struct rt2_sslot *sl, unsigned int slot,
			  uint32_t stream, unsigned int cls)
{
	uint8_t seq = sl->seq++;

	sl->time.sub_ns[seq] = rt2_s_now();
	return rt2_s_user_data(slot, stream) | (uint64_t)seq << 24 |
	       (uint64_t)cls << 16;
}

/**
 * rt2_dev_time_done() - account a completed task's device time
 * @t: the queue's clock
 * @seq: the task's sequence number (its submission time is sub_ns[@seq])
 * @cls: its class, RT2_TC_*
 * @done_ns: its completion time, from its CQE
 *
 * A task's device time runs from the queue's last completion, or from its
 * own submission when that came later, to its completion. The tasks of
 * a queue complete in order on its stream; each CQE carries its own
 * task's completion time (also within a chain the core ran back to back),
 * so each task gets its own share, and the classes' times add up to the
 * tasks' times.
 */
void rt2_dev_time_done(struct rt2_dev_time *t, uint8_t seq, unsigned int cls,
		       uint64_t done_ns)
{
	uint64_t start = t->sub_ns[seq];

	if (t->last_done > start)
		start = t->last_done;
	if (done_ns > start)
		t->ns[cls % RT2_TC_COUNT] += done_ns - start;
	if (done_ns > t->last_done)
		t->last_done = done_ns;
}

/* Remember the stream a failed task left in its error state. */
static void rt2_s_failed(struct rt2_sslot *sl, uint32_t stream)
{
	unsigned int i;

	for (i = 0; i < sl->nfailed; i++)
		if (sl->failed[i] == stream)
			return;
	/* More than that many failed streams: the rest stay failed, and
	 * the next run's error recovers them in turn.
	 */
	if (sl->nfailed < RT2_SLOT_FAILED)
		sl->failed[sl->nfailed++] = stream;
}

/* Account every completion there is to its queue. Under cq_lock. */
static void rt2_s_reap(struct rt2_sdev *s)
{
	struct rt2_sslot *sl;
	struct snpu_cqe *cqe;

	while (!snpu_ring_peek_cqe(&s->ring, &cqe)) {
		uint32_t ud = (uint32_t)cqe->user_data;

		sl = &s->slot[ud % RT2_DEV_QUEUES];
		rt2_dev_time_done(&sl->time, (uint8_t)(ud >> 24),
				  (ud >> 16) & 0xff, cqe->time_ns);
		if (cqe->result) {
			if (!sl->err)
				sl->err = cqe->result;
			rt2_s_failed(sl, (uint32_t)(cqe->user_data >> 32));
		}
		sl->completed++;
		snpu_ring_cqe_seen(&s->ring, cqe);
	}
}

/* Publish the SQ. Under sq_lock. */
static int rt2_s_flush(struct rt2_sdev *s)
{
	int ret = snpu_ring_submit(&s->ring);

	/* -EBUSY: the CQ is full; the entries stay and go in later. */
	return ret < 0 && ret != -EBUSY ? ret : 0;
}

static int rt2_s_submit(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
			const struct snpu_task *tasks, unsigned int count)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];
	struct snpu_task *sqe;
	struct snpu_cqe *cqe;
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&s->sq_lock);
	for (i = 0; i < count; i++) {
		while (!(sqe = snpu_ring_get_sqe(&s->ring))) {
			/* Full: hand the SQ over, make room in the CQ. */
			ret = rt2_s_flush(s);
			if (ret)
				goto out;
			pthread_mutex_lock(&s->cq_lock);
			ret = snpu_ring_wait_cqe(&s->ring, &cqe);
			if (!ret)
				rt2_s_reap(s);
			pthread_mutex_unlock(&s->cq_lock);
			if (ret)
				goto out;
		}
		*sqe = tasks[i];
		sqe->user_data = rt2_s_tag(sl, q->slot, tasks[i].stream,
					   rt2_s_class(&tasks[i]));
		/* Recorded by a capture: no CQE unless it falls back. */
		if (s->capturing && q->slot == s->cap_slot &&
		    tasks[i].stream == s->cap_stream) {
			s->cap_tasks++;
			continue;
		}
		sl->entries++;
		__atomic_store_n(&sl->submitted, sl->submitted + 1,
				 __ATOMIC_RELEASE);
	}
	/* Deferred: the next flush (a submission, a launch, a wait). */
	ret = sl->defer ? 0 : rt2_s_flush(s);
out:
	pthread_mutex_unlock(&s->sq_lock);
	return ret;
}

static void rt2_s_defer(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
			bool on)
{
	struct rt2_sdev *s = rt2_sdev(d);

	pthread_mutex_lock(&s->sq_lock);
	s->slot[q->slot].defer = on;
	pthread_mutex_unlock(&s->sq_lock);
}

static int rt2_s_wait(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];
	uint64_t left;
	int ret = 0;

	for (;;) {
		/* Entries a full CQ kept in the SQ go in now. */
		pthread_mutex_lock(&s->sq_lock);
		ret = rt2_s_flush(s);
		pthread_mutex_unlock(&s->sq_lock);
		if (ret)
			break;
		pthread_mutex_lock(&s->cq_lock);
		rt2_s_reap(s);
		left = __atomic_load_n(&sl->submitted, __ATOMIC_ACQUIRE) -
		       sl->completed;
		if (!left) {
			pthread_mutex_unlock(&s->cq_lock);
			break;
		}
		/*
		 * Sleep until the CQ, which the reap emptied, holds as many
		 * completions as the queue still waits for (fewer when the
		 * CQ is smaller): one wake-up for all of them, not one each.
		 * Other queues' completions may come first: then again.
		 */
		if (left > s->ring.cq.entries)
			left = s->ring.cq.entries;
		ret = snpu_ring_enter(&s->ring, 0, (unsigned int)left,
				      SNPU_ENTER_GETEVENTS, -1);
		ret = ret == -EBUSY ? 0 : ret < 0 ? ret : 0;
		if (!ret)
			rt2_s_reap(s);
		pthread_mutex_unlock(&s->cq_lock);
		if (ret)
			break;
	}
	pthread_mutex_lock(&s->cq_lock);
	if (!ret)
		ret = sl->err;
	sl->err = 0;
	pthread_mutex_unlock(&s->cq_lock);
	return ret;
}

/*
 * Reset the streams that the queue's failed tasks left in their error
 * state. After a wait: nothing of the queue is in flight, so each reset
 * finds its stream idle unless another queue uses it (EBUSY: that stream
 * stays failed, and the next error tries again).
 */
static int rt2_s_recover(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];
	uint32_t failed[RT2_SLOT_FAILED];
	unsigned int i, n;
	int ret = 0, r;

	pthread_mutex_lock(&s->cq_lock);
	n = sl->nfailed;
	memcpy(failed, sl->failed, n * sizeof(failed[0]));
	sl->nfailed = 0;
	pthread_mutex_unlock(&s->cq_lock);
	for (i = 0; i < n; i++) {
		r = snpu_stream_reset(s->dev, failed[i]);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/* A slot and a stream of its own for an executor. */
static int rt2_s_queue_create(struct snpu_rt2_dev *d, struct rt2_dev_queue *q)
{
	struct rt2_sdev *s = rt2_sdev(d);
	unsigned int i;
	uint32_t stream;
	int ret;

	ret = snpu_stream_create(s->dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->sq_lock);
	pthread_mutex_lock(&s->cq_lock);
	for (i = 0; i < RT2_DEV_QUEUES && s->slot[i].used; i++)
		;
	if (i < RT2_DEV_QUEUES) {
		memset(&s->slot[i], 0, sizeof(s->slot[i]));
		s->slot[i].used = true;
		s->slot[i].stream = stream;
	}
	pthread_mutex_unlock(&s->cq_lock);
	pthread_mutex_unlock(&s->sq_lock);
	if (i == RT2_DEV_QUEUES) {
		snpu_stream_destroy(s->dev, stream, 0);
		return -ENOSPC;
	}
	q->stream = stream;
	q->slot = i;
	return 0;
}

/* After a wait: nothing of the queue is in flight any more. */
static void rt2_s_queue_destroy(struct snpu_rt2_dev *d,
				struct rt2_dev_queue *q)
{
	struct rt2_sdev *s = rt2_sdev(d);

	snpu_stream_destroy(s->dev, q->stream, 0);
	pthread_mutex_lock(&s->sq_lock);
	pthread_mutex_lock(&s->cq_lock);
	s->slot[q->slot].used = false;
	pthread_mutex_unlock(&s->cq_lock);
	pthread_mutex_unlock(&s->sq_lock);
}

static int rt2_s_h2d(struct snpu_rt2_dev *d, uint64_t dst, const void *src,
		     size_t n)
{
	return snpu_memcpy_h2d(rt2_sdev(d)->dev, dst, src, n);
}

static int rt2_s_d2h(struct snpu_rt2_dev *d, void *dst, uint64_t src,
		     size_t n)
{
	return snpu_memcpy_d2h(rt2_sdev(d)->dev, dst, src, n);
}

/* One more task of the slot goes to the ring (a graph launch). */
static void rt2_s_count(struct rt2_sslot *sl, uint64_t tasks)
{
	sl->entries += tasks;
	__atomic_store_n(&sl->submitted, sl->submitted + tasks,
			 __ATOMIC_RELEASE);
}

/*
 * Graph capture of the queue's stream through the ring: 0 when it
 * records, SNPU_GRAPH_CACHED when @key's graph was launched (one entry).
 */
static int rt2_s_capture_begin(struct snpu_rt2_dev *d,
			       const struct rt2_dev_queue *q, uint64_t key)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];
	uint64_t ud;
	int ret;

	pthread_mutex_lock(&s->sq_lock);
	if (s->capturing) {
		pthread_mutex_unlock(&s->sq_lock);
		return -EBUSY;
	}
	ud = rt2_s_tag(sl, q->slot, q->stream, RT2_TC_COMPUTE);
	ret = snpu_graph_begin_ring(s->dev, &s->ring, q->stream, key, ud);
	if (ret == SNPU_GRAPH_CACHED) {
		rt2_s_count(sl, 1);
	} else if (!ret) {
		s->capturing = true;
		s->cap_slot = q->slot;
		s->cap_stream = q->stream;
		s->cap_tasks = 0;
		s->cap_user_data = ud;
	}
	pthread_mutex_unlock(&s->sq_lock);
	return ret;
}

/* 0: the recording went as one graph launch; else its tasks one by one. */
static int rt2_s_capture_end(struct snpu_rt2_dev *d,
			     const struct rt2_dev_queue *q)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];
	int ret;

	pthread_mutex_lock(&s->sq_lock);
	if (!s->capturing || s->cap_slot != q->slot) {
		pthread_mutex_unlock(&s->sq_lock);
		return -EINVAL;
	}
	sl->time.sub_ns[(uint8_t)(s->cap_user_data >> 24)] = rt2_s_now();
	ret = snpu_graph_end(s->dev);
	s->capturing = false;
	rt2_s_count(sl, ret == 0 ? 1 : s->cap_tasks);
	pthread_mutex_unlock(&s->sq_lock);
	return ret;
}

static void rt2_s_capture_forget(struct snpu_rt2_dev *d, uint64_t key)
{
	snpu_graph_forget(rt2_sdev(d)->dev, key);
}

static void rt2_s_queue_stats(struct snpu_rt2_dev *d,
			      const struct rt2_dev_queue *q,
			      struct snpu_rt2_exec_stats *st)
{
	struct rt2_sdev *s = rt2_sdev(d);
	struct rt2_sslot *sl = &s->slot[q->slot];

	pthread_mutex_lock(&s->sq_lock);
	st->entries = sl->entries;
	pthread_mutex_unlock(&s->sq_lock);
	pthread_mutex_lock(&s->cq_lock);
	st->h2d_ns = sl->time.ns[RT2_TC_H2D];
	st->d2h_ns = sl->time.ns[RT2_TC_D2H];
	st->compute_ns = sl->time.ns[RT2_TC_COMPUTE];
	pthread_mutex_unlock(&s->cq_lock);
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

	snpu_ring_exit(&s->ring);
	if (s->owner)
		snpu_owner_destroy(s->owner);
	pthread_mutex_destroy(&s->sq_lock);
	pthread_mutex_destroy(&s->cq_lock);
	free(s);
}

static const struct rt2_dev_ops rt2_snpu_ops = {
	.mem_alloc = rt2_s_mem_alloc,
	.mem_free = rt2_s_mem_free,
	.host_alloc = rt2_s_host_alloc,
	.host_free = rt2_s_host_free,
	.queue_create = rt2_s_queue_create,
	.queue_destroy = rt2_s_queue_destroy,
	.submit = rt2_s_submit,
	.wait = rt2_s_wait,
	.recover = rt2_s_recover,
	.h2d = rt2_s_h2d,
	.attached_stream = rt2_s_attached_stream,
	.event_create = rt2_s_event_create,
	.event_destroy = rt2_s_event_destroy,
	.close = rt2_s_close,
	.d2h = rt2_s_d2h,
	.capture_begin = rt2_s_capture_begin,
	.capture_end = rt2_s_capture_end,
	.capture_forget = rt2_s_capture_forget,
	.queue_stats = rt2_s_queue_stats,
	.defer = rt2_s_defer,
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
	s->head.sdev = dev;
	s->dev = dev;
	pthread_mutex_init(&s->sq_lock, NULL);
	pthread_mutex_init(&s->cq_lock, NULL);
	ret = snpu_get_info(dev, &s->head.info);
	if (!ret)
		ret = snpu_ring_init(dev, ring_entries ? ring_entries : 256, 0,
				     &s->ring);
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
