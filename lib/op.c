// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: the operator context, and the check that an operator joined
 * its attached-stream work back into its stream before it returned.
 *
 * The check (SNPU_OPEN_CHECK_JOINS, or SNPU_CHECK_JOINS=1 in the
 * environment at open) keeps, per device, the highest sequence number of
 * each stream S that each stream X was made to wait for by a stream wait
 * on an event captured in S. Sequence numbers are the kernel's; the check
 * assumes no other thread submits to the same streams while a batch with
 * waits is being accounted. When an operator returns, every attached
 * stream it requested must have had all its submitted work (the kernel's
 * sequence number) joined that way into the operator's stream.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct snpu_join {
	uint32_t dst;
	uint32_t src;
	uint64_t seq;
};

/* @lock protects the array of joins seen by stream waits. */
struct snpu_joins {
	pthread_mutex_t lock;
	unsigned int nr;
	unsigned int cap;
	struct snpu_join *join;
};

static bool snpu_env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

int snpu_joins_init(struct snpu_device *dev, unsigned int flags)
{
	struct snpu_joins *j;

	if (!(flags & SNPU_OPEN_CHECK_JOINS) && !snpu_env_on("SNPU_CHECK_JOINS"))
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	dev->joins = j;
	return 0;
}

void snpu_joins_fini(struct snpu_device *dev)
{
	struct snpu_joins *j = dev->joins;

	if (!j)
		return;
	pthread_mutex_destroy(&j->lock);
	free(j->join);
	free(j);
	dev->joins = NULL;
}

/* The join record of (dst, src), created when @create; under the lock. */
static struct snpu_join *snpu_join_find(struct snpu_joins *j, uint32_t dst,
					uint32_t src, bool create)
{
	struct snpu_join *n;
	unsigned int i;

	for (i = 0; i < j->nr; i++)
		if (j->join[i].dst == dst && j->join[i].src == src)
			return &j->join[i];
	if (!create)
		return NULL;
	if (j->nr == j->cap) {
		unsigned int cap = j->cap ? 2 * j->cap : 16;

		n = realloc(j->join, cap * sizeof(*n));
		if (!n)
			return NULL;
		j->join = n;
		j->cap = cap;
	}
	n = &j->join[j->nr++];
	*n = (struct snpu_join){ .dst = dst, .src = src };
	return n;
}

/* A capture: the stream an event was recorded on and the record's seq. */
struct snpu_join_cap {
	uint32_t stream;
	uint64_t seq;
};

struct snpu_join_cap *snpu_joins_before(struct snpu_device *dev,
					const struct snpu_task *tasks,
					unsigned int count)
{
	struct snpu_join_cap *caps = calloc(count, sizeof(*caps));
	struct snpu_event_query q;
	unsigned int i;

	if (!caps)
		return NULL;
	/* What each wait would wait for if the batch recorded nothing. */
	for (i = 0; i < count; i++)
		if (tasks[i].op == SNPU_OP_STREAM_WAIT &&
		    !snpu_event_query(dev, tasks[i].event.event, &q))
			caps[i] = (struct snpu_join_cap){ q.stream, q.seq };
	return caps;
}

/* The sequence number the kernel gave task @i of an accepted batch. */
static uint64_t snpu_batch_seq(struct snpu_device *dev,
			       const struct snpu_task *tasks,
			       unsigned int count, unsigned int i)
{
	struct snpu_stream_query q;
	unsigned int j, later = 0;

	/* A stream's tasks get consecutive numbers in batch order. */
	for (j = i + 1; j < count; j++)
		if (tasks[j].stream == tasks[i].stream)
			later++;
	if (snpu_stream_query(dev, tasks[i].stream, &q))
		return 0;
	return q.submitted - later;
}

void snpu_joins_note(struct snpu_device *dev, const struct snpu_task *tasks,
		     unsigned int count, struct snpu_join_cap *caps)
{
	struct snpu_joins *j = dev->joins;
	struct snpu_join *join;
	unsigned int i, k;

	if (!caps)
		return;
	/*
	 * Walk the batch in order: a wait waits for the latest record of
	 * its event before it in the batch, else for the capture the event
	 * had before the batch.
	 */
	for (i = 0; i < count; i++) {
		const struct snpu_task *t = &tasks[i];
		struct snpu_join_cap cap = caps[i];

		if (t->op != SNPU_OP_STREAM_WAIT)
			continue;
		for (k = i; k-- > 0;) {
			if (tasks[k].op == SNPU_OP_EVENT_RECORD &&
			    tasks[k].event.event == t->event.event) {
				cap.stream = tasks[k].stream;
				cap.seq = snpu_batch_seq(dev, tasks, count, k);
				break;
			}
		}
		if (!cap.stream)
			continue;
		pthread_mutex_lock(&j->lock);
		join = snpu_join_find(j, t->stream, cap.stream, true);
		if (join && cap.seq > join->seq)
			join->seq = cap.seq;
		pthread_mutex_unlock(&j->lock);
	}
	free(caps);
}

/* Has every task submitted to @a's stream been joined into @dst? */
static int snpu_op_check_one(struct snpu_op_ctx *ctx, struct snpu_attached *a)
{
	struct snpu_device *dev = ctx->owner->dev;
	struct snpu_joins *j = dev->joins;
	struct snpu_stream_query q;
	struct snpu_join *join;
	uint64_t joined;
	int ret;

	ret = snpu_stream_query(dev, a->stream, &q);
	if (ret)
		return ret;
	pthread_mutex_lock(&j->lock);
	join = snpu_join_find(j, ctx->stream, a->stream, false);
	joined = join ? join->seq : 0;
	pthread_mutex_unlock(&j->lock);
	if (q.submitted <= joined)
		return 0;
	fprintf(stderr,
		"libsnpu: operator '%s' returned with unjoined work on attached stream '%s' (submitted up to %llu, joined into stream %u up to %llu)\n",
		ctx->name ? ctx->name : "?", a->key,
		(unsigned long long)q.submitted, ctx->stream,
		(unsigned long long)joined);
	return -EPROTO;
}

static int snpu_op_check(struct snpu_op_ctx *ctx)
{
	unsigned int i;
	int ret = 0, r;

	for (i = 0; i < ctx->ntracked; i++) {
		r = snpu_op_check_one(ctx, ctx->tracked[i]);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int snpu_op_run(struct snpu_owner *owner, uint32_t stream, const char *name,
		snpu_op_fn fn, void *arg)
{
	struct snpu_op_ctx ctx = {
		.owner = owner,
		.stream = stream,
		.name = name,
	};
	int ret;

	if (!owner || !fn)
		return -EINVAL;
	ret = fn(&ctx, arg);
	if (ret || !owner->dev || !owner->dev->joins)
		return ret;
	return snpu_op_check(&ctx);
}

uint32_t snpu_op_ctx_stream(const struct snpu_op_ctx *ctx)
{
	return ctx ? ctx->stream : 0;
}

struct snpu_device *snpu_op_ctx_device(const struct snpu_op_ctx *ctx)
{
	return ctx ? ctx->owner->dev : NULL;
}

/* Remember an attached stream the operator used, once. */
static void snpu_op_track(struct snpu_op_ctx *ctx, struct snpu_attached *a)
{
	unsigned int i;

	for (i = 0; i < ctx->ntracked; i++)
		if (ctx->tracked[i] == a)
			return;
	if (ctx->ntracked < SNPU_OP_TRACKED) {
		ctx->tracked[ctx->ntracked++] = a;
		return;
	}
	/* Once per operator call. */
	if (ctx->untracked++)
		return;
	fprintf(stderr,
		"libsnpu: operator '%s' uses more than %d attached streams; '%s' is not checked for joins\n",
		ctx->name ? ctx->name : "?", SNPU_OP_TRACKED, a->key);
}

int snpu_op_ctx_request_attached_stream(struct snpu_op_ctx *ctx,
					const char *key, uint32_t *stream)
{
	struct snpu_attached *a;
	int ret;

	if (!ctx || !stream)
		return -EINVAL;
	ret = snpu_owner_lookup(ctx->owner, key, &a);
	if (ret)
		return ret;
	if (ctx->owner->dev && ctx->owner->dev->joins)
		snpu_op_track(ctx, a);
	*stream = a->stream;
	return 0;
}
