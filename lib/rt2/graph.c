// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: the execution graph - the builder, lowering of a model into kernel
 * nodes, the passes (the offline optimizer), and the final graph: node IDs
 * in execution order, CSR edges both ways, the launch order.
 *
 * Lowering order is not execution order: every dependency is an explicit
 * edge, and the final IDs come from a topological sort.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

/* ---- builder ----------------------------------------------------------- */

int rt2_build_node(struct rt2_build *b, unsigned int kernel, int32_t op,
		   int32_t prio)
{
	struct rt2_node *n;

	if (kernel >= RT2_K_COUNT)
		return -EINVAL;
	if (b->nnodes == b->cap_nodes) {
		unsigned int cap = b->cap_nodes ? 2 * b->cap_nodes : 32;

		n = realloc(b->nodes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->nodes = n;
		b->cap_nodes = cap;
	}
	n = &b->nodes[b->nnodes];
	memset(n, 0, sizeof(*n));
	n->kernel = kernel;
	n->type = rt2_kernel_node_type(kernel);
	n->worker = rt2_kernel_worker(kernel);
	n->op = op;
	n->prio = prio;
	n->seq = b->seq++;
	return (int)b->nnodes++;
}

int rt2_build_edge(struct rt2_build *b, unsigned int from, unsigned int to)
{
	struct rt2_edge *e;

	if (from >= b->nnodes || to >= b->nnodes || from == to)
		return -EINVAL;
	if (b->nedges == b->cap_edges) {
		unsigned int cap = b->cap_edges ? 2 * b->cap_edges : 64;

		e = realloc(b->edges, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		b->edges = e;
		b->cap_edges = cap;
	}
	b->edges[b->nedges++] = (struct rt2_edge){ from, to };
	return 0;
}

void rt2_build_fini(struct rt2_build *b)
{
	free(b->nodes);
	free(b->edges);
	free(b->rels);
	memset(b, 0, sizeof(*b));
}

/* An edge from @from when it is a node (>= 0). */
static int rt2_edge_opt(struct rt2_build *b, int from, int to)
{
	return from < 0 || from == to ? 0 :
	       rt2_build_edge(b, (unsigned int)from, (unsigned int)to);
}

static void rt2_node_io(struct rt2_build *b, int id, int32_t in, int32_t out)
{
	struct rt2_node *n = &b->nodes[id];

	if (in >= 0)
		n->in[n->nin++] = in;
	if (out >= 0)
		n->out[n->nout++] = out;
}

/* ---- lowering ------------------------------------------------------------ */

static const unsigned int rt2_op_kernel[] = {
	[SNPU_RT2_OP_MATMUL] = RT2_K_LAUNCH_MATMUL,
	[SNPU_RT2_OP_ADD] = RT2_K_LAUNCH_ADD,
	[SNPU_RT2_OP_RELU] = RT2_K_LAUNCH_RELU,
	[SNPU_RT2_OP_CUSTOM] = RT2_K_LAUNCH_CUSTOM,
	[SNPU_RT2_OP_BIAS_ADD] = RT2_K_LAUNCH_BIAS_ADD,
	[SNPU_RT2_OP_RELU_BWD] = RT2_K_LAUNCH_RELU_BWD,
	[SNPU_RT2_OP_SOFTMAX_XENT] = RT2_K_LAUNCH_SOFTMAX_XENT,
	[SNPU_RT2_OP_COLSUM] = RT2_K_LAUNCH_COLSUM,
	[SNPU_RT2_OP_ARGMAX] = RT2_K_LAUNCH_ARGMAX,
	[SNPU_RT2_OP_COUNT_EQ] = RT2_K_LAUNCH_COUNT_EQ,
	[SNPU_RT2_OP_AFFINE] = RT2_K_LAUNCH_AFFINE,
	[SNPU_RT2_OP_SGD] = RT2_K_LAUNCH_SGD,
	[SNPU_RT2_OP_ALLREDUCE] = RT2_K_LAUNCH_ALLREDUCE,
};

/* How many ops read tensor @t (an op reading it twice counts once). */
static unsigned int rt2_uses(const struct snpu_rt2_model *m, int t,
			     int *first)
{
	unsigned int i, j, n = 0;

	*first = -1;
	for (i = 0; i < m->nops; i++) {
		for (j = 0; j < m->ops[i].desc.nin; j++) {
			if (m->ops[i].desc.in[j] != t)
				continue;
			if (*first < 0)
				*first = (int)i;
			n++;
			break;
		}
	}
	return n;
}

/* A fed input travels in a copy flow: one consumer, not an output. */
static bool rt2_flow_candidate(const struct snpu_rt2_model *m, int t,
			       int *op)
{
	const struct rt2_tensor *mt = &m->tensors[t];

	return mt->kind == RT2_T_INPUT && !mt->output &&
	       rt2_uses(m, t, op) == 1;
}

/* ... of an op with at least two of them. */
static bool rt2_in_copy_flow(const struct snpu_rt2_model *m, int t)
{
	unsigned int j, n = 0;
	int op, o2;

	if (!rt2_flow_candidate(m, t, &op))
		return false;
	for (j = 0; j < m->ops[op].desc.nin; j++)
		if (rt2_flow_candidate(m, m->ops[op].desc.in[j], &o2))
			n++;
	return n >= 2;
}

struct rt2_lower {
	int *tprod;	/* node that materialises the tensor */
	int *tlaunch;	/* node that submits the work writing it */
	int *tshape;	/* node that infers its shape */
	int *oplaunch;	/* per op: its launch */
	int *d2h;	/* per tensor: its output copy */
};

static int rt2_lower_inputs(struct rt2_build *b,
			    const struct snpu_rt2_model *m,
			    struct rt2_lower *l)
{
	unsigned int t;
	int id, first;

	for (t = 0; t < m->ntensors; t++) {
		const struct rt2_tensor *mt = &m->tensors[t];
		bool flow;

		if (mt->kind != RT2_T_INPUT)
			continue;
		if (!rt2_uses(m, (int)t, &first) && !mt->output)
			continue;
		flow = rt2_in_copy_flow(m, (int)t);
		/* Graph replay: every host copy before the captured ops. */
		if (first >= 0 && (b->flags & SNPU_RT2_EXEC_GRAPH))
			first = 0;
		id = rt2_build_node(b, flow ? RT2_K_COPY_FLOW_LAUNCH :
				    RT2_K_H2D_COPY, -1,
				    first >= 0 ? first : (int)m->nops);
		if (id < 0)
			return id;
		rt2_node_io(b, id, flow ? (int32_t)t : -1, (int32_t)t);
		if (flow) {
			b->nodes[id].count = 1;
			b->nodes[id].arg = first;	/* the consumer op */
		}
		l->tprod[t] = id;
		l->tlaunch[t] = id;
	}
	return 0;
}

static int rt2_lower_op(struct rt2_build *b, const struct snpu_rt2_model *m,
			struct rt2_lower *l, unsigned int i)
{
	const struct rt2_op *op = &m->ops[i];
	int inf, al, bt, la, ret = 0;
	unsigned int j;
	int32_t t;

	/* GEMM_TN and GEMM_NT; no kernel transposes both operands. */
	if (op->desc.type == SNPU_RT2_OP_MATMUL &&
	    op->desc.flags == (SNPU_RT2_MATMUL_TRANS_A |
			       SNPU_RT2_MATMUL_TRANS_B))
		return -EOPNOTSUPP;
	inf = rt2_build_node(b, RT2_K_INFER_SHAPE, (int)i, (int)i);
	al = rt2_build_node(b, RT2_K_ALLOC_OUTPUT, (int)i, (int)i);
	bt = rt2_build_node(b, RT2_K_BUILD_TENSOR, (int)i, (int)i);
	la = rt2_build_node(b, rt2_op_kernel[op->desc.type], (int)i, (int)i);
	if (inf < 0 || al < 0 || bt < 0 || la < 0)
		return -ENOMEM;
	rt2_node_io(b, inf, -1, op->out);
	rt2_node_io(b, al, -1, op->out);
	rt2_node_io(b, bt, -1, op->out);
	rt2_node_io(b, la, -1, op->out);
	if (op->out2 >= 0) {
		rt2_node_io(b, inf, -1, op->out2);
		rt2_node_io(b, al, -1, op->out2);
		rt2_node_io(b, bt, -1, op->out2);
		rt2_node_io(b, la, -1, op->out2);
		l->tshape[op->out2] = inf;
		l->tprod[op->out2] = bt;
		l->tlaunch[op->out2] = la;
	}
	ret |= rt2_build_edge(b, inf, al);
	ret |= rt2_build_edge(b, al, bt);
	ret |= rt2_build_edge(b, bt, la);
	for (j = 0; j < op->desc.nin; j++) {
		t = op->desc.in[j];
		rt2_node_io(b, la, t, -1);
		rt2_node_io(b, inf, t, -1);
		ret |= rt2_edge_opt(b, l->tshape[t], inf);
		ret |= rt2_edge_opt(b, l->tprod[t], la);
		if (l->tlaunch[t] != l->tprod[t])
			ret |= rt2_edge_opt(b, l->tlaunch[t], la);
	}
	l->tshape[op->out] = inf;
	l->tprod[op->out] = bt;
	l->tlaunch[op->out] = la;
	l->oplaunch[i] = la;
	return ret ? -ENOMEM : 0;
}

static int rt2_lower_outputs(struct rt2_build *b,
			     const struct snpu_rt2_model *m,
			     struct rt2_lower *l)
{
	unsigned int k;
	int id, ret = 0;
	int32_t t, prio;

	for (k = 0; k < m->noutputs; k++) {
		t = m->outputs[k];
		prio = m->tensors[t].producer;
		if (prio < 0)
			prio = b->nodes[l->tprod[t]].prio;
		/* Graph replay: every host copy after the captured ops. */
		if (b->flags & SNPU_RT2_EXEC_GRAPH)
			prio = (int32_t)m->nops;
		/* Inherits its source's index; not a compute launch. */
		id = rt2_build_node(b, RT2_K_LAUNCH_D2H, -1, prio);
		if (id < 0)
			return id;
		rt2_node_io(b, id, t, -1);
		b->nodes[id].arg = k;
		ret |= rt2_edge_opt(b, l->tprod[t], id);
		if (l->tlaunch[t] != l->tprod[t])
			ret |= rt2_edge_opt(b, l->tlaunch[t], id);
		l->d2h[t] = id;
	}
	return ret ? -ENOMEM : 0;
}

/*
 * A free per transient tensor, after its producer (the free reads the
 * result) and after every launch that uses the memory: its consumers'
 * launches, its output copy, and its own producing launch.
 */
static int rt2_lower_frees(struct rt2_build *b,
			   const struct snpu_rt2_model *m,
			   struct rt2_lower *l)
{
	unsigned int t, i, j;
	int id, ret = 0;

	for (t = 0; t < m->ntensors; t++) {
		if (m->tensors[t].kind == RT2_T_PARAM || l->tprod[t] < 0)
			continue;
		id = rt2_build_node(b, RT2_K_FREE_MEM, -1, -1);
		if (id < 0)
			return id;
		rt2_node_io(b, id, (int32_t)t, -1);
		ret |= rt2_edge_opt(b, l->tprod[t], id);
		ret |= rt2_edge_opt(b, l->tlaunch[t], id);
		ret |= rt2_edge_opt(b, l->d2h[t], id);
		for (i = 0; i < m->nops; i++)
			for (j = 0; j < m->ops[i].desc.nin; j++)
				if (m->ops[i].desc.in[j] == (int)t)
					ret |= rt2_edge_opt(b, l->oplaunch[i],
							    id);
	}
	return ret ? -ENOMEM : 0;
}

/**
 * rt2_lower() - lower a model into kernel nodes
 * @b: an empty builder
 * @m: the model, only read
 *
 * Fed inputs become legacy H2DCopy nodes, or CopyFlowLaunch nodes (count
 * 1) when an op reads two or more inputs that nothing else reads; each op
 * becomes InferShape -> AllocOutputMemory -> BuildTensor -> its launch;
 * each output a LaunchD2HCopy; each transient tensor a FreeMemory.
 *
 * Return: 0, -ENOMEM, or -EOPNOTSUPP for an op the device cannot run.
 */
int rt2_lower(struct rt2_build *b, const struct snpu_rt2_model *m)
{
	struct rt2_lower l;
	unsigned int i, nt = m->ntensors;
	int ret = -ENOMEM;
	int *all;

	all = malloc((4 * (size_t)nt + m->nops + 1) * sizeof(int));
	if (!all)
		return -ENOMEM;
	for (i = 0; i < 4 * nt + m->nops; i++)
		all[i] = -1;
	l.tprod = all;
	l.tlaunch = all + nt;
	l.tshape = all + 2 * nt;
	l.d2h = all + 3 * nt;
	l.oplaunch = all + 4 * nt;
	ret = rt2_lower_inputs(b, m, &l);
	for (i = 0; !ret && i < m->nops; i++)
		ret = rt2_lower_op(b, m, &l, i);
	if (!ret)
		ret = rt2_lower_outputs(b, m, &l);
	if (!ret)
		ret = rt2_lower_frees(b, m, &l);
	free(all);
	return ret;
}

/* ---- passes ----------------------------------------------------------- */

/* Move every edge of @from onto @to (and drop the ones between them). */
static void rt2_redirect(struct rt2_build *b, unsigned int from,
			 unsigned int to)
{
	unsigned int i;

	for (i = 0; i < b->nedges; i++) {
		if (b->edges[i].from == from)
			b->edges[i].from = to;
		if (b->edges[i].to == from)
			b->edges[i].to = to;
	}
}

/**
 * rt2_pass_copy_flow_launch_fuse() - CopyFlowLaunchFuse
 * @b: the graph
 *
 * Fuses the CopyFlowLaunch nodes that feed the same op into one, whose
 * static count is the number of tensors it copies (at most RT2_NODE_IO;
 * more make another fused node). Runs in every mode.
 *
 * Return: 0.
 */
int rt2_pass_copy_flow_launch_fuse(struct rt2_build *b)
{
	unsigned int i, j, n = b->nnodes;

	for (i = 0; i < n; i++) {
		struct rt2_node *keep = &b->nodes[i];

		if (keep->dead || keep->kernel != RT2_K_COPY_FLOW_LAUNCH)
			continue;
		for (j = i + 1; j < n; j++) {
			struct rt2_node *o = &b->nodes[j];

			if (o->dead || o->kernel != RT2_K_COPY_FLOW_LAUNCH ||
			    o->arg != keep->arg ||
			    keep->count + o->count > RT2_NODE_IO)
				continue;
			memcpy(&keep->in[keep->nin], o->in,
			       o->nin * sizeof(o->in[0]));
			memcpy(&keep->out[keep->nout], o->out,
			       o->nout * sizeof(o->out[0]));
			keep->nin += o->nin;
			keep->nout += o->nout;
			keep->count += o->count;
			if (o->prio < keep->prio)
				keep->prio = o->prio;
			o->dead = true;
			rt2_redirect(b, j, i);
		}
	}
	return 0;
}

/*
 * Split mixed node @id into its four nodes @k[0..3] (sizes, allocation,
 * result, launch). Edges into it go to the first; edges out of it: every
 * consumer and free reads the result (the third); launch consumers and
 * frees also wait for the copy launch; tensor-building and other
 * consumers do not.
 */
static int rt2_split4(struct rt2_build *b, unsigned int id,
		      const unsigned int *k)
{
	int nid[4], ret = 0;
	unsigned int i, ne;
	struct rt2_node src;

	for (i = 0; i < 4; i++) {
		nid[i] = rt2_build_node(b, k[i], b->nodes[id].op,
					b->nodes[id].prio);
		if (nid[i] < 0)
			return nid[i];
	}
	src = b->nodes[id];
	for (i = 0; i < 4; i++) {
		struct rt2_node *n = &b->nodes[nid[i]];

		memcpy(n->in, src.in, sizeof(n->in));
		memcpy(n->out, src.out, sizeof(n->out));
		n->nin = src.nin;
		n->nout = src.nout;
		n->count = src.count;
		n->arg = src.arg;
		n->owner = src.owner;
	}
	b->nodes[id].dead = true;
	for (i = 0; i < 3; i++)
		ret |= rt2_build_edge(b, nid[i], nid[i + 1]);
	ne = b->nedges;
	for (i = 0; i < ne; i++) {
		struct rt2_edge *e = &b->edges[i];
		unsigned int to = e->to;
		const struct rt2_node *c;

		if (e->to == id) {
			e->to = nid[0];
			continue;
		}
		if (e->from != id)
			continue;
		e->from = nid[2];
		c = &b->nodes[to];
		if (rt2_kernel_is_launch(c->kernel) ||
		    (rt2_kernel(c->kernel)->flags & RT2_KF_FREE))
			ret |= rt2_build_edge(b, nid[3], to);
	}
	return ret ? -ENOMEM : 0;
}

static const unsigned int rt2_h2d_split[4] = {
	RT2_K_CALC_DEVICE_COPY_SIZES, RT2_K_ALLOC_MEM_HBM,
	RT2_K_SHARE_H2D_COPY_RESULT, RT2_K_LAUNCH_H2D_COPY,
};

static const unsigned int rt2_flow_split[4] = {
	RT2_K_CALC_COPY_FLOW_ALLOC_SIZES, RT2_K_ALLOC_COPY_FLOW_HBM,
	RT2_K_PREPARE_COPY_FLOW_RESULT, RT2_K_LAUNCH_COPY_FLOW_H2D,
};

/**
 * rt2_pass_split_mixed_launch_memory() - SplitMixedLaunchMemory
 * @b: the graph
 *
 * Separates owning-result materialisation (memory worker) from the
 * asynchronous submission (launch worker): every H2DCopy becomes
 * CalcDeviceCopySizes -> AllocMemHbm -> ShareH2DCopyResult ->
 * LaunchH2DCopy and every CopyFlowLaunch CalcCopyFlowAllocSizes ->
 * AllocCopyFlowHbm -> PrepareCopyFlowResult -> LaunchCopyFlowH2D, the
 * four carrying the same static count, the launches inheriting the
 * source's compute-node index. Multi-thread mode only.
 *
 * Return: 0, -ENOMEM, or -EPROTO for a copy flow that breaks the
 * cardinality rule.
 */
int rt2_pass_split_mixed_launch_memory(struct rt2_build *b)
{
	unsigned int i, n = b->nnodes;
	int ret;

	for (i = 0; i < n; i++) {
		if (b->nodes[i].dead)
			continue;
		if (b->nodes[i].kernel == RT2_K_H2D_COPY) {
			ret = rt2_split4(b, i, rt2_h2d_split);
		} else if (b->nodes[i].kernel == RT2_K_COPY_FLOW_LAUNCH) {
			ret = rt2_copy_flow_check(&b->nodes[i]);
			if (!ret)
				ret = rt2_split4(b, i, rt2_flow_split);
		} else {
			continue;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* rt2_pass_remove_launch_free_edge(): relation.c */

static const struct rt2_pass rt2_pass_fuse = {
	"CopyFlowLaunchFuse", rt2_pass_copy_flow_launch_fuse
};

static const struct rt2_pass rt2_pass_split = {
	"SplitMixedLaunchMemory", rt2_pass_split_mixed_launch_memory
};

static const struct rt2_pass rt2_pass_relation = {
	"RemoveLaunchFreeEdge", rt2_pass_remove_launch_free_edge
};

/*
 * IsEnableRt2MultiThread(): three workers, and never with the
 * dynamic-shape multi-stream option, which keeps every edge.
 */
static bool rt2_multi_thread(unsigned int flags)
{
	return (flags & SNPU_RT2_EXEC_THREADS) &&
	       !(flags & SNPU_RT2_EXEC_DYN_MULTI_STREAM);
}

/**
 * rt2_passes() - the passes an executor with @flags runs, in order
 * @flags: SNPU_RT2_EXEC_*
 * @out: the passes
 * @max: room in @out
 *
 * CopyFlowLaunchFuse always; SplitMixedLaunchMemory then
 * RemoveLaunchFreeEdge only in multi-thread mode.
 *
 * Return: the number of passes.
 */
unsigned int rt2_passes(unsigned int flags, const struct rt2_pass **out,
			unsigned int max)
{
	unsigned int n = 0;

	if (n < max)
		out[n++] = &rt2_pass_fuse;
	if (rt2_multi_thread(flags)) {
		if (n < max)
			out[n++] = &rt2_pass_split;
		if (n < max)
			out[n++] = &rt2_pass_relation;
	}
	return n;
}

int rt2_run_passes(struct rt2_build *b)
{
	const struct rt2_pass *p[8];
	unsigned int i, n = rt2_passes(b->flags, p, 8);
	int ret;

	for (i = 0; i < n; i++) {
		ret = p[i]->run(b);
		if (ret)
			return ret;
		b->passes[b->npasses++] = p[i]->name;
	}
	return 0;
}

/* ---- final graph ---------------------------------------------------- */

static int rt2_cmp_edge(const void *a, const void *b)
{
	const struct rt2_edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

/*
 * Ready-node order: priority, then creation. Nodes without a priority
 * (-1) come first (frees as early as possible), except among launches,
 * where they come last, as in the launch order.
 */
static bool rt2_before(const struct rt2_node *x, const struct rt2_node *y)
{
	if (x->prio != y->prio) {
		if (rt2_kernel_is_launch(x->kernel) &&
		    rt2_kernel_is_launch(y->kernel))
			return (uint32_t)x->prio < (uint32_t)y->prio;
		return x->prio < y->prio;
	}
	return x->seq < y->seq;
}

static void rt2_heap_push(const struct rt2_node *nodes, uint32_t *h,
			  unsigned int *n, uint32_t v)
{
	unsigned int i = (*n)++, p;

	while (i && rt2_before(&nodes[v], &nodes[h[p = (i - 1) / 2]])) {
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

static uint32_t rt2_heap_pop(const struct rt2_node *nodes, uint32_t *h,
			     unsigned int *n)
{
	uint32_t top = h[0], v = h[--*n];
	unsigned int i = 0, c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && rt2_before(&nodes[h[c + 1]], &nodes[h[c]]))
			c++;
		if (!rt2_before(&nodes[h[c]], &nodes[v]))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

static int rt2_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A node whose predecessors all ran: to the launch heap or the other. */
static void rt2_ready(const struct rt2_node *nodes, uint32_t *heap,
		      unsigned int *hn, uint32_t *lheap, unsigned int *ln,
		      uint32_t v)
{
	if (rt2_kernel_is_launch(nodes[v].kernel))
		rt2_heap_push(nodes, lheap, ln, v);
	else
		rt2_heap_push(nodes, heap, hn, v);
}

/*
 * Strict launch order must agree with the dependencies: no launch may
 * depend, through any path, on a launch later in the order.
 */
static int rt2_check_launch_order(struct rt2_graph *g)
{
	uint32_t *pos, *reach;
	unsigned int i, j;
	int ret = 0;

	pos = calloc(g->nnodes ? g->nnodes : 1, 2 * sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	reach = pos + g->nnodes;	/* 1 + latest launch position above */
	for (i = 0; i < g->nlaunch; i++)
		pos[g->launch_order[i]] = i + 1;
	for (i = 0; i < g->nnodes && !ret; i++) {
		const struct rt2_node *n = &g->nodes[i];

		for (j = 0; j < n->npred; j++) {
			uint32_t p = g->preds[n->pred_off + j];
			uint32_t r = pos[p] ? pos[p] : reach[p];

			if (reach[p] > r)
				r = reach[p];
			if (r > reach[i])
				reach[i] = r;
		}
		if (pos[i] && reach[i] >= pos[i])
			ret = -EDEADLK;
	}
	free(pos);
	return ret;
}

/**
 * rt2_finalize() - the execution graph of a builder
 * @b: the builder, after its passes
 * @g: filled in
 *
 * Drops removed nodes and duplicate edges, numbers the nodes in a
 * topological order (ready nodes by priority, then creation: stable for
 * a given builder), and builds the CSR of predecessors and successors
 * and the strict launch order.
 *
 * Return: 0, -ENOMEM, -EINVAL for a cycle, -EDEADLK when the launch
 * priorities contradict the dependencies.
 */
int rt2_finalize(struct rt2_build *b, struct rt2_graph *g)
{
	uint32_t *map = NULL, *heap = NULL, *deg = NULL, *lheap, *lprio;
	struct rt2_edge *edges = NULL;
	unsigned int i, n = 0, ne = 0, hn = 0, ln = 0, nl = 0, lnext = 0;
	unsigned int done = 0;
	int ret = -ENOMEM;

	memset(g, 0, sizeof(*g));
	map = malloc((b->nnodes + 1) * sizeof(*map) * 5);
	edges = malloc((b->nedges + 1) * sizeof(*edges));
	if (!map || !edges)
		goto out;
	heap = map + b->nnodes + 1;
	deg = heap + b->nnodes + 1;
	lheap = deg + b->nnodes + 1;	/* ready launches */
	lprio = lheap + b->nnodes + 1;	/* every launch's priority, sorted */
	memset(deg, 0, (b->nnodes + 1) * sizeof(*deg));
	/* Live edges between live nodes, sorted, deduplicated. */
	for (i = 0; i < b->nedges; i++) {
		struct rt2_edge e = b->edges[i];

		if (e.from == e.to || b->nodes[e.from].dead ||
		    b->nodes[e.to].dead)
			continue;
		edges[ne++] = e;
	}
	qsort(edges, ne, sizeof(*edges), rt2_cmp_edge);
	for (i = 0, n = 0; i < ne; i++)
		if (!n || rt2_cmp_edge(&edges[i], &edges[n - 1]))
			edges[n++] = edges[i];
	ne = n;
	for (i = 0; i < ne; i++)
		deg[edges[i].to]++;

	/*
	 * Kahn over builder indices; map: builder index -> ID. A launch is
	 * taken only when no launch of a lower priority is left, so that
	 * the IDs of the launches follow the strict launch order.
	 */
	for (i = 0; i < b->nnodes; i++) {
		if (b->nodes[i].dead)
			continue;
		if (rt2_kernel_is_launch(b->nodes[i].kernel))
			lprio[nl++] = (uint32_t)b->nodes[i].prio;
		if (!deg[i])
			rt2_ready(b->nodes, heap, &hn, lheap, &ln, i);
	}
	qsort(lprio, nl, sizeof(*lprio), rt2_cmp_u32);
	n = 0;
	for (i = 0; i < b->nnodes; i++)
		n += !b->nodes[i].dead;
	g->nodes = calloc(n ? n : 1, sizeof(*g->nodes));
	g->preds = malloc((ne + 1) * sizeof(uint32_t));
	g->succs = malloc((ne + 1) * sizeof(uint32_t));
	g->launch_order = malloc((n + 1) * sizeof(uint32_t));
	if (!g->nodes || !g->preds || !g->succs || !g->launch_order)
		goto out;
	for (;;) {
		unsigned int lo = 0, hi = ne, mid;
		bool lok = ln && lnext < nl &&
			   (uint32_t)b->nodes[lheap[0]].prio == lprio[lnext];
		uint32_t v;

		if (lok && (!hn || rt2_before(&b->nodes[lheap[0]],
					      &b->nodes[heap[0]]))) {
			v = rt2_heap_pop(b->nodes, lheap, &ln);
			lnext++;
		} else if (hn) {
			v = rt2_heap_pop(b->nodes, heap, &hn);
		} else {
			break;
		}

		map[v] = done;
		g->nodes[done] = b->nodes[v];
		g->nodes[done].id = done;
		done++;
		/* The edges of v: binary search for the first. */
		while (lo < hi) {
			mid = (lo + hi) / 2;
			if (edges[mid].from < v)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < ne && edges[lo].from == v; lo++)
			if (!--deg[edges[lo].to])
				rt2_ready(b->nodes, heap, &hn, lheap, &ln,
					  edges[lo].to);
	}
	if (done != n) {
		/* Stuck on a launch whose priority comes too late, or a cycle. */
		ret = lnext < nl ? -EDEADLK : -EINVAL;
		goto out;
	}
	g->nnodes = n;
	g->nedges = ne;
	for (i = 0; i < ne; i++) {
		edges[i].from = map[edges[i].from];
		edges[i].to = map[edges[i].to];
	}
	/* Successors: sorted by (from, to). */
	qsort(edges, ne, sizeof(*edges), rt2_cmp_edge);
	for (i = 0; i < ne; i++) {
		struct rt2_node *f = &g->nodes[edges[i].from];

		if (!f->nsucc)
			f->succ_off = i;
		f->nsucc++;
		g->succs[i] = edges[i].to;
	}
	/* Predecessors: counting sort by destination. */
	for (i = 0; i < ne; i++)
		g->nodes[edges[i].to].npred++;
	for (i = 0, hn = 0; i < n; i++) {
		g->nodes[i].pred_off = hn;
		hn += g->nodes[i].npred;
		g->nodes[i].npred = 0;
	}
	for (i = 0; i < ne; i++) {
		struct rt2_node *t = &g->nodes[edges[i].to];

		g->preds[t->pred_off + t->npred++] = edges[i].from;
	}
	/* In ID order, which is (priority, ID) order. */
	for (i = 0; i < n; i++)
		if (g->nodes[i].worker == RT2_W_LAUNCH)
			g->launch_order[g->nlaunch++] = i;
	memcpy(g->passes, b->passes, sizeof(g->passes));
	g->npasses = b->npasses;
	ret = rt2_check_launch_order(g);
out:
	free(map);
	free(edges);
	if (ret)
		rt2_graph_fini(g);
	return ret;
}

void rt2_graph_fini(struct rt2_graph *g)
{
	free(g->nodes);
	free(g->preds);
	free(g->succs);
	free(g->launch_order);
	memset(g, 0, sizeof(*g));
}

static const char rt2_type_tag[] = "NMLFH";

/**
 * rt2_graph_dump() - the execution graph as text
 * @g: the graph
 * @buf: where to write, NUL-terminated
 * @len: its size
 *
 * A "passes:" line, then one line per node in ID order:
 * "ID Kernel TYPE [pPRIO] [cCOUNT] -> SUCC,SUCC", TYPE one of N(ormal),
 * M(emory), L(aunch), F(ree), H(old-address free).
 *
 * Return: the length of the whole text (as snprintf()).
 */
int rt2_graph_dump(const struct rt2_graph *g, char *buf, size_t len)
{
	size_t pos = 0;
	unsigned int i, j;

#define OUT(...) \
	(pos += (size_t)snprintf(buf + (pos < len ? pos : len), \
				 pos < len ? len - pos : 0, __VA_ARGS__))
	if (len)
		buf[0] = '\0';
	OUT("passes:");
	for (i = 0; i < g->npasses; i++)
		OUT(" %s", g->passes[i]);
	OUT("\n");
	for (i = 0; i < g->nnodes; i++) {
		const struct rt2_node *n = &g->nodes[i];

		OUT("%u %s %c", n->id, rt2_kernel(n->kernel)->name,
		    rt2_type_tag[n->type]);
		if (n->prio >= 0)
			OUT(" p%d", n->prio);
		if (n->count)
			OUT(" c%u", n->count);
		for (j = 0; j < n->nsucc; j++)
			OUT("%s%u", j ? "," : " -> ", g->succs[n->succ_off + j]);
		OUT("\n");
	}
#undef OUT
	return (int)pos;
}
