// SPDX-License-Identifier: GPL-2.0
/*
 * snpu cores: kernel threads that take blocks of ready jobs from the
 * device's ready lists (highest priority first) and run them.
 *
 * Fairness: each context has a run queue per priority (its ready jobs, in
 * order), and the device has, per priority, the rotation of the run
 * queues that hold work. A core serves the first run queue of the highest
 * non-empty rotation: it takes one block of that queue's first job, and
 * the queue goes to the back of the rotation (or leaves it when empty).
 * So within a priority the contexts take turns block by block, however
 * many jobs or blocks one of them queued; picking is O(1), with no scan
 * and no allocation. A block is bounded by the kernels' limits (SPIN
 * at most SNPU_KERNEL_SPIN_MAX_NS) and by the task watchdog
 * (task_timeout_ms), which every running block polls between chunks.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/fpu/api.h>

#include "core/coll.h"
#include "graph.h"
#include "snpu.h"
#include "trace.h"

/* Bytes a copy or memset moves between checks for cancellation. */
#define SNPU_COPY_CHUNK		BIT(20)

/*
 * Tasks a core runs back to back on one stream before it completes them,
 * and the most units (bytes for a copy or memset) of each: see
 * snpu_chain().
 */
#define SNPU_CHAIN_MAX		16
#define SNPU_CHAIN_WORK		4096

/* Is any job waiting for a core? A hint: read without the lock. */
static bool snpu_ready(struct snpu_device *sdev)
{
	unsigned int p;

	for (p = 0; p < SNPU_NR_PRIO; p++)
		if (!list_empty_careful(&sdev->ready[p]))
			return true;
	return false;
}

/* The priority a work is listed under: its task's stream's. */
static unsigned int snpu_work_prio(const struct snpu_work *w)
{
	return w->job->stream->prio;
}

/**
 * snpu_sched_ready() - hand a work's blocks to the cores
 * @w: a LAUNCH, COPY or MEMSET job, or a graph node, whose predecessors
 *     are complete
 * @handoff: the caller is a core that looks for work right after, or
 *           NULL: a one-block work goes straight to it when nothing else
 *           is ready (no list, no wake-up); otherwise it takes a block
 *           itself, so one core fewer is woken
 *
 * Return: true, or false when the work's context is closing and its run
 * queues are closed: the caller finishes it with -ECANCELED.
 */
bool snpu_sched_ready(struct snpu_work *w, struct snpu_work **handoff)
{
	struct snpu_context *ctx = w->job->ctx;
	struct snpu_device *sdev = ctx->sdev;
	struct snpu_runq *q = &ctx->runq[snpu_work_prio(w)];
	unsigned int wake;

	w->next_block = 0;
	atomic_set(&w->blocks_left, w->nblocks);
	atomic_set(&w->fail, 0);

	if (handoff && !*handoff && w->nblocks == 1 && !snpu_ready(sdev)) {
		w->next_block = 1;
		*handoff = w;
		return true;
	}

	spin_lock(&sdev->ready_lock);
	if (unlikely(ctx->sched_closed)) {
		spin_unlock(&sdev->ready_lock);
		return false;
	}
	/* A queue that had no work joins the rotation at its back. */
	if (list_empty(&q->jobs))
		list_add_tail(&q->node, &sdev->ready[snpu_work_prio(w)]);
	list_add_tail(&w->node, &q->jobs);
	if (++sdev->ready_depth > sdev->ready_max)
		sdev->ready_max = sdev->ready_depth;
	spin_unlock(&sdev->ready_lock);
	/*
	 * A core with an empty hand-off slot takes this work's block next.
	 * Busy cores find the work when their block ends: only sleeping ones
	 * are woken, and when none sleeps the wait queue's lock is not taken
	 * (the barrier pairs with the one a sleeper sets before it looks at
	 * the lists).
	 */
	wake = min(w->nblocks, sdev->cores) - (handoff && !*handoff);
	if (wake && wq_has_sleeper(&sdev->ready_wq))
		wake_up_nr(&sdev->ready_wq, wake);
	return true;
}

/*
 * Is work of another context waiting for a core at @prio or above? A
 * hint, read without the lock: @ctx's own run queue alone at the head of
 * its rotation does not count.
 */
static bool snpu_others_ready(struct snpu_device *sdev,
			      struct snpu_context *ctx, unsigned int prio)
{
	struct list_head *head = &sdev->ready[prio], *first;
	unsigned int p;

	for (p = 0; p < prio; p++)
		if (!list_empty_careful(&sdev->ready[p]))
			return true;
	first = READ_ONCE(head->next);
	if (first == head)
		return false;
	return first != &ctx->runq[prio].node || READ_ONCE(first->next) != head;
}

/**
 * snpu_sched_ready_list() - hand ready graph nodes of one launch to the
 * cores
 * @works: the nodes' works, linked by their @node; emptied on success
 * @handoff: as for snpu_sched_ready(): a core that completed a node of
 *           the launch passes its hand-off slot, and runs the first
 *           one-block node next (a continuation, with no list, lock or
 *           wake-up) unless another context has work waiting at the same
 *           priority or above, whose turn comes first
 *
 * The others go to the context's run queue in one hold of the ready
 * lock, and as many sleeping cores as they have blocks (at most all)
 * are woken at once.
 *
 * Return: true, or false when the context is closing: the nodes left in
 * @works are the caller's to finish with -ECANCELED.
 */
bool snpu_sched_ready_list(struct list_head *works, struct snpu_work **handoff)
{
	struct snpu_work *w = list_first_entry(works, struct snpu_work, node);
	struct snpu_context *ctx = w->job->ctx;
	struct snpu_device *sdev = ctx->sdev;
	unsigned int prio = snpu_work_prio(w);
	struct snpu_runq *q = &ctx->runq[prio];
	u32 blocks = 0, n = 0;

	list_for_each_entry(w, works, node) {
		w->next_block = 0;
		atomic_set(&w->blocks_left, w->nblocks);
		atomic_set(&w->fail, 0);
		blocks += w->nblocks;
		n++;
	}
	w = list_first_entry(works, struct snpu_work, node);
	if (handoff && !*handoff && w->nblocks == 1 &&
	    !snpu_others_ready(sdev, ctx, prio)) {
		list_del(&w->node);
		w->next_block = 1;
		*handoff = w;
		if (!--n)
			return true;
		blocks--;
	}

	spin_lock(&sdev->ready_lock);
	if (unlikely(ctx->sched_closed)) {
		spin_unlock(&sdev->ready_lock);
		return false;
	}
	if (list_empty(&q->jobs))
		list_add_tail(&q->node, &sdev->ready[prio]);
	list_splice_tail_init(works, &q->jobs);
	sdev->ready_depth += n;
	if (sdev->ready_depth > sdev->ready_max)
		sdev->ready_max = sdev->ready_depth;
	spin_unlock(&sdev->ready_lock);
	/* As in snpu_sched_ready(): only sleepers, and no lock if none. */
	if (wq_has_sleeper(&sdev->ready_wq))
		wake_up_nr(&sdev->ready_wq, min(blocks, sdev->cores));
	return true;
}

/*
 * Take a listed work's blocks that were not handed out off its run queue.
 * Return: how many blocks were taken.
 */
static u32 snpu_sched_unlist_locked(struct snpu_device *sdev,
				    struct snpu_runq *q, struct snpu_work *w)
{
	u32 left = w->nblocks - w->next_block;

	lockdep_assert_held(&sdev->ready_lock);
	if (!left)
		return 0;
	w->next_block = w->nblocks;
	list_del_init(&w->node);
	sdev->ready_depth--;
	if (list_empty(&q->jobs))
		list_del_init(&q->node);
	return left;
}

/*
 * A block of @w failed, was cancelled or timed out: the work's result is
 * decided, so its blocks not handed out yet are dropped instead of each
 * taking a core's turn. The caller runs one block of the work, so this
 * never ends the work.
 */
static void snpu_sched_drop(struct snpu_work *w)
{
	struct snpu_context *ctx = w->job->ctx;
	struct snpu_device *sdev = ctx->sdev;
	u32 left;

	spin_lock(&sdev->ready_lock);
	left = snpu_sched_unlist_locked(sdev, &ctx->runq[snpu_work_prio(w)], w);
	spin_unlock(&sdev->ready_lock);
	if (left)
		atomic_sub(left, &w->blocks_left);
}

/**
 * snpu_work_complete() - a work has run (or was cancelled)
 * @w: the work
 * @error: 0 or -errno
 * @now: see snpu_job_finish()
 * @handoff: see snpu_job_complete()
 */
void snpu_work_complete(struct snpu_work *w, int error, u64 now,
			struct snpu_work **handoff)
{
	if (w->op == SNPU_OP_COLL)
		snpu_coll_step_end(w, error, handoff);
	else if (w->gnode)
		snpu_gnode_complete(w->gnode, error, handoff);
	else
		snpu_job_complete(w->job, error, now, handoff);
}

/**
 * snpu_sched_cancel() - take a closing context's work off the ready lists
 * @ctx: the context, with @dying set under its sched_lock
 *
 * Closes the context's run queues (snpu_sched_ready() refuses its jobs
 * from now on) and finishes its listed jobs with -ECANCELED without a
 * core; a job with blocks running is finished by its last running block,
 * which notices the cancellation at its next check. So a close waits for
 * blocks already on a core only, never for other contexts' turns.
 */
void snpu_sched_cancel(struct snpu_context *ctx)
{
	struct snpu_device *sdev = ctx->sdev;
	struct snpu_work *w, *tmp;
	LIST_HEAD(done);
	unsigned int p;
	u32 left;

	spin_lock(&sdev->ready_lock);
	ctx->sched_closed = true;
	for (p = 0; p < SNPU_NR_PRIO; p++) {
		struct snpu_runq *q = &ctx->runq[p];

		list_for_each_entry_safe(w, tmp, &q->jobs, node) {
			left = snpu_sched_unlist_locked(sdev, q, w);
			atomic_cmpxchg(&w->fail, 0, -ECANCELED);
			/* No block of it on a core: finish it here. */
			if (atomic_sub_and_test(left, &w->blocks_left))
				list_add_tail(&w->node, &done);
		}
	}
	spin_unlock(&sdev->ready_lock);

	list_for_each_entry_safe(w, tmp, &done, node) {
		list_del_init(&w->node);
		snpu_work_complete(w, atomic_read(&w->fail), 0, NULL);
	}
}

/**
 * snpu_sched_init_ctx() - set up the run queues of a new context
 * @ctx: the context
 */
void snpu_sched_init_ctx(struct snpu_context *ctx)
{
	unsigned int p;

	for (p = 0; p < SNPU_NR_PRIO; p++) {
		INIT_LIST_HEAD(&ctx->runq[p].node);
		INIT_LIST_HEAD(&ctx->runq[p].jobs);
	}
}

/* Wake-up condition of an idle core. */
static bool snpu_core_wake(struct snpu_device *sdev)
{
	return kthread_should_stop() || snpu_ready(sdev);
}

/*
 * A one-block graph node as short as a chain's tasks (see snpu_chainable()):
 * a core may take several of one launch in one turn.
 */
static bool snpu_short_node(const struct snpu_work *w)
{
	if (!w->gnode || w->nblocks != 1 || w->op == SNPU_OP_COLL)
		return false;
	if (w->op != SNPU_OP_LAUNCH)
		return w->copy.bytes <= SNPU_CHAIN_WORK;
	return w->launch.kernel != SNPU_KERNEL_SPIN &&
	       w->units <= SNPU_CHAIN_WORK && w->units <= w->chunk;
}

/*
 * After @w, a short graph node just taken from @q: take more short nodes
 * of the same launch from the head of @q onto @core's batch, at most
 * their fair share of the listed works (the other cores get theirs) and
 * fewer than SNPU_CHAIN_MAX: one turn of the context, as a chain is.
 */
static void snpu_pick_batch_locked(struct snpu_core *core,
				   struct snpu_runq *q, struct snpu_work *w)
{
	struct snpu_device *sdev = core->sdev;
	u32 n, max = min_t(u32, SNPU_CHAIN_MAX - 1,
			   sdev->ready_depth / sdev->cores);
	struct snpu_work *x;

	lockdep_assert_held(&sdev->ready_lock);
	for (n = 0; n < max && !list_empty(&q->jobs); n++) {
		x = list_first_entry(&q->jobs, struct snpu_work, node);
		if (x->job != w->job || x->next_block || !snpu_short_node(x))
			break;
		x->next_block = 1;
		list_move_tail(&x->node, &core->batch);
		sdev->ready_depth--;
	}
}

/*
 * Take the next block of the first job of the run queue whose turn it is,
 * in the highest priority with work; that queue's turn is then over. A
 * short graph node brings more of its launch along (@core's batch).
 */
static struct snpu_work *snpu_pick(struct snpu_core *core, u32 *block)
{
	struct snpu_device *sdev = core->sdev;
	struct snpu_work *w = NULL;
	struct snpu_runq *q;
	unsigned int p;

	spin_lock(&sdev->ready_lock);
	for (p = 0; p < SNPU_NR_PRIO; p++) {
		if (list_empty(&sdev->ready[p]))
			continue;
		q = list_first_entry(&sdev->ready[p], struct snpu_runq, node);
		w = list_first_entry(&q->jobs, struct snpu_work, node);
		*block = w->next_block++;
		if (w->next_block == w->nblocks) {
			list_del_init(&w->node);
			sdev->ready_depth--;
			if (snpu_short_node(w))
				snpu_pick_batch_locked(core, q, w);
		}
		if (list_empty(&q->jobs))
			list_del_init(&q->node);
		else
			list_move_tail(&q->node, &sdev->ready[p]);
		break;
	}
	spin_unlock(&sdev->ready_lock);
	return w;
}

/*
 * Should a running block stop? -ECANCELED when its stream failed or its
 * file is closing, -ETIMEDOUT past the watchdog's @deadline (0: none),
 * else 0.
 */
static int snpu_check(struct snpu_work *w, u64 deadline)
{
	struct snpu_job *job = w->job;

	if (READ_ONCE(job->ctx->dying) || READ_ONCE(job->stream->error))
		return -ECANCELED;
	if (deadline && ktime_get_ns() > deadline)
		return -ETIMEDOUT;
	return 0;
}

static int snpu_spin(struct snpu_work *w, u64 deadline, u64 ns)
{
	u64 end = ktime_get_ns() + ns;
	int ret;

	while (ktime_get_ns() < end) {
		ret = snpu_check(w, deadline);
		if (ret)
			return ret;
		cpu_relax();
		cond_resched();
	}
	return 0;
}

/*
 * Copy or set in chunks, checking for cancellation between them (the
 * caller checked before the first).
 */
static int snpu_run_copy(struct snpu_work *w, u64 deadline)
{
	/* Overlapping ranges copy like memmove: last chunk first if needed. */
	bool down = w->copy.src && w->copy.dst > w->copy.src;
	u64 bytes = w->copy.bytes, done, n, off;
	int ret;

	for (done = 0; done < bytes; done += n) {
		if (done) {
			cond_resched();
			ret = snpu_check(w, deadline);
			if (ret)
				return ret;
		}
		n = min_t(u64, bytes - done, SNPU_COPY_CHUNK);
		off = down ? bytes - done - n : done;
		if (w->copy.src)
			memmove(w->copy.dst + off, w->copy.src + off, n);
		else
			memset(w->copy.dst + off, w->copy.value, n);
	}
	return 0;
}

/*
 * One block of a launch, in chunks, checking for cancellation between
 * them (the caller checked before the first); f32 chunks in an FPU
 * section each.
 */
static int snpu_run_block(struct snpu_work *w, u32 block, u64 deadline)
{
	const struct snpu_klaunch *l = &w->launch;
	u64 begin, end, pos, stop;
	int ret;

	switch (l->kernel) {
	case SNPU_KERNEL_NOP:
		return 0;
	case SNPU_KERNEL_SPIN:
		return snpu_spin(w, deadline, l->scalar[0]);
	case SNPU_KERNEL_FAIL:
		return -(int)l->scalar[0];
	}

	snpu_kernel_split_steps(l, w->units, block, &begin, &end);
	for (pos = begin;; pos = stop) {
		stop = min_t(u64, end, pos + w->chunk);
		if (w->fpu)
			kernel_fpu_begin();
		ret = snpu_kernel_exec(l, block, begin, end, pos, stop);
		if (w->fpu)
			kernel_fpu_end();
		if (ret || stop >= end)
			return ret;
		cond_resched();
		ret = snpu_check(w, deadline);
		if (ret)
			return ret;
	}
}

/* The first block of a work is on a core: the task or graph node starts. */
static void snpu_run_first(struct snpu_core *core, struct snpu_work *w,
			   u64 now)
{
	struct snpu_job *job = w->job;
	struct snpu_context *ctx = job->ctx;

	/* A collective's task starts with its first step. */
	if (w->op == SNPU_OP_COLL && w->coll.step)
		return;
	if (w->gnode) {
		trace_snpu_graph_node(ctx->sdev->index, ctx->id,
				      job->stream_handle, job->seq,
				      w->gnode->index, core->index);
		return;
	}
	job->start_ns = now;
	trace_snpu_task_start(ctx->sdev->index, ctx->id, job->stream_handle,
			      job->seq, core->index);
}

/*
 * The core reads the clock: its busy time runs to now, and so does that
 * of @ctx, the context whose work it ran since the last reading (NULL:
 * the device's only). @ctx must still be there: the caller reads the
 * clock before the work's completion (or the drop of its block count),
 * after which the context may close and be freed.
 */
static u64 snpu_core_clock(struct snpu_core *core, struct snpu_context *ctx)
{
	u64 now = ktime_get_ns(), ns = now - core->clock;

	WRITE_ONCE(core->busy_ns, core->busy_ns + ns);
	if (ctx) {
		struct snpu_ctx_busy *b = &ctx->busy[core->index];

		WRITE_ONCE(b->ns, b->ns + ns);
	}
	core->clock = now;
	return now;
}

/*
 * Can @job, the stream successor of a task a core just ran, run on that
 * core straight away? A one-block launch (not SPIN), copy or memset of
 * at most SNPU_CHAIN_WORK units or bytes in one chunk: short enough that
 * the completions left waiting for it are not held up for long. Its
 * predecessor on the stream is its only one (only STREAM_WAIT and graph
 * launches have others), so it is ready as soon as that completes.
 */
static bool snpu_chainable(const struct snpu_job *job)
{
	const struct snpu_work *w = &job->work;

	switch (job->op) {
	case SNPU_OP_LAUNCH:
		/* A NOP needs no core: it completes when it is reached. */
		return w->nblocks == 1 && w->launch.kernel != SNPU_KERNEL_SPIN &&
		       w->launch.kernel != SNPU_KERNEL_NOP &&
		       w->units <= SNPU_CHAIN_WORK && w->units <= w->chunk;
	case SNPU_OP_COPY:
	case SNPU_OP_MEMSET:
		return w->copy.bytes <= SNPU_CHAIN_WORK;
	default:
		return false;
	}
}

/*
 * @w, a task's one block, ran without error: when its stream successor
 * is committed and chainable, leave @w's completion for later and hand
 * the successor to the core, without the scheduler lock or the ready
 * lists. The core's clock is read once: @w's own completion time, which
 * its CQE reports, so that each task of a chain keeps the device time it
 * took. The chain ends at SNPU_CHAIN_MAX tasks, at a task that fails or
 * whose successor is not there or not chainable; the core then completes
 * all of it at once (snpu_jobs_complete_run()).
 *
 * Return: true when @w joined the chain and its successor is handed off.
 */
static bool snpu_chain(struct snpu_core *core, struct snpu_work *w, int error,
		       struct snpu_work **handoff)
{
	struct snpu_job *job = w->job, *next;

	if (error || w->gnode || w->nblocks != 1 || *handoff ||
	    core->chained == SNPU_CHAIN_MAX - 1)
		return false;
	/* Pairs with the release of the link at commit (job.c). */
	next = smp_load_acquire(&job->next);
	if (!next || !snpu_chainable(next))
		return false;
	if (!core->chained++)
		core->chain = job;
	job->done_ns = snpu_core_clock(core, job->ctx);
	/*
	 * A trace shows the task complete before its successor starts: the
	 * completion event is sent now, and not again when the chain
	 * completes.
	 */
	if (trace_snpu_task_complete_enabled()) {
		job->error = 0;
		snpu_job_trace_complete(job->ctx, job);
	}
	next->chained = true;
	next->work.next_block = 1;
	atomic_set(&next->work.blocks_left, 1);
	atomic_set(&next->work.fail, 0);
	*handoff = &next->work;
	return true;
}

/*
 * A graph node has run. Its completion (no lock, see graph.c) may hand
 * the core one of the nodes it made ready: a continuation. Short nodes
 * (as short as a chain's tasks) continue without a clock reading, up to
 * SNPU_CHAIN_MAX in a row; the reading after them covers their busy time.
 */
static void snpu_run_gnode_done(struct snpu_core *core, struct snpu_work *w,
				int error, struct snpu_work **handoff)
{
	bool short_node = w->op == SNPU_OP_LAUNCH ?
			  w->units <= SNPU_CHAIN_WORK && w->units <= w->chunk :
			  w->copy.bytes <= SNPU_CHAIN_WORK;

	/* Read before the node completes, while its context is there. */
	if (!short_node || core->streak + 1 >= SNPU_CHAIN_MAX) {
		core->streak = 0;
		snpu_core_clock(core, w->job->ctx);
		snpu_gnode_complete(w->gnode, error, handoff);
		return;
	}
	snpu_gnode_complete(w->gnode, error, handoff);
	if (*handoff || !list_empty(&core->batch)) {
		/* The next node's reading covers this one. */
		core->streak++;
		return;
	}
	/*
	 * The launch may be complete and its file closed: the few short
	 * nodes of the streak count as the device's busy time only.
	 */
	core->streak = 0;
	snpu_core_clock(core, NULL);
}

/*
 * Run one block on @core. The watchdog times the block from when its core
 * took it: time a job spends waiting for other contexts' turns is not its
 * own. The core reads the clock when it wakes, after a block of a work
 * with more to run, and when it completes tasks: that reading is their
 * completion time (and the start of what it runs next). Tasks it chains
 * (snpu_chain()) complete together, with one reading. The core's busy
 * time and block count are its own: no lock. Each reading also charges
 * the time since the last one to the context of the work (its share of
 * snpu_context.busy, the core's own as well).
 */
static void snpu_run(struct snpu_core *core, struct snpu_work *w, u32 block,
		     struct snpu_work **handoff)
{
	struct snpu_context *ctx = w->job->ctx;
	unsigned int ms = READ_ONCE(snpu_task_timeout_ms);
	u64 start = core->clock;
	u64 deadline = ms ? start + (u64)ms * NSEC_PER_MSEC : 0;
	int ret;

	if (!block)
		snpu_run_first(core, w, start);
	/* No clock yet: a block that has not started has not run long. */
	ret = snpu_check(w, 0);
	if (!ret && w->op == SNPU_OP_LAUNCH)
		ret = snpu_run_block(w, block, deadline);
	else if (!ret && w->op == SNPU_OP_COLL)
		ret = snpu_coll_run_block(core, w, block, deadline);
	else if (!ret)
		ret = snpu_run_copy(w, deadline);
	WRITE_ONCE(core->blocks, core->blocks + 1);
	if (ret) {
		atomic_cmpxchg(&w->fail, 0, ret);
		snpu_sched_drop(w);
	}
	/*
	 * Once its count drops, another core may complete the work and its
	 * file close: the block's time is charged before.
	 */
	if (w->nblocks > 1)
		snpu_core_clock(core, ctx);
	if (!atomic_dec_and_test(&w->blocks_left))
		return;
	ret = atomic_read(&w->fail);
	if (w->op == SNPU_OP_COLL) {
		snpu_core_clock(core, ctx);
		snpu_coll_step_end(w, ret, handoff);
		return;
	}
	if (w->gnode) {
		snpu_run_gnode_done(core, w, ret, handoff);
		return;
	}
	if (snpu_chain(core, w, ret, handoff))
		return;
	if (core->chained) {
		/* @w is the last of a chain: its successor was not taken. */
		snpu_jobs_complete_run(core->chain, core->chained + 1, ret,
				       snpu_core_clock(core, ctx), handoff);
		core->chain = NULL;
		core->chained = 0;
		return;
	}
	snpu_work_complete(w, ret, snpu_core_clock(core, ctx), handoff);
}

static int snpu_core_fn(void *data)
{
	struct snpu_core *core = data;
	struct snpu_device *sdev = core->sdev;
	struct snpu_work *w, *next = NULL;
	u32 block = 0;

	core->clock = ktime_get_ns();
	while (!kthread_should_stop()) {
		/* A work handed over by the last completion runs first. */
		w = next;
		next = NULL;
		if (!w && !list_empty(&core->batch)) {
			w = list_first_entry(&core->batch, struct snpu_work,
					     node);
			list_del_init(&w->node);
		}
		if (w)
			block = 0;
		else
			w = snpu_pick(core, &block);
		if (!w) {
			wait_event_interruptible_exclusive(sdev->ready_wq,
							   snpu_core_wake(sdev));
			core->clock = ktime_get_ns();
			continue;
		}
		snpu_run(core, w, block, &next);
		cond_resched();
	}
	/* Stopped only with no context left: nothing can be handed over. */
	WARN_ON(next || !list_empty(&core->batch));
	return 0;
}

/**
 * snpu_cores_start() - start the core threads of a device
 * @sdev: the device, with @cores set
 *
 * Return: 0, or -errno with no thread left running.
 */
int snpu_cores_start(struct snpu_device *sdev)
{
	unsigned int i, p;

	spin_lock_init(&sdev->ready_lock);
	for (p = 0; p < SNPU_NR_PRIO; p++)
		INIT_LIST_HEAD(&sdev->ready[p]);
	init_waitqueue_head(&sdev->ready_wq);

	sdev->core = kcalloc(sdev->cores, sizeof(*sdev->core), GFP_KERNEL);
	if (!sdev->core)
		return -ENOMEM;
	for (i = 0; i < sdev->cores; i++) {
		struct snpu_core *core = &sdev->core[i];
		struct task_struct *t;

		core->sdev = sdev;
		core->index = i;
		INIT_LIST_HEAD(&core->batch);
		core->scratch = kmalloc_array(SNPU_COLL_TILE, SNPU_COLL_ESIZE,
					      GFP_KERNEL);
		if (!core->scratch) {
			snpu_cores_stop(sdev);
			return -ENOMEM;
		}
		t = kthread_run(snpu_core_fn, core, "%s/c%u", sdev->name, i);
		if (IS_ERR(t)) {
			snpu_cores_stop(sdev);
			return PTR_ERR(t);
		}
		core->thread = t;
	}
	return 0;
}

/**
 * snpu_cores_stop() - stop the core threads of a device with no context
 * @sdev: the device
 */
void snpu_cores_stop(struct snpu_device *sdev)
{
	unsigned int i;

	for (i = 0; i < sdev->cores; i++) {
		if (sdev->core[i].thread)
			kthread_stop(sdev->core[i].thread);
		kfree(sdev->core[i].scratch);
	}
	kfree(sdev->core);
	sdev->core = NULL;
}
