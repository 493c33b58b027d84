// SPDX-License-Identifier: GPL-2.0
/*
 * snpu command queues: a submission ring of task descriptors and a
 * completion ring, shared with the process through one mapping, with the
 * discipline the uapi header documents. The kernel keeps its own copies of
 * the counters it owns and trusts no value the process writes: a tail
 * that claims more than a ring is clamped and counted, a head that makes
 * the CQ look fuller than it can be only delays completions.
 *
 * In order: the CQ side (posting a completion, the one call through which
 * completions reach the ring, and parking it while the CQ is full), SQ
 * consumption (each SQE checked and turned into a job like a task of
 * SNPU_IOC_SUBMIT), ENTER, setup, teardown and mmap. The kernel poller
 * that consumes SQEs without ENTER is in sqpoll.c.
 */
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "snpu.h"
#include "trace.h"
#include "core/ckpt.h"

/* Offsets in the header page: each counter on its own cache line. */
#define SNPU_RING_SQ_HEAD	0
#define SNPU_RING_SQ_TAIL	64
#define SNPU_RING_CQ_HEAD	128
#define SNPU_RING_CQ_TAIL	192
#define SNPU_RING_SQ_FLAGS	256
#define SNPU_RING_CQ_FLAGS	260
#define SNPU_RING_SQ_MASK	264
#define SNPU_RING_SQ_ENTRIES	268
#define SNPU_RING_CQ_MASK	272
#define SNPU_RING_CQ_ENTRIES	276
#define SNPU_RING_SQ_DROPPED	280
#define SNPU_RING_CQ_OVERFLOW	284

#define SNPU_RING_IDLE_MS	100

/* SQEs checked between two commits. */
#define SNPU_RING_BATCH		64
#define SNPU_RING_MAX_IDLE_MS	SNPU_CKPT_RING_MAX_IDLE_MS

static u32 *snpu_ring_word(struct snpu_ring *ring, unsigned int off)
{
	return ring->mem + off;
}

/* Completions in the CQ as the kernel sees it; a bogus head reads full. */
static u32 snpu_cq_used_locked(struct snpu_ring *ring)
{
	u32 used = ring->cq_tail - READ_ONCE(*ring->cq_head);

	return used > ring->cq_entries ? ring->cq_entries : used;
}

/* The next CQE, filled by the caller before snpu_cq_push_locked(). */
static struct snpu_cqe *snpu_cq_next_locked(struct snpu_ring *ring)
{
	return &ring->cqes[ring->cq_tail & ring->cq_mask];
}

static void snpu_cq_push_locked(struct snpu_context *ctx,
				struct snpu_ring *ring)
{
	this_cpu_inc(ctx->sdev->pcpu->cqes);
	WRITE_ONCE(ring->cq_tail, ring->cq_tail + 1);
	/* Entries first, then the tail the process reads with acquire. */
	smp_store_release(ring->cq_tail_user, ring->cq_tail);
}

static void snpu_cq_write_locked(struct snpu_context *ctx,
				 struct snpu_ring *ring, u64 user_data,
				 int result, u64 time_ns, u64 seq)
{
	struct snpu_cqe *cqe = snpu_cq_next_locked(ring);

	cqe->user_data = user_data;
	cqe->result = result;
	cqe->flags = 0;
	cqe->time_ns = time_ns;
	cqe->seq = seq;
	snpu_cq_push_locked(ctx, ring);
}

/* A ready callback's entry: it is delivered (see snpu_ring_callback_locked()). */
static void snpu_cq_write_callback_locked(struct snpu_context *ctx,
					  struct snpu_ring *ring,
					  struct snpu_job *job)
{
	struct snpu_cqe *cqe = snpu_cq_next_locked(ring);

	cqe->user_data = job->user_data;
	cqe->result = 0;
	cqe->flags = SNPU_CQE_F_CALLBACK;
	cqe->callback.cookie = snpu_callback_cookie(job);
	cqe->callback.stream = job->stream_handle;
	cqe->seq = job->seq;
	snpu_callback_delivered_locked(ctx, job);
	snpu_cq_push_locked(ctx, ring);
}

/* Wake ENTER only once the CQ holds what it waits for. */
static void snpu_ring_wake_locked(struct snpu_ring *ring)
{
	if (ring->cq_waiting && (s32)(ring->cq_tail - ring->cq_wake) >= 0) {
		ring->cq_waiting = false;
		wake_up_all(&ring->cq_wq);
	}
}

/**
 * snpu_ring_post_locked() - post a job's completion to the CQ
 * @ctx: the context
 * @job: a job submitted through the SQ, complete (or refused)
 *
 * Writes the CQE, or when the CQ is full, or earlier completions already
 * wait, parks the job (keeping its pool slot) until room appears. Wakes
 * an SNPU_IOC_ENTER waiting for completions.
 */
void snpu_ring_post_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	struct snpu_ring *ring = ctx->ring;

	lockdep_assert_held(&ctx->sched_lock);
	if (list_empty(&ring->overflow) &&
	    snpu_cq_used_locked(ring) < ring->cq_entries) {
		snpu_cq_write_locked(ctx, ring, job->user_data, job->error,
				     job->done_ns, job->seq);
	} else {
		this_cpu_inc(ctx->sdev->pcpu->overflows);
		refcount_inc(&job->ref);
		list_add_tail(&job->ov_node, &ring->overflow);
		WRITE_ONCE(*ring->cq_flags, SNPU_CQ_OVERFLOW);
		WRITE_ONCE(*ring->cq_overflow, *ring->cq_overflow + 1);
	}
	snpu_ring_wake_locked(ring);
}

/**
 * snpu_ring_callback_locked() - deliver a ready callback through the CQ
 * @ctx: the context
 * @job: a HOST_FUNC job that became ready, not queued anywhere
 *
 * With SNPU_RING_CALLBACK_CQE, the callback goes to the CQ as an entry
 * flagged SNPU_CQE_F_CALLBACK, and is delivered from then on, when the
 * CQ has room and no callback waits before it.
 *
 * Return: true when delivered; false when the caller queues it for
 * CALLBACK_WAIT, where snpu_ring_flush() takes it when room appears.
 */
bool snpu_ring_callback_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	struct snpu_ring *ring = ctx->ring;

	lockdep_assert_held(&ctx->sched_lock);
	if (!ring || !ring->callback_cqe)
		return false;
	if (!list_empty(&ctx->callbacks) ||
	    snpu_cq_used_locked(ring) >= ring->cq_entries) {
		WRITE_ONCE(*ring->cq_flags, SNPU_CQ_OVERFLOW);
		return false;
	}
	snpu_cq_write_callback_locked(ctx, ring, job);
	snpu_ring_wake_locked(ring);
	return true;
}

/**
 * snpu_ring_flush() - move parked completions into the CQ while there is room
 * @ctx: the context
 * @ring: its rings
 *
 * Return: true when no completion is left parked.
 */
bool snpu_ring_flush(struct snpu_context *ctx, struct snpu_ring *ring)
{
	struct snpu_job *job;
	bool empty;

	/*
	 * Nothing parked, the common case: no lock. A completion parked just
	 * after this look is one parked just after the flush.
	 */
	if (list_empty(&ring->overflow) &&
	    (!ring->callback_cqe || list_empty_careful(&ctx->callbacks)))
		return true;
	spin_lock(&ctx->sched_lock);
	/* A checkpoint copies the CQ: what waits for room waits. */
	if (ring->frozen) {
		spin_unlock(&ctx->sched_lock);
		return false;
	}
	while (!list_empty(&ring->overflow) &&
	       snpu_cq_used_locked(ring) < ring->cq_entries) {
		job = list_first_entry(&ring->overflow, struct snpu_job,
				       ov_node);
		list_del_init(&job->ov_node);
		snpu_cq_write_locked(ctx, ring, job->user_data, job->error,
				     job->done_ns, job->seq);
		snpu_job_put_locked(ctx, job);
	}
	/* Callbacks that found the CQ full go in, in the order they came. */
	while (ring->callback_cqe && !list_empty(&ctx->callbacks) &&
	       snpu_cq_used_locked(ring) < ring->cq_entries) {
		job = list_first_entry(&ctx->callbacks, struct snpu_job, node);
		list_del_init(&job->node);
		snpu_cq_write_callback_locked(ctx, ring, job);
	}
	empty = list_empty(&ring->overflow) &&
		(!ring->callback_cqe || list_empty(&ctx->callbacks));
	if (empty)
		WRITE_ONCE(*ring->cq_flags, 0);
	snpu_ring_wake_locked(ring);
	spin_unlock(&ctx->sched_lock);
	return empty;
}

/* An SQE refused at submit completes at once with its error. */
static void snpu_ring_refuse(struct snpu_context *ctx, struct snpu_job *job,
			     u64 user_data, int error)
{
	LIST_HEAD(one);

	/* Drop what prepare took; keep the job as the completion's carrier. */
	list_add(&job->node, &one);
	spin_lock(&ctx->sched_lock);
	refcount_inc(&job->ref);
	spin_unlock(&ctx->sched_lock);
	snpu_jobs_unwind(ctx, &one);

	spin_lock(&ctx->sched_lock);
	job->user_data = user_data;
	job->error = error;
	job->seq = 0;
	job->done_ns = ktime_get_ns();
	job->state = SNPU_JOB_DONE;
	snpu_ring_post_locked(ctx, job);
	snpu_job_put_locked(ctx, job);
	spin_unlock(&ctx->sched_lock);
}

/* The entry at the SQ head is copied: give it back to the process. */
static void snpu_sq_advance(struct snpu_ring *ring)
{
	/* After the copy; pairs with the process's acquire of the head. */
	smp_store_release(ring->sq_head_user, ++ring->sq_head);
}

static bool snpu_task_is_nop(const struct snpu_task *t)
{
	return t->op == SNPU_OP_LAUNCH && t->launch.kernel == SNPU_KERNEL_NOP;
}

/* A NOP launch done without a job: its whole life in the trace at once. */
static void snpu_ring_nop_trace(struct snpu_context *ctx, u32 stream, u64 seq)
{
	unsigned int dev = ctx->sdev->index;

	trace_snpu_task_submit(dev, ctx->id, stream, seq, SNPU_OP_LAUNCH,
			       SNPU_KERNEL_NOP, 1, SNPU_TRANSPORT_RING);
	trace_snpu_task_start(dev, ctx->id, stream, seq, -1);
	trace_snpu_task_complete(dev, ctx->id, stream, seq, 0, 0, 0);
}

/*
 * NOP launches on idle streams, with room in the CQ, complete here,
 * without a job (see snpu_stream_nop_locked()): @t, the entry at the SQ
 * head, and those right after it, up to @max in all, while each is such
 * a NOP. A run of them takes one hold of sched_lock, one clock reading,
 * and one store of each of the SQ head and the CQ tail the process
 * reads: the entries are given back before their CQEs are seen. Returns
 * how many were consumed; 0 leaves @t at the SQ head for the job path,
 * which checks it again and reports its error.
 */
static u32 snpu_ring_nops_locked(struct snpu_context *ctx,
				 struct snpu_ring *ring, struct snpu_task *t,
				 u32 max, u64 *now)
{
	struct snpu_stream *s;
	struct snpu_cqe *cqe;
	u32 done = 0;
	u64 seq;

	lockdep_assert_held(&ctx->lock);
	spin_lock(&ctx->sched_lock);
	while (done < max) {
		if (done)
			memcpy(t, &ring->sqes[ring->sq_head & ring->sq_mask],
			       sizeof(*t));
		if (!snpu_task_is_nop(t) || snpu_task_check(t))
			break;
		s = snpu_stream_get_locked(ctx, t->stream);
		if (!s || s->destroying || !list_empty(&ring->overflow) ||
		    snpu_cq_used_locked(ring) >= ring->cq_entries)
			break;
		seq = snpu_stream_nop_locked(ctx, s);
		if (!seq)
			break;
		ring->sq_head++;
		if (!*now)
			*now = ktime_get_ns();
		snpu_ring_nop_trace(ctx, t->stream, seq);
		cqe = snpu_cq_next_locked(ring);
		cqe->user_data = t->user_data;
		cqe->result = 0;
		cqe->flags = 0;
		cqe->time_ns = *now;
		cqe->seq = seq;
		WRITE_ONCE(ring->cq_tail, ring->cq_tail + 1);
		done++;
	}
	if (done) {
		ctx->tasks_done += done;
		this_cpu_add(ctx->sdev->pcpu->tasks, done);
		this_cpu_add(ctx->sdev->pcpu->cqes, done);
		/* Pairs with the process's acquire of the SQ head. */
		smp_store_release(ring->sq_head_user, ring->sq_head);
		/* Entries first, then the tail the process reads. */
		smp_store_release(ring->cq_tail_user, ring->cq_tail);
		snpu_ring_wake_locked(ring);
	}
	spin_unlock(&ctx->sched_lock);
	return done;
}

/*
 * An SNPU_OP_CALLBACK_DONE entry: checked, then the callback it names
 * completed. It takes no job: a completion entry is written only for an
 * error, which the caller has the job path write. Return: 0 or -errno.
 */
static int snpu_ring_callback_done(struct snpu_context *ctx,
				   const struct snpu_task *t)
{
	int ret = snpu_task_check_callback_done(t);

	return ret ?: snpu_callback_complete(ctx, t->callback.cookie,
					     t->callback.status);
}

/*
 * Commit the prepared jobs at the front of @jobs: those before @next, or
 * all of them when @next is NULL. They leave @jobs.
 */
static void snpu_ring_commit_prepared(struct snpu_context *ctx,
				      struct list_head *jobs,
				      struct snpu_job *next)
{
	LIST_HEAD(prepared);

	if (next)
		list_cut_before(&prepared, jobs, &next->node);
	else
		list_splice_init(jobs, &prepared);
	snpu_jobs_commit(ctx, &prepared);
}

/**
 * snpu_ring_consume_locked() - take SQEs from the submission ring
 * @ctx: the context, with rings
 * @max: most SQEs to take
 *
 * Each SQE is copied once from the shared page and checked from the copy,
 * exactly like a task of SNPU_IOC_SUBMIT, but on its own: a bad one gets
 * an error CQE and the next ones go on. Jobs are reserved for a stretch
 * of entries at a time and the prepared ones committed together; a NOP
 * launch on an idle stream needs none. Stops early when task slots run
 * out; those SQEs stay in the ring.
 *
 * Return: number of SQEs consumed.
 */
u32 snpu_ring_consume_locked(struct snpu_context *ctx, u32 max)
{
	struct snpu_ring *ring = ctx->ring;
	/* Reserved jobs; those before @next are prepared, in SQ order. */
	struct snpu_job *job, *next = NULL;
	u32 tail, avail, n;
	LIST_HEAD(jobs);
	struct snpu_task t;
	u64 now = 0;
	int ret, done;
	u32 k;

	lockdep_assert_held(&ctx->lock);
	/* Pairs with the process's release of the tail after the entries. */
	tail = smp_load_acquire(ring->sq_tail_user);
	avail = tail - ring->sq_head;
	if (avail > ring->sq_entries) {
		WRITE_ONCE(*ring->sq_dropped, *ring->sq_dropped + 1);
		avail = ring->sq_entries;
	}
	avail = min(avail, max);

	for (n = 0; n < avail; n++) {
		memcpy(&t, &ring->sqes[ring->sq_head & ring->sq_mask],
		       sizeof(t));
		done = 0;
		if (t.op == SNPU_OP_CALLBACK_DONE) {
			/* After the tasks before it, as for a NOP. */
			if (!list_empty(&jobs) &&
			    list_first_entry(&jobs, struct snpu_job, node) != next) {
				snpu_ring_commit_prepared(ctx, &jobs, next);
				now = 0;
			}
			done = snpu_ring_callback_done(ctx, &t);
			if (!done) {
				snpu_sq_advance(ring);
				continue;
			}
			/* Failed: the job path carries its error CQE. */
		} else if (snpu_task_is_nop(&t)) {
			/* Only behind the tasks before it: link them first. */
			if (!list_empty(&jobs) &&
			    list_first_entry(&jobs, struct snpu_job, node) != next) {
				snpu_ring_commit_prepared(ctx, &jobs, next);
				now = 0;
			}
			k = snpu_ring_nops_locked(ctx, ring, &t, avail - n,
						  &now);
			if (k) {
				n += k - 1;
				continue;
			}
		}
		if (!next) {
			/* Slots for a stretch: one reservation and one commit. */
			snpu_ring_commit_prepared(ctx, &jobs, NULL);
			now = 0;
			if (snpu_jobs_reserve(ctx, min_t(u32, avail - n,
							 SNPU_RING_BATCH),
					      &jobs) &&
			    snpu_jobs_reserve(ctx, 1, &jobs))
				break;
			next = list_first_entry(&jobs, struct snpu_job, node);
		}
		snpu_sq_advance(ring);
		job = next;
		next = list_is_last(&job->node, &jobs) ? NULL :
						       list_next_entry(job, node);
		/* A poller has no fds: fence waits go through SUBMIT only. */
		ret = done ?: t.op == SNPU_OP_FENCE_WAIT ? -EINVAL :
		      snpu_job_prepare_locked(ctx, job, &t);
		if (ret) {
			list_del_init(&job->node);
			snpu_ring_refuse(ctx, job, t.user_data, ret);
		} else {
			job->cqe = true;
		}
	}
	snpu_ring_commit_prepared(ctx, &jobs, next);
	if (!list_empty(&jobs))
		snpu_jobs_unwind(ctx, &jobs);
	return n;
}

/*
 * Wait condition of ENTER: @want completions in the CQ. When not yet,
 * leave the CQ tail to wake at; the earliest target of all waiters wins,
 * and a waiter woken early sets its own again.
 */
static bool snpu_cq_ready(struct snpu_context *ctx, struct snpu_ring *ring,
			  u32 want)
{
	u32 at = READ_ONCE(*ring->cq_head) + want;
	bool ready;

	/* The tail only grows: once far enough, no lock is needed. */
	if ((s32)(READ_ONCE(ring->cq_tail) - at) >= 0)
		return true;
	spin_lock(&ctx->sched_lock);
	ready = (s32)(ring->cq_tail - at) >= 0;
	if (!ready && (!ring->cq_waiting || (s32)(at - ring->cq_wake) < 0)) {
		ring->cq_wake = at;
		ring->cq_waiting = true;
	}
	spin_unlock(&ctx->sched_lock);
	return ready;
}

static int snpu_enter(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_enter *e = &arg->enter;
	/* Pairs with the release of a complete ring in RING_SETUP. */
	struct snpu_ring *ring = smp_load_acquire(&ctx->ring);
	bool flushed;
	long ret = 0;
	s64 left;

	if (!snpu_zero(e->reserved, sizeof(e->reserved)) || e->pad ||
	    e->timeout_ns < -1)
		return -EINVAL;
	/* An output: what the caller left in it must not pass for SQEs. */
	e->submitted = 0;
	if (!ring)
		return -ENXIO;
	if (ring->poller && e->to_submit)
		return -EINVAL;
	if (e->min_complete > ring->cq_entries)
		return -EINVAL;

	flushed = snpu_ring_flush(ctx, ring);
	if (e->flags & SNPU_ENTER_SQ_WAKEUP && ring->poller) {
		WRITE_ONCE(ring->kicked, true);
		wake_up(&ring->poll_wq);
	}
	if (e->to_submit) {
		/* Submission changes resources: the snapshot gate. */
		ret = snpu_proc_enter(ctx->proc);
		if (ret)
			return ret;
		mutex_lock(&ctx->lock);
		e->submitted = snpu_ring_consume_locked(ctx, e->to_submit);
		mutex_unlock(&ctx->lock);
		snpu_proc_exit(ctx->proc);
		if (!e->submitted && !flushed)
			return -EBUSY;
	}
	if (!(e->flags & SNPU_ENTER_GETEVENTS) || !e->min_complete ||
	    snpu_cq_ready(ctx, ring, e->min_complete))
		return 0;
	left = snpu_timeout_left(e->flags, e->timeout_ns);
	if (!left)
		return -ETIMEDOUT;

	if (left < 0)
		ret = wait_event_interruptible(ring->cq_wq,
					       snpu_cq_ready(ctx, ring, e->min_complete));
	else
		ret = wait_event_interruptible_hrtimeout(ring->cq_wq,
							 snpu_cq_ready(ctx, ring,
								       e->min_complete),
							 ns_to_ktime(left));
	ret = snpu_wait_result(e->flags, e->timeout_ns, ret);
	/* Submitted SQEs are consumed whatever the wait says: report them. */
	return e->submitted && ret ? 0 : ret;
}

int snpu_ioc_enter(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_enter *e = &arg->enter;
	int ret = snpu_enter(ctx, arg);

	trace_snpu_ring_enter(ctx->sdev->index, ctx->id, e->to_submit,
			      e->submitted, e->min_complete, e->flags, ret);
	return ret;
}

/* The words of the header page that only the ring's sizes make. */
static void snpu_ring_write_sizes(struct snpu_ring *ring)
{
	*snpu_ring_word(ring, SNPU_RING_SQ_MASK) = ring->sq_mask;
	*snpu_ring_word(ring, SNPU_RING_SQ_ENTRIES) = ring->sq_entries;
	*snpu_ring_word(ring, SNPU_RING_CQ_MASK) = ring->cq_mask;
	*snpu_ring_word(ring, SNPU_RING_CQ_ENTRIES) = ring->cq_entries;
}

static int snpu_ring_check(const struct snpu_ring_setup *s)
{
	u32 cq = s->cq_entries ?: 2 * s->sq_entries;

	if (!snpu_zero(s->reserved, sizeof(s->reserved)) || s->pad)
		return -EINVAL;
	if (!s->sq_entries || !is_power_of_2(s->sq_entries) ||
	    s->sq_entries > SNPU_RING_MAX_ENTRIES)
		return -EINVAL;
	if (!is_power_of_2(cq) || cq < s->sq_entries ||
	    cq > 2 * SNPU_RING_MAX_ENTRIES)
		return -EINVAL;
	if (s->flags & SNPU_RING_SQPOLL ? s->idle_ms > SNPU_RING_MAX_IDLE_MS :
	    s->idle_ms)
		return -EINVAL;
	return 0;
}

static void snpu_ring_fill_offsets(struct snpu_ring *ring,
				   struct snpu_ring_setup *s)
{
	s->sq = (struct snpu_ring_offsets) {
		.head = SNPU_RING_SQ_HEAD, .tail = SNPU_RING_SQ_TAIL,
		.mask = SNPU_RING_SQ_MASK, .entries = SNPU_RING_SQ_ENTRIES,
		.flags = SNPU_RING_SQ_FLAGS, .counter = SNPU_RING_SQ_DROPPED,
		.array = ring->sq_off,
	};
	s->cq = (struct snpu_ring_offsets) {
		.head = SNPU_RING_CQ_HEAD, .tail = SNPU_RING_CQ_TAIL,
		.mask = SNPU_RING_CQ_MASK, .entries = SNPU_RING_CQ_ENTRIES,
		.flags = SNPU_RING_CQ_FLAGS, .counter = SNPU_RING_CQ_OVERFLOW,
		.array = ring->cq_off,
	};
	s->mmap_offset = SNPU_RING_MMAP_OFFSET;
	s->mmap_bytes = ring->bytes;
}

/*
 * Rings of @sq_entries and @cq_entries (checked by the caller), not
 * published: their memory is zero but for the masks and sizes.
 */
static struct snpu_ring *snpu_ring_alloc(u32 sq_entries, u32 cq_entries,
					 u32 flags, unsigned int idle_ms)
{
	struct snpu_ring *ring;
	size_t sq_bytes, cq_bytes;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		return NULL;
	ring->sq_entries = sq_entries;
	ring->sq_mask = sq_entries - 1;
	ring->cq_entries = cq_entries;
	ring->cq_mask = ring->cq_entries - 1;
	ring->idle_ms = idle_ms ?: SNPU_RING_IDLE_MS;
	ring->callback_cqe = flags & SNPU_RING_CALLBACK_CQE;
	INIT_LIST_HEAD(&ring->overflow);
	init_waitqueue_head(&ring->cq_wq);
	init_waitqueue_head(&ring->poll_wq);

	sq_bytes = (size_t)ring->sq_entries * sizeof(struct snpu_task);
	cq_bytes = (size_t)ring->cq_entries * sizeof(struct snpu_cqe);
	ring->sq_off = PAGE_SIZE;
	ring->cq_off = PAGE_SIZE + PAGE_ALIGN(sq_bytes);
	ring->bytes = ring->cq_off + PAGE_ALIGN(cq_bytes);
	ring->mem = snpu_vmalloc_user(ring->bytes);
	if (!ring->mem) {
		kfree(ring);
		return NULL;
	}
	ring->sq_head_user = snpu_ring_word(ring, SNPU_RING_SQ_HEAD);
	ring->sq_tail_user = snpu_ring_word(ring, SNPU_RING_SQ_TAIL);
	ring->cq_head = snpu_ring_word(ring, SNPU_RING_CQ_HEAD);
	ring->cq_tail_user = snpu_ring_word(ring, SNPU_RING_CQ_TAIL);
	ring->sq_flags = snpu_ring_word(ring, SNPU_RING_SQ_FLAGS);
	ring->cq_flags = snpu_ring_word(ring, SNPU_RING_CQ_FLAGS);
	ring->sq_dropped = snpu_ring_word(ring, SNPU_RING_SQ_DROPPED);
	ring->cq_overflow = snpu_ring_word(ring, SNPU_RING_CQ_OVERFLOW);
	snpu_ring_write_sizes(ring);
	ring->sqes = ring->mem + ring->sq_off;
	ring->cqes = ring->mem + ring->cq_off;
	return ring;
}

/*
 * Publish complete rings: ENTER, mmap and the poller read ctx->ring
 * without the context lock, completions under sched_lock.
 */
static void snpu_ring_publish_locked(struct snpu_context *ctx,
				     struct snpu_ring *ring)
{
	lockdep_assert_held(&ctx->lock);
	spin_lock(&ctx->sched_lock);
	/* ENTER, mmap and the poller load it with acquire. */
	smp_store_release(&ctx->ring, ring);
	spin_unlock(&ctx->sched_lock);
}

int snpu_ioc_ring_setup(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_ring_setup *s = &arg->ring_setup;
	struct snpu_ring *ring;
	int ret;

	ret = snpu_ring_check(s);
	if (ret)
		return ret;

	ring = snpu_ring_alloc(s->sq_entries, s->cq_entries ?: 2 * s->sq_entries,
			       s->flags, s->idle_ms);
	if (!ring)
		return -ENOMEM;

	mutex_lock(&ctx->lock);
	if (ctx->ring) {
		ret = -EBUSY;
		goto err_unlock;
	}
	/*
	 * Everything that can fail comes first: the poller is created, not
	 * run. Only a complete ring is published.
	 */
	if (s->flags & SNPU_RING_SQPOLL) {
		ret = snpu_sqpoll_create(ctx, ring);
		if (ret)
			goto err_unlock;
	}
	snpu_ring_publish_locked(ctx, ring);
	mutex_unlock(&ctx->lock);
	if (ring->poller)
		wake_up_process(ring->poller);
	snpu_ring_fill_offsets(ring, s);
	return 0;

err_unlock:
	mutex_unlock(&ctx->lock);
	vfree(ring->mem);
	kfree(ring);
	return ret;
}

int snpu_ioc_ring_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_ring_query *q = &arg->ring_query;
	/* Pairs with the release of complete rings (RING_SETUP, restore). */
	struct snpu_ring *ring = smp_load_acquire(&ctx->ring);
	struct snpu_ring_setup s;

	if (!snpu_zero(q->reserved, sizeof(q->reserved)))
		return -EINVAL;
	if (!ring)
		return -ENXIO;
	/* Fixed from publication on: no lock. */
	q->ring_flags = (ring->poller ? SNPU_RING_SQPOLL : 0) |
			(ring->callback_cqe ? SNPU_RING_CALLBACK_CQE : 0);
	q->sq_entries = ring->sq_entries;
	q->cq_entries = ring->cq_entries;
	q->idle_ms = ring->poller ? ring->idle_ms : 0;
	snpu_ring_fill_offsets(ring, &s);
	q->mmap_offset = s.mmap_offset;
	q->mmap_bytes = s.mmap_bytes;
	q->sq = s.sq;
	q->cq = s.cq;
	return 0;
}

/**
 * snpu_ring_free() - free the rings of a closed context
 * @ctx: the context, with no job left
 *
 * A mapping of the rings holds the file, so none is left when this runs;
 * a munmap before that changes nothing for the kernel, which writes
 * through its own view of the memory.
 */
void snpu_ring_free(struct snpu_context *ctx)
{
	struct snpu_ring *ring = ctx->ring;
	struct snpu_job *job, *tmp;

	if (!ring)
		return;
	spin_lock(&ctx->sched_lock);
	list_for_each_entry_safe(job, tmp, &ring->overflow, ov_node) {
		list_del_init(&job->ov_node);
		snpu_job_put_locked(ctx, job);
	}
	ctx->ring = NULL;
	spin_unlock(&ctx->sched_lock);
	vfree(ring->mem);
	kfree(ring);
}

/*
 * The rings live as long as the file, and every mapping (and each copy the
 * kernel makes of one) holds the file: no reference of their own to keep.
 */
static vm_fault_t snpu_ring_vm_fault(struct vm_fault *vmf)
{
	struct snpu_ring *ring = vmf->vma->vm_private_data;

	return snpu_vmalloc_fault(vmf, ring->mem, ring->bytes,
				  SNPU_RING_MMAP_OFFSET >> PAGE_SHIFT);
}

static const struct vm_operations_struct snpu_ring_vm_ops = {
	.fault = snpu_ring_vm_fault,
};

/**
 * snpu_ring_mmap() - map the rings
 * @ctx: the context
 * @vma: the mapping at SNPU_RING_MMAP_OFFSET, at most the rings' size
 *
 * Return: 0, -ENXIO without rings, -EINVAL for a bad size or a private
 * mapping.
 */
int snpu_ring_mmap(struct snpu_context *ctx, struct vm_area_struct *vma)
{
	/* Pairs with the release of a complete ring in RING_SETUP. */
	struct snpu_ring *ring = smp_load_acquire(&ctx->ring);

	if (!ring)
		return -ENXIO;
	if (vma->vm_end - vma->vm_start > ring->bytes ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = ring;
	vma->vm_ops = &snpu_ring_vm_ops;
	return 0;
}

/*
 * Checkpoint images (Documentation/checkpoint.rst): a context's rings are
 * one SNPU_CKPT_RING chunk, the last of the context, then DATA: the
 * mapping's bytes and the completions parked for room. The counters of
 * the header page are the record's; a restore writes them over the bytes.
 */

/* The record of @ring as it stands; the caller keeps it from changing. */
static void snpu_ring_ckpt_rec_locked(struct snpu_context *ctx,
				      struct snpu_ring *ring,
				      struct snpu_ckpt_ring *r)
{
	struct snpu_job *job;

	lockdep_assert_held(&ctx->sched_lock);
	memset(r, 0, sizeof(*r));
	r->flags = (ring->poller ? SNPU_RING_SQPOLL : 0) |
		   (ring->callback_cqe ? SNPU_RING_CALLBACK_CQE : 0);
	r->sq_entries = ring->sq_entries;
	r->cq_entries = ring->cq_entries;
	r->idle_ms = ring->poller ? ring->idle_ms : 0;
	r->sq_head = ring->sq_head;
	r->cq_tail = ring->cq_tail;
	/* The process's words, each read once: the record is consistent. */
	r->sq_tail = READ_ONCE(*ring->sq_tail_user);
	r->cq_head = READ_ONCE(*ring->cq_head);
	r->sq_flags = READ_ONCE(*ring->sq_flags);
	r->cq_flags = READ_ONCE(*ring->cq_flags);
	r->sq_dropped = READ_ONCE(*ring->sq_dropped);
	r->cq_overflow = READ_ONCE(*ring->cq_overflow);
	list_for_each_entry(job, &ring->overflow, ov_node)
		r->noverflow++;
	r->bytes = ring->bytes;
}

/**
 * snpu_ring_ckpt_check_locked() - can an image hold the context's rings
 * @ctx: the context, drained, of a locked process
 *
 * Return: 0 (also without rings), or -EPROTO when the process left its
 * counters where a restore would refuse them (an SQ tail more than a ring
 * ahead of the head, a CQ head past the tail or a ring behind it).
 */
int snpu_ring_ckpt_check_locked(struct snpu_context *ctx)
{
	struct snpu_ring *ring = ctx->ring;
	struct snpu_ckpt_ring r;

	lockdep_assert_held(&ctx->lock);
	if (!ring)
		return 0;
	spin_lock(&ctx->sched_lock);
	snpu_ring_ckpt_rec_locked(ctx, ring, &r);
	spin_unlock(&ctx->sched_lock);
	return snpu_ckpt_ring_check(&r, PAGE_SIZE);
}

/**
 * snpu_ring_ckpt_put_locked() - write the context's rings into an image
 * @io: the image being written
 * @ctx: the context, drained, of a locked process
 *
 * While the bytes are copied, completions parked for room stay parked
 * (no task runs: the process is locked and drained); the record, the
 * mapping and the parked completions are of the same moment.
 *
 * Return: 0 (nothing without rings), -EPROTO as
 * snpu_ring_ckpt_check_locked(), -ENOMEM, or the file's error.
 */
int snpu_ring_ckpt_put_locked(struct snpu_ckpt_io *io,
			      struct snpu_context *ctx)
{
	struct snpu_ring *ring = ctx->ring;
	struct snpu_cqe *ovf = NULL;
	struct snpu_ckpt_ring r;
	struct snpu_job *job;
	u32 n = 0;
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (!ring)
		return 0;
	spin_lock(&ctx->sched_lock);
	ring->frozen = true;
	snpu_ring_ckpt_rec_locked(ctx, ring, &r);
	spin_unlock(&ctx->sched_lock);
	ret = snpu_ckpt_ring_check(&r, PAGE_SIZE);
	if (ret)
		goto out;
	/* At most the task quota's: SNPU_CKPT_RING_MAX_OVERFLOW * 32 bytes. */
	if (r.noverflow) {
		ovf = kvmalloc_array(r.noverflow, sizeof(*ovf),
				     GFP_KERNEL_ACCOUNT);
		if (!ovf) {
			ret = -ENOMEM;
			goto out;
		}
		spin_lock(&ctx->sched_lock);
		list_for_each_entry(job, &ring->overflow, ov_node) {
			if (WARN_ON_ONCE(n == r.noverflow))
				break;
			ovf[n++] = (struct snpu_cqe) {
				.user_data = job->user_data,
				.result = job->error,
				.time_ns = job->done_ns,
				.seq = job->seq,
			};
		}
		spin_unlock(&ctx->sched_lock);
	}
	ret = snpu_ckpt_chunk(io, SNPU_CKPT_RING, &r, sizeof(r), NULL, 0);
	if (!ret)
		ret = snpu_ckpt_put_data(io, ring->mem, ring->bytes, 0);
	if (!ret && n)
		ret = snpu_ckpt_put_data(io, ovf, (u64)n * sizeof(*ovf),
					 ring->bytes);
out:
	kvfree(ovf);
	spin_lock(&ctx->sched_lock);
	ring->frozen = false;
	spin_unlock(&ctx->sched_lock);
	return ret;
}

/**
 * snpu_ring_ckpt_make_locked() - make the rings of a RING record
 * @ctx: the fresh context being restored
 * @rr: the restore's rings: filled here, discarded by the caller on error
 * @rec: the record, checked by snpu_ckpt_ring_check()
 *
 * Everything that can fail is done here, before the image's bytes are
 * read: the mapping, the poller (created, not run; counted against the
 * user's pollers and clamped as RING_SETUP does), a task slot for each
 * parked completion. Nothing is published.
 *
 * Return: 0, -ENOMEM, -EAGAIN (the user's pollers), -ENOSPC (task slots).
 */
int snpu_ring_ckpt_make_locked(struct snpu_context *ctx,
			       struct snpu_ring_rst *rr,
			       const struct snpu_ckpt_ring *rec)
{
	struct snpu_ring *ring;
	int ret;

	lockdep_assert_held(&ctx->lock);
	rr->rec = *rec;
	INIT_LIST_HEAD(&rr->jobs);
	ring = snpu_ring_alloc(rec->sq_entries, rec->cq_entries, rec->flags,
			       rec->idle_ms);
	if (!ring)
		return -ENOMEM;
	rr->ring = ring;
	if (WARN_ON_ONCE(ring->bytes != rec->bytes))
		return -EPROTO;
	if (rec->noverflow) {
		rr->ovf = kvmalloc_array(rec->noverflow, sizeof(*rr->ovf),
					 GFP_KERNEL_ACCOUNT);
		if (!rr->ovf)
			return -ENOMEM;
		ret = snpu_jobs_reserve(ctx, rec->noverflow, &rr->jobs);
		if (ret)
			return ret;
	}
	if (rec->flags & SNPU_RING_SQPOLL)
		return snpu_sqpoll_create(ctx, ring);
	return 0;
}

/**
 * snpu_ring_ckpt_dst() - where bytes of the RING's DATA go
 * @rr: the restore's rings, made
 * @off: the offset of the DATA's bytes (checked by the validator)
 * @n: in: how many; out: how many of them go to the place returned
 *
 * Return: the mapping's bytes first, then the parked completions.
 */
void *snpu_ring_ckpt_dst(struct snpu_ring_rst *rr, u64 off, u32 *n)
{
	struct snpu_ring *ring = rr->ring;

	if (off < ring->bytes) {
		*n = min_t(u64, *n, ring->bytes - off);
		return ring->mem + off;
	}
	return (void *)rr->ovf + (off - ring->bytes);
}

/**
 * snpu_ring_ckpt_verify() - check the rings' bytes once they are read
 * @rr: the rings, made and filled; NULL ring: nothing to check
 *
 * Each parked completion must be a task's (snpu_ckpt_ring_cqe_check()).
 * Called before anything of the restore becomes visible to others (the
 * communicators' ranks meet their peers after it), so that publishing
 * cannot fail.
 *
 * Return: 0, or -EPROTO for a parked completion that is not one.
 */
int snpu_ring_ckpt_verify(const struct snpu_ring_rst *rr)
{
	u32 i;

	if (!rr->ring)
		return 0;
	for (i = 0; i < rr->rec.noverflow; i++)
		if (snpu_ckpt_ring_cqe_check(&rr->ovf[i]))
			return -EPROTO;
	return 0;
}

/**
 * snpu_ring_ckpt_publish_locked() - the image is read: give the rings out
 * @ctx: the restored context
 * @rr: its rings, made, filled and verified by snpu_ring_ckpt_verify();
 *      NULL ring: nothing to do
 *
 * The counters of the header page are the record's; the parked
 * completions park again, in their order; the rings are published and
 * the poller runs.
 */
void snpu_ring_ckpt_publish_locked(struct snpu_context *ctx,
				   struct snpu_ring_rst *rr)
{
	const struct snpu_ckpt_ring *rec = &rr->rec;
	struct snpu_ring *ring = rr->ring;
	struct snpu_job *job, *tmp;
	u32 i = 0;

	lockdep_assert_held(&ctx->lock);
	if (!ring)
		return;
	snpu_ring_write_sizes(ring);
	ring->sq_head = rec->sq_head;
	ring->cq_tail = rec->cq_tail;
	*ring->sq_head_user = rec->sq_head;
	*ring->sq_tail_user = rec->sq_tail;
	*ring->cq_head = rec->cq_head;
	*ring->cq_tail_user = rec->cq_tail;
	*ring->sq_flags = rec->sq_flags;
	*ring->cq_flags = rec->cq_flags | (rec->noverflow ? SNPU_CQ_OVERFLOW : 0);
	*ring->sq_dropped = rec->sq_dropped;
	*ring->cq_overflow = rec->cq_overflow;
	i = 0;
	spin_lock(&ctx->sched_lock);
	list_for_each_entry_safe(job, tmp, &rr->jobs, node) {
		list_del_init(&job->node);
		/* Done, holding its slot until the CQ has room: as parked. */
		job->user_data = rr->ovf[i].user_data;
		job->error = rr->ovf[i].result;
		job->done_ns = rr->ovf[i].time_ns;
		job->seq = rr->ovf[i].seq;
		job->state = SNPU_JOB_DONE;
		list_add_tail(&job->ov_node, &ring->overflow);
		i++;
	}
	spin_unlock(&ctx->sched_lock);
	snpu_ring_publish_locked(ctx, ring);
	if (ring->poller)
		wake_up_process(ring->poller);
	kvfree(rr->ovf);
	rr->ovf = NULL;
	rr->ring = NULL;
}

/**
 * snpu_ring_ckpt_discard() - undo snpu_ring_ckpt_make_locked()
 * @ctx: the context whose restore failed
 * @rr: its rings, never published; emptied
 *
 * The poller never ran: it is stopped and uncounted, the slots go back.
 */
void snpu_ring_ckpt_discard(struct snpu_context *ctx, struct snpu_ring_rst *rr)
{
	struct snpu_ring *ring = rr->ring;

	if (!ring)
		return;
	if (ring->poller)
		snpu_sqpoll_discard(ring);
	if (!list_empty(&rr->jobs))
		snpu_jobs_unwind(ctx, &rr->jobs);
	kvfree(rr->ovf);
	vfree(ring->mem);
	kfree(ring);
	rr->ovf = NULL;
	rr->ring = NULL;
}
