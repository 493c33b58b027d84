// SPDX-License-Identifier: GPL-2.0
/*
 * snpu streams: in-order queues with a 64-bit timeline and a sticky error.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/slab.h>

#include "snpu.h"

static bool snpu_job_done(struct snpu_job *job)
{
	return READ_ONCE(job->state) == SNPU_JOB_DONE;
}

/**
 * snpu_wait_job() - wait until a job is complete
 * @ctx: the job's context
 * @job: a job the caller holds a reference to
 * @flags: SNPU_WAIT_ABSOLUTE or 0
 * @timeout_ns: relative timeout, 0 to poll, negative to wait forever; with
 *              SNPU_WAIT_ABSOLUTE a CLOCK_MONOTONIC deadline
 *
 * Return: 0, -ETIMEDOUT, or on a signal -ERESTARTSYS (no timeout, or a
 * deadline) or -EINTR (a relative timeout is not restarted).
 */
int snpu_wait_job(struct snpu_context *ctx, struct snpu_job *job, u32 flags,
		  s64 timeout_ns)
{
	s64 left = snpu_timeout_left(flags, timeout_ns);
	long ret;

	if (snpu_job_done(job))
		return 0;
	if (!left)
		return -ETIMEDOUT;
	/* Completion wakes the context's waiters only for waited jobs. */
	spin_lock(&ctx->sched_lock);
	job->waited = true;
	spin_unlock(&ctx->sched_lock);
	if (left < 0)
		return wait_event_interruptible(ctx->wq, snpu_job_done(job));
	ret = wait_event_interruptible_hrtimeout(ctx->wq, snpu_job_done(job),
						 ns_to_ktime(left));
	return snpu_wait_result(flags, timeout_ns, ret);
}

/**
 * snpu_stream_tail_get() - reference the stream's last job if not complete
 * @ctx: the context
 * @s: the stream
 *
 * Return: the job, to be put with snpu_job_put(), or NULL.
 */
struct snpu_job *snpu_stream_tail_get(struct snpu_context *ctx,
				      struct snpu_stream *s)
{
	struct snpu_job *tail;

	spin_lock(&ctx->sched_lock);
	tail = s->tail;
	if (tail)
		refcount_inc(&tail->ref);
	spin_unlock(&ctx->sched_lock);
	return tail;
}

/**
 * snpu_stream_new_locked() - create a stream within the context's quota
 * @ctx: the context
 * @priority: SNPU_PRIO_*, checked by the caller
 *
 * Return: the stream with its handle, or ERR_PTR(-ENOSPC) past the stream
 * quota, or ERR_PTR(-ENOMEM); nothing is left behind on error.
 */
struct snpu_stream *snpu_stream_new_locked(struct snpu_context *ctx,
					   int priority)
{
	return snpu_stream_new_at_locked(ctx, priority, 0);
}

/**
 * snpu_stream_new_at_locked() - create a stream under a given handle
 * @ctx: the context
 * @priority: SNPU_PRIO_*, already checked
 * @handle: the handle a restore gives it, 0 for the next free one
 *
 * Return: the stream, or ERR_PTR(-ENOSPC) at the quota, -ENOMEM, -EBUSY
 * when @handle is taken.
 */
struct snpu_stream *snpu_stream_new_at_locked(struct snpu_context *ctx,
					      int priority, u32 handle)
{
	struct snpu_stream *s;
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (ctx->streams >= snpu_quota.streams)
		return ERR_PTR(-ENOSPC);
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return ERR_PTR(-ENOMEM);
	refcount_set(&s->ref, 1);
	s->priority = priority;
	s->prio = SNPU_PRIO_HIGH - priority;
	INIT_LIST_HEAD(&s->waits);
	INIT_LIST_HEAD(&s->owner_node);
	s->obj.handle = handle;
	ret = snpu_object_add_locked(ctx, &s->obj, SNPU_OBJ_STREAM);
	if (ret) {
		kfree(s);
		return ERR_PTR(ret);
	}
	ctx->streams++;
	return s;
}

/**
 * snpu_priority_check() - may the caller create work of this priority
 * @priority: SNPU_PRIO_* from the caller
 *
 * The high priority is served before everyone else's work on the device,
 * so, as DRM drivers do for a high context priority, it takes
 * CAP_SYS_NICE. It is checked when a stream or owner is created: what was
 * created keeps its priority (a restored image never sets one).
 *
 * Return: 0, -EINVAL for a value out of range, -EACCES for SNPU_PRIO_HIGH
 * without CAP_SYS_NICE.
 */
int snpu_priority_check(s32 priority)
{
	if (priority < SNPU_PRIO_LOW || priority > SNPU_PRIO_HIGH)
		return -EINVAL;
	if (priority == SNPU_PRIO_HIGH && !capable(CAP_SYS_NICE))
		return -EACCES;
	return 0;
}

int snpu_ioc_stream_create(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_stream_create *c = &arg->create;
	struct snpu_stream *s;
	int ret;

	if (!snpu_zero(c->reserved, sizeof(c->reserved)))
		return -EINVAL;
	ret = snpu_priority_check(c->priority);
	if (ret)
		return ret;

	mutex_lock(&ctx->lock);
	s = snpu_stream_new_locked(ctx, c->priority);
	if (!IS_ERR(s))
		c->handle = s->obj.handle;
	mutex_unlock(&ctx->lock);
	return PTR_ERR_OR_ZERO(s);
}

/* Drop a reference to a stream; the last one frees it after RCU. */
static void snpu_stream_put(struct snpu_stream *s)
{
	if (refcount_dec_and_test(&s->ref))
		kfree_rcu(s, obj.rcu);
}

/**
 * snpu_stream_destroy_locked() - free a stream with no job in flight
 * @ctx: the context
 * @s: the stream
 */
void snpu_stream_destroy_locked(struct snpu_context *ctx,
				struct snpu_stream *s)
{
	lockdep_assert_held(&ctx->lock);
	WARN_ON(s->tail);
	if (ctx->stream_hint == s)
		ctx->stream_hint = NULL;
	list_del(&s->owner_node);
	xa_erase(&ctx->handles, s->obj.handle);
	ctx->streams--;
	/* A STREAM_SYNC still waiting on it keeps it until it is done. */
	snpu_stream_put(s);
}

/* Fail the stream with -ECANCELED and drop its undelivered callbacks. */
static void snpu_stream_abort(struct snpu_context *ctx, struct snpu_stream *s)
{
	struct snpu_job *job, *tmp;
	LIST_HEAD(cancel);
	LIST_HEAD(todo);

	spin_lock(&ctx->sched_lock);
	snpu_stream_fail_locked(ctx, s, -ECANCELED, &todo);
	list_for_each_entry_safe(job, tmp, &ctx->callbacks, node) {
		if (job->stream == s) {
			job->state = SNPU_JOB_READY;
			list_move_tail(&job->node, &cancel);
		}
	}
	spin_unlock(&ctx->sched_lock);

	snpu_jobs_run(&todo);
	list_for_each_entry_safe(job, tmp, &cancel, node) {
		list_del_init(&job->node);
		snpu_job_complete(job, -ECANCELED, 0, NULL);
	}
}

int snpu_ioc_stream_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_stream *s;
	struct snpu_job *tail;
	int ret = 0;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad ||
	    (op->flags & ~SNPU_STREAM_DESTROY_FORCE))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	s = snpu_stream_get_locked(ctx, op->handle);
	if (!s || s->destroying || s->owner) {
		mutex_unlock(&ctx->lock);
		return !s ? -ENOENT : s->owner ? -EPERM : -EBUSY;
	}
	/* From here on submit refuses the stream. */
	s->destroying = true;
	if (op->flags & SNPU_STREAM_DESTROY_FORCE)
		snpu_stream_abort(ctx, s);
	tail = snpu_stream_tail_get(ctx, s);
	mutex_unlock(&ctx->lock);

	if (tail) {
		ret = snpu_wait_job(ctx, tail, 0, -1);
		snpu_job_put(ctx, tail);
	}

	mutex_lock(&ctx->lock);
	if (ret)
		s->destroying = false;
	else
		snpu_stream_destroy_locked(ctx, s);
	mutex_unlock(&ctx->lock);
	return ret;
}

int snpu_ioc_stream_sync(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_wait *w = &arg->wait;
	struct snpu_stream *s;
	struct snpu_job *tail;
	int ret;

	if (!snpu_zero(w->reserved, sizeof(w->reserved)) || w->timeout_ns < -1)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	s = snpu_stream_get_locked(ctx, w->handle);
	tail = s ? snpu_stream_tail_get(ctx, s) : NULL;
	/*
	 * The stream, not its handle, is what the caller waits on: keep it
	 * across the wait, since the handle may be destroyed meanwhile.
	 */
	if (tail)
		refcount_inc(&s->ref);
	else if (s)
		w->error = READ_ONCE(s->error);
	mutex_unlock(&ctx->lock);
	if (!s)
		return -ENOENT;
	if (!tail)
		return 0;

	ret = snpu_wait_job(ctx, tail, w->flags, w->timeout_ns);
	snpu_job_put(ctx, tail);
	if (!ret)
		w->error = READ_ONCE(s->error);
	snpu_stream_put(s);
	return ret;
}

int snpu_ioc_stream_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_stream_query *q = &arg->stream_query;
	struct snpu_stream *s;

	if (!snpu_zero(q->reserved, sizeof(q->reserved)) || q->pad)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	s = snpu_stream_get_locked(ctx, q->handle);
	if (s) {
		spin_lock(&ctx->sched_lock);
		q->error = s->error;
		q->submitted = s->submitted;
		q->completed = s->completed;
		spin_unlock(&ctx->sched_lock);
		q->priority = s->priority;
	}
	mutex_unlock(&ctx->lock);
	return s ? 0 : -ENOENT;
}

int snpu_ioc_stream_abort(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_stream *s;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	s = snpu_stream_get_locked(ctx, op->handle);
	if (s)
		snpu_stream_abort(ctx, s);
	mutex_unlock(&ctx->lock);
	return s ? 0 : -ENOENT;
}

int snpu_ioc_stream_reset(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_stream *s;
	int ret = 0;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	s = snpu_stream_get_locked(ctx, op->handle);
	if (s) {
		spin_lock(&ctx->sched_lock);
		if (s->tail)
			ret = -EBUSY;
		else
			WRITE_ONCE(s->error, 0);
		spin_unlock(&ctx->sched_lock);
	}
	mutex_unlock(&ctx->lock);
	return s ? ret : -ENOENT;
}
