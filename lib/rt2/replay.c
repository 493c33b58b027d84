// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: graph replay (SNPU_RT2_EXEC_GRAPH), parameter read-back and the
 * executor's statistics.
 *
 * In graph mode the run's device work between its host copies - the
 * launches of built-in kernels, a contiguous span of the strict launch
 * order - is captured the first time as a libsnpu graph (the device
 * interface's capture_begin/capture_end: snpu_graph_begin_ring() on the
 * executor's stream) and, on every later run, launched as that graph: one
 * queue entry instead of one per launch; the span's launch kernels are
 * skipped. The graph holds plain device addresses, so every tensor the
 * span touches keeps its device memory from run to run: in graph mode,
 * op results and H2D inputs get a block of their own (rt2_replay_alloc)
 * instead of blocks of the pool, which another tensor may have held in
 * the last run. Lowering puts every H2D copy before the ops and every D2H
 * copy after them (graph mode only), so host copies and custom operators
 * (which fork attached streams) stay out of the span: an executor whose
 * span would hold one of them is refused with -EOPNOTSUPP.
 *
 * A run whose input shapes differ from the captured run's captures again
 * under a new key (the old graph is forgotten). A run that finds another
 * capture of the device in progress runs its span op by op. A run that stops in the
 * middle of a capture ends it (the recorded work is submitted) and
 * forgets the graph, since it holds only part of the span.
 *
 * Once a whole run went with the graph captured, a run with the same
 * input shapes is a *replay*: it runs only what changes from run to run -
 * the launch nodes outside the span (H2D copies of the inputs, D2H copies
 * of the outputs, custom operators) and the span's first launch, which
 * launches the graph - in ID order, on the caller's thread, against the
 * values as those nodes saw them in a whole run (every address is fixed
 * and the shapes follow from the inputs' shapes). Shape inference,
 * allocations, tensor building and frees, which would give the same
 * results, do not run, nor does the scheduler. Single-thread mode's
 * legacy H2DCopy and CopyFlowLaunch nodes, which allocate and copy, run
 * too (they find their fixed block).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

struct rt2_replay {
	uint64_t *fixed;		/* per tensor: its block, 0 for none */
	uint64_t *fixed_bytes;
	unsigned int nvals;
	bool has_span;
	uint32_t first, last;		/* IDs of the span's first, last launch */
	uint64_t key;
	unsigned int gen;		/* captures keyed so far */
	bool cached;			/* a graph of @key exists */
	bool capturing;			/* this run, between begin and end */
	bool skip;			/* this run launched the cached graph */
	struct snpu_rt2_shape *in_shapes;	/* the inputs, at capture */
	unsigned long captures, launches, fallbacks;
	/* replays: what a replayed run runs, and the values it reads */
	uint32_t *plan;			/* node IDs, ascending */
	unsigned int nplan;
	struct rt2_value *rv;		/* per value: as the plan's nodes saw it */
	bool plan_ok;			/* rv holds a whole run's values */
	bool replaying;			/* this run is a replay */
	unsigned long replays;
};

/* A node a replayed run runs: a launch, or a legacy mixed copy. */
static bool rt2_replay_planned(const struct rt2_node *n)
{
	return n->type == RT2_NT_LAUNCH ||
	       (rt2_kernel(n->kernel)->flags & RT2_KF_MIXED);
}

static bool rt2_graphable(unsigned int kid)
{
	return rt2_kernel(kid)->flags & RT2_KF_GRAPHABLE;
}

int rt2_replay_init(struct snpu_rt2_exec *e)
{
	const struct rt2_dev_ops *ops = e->dev->ops;
	struct rt2_replay *r;
	unsigned int i, i0 = 0, i1 = 0;
	bool found = false;

	if (!ops->capture_begin || !ops->capture_end || !ops->capture_forget)
		return -EOPNOTSUPP;
	for (i = 0; i < e->g.nlaunch; i++) {
		if (!rt2_graphable(e->g.nodes[e->g.launch_order[i]].kernel))
			continue;
		if (!found)
			i0 = i;
		i1 = i;
		found = true;
	}
	/* The span holds built-in launches only. */
	for (i = i0; found && i <= i1; i++)
		if (!rt2_graphable(e->g.nodes[e->g.launch_order[i]].kernel))
			return -EOPNOTSUPP;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	e->replay = r;
	r->nvals = e->nvals;
	r->fixed = calloc(e->nvals + 1, sizeof(*r->fixed));
	r->fixed_bytes = calloc(e->nvals + 1, sizeof(*r->fixed_bytes));
	r->in_shapes = calloc(e->nin + 1, sizeof(*r->in_shapes));
	r->plan = calloc(e->g.nnodes + 1, sizeof(*r->plan));
	r->rv = calloc(e->nvals + 1, sizeof(*r->rv));
	if (!r->fixed || !r->fixed_bytes || !r->in_shapes || !r->plan ||
	    !r->rv)
		return -ENOMEM;	/* rt2_replay_fini() frees */
	for (i = 0; i < e->g.nnodes; i++)
		if (rt2_replay_planned(&e->g.nodes[i]))
			r->plan[r->nplan++] = i;
	r->has_span = found;
	if (found) {
		r->first = e->g.launch_order[i0];
		r->last = e->g.launch_order[i1];
	}
	r->key = (uint64_t)(uintptr_t)e;
	return 0;
}

void rt2_replay_fini(struct snpu_rt2_exec *e)
{
	struct rt2_replay *r = e->replay;
	unsigned int i;

	if (!r)
		return;
	if (r->cached)
		e->dev->ops->capture_forget(e->dev, r->key);
	for (i = 0; r->fixed && i < r->nvals; i++)
		if (r->fixed[i])
			e->dev->ops->mem_free(e->dev, r->fixed[i]);
	free(r->fixed);
	free(r->fixed_bytes);
	free(r->in_shapes);
	free(r->plan);
	free(r->rv);
	free(r);
	e->replay = NULL;
}

/*
 * Tensor @t's own block of @bytes: allocated on its first run, the same
 * address on every run after. Memory worker only (an allocation kernel).
 */
int rt2_replay_alloc(struct snpu_rt2_exec *e, int32_t t, uint64_t bytes,
		     uint64_t *addr)
{
	struct rt2_replay *r = e->replay;
	int ret;

	if (r->fixed[t] && r->fixed_bytes[t] == bytes) {
		*addr = r->fixed[t];
		return 0;
	}
	if (r->fixed[t]) {
		/* Another size: the cached graph names the old block. */
		if (r->cached)
			e->dev->ops->capture_forget(e->dev, r->key);
		r->cached = false;
		r->plan_ok = false;
		e->dev->ops->mem_free(e->dev, r->fixed[t]);
		r->fixed[t] = 0;
	}
	ret = e->dev->ops->mem_alloc(e->dev, bytes, &r->fixed[t]);
	if (ret)
		return ret;
	r->fixed_bytes[t] = bytes;
	*addr = r->fixed[t];
	return 0;
}

static bool rt2_replay_same_inputs(const struct snpu_rt2_exec *e)
{
	unsigned int i;

	for (i = 0; i < e->nin; i++)
		if (memcmp(&e->replay->in_shapes[i], &e->in[i].shape,
			   sizeof(e->in[i].shape)))
			return false;
	return true;
}

/* The first launch of the span: launch the cached graph, or capture. */
static int rt2_replay_begin(struct snpu_rt2_exec *e)
{
	struct rt2_replay *r = e->replay;
	struct snpu_rt2_dev *d = e->dev;
	int ret;

	if (r->cached && !rt2_replay_same_inputs(e)) {
		d->ops->capture_forget(d, r->key);
		r->cached = false;
		r->plan_ok = false;
	}
	if (!r->cached)
		r->key = (uint64_t)(uintptr_t)e | (uint64_t)++r->gen << 52;
	ret = d->ops->capture_begin(d, &e->dq, r->key);
	if (ret == SNPU_GRAPH_CACHED) {
		r->skip = true;
		r->launches++;
		return 0;
	}
	/* Another capture of the device is in progress: op by op. */
	if (ret == -EBUSY) {
		r->fallbacks++;
		return 0;
	}
	if (ret)
		return ret;
	r->capturing = true;
	return 0;
}

static int rt2_replay_end(struct snpu_rt2_exec *e, bool whole)
{
	struct rt2_replay *r = e->replay;
	struct snpu_rt2_dev *d = e->dev;
	unsigned int i;
	int ret;

	r->capturing = false;
	ret = d->ops->capture_end(d, &e->dq);
	if (ret == 0 && whole) {
		r->cached = true;
		r->captures++;
		for (i = 0; i < e->nin; i++)
			r->in_shapes[i] = e->in[i].shape;
		return 0;
	}
	if (ret == 0)	/* part of the span: of no use later */
		d->ops->capture_forget(d, r->key);
	if (ret == SNPU_GRAPH_NOT_RECORDED) {
		r->fallbacks++;
		ret = 0;
	}
	return ret;
}

/**
 * rt2_replay_node() - run a node of a graph-mode executor
 * @e: the executor
 * @n: the node
 *
 * Nodes outside the span run as usual. The span's first launch launches
 * the cached graph (and the span's launches are then skipped) or starts a
 * capture, which its last launch ends.
 *
 * Return: the kernel's result, or the capture's error.
 */
int rt2_replay_node(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	struct rt2_replay *r = e->replay;
	unsigned int i;
	int ret = 0, ret2;

	if (!r->has_span || n->type != RT2_NT_LAUNCH || n->id < r->first ||
	    n->id > r->last) {
		ret = rt2_kernel(n->kernel)->run(e, n);
	} else {
		if (n->id == r->first)
			ret = rt2_replay_begin(e);
		if (!ret && !r->skip)
			ret = rt2_kernel(n->kernel)->run(e, n);
		if (n->id == r->last && r->capturing) {
			ret2 = rt2_replay_end(e, !ret);
			if (!ret)
				ret = ret2;
		}
	}
	/*
	 * A node a replay runs: keep the values it read and wrote as it
	 * saw them (the launch worker's, or the one thread's).
	 */
	if (e->vals != r->rv && rt2_replay_planned(n)) {
		for (i = 0; i < n->nin && i < RT2_NODE_IO; i++)
			if (n->in[i] >= 0)
				r->rv[n->in[i]] = e->vals[n->in[i]];
		for (i = 0; i < n->nout && i < RT2_NODE_IO; i++)
			if (n->out[i] >= 0)
				r->rv[n->out[i]] = e->vals[n->out[i]];
	}
	return ret;
}

/*
 * May this run be a replay? A whole run went with the graph captured
 * since the last change, and the inputs have the captured shapes.
 */
bool rt2_replay_ready(struct snpu_rt2_exec *e)
{
	struct rt2_replay *r = e->replay;

	return r && r->plan_ok && r->cached && rt2_replay_same_inputs(e);
}

/*
 * A replayed run: the plan's nodes in ID order, on this thread, against
 * the kept values; the span's first launch launches the graph (or, when
 * the device's graph is not there, captures it again or runs the span
 * op by op, as in a whole run). Return: the first error.
 */
int rt2_replay_run(struct snpu_rt2_exec *e, int (*run)(struct snpu_rt2_exec *,
						       const struct rt2_node *,
						       unsigned int))
{
	struct rt2_replay *r = e->replay;
	struct rt2_value *vals = e->vals;
	unsigned int i;
	int ret = 0;

	e->vals = r->rv;
	r->replaying = true;
	/*
	 * Its tasks reach the device together: with the graph's launch,
	 * which hands over what the ring holds, and at the drain.
	 */
	if (e->dev->ops->defer)
		e->dev->ops->defer(e->dev, &e->dq, true);
	for (i = 0; i < r->nplan && !ret; i++) {
		const struct rt2_node *n = &e->g.nodes[r->plan[i]];

		ret = run(e, n, n->worker);
	}
	if (e->dev->ops->defer)
		e->dev->ops->defer(e->dev, &e->dq, false);
	e->vals = vals;
	r->replays++;
	return ret;
}

/*
 * After a run's nodes, before its drain: a run stopped by an error in
 * the span ends its capture (its work is submitted, then drained).
 */
void rt2_replay_run_end(struct snpu_rt2_exec *e, int err)
{
	struct rt2_replay *r = e->replay;

	if (r->capturing)
		rt2_replay_end(e, false);
	r->skip = false;
	/*
	 * A whole run with the graph captured: the next may replay. A
	 * replay changes no value, whatever it returned: the next replays
	 * while the graph is there.
	 */
	r->plan_ok = (r->replaying ? r->plan_ok : !err) && r->cached;
	r->replaying = false;
}

/* ---- LIBSNPU_0.9 -------------------------------------------------------- */

int snpu_rt2_exec_param_read(struct snpu_rt2_exec *e, int tensor, void *host,
			     size_t bytes)
{
	const struct rt2_value *v;

	if (!e || !host || !e->model || tensor < 0 ||
	    (unsigned int)tensor >= e->nvals ||
	    e->model->tensors[tensor].kind != RT2_T_PARAM)
		return -EINVAL;
	v = &e->vals0[tensor];
	if (bytes != v->alloc_bytes)
		return -EINVAL;
	if (!e->dev->ops->d2h)
		return -EOPNOTSUPP;
	return e->dev->ops->d2h(e->dev, host, v->addr, bytes);
}

int snpu_rt2_exec_stats(const struct snpu_rt2_exec *e,
			struct snpu_rt2_exec_stats *st)
{
	if (!e || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (e->dev->ops->queue_stats)
		e->dev->ops->queue_stats(e->dev, &e->dq, st);
	st->runs = e->runs;
	if (e->replay) {
		st->graph_captures = e->replay->captures;
		st->graph_launches = e->replay->launches;
		st->graph_fallbacks = e->replay->fallbacks;
		st->graph_replays = e->replay->replays;
	}
	return 0;
}
