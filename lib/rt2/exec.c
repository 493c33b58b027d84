// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the executor - preparation (once), runs (many), the device memory
 * pool, the workers.
 *
 * Everything a run needs is allocated when the executor is created or,
 * for device memory, on the first run; a run only resets per-run state
 * (values, pending counts, queues) with plain stores. In three-worker
 * mode one mutex guards the scheduling state; each worker sleeps on its
 * own condition variable. Kernels run outside the mutex. The first error
 * stops the run: every worker is woken, leaves, and the run drains the
 * device and returns the pool's blocks, so the next run starts clean.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

/* ---- device memory: the caching allocator (alloc.c) and its waits ----- */

/*
 * Wait until the submitted generation reaches @gen, the run fails or it
 * ends. Memory worker, outside the lock. @sub: the generation reached.
 */
static int rt2_wait_gen(struct snpu_rt2_exec *e, uint32_t gen, uint32_t *sub)
{
	int ret;

	if (!e->nthr) {
		/* One thread: no relations, nothing to wait for. */
		ret = rt2_sched_check(&e->sched, gen);
		*sub = e->sched.submitted;
		return ret == -EAGAIN ? -EDEADLK : ret;
	}
	pthread_mutex_lock(&e->lock);
	for (;;) {
		ret = rt2_sched_check(&e->sched, gen);
		if (ret != -EAGAIN)
			break;
		if (e->stop) {
			ret = -ECANCELED;
			break;
		}
		e->sched.wait_gen = gen;
		e->sched.waits++;
		pthread_cond_wait(&e->wake[RT2_W_MEMORY], &e->lock);
	}
	e->sched.wait_gen = 0;
	*sub = e->sched.submitted;
	pthread_mutex_unlock(&e->lock);
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
int rt2_pool_get(struct snpu_rt2_exec *e, int32_t t, uint64_t bytes,
		 uint64_t *addr)
{
	struct rt2_pool *p = &e->pool;
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

static void rt2_wake_all(struct snpu_rt2_exec *e)
{
	unsigned int w;

	for (w = 0; w < RT2_WORKERS; w++)
		pthread_cond_signal(&e->wake[w]);
}

static void rt2_push(struct snpu_rt2_exec *e, uint32_t id)
{
	unsigned int w = e->g.nodes[id].worker;

	/* Launches and memory nodes are taken in order, not from a queue. */
	if (w == RT2_W_NORMAL)
		e->q[w].ids[e->q[w].tail++] = id;
	pthread_cond_signal(&e->wake[w]);
}

/* The next of @n IDs of @order from @next once it is ready, or -1. */
static int rt2_pop_ordered(struct snpu_rt2_exec *e, const uint32_t *order,
			   unsigned int n, unsigned int *next)
{
	uint32_t id;

	if (*next == n)
		return -1;
	id = order[*next];
	if (e->pending[id])
		return -1;
	++*next;
	return (int)id;
}

/*
 * The next node of worker @w, or -1. Under the lock. The launch worker
 * takes launches in the strict launch order; the memory worker takes its
 * nodes in execution-ID order, as one thread would: the allocations and
 * frees happen in the same order in every run (the same blocks, the same
 * addresses), frees as early as their IDs (a free without a priority
 * comes first among ready nodes) and allocations no earlier than there.
 */
static int rt2_pop(struct snpu_rt2_exec *e, unsigned int w)
{
	if (w == RT2_W_LAUNCH)
		return rt2_pop_ordered(e, e->g.launch_order, e->g.nlaunch,
				       &e->launch_next);
	if (w == RT2_W_MEMORY)
		return rt2_pop_ordered(e, e->mem_order, e->nmem,
				       &e->mem_next);
	if (e->q[w].head == e->q[w].tail)
		return -1;
	return (int)e->q[w].ids[e->q[w].head++];
}

/* A node ran: release its successors. Under the lock. */
static void rt2_complete(struct snpu_rt2_exec *e, const struct rt2_node *n)
{
	unsigned int j;
	uint32_t s;

	if (e->xd.nrels) {
		if (n->type == RT2_NT_FREE_HOLD)
			rt2_sched_free_done(&e->sched, &e->xd, n->id, 0);
		else if (rt2_sched_launch_done(&e->sched, &e->xd, n->id, 0))
			pthread_cond_signal(&e->wake[RT2_W_MEMORY]);
	}
	for (j = 0; j < n->nsucc; j++) {
		s = e->g.succs[n->succ_off + j];
		if (!--e->pending[s])
			rt2_push(e, s);
	}
	if (++e->done_nodes == e->g.nnodes) {
		rt2_sched_eos(&e->sched);
		rt2_wake_all(e);
	}
}

static void *rt2_worker(void *arg)
{
	const struct rt2_wk *wk = arg;
	struct snpu_rt2_exec *e = wk->e;
	unsigned int w = wk->w;
	unsigned int seen = 0;
	const struct rt2_node *n;
	int id, ret;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->quit && e->gen == seen)
			pthread_cond_wait(&e->wake[w], &e->lock);
		if (e->quit)
			break;
		seen = e->gen;
		while (!e->stop && e->done_nodes < e->g.nnodes) {
			id = rt2_pop(e, w);
			if (id < 0) {
				pthread_cond_wait(&e->wake[w], &e->lock);
				continue;
			}
			n = &e->g.nodes[id];
			pthread_mutex_unlock(&e->lock);
			ret = rt2_run_node(e, n, w);
			pthread_mutex_lock(&e->lock);
			if (ret) {
				if (!e->err)
					e->err = ret;
				e->stop = true;
				rt2_sched_abort(&e->sched, ret);
				rt2_wake_all(e);
				break;
			}
			rt2_complete(e, n);
		}
		if (++e->idle == e->nthr)
			pthread_cond_signal(&e->done);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* ---- runs ------------------------------------------------------------ */

static void rt2_reset(struct snpu_rt2_exec *e)
{
	unsigned int i, w;

	memcpy(e->vals, e->vals0, e->nvals * sizeof(*e->vals));
	for (i = 0; i < e->nin; i++)
		e->vals[e->in[i].tensor].shape = e->in[i].shape;
	memcpy(e->pending, e->indeg, e->g.nnodes * sizeof(*e->pending));
	for (w = 0; w < RT2_WORKERS; w++) {
		e->q[w].head = 0;
		e->q[w].tail = 0;
	}
	e->launch_next = 0;
	e->mem_next = 0;
	rt2_sched_begin(&e->sched);
	e->done_nodes = 0;
	e->err = 0;
	e->stop = false;
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

static int rt2_run_threads(struct snpu_rt2_exec *e)
{
	unsigned int i;
	int ret;

	pthread_mutex_lock(&e->lock);
	for (i = 0; i < e->g.nnodes; i++)
		if (!e->pending[i])
			rt2_push(e, i);
	e->idle = 0;
	e->gen++;
	rt2_wake_all(e);
	while (e->idle < e->nthr)
		pthread_cond_wait(&e->done, &e->lock);
	ret = e->err;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

int snpu_rt2_exec_run(struct snpu_rt2_exec *e)
{
	int ret, w;

	if (!e)
		return -EINVAL;
	rt2_reset(e);
	ret = e->nthr ? rt2_run_threads(e) : rt2_run_single(e);
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
	unsigned int i, w, n = e->g.nnodes;

	e->indeg = calloc(n + 1, sizeof(*e->indeg));
	e->pending = calloc(n + 1, sizeof(*e->pending));
	if (!e->indeg || !e->pending)
		return -ENOMEM;
	e->mem_order = calloc(n + 1, sizeof(*e->mem_order));
	if (!e->mem_order)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		e->indeg[i] = e->g.nodes[i].npred;
		if (e->g.nodes[i].worker == RT2_W_MEMORY)
			e->mem_order[e->nmem++] = i;
	}
	for (w = 0; w < RT2_WORKERS; w++) {
		e->q[w].ids = calloc(n + 1, sizeof(uint32_t));
		if (!e->q[w].ids)
			return -ENOMEM;
	}
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

static int rt2_start_threads(struct snpu_rt2_exec *e)
{
	unsigned int w;
	int ret;

	for (w = 0; w < RT2_WORKERS; w++) {
		e->wk[w].e = e;
		e->wk[w].w = w;
		ret = pthread_create(&e->thr[w], NULL, rt2_worker, &e->wk[w]);
		if (ret)
			return -ret;
		e->nthr++;
	}
	return 0;
}

void snpu_rt2_exec_destroy(struct snpu_rt2_exec *e)
{
	struct snpu_rt2_dev *d;
	unsigned int i, w;

	if (!e)
		return;
	d = e->dev;
	if (e->nthr) {
		pthread_mutex_lock(&e->lock);
		e->quit = true;
		rt2_wake_all(e);
		pthread_mutex_unlock(&e->lock);
		for (w = 0; w < e->nthr; w++)
			pthread_join(e->thr[w], NULL);
	}
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
	for (w = 0; w < RT2_WORKERS; w++) {
		free(e->q[w].ids);
		pthread_cond_destroy(&e->wake[w]);
	}
	pthread_cond_destroy(&e->done);
	pthread_mutex_destroy(&e->lock);
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
	unsigned int w;
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->model = m;
	e->dev = dev;
	if (opts)
		e->opts = *opts;
	pthread_mutex_init(&e->lock, NULL);
	for (w = 0; w < RT2_WORKERS; w++)
		pthread_cond_init(&e->wake[w], NULL);
	pthread_cond_init(&e->done, NULL);
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
				    SNPU_RT2_EXEC_GRAPH))
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
