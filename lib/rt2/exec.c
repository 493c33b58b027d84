// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the executor - preparation (once), runs (many), the device memory
 * pool, the workers.
 *
 * Everything a run needs is allocated when the executor is created or,
 * for device memory, on the first run; a run only resets per-run state
 * (values, pending counts, strands) with plain stores.
 *
 * Three-worker mode runs the three workers as strands (rt2.h): a thread
 * runs a strand's ready nodes while it holds the strand's claim, and
 * completes each by decrementing its successors' pending counts (a ready
 * normal node goes into the normal strand's queue). No mutex is on this
 * path: the claims, pending counts and queue are atomics, and a thread
 * that made work ready and is still in the run takes it itself if no one
 * else has. The caller runs the graph; helpers are woken (rt2_hand_*)
 * only when the caller or a helper is about to block on a relation, or
 * when the nodes take longer than waking a helper does; an idle helper
 * spins briefly only while the threads that run or spin leave a CPU
 * free, then sleeps on a futex of its own. The first error stops the
 * run: every thread leaves, and the run drains the device and returns
 * the pool's blocks, so the next run starts clean.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt2.h"

/* ---- futexes, clocks ---------------------------------------------------- */

static void rt2_futex_wait(uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void rt2_futex_wake(uint32_t *word, int n)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static uint64_t rt2_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void rt2_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- the hand-over: who runs, who sleeps --------------------------------- */

/* Spins of an idle thread before it sleeps: tens of microseconds. */
#define RT2_SPINS	2000

/* Runs between two timings of a run's nodes (the wake policy's input). */
#define RT2_TIME_EVERY	16

static bool rt2_stopped(const struct snpu_rt2_exec *e)
{
	return __atomic_load_n(&e->hand.stop, __ATOMIC_ACQUIRE);
}

/*
 * May an idle thread spin? Only while the threads that run the graph and
 * those that spin leave a CPU for it: never on oversubscribed cores.
 */
static bool rt2_may_spin(struct snpu_rt2_exec *e)
{
	struct rt2_hand *h = &e->hand;
	unsigned int busy = __atomic_load_n(&h->inside, __ATOMIC_RELAXED) +
			    __atomic_load_n(&h->spinning, __ATOMIC_RELAXED);

	return busy < h->ncpu;
}

/*
 * Wake one idle helper into the run: it is counted in @inside before it
 * runs (so that the run cannot be seen over while it is on its way), and
 * a sleeping one gets a futex wake; a spinning one sees its word change.
 * Return: whether one was woken.
 */
static bool rt2_hand_wake(struct snpu_rt2_exec *e)
{
	struct rt2_hand *h = &e->hand;
	unsigned int i;

	for (i = 0; i < e->nthr; i++) {
		struct rt2_thread *t = &e->thr[i];
		uint32_t old = __atomic_load_n(&t->word, __ATOMIC_RELAXED);

		if (old != RT2_T_IDLE && old != RT2_T_PARKED)
			continue;
		__atomic_add_fetch(&h->inside, 1, __ATOMIC_SEQ_CST);
		if (__atomic_compare_exchange_n(&t->word, &old, RT2_T_WAKE,
						false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			if (h->policy == RT2_HAND_AUTO)
				__atomic_store_n(&t->woken_ns, rt2_now(),
						 __ATOMIC_RELAXED);
			if (old == RT2_T_PARKED)
				rt2_futex_wake(&t->word, 1);
			__atomic_add_fetch(&h->wakes, 1, __ATOMIC_RELAXED);
			return true;
		}
		__atomic_sub_fetch(&h->inside, 1, __ATOMIC_SEQ_CST);
	}
	return false;
}

/*
 * A thread leaves the run's work loop. The last one out wakes the caller
 * if it waits for that.
 */
static void rt2_hand_leave(struct snpu_rt2_exec *e)
{
	struct rt2_hand *h = &e->hand;

	if (!__atomic_sub_fetch(&h->inside, 1, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&h->caller, 0, __ATOMIC_SEQ_CST))
		rt2_futex_wake(&h->caller, 1);
}

/* ---- device memory: the caching allocator (alloc.c) and its waits ----- */

static void rt2_hand_switch(struct snpu_rt2_exec *e);

/*
 * Wait until the submitted generation reaches @gen, the run fails or it
 * ends. On the memory worker's strand, which the waiting thread keeps:
 * another thread must run the launches, so a helper is woken when no
 * other thread is in the run. The wait sleeps on the submitted generation
 * itself, which the launch that reaches @gen wakes (rt2_complete()).
 * @sub: the generation reached.
 */
static int rt2_wait_gen(struct snpu_rt2_exec *e, uint32_t gen, uint32_t *sub)
{
	struct rt2_sched *s = &e->sched;
	int ret;

	if (!e->nthr) {
		/* One thread: no relations, nothing to wait for. */
		ret = rt2_sched_check(s, gen);
		*sub = s->submitted;
		return ret == -EAGAIN ? -EDEADLK : ret;
	}
	__atomic_store_n(&s->wait_gen, gen, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t seen = __atomic_load_n(&s->submitted, __ATOMIC_SEQ_CST);

		ret = rt2_sched_check(s, gen);
		if (ret != -EAGAIN)
			break;
		if (rt2_stopped(e)) {
			ret = -ECANCELED;
			break;
		}
		if (e->hand.ordered)
			rt2_hand_switch(e);
		if (__atomic_load_n(&e->hand.inside, __ATOMIC_SEQ_CST) == 1)
			rt2_hand_wake(e);
		s->waits++;
		rt2_futex_wait(&s->submitted, seen);
	}
	__atomic_store_n(&s->wait_gen, 0, __ATOMIC_SEQ_CST);
	*sub = __atomic_load_n(&s->submitted, __ATOMIC_SEQ_CST);
	/*
	 * Woken by a failure: give up. The run keeps and returns its
	 * original status (the first error); this allocation only says it
	 * was cancelled.
	 */
	return ret && ret != -EDEADLK ? -ECANCELED : ret;
}

/*
 * A block of @bytes for value @t. The fast path never calls the
 * scheduler; past the pool's limit (only a caller's limit: without one
 * the pool grows): wait (only for what executed frees activated), stream
 * sync, recycle, retry. Memory worker only.
 */
/*
 * SNPU_RT2_EXEC_POISON: a block the pool hands out again is first filled
 * with a NaN pattern, on the executor's stream: after every task that
 * used it before, if its reuse is right, so that a use after the reuse
 * (a launch of its last owner submitted late) reads the pattern.
 */
#define RT2_POISON	0x7fbadbadU

static int rt2_poison(struct snpu_rt2_exec *e, uint64_t addr, uint64_t bytes)
{
	struct snpu_kernel_arg args[2];
	struct snpu_task task;
	uint64_t blocks = (bytes / 4 + (1ULL << 24) - 1) >> 24;

	args[0] = snpu_arg_buf(addr, bytes);
	args[1] = snpu_arg_u64(RT2_POISON);
	snpu_prep_launch(&task, e->dq.stream, SNPU_KERNEL_FILL,
			 blocks ? (uint32_t)blocks : 1, args, 2);
	return e->dev->ops->submit(e->dev, &e->dq, &task, 1);
}

int rt2_pool_get(struct snpu_rt2_exec *e, int32_t t, uint64_t bytes,
		 uint64_t *addr)
{
	struct rt2_pool *p = &e->pool;
	unsigned long allocs = p->dev_allocs;
	uint32_t gen = 0, sub = 0;
	int ret;

	*addr = t >= 0 && (unsigned int)t < e->nvals ? e->hint[t] : 0;
	ret = rt2_alloc_get(p, e->dev, bytes, addr, &gen);
	if (ret == RT2_ALLOC_RECYCLE) {
		p->recycles++;
		if (gen) {
			p->waits++;
			ret = rt2_wait_gen(e, gen, &sub);
			if (ret)
				return ret;
		}
		/* Physical stream synchronisation: a device error it finds
		 * is this run's; the run's end recovers the streams.
		 */
		ret = e->dev->ops->wait(e->dev, &e->dq);
		if (ret) {
			p->sync_err = true;
			return ret;
		}
		rt2_alloc_recycle(p, e->dev, sub, bytes);
		ret = rt2_alloc_get(p, e->dev, bytes, addr, &gen);
		if (ret == RT2_ALLOC_RECYCLE)
			ret = -ENOMEM;
	}
	if (!ret && t >= 0 && (unsigned int)t < e->nvals)
		e->hint[t] = *addr;
	if (!ret && p->dev_allocs == allocs &&
	    (e->opts.flags & SNPU_RT2_EXEC_POISON))
		ret = rt2_poison(e, *addr, bytes);
	return ret;
}

/* @req: 0 for a plain free, a hold-address free's required generation. */
void rt2_pool_put(struct snpu_rt2_exec *e, uint64_t addr, uint32_t req)
{
	rt2_alloc_put(&e->pool, addr, req);
}

/* ---- running nodes ----------------------------------------------------- */

static int rt2_run_node(struct snpu_rt2_exec *e, const struct rt2_node *n,
			unsigned int worker)
{
	int ret = e->replay ? rt2_replay_node(e, n) :
		  rt2_kernel(n->kernel)->run(e, n);

	if (e->opts.trace) {
		struct snpu_rt2_trace t = {
			.node = n->id,
			.op = n->op,
			.kernel = rt2_kernel(n->kernel)->name,
			.worker = worker,
			.ret = ret,
		};

		if (n->op >= 0 && e->model && e->model->ops[n->op].name[0])
			t.name = e->model->ops[n->op].name;

		e->opts.trace(e->opts.trace_arg, &t);
	}
	return ret;
}

/*
 * Is this thread alone in the run? Then no other thread can enter it but
 * one it wakes itself (rt2_hand_wake() counts that one in first, and its
 * atomic publishes what was written before): until it does, its updates
 * of the scheduling state need no atomic read-modify-write and no fence,
 * and cost what one thread's do.
 */
static bool rt2_solo(struct snpu_rt2_exec *e)
{
	return __atomic_load_n(&e->hand.inside, __ATOMIC_ACQUIRE) == 1;
}

/* A normal node is ready: into the normal strand's queue. */
static void rt2_push_normal(struct snpu_rt2_exec *e, uint32_t id, bool solo)
{
	struct rt2_strand *st = &e->strand[RT2_W_NORMAL];
	uint32_t pos;

	if (solo) {
		pos = st->tail;
		__atomic_store_n(&st->tail, pos + 1, __ATOMIC_RELAXED);
	} else {
		pos = __atomic_fetch_add(&st->tail, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&st->slot[pos], id, __ATOMIC_RELEASE);
}

/* The next node of strand @w when it is ready, or RT2_NO_NODE. */
static uint32_t rt2_strand_peek(struct snpu_rt2_exec *e, unsigned int w)
{
	struct rt2_strand *st = &e->strand[w];
	uint32_t next = __atomic_load_n(&st->next, __ATOMIC_ACQUIRE), id;

	if (next >= st->n)
		return RT2_NO_NODE;
	if (!st->order)
		return __atomic_load_n(&st->slot[next], __ATOMIC_ACQUIRE);
	id = st->order[next];
	return __atomic_load_n(&e->pending[id], __ATOMIC_ACQUIRE) ?
	       RT2_NO_NODE : id;
}

/* Every strand ran all its nodes. */
static bool rt2_run_complete(struct snpu_rt2_exec *e)
{
	unsigned int w;

	for (w = 0; w < RT2_WORKERS; w++)
		if (__atomic_load_n(&e->strand[w].next, __ATOMIC_ACQUIRE) <
		    e->strand[w].n)
			return false;
	return true;
}

/* The run stops on its first error: every thread leaves. */
static void rt2_fail(struct snpu_rt2_exec *e, int ret)
{
	int none = 0;

	__atomic_compare_exchange_n(&e->err, &none, ret, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	rt2_sched_abort(&e->sched, ret);
	__atomic_store_n(&e->hand.stop, 1, __ATOMIC_SEQ_CST);
	/* An allocation waiting for a generation gives up. */
	rt2_futex_wake(&e->sched.submitted, INT_MAX);
}

/*
 * A node ran: release its successors. @solo: see rt2_solo(). Return: the
 * strand of a successor it made ready (the one to look at next), or
 * RT2_WORKERS.
 */
static unsigned int rt2_complete(struct snpu_rt2_exec *e,
				 const struct rt2_node *n, bool solo)
{
	const uint32_t *succ = e->g.succs + n->succ_off;
	unsigned int j, hint = RT2_WORKERS;
	uint32_t left;

	if (e->xd.nrels) {
		if (n->type == RT2_NT_FREE_HOLD)
			rt2_sched_free_done(&e->sched, &e->xd, n->id, 0);
		else if (rt2_sched_launch_done(&e->sched, &e->xd, n->id, 0))
			rt2_futex_wake(&e->sched.submitted, INT_MAX);
	}
	for (j = 0; j < n->nsucc; j++) {
		uint32_t *p = &e->pending[succ[j]];

		if (solo) {
			left = *p - 1;
			__atomic_store_n(p, left, __ATOMIC_RELAXED);
		} else {
			left = __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL);
		}
		if (left)
			continue;
		hint = e->g.nodes[succ[j]].worker;
		if (hint == RT2_W_NORMAL)
			rt2_push_normal(e, succ[j], solo);
	}
	return hint;
}

/*
 * Parallel work: another strand than @w has a ready node that no thread
 * runs. The wake policy's condition, checked before each node when the
 * run wakes helpers for parallel work.
 */
static bool rt2_other_work(struct snpu_rt2_exec *e, unsigned int w)
{
	unsigned int o;

	for (o = 0; o < RT2_WORKERS; o++)
		if (o != w &&
		    !__atomic_load_n(&e->strand[o].claim, __ATOMIC_RELAXED) &&
		    rt2_strand_peek(e, o) != RT2_NO_NODE)
			return true;
	return false;
}

/*
 * Is a helper worth waking before a node of strand @w runs? When this run
 * wakes helpers for parallel work at all (its nodes take longer than a
 * wake-up, or tests ask), while a CPU is free for one (tests: always),
 * another strand has a ready node that no thread runs, and some helper
 * is not in the run yet.
 */
static bool rt2_help_pays(struct snpu_rt2_exec *e, unsigned int w)
{
	unsigned int inside = __atomic_load_n(&e->hand.inside,
					      __ATOMIC_RELAXED);

	if (inside > e->nthr)
		return false;
	if (e->hand.policy != RT2_HAND_EAGER && inside >= e->hand.ncpu)
		return false;
	return rt2_other_work(e, w);
}

/*
 * Run strand @w's ready nodes while holding its claim. After letting the
 * claim go, look once more: a node made ready in between by a thread
 * that saw the claim held is taken here. @hint: set to the strand of a
 * node the last one made ready. Return: whether it ran any.
 */
static bool rt2_strand_run(struct snpu_rt2_exec *e, unsigned int w,
			   unsigned int *hint)
{
	struct rt2_strand *st = &e->strand[w];
	bool ran = false, solo;
	uint32_t id;
	int ret;

	for (;;) {
		if (rt2_strand_peek(e, w) == RT2_NO_NODE ||
		    __atomic_load_n(&st->claim, __ATOMIC_RELAXED))
			return ran;
		solo = rt2_solo(e);
		if (solo)
			__atomic_store_n(&st->claim, 1, __ATOMIC_RELAXED);
		else if (__atomic_exchange_n(&st->claim, 1, __ATOMIC_ACQUIRE))
			return ran;
		while (!rt2_stopped(e) &&
		       (id = rt2_strand_peek(e, w)) != RT2_NO_NODE) {
			const struct rt2_node *n = &e->g.nodes[id];

			if (e->hand.eager && rt2_help_pays(e, w))
				rt2_hand_wake(e);
			ran = true;
			ret = rt2_run_node(e, n, w);
			if (ret) {
				rt2_fail(e, ret);
				break;
			}
			/* A wake (also in a kernel's wait) ends solo. */
			solo = solo && rt2_solo(e);
			*hint = rt2_complete(e, n, solo);
			__atomic_store_n(&st->next, st->next + 1,
					 __ATOMIC_RELEASE);
		}
		/*
		 * Let go, then look again (above): with others in the run,
		 * a fence between the two, against a thread that made a
		 * node ready and saw the claim held. Alone, no one did.
		 */
		if (solo && rt2_solo(e)) {
			__atomic_store_n(&st->claim, 0, __ATOMIC_RELAXED);
			return ran;
		}
		__atomic_store_n(&st->claim, 0, __ATOMIC_SEQ_CST);
		if (rt2_stopped(e))
			return ran;
	}
}

/*
 * A thread in the run: run any strand that has ready nodes and no holder,
 * until none has. The strands in turn (the launch worker's first, so that
 * launches reach the device as soon as they are ready), except that the
 * strand of a node just made ready comes next: a chain of nodes of
 * different workers goes from one to the next without a search.
 */
static const unsigned int rt2_strand_pref[RT2_WORKERS] = {
	RT2_W_LAUNCH, RT2_W_NORMAL, RT2_W_MEMORY
};

static bool rt2_work(struct snpu_rt2_exec *e)
{
	unsigned int hint = RT2_WORKERS, i = 0, idle = 0, w;
	bool any = false;

	while (idle < RT2_WORKERS && !rt2_stopped(e)) {
		if (hint < RT2_WORKERS) {
			w = hint;
			hint = RT2_WORKERS;
			if (rt2_strand_run(e, w, &hint))
				any = true, idle = 0;
			continue;
		}
		w = rt2_strand_pref[i];
		i = (i + 1) % RT2_WORKERS;
		if (rt2_strand_run(e, w, &hint))
			any = true, idle = 0;
		else
			idle++;
	}
	return any;
}

/*
 * An idle helper (its word RT2_T_IDLE: wakeable): spin on its word while
 * that leaves a CPU free, then sleep on it. Return: RT2_T_WAKE or
 * RT2_T_QUIT.
 */
static uint32_t rt2_idle(struct snpu_rt2_exec *e, struct rt2_thread *t)
{
	uint32_t w = RT2_T_IDLE;
	unsigned int i;

	if (rt2_may_spin(e)) {
		__atomic_add_fetch(&e->hand.spinning, 1, __ATOMIC_RELAXED);
		for (i = 0; i < RT2_SPINS; i++) {
			if (__atomic_load_n(&t->word, __ATOMIC_ACQUIRE) !=
			    RT2_T_IDLE)
				break;
			rt2_cpu_relax();
		}
		__atomic_sub_fetch(&e->hand.spinning, 1, __ATOMIC_RELAXED);
	}
	/* Asleep, unless it was woken meanwhile. */
	if (__atomic_compare_exchange_n(&t->word, &w, RT2_T_PARKED, false,
					__ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
		w = RT2_T_PARKED;
	while (w == RT2_T_PARKED) {
		rt2_futex_wait(&t->word, RT2_T_PARKED);
		w = __atomic_load_n(&t->word, __ATOMIC_ACQUIRE);
	}
	return w;
}

static void *rt2_helper(void *arg)
{
	struct rt2_thread *t = arg;
	struct snpu_rt2_exec *e = t->e;

	while (rt2_idle(e, t) == RT2_T_WAKE) {
		uint64_t woken = __atomic_load_n(&t->woken_ns, __ATOMIC_RELAXED);

		__atomic_store_n(&t->word, RT2_T_RUN, __ATOMIC_SEQ_CST);
		if (woken) {
			uint64_t lat = rt2_now() - woken;
			uint64_t avg = __atomic_load_n(&e->hand.wake_ns,
						       __ATOMIC_RELAXED);

			__atomic_store_n(&e->hand.wake_ns, (3 * avg + lat) / 4,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&t->woken_ns, 0, __ATOMIC_RELAXED);
		}
		rt2_work(e);
		/* Wakeable again before it is out of the run. */
		__atomic_store_n(&t->word, RT2_T_IDLE, __ATOMIC_SEQ_CST);
		rt2_hand_leave(e);
	}
	return NULL;
}

/* ---- runs ------------------------------------------------------------ */

static void rt2_reset(struct snpu_rt2_exec *e)
{
	unsigned int i;

	memcpy(e->vals, e->vals0, e->nvals * sizeof(*e->vals));
	for (i = 0; i < e->nin; i++)
		e->vals[e->in[i].tensor].shape = e->in[i].shape;
	memcpy(e->pending, e->indeg, e->g.nnodes * sizeof(*e->pending));
	rt2_sched_begin(&e->sched);
	e->err = 0;
}

/* Give back what the run still holds (after an error: not yet freed). */
static void rt2_release(struct snpu_rt2_exec *e)
{
	unsigned int i;

	for (i = 0; i < e->nvals; i++)
		e->vals[i].owned = false;
	rt2_alloc_release(&e->pool);
}

static int rt2_run_single(struct snpu_rt2_exec *e)
{
	unsigned int i;
	int ret;

	/* IDs are a topological order. */
	for (i = 0; i < e->g.nnodes; i++) {
		ret = rt2_run_node(e, &e->g.nodes[i], 0);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The normal worker's queue, from the nodes it ran so far: the normal
 * nodes from ID @from on that are ready. Alone in the run.
 */
static void rt2_queue_normal(struct snpu_rt2_exec *e, uint32_t from)
{
	struct rt2_strand *nq = &e->strand[RT2_W_NORMAL];
	uint32_t i;

	memset(nq->slot + nq->next, 0xff, (nq->n - nq->next) * sizeof(uint32_t));
	nq->tail = nq->next;
	for (i = from; i < e->g.nnodes; i++)
		if (!e->pending[i] && e->g.nodes[i].worker == RT2_W_NORMAL)
			rt2_push_normal(e, i, true);
}

/*
 * The caller alone runs the graph in execution-ID order: one of the
 * schedules the three workers may take (the memory worker's nodes come
 * in ID order, the launches' IDs follow the launch order, a normal node
 * runs once its predecessors did), without a claim, a queue or an atomic
 * read-modify-write: pending counts and the strands' positions are kept
 * with plain stores, so that the strands can take over where it stands.
 * They do when an allocation must wait for a relation launch, which
 * comes later in this order (rt2_hand_switch(): the waiting thread keeps
 * the memory worker's strand and a helper runs the others). Return: 0
 * when the graph ran (or failed) here, 1 when the strands take over.
 */
static int rt2_run_ordered(struct snpu_rt2_exec *e)
{
	const struct rt2_node *n = e->g.nodes;
	uint32_t i, j;
	int ret;

	for (i = 0; i < e->g.nnodes; i++, n++) {
		struct rt2_strand *st = &e->strand[n->worker];

		e->hand.cur = i;
		ret = rt2_run_node(e, n, n->worker);
		if (ret) {
			rt2_fail(e, ret);
			return 0;
		}
		if (!e->hand.ordered) {
			/* Switched: it holds the memory worker's strand. */
			rt2_complete(e, n, rt2_solo(e));
			__atomic_store_n(&st->next, st->next + 1,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&st->claim, 0, __ATOMIC_SEQ_CST);
			return 1;
		}
		if (e->xd.nrels) {
			if (n->type == RT2_NT_FREE_HOLD)
				rt2_sched_free_done(&e->sched, &e->xd, i, 0);
			else
				rt2_sched_launch_done(&e->sched, &e->xd, i, 0);
		}
		for (j = 0; j < n->nsucc; j++)
			e->pending[e->g.succs[n->succ_off + j]]--;
		st->next++;
	}
	return 0;
}

/*
 * An allocation of the ordered run (node @e->hand.cur, on the memory
 * worker's strand) must wait: hand the rest to the strands. Their
 * positions are exact; the normal worker's queue gets the normal nodes
 * after the current one that are ready; the waiting thread holds the
 * memory worker's strand. The wake that follows publishes it all.
 */
static void rt2_hand_switch(struct snpu_rt2_exec *e)
{
	rt2_queue_normal(e, e->hand.cur + 1);
	e->strand[RT2_W_MEMORY].claim = 1;
	e->hand.ordered = false;
	e->hand.switches++;
}

/*
 * The caller waits until no helper is in the run: it spins while a CPU
 * is free for it, then sleeps on its word, which the last helper out
 * clears and wakes.
 */
static void rt2_wait_helpers(struct snpu_rt2_exec *e)
{
	struct rt2_hand *h = &e->hand;
	unsigned int i;

	for (i = 0; i < RT2_SPINS && rt2_may_spin(e); i++) {
		if (!__atomic_load_n(&h->inside, __ATOMIC_ACQUIRE))
			return;
		rt2_cpu_relax();
	}
	for (;;) {
		__atomic_store_n(&h->caller, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&h->inside, __ATOMIC_SEQ_CST))
			break;
		rt2_futex_wait(&h->caller, 1);
	}
	__atomic_store_n(&h->caller, 0, __ATOMIC_RELAXED);
}

static int rt2_run_threads(struct snpu_rt2_exec *e)
{
	struct rt2_hand *h = &e->hand;
	uint64_t t0 = 0;
	unsigned int w;
	bool timed;

	/* No helper is in the run: plain stores. */
	for (w = 0; w < RT2_WORKERS; w++) {
		e->strand[w].claim = 0;
		e->strand[w].next = 0;
		e->strand[w].tail = 0;
	}
	h->stop = 0;
	/*
	 * Helpers for parallel work only when a node takes longer than
	 * waking one (timed every RT2_TIME_EVERY runs), or when asked to;
	 * else the caller runs the graph alone, in ID order, until an
	 * allocation must wait.
	 */
	h->eager = h->policy == RT2_HAND_EAGER || h->node_ns > h->wake_ns;
	h->ordered = !h->eager;
	timed = h->policy == RT2_HAND_AUTO && !(e->runs % RT2_TIME_EVERY);
	if (timed)
		t0 = rt2_now();
	__atomic_store_n(&h->inside, 1, __ATOMIC_SEQ_CST);
	if (h->ordered) {
		if (!rt2_run_ordered(e)) {
			h->ordered = false;
			rt2_hand_leave(e);
			rt2_wait_helpers(e);
			goto out;
		}
	} else {
		rt2_queue_normal(e, 0);
	}
	for (;;) {
		bool ran = rt2_work(e);

		rt2_hand_leave(e);
		if (rt2_stopped(e) || rt2_run_complete(e)) {
			rt2_wait_helpers(e);
			break;
		}
		/*
		 * Nodes are left and helpers are in the run: wait until they
		 * are out, then look again. Left alone with nodes that
		 * nothing ran, nothing can (never, by the liveness
		 * argument): report the deadlock rather than hang.
		 */
		if (__atomic_load_n(&h->inside, __ATOMIC_SEQ_CST)) {
			rt2_wait_helpers(e);
		} else if (!ran) {
			rt2_fail(e, -EDEADLK);
			break;
		}
		__atomic_store_n(&h->inside, 1, __ATOMIC_SEQ_CST);
	}
out:
	if (timed && !e->err)
		h->node_ns = (3 * h->node_ns +
			      (rt2_now() - t0) / (e->g.nnodes + 1)) / 4;
	return e->err;
}

int snpu_rt2_exec_run(struct snpu_rt2_exec *e)
{
	int ret, w;

	if (!e)
		return -EINVAL;
	if (e->replay && rt2_replay_ready(e)) {
		/* A replay: only what changes from run to run (replay.c). */
		ret = rt2_replay_run(e, rt2_run_node);
	} else {
		rt2_reset(e);
		ret = e->nthr ? rt2_run_threads(e) : rt2_run_single(e);
	}
	if (e->replay)
		rt2_replay_run_end(e, ret);
	/* Drain the device, also after an error: nothing may still use
	 * the pool's memory or the pinned buffers.
	 */
	w = e->dev->ops->wait(e->dev, &e->dq);
	if (!ret)
		ret = w;
	/* A device error left streams refusing work: the next run needs
	 * them. Nothing of this executor is in flight any more.
	 */
	if (w || e->pool.sync_err)
		e->dev->ops->recover(e->dev, &e->dq);
	e->pool.sync_err = false;
	rt2_release(e);
	e->runs++;
	return ret;
}

/* ---- creation ---------------------------------------------------------- */

static int rt2_prepare_values(struct snpu_rt2_exec *e)
{
	const struct snpu_rt2_model *m = e->model;
	struct snpu_rt2_dev *d = e->dev;
	unsigned int i;
	int ret;

	e->nvals = m ? m->ntensors : 0;
	e->vals = calloc(e->nvals + 1, sizeof(*e->vals));
	e->vals0 = calloc(e->nvals + 1, sizeof(*e->vals0));
	e->hint = calloc(e->nvals + 1, sizeof(*e->hint));
	/*
	 * A run allocates each value at most once, and the pool grows only
	 * when no block of the size is free: it never has more blocks than
	 * values, so its array never grows during a run.
	 */
	e->pool.blk = calloc(e->nvals + 1, sizeof(*e->pool.blk));
	e->pool.cap = e->nvals + 1;
	e->nin = m ? m->ninputs : 0;
	e->nout = m ? m->noutputs : 0;
	e->in = calloc(e->nin + 1, sizeof(*e->in));
	e->out = calloc(e->nout + 1, sizeof(*e->out));
	e->events = calloc(2 * (m ? m->nops : 0) + 1, sizeof(*e->events));
	if (!e->vals || !e->vals0 || !e->hint || !e->pool.blk || !e->in || !e->out || !e->events)
		return -ENOMEM;
	for (i = 0; i < e->nvals; i++) {
		const struct rt2_tensor *t = &m->tensors[i];
		struct rt2_value *v = &e->vals0[i];
		struct rt2_host *h;

		v->shape = t->shape;
		v->alloc_bytes = rt2_shape_bytes(&t->shape);
		if (t->kind == RT2_T_PARAM) {
			ret = d->ops->mem_alloc(d, v->alloc_bytes, &v->addr);
			if (ret)
				return ret;
			ret = d->ops->h2d(d, v->addr, t->init, v->alloc_bytes);
			if (ret) {
				d->ops->mem_free(d, v->addr);
				v->addr = 0;
				return ret;
			}
			v->ready = true;
		}
		if (t->kind != RT2_T_INPUT)
			continue;
		h = &e->in[t->input];
		h->tensor = (int)i;
		h->shape = t->shape;
		h->bytes = v->alloc_bytes;
		ret = d->ops->host_alloc(d, h->bytes, &h->ptr, &h->handle);
		if (ret)
			return ret;
	}
	for (i = 0; i < e->nout; i++) {
		struct rt2_host *h = &e->out[i];

		h->tensor = m->outputs[i];
		h->shape = m->tensors[h->tensor].shape;
		h->bytes = rt2_shape_bytes(&h->shape);
		ret = d->ops->host_alloc(d, h->bytes, &h->ptr, &h->handle);
		if (ret)
			return ret;
	}
	for (i = 0; m && i < m->nops; i++) {
		if (m->ops[i].desc.type != SNPU_RT2_OP_CUSTOM)
			continue;
		ret = d->ops->event_create(d, &e->events[2 * i]);
		if (!ret)
			ret = d->ops->event_create(d, &e->events[2 * i + 1]);
		if (ret)
			return ret;
	}
	return 0;
}

static int rt2_prepare_sched(struct snpu_rt2_exec *e)
{
	struct rt2_strand *st = e->strand;
	unsigned int i, n = e->g.nnodes;

	e->indeg = calloc(n + 1, sizeof(*e->indeg));
	e->pending = calloc(n + 1, sizeof(*e->pending));
	e->mem_order = calloc(n + 1, sizeof(*e->mem_order));
	if (!e->indeg || !e->pending || !e->mem_order)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		e->indeg[i] = e->g.nodes[i].npred;
		if (e->g.nodes[i].worker == RT2_W_MEMORY)
			e->mem_order[e->nmem++] = i;
		else if (e->g.nodes[i].worker == RT2_W_NORMAL)
			st[RT2_W_NORMAL].n++;
	}
	st[RT2_W_MEMORY].order = e->mem_order;
	st[RT2_W_MEMORY].n = e->nmem;
	st[RT2_W_LAUNCH].order = e->g.launch_order;
	st[RT2_W_LAUNCH].n = e->g.nlaunch;
	/* Each normal node is queued once a run: a slot each. */
	st[RT2_W_NORMAL].slot = calloc(st[RT2_W_NORMAL].n + 1,
				       sizeof(uint32_t));
	if (!st[RT2_W_NORMAL].slot)
		return -ENOMEM;
	return 0;
}

/*
 * ExecutionData after the final node mapping, validated. Relations exist
 * only in multi-thread mode: one thread runs frees before the launches
 * they relate to and could never wait for them.
 */
static int rt2_prepare_relations(struct snpu_rt2_exec *e,
				 const struct rt2_build *b)
{
	struct rt2_rel *r = NULL;
	int ret;

	e->pool.submitted = &e->sched.submitted;
	if (!b->nrels)
		return 0;
	if ((e->opts.flags & (SNPU_RT2_EXEC_THREADS |
			      SNPU_RT2_EXEC_DYN_MULTI_STREAM)) !=
	    SNPU_RT2_EXEC_THREADS)
		return -EINVAL;
	ret = rt2_rels_to_ids(b, &e->g, &r);
	/* Built and validated in one go (relation.c). */
	if (!ret)
		ret = rt2_xdata_build(&e->xd, &e->g, r, b->nrels);
	free(r);
	return ret;
}

/* The CPUs this process may run on, at least 1. */
static unsigned int rt2_ncpu(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned int)n : 1;
}

static int rt2_start_threads(struct snpu_rt2_exec *e)
{
	unsigned int i;
	int ret;

	e->hand.ncpu = rt2_ncpu();
	/* Until measured: a wake-up as dear as 20 us, nodes free. */
	e->hand.wake_ns = 20000;
	if (e->opts.flags & SNPU_RT2_EXEC_PARALLEL)
		e->hand.policy = RT2_HAND_EAGER;
	for (i = 0; i < RT2_WORKERS; i++) {
		e->thr[i].e = e;
		e->thr[i].word = RT2_T_IDLE;
		ret = pthread_create(&e->thr[i].tid, NULL, rt2_helper,
				     &e->thr[i]);
		if (ret)
			return -ret;
		e->nthr++;
	}
	return 0;
}

void snpu_rt2_exec_destroy(struct snpu_rt2_exec *e)
{
	struct snpu_rt2_dev *d;
	unsigned int i;

	if (!e)
		return;
	d = e->dev;
	for (i = 0; i < e->nthr; i++) {
		__atomic_store_n(&e->thr[i].word, RT2_T_QUIT, __ATOMIC_SEQ_CST);
		rt2_futex_wake(&e->thr[i].word, 1);
	}
	for (i = 0; i < e->nthr; i++)
		pthread_join(e->thr[i].tid, NULL);
	if (e->has_dq)
		d->ops->wait(d, &e->dq);
	for (i = 0; e->vals0 && i < e->nvals; i++)
		if (e->vals0[i].addr)
			d->ops->mem_free(d, e->vals0[i].addr);
	for (i = 0; e->in && i < e->nin; i++)
		if (e->in[i].ptr)
			d->ops->host_free(d, e->in[i].ptr, e->in[i].bytes,
					  e->in[i].handle);
	for (i = 0; e->out && i < e->nout; i++)
		if (e->out[i].ptr)
			d->ops->host_free(d, e->out[i].ptr, e->out[i].bytes,
					  e->out[i].handle);
	for (i = 0; e->events && e->model && i < 2 * e->model->nops; i++)
		if (e->events[i])
			d->ops->event_destroy(d, e->events[i]);
	rt2_replay_fini(e);
	rt2_alloc_fini(&e->pool, d);
	rt2_xdata_fini(&e->xd);
	if (e->has_dq)
		d->ops->queue_destroy(d, &e->dq);
	free(e->strand[RT2_W_NORMAL].slot);
	free(e->indeg);
	free(e->pending);
	free(e->mem_order);
	free(e->vals);
	free(e->vals0);
	free(e->hint);
	free(e->in);
	free(e->out);
	free(e->events);
	rt2_graph_fini(&e->g);
	free(e);
}

/**
 * rt2_exec_create_graph() - an executor for a built graph
 * @m: the model the nodes refer to (may be NULL when they refer to none)
 * @dev: the device interface
 * @opts: options, or NULL
 * @b: the builder, after its passes; finalized here, left to the caller
 * @ep: the executor
 *
 * Return: 0 or -errno.
 */
int rt2_exec_create_graph(const struct snpu_rt2_model *m,
			  struct snpu_rt2_dev *dev,
			  const struct snpu_rt2_exec_opts *opts,
			  struct rt2_build *b, struct snpu_rt2_exec **ep)
{
	struct snpu_rt2_exec *e;
	int ret;

	/* Aligned: the strands and threads keep to cache lines of their own. */
	e = aligned_alloc(64, (sizeof(*e) + 63) & ~(size_t)63);
	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->model = m;
	e->dev = dev;
	if (opts)
		e->opts = *opts;
	ret = dev->ops->queue_create(dev, &e->dq);
	e->has_dq = !ret;
	if (!ret)
		ret = rt2_finalize(b, &e->g);
	if (!ret)
		ret = rt2_prepare_relations(e, b);
	if (!ret)
		ret = rt2_prepare_values(e);
	if (!ret)
		ret = rt2_prepare_sched(e);
	if (!ret && (e->opts.flags & SNPU_RT2_EXEC_GRAPH))
		ret = rt2_replay_init(e);
	if (!ret && (e->opts.flags & SNPU_RT2_EXEC_THREADS))
		ret = rt2_start_threads(e);
	if (ret) {
		snpu_rt2_exec_destroy(e);
		return ret;
	}
	*ep = e;
	return 0;
}

int snpu_rt2_exec_create(const struct snpu_rt2_model *m,
			 struct snpu_rt2_dev *dev,
			 const struct snpu_rt2_exec_opts *opts,
			 struct snpu_rt2_exec **ep)
{
	struct rt2_build b;
	int ret;

	if (!m || !dev || !ep)
		return -EINVAL;
	if (opts && opts->flags & ~(SNPU_RT2_EXEC_THREADS |
				    SNPU_RT2_EXEC_DYN_MULTI_STREAM |
				    SNPU_RT2_EXEC_GRAPH |
				    SNPU_RT2_EXEC_POISON |
				    SNPU_RT2_EXEC_PARALLEL))
		return -EINVAL;
	/* Helpers, eager or not, are three-worker mode's. */
	if (opts && (opts->flags & (SNPU_RT2_EXEC_PARALLEL |
				    SNPU_RT2_EXEC_THREADS)) ==
		    SNPU_RT2_EXEC_PARALLEL)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.flags = opts ? opts->flags : 0;
	ret = rt2_lower(&b, m);
	if (!ret)
		ret = rt2_run_passes(&b);
	if (!ret)
		ret = rt2_exec_create_graph(m, dev, opts, &b, ep);
	rt2_build_fini(&b);
	return ret;
}

/* ---- inputs, outputs, introspection -------------------------------------- */

int snpu_rt2_exec_input(struct snpu_rt2_exec *e, unsigned int index,
			const uint32_t *dims, void **host)
{
	struct rt2_host *h;
	const struct snpu_rt2_shape *decl;
	unsigned int i;

	if (!e || index >= e->nin)
		return -EINVAL;
	h = &e->in[index];
	decl = &e->model->tensors[h->tensor].shape;
	if (dims) {
		for (i = 0; i < decl->ndim; i++)
			if (dims[i] > decl->dims[i])
				return -EINVAL;
		for (i = 0; i < decl->ndim; i++)
			h->shape.dims[i] = dims[i];
	} else {
		h->shape = *decl;
	}
	if (host)
		*host = h->ptr;
	return 0;
}

int snpu_rt2_exec_output(struct snpu_rt2_exec *e, unsigned int index,
			 const void **host, struct snpu_rt2_shape *shape)
{
	if (!e || index >= e->nout)
		return -EINVAL;
	if (host)
		*host = e->out[index].ptr;
	if (shape)
		*shape = e->out[index].shape;
	return 0;
}

int snpu_rt2_exec_dump(const struct snpu_rt2_exec *e, char *buf, size_t len)
{
	if (!e || (!buf && len))
		return -EINVAL;
	return rt2_graph_dump(&e->g, buf, len);
}

/* ---- the pool (LIBSNPU_0.9) -------------------------------------------- */

int snpu_rt2_exec_set_pool_limit(struct snpu_rt2_exec *e, uint64_t bytes)
{
	if (!e)
		return -EINVAL;
	e->pool.limit = bytes;
	return 0;
}

int snpu_rt2_exec_pool_stats(const struct snpu_rt2_exec *e,
			     struct snpu_rt2_pool_stats *st)
{
	unsigned int i;

	if (!e || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->bytes = e->pool.bytes;
	st->peak_bytes = e->pool.peak;
	st->limit = e->pool.limit;
	st->dev_allocs = e->pool.dev_allocs;
	st->dev_frees = e->pool.dev_frees;
	st->recycles = e->pool.recycles;
	st->waits = e->pool.waits;
	st->relations = e->xd.nrels;
	for (i = 0; i < e->g.nnodes; i++)
		st->hold_frees += e->g.nodes[i].type == RT2_NT_FREE_HOLD;
	return 0;
}

/* ---- collectives (LIBSNPU_0.11) ---------------------------------------- */

/*
 * The communicator the executor's ALLREDUCE ops reduce over: a rank on
 * the executor's own device. Set between runs; NULL unsets it.
 */
int snpu_rt2_exec_set_comm(struct snpu_rt2_exec *e, struct snpu_comm *comm)
{
	if (!e)
		return -EINVAL;
	if (comm && !e->dev->sdev)
		return -EOPNOTSUPP;
	if (comm && snpu_comm_device(comm) != e->dev->sdev)
		return -EINVAL;
	e->comm = comm;
	return 0;
}

/* ---- custom operators --------------------------------------------------- */

int snpu_rt2_kctx_attached_stream(struct snpu_rt2_kctx *ctx, const char *key,
				  uint32_t *stream)
{
	struct snpu_rt2_dev *d;

	if (!ctx || !key || !stream)
		return -EINVAL;
	d = ctx->exec->dev;
	return d->ops->attached_stream(d, key, stream);
}

int snpu_rt2_kctx_submit(struct snpu_rt2_kctx *ctx,
			 const struct snpu_task *tasks, unsigned int count)
{
	struct snpu_rt2_dev *d;

	if (!ctx || !tasks || !count)
		return -EINVAL;
	d = ctx->exec->dev;
	return d->ops->submit(d, &ctx->exec->dq, tasks, count);
}

/* @waiter waits for what was queued on @signaler so far, with @ev. */
static int rt2_kctx_order(struct snpu_rt2_kctx *ctx, uint32_t ev,
			  uint32_t signaler, uint32_t waiter)
{
	struct snpu_rt2_dev *d = ctx->exec->dev;
	struct snpu_task t[2];

	snpu_prep_event_record(&t[0], signaler, ev);
	snpu_prep_stream_wait(&t[1], waiter, ev);
	return d->ops->submit(d, &ctx->exec->dq, t, 2);
}

int snpu_rt2_kctx_fork(struct snpu_rt2_kctx *ctx, uint32_t stream)
{
	if (!ctx)
		return -EINVAL;
	return rt2_kctx_order(ctx, ctx->exec->events[2 * ctx->node->op],
			      ctx->exec->dq.stream, stream);
}

int snpu_rt2_kctx_join(struct snpu_rt2_kctx *ctx, uint32_t stream)
{
	if (!ctx)
		return -EINVAL;
	return rt2_kctx_order(ctx, ctx->exec->events[2 * ctx->node->op + 1],
			      stream, ctx->exec->dq.stream);
}
