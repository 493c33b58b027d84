// SPDX-License-Identifier: GPL-2.0
/*
 * snpu process snapshot: the per-process state RUNNING / LOCKED /
 * BACKED_UP, the gate every resource-modifying call passes, background
 * threads, and the read-only state page.
 *
 * A process is found by its thread group id in a registry shared by every
 * device; its state lives as long as one of its contexts.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/task.h>
#include <linux/user_namespace.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "snpu.h"
#include "trace.h"

/* Registry of processes with an open context, by snpu_proc.id. */
static DEFINE_MUTEX(snpu_procs_lock);	/* lookups, inserts, erases */
static DEFINE_XARRAY_ALLOC1(snpu_procs);

/**
 * struct snpu_bg - a registered background thread
 * @node: in snpu_proc.bg
 * @pid: the thread
 * @parked: it waits in BG_PARK or in the gate
 */
struct snpu_bg {
	struct list_head node;
	struct pid *pid;
	bool parked;
};

static void snpu_proc_release(struct kref *ref)
{
	struct snpu_proc *p = container_of(ref, struct snpu_proc, ref);
	struct snpu_bg *bg, *tmp;

	lockdep_assert_held(&snpu_procs_lock);
	xa_erase(&snpu_procs, p->id);
	mutex_unlock(&snpu_procs_lock);
	list_for_each_entry_safe(bg, tmp, &p->bg, node) {
		put_pid(bg->pid);
		kfree(bg);
	}
	put_pid(p->locker);
	put_pid(p->tgid);
	if (p->image)
		fput(p->image);
	if (p->spare)
		fput(p->spare);
	__free_page(p->state_page);
	mutex_destroy(&p->op_lock);
	mutex_destroy(&p->list_lock);
	kfree(p);
}

static void snpu_proc_put(struct snpu_proc *p)
{
	/* The release runs with the registry locked and unlocks it. */
	kref_put_mutex(&p->ref, snpu_proc_release, &snpu_procs_lock);
}

static struct snpu_proc *snpu_proc_new(void)
{
	/* Every open allocates one: at the cgroup's limit, open fails. */
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL;
	struct snpu_proc *p = kzalloc(sizeof(*p), gfp);

	if (!p)
		return NULL;
	p->state_page = alloc_page(gfp | __GFP_ZERO);
	if (!p->state_page) {
		kfree(p);
		return NULL;
	}
	kref_init(&p->ref);
	p->tgid = get_pid(task_tgid(current));
	p->nr = current->tgid;
	p->uid = current_uid();
	p->euid = current_euid();
	mutex_init(&p->op_lock);
	mutex_init(&p->list_lock);
	INIT_LIST_HEAD(&p->contexts);
	spin_lock_init(&p->lock);
	INIT_LIST_HEAD(&p->bg);
	init_waitqueue_head(&p->wq);
	return p;
}

/**
 * snpu_proc_attach() - join a new context to its process's state
 * @ctx: the context being opened by the current process
 *
 * Return: 0, or -ENOMEM.
 */
int snpu_proc_attach(struct snpu_context *ctx)
{
	struct snpu_proc *p, *fresh;
	unsigned long id;
	int ret = 0;

	/* Allocated up front: the registry lock is not held while allocating. */
	fresh = snpu_proc_new();
	if (!fresh)
		return -ENOMEM;

	mutex_lock(&snpu_procs_lock);
	xa_for_each(&snpu_procs, id, p)
		if (p->tgid == task_tgid(current))
			break;
	if (p) {
		kref_get(&p->ref);
	} else {
		ret = xa_alloc(&snpu_procs, &fresh->id, fresh, xa_limit_32b,
			       GFP_KERNEL);
		if (!ret) {
			p = fresh;
			fresh = NULL;
		}
	}
	mutex_unlock(&snpu_procs_lock);
	if (fresh) {
		put_pid(fresh->tgid);
		__free_page(fresh->state_page);
		mutex_destroy(&fresh->op_lock);
		mutex_destroy(&fresh->list_lock);
		kfree(fresh);
	}
	if (ret)
		return ret;

	mutex_lock(&p->list_lock);
	list_add_tail(&ctx->proc_node, &p->contexts);
	spin_lock(&p->lock);
	p->ncontexts++;
	spin_unlock(&p->lock);
	mutex_unlock(&p->list_lock);
	ctx->proc = p;
	return 0;
}

/* Publish the state to the state page and wake everyone who waits. */
static void snpu_proc_set_locked(struct snpu_proc *p, u32 state)
{
	struct snpu_state_page *sp = page_address(p->state_page);

	lockdep_assert_held(&p->lock);
	p->state = state;
	p->seq++;
	WRITE_ONCE(sp->seq, p->seq);
	/* Pairs with the acquire load of the library's cheap check. */
	smp_store_release(&sp->state, state);
	if (state == SNPU_STATE_RUNNING) {
		put_pid(p->locker);
		p->locker = NULL;
	}
	wake_up_all(&p->wq);
}

/* Let the process's kernel pollers look at their SQs again. */
static void snpu_proc_kick_pollers(struct snpu_proc *p)
{
	struct snpu_context *ctx;

	lockdep_assert_held(&p->op_lock);
	mutex_lock(&p->list_lock);
	list_for_each_entry(ctx, &p->contexts, proc_node)
		snpu_ring_kick(ctx);
	mutex_unlock(&p->list_lock);
}

/* Back to RUNNING from any state; returns the state left. */
static u32 snpu_proc_unlock_op_locked(struct snpu_proc *p)
{
	u32 old;

	lockdep_assert_held(&p->op_lock);
	spin_lock(&p->lock);
	old = p->state;
	if (old != SNPU_STATE_RUNNING)
		snpu_proc_set_locked(p, SNPU_STATE_RUNNING);
	spin_unlock(&p->lock);
	if (p->image) {
		fput(p->image);
		p->image = NULL;
		p->image_bytes = 0;
	}
	if (p->spare) {
		fput(p->spare);
		p->spare = NULL;
	}
	snpu_proc_kick_pollers(p);
	return old;
}

/**
 * snpu_proc_detach() - a context of the process is closing
 * @ctx: the context
 *
 * The last context of a locked process unlocks it: a lock never outlives
 * the files it was taken through.
 */
void snpu_proc_detach(struct snpu_context *ctx)
{
	struct snpu_proc *p = ctx->proc;
	u32 old = SNPU_STATE_RUNNING;
	bool last;

	mutex_lock(&p->list_lock);
	list_del(&ctx->proc_node);
	spin_lock(&p->lock);
	p->ncontexts--;
	spin_unlock(&p->lock);
	last = list_empty(&p->contexts);
	mutex_unlock(&p->list_lock);

	/* No call is in flight on a process with no file: no wait here. */
	if (last) {
		mutex_lock(&p->op_lock);
		old = snpu_proc_unlock_op_locked(p);
		if (old != SNPU_STATE_RUNNING) {
			trace_snpu_snapshot_transition(ctx->sdev->index, p->nr,
						       p->seq, old,
						       SNPU_STATE_RUNNING, 0);
			snpu_nl_transition(ctx->sdev->index, p->nr, p->seq, old,
					   SNPU_STATE_RUNNING, 0);
		}
		mutex_unlock(&p->op_lock);
	}
	ctx->proc = NULL;
	snpu_proc_put(p);
}

static struct snpu_bg *snpu_bg_find_locked(struct snpu_proc *p,
					   struct pid *pid)
{
	struct snpu_bg *bg;

	lockdep_assert_held(&p->lock);
	list_for_each_entry(bg, &p->bg, node)
		if (bg->pid == pid)
			return bg;
	return NULL;
}

/*
 * Forget the background threads that exited without unregistering: a
 * process registering from short-lived threads does not grow the list.
 * A thread waiting in the gate is alive, so the entry it holds stays.
 */
static void snpu_bg_prune_locked(struct snpu_proc *p)
{
	struct snpu_bg *bg, *tmp;

	lockdep_assert_held(&p->lock);
	rcu_read_lock();
	list_for_each_entry_safe(bg, tmp, &p->bg, node) {
		if (pid_task(bg->pid, PIDTYPE_PID))
			continue;
		list_del(&bg->node);
		p->nbg--;
		put_pid(bg->pid);
		kfree(bg);
	}
	rcu_read_unlock();
}

/*
 * Wait for RUNNING; a registered background thread counts as parked
 * meanwhile. Called and returns with @p->lock held.
 */
static int snpu_proc_wait_running_locked(struct snpu_proc *p)
	__must_hold(&p->lock)
{
	struct snpu_bg *bg = snpu_bg_find_locked(p, task_pid(current));
	int ret;

	if (bg) {
		bg->parked = true;
		wake_up_all(&p->wq);
	}
	spin_unlock(&p->lock);
	ret = wait_event_interruptible(p->wq, READ_ONCE(p->state) ==
				       SNPU_STATE_RUNNING);
	spin_lock(&p->lock);
	/* Only the thread itself unregisters: @bg is still ours. */
	if (bg)
		bg->parked = false;
	return ret;
}

/**
 * snpu_proc_enter() - the gate of a resource-modifying call
 * @p: the caller's process state
 *
 * Waits (interruptibly) while the process is locked; counts the call as
 * in progress until snpu_proc_exit().
 *
 * Return: 0, -EDEADLK for the thread that locked the process, or
 * -ERESTARTSYS on a signal.
 */
int snpu_proc_enter(struct snpu_proc *p)
{
	int ret = 0;

	spin_lock(&p->lock);
	while (p->state != SNPU_STATE_RUNNING) {
		if (p->locker == task_pid(current)) {
			ret = -EDEADLK;
			break;
		}
		ret = snpu_proc_wait_running_locked(p);
		if (ret)
			break;
	}
	if (!ret)
		p->active++;
	spin_unlock(&p->lock);
	return ret;
}

/**
 * snpu_proc_try_enter() - the gate, for a caller that must not wait
 * @p: the process state
 *
 * Return: true when the process is RUNNING; then snpu_proc_exit() follows.
 */
bool snpu_proc_try_enter(struct snpu_proc *p)
{
	bool ok;

	spin_lock(&p->lock);
	ok = p->state == SNPU_STATE_RUNNING;
	if (ok)
		p->active++;
	spin_unlock(&p->lock);
	return ok;
}

/**
 * snpu_proc_exit() - a resource-modifying call is done
 * @p: the process state
 */
void snpu_proc_exit(struct snpu_proc *p)
{
	spin_lock(&p->lock);
	if (!--p->active)
		wake_up_all(&p->wq);
	spin_unlock(&p->lock);
}

/* LOCK may return: no modifying call in progress, every live bg parked. */
static bool snpu_proc_quiet(struct snpu_proc *p)
{
	struct snpu_bg *bg;
	bool quiet;

	spin_lock(&p->lock);
	quiet = !p->active;
	snpu_bg_prune_locked(p);
	rcu_read_lock();
	list_for_each_entry(bg, &p->bg, node) {
		/*
		 * A thread that died without unregistering counts as parked,
		 * and so does the locker, which is not going to park.
		 */
		if (!bg->parked && bg->pid != p->locker &&
		    pid_task(bg->pid, PIDTYPE_PID))
			quiet = false;
	}
	rcu_read_unlock();
	spin_unlock(&p->lock);
	return quiet;
}

/*
 * How often a LOCK waiting for background threads looks for one that
 * exited without unregistering: nothing wakes it when a thread dies.
 * Parking, unregistering and the end of modifying calls wake it at once.
 */
#define SNPU_LOCK_SWEEP_NS	(100 * NSEC_PER_MSEC)

/* Wait for snpu_proc_quiet(): 0, -ETIMEDOUT or -ERESTARTSYS. */
static int snpu_proc_wait_quiet(struct snpu_proc *p, s64 timeout_ns)
{
	u64 deadline = ktime_get_ns() + timeout_ns;
	long ret;

	for (;;) {
		s64 slice = SNPU_LOCK_SWEEP_NS;

		if (timeout_ns >= 0) {
			s64 left = deadline - ktime_get_ns();

			if (left <= 0)
				return snpu_proc_quiet(p) ? 0 : -ETIMEDOUT;
			slice = min(slice, left);
		}
		ret = wait_event_interruptible_hrtimeout(p->wq,
							 snpu_proc_quiet(p),
							 ns_to_ktime(slice));
		if (ret != -ETIME)
			return ret;
	}
}

static int snpu_snapshot_lock(struct snpu_proc *p, s64 timeout_ns)
{
	long ret;

	spin_lock(&p->lock);
	if (p->state != SNPU_STATE_RUNNING) {
		spin_unlock(&p->lock);
		return -EBADFD;
	}
	p->locker = get_pid(task_pid(current));
	snpu_proc_set_locked(p, SNPU_STATE_LOCKED);
	spin_unlock(&p->lock);

	ret = snpu_proc_wait_quiet(p, timeout_ns);
	if (!ret)
		return 0;

	/* Roll back: blocked calls and parked threads go on. */
	spin_lock(&p->lock);
	snpu_proc_set_locked(p, SNPU_STATE_RUNNING);
	spin_unlock(&p->lock);
	snpu_proc_kick_pollers(p);
	/* A relative timeout is not restarted. */
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

static int snpu_snapshot_backup(struct snpu_proc *p)
{
	struct file *image;
	u64 bytes;
	int ret;

	if (READ_ONCE(p->state) == SNPU_STATE_RUNNING)
		return -EBADFD;
	/* Written over the spare's pages: no allocation when sizes repeat. */
	ret = snpu_image_backup(p, p->spare, &image, &bytes);
	if (image == p->spare)
		p->spare = NULL;
	if (ret)
		return ret;
	p->spare = p->image;
	p->image = image;
	p->image_bytes = bytes;
	spin_lock(&p->lock);
	if (p->state != SNPU_STATE_BACKED_UP)
		snpu_proc_set_locked(p, SNPU_STATE_BACKED_UP);
	spin_unlock(&p->lock);
	return 0;
}

static int snpu_snapshot_restore(struct snpu_proc *p)
{
	int ret;

	if (READ_ONCE(p->state) != SNPU_STATE_BACKED_UP)
		return -EBADFD;
	ret = snpu_image_restore(p, p->image);
	if (ret)
		return ret;
	spin_lock(&p->lock);
	snpu_proc_set_locked(p, SNPU_STATE_LOCKED);
	spin_unlock(&p->lock);
	return 0;
}

/*
 * Snapshot transitions and background threads act on the process that
 * opened the file: only its own threads may make them. A forked child or
 * a process that received the file over a socket gets EPERM; queries
 * (SNAPSHOT_STATE) stay open to every holder of the file, as the state
 * page does.
 */
static bool snpu_proc_is_caller(const struct snpu_proc *p)
{
	return p->tgid == task_tgid(current);
}

static void snpu_snapshot_fill(struct snpu_proc *p, struct snpu_snapshot *s)
{
	spin_lock(&p->lock);
	s->state = p->state;
	s->bg_threads = p->nbg;
	spin_unlock(&p->lock);
	/* Without op_lock for queries and background-thread calls. */
	s->image_bytes = READ_ONCE(p->image_bytes);
	s->pid = pid_vnr(p->tgid);
}

static bool snpu_snapshot_args_ok(const struct snpu_snapshot *s,
				  bool timeout)
{
	/* @state, @bg_threads, @image_bytes and @pid are outputs. */
	return snpu_zero(s->reserved, sizeof(s->reserved)) && !s->pad &&
	       (timeout ? s->timeout_ns >= -1 : !s->timeout_ns);
}

/*
 * One snapshot transition, under the process's op_lock; counted and timed
 * in the device's statistics as @which.
 */
static int snpu_ioc_snapshot(struct snpu_context *ctx, union snpu_ioc_arg *arg,
			     int (*op)(struct snpu_proc *p,
				       struct snpu_snapshot *s),
			     enum snpu_snap_op which)
{
	struct snpu_snap_stats *st = &ctx->sdev->snap;
	struct snpu_snapshot *s = &arg->snapshot;
	struct snpu_proc *p = ctx->proc;
	u64 start;
	u32 old;
	int ret;

	if (!snpu_proc_is_caller(p))
		return -EPERM;
	/* A transition may wait long (LOCK, BACKUP): waiting for it too. */
	if (mutex_lock_interruptible(&p->op_lock))
		return -EINTR;
	old = p->state;
	start = ktime_get_ns();
	ret = op(p, s);
	atomic64_add(ktime_get_ns() - start, &st->ns[which]);
	atomic64_inc(&st->count[which]);
	if (ret)
		atomic64_inc(&st->failed[which]);
	snpu_snapshot_fill(p, s);
	/* Every attempted transition is an event, in order: failures too. */
	trace_snpu_snapshot_transition(ctx->sdev->index, p->nr, p->seq, old,
				       s->state, ret);
	snpu_nl_transition(ctx->sdev->index, p->nr, p->seq, old, s->state, ret);
	mutex_unlock(&p->op_lock);
	return ret;
}

static int snpu_op_lock(struct snpu_proc *p, struct snpu_snapshot *s)
{
	return snpu_snapshot_lock(p, s->timeout_ns);
}

static int snpu_op_backup(struct snpu_proc *p, struct snpu_snapshot *s)
{
	return snpu_snapshot_backup(p);
}

static int snpu_op_restore(struct snpu_proc *p, struct snpu_snapshot *s)
{
	return snpu_snapshot_restore(p);
}

static int snpu_op_unlock(struct snpu_proc *p, struct snpu_snapshot *s)
{
	if (READ_ONCE(p->state) == SNPU_STATE_RUNNING)
		return -EBADFD;
	snpu_proc_unlock_op_locked(p);
	return 0;
}

int snpu_ioc_snapshot_lock(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	if (!snpu_snapshot_args_ok(&arg->snapshot, true))
		return -EINVAL;
	return snpu_ioc_snapshot(ctx, arg, snpu_op_lock, SNPU_SNAP_LOCK);
}

int snpu_ioc_snapshot_backup(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	if (!snpu_snapshot_args_ok(&arg->snapshot, false))
		return -EINVAL;
	return snpu_ioc_snapshot(ctx, arg, snpu_op_backup, SNPU_SNAP_BACKUP);
}

int snpu_ioc_snapshot_restore(struct snpu_context *ctx,
			      union snpu_ioc_arg *arg)
{
	if (!snpu_snapshot_args_ok(&arg->snapshot, false))
		return -EINVAL;
	return snpu_ioc_snapshot(ctx, arg, snpu_op_restore,
				 SNPU_SNAP_RESTORE);
}

int snpu_ioc_snapshot_unlock(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	if (!snpu_snapshot_args_ok(&arg->snapshot, false))
		return -EINVAL;
	return snpu_ioc_snapshot(ctx, arg, snpu_op_unlock, SNPU_SNAP_UNLOCK);
}

int snpu_ioc_snapshot_state(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_snapshot *s = &arg->snapshot;
	struct snpu_proc *p = ctx->proc;

	if (!snpu_snapshot_args_ok(s, false))
		return -EINVAL;
	/* Not under op_lock: a query never waits for a transition. */
	snpu_snapshot_fill(p, s);
	return 0;
}

int snpu_ioc_bg_register(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_snapshot *s = &arg->snapshot;
	struct snpu_proc *p = ctx->proc;
	struct snpu_bg *bg;
	int ret = 0;

	if (!snpu_snapshot_args_ok(s, false))
		return -EINVAL;
	if (!snpu_proc_is_caller(p))
		return -EPERM;
	bg = kzalloc(sizeof(*bg), GFP_KERNEL_ACCOUNT);
	if (!bg)
		return -ENOMEM;
	spin_lock(&p->lock);
	snpu_bg_prune_locked(p);
	if (snpu_bg_find_locked(p, task_pid(current))) {
		ret = -EEXIST;
	} else if (p->nbg >= SNPU_BG_MAX) {
		ret = -ENOSPC;
	} else {
		bg->pid = get_pid(task_pid(current));
		list_add_tail(&bg->node, &p->bg);
		p->nbg++;
		bg = NULL;
	}
	spin_unlock(&p->lock);
	kfree(bg);
	snpu_snapshot_fill(p, s);
	return ret;
}

int snpu_ioc_bg_unregister(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_snapshot *s = &arg->snapshot;
	struct snpu_proc *p = ctx->proc;
	struct snpu_bg *bg;

	if (!snpu_snapshot_args_ok(s, false))
		return -EINVAL;
	if (!snpu_proc_is_caller(p))
		return -EPERM;
	spin_lock(&p->lock);
	bg = snpu_bg_find_locked(p, task_pid(current));
	if (bg) {
		list_del(&bg->node);
		p->nbg--;
		/* LOCK may have waited for this thread. */
		wake_up_all(&p->wq);
	}
	spin_unlock(&p->lock);
	if (!bg)
		return -ENOENT;
	put_pid(bg->pid);
	kfree(bg);
	snpu_snapshot_fill(p, s);
	return 0;
}

int snpu_ioc_bg_park(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_snapshot *s = &arg->snapshot;
	struct snpu_proc *p = ctx->proc;
	int ret = 0;

	if (!snpu_snapshot_args_ok(s, false))
		return -EINVAL;
	if (!snpu_proc_is_caller(p))
		return -EPERM;
	spin_lock(&p->lock);
	if (!snpu_bg_find_locked(p, task_pid(current)))
		ret = -ENOENT;
	else if (p->state != SNPU_STATE_RUNNING)
		ret = snpu_proc_wait_running_locked(p);
	spin_unlock(&p->lock);
	if (ret)
		return ret;
	snpu_snapshot_fill(p, s);
	return 0;
}

/* The page lives as long as the process, which the file's context holds. */
static vm_fault_t snpu_state_vm_fault(struct vm_fault *vmf)
{
	struct snpu_proc *p = vmf->vma->vm_private_data;

	if (vmf->pgoff != SNPU_STATE_MMAP_OFFSET >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	get_page(p->state_page);
	vmf->page = p->state_page;
	return 0;
}

static const struct vm_operations_struct snpu_state_vm_ops = {
	.fault = snpu_state_vm_fault,
};

/**
 * snpu_state_mmap() - map the process's state page, read-only
 * @ctx: the context
 * @vma: one page at SNPU_STATE_MMAP_OFFSET
 *
 * Return: 0, -EINVAL for another size, -EPERM for a writable mapping.
 */
int snpu_state_mmap(struct snpu_context *ctx, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = ctx->proc;
	vma->vm_ops = &snpu_state_vm_ops;
	return 0;
}

/**
 * snpu_proc_info_next() - describe the next process of the registry
 * @cursor: where to look from, 0 to start; advanced past the process
 * @ns: the pid namespace to give the process's id in
 * @info: filled in
 *
 * Never waits for a snapshot transition in progress.
 *
 * Return: 0, or -ENOENT when no process with an open context is left.
 */
int snpu_proc_info_next(unsigned long *cursor, struct pid_namespace *ns,
			struct snpu_proc_info *info)
{
	struct snpu_proc *p;

	mutex_lock(&snpu_procs_lock);
	p = xa_find(&snpu_procs, cursor, ULONG_MAX, XA_PRESENT);
	if (p) {
		memset(info, 0, sizeof(*info));
		info->nr = pid_nr_ns(p->tgid, ns);
		info->uid = p->uid;
		info->euid = p->euid;
		info->image_bytes = READ_ONCE(p->image_bytes);
		spin_lock(&p->lock);
		info->state = p->state;
		info->seq = p->seq;
		info->bg_threads = p->nbg;
		info->contexts = p->ncontexts;
		spin_unlock(&p->lock);
		(*cursor)++;
	}
	mutex_unlock(&snpu_procs_lock);
	return p ? 0 : -ENOENT;
}

/*
 * The process a pid names in the caller's pid namespace, with a
 * reference; NULL when it has no snpu file open.
 */
static struct snpu_proc *snpu_proc_find(pid_t nr)
{
	struct snpu_proc *p = NULL, *it;
	unsigned long id;
	struct pid *pid;

	pid = find_get_pid(nr);
	if (!pid)
		return NULL;
	mutex_lock(&snpu_procs_lock);
	xa_for_each(&snpu_procs, id, it) {
		if (it->tgid == pid) {
			kref_get(&it->ref);
			p = it;
			break;
		}
	}
	mutex_unlock(&snpu_procs_lock);
	put_pid(pid);
	return p;
}

/*
 * May the caller act on @task as a debugger could? ptrace_may_access()
 * is not exported to modules, so this is its rule for
 * PTRACE_MODE_ATTACH_REALCREDS without the LSM hook: the same thread
 * group; or the caller's real uid and gid are every uid and gid of the
 * target, and the target is dumpable; or CAP_SYS_PTRACE over the target's
 * user namespace (and its mm's, for a non-dumpable target).
 */
static bool snpu_may_ptrace(struct task_struct *task)
{
	const struct cred *cred = current_cred(), *tcred;
	struct user_namespace *tns;
	bool ok;

	if (same_thread_group(task, current))
		return true;
	rcu_read_lock();
	tcred = __task_cred(task);
	tns = get_user_ns(tcred->user_ns);
	ok = uid_eq(cred->uid, tcred->euid) && uid_eq(cred->uid, tcred->suid) &&
	     uid_eq(cred->uid, tcred->uid) && gid_eq(cred->gid, tcred->egid) &&
	     gid_eq(cred->gid, tcred->sgid) && gid_eq(cred->gid, tcred->gid);
	if (!ok)
		ok = ns_capable(tns, CAP_SYS_PTRACE);
	rcu_read_unlock();
	/* Not dumpable (setuid, PR_SET_DUMPABLE 0): CAP_SYS_PTRACE only. */
	if (ok)
		ok = snpu_task_dumpable_ok(task, tns);
	put_user_ns(tns);
	return ok;
}

static bool snpu_ckpt_proc_args_ok(const struct snpu_ckpt_proc *a)
{
	if (!snpu_zero(a->reserved, sizeof(a->reserved)) || a->pad ||
	    a->op > SNPU_CKPT_OP_UNLOCK)
		return false;
	if (a->op == SNPU_CKPT_OP_LOCK ? a->timeout_ns < -1 : a->timeout_ns)
		return false;
	return a->op == SNPU_CKPT_OP_CHECKPOINT || !a->fd;
}

static int snpu_ckpt_proc_op(struct snpu_proc *p, struct snpu_ckpt_proc *a)
{
	struct file *f;
	int ret;

	lockdep_assert_held(&p->op_lock);
	switch (a->op) {
	case SNPU_CKPT_OP_LOCK:
		return snpu_snapshot_lock(p, a->timeout_ns);
	case SNPU_CKPT_OP_CHECKPOINT:
		if (READ_ONCE(p->state) == SNPU_STATE_RUNNING)
			return -EBADFD;
		f = fget(a->fd);
		if (!f)
			return -EBADF;
		ret = snpu_ckpt_write(p, f, &a->bytes, &a->contexts);
		fput(f);
		return ret;
	case SNPU_CKPT_OP_UNLOCK:
		if (READ_ONCE(p->state) == SNPU_STATE_RUNNING)
			return -EBADFD;
		snpu_proc_unlock_op_locked(p);
		return 0;
	}
	return 0;
}

/**
 * snpu_ioc_ckpt_proc() - SNPU_IOC_CKPT_PROC: state, lock, checkpoint and
 * unlock of the caller's process or of a process it may ptrace
 * @ctx: the caller's file (any device)
 * @arg: struct snpu_ckpt_proc
 *
 * Return: 0; -EINVAL for bad arguments; -ESRCH for a pid with no snpu
 * file; -EPERM for a process the caller may not ptrace; -EBADFD for a
 * step the state does not allow; errors of LOCK and of the checkpoint.
 */
int snpu_ioc_ckpt_proc(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_ckpt_proc *a = &arg->ckpt_proc;
	struct task_struct *task;
	struct snpu_proc *p;
	u32 old;
	int ret;

	if (!snpu_ckpt_proc_args_ok(a))
		return -EINVAL;
	p = snpu_proc_find(a->pid ?: task_tgid_vnr(current));
	if (!p)
		return -ESRCH;
	task = get_pid_task(p->tgid, PIDTYPE_PID);
	ret = task ? 0 : -ESRCH;
	if (task && !snpu_may_ptrace(task))
		ret = -EPERM;
	if (task)
		put_task_struct(task);
	if (ret)
		goto out;
	if (mutex_lock_interruptible(&p->op_lock)) {
		ret = -EINTR;
		goto out;
	}
	old = p->state;
	a->bytes = 0;
	ret = snpu_ckpt_proc_op(p, a);
	spin_lock(&p->lock);
	a->state = p->state;
	if (a->op != SNPU_CKPT_OP_CHECKPOINT || ret)
		a->contexts = p->ncontexts;
	spin_unlock(&p->lock);
	if (a->op == SNPU_CKPT_OP_LOCK || a->op == SNPU_CKPT_OP_UNLOCK) {
		trace_snpu_snapshot_transition(ctx->sdev->index, p->nr, p->seq,
					       old, a->state, ret);
		snpu_nl_transition(ctx->sdev->index, p->nr, p->seq, old,
				   a->state, ret);
	}
	mutex_unlock(&p->op_lock);
out:
	snpu_proc_put(p);
	return ret;
}
