// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the schedule state of one run's relations, and its rules.
 *
 * - Each run has its own epoch, generations, launch membership, unmet
 *   count and abort status (rt2_sched_begin(): O(1), no clearing).
 * - Only a successful free activates a requirement; several frees on one
 *   launch occurrence count as one unmet launch.
 * - Only a successful relation launch advances the submitted generation.
 *   Relation launches are submitted in the strict launch order, so the
 *   submitted generation is 1 + the rank of the last one submitted, and
 *   "every launch of this free was submitted" is one comparison with the
 *   free's required generation.
 * - A failure or the end of the sequence advances nothing, keeps the
 *   first status and wakes every waiter.
 *
 * With three workers the memory worker (frees, and the waiting
 * allocation) and the launch worker (launches) call these at the same
 * time, without a lock: what both touch is atomic. An activation stamp
 * (act[rank]) is 2 * epoch when a free activated the launch and
 * 2 * epoch + 1 once the launch was submitted, so that a free racing the
 * submission of its launch activates it only when it has not been
 * submitted, and the launch counts it met only when it was activated:
 * @unmet stays exact. The submitted generation is published with a
 * sequentially consistent store, which the allocator's fast path reads
 * and against which a waiting allocation checks its generation before it
 * sleeps (no wake-up is lost). They never block nor allocate.
 */
#include <errno.h>

#include "rt2.h"

void rt2_sched_begin(struct rt2_sched *s)
{
	/* Stamps hold 2 * epoch (+ 1): 31 bits of epoch, never 0. */
	if (!++s->epoch || s->epoch >= 1U << 31)
		s->epoch = 1;
	__atomic_store_n(&s->submitted, 0, __ATOMIC_RELEASE);
	s->freed = 0;
	s->required = 0;
	s->unmet = 0;
	s->status = 0;
	s->eos = false;
	s->wait_gen = 0;
}

/*
 * Free @id ran and returned @ret: a success activates its relation
 * launches that were not submitted yet. Memory worker. Return: whether to
 * wake a waiter (never: an activation only adds requirements).
 */
bool rt2_sched_free_done(struct rt2_sched *s, const struct rt2_xdata *x,
			 uint32_t id, int ret)
{
	uint32_t j, act = 2 * s->epoch;

	if (ret || !x->nrels || x->off[id] == x->off[id + 1])
		return false;
	s->freed++;
	for (j = x->off[id]; j < x->off[id + 1]; j++) {
		uint32_t r = (uint32_t)x->rank[x->col[j]];
		uint32_t old = __atomic_load_n(&x->act[r], __ATOMIC_RELAXED);

		if (r < __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE))
			continue;
		/* Activated, or submitted, in this epoch: nothing to do. */
		while ((old | 1) != act + 1) {
			if (__atomic_compare_exchange_n(&x->act[r], &old, act,
							false, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				__atomic_add_fetch(&s->unmet, 1,
						   __ATOMIC_RELAXED);
				break;
			}
		}
	}
	if (x->req[id] > s->required)
		s->required = x->req[id];
	return false;
}

/*
 * Launch @id ran and returned @ret: a successful relation launch advances
 * the submitted generation. Launch worker. Return: whether a waiter's
 * generation is now reached.
 */
bool rt2_sched_launch_done(struct rt2_sched *s, const struct rt2_xdata *x,
			   uint32_t id, int ret)
{
	uint32_t wait, sub;
	int32_t r;

	if (ret || !x->nrels)
		return false;
	r = x->rank[id];
	if (r < 0)
		return false;
	sub = (uint32_t)r + 1;
	__atomic_store_n(&s->submitted, sub, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&x->act[r], 2 * s->epoch + 1,
				__ATOMIC_ACQ_REL) == 2 * s->epoch)
		__atomic_sub_fetch(&s->unmet, 1, __ATOMIC_RELAXED);
	wait = __atomic_load_n(&s->wait_gen, __ATOMIC_SEQ_CST);
	if (wait && sub >= wait) {
		s->wakeups++;
		return true;
	}
	return false;
}

/* The run failed with @err: keep the first status; wake every waiter. */
bool rt2_sched_abort(struct rt2_sched *s, int err)
{
	int none = 0;

	__atomic_compare_exchange_n(&s->status, &none, err ? err : -ECANCELED,
				    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	return true;
}

/* The run ended: nothing will advance any more; wake every waiter. */
bool rt2_sched_eos(struct rt2_sched *s)
{
	__atomic_store_n(&s->eos, true, __ATOMIC_SEQ_CST);
	return true;
}

/*
 * May an allocation that needs generation @gen go on? Return: 0 when it is
 * reached, the original status after a failure, -EDEADLK when the run
 * ended without reaching it, -EAGAIN when it must wait.
 */
int rt2_sched_check(const struct rt2_sched *s, uint32_t gen)
{
	int status;

	if (__atomic_load_n(&s->submitted, __ATOMIC_SEQ_CST) >= gen)
		return 0;
	status = __atomic_load_n(&s->status, __ATOMIC_SEQ_CST);
	if (status)
		return status;
	if (__atomic_load_n(&s->eos, __ATOMIC_SEQ_CST))
		return -EDEADLK;
	return -EAGAIN;
}
