// SPDX-License-Identifier: GPL-2.0
/*
 * snpu host callbacks: a HOST_FUNC job that becomes ready is queued for
 * the process, which takes it with CALLBACK_WAIT (or learns of it with
 * poll) and completes it with CALLBACK_DONE; its stream waits meanwhile.
 */
#include <linux/poll.h>

#include "snpu.h"

/* A cookie names a pool slot and the use of it: stale cookies fail. */
#define SNPU_COOKIE_SHIFT	16
#define SNPU_COOKIE_MASK	((1U << SNPU_COOKIE_SHIFT) - 1)

static u32 snpu_cookie(struct snpu_context *ctx, struct snpu_job *job)
{
	return (job->gen << SNPU_COOKIE_SHIFT) | job->index;
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
		job->state = SNPU_JOB_DELIVERED;
	}
	spin_unlock(&ctx->sched_lock);
	return job;
}

int snpu_ioc_callback_wait(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_callback *cb = &arg->callback;
	struct snpu_job *job;
	long ret;

	if (!snpu_zero(cb->reserved, sizeof(cb->reserved)) || cb->pad ||
	    cb->status || cb->cookie || cb->user_data || cb->stream ||
	    cb->timeout_ns < -1)
		return -EINVAL;

	for (;;) {
		job = snpu_callback_take(ctx);
		if (job)
			break;
		if (!cb->timeout_ns)
			return -ETIMEDOUT;
		if (cb->timeout_ns < 0) {
			ret = wait_event_interruptible(ctx->wq,
						       snpu_callback_pending(ctx));
		} else {
			ktime_t to = ns_to_ktime(cb->timeout_ns);

			ret = wait_event_interruptible_hrtimeout(ctx->wq,
								 snpu_callback_pending(ctx),
								 to);
			if (ret == -ETIME)
				ret = -ETIMEDOUT;
			else if (ret == -ERESTARTSYS)
				ret = -EINTR;
		}
		if (ret)
			return ret;
	}

	cb->user_data = job->user_data;
	cb->stream = job->stream_handle;
	cb->cookie = snpu_cookie(ctx, job);
	return 0;
}

int snpu_ioc_callback_done(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_callback *cb = &arg->callback;
	u32 index = cb->cookie & SNPU_COOKIE_MASK;
	struct snpu_job *job;

	if (!snpu_zero(cb->reserved, sizeof(cb->reserved)) || cb->pad ||
	    cb->timeout_ns || cb->user_data || cb->stream ||
	    cb->status > 0 || cb->status < -MAX_ERRNO)
		return -EINVAL;
	job = snpu_pool_job(ctx, index);
	if (!job)
		return -ENOENT;
	spin_lock(&ctx->sched_lock);
	if (job->state != SNPU_JOB_DELIVERED ||
	    snpu_cookie(ctx, job) != cb->cookie) {
		spin_unlock(&ctx->sched_lock);
		return -ENOENT;
	}
	job->state = SNPU_JOB_READY;
	spin_unlock(&ctx->sched_lock);

	snpu_job_complete(job, cb->status, NULL);
	return 0;
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
