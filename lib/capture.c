// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libsnpu: the graph recorder. It turns the tasks a capture takes from
 * one stream into a graph definition in library memory: one node per
 * launch, device-to-device copy, memset or collective, and the internal
 * edges the stream order needs, derived from the device ranges each node
 * touches.
 *
 * A node writes the buffers its kernel writes (snpu_kernel_writes():
 * argument 0, and for SOFTMAX_XENT_F32 argument 1 too), the destination
 * of a copy, the range of a memset and the recv buffer of a collective;
 * it reads the other buffers. A node depends on every earlier node that wrote bytes it reads
 * or writes (read after write, write after write) and on every earlier
 * node that read bytes it writes (write after read). The access table
 * keeps, for each range, the node that wrote it last and the nodes that
 * read it since: a write trims the ranges it covers from the table,
 * because whatever later conflicts with them conflicts with the write,
 * which already follows them. The table is kept in order of start, so
 * the entries a range may overlap are found by binary search: those
 * starting before its end and not before its start minus the longest
 * range entered.
 *
 * The edges come from the addresses of the recording. A range inside one
 * of the capture's boundary slots is recorded as an offset into it
 * (SNPU_GRAPH_REF_SLOT), so that a launch may bind the slot elsewhere; a
 * range partly inside a slot cannot be; any other address stays plain
 * (SNPU_GRAPH_REF_ADDR). The recorder uses no scratch.
 *
 * Pure computation: no system call, nothing global; unit tested natively.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void snpu_rec_init(struct snpu_rec *r)
{
	memset(r, 0, sizeof(*r));
}

void snpu_rec_fini(struct snpu_rec *r)
{
	free(r->nodes);
	free(r->fanin_offsets);
	free(r->fanin);
	free(r->acc);
	free(r->pieces);
	free(r->events);
	memset(r, 0, sizeof(*r));
}

/* Make room for @more elements of @size bytes after @count in *@p. */
static int snpu_rec_grow(void **p, uint32_t *cap, uint32_t count,
			 uint32_t more, size_t size)
{
	uint64_t want = (uint64_t)count + more;
	uint64_t n = *cap ? *cap : 16;
	void *q;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	if (n > UINT32_MAX)
		return -ENOMEM;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = (uint32_t)n;
	return 0;
}

/**
 * snpu_rec_check() - refuse a task as SNPU_IOC_SUBMIT would
 * @t: the task
 * @caps: snpu_info.caps of the device
 *
 * The checks the kernel makes from the descriptor alone, in its order:
 * the descriptor (kmod/core: snpu_task_check()), then the test hooks.
 * Handles and addresses are not checked here: see graph.c.
 *
 * Return: 0, -EINVAL or -EOPNOTSUPP.
 */
int snpu_rec_check(const struct snpu_task *t, uint64_t caps)
{
	int ret;

	ret = snpu_task_check(t);
	if (ret)
		return ret;
	if (t->op == SNPU_OP_LAUNCH && !(caps & SNPU_CAP_TEST_HOOKS) &&
	    (t->launch.kernel == SNPU_KERNEL_SPIN ||
	     t->launch.kernel == SNPU_KERNEL_FAIL))
		return -EOPNOTSUPP;
	return 0;
}

/* The ranges a node touches, at most SNPU_KERNEL_MAX_ARGS. */
struct snpu_rec_range {
	uint64_t lo, hi;
	int write;
};

/*
 * The extents of a collective node's buffers, which depend on the
 * communicator's size, and whether it has a send buffer (not off the
 * root of a broadcast).
 */
struct snpu_rec_coll {
	uint64_t send_bytes, recv_bytes;
	int send;
};

static void snpu_rec_range_set(struct snpu_rec_range *r, uint64_t addr,
			       uint64_t bytes, int write)
{
	r->lo = addr;
	/* A range past the end of the address space: the kernel's EFAULT. */
	r->hi = addr + bytes < addr ? UINT64_MAX : addr + bytes;
	r->write = write;
}

static unsigned int snpu_rec_ranges(const struct snpu_graph_node *n,
				    const struct snpu_rec_coll *c,
				    struct snpu_rec_range *rg)
{
	const struct snpu_task *t = &n->task;
	unsigned int i, nr = 0;
	uint32_t bufs, writes;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
		bufs = snpu_kernel_buffers(t->launch.kernel);
		writes = snpu_kernel_writes(t->launch.kernel);
		for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
			if (bufs & (1U << i))
				snpu_rec_range_set(&rg[nr++],
						   t->launch.args[i].value,
						   t->launch.args[i].bytes,
						   !!(writes & (1U << i)));
		break;
	case SNPU_OP_COPY:
		snpu_rec_range_set(&rg[nr++], t->copy.dst, t->copy.bytes, 1);
		snpu_rec_range_set(&rg[nr++], t->copy.src, t->copy.bytes, 0);
		break;
	case SNPU_OP_MEMSET:
		snpu_rec_range_set(&rg[nr++], t->memset.addr, t->memset.bytes,
				   1);
		break;
	case SNPU_OP_COLL:
		snpu_rec_range_set(&rg[nr++], t->coll.recv, c->recv_bytes, 1);
		if (c->send)
			snpu_rec_range_set(&rg[nr++], t->coll.send,
					   c->send_bytes, 0);
		break;
	}
	return nr;
}

/*
 * Bind one address of @bytes: inside slot i, it becomes an offset into it
 * (SNPU_GRAPH_REF_SLOT(i)); outside every slot, it stays plain.
 *
 * Return: 0, or SNPU_REC_UNSUPPORTED for a range partly in a slot.
 */
static int snpu_rec_bind(const struct snpu_rec *r, __u64 *value,
			 uint64_t bytes, __u32 *ref)
{
	uint64_t lo = *value, hi = lo + bytes < lo ? UINT64_MAX : lo + bytes;
	uint64_t b, e;
	uint32_t i;

	for (i = 0; i < r->slots_count; i++) {
		b = r->slot_base[i];
		e = b + r->slot_bytes[i];
		if (hi <= b || lo >= e)
			continue;
		if (lo < b || hi > e)
			return SNPU_REC_UNSUPPORTED;
		*value = lo - b;
		*ref = SNPU_GRAPH_REF_SLOT(i);
		return 0;
	}
	*ref = SNPU_GRAPH_REF_ADDR;
	return 0;
}

/* Bind every device address of @n (see snpu_rec_bind()). */
static int snpu_rec_bind_node(const struct snpu_rec *r,
			      struct snpu_graph_node *n,
			      const struct snpu_rec_coll *c)
{
	struct snpu_task *t = &n->task;
	uint32_t bufs, i;
	int ret = 0;

	if (!r->slots_count)
		return 0;
	switch (t->op) {
	case SNPU_OP_LAUNCH:
		bufs = snpu_kernel_buffers(t->launch.kernel);
		for (i = 0; i < SNPU_KERNEL_MAX_ARGS && !ret; i++)
			if (bufs & (1U << i))
				ret = snpu_rec_bind(r, &t->launch.args[i].value,
						    t->launch.args[i].bytes,
						    &n->ref[i]);
		return ret;
	case SNPU_OP_COPY:
		ret = snpu_rec_bind(r, &t->copy.dst, t->copy.bytes, &n->ref[0]);
		return ret ? ret : snpu_rec_bind(r, &t->copy.src,
						 t->copy.bytes, &n->ref[1]);
	case SNPU_OP_MEMSET:
		return snpu_rec_bind(r, &t->memset.addr, t->memset.bytes,
				     &n->ref[0]);
	case SNPU_OP_COLL:
		/* The kernel's order: @ref[0] binds recv, @ref[1] send. */
		ret = snpu_rec_bind(r, &t->coll.recv, c->recv_bytes,
				    &n->ref[0]);
		if (!ret && c->send)
			ret = snpu_rec_bind(r, &t->coll.send, c->send_bytes,
					    &n->ref[1]);
		return ret;
	default:
		return 0;
	}
}

static int snpu_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The first entry of the access table whose start is at or after @lo. */
static uint32_t snpu_rec_lower(const struct snpu_rec *r, uint64_t lo)
{
	uint32_t a = 0, b = r->acc_count, m;

	while (a < b) {
		m = a + (b - a) / 2;
		if (r->acc[m].lo < lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/*
 * The entries that may overlap [lo, hi): those that start before @hi,
 * and not before lo - the longest range: [*@s, *@e).
 */
static void snpu_rec_window(const struct snpu_rec *r, uint64_t lo,
			    uint64_t hi, uint32_t *s, uint32_t *e)
{
	*s = snpu_rec_lower(r, lo > r->acc_maxlen ? lo - r->acc_maxlen : 0);
	*e = snpu_rec_lower(r, hi);
}

/* Enter @a in the access table, in order of start. */
static int snpu_rec_insert(struct snpu_rec *r,
			   const struct snpu_rec_access *a)
{
	uint32_t at;

	if (snpu_rec_grow((void **)&r->acc, &r->acc_cap, r->acc_count, 1,
			  sizeof(*a)))
		return -ENOMEM;
	at = snpu_rec_lower(r, a->lo);
	if (at < r->acc_count)
		memmove(&r->acc[at + 1], &r->acc[at],
			(r->acc_count - at) * sizeof(*a));
	r->acc[at] = *a;
	r->acc_count++;
	if (a->hi - a->lo > r->acc_maxlen)
		r->acc_maxlen = a->hi - a->lo;
	return 0;
}

/*
 * Remove [lo, hi) from the access table. An entry that starts before it
 * keeps its start (and its place); what is left of an entry past @hi
 * starts at @hi, so it moves: such pieces are entered again afterwards.
 */
static int snpu_rec_trim(struct snpu_rec *r, uint64_t lo, uint64_t hi)
{
	struct snpu_rec_access a;
	uint32_t s, e, i, out, pieces = 0;

	snpu_rec_window(r, lo, hi, &s, &e);
	if (s == e)
		return 0;
	if (snpu_rec_grow((void **)&r->pieces, &r->pieces_cap, 0, e - s,
			  sizeof(*r->pieces)))
		return -ENOMEM;
	for (i = s, out = s; i < e; i++) {
		a = r->acc[i];
		if (a.hi <= lo) {
			r->acc[out++] = a;
			continue;
		}
		if (a.hi > hi) {
			r->pieces[pieces] = a;
			r->pieces[pieces++].lo = hi;
		}
		if (a.lo < lo) {
			a.hi = lo;
			r->acc[out++] = a;
		}
	}
	if (e < r->acc_count)
		memmove(&r->acc[out], &r->acc[e],
			(r->acc_count - e) * sizeof(a));
	r->acc_count -= e - out;
	for (i = 0; i < pieces; i++)
		if (snpu_rec_insert(r, &r->pieces[i]))
			return -ENOMEM;
	return 0;
}

/* Record @ev as recorded by the body; a wait on it is then order only. */
static int snpu_rec_event(struct snpu_rec *r, uint32_t ev)
{
	uint32_t i;

	for (i = 0; i < r->events_count; i++)
		if (r->events[i] == ev)
			return 0;
	if (snpu_rec_grow((void **)&r->events, &r->events_cap,
			  r->events_count, 1, sizeof(*r->events)))
		return -ENOMEM;
	r->events[r->events_count++] = ev;
	return 0;
}

/*
 * Append node @t (a launch, a device-to-device copy, a memset, or a
 * collective with its extents @c): find its predecessors from the access
 * table, then enter its own ranges.
 */
static int snpu_rec_node(struct snpu_rec *r, const struct snpu_task *t,
			 const struct snpu_rec_coll *c)
{
	struct snpu_rec_range rg[SNPU_KERNEL_MAX_ARGS];
	uint32_t n = r->nodes_count, first = r->edges_count;
	struct snpu_graph_node *node;
	unsigned int nr, k;
	uint32_t i, e, s, end;

	if (n >= SNPU_GRAPH_MAX_NODES)
		return SNPU_REC_UNSUPPORTED;
	if (snpu_rec_grow((void **)&r->nodes, &r->nodes_cap, n, 1,
			  sizeof(*r->nodes)))
		return -ENOMEM;
	/* fanin_offsets has an entry more than there are nodes. */
	if (snpu_rec_grow((void **)&r->fanin_offsets, &r->offsets_cap, n + 1,
			  1, sizeof(*r->fanin_offsets)))
		return -ENOMEM;

	node = &r->nodes[n];
	memset(node, 0, sizeof(*node));
	node->task = *t;
	node->task.stream = 0;
	node->task.user_data = 0;
	/* Off a broadcast's root, a graph node names no send buffer. */
	if (c && !c->send)
		node->task.coll.send = 0;
	nr = snpu_rec_ranges(node, c, rg);
	if (snpu_rec_bind_node(r, node, c))
		return SNPU_REC_UNSUPPORTED;

	/*
	 * Predecessors: the edges of node n, as the table was before it;
	 * an entry may be found by several ranges, the sort below dedups.
	 */
	for (k = 0; k < nr; k++) {
		snpu_rec_window(r, rg[k].lo, rg[k].hi, &s, &end);
		for (i = s; i < end; i++) {
			const struct snpu_rec_access *a = &r->acc[i];

			if (a->hi <= rg[k].lo || (!a->write && !rg[k].write))
				continue;
			if (snpu_rec_grow((void **)&r->fanin, &r->edges_cap,
					  r->edges_count, 1,
					  sizeof(*r->fanin)))
				return -ENOMEM;
			r->fanin[r->edges_count++] = a->node;
		}
	}
	/* Sorted, without duplicates. */
	if (r->edges_count - first > 1)
		qsort(r->fanin + first, r->edges_count - first,
		      sizeof(*r->fanin), snpu_u32_cmp);
	for (i = first, e = first; i < r->edges_count; i++)
		if (e == first || r->fanin[e - 1] != r->fanin[i])
			r->fanin[e++] = r->fanin[i];
	r->edges_count = e;
	if (e > SNPU_GRAPH_MAX_EDGES) {
		r->edges_count = first;
		return SNPU_REC_UNSUPPORTED;
	}

	/* Then its own ranges: writes replace, reads add up. */
	for (k = 0; k < nr; k++) {
		if (rg[k].write && snpu_rec_trim(r, rg[k].lo, rg[k].hi))
			return -ENOMEM;
	}
	for (k = 0; k < nr; k++) {
		struct snpu_rec_access a = {
			.lo = rg[k].lo, .hi = rg[k].hi,
			.node = n, .write = (uint32_t)rg[k].write,
		};

		if (snpu_rec_insert(r, &a))
			return -ENOMEM;
	}
	r->fanin_offsets[n] = first;
	r->fanin_offsets[n + 1] = r->edges_count;
	r->nodes_count = n + 1;
	return 0;
}

/**
 * snpu_rec_add() - record one task of the captured stream
 * @r: the recorder
 * @t: the task, already accepted by snpu_rec_check()
 *
 * A launch, a device-to-device copy or a memset becomes a node. An event
 * record is remembered; a wait on an event the body recorded is stream
 * order, which the edges already give, and adds nothing. The rest (a
 * host callback, a copy from or to host memory, a wait on an event
 * recorded outside the capture, a graph launch, a node past
 * SNPU_GRAPH_MAX_NODES or an edge past SNPU_GRAPH_MAX_EDGES) cannot be
 * expressed; nor can a collective here, whose extents depend on its
 * communicator: see snpu_rec_add_coll().
 *
 * Return: 0, SNPU_REC_UNSUPPORTED with @r unchanged, or -ENOMEM.
 */
int snpu_rec_add(struct snpu_rec *r, const struct snpu_task *t)
{
	uint32_t i;

	switch (t->op) {
	case SNPU_OP_LAUNCH:
	case SNPU_OP_MEMSET:
		return snpu_rec_node(r, t, NULL);
	case SNPU_OP_COPY:
		if (t->copy.dir != SNPU_COPY_D2D)
			return SNPU_REC_UNSUPPORTED;
		return snpu_rec_node(r, t, NULL);
	case SNPU_OP_EVENT_RECORD:
		return snpu_rec_event(r, t->event.event);
	case SNPU_OP_STREAM_WAIT:
		for (i = 0; i < r->events_count; i++)
			if (r->events[i] == t->event.event)
				return 0;
		return SNPU_REC_UNSUPPORTED;
	default:
		return SNPU_REC_UNSUPPORTED;
	}
}

/**
 * snpu_rec_add_coll() - record a collective task of the captured stream
 * @r: the recorder
 * @t: the task (SNPU_OP_COLL), already accepted by snpu_rec_check()
 * @nranks: the ranks of the communicator its handle names
 * @rank: that handle's rank
 *
 * A collective node, as the kernel takes it (SNPU_OP_COLL graph nodes):
 * it writes its recv buffer (@ref[0]) and reads its send buffer
 * (@ref[1]), with the extents the collective has for @nranks ranks; off
 * the root of a broadcast it has no send buffer, and its @send is 0.
 * What the other ranks read and write of their own buffers is theirs:
 * a collective completes on every rank once no rank reads another's
 * buffers any more, so its successors here need no other edge.
 *
 * Return: 0, SNPU_REC_UNSUPPORTED with @r unchanged (also for a task
 * SNPU_IOC_SUBMIT would refuse for that rank), or -ENOMEM.
 */
int snpu_rec_add_coll(struct snpu_rec *r, const struct snpu_task *t,
		      uint32_t nranks, uint32_t rank)
{
	struct snpu_rec_coll c;

	if (t->op != SNPU_OP_COLL ||
	    snpu_coll_ranges(t, nranks, rank, &c.send_bytes, &c.recv_bytes))
		return SNPU_REC_UNSUPPORTED;
	c.send = t->coll.coll != SNPU_COLL_BROADCAST || rank == t->coll.root;
	return snpu_rec_node(r, t, &c);
}

/**
 * snpu_rec_desc() - the recorded definition, as snpu_graph_create() takes it
 * @r: the recorder
 * @desc: filled in; points into @r
 *
 * Return: 0, or SNPU_REC_UNSUPPORTED when nothing was recorded.
 */
int snpu_rec_desc(const struct snpu_rec *r, struct snpu_graph_desc *desc)
{
	memset(desc, 0, sizeof(*desc));
	if (!r->nodes_count)
		return SNPU_REC_UNSUPPORTED;
	desc->nodes = r->nodes;
	desc->nodes_count = r->nodes_count;
	desc->edges_count = r->edges_count;
	desc->slots_count = r->slots_count;
	if (r->slots_count)
		desc->slot_bytes = r->slot_bytes;
	if (r->edges_count) {
		desc->fanin_offsets = r->fanin_offsets;
		desc->fanin = r->fanin;
	}
	return 0;
}
