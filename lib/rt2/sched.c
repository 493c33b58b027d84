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
 * The executor calls these under its lock; they never block nor allocate.
 * The submitted generation is also published (atomically) for the
 * allocator's lock-free fast path.
 */
#include <errno.h>

#include "rt2.h"

void rt2_sched_begin(struct rt2_sched *s)
{
	if (!++s->epoch)
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
 * launches that were not submitted yet. Return: whether to wake a waiter
 * (never: an activation only adds requirements).
 */
bool rt2_sched_free_done(struct rt2_sched *s, const struct rt2_xdata *x,
			 uint32_t id, int ret)
{
	uint32_t j;

	if (ret || !x->nrels || x->off[id] == x->off[id + 1])
		return false;
	s->freed++;
	for (j = x->off[id]; j < x->off[id + 1]; j++) {
		uint32_t r = (uint32_t)x->rank[x->col[j]];

		if (r < s->submitted || x->act[r] == s->epoch)
			continue;
		x->act[r] = s->epoch;
		s->unmet++;
	}
	if (x->req[id] > s->required)
		s->required = x->req[id];
	return false;
}

/*
 * Launch @id ran and returned @ret: a successful relation launch advances
 * the submitted generation. Return: whether a waiter's generation is now
 * reached.
 */
bool rt2_sched_launch_done(struct rt2_sched *s, const struct rt2_xdata *x,
			   uint32_t id, int ret)
{
	int32_t r;

	if (ret || !x->nrels)
		return false;
	r = x->rank[id];
	if (r < 0)
		return false;
	__atomic_store_n(&s->submitted, (uint32_t)r + 1, __ATOMIC_RELEASE);
	if (x->act[r] == s->epoch)
		s->unmet--;
	if (s->wait_gen && s->submitted >= s->wait_gen) {
		s->wakeups++;
		return true;
	}
	return false;
}

/* The run failed with @err: keep the first status; wake every waiter. */
bool rt2_sched_abort(struct rt2_sched *s, int err)
{
	if (!s->status)
		s->status = err ? err : -ECANCELED;
	return true;
}

/* The run ended: nothing will advance any more; wake every waiter. */
bool rt2_sched_eos(struct rt2_sched *s)
{
	s->eos = true;
	return true;
}

/*
 * May an allocation that needs generation @gen go on? Return: 0 when it is
 * reached, the original status after a failure, -EDEADLK when the run
 * ended without reaching it, -EAGAIN when it must wait.
 */
int rt2_sched_check(const struct rt2_sched *s, uint32_t gen)
{
	if (s->submitted >= gen)
		return 0;
	if (s->status)
		return s->status;
	if (s->eos)
		return -EDEADLK;
	return -EAGAIN;
}
