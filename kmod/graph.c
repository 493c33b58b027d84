// SPDX-License-Identifier: GPL-2.0
/*
 * snpu graphs: a DAG of tasks uploaded once (SNPU_IOC_GRAPH_CREATE),
 * checked and compacted once, then launched as one task (SNPU_OP_GRAPH).
 *
 * A definition holds, per node, the node's work with its plain addresses
 * resolved, its successors (fanout CSR), its number of predecessors and
 * its hazard list. A launch takes an instance of the graph (one per
 * launch in flight, kept for reuse: launches allocate nothing once the
 * graph is warm), binds the slots and the scratch, and starts the roots
 * when its stream reaches it; each node that completes resolves its
 * successors, and the last one completes the launch. A launch that
 * directly follows one of the same graph with the same bindings is
 * stitched to it: it starts at once, each node also waiting for the
 * nodes of the launch before that its hazard list names.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "comm.h"
#include "core/ckpt.h"
#include "graph.h"
#include "trace.h"

/* Memory of a definition or instance: charged to the context's quota. */
static void *snpu_graph_alloc(struct snpu_graph *g, size_t n, size_t size)
{
	size_t bytes = array_size(n, size);
	void *p;

	if (!bytes)
		return ZERO_SIZE_PTR;
	p = kvzalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (p)
		g->charged += bytes;
	return p;
}

/*
 * Give a graph's memory back to its context's quota. At the last put by
 * a launch this happens at once, before the launch completes, so that
 * the room is there when a synchronize returns; the memory itself goes
 * when snpu_free_wq gets to it (as device and host memory do).
 */
static void snpu_graph_uncharge(struct snpu_graph *g)
{
	atomic64_sub(g->charged, &g->ctx->graph_mem);
	g->charged = 0;
}

static void snpu_graph_free(struct snpu_graph *g)
{
	struct snpu_ginst *inst, *tmp;
	u32 i;

	list_for_each_entry_safe(inst, tmp, &g->free, node)
		kvfree(inst);
	for (i = 0; i < g->nmems; i++)
		snpu_mem_put(g->mems[i]);
	kvfree(g->mems);
	kvfree(g->def);
	kvfree(g->fanout_off);
	kvfree(g->fanout);
	kvfree(g->fanin);
	kvfree(g->roots);
	kvfree(g->acc_off);
	kvfree(g->acc);
	kvfree(g->haz_off);
	kvfree(g->haz);
	kvfree(g->plain);
	kvfree(g->colls);
	kvfree(g->src);
	snpu_graph_uncharge(g);
	kfree_rcu(g, obj.rcu);
}

static void snpu_graph_free_work(struct work_struct *work)
{
	snpu_graph_free(container_of(work, struct snpu_graph, free_work));
}

static void snpu_graph_release(struct kref *ref)
{
	snpu_graph_free(container_of(ref, struct snpu_graph, ref));
}

static void snpu_graph_release_deferred(struct kref *ref)
{
	struct snpu_graph *g = container_of(ref, struct snpu_graph, ref);

	snpu_graph_uncharge(g);
	queue_work(snpu_free_wq, &g->free_work);
}

/* The graph a handle names, or NULL. */
static struct snpu_graph *snpu_graph_get_locked(struct snpu_context *ctx,
						u32 handle)
{
	struct snpu_object *obj;

	obj = snpu_object_get_locked(ctx, handle, SNPU_OBJ_GRAPH);
	return obj ? container_of(obj, struct snpu_graph, obj) : NULL;
}

/**
 * struct snpu_graph_in - a definition as copied from the caller
 * @nodes: the nodes
 * @offsets: the fanin CSR offsets, or NULL
 * @fanin: the predecessors
 */
struct snpu_graph_in {
	struct snpu_graph_node *nodes;
	u32 *offsets;
	u32 *fanin;
};

/* The parts of a definition laid out in @src (see struct snpu_graph). */
static void snpu_graph_in_init(struct snpu_graph_in *in, void *src, u32 nodes,
			       u32 edges)
{
	in->nodes = src;
	in->offsets = edges ? src + array_size(nodes, sizeof(*in->nodes)) :
			      NULL;
	in->fanin = edges ? in->offsets + nodes + 1 : NULL;
}

static int snpu_graph_read(const struct snpu_graph_create *c,
			   struct snpu_graph *g, struct snpu_graph_in *in)
{
	const void __user *src = u64_to_user_ptr(c->nodes);
	u64 slot_bytes[SNPU_GRAPH_MAX_SLOTS];
	u32 i;
	int ret = 0;

	/*
	 * One buffer, kept with the graph for checkpoint images: the nodes,
	 * then the fanin CSR when there are edges. Offsets given without
	 * edges must all be zero (they end at 0 and do not decrease), and
	 * then say what none do.
	 */
	g->src_bytes = snpu_ckpt_graph_def_bytes(c->nodes_count,
						 c->edges_count);
	g->edges = c->edges_count;
	g->src = snpu_graph_alloc(g, g->src_bytes, 1);
	if (!g->src)
		return -ENOMEM;
	snpu_graph_in_init(in, g->src, c->nodes_count, c->edges_count);
	for (i = 0; i < c->nodes_count; i++, src += c->node_size) {
		if (copy_from_user(&in->nodes[i], src, sizeof(in->nodes[i])))
			return -EFAULT;
		if (c->node_size > sizeof(in->nodes[i])) {
			ret = check_zeroed_user(src + sizeof(in->nodes[i]),
						c->node_size -
						sizeof(in->nodes[i]));
			if (ret <= 0)
				return ret ?: -E2BIG;
		}
	}
	if (c->edges_count &&
	    (copy_from_user(in->offsets, u64_to_user_ptr(c->fanin_offsets),
			    (c->nodes_count + 1) * sizeof(u32)) ||
	     copy_from_user(in->fanin, u64_to_user_ptr(c->fanin),
			    c->edges_count * sizeof(u32))))
		return -EFAULT;
	if (!c->edges_count && c->fanin_offsets) {
		ret = check_zeroed_user(u64_to_user_ptr(c->fanin_offsets),
					(c->nodes_count + 1) * sizeof(u32));
		if (ret <= 0)
			return ret ?: -EINVAL;
	}
	if (c->slots_count &&
	    copy_from_user(slot_bytes, u64_to_user_ptr(c->slot_bytes),
			   c->slots_count * sizeof(u64)))
		return -EFAULT;
	for (i = 0; i < c->slots_count; i++) {
		if (!slot_bytes[i])
			return -EINVAL;
		g->bytes[i] = slot_bytes[i];
	}
	g->bytes[SNPU_GRES_SCRATCH] = c->scratch_bytes;
	return 0;
}

/*
 * The collective nodes: each names a rank of the file, whose
 * communicator's size the node's extents depend on.
 */
static int snpu_graph_colls_locked(struct snpu_context *ctx,
				   struct snpu_graph *g,
				   const struct snpu_graph_in *in)
{
	struct snpu_comm_rank *r;
	u32 n, i = 0;

	lockdep_assert_held(&ctx->lock);
	for (n = 0; n < g->nodes; n++)
		g->ncolls += in->nodes[n].task.op == SNPU_OP_COLL;
	if (!g->ncolls)
		return 0;
	g->colls = snpu_graph_alloc(g, g->ncolls, sizeof(*g->colls));
	if (!g->colls)
		return -ENOMEM;
	for (n = 0; n < g->nodes; n++) {
		const struct snpu_task *t = &in->nodes[n].task;
		struct snpu_gcoll *c = &g->colls[i];

		if (t->op != SNPU_OP_COLL)
			continue;
		r = snpu_comm_rank_get_locked(ctx, t->coll.comm);
		if (!r || r->left || r->destroying)
			return -ENOENT;
		c->node = n;
		c->handle = t->coll.comm;
		c->rank = r->rank;
		c->desc = (struct snpu_coll_desc) {
			.coll = t->coll.coll, .dtype = t->coll.dtype,
			.redop = t->coll.redop, .root = t->coll.root,
			.nranks = r->comm->nranks, .count = t->coll.count,
		};
		i++;
	}
	return 0;
}

/*
 * The rank a collective node names, if it is still the one the node was
 * checked for: the same rank of a communicator of as many ranks.
 */
static struct snpu_comm_rank *snpu_gcoll_rank_locked(struct snpu_context *ctx,
						     const struct snpu_gcoll *c)
{
	struct snpu_comm_rank *r = snpu_comm_rank_get_locked(ctx, c->handle);

	if (!r || r->left || r->destroying || r->rank != c->rank ||
	    r->comm->nranks != c->desc.nranks)
		return NULL;
	return r;
}

/* The collective node of index @n. */
static struct snpu_gcoll *snpu_graph_gcoll(const struct snpu_graph *g, u32 n)
{
	u32 lo = 0, hi = g->ncolls;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (g->colls[mid].node < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &g->colls[lo];
}

/* Check every node and list its accesses. */
static int snpu_graph_accesses(struct snpu_graph *g,
			       const struct snpu_graph_in *in, u32 *nacc)
{
	const struct snpu_gcoll *c = g->colls;
	u32 n, total = 0;
	int ret;

	g->acc_off = snpu_graph_alloc(g, g->nodes + 1, sizeof(u32));
	g->acc = snpu_graph_alloc(g, g->nodes,
				  SNPU_GNODE_MAX_ACC * sizeof(*g->acc));
	if (!g->acc_off || !g->acc)
		return -ENOMEM;
	for (n = 0; n < g->nodes; n++) {
		const struct snpu_task *t = &in->nodes[n].task;

		if (t->op == SNPU_OP_COLL) {
			ret = snpu_graph_coll_acc(&in->nodes[n], n,
						  c->desc.nranks, c->rank,
						  g->slots, g->bytes,
						  g->bytes[SNPU_GRES_SCRATCH],
						  &g->acc[total]);
			c++;
		} else {
			ret = snpu_graph_node_acc(&in->nodes[n], n, g->slots,
						  g->bytes,
						  g->bytes[SNPU_GRES_SCRATCH],
						  &g->acc[total]);
		}
		if (ret < 0)
			return ret;
		if (t->op == SNPU_OP_LAUNCH && !snpu_test_hooks &&
		    (t->launch.kernel == SNPU_KERNEL_SPIN ||
		     t->launch.kernel == SNPU_KERNEL_FAIL))
			return -EOPNOTSUPP;
		g->acc_off[n] = total;
		for (; ret; ret--, total++)
			if (g->acc[total].word &&
			    g->acc[total].res != SNPU_GRES_PLAIN)
				g->align[g->acc[total].res] = 3;
	}
	g->acc_off[n] = total;
	*nacc = total;
	return 0;
}

/* Successors from predecessors; predecessor counts; roots. */
static int snpu_graph_edges(struct snpu_graph *g,
			    const struct snpu_graph_in *in, u32 edges)
{
	u32 n, e, *fill;
	int ret;

	fill = kvcalloc(g->nodes + 1, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!fill)
		return -ENOMEM;
	ret = snpu_graph_check_fanin(in->offsets, in->fanin, g->nodes, edges,
				     fill);
	if (ret)
		goto out;
	ret = -ENOMEM;
	g->fanout_off = snpu_graph_alloc(g, g->nodes + 1, sizeof(u32));
	g->fanout = snpu_graph_alloc(g, edges, sizeof(u32));
	g->fanin = snpu_graph_alloc(g, g->nodes, sizeof(u32));
	if (!g->fanout_off || !g->fanout || !g->fanin)
		goto out;
	for (n = 0; n < g->nodes; n++) {
		u32 lo = in->offsets ? in->offsets[n] : 0;
		u32 hi = in->offsets ? in->offsets[n + 1] : 0;

		g->fanin[n] = hi - lo;
		g->nroots += !g->fanin[n];
		for (e = lo; e < hi; e++)
			g->fanout_off[in->fanin[e] + 1]++;
	}
	for (n = 0; n < g->nodes; n++)
		g->fanout_off[n + 1] += g->fanout_off[n];
	memset(fill, 0, (g->nodes + 1) * sizeof(u32));
	for (n = 0; n < g->nodes; n++) {
		u32 lo = in->offsets ? in->offsets[n] : 0;
		u32 hi = in->offsets ? in->offsets[n + 1] : 0;

		for (e = lo; e < hi; e++) {
			u32 p = in->fanin[e];

			g->fanout[g->fanout_off[p] + fill[p]++] = n;
		}
	}
	g->roots = snpu_graph_alloc(g, g->nroots, sizeof(u32));
	if (!g->roots)
		goto out;
	for (n = 0, e = 0; n < g->nodes; n++)
		if (!g->fanin[n])
			g->roots[e++] = n;
	ret = 0;
out:
	kvfree(fill);
	return ret;
}

/*
 * The hazard lists, and the plain ranges merged. A definition past the
 * hazard bound is kept, without lists: its launches are never stitched.
 */
static int snpu_graph_hazard_lists(struct snpu_graph *g, u32 nacc)
{
	struct snpu_gacc *acc;
	u32 *offsets = NULL, *list = NULL, count, i, nplain = 0;
	u64 *pairs = NULL;
	int ret = -ENOMEM;

	acc = kvmalloc_array(nacc ?: 1, sizeof(*acc), GFP_KERNEL_ACCOUNT);
	pairs = kvmalloc_array(SNPU_GRAPH_MAX_HAZARDS, sizeof(*pairs),
			       GFP_KERNEL_ACCOUNT);
	list = kvmalloc_array(SNPU_GRAPH_MAX_HAZARDS, sizeof(*list),
			      GFP_KERNEL_ACCOUNT);
	offsets = kvmalloc_array(g->nodes + 1, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!acc || !pairs || !list || !offsets)
		goto out;

	memcpy(acc, g->acc, nacc * sizeof(*acc));
	/*
	 * A collective's buffers are also other ranks': a graph with one is
	 * never stitched, its launches run one after the other.
	 */
	ret = g->ncolls ? -E2BIG :
	      snpu_graph_hazards(acc, nacc, g->nodes, pairs,
				 SNPU_GRAPH_MAX_HAZARDS, offsets, list, &count);
	if (!ret) {
		ret = -ENOMEM;
		g->haz = snpu_graph_alloc(g, count, sizeof(u32));
		if (!g->haz)
			goto out;
		memcpy(g->haz, list, count * sizeof(u32));
		/* Charged only when kept: a graph past the bound has no lists. */
		g->charged += (g->nodes + 1) * sizeof(u32);
		g->haz_off = offsets;
		offsets = NULL;
	}

	/* The plain ranges, from the accesses in node order. */
	for (i = 0; i < nacc; i++)
		if (g->acc[i].res == SNPU_GRES_PLAIN)
			acc[nplain++] = g->acc[i];
	g->nplain = snpu_graph_plain_merge(acc, nplain);
	ret = -ENOMEM;
	g->plain = snpu_graph_alloc(g, g->nplain, sizeof(*acc));
	if (!g->plain)
		goto out;
	memcpy(g->plain, acc, g->nplain * sizeof(*acc));
	ret = 0;
out:
	kvfree(offsets);
	kvfree(list);
	kvfree(pairs);
	kvfree(acc);
	return ret;
}

/* The node works as far as the definition knows them. */
static int snpu_graph_templates(struct snpu_graph *g,
				const struct snpu_graph_in *in)
{
	u32 n, a, bufs;

	g->def = snpu_graph_alloc(g, g->nodes, sizeof(*g->def));
	g->mems = snpu_graph_alloc(g, g->acc_off[g->nodes], sizeof(*g->mems));
	if (!g->def || !g->mems)
		return -ENOMEM;
	for (n = 0; n < g->nodes; n++) {
		const struct snpu_task *t = &in->nodes[n].task;
		struct snpu_gdef *d = &g->def[n];
		struct snpu_work *w = &d->tmpl;
		struct snpu_klaunch *l = &w->launch;

		w->op = t->op;
		w->nblocks = 1;
		memset(d->res, SNPU_GRES_PLAIN, sizeof(d->res));
		switch (t->op) {
		case SNPU_OP_LAUNCH:
			l->kernel = t->launch.kernel;
			l->block_dim = t->launch.block_dim;
			w->nblocks = l->block_dim;
			bufs = snpu_kernel_plan(l->kernel, t->launch.args,
						&w->units, &w->chunk, &w->fpu);
			for (a = 0; a < SNPU_KERNEL_MAX_ARGS; a++) {
				if (bufs & BIT(a))
					l->bytes[a] = t->launch.args[a].bytes;
				else
					l->scalar[a] = t->launch.args[a].value;
			}
			break;
		case SNPU_OP_COPY:
			w->copy.bytes = t->copy.bytes;
			break;
		case SNPU_OP_MEMSET:
			w->copy.bytes = t->memset.bytes;
			w->copy.value = t->memset.value;
			break;
		case SNPU_OP_COLL:
			/* Its steps fill it in (comm.c). */
			w->coll.part = NULL;
			break;
		}
		for (a = g->acc_off[n]; a < g->acc_off[n + 1]; a++) {
			const struct snpu_gacc *acc = &g->acc[a];

			d->res[acc->addr] = acc->res;
			d->off[acc->addr] = acc->start;
		}
	}
	return 0;
}

/* Where address @a of a node's work goes. */
static void snpu_gwork_set(struct snpu_work *w, u32 a, void *p)
{
	if (w->op == SNPU_OP_LAUNCH)
		w->launch.buf[a] = p;
	else if (a == 0)
		w->copy.dst = p;
	else
		w->copy.src = p;
}

/* Resolve the plain addresses, each allocation referenced. */
static int snpu_graph_plain_locked(struct snpu_context *ctx,
				   struct snpu_graph *g)
{
	u32 n, i;
	int ret;

	lockdep_assert_held(&ctx->lock);
	for (n = 0; n < g->nodes; n++) {
		for (i = g->acc_off[n]; i < g->acc_off[n + 1]; i++) {
			const struct snpu_gacc *a = &g->acc[i];
			void *kaddr;

			if (a->res != SNPU_GRES_PLAIN)
				continue;
			ret = snpu_mem_resolve_locked(ctx, a->start,
						      a->end - a->start,
						      &g->mems[g->nmems],
						      &kaddr);
			if (ret)
				return ret;
			g->nmems++;
			if (g->def[n].tmpl.op == SNPU_OP_COLL)
				snpu_graph_gcoll(g, n)->kaddr[a->addr] = kaddr;
			else
				snpu_gwork_set(&g->def[n].tmpl, a->addr, kaddr);
		}
	}
	return 0;
}

/* A graph of @nodes nodes and @slots slots, before its definition. */
static struct snpu_graph *snpu_graph_new(struct snpu_context *ctx, u32 nodes,
					 u32 slots)
{
	struct snpu_graph *g;

	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g)
		return NULL;
	g->charged = sizeof(*g);
	g->ctx = ctx;
	g->nodes = nodes;
	g->slots = slots;
	kref_init(&g->ref);
	INIT_LIST_HEAD(&g->free);
	INIT_WORK(&g->free_work, snpu_graph_free_work);
	g->inst_bytes = sizeof(struct snpu_ginst) +
			array_size(g->nodes, sizeof(struct snpu_gnode));
	return g;
}

/*
 * Check every node and edge of a definition and compile it: what needs
 * no lock (the collective nodes are looked up before). Whatever happens,
 * the memory it took is counted against the context's graph memory: a
 * later snpu_graph_free() gives it back.
 */
static int snpu_graph_build(struct snpu_graph *g,
			    const struct snpu_graph_in *in)
{
	u32 nacc;
	int ret;

	ret = snpu_graph_accesses(g, in, &nacc);
	if (!ret)
		ret = snpu_graph_edges(g, in, g->edges);
	if (!ret)
		ret = snpu_graph_templates(g, in);
	if (!ret)
		ret = snpu_graph_hazard_lists(g, nacc);
	atomic64_add(g->charged, &g->ctx->graph_mem);
	return ret;
}

/* Within the quotas, bound to the context's memory and ranks: a handle. */
static int snpu_graph_publish_locked(struct snpu_context *ctx,
				     struct snpu_graph *g)
{
	u32 n;
	int ret = 0;

	lockdep_assert_held(&ctx->lock);
	if (ctx->graphs >= snpu_quota.graphs ||
	    atomic64_read(&ctx->graph_mem) > snpu_quota.graph_mem)
		ret = -ENOSPC;
	/* The ranks may have gone since the first look. */
	for (n = 0; !ret && n < g->ncolls; n++)
		if (!snpu_gcoll_rank_locked(ctx, &g->colls[n]))
			ret = -ENOENT;
	if (!ret)
		ret = snpu_graph_plain_locked(ctx, g);
	if (!ret)
		ret = snpu_object_add_locked(ctx, &g->obj, SNPU_OBJ_GRAPH);
	if (!ret)
		ctx->graphs++;
	return ret;
}

int snpu_ioc_graph_create(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_graph_create *c = &arg->graph_create;
	struct snpu_graph_in in = { };
	struct snpu_graph *g;
	int ret;

	ret = snpu_graph_check_create(c);
	if (ret)
		return ret;
	g = snpu_graph_new(ctx, c->nodes_count, c->slots_count);
	if (!g)
		return -ENOMEM;

	ret = snpu_graph_read(c, g, &in);
	if (!ret) {
		mutex_lock(&ctx->lock);
		ret = snpu_graph_colls_locked(ctx, g, &in);
		mutex_unlock(&ctx->lock);
	}
	if (!ret)
		ret = snpu_graph_build(g, &in);
	else
		atomic64_add(g->charged, &ctx->graph_mem);
	if (ret)
		goto fail;

	mutex_lock(&ctx->lock);
	ret = snpu_graph_publish_locked(ctx, g);
	mutex_unlock(&ctx->lock);
	if (ret)
		goto fail;
	c->graph = g->obj.handle;
	return 0;

fail:
	snpu_graph_free(g);
	return ret;
}

/**
 * snpu_graph_ckpt_rec() - a graph as a checkpoint image holds it
 * @g: the graph
 * @r: out: its GRAPH record
 * @src: out: the definition bytes that follow it (@r->def_bytes)
 *
 * Return: 0, or -EOPNOTSUPP for a graph with collective nodes: they name
 * communicators, which images do not hold yet.
 */
int snpu_graph_ckpt_rec(const struct snpu_graph *g, struct snpu_ckpt_graph *r,
			const void **src)
{
	u32 i;

	if (g->ncolls)
		return -EOPNOTSUPP;
	memset(r, 0, sizeof(*r));
	r->handle = g->obj.handle;
	r->nodes = g->nodes;
	r->edges = g->edges;
	r->slots = g->slots;
	r->def_bytes = g->src_bytes;
	r->scratch_bytes = g->bytes[SNPU_GRES_SCRATCH];
	for (i = 0; i < g->slots; i++)
		r->slot_bytes[i] = g->bytes[i];
	*src = g->src;
	return 0;
}

/* A definition the create ioctl would refuse is an image out of range. */
static int snpu_graph_restore_errno(int ret)
{
	switch (ret) {
	case -EINVAL:	/* a node, an edge, a count, an extent */
	case -EFAULT:	/* a plain address outside the restored memory */
	case -ENOENT:	/* a collective node's rank */
	case -EBUSY:	/* the handle is another object's */
		return -EPROTO;
	}
	return ret;
}

/**
 * snpu_graph_restore_locked() - rebuild a graph of a checkpoint image
 * @ctx: the context being restored, with its memory restored
 * @r: the GRAPH record, as kmod/core/ckpt.c passed it
 * @src: its definition (@r->def_bytes bytes, under the image's CRC),
 *       allocated with kvmalloc(); the graph takes it over, and frees it
 *       on error
 *
 * The definition goes through the checks and the build of
 * SNPU_IOC_GRAPH_CREATE, under the image's handle: nothing in it is
 * trusted. Charged as a create is.
 *
 * Return: 0; -EPROTO for a definition the create ioctl refuses or a
 * handle taken; -ENOSPC past the graph quotas; -EOPNOTSUPP for a test
 * kernel without test_hooks; -ENOMEM.
 */
int snpu_graph_restore_locked(struct snpu_context *ctx,
			      const struct snpu_ckpt_graph *r, void *src)
{
	struct snpu_graph_create c = {
		.nodes_count = r->nodes, .edges_count = r->edges,
		.slots_count = r->slots, .node_size = SNPU_GRAPH_NODE_SIZE,
		.scratch_bytes = r->scratch_bytes,
	};
	struct snpu_graph_in in;
	struct snpu_graph *g;
	u32 i;
	int ret;

	lockdep_assert_held(&ctx->lock);
	ret = snpu_graph_check_create(&c);
	if (!ret && r->def_bytes != snpu_ckpt_graph_def_bytes(r->nodes,
							      r->edges))
		ret = -EINVAL;
	for (i = 0; !ret && i < r->slots; i++)
		if (!r->slot_bytes[i])
			ret = -EINVAL;
	if (ret) {
		kvfree(src);
		return snpu_graph_restore_errno(ret);
	}
	g = snpu_graph_new(ctx, r->nodes, r->slots);
	if (!g) {
		kvfree(src);
		return -ENOMEM;
	}
	g->src = src;
	g->src_bytes = r->def_bytes;
	g->charged += r->def_bytes;
	g->edges = r->edges;
	for (i = 0; i < r->slots; i++)
		g->bytes[i] = r->slot_bytes[i];
	g->bytes[SNPU_GRES_SCRATCH] = r->scratch_bytes;
	snpu_graph_in_init(&in, src, r->nodes, r->edges);
	g->obj.handle = r->handle;

	ret = snpu_graph_colls_locked(ctx, g, &in);
	if (!ret)
		ret = snpu_graph_build(g, &in);
	else
		atomic64_add(g->charged, &ctx->graph_mem);
	if (!ret)
		ret = snpu_graph_publish_locked(ctx, g);
	if (ret) {
		snpu_graph_free(g);
		return snpu_graph_restore_errno(ret);
	}
	return 0;
}

/**
 * snpu_graph_destroy_locked() - drop a graph's handle
 * @ctx: the context
 * @g: the graph; freed now, or by its last launch in flight
 */
void snpu_graph_destroy_locked(struct snpu_context *ctx, struct snpu_graph *g)
{
	lockdep_assert_held(&ctx->lock);
	xa_erase(&ctx->handles, g->obj.handle);
	ctx->graphs--;
	kref_put(&g->ref, snpu_graph_release);
}

int snpu_ioc_graph_destroy(struct snpu_context *ctx, union snpu_ioc_arg *arg)
{
	struct snpu_handle_op *h = &arg->handle_op;
	struct snpu_graph *g;
	int ret = 0;

	if (h->flags || h->pad || !snpu_zero(h->reserved, sizeof(h->reserved)))
		return -EINVAL;
	mutex_lock(&ctx->lock);
	g = snpu_graph_get_locked(ctx, h->handle);
	if (g)
		snpu_graph_destroy_locked(ctx, g);
	else
		ret = -ENOENT;
	mutex_unlock(&ctx->lock);
	return ret;
}

/* A free instance of @g, or a new one (charged): NULL and *ret on error. */
static struct snpu_ginst *snpu_ginst_get_locked(struct snpu_context *ctx,
						struct snpu_graph *g, int *ret)
{
	struct snpu_ginst *inst;
	u32 n;

	lockdep_assert_held(&ctx->lock);
	spin_lock(&ctx->sched_lock);
	inst = list_first_entry_or_null(&g->free, struct snpu_ginst, node);
	if (inst)
		list_del_init(&inst->node);
	spin_unlock(&ctx->sched_lock);
	if (inst)
		return inst;

	if (atomic64_add_return(g->inst_bytes, &ctx->graph_mem) >
	    snpu_quota.graph_mem) {
		atomic64_sub(g->inst_bytes, &ctx->graph_mem);
		*ret = -ENOSPC;
		return NULL;
	}
	inst = kvzalloc(g->inst_bytes, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!inst) {
		atomic64_sub(g->inst_bytes, &ctx->graph_mem);
		*ret = -ENOMEM;
		return NULL;
	}
	g->charged += g->inst_bytes;
	INIT_LIST_HEAD(&inst->node);
	INIT_LIST_HEAD(&inst->ready);
	inst->graph = g;
	for (n = 0; n < g->nodes; n++) {
		inst->nodes[n].inst = inst;
		inst->nodes[n].index = n;
		inst->nodes[n].work.gnode = &inst->nodes[n];
	}
	return inst;
}

/* Do the bound ranges overlap each other or a plain range of the graph? */
static bool snpu_ginst_aliased(const struct snpu_graph *g,
			       const struct snpu_ginst *inst)
{
	u32 r, q;

	for (r = 0; r < SNPU_GRES_COUNT; r++) {
		u64 end = inst->addr[r] + g->bytes[r];

		if (!inst->mem[r])
			continue;
		if (snpu_graph_plain_overlaps(g->plain, g->nplain,
					      inst->addr[r], end))
			return true;
		for (q = r + 1; q < SNPU_GRES_COUNT; q++)
			if (inst->mem[q] && inst->addr[q] < end &&
			    inst->addr[r] < inst->addr[q] + g->bytes[q])
				return true;
	}
	return false;
}

/* Fill the node works of an instance for its bindings. */
static void snpu_ginst_bind(const struct snpu_graph *g,
			    struct snpu_ginst *inst)
{
	u32 n, a;

	for (n = 0; n < g->nodes; n++) {
		const struct snpu_gdef *d = &g->def[n];
		struct snpu_work *w = &inst->nodes[n].work;

		w->op = d->tmpl.op;
		w->nblocks = d->tmpl.nblocks;
		/* A collective's buffers are bound with its rank (below). */
		if (w->op == SNPU_OP_COLL)
			continue;
		if (w->op == SNPU_OP_LAUNCH) {
			w->launch = d->tmpl.launch;
			w->units = d->tmpl.units;
			w->chunk = d->tmpl.chunk;
			w->fpu = d->tmpl.fpu;
		} else {
			w->copy = d->tmpl.copy;
		}
		for (a = 0; a < SNPU_GNODE_MAX_ACC; a++)
			if (d->res[a] != SNPU_GRES_PLAIN)
				snpu_gwork_set(w, a,
					       inst->base[d->res[a]] + d->off[a]);
	}
	inst->aliased = snpu_ginst_aliased(g, inst);
	inst->bound = true;
}

/* Where buffer @a (0 recv, 1 send) of a collective node is, this launch. */
static void snpu_gcoll_buf(const struct snpu_graph *g,
			   const struct snpu_ginst *inst,
			   const struct snpu_gcoll *c, u32 a, u64 *addr,
			   void **kaddr)
{
	const struct snpu_gdef *d = &g->def[c->node];
	u8 res = d->res[a];

	if (res == SNPU_GRES_PLAIN) {
		*addr = d->off[a];
		*kaddr = c->kaddr[a];
	} else {
		*addr = inst->addr[res] + d->off[a];
		*kaddr = inst->base[res] + d->off[a];
	}
}

/*
 * Bind the collective nodes of a launch, in index order: each takes its
 * rank's next collective. What was bound is given back by
 * snpu_graph_put_job() if the launch is not queued after all.
 */
static int snpu_graph_bind_colls_locked(struct snpu_context *ctx,
					struct snpu_graph *g,
					struct snpu_ginst *inst)
{
	struct snpu_comm_rank *r;
	void *send, *recv;
	u64 saddr, raddr;
	u32 i;
	int ret;

	lockdep_assert_held(&ctx->lock);
	for (i = 0; i < g->ncolls; i++) {
		const struct snpu_gcoll *c = &g->colls[i];
		const struct snpu_gdef *d = &g->def[c->node];

		r = snpu_gcoll_rank_locked(ctx, c);
		if (!r)
			return -ENOENT;
		snpu_gcoll_buf(g, inst, c, 0, &raddr, &recv);
		saddr = 0;
		send = NULL;
		/* Off a broadcast's root, the send buffer is not bound. */
		if (d->res[1] != SNPU_GRES_PLAIN || c->kaddr[1])
			snpu_gcoll_buf(g, inst, c, 1, &saddr, &send);
		ret = snpu_coll_check_buffers(&c->desc, c->rank, saddr, raddr);
		if (!ret)
			ret = snpu_coll_bind(r, &inst->nodes[c->node].work,
					     &c->desc, send, recv);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * snpu_graph_prepare_locked() - check a graph launch and take an instance
 * @ctx: the context
 * @job: the reserved job of the launch
 * @t: the task
 *
 * Return: 0; -ENOENT for a handle that names no graph; -EINVAL for an
 * unused slot or a scratch the graph has no room for that is not zero, or
 * a slot or scratch address misaligned for a node's 32-bit elements;
 * -EFAULT for a binding not inside one allocation; -ENOSPC or -ENOMEM
 * when a new instance cannot be had. What was taken is given back by
 * snpu_graph_put_job().
 */
int snpu_graph_prepare_locked(struct snpu_context *ctx, struct snpu_job *job,
			      const struct snpu_task *t)
{
	struct snpu_graph *g;
	struct snpu_ginst *inst;
	u32 r, n;
	int ret = 0;

	lockdep_assert_held(&ctx->lock);
	g = snpu_graph_get_locked(ctx, t->graph.graph);
	if (!g)
		return -ENOENT;
	for (r = g->slots; r < SNPU_GRAPH_MAX_SLOTS; r++)
		if (t->graph.slots[r])
			return -EINVAL;
	if (!g->bytes[SNPU_GRES_SCRATCH] && t->graph.scratch)
		return -EINVAL;
	/* A node's 32-bit elements at an aligned offset of a slot: aligned. */
	for (r = 0; r < g->slots; r++)
		if (t->graph.slots[r] & g->align[r])
			return -EINVAL;
	if (t->graph.scratch & g->align[SNPU_GRES_SCRATCH])
		return -EINVAL;

	inst = snpu_ginst_get_locked(ctx, g, &ret);
	if (!inst)
		return ret;
	kref_get(&g->ref);
	job->ginst = inst;
	inst->job = job;
	/*
	 * A reused instance still has its last launch's counts: cleared
	 * before anything can fail, or the put of a launch refused below
	 * would count that launch in the device's statistics again.
	 */
	inst->dispatched = false;
	atomic_set(&inst->visits, 0);
	atomic_set(&inst->invalid, 0);
	for (r = 0; r < SNPU_GRES_COUNT; r++) {
		u64 addr = r == SNPU_GRES_SCRATCH ? t->graph.scratch :
			   r < g->slots ? t->graph.slots[r] : 0;
		void *base = NULL;

		if (g->bytes[r] && (r < g->slots || r == SNPU_GRES_SCRATCH)) {
			ret = snpu_mem_resolve_locked(ctx, addr, g->bytes[r],
						      &inst->mem[r], &base);
			if (ret)
				return ret;
		}
		if (inst->addr[r] != addr || inst->base[r] != base)
			inst->bound = false;
		inst->addr[r] = addr;
		inst->base[r] = base;
	}
	if (!inst->bound)
		snpu_ginst_bind(g, inst);

	for (n = 0; n < g->nodes; n++) {
		struct snpu_gnode *node = &inst->nodes[n];

		node->work.job = job;
		atomic_set(&node->pending, g->fanin[n] + !g->fanin[n]);
		atomic_set(&node->state, 0);
	}
	inst->next = NULL;
	atomic_set(&inst->hold, g->nodes + 1);
	atomic_set(&inst->error, 0);
	return snpu_graph_bind_colls_locked(ctx, g, inst);
}

/**
 * snpu_graph_put_job() - give back what a launch took
 * @job: the launch, complete or never committed
 *
 * The instance goes back to its graph for the next launch, the bound
 * allocations and the graph are released (by snpu_free_wq when last).
 */
void snpu_graph_put_job(struct snpu_job *job)
{
	struct snpu_ginst *inst = job->ginst;
	struct snpu_graph *g = inst->graph;
	struct snpu_context *ctx = g->ctx;
	struct snpu_device *sdev = ctx->sdev;
	u32 r;

	/* A launch not queued after all: its collectives are given back. */
	for (r = 0; r < g->ncolls; r++) {
		struct snpu_work *w = &inst->nodes[g->colls[r].node].work;

		if (w->coll.part)
			snpu_coll_unbind(w);
	}
	for (r = 0; r < SNPU_GRES_COUNT; r++) {
		if (inst->mem[r])
			snpu_mem_put_deferred(inst->mem[r]);
		inst->mem[r] = NULL;
	}
	if (inst->dispatched) {
		atomic64_inc(&sdev->gstats.launches);
		atomic64_add(g->nodes, &sdev->gstats.nodes);
		atomic64_add(atomic_read(&inst->visits),
			     &sdev->gstats.hazard_visits);
		atomic64_add(atomic_read(&inst->invalid),
			     &sdev->gstats.hazard_invalid);
	}
	/*
	 * The launch may still be its stream's tail: a commit looking at it
	 * under sched_lock sees its instance, or none once it is free.
	 */
	spin_lock(&ctx->sched_lock);
	inst->job = NULL;
	inst->next = NULL;
	list_add(&inst->node, &g->free);
	job->ginst = NULL;
	spin_unlock(&ctx->sched_lock);
	kref_put(&g->ref, snpu_graph_release_deferred);
}

/*
 * At a stitch: count the visits of node @n's hazard-list entries @list,
 * @count of them, and check that each pair does conflict. The lists hold
 * nothing else, so the invalid count stays 0 (debugfs shows both). A
 * completion only counts its visits: the pairs were checked here.
 */
static void snpu_graph_visit(const struct snpu_graph *g,
			     struct snpu_ginst *next, u32 n, const u32 *list,
			     u32 count)
{
	const struct snpu_gacc *a = &g->acc[g->acc_off[n]];
	u32 na = g->acc_off[n + 1] - g->acc_off[n], i, bad = 0;

	for (i = 0; i < count; i++) {
		u32 m = list[i];

		if (!snpu_gnode_conflict(a, na, &g->acc[g->acc_off[m]],
					 g->acc_off[m + 1] - g->acc_off[m]))
			bad++;
	}
	atomic_add(count, &next->visits);
	if (bad)
		atomic_add(bad, &next->invalid);
}

/**
 * snpu_graph_commit_work() - what committing a prepared launch may cost
 * @job: the launch
 *
 * Return: its nodes plus its graph's hazard-list entries, which a stitch
 * visits (snpu_jobs_commit() bounds a hold of sched_lock with it).
 */
u32 snpu_graph_commit_work(const struct snpu_job *job)
{
	const struct snpu_graph *g = job->ginst->graph;

	return 1 + g->nodes + (g->haz_off ? g->haz_off[g->nodes] : 0);
}

/**
 * snpu_graph_stitch_locked() - let a launch overlap the one before it
 * @ctx: the context
 * @prev: the last job of the launch's stream, not complete
 * @job: the launch being committed
 *
 * A launch is stitched when @prev is a started launch of the same graph
 * with the same bindings, none of them aliased, and the graph has hazard
 * lists: then each node also waits for the nodes of @prev its list names
 * that are not complete, and the launch's completion waits for @prev's.
 * A @prev that is completing has given its instance back already (its
 * nodes are all complete): the launch then simply waits for it.
 *
 * @prev's nodes complete meanwhile without a lock. For each node m of
 * @prev not known complete, the nodes its list names first count one
 * more wait, then m is marked SNPU_GNODE_STITCHED; a completion marks its
 * node SNPU_GNODE_DONE. Both marks are set with a fully ordered
 * atomic_fetch_or(), so exactly one side sees the other's: the stitch,
 * when m was already done (it takes its waits back), or m's completion,
 * which then tells the nodes through @prev's @next. None of those nodes
 * can run yet: the launch has not started.
 *
 * Return: true when stitched: the launch does not wait for @prev to start.
 */
bool snpu_graph_stitch_locked(struct snpu_context *ctx, struct snpu_job *prev,
			      struct snpu_job *job)
{
	struct snpu_ginst *p = prev->ginst, *inst = job->ginst;
	struct snpu_graph *g = inst->graph;
	u32 m, i;

	lockdep_assert_held(&ctx->sched_lock);
	if (prev->op != SNPU_OP_GRAPH || prev->state != SNPU_JOB_READY ||
	    !p || p->graph != g || !g->haz_off || inst->aliased ||
	    memcmp(p->addr, inst->addr, sizeof(p->addr)))
		return false;

	WRITE_ONCE(p->next, inst);
	for (m = 0; m < g->nodes; m++) {
		const u32 *list = &g->haz[g->haz_off[m]];
		u32 count = g->haz_off[m + 1] - g->haz_off[m];

		if (!count)
			continue;
		snpu_graph_visit(g, inst, m, list, count);
		if (atomic_read(&p->nodes[m].state) & SNPU_GNODE_DONE)
			continue;
		for (i = 0; i < count; i++)
			atomic_inc(&inst->nodes[list[i]].pending);
		if (!(atomic_fetch_or(SNPU_GNODE_STITCHED, &p->nodes[m].state) &
		      SNPU_GNODE_DONE))
			continue;
		/* m completed meanwhile without seeing the mark. */
		for (i = 0; i < count; i++)
			atomic_dec(&inst->nodes[list[i]].pending);
	}
	atomic_inc(&inst->hold);
	atomic64_inc(&ctx->sdev->gstats.stitched);
	return true;
}

/**
 * snpu_graph_start_locked() - a launch's stream reached it
 * @ctx: the context
 * @job: the launch; a cancelled one starts too and cancels its nodes
 *
 * The roots that have nothing else to wait for wait on the instance's
 * ready list for the launch's dispatch.
 */
void snpu_graph_start_locked(struct snpu_context *ctx, struct snpu_job *job)
{
	struct snpu_ginst *inst = job->ginst;
	struct snpu_graph *g = inst->graph;
	u32 i;

	lockdep_assert_held(&ctx->sched_lock);
	if (job->cancel)
		atomic_cmpxchg(&inst->error, 0, -ECANCELED);
	for (i = 0; i < g->nroots; i++) {
		struct snpu_gnode *node = &inst->nodes[g->roots[i]];

		if (atomic_dec_and_test(&node->pending))
			list_add_tail(&node->work.node, &inst->ready);
	}
}

/* One hold of a launch less; with the last, it goes to @todo to end. */
static void snpu_graph_unhold(struct snpu_ginst *inst, struct list_head *todo)
{
	if (atomic_dec_and_test(&inst->hold))
		list_add_tail(&inst->job->node, todo);
}

/**
 * snpu_graph_unstitch_locked() - the launch before a stitched one is done
 * @job: the stitched launch
 * @todo: gets @job when it is complete now
 */
void snpu_graph_unstitch_locked(struct snpu_job *job, struct list_head *todo)
{
	lockdep_assert_held(&job->ctx->sched_lock);
	job->stitched = false;
	snpu_graph_unhold(job->ginst, todo);
}

/* The nodes @list of @inst, @count of them, wait one completion less. */
static void snpu_gnodes_release(struct snpu_ginst *inst, const u32 *list,
				u32 count, struct list_head *nodes)
{
	u32 i;

	for (i = 0; i < count; i++) {
		struct snpu_gnode *s = &inst->nodes[list[i]];

		if (atomic_dec_and_test(&s->pending))
			list_add_tail(&s->work.node, nodes);
	}
}

/*
 * A node is complete: resolve its successors in its launch and, when a
 * launch is stitched to it, that launch's nodes its hazard list names.
 * No lock: each node ready now is this caller's alone and goes to
 * @nodes; the launch, when this was the last of its holds, to @todo.
 */
static void snpu_gnode_finish(struct snpu_gnode *node, int error,
			      struct list_head *nodes, struct list_head *todo)
{
	struct snpu_ginst *inst = node->inst;
	struct snpu_graph *g = inst->graph;
	u32 n = node->index;

	if (error)
		atomic_cmpxchg(&inst->error, 0, error);
	snpu_gnodes_release(inst, &g->fanout[g->fanout_off[n]],
			    g->fanout_off[n + 1] - g->fanout_off[n], nodes);
	/* Pairs with the stitch's mark: see snpu_graph_stitch_locked(). */
	if (atomic_fetch_or(SNPU_GNODE_DONE, &node->state) &
	    SNPU_GNODE_STITCHED) {
		struct snpu_ginst *next = READ_ONCE(inst->next);
		u32 count = g->haz_off[n + 1] - g->haz_off[n];

		atomic_add(count, &next->visits);
		snpu_gnodes_release(next, &g->haz[g->haz_off[n]], count,
				    nodes);
	}
	/* Last: once the hold is down, the instance may be given back. */
	snpu_graph_unhold(inst, todo);
}

/* Should a ready node be finished without a core? */
static bool snpu_gnode_cancelled(const struct snpu_gnode *node)
{
	const struct snpu_job *job = node->work.job;

	return atomic_read(&node->inst->error) || READ_ONCE(job->ctx->dying) ||
	       READ_ONCE(job->stream->error);
}

/* Does a ready node need a core? NOP launches complete where they are. */
static bool snpu_gnode_needs_core(const struct snpu_gnode *node)
{
	const struct snpu_work *w = &node->work;

	return w->op != SNPU_OP_LAUNCH || w->launch.kernel != SNPU_KERNEL_NOP;
}

/* A node that needs no core runs where it is: its event, core -1. */
static void snpu_gnode_trace_nocore(const struct snpu_gnode *node)
{
	const struct snpu_job *job = node->work.job;
	const struct snpu_context *ctx = job->ctx;

	trace_snpu_graph_node(ctx->sdev->index, ctx->id, job->stream_handle,
			      job->seq, node->index, -1);
}

/*
 * Ready nodes of one launch: the cancelled ones and those that need no
 * core complete here (and what they make ready with them); the others go
 * to the cores together (snpu_sched_ready_list()), one of them to the
 * calling core's hand-off slot when it may run it next.
 */
static void snpu_gnodes_run(struct list_head *nodes, struct list_head *todo,
			    struct snpu_work **handoff)
{
	struct snpu_gnode *node;
	LIST_HEAD(run);

again:
	while (!list_empty(nodes)) {
		node = list_first_entry(nodes, struct snpu_gnode, work.node);
		list_del(&node->work.node);
		if (node->work.op == SNPU_OP_COLL) {
			/* Completed with its collective (comm.c). */
			snpu_coll_arrive(&node->work,
					 snpu_gnode_cancelled(node) ?
					 -ECANCELED : 0);
		} else if (snpu_gnode_cancelled(node)) {
			snpu_gnode_finish(node, -ECANCELED, nodes, todo);
		} else if (!snpu_gnode_needs_core(node)) {
			snpu_gnode_trace_nocore(node);
			snpu_gnode_finish(node, 0, nodes, todo);
		} else {
			list_add_tail(&node->work.node, &run);
		}
	}
	if (list_empty(&run))
		return;
	if (snpu_sched_ready_list(&run, handoff))
		return;
	/*
	 * The context is closing (it is dying, so every node made ready
	 * from here on is cancelled above): none of them runs.
	 */
	while (!list_empty(&run)) {
		node = list_first_entry(&run, struct snpu_gnode, work.node);
		list_del(&node->work.node);
		snpu_gnode_finish(node, -ECANCELED, nodes, todo);
	}
	goto again;
}

/**
 * snpu_graph_dispatch() - dispatch a ready launch
 * @job: the launch
 * @todo: gets the jobs that become ready
 * @handoff: see snpu_sched_ready()
 *
 * The first dispatch hands the ready roots to the cores; the one after
 * the last node (and the launch before, when stitched) completes the
 * launch with the first node's error.
 */
void snpu_graph_dispatch(struct snpu_job *job, struct list_head *todo,
			 struct snpu_work **handoff)
{
	struct snpu_context *ctx = job->ctx;
	struct snpu_ginst *inst = job->ginst;
	LIST_HEAD(nodes);
	bool first;

	spin_lock(&ctx->sched_lock);
	first = !inst->dispatched;
	inst->dispatched = true;
	if (first) {
		if (!job->cancel) {
			snpu_job_trace_start(ctx, job);
			trace_snpu_graph_launch(ctx->sdev->index, ctx->id,
						job->stream_handle, job->seq,
						inst->graph->obj.handle,
						inst->graph->nodes,
						job->stitched);
		}
		list_splice_init(&inst->ready, &nodes);
	}
	spin_unlock(&ctx->sched_lock);
	if (!first) {
		snpu_job_finish(job, atomic_read(&inst->error), 0, todo);
		return;
	}
	snpu_gnodes_run(&nodes, todo, handoff);
	/* The dispatch's own hold, after its nodes are on their way. */
	snpu_graph_unhold(inst, todo);
}

/**
 * snpu_gnode_complete() - a node has run (or was cancelled)
 * @node: the node
 * @error: 0 or -errno
 * @handoff: see snpu_job_complete()
 *
 * Takes no lock unless the launch completes, or nodes it makes ready go
 * to the cores' lists.
 */
void snpu_gnode_complete(struct snpu_gnode *node, int error,
			 struct snpu_work **handoff)
{
	LIST_HEAD(nodes);
	LIST_HEAD(todo);

	snpu_gnode_finish(node, error, &nodes, &todo);
	snpu_gnodes_run(&nodes, &todo, handoff);
	snpu_jobs_run_handoff(&todo, handoff);
}

static int snpu_graph_stats_show(struct seq_file *m, void *unused)
{
	struct snpu_graph_stats *st = &((struct snpu_device *)m->private)->gstats;

	seq_printf(m, "launches %lld\n", atomic64_read(&st->launches));
	seq_printf(m, "stitched %lld\n", atomic64_read(&st->stitched));
	seq_printf(m, "nodes %lld\n", atomic64_read(&st->nodes));
	seq_printf(m, "hazard_visits %lld\n",
		   atomic64_read(&st->hazard_visits));
	seq_printf(m, "hazard_invalid %lld\n",
		   atomic64_read(&st->hazard_invalid));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(snpu_graph_stats);

/**
 * snpu_graph_debugfs() - the device's graph statistics file
 * @sdev: the device, with its debugfs directory
 */
void snpu_graph_debugfs(struct snpu_device *sdev)
{
	debugfs_create_file("graph_stats", 0444, sdev->debugfs, sdev,
			    &snpu_graph_stats_fops);
}
