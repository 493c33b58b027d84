// SPDX-License-Identifier: GPL-2.0
/*
 * snpu jobs: the task pool of a context, submission (check, reference,
 * link) and completion (resolve successors, wake waiters).
 *
 * A job depends on at most two others: its stream predecessor and, for a
 * STREAM_WAIT, the record job of the event's capture. Both edges live in
 * the waiting job (pending count, @next of the predecessor, @wait_node in
 * the record job's @waiters), so linking and resolving allocate nothing
 * and a completion touches only its own successors.
 */
#include <linux/ktime.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "snpu.h"
#include "trace.h"

/*
 * Pool chunks are the opener's: charged to its memory cgroup (also when
 * the SQ poller thread or another process holding the file grows the
 * pool), and a cgroup at its limit fails the submission with ENOMEM
 * rather than invoking its OOM killer.
 */
#define SNPU_POOL_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* A chunk of @n jobs for slots @base on, on @list (not yet in the pool). */
static struct snpu_job *snpu_pool_chunk(struct snpu_context *ctx, u32 base,
					u32 n, struct list_head *list)
{
	struct snpu_job *chunk;
	u32 i;

	chunk = kvcalloc(n, sizeof(*chunk), SNPU_POOL_GFP);
	if (!chunk)
		return NULL;
	for (i = 0; i < n; i++) {
		struct snpu_job *job = &chunk[i];

		job->ctx = ctx;
		job->index = base + i;
		job->work.job = job;
		INIT_LIST_HEAD(&job->work.node);
		INIT_LIST_HEAD(&job->waiters);
		INIT_LIST_HEAD(&job->wait_node);
		INIT_LIST_HEAD(&job->ov_node);
		INIT_LIST_HEAD(&job->swait_node);
		snpu_fence_job_init(job);
		list_add_tail(&job->node, list);
	}
	return chunk;
}

/*
 * Add chunks until @need more jobs are free or the pool is full: 0, or
 * -ENOMEM. Allocates outside sched_lock; the context lock keeps other
 * growers out, so slot numbers cannot race.
 */
static int snpu_pool_grow(struct snpu_context *ctx, u32 need)
{
	struct snpu_job *chunk;
	LIST_HEAD(list);
	u32 base, n;

	lockdep_assert_held(&ctx->lock);
	while (need && ctx->pool_size < ctx->pool_max) {
		struct mem_cgroup *old = set_active_memcg(ctx->pool_memcg);

		base = ctx->pool_size;
		n = min_t(u32, SNPU_POOL_CHUNK, ctx->pool_max - base);
		chunk = snpu_pool_chunk(ctx, base, n, &list);
		set_active_memcg(old);
		if (!chunk)
			return -ENOMEM;
		list_splice_tail_init(&list, &ctx->free);
		spin_lock(&ctx->sched_lock);
		ctx->pool[base >> SNPU_POOL_CHUNK_SHIFT] = chunk;
		/* Pairs with the acquire in snpu_pool_job(). */
		smp_store_release(&ctx->pool_size, base + n);
		spin_unlock(&ctx->sched_lock);
		need -= min(need, n);
	}
	return 0;
}

/**
 * snpu_pool_init() - set up the job pool of a context
 * @ctx: the context
 * @size: the most jobs the pool may hold, 1..65536 (callback cookies
 *        name a slot in 16 bits)
 *
 * Allocates the first chunk of SNPU_POOL_CHUNK jobs (fewer if @size is
 * smaller): an open costs that much, not the whole quota. The pool grows
 * by chunks up to @size as snpu_jobs_reserve() runs short, and keeps
 * what it grew until snpu_pool_fini(): once warm, submissions allocate
 * nothing.
 *
 * Return: 0 or -ENOMEM.
 */
int snpu_pool_init(struct snpu_context *ctx, u32 size)
{
	u32 n = min_t(u32, SNPU_POOL_CHUNK, size);

	ctx->pool = kcalloc(DIV_ROUND_UP(size, SNPU_POOL_CHUNK),
			    sizeof(*ctx->pool), SNPU_POOL_GFP);
	if (!ctx->pool)
		return -ENOMEM;
	INIT_LIST_HEAD(&ctx->free);
	init_llist_head(&ctx->freed);
	ctx->pool[0] = snpu_pool_chunk(ctx, 0, n, &ctx->free);
	if (!ctx->pool[0]) {
		kfree(ctx->pool);
		return -ENOMEM;
	}
	ctx->pool_size = n;
	ctx->pool_max = size;
	ctx->pool_memcg = get_mem_cgroup_from_mm(current->mm);
	return 0;
}

/**
 * snpu_pool_fini() - free the job pool of a context with no job in use
 * @ctx: the context
 */
void snpu_pool_fini(struct snpu_context *ctx)
{
	u32 i;

	for (i = 0; i < DIV_ROUND_UP(ctx->pool_size, SNPU_POOL_CHUNK); i++)
		kvfree(ctx->pool[i]);
	kfree(ctx->pool);
	mem_cgroup_put(ctx->pool_memcg);
}

/**
 * snpu_job_put_locked() - drop a reference to a job
 * @ctx: the job's context
 * @job: the job; back to the pool with its last reference
 */
void snpu_job_put_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	lockdep_assert_held(&ctx->sched_lock);
	if (refcount_dec_and_test(&job->ref)) {
		job->state = SNPU_JOB_FREE;
		llist_add(&job->free_node, &ctx->freed);
		snpu_ring_slot_freed_locked(ctx);
	}
}

/**
 * snpu_job_put() - drop a reference to a job, taking the sched lock
 * @ctx: the job's context
 * @job: the job
 */
void snpu_job_put(struct snpu_context *ctx, struct snpu_job *job)
{
	spin_lock(&ctx->sched_lock);
	snpu_job_put_locked(ctx, job);
	spin_unlock(&ctx->sched_lock);
}

/*
 * The task's submit, for the tracepoints: the clock is read for
 * @submit_ns only while a task event is enabled, so that a disabled trace
 * costs no clock read; a commit reads it once (@now) for all its tasks.
 */
static void snpu_job_trace_submit_on(struct snpu_context *ctx,
				     struct snpu_job *job, u64 seq, u64 *now)
{
	const struct snpu_work *w = &job->work;
	bool launch = job->op == SNPU_OP_LAUNCH;

	if (!*now)
		*now = ktime_get_ns();
	job->submit_ns = *now;
	trace_snpu_task_submit(ctx->sdev->index, ctx->id, job->stream_handle,
			       seq, job->op, launch ? w->launch.kernel : 0,
			       launch ? w->launch.block_dim : w->nblocks,
			       job->cqe ? SNPU_TRANSPORT_RING :
					  SNPU_TRANSPORT_IOCTL);
}

/* Per job under sched_lock: the tracepoints' static keys, inline. */
static inline void snpu_job_trace_submit(struct snpu_context *ctx,
					 struct snpu_job *job, u64 seq,
					 u64 *now)
{
	if (trace_snpu_task_complete_enabled() ||
	    trace_snpu_task_submit_enabled() ||
	    trace_snpu_task_start_enabled())
		snpu_job_trace_submit_on(ctx, job, seq, now);
}

/**
 * snpu_job_trace_start() - a task that needs no core starts
 * @ctx: the job's context
 * @job: the job
 *
 * Tasks on a core start in the core's loop (sched.c).
 */
void snpu_job_trace_start(struct snpu_context *ctx, struct snpu_job *job)
{
	if (!job->submit_ns)
		return;
	job->start_ns = ktime_get_ns();
	trace_snpu_task_start(ctx->sdev->index, ctx->id, job->stream_handle,
			      job->seq, -1);
}

/**
 * snpu_job_trace_complete() - the completion tracepoint of a job
 * @ctx: the job's context
 * @job: the job, with @error and @done_ns set
 */
void snpu_job_trace_complete(struct snpu_context *ctx, struct snpu_job *job)
{
	u64 queue = 0, run = 0;

	if (!trace_snpu_task_complete_enabled())
		return;
	if (job->submit_ns && job->start_ns) {
		queue = job->start_ns - job->submit_ns;
		run = job->done_ns - job->start_ns;
	}
	trace_snpu_task_complete(ctx->sdev->index, ctx->id, job->stream_handle,
				 job->seq, job->error, queue, run);
}

/*
 * Drop what a job references: memory, host memory. Often on a core: a
 * last reference leaves the freeing to snpu_free_wq.
 */
static void snpu_job_release(struct snpu_job *job)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(job->mem); i++) {
		if (job->mem[i])
			snpu_mem_put_deferred(job->mem[i]);
		job->mem[i] = NULL;
	}
	if (job->host)
		snpu_host_put_deferred(job->host);
	job->host = NULL;
	if (job->in_fence)
		dma_fence_put(job->in_fence);
	job->in_fence = NULL;
	if (job->ginst)
		snpu_graph_put_job(job);
}

/*
 * A job's predecessors are complete: decide, under the lock that saw the
 * last of them complete, what it does. A callback is queued for the
 * process at once; any other job goes to @todo, marked to be cancelled
 * when its stream has failed or its file is closing.
 */
static void snpu_job_ready_locked(struct snpu_context *ctx,
				  struct snpu_job *job, struct list_head *todo)
{
	lockdep_assert_held(&ctx->sched_lock);
	job->cancel = ctx->dying || job->stream->error;
	if (!job->cancel && job->op == SNPU_OP_HOST_FUNC) {
		job->state = SNPU_JOB_CALLBACK;
		if (snpu_ring_callback_locked(ctx, job))
			return;
		list_add_tail(&job->node, &ctx->callbacks);
		wake_up_all(&ctx->wq);
		return;
	}
	job->state = SNPU_JOB_READY;
	if (job->op == SNPU_OP_GRAPH)
		snpu_graph_start_locked(ctx, job);
	list_add_tail(&job->node, todo);
}

/**
 * snpu_job_resolve_locked() - one of a waiting job's predecessors is done
 * @ctx: the job's context
 * @job: the job
 * @todo: gets @job when that was the last
 */
void snpu_job_resolve_locked(struct snpu_context *ctx, struct snpu_job *job,
			     struct list_head *todo)
{
	lockdep_assert_held(&ctx->sched_lock);
	if (!--job->pending)
		snpu_job_ready_locked(ctx, job, todo);
}

/*
 * Complete one job, under the lock (see snpu_job_finish()): records the
 * result, advances the stream, resolves the successors and wakes waiters.
 * A successor a core chained (@chained) is running already: it is not
 * made ready.
 */
static void snpu_job_finish_locked(struct snpu_context *ctx,
				   struct snpu_job *job, int error, u64 now,
				   struct list_head *todo)
{
	struct snpu_stream *s = job->stream;
	struct snpu_job *w, *tmp;
	bool waited;

	lockdep_assert_held(&ctx->sched_lock);
	job->error = error;
	job->done_ns = now;
	job->state = SNPU_JOB_DONE;
	s->completed = job->seq;
	/* A chain traced it when its successor was taken (sched.c). */
	if (trace_snpu_task_complete_enabled() &&
	    (!job->next || !job->next->chained))
		snpu_job_trace_complete(ctx, job);
	ctx->tasks_done++;
	snpu_stats_task_done(ctx, error);
	if (error)
		snpu_stream_fail_locked(ctx, s, error, todo);
	if (job->op == SNPU_OP_EVENT_RECORD) {
		/* A capture cancelled by its stream's failure has its error. */
		job->fence_error = error == -ECANCELED && s->error ?
				   s->error : error;
		if (job->out_fence)
			snpu_fence_signal_locked(ctx, job);
	}
	if (job->in_fence) {
		dma_fence_put(job->in_fence);
		job->in_fence = NULL;
	}
	if (s->tail == job)
		s->tail = NULL;
	if (job->next) {
		if (job->next->stitched)
			snpu_graph_unstitch_locked(job->next, todo);
		else if (!--job->next->pending && !job->next->chained)
			snpu_job_ready_locked(ctx, job->next, todo);
		job->next = NULL;
	}
	list_for_each_entry_safe(w, tmp, &job->waiters, wait_node) {
		list_del_init(&w->wait_node);
		list_del_init(&w->swait_node);
		w->wait_on = NULL;
		snpu_job_put_locked(ctx, job);
		if (!--w->pending)
			snpu_job_ready_locked(ctx, w, todo);
	}
	job->stream = NULL;
	if (job->cqe)
		snpu_ring_post_locked(ctx, job);
	ctx->inflight--;
	snpu_ring_slot_freed_locked(ctx);
	/* Read first: a reservation may take (and reset) it once it is put. */
	waited = job->waited;
	snpu_job_put_locked(ctx, job);
	/*
	 * Wake only those who wait for this job, or a releaser or a backup
	 * waiting for the last one; under the lock, so that a releaser
	 * seeing inflight 0 cannot free @ctx before we are done with it.
	 */
	if (waited || (!ctx->inflight && (ctx->dying || ctx->draining)))
		wake_up_all(&ctx->wq);
}

/* The result of a job that completes where it is (not cancelled). */
static int snpu_job_inline_error(const struct snpu_job *job)
{
	return job->op == SNPU_OP_FENCE_WAIT ? job->fence_error : 0;
}

/*
 * Does a ready job complete where it is, with no core and no callback? A
 * record is a marker (its capture is its sequence number), a stream wait
 * a count that reached 0, a NOP launch nothing: they complete under the
 * same hold of the lock that made them ready.
 */
static bool snpu_job_inline(const struct snpu_job *job)
{
	switch (job->op) {
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
	case SNPU_OP_FENCE_WAIT:
		return true;
	case SNPU_OP_LAUNCH:
		return job->work.launch.kernel == SNPU_KERNEL_NOP;
	default:
		return false;
	}
}

/*
 * Complete the jobs of @todo that need no core (snpu_job_inline()), and
 * those they make ready in turn, at *@now (the clock is read if 0 and
 * one is found), without dropping the lock: a
 * task's completion releases the waits on its stream's events and the
 * tasks behind them in one hold, and only what needs a core is left on
 * @todo to dispatch. Iterative, in @todo's order, in constant stack.
 */
static void snpu_jobs_settle_locked(struct snpu_context *ctx,
				    struct list_head *todo, u64 *now)
{
	struct list_head *pos = todo->next, *prev;
	struct snpu_job *job;

	lockdep_assert_held(&ctx->sched_lock);
	while (pos != todo) {
		job = list_entry(pos, struct snpu_job, node);
		if (!snpu_job_inline(job)) {
			pos = pos->next;
			continue;
		}
		/* What the completion appends comes after @prev. */
		prev = pos->prev;
		list_del_init(&job->node);
		if (!job->cancel)
			snpu_job_trace_start(ctx, job);
		if (!*now)
			*now = ktime_get_ns();
		snpu_job_finish_locked(ctx, job,
				       job->cancel ? -ECANCELED :
				       snpu_job_inline_error(job), *now, todo);
		pos = prev->next;
	}
}

/**
 * snpu_job_finish() - complete one job
 * @job: the job
 * @error: 0 or -errno
 * @now: when it completed (ktime_get_ns()), or 0 to read the clock here
 * @todo: gets the successors that become ready
 *
 * Called without locks; the job's context stays valid until the job is
 * no longer counted in flight, which is the last thing done here.
 */
void snpu_job_finish(struct snpu_job *job, int error, u64 now,
		     struct list_head *todo)
{
	struct snpu_context *ctx = job->ctx;

	snpu_job_release(job);
	if (!now)
		now = ktime_get_ns();
	spin_lock(&ctx->sched_lock);
	snpu_job_finish_locked(ctx, job, error, now, todo);
	snpu_jobs_settle_locked(ctx, todo, &now);
	spin_unlock(&ctx->sched_lock);
}

/**
 * snpu_stream_fail_locked() - put a stream in its error state
 * @ctx: the context
 * @s: the stream
 * @error: the -errno; the first one stays
 * @todo: gets the jobs that become ready
 *
 * Its jobs will be cancelled as they come up. A STREAM_WAIT of it that
 * waits for another stream's capture stops waiting, so that the failed
 * stream drains even while the other stream is held up.
 */
void snpu_stream_fail_locked(struct snpu_context *ctx, struct snpu_stream *s,
			     int error, struct list_head *todo)
{
	struct snpu_job *w, *tmp;

	lockdep_assert_held(&ctx->sched_lock);
	if (s->error)
		return;
	WRITE_ONCE(s->error, error);
	snpu_fence_wait_cancel_locked(ctx, s, todo);
	list_for_each_entry_safe(w, tmp, &s->waits, swait_node) {
		list_del_init(&w->swait_node);
		list_del_init(&w->wait_node);
		/* The capture is not complete: it still has its own reference. */
		snpu_job_put_locked(ctx, w->wait_on);
		w->wait_on = NULL;
		if (!--w->pending)
			snpu_job_ready_locked(ctx, w, todo);
	}
}

/* A ready job (see snpu_job_ready_locked()): run it or finish it. */
static void snpu_job_dispatch(struct snpu_job *job, struct list_head *todo,
			      struct snpu_work **handoff)
{
	/* A cancelled launch still runs its nodes down: see graph.c. */
	if (job->op == SNPU_OP_GRAPH) {
		snpu_graph_dispatch(job, todo, handoff);
		return;
	}
	/* A collective completes with its collective, cancelled or not. */
	if (job->op == SNPU_OP_COLL) {
		snpu_coll_arrive(&job->work, job->cancel ? -ECANCELED : 0);
		return;
	}
	if (job->cancel) {
		snpu_job_finish(job, -ECANCELED, 0, todo);
		return;
	}
	switch (job->op) {
	case SNPU_OP_LAUNCH:
		/* A kernel that does nothing needs no core. */
		if (job->work.launch.kernel == SNPU_KERNEL_NOP)
			break;
		fallthrough;
	case SNPU_OP_COPY:
	case SNPU_OP_MEMSET:
		if (snpu_sched_ready(&job->work, handoff))
			return;
		/* Its context is closing: no core for it. */
		snpu_job_finish(job, -ECANCELED, 0, todo);
		return;
	}
	/* EVENT_RECORD, STREAM_WAIT, FENCE_WAIT, NOPs: done once reached. */
	snpu_job_trace_start(job->ctx, job);
	snpu_job_finish(job, snpu_job_inline_error(job), 0, todo);
}

/**
 * snpu_jobs_run_handoff() - dispatch jobs that became ready
 * @todo: the jobs; emptied
 * @handoff: see snpu_sched_ready()
 */
void snpu_jobs_run_handoff(struct list_head *todo, struct snpu_work **handoff)
{
	struct snpu_job *job;

	while (!list_empty(todo)) {
		job = list_first_entry(todo, struct snpu_job, node);
		list_del_init(&job->node);
		snpu_job_dispatch(job, todo, handoff);
	}
}

/**
 * snpu_jobs_run() - dispatch jobs that became ready outside a completion
 * @todo: the jobs; emptied
 */
void snpu_jobs_run(struct list_head *todo)
{
	snpu_jobs_run_handoff(todo, NULL);
}

/**
 * snpu_jobs_complete_run() - complete tasks a core ran back to back
 * @job: the first; each of the others is the stream successor of the one
 *       before it, which the core chained (see sched.c)
 * @n: how many, at least 1
 * @error: the last one's result, 0 or -errno; the others succeeded
 * @now: when the last completed (ktime_get_ns()), or 0 to read the clock
 *       here; the others' completion times are in their @done_ns (set
 *       when the core chained their successor)
 * @handoff: see snpu_job_complete()
 *
 * Completes them in order under one hold of the scheduler lock, then
 * dispatches the successors that became ready.
 */
void snpu_jobs_complete_run(struct snpu_job *job, u32 n, int error, u64 now,
			    struct snpu_work **handoff)
{
	struct snpu_context *ctx = job->ctx;
	struct snpu_job *j, *next;
	LIST_HEAD(todo);
	bool cookie;
	u32 i;

	/* The links of a chain are set: each successor was read to run it. */
	for (i = 0, j = job;; j = j->next) {
		snpu_job_release(j);
		if (++i == n)
			break;
	}
	if (!now)
		now = ktime_get_ns();
	/* Exported fences signal here: no allocation, no fence wait. */
	cookie = dma_fence_begin_signalling();
	spin_lock(&ctx->sched_lock);
	for (i = 0, j = job; i < n; i++, j = next) {
		next = j->next;
		snpu_job_finish_locked(ctx, j, i == n - 1 ? error : 0,
				       i == n - 1 ? now : j->done_ns, &todo);
	}
	snpu_jobs_settle_locked(ctx, &todo, &now);
	spin_unlock(&ctx->sched_lock);
	dma_fence_end_signalling(cookie);
	snpu_jobs_run_handoff(&todo, handoff);
}

/**
 * snpu_job_complete() - a job has run (or was cancelled or called back)
 * @job: the job
 * @error: 0 or -errno
 * @now: see snpu_job_finish()
 * @handoff: called by a core: where to leave a job for the core to run
 *           next, or NULL
 *
 * Resolves the successors, dispatching those that become ready, without
 * recursion however long the chain of immediately complete jobs.
 */
void snpu_job_complete(struct snpu_job *job, int error, u64 now,
		       struct snpu_work **handoff)
{
	snpu_jobs_complete_run(job, 1, error, now, handoff);
}

/* Resolve a copy's device and host sides. */
static int snpu_job_prepare_copy(struct snpu_context *ctx,
				 struct snpu_job *job,
				 const struct snpu_task *t)
{
	u64 bytes = t->copy.bytes;
	void *dst, *src;
	int ret;

	switch (t->copy.dir) {
	case SNPU_COPY_H2D:
		ret = snpu_mem_resolve_locked(ctx, t->copy.dst, bytes,
					      &job->mem[0], &dst);
		if (!ret)
			ret = snpu_host_resolve(ctx, t->copy.src, bytes,
						&job->host, &src);
		break;
	case SNPU_COPY_D2H:
		ret = snpu_host_resolve(ctx, t->copy.dst, bytes, &job->host,
					&dst);
		if (!ret)
			ret = snpu_mem_resolve_locked(ctx, t->copy.src, bytes,
						      &job->mem[0], &src);
		break;
	default:
		ret = snpu_mem_resolve_locked(ctx, t->copy.dst, bytes,
					      &job->mem[0], &dst);
		if (!ret)
			ret = snpu_mem_resolve_locked(ctx, t->copy.src, bytes,
						      &job->mem[1], &src);
		break;
	}
	if (ret)
		return ret;
	job->work.copy.dst = dst;
	job->work.copy.src = src;
	job->work.copy.bytes = bytes;
	return 0;
}

static int snpu_job_prepare_launch(struct snpu_context *ctx,
				   struct snpu_job *job,
				   const struct snpu_task *t)
{
	struct snpu_klaunch *l = &job->work.launch;
	struct snpu_work *w = &job->work;
	unsigned int i;
	u32 buffers;
	int ret;

	buffers = snpu_kernel_plan(t->launch.kernel, t->launch.args,
				   &w->units, &w->chunk, &w->fpu);
	l->kernel = t->launch.kernel;
	l->block_dim = t->launch.block_dim;
	for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
		const struct snpu_kernel_arg *a = &t->launch.args[i];

		if (!(buffers & BIT(i))) {
			l->buf[i] = NULL;
			l->bytes[i] = 0;
			l->scalar[i] = a->value;
			continue;
		}
		l->scalar[i] = 0;
		l->bytes[i] = a->bytes;
		ret = snpu_mem_resolve_locked(ctx, a->value, a->bytes,
					      &job->mem[i], &l->buf[i]);
		if (ret)
			return ret;
	}
	w->nblocks = l->block_dim;
	return 0;
}

/**
 * snpu_job_prepare_locked() - check a task against the context
 * @ctx: the context
 * @job: a reserved job; takes references to what the task names
 * @t: the task, copied from the caller
 *
 * Return: 0, or the task's error (see the uapi header); the references
 * taken so far are dropped by snpu_jobs_unwind().
 */
int snpu_job_prepare_locked(struct snpu_context *ctx, struct snpu_job *job,
			    const struct snpu_task *t)
{
	struct snpu_stream *s;
	struct snpu_event *e;
	int ret;

	lockdep_assert_held(&ctx->lock);
	ret = snpu_task_check(t);
	if (ret)
		return ret;
	/* The test kernels are test hooks: off unless the module says so. */
	if (t->op == SNPU_OP_LAUNCH && !snpu_test_hooks &&
	    (t->launch.kernel == SNPU_KERNEL_SPIN ||
	     t->launch.kernel == SNPU_KERNEL_FAIL))
		return -EOPNOTSUPP;

	s = snpu_stream_get_locked(ctx, t->stream);
	if (!s || s->destroying)
		return -ENOENT;
	if (READ_ONCE(s->error))
		return -EIO;

	job->stream = s;
	job->stream_handle = s->obj.handle;
	job->op = t->op;
	job->work.op = t->op;
	job->user_data = t->user_data;
	job->work.nblocks = 1;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
		return snpu_job_prepare_launch(ctx, job, t);
	case SNPU_OP_COPY:
		return snpu_job_prepare_copy(ctx, job, t);
	case SNPU_OP_MEMSET:
		job->work.copy.bytes = t->memset.bytes;
		job->work.copy.value = t->memset.value;
		job->work.copy.src = NULL;
		return snpu_mem_resolve_locked(ctx, t->memset.addr,
					       t->memset.bytes, &job->mem[0],
					       &job->work.copy.dst);
	case SNPU_OP_EVENT_RECORD:
	case SNPU_OP_STREAM_WAIT:
		e = snpu_event_get_locked(ctx, t->event.event);
		if (!e)
			return -ENOENT;
		if (t->op == SNPU_OP_STREAM_WAIT && !e->capture &&
		    !e->batch_recorded)
			return -EINVAL;
		if (t->op == SNPU_OP_EVENT_RECORD)
			e->batch_recorded = true;
		job->event = e;
		return 0;
	case SNPU_OP_GRAPH:
		return snpu_graph_prepare_locked(ctx, job, t);
	case SNPU_OP_COLL:
		return snpu_coll_prepare_locked(ctx, &job->work, t, job->mem);
	case SNPU_OP_FENCE_WAIT:
		return snpu_fence_wait_prepare(job, t->fence.fd);
	default:
		return 0;
	}
}

/**
 * snpu_stream_nop_locked() - complete a NOP launch on an idle stream
 * @ctx: the context
 * @s: the launch's stream
 *
 * A NOP launch that reaches an idle, healthy stream of a live context is
 * complete as soon as it is queued: it needs no core, no ready list and no
 * wake-up. Nothing can wait for it yet, since its sequence number is not
 * out. Both transports use this: SNPU_IOC_SUBMIT at commit, with the job
 * it prepared, and the SQ before it takes a job at all.
 *
 * Return: the launch's sequence number in @s, or 0 when @s has work in
 * flight or an error, or @ctx is closing: the launch takes the job path.
 */
u64 snpu_stream_nop_locked(struct snpu_context *ctx, struct snpu_stream *s)
{
	lockdep_assert_held(&ctx->sched_lock);
	if (s->tail || s->error || ctx->dying)
		return 0;
	s->completed = ++s->submitted;
	return s->submitted;
}

/* A prepared NOP launch done at commit: its job goes back at once. */
static u64 snpu_job_nop_locked(struct snpu_context *ctx,
			       struct snpu_job *job, u64 *now)
{
	u64 seq;

	lockdep_assert_held(&ctx->sched_lock);
	if (job->op != SNPU_OP_LAUNCH ||
	    job->work.launch.kernel != SNPU_KERNEL_NOP)
		return 0;
	seq = snpu_stream_nop_locked(ctx, job->stream);
	if (!seq)
		return 0;
	/* The NOPs of one commit complete together: one clock read. */
	if (!*now)
		*now = ktime_get_ns();
	job->seq = seq;
	job->error = 0;
	job->done_ns = *now;
	job->state = SNPU_JOB_DONE;
	job->stream = NULL;
	job->event = NULL;
	snpu_job_trace_submit(ctx, job, seq, now);
	if (job->submit_ns) {
		job->start_ns = job->submit_ns;
		trace_snpu_task_start(ctx->sdev->index, ctx->id,
				      job->stream_handle, seq, -1);
		snpu_job_trace_complete(ctx, job);
	}
	ctx->tasks_done++;
	snpu_stats_task_done(ctx, 0);
	/* A NOP names no memory: nothing to release. */
	if (job->cqe)
		snpu_ring_post_locked(ctx, job);
	snpu_job_put_locked(ctx, job);
	return seq;
}

/*
 * Link a prepared job into its stream and the event graph. Returns its
 * sequence number in the stream: the job itself may be back in the pool.
 */
static u64 snpu_job_commit_locked(struct snpu_context *ctx,
				  struct snpu_job *job,
				  struct list_head *ready, u64 *now)
{
	struct snpu_stream *s = job->stream;
	struct snpu_event *e = job->event;
	struct snpu_job *cap, *prev;
	u64 seq;

	lockdep_assert_held(&ctx->sched_lock);
	seq = snpu_job_nop_locked(ctx, job, now);
	if (seq)
		return seq;
	job->seq = ++s->submitted;
	snpu_job_trace_submit(ctx, job, job->seq, now);
	job->pending = 0;
	job->state = SNPU_JOB_WAITING;
	prev = s->tail;
	if (prev) {
		if (job->op == SNPU_OP_GRAPH &&
		    snpu_graph_stitch_locked(ctx, prev, job))
			job->stitched = true;
		else
			job->pending++;
	}
	s->tail = job;

	if (job->op == SNPU_OP_STREAM_WAIT) {
		cap = e->capture;
		if (cap->state != SNPU_JOB_DONE) {
			refcount_inc(&cap->ref);
			job->wait_on = cap;
			list_add_tail(&job->wait_node, &cap->waiters);
			list_add_tail(&job->swait_node, &s->waits);
			job->pending++;
		}
	} else if (job->op == SNPU_OP_FENCE_WAIT) {
		snpu_fence_wait_arm_locked(ctx, job);
	} else if (job->op == SNPU_OP_EVENT_RECORD) {
		cap = e->capture;
		refcount_inc(&job->ref);
		e->capture = job;
		e->batch_recorded = false;
		if (cap)
			snpu_job_put_locked(ctx, cap);
	}
	job->event = NULL;
	ctx->inflight++;
	/*
	 * Linked last: the core running @prev may read the link without the
	 * lock to run @job straight after it (sched.c).
	 */
	if (prev) {
		/* Pairs with that core's acquire: it sees @job complete. */
		smp_store_release(&prev->next, job);
	}
	if (!job->pending)
		snpu_job_ready_locked(ctx, job, ready);
	return s->submitted;
}

/**
 * snpu_jobs_unwind() - give back reserved jobs that were not committed
 * @ctx: the context
 * @batch: the jobs; emptied
 */
void snpu_jobs_unwind(struct snpu_context *ctx, struct list_head *batch)
{
	struct snpu_job *job, *tmp;

	list_for_each_entry(job, batch, node) {
		if (job->event)
			job->event->batch_recorded = false;
		job->event = NULL;
		if (job->op == SNPU_OP_COLL && job->work.coll.part)
			snpu_coll_unbind(&job->work);
		snpu_job_release(job);
	}
	spin_lock(&ctx->sched_lock);
	list_for_each_entry_safe(job, tmp, batch, node) {
		list_del_init(&job->node);
		snpu_job_put_locked(ctx, job);
	}
	spin_unlock(&ctx->sched_lock);
}

/*
 * Move the jobs completions put back since the last time to the end of
 * the free list, in one exchange. Return: whether there were any.
 */
static bool snpu_jobs_take_freed(struct snpu_context *ctx)
{
	struct llist_node *freed = llist_del_all(&ctx->freed);
	struct snpu_job *job, *tmp;

	lockdep_assert_held(&ctx->lock);
	llist_for_each_entry_safe(job, tmp, freed, free_node)
		list_add_tail(&job->node, &ctx->free);
	return freed;
}

/**
 * snpu_jobs_reserve() - take jobs from the pool for a submission
 * @ctx: the context
 * @count: number of jobs
 * @batch: an empty list; gets the jobs, linked by their @node
 *
 * When the free jobs run short, the pool grows first (this may sleep).
 *
 * Return: 0; -ENOSPC when the tasks in flight would exceed the quota or
 * the pool is exhausted (completions parked in a full completion queue
 * hold their jobs); -ENOMEM when the pool could not grow. Nothing is
 * taken on error.
 */
int snpu_jobs_reserve(struct snpu_context *ctx, u32 count,
		      struct list_head *batch)
{
	struct snpu_job *job;
	bool grown = false;
	u32 i;
	int ret;

	lockdep_assert_held(&ctx->lock);
	/*
	 * Only commits (under the context lock, which we hold) raise
	 * @inflight: a completion lowering it meanwhile only makes this
	 * refuse what it could have taken, as a completion just after would.
	 */
	if (READ_ONCE(ctx->inflight) + count > snpu_quota.tasks)
		return -ENOSPC;
	/*
	 * The pool may hold the quota, one capture per event and some room
	 * for jobs that synchronize calls hold for a moment: it may still
	 * run short. The first @count free jobs move to @batch in one cut.
	 */
	job = list_entry(&ctx->free, struct snpu_job, node);
	for (i = 0; i < count; i++) {
		/* Short: first those the completions put back since. */
		if (list_is_last(&job->node, &ctx->free) &&
		    !snpu_jobs_take_freed(ctx)) {
			/*
			 * Only reservations (under the context lock) take
			 * free jobs: after one growth they are there, or the
			 * pool is full.
			 */
			if (grown || ctx->pool_size == ctx->pool_max)
				return -ENOSPC;
			/* New jobs join the end of the list, after @job. */
			ret = snpu_pool_grow(ctx, count - i);
			if (ret)
				return ret;
			grown = true;
		}
		job = list_next_entry(job, node);
	}
	list_cut_position(batch, &ctx->free, &job->node);
	/*
	 * The jobs are ours now, without sched_lock. A stale callback cookie
	 * is checked under that lock against a DELIVERED state first, which
	 * none of these has, and only then against gen.
	 */
	list_for_each_entry(job, batch, node) {
		refcount_set(&job->ref, 1);
		WRITE_ONCE(job->state, SNPU_JOB_WAITING);
		/* Until prepared: an unwind finds no op to undo. */
		job->op = 0;
		job->waited = false;
		job->cqe = false;
		job->stitched = false;
		job->chained = false;
		job->submit_ns = 0;
		job->start_ns = 0;
		job->gen++;
	}
	return 0;
}

/*
 * Most work one hold of sched_lock does in a commit: a job counts 1, a
 * graph launch its nodes and hazard-list entries, all of which its
 * stitch may visit. About a few milliseconds under TCG.
 */
#define SNPU_COMMIT_WORK	16384

/**
 * snpu_jobs_commit() - queue prepared jobs, in order
 * @ctx: the context
 * @batch: jobs prepared by snpu_job_prepare_locked(); emptied
 *
 * Return: the sequence number of the last job in its stream, 0 for an
 * empty @batch.
 */
u64 snpu_jobs_commit(struct snpu_context *ctx, struct list_head *batch)
{
	struct snpu_job *job, *tmp;
	LIST_HEAD(ready);
	u64 seq = 0, now = 0;
	u32 work = 0;

	lockdep_assert_held(&ctx->lock);
	if (list_empty(batch))
		return 0;
	spin_lock(&ctx->sched_lock);
	/*
	 * Each job's node goes to a ready list or the free list as it is
	 * committed; the walk has the next one already, and @batch is reset
	 * after the last instead of unlinking every job from it.
	 */
	list_for_each_entry_safe(job, tmp, batch, node) {
		/*
		 * A bounded hold: past SNPU_COMMIT_WORK, what is committed
		 * goes to the cores and the CPU to whoever wants it before
		 * the rest is. The jobs left are this caller's alone (it
		 * holds the context lock), so the order is the same.
		 */
		if (work >= SNPU_COMMIT_WORK) {
			snpu_jobs_settle_locked(ctx, &ready, &now);
			spin_unlock(&ctx->sched_lock);
			snpu_jobs_run_handoff(&ready, NULL);
			cond_resched();
			work = 0;
			now = 0;
			spin_lock(&ctx->sched_lock);
		}
		work += job->op == SNPU_OP_GRAPH ?
			snpu_graph_commit_work(job) : 1;
		seq = snpu_job_commit_locked(ctx, job, &ready, &now);
	}
	INIT_LIST_HEAD(batch);
	snpu_jobs_settle_locked(ctx, &ready, &now);
	spin_unlock(&ctx->sched_lock);

	snpu_jobs_run_handoff(&ready, NULL);
	return seq;
}

/*
 * The sequence number snpu_jobs_commit() will return for a prepared
 * @batch: each job of the last job's stream takes the next number of it,
 * and only commits (under the context lock, which we hold) take numbers.
 */
static u64 snpu_jobs_last_seq_locked(struct snpu_context *ctx,
				     struct list_head *batch)
{
	struct snpu_job *job = list_last_entry(batch, struct snpu_job, node);
	struct snpu_stream *s = job->stream;
	u64 seq;

	lockdep_assert_held(&ctx->lock);
	spin_lock(&ctx->sched_lock);
	seq = s->submitted;
	spin_unlock(&ctx->sched_lock);
	list_for_each_entry(job, batch, node)
		if (job->stream == s)
			seq++;
	return seq;
}

/**
 * snpu_submit_locked() - check and queue a batch of tasks, all or nothing
 * @ctx: the context
 * @arg: the SNPU_IOC_SUBMIT argument; its @seq is written back to the
 *       caller before anything is queued
 *
 * Return: 0; -ENOSPC when the tasks in flight would exceed the quota;
 * -EFAULT when the tasks cannot be read or the result cannot be written;
 * otherwise the error of the first bad task. Nothing is queued on error.
 */
int snpu_submit_locked(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_submit *sub = &arg->submit;
	const void __user *tasks = u64_to_user_ptr(sub->tasks);
	u32 task_size = sub->task_size;
	struct snpu_job *job;
	LIST_HEAD(batch);
	struct snpu_task t;
	u64 seq;
	int ret;

	lockdep_assert_held(&ctx->lock);
	ret = snpu_jobs_reserve(ctx, sub->count, &batch);
	if (ret)
		return ret;

	list_for_each_entry(job, &batch, node) {
		const void __user *src = tasks;

		tasks += task_size;
		if (copy_from_user(&t, src, sizeof(t))) {
			ret = -EFAULT;
			goto unwind;
		}
		if (task_size > sizeof(t)) {
			ret = check_zeroed_user(src + sizeof(t),
						task_size - sizeof(t));
			if (ret <= 0) {
				ret = ret ?: -E2BIG;
				goto unwind;
			}
		}
		ret = snpu_job_prepare_locked(ctx, job, &t);
		if (ret)
			goto unwind;
	}
	/*
	 * Queued work is never reported as failed, nor is work reported
	 * queued that was not: the caller gets its sequence number before
	 * the commit, and an unwritable argument queues nothing.
	 */
	sub->seq = snpu_jobs_last_seq_locked(ctx, &batch);
	ret = snpu_ioc_copy_out(arg);
	if (ret)
		goto unwind;
	seq = snpu_jobs_commit(ctx, &batch);
	WARN_ON_ONCE(seq != sub->seq);
	return 0;

unwind:
	snpu_jobs_unwind(ctx, &batch);
	return ret;
}

int snpu_ioc_submit(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_submit *s = &arg->submit;
	int ret;

	if (!snpu_zero(s->reserved, sizeof(s->reserved)) || !s->count ||
	    s->count > SNPU_SUBMIT_MAX || s->task_size < SNPU_TASK_SIZE ||
	    s->task_size > SNPU_IOC_MAX_SIZE)
		return -EINVAL;

	mutex_lock(&ctx->lock);
	ret = snpu_submit_locked(ctx, arg);
	mutex_unlock(&ctx->lock);
	return ret;
}

/**
 * snpu_cancel_all() - cancel every job of a closing context and wait
 * @ctx: the context; no ioctl runs on it any more
 *
 * Jobs on the ready lists are taken off and completed with -ECANCELED at
 * once, jobs not yet ready complete with -ECANCELED as they come up,
 * callbacks pending or delivered are completed with -ECANCELED, running
 * blocks stop at their next check. Returns when no job is in flight: it
 * waits for blocks already on a core only.
 */
void snpu_cancel_all(struct snpu_context *ctx)
{
	LIST_HEAD(ready);
	LIST_HEAD(cancel);
	struct snpu_job *job;
	u32 i;

	spin_lock(&ctx->sched_lock);
	WRITE_ONCE(ctx->dying, true);
	/* Fences of other drivers may never signal: stop waiting. */
	snpu_fence_wait_cancel_locked(ctx, NULL, &ready);
	list_splice_init(&ctx->callbacks, &cancel);
	/* Not a hot path: a scan finds callbacks the process never answered. */
	for (i = 0; i < ctx->pool_size; i++) {
		job = snpu_pool_job(ctx, i);
		if (job->state == SNPU_JOB_DELIVERED) {
			job->state = SNPU_JOB_READY;
			list_add_tail(&job->node, &cancel);
		}
	}
	spin_unlock(&ctx->sched_lock);

	/* Its ranks leave first: no collective of it waits for another rank. */
	snpu_comm_cancel(ctx);
	snpu_sched_cancel(ctx);
	snpu_jobs_run(&ready);
	while (!list_empty(&cancel)) {
		job = list_first_entry(&cancel, struct snpu_job, node);
		list_del_init(&job->node);
		snpu_job_complete(job, -ECANCELED, 0, NULL);
	}

	wait_event(ctx->wq, !READ_ONCE(ctx->inflight));
	/* The last completer wakes us under sched_lock: let it leave. */
	spin_lock(&ctx->sched_lock);
	spin_unlock(&ctx->sched_lock);
}
