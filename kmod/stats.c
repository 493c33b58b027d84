// SPDX-License-Identifier: GPL-2.0
/*
 * snpu statistics: what a device did and what each context uses, for
 * debugfs (<debugfs>/snpu/snpuN/stats and .../contexts) and the generic
 * netlink family (SNPU_CMD_STATS, kmod/netlink.c).
 *
 * Nothing here adds a lock round trip to the task path: task and
 * completion counts are per-CPU, the run-queue depth is kept under the
 * ready_lock the scheduler holds anyway, a core's busy time is written by
 * that core only, a context's completed tasks under the sched_lock its
 * completion holds. Readers sum and take the locks the figures live under.
 */
#include <linux/debugfs.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/seq_file.h>

#include "snpu.h"

/**
 * snpu_stats_read() - a device's statistics now
 * @sdev: the device
 * @st: filled in
 *
 * The per-CPU counters are summed without a lock: each is exact, their
 * sum a moment's view.
 */
void snpu_stats_read(struct snpu_device *sdev, struct snpu_dev_stats *st)
{
	unsigned int cpu, i;

	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu) {
		const struct snpu_dev_pcpu *pc = per_cpu_ptr(sdev->pcpu, cpu);

		st->tasks += READ_ONCE(pc->tasks);
		st->failed += READ_ONCE(pc->failed);
		st->cqes += READ_ONCE(pc->cqes);
		st->overflows += READ_ONCE(pc->overflows);
	}
	spin_lock(&sdev->ready_lock);
	st->ready_depth = sdev->ready_depth;
	st->ready_max = sdev->ready_max;
	spin_unlock(&sdev->ready_lock);
	for (i = 0; i < sdev->cores; i++) {
		st->busy_ns += READ_ONCE(sdev->core[i].busy_ns);
		st->blocks += READ_ONCE(sdev->core[i].blocks);
	}
	for (i = 0; i < SNPU_SNAP_NR; i++) {
		st->snap_count += atomic64_read(&sdev->snap.count[i]);
		st->snap_failed += atomic64_read(&sdev->snap.failed[i]);
		st->snap_ns += atomic64_read(&sdev->snap.ns[i]);
	}
	st->graph_launches = atomic64_read(&sdev->gstats.launches);
	st->graph_visits = atomic64_read(&sdev->gstats.hazard_visits);
}

/*
 * A context's usage against its quotas, its process by its pid in @ns;
 * under the device's ctx_lock, which keeps the context's process (a
 * context leaves the list before it leaves its process). Takes no lock
 * of the context: opens and closes of every user wait for ctx_lock, so
 * it is never held while waiting for one context (snpu_ctx_usage()).
 */
static void snpu_stats_ctx(struct snpu_context *ctx, struct pid_namespace *ns,
			   struct snpu_ctx_stats *cs)
{
	struct snpu_ctx_query *q = &cs->q;
	struct snpu_proc *p = ctx->proc;

	lockdep_assert_held(&ctx->sdev->ctx_lock);
	memset(cs, 0, sizeof(*cs));
	cs->id = ctx->id;
	cs->pid = pid_nr_ns(p->tgid, ns);
	cs->uid = p->uid;
	cs->euid = p->euid;
	cs->state = READ_ONCE(p->state);
	cs->tasks_done = snpu_ctx_usage(ctx, q);
}

/**
 * snpu_stats_ctx_next() - the next context of a device, for a dump
 * @sdev: the device
 * @cursor: in: the id of the last context reported, 0 at first; out: the
 *          id of the context reported
 * @ns: the pid namespace the process's pid is given in (0 when the
 *      process has none there)
 * @cs: filled in
 *
 * Contexts are on the device's list in the order of their ids, so a dump
 * resumes after the last id it reported, whatever closed meanwhile.
 *
 * Return: true, or false when no context with a larger id is open.
 */
bool snpu_stats_ctx_next(struct snpu_device *sdev, u64 *cursor,
			 struct pid_namespace *ns, struct snpu_ctx_stats *cs)
{
	struct snpu_context *ctx;
	bool found = false;

	mutex_lock(&sdev->ctx_lock);
	list_for_each_entry(ctx, &sdev->ctx_list, dev_node) {
		if (ctx->id <= *cursor)
			continue;
		snpu_stats_ctx(ctx, ns, cs);
		*cursor = ctx->id;
		found = true;
		break;
	}
	mutex_unlock(&sdev->ctx_lock);
	return found;
}

/**
 * snpu_ctx_busy_ns() - the time the cores ran a context's work
 * @ctx: the context
 *
 * Each core's share is written by that core only: the sum is a moment's
 * view, exact up to the blocks running now, and never goes back.
 *
 * Return: nanoseconds, all cores.
 */
u64 snpu_ctx_busy_ns(struct snpu_context *ctx)
{
	unsigned int i;
	u64 ns = 0;

	for (i = 0; i < ctx->sdev->cores; i++)
		ns += READ_ONCE(ctx->busy[i].ns);
	return ns;
}

/**
 * snpu_show_fdinfo() - /proc/PID/fdinfo/FD of an snpu file
 * @m: the fdinfo file
 * @file: the snpu file, open (the proc code holds a reference)
 *
 * The keys of Documentation/gpu/drm-usage-stats.rst that apply to a
 * device with one compute engine of sdev->cores cores and two memory
 * regions ("device" and "host", each resident in full: device memory is
 * driver-owned, host memory driver-allocated or pinned), then snpu-
 * keys for the rest of the context's usage against its quotas. The
 * format is documented in Documentation/observability.rst. Takes no lock
 * of the context (see snpu_ctx_usage()): a reader never waits for a
 * busy context, and the context cannot go while its file is open.
 */
void snpu_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct snpu_context *ctx = file->private_data;
	struct snpu_device *sdev = ctx->sdev;
	struct snpu_ctx_query q = { };
	u64 done = snpu_ctx_usage(ctx, &q);

	seq_puts(m, "drm-driver:\tsnpu\n");
	seq_printf(m, "drm-client-id:\t%llu\n", ctx->id);
	seq_printf(m, "drm-engine-compute:\t%llu ns\n", snpu_ctx_busy_ns(ctx));
	seq_printf(m, "drm-engine-capacity-compute:\t%u\n", sdev->cores);
	seq_printf(m, "drm-total-device:\t%llu\n", q.mem_used);
	seq_printf(m, "drm-resident-device:\t%llu\n", q.mem_used);
	seq_printf(m, "drm-total-host:\t%llu\n", q.host_used);
	seq_printf(m, "drm-resident-host:\t%llu\n", q.host_used);
	seq_printf(m, "snpu-device:\t%s\n", sdev->name);
	seq_printf(m, "snpu-mem-limit:\t%llu\n", q.mem_limit);
	seq_printf(m, "snpu-host-limit:\t%llu\n", q.host_limit);
	seq_printf(m, "snpu-streams:\t%u/%u\n", q.streams, q.streams_limit);
	seq_printf(m, "snpu-events:\t%u/%u\n", q.events, q.events_limit);
	seq_printf(m, "snpu-tasks:\t%u/%u\n", q.tasks, q.tasks_limit);
	seq_printf(m, "snpu-tasks-done:\t%llu\n", done);
	seq_printf(m, "snpu-graphs:\t%u/%u\n", q.graphs, q.graphs_limit);
	seq_printf(m, "snpu-graph-mem:\t%llu/%llu\n", q.graph_mem,
		   q.graph_mem_limit);
}

static const char *const snpu_snap_names[SNPU_SNAP_NR] = {
	[SNPU_SNAP_LOCK] = "lock",
	[SNPU_SNAP_BACKUP] = "backup",
	[SNPU_SNAP_RESTORE] = "restore",
	[SNPU_SNAP_UNLOCK] = "unlock",
};

static int snpu_stats_show(struct seq_file *m, void *unused)
{
	struct snpu_device *sdev = m->private;
	struct snpu_dev_stats st;
	unsigned int i;

	snpu_stats_read(sdev, &st);
	seq_printf(m, "tasks %llu\n", st.tasks);
	seq_printf(m, "tasks_failed %llu\n", st.failed);
	seq_printf(m, "cqes %llu\n", st.cqes);
	seq_printf(m, "cq_overflows %llu\n", st.overflows);
	seq_printf(m, "ready_depth %llu\n", st.ready_depth);
	seq_printf(m, "ready_max %llu\n", st.ready_max);
	seq_printf(m, "blocks %llu\n", st.blocks);
	seq_printf(m, "busy_ns %llu\n", st.busy_ns);
	for (i = 0; i < sdev->cores; i++)
		seq_printf(m, "core%u busy_ns %llu blocks %llu\n", i,
			   READ_ONCE(sdev->core[i].busy_ns),
			   READ_ONCE(sdev->core[i].blocks));
	for (i = 0; i < SNPU_SNAP_NR; i++)
		seq_printf(m, "snapshot_%s count %lld failed %lld ns %lld\n",
			   snpu_snap_names[i],
			   atomic64_read(&sdev->snap.count[i]),
			   atomic64_read(&sdev->snap.failed[i]),
			   atomic64_read(&sdev->snap.ns[i]));
	seq_printf(m, "graph_launches %llu\n", st.graph_launches);
	seq_printf(m, "graph_hazard_visits %llu\n", st.graph_visits);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(snpu_stats);

static int snpu_contexts_show(struct seq_file *m, void *unused)
{
	struct snpu_device *sdev = m->private;
	struct snpu_ctx_stats cs;
	u64 cursor = 0;

	seq_puts(m, "# ctx pid mem host streams events tasks graphs graph_mem (used/limit) tasks_done\n");
	while (snpu_stats_ctx_next(sdev, &cursor, &init_pid_ns, &cs)) {
		const struct snpu_ctx_query *q = &cs.q;

		seq_printf(m, "%llu %d %llu/%llu %llu/%llu %u/%u %u/%u %u/%u %u/%u %llu/%llu %llu\n",
			   cs.id, cs.pid, q->mem_used, q->mem_limit,
			   q->host_used, q->host_limit, q->streams,
			   q->streams_limit, q->events, q->events_limit,
			   q->tasks, q->tasks_limit, q->graphs,
			   q->graphs_limit, q->graph_mem, q->graph_mem_limit,
			   cs.tasks_done);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(snpu_contexts);

/**
 * snpu_stats_debugfs() - the device's statistics files
 * @sdev: the device, with its debugfs directory
 *
 * stats: the device's counters; contexts: one line per open context, its
 * usage against each quota (pids in the initial pid namespace).
 */
void snpu_stats_debugfs(struct snpu_device *sdev)
{
	debugfs_create_file("stats", 0444, sdev->debugfs, sdev,
			    &snpu_stats_fops);
	debugfs_create_file("contexts", 0444, sdev->debugfs, sdev,
			    &snpu_contexts_fops);
}
