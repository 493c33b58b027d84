// SPDX-License-Identifier: GPL-2.0
/*
 * The host-only device interface of rt2's tests (see hostdev.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels.h"
#include "hostdev.h"

static struct hostdev *hdev(struct snpu_rt2_dev *d)
{
	return (struct hostdev *)d;
}

static int h_mem_alloc(struct snpu_rt2_dev *d, uint64_t bytes,
		       uint64_t *addr)
{
	void *p = aligned_alloc(64, (bytes + 63) & ~63ULL);

	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&hdev(d)->lock);
	hdev(d)->mem_allocs++;
	pthread_mutex_unlock(&hdev(d)->lock);
	*addr = (uintptr_t)p;
	return 0;
}

static int h_mem_free(struct snpu_rt2_dev *d, uint64_t addr)
{
	free((void *)(uintptr_t)addr);
	pthread_mutex_lock(&hdev(d)->lock);
	hdev(d)->mem_frees++;
	pthread_mutex_unlock(&hdev(d)->lock);
	return 0;
}

static int h_host_alloc(struct snpu_rt2_dev *d, size_t bytes, void **ptr,
			uint32_t *handle)
{
	*ptr = calloc(1, bytes);
	if (!*ptr)
		return -ENOMEM;
	*handle = 1;
	hdev(d)->host_allocs++;
	return 0;
}

static void h_host_free(struct snpu_rt2_dev *d, void *ptr, size_t bytes,
			uint32_t handle)
{
	free(ptr);
	hdev(d)->host_frees++;
}

static int h_launch(const struct snpu_task *t)
{
	struct snpu_klaunch l;
	__u64 b, e;
	unsigned int i;
	int ret;

	ret = snpu_kernel_check(t->launch.kernel, t->launch.block_dim,
				t->launch.args);
	if (ret)
		return ret;
	if (t->launch.kernel == SNPU_KERNEL_FAIL)
		return -(int)t->launch.args[0].value;
	memset(&l, 0, sizeof(l));
	l.kernel = t->launch.kernel;
	l.block_dim = t->launch.block_dim;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		if (snpu_kernel_is_buffer(l.kernel, i)) {
			l.buf[i] = (void *)(uintptr_t)t->launch.args[i].value;
			l.bytes[i] = t->launch.args[i].bytes;
		} else {
			l.scalar[i] = t->launch.args[i].value;
		}
	}
	for (i = 0; i < l.block_dim; i++) {
		snpu_kernel_slice(&l, i, &b, &e);
		ret = snpu_kernel_run(&l, i, b, e, b, e);
		if (ret)
			return ret;
	}
	return 0;
}

static int h_task(const struct snpu_task *t)
{
	switch (t->op) {
	case SNPU_OP_LAUNCH:
		return h_launch(t);
	case SNPU_OP_COPY:
		if (!t->copy.dst || !t->copy.src)
			return -EFAULT;
		memcpy((void *)(uintptr_t)t->copy.dst,
		       (const void *)(uintptr_t)t->copy.src, t->copy.bytes);
		return 0;
	case SNPU_OP_MEMSET:
		memset((void *)(uintptr_t)t->memset.addr, (int)t->memset.value,
		       t->memset.bytes);
		return 0;
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
		return t->event.event ? 0 : -EINVAL;
	}
	return -EINVAL;
}

static int h_queue_create(struct snpu_rt2_dev *d, struct rt2_dev_queue *q)
{
	struct hostdev *h = hdev(d);
	unsigned int i;

	pthread_mutex_lock(&h->lock);
	for (i = 0; i < RT2_DEV_QUEUES && h->used[i]; i++)
		;
	if (i < RT2_DEV_QUEUES) {
		h->used[i] = true;
		h->err[i] = 0;
		h->queues++;
	}
	pthread_mutex_unlock(&h->lock);
	if (i == RT2_DEV_QUEUES)
		return -ENOSPC;
	q->slot = i;
	q->stream = 1 + i;	/* attached streams are 100 and up */
	h->serr[q->stream] = 0;
	return 0;
}

static void h_queue_destroy(struct snpu_rt2_dev *d, struct rt2_dev_queue *q)
{
	struct hostdev *h = hdev(d);

	pthread_mutex_lock(&h->lock);
	h->used[q->slot] = false;
	h->queues--;
	pthread_mutex_unlock(&h->lock);
}

/* Run one task of queue @q at once. Under the lock. */
static void h_run(struct hostdev *h, const struct rt2_dev_queue *q,
		  const struct snpu_task *t)
{
	int ret;

	h->tasks++;
	if (h->nlog < HDEV_LOG)
		h->log[h->nlog++] = (struct hdev_log){
			t->op, t->op == SNPU_OP_LAUNCH ?
			t->launch.kernel : t->copy.dir, t->stream };
	if (t->stream >= HDEV_STREAMS)
		ret = -ENOENT;
	else if (h->serr[t->stream])
		ret = -EIO;	/* in its error state */
	else
		ret = h->fail_at == h->tasks ? h->fail_err : h_task(t);
	if (ret && t->stream < HDEV_STREAMS && !h->serr[t->stream]) {
		h->serr[t->stream] = ret;
		h->sslot[t->stream] = q->slot;
	}
	/* Reported by wait. */
	if (ret && !h->err[q->slot])
		h->err[q->slot] = ret;
}

/* What a graph node may be: a launch, a device copy, a memset. */
static bool h_graphable(const struct snpu_task *t)
{
	return t->op == SNPU_OP_LAUNCH || t->op == SNPU_OP_MEMSET ||
	       (t->op == SNPU_OP_COPY && t->copy.dir == SNPU_COPY_D2D);
}

/* The kept tasks go one by one. Under the lock. */
static void h_cap_break(struct hostdev *h, const struct rt2_dev_queue *q)
{
	unsigned int i;

	for (i = 0; i < h->ncap; i++) {
		h_run(h, q, &h->cap[i]);
		h->entries[q->slot]++;
	}
	h->ncap = 0;
	h->cap_broken = true;
}

static int h_submit(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q,
		    const struct snpu_task *tasks, unsigned int count)
{
	struct hostdev *h = hdev(d);
	unsigned int i;

	pthread_mutex_lock(&h->lock);
	for (i = 0; i < count; i++) {
		const struct snpu_task *t = &tasks[i];

		if (h->capturing && !h->cap_broken &&
		    t->stream == h->cap_stream && q->slot == h->cap_slot) {
			if (h_graphable(t) && h->ncap < h->cap_cap) {
				h->cap[h->ncap++] = *t;
				continue;
			}
			h_cap_break(h, q);
		}
		h_run(h, q, t);
		h->entries[q->slot]++;
	}
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static struct hdev_graph *h_graph(struct hostdev *h, uint64_t key)
{
	unsigned int i;

	for (i = 0; i < HDEV_GRAPHS; i++)
		if (h->graphs[i].tasks && h->graphs[i].key == key)
			return &h->graphs[i];
	return NULL;
}

/* A graph launch: its tasks in order, one queue entry. Under the lock. */
static void h_launch_graph(struct hostdev *h, const struct rt2_dev_queue *q,
			   const struct hdev_graph *g)
{
	unsigned int i;

	for (i = 0; i < g->n; i++)
		h_run(h, q, &g->tasks[i]);
	h->entries[q->slot]++;
	h->graph_launches++;
}

static int h_capture_begin(struct snpu_rt2_dev *d,
			   const struct rt2_dev_queue *q, uint64_t key)
{
	struct hostdev *h = hdev(d);
	struct hdev_graph *g;
	int ret = 0;

	pthread_mutex_lock(&h->lock);
	g = h_graph(h, key);
	if (g) {
		h_launch_graph(h, q, g);
		ret = SNPU_GRAPH_CACHED;
	} else if (h->capturing) {
		ret = -EBUSY;
	} else {
		if (!h->cap) {
			h->cap = calloc(4096, sizeof(*h->cap));
			h->cap_cap = h->cap ? 4096 : 0;
		}
		h->capturing = true;
		h->cap_broken = false;
		h->cap_stream = q->stream;
		h->cap_slot = q->slot;
		h->cap_key = key;
		h->ncap = 0;
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static int h_capture_end(struct snpu_rt2_dev *d,
			 const struct rt2_dev_queue *q)
{
	struct hostdev *h = hdev(d);
	struct hdev_graph *g = NULL;
	unsigned int i;
	int ret = SNPU_GRAPH_NOT_RECORDED;

	pthread_mutex_lock(&h->lock);
	if (!h->capturing) {
		pthread_mutex_unlock(&h->lock);
		return -EINVAL;
	}
	h->capturing = false;
	for (i = 0; i < HDEV_GRAPHS && !g; i++)
		if (!h->graphs[i].tasks)
			g = &h->graphs[i];
	if (!h->cap_broken && h->ncap && g) {
		g->tasks = malloc(h->ncap * sizeof(*g->tasks));
		if (g->tasks) {
			memcpy(g->tasks, h->cap, h->ncap * sizeof(*g->tasks));
			g->n = h->ncap;
			g->key = h->cap_key;
			h->ncap = 0;
			h->captures++;
			h_launch_graph(h, q, g);
			ret = 0;
		}
	}
	if (ret) {
		h_cap_break(h, q);
		h->fallbacks++;
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static void h_capture_forget(struct snpu_rt2_dev *d, uint64_t key)
{
	struct hostdev *h = hdev(d);
	struct hdev_graph *g;

	pthread_mutex_lock(&h->lock);
	g = h_graph(h, key);
	if (g) {
		free(g->tasks);
		memset(g, 0, sizeof(*g));
	}
	pthread_mutex_unlock(&h->lock);
}

static int h_d2h(struct snpu_rt2_dev *d, void *dst, uint64_t src, size_t n)
{
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

static void h_queue_stats(struct snpu_rt2_dev *d,
			  const struct rt2_dev_queue *q,
			  struct snpu_rt2_exec_stats *st)
{
	struct hostdev *h = hdev(d);

	pthread_mutex_lock(&h->lock);
	st->entries = h->entries[q->slot];
	pthread_mutex_unlock(&h->lock);
}

static int h_wait(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	struct hostdev *h = hdev(d);
	int ret;

	pthread_mutex_lock(&h->lock);
	h->waits++;
	ret = h->err[q->slot];
	h->err[q->slot] = 0;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* The streams the queue's failed tasks left in their error state. */
static int h_recover(struct snpu_rt2_dev *d, const struct rt2_dev_queue *q)
{
	struct hostdev *h = hdev(d);
	unsigned int i;

	pthread_mutex_lock(&h->lock);
	h->recovers++;
	for (i = 0; i < HDEV_STREAMS; i++)
		if (h->serr[i] && h->sslot[i] == q->slot)
			h->serr[i] = 0;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static int h_h2d(struct snpu_rt2_dev *d, uint64_t dst, const void *src,
		 size_t n)
{
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

static int h_attached_stream(struct snpu_rt2_dev *d, const char *key,
			     uint32_t *stream)
{
	struct hostdev *h = hdev(d);
	unsigned int i;

	for (i = 0; i < h->nattached; i++)
		if (!strcmp(h->attached[i], key))
			goto out;
	if (h->nattached == 8 || strlen(key) >= sizeof(h->attached[0]))
		return -ENOSPC;
	strcpy(h->attached[h->nattached++], key);
out:
	*stream = 100 + i;
	return 0;
}

static int h_event_create(struct snpu_rt2_dev *d, uint32_t *event)
{
	*event = ++hdev(d)->next_event;
	return 0;
}

static void h_event_destroy(struct snpu_rt2_dev *d, uint32_t event)
{
}

static void h_close(struct snpu_rt2_dev *d)
{
	hostdev_close(hdev(d));
}

static const struct rt2_dev_ops hostdev_ops = {
	.mem_alloc = h_mem_alloc,
	.mem_free = h_mem_free,
	.host_alloc = h_host_alloc,
	.host_free = h_host_free,
	.queue_create = h_queue_create,
	.queue_destroy = h_queue_destroy,
	.submit = h_submit,
	.wait = h_wait,
	.recover = h_recover,
	.h2d = h_h2d,
	.attached_stream = h_attached_stream,
	.event_create = h_event_create,
	.event_destroy = h_event_destroy,
	.close = h_close,
	.d2h = h_d2h,
	.capture_begin = h_capture_begin,
	.capture_end = h_capture_end,
	.capture_forget = h_capture_forget,
	.queue_stats = h_queue_stats,
};

int hostdev_open(struct hostdev **hp)
{
	struct hostdev *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->head.ops = &hostdev_ops;
	/* Launches sized as for the module's default device. */
	h->head.info.cores = HDEV_CORES;
	h->head.info.max_block_dim = 65535;
	h->head.info.max_block_work = SNPU_KERNEL_BLOCK_WORK_MAX;
	pthread_mutex_init(&h->lock, NULL);
	*hp = h;
	return 0;
}

void hostdev_close(struct hostdev *h)
{
	unsigned int i;

	if (!h)
		return;
	for (i = 0; i < HDEV_GRAPHS; i++)
		free(h->graphs[i].tasks);
	free(h->cap);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
