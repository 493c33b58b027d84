// SPDX-License-Identifier: GPL-2.0
/*
 * snpu contexts: one per open file of a device, with its own handles,
 * address space, quotas and task pool.
 */
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>

#include "comm.h"
#include "graph.h"
/* Each context gets its own window of device addresses: SNPU_VA_*. */
#include "core/ckpt.h"

/* Pool slots for jobs held by synchronize calls after they complete. */
#define SNPU_POOL_SLACK		64

/*
 * Handles are handed out cyclically from 1 up to INT_MAX: a destroyed
 * object's value comes back only after the cursor has wrapped, so a stale
 * handle in a racing call finds nothing instead of a new object.
 */
#define SNPU_HANDLE_LIMIT	XA_LIMIT(1, INT_MAX)

/* Context ids: they name contexts in snapshot images. */
static atomic64_t snpu_ctx_ids = ATOMIC64_INIT(0);

/**
 * snpu_object_get_locked() - look up a handle of a given type
 * @ctx: the context
 * @handle: a handle from this context
 * @type: the type the caller needs
 *
 * Return: the object, or NULL when @handle names nothing or another type.
 */
struct snpu_object *snpu_object_get_locked(struct snpu_context *ctx,
					   u32 handle, u32 type)
{
	struct snpu_object *obj;

	lockdep_assert_held(&ctx->lock);
	obj = xa_load(&ctx->handles, handle);
	return obj && obj->type == type ? obj : NULL;
}

/**
 * snpu_stream_get_locked() - look up a stream handle
 * @ctx: the context
 * @handle: a handle from this context
 *
 * Return: the stream, or NULL.
 */
struct snpu_stream *snpu_stream_get_locked(struct snpu_context *ctx,
					   u32 handle)
{
	struct snpu_stream *s = ctx->stream_hint;
	struct snpu_object *obj;

	/* Tasks come in runs on one stream: skip the xarray for those. */
	lockdep_assert_held(&ctx->lock);
	if (s && s->obj.handle == handle)
		return s;
	obj = snpu_object_get_locked(ctx, handle, SNPU_OBJ_STREAM);
	if (!obj)
		return NULL;
	s = container_of(obj, struct snpu_stream, obj);
	ctx->stream_hint = s;
	return s;
}

/**
 * snpu_event_get_locked() - look up an event handle
 * @ctx: the context
 * @handle: a handle from this context
 *
 * Return: the event, or NULL.
 */
struct snpu_event *snpu_event_get_locked(struct snpu_context *ctx, u32 handle)
{
	struct snpu_object *obj = snpu_object_get_locked(ctx, handle,
							 SNPU_OBJ_EVENT);

	return obj ? container_of(obj, struct snpu_event, obj) : NULL;
}

/**
 * snpu_object_add_locked() - give an object a handle
 * @ctx: the context
 * @obj: the object; its @handle is set
 * @type: enum snpu_obj_type
 *
 * The handle is the first free value after the last one handed out in
 * this context, wrapping to 1 after INT_MAX (see SNPU_HANDLE_LIMIT). A
 * restore (kmod/ckpt.c) presets @obj->handle to the image's: then that
 * value, or -EBUSY when it is taken.
 *
 * Return: 0, -ENOMEM, or -EBUSY when every value is taken.
 */
int snpu_object_add_locked(struct snpu_context *ctx, struct snpu_object *obj,
			   u32 type)
{
	int ret;

	lockdep_assert_held(&ctx->lock);
	obj->type = type;
	if (obj->handle)
		return xa_insert(&ctx->handles, obj->handle, obj, GFP_KERNEL);
	ret = xa_alloc_cyclic(&ctx->handles, &obj->handle, obj,
			      SNPU_HANDLE_LIMIT, &ctx->next_handle, GFP_KERNEL);
	/* 1 only says that the cursor wrapped. */
	return ret < 0 ? ret : 0;
}

/**
 * snpu_ctx_usage() - a context's usage against its quotas
 * @ctx: the context
 * @q: out: the usage and limit fields of a CTX_QUERY (not @q->reserved)
 *
 * Takes no lock: each figure is read once as its writer left it (under
 * the context's lock or its sched_lock), so a reader never waits for a
 * context busy with a long call, such as a snapshot BACKUP holding its
 * lock. The figures are each exact, together a moment's view.
 *
 * Return: the tasks the context completed since it was opened.
 */
u64 snpu_ctx_usage(struct snpu_context *ctx, struct snpu_ctx_query *q)
{
	q->mem_used = atomic64_read(&ctx->mem_used);
	q->mem_limit = snpu_quota.mem ?: ctx->sdev->mem_total;
	q->host_used = atomic64_read(&ctx->host_used);
	q->host_limit = snpu_quota.host;
	q->streams = READ_ONCE(ctx->streams);
	q->streams_limit = snpu_quota.streams;
	q->events = READ_ONCE(ctx->events);
	q->events_limit = snpu_quota.events;
	q->tasks = READ_ONCE(ctx->inflight);
	q->tasks_limit = snpu_quota.tasks;
	q->graphs = READ_ONCE(ctx->graphs);
	q->graphs_limit = snpu_quota.graphs;
	q->graph_mem = atomic64_read(&ctx->graph_mem);
	q->graph_mem_limit = snpu_quota.graph_mem;
	return READ_ONCE(ctx->tasks_done);
}

int snpu_ioc_ctx_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_ctx_query *q = &arg->ctx_query;

	if (q->reserved)
		return -EINVAL;
	snpu_ctx_usage(ctx, q);
	return 0;
}

static void snpu_ctx_free(struct kref *ref)
{
	struct snpu_context *ctx = container_of(ref, struct snpu_context, ref);

	mutex_destroy(&ctx->lock);
	kfree(ctx->busy);
	kfree(ctx);
}

/**
 * snpu_ctx_get() - take a reference to a context
 * @ctx: the context, found where its file's reference keeps it (such as
 *       its process's list, under the list lock)
 */
void snpu_ctx_get(struct snpu_context *ctx)
{
	kref_get(&ctx->ref);
}

/**
 * snpu_ctx_put() - drop a reference to a context
 * @ctx: the context
 *
 * The file's release tears the context down; the last reference only
 * frees the memory, which a holder may read meanwhile (see
 * snpu_context.closed).
 */
void snpu_ctx_put(struct snpu_context *ctx)
{
	kref_put(&ctx->ref, snpu_ctx_free);
}

static int snpu_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct snpu_device *sdev = container_of(misc, struct snpu_device, misc);
	struct snpu_context *ctx;
	unsigned int window;
	int ret;

	/* Charged to the opener; at its cgroup's limit, open fails. */
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (!ctx)
		return -ENOMEM;

	/* The cores' time, for fdinfo: written by the cores, no lock. */
	ctx->busy = kcalloc(sdev->cores, sizeof(*ctx->busy),
			    GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (!ctx->busy) {
		kfree(ctx);
		return -ENOMEM;
	}
	kref_init(&ctx->ref);
	ctx->sdev = sdev;
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->handles, XA_FLAGS_ALLOC1);
	/* Free-range searches need a tree built for them. */
	mt_init_flags(&ctx->va, MT_FLAGS_ALLOC_RANGE);
	mt_init(&ctx->host_va);
	/* A window no other live context of the device has. */
	ret = ida_alloc_max(&sdev->va_windows, SNPU_VA_WINDOWS - 1, GFP_KERNEL);
	if (ret < 0) {
		kfree(ctx->busy);
		kfree(ctx);
		return ret == -ENOSPC ? -EMFILE : ret;
	}
	window = ret;
	ctx->va_window = window;
	ctx->va_base = SNPU_VA_BASE + ((u64)window << SNPU_VA_WINDOW_SHIFT);
	ctx->va_end = ctx->va_base + (1ULL << SNPU_VA_WINDOW_SHIFT) - 1;
	atomic64_set(&ctx->mem_used, 0);
	atomic64_set(&ctx->host_used, 0);
	spin_lock_init(&ctx->sched_lock);
	INIT_LIST_HEAD(&ctx->callbacks);
	INIT_LIST_HEAD(&ctx->comm_ids);
	INIT_LIST_HEAD(&ctx->fence_waits);
	init_waitqueue_head(&ctx->wq);
	snpu_sched_init_ctx(ctx);

	/*
	 * Event captures keep their record job and waiters hold the job they
	 * wait for: they get slots beyond the quota of tasks in flight. Only
	 * the first chunk is allocated now; the pool grows up to this size
	 * as submissions need it.
	 */
	ret = snpu_pool_init(ctx, snpu_quota.tasks + snpu_quota.events +
			     SNPU_POOL_SLACK);
	if (ret) {
		ida_free(&sdev->va_windows, window);
		kfree(ctx->busy);
		kfree(ctx);
		return ret;
	}

	/* Named by its id from the moment a backup can see it. */
	ctx->id = atomic64_inc_return(&snpu_ctx_ids);
	ret = snpu_proc_attach(ctx);
	if (ret) {
		snpu_pool_fini(ctx);
		ida_free(&sdev->va_windows, window);
		kfree(ctx->busy);
		kfree(ctx);
		return ret;
	}
	mutex_lock(&sdev->ctx_lock);
	list_add_tail(&ctx->dev_node, &sdev->ctx_list);
	mutex_unlock(&sdev->ctx_lock);

	atomic_inc(&sdev->contexts);
	file->private_data = ctx;
	return 0;
}

/*
 * Releases that jobs leave behind (see snpu_host_put_deferred()): flushed
 * by every file's release, destroyed at module unload.
 */
struct workqueue_struct *snpu_free_wq;

/**
 * snpu_free_wq_init() - create the workqueue of deferred releases
 *
 * Return: 0 or -ENOMEM.
 */
int snpu_free_wq_init(void)
{
	snpu_free_wq = alloc_workqueue("snpu_free", WQ_UNBOUND, 0);
	return snpu_free_wq ? 0 : -ENOMEM;
}

/**
 * snpu_free_wq_exit() - run what is left of the deferred releases
 */
void snpu_free_wq_exit(void)
{
	destroy_workqueue(snpu_free_wq);
}

static int snpu_release(struct inode *inode, struct file *file)
{
	struct snpu_context *ctx = file->private_data;
	struct snpu_object *obj;
	struct snpu_owner *owner;
	struct snpu_stream *s;
	struct snpu_event *e;
	struct snpu_host *h;
	struct snpu_comm_rank *r;
	struct snpu_graph *g;
	unsigned long index;

	mutex_lock(&ctx->sdev->ctx_lock);
	list_del(&ctx->dev_node);
	mutex_unlock(&ctx->sdev->ctx_lock);

	/* Stop taking SQEs, cancel what has not run, wait for what runs. */
	snpu_ring_stop(ctx);
	snpu_cancel_all(ctx);
	/* The last file of a locked process unlocks it. */
	snpu_proc_detach(ctx);

	mutex_lock(&ctx->lock);
	/* A backup or restore holding a reference skips it from here on. */
	ctx->closed = true;
	xa_for_each(&ctx->handles, index, obj) {
		switch (obj->type) {
		case SNPU_OBJ_STREAM:
			s = container_of(obj, struct snpu_stream, obj);
			/* An attached stream goes with its owner. */
			if (!s->owner)
				snpu_stream_destroy_locked(ctx, s);
			break;
		case SNPU_OBJ_OWNER:
			owner = container_of(obj, struct snpu_owner, obj);
			snpu_owner_destroy_locked(ctx, owner);
			break;
		case SNPU_OBJ_EVENT:
			e = container_of(obj, struct snpu_event, obj);
			snpu_event_destroy_locked(ctx, e);
			break;
		case SNPU_OBJ_HOST:
			h = container_of(obj, struct snpu_host, obj);
			snpu_host_destroy_locked(ctx, h);
			break;
		case SNPU_OBJ_GRAPH:
			g = container_of(obj, struct snpu_graph, obj);
			snpu_graph_destroy_locked(ctx, g);
			break;
		case SNPU_OBJ_COMM:
			r = container_of(obj, struct snpu_comm_rank, obj);
			snpu_comm_rank_destroy_locked(ctx, r);
			break;
		}
	}
	mutex_unlock(&ctx->lock);
	snpu_comm_release(ctx);

	snpu_ring_free(ctx);
	snpu_mem_destroy_all(ctx);
	mtree_destroy(&ctx->host_va);
	xa_destroy(&ctx->handles);
	snpu_pool_fini(ctx);
	/* What the jobs left to unpin is unpinned when close returns. */
	flush_workqueue(snpu_free_wq);
	/* Allocations a live dma-buf holds stay charged until it goes. */
	WARN_ON((atomic64_read(&ctx->mem_used) && !atomic_read(&ctx->exports)) ||
		atomic64_read(&ctx->host_used));
	ida_free(&ctx->sdev->va_windows, ctx->va_window);
	atomic_dec(&ctx->sdev->contexts);
	snpu_ctx_put(ctx);
	return 0;
}

static __poll_t snpu_poll(struct file *file, poll_table *wait)
{
	return snpu_callback_poll(file->private_data, file, wait);
}

const struct file_operations snpu_fops = {
	.owner = THIS_MODULE,
	.open = snpu_open,
	.release = snpu_release,
	.unlocked_ioctl = snpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = snpu_mmap,
	.poll = snpu_poll,
	.llseek = noop_llseek,
	.show_fdinfo = snpu_show_fdinfo,
};
