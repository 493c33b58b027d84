// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rt2: RemoveLaunchFreeEdge and ExecutionData.
 *
 * The pass replaces the Launch -> Free edges of an eligible device free by
 * exact (Free, Launch) relations: the free no longer waits for the
 * launches that use its memory; instead the allocator, when it must
 * recycle, waits for exactly the launches of the frees that ran. The
 * order of its steps is the rule book's: the Cartesian ordering between
 * eligible producers and frees first, then the relations, recorded on
 * the owner graph and deduplicated, then the hold-address variant, then
 * the edge removal. It adds one more kind of edge, the liveness edges
 * (see rt2_pass_remove_launch_free_edge()), which make the relation
 * waits provably deadlock free with one memory worker.
 *
 * ExecutionData is the execution-ID CSR of the relations after the final
 * node mapping, validated before the executor accepts it. Runs only read
 * it: nothing here runs on the hot path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rt2.h"

/* ---- eligibility ------------------------------------------------------- */

/* The hold-address variant of a free kernel, or RT2_K_COUNT for none. */
static unsigned int rt2_hold_variant(unsigned int kid)
{
	return kid == RT2_K_FREE_MEM ? RT2_K_FREE_MEM_HOLD : RT2_K_COUNT;
}

static bool rt2_registered(unsigned int kid)
{
	return kid < RT2_K_COUNT;
}

static bool rt2_writes(const struct rt2_node *n, int32_t v)
{
	unsigned int i;

	for (i = 0; i < n->nout && i < RT2_NODE_IO; i++)
		if (n->out[i] == v)
			return true;
	return false;
}

/*
 * An eligible direct producer: a registered memory kernel (the original's
 * kKernelUseMemory) on the device memory path, whose placement is static.
 */
static bool rt2_producer_eligible(const struct rt2_node *p)
{
	const struct rt2_kernel *k;

	if (!rt2_registered(p->kernel))
		return false;
	k = rt2_kernel(p->kernel);
	return k->cls == RT2_CLASS_MEMORY &&
	       !(k->flags & (RT2_KF_HOST_MEM | RT2_KF_RUNTIME_PLACED |
			     RT2_KF_FREE | RT2_KF_MIXED));
}

/*
 * Is the live edge list's node @i a live predecessor? Helpers below walk
 * the edge list; the pass builds a CSR of it (struct rt2_adj).
 */
struct rt2_adj {
	uint32_t *off, *adj;	/* predecessors of each node */
	uint32_t *soff, *sadj;	/* successors */
};

static void rt2_adj_fini(struct rt2_adj *a)
{
	free(a->off);
	free(a->adj);
	free(a->soff);
	free(a->sadj);
	memset(a, 0, sizeof(*a));
}

static int rt2_adj_build(const struct rt2_build *b, struct rt2_adj *a)
{
	unsigned int i, n = b->nnodes;

	a->off = calloc(n + 1, sizeof(uint32_t));
	a->soff = calloc(n + 1, sizeof(uint32_t));
	a->adj = malloc((b->nedges + 1) * sizeof(uint32_t));
	a->sadj = malloc((b->nedges + 1) * sizeof(uint32_t));
	if (!a->off || !a->soff || !a->adj || !a->sadj) {
		rt2_adj_fini(a);
		return -ENOMEM;
	}
	for (i = 0; i < b->nedges; i++) {
		const struct rt2_edge *e = &b->edges[i];

		if (b->nodes[e->from].dead || b->nodes[e->to].dead)
			continue;
		a->off[e->to + 1]++;
		a->soff[e->from + 1]++;
	}
	for (i = 0; i < n; i++) {
		a->off[i + 1] += a->off[i];
		a->soff[i + 1] += a->soff[i];
	}
	for (i = 0; i < b->nedges; i++) {
		const struct rt2_edge *e = &b->edges[i];

		if (b->nodes[e->from].dead || b->nodes[e->to].dead)
			continue;
		a->adj[a->off[e->to]++] = e->from;
		a->sadj[a->soff[e->from]++] = e->to;
	}
	for (i = n; i > 0; i--) {
		a->off[i] = a->off[i - 1];
		a->soff[i] = a->soff[i - 1];
	}
	a->off[0] = 0;
	a->soff[0] = 0;
	return 0;
}

/*
 * The rule book's eligibility of free @f: a live device free with a
 * hold-address variant; its direct producers (the predecessors that write
 * the freed value, launches aside) exist and are all eligible; it reaches
 * no other node; its Launch -> Free edges stay within its owner graph.
 */
static bool rt2_free_eligible_adj(const struct rt2_build *b,
				  const struct rt2_adj *a, unsigned int f)
{
	const struct rt2_node *n = &b->nodes[f];
	unsigned int j, producers = 0, launches = 0;

	if (n->dead || !rt2_registered(n->kernel) ||
	    rt2_hold_variant(n->kernel) == RT2_K_COUNT || n->nin < 1)
		return false;
	if (a->soff[f + 1] != a->soff[f])
		return false;
	for (j = a->off[f]; j < a->off[f + 1]; j++) {
		const struct rt2_node *p = &b->nodes[a->adj[j]];

		if (!rt2_registered(p->kernel)) {
			if (rt2_writes(p, n->in[0]))
				return false;	/* unregistered producer */
			continue;
		}
		if (rt2_kernel_is_launch(p->kernel)) {
			if (p->owner != n->owner)
				return false;	/* never across owners */
			launches++;
			continue;
		}
		if (!rt2_writes(p, n->in[0]))
			continue;
		if (!rt2_producer_eligible(p))
			return false;
		producers++;
	}
	return producers && launches;
}

/**
 * rt2_free_eligible() - would RemoveLaunchFreeEdge process free @f
 * @b: the builder
 * @f: a node index
 *
 * Return: true when @f is an eligible device free with Launch -> Free
 * edges to replace.
 */
bool rt2_free_eligible(const struct rt2_build *b, unsigned int f)
{
	struct rt2_adj a;
	bool ok;

	if (f >= b->nnodes || rt2_adj_build(b, &a))
		return false;
	ok = rt2_free_eligible_adj(b, &a, f);
	rt2_adj_fini(&a);
	return ok;
}

/* ---- the pass ------------------------------------------------------------ */

static int rt2_cmp_rel(const void *x, const void *y)
{
	const struct rt2_rel *a = x, *b = y;

	if (a->free != b->free)
		return a->free < b->free ? -1 : 1;
	return a->launch < b->launch ? -1 : a->launch > b->launch;
}

static int rt2_add_rel(struct rt2_build *b, uint32_t f, uint32_t l)
{
	if (b->nrels == b->cap_rels) {
		unsigned int cap = b->cap_rels ? 2 * b->cap_rels : 32;
		struct rt2_rel *r = realloc(b->rels, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		b->rels = r;
		b->cap_rels = cap;
	}
	b->rels[b->nrels++] = (struct rt2_rel){ f, l };
	return 0;
}

static int rt2_cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * first[m]: the lowest launch priority (as the launch order compares it)
 * of a launch that node m is an ancestor of; ~0 for none. Launches in
 * increasing priority, a reverse DFS from each over unvisited nodes.
 */
static int rt2_first_launch(const struct rt2_build *b, const struct rt2_adj *a,
			    uint32_t *first)
{
	unsigned int i, nl = 0, sp;
	uint64_t *ls;
	uint32_t *stack;

	ls = malloc((b->nnodes + 1) * sizeof(*ls));
	stack = malloc((b->nnodes + 1) * sizeof(*stack));
	if (!ls || !stack) {
		free(ls);
		free(stack);
		return -ENOMEM;
	}
	for (i = 0; i < b->nnodes; i++) {
		first[i] = ~0U;
		if (!b->nodes[i].dead && rt2_registered(b->nodes[i].kernel) &&
		    rt2_kernel_is_launch(b->nodes[i].kernel))
			ls[nl++] = (uint64_t)(uint32_t)b->nodes[i].prio << 32 | i;
	}
	qsort(ls, nl, sizeof(*ls), rt2_cmp_u64);
	for (i = 0; i < nl; i++) {
		uint32_t l = (uint32_t)ls[i], pr = (uint32_t)(ls[i] >> 32);

		if (first[l] != ~0U)
			continue;
		first[l] = pr;
		sp = 0;
		stack[sp++] = l;
		while (sp) {
			uint32_t v = stack[--sp], j;

			for (j = a->off[v]; j < a->off[v + 1]; j++) {
				uint32_t p = a->adj[j];

				if (first[p] != ~0U)
					continue;
				first[p] = pr;
				stack[sp++] = p;
			}
		}
	}
	free(ls);
	free(stack);
	return 0;
}

static bool rt2_is_launch_node(const struct rt2_node *n)
{
	return rt2_registered(n->kernel) && rt2_kernel_is_launch(n->kernel);
}

/* Step 1: every eligible producer of a launch's eligible frees before each. */
static int rt2_cartesian(struct rt2_build *b, const struct rt2_adj *a,
			 const bool *elig, uint32_t *ef, uint32_t *pp,
			 uint32_t *stamp)
{
	unsigned int l, j, k, ne, np;
	int ret = 0;

	for (l = 0; l < b->nnodes && !ret; l++) {
		if (b->nodes[l].dead || !rt2_is_launch_node(&b->nodes[l]))
			continue;
		ne = 0;
		np = 0;
		for (j = a->soff[l]; j < a->soff[l + 1]; j++) {
			uint32_t f = a->sadj[j];

			if (!elig[f])
				continue;
			ef[ne++] = f;
			for (k = a->off[f]; k < a->off[f + 1]; k++) {
				uint32_t p = a->adj[k];

				if (stamp[p] == l + 1 ||
				    !rt2_registered(b->nodes[p].kernel) ||
				    rt2_kernel_is_launch(b->nodes[p].kernel) ||
				    !rt2_writes(&b->nodes[p], b->nodes[f].in[0]))
					continue;
				stamp[p] = l + 1;
				pp[np++] = p;
			}
		}
		for (j = 0; j < np && !ret; j++)
			for (k = 0; k < ne && !ret; k++)
				if (pp[j] != ef[k])
					ret = rt2_build_edge(b, pp[j], ef[k]);
	}
	return ret;
}

/*
 * Step 2, the liveness edges: free @f runs only after every memory-worker
 * node that its relation launches, or a launch before them in the launch
 * order, depend on. A free's relation launches all have a priority of at
 * most @top; first[] says which nodes such launches depend on.
 */
static int rt2_liveness(struct rt2_build *b, const struct rt2_adj *a,
			const bool *elig, const uint32_t *first,
			uint32_t *stack, uint32_t *stamp)
{
	unsigned int f, j, m, sp;
	int ret = 0;

	for (f = 0; f < b->nnodes && !ret; f++) {
		uint32_t top = 0;

		if (!elig[f])
			continue;
		/* Ancestors of f without its Launch -> Free edges. */
		sp = 0;
		for (j = a->off[f]; j < a->off[f + 1]; j++) {
			uint32_t p = a->adj[j];

			if (rt2_is_launch_node(&b->nodes[p])) {
				if ((uint32_t)b->nodes[p].prio > top)
					top = (uint32_t)b->nodes[p].prio;
				continue;
			}
			if (stamp[p] != f + 1) {
				stamp[p] = f + 1;
				stack[sp++] = p;
			}
		}
		while (sp) {
			uint32_t v = stack[--sp];

			for (j = a->off[v]; j < a->off[v + 1]; j++) {
				uint32_t p = a->adj[j];

				if (stamp[p] == f + 1)
					continue;
				stamp[p] = f + 1;
				stack[sp++] = p;
			}
		}
		for (m = 0; m < b->nnodes && !ret; m++) {
			const struct rt2_node *n = &b->nodes[m];

			if (m == f || n->dead || stamp[m] == f + 1 ||
			    first[m] > top || !rt2_registered(n->kernel) ||
			    rt2_kernel_worker(n->kernel) != RT2_W_MEMORY)
				continue;
			ret = rt2_build_edge(b, m, f);
			b->liveness_edges++;
		}
	}
	return ret;
}

/**
 * rt2_pass_remove_launch_free_edge() - RemoveLaunchFreeEdge
 * @b: the graph
 *
 * Processes only eligible frees (rt2_free_eligible()): a device free with
 * a hold-address variant whose direct producers are registered memory
 * kernels on the device path with a static placement. Host, normal,
 * launch, unregistered or missing producers, a runtime-placed producer
 * (AccessMemCrossStream), and frees without a hold-address variant
 * (FreeTensorMemory) keep their type, every edge and their attributes.
 *
 * 1. The Cartesian ordering: for every launch, each eligible producer of
 *    each of its eligible frees before each of those frees.
 * 2. The liveness edges (this implementation's proof gate): each eligible
 *    free after every memory-worker node on which its relation launches,
 *    or launches of no higher priority, depend. Documentation/rt2.rst
 *    shows why the allocator's waits then always end.
 * 3. The exact (Free, Launch) relations, one per Launch -> Free edge of an
 *    eligible free (same owner graph), sorted and deduplicated.
 * 4. The free becomes its hold-address variant.
 * 5. The Launch -> Free edges go.
 *
 * Multi-thread mode only. O(F * (N + E)) for F eligible frees.
 *
 * Return: 0 or -ENOMEM.
 */
int rt2_pass_remove_launch_free_edge(struct rt2_build *b)
{
	unsigned int i, j, n = b->nnodes, nf = 0;
	uint32_t *work = NULL, *first, *stack, *stamp, *ef, *pp;
	struct rt2_adj a = { 0 };
	bool *elig = NULL;
	int ret;

	ret = rt2_adj_build(b, &a);
	if (ret)
		return ret;
	elig = calloc(n + 1, sizeof(*elig));
	work = malloc((n + 1) * 5 * sizeof(*work));
	ret = -ENOMEM;
	if (!elig || !work)
		goto out;
	first = work;
	stack = first + n + 1;
	stamp = stack + n + 1;
	ef = stamp + n + 1;
	pp = ef + n + 1;
	for (i = 0; i < n; i++) {
		elig[i] = rt2_free_eligible_adj(b, &a, i);
		nf += elig[i];
	}
	ret = 0;
	if (!nf)
		goto out;
	memset(stamp, 0, (n + 1) * sizeof(*stamp));
	ret = rt2_cartesian(b, &a, elig, ef, pp, stamp);
	if (ret)
		goto out;
	rt2_adj_fini(&a);
	ret = rt2_adj_build(b, &a);
	if (!ret)
		ret = rt2_first_launch(b, &a, first);
	if (ret)
		goto out;
	memset(stamp, 0, (n + 1) * sizeof(*stamp));
	if (!b->no_liveness)
		ret = rt2_liveness(b, &a, elig, first, stack, stamp);
	for (i = 0; i < n && !ret; i++) {
		if (!elig[i])
			continue;
		for (j = a.off[i]; j < a.off[i + 1] && !ret; j++)
			if (rt2_is_launch_node(&b->nodes[a.adj[j]]))
				ret = rt2_add_rel(b, i, a.adj[j]);
	}
	if (ret)
		goto out;
	qsort(b->rels, b->nrels, sizeof(*b->rels), rt2_cmp_rel);
	for (i = 0, j = 0; i < b->nrels; i++)
		if (!j || rt2_cmp_rel(&b->rels[i], &b->rels[j - 1]))
			b->rels[j++] = b->rels[i];
	b->nrels = j;
	for (i = 0; i < n; i++) {
		if (!elig[i])
			continue;
		b->nodes[i].kernel = rt2_hold_variant(b->nodes[i].kernel);
		b->nodes[i].type = rt2_kernel_node_type(b->nodes[i].kernel);
	}
	for (i = 0, j = 0; i < b->nedges; i++) {
		const struct rt2_edge *e = &b->edges[i];

		if (elig[e->to] && rt2_is_launch_node(&b->nodes[e->from]))
			continue;
		b->edges[j++] = *e;
	}
	b->nedges = j;
out:
	rt2_adj_fini(&a);
	free(elig);
	free(work);
	return ret;
}

/* ---- ExecutionData ------------------------------------------------------- */

/* Builder index -> execution ID of every relation node, or -EPROTO. */
static int rt2_rel_map(const struct rt2_build *b, const uint32_t *map,
		       const struct rt2_rel *in, struct rt2_rel *out)
{
	if (in->free >= b->nnodes || in->launch >= b->nnodes)
		return -EPROTO;
	*out = (struct rt2_rel){ map[in->free], map[in->launch] };
	return out->free == ~0U || out->launch == ~0U ? -EPROTO : 0;
}

/**
 * rt2_rels_to_ids() - a builder's relations in execution IDs
 * @b: the builder, after its passes
 * @g: its final graph (a node's @seq is its builder index)
 * @out: a new array of @b->nrels relations, to free()
 *
 * The pass leaves each free's relations together; they are handed over
 * that way, the frees in increasing execution ID (a move of whole rows),
 * so that rt2_xdata_build() takes them in one pass. Relations that are
 * not grouped by free keep their order.
 *
 * Return: 0, -ENOMEM, or -EPROTO for a relation on a node the final graph
 * does not have.
 */
int rt2_rels_to_ids(const struct rt2_build *b, const struct rt2_graph *g,
		    struct rt2_rel **out)
{
	unsigned int i, j, k, nr = b->nrels;
	uint32_t *map, *start, *len;
	bool grouped = true;
	struct rt2_rel *r;
	int ret = 0;

	map = malloc((b->nnodes + 2 * g->nnodes + 1) * sizeof(*map));
	r = malloc((nr + 1) * sizeof(*r));
	if (!map || !r) {
		free(map);
		free(r);
		return -ENOMEM;
	}
	start = map + b->nnodes;
	len = start + g->nnodes;
	memset(map, 0xff, b->nnodes * sizeof(*map));
	memset(start, 0xff, g->nnodes * sizeof(*start));
	for (i = 0; i < g->nnodes; i++)
		if (g->nodes[i].seq < b->nnodes)
			map[g->nodes[i].seq] = i;
	/* The rows: runs of one free. */
	for (i = 0; i < nr && grouped; i = j) {
		uint32_t f = b->rels[i].free;

		if (f >= b->nnodes || map[f] == ~0U) {
			ret = -EPROTO;
			break;
		}
		for (j = i + 1; j < nr && b->rels[j].free == f; j++)
			;
		grouped = start[map[f]] == ~0U;
		start[map[f]] = i;
		len[map[f]] = j - i;
	}
	for (i = 0, k = 0; !ret && grouped && i < g->nnodes; i++)
		for (j = 0; !ret && start[i] != ~0U && j < len[i]; j++)
			ret = rt2_rel_map(b, map, &b->rels[start[i] + j],
					  &r[k++]);
	for (i = 0; !ret && !grouped && i < nr; i++)
		ret = rt2_rel_map(b, map, &b->rels[i], &r[i]);
	free(map);
	if (ret)
		free(r);
	else
		*out = r;
	return ret;
}

void rt2_xdata_fini(struct rt2_xdata *x)
{
	free(x->off);
	free(x->col);
	free(x->rank);
	free(x->req);
	free(x->act);
	memset(x, 0, sizeof(*x));
}

/* The structural memory of @x, in bytes. */
size_t rt2_xdata_bytes(const struct rt2_xdata *x)
{
	return sizeof(*x) + (x->nnodes + 1) * sizeof(*x->off) +
	       x->nrels * sizeof(*x->col) + x->nnodes * sizeof(*x->rank) +
	       x->nnodes * sizeof(*x->req) + x->nranks * sizeof(*x->act);
}

/*
 * Compact facts of every node, from one read of the node records (what
 * is read shares a record's first cache line): a byte of kind per node,
 * so that a relation's launch is checked with one read of an array that
 * stays in cache; and each node's owner graph, kept only when the graph
 * has more than one (with one, every relation is within it).
 */
#define RT2_XK_LAUNCH	0x01U
#define RT2_XK_HOLD	0x02U
#define RT2_XK_PRED	0x04U	/* has predecessors */
#define RT2_XK_IO	0x08U	/* a launch that reads or writes values */
#define RT2_XK_REL	0x10U	/* the launch of some relation */

struct rt2_xnodes {
	uint8_t *k;		/* per node: RT2_XK_* */
	uint32_t *owner;	/* per node, or NULL: a single owner graph */
	int32_t *hold;		/* per value: its hold-address free, or -1 */
	unsigned int nv;	/* values up to the highest a free holds */
	unsigned int nhold;	/* hold-address frees */
	bool io;		/* some launch reads or writes values */
};

static void rt2_xnodes_fini(struct rt2_xnodes *c)
{
	free(c->k);
	free(c->owner);
	free(c->hold);
	memset(c, 0, sizeof(*c));
}

/*
 * One pass over the node records: kinds, and whether they all have one
 * owner (a second pass keeps the owners when not). -EPROTO for a
 * hold-address free without a value.
 */
static int rt2_xnodes_init(struct rt2_xnodes *c, const struct rt2_graph *g)
{
	const struct rt2_node *x = g->nodes, *end = g->nodes + g->nnodes;
	uint32_t owner0 = g->nnodes ? g->nodes[0].owner : 0, i;
	bool one_owner = true;
	uint8_t *k;

	memset(c, 0, sizeof(*c));
	c->k = malloc(g->nnodes + 1);
	if (!c->k)
		return -ENOMEM;
	for (k = c->k; x < end; x++, k++) {
		uint8_t w = x->npred ? RT2_XK_PRED : 0;

		one_owner &= x->owner == owner0;
		if (x->type == RT2_NT_LAUNCH) {
			w |= RT2_XK_LAUNCH;
			if (x->nin || x->nout) {
				w |= RT2_XK_IO;
				c->io = true;
			}
		} else if (x->type == RT2_NT_FREE_HOLD) {
			w |= RT2_XK_HOLD;
			if (x->nin < 1 || x->in[0] < 0)
				return -EPROTO;
			if ((uint32_t)x->in[0] >= c->nv)
				c->nv = (uint32_t)x->in[0] + 1;
			c->nhold++;
		}
		*k = w;
	}
	if (one_owner)
		return 0;
	c->owner = malloc((g->nnodes + 1) * sizeof(*c->owner));
	if (!c->owner)
		return -ENOMEM;
	for (i = 0; i < g->nnodes; i++)
		c->owner[i] = g->nodes[i].owner;
	return 0;
}

/*
 * Value -> its hold-address free, for the protection check; -EPROTO when
 * two frees give back one value.
 */
static int rt2_xnodes_hold(struct rt2_xnodes *c, const struct rt2_graph *g)
{
	unsigned int i;

	c->hold = malloc((c->nv + 1) * sizeof(*c->hold));
	if (!c->hold)
		return -ENOMEM;
	memset(c->hold, 0xff, (c->nv + 1) * sizeof(*c->hold));
	for (i = 0; i < g->nnodes; i++) {
		int32_t v = g->nodes[i].in[0];

		if (!(c->k[i] & RT2_XK_HOLD))
			continue;
		if (c->hold[v] >= 0)
			return -EPROTO;
		c->hold[v] = (int32_t)i;
	}
	return 0;
}

/* Is @p a predecessor of node @n (sorted CSR)? */
static bool rt2_has_pred(const struct rt2_graph *g, uint32_t n, uint32_t p)
{
	const uint32_t *v = g->preds + g->nodes[n].pred_off;
	uint32_t lo = 0, hi = g->nodes[n].npred;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (v[mid] == p)
			return true;
		if (v[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool rt2_in_row(const struct rt2_xdata *x, uint32_t f, uint32_t l)
{
	uint32_t lo = x->off[f], hi = x->off[f + 1];

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (x->col[mid] == l)
			return true;
		if (x->col[mid] < l)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Every launch that reads or writes a value a hold-address free gives
 * back either still has its edge to the free or is one of its relations:
 * an edge removal without a relation (unprotected) is refused.
 */
static int rt2_xdata_protected(const struct rt2_xdata *x,
			       const struct rt2_graph *g,
			       const struct rt2_xnodes *c)
{
	unsigned int i, j;

	if (!c->io || !c->nhold)
		return 0;
	for (i = 0; i < g->nnodes; i++) {
		const struct rt2_node *n = &g->nodes[i];
		int32_t v[2 * RT2_NODE_IO];
		unsigned int nvv = 0;

		if (!(c->k[i] & RT2_XK_IO))
			continue;
		for (j = 0; j < n->nin && j < RT2_NODE_IO; j++)
			v[nvv++] = n->in[j];
		for (j = 0; j < n->nout && j < RT2_NODE_IO; j++)
			v[nvv++] = n->out[j];
		for (j = 0; j < nvv; j++) {
			int32_t f = v[j] >= 0 && (uint32_t)v[j] < c->nv ?
				    c->hold[v[j]] : -1;

			if (f >= 0 && !rt2_has_pred(g, (uint32_t)f, i) &&
			    !rt2_in_row(x, (uint32_t)f, i))
				return -EPROTO;
		}
	}
	return 0;
}

/*
 * The relations arrive grouped by free, the frees in increasing order
 * (what the pass hands over, in execution IDs): each is checked and
 * copied in place, in one sequential pass, without a scatter. Launches
 * out of order in a row ask for the row sort (@unsorted) when they are
 * few; when more than one in 16 steps down, the rows are far from sorted
 * and a sort of the whole is cheaper. Return: 0, 1 when they are not
 * grouped so or too far from sorted (nothing is left marked), or -EPROTO.
 */
static int rt2_xdata_grouped(struct rt2_xdata *x, struct rt2_xnodes *cn,
			     const struct rt2_rel *rels, unsigned int nrels,
			     bool *unsorted, uint32_t *marked)
{
	const struct rt2_rel *r = rels, *end = rels + nrels;
	uint32_t *off = x->off, *c = x->col;
	uint32_t n = x->nnodes, f, last = 0, next = 0, down = 0, nm = 0;
	const uint32_t *ow = cn->owner;
	uint8_t *k = cn->k;

	/* A row at a time: its free, then its launches. */
	while (r < end) {
		uint32_t prev1 = 0, fo;

		f = r->free;
		if (r > rels && f <= last)
			goto ungrouped;
		if (f >= n || !(k[f] & RT2_XK_HOLD))
			return -EPROTO;
		last = f;
		while (next <= f)
			off[next++] = (uint32_t)(c - x->col);
		fo = ow ? ow[f] : 0;
		for (; r < end && r->free == f; r++, c++) {
			uint32_t l = r->launch;
			uint8_t kl;

			if (l >= n)
				return -EPROTO;
			kl = k[l];
			/* A launch of the free's owner graph. */
			if (!(kl & RT2_XK_LAUNCH) || (ow && ow[l] != fo))
				return -EPROTO;
			if (!(kl & RT2_XK_REL)) {
				k[l] = kl | RT2_XK_REL;
				nm++;
			}
			*c = l;
			/*
			 * Strictly ascending (prev1: the last one + 1), or
			 * sorted later.
			 */
			if (l < prev1) {
				if (l + 1 == prev1)
					return -EPROTO;
				if (++down > nrels / 16)
					goto ungrouped;
			}
			prev1 = l + 1;
		}
	}
	while (next <= n)
		off[next++] = nrels;
	*unsorted = down;
	*marked = nm;
	return 0;
ungrouped:
	/* Nothing past @r was marked (@r itself may have been). */
	for (end = r + 1, r = rels; r < end; r++)
		if (r->launch < n)
			k[r->launch] &= (uint8_t)~RT2_XK_REL;
	return 1;
}

/*
 * Any other order: a counting sort by launch into a launch-major CSR,
 * then its transpose, by free, walking the launches in increasing order,
 * so that every row comes out sorted (no row sort); a duplicate shows as
 * the same launch twice in a row. The same checks on the way.
 */
static int rt2_xdata_scatter(struct rt2_xdata *x, struct rt2_xnodes *cn,
			     const struct rt2_rel *rels, unsigned int nrels,
			     uint32_t *marked)
{
	const struct rt2_rel *r, *end = rels + nrels;
	uint32_t *off = x->off, *cur = x->req, *col = x->col;
	uint32_t n = x->nnodes, i, j, *offl, *bylaunch;
	const uint32_t *ow = cn->owner;
	uint8_t *k = cn->k;
	int ret = -EPROTO;

	offl = malloc((n + 2) * sizeof(*offl));
	bylaunch = malloc((nrels + 1) * sizeof(*bylaunch));
	if (!offl || !bylaunch) {
		ret = -ENOMEM;
		goto out;
	}
	memset(off, 0, (n + 2) * sizeof(*off));
	memset(offl, 0, (n + 2) * sizeof(*offl));
	for (r = rels; r < end; r++) {
		uint32_t f = r->free, l = r->launch;

		if (f >= n || l >= n || !(k[f] & RT2_XK_HOLD) ||
		    !(k[l] & RT2_XK_LAUNCH) || (ow && ow[l] != ow[f]))
			goto out;
		if (!(k[l] & RT2_XK_REL)) {
			k[l] |= RT2_XK_REL;
			(*marked)++;
		}
		off[f + 1]++;
		offl[l + 2]++;
	}
	for (i = 1; i < n + 1; i++)
		off[i] += off[i - 1];
	for (i = 2; i < n + 2; i++)
		offl[i] += offl[i - 1];
	/* offl[l + 1] is launch l's cursor while filling; its start after. */
	for (r = rels; r < end; r++)
		bylaunch[offl[r->launch + 1]++] = r->free;
	memcpy(cur, off, n * sizeof(*cur));
	for (i = 0; i < n; i++) {
		for (j = offl[i]; j < offl[i + 1]; j++) {
			uint32_t f = bylaunch[j], p = cur[f];

			if (p > off[f] && col[p - 1] == i)
				goto out;	/* a duplicate */
			col[p] = i;
			cur[f] = p + 1;
		}
	}
	ret = 0;
out:
	free(offl);
	free(bylaunch);
	return ret;
}

/*
 * Sort each row that is out of order (insertion: the rows of the pass
 * are short and nearly in order) and refuse duplicates.
 */
static int rt2_xdata_sort_rows(struct rt2_xdata *x)
{
	uint32_t i, *col = x->col;

	for (i = 0; i < x->nnodes; i++) {
		uint32_t s = x->off[i], e = x->off[i + 1], j, q, v;

		for (j = s + 1; j < e && col[j - 1] < col[j]; j++)
			;
		for (; j < e; j++) {
			v = col[j];
			for (q = j; q > s && col[q - 1] > v; q--)
				col[q] = col[q - 1];
			if (q > s && col[q - 1] == v)
				return -EPROTO;
			col[q] = v;
		}
	}
	return 0;
}

/*
 * No launch of row @i is also a predecessor of its free: both lists are
 * sorted, one merge.
 */
static int rt2_xdata_not_preds(const struct rt2_xdata *x,
			       const struct rt2_graph *g, uint32_t i)
{
	const uint32_t *p = g->preds + g->nodes[i].pred_off;
	const uint32_t *pe = p + g->nodes[i].npred;
	const uint32_t *c = x->col + x->off[i], *ce = x->col + x->off[i + 1];

	while (p < pe && c < ce) {
		if (*p == *c)
			return -EPROTO;
		if (*p < *c)
			p++;
		else
			c++;
	}
	return 0;
}

/*
 * Ranks: the relation launches (@marked of them) in the strict launch
 * order; every one must be in it. Return: whether the order follows the
 * IDs (as the final graph's does), or -EPROTO.
 */
static int rt2_xdata_ranks(struct rt2_xdata *x, const struct rt2_graph *g,
			   const uint8_t *k, uint32_t marked)
{
	uint32_t i, r = 0, last = 0, n = x->nnodes;
	int by_id = 1;

	memset(x->rank, 0xff, (n + 1) * sizeof(*x->rank));
	for (i = 0; i < g->nlaunch; i++) {
		uint32_t l = g->launch_order[i];

		if (l >= n)
			return -EPROTO;
		if (i && l <= last)
			by_id = 0;
		last = l;
		if ((k[l] & RT2_XK_REL) && x->rank[l] < 0)
			x->rank[l] = (int32_t)r++;
	}
	if (marked != r)
		return -EPROTO;	/* a relation launch outside the order */
	x->nranks = r;
	return by_id;
}

/*
 * One pass over the rows: each free's required generation, 1 + the
 * highest rank of its row (its last column when the launch order follows
 * the IDs: @by_id); its launches are not its predecessors; and every
 * hold-address free has a row (rows are only on hold-address frees).
 */
static int rt2_xdata_rows(struct rt2_xdata *x, const struct rt2_graph *g,
			  const struct rt2_xnodes *c, bool by_id)
{
	uint32_t i, rows = 0, n = x->nnodes;
	const uint32_t *off = x->off, *col = x->col;
	const int32_t *rank = x->rank;
	uint32_t *req = x->req;

	for (i = 0; i < n; i++) {
		uint32_t s = off[i], e = off[i + 1], j, q = 0;

		if (s == e) {
			req[i] = 0;
			continue;
		}
		rows++;
		if (by_id) {
			q = (uint32_t)rank[col[e - 1]] + 1;
		} else {
			for (j = s; j < e; j++)
				if ((uint32_t)rank[col[j]] + 1 > q)
					q = (uint32_t)rank[col[j]] + 1;
		}
		req[i] = q;
		if ((c->k[i] & RT2_XK_PRED) && rt2_xdata_not_preds(x, g, i))
			return -EPROTO;
	}
	return rows == c->nhold ? 0 : -EPROTO;
}

/**
 * rt2_xdata_build() - ExecutionData from relations in execution IDs
 * @x: filled in
 * @g: the final graph
 * @rels: (free ID, launch ID) pairs
 * @nrels: their number
 *
 * Relations grouped by free with the frees in increasing order (what the
 * pass hands over) are checked and copied in one sequential pass; any
 * other order takes a counting sort by free. Then each row is sorted by
 * launch when it is not already, and the relation launches are ranked in
 * the strict launch order. Deterministic: the same relations in any order
 * give the same arrays.
 *
 * Every rule of rt2_xdata_validate() is checked on the way, from compact
 * per-node facts read once from the node records: the result is valid
 * ExecutionData or the call fails.
 *
 * Return: 0, -ENOMEM, or -EPROTO for relations that break a rule (an ID
 * out of range, a row on a node that is not a hold-address free or a
 * hold-address free without one, a column that is not a launch of the
 * free's owner graph, a duplicate, a column that is also a predecessor of
 * the free, a relation launch outside the launch order, an unprotected
 * edge removal).
 */
int rt2_xdata_build(struct rt2_xdata *x, const struct rt2_graph *g,
		    const struct rt2_rel *rels, unsigned int nrels)
{
	struct rt2_xnodes c;
	bool unsorted = true;
	uint32_t marked = 0;
	int ret;

	memset(x, 0, sizeof(*x));
	x->nnodes = g->nnodes;
	x->nrels = nrels;
	x->off = malloc((g->nnodes + 2) * sizeof(*x->off));
	x->col = malloc((nrels + 1) * sizeof(*x->col));
	x->rank = malloc((g->nnodes + 1) * sizeof(*x->rank));
	x->req = malloc((g->nnodes + 1) * sizeof(*x->req));
	ret = -ENOMEM;
	if (!x->off || !x->col || !x->rank || !x->req)
		goto out_x;
	ret = rt2_xnodes_init(&c, g);
	if (!ret)
		ret = rt2_xdata_grouped(x, &c, rels, nrels, &unsorted,
					&marked);
	if (ret == 1) {
		unsorted = false;	/* the transpose sorts */
		marked = 0;
		ret = rt2_xdata_scatter(x, &c, rels, nrels, &marked);
	}
	if (!ret && unsorted)
		ret = rt2_xdata_sort_rows(x);
	if (!ret) {
		ret = rt2_xdata_ranks(x, g, c.k, marked);
		if (ret >= 0)
			ret = rt2_xdata_rows(x, g, &c, ret);
	}
	if (!ret && c.io && c.nhold)
		ret = rt2_xnodes_hold(&c, g);
	if (!ret)
		ret = rt2_xdata_protected(x, g, &c);
	rt2_xnodes_fini(&c);
	if (ret)
		goto out_x;
	x->act = calloc(x->nranks + 1, sizeof(*x->act));
	if (x->act)
		return 0;
	ret = -ENOMEM;
out_x:
	rt2_xdata_fini(x);
	return ret;
}

/**
 * rt2_xdata_validate() - check ExecutionData against its graph
 * @x: the relations
 * @g: the final graph
 *
 * The mapped nodes exist; offsets start at 0, never decrease and end at
 * the relation count; a row belongs to a hold-address free and a column
 * is a launch of the same owner graph, not also a predecessor of the free,
 * strictly ascending in its row; every hold-address free has relations and
 * every launch using its memory is a predecessor or a relation; ranks
 * follow the launch order and the required generations agree. The
 * independent check of data that rt2_xdata_build() did not make (or that
 * changed since): the build checks the same rules as it goes.
 *
 * Return: 0, -EPROTO for malformed data, or -ENOMEM.
 */
int rt2_xdata_validate(const struct rt2_xdata *x, const struct rt2_graph *g)
{
	unsigned int i, j, n = g->nnodes, ranks = 0, rows = 0;
	struct rt2_xnodes c;
	int ret;

	if (x->nnodes != n || !x->off || !x->rank || !x->req ||
	    (x->nrels && !x->col) || x->off[0] != 0 || x->off[n] != x->nrels)
		return -EPROTO;
	ret = rt2_xnodes_init(&c, g);
	if (ret)
		goto out;
	ret = -EPROTO;
	for (i = 0; i < n; i++) {
		uint32_t s = x->off[i], e = x->off[i + 1], req = 0;

		if (e < s || e > x->nrels)
			goto out;
		if (e == s) {
			if (x->req[i])
				goto out;
			continue;
		}
		if (!(c.k[i] & RT2_XK_HOLD))
			goto out;
		rows++;
		for (j = s; j < e; j++) {
			uint32_t l = x->col[j];

			if (l >= n || !(c.k[l] & RT2_XK_LAUNCH) ||
			    (c.owner && c.owner[l] != c.owner[i]) ||
			    (j > s && x->col[j - 1] >= l) ||
			    x->rank[l] < 0 || (uint32_t)x->rank[l] >= x->nranks)
				goto out;
			c.k[l] |= RT2_XK_REL;
			if ((uint32_t)x->rank[l] + 1 > req)
				req = (uint32_t)x->rank[l] + 1;
		}
		if (x->req[i] != req)
			goto out;
	}
	if (rows != c.nhold)
		goto out;
	/* Ranks: exactly the relation launches, in launch order. */
	for (i = 0; i < g->nlaunch; i++) {
		int32_t r;

		if (g->launch_order[i] >= n)
			goto out;
		r = x->rank[g->launch_order[i]];
		if (r >= 0 && (uint32_t)r != ranks++)
			goto out;
	}
	if (ranks != x->nranks)
		goto out;
	for (i = 0; i < n; i++)
		if ((x->rank[i] >= 0) != !!(c.k[i] & RT2_XK_REL))
			goto out;
	for (i = 0, ret = 0; i < n && !ret; i++)
		if (x->off[i] != x->off[i + 1] && (c.k[i] & RT2_XK_PRED))
			ret = rt2_xdata_not_preds(x, g, i);
	if (!ret && c.io && c.nhold)
		ret = rt2_xnodes_hold(&c, g);
	if (!ret)
		ret = rt2_xdata_protected(x, g, &c);
out:
	rt2_xnodes_fini(&c);
	return ret;
}
