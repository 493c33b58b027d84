// SPDX-License-Identifier: GPL-2.0
/*
 * snpu host callbacks: a HOST_FUNC job that becomes ready is queued for
 * the process, which takes it with CALLBACK_WAIT (or learns of it with
 * poll) and completes it with CALLBACK_DONE; its stream waits meanwhile.
 * A file whose rings were set up with SNPU_RING_CALLBACK_CQE gets its
 * callbacks as CQEs instead (ring.c) and may complete them with
 * SNPU_OP_CALLBACK_DONE SQEs: both ways end in snpu_callback_complete().
 */
#include <linux/poll.h>

#include "snpu.h"

/* A cookie names a pool slot and the use of it: stale cookies fail. */
#define SNPU_COOKIE_SHIFT	16
#define SNPU_COOKIE_MASK	((1U << SNPU_COOKIE_SHIFT) - 1)

/**
 * snpu_callback_cookie() - the cookie that names a delivered callback
 * @job: the HOST_FUNC job
 *
 * Return: its pool slot and its use of it: a stale cookie names nothing.
 */
u32 snpu_callback_cookie(const struct snpu_job *job)
{
	return (job->gen << SNPU_COOKIE_SHIFT) | job->index;
}

/**
 * snpu_callback_delivered_locked() - a callback has reached the process
 * @ctx: the context
 * @job: the HOST_FUNC job, taken off any queue
 *
 * From now on only its cookie completes it (or the file's release).
 */
void snpu_callback_delivered_locked(struct snpu_context *ctx,
				    struct snpu_job *job)
{
	lockdep_assert_held(&ctx->sched_lock);
	job->state = SNPU_JOB_DELIVERED;
	/* A callback requeued and delivered again started once. */
	if (!job->start_ns)
		snpu_job_trace_start(ctx, job);
}

static bool snpu_callback_pending(struct snpu_context *ctx)
{
	return !list_empty_careful(&ctx->callbacks);
}

/* Take the first queued callback, if any. */
static struct snpu_job *snpu_callback_take(struct snpu_context *ctx)
{
	struct snpu_job *job = NULL;

	spin_lock(&ctx->sched_lock);
	if (!list_empty(&ctx->callbacks)) {
		job = list_first_entry(&ctx->callbacks, struct snpu_job, node);
		list_del_init(&job->node);
		snpu_callback_delivered_locked(ctx, job);
	}
	spin_unlock(&ctx->sched_lock);
	return job;
}

/*
 * The caller never learnt of a taken callback: put it back first in the
 * queue for the next CALLBACK_WAIT, unless a DONE that guessed its cookie
 * already completed it.
 */
static void snpu_callback_requeue(struct snpu_context *ctx,
				  struct snpu_job *job, u32 cookie)
{
	spin_lock(&ctx->sched_lock);
	if (job->state == SNPU_JOB_DELIVERED &&
	    snpu_callback_cookie(job) == cookie) {
		job->state = SNPU_JOB_CALLBACK;
		list_add(&job->node, &ctx->callbacks);
		wake_up_all(&ctx->wq);
	}
	spin_unlock(&ctx->sched_lock);
}

int snpu_ioc_callback_wait(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_callback *cb = &arg->callback;
	struct snpu_job *job;
	long ret;

	/* Outputs, and DONE's @status, are ignored: a WAIT/DONE loop. */
	if (!snpu_zero(cb->reserved, sizeof(cb->reserved)) || cb->pad ||
	    cb->timeout_ns < -1)
		return -EINVAL;

	for (;;) {
		s64 left = snpu_timeout_left(cb->flags, cb->timeout_ns);

		job = snpu_callback_take(ctx);
		if (job)
			break;
		if (!left)
			return -ETIMEDOUT;
		if (left < 0)
			ret = wait_event_interruptible(ctx->wq,
						       snpu_callback_pending(ctx));
		else
			ret = wait_event_interruptible_hrtimeout(ctx->wq,
								 snpu_callback_pending(ctx),
								 ns_to_ktime(left));
		ret = snpu_wait_result(cb->flags, cb->timeout_ns, ret);
		if (ret)
			return ret;
	}

	cb->user_data = job->user_data;
	cb->stream = job->stream_handle;
	cb->cookie = snpu_callback_cookie(job);
	/* Delivered only once the caller has it: nobody else could answer. */
	ret = snpu_ioc_copy_out(arg);
	if (ret)
		snpu_callback_requeue(ctx, job, cb->cookie);
	return ret;
}

/**
 * snpu_callback_complete() - the process is done with a callback
 * @ctx: the context
 * @cookie: the callback's cookie, as delivered
 * @status: 0, or a -errno (checked by the caller) that fails its task
 *
 * Return: 0, or -ENOENT when @cookie names no callback of @ctx that is
 * delivered and not yet complete.
 */
int snpu_callback_complete(struct snpu_context *ctx, u32 cookie, int status)
{
	struct snpu_job *job = snpu_pool_job(ctx, cookie & SNPU_COOKIE_MASK);

	if (!job)
		return -ENOENT;
	spin_lock(&ctx->sched_lock);
	if (job->state != SNPU_JOB_DELIVERED ||
	    snpu_callback_cookie(job) != cookie) {
		spin_unlock(&ctx->sched_lock);
		return -ENOENT;
	}
	job->state = SNPU_JOB_READY;
	spin_unlock(&ctx->sched_lock);

	snpu_job_complete(job, status, 0, NULL);
	return 0;
}

int snpu_ioc_callback_done(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_callback *cb = &arg->callback;

	/* WAIT's fields (@timeout_ns and its outputs) are ignored. */
	if (!snpu_zero(cb->reserved, sizeof(cb->reserved)) || cb->pad ||
	    cb->status > 0 || cb->status < -MAX_ERRNO)
		return -EINVAL;
	return snpu_callback_complete(ctx, cb->cookie, cb->status);
}

/**
 * snpu_callback_poll() - poll(2) of a device file
 * @ctx: the file's context
 * @file: the file
 * @wait: poll table
 *
 * Return: EPOLLIN when a callback waits for CALLBACK_WAIT.
 */
__poll_t snpu_callback_poll(struct snpu_context *ctx, struct file *file,
			    poll_table *wait)
{
	poll_wait(file, &ctx->wq, wait);
	return snpu_callback_pending(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}
