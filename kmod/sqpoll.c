// SPDX-License-Identifier: GPL-2.0
/*
 * snpu SQ poller (SNPU_RING_SQPOLL): a kernel thread per ring that takes
 * the process's SQEs as they come, so that a process submits without a
 * system call. It spins on an empty SQ for the ring's idle time, then
 * sets SNPU_SQ_NEED_WAKEUP and sleeps until ENTER wakes it; out of task
 * slots it sleeps until one frees. It moves completions parked in a full
 * CQ in as the process reaps. A poller is a kernel thread outside the
 * user's cgroup: an unprivileged user runs a bounded number per device,
 * each with a bounded idle spin, and what it allocates for the process
 * (graph instances, job pool chunks) is charged to the memory cgroup of
 * the context's opener, as the same SQEs entered by the process would be.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/xarray.h>

#include "snpu.h"

/*
 * Without CAP_SYS_NICE a user runs at most this many pollers per device,
 * each spinning at most this long on an empty SQ (longer idle_ms is
 * clamped): a poller is a kernel thread outside the user's cgroup.
 */
#define SNPU_RING_USER_POLLERS	4
#define SNPU_RING_USER_IDLE_MS	100

/* (user, device) -> number of pollers running, as an xarray value. */
static DEFINE_MUTEX(snpu_pollers_lock);
static DEFINE_XARRAY(snpu_pollers);

/* Count a new poller of the calling user on @sdev. */
static int snpu_poller_charge(struct snpu_device *sdev, unsigned long *keyp)
{
	unsigned long key, n;
	void *entry;
	int ret = 0;

	key = (unsigned long)__kuid_val(current_uid()) * SNPU_MAX_DEVICES +
	      sdev->index;
	mutex_lock(&snpu_pollers_lock);
	entry = xa_load(&snpu_pollers, key);
	n = entry ? xa_to_value(entry) : 0;
	if (n >= SNPU_RING_USER_POLLERS && !capable(CAP_SYS_NICE))
		ret = -EAGAIN;
	else
		ret = xa_err(xa_store(&snpu_pollers, key, xa_mk_value(n + 1),
				      GFP_KERNEL_ACCOUNT));
	mutex_unlock(&snpu_pollers_lock);
	*keyp = key;
	return ret;
}

static void snpu_poller_uncharge(unsigned long key)
{
	unsigned long n;

	mutex_lock(&snpu_pollers_lock);
	n = xa_to_value(xa_load(&snpu_pollers, key));
	if (n > 1)
		xa_store(&snpu_pollers, key, xa_mk_value(n - 1), GFP_KERNEL);
	else
		xa_erase(&snpu_pollers, key);
	mutex_unlock(&snpu_pollers_lock);
}

static bool snpu_sq_pending(struct snpu_ring *ring)
{
	/* Pairs with the process's release of the tail after the entries. */
	return smp_load_acquire(ring->sq_tail_user) != ring->sq_head;
}

/* SQEs to take: pending, and the process is not locked for snapshot. */
static bool snpu_poller_work(struct snpu_context *ctx)
{
	return snpu_sq_pending(ctx->ring) &&
	       READ_ONCE(ctx->proc->state) == SNPU_STATE_RUNNING;
}

static bool snpu_poller_wake(struct snpu_context *ctx)
{
	return snpu_poller_work(ctx) || READ_ONCE(ctx->ring->kicked) ||
	       kthread_should_stop();
}

/**
 * snpu_ring_kick() - make the kernel poller look at its SQ again
 * @ctx: the context; nothing happens without a poller
 *
 * Called when the process is unlocked after a snapshot.
 */
void snpu_ring_kick(struct snpu_context *ctx)
{
	struct snpu_ring *ring;

	mutex_lock(&ctx->lock);
	ring = ctx->ring;
	if (ring && ring->poller) {
		WRITE_ONCE(ring->kicked, true);
		wake_up(&ring->poll_wq);
	}
	mutex_unlock(&ctx->lock);
}

/*
 * Task slots ran out with SQEs left: sleep until a slot frees (@gen was
 * read before the consumption that found none), ENTER kicks, or stop.
 *
 * Completions parked in a full CQ hold task slots, and a process may reap
 * the CQ without a system call: the poller moves in what there is room
 * for itself, and while some stay parked it looks at the CQ again every
 * jiffy instead of sleeping until an ENTER.
 */
static void snpu_poller_wait_slot(struct snpu_context *ctx,
				  struct snpu_ring *ring, u32 gen)
{
	bool freed, parked;

	parked = !snpu_ring_flush(ctx, ring);
	spin_lock(&ctx->sched_lock);
	freed = ring->slot_gen != gen;
	if (!freed)
		ring->slot_wait = true;
	spin_unlock(&ctx->sched_lock);
	if (freed)
		return;
	wait_event_interruptible_timeout(ring->poll_wq,
					 READ_ONCE(ring->slot_gen) != gen ||
					 READ_ONCE(ring->kicked) ||
					 kthread_should_stop(),
					 parked ? 1 : MAX_SCHEDULE_TIMEOUT);
	WRITE_ONCE(ring->kicked, false);
}

static int snpu_ring_poller(void *data)
{
	struct snpu_context *ctx = data;
	/* Published before this thread was woken. */
	struct snpu_ring *ring = smp_load_acquire(&ctx->ring);
	unsigned long idle = msecs_to_jiffies(ring->idle_ms);
	unsigned long last = jiffies;
	struct mem_cgroup *old_memcg;
	bool entered;
	u32 n, gen;

	/* Charge the opener's cgroup; the context holds it past kthread_stop(). */
	old_memcg = set_active_memcg(ctx->pool_memcg);
	while (!kthread_should_stop()) {
		bool pending = snpu_poller_work(ctx);

		/* Parked completions go in as the process reaps (no lock if none). */
		snpu_ring_flush(ctx, ring);
		n = 0;
		entered = false;
		/* A snapshot lock waits for a consumption in progress. */
		if (pending && snpu_proc_try_enter(ctx->proc)) {
			entered = true;
			/* Before the consumption: a slot freed after it counts. */
			gen = smp_load_acquire(&ring->slot_gen);
			mutex_lock(&ctx->lock);
			n = snpu_ring_consume_locked(ctx, U32_MAX);
			mutex_unlock(&ctx->lock);
			snpu_proc_exit(ctx->proc);
		}
		if (entered && !n) {
			/* SQEs but no task slot: no spinning, no timer. */
			snpu_poller_wait_slot(ctx, ring, gen);
			last = jiffies;
			continue;
		}
		if (n || !time_after(jiffies, last + idle)) {
			if (n)
				last = jiffies;
			cond_resched();
			continue;
		}
		/* Flag first, then look once more, then sleep. */
		smp_store_mb(*ring->sq_flags, SNPU_SQ_NEED_WAKEUP);
		if (!pending)
			wait_event_interruptible(ring->poll_wq,
						 snpu_poller_wake(ctx));
		else
			/* A snapshot transition in progress: look again later. */
			wait_event_interruptible_timeout(ring->poll_wq,
							 READ_ONCE(ring->kicked) ||
							 kthread_should_stop(),
							 idle);
		WRITE_ONCE(ring->kicked, false);
		WRITE_ONCE(*ring->sq_flags, 0);
		last = jiffies;
	}
	set_active_memcg(old_memcg);
	return 0;
}

/**
 * snpu_sqpoll_create() - create the SQ poller of a ring being set up
 * @ctx: the context, under its lock
 * @ring: the ring, not published yet
 *
 * The thread is created, not run: snpu_ring_setup wakes it once the ring
 * is published. Without CAP_SYS_NICE the poller's idle spin is clamped
 * and the user's pollers on the device are counted.
 *
 * Return: 0, -EAGAIN past the user's pollers, or the thread's error.
 */
int snpu_sqpoll_create(struct snpu_context *ctx, struct snpu_ring *ring)
{
	struct task_struct *t;
	int ret;

	lockdep_assert_held(&ctx->lock);
	if (!ns_capable_noaudit(&init_user_ns, CAP_SYS_NICE))
		ring->idle_ms = min(ring->idle_ms, SNPU_RING_USER_IDLE_MS);
	ret = snpu_poller_charge(ctx->sdev, &ring->poller_key);
	if (ret)
		return ret;
	t = kthread_create(snpu_ring_poller, ctx, "%s/sq", ctx->sdev->name);
	if (IS_ERR(t)) {
		snpu_poller_uncharge(ring->poller_key);
		return PTR_ERR(t);
	}
	ring->poller = t;
	return 0;
}

/**
 * snpu_ring_stop() - stop the poller of a closing context
 * @ctx: the context; no ioctl runs on it any more
 */
void snpu_ring_stop(struct snpu_context *ctx)
{
	struct snpu_ring *ring = ctx->ring;

	if (ring && ring->poller) {
		kthread_stop(ring->poller);
		snpu_poller_uncharge(ring->poller_key);
	}
}

/**
 * snpu_sqpoll_discard() - stop the poller of rings never published
 * @ring: rings a restore made and gives up; their poller never ran
 */
void snpu_sqpoll_discard(struct snpu_ring *ring)
{
	/* A thread stopped before its first wake-up never runs its function. */
	kthread_stop(ring->poller);
	snpu_poller_uncharge(ring->poller_key);
	ring->poller = NULL;
}
