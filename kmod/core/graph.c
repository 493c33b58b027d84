// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Graph definitions: structural checks of SNPU_IOC_GRAPH_CREATE and the
 * hazard lists that let back-to-back launches of a graph overlap.
 *
 * Hazards are found by a sweep over the nodes' accesses sorted by
 * resource and start: two accesses conflict when they name the same
 * resource, their ranges overlap and one of them writes. The sweep stops
 * each inner walk at the first access that starts past the current one's
 * end, so it visits only overlapping pairs; a bound on those visits keeps
 * a definition whose accesses all overlap from costing more than a bound.
 */
#include "coll.h"
#include "graph.h"
#include "kernels.h"

#ifdef __KERNEL__
#include <linux/sort.h>
#define snpu_sort(base, n, size, cmp)	sort(base, n, size, cmp, NULL)
#else
#include <stdlib.h>
#define snpu_sort(base, n, size, cmp)	qsort(base, n, size, cmp)
#endif

/**
 * snpu_graph_check_create() - check the fixed fields of a create argument
 * @c: the argument as copied from the caller
 *
 * Return: 0, or -EINVAL for flags, a pad or reserved field not zero, a
 * count out of range or a node size below the known one.
 */
int snpu_graph_check_create(const struct snpu_graph_create *c)
{
	if (c->flags || c->pad || c->reserved[0] || c->reserved[1])
		return -EINVAL;
	if (!c->nodes_count || c->nodes_count > SNPU_GRAPH_MAX_NODES ||
	    c->edges_count > SNPU_GRAPH_MAX_EDGES ||
	    c->slots_count > SNPU_GRAPH_MAX_SLOTS)
		return -EINVAL;
	if (c->node_size < SNPU_GRAPH_NODE_SIZE ||
	    c->node_size > SNPU_IOC_MAX_SIZE)
		return -EINVAL;
	return 0;
}

/**
 * snpu_graph_check_fanin() - check the fanin CSR of a definition
 * @offsets: @nodes + 1 offsets into @fanin, or NULL when @edges is 0
 * @fanin: @edges predecessor indices
 * @nodes: number of nodes
 * @edges: number of edges
 * @mark: @nodes words, zeroed by the caller (used to find duplicates)
 *
 * Return: 0, or -EINVAL when the offsets do not start at 0, decrease or do
 * not end at @edges, or a predecessor is not below its node (an edge that
 * could close a cycle) or is named twice for one node.
 */
int snpu_graph_check_fanin(const __u32 *offsets, const __u32 *fanin,
			   __u32 nodes, __u32 edges, __u32 *mark)
{
	__u32 n, e;

	if (!offsets)
		return edges ? -EINVAL : 0;
	if (offsets[0] || offsets[nodes] != edges)
		return -EINVAL;
	/* All offsets first: no edge is read before its range is known. */
	for (n = 0; n < nodes; n++)
		if (offsets[n + 1] < offsets[n] || offsets[n + 1] > edges)
			return -EINVAL;
	for (n = 0; n < nodes; n++) {
		for (e = offsets[n]; e < offsets[n + 1]; e++) {
			__u32 p = fanin[e];

			if (p >= n || mark[p] == n + 1)
				return -EINVAL;
			mark[p] = n + 1;
		}
	}
	return 0;
}

/* One address of a node: its binding, checked, as an access. */
static int snpu_gacc_bind(__u32 ref, __u64 value, __u64 bytes, __u32 slots,
			  const __u64 *slot_bytes, __u64 scratch_bytes,
			  struct snpu_gacc *a)
{
	__u64 limit;

	a->start = value;
	a->end = value + bytes;
	if (a->end < a->start)
		return ref == SNPU_GRAPH_REF_ADDR ? -EFAULT : -EINVAL;
	if (ref == SNPU_GRAPH_REF_ADDR) {
		a->res = SNPU_GRES_PLAIN;
		return 0;
	}
	if (ref == SNPU_GRAPH_REF_SCRATCH) {
		a->res = SNPU_GRES_SCRATCH;
		limit = scratch_bytes;
	} else if (ref >= SNPU_GRAPH_REF_SLOT(0) &&
		   ref < SNPU_GRAPH_REF_SLOT(slots)) {
		a->res = ref - SNPU_GRAPH_REF_SLOT(0);
		limit = slot_bytes[a->res];
	} else {
		return -EINVAL;
	}
	return a->end <= limit ? 0 : -EINVAL;
}

/**
 * snpu_graph_node_acc() - check a node and list the ranges it accesses
 * @n: the node as copied from the caller
 * @index: its index in the definition
 * @slots: the definition's number of slots
 * @slot_bytes: the extent of each slot
 * @scratch_bytes: the extent of the scratch
 * @acc: room for SNPU_GNODE_MAX_ACC accesses
 *
 * A node is a LAUNCH, a device-to-device COPY or a MEMSET that passes
 * snpu_task_check(), with @stream, @user_data and @reserved zero; each of
 * its device addresses is bound by its @ref entry, and the other entries
 * are zero. A plain address is checked by the caller against the
 * context's allocations.
 *
 * Return: the number of accesses written to @acc, -EINVAL for a node
 * breaking a rule above, or -EFAULT for a plain range that wraps.
 */
int snpu_graph_node_acc(const struct snpu_graph_node *n, __u32 index,
			__u32 slots, const __u64 *slot_bytes,
			__u64 scratch_bytes, struct snpu_gacc *acc)
{
	const struct snpu_task *t = &n->task;
	__u64 value[SNPU_GNODE_MAX_ACC], bytes[SNPU_GNODE_MAX_ACC];
	__u32 used = 0, words = 0, writes = 0x1, i;
	int ret;

	if (n->reserved || t->stream || t->user_data)
		return -EINVAL;
	switch (t->op) {
	case SNPU_OP_LAUNCH:
		break;
	case SNPU_OP_COPY:
		if (t->copy.dir != SNPU_COPY_D2D)
			return -EINVAL;
		break;
	case SNPU_OP_MEMSET:
		break;
	default:
		return -EINVAL;
	}
	ret = snpu_task_check(t);
	if (ret)
		return ret;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
		used = snpu_kernel_buffers(t->launch.kernel);
		words = snpu_kernel_words(t->launch.kernel);
		writes = snpu_kernel_writes(t->launch.kernel);
		for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++) {
			value[i] = t->launch.args[i].value;
			bytes[i] = t->launch.args[i].bytes;
		}
		break;
	case SNPU_OP_COPY:
		used = 0x3;
		value[0] = t->copy.dst;
		value[1] = t->copy.src;
		bytes[0] = t->copy.bytes;
		bytes[1] = t->copy.bytes;
		break;
	case SNPU_OP_MEMSET:
		used = 0x1;
		value[0] = t->memset.addr;
		bytes[0] = t->memset.bytes;
		break;
	}

	ret = 0;
	for (i = 0; i < SNPU_GNODE_MAX_ACC; i++) {
		struct snpu_gacc *a = &acc[ret];
		int err;

		if (!(used & (1u << i))) {
			if (n->ref[i])
				return -EINVAL;
			continue;
		}
		err = snpu_gacc_bind(n->ref[i], value[i], bytes[i], slots,
				     slot_bytes, scratch_bytes, a);
		if (err)
			return err;
		a->node = index;
		a->write = !!(writes & (1u << i));
		a->addr = i;
		a->word = !!(words & (1u << i));
		ret++;
	}
	return ret;
}

/**
 * snpu_graph_coll_acc() - check a collective node and list its accesses
 * @n: the node, with @task.op SNPU_OP_COLL, as copied from the caller
 * @index: its index in the definition
 * @nranks: the ranks of the communicator its @task.coll.comm names
 * @rank: that handle's rank
 * @slots: the definition's number of slots
 * @slot_bytes: the extent of each slot
 * @scratch_bytes: the extent of the scratch
 * @acc: room for SNPU_GNODE_MAX_ACC accesses
 *
 * As snpu_graph_node_acc() for the other nodes. @ref[0] binds @recv
 * (written, 32-bit elements) and @ref[1] @send (read), with the extents
 * the collective has for @nranks ranks; off the root of a broadcast
 * @send is 0 and unbound. The placement of the two (in place or apart)
 * is checked at each launch, once their addresses are known.
 *
 * Return: the number of accesses, -EINVAL for a node breaking a rule, or
 * -EFAULT for a plain range that wraps.
 */
int snpu_graph_coll_acc(const struct snpu_graph_node *n, __u32 index,
			__u32 nranks, __u32 rank, __u32 slots,
			const __u64 *slot_bytes, __u64 scratch_bytes,
			struct snpu_gacc *acc)
{
	const struct snpu_task *t = &n->task;
	struct snpu_coll_desc d = {
		.coll = t->coll.coll, .nranks = nranks, .count = t->coll.count,
	};
	bool send = true;
	__u64 sb, rb;
	__u32 i;
	int ret;

	if (n->reserved || t->stream || t->user_data || t->op != SNPU_OP_COLL)
		return -EINVAL;
	ret = snpu_task_check(t);
	if (ret)
		return ret;
	if (t->coll.root >= nranks || rank >= nranks ||
	    snpu_coll_extents(&d, &sb, &rb))
		return -EINVAL;
	for (i = 2; i < SNPU_GNODE_MAX_ACC; i++)
		if (n->ref[i])
			return -EINVAL;
	if (t->coll.coll == SNPU_COLL_BROADCAST && rank != t->coll.root) {
		if (t->coll.send || n->ref[1])
			return -EINVAL;
		send = false;
	}
	ret = snpu_gacc_bind(n->ref[0], t->coll.recv, rb, slots, slot_bytes,
			     scratch_bytes, &acc[0]);
	if (!ret && send)
		ret = snpu_gacc_bind(n->ref[1], t->coll.send, sb, slots,
				     slot_bytes, scratch_bytes, &acc[1]);
	if (ret)
		return ret;
	for (i = 0; i < 1u + send; i++) {
		acc[i].node = index;
		acc[i].write = !i;
		acc[i].addr = i;
		acc[i].word = 1;
	}
	return 1 + send;
}

/**
 * snpu_gacc_conflict() - do two accesses conflict?
 * @a: an access
 * @b: another
 *
 * Return: true when both name the same resource, their ranges overlap and
 * at least one writes.
 */
bool snpu_gacc_conflict(const struct snpu_gacc *a, const struct snpu_gacc *b)
{
	return a->res == b->res && (a->write || b->write) &&
	       a->start < b->end && b->start < a->end;
}

/**
 * snpu_gnode_conflict() - does any access of one node conflict with one
 * of another?
 * @a: the first node's accesses
 * @na: their number
 * @b: the second node's accesses
 * @nb: their number
 *
 * Return: true on a conflict (read after write, write after read, write
 * after write).
 */
bool snpu_gnode_conflict(const struct snpu_gacc *a, __u32 na,
			 const struct snpu_gacc *b, __u32 nb)
{
	__u32 i, j;

	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			if (snpu_gacc_conflict(&a[i], &b[j]))
				return true;
	return false;
}

static int snpu_gacc_cmp(const void *x, const void *y)
{
	const struct snpu_gacc *a = x, *b = y;

	if (a->res != b->res)
		return a->res < b->res ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return 0;
}

static int snpu_u64_cmp(const void *x, const void *y)
{
	__u64 a = *(const __u64 *)x, b = *(const __u64 *)y;

	return a < b ? -1 : a > b;
}

/**
 * snpu_graph_hazards() - the hazard lists of a definition
 * @acc: the accesses of all nodes; sorted in place
 * @nacc: their number
 * @nodes: number of nodes
 * @pairs: room for @max words
 * @max: the most hazard entries (and overlapping pairs visited / 4)
 * @offsets: @nodes + 1 words: the lists' CSR offsets
 * @list: room for @max words: for node n, list[offsets[n] ..
 *        offsets[n + 1]) are the nodes it conflicts with, itself included
 *        when it does, each once, in ascending order
 * @count: the number of entries written to @list
 *
 * Conflict is symmetric, so one list serves both directions: node n of a
 * launch waits for the listed nodes of the launch before, and tells the
 * listed nodes of the launch after when it completes.
 *
 * Return: 0, or -E2BIG when the definition has more hazard entries than
 * @max or the sweep would visit more than 4 * @max overlapping pairs.
 */
int snpu_graph_hazards(struct snpu_gacc *acc, __u32 nacc, __u32 nodes,
		       __u64 *pairs, __u32 max, __u32 *offsets, __u32 *list,
		       __u32 *count)
{
	__u64 visits = 0;
	__u32 n = 0, i, j, k;

	snpu_sort(acc, nacc, sizeof(*acc), snpu_gacc_cmp);
	for (i = 0; i < nacc; i++) {
		const struct snpu_gacc *a = &acc[i];

		if (a->write) {
			if (n == max)
				return -E2BIG;
			pairs[n++] = (__u64)a->node << 32 | a->node;
		}
		for (j = i + 1; j < nacc; j++) {
			const struct snpu_gacc *b = &acc[j];

			if (b->res != a->res || b->start >= a->end)
				break;
			if (++visits > 4ULL * max)
				return -E2BIG;
			if (!a->write && !b->write)
				continue;
			if (n + 2 > max)
				return -E2BIG;
			pairs[n++] = (__u64)a->node << 32 | b->node;
			pairs[n++] = (__u64)b->node << 32 | a->node;
		}
	}

	snpu_sort(pairs, n, sizeof(*pairs), snpu_u64_cmp);
	for (i = 0; i <= nodes; i++)
		offsets[i] = 0;
	for (i = 0, k = 0; i < n; i++) {
		if (i && pairs[i] == pairs[i - 1])
			continue;
		list[k++] = (__u32)pairs[i];
		offsets[(pairs[i] >> 32) + 1]++;
	}
	for (i = 0; i < nodes; i++)
		offsets[i + 1] += offsets[i];
	*count = k;
	return 0;
}

/**
 * snpu_graph_plain_merge() - merge plain ranges into disjoint intervals
 * @acc: plain accesses only; sorted and merged in place
 * @nacc: their number
 *
 * Return: the number of intervals left at the start of @acc, in ascending
 * order, none touching another.
 */
__u32 snpu_graph_plain_merge(struct snpu_gacc *acc, __u32 nacc)
{
	__u32 i, n = 0;

	if (!nacc)
		return 0;
	snpu_sort(acc, nacc, sizeof(*acc), snpu_gacc_cmp);
	for (i = 1; i < nacc; i++) {
		if (acc[i].start <= acc[n].end) {
			if (acc[i].end > acc[n].end)
				acc[n].end = acc[i].end;
			continue;
		}
		acc[++n] = acc[i];
	}
	return n + 1;
}

/**
 * snpu_graph_plain_overlaps() - does a range overlap merged intervals?
 * @iv: intervals from snpu_graph_plain_merge()
 * @n: their number
 * @start: the range's start
 * @end: its end (exclusive)
 *
 * Return: true when [@start, @end) overlaps one of them.
 */
bool snpu_graph_plain_overlaps(const struct snpu_gacc *iv, __u32 n,
			       __u64 start, __u64 end)
{
	__u32 lo = 0, hi = n;

	/* The first interval that ends past @start. */
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (iv[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && iv[lo].start < end;
}
