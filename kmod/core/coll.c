// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Collectives: structural checks of an SNPU_OP_COLL task and the plan of
 * each rank's steps (see coll.h and the uapi header). The reductions
 * themselves are in coll_vec.c, built with SSE in the module.
 *
 * The plan, for n ranks, rank q, chunks c = 0..n-1 and "q - k" taken
 * modulo n:
 *
 *   ALLREDUCE       step 0: recv[chunk q] = the reduction of every send's
 *                   chunk q (rank order); step k = 1..n-1: recv[chunk
 *                   q - k] = the predecessor's recv[chunk q - k], which
 *                   the predecessor wrote at its step k - 1.
 *   REDUCE_SCATTER  step 0: recv = the reduction of every send's chunk q.
 *   ALLGATHER       step 0: recv[chunk q] = own send; step k = 1..n-1 as
 *                   ALLREDUCE's.
 *   BROADCAST       the root: step 0: recv = own send. Rank q at distance
 *                   d > 0 from the root: step k = 0..n-1: recv[chunk k] =
 *                   the predecessor's chunk k (the root's send when d = 1,
 *                   else its recv, written at its step k).
 *
 * Why nothing is overwritten while another rank reads it. A rank writes
 * only its own recv, each chunk of it once (ALLREDUCE and ALLGATHER: chunk
 * q at step 0, chunk q - k at step k; BROADCAST: chunk k at step k), so a
 * reader that waits for the step that wrote a range never sees it change.
 * What is read without such a wait: every rank's send chunk c by rank c's
 * reduction (ALLREDUCE, REDUCE_SCATTER) and the root's send (BROADCAST).
 * A send buffer is written by nobody unless it is the recv buffer (in
 * place): in place, ALLREDUCE's send chunk c of rank q is written by q's
 * step k with q - k = c, which copies chunk c from q - 1 and so waits,
 * through the ring, for rank c's step 0, the reduction that read it;
 * REDUCE_SCATTER writes only the rank's own chunk, which only its own
 * step reads; ALLGATHER's in-place send is recv[chunk q], written only by
 * q's step 0 (a copy onto itself); BROADCAST's root writes only its own
 * recv (onto itself in place). Between collectives, every rank completes
 * only when every rank's steps are done.
 */
#include "coll.h"
#include "kernels.h"

#ifdef __KERNEL__
#include <linux/math64.h>
#endif

/**
 * snpu_coll_reduces() - does a collective take a reduction operator
 * @coll: SNPU_COLL_*
 *
 * Return: true for ALLREDUCE and REDUCE_SCATTER.
 */
bool snpu_coll_reduces(__u32 coll)
{
	return coll == SNPU_COLL_ALLREDUCE || coll == SNPU_COLL_REDUCE_SCATTER;
}

/**
 * snpu_coll_check() - check an SNPU_OP_COLL task's own fields
 * @t: the task, with @op SNPU_OP_COLL
 *
 * Return: 0, or -EINVAL for an unknown collective, type or operator, an
 * operator given to a collective that does not reduce, a zero count, a
 * root given to one that is not a broadcast, a count whose buffers could
 * not be addressed, a non-zero pad, or an address not 4-byte aligned.
 * The rest (ranks, buffers) is checked against the communicator.
 */
int snpu_coll_check(const struct snpu_task *t)
{
	__u32 coll = t->coll.coll;

	if (coll < SNPU_COLL_ALLREDUCE || coll > SNPU_COLL_REDUCE_SCATTER)
		return -EINVAL;
	if (t->coll.dtype != SNPU_DTYPE_I32 && t->coll.dtype != SNPU_DTYPE_F32)
		return -EINVAL;
	if (snpu_coll_reduces(coll) ?
	    t->coll.redop != SNPU_REDOP_SUM && t->coll.redop != SNPU_REDOP_MAX :
	    t->coll.redop)
		return -EINVAL;
	if (coll != SNPU_COLL_BROADCAST && t->coll.root)
		return -EINVAL;
	if (t->coll.root >= SNPU_COMM_MAX_RANKS || t->coll.pad)
		return -EINVAL;
	/* The larger buffer holds nranks * count elements: keep it addressable. */
	if (!t->coll.count ||
	    t->coll.count > ~0ULL / (SNPU_COLL_ESIZE * SNPU_COMM_MAX_RANKS))
		return -EINVAL;
	if ((t->coll.send | t->coll.recv) & (SNPU_COLL_ESIZE - 1))
		return -EINVAL;
	return 0;
}

/**
 * snpu_coll_extents() - the bytes of a rank's send and recv buffers
 * @d: the collective, with @nranks
 * @send_bytes: out: the extent of the send buffer
 * @recv_bytes: out: the extent of the recv buffer
 *
 * Return: 0 (snpu_coll_check() bounded @count), or -EINVAL for a
 * descriptor with no ranks.
 */
int snpu_coll_extents(const struct snpu_coll_desc *d, __u64 *send_bytes,
		      __u64 *recv_bytes)
{
	__u64 one = d->count * SNPU_COLL_ESIZE;

	if (!d->nranks || d->nranks > SNPU_COMM_MAX_RANKS)
		return -EINVAL;
	*send_bytes = one;
	*recv_bytes = one;
	if (d->coll == SNPU_COLL_ALLGATHER)
		*recv_bytes = one * d->nranks;
	else if (d->coll == SNPU_COLL_REDUCE_SCATTER)
		*send_bytes = one * d->nranks;
	return 0;
}

/**
 * snpu_coll_check_buffers() - check how a rank's buffers may overlap
 * @d: the collective, with @nranks
 * @rank: the rank, below @nranks
 * @send: the send buffer's device address, 0 for none (BROADCAST off
 *        the root)
 * @recv: the recv buffer's device address
 *
 * The ranges either do not overlap or are placed as the in-place form of
 * the collective has them (see the uapi header); off the root of a
 * BROADCAST, @send is 0 or @recv.
 *
 * Return: 0, or -EINVAL.
 */
int snpu_coll_check_buffers(const struct snpu_coll_desc *d, __u32 rank,
			    __u64 send, __u64 recv)
{
	__u64 sb, rb, one = d->count * SNPU_COLL_ESIZE;

	if (snpu_coll_extents(d, &sb, &rb) || rank >= d->nranks ||
	    d->root >= d->nranks)
		return -EINVAL;
	if (d->coll == SNPU_COLL_BROADCAST && rank != d->root)
		return !send || send == recv ? 0 : -EINVAL;
	if (send == recv && d->coll != SNPU_COLL_ALLGATHER &&
	    d->coll != SNPU_COLL_REDUCE_SCATTER)
		return 0;
	if (d->coll == SNPU_COLL_ALLGATHER && recv <= send &&
	    send - recv == one * rank)
		return 0;
	if (d->coll == SNPU_COLL_REDUCE_SCATTER && send <= recv &&
	    recv - send == one * rank)
		return 0;
	/* Apart: one ends before the other starts (no wrap: checked by the caller). */
	return send + sb <= recv || recv + rb <= send ? 0 : -EINVAL;
}

/**
 * snpu_coll_chunk() - the elements of chunk @c
 * @d: the collective
 * @c: the chunk, below @d->nranks
 * @begin: out: its first element (of the whole recv buffer)
 * @elems: out: its length, possibly 0
 *
 * ALLGATHER and REDUCE_SCATTER: rank c's @count elements. The others: the
 * @count elements cut in ceil(@count / nranks), the last chunks shorter
 * or empty.
 */
void snpu_coll_chunk(const struct snpu_coll_desc *d, __u32 c, __u64 *begin,
		     __u64 *elems)
{
	__u64 per, b;

	if (d->coll == SNPU_COLL_ALLGATHER ||
	    d->coll == SNPU_COLL_REDUCE_SCATTER) {
		*begin = (__u64)c * d->count;
		*elems = d->count;
		return;
	}
	per = snpu_div_round_up(d->count, d->nranks);
	b = (__u64)c * per;
	if (b > d->count)
		b = d->count;
	*begin = b;
	*elems = d->count - b < per ? d->count - b : per;
}

/* (@q - @k) modulo @n, for @k <= @n. */
static __u32 snpu_ring_back(__u32 q, __u32 k, __u32 n)
{
	return q >= k ? q - k : q + n - k;
}

/**
 * snpu_coll_nsteps() - the number of steps of one rank
 * @d: the collective
 * @rank: the rank
 *
 * Return: nranks for ALLREDUCE and ALLGATHER, and for BROADCAST off the
 * root; 1 for REDUCE_SCATTER and BROADCAST's root.
 */
__u32 snpu_coll_nsteps(const struct snpu_coll_desc *d, __u32 rank)
{
	if (d->coll == SNPU_COLL_REDUCE_SCATTER)
		return 1;
	if (d->coll == SNPU_COLL_BROADCAST && rank == d->root)
		return 1;
	return d->nranks;
}

/**
 * snpu_coll_step() - what one step of a rank does, and what it waits for
 * @d: the collective
 * @rank: the rank
 * @k: the step, below snpu_coll_nsteps()
 * @st: out: the step
 *
 * See the top of this file.
 */
void snpu_coll_step(const struct snpu_coll_desc *d, __u32 rank, __u32 k,
		    struct snpu_coll_step *st)
{
	__u32 n = d->nranks, pred = snpu_ring_back(rank, 1, n), c;
	__u64 b, len;

	st->wait_rank = SNPU_CSTEP_NO_WAIT;
	st->wait_done = 0;
	st->kind = SNPU_CSTEP_COPY;
	st->peer = rank;
	st->peer_buf = SNPU_CBUF_SEND;

	switch (d->coll) {
	case SNPU_COLL_REDUCE_SCATTER:
		st->kind = SNPU_CSTEP_REDUCE;
		st->src_off = (__u64)rank * d->count;
		st->dst_off = 0;
		st->elems = d->count;
		return;
	case SNPU_COLL_BROADCAST:
		if (rank == d->root) {
			st->src_off = 0;
			st->dst_off = 0;
			st->elems = d->count;
			return;
		}
		snpu_coll_chunk(d, k, &b, &len);
		st->peer = pred;
		if (pred != d->root) {
			st->peer_buf = SNPU_CBUF_RECV;
			st->wait_rank = pred;
			st->wait_done = k + 1;
		}
		st->src_off = b;
		st->dst_off = b;
		st->elems = len;
		return;
	}

	/* ALLREDUCE and ALLGATHER: step 0 on the own chunk, then the ring. */
	c = snpu_ring_back(rank, k, n);
	snpu_coll_chunk(d, c, &b, &len);
	st->dst_off = b;
	st->elems = len;
	if (!k) {
		if (d->coll == SNPU_COLL_ALLREDUCE)
			st->kind = SNPU_CSTEP_REDUCE;
		st->src_off = d->coll == SNPU_COLL_ALLREDUCE ? b : 0;
		return;
	}
	st->peer = pred;
	st->peer_buf = SNPU_CBUF_RECV;
	st->wait_rank = pred;
	st->wait_done = k;
	st->src_off = b;
}
