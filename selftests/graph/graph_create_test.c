// SPDX-License-Identifier: GPL-2.0
/*
 * snpu graphs: every rule of SNPU_IOC_GRAPH_CREATE, one test per
 * rejection with its errno, and that a refused create created nothing
 * (the handles after the last good one name nothing, the next create
 * works, the context's usage is unchanged); the graph quotas (module
 * parameters ctx_graphs and ctx_graph_mb, the module reloaded with small
 * values) and the test hooks off; and every rule of a graph launch
 * (SNPU_OP_GRAPH) through SNPU_IOC_SUBMIT (errno, nothing queued) and
 * through the SQ (a CQE with the error, nothing queued).
 *
 * Runs as root in the test VM, module loaded with test_hooks=1 and its
 * defaults. Raw ioctls only.
 */
#include "kselftest_harness.h"
#include "graph_util.h"

#define SLOT_BYTES	4096ULL
#define SCRATCH_BYTES	4096ULL
#define BUF_BYTES	(64ULL << 10)
#define SMALL_BYTES	1024ULL
#define WAIT_NS		(30 * NS_PER_SEC)

/* ---- the definition every rejection starts from -------------------------- */

/*
 * Two slots of SLOT_BYTES, SCRATCH_BYTES of scratch, a plain buffer @buf:
 *   n0 FILL    slot0[0, 1024)                      preds {}
 *   n1 COPY    scratch[0, 1024) <- slot0[0, 1024)  preds {0}
 *   n2 ADD_I32 buf[0, 1024) = scratch + slot1      preds {1}
 *   n3 MEMSET  slot1[2048, 3072)                   preds {0, 2}
 * fanin_offsets {0, 0, 1, 2, 4}, fanin {0, 1, 0, 2}.
 */
static int base_graph(struct gdef *g, uint64_t buf)
{
	static const uint64_t sb[2] = { SLOT_BYTES, SLOT_BYTES };

	if (g_init(g, 2, sb, SCRATCH_BYTES))
		return -ENOMEM;
	if (g_fill(g, g_slot(0, 0), 1024, 0x11223344, 2) < 0 ||
	    g_copy(g, g_scratch(0), g_slot(0, 0), 1024) < 0 || g_pred(g, 0) ||
	    g_binop(g, SNPU_KERNEL_ADD_I32, g_addr(buf), g_scratch(0),
		    g_slot(1, 0), 1024, 2) < 0 || g_pred(g, 1) ||
	    g_memset(g, g_slot(1, 2048), 7, 1024) < 0 || g_pred(g, 0) ||
	    g_pred(g, 2))
		return -ENOMEM;
	return 0;
}

/* ---- the fixture ------------------------------------------------------------ */

/* What a mutation may change or use. */
struct mut {
	int fd;
	struct gdef *g;
	struct snpu_graph_create *c;	/* in raw, may run past its size */
	unsigned char *raw;		/* 512 bytes, c at its start */
	void *extra;			/* 64 KiB the mutation may use */
	uint64_t buf, small;
	uint32_t stream, event, graph;
	const struct snpu_info *info;
};

FIXTURE(gc) {
	int fd;
	struct snpu_info info;
	uint32_t stream, event, graph;
	uint64_t buf, small;
	struct gdef g;
	void *extra;
	union {
		struct snpu_graph_create c;
		unsigned char raw[512];
	} arg;
};

FIXTURE_VARIANT(gc) {
	int err;
	void (*mutate)(struct mut *m);
};

FIXTURE_SETUP(gc)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open: %s", strerror(-self->fd));
	ASSERT_EQ(0, snpu_get_info(self->fd, &self->info));
	ASSERT_TRUE(!!(self->info.caps & SNPU_CAP_GRAPHS));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_event_create(self->fd, &self->event));
	ASSERT_EQ(0, snpu_alloc(self->fd, BUF_BYTES, 0, &self->buf));
	ASSERT_EQ(0, snpu_alloc(self->fd, SMALL_BYTES, 0, &self->small));
	ASSERT_EQ(0, base_graph(&self->g, self->buf));
	ASSERT_EQ(0, g_create(self->fd, &self->g, &self->graph));
	self->extra = calloc(1, 64 << 10);
	ASSERT_NE(NULL, self->extra);
}

FIXTURE_TEARDOWN(gc)
{
	g_free(&self->g);
	free(self->extra);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The proof that nothing was created: right before the refused call a
 * good create/destroy took handle @h0; the handles after it name nothing
 * (handles are cyclic: a new graph would have one of them), the usage of
 * the context did not change, and a good create still works.
 */
static void expect_nothing_created(struct __test_metadata *_metadata,
				   FIXTURE_DATA(gc) *self, uint32_t h0,
				   const struct snpu_ctx_query *q0)
{
	struct snpu_ctx_query q1;
	uint32_t h, i;

	for (i = 1; i <= 4; i++) {
		EXPECT_EQ(-ENOENT, g_destroy(self->fd, h0 + i))
			TH_LOG("handle %u exists after a refused create",
			       h0 + i);
	}
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q1));
	EXPECT_EQ(q0->mem_used, q1.mem_used);
	EXPECT_EQ(q0->host_used, q1.host_used);
	EXPECT_EQ(q0->streams, q1.streams);
	EXPECT_EQ(q0->events, q1.events);
	EXPECT_EQ(q0->tasks, q1.tasks);
	ASSERT_EQ(0, g_create(self->fd, &self->g, &h));
	EXPECT_NE(h0, h);
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/* Build the base argument, apply the variant, create: its errno, no graph. */
TEST_F(gc, refused)
{
	struct snpu_ctx_query q0;
	struct mut m;
	uint32_t h0;
	int ret;

	/* The untouched definition is good, and gives h0. */
	ASSERT_EQ(0, g_create(self->fd, &self->g, &h0));
	ASSERT_EQ(0, g_destroy(self->fd, h0));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q0));

	g_args(&self->g, &self->arg.c);
	m = (struct mut){
		.fd = self->fd, .g = &self->g, .c = &self->arg.c,
		.raw = self->arg.raw, .extra = self->extra, .buf = self->buf,
		.small = self->small, .stream = self->stream,
		.event = self->event, .graph = self->graph,
		.info = &self->info,
	};
	variant->mutate(&m);
	self->arg.c.graph = 0xdead;
	ret = g_create_raw(self->fd, &self->arg.c);
	ASSERT_EQ(variant->err, ret) TH_LOG("expected %s, got %s",
					    strerror(-variant->err),
					    strerror(-ret));
	if (variant->err != -E2BIG) {
		EXPECT_EQ(0xdeadU, self->arg.c.graph)
			TH_LOG("a refused create wrote its output");
	}
	/* Undo what points into the extra buffer before the good create. */
	g_free(&self->g);
	ASSERT_EQ(0, base_graph(&self->g, self->buf));
	expect_nothing_created(_metadata, self, h0, &q0);
}

#define N(m, i)	(&(m)->g->nodes[i])
#define T(m, i)	(&(m)->g->nodes[i].task)

#define BAD(name, e)							\
	static void mut_##name(struct mut *m);				\
	FIXTURE_VARIANT_ADD(gc, name) {					\
		.err = -(e), .mutate = mut_##name,			\
	};								\
	static void mut_##name(struct mut *m)

/* ---- the argument struct -------------------------------------------------- */

BAD(flags_bit0, EINVAL) { m->c->flags = 1; }
BAD(flags_bit31, EINVAL) { m->c->flags = 1U << 31; }
BAD(wait_absolute_flag, EINVAL) { m->c->flags = SNPU_WAIT_ABSOLUTE; }
BAD(pad, EINVAL) { m->c->pad = 1; }
BAD(reserved0, EINVAL) { m->c->reserved[0] = 1; }
BAD(reserved1, EINVAL) { m->c->reserved[1] = 1ULL << 63; }
BAD(size_zero, EINVAL) { m->c->size = 0; }
BAD(size_below_ver0, EINVAL) { m->c->size = SNPU_GRAPH_CREATE_SIZE_VER0 - 8; }
BAD(size_tail_nonzero, E2BIG)
{
	m->c->size = sizeof(*m->c) + 8;
	m->raw[sizeof(*m->c) + 3] = 1;
}
BAD(size_above_max, E2BIG) { m->c->size = SNPU_IOC_MAX_SIZE + 8; }

/* ---- node size ------------------------------------------------------------- */

BAD(node_size_zero, EINVAL) { m->c->node_size = 0; }
BAD(node_size_below, EINVAL) { m->c->node_size = SNPU_GRAPH_NODE_SIZE - 8; }
BAD(node_size_task_only, EINVAL) { m->c->node_size = SNPU_TASK_SIZE; }

/* The nodes restrided to @stride bytes in @m->extra, tail bytes zero. */
static void restride(struct mut *m, uint32_t stride)
{
	unsigned char *p = m->extra;
	uint32_t i;

	memset(p, 0, stride * m->g->nodes_count);
	for (i = 0; i < m->g->nodes_count; i++)
		memcpy(p + i * stride, N(m, i), sizeof(*N(m, i)));
	m->c->node_size = stride;
	m->c->nodes = (uintptr_t)p;
}

BAD(node_size_tail_nonzero, E2BIG)
{
	restride(m, SNPU_GRAPH_NODE_SIZE + 8);
	((unsigned char *)m->extra)[2 * (SNPU_GRAPH_NODE_SIZE + 8) +
				    SNPU_GRAPH_NODE_SIZE + 5] = 1;
}
BAD(node_size_tail_nonzero_last, E2BIG)
{
	restride(m, SNPU_GRAPH_NODE_SIZE + 64);
	((unsigned char *)m->extra)[3 * (SNPU_GRAPH_NODE_SIZE + 64) +
				    SNPU_GRAPH_NODE_SIZE + 63] = 0x80;
}

/* ---- counts ------------------------------------------------------------------ */

BAD(nodes_zero, EINVAL) { m->c->nodes_count = 0; }
BAD(nodes_above_max, EINVAL) { m->c->nodes_count = SNPU_GRAPH_MAX_NODES + 1; }
BAD(nodes_huge, EINVAL) { m->c->nodes_count = 0xffffffffU; }
BAD(edges_above_max, EINVAL) { m->c->edges_count = SNPU_GRAPH_MAX_EDGES + 1; }
BAD(edges_huge, EINVAL) { m->c->edges_count = 0xffffffffU; }
BAD(slots_above_max, EINVAL)
{
	m->c->slots_count = SNPU_GRAPH_MAX_SLOTS + 1;
	m->c->slot_bytes = (uintptr_t)m->extra;
	memset(m->extra, 0x10, 16 * sizeof(uint64_t));
}
BAD(edges_count_below_offsets, EINVAL) { m->c->edges_count = 3; }
BAD(edges_count_above_offsets, EINVAL) { m->c->edges_count = 5; }

/* ---- the fanin CSR ------------------------------------------------------------ */

BAD(offsets_first_nonzero, EINVAL) { m->g->offs[0] = 1; }
BAD(offsets_decreasing, EINVAL)
{
	/* {0, 0, 2, 1, 4}: node 2 would end before it starts */
	m->g->offs[2] = 2;
	m->g->offs[3] = 1;
}
BAD(offsets_last_not_edges, EINVAL) { m->g->offs[4] = 3; }
BAD(offsets_past_edges, EINVAL) { m->g->offs[3] = 5; }
BAD(pred_self, EINVAL) { m->g->fanin[1] = 2; }	/* node 2 waits for 2 */
BAD(pred_forward, EINVAL) { m->g->fanin[0] = 3; }	/* node 1 waits for 3 */
BAD(pred_cycle, EINVAL)
{
	/* node 1 waits for 2 and node 2 for 1 */
	m->g->fanin[0] = 2;
}
BAD(pred_out_of_range, EINVAL) { m->g->fanin[3] = 100; }
BAD(pred_huge, EINVAL) { m->g->fanin[3] = 0xffffffffU; }
BAD(pred_duplicate, EINVAL) { m->g->fanin[2] = 2; }	/* node 3: {2, 2} */
BAD(pred_node0, EINVAL)
{
	/* node 0 given an edge: {0, 1, 2, 3, 5}, fanin {0, 0, 1, 0, 2} */
	uint32_t *f = m->extra, *o = (uint32_t *)m->extra + 16;
	static const uint32_t fan[5] = { 0, 0, 1, 0, 2 };
	static const uint32_t off[5] = { 0, 1, 2, 3, 5 };

	memcpy(f, fan, sizeof(fan));
	memcpy(o, off, sizeof(off));
	m->c->fanin = (uintptr_t)f;
	m->c->fanin_offsets = (uintptr_t)o;
	m->c->edges_count = 5;
}

/* ---- unreadable arrays ----------------------------------------------------------- */

BAD(nodes_null, EFAULT) { m->c->nodes = 0; }
BAD(nodes_kernel_ptr, EFAULT) { m->c->nodes = 0xffffffff81000000ULL; }
BAD(offsets_null, EFAULT) { m->c->fanin_offsets = 0; }
BAD(fanin_null, EFAULT) { m->c->fanin = 0; }
BAD(slot_bytes_null, EFAULT) { m->c->slot_bytes = 0; }
BAD(nodes_run_into_unmapped, EFAULT)
{
	/* The last node lies half in an unmapped page. */
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t bytes = m->g->nodes_count * sizeof(*N(m, 0));

	if (p == MAP_FAILED)
		return;
	munmap(p + pg, pg);
	memcpy(p + pg - bytes + 80, m->g->nodes, bytes - 80);
	m->c->nodes = (uintptr_t)(p + pg - bytes + 80);
}

/* ---- slots and scratch ------------------------------------------------------------ */

BAD(slot_bytes_zero, EINVAL) { m->g->slot_bytes[1] = 0; }

/* ---- node tasks ------------------------------------------------------------------- */

static void to_event_op(struct mut *m, uint32_t op)
{
	memset(N(m, 1), 0, sizeof(*N(m, 1)));
	*T(m, 1) = snpu_t_event(0, op, m->event);
}

BAD(op_event_record, EINVAL) { to_event_op(m, SNPU_OP_EVENT_RECORD); }
BAD(op_stream_wait, EINVAL) { to_event_op(m, SNPU_OP_STREAM_WAIT); }
BAD(op_host_func, EINVAL)
{
	memset(N(m, 1), 0, sizeof(*N(m, 1)));
	T(m, 1)->op = SNPU_OP_HOST_FUNC;
}
BAD(op_graph, EINVAL)
{
	memset(N(m, 1), 0, sizeof(*N(m, 1)));
	*T(m, 1) = g_launch_task(0, m->graph, NULL, 0, 0);
}
BAD(op_zero, EINVAL) { T(m, 1)->op = 0; }
BAD(op_unknown, EINVAL) { T(m, 1)->op = 99; }
BAD(copy_h2d, EINVAL)
{
	T(m, 1)->copy.dir = SNPU_COPY_H2D;
	N(m, 1)->ref[1] = 0;
	T(m, 1)->copy.src = (uintptr_t)m->extra;
}
BAD(copy_d2h, EINVAL)
{
	T(m, 1)->copy.dir = SNPU_COPY_D2H;
	N(m, 1)->ref[0] = 0;
	T(m, 1)->copy.dst = (uintptr_t)m->extra;
}
BAD(copy_dir_zero, EINVAL) { T(m, 1)->copy.dir = 0; }
BAD(copy_pad, EINVAL) { T(m, 1)->copy.pad = 1; }
BAD(task_stream, EINVAL) { T(m, 0)->stream = m->stream; }
BAD(task_flags, EINVAL) { T(m, 2)->flags = 1; }
BAD(task_user_data, EINVAL) { T(m, 3)->user_data = 1; }
BAD(task_reserved0, EINVAL) { T(m, 0)->reserved0 = 1; }
BAD(node_reserved, EINVAL) { N(m, 2)->reserved = 1; }
BAD(memset_value, EINVAL) { T(m, 3)->memset.value = 256; }
BAD(memset_pad, EINVAL) { T(m, 3)->memset.pad = 1; }
BAD(memset_unused_word, EINVAL) { T(m, 3)->raw[12] = 1; }

/* ---- references -------------------------------------------------------------------- */

BAD(ref_on_scalar, EINVAL) { N(m, 0)->ref[1] = SNPU_GRAPH_REF_SLOT(0); }
BAD(ref_on_unused_arg, EINVAL) { N(m, 0)->ref[2] = SNPU_GRAPH_REF_SCRATCH; }
BAD(ref_last_unused, EINVAL) { N(m, 2)->ref[5] = SNPU_GRAPH_REF_SLOT(1); }
BAD(ref_memset_second, EINVAL) { N(m, 3)->ref[1] = SNPU_GRAPH_REF_SLOT(0); }
BAD(ref_copy_third, EINVAL) { N(m, 1)->ref[2] = SNPU_GRAPH_REF_SLOT(0); }
BAD(ref_slot_not_declared, EINVAL)
{
	N(m, 0)->ref[0] = SNPU_GRAPH_REF_SLOT(2);	/* slots_count 2 */
}
BAD(ref_slot_max, EINVAL)
{
	N(m, 0)->ref[0] = SNPU_GRAPH_REF_SLOT(SNPU_GRAPH_MAX_SLOTS);
}
BAD(ref_kind_unknown, EINVAL) { N(m, 0)->ref[0] = 0x300; }
BAD(ref_kind_low, EINVAL) { N(m, 0)->ref[0] = 1; }
BAD(ref_kind_scratch_plus, EINVAL) { N(m, 0)->ref[0] = SNPU_GRAPH_REF_SCRATCH + 1; }
BAD(ref_slot_past_end, EINVAL)
{
	T(m, 0)->launch.args[0].value = SLOT_BYTES - 512;	/* + 1024 */
}
BAD(ref_slot_offset_at_end, EINVAL)
{
	T(m, 3)->memset.addr = SLOT_BYTES;
}
BAD(ref_slot_offset_wraps, EINVAL)
{
	T(m, 0)->launch.args[0].value = ~0ULL - 3;
}
BAD(ref_scratch_past_end, EINVAL)
{
	T(m, 1)->copy.dst = SCRATCH_BYTES - 1020;
}
BAD(ref_scratch_read_past_end, EINVAL)
{
	T(m, 2)->launch.args[1].value = SCRATCH_BYTES - 4;
}
BAD(ref_scratch_without_scratch, EINVAL) { m->c->scratch_bytes = 0; }
BAD(ref_copy_bytes_past_slot, EINVAL)
{
	T(m, 1)->copy.bytes = SLOT_BYTES + 4;
	N(m, 1)->ref[0] = SNPU_GRAPH_REF_ADDR;
	T(m, 1)->copy.dst = m->buf;
}
BAD(addr_outside_allocations, EFAULT) { T(m, 2)->launch.args[0].value = 0x10; }
BAD(addr_zero, EFAULT) { T(m, 2)->launch.args[0].value = 0; }
BAD(addr_across_allocation_end, EFAULT)
{
	T(m, 2)->launch.args[0].value = m->small + SMALL_BYTES - 512;
}
BAD(addr_freed, EFAULT)
{
	uint64_t a;

	if (snpu_alloc(m->fd, 4096, 0, &a) || snpu_free(m->fd, a))
		return;
	T(m, 2)->launch.args[0].value = a;
}
BAD(copy_addr_outside, EFAULT)
{
	N(m, 1)->ref[1] = SNPU_GRAPH_REF_ADDR;
	T(m, 1)->copy.src = 0x1000;
}
BAD(memset_addr_outside, EFAULT)
{
	N(m, 3)->ref[0] = SNPU_GRAPH_REF_ADDR;
	T(m, 3)->memset.addr = m->small + SMALL_BYTES;
}

/* ---- the kernels' rules, as SUBMIT checks them --------------------------------------- */

BAD(block_dim_zero, EINVAL) { T(m, 0)->launch.block_dim = 0; }
BAD(block_dim_above_max, EINVAL)
{
	T(m, 2)->launch.block_dim = m->info->max_block_dim + 1;
}
BAD(kernel_unknown, EINVAL) { T(m, 0)->launch.kernel = SNPU_KERNEL_COUNT; }
BAD(fill_bytes_not_multiple_of_4, EINVAL)
{
	T(m, 0)->launch.args[0].bytes = 1022;
}
BAD(fill_misaligned_addr, EINVAL)
{
	N(m, 0)->ref[0] = SNPU_GRAPH_REF_ADDR;
	T(m, 0)->launch.args[0].value = m->buf + 2;
}
BAD(fill_slot_offset_misaligned, EINVAL)
{
	/* 32-bit elements at slot offset 2: misaligned whatever the slot */
	T(m, 0)->launch.args[0].value = 2;
}
BAD(add_scratch_offset_misaligned, EINVAL)
{
	T(m, 2)->launch.args[1].value = 6;
}
BAD(fill_pattern_upper_bits, EINVAL)
{
	T(m, 0)->launch.args[1].value = 1ULL << 32;
}
BAD(add_source_shorter, EINVAL) { T(m, 2)->launch.args[2].bytes = 512; }
BAD(add_missing_arg, EINVAL)
{
	N(m, 2)->ref[2] = 0;
	T(m, 2)->launch.args[2].value = 0;
	T(m, 2)->launch.args[2].bytes = 0;
}
BAD(fill_extra_arg, EINVAL) { T(m, 0)->launch.args[3].value = 5; }
BAD(spin_above_1s, EINVAL)
{
	memset(N(m, 0), 0, sizeof(*N(m, 0)));
	*T(m, 0) = snpu_t_spin(0, NS_PER_SEC + 1, 1);
}
BAD(fail_errno_zero, EINVAL)
{
	memset(N(m, 0), 0, sizeof(*N(m, 0)));
	*T(m, 0) = snpu_t_fail(0, 0);
}
BAD(fail_errno_above_4095, EINVAL)
{
	memset(N(m, 0), 0, sizeof(*N(m, 0)));
	*T(m, 0) = snpu_t_fail(0, 4096);
}
BAD(block_work_above_max, EINVAL)
{
	/* A 128 MiB FILL in one block: 2^25 elements, past the bound. */
	memset(N(m, 0), 0, sizeof(*N(m, 0)));
	*T(m, 0) = snpu_t_fill(0, 0, 128 << 20, 0, 1);
	N(m, 0)->ref[0] = SNPU_GRAPH_REF_SLOT(0);
	m->g->slot_bytes[0] = 128 << 20;
}

/* ---- accepted ------------------------------------------------------------------------- */

FIXTURE(good) {
	int fd;
	uint32_t stream;
	uint64_t buf;
	struct gdef g;
};

FIXTURE_SETUP(good)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_alloc(self->fd, BUF_BYTES, 0, &self->buf));
	ASSERT_EQ(0, base_graph(&self->g, self->buf));
}

FIXTURE_TEARDOWN(good)
{
	g_free(&self->g);
	if (self->fd >= 0)
		close(self->fd);
}

/* The output field takes any value in; @size comes back as the kernel's. */
TEST_F(good, output_any_value)
{
	struct snpu_graph_create c;
	uint32_t h2;

	g_args(&self->g, &c);
	c.graph = 0xffffffffU;
	ASSERT_EQ(0, g_create_raw(self->fd, &c));
	EXPECT_NE(0U, c.graph);
	EXPECT_EQ((uint32_t)sizeof(c), c.size);
	/* The same struct again: another graph. */
	ASSERT_EQ(0, g_create_raw(self->fd, &c));
	h2 = c.graph;
	EXPECT_EQ(0, g_destroy(self->fd, h2));
}

TEST_F(good, size_bigger_zero_tail)
{
	union {
		struct snpu_graph_create c;
		unsigned char raw[256];
	} a;

	memset(&a, 0, sizeof(a));
	g_args(&self->g, &a.c);
	a.c.size = sizeof(a.raw);
	ASSERT_EQ(0, g_create_raw(self->fd, &a.c));
	EXPECT_EQ((uint32_t)sizeof(a.c), a.c.size);
	EXPECT_EQ(0, g_destroy(self->fd, a.c.graph));
}

TEST_F(good, node_size_bigger_zero_tail)
{
	uint32_t stride = SNPU_GRAPH_NODE_SIZE + 32, i;
	struct snpu_graph_create c;
	unsigned char *p = calloc(self->g.nodes_count, stride);

	ASSERT_NE(NULL, p);
	for (i = 0; i < self->g.nodes_count; i++)
		memcpy(p + i * stride, &self->g.nodes[i],
		       sizeof(self->g.nodes[i]));
	g_args(&self->g, &c);
	c.node_size = stride;
	c.nodes = (uintptr_t)p;
	EXPECT_EQ(0, g_create_raw(self->fd, &c));
	EXPECT_EQ(0, g_destroy(self->fd, c.graph));
	free(p);
}

/* The test hooks are accepted as nodes while test_hooks is on. */
TEST_F(good, spin_and_fail_with_test_hooks)
{
	struct snpu_info info;
	struct gdef g;
	uint32_t h;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	ASSERT_TRUE(!!(info.caps & SNPU_CAP_TEST_HOOKS))
		TH_LOG("the VM loads the module with test_hooks=1");
	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_spin(&g, 1000, 2));
	ASSERT_LE(0, g_failnode(&g, EDOM));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	EXPECT_EQ(0, g_destroy(self->fd, h));
	g_free(&g);
}

/* No edges (fanin NULL), no slots (slot_bytes NULL), no scratch. */
TEST_F(good, no_edges_no_slots)
{
	struct snpu_graph_create c;
	struct gdef g;

	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_fill(&g, g_addr(self->buf), 4096, 1, 1));
	ASSERT_LE(0, g_memset(&g, g_addr(self->buf + 8192), 3, 100));
	g_args(&g, &c);
	EXPECT_EQ(0ULL, c.fanin);
	EXPECT_EQ(0ULL, c.slot_bytes);
	ASSERT_EQ(0, g_create_raw(self->fd, &c));
	EXPECT_EQ(0, g_destroy(self->fd, c.graph));
	g_free(&g);
}

/* The limits themselves are accepted: max nodes, max slots. */
TEST_F(good, at_the_limits)
{
	uint64_t sb[SNPU_GRAPH_MAX_SLOTS];
	struct gdef g;
	unsigned int i;
	uint32_t h;

	for (i = 0; i < SNPU_GRAPH_MAX_SLOTS; i++)
		sb[i] = 64;
	ASSERT_EQ(0, g_init(&g, SNPU_GRAPH_MAX_SLOTS, sb, 0));
	for (i = 0; i < SNPU_GRAPH_MAX_NODES; i++) {
		ASSERT_LE(0, g_memset(&g, g_slot(i % SNPU_GRAPH_MAX_SLOTS, 0),
				      i & 0xff, 64));
		if (i >= SNPU_GRAPH_MAX_SLOTS) {
			ASSERT_EQ(0, g_pred(&g, i - SNPU_GRAPH_MAX_SLOTS));
		}
	}
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	EXPECT_EQ(0, g_destroy(self->fd, h));
	g_free(&g);
}

/* A destroyed graph is gone; a second destroy and a bad flag fail. */
TEST_F(good, destroy_rules)
{
	struct snpu_handle_op op = { .size = sizeof(op) };
	uint32_t h;

	ASSERT_EQ(0, g_create(self->fd, &self->g, &h));
	op.handle = h;
	op.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_GRAPH_DESTROY, &op));
	op.flags = 0;
	op.pad = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_GRAPH_DESTROY, &op));
	op.pad = 0;
	op.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_GRAPH_DESTROY, &op));
	EXPECT_EQ(0, g_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, 0));
	/* A stream handle is no graph handle. */
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, self->stream));
}

/* A graph of another file is not this file's. */
TEST_F(good, handles_per_file)
{
	int fd2 = snpu_open_dev();
	uint32_t h;

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, g_create(self->fd, &self->g, &h));
	EXPECT_EQ(-ENOENT, g_destroy(fd2, h));
	EXPECT_EQ(0, g_destroy(self->fd, h));
	close(fd2);
}

/* The default graph quota: ctx_graphs graphs, then ENOSPC. */
TEST_F(good, default_quota)
{
	char val[32];
	uint32_t *h, extra;
	struct gdef g2;
	long n, i;
	int fd2;

	ASSERT_EQ(0, g_param("ctx_graphs", val, sizeof(val)));
	n = strtol(val, NULL, 10);
	ASSERT_GT(n, 0);
	ASSERT_LE(n, 4096);
	h = calloc(n, sizeof(*h));
	ASSERT_NE(NULL, h);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, g_create(self->fd, &self->g, &h[i]))
			TH_LOG("graph %ld of %ld", i + 1, n);
	}
	EXPECT_EQ(-ENOSPC, g_create(self->fd, &self->g, &extra));
	/*
	 * Another file has its own quota (a graph without the plain address
	 * of this file's buffer, which is no address of the other).
	 */
	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, g_init(&g2, 1, (uint64_t[]){ 64 }, 0));
	ASSERT_LE(0, g_memset(&g2, g_slot(0, 0), 1, 64));
	EXPECT_EQ(0, g_create(fd2, &g2, &extra));
	g_free(&g2);
	close(fd2);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, g_destroy(self->fd, h[i]));
	}
	free(h);
}

/* ---- the module reloaded with other parameters ---------------------------------------- */

FIXTURE(reload) {
	char saved[1024];
	bool reloaded;
	int fd;
	struct gdef g;
	uint64_t buf;
};

FIXTURE_VARIANT(reload) {
	const char *params;
};

FIXTURE_VARIANT_ADD(reload, three_graphs) {
	.params = "ctx_graphs=3",
};

FIXTURE_VARIANT_ADD(reload, one_mb) {
	.params = "ctx_graph_mb=1 ctx_graphs=1000",
};

FIXTURE_VARIANT_ADD(reload, no_hooks) {
	.params = "test_hooks=0",
};

FIXTURE_SETUP(reload)
{
	self->fd = -1;
	ASSERT_EQ(0, g_params_now(self->saved, sizeof(self->saved)));
	self->reloaded = true;
	ASSERT_EQ(0, g_reload(self->saved, variant->params))
		TH_LOG("reload with %s", variant->params);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_alloc(self->fd, BUF_BYTES, 0, &self->buf));
	ASSERT_EQ(0, base_graph(&self->g, self->buf));
}

FIXTURE_TEARDOWN(reload)
{
	g_free(&self->g);
	if (self->fd >= 0)
		close(self->fd);
	if (self->reloaded) {
		g_unload();
		EXPECT_EQ(0, snpu_module_load(self->saved))
			TH_LOG("insmod %s", self->saved);
	}
}

/*
 * Fill the quota the variant sets, check ENOSPC, destroy one, create
 * again. For one_mb the graphs are big (a quarter of the max nodes: a
 * graph also keeps its definition, 160 bytes a node, for checkpoint
 * images): the memory quota is reached long before the count.
 */
TEST_F(reload, quota)
{
	uint32_t h[1000], extra, i, n = 0;
	struct gdef big, *g = &self->g;
	int ret = 0;

	if (strstr(variant->params, "test_hooks=0")) {
		struct snpu_info info;
		struct gdef s;
		uint32_t hs;

		/* Without the hooks: SPIN and FAIL nodes are EOPNOTSUPP. */
		ASSERT_EQ(0, snpu_get_info(self->fd, &info));
		ASSERT_FALSE(!!(info.caps & SNPU_CAP_TEST_HOOKS));
		ASSERT_EQ(0, g_init(&s, 0, NULL, 0));
		ASSERT_LE(0, g_fill(&s, g_addr(self->buf), 64, 1, 1));
		ASSERT_LE(0, g_spin(&s, 1000, 1));
		EXPECT_EQ(-EOPNOTSUPP, g_create(self->fd, &s, &hs));
		s.nodes[1].task = snpu_t_fail(0, EDOM);
		EXPECT_EQ(-EOPNOTSUPP, g_create(self->fd, &s, &hs));
		s.nodes[1].task = snpu_t_nop(0);
		EXPECT_EQ(0, g_create(self->fd, &s, &hs));
		EXPECT_EQ(0, g_destroy(self->fd, hs));
		g_free(&s);
		return;
	}
	if (strstr(variant->params, "ctx_graph_mb=1")) {
		ASSERT_EQ(0, g_init(&big, 0, NULL, 0));
		for (i = 0; i < SNPU_GRAPH_MAX_NODES / 4; i++) {
			ASSERT_LE(0, g_node(&big, &(struct snpu_task){
				.op = SNPU_OP_LAUNCH,
				.launch.kernel = SNPU_KERNEL_NOP,
				.launch.block_dim = 1 }));
		}
		g = &big;
	}
	/* Refusals first: they take nothing of either quota. */
	for (i = 0; i < 8; i++) {
		struct snpu_graph_create c;

		g_args(g, &c);
		if (i & 1)
			c.flags = 1;
		else
			c.edges_count = SNPU_GRAPH_MAX_EDGES + 1;
		EXPECT_EQ(-EINVAL, g_create_raw(self->fd, &c));
	}
	while (n < 1000) {
		ret = g_create(self->fd, g, &h[n]);
		if (ret)
			break;
		n++;
	}
	EXPECT_EQ(-ENOSPC, ret);
	/* The count quota: exactly 3; the memory one: a few big graphs. */
	EXPECT_EQ(g == &self->g ? 3U : n, n);
	TH_LOG("%u graphs before ENOSPC", n);
	ASSERT_GT(n, 0U);
	/* Still refused, and a destroy gives room back. */
	EXPECT_EQ(-ENOSPC, g_create(self->fd, g, &extra));
	EXPECT_EQ(0, g_destroy(self->fd, h[n - 1]));
	EXPECT_EQ(0, g_create(self->fd, g, &h[n - 1]));
	EXPECT_EQ(-ENOSPC, g_create(self->fd, g, &extra));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, g_destroy(self->fd, h[i]));
	}
	if (g == &big)
		g_free(&big);
}

/* ---- launch rules ----------------------------------------------------------------------- */

FIXTURE(lb) {
	int fd;
	struct gring ring;
	uint32_t stream, graph, graph_noscr;
	uint64_t buf, s0, s1, scr, small;
	struct gdef g;
};

FIXTURE_VARIANT(lb) {
	int err;
	/* Change the good launch @t of self's graph. */
	void (*mutate)(FIXTURE_DATA(lb) *self, struct snpu_task *t);
};

FIXTURE_SETUP(lb)
{
	struct gdef g2;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, gr_init(self->fd, 16, &self->ring));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_alloc(self->fd, BUF_BYTES, 0, &self->buf));
	ASSERT_EQ(0, snpu_alloc(self->fd, SLOT_BYTES, 0, &self->s0));
	ASSERT_EQ(0, snpu_alloc(self->fd, SLOT_BYTES, 0, &self->s1));
	ASSERT_EQ(0, snpu_alloc(self->fd, SCRATCH_BYTES, 0, &self->scr));
	ASSERT_EQ(0, snpu_alloc(self->fd, SMALL_BYTES, 0, &self->small));
	ASSERT_EQ(0, base_graph(&self->g, self->buf));
	ASSERT_EQ(0, g_create(self->fd, &self->g, &self->graph));
	/* One slot, no scratch. */
	ASSERT_EQ(0, g_init(&g2, 1, (uint64_t[]){ 1024 }, 0));
	ASSERT_LE(0, g_fill(&g2, g_slot(0, 0), 1024, 5, 1));
	ASSERT_EQ(0, g_create(self->fd, &g2, &self->graph_noscr));
	g_free(&g2);
}

FIXTURE_TEARDOWN(lb)
{
	gr_fini(&self->ring);
	g_free(&self->g);
	if (self->fd >= 0)
		close(self->fd);
}

static struct snpu_task lb_good(FIXTURE_DATA(lb) *self)
{
	uint64_t slots[2] = { self->s0, self->s1 };

	return g_launch_task(self->stream, self->graph, slots, 2, self->scr);
}

#define LBAD(name, e)							\
	static void lmut_##name(FIXTURE_DATA(lb) *self,			\
				struct snpu_task *t);			\
	FIXTURE_VARIANT_ADD(lb, name) {					\
		.err = -(e), .mutate = lmut_##name,			\
	};								\
	static void lmut_##name(FIXTURE_DATA(lb) *self,			\
				struct snpu_task *t)

LBAD(handle_unknown, ENOENT) { t->graph.graph = self->graph + 1000; }
LBAD(handle_zero, ENOENT) { t->graph.graph = 0; }
LBAD(handle_never_given, ENOENT) { t->graph.graph = self->graph_noscr + 7; }
LBAD(handle_destroyed, ENOENT)
{
	uint32_t h;

	if (g_create(self->fd, &self->g, &h) || g_destroy(self->fd, h))
		return;
	t->graph.graph = h;
}
LBAD(slot_outside_allocations, EFAULT) { t->graph.slots[0] = 0x10; }
LBAD(slot_zero, EFAULT) { t->graph.slots[1] = 0; }
LBAD(slot_allocation_smaller, EFAULT) { t->graph.slots[1] = self->small; }
LBAD(slot_across_allocation_end, EFAULT)
{
	t->graph.slots[0] = self->buf + BUF_BYTES - SLOT_BYTES + 4;
}
LBAD(slot_freed, EFAULT)
{
	uint64_t a;

	if (snpu_alloc(self->fd, SLOT_BYTES, 0, &a) || snpu_free(self->fd, a))
		return;
	t->graph.slots[0] = a;
}
/* The slot address misaligned for slot 0's FILL (32-bit elements). */
LBAD(slot_misaligned_for_kernel, EINVAL)
{
	t->graph.slots[0] = self->buf + 2;
}
LBAD(scratch_misaligned_for_kernel, EINVAL)
{
	t->graph.scratch = self->buf + 1;
}
LBAD(unused_slot_nonzero, EINVAL) { t->graph.slots[2] = self->buf; }
LBAD(last_slot_nonzero, EINVAL) { t->graph.slots[7] = self->buf; }
LBAD(scratch_zero, EFAULT) { t->graph.scratch = 0; }
LBAD(scratch_allocation_smaller, EFAULT) { t->graph.scratch = self->small; }
LBAD(scratch_without_scratch, EINVAL)
{
	uint64_t s[1] = { self->s0 };

	*t = g_launch_task(self->stream, self->graph_noscr, s, 1, self->scr);
}
LBAD(graph_pad, EINVAL) { t->graph.pad = 1; }
LBAD(task_flags, EINVAL) { t->flags = 1; }
LBAD(task_reserved0, EINVAL) { t->reserved0 = 1; }
LBAD(stream_unknown, ENOENT) { t->stream = self->stream + 1000; }

/* The variant through SUBMIT: its errno, nothing queued. */
TEST_F(lb, submit)
{
	struct snpu_task t = lb_good(self), two[2];
	struct snpu_stream_query q0, q1;
	uint64_t seq = 0;

	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q0));
	variant->mutate(self, &t);
	EXPECT_EQ(variant->err, snpu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q1));
	EXPECT_EQ(q0.submitted, q1.submitted);
	/* Behind a good task in one batch: still nothing queued. */
	two[0] = lb_good(self);
	two[1] = t;
	EXPECT_EQ(variant->err, snpu_submit(self->fd, two, 2, &seq));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q1));
	EXPECT_EQ(q0.submitted, q1.submitted);
	/* The good launch goes. */
	t = lb_good(self);
	ASSERT_EQ(0, snpu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(q0.submitted + 1, seq);
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, NULL));
}

/* The variant through the SQ: a CQE with its error and seq 0. */
TEST_F(lb, ring)
{
	struct snpu_task t[2] = { lb_good(self), lb_good(self) };
	struct snpu_stream_query q0, q1;
	struct snpu_cqe cqe[2];

	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q0));
	variant->mutate(self, &t[0]);
	t[0].user_data = 0xbad;
	t[1].user_data = 0x600d;
	ASSERT_EQ(0, gr_run(self->fd, &self->ring, t, 2, cqe));
	EXPECT_EQ(0xbadULL, cqe[0].user_data);
	EXPECT_EQ(variant->err, cqe[0].result);
	EXPECT_EQ(0ULL, cqe[0].seq);
	EXPECT_EQ(0x600dULL, cqe[1].user_data);
	EXPECT_EQ(0, cqe[1].result);
	EXPECT_EQ(q0.submitted + 1, cqe[1].seq);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q1));
	EXPECT_EQ(q0.submitted + 1, q1.submitted);
}

/* ---- last: offsets past the edges (a crash here stops the program) ----- */

/*
 * An offset in the middle of fanin_offsets may exceed edges_count before
 * the offsets are seen to decrease: the kernel must not read fanin past
 * its edges meanwhile. With no edges at all, and with one edge and an
 * offset of 3 for node 1 (fanin[1] and fanin[2] do not exist).
 */
FIXTURE(csr) {
	int fd;
	struct gdef g;
};

FIXTURE_SETUP(csr)
{
	unsigned int i;

	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, g_init(&self->g, 0, NULL, 0));
	for (i = 0; i < 4; i++)
		ASSERT_LE(0, g_node(&self->g, &(struct snpu_task){
			.op = SNPU_OP_LAUNCH,
			.launch.kernel = SNPU_KERNEL_NOP,
			.launch.block_dim = 1 }));
}

FIXTURE_TEARDOWN(csr)
{
	g_free(&self->g);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(csr, offset_past_no_edges)
{
	static const uint32_t off[5] = { 0, 1, 0, 0, 0 };
	struct snpu_graph_create c;

	g_args(&self->g, &c);
	c.fanin_offsets = (uintptr_t)off;
	c.edges_count = 0;
	c.fanin = 0;
	EXPECT_EQ(-EINVAL, g_create_raw(self->fd, &c));
}

TEST_F(csr, offset_past_edges)
{
	static const uint32_t off[5] = { 0, 0, 3, 1, 1 };
	static const uint32_t fanin[4] = { 0, 0, 0, 0 };
	struct snpu_graph_create c;

	g_args(&self->g, &c);
	c.fanin_offsets = (uintptr_t)off;
	c.edges_count = 1;	/* the user array has more: never read */
	c.fanin = (uintptr_t)fanin;
	EXPECT_EQ(-EINVAL, g_create_raw(self->fd, &c));
}

TEST_HARNESS_MAIN
