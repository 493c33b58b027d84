// SPDX-License-Identifier: GPL-2.0
/*
 * snpu owners: executor instances that request extra streams by key. An
 * owner's attached streams are created on first request, shared by every
 * later request with the same key, and destroyed only with the owner.
 */
#include <linux/err.h>
#include <linux/slab.h>

#include "snpu.h"

static struct snpu_owner *snpu_owner_get_locked(struct snpu_context *ctx,
						u32 handle)
{
	struct snpu_object *obj = snpu_object_get_locked(ctx, handle,
							 SNPU_OBJ_OWNER);

	return obj ? container_of(obj, struct snpu_owner, obj) : NULL;
}

int snpu_ioc_owner_create(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_stream_create *c = &arg->create;
	struct snpu_owner *owner;
	int ret;

	if (!snpu_zero(c->reserved, sizeof(c->reserved)))
		return -EINVAL;
	ret = snpu_priority_check(c->priority);
	if (ret)
		return ret;

	owner = kzalloc(sizeof(*owner), GFP_KERNEL_ACCOUNT);
	if (!owner)
		return -ENOMEM;
	owner->priority = c->priority;
	INIT_LIST_HEAD(&owner->streams);

	mutex_lock(&ctx->lock);
	/* An owner without a stream is of no use past the stream quota. */
	if (ctx->owners >= snpu_quota.streams) {
		ret = -ENOSPC;
	} else {
		ret = snpu_object_add_locked(ctx, &owner->obj, SNPU_OBJ_OWNER);
		if (!ret)
			ctx->owners++;
	}
	mutex_unlock(&ctx->lock);
	if (ret) {
		kfree(owner);
		return ret;
	}
	c->handle = owner->obj.handle;
	return 0;
}

/**
 * snpu_owner_destroy_locked() - free an owner and its attached streams
 * @ctx: the context
 * @owner: the owner; none of its streams has a job in flight
 */
void snpu_owner_destroy_locked(struct snpu_context *ctx,
			       struct snpu_owner *owner)
{
	struct snpu_stream *s, *tmp;

	lockdep_assert_held(&ctx->lock);
	list_for_each_entry_safe(s, tmp, &owner->streams, owner_node)
		snpu_stream_destroy_locked(ctx, s);
	xa_erase(&ctx->handles, owner->obj.handle);
	ctx->owners--;
	kfree_rcu(owner, obj.rcu);
}

/* Mark the owner and its streams: lookups and submits refuse them. */
static void snpu_owner_mark_locked(struct snpu_owner *owner, bool destroying)
{
	struct snpu_stream *s;

	owner->destroying = destroying;
	list_for_each_entry(s, &owner->streams, owner_node)
		s->destroying = destroying;
}

int snpu_ioc_owner_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *op = &arg->handle_op;
	struct snpu_owner *owner;
	struct snpu_stream *s;
	struct snpu_job *tail;
	int ret = 0;

	if (!snpu_zero(op->reserved, sizeof(op->reserved)) || op->pad)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	owner = snpu_owner_get_locked(ctx, op->handle);
	if (!owner || owner->destroying) {
		mutex_unlock(&ctx->lock);
		return owner ? -EBUSY : -ENOENT;
	}
	snpu_owner_mark_locked(owner, true);
	mutex_unlock(&ctx->lock);

	/*
	 * Only this call frees the owner and its streams, and no stream joins
	 * the list while the owner is marked: the list is stable unlocked.
	 */
	list_for_each_entry(s, &owner->streams, owner_node) {
		tail = snpu_stream_tail_get(ctx, s);
		if (!tail)
			continue;
		ret = snpu_wait_job(ctx, tail, 0, -1);
		snpu_job_put(ctx, tail);
		if (ret)
			break;
	}

	mutex_lock(&ctx->lock);
	if (ret)
		snpu_owner_mark_locked(owner, false);
	else
		snpu_owner_destroy_locked(ctx, owner);
	mutex_unlock(&ctx->lock);
	return ret;
}

/* The owner's stream with this key, or NULL. */
static struct snpu_stream *snpu_owner_find_locked(struct snpu_owner *owner,
						  const char *key)
{
	struct snpu_stream *s;

	list_for_each_entry(s, &owner->streams, owner_node)
		if (!memcmp(s->key, key, SNPU_ATTACHED_KEY_MAX))
			return s;
	return NULL;
}

int snpu_ioc_attached_stream_get(struct snpu_context *ctx,
				 union snpu_ioc_arg *arg)
{
	struct snpu_attached_stream *a = &arg->attached;
	struct snpu_owner *owner;
	struct snpu_stream *s;
	int ret = 0;

	if (!snpu_zero(a->reserved, sizeof(a->reserved)) || a->pad)
		return -EINVAL;
	ret = snpu_key_check(a->key, sizeof(a->key));
	if (ret < 0)
		return ret;
	a->created = 0;

	mutex_lock(&ctx->lock);
	owner = snpu_owner_get_locked(ctx, a->owner);
	if (!owner || owner->destroying) {
		s = ERR_PTR(-ENOENT);
		goto out;
	}
	s = snpu_owner_find_locked(owner, a->key);
	if (s)
		goto out;
	s = snpu_stream_new_locked(ctx, owner->priority);
	if (IS_ERR(s))
		goto out;
	s->owner = owner;
	memcpy(s->key, a->key, sizeof(s->key));
	list_add_tail(&s->owner_node, &owner->streams);
	a->created = 1;
out:
	if (!IS_ERR(s))
		a->handle = s->obj.handle;
	mutex_unlock(&ctx->lock);
	return PTR_ERR_OR_ZERO(s);
}
