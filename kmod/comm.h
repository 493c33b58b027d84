/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snpu communicators and collectives: the objects comm.c shares with the
 * graph code.
 *
 * Locking, outermost first (after a context's lock, which every ioctl
 * holds while it binds a collective):
 *
 *   snpu_comm.lock       the communicator: ranks, its broken state, its
 *                        slots of collectives in flight, the free list
 *   snpu_comm_lock       the registry of ids open to joins and the ids
 *                        each file holds (global, see comm.c)
 *   snpu_coll.lock       one collective: its parts' states and progress
 *
 * A core completing a step takes only the collective's lock; the parts
 * it completes or the steps it starts are handled after it is dropped, so
 * no context's sched_lock and no device's ready_lock is ever taken under
 * one of these.
 */
#ifndef _SNPU_COMM_H
#define _SNPU_COMM_H

#include <linux/hashtable.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>

#include "snpu.h"
#include "core/coll.h"

/**
 * struct snpu_comm - a communicator, shared by the files of its ranks
 * @ref: each rank (handle) holds one, so does the file holding its id
 *       until the first join, and each collective in flight
 * @hnode: in the registry while open to joins (under snpu_comm_lock)
 * @registered: in the registry (written under both @lock and
 *              snpu_comm_lock, read under either)
 * @holder: the file that asked for the id, until the first join (under
 *          snpu_comm_lock)
 * @holder_node: in @holder's comm_ids
 * @id: the id
 * @uid: the effective user that asked for it: the only one who may join
 * @restorer: a communicator of ranks restored from a checkpoint image
 *            (see "Communicators in images" in comm.c): the process whose
 *            restored files may join it, referenced; NULL for COMM_ID's
 * @base_seq: restored: the sequence number the ranks had in the image
 * @lock: protects what follows
 * @nranks: ranks, fixed by the first join (0 before)
 * @joined: a bit per rank that joined
 * @present: a bit per rank that joined and has not left
 * @error: 0, or -ECONNRESET once a rank left
 * @slot: the collectives in flight, by sequence number modulo
 *        SNPU_COMM_MAX_PENDING
 * @free: collectives kept for reuse
 * @nfree: their number
 * @next_seq: per rank, the sequence number its next collective takes
 * @wq: COMM_DESTROY waits here for a rank's collectives
 * @inflight: per rank, its collectives bound and not complete
 * @rank_ctx: per rank present, the file that holds it (a checkpoint asks
 *            whether every rank is a file of the process)
 */
struct snpu_comm {
	struct kref ref;
	struct hlist_node hnode;
	bool registered;
	struct snpu_context *holder;
	struct list_head holder_node;
	u8 id[SNPU_COMM_ID_BYTES];
	kuid_t uid;
	struct pid *restorer;
	u64 base_seq;

	spinlock_t lock;		/* ranks, @error, @slot, @free */
	u32 nranks;
	u64 joined;
	u64 present;
	int error;
	struct snpu_coll *slot[SNPU_COMM_MAX_PENDING];
	struct list_head free;
	u32 nfree;
	u64 next_seq[SNPU_COMM_MAX_RANKS];
	wait_queue_head_t wq;
	atomic_t inflight[SNPU_COMM_MAX_RANKS];
	struct snpu_context *rank_ctx[SNPU_COMM_MAX_RANKS];
};

/**
 * struct snpu_comm_rank - a rank of a communicator, SNPU_OBJ_COMM
 * @obj: handle
 * @comm: the communicator, referenced
 * @rank: the rank
 * @left: the rank has left (destroyed, or its file is closing)
 * @destroying: a COMM_DESTROY waits for its collectives: SUBMIT and
 *              another destroy refuse it
 *
 * Under the context's lock.
 */
struct snpu_comm_rank {
	struct snpu_object obj;
	struct snpu_comm *comm;
	u32 rank;
	bool left;
	bool destroying;
};

/* States of a part. */
enum snpu_part_state {
	SNPU_PART_ABSENT,	/* no task of the rank bound yet */
	SNPU_PART_BOUND,	/* bound, its stream has not reached it */
	SNPU_PART_ARRIVED,	/* its stream reached it */
	SNPU_PART_DONE,		/* finished: being or been completed */
	SNPU_PART_GONE,		/* never bound, and never will be */
};

/**
 * struct snpu_coll_part - one rank's share of a collective
 * @op: the collective
 * @rank: the rank
 * @work: what the rank's cores run for it (a job's or a graph node's),
 *        and what completes when the part is done; NULL while absent
 * @send: kernel address of the rank's send buffer, NULL for none
 * @recv: kernel address of its recv buffer
 * @state: enum snpu_part_state
 * @steps: the steps of the rank (snpu_coll_nsteps())
 * @done: the steps it has done
 * @busy: a step of it is on the cores
 * @error: its own failure, or 0
 * @result: what it completes with, decided when it is done
 *
 * Under the collective's lock; @work's fields for the step are set under
 * it before the step is handed to the cores.
 */
struct snpu_coll_part {
	struct snpu_coll *op;
	u32 rank;
	struct snpu_work *work;
	void *send;
	void *recv;
	u32 state;
	u32 steps;
	u32 done;
	bool busy;
	int error;
	int result;
};

/**
 * struct snpu_coll - the k-th collective of a communicator
 * @lock: protects the parts and the counts below
 * @comm: the communicator, referenced while the collective is in use
 * @node: in the communicator's free list
 * @seq: k
 * @desc: what every rank must agree on, fixed by the first to bind
 * @bound: parts bound (also under the communicator's lock)
 * @settled: parts done or gone
 * @arrived: parts whose stream reached them
 * @running: steps on the cores
 * @finished: parts that ran all their steps
 * @go: every part arrived: steps may start
 * @error: the failure the parts without their own get, or 0
 * @refs: parts not yet completed (done and completed, or gone); the
 *        last put gives the collective back to its communicator
 * @done: the works of the parts done, to complete (by @done_work, or by
 *        the core that ended the last step)
 * @queued: @done_work is queued
 * @done_work: completes the parts on @done, off the call chains that
 *             make them done (so that a completion that makes another
 *             collective arrive never nests)
 * @send: each rank's send buffer (kernel address), for the reductions
 * @part: one per rank
 */
struct snpu_coll {
	spinlock_t lock;		/* parts, counts, @error */
	struct snpu_comm *comm;
	struct list_head node;
	u64 seq;
	struct snpu_coll_desc desc;
	u32 bound;
	u32 settled;
	u32 arrived;
	u32 running;
	u32 finished;
	bool go;
	int error;
	atomic_t refs;
	struct list_head done;
	bool queued;
	struct work_struct done_work;
	void **send;
	struct snpu_coll_part part[];
};

struct snpu_comm_rank *snpu_comm_rank_get_locked(struct snpu_context *ctx,
						 u32 handle);
int snpu_coll_bind(struct snpu_comm_rank *r, struct snpu_work *w,
		   const struct snpu_coll_desc *d, void *send, void *recv);

/* Communicators in checkpoint images (Documentation/checkpoint.rst). */
struct snpu_ckpt_comm;
int snpu_comm_ckpt_check_locked(struct snpu_context *ctx);
void snpu_comm_ckpt_rec_locked(struct snpu_comm_rank *r,
			       struct snpu_ckpt_comm *rec);
int snpu_comm_ckpt_make_locked(struct snpu_context *ctx,
			       const struct snpu_ckpt_comm *rec);
int snpu_comm_ckpt_settle_locked(struct snpu_context *ctx);

#endif /* _SNPU_COMM_H */
