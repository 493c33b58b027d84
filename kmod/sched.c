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

#include "snpu.h"

/* Bytes a copy or memset moves between checks for cancellation. */
#define SNPU_COPY_CHUNK		BIT(20)

/* Is any job waiting for a core? A hint: read without the lock. */
static bool snpu_ready(struct snpu_device *sdev)
{
	unsigned int p;

	for (p = 0; p < SNPU_NR_PRIO; p++)
		if (!list_empty_careful(&sdev->ready[p]))
			return true;
	return false;
}

/* The watchdog's deadline for a block starting now, 0 for none. */
static u64 snpu_deadline(void)
{
	unsigned int ms = READ_ONCE(snpu_task_timeout_ms);

	return ms ? ktime_get_ns() + (u64)ms * NSEC_PER_MSEC : 0;
}

/**
 * snpu_sched_ready() - hand a job's blocks to the cores
 * @job: a LAUNCH, COPY or MEMSET job whose predecessors are complete
 * @handoff: the caller is a core that looks for work right after, or
 *           NULL: a one-block job goes straight to it when nothing else
 *           is ready (no list, no wake-up); otherwise it takes a block
 *           itself, so one core fewer is woken
 *
 * Return: true, or false when the job's context is closing and its run
 * queues are closed: the caller finishes the job with -ECANCELED.
 */
bool snpu_sched_ready(struct snpu_job *job, struct snpu_job **handoff)
{
	struct snpu_context *ctx = job->ctx;
	struct snpu_device *sdev = ctx->sdev;
	struct snpu_runq *q = &ctx->runq[job->stream->prio];
	unsigned int wake;

	job->next_block = 0;
	atomic_set(&job->blocks_left, job->nblocks);
	atomic_set(&job->fail, 0);

	if (handoff && !*handoff && job->nblocks == 1 && !snpu_ready(sdev)) {
		job->next_block = 1;
		*handoff = job;
		return true;
	}

	spin_lock(&sdev->ready_lock);
	if (unlikely(ctx->sched_closed)) {
		spin_unlock(&sdev->ready_lock);
		return false;
	}
	/* A queue that had no work joins the rotation at its back. */
	if (list_empty(&q->jobs))
		list_add_tail(&q->node, &sdev->ready[job->stream->prio]);
	list_add_tail(&job->node, &q->jobs);
	spin_unlock(&sdev->ready_lock);
	/* A core with an empty hand-off slot takes this job's block next. */
	wake = min(job->nblocks, sdev->cores) - (handoff && !*handoff);
	if (wake)
		wake_up_nr(&sdev->ready_wq, wake);
	return true;
}

/*
 * Take a listed job's blocks that were not handed out off its run queue.
 * Return: how many blocks were taken.
 */
static u32 snpu_sched_unlist_locked(struct snpu_device *sdev,
				    struct snpu_runq *q, struct snpu_job *job)
{
	u32 left = job->nblocks - job->next_block;

	lockdep_assert_held(&sdev->ready_lock);
	if (!left)
		return 0;
	job->next_block = job->nblocks;
	list_del_init(&job->node);
	if (list_empty(&q->jobs))
		list_del_init(&q->node);
	return left;
}

/*
 * A block of @job failed, was cancelled or timed out: the job's result is
 * decided, so its blocks not handed out yet are dropped instead of each
 * taking a core's turn. The caller runs one block of the job, so this
 * never ends the job.
 */
static void snpu_sched_drop(struct snpu_job *job)
{
	struct snpu_device *sdev = job->ctx->sdev;
	u32 left;

	spin_lock(&sdev->ready_lock);
	left = snpu_sched_unlist_locked(sdev, &job->ctx->runq[job->stream->prio],
					job);
	spin_unlock(&sdev->ready_lock);
	if (left)
		atomic_sub(left, &job->blocks_left);
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
	struct snpu_job *job, *tmp;
	LIST_HEAD(done);
	unsigned int p;
	u32 left;

	spin_lock(&sdev->ready_lock);
	ctx->sched_closed = true;
	for (p = 0; p < SNPU_NR_PRIO; p++) {
		struct snpu_runq *q = &ctx->runq[p];

		list_for_each_entry_safe(job, tmp, &q->jobs, node) {
			left = snpu_sched_unlist_locked(sdev, q, job);
			atomic_cmpxchg(&job->fail, 0, -ECANCELED);
			/* No block of it on a core: finish it here. */
			if (atomic_sub_and_test(left, &job->blocks_left))
				list_add_tail(&job->node, &done);
		}
	}
	spin_unlock(&sdev->ready_lock);

	list_for_each_entry_safe(job, tmp, &done, node) {
		list_del_init(&job->node);
		snpu_job_complete(job, atomic_read(&job->fail), NULL);
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
 * Take the next block of the first job of the run queue whose turn it is,
 * in the highest priority with work; that queue's turn is then over.
 */
static struct snpu_job *snpu_pick(struct snpu_device *sdev, u32 *block)
{
	struct snpu_job *job = NULL;
	struct snpu_runq *q;
	unsigned int p;

	spin_lock(&sdev->ready_lock);
	for (p = 0; p < SNPU_NR_PRIO; p++) {
		if (list_empty(&sdev->ready[p]))
			continue;
		q = list_first_entry(&sdev->ready[p], struct snpu_runq, node);
		job = list_first_entry(&q->jobs, struct snpu_job, node);
		*block = job->next_block++;
		if (job->next_block == job->nblocks)
			list_del_init(&job->node);
		if (list_empty(&q->jobs))
			list_del_init(&q->node);
		else
			list_move_tail(&q->node, &sdev->ready[p]);
		break;
	}
	spin_unlock(&sdev->ready_lock);
	return job;
}

/*
 * Should a running block stop? -ECANCELED when its stream failed or its
 * file is closing, -ETIMEDOUT past the watchdog's @deadline (0: none),
 * else 0.
 */
static int snpu_check(struct snpu_job *job, u64 deadline)
{
	if (READ_ONCE(job->ctx->dying) || READ_ONCE(job->stream->error))
		return -ECANCELED;
	if (deadline && ktime_get_ns() > deadline)
		return -ETIMEDOUT;
	return 0;
}

static int snpu_spin(struct snpu_job *job, u64 deadline, u64 ns)
{
	u64 end = ktime_get_ns() + ns;
	int ret;

	while (ktime_get_ns() < end) {
		ret = snpu_check(job, deadline);
		if (ret)
			return ret;
		cpu_relax();
		cond_resched();
	}
	return 0;
}

/* Copy or set in chunks, checking for cancellation between them. */
static int snpu_run_copy(struct snpu_job *job, u64 deadline)
{
	/* Overlapping ranges copy like memmove: last chunk first if needed. */
	bool down = job->copy.src && job->copy.dst > job->copy.src;
	u64 bytes = job->copy.bytes, done, n, off;
	int ret;

	for (done = 0; done < bytes; done += n) {
		ret = snpu_check(job, deadline);
		if (ret)
			return ret;
		n = min_t(u64, bytes - done, SNPU_COPY_CHUNK);
		off = down ? bytes - done - n : done;
		if (job->copy.src)
			memmove(job->copy.dst + off, job->copy.src + off, n);
		else
			memset(job->copy.dst + off, job->copy.value, n);
		cond_resched();
	}
	return 0;
}

/* One block of a launch, in chunks; f32 chunks in an FPU section each. */
static int snpu_run_block(struct snpu_job *job, u32 block, u64 deadline)
{
	const struct snpu_klaunch *l = &job->launch;
	bool fpu = snpu_kernel_uses_fpu(l->kernel);
	u64 begin, end, pos, stop, chunk = snpu_kernel_chunk(l);
	int ret = 0;

	switch (l->kernel) {
	case SNPU_KERNEL_NOP:
		return 0;
	case SNPU_KERNEL_SPIN:
		return snpu_spin(job, deadline, l->scalar[0]);
	case SNPU_KERNEL_FAIL:
		return -(int)l->scalar[0];
	}

	snpu_kernel_slice(l, block, &begin, &end);
	pos = begin;
	do {
		ret = snpu_check(job, deadline);
		if (ret)
			return ret;
		stop = min_t(u64, end, pos + chunk);
		if (fpu)
			kernel_fpu_begin();
		ret = snpu_kernel_run(l, block, begin, end, pos, stop);
		if (fpu)
			kernel_fpu_end();
		pos = stop;
		cond_resched();
	} while (!ret && pos < end);
	return ret;
}

/*
 * Run one block. The watchdog times the block, from when its core took it:
 * time a job spends waiting for other contexts' turns is not its own.
 */
static void snpu_run(struct snpu_job *job, u32 block,
		     struct snpu_job **handoff)
{
	u64 deadline = snpu_deadline();
	int ret;

	ret = snpu_check(job, deadline);
	if (!ret && job->op == SNPU_OP_LAUNCH)
		ret = snpu_run_block(job, block, deadline);
	else if (!ret)
		ret = snpu_run_copy(job, deadline);
	if (ret) {
		atomic_cmpxchg(&job->fail, 0, ret);
		snpu_sched_drop(job);
	}
	if (atomic_dec_and_test(&job->blocks_left))
		snpu_job_complete(job, atomic_read(&job->fail), handoff);
}

static int snpu_core_fn(void *data)
{
	struct snpu_device *sdev = data;
	struct snpu_job *job, *next = NULL;
	u32 block = 0;

	while (!kthread_should_stop()) {
		/* A job handed over by the last completion runs first. */
		job = next;
		next = NULL;
		if (job)
			block = 0;
		else
			job = snpu_pick(sdev, &block);
		if (!job) {
			wait_event_interruptible_exclusive(sdev->ready_wq,
							   snpu_core_wake(sdev));
			continue;
		}
		snpu_run(job, block, &next);
		cond_resched();
	}
	/* Stopped only with no context left: nothing can be handed over. */
	WARN_ON(next);
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
		struct task_struct *t;

		t = kthread_run(snpu_core_fn, sdev, "%s/c%u", sdev->name, i);
		if (IS_ERR(t)) {
			snpu_cores_stop(sdev);
			return PTR_ERR(t);
		}
		sdev->core[i] = t;
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

	for (i = 0; i < sdev->cores; i++)
		if (sdev->core[i])
			kthread_stop(sdev->core[i]);
	kfree(sdev->core);
	sdev->core = NULL;
}
