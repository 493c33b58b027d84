/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw-ioctl helpers of the graph suite (graph_create_test, graph_run_test,
 * graph_life_test): a definition builder, the graph ioctls, the graph
 * launch task, a minimal mapping of the command queues, the device's
 * graph statistics in debugfs and a module reload with other parameters.
 * Like common/snpu_test.h they never assert; they return 0 or -errno.
 */
#ifndef _GRAPH_UTIL_H
#define _GRAPH_UTIL_H

#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "snpu_test.h"

#define G_MAX_NODES		SNPU_GRAPH_MAX_NODES
#define G_DEBUGFS		"/sys/kernel/debug"
#define G_STATS			G_DEBUGFS "/snpu/snpu0/graph_stats"
#define G_PARAMS		"/sys/module/snpu/parameters/"

/* How a device address of a node is bound: SNPU_GRAPH_REF_* and value. */
struct gref {
	uint32_t kind;
	uint64_t v;
};

static inline struct gref g_addr(uint64_t addr)
{
	return (struct gref){ SNPU_GRAPH_REF_ADDR, addr };
}

static inline struct gref g_slot(unsigned int i, uint64_t off)
{
	return (struct gref){ SNPU_GRAPH_REF_SLOT(i), off };
}

static inline struct gref g_scratch(uint64_t off)
{
	return (struct gref){ SNPU_GRAPH_REF_SCRATCH, off };
}

/*
 * A definition being built: nodes are appended in index order, and the
 * predecessors of a node right after it (g_pred), so the fanin CSR is
 * built as it goes.
 */
struct gdef {
	struct snpu_graph_node *nodes;
	uint32_t *offs;		/* nodes_count + 1 */
	uint32_t *fanin;
	uint32_t nodes_count, edges_count, slots_count, cap_nodes, cap_edges;
	uint64_t slot_bytes[SNPU_GRAPH_MAX_SLOTS];
	uint64_t scratch_bytes;
};

static inline void g_free(struct gdef *g)
{
	free(g->nodes);
	free(g->offs);
	free(g->fanin);
	memset(g, 0, sizeof(*g));
}

static inline int g_init(struct gdef *g, uint32_t slots,
			 const uint64_t *slot_bytes, uint64_t scratch_bytes)
{
	memset(g, 0, sizeof(*g));
	g->cap_nodes = 16;
	g->cap_edges = 16;
	g->nodes = calloc(g->cap_nodes, sizeof(*g->nodes));
	g->offs = calloc(g->cap_nodes + 1, sizeof(*g->offs));
	g->fanin = calloc(g->cap_edges, sizeof(*g->fanin));
	if (!g->nodes || !g->offs || !g->fanin) {
		g_free(g);
		return -ENOMEM;
	}
	g->slots_count = slots;
	if (slots)
		memcpy(g->slot_bytes, slot_bytes, slots * sizeof(*slot_bytes));
	g->scratch_bytes = scratch_bytes;
	return 0;
}

/* Append a node doing @t; Return: its index, or -ENOMEM. */
static inline int g_node(struct gdef *g, const struct snpu_task *t)
{
	if (g->nodes_count == g->cap_nodes) {
		uint32_t cap = g->cap_nodes * 2;
		void *n = realloc(g->nodes, cap * sizeof(*g->nodes));
		void *o;

		if (!n)
			return -ENOMEM;
		g->nodes = n;
		o = realloc(g->offs, (cap + 1) * sizeof(*g->offs));
		if (!o)
			return -ENOMEM;
		g->offs = o;
		g->cap_nodes = cap;
	}
	memset(&g->nodes[g->nodes_count], 0, sizeof(*g->nodes));
	g->nodes[g->nodes_count].task = *t;
	g->nodes_count++;
	g->offs[g->nodes_count] = g->edges_count;
	return g->nodes_count - 1;
}

/* Bind address @i of the last node (launch arg i, copy 0 dst 1 src). */
static inline void g_ref(struct gdef *g, unsigned int i, struct gref r)
{
	struct snpu_graph_node *n = &g->nodes[g->nodes_count - 1];

	n->ref[i] = r.kind;
	switch (n->task.op) {
	case SNPU_OP_LAUNCH:
		n->task.launch.args[i].value = r.v;
		break;
	case SNPU_OP_COPY:
		if (i)
			n->task.copy.src = r.v;
		else
			n->task.copy.dst = r.v;
		break;
	case SNPU_OP_MEMSET:
		n->task.memset.addr = r.v;
		break;
	}
}

/* The last node waits for node @pred. Return: 0 or -ENOMEM. */
static inline int g_pred(struct gdef *g, uint32_t pred)
{
	if (g->edges_count == g->cap_edges) {
		void *f = realloc(g->fanin, 2 * g->cap_edges *
				  sizeof(*g->fanin));

		if (!f)
			return -ENOMEM;
		g->fanin = f;
		g->cap_edges *= 2;
	}
	g->fanin[g->edges_count++] = pred;
	g->offs[g->nodes_count] = g->edges_count;
	return 0;
}

/* ---- node tasks (stream, flags, user_data zero) --------------------------- */

static inline int g_fill(struct gdef *g, struct gref dst, uint64_t bytes,
			 uint32_t pattern, uint32_t blocks)
{
	struct snpu_task t = snpu_t_fill(0, 0, bytes, pattern, blocks);
	int n = g_node(g, &t);

	if (n >= 0)
		g_ref(g, 0, dst);
	return n;
}

/* ADD_I32 (or another three-buffer @kernel): c = a op b, @bytes each. */
static inline int g_binop(struct gdef *g, uint32_t kernel, struct gref c,
			  struct gref a, struct gref b, uint64_t bytes,
			  uint32_t blocks)
{
	struct snpu_task t = snpu_t_binop(0, kernel, 0, 0, 0, bytes, blocks);
	int n = g_node(g, &t);

	if (n >= 0) {
		g_ref(g, 0, c);
		g_ref(g, 1, a);
		g_ref(g, 2, b);
	}
	return n;
}

/* The COPY kernel: dst = src, @bytes each. */
static inline int g_copyk(struct gdef *g, struct gref dst, struct gref src,
			  uint64_t bytes, uint32_t blocks)
{
	struct snpu_task t = snpu_t_launch(0, SNPU_KERNEL_COPY, blocks);
	int n;

	snpu_t_buf(&t, 0, 0, bytes);
	snpu_t_buf(&t, 1, 0, bytes);
	n = g_node(g, &t);
	if (n >= 0) {
		g_ref(g, 0, dst);
		g_ref(g, 1, src);
	}
	return n;
}

/* A D2D copy task. */
static inline int g_copy(struct gdef *g, struct gref dst, struct gref src,
			 uint64_t bytes)
{
	struct snpu_task t = snpu_t_copy(0, SNPU_COPY_D2D, 0, 0, bytes);
	int n = g_node(g, &t);

	if (n >= 0) {
		g_ref(g, 0, dst);
		g_ref(g, 1, src);
	}
	return n;
}

static inline int g_memset(struct gdef *g, struct gref dst, uint32_t value,
			   uint64_t bytes)
{
	struct snpu_task t = snpu_t_memset(0, 0, value, bytes);
	int n = g_node(g, &t);

	if (n >= 0)
		g_ref(g, 0, dst);
	return n;
}

static inline int g_spin(struct gdef *g, uint64_t ns, uint32_t blocks)
{
	struct snpu_task t = snpu_t_spin(0, ns, blocks);

	return g_node(g, &t);
}

static inline int g_failnode(struct gdef *g, uint64_t err)
{
	struct snpu_task t = snpu_t_fail(0, err);

	return g_node(g, &t);
}

/* ---- the ioctls ------------------------------------------------------------ */

/* The GRAPH_CREATE argument describing @g (the caller may mutate it). */
static inline void g_args(const struct gdef *g, struct snpu_graph_create *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->nodes_count = g->nodes_count;
	c->edges_count = g->edges_count;
	c->slots_count = g->slots_count;
	c->node_size = sizeof(struct snpu_graph_node);
	c->nodes = (uintptr_t)g->nodes;
	c->fanin_offsets = (uintptr_t)g->offs;
	c->fanin = g->edges_count ? (uintptr_t)g->fanin : 0;
	c->slot_bytes = g->slots_count ? (uintptr_t)g->slot_bytes : 0;
	c->scratch_bytes = g->scratch_bytes;
}

static inline int g_create_raw(int fd, struct snpu_graph_create *c)
{
	return snpu_ioc(fd, SNPU_IOC_GRAPH_CREATE, c);
}

static inline int g_create(int fd, const struct gdef *g, uint32_t *handle)
{
	struct snpu_graph_create c;
	int ret;

	g_args(g, &c);
	ret = g_create_raw(fd, &c);
	if (!ret)
		*handle = c.graph;
	return ret;
}

static inline int g_destroy(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_GRAPH_DESTROY, handle, 0);
}

/* The launch task of graph @h on @stream. */
static inline struct snpu_task g_launch_task(uint32_t stream, uint32_t h,
					     const uint64_t *slots,
					     unsigned int nslots,
					     uint64_t scratch)
{
	struct snpu_task t;

	memset(&t, 0, sizeof(t));
	t.op = SNPU_OP_GRAPH;
	t.stream = stream;
	t.graph.graph = h;
	t.graph.scratch = scratch;
	if (nslots)
		memcpy(t.graph.slots, slots, nslots * sizeof(*slots));
	return t;
}

static inline int g_launch(int fd, uint32_t stream, uint32_t h,
			   const uint64_t *slots, unsigned int nslots,
			   uint64_t scratch, uint64_t *seq)
{
	struct snpu_task t = g_launch_task(stream, h, slots, nslots, scratch);

	return snpu_submit(fd, &t, 1, seq);
}

/* ---- command queues, mapped by hand ----------------------------------------- */

struct gring {
	void *mem;
	size_t bytes;
	uint32_t *sq_head, *sq_tail, *cq_head, *cq_tail;
	uint32_t sq_mask, sq_entries, cq_mask;
	struct snpu_task *sqes;
	struct snpu_cqe *cqes;
};

static inline uint32_t *g_word(void *mem, uint32_t off)
{
	return (uint32_t *)((char *)mem + off);
}

/* RING_SETUP with @flags of @entries SQEs on @fd and its mapping. */
static inline int gr_init_flags(int fd, uint32_t entries, uint32_t flags,
				struct gring *r)
{
	struct snpu_ring_setup s = {
		.size = sizeof(s), .sq_entries = entries, .flags = flags,
	};
	void *mem;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = snpu_ioc(fd, SNPU_IOC_RING_SETUP, &s);
	if (ret)
		return ret;
	mem = mmap(NULL, s.mmap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)s.mmap_offset);
	if (mem == MAP_FAILED)
		return -errno;
	r->mem = mem;
	r->bytes = s.mmap_bytes;
	r->sq_head = g_word(mem, s.sq.head);
	r->sq_tail = g_word(mem, s.sq.tail);
	r->sq_mask = *g_word(mem, s.sq.mask);
	r->sq_entries = *g_word(mem, s.sq.entries);
	r->sqes = (struct snpu_task *)((char *)mem + s.sq.array);
	r->cq_head = g_word(mem, s.cq.head);
	r->cq_tail = g_word(mem, s.cq.tail);
	r->cq_mask = *g_word(mem, s.cq.mask);
	r->cqes = (struct snpu_cqe *)((char *)mem + s.cq.array);
	return 0;
}

/* RING_SETUP (no poller) of @entries SQEs on @fd and its mapping. */
static inline int gr_init(int fd, uint32_t entries, struct gring *r)
{
	return gr_init_flags(fd, entries, 0, r);
}

static inline void gr_fini(struct gring *r)
{
	if (r->mem)
		munmap(r->mem, r->bytes);
	r->mem = NULL;
}

/* Queue @t in the SQ (not yet consumed). Return: 0 or -ENOSPC. */
static inline int gr_push(struct gring *r, const struct snpu_task *t)
{
	uint32_t tail = *r->sq_tail;

	if (tail - __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE) >=
	    r->sq_entries)
		return -ENOSPC;
	r->sqes[tail & r->sq_mask] = *t;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return 0;
}

/*
 * ENTER: consume @to_submit SQEs (0 with a poller: then wake it), wait
 * for @min CQEs (30 s at most).
 */
static inline int gr_enter_flags(int fd, uint32_t to_submit, uint32_t min,
				 uint32_t flags, uint32_t *submitted)
{
	struct snpu_enter e = {
		.size = sizeof(e), .to_submit = to_submit,
		.min_complete = min,
		.flags = flags | (min ? SNPU_ENTER_GETEVENTS : 0),
		.timeout_ns = 30 * NS_PER_SEC,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_ENTER, &e);

	if (!ret && submitted)
		*submitted = e.submitted;
	return ret;
}

static inline int gr_enter(int fd, uint32_t to_submit, uint32_t min,
			   uint32_t *submitted)
{
	return gr_enter_flags(fd, to_submit, min, 0, submitted);
}

/* Take up to @max CQEs out of the CQ. Return: how many. */
static inline unsigned int gr_reap(struct gring *r, struct snpu_cqe *out,
				   unsigned int max)
{
	uint32_t head = *r->cq_head;
	uint32_t tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	while (head != tail && n < max)
		out[n++] = r->cqes[head++ & r->cq_mask];
	__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

/*
 * Push @n tasks, consume them and wait for @n CQEs into @out.
 * Return: 0 or -errno (-EIO when fewer came back).
 */
static inline int gr_run(int fd, struct gring *r, const struct snpu_task *t,
			 unsigned int n, struct snpu_cqe *out)
{
	unsigned int i, got = 0, done = 0;
	uint32_t sub;
	int ret;

	while (done < n) {
		unsigned int k = 0;

		while (done + k < n && !gr_push(r, &t[done + k]))
			k++;
		ret = gr_enter(fd, k, 0, &sub);
		if (ret)
			return ret;
		if (sub != k)
			return -EIO;
		done += k;
		/* Reap what is there so the CQ never fills. */
		got += gr_reap(r, out + got, n - got);
	}
	for (i = 0; i < 100 && got < n; i++) {
		ret = gr_enter(fd, 0, 1, NULL);
		if (ret && ret != -ETIMEDOUT)
			return ret;
		got += gr_reap(r, out + got, n - got);
	}
	return got == n ? 0 : -EIO;
}

/* ---- graph statistics ------------------------------------------------------- */

struct gstats {
	long long launches, stitched, nodes, hazard_visits, hazard_invalid;
};

static inline int g_debugfs_ready(void)
{
	if (!access(G_STATS, R_OK))
		return 0;
	if (mount("debugfs", G_DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(G_STATS, R_OK) ? -errno : 0;
}

/* Parse G_STATS ("name value" lines). Return: 0 or -errno. */
static inline int g_stats(struct gstats *s)
{
	char name[64];
	long long v;
	int ret, found = 0;
	FILE *f;

	memset(s, 0, sizeof(*s));
	ret = g_debugfs_ready();
	if (ret)
		return ret;
	f = fopen(G_STATS, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%63s %lld", name, &v) == 2) {
		if (!strcmp(name, "launches"))
			s->launches = v, found |= 1;
		else if (!strcmp(name, "stitched"))
			s->stitched = v, found |= 2;
		else if (!strcmp(name, "nodes"))
			s->nodes = v, found |= 4;
		else if (!strcmp(name, "hazard_visits"))
			s->hazard_visits = v, found |= 8;
		else if (!strcmp(name, "hazard_invalid"))
			s->hazard_invalid = v, found |= 16;
	}
	fclose(f);
	return found == 31 ? 0 : -ENODATA;
}

/* ---- module reload ----------------------------------------------------------- */

/* Read module parameter @name into @val (no newline). Return: 0/-errno. */
static inline int g_param(const char *name, char *val, size_t len)
{
	char path[320];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), G_PARAMS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, val, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	val[n] = 0;
	val[strcspn(val, "\n")] = 0;
	return 0;
}

/* Every parameter of the loaded module as "name=value ...". */
static inline int g_params_now(char *buf, size_t len)
{
	struct dirent *d;
	size_t off = 0;
	char val[64];
	DIR *dir;

	buf[0] = 0;
	dir = opendir(G_PARAMS);
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || g_param(d->d_name, val, sizeof(val)))
			continue;
		off += snprintf(buf + off, len - off, "%s%s=%s",
				off ? " " : "", d->d_name, val);
		if (off >= len) {
			closedir(dir);
			return -E2BIG;
		}
	}
	closedir(dir);
	return 0;
}

/* rmmod snpu, retrying for up to 10 s while files are going away. */
static inline int g_unload(void)
{
	uint64_t end = snpu_now_ns() + 10 * NS_PER_SEC;

	while (syscall(__NR_delete_module, "snpu", O_NONBLOCK)) {
		if ((errno != EAGAIN && errno != EBUSY) || snpu_now_ns() > end)
			return -errno;
		usleep(10000);
	}
	return 0;
}

/* Reload the module with @saved plus @extra (later values win). */
static inline int g_reload(const char *saved, const char *extra)
{
	char p[1024];
	int ret = g_unload();

	if (ret)
		return ret;
	snprintf(p, sizeof(p), "%s %s", saved, extra);
	return snpu_module_load(p);
}

#endif /* _GRAPH_UTIL_H */
