// SPDX-License-Identifier: GPL-2.0
/*
 * snpu fences: the completion of an event's capture as a dma_fence in a
 * sync_file (SNPU_IOC_EVENT_EXPORT), and any sync_file as a stream wait
 * (SNPU_OP_FENCE_WAIT). See the kernel's dma-buf.rst and sync_file.rst.
 *
 * Export: a pending capture (an EVENT_RECORD job) gets at most one fence,
 * on its stream's fence context with the capture's sequence number as
 * seqno; every export of it shares that fence. The record job holds a
 * reference and signals it at its completion, under the context's
 * sched_lock, with the error the capture ended with (the stream's error
 * when the capture was cancelled because the stream had failed). The
 * fence is allocated by the ioctl, never at signalling; a capture that
 * is already complete gets a new fence, signalled at once, on the
 * context's own fence context. Closing the file cancels the capture: its
 * fence signals with -ECANCELED; a device reset fails it with -EIO. A
 * fence holds a reference to the module, which its release drops: the
 * fence's ops are the module's.
 *
 * Wait: the submit takes the sync_file's fence; when the job's turn
 * comes (its commit) a callback is armed, which only queues the job's
 * work item: fence callbacks run in the signaller's context (any lock
 * held, interrupts off), where the scheduler's lock may not be taken.
 * The work resolves the wait. A stream that fails or a file that closes
 * disarms the callbacks of its waits and resolves them itself (or lets
 * the work do it, when the callback has run already).
 */
#include <linux/dma-fence.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sync_file.h>

#include "snpu.h"

/**
 * struct snpu_fence - an exported capture
 * @base: the dma_fence; first, so that dma_fence_free() frees it all
 * @lock: the fence's lock (dma_fence state and callbacks)
 * @timeline: the device's name, for SYNC_IOC_FILE_INFO
 */
struct snpu_fence {
	struct dma_fence base;
	spinlock_t lock;		/* the fence's state and callbacks */
	char timeline[16];
};

static const char *snpu_fence_driver_name(struct dma_fence *f)
{
	return "snpu";
}

static const char *snpu_fence_timeline_name(struct dma_fence *f)
{
	return container_of(f, struct snpu_fence, base)->timeline;
}

static void snpu_fence_release(struct dma_fence *f)
{
	dma_fence_free(f);
	module_put(THIS_MODULE);
}

static const struct dma_fence_ops snpu_fence_ops = {
	.get_driver_name = snpu_fence_driver_name,
	.get_timeline_name = snpu_fence_timeline_name,
	.release = snpu_fence_release,
};

/* A fence not initialised yet, charged to the caller; holds the module. */
static struct snpu_fence *snpu_fence_alloc(struct snpu_context *ctx)
{
	struct snpu_fence *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	strscpy(f->timeline, ctx->sdev->name, sizeof(f->timeline));
	__module_get(THIS_MODULE);
	return f;
}

/* A fence snpu_fence_alloc() made and nobody used. */
static void snpu_fence_discard(struct snpu_fence *f)
{
	kfree(f);
	module_put(THIS_MODULE);
}

/*
 * The fence of capture @cap: its own while pending (@nf initialised for
 * it if it has none), else @nf signalled with its error. Return: a
 * reference for the caller; *@nf is set to NULL when it was used.
 */
static struct dma_fence *snpu_fence_of_locked(struct snpu_context *ctx,
					      struct snpu_job *cap,
					      struct snpu_fence **nf)
{
	struct snpu_fence *f = *nf;

	lockdep_assert_held(&ctx->sched_lock);
	if (cap->state != SNPU_JOB_DONE && cap->out_fence)
		return dma_fence_get(cap->out_fence);
	*nf = NULL;
	if (cap->state != SNPU_JOB_DONE) {
		struct snpu_stream *s = cap->stream;

		if (!s->fence_ctx)
			s->fence_ctx = dma_fence_context_alloc(1);
		dma_fence_init(&f->base, &snpu_fence_ops, &f->lock,
			       s->fence_ctx, cap->seq);
		cap->out_fence = dma_fence_get(&f->base);
		return &f->base;
	}
	if (!ctx->fence_ctx)
		ctx->fence_ctx = dma_fence_context_alloc(1);
	dma_fence_init(&f->base, &snpu_fence_ops, &f->lock, ctx->fence_ctx,
		       ++ctx->fence_seqno);
	if (cap->fence_error)
		dma_fence_set_error(&f->base, cap->fence_error);
	dma_fence_signal(&f->base);
	return &f->base;
}

int snpu_ioc_event_export(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_event_export *x = &arg->event_export;
	struct snpu_fence *nf;
	struct dma_fence *fence = NULL;
	struct sync_file *sf;
	struct snpu_event *e;
	int fd, ret;

	if (!snpu_zero(x->reserved, sizeof(x->reserved)))
		return -EINVAL;
	nf = snpu_fence_alloc(ctx);
	if (!nf)
		return -ENOMEM;

	mutex_lock(&ctx->lock);
	e = snpu_event_get_locked(ctx, x->handle);
	if (e && e->capture) {
		spin_lock(&ctx->sched_lock);
		fence = snpu_fence_of_locked(ctx, e->capture, &nf);
		spin_unlock(&ctx->sched_lock);
	}
	mutex_unlock(&ctx->lock);
	if (nf)
		snpu_fence_discard(nf);
	if (!fence)
		return e ? -EINVAL : -ENOENT;

	fd = get_unused_fd_flags(x->flags & SNPU_EXPORT_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		dma_fence_put(fence);
		return fd;
	}
	sf = sync_file_create(fence);
	dma_fence_put(fence);
	if (!sf) {
		put_unused_fd(fd);
		return -ENOMEM;
	}
	/* The fd is the caller's once installed: out first. */
	x->fd = fd;
	ret = snpu_ioc_copy_out(arg);
	if (ret) {
		fput(sf->file);
		put_unused_fd(fd);
		return ret;
	}
	fd_install(fd, sf->file);
	return 0;
}

/**
 * snpu_fence_signal_locked() - a record job with an exported fence completed
 * @ctx: the job's context
 * @job: the job, with @fence_error set
 *
 * Signals and drops the job's fence. In the scheduler's signalling path:
 * allocates nothing and waits for nothing.
 */
void snpu_fence_signal_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	struct dma_fence *f = job->out_fence;

	lockdep_assert_held(&ctx->sched_lock);
	job->out_fence = NULL;
	if (job->fence_error)
		dma_fence_set_error(f, job->fence_error);
	dma_fence_signal(f);
	dma_fence_put(f);
}

/**
 * snpu_fence_wait_prepare() - take the fence of a FENCE_WAIT's sync_file
 * @job: the job being prepared
 * @fd: the sync_file fd, of the calling process
 *
 * Return: 0, -EBADF when @fd is no open file, or -EINVAL when it is not
 * a sync_file (or the caller is a kernel thread, which has no fds).
 */
int snpu_fence_wait_prepare(struct snpu_job *job, s32 fd)
{
	struct file *file;

	if (current->flags & PF_KTHREAD)
		return -EINVAL;
	file = fget(fd);
	if (!file)
		return -EBADF;
	fput(file);
	job->in_fence = sync_file_get_fence(fd);
	return job->in_fence ? 0 : -EINVAL;
}

/* Any context, any lock: only hand the wait to process context. */
static void snpu_fence_wait_cb(struct dma_fence *f, struct dma_fence_cb *cb)
{
	struct snpu_job *job = container_of(cb, struct snpu_job, fence_cb);

	queue_work(snpu_free_wq, &job->fence_work);
}

/* The fence signalled: the wait is over (unless a cancel resolved it). */
static void snpu_fence_wait_work(struct work_struct *work)
{
	struct snpu_job *job = container_of(work, struct snpu_job, fence_work);
	struct snpu_context *ctx = job->ctx;
	LIST_HEAD(todo);

	spin_lock(&ctx->sched_lock);
	list_del_init(&job->fence_node);
	job->fence_error = job->in_fence->error;
	snpu_job_resolve_locked(ctx, job, &todo);
	spin_unlock(&ctx->sched_lock);
	snpu_jobs_run(&todo);
}

/**
 * snpu_fence_job_init() - set up the fence members of a pool job
 * @job: the job, once when its pool chunk is made
 */
void snpu_fence_job_init(struct snpu_job *job)
{
	INIT_LIST_HEAD(&job->fence_node);
	INIT_WORK(&job->fence_work, snpu_fence_wait_work);
}

/**
 * snpu_fence_wait_arm_locked() - a FENCE_WAIT job is committed
 * @ctx: the context
 * @job: the job; its pending count gets the fence unless it signalled
 *
 * No allocation: dma_fence_add_callback() links the job's own callback.
 */
void snpu_fence_wait_arm_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	lockdep_assert_held(&ctx->sched_lock);
	job->fence_error = 0;
	if (dma_fence_add_callback(job->in_fence, &job->fence_cb,
				   snpu_fence_wait_cb)) {
		/* Signalled already. */
		job->fence_error = job->in_fence->error;
		return;
	}
	job->pending++;
	list_add_tail(&job->fence_node, &ctx->fence_waits);
}

/**
 * snpu_fence_wait_cancel_locked() - stop waiting for fences
 * @ctx: the context
 * @s: only the waits of this stream, or NULL for all of the context's
 * @todo: gets the jobs that become ready (to be cancelled)
 *
 * A wait whose callback is disarmed here is resolved here; one whose
 * callback ran already is resolved by its work item.
 */
void snpu_fence_wait_cancel_locked(struct snpu_context *ctx,
				   struct snpu_stream *s,
				   struct list_head *todo)
{
	struct snpu_job *job, *tmp;

	lockdep_assert_held(&ctx->sched_lock);
	list_for_each_entry_safe(job, tmp, &ctx->fence_waits, fence_node) {
		if (s && job->stream != s)
			continue;
		if (!dma_fence_remove_callback(job->in_fence, &job->fence_cb))
			continue;
		list_del_init(&job->fence_node);
		snpu_job_resolve_locked(ctx, job, todo);
	}
}
