// SPDX-License-Identifier: GPL-2.0
/*
 * snpu cores: kernel threads that take blocks of ready jobs from the
 * device's ready lists (highest priority first) and run them.
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

/**
 * snpu_sched_ready() - hand a job's blocks to the cores
 * @job: a LAUNCH, COPY or MEMSET job whose predecessors are complete
 * @handoff: the caller is a core that looks for work right after, or
 *           NULL: a one-block job goes straight to it when nothing else
 *           is ready (no list, no wake-up); otherwise it takes a block
 *           itself, so one core fewer is woken
 */
void snpu_sched_ready(struct snpu_job *job, struct snpu_job **handoff)
{
	struct snpu_device *sdev = job->ctx->sdev;
	unsigned int wake;

	job->next_block = 0;
	atomic_set(&job->blocks_left, job->nblocks);
	atomic_set(&job->fail, 0);

	if (handoff && !*handoff && job->nblocks == 1 && !snpu_ready(sdev)) {
		job->next_block = 1;
		*handoff = job;
		return;
	}

	spin_lock(&sdev->ready_lock);
	list_add_tail(&job->node, &sdev->ready[job->stream->prio]);
	spin_unlock(&sdev->ready_lock);
	/* A core with an empty hand-off slot takes this job's block next. */
	wake = min(job->nblocks, sdev->cores) - (handoff && !*handoff);
	if (wake)
		wake_up_nr(&sdev->ready_wq, wake);
}

/* Wake-up condition of an idle core. */
static bool snpu_core_wake(struct snpu_device *sdev)
{
	return kthread_should_stop() || snpu_ready(sdev);
}

/* Take the next block of the first ready job. */
static struct snpu_job *snpu_pick(struct snpu_device *sdev, u32 *block)
{
	struct snpu_job *job = NULL;
	unsigned int p;

	spin_lock(&sdev->ready_lock);
	for (p = 0; p < SNPU_NR_PRIO; p++) {
		if (list_empty(&sdev->ready[p]))
			continue;
		job = list_first_entry(&sdev->ready[p], struct snpu_job, node);
		*block = job->next_block++;
		if (job->next_block == job->nblocks)
			list_del_init(&job->node);
		break;
	}
	spin_unlock(&sdev->ready_lock);
	return job;
}

static bool snpu_cancelled(struct snpu_job *job)
{
	return READ_ONCE(job->ctx->dying) || READ_ONCE(job->stream->error);
}

static int snpu_spin(struct snpu_job *job, u64 ns)
{
	u64 end = ktime_get_ns() + ns;

	while (ktime_get_ns() < end) {
		if (snpu_cancelled(job))
			return -ECANCELED;
		cpu_relax();
		cond_resched();
	}
	return 0;
}

/* Copy or set in chunks, checking for cancellation between them. */
static int snpu_run_copy(struct snpu_job *job)
{
	/* Overlapping ranges copy like memmove: last chunk first if needed. */
	bool down = job->copy.src && job->copy.dst > job->copy.src;
	u64 bytes = job->copy.bytes, done, n, off;

	for (done = 0; done < bytes; done += n) {
		if (snpu_cancelled(job))
			return -ECANCELED;
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
static int snpu_run_block(struct snpu_job *job, u32 block)
{
	const struct snpu_klaunch *l = &job->launch;
	bool fpu = snpu_kernel_uses_fpu(l->kernel);
	u64 begin, end, pos, stop, chunk = snpu_kernel_chunk(l);
	int ret = 0;

	switch (l->kernel) {
	case SNPU_KERNEL_NOP:
		return 0;
	case SNPU_KERNEL_SPIN:
		return snpu_spin(job, l->scalar[0]);
	case SNPU_KERNEL_FAIL:
		return -(int)l->scalar[0];
	}

	snpu_kernel_slice(l, block, &begin, &end);
	pos = begin;
	do {
		if (snpu_cancelled(job))
			return -ECANCELED;
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

static void snpu_run(struct snpu_job *job, u32 block,
		     struct snpu_job **handoff)
{
	int ret;

	if (snpu_cancelled(job))
		ret = -ECANCELED;
	else if (job->op == SNPU_OP_LAUNCH)
		ret = snpu_run_block(job, block);
	else
		ret = snpu_run_copy(job);
	if (ret)
		atomic_cmpxchg(&job->fail, 0, ret);
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
