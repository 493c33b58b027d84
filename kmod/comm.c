// SPDX-License-Identifier: GPL-2.0
/*
 * snpu communicators and collectives (see "Collectives" in the uapi
 * header).
 *
 * A communicator is created by SNPU_IOC_COMM_ID with a random id and the
 * caller's effective uid, found by COMM_JOIN through a small registry
 * (a hash table by id) while it is open to joins, and shared by the
 * files of its ranks. Each rank's k-th collective binds, at submit, to
 * the communicator's k-th struct snpu_coll (the first rank to bind
 * creates it, or takes one kept for reuse): one part per rank, with the
 * rank's work (a job's or a graph node's) and its buffers.
 *
 * A part arrives when its stream reaches it. When every part has, the
 * parts' steps (core/coll.c) go to their ranks' device cores, each step
 * the rank's work armed again; a step that ends starts what it unblocks
 * (the rank's next step, and its successor's in the ring). When every
 * part has run all its steps, every part is done and completes.
 *
 * Failure: a part cancelled at arrival, or a step that fails, makes the
 * collective fail; a rank that leaves breaks the communicator and fails every
 * collective in flight. A failed collective starts no step; once no step
 * of it runs, its arrived parts are done (with their own error, or the
 * collective's), and a part that arrives later is done at once. So a
 * part never waits for another rank's stream once its collective failed,
 * and no part completes while a step may still touch its buffers.
 *
 * Parts are completed off the lock that made them done, in a work item
 * (or directly by a core that ended the last step): a completion may
 * make another collective's part arrive, and that never nests.
 */
#include <linux/cred.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/fpu/api.h>

#include "comm.h"
#include "graph.h"

/*
 * The registry: communicators open to joins, by id, and the ids each file
 * holds. Never held while waiting: joins and ids are rare and short.
 */
static DEFINE_SPINLOCK(snpu_comm_lock);
static DEFINE_HASHTABLE(snpu_comms, 6);

/* Completes done parts (struct snpu_coll.done_work). */
static struct workqueue_struct *snpu_coll_wq;

/* Collectives a communicator keeps for reuse once they are complete. */
#define SNPU_COMM_FREE_MAX	4

/* Elements a step's block does between checks: a copy's, a reduction's. */
#define SNPU_COLL_COPY_ELEMS	(SZ_1M / SNPU_COLL_ESIZE)
#define SNPU_COLL_REDUCE_ELEMS	8192

/* Fewest elements worth a block of their own. */
#define SNPU_COLL_BLOCK_ELEMS	16384

/*
 * A step stopped because its collective failed elsewhere: not an error
 * of its own rank (never a task's result).
 */
#define SNPU_COLL_STOPPED	(-EAGAIN)

static u32 snpu_comm_key(const u8 *id)
{
	u32 key;

	memcpy(&key, id, sizeof(key));
	return key;
}

/* The communicator open to joins with @id, referenced, or NULL. */
static struct snpu_comm *snpu_comm_find(const u8 *id)
{
	struct snpu_comm *comm;

	spin_lock(&snpu_comm_lock);
	hash_for_each_possible(snpu_comms, comm, hnode, snpu_comm_key(id)) {
		if (!comm->restorer &&
		    !memcmp(comm->id, id, SNPU_COMM_ID_BYTES) &&
		    kref_get_unless_zero(&comm->ref)) {
			spin_unlock(&snpu_comm_lock);
			return comm;
		}
	}
	spin_unlock(&snpu_comm_lock);
	return NULL;
}

/* Take the communicator out of the registry: no join finds it again. */
static void snpu_comm_unregister(struct snpu_comm *comm)
{
	spin_lock(&snpu_comm_lock);
	if (comm->registered) {
		hash_del(&comm->hnode);
		comm->registered = false;
	}
	spin_unlock(&snpu_comm_lock);
}

static void snpu_comm_free(struct kref *ref)
{
	struct snpu_comm *comm = container_of(ref, struct snpu_comm, ref);
	struct snpu_coll *op, *tmp;

	snpu_comm_unregister(comm);
	list_for_each_entry_safe(op, tmp, &comm->free, node)
		kfree(op);
	put_pid(comm->restorer);
	kfree(comm);
}

static void snpu_comm_put(struct snpu_comm *comm)
{
	kref_put(&comm->ref, snpu_comm_free);
}

/* ---- collectives: binding ------------------------------------------------ */

static size_t snpu_coll_bytes(u32 nranks)
{
	return struct_size_t(struct snpu_coll, part, nranks) +
	       array_size(nranks, sizeof(void *));
}

static void snpu_coll_done_work(struct work_struct *work);

/* A fresh collective @seq of @comm, as @d describes it. */
static void snpu_coll_init(struct snpu_coll *op, struct snpu_comm *comm,
			   u64 seq, const struct snpu_coll_desc *d)
{
	u32 q;

	spin_lock_init(&op->lock);
	op->comm = comm;
	op->seq = seq;
	op->desc = *d;
	op->bound = 0;
	op->settled = 0;
	op->arrived = 0;
	op->running = 0;
	op->finished = 0;
	op->go = false;
	op->error = 0;
	atomic_set(&op->refs, d->nranks);
	INIT_LIST_HEAD(&op->done);
	op->queued = false;
	op->send = (void **)&op->part[d->nranks];
	for (q = 0; q < d->nranks; q++) {
		op->part[q] = (struct snpu_coll_part) {
			.op = op, .rank = q, .state = SNPU_PART_ABSENT,
		};
		op->send[q] = NULL;
	}
}

static bool snpu_coll_same(const struct snpu_coll_desc *a,
			   const struct snpu_coll_desc *b)
{
	return a->coll == b->coll && a->dtype == b->dtype &&
	       a->redop == b->redop && a->root == b->root &&
	       a->count == b->count;
}

/*
 * The collective goes back to its communicator: out of its slot, onto
 * the free list (or freed). Return: true, and the caller drops the
 * reference it held on the communicator once the lock is released.
 */
static void snpu_coll_recycle_locked(struct snpu_comm *comm,
				     struct snpu_coll *op)
{
	u32 slot = op->seq % SNPU_COMM_MAX_PENDING;

	lockdep_assert_held(&comm->lock);
	if (comm->slot[slot] == op)
		comm->slot[slot] = NULL;
	if (comm->nfree < SNPU_COMM_FREE_MAX) {
		list_add(&op->node, &comm->free);
		comm->nfree++;
	} else {
		kfree(op);
	}
}

/* A part is completed (or gone): the last one gives the collective back. */
static void snpu_coll_put(struct snpu_coll *op)
{
	struct snpu_comm *comm = op->comm;

	if (!atomic_dec_and_test(&op->refs))
		return;
	spin_lock(&comm->lock);
	snpu_coll_recycle_locked(comm, op);
	spin_unlock(&comm->lock);
	snpu_comm_put(comm);
}

/**
 * snpu_coll_bind() - make a work the rank's next collective
 * @r: the rank
 * @w: the work (a job's, or a graph node's); its part is set
 * @d: the collective
 * @send: kernel address of the rank's send buffer, NULL for none
 * @recv: kernel address of its recv buffer
 *
 * Return: 0, -ECONNRESET (broken), -ENOSPC (too far ahead), -EINVAL (not
 * the same collective as the other ranks' at that place), -ENOMEM.
 */
int snpu_coll_bind(struct snpu_comm_rank *r, struct snpu_work *w,
		   const struct snpu_coll_desc *d, void *send, void *recv)
{
	struct snpu_comm *comm = r->comm;
	struct snpu_coll *op, *spare = NULL;
	struct snpu_coll_part *part;
	u64 seq;
	u32 slot;
	int ret;

again:
	spin_lock(&comm->lock);
	ret = -ECONNRESET;
	if (comm->error)
		goto out;
	seq = comm->next_seq[r->rank];
	slot = seq % SNPU_COMM_MAX_PENDING;
	op = comm->slot[slot];
	ret = -ENOSPC;
	if (op && op->seq != seq)
		goto out;
	if (op) {
		ret = -EINVAL;
		if (!snpu_coll_same(&op->desc, d))
			goto out;
	} else {
		op = list_first_entry_or_null(&comm->free, struct snpu_coll,
					      node);
		if (op) {
			list_del(&op->node);
			comm->nfree--;
		} else if (spare) {
			op = spare;
			spare = NULL;
		} else {
			spin_unlock(&comm->lock);
			/* The rank's process pays for its collectives. */
			spare = kmalloc(snpu_coll_bytes(comm->nranks),
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
			if (!spare)
				return -ENOMEM;
			INIT_WORK(&spare->done_work, snpu_coll_done_work);
			goto again;
		}
		snpu_coll_init(op, comm, seq, d);
		kref_get(&comm->ref);
		comm->slot[slot] = op;
	}

	part = &op->part[r->rank];
	spin_lock(&op->lock);
	part->work = w;
	part->send = send;
	part->recv = recv;
	part->state = SNPU_PART_BOUND;
	part->steps = snpu_coll_nsteps(d, r->rank);
	part->done = 0;
	part->busy = false;
	part->error = 0;
	op->send[r->rank] = send;
	op->bound++;
	spin_unlock(&op->lock);
	comm->next_seq[r->rank]++;
	atomic_inc(&comm->inflight[r->rank]);
	w->coll.part = part;
	ret = 0;
out:
	spin_unlock(&comm->lock);
	kfree(spare);
	return ret;
}

/**
 * snpu_coll_unbind() - give back a collective bound by a task that is not
 * queued after all
 * @w: the task's work (its submission failed or is unwound)
 *
 * The rank's next collective takes the same place again. A collective no
 * other rank bound goes back to the communicator.
 */
void snpu_coll_unbind(struct snpu_work *w)
{
	struct snpu_coll_part *part = w->coll.part;
	struct snpu_coll *op = part->op;
	struct snpu_comm *comm = op->comm;
	bool last = false, recycle = false;

	w->coll.part = NULL;
	spin_lock(&comm->lock);
	spin_lock(&op->lock);
	WARN_ON(part->state != SNPU_PART_BOUND);
	part->work = NULL;
	op->send[part->rank] = NULL;
	op->bound--;
	if (comm->error) {
		/* Broken meanwhile: the part will never be bound again. */
		part->state = SNPU_PART_GONE;
		op->settled++;
		last = atomic_dec_and_test(&op->refs);
	} else {
		part->state = SNPU_PART_ABSENT;
		recycle = !op->bound && !op->settled;
	}
	spin_unlock(&op->lock);
	if (comm->next_seq[part->rank] > op->seq)
		comm->next_seq[part->rank] = op->seq;
	if (last || recycle)
		snpu_coll_recycle_locked(comm, op);
	spin_unlock(&comm->lock);
	if (atomic_dec_and_test(&comm->inflight[part->rank]))
		wake_up_all(&comm->wq);
	if (last || recycle)
		snpu_comm_put(comm);
}

/**
 * snpu_comm_rank_get_locked() - look up a rank handle
 * @ctx: the context
 * @handle: a handle of @ctx
 *
 * Return: the rank, or NULL when @handle names none.
 */
struct snpu_comm_rank *snpu_comm_rank_get_locked(struct snpu_context *ctx,
						 u32 handle)
{
	struct snpu_object *obj;

	lockdep_assert_held(&ctx->lock);
	obj = snpu_object_get_locked(ctx, handle, SNPU_OBJ_COMM);
	return obj ? container_of(obj, struct snpu_comm_rank, obj) : NULL;
}

/* Resolve a device range the collective names, or leave it NULL. */
static int snpu_coll_resolve_locked(struct snpu_context *ctx, u64 addr,
				    u64 bytes, struct snpu_mem **mem,
				    void **kaddr)
{
	*kaddr = NULL;
	return snpu_mem_resolve_locked(ctx, addr, bytes, mem, kaddr);
}

/**
 * snpu_coll_prepare_locked() - check an SNPU_OP_COLL task and bind it
 * @ctx: the context
 * @w: the work that runs the task's steps (a job's)
 * @t: the task, checked by snpu_task_check()
 * @mem: two slots for the references to the recv and send allocations,
 *       which the caller drops when the task is complete or unwound
 *
 * Return: 0; -ENOENT for a handle that names no rank of the file (or one
 * being destroyed); -ECONNRESET for a broken communicator; -EINVAL for a
 * root not below the ranks, buffers that overlap other than in place, or
 * a collective unlike the other ranks' at the same place; -EFAULT for a
 * buffer not inside one allocation; -ENOSPC when the rank is too far
 * ahead of the others; -ENOMEM.
 */
int snpu_coll_prepare_locked(struct snpu_context *ctx, struct snpu_work *w,
			     const struct snpu_task *t, struct snpu_mem **mem)
{
	struct snpu_coll_desc d = {
		.coll = t->coll.coll, .dtype = t->coll.dtype,
		.redop = t->coll.redop, .root = t->coll.root,
		.count = t->coll.count,
	};
	struct snpu_comm_rank *r;
	void *send = NULL, *recv;
	u64 sb, rb;
	int ret;

	lockdep_assert_held(&ctx->lock);
	w->coll.part = NULL;
	r = snpu_comm_rank_get_locked(ctx, t->coll.comm);
	if (!r || r->left || r->destroying)
		return -ENOENT;
	if (READ_ONCE(r->comm->error))
		return -ECONNRESET;
	/* Fixed by the first join, before the handle existed. */
	d.nranks = r->comm->nranks;
	if (d.root >= d.nranks || snpu_coll_extents(&d, &sb, &rb))
		return -EINVAL;
	ret = snpu_coll_resolve_locked(ctx, t->coll.recv, rb, &mem[0], &recv);
	if (ret)
		return ret;
	/* Off a broadcast's root, the send buffer is not read. */
	if (d.coll != SNPU_COLL_BROADCAST || r->rank == d.root) {
		ret = snpu_coll_resolve_locked(ctx, t->coll.send, sb, &mem[1],
					       &send);
		if (ret)
			return ret;
	}
	ret = snpu_coll_check_buffers(&d, r->rank, t->coll.send, t->coll.recv);
	if (ret)
		return ret;
	return snpu_coll_bind(r, w, &d, send, recv);
}

/* ---- collectives: running ---------------------------------------------- */

/* Blocks for a step: the device's cores, each with enough to do. */
static u32 snpu_coll_blocks(const struct snpu_coll *op, const struct snpu_work *w,
			    u32 kind, u64 elems)
{
	u64 work = elems * (kind == SNPU_CSTEP_REDUCE ? op->desc.nranks : 1);
	u64 n = DIV_ROUND_UP_ULL(elems, SNPU_COLL_BLOCK_ELEMS);

	n = clamp_t(u64, n, 1, w->job->ctx->sdev->cores);
	n = max_t(u64, n, DIV_ROUND_UP_ULL(work, SNPU_KERNEL_BLOCK_WORK_MAX));
	return min_t(u64, n, SNPU_MAX_BLOCK_DIM);
}

/*
 * Start part @q's next step if what it waits for is there: its work,
 * armed for the step, goes to @start for the caller to hand to the cores.
 */
static void snpu_coll_try_start_locked(struct snpu_coll *op, u32 q,
				       struct list_head *start)
{
	struct snpu_coll_part *p = &op->part[q], *peer;
	struct snpu_work *w = p->work;
	struct snpu_coll_step st;

	lockdep_assert_held(&op->lock);
	if (!op->go || op->error || p->state != SNPU_PART_ARRIVED ||
	    p->busy || p->done == p->steps)
		return;
	snpu_coll_step(&op->desc, q, p->done, &st);
	if (st.wait_rank != SNPU_CSTEP_NO_WAIT &&
	    op->part[st.wait_rank].done < st.wait_done)
		return;
	p->busy = true;
	op->running++;
	w->coll.step = p->done;
	w->coll.kind = st.kind;
	w->coll.elems = st.elems;
	w->coll.dst = p->recv + st.dst_off * SNPU_COLL_ESIZE;
	w->coll.off = st.src_off;
	w->coll.src = NULL;
	if (st.kind == SNPU_CSTEP_COPY) {
		peer = &op->part[st.peer];
		w->coll.src = (st.peer_buf == SNPU_CBUF_SEND ? peer->send :
			       peer->recv) + st.src_off * SNPU_COLL_ESIZE;
	}
	w->nblocks = snpu_coll_blocks(op, w, st.kind, st.elems);
	list_add_tail(&w->node, start);
}

/* Every arrived part is done: with its own error, else the collective's. */
static void snpu_coll_settle_locked(struct snpu_coll *op)
{
	struct snpu_coll_part *p;
	u32 q;

	lockdep_assert_held(&op->lock);
	for (q = 0; q < op->desc.nranks; q++) {
		p = &op->part[q];
		if (p->state != SNPU_PART_ARRIVED)
			continue;
		p->state = SNPU_PART_DONE;
		p->result = op->error ? p->error ?: op->error : 0;
		op->settled++;
		list_add_tail(&p->work->node, &op->done);
	}
}

/* Fail the collective (the first error stays); settle once nothing runs. */
static void snpu_coll_fail_locked(struct snpu_coll *op, int error)
{
	lockdep_assert_held(&op->lock);
	if (!op->error)
		op->error = error;
	if (!op->running)
		snpu_coll_settle_locked(op);
}

/*
 * Complete the done parts of @op. Each completion may dispatch its task's
 * successors; the collective is given back with its last part.
 */
static void snpu_coll_complete(struct snpu_coll *op)
{
	struct snpu_comm *comm = op->comm;
	struct snpu_coll_part *p;
	struct snpu_work *w;
	LIST_HEAD(done);
	u32 rank;
	int res;

	spin_lock(&op->lock);
	list_splice_init(&op->done, &done);
	op->queued = false;
	spin_unlock(&op->lock);

	while (!list_empty(&done)) {
		w = list_first_entry(&done, struct snpu_work, node);
		list_del_init(&w->node);
		/* What the part says first: the work may be reused at once. */
		p = w->coll.part;
		rank = p->rank;
		res = p->result;
		w->coll.part = NULL;
		if (w->gnode)
			snpu_gnode_complete(w->gnode, res, NULL);
		else
			snpu_job_complete(w->job, res, 0, NULL);
		if (atomic_dec_and_test(&comm->inflight[rank]))
			wake_up_all(&comm->wq);
		/* Last: it may give the collective and the communicator back. */
		snpu_coll_put(op);
	}
}

static void snpu_coll_done_work(struct work_struct *work)
{
	snpu_coll_complete(container_of(work, struct snpu_coll, done_work));
}

/* Have the work item complete the done parts, if any. */
static void snpu_coll_defer_locked(struct snpu_coll *op)
{
	lockdep_assert_held(&op->lock);
	if (list_empty(&op->done) || op->queued)
		return;
	op->queued = true;
	queue_work(snpu_coll_wq, &op->done_work);
}

/*
 * Hand started steps to their ranks' cores; @here and @handoff: the
 * device and hand-off slot of the core that calls, if any.
 */
static void snpu_coll_dispatch(struct list_head *start,
			       struct snpu_device *here,
			       struct snpu_work **handoff)
{
	struct snpu_work *w;

	while (!list_empty(start)) {
		w = list_first_entry(start, struct snpu_work, node);
		list_del_init(&w->node);
		if (!snpu_sched_ready(w, w->job->ctx->sdev == here ?
					 handoff : NULL))
			/* Its file is closing: the step fails at once. */
			snpu_coll_step_end(w, -ECANCELED, NULL);
	}
}

/**
 * snpu_coll_arrive() - a collective's task or graph node was reached
 * @w: its work
 * @cancel: 0, or the error it is cancelled with (its stream failed or its
 *          file is closing): the collective fails
 *
 * The last part to arrive starts every rank's first step. A part that
 * arrives at a failed collective is done at once, unless steps still run.
 */
void snpu_coll_arrive(struct snpu_work *w, int cancel)
{
	struct snpu_coll_part *part = w->coll.part;
	struct snpu_coll *op = part->op;
	LIST_HEAD(start);
	u32 q;

	spin_lock(&op->lock);
	part->state = SNPU_PART_ARRIVED;
	op->arrived++;
	if (cancel) {
		part->error = cancel;
		snpu_coll_fail_locked(op, -ECONNABORTED);
	} else if (op->error) {
		if (!op->running)
			snpu_coll_settle_locked(op);
	} else if (op->arrived == op->desc.nranks) {
		op->go = true;
		for (q = 0; q < op->desc.nranks; q++)
			snpu_coll_try_start_locked(op, q, &start);
	}
	snpu_coll_defer_locked(op);
	spin_unlock(&op->lock);
	snpu_coll_dispatch(&start, NULL, NULL);
}

/**
 * snpu_coll_step_end() - a step of a part has run (or was cancelled)
 * @w: the part's work
 * @error: 0, or the step's error
 * @handoff: a core's hand-off slot, or NULL when not called by a core
 *
 * Starts the steps it unblocks. A core completes the parts done by it
 * itself; other callers leave that to the work item.
 */
void snpu_coll_step_end(struct snpu_work *w, int error,
			struct snpu_work **handoff)
{
	struct snpu_device *here = w->job->ctx->sdev;
	struct snpu_coll_part *part = w->coll.part;
	struct snpu_coll *op = part->op;
	u32 q = part->rank, n = op->desc.nranks;
	LIST_HEAD(start);
	bool complete;

	spin_lock(&op->lock);
	part->busy = false;
	op->running--;
	part->done++;
	if (error && error != SNPU_COLL_STOPPED) {
		part->error = error;
		if (!op->error)
			op->error = -ECONNABORTED;
	}
	if (op->error) {
		if (!op->running)
			snpu_coll_settle_locked(op);
	} else {
		if (part->done == part->steps)
			op->finished++;
		snpu_coll_try_start_locked(op, q, &start);
		snpu_coll_try_start_locked(op, q + 1 == n ? 0 : q + 1, &start);
		if (op->finished == n)
			snpu_coll_settle_locked(op);
	}
	complete = handoff && !list_empty(&op->done) && !op->queued;
	if (complete)
		op->queued = true;
	else
		snpu_coll_defer_locked(op);
	spin_unlock(&op->lock);
	snpu_coll_dispatch(&start, here, handoff);
	if (complete)
		snpu_coll_complete(op);
}

/* Why a running step should stop (see snpu_check() in sched.c). */
static int snpu_coll_check_run(const struct snpu_work *w, u64 deadline)
{
	const struct snpu_job *job = w->job;

	if (READ_ONCE(job->ctx->dying) || READ_ONCE(job->stream->error))
		return -ECANCELED;
	if (READ_ONCE(w->coll.part->op->error))
		return SNPU_COLL_STOPPED;
	if (deadline && ktime_get_ns() > deadline)
		return -ETIMEDOUT;
	return 0;
}

/**
 * snpu_coll_run_block() - run one block of a collective's step
 * @core: the core
 * @w: the part's work, armed for the step
 * @block: the block
 * @deadline: the watchdog's deadline, 0 for none
 *
 * The step's elements are split between its blocks; a block copies in
 * pieces of 1 MiB, or reduces in pieces of SNPU_COLL_REDUCE_ELEMS, each
 * in an FPU section, checking between them whether it should stop.
 *
 * Return: 0, -ECANCELED, -ETIMEDOUT, or SNPU_COLL_STOPPED when the
 * collective failed elsewhere.
 */
int snpu_coll_run_block(struct snpu_core *core, struct snpu_work *w,
			u32 block, u64 deadline)
{
	const struct snpu_coll *op = w->coll.part->op;
	u64 begin, end, pos, stop;
	int ret;

	snpu_kernel_split(w->coll.elems, w->nblocks, block, &begin, &end);
	for (pos = begin; pos < end; pos = stop) {
		if (pos != begin) {
			cond_resched();
			ret = snpu_coll_check_run(w, deadline);
			if (ret)
				return ret;
		}
		if (w->coll.kind == SNPU_CSTEP_COPY) {
			stop = min_t(u64, end, pos + SNPU_COLL_COPY_ELEMS);
			/* A rank's own chunk copied onto itself (in place). */
			if (w->coll.src != w->coll.dst)
				memcpy(w->coll.dst + pos * SNPU_COLL_ESIZE,
				       w->coll.src + pos * SNPU_COLL_ESIZE,
				       (stop - pos) * SNPU_COLL_ESIZE);
			continue;
		}
		stop = min_t(u64, end, pos + SNPU_COLL_REDUCE_ELEMS);
		kernel_fpu_begin();
		snpu_coll_reduce(op->desc.dtype, op->desc.redop,
				 w->coll.dst + pos * SNPU_COLL_ESIZE,
				 (const void *const *)op->send,
				 w->coll.off + pos, op->desc.nranks,
				 core->scratch, stop - pos);
		kernel_fpu_end();
	}
	return 0;
}

/* ---- communicators ---------------------------------------------------------- */

/*
 * @r leaves: the communicator breaks (-ECONNRESET for the others), its own
 * parts not done end with @own.
 */
static void snpu_comm_leave(struct snpu_comm_rank *r, int own)
{
	struct snpu_comm *comm = r->comm;
	struct snpu_coll *op;
	u32 i, q, puts = 0;

	if (r->left)
		return;
	r->left = true;
	/* It stays where joins find it: they get -ECONNRESET. */
	spin_lock(&comm->lock);
	comm->present &= ~BIT_ULL(r->rank);
	comm->rank_ctx[r->rank] = NULL;
	/* Read without the lock by snpu_comm_find_restored(). */
	WRITE_ONCE(comm->error, -ECONNRESET);
	for (i = 0; i < SNPU_COMM_MAX_PENDING; i++) {
		bool last = false;

		op = comm->slot[i];
		if (!op)
			continue;
		spin_lock(&op->lock);
		for (q = 0; q < op->desc.nranks; q++) {
			struct snpu_coll_part *p = &op->part[q];

			if (p->state == SNPU_PART_ABSENT) {
				p->state = SNPU_PART_GONE;
				op->settled++;
				last |= atomic_dec_and_test(&op->refs);
			} else if (q == r->rank && !p->error &&
				   (p->state == SNPU_PART_BOUND ||
				    p->state == SNPU_PART_ARRIVED)) {
				p->error = own;
			}
		}
		snpu_coll_fail_locked(op, -ECONNRESET);
		snpu_coll_defer_locked(op);
		spin_unlock(&op->lock);
		if (last) {
			snpu_coll_recycle_locked(comm, op);
			puts++;
		}
	}
	spin_unlock(&comm->lock);
	/* The rank's own reference keeps the communicator meanwhile. */
	while (puts--)
		snpu_comm_put(comm);
}

/**
 * snpu_comm_rank_destroy_locked() - drop a rank handle
 * @ctx: the context
 * @r: the rank; it leaves its communicator first if it has not
 */
void snpu_comm_rank_destroy_locked(struct snpu_context *ctx,
				   struct snpu_comm_rank *r)
{
	lockdep_assert_held(&ctx->lock);
	snpu_comm_leave(r, -ECANCELED);
	xa_erase(&ctx->handles, r->obj.handle);
	ctx->comms--;
	snpu_comm_put(r->comm);
	kfree_rcu(r, obj.rcu);
}

/**
 * snpu_comm_cancel() - the ranks of a closing file leave
 * @ctx: the context, dying
 *
 * Called before its jobs are waited for: their collectives then never
 * wait for another rank.
 */
void snpu_comm_cancel(struct snpu_context *ctx)
{
	struct snpu_object *obj;
	unsigned long index;

	mutex_lock(&ctx->lock);
	xa_for_each(&ctx->handles, index, obj)
		if (obj->type == SNPU_OBJ_COMM)
			snpu_comm_leave(container_of(obj, struct snpu_comm_rank,
						     obj), -ECANCELED);
	mutex_unlock(&ctx->lock);
}

/**
 * snpu_comm_release() - drop the ids a closing file holds
 * @ctx: the context
 */
void snpu_comm_release(struct snpu_context *ctx)
{
	struct snpu_comm *comm, *tmp;
	LIST_HEAD(ids);

	spin_lock(&snpu_comm_lock);
	list_for_each_entry(comm, &ctx->comm_ids, holder_node)
		comm->holder = NULL;
	list_splice_init(&ctx->comm_ids, &ids);
	ctx->ncomm_ids = 0;
	spin_unlock(&snpu_comm_lock);
	/* No join touches them now (their holder is gone). */
	list_for_each_entry_safe(comm, tmp, &ids, holder_node) {
		list_del_init(&comm->holder_node);
		snpu_comm_put(comm);
	}
}

/* A new communicator of the caller's effective user, referenced once. */
static struct snpu_comm *snpu_comm_alloc(void)
{
	struct snpu_comm *comm;

	/* The caller's memory cgroup pays for it. */
	comm = kzalloc(sizeof(*comm), GFP_KERNEL_ACCOUNT);
	if (!comm)
		return NULL;
	kref_init(&comm->ref);
	spin_lock_init(&comm->lock);
	INIT_LIST_HEAD(&comm->free);
	INIT_LIST_HEAD(&comm->holder_node);
	init_waitqueue_head(&comm->wq);
	comm->uid = current_euid();
	return comm;
}

int snpu_ioc_comm_id(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_comm_id *c = &arg->comm_id;
	struct snpu_comm *comm, *other;
	u32 key;

	if (!snpu_zero(c->reserved, sizeof(c->reserved)))
		return -EINVAL;
	comm = snpu_comm_alloc();
	if (!comm)
		return -ENOMEM;

	spin_lock(&snpu_comm_lock);
	if (ctx->ncomm_ids >= SNPU_COMM_MAX_PER_FILE) {
		spin_unlock(&snpu_comm_lock);
		kfree(comm);
		return -ENOSPC;
	}
	/* 128 random bits: a collision is only checked for form's sake. */
again:
	get_random_bytes(comm->id, sizeof(comm->id));
	key = snpu_comm_key(comm->id);
	hash_for_each_possible(snpu_comms, other, hnode, key)
		if (!memcmp(other->id, comm->id, sizeof(comm->id)))
			goto again;
	hash_add(snpu_comms, &comm->hnode, key);
	comm->registered = true;
	comm->holder = ctx;
	list_add_tail(&comm->holder_node, &ctx->comm_ids);
	ctx->ncomm_ids++;
	spin_unlock(&snpu_comm_lock);
	memcpy(c->id, comm->id, sizeof(c->id));
	return 0;
}

/* Does @ctx hold a rank of @comm? */
static bool snpu_comm_held_locked(struct snpu_context *ctx,
				  struct snpu_comm *comm)
{
	struct snpu_object *obj;
	unsigned long index;

	lockdep_assert_held(&ctx->lock);
	xa_for_each(&ctx->handles, index, obj)
		if (obj->type == SNPU_OBJ_COMM &&
		    container_of(obj, struct snpu_comm_rank, obj)->comm == comm)
			return true;
	return false;
}

/*
 * Join @comm as @rank of @nranks. Return: 0, and whether the id's holder
 * let go of it (the caller drops that reference); or -errno.
 */
static int snpu_comm_join_locked(struct snpu_context *ctx,
				 struct snpu_comm *comm, u32 nranks, u32 rank,
				 bool *holder_ref)
{
	struct snpu_context *holder;

	lockdep_assert_held(&comm->lock);
	if (comm->error)
		return -ECONNRESET;
	if (!comm->registered)
		return -ENOENT;
	if (comm->nranks && comm->nranks != nranks)
		return -EINVAL;
	if (comm->joined & BIT_ULL(rank))
		return -EEXIST;
	comm->nranks = nranks;
	comm->joined |= BIT_ULL(rank);
	comm->present |= BIT_ULL(rank);
	comm->rank_ctx[rank] = ctx;
	spin_lock(&snpu_comm_lock);
	holder = comm->holder;
	if (holder) {
		/* The ranks keep it from now on. */
		list_del_init(&comm->holder_node);
		holder->ncomm_ids--;
		comm->holder = NULL;
		*holder_ref = true;
	}
	if (hweight64(comm->joined) == nranks) {
		hash_del(&comm->hnode);
		comm->registered = false;
	}
	spin_unlock(&snpu_comm_lock);
	return 0;
}

int snpu_ioc_comm_join(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_comm_join *j = &arg->comm_join;
	struct snpu_comm_rank *r;
	struct snpu_comm *comm;
	bool holder_ref = false;
	int ret;

	if (!snpu_zero(j->reserved, sizeof(j->reserved)) || j->pad ||
	    !j->nranks || j->nranks > SNPU_COMM_MAX_RANKS ||
	    j->rank >= j->nranks)
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;

	mutex_lock(&ctx->lock);
	ret = -ENOSPC;
	if (ctx->comms >= SNPU_COMM_MAX_PER_FILE)
		goto err_free;
	ret = -ENOENT;
	comm = snpu_comm_find(j->id);
	if (!comm)
		goto err_free;
	ret = -EACCES;
	if (!uid_eq(comm->uid, current_euid()))
		goto err_put;
	ret = -EEXIST;
	if (snpu_comm_held_locked(ctx, comm))
		goto err_put;
	ret = snpu_object_add_locked(ctx, &r->obj, SNPU_OBJ_COMM);
	if (ret)
		goto err_put;
	spin_lock(&comm->lock);
	ret = snpu_comm_join_locked(ctx, comm, j->nranks, j->rank,
				    &holder_ref);
	spin_unlock(&comm->lock);
	if (ret) {
		xa_erase(&ctx->handles, r->obj.handle);
		goto err_put;
	}
	r->comm = comm;
	r->rank = j->rank;
	ctx->comms++;
	j->handle = r->obj.handle;
	mutex_unlock(&ctx->lock);
	if (holder_ref)
		snpu_comm_put(comm);
	return 0;

err_put:
	snpu_comm_put(comm);
err_free:
	mutex_unlock(&ctx->lock);
	kfree(r);
	return ret;
}

int snpu_ioc_comm_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *h = &arg->handle_op;
	struct snpu_comm_rank *r;
	struct snpu_comm *comm;
	u32 rank;
	int ret = 0;

	if (!snpu_zero(h->reserved, sizeof(h->reserved)) || h->pad)
		return -EINVAL;
	mutex_lock(&ctx->lock);
	r = snpu_comm_rank_get_locked(ctx, h->handle);
	if (!r || r->destroying) {
		mutex_unlock(&ctx->lock);
		return r ? -EBUSY : -ENOENT;
	}
	if (!(h->flags & SNPU_COMM_DESTROY_FORCE)) {
		/* Submit refuses the rank from here on. */
		r->destroying = true;
		comm = r->comm;
		rank = r->rank;
		mutex_unlock(&ctx->lock);
		/* The rank's reference keeps @comm: only this call drops it. */
		ret = wait_event_interruptible(comm->wq,
					       !atomic_read(&comm->inflight[rank]));
		mutex_lock(&ctx->lock);
		r->destroying = false;
	}
	if (!ret)
		snpu_comm_rank_destroy_locked(ctx, r);
	mutex_unlock(&ctx->lock);
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

int snpu_ioc_comm_query(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_comm_query *q = &arg->comm_query;
	struct snpu_comm_rank *r;
	struct snpu_comm *comm;

	if (!snpu_zero(q->reserved, sizeof(q->reserved)))
		return -EINVAL;
	mutex_lock(&ctx->lock);
	r = snpu_comm_rank_get_locked(ctx, q->handle);
	if (r) {
		comm = r->comm;
		spin_lock(&comm->lock);
		q->rank = r->rank;
		q->nranks = comm->nranks;
		q->joined = hweight64(comm->joined);
		q->error = comm->error;
		q->pad = 0;
		q->queued = comm->next_seq[r->rank];
		spin_unlock(&comm->lock);
	}
	mutex_unlock(&ctx->lock);
	return r ? 0 : -ENOENT;
}

/* ---- communicators in images ---------------------------------------------- */

/*
 * Communicators in checkpoint images (Documentation/checkpoint.rst). A
 * checkpoint saves a communicator only when every rank is a file of the
 * process: each rank's file gets a COMM chunk (id, nranks, rank, and the
 * sequence number of its next collective, the same on every rank once the
 * process is drained). A restore recreates one file at a time: each of its
 * ranks is made with a communicator of its own first, so that nothing
 * another file sees exists before the restore succeeds; once the whole
 * context is read, the ranks join the communicator that earlier restores
 * of the same process made with that id (a second registry, by id and
 * process, that COMM_JOIN never searches), or register theirs for the
 * next restores. The communicator is complete when every rank is back.
 *
 * snpu_comm_restore_lock serializes those joins: a restore checks every
 * rank of its file against the registry, then joins them all, and no
 * other restore joins in between. It is taken under a context's lock and
 * above every lock of this file; nothing waits under it.
 */
static DEFINE_MUTEX(snpu_comm_restore_lock);

/*
 * Is the communicator of @r whole in the process of @ctx, with no
 * collective queued on some ranks only? -EOPNOTSUPP: a rank may still
 * join, or is a file of another process, or left; -ESTALE: a rank's file
 * of the process is closing; -EBUSY: a collective of some ranks waits for
 * the others, which the process's lock keeps from queuing it (a checkpoint
 * would wait for it for ever).
 */
static int snpu_comm_ckpt_whole_locked(struct snpu_comm *comm,
				       struct snpu_context *ctx, u32 rank)
{
	struct snpu_context *rc;
	u32 q;

	lockdep_assert_held(&comm->lock);
	if (comm->error || hweight64(comm->joined) != comm->nranks)
		return -EOPNOTSUPP;
	for (q = 0; q < comm->nranks; q++) {
		rc = comm->rank_ctx[q];
		if (!(comm->present & BIT_ULL(q)) || !rc ||
		    READ_ONCE(rc->proc) != ctx->proc)
			return -EOPNOTSUPP;
		if (READ_ONCE(rc->closed))
			return -ESTALE;
		if (comm->next_seq[q] != comm->next_seq[rank])
			return -EBUSY;
	}
	return 0;
}

/**
 * snpu_comm_ckpt_check_locked() - may the ranks of a file go in an image
 * @ctx: a context of a locked process
 *
 * Return: 0; -EOPNOTSUPP for an id nobody joined yet or a communicator
 * with a rank outside the process; -ESTALE, -EBUSY as
 * snpu_comm_ckpt_whole_locked() says.
 */
int snpu_comm_ckpt_check_locked(struct snpu_context *ctx)
{
	struct snpu_comm_rank *r;
	struct snpu_object *obj;
	unsigned long index;
	int ret = 0;

	lockdep_assert_held(&ctx->lock);
	/* Another process may still join it: the image could not say so. */
	if (READ_ONCE(ctx->ncomm_ids))
		return -EOPNOTSUPP;
	xa_for_each(&ctx->handles, index, obj) {
		if (obj->type != SNPU_OBJ_COMM)
			continue;
		r = container_of(obj, struct snpu_comm_rank, obj);
		spin_lock(&r->comm->lock);
		ret = snpu_comm_ckpt_whole_locked(r->comm, ctx, r->rank);
		spin_unlock(&r->comm->lock);
		if (ret)
			break;
	}
	return ret;
}

/**
 * snpu_comm_ckpt_rec_locked() - the COMM record of a rank
 * @r: the rank, of a context whose lock the caller holds
 * @rec: out: its record
 */
void snpu_comm_ckpt_rec_locked(struct snpu_comm_rank *r,
			       struct snpu_ckpt_comm *rec)
{
	struct snpu_comm *comm = r->comm;

	memset(rec, 0, sizeof(*rec));
	rec->handle = r->obj.handle;
	rec->rank = r->rank;
	memcpy(rec->id, comm->id, sizeof(rec->id));
	spin_lock(&comm->lock);
	rec->nranks = comm->nranks;
	rec->seq = comm->next_seq[r->rank];
	spin_unlock(&comm->lock);
}

/**
 * snpu_comm_ckpt_make_locked() - make a restored rank, alone for now
 * @ctx: the fresh context being restored
 * @rec: the rank's record, checked by kmod/core/ckpt.c
 *
 * The rank gets a communicator of its own, which no other file finds;
 * snpu_comm_ckpt_settle_locked() joins it to its peers.
 *
 * Return: 0; -EPROTO for a handle taken or a second rank of one id in the
 * file; -ENOSPC, -ENOMEM.
 */
int snpu_comm_ckpt_make_locked(struct snpu_context *ctx,
			       const struct snpu_ckpt_comm *rec)
{
	struct snpu_comm_rank *r;
	struct snpu_object *obj;
	struct snpu_comm *comm;
	unsigned long index;
	int ret;

	lockdep_assert_held(&ctx->lock);
	/* COMM_JOIN's EEXIST: a file holds one rank of a communicator. */
	xa_for_each(&ctx->handles, index, obj) {
		if (obj->type == SNPU_OBJ_COMM &&
		    !memcmp(container_of(obj, struct snpu_comm_rank,
					 obj)->comm->id,
			    rec->id, SNPU_COMM_ID_BYTES))
			return -EPROTO;
	}
	if (ctx->comms >= SNPU_COMM_MAX_PER_FILE)
		return -ENOSPC;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	comm = snpu_comm_alloc();
	if (!r || !comm) {
		kfree(r);
		kfree(comm);
		return -ENOMEM;
	}
	memcpy(comm->id, rec->id, SNPU_COMM_ID_BYTES);
	comm->nranks = rec->nranks;
	comm->base_seq = rec->seq;
	comm->joined = BIT_ULL(rec->rank);
	comm->present = BIT_ULL(rec->rank);
	comm->next_seq[rec->rank] = rec->seq;
	comm->rank_ctx[rec->rank] = ctx;
	r->comm = comm;
	r->rank = rec->rank;
	r->obj.handle = rec->handle;
	ret = snpu_object_add_locked(ctx, &r->obj, SNPU_OBJ_COMM);
	if (ret) {
		kfree(r);
		kfree(comm);
		return ret == -EBUSY ? -EPROTO : ret;
	}
	ctx->comms++;
	return 0;
}

/*
 * The communicator earlier restores of process @pid made with @id and
 * that still takes ranks, referenced; or NULL.
 */
static struct snpu_comm *snpu_comm_find_restored(const u8 *id, struct pid *pid)
{
	struct snpu_comm *comm;

	lockdep_assert_held(&snpu_comm_restore_lock);
	spin_lock(&snpu_comm_lock);
	hash_for_each_possible(snpu_comms, comm, hnode, snpu_comm_key(id)) {
		if (comm->restorer == pid && !READ_ONCE(comm->error) &&
		    !memcmp(comm->id, id, SNPU_COMM_ID_BYTES) &&
		    kref_get_unless_zero(&comm->ref)) {
			spin_unlock(&snpu_comm_lock);
			return comm;
		}
	}
	spin_unlock(&snpu_comm_lock);
	return NULL;
}

/* May the restored rank @r (still alone in its own) join @comm? */
static int snpu_comm_ckpt_may_join_locked(struct snpu_comm *comm,
					  struct snpu_comm_rank *r)
{
	struct snpu_comm *mine = r->comm;

	lockdep_assert_held(&comm->lock);
	if (comm->nranks != mine->nranks || comm->base_seq != mine->base_seq)
		return -EPROTO;
	if (comm->joined & BIT_ULL(r->rank))
		return -EEXIST;
	if (!uid_eq(comm->uid, mine->uid))
		return -EACCES;
	return 0;
}

/**
 * snpu_comm_ckpt_settle_locked() - the restored ranks of a file meet their
 * peers
 * @ctx: the context, restored whole
 *
 * Each rank joins the communicator that restores of the same process made
 * with its id, or its own is registered for the next ones (unless it is
 * complete already: a communicator of one rank). All or nothing.
 *
 * Return: 0; -EEXIST for a rank the process restored already; -EPROTO for
 * a rank of another image (its rank count or sequence number differs);
 * -EACCES for a communicator restored by another effective user.
 */
int snpu_comm_ckpt_settle_locked(struct snpu_context *ctx)
{
	struct pid *pid = ctx->proc->tgid;
	struct snpu_comm *comm, *mine;
	struct snpu_comm_rank *r;
	struct snpu_object *obj;
	unsigned long index;
	int ret = 0;

	lockdep_assert_held(&ctx->lock);
	if (!ctx->comms)
		return 0;
	mutex_lock(&snpu_comm_restore_lock);
	xa_for_each(&ctx->handles, index, obj) {
		if (obj->type != SNPU_OBJ_COMM)
			continue;
		r = container_of(obj, struct snpu_comm_rank, obj);
		comm = snpu_comm_find_restored(r->comm->id, pid);
		if (!comm)
			continue;
		spin_lock(&comm->lock);
		ret = snpu_comm_ckpt_may_join_locked(comm, r);
		spin_unlock(&comm->lock);
		snpu_comm_put(comm);
		if (ret)
			goto out;
	}
	/* Nothing fails from here on. */
	xa_for_each(&ctx->handles, index, obj) {
		if (obj->type != SNPU_OBJ_COMM)
			continue;
		r = container_of(obj, struct snpu_comm_rank, obj);
		mine = r->comm;
		/* Gone or broken since: as if it had not been found. */
		comm = snpu_comm_find_restored(mine->id, pid);
		if (!comm) {
			if (mine->nranks == 1)
				continue;
			spin_lock(&mine->lock);
			spin_lock(&snpu_comm_lock);
			mine->restorer = get_pid(pid);
			hash_add(snpu_comms, &mine->hnode,
				 snpu_comm_key(mine->id));
			mine->registered = true;
			spin_unlock(&snpu_comm_lock);
			spin_unlock(&mine->lock);
			continue;
		}
		spin_lock(&comm->lock);
		comm->joined |= BIT_ULL(r->rank);
		comm->present |= BIT_ULL(r->rank);
		comm->next_seq[r->rank] = mine->base_seq;
		comm->rank_ctx[r->rank] = ctx;
		if (hweight64(comm->joined) == comm->nranks) {
			/* Complete: no restore finds it any more. */
			spin_lock(&snpu_comm_lock);
			if (comm->registered) {
				hash_del(&comm->hnode);
				comm->registered = false;
			}
			spin_unlock(&snpu_comm_lock);
		}
		spin_unlock(&comm->lock);
		/* The reference found becomes the rank's. */
		r->comm = comm;
		snpu_comm_put(mine);
	}
out:
	mutex_unlock(&snpu_comm_restore_lock);
	return ret;
}

/**
 * snpu_comm_init() - set up what the collectives need at load
 *
 * Return: 0 or -ENOMEM.
 */
int snpu_comm_init(void)
{
	snpu_coll_wq = alloc_workqueue("snpu_coll", WQ_UNBOUND, 0);
	return snpu_coll_wq ? 0 : -ENOMEM;
}

/**
 * snpu_comm_exit() - at unload: every file is closed, every collective
 * complete; wait for the work items still returning
 */
void snpu_comm_exit(void)
{
	WARN_ON(!hash_empty(snpu_comms));
	destroy_workqueue(snpu_coll_wq);
}
