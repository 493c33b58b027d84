// SPDX-License-Identifier: GPL-2.0
/*
 * snpu events: an event is the last capture recorded into it. A capture
 * is the record job itself, kept (with a reference) after it completes so
 * that its completion time and error stay readable.
 */
#include <linux/slab.h>

#include "snpu.h"

int snpu_ioc_event_create(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_stream_create *c = &arg->create;
	struct snpu_event *e;
	int ret;

	if (!snpu_zero(c->reserved, sizeof(c->reserved)) || c->priority)
		return -EINVAL;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return -ENOMEM;

	mutex_lock(&ctx->lock);
	if (ctx->events >= snpu_quota.events) {
		ret = -ENOSPC;
	} else {
		ret = snpu_object_add_locked(ctx, &e->obj, SNPU_OBJ_EVENT);
		if (!ret)
			ctx->events++;
	}
	mutex_unlock(&ctx->lock);
	if (ret) {
		kfree(e);
		return ret;
	}
	c->handle = e->obj.handle;
	return 0;
}

/**
 * snpu_event_destroy_locked() - free an event
 * @ctx: the context
 * @e: the event; a pending capture still completes, waits keep theirs
 */
void snpu_event_destroy_locked(struct snpu_context *ctx, struct snpu_event *e)
{
	lockdep_assert_held(&ctx->lock);
	xa_erase(&ctx->handles, e->obj.handle);
	ctx->events--;
	if (e->capture)
		snpu_job_put(ctx, e->capture);
	kfree_rcu(e, obj.rcu);
}

int snpu_ioc_event_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_event *e;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	e = snpu_event_get_locked(ctx, op->handle);
	if (e)
		snpu_event_destroy_locked(ctx, e);
	mutex_unlock(&ctx->lock);
	return e ? 0 : -ENOENT;
}

int snpu_ioc_event_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_event_query *q = &arg->event_query;
	struct snpu_event *e;
	struct snpu_job *cap;

	if (!snpu_zero(q->reserved, sizeof(q->reserved)))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	e = snpu_event_get_locked(ctx, q->handle);
	if (e) {
		spin_lock(&ctx->sched_lock);
		cap = e->capture;
		/* Every output is written: the input may hold anything. */
		q->state = SNPU_EVENT_NEVER_RECORDED;
		q->stream = 0;
		q->error = 0;
		q->seq = 0;
		q->time_ns = 0;
		if (cap) {
			q->stream = cap->stream_handle;
			q->seq = cap->seq;
			if (cap->state == SNPU_JOB_DONE) {
				q->state = SNPU_EVENT_COMPLETE;
				q->error = cap->error;
				q->time_ns = cap->done_ns;
			} else {
				q->state = SNPU_EVENT_PENDING;
			}
		}
		spin_unlock(&ctx->sched_lock);
	}
	mutex_unlock(&ctx->lock);
	return e ? 0 : -ENOENT;
}

int snpu_ioc_event_sync(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_wait *w = &arg->wait;
	struct snpu_event *e;
	struct snpu_job *cap = NULL;
	int ret;

	if (!snpu_zero(w->reserved, sizeof(w->reserved)) || w->timeout_ns < -1)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	e = snpu_event_get_locked(ctx, w->handle);
	if (e && e->capture) {
		cap = e->capture;
		refcount_inc(&cap->ref);
	}
	mutex_unlock(&ctx->lock);
	if (!e)
		return -ENOENT;
	if (!cap)
		return -EINVAL;

	ret = snpu_wait_job(ctx, cap, w->flags, w->timeout_ns);
	if (!ret)
		w->error = cap->error;
	snpu_job_put(ctx, cap);
	return ret;
}

int snpu_ioc_event_elapsed(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_event_elapsed *el = &arg->elapsed;
	struct snpu_event *a, *b;
	int ret = 0;

	if (!snpu_zero(el->reserved, sizeof(el->reserved)))
		return -EINVAL;

	mutex_lock(&ctx->lock);
	a = snpu_event_get_locked(ctx, el->start);
	b = snpu_event_get_locked(ctx, el->end);
	if (!a || !b) {
		ret = -ENOENT;
	} else if (!a->capture || !b->capture) {
		ret = -EINVAL;
	} else {
		spin_lock(&ctx->sched_lock);
		if (a->capture->state != SNPU_JOB_DONE ||
		    b->capture->state != SNPU_JOB_DONE)
			ret = -EBUSY;
		else
			el->ns = (s64)(b->capture->done_ns - a->capture->done_ns);
		spin_unlock(&ctx->sched_lock);
	}
	mutex_unlock(&ctx->lock);
	return ret;
}
