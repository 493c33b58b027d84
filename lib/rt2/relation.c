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

/**
 * rt2_rels_to_ids() - a builder's relations in execution IDs
 * @b: the builder, after its passes
 * @g: its final graph (a node's @seq is its builder index)
 * @out: a new array of @b->nrels relations, to free()
 *
 * Return: 0, -ENOMEM, or -EPROTO for a relation on a node the final graph
 * does not have.
 */
int rt2_rels_to_ids(const struct rt2_build *b, const struct rt2_graph *g,
		    struct rt2_rel **out)
{
	uint32_t *map;
	struct rt2_rel *r;
	unsigned int i;
	int ret = 0;

	map = malloc((b->nnodes + 1) * sizeof(*map));
	r = malloc((b->nrels + 1) * sizeof(*r));
	if (!map || !r) {
		free(map);
		free(r);
		return -ENOMEM;
	}
	for (i = 0; i < b->nnodes; i++)
		map[i] = ~0U;
	for (i = 0; i < g->nnodes; i++)
		if (g->nodes[i].seq < b->nnodes)
			map[g->nodes[i].seq] = i;
	for (i = 0; i < b->nrels && !ret; i++) {
		if (b->rels[i].free >= b->nnodes ||
		    b->rels[i].launch >= b->nnodes)
			ret = -EPROTO;
		else
			r[i] = (struct rt2_rel){ map[b->rels[i].free],
						 map[b->rels[i].launch] };
		if (!ret && (r[i].free == ~0U || r[i].launch == ~0U))
			ret = -EPROTO;
	}
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

/**
 * rt2_xdata_build() - ExecutionData from relations in execution IDs
 * @x: filled in
 * @g: the final graph
 * @rels: (free ID, launch ID) pairs, any order
 * @nrels: their number
 *
 * A counting sort by free into the CSR, each row sorted by launch; the
 * relation launches ranked in the strict launch order; each free's
 * required generation. Deterministic: the same relations in any order give
 * the same arrays. Not validated: see rt2_xdata_validate().
 *
 * Return: 0, -ENOMEM, or -EPROTO for an ID out of range.
 */
int rt2_xdata_build(struct rt2_xdata *x, const struct rt2_graph *g,
		    const struct rt2_rel *rels, unsigned int nrels)
{
	unsigned int i, n = g->nnodes, r = 0;
	uint32_t *cur;

	memset(x, 0, sizeof(*x));
	x->nnodes = n;
	x->nrels = nrels;
	x->off = calloc(n + 2, sizeof(*x->off));
	x->col = malloc((nrels + 1) * sizeof(*x->col));
	x->rank = malloc((n + 1) * sizeof(*x->rank));
	x->req = calloc(n + 1, sizeof(*x->req));
	if (!x->off || !x->col || !x->rank || !x->req)
		goto nomem;
	for (i = 0; i < nrels; i++) {
		if (rels[i].free >= n || rels[i].launch >= n) {
			rt2_xdata_fini(x);
			return -EPROTO;
		}
		x->off[rels[i].free + 2]++;
	}
	for (i = 2; i < n + 2; i++)
		x->off[i] += x->off[i - 1];
	/* off[i + 1] is row i's cursor while filling; row i's start after. */
	cur = x->off + 1;
	for (i = 0; i < nrels; i++)
		x->col[cur[rels[i].free]++] = rels[i].launch;
	for (i = 0; i < n; i++) {
		uint32_t s = x->off[i], e = x->off[i + 1], j, k, v;

		for (j = s + 1; j < e; j++) {
			v = x->col[j];
			for (k = j; k > s && x->col[k - 1] > v; k--)
				x->col[k] = x->col[k - 1];
			x->col[k] = v;
		}
	}
	for (i = 0; i < n; i++)
		x->rank[i] = -1;
	for (i = 0; i < nrels; i++)
		x->rank[x->col[i]] = 0;
	for (i = 0; i < g->nlaunch; i++)
		if (x->rank[g->launch_order[i]] == 0)
			x->rank[g->launch_order[i]] = (int32_t)(++r);
	/* Launches that are not in the launch order keep 0: invalid. */
	for (i = 0; i < n; i++)
		x->rank[i] = x->rank[i] > 0 ? x->rank[i] - 1 :
			     x->rank[i] == 0 ? INT32_MAX : -1;
	x->nranks = r;
	for (i = 0; i < n; i++) {
		uint32_t j, req = 0;

		for (j = x->off[i]; j < x->off[i + 1]; j++)
			if (x->rank[x->col[j]] >= 0 &&
			    x->rank[x->col[j]] != INT32_MAX &&
			    (uint32_t)x->rank[x->col[j]] + 1 > req)
				req = (uint32_t)x->rank[x->col[j]] + 1;
		x->req[i] = req;
	}
	x->act = calloc(r + 1, sizeof(*x->act));
	if (!x->act)
		goto nomem;
	return 0;
nomem:
	rt2_xdata_fini(x);
	return -ENOMEM;
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

/* Compact per-node facts for validation: one read of the node array. */
#define RT2_XK_LAUNCH	1U
#define RT2_XK_HOLD	2U
#define RT2_XK_PRED	4U

struct rt2_xcheck {
	uint8_t *kind;		/* RT2_XK_* */
	uint32_t *owner;
	int32_t *hold;		/* per value: its hold-address free, or -1 */
	unsigned int nv;
};

static void rt2_xcheck_fini(struct rt2_xcheck *c)
{
	free(c->kind);
	free(c->owner);
	free(c->hold);
}

static int rt2_xcheck_init(struct rt2_xcheck *c, const struct rt2_graph *g)
{
	unsigned int i, j, n = g->nnodes;

	memset(c, 0, sizeof(*c));
	c->kind = malloc(n + 1);
	c->owner = malloc((n + 1) * sizeof(*c->owner));
	if (!c->kind || !c->owner)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct rt2_node *x = &g->nodes[i];
		uint8_t k = x->npred ? RT2_XK_PRED : 0;

		c->owner[i] = x->owner;
		if (x->type == RT2_NT_LAUNCH) {
			k |= RT2_XK_LAUNCH;
			for (j = 0; j < x->nin && j < RT2_NODE_IO; j++)
				if (x->in[j] >= (int32_t)c->nv)
					c->nv = (unsigned int)x->in[j] + 1;
			for (j = 0; j < x->nout && j < RT2_NODE_IO; j++)
				if (x->out[j] >= (int32_t)c->nv)
					c->nv = (unsigned int)x->out[j] + 1;
		} else if (x->type == RT2_NT_FREE_HOLD) {
			k |= RT2_XK_HOLD;
			if (x->nin < 1 || x->in[0] < 0)
				return -EPROTO;
			if (x->in[0] >= (int32_t)c->nv)
				c->nv = (unsigned int)x->in[0] + 1;
		}
		c->kind[i] = k;
	}
	c->hold = malloc((c->nv + 1) * sizeof(*c->hold));
	if (!c->hold)
		return -ENOMEM;
	for (i = 0; i < c->nv; i++)
		c->hold[i] = -1;
	for (i = 0; i < n; i++) {
		int32_t v;

		if (!(c->kind[i] & RT2_XK_HOLD))
			continue;
		v = g->nodes[i].in[0];
		if (c->hold[v] >= 0)
			return -EPROTO;	/* one free per value */
		c->hold[v] = (int32_t)i;
	}
	return 0;
}

/*
 * Every launch that reads or writes a value a hold-address free gives
 * back either still has its edge to the free or is one of its relations:
 * an edge removal without a relation is refused.
 */
static int rt2_xdata_protected(const struct rt2_xdata *x,
			       const struct rt2_graph *g,
			       const struct rt2_xcheck *c)
{
	unsigned int i, j;

	for (i = 0; i < g->nnodes; i++) {
		const struct rt2_node *n = &g->nodes[i];
		int32_t v[2 * RT2_NODE_IO];
		unsigned int nvv = 0;

		if (!(c->kind[i] & RT2_XK_LAUNCH))
			continue;
		for (j = 0; j < n->nin && j < RT2_NODE_IO; j++)
			v[nvv++] = n->in[j];
		for (j = 0; j < n->nout && j < RT2_NODE_IO; j++)
			v[nvv++] = n->out[j];
		for (j = 0; j < nvv; j++) {
			int32_t f = v[j] >= 0 ? c->hold[v[j]] : -1;

			if (f >= 0 && !rt2_has_pred(g, (uint32_t)f, i) &&
			    !rt2_in_row(x, (uint32_t)f, i))
				return -EPROTO;
		}
	}
	return 0;
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
 * follow the launch order and the required generations agree.
 *
 * Return: 0, -EPROTO for malformed data, or -ENOMEM.
 */
int rt2_xdata_validate(const struct rt2_xdata *x, const struct rt2_graph *g)
{
	unsigned int i, j, n = g->nnodes, ranks = 0;
	struct rt2_xcheck c;
	int ret;

	if (x->nnodes != n || !x->off || !x->rank || !x->req ||
	    (x->nrels && !x->col) || x->off[0] != 0 || x->off[n] != x->nrels)
		return -EPROTO;
	ret = rt2_xcheck_init(&c, g);
	if (ret)
		goto out;
	ret = -EPROTO;
	for (i = 0; i < n; i++) {
		uint32_t s = x->off[i], e = x->off[i + 1], req = 0;
		bool hold = c.kind[i] & RT2_XK_HOLD;

		if (e < s || e > x->nrels || hold != (e > s))
			goto out;
		for (j = s; j < e; j++) {
			uint32_t l = x->col[j];

			if (l >= n || !(c.kind[l] & RT2_XK_LAUNCH) ||
			    c.owner[l] != c.owner[i] ||
			    (j > s && x->col[j - 1] >= l) ||
			    x->rank[l] < 0 || (uint32_t)x->rank[l] >= x->nranks ||
			    ((c.kind[i] & RT2_XK_PRED) && rt2_has_pred(g, i, l)))
				goto out;
			if ((uint32_t)x->rank[l] + 1 > req)
				req = (uint32_t)x->rank[l] + 1;
		}
		if (x->req[i] != req)
			goto out;
	}
	/* Ranks: exactly the relation launches, in launch order. */
	for (i = 0; i < g->nlaunch; i++) {
		int32_t r = x->rank[g->launch_order[i]];

		if (r >= 0 && (uint32_t)r != ranks++)
			goto out;
	}
	if (ranks != x->nranks)
		goto out;
	/*
	 * Every ranked node is some relation's launch (the kind array's
	 * spare bit marks the columns), and only those.
	 */
	for (i = 0; i < x->nrels; i++)
		c.kind[x->col[i]] |= 0x80;
	for (i = 0; i < n; i++)
		if ((x->rank[i] >= 0) != !!(c.kind[i] & 0x80))
			goto out;
	ret = rt2_xdata_protected(x, g, &c);
out:
	rt2_xcheck_fini(&c);
	return ret;
}
