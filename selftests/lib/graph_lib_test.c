// SPDX-License-Identifier: GPL-2.0
/*
 * libsnpu's graph calls against the real driver: the wrappers, and
 * capture (snpu_graph_begin(), snpu_graph_begin_ring(), snpu_graph_end()).
 * A first invocation and a replay are each one task (the stream's
 * sequence number moves by one) or one SQ entry (the SQ head moves by one,
 * one CQE); the results equal those of the same body submitted task by
 * task; each fallback case still does the body's work, in order.
 *
 * The body: seven tasks on five 4 KiB buffers of i32, with read after
 * write, write after read and write after write between them:
 *
 *   A = 3; B = 5; C = A + B; D = C * A; E = D (copy); A = 0 (memset);
 *   C = C + E    ->   A 0, B 5, C 32, D 24, E 24
 *
 * Runs in the test VM with the module's defaults and test_hooks=1.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NB		4096ULL		/* bytes of a buffer */
#define NE		(NB / 4)	/* its i32 elements */
#define NBUF		5
#define BODY_TASKS	7
#define CB_DATA		0xcb0cb0ULL

enum { BA, BB, BC, BD, BE };

static const int32_t want[NBUF] = { 0, 5, 32, 24, 24 };

FIXTURE(graph)
{
	struct snpu_device *dev;
	struct snpu_info info;
	uint32_t s;
	uint64_t set[2][NBUF];	/* [0]: task by task, [1]: captured */
};

FIXTURE_SETUP(graph)
{
	int i, j;

	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	ASSERT_EQ(0, snpu_get_info(self->dev, &self->info));
	ASSERT_NE(0ULL, self->info.caps & SNPU_CAP_GRAPHS);
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->s));
	for (i = 0; i < 2; i++)
		for (j = 0; j < NBUF; j++)
			ASSERT_EQ(0, snpu_mem_alloc(self->dev, NB, 0, 0,
						    &self->set[i][j]));
}

FIXTURE_TEARDOWN(graph)
{
	snpu_close(self->dev);
}

static int fill(struct snpu_task *t, uint32_t s, uint64_t dst, uint32_t v)
{
	struct snpu_kernel_arg a[2] = { snpu_arg_buf(dst, NB), snpu_arg_u64(v) };

	return snpu_prep_launch(t, s, SNPU_KERNEL_FILL, 2, a, 2);
}

static int op3(struct snpu_task *t, uint32_t s, uint32_t kernel,
	       uint64_t c, uint64_t a, uint64_t b)
{
	struct snpu_kernel_arg args[3] = {
		snpu_arg_buf(c, NB), snpu_arg_buf(a, NB), snpu_arg_buf(b, NB),
	};

	return snpu_prep_launch(t, s, kernel, 2, args, 3);
}

/* The body's tasks on buffers @b. */
static void body_tasks(uint32_t s, const uint64_t *b,
		       struct snpu_task t[BODY_TASKS])
{
	fill(&t[0], s, b[BA], 3);
	fill(&t[1], s, b[BB], 5);
	op3(&t[2], s, SNPU_KERNEL_ADD_I32, b[BC], b[BA], b[BB]);
	op3(&t[3], s, SNPU_KERNEL_MUL_I32, b[BD], b[BC], b[BA]);
	snpu_prep_copy(&t[4], s, SNPU_COPY_D2D, b[BE], b[BD], NB);
	snpu_prep_memset(&t[5], s, b[BA], 0, NB);
	op3(&t[6], s, SNPU_KERNEL_ADD_I32, b[BC], b[BC], b[BE]);
}

/* The body through snpu_submit(), a task per call. */
static int body(struct snpu_device *dev, uint32_t s, const uint64_t *b)
{
	struct snpu_task t[BODY_TASKS];
	int i, ret;

	body_tasks(s, b, t);
	for (i = 0; i < BODY_TASKS; i++) {
		ret = snpu_submit(dev, &t[i], 1, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* The body through the SQ, submitted in two parts. */
static int ring_body(struct snpu_ring *ring, uint32_t s, const uint64_t *b)
{
	struct snpu_task t[BODY_TASKS], *sqe;
	int i, ret;

	body_tasks(s, b, t);
	for (i = 0; i < BODY_TASKS; i++) {
		sqe = snpu_ring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
		*sqe = t[i];
		if (i == 3) {
			ret = snpu_ring_submit(ring);
			if (ret != 4)
				return ret < 0 ? ret : -EPROTO;
		}
	}
	ret = snpu_ring_submit(ring);
	return ret == 3 ? 0 : ret < 0 ? ret : -EPROTO;
}

/* Every buffer of @b holds its expected value: 1, else 0. */
static int results_ok(struct snpu_device *dev, const uint64_t *b)
{
	static int32_t host[NE];
	unsigned int i, j;

	for (i = 0; i < NBUF; i++) {
		if (snpu_memcpy_d2h(dev, host, b[i], NB))
			return 0;
		for (j = 0; j < NE; j++)
			if (host[j] != want[i])
				return 0;
	}
	return 1;
}

/* The two sets of buffers hold the same bytes: 1, else 0. */
static int sets_equal(struct snpu_device *dev, const uint64_t *x,
		      const uint64_t *y)
{
	static char hx[NB], hy[NB];
	unsigned int i;

	for (i = 0; i < NBUF; i++) {
		if (snpu_memcpy_d2h(dev, hx, x[i], NB) ||
		    snpu_memcpy_d2h(dev, hy, y[i], NB))
			return 0;
		if (memcmp(hx, hy, NB))
			return 0;
	}
	return 1;
}

/* Overwrite every buffer of @b, so that a result must be computed anew. */
static int garble(struct snpu_device *dev, const uint64_t *b)
{
	unsigned int i;
	int ret;

	for (i = 0; i < NBUF; i++) {
		ret = snpu_memset(dev, b[i], 0xee, NB);
		if (ret)
			return ret;
	}
	return 0;
}

static uint64_t submitted(struct snpu_device *dev, uint32_t s)
{
	struct snpu_stream_query q;

	if (snpu_stream_query(dev, s, &q))
		return ~0ULL;
	return q.submitted;
}

/* Complete the next host callback, which must carry @user_data. */
static int serve_one(struct snpu_device *dev, uint64_t user_data)
{
	struct snpu_callback_info cb;
	int ret;

	ret = snpu_callback_wait(dev, -1, &cb);
	if (ret)
		return ret;
	if (cb.user_data != user_data)
		return -EBADMSG;
	return snpu_callback_done(dev, cb.cookie, 0);
}

/* ---- the wrappers ------------------------------------------------------ */

/* Two nodes on two slots: slot 0 = 9, then slot 1 = slot 0. */
TEST_F(graph, create_launch_destroy)
{
	struct snpu_graph_node nodes[2];
	const uint32_t offsets[3] = { 0, 0, 1 }, fanin[1] = { 0 };
	const uint64_t slot_bytes[2] = { NB, NB };
	struct snpu_graph_desc desc;
	uint64_t slots[2] = { self->set[1][BA], self->set[1][BB] };
	static int32_t host[NE];
	uint32_t g;
	unsigned int i;

	memset(nodes, 0, sizeof(nodes));
	fill(&nodes[0].task, 0, 0, 9);
	nodes[0].ref[0] = SNPU_GRAPH_REF_SLOT(0);
	snpu_prep_copy(&nodes[1].task, 0, SNPU_COPY_D2D, 0, 0, NB);
	nodes[1].ref[0] = SNPU_GRAPH_REF_SLOT(1);
	nodes[1].ref[1] = SNPU_GRAPH_REF_SLOT(0);
	memset(&desc, 0, sizeof(desc));
	desc.nodes = nodes;
	desc.nodes_count = 2;
	desc.fanin_offsets = offsets;
	desc.fanin = fanin;
	desc.edges_count = 1;
	desc.slot_bytes = slot_bytes;
	desc.slots_count = 2;
	ASSERT_EQ(0, snpu_graph_create(self->dev, &desc, &g));
	ASSERT_EQ(0, snpu_graph_launch(self->dev, self->s, g, slots, 2, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host, slots[1], NB));
	for (i = 0; i < NE; i++)
		ASSERT_EQ(9, host[i]);
	EXPECT_EQ(-EINVAL, snpu_graph_launch(self->dev, self->s, g, slots,
					     SNPU_GRAPH_MAX_SLOTS + 1, 0));
	ASSERT_EQ(0, snpu_graph_destroy(self->dev, g));
	EXPECT_EQ(-ENOENT, snpu_graph_destroy(self->dev, g));
	EXPECT_EQ(-ENOENT, snpu_graph_launch(self->dev, self->s, g, slots,
					     2, 0));
}

/* The driver's rules reach the caller: a node with a stream is EINVAL. */
TEST_F(graph, create_refused)
{
	struct snpu_graph_node node;
	struct snpu_graph_desc desc;
	uint32_t g;

	memset(&node, 0, sizeof(node));
	fill(&node.task, self->s, self->set[0][BA], 1);
	memset(&desc, 0, sizeof(desc));
	desc.nodes = &node;
	desc.nodes_count = 1;
	EXPECT_EQ(-EINVAL, snpu_graph_create(self->dev, &desc, &g));
	node.task.stream = 0;
	node.task.launch.args[0].value = 0x10;	/* no allocation */
	EXPECT_EQ(-EFAULT, snpu_graph_create(self->dev, &desc, &g));
}

/* ---- capture through SUBMIT --------------------------------------------- */

TEST_F(graph, first_invocation_is_one_task)
{
	uint64_t seq;

	ASSERT_EQ(0, body(self->dev, self->s, self->set[0]));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	seq = submitted(self->dev, self->s);

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	/* Nothing queued while recording. */
	EXPECT_EQ(seq, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + 1, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	EXPECT_TRUE(sets_equal(self->dev, self->set[0], self->set[1]));
}

TEST_F(graph, replay_is_one_task)
{
	uint64_t seq;
	int i;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, garble(self->dev, self->set[1]));
		seq = submitted(self->dev, self->s);
		ASSERT_EQ(SNPU_GRAPH_CACHED,
			  snpu_graph_begin(self->dev, self->s, 1));
		EXPECT_EQ(seq + 1, submitted(self->dev, self->s));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	}
	/* No capture is in progress after a cached begin. */
	EXPECT_EQ(-EINVAL, snpu_graph_end(self->dev));
}

/* Back-to-back replays (stitched by the driver) end as one replay does. */
TEST_F(graph, replays_back_to_back)
{
	uint64_t seq;
	int i;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	seq = submitted(self->dev, self->s);
	for (i = 0; i < 20; i++)
		ASSERT_EQ(SNPU_GRAPH_CACHED,
			  snpu_graph_begin(self->dev, self->s, 1));
	EXPECT_EQ(seq + 20, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/* Slots: the cached graph replays on other buffers. */
TEST_F(graph, slots_replay_elsewhere)
{
	const uint64_t bytes[NBUF] = { NB, NB, NB, NB, NB };
	uint64_t seq;

	ASSERT_EQ(0, snpu_graph_begin_slots(self->dev, NULL, self->s, 1, 0,
					    self->set[1], bytes, NBUF));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_TRUE(results_ok(self->dev, self->set[1]));

	ASSERT_EQ(0, garble(self->dev, self->set[0]));
	seq = submitted(self->dev, self->s);
	ASSERT_EQ(SNPU_GRAPH_CACHED,
		  snpu_graph_begin_slots(self->dev, NULL, self->s, 1, 0,
					 self->set[0], bytes, NBUF));
	EXPECT_EQ(seq + 1, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[0]));
	/* And back, after set 1 was garbled. */
	ASSERT_EQ(0, garble(self->dev, self->set[1]));
	ASSERT_EQ(SNPU_GRAPH_CACHED,
		  snpu_graph_begin_slots(self->dev, NULL, self->s, 1, 0,
					 self->set[1], bytes, NBUF));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	/* The replay must name the recorded slots. */
	EXPECT_EQ(-EINVAL, snpu_graph_begin(self->dev, self->s, 1));
}

TEST_F(graph, forget_records_again)
{
	uint64_t seq;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 5));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(-ENOENT, snpu_graph_forget(self->dev, 6));
	ASSERT_EQ(0, snpu_graph_forget(self->dev, 5));
	ASSERT_EQ(0, garble(self->dev, self->set[1]));
	seq = submitted(self->dev, self->s);
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 5));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + 1, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/* A task refused while recording: the ordinary path's errno, each time. */
TEST_F(graph, refused_task_errno)
{
	struct snpu_task bad[4];
	int i, plain[4];

	fill(&bad[0], self->s, self->set[1][BA], 1);
	bad[0].launch.block_dim = 0;
	fill(&bad[1], self->s, self->set[1][BA], 1);
	bad[1].launch.block_dim = self->info.max_block_dim + 1;
	fill(&bad[2], self->s, self->set[1][BA], 1);
	bad[2].launch.args[0].bytes = 6;		/* not a multiple of 4 */
	snpu_prep_memset(&bad[3], self->s, self->set[1][BA], 300, NB);
	for (i = 0; i < 4; i++) {
		plain[i] = snpu_submit(self->dev, &bad[i], 1, NULL);
		EXPECT_EQ(-EINVAL, plain[i]);
	}
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(plain[i], snpu_submit(self->dev, &bad[i], 1, NULL));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/* Other streams run during a capture. */
TEST_F(graph, other_stream_runs)
{
	static int32_t host[NE];
	struct snpu_task t;
	uint32_t s2;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0, &s2));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	fill(&t, s2, self->set[0][BA], 11);
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, s2, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host, self->set[0][BA], NB));
	EXPECT_EQ(11, host[0]);
	EXPECT_EQ(11, host[NE - 1]);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

struct replayer {
	struct snpu_device *dev;
	uint32_t s;
	int bad;	/* replays that did not launch */
};

static void *replay_loop(void *arg)
{
	struct replayer *r = arg;
	int i;

	for (i = 0; i < 20; i++) {
		if (snpu_graph_begin(r->dev, r->s, 2) != SNPU_GRAPH_CACHED ||
		    snpu_stream_synchronize(r->dev, r->s, -1))
			r->bad++;
	}
	return NULL;
}

/*
 * Another thread replays a cached key on its own stream while this one
 * records a body: its replays launch at once, the capture goes on.
 */
TEST_F(graph, replays_of_another_thread_during_capture)
{
	struct replayer r = { .dev = self->dev };
	pthread_t th;
	uint64_t seq;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&r.s));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, r.s, 2));
	ASSERT_EQ(0, body(self->dev, r.s, self->set[0]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	seq = submitted(self->dev, self->s);
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, pthread_create(&th, NULL, replay_loop, &r));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, r.bad);
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + 1, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[0]));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/* ---- fallback: the work is done the ordinary way ------------------------ */

TEST_F(graph, fallback_host_callback)
{
	uint64_t seq = submitted(self->dev, self->s);

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_launch_host_func(self->dev, self->s, CB_DATA));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + BODY_TASKS + 1, submitted(self->dev, self->s));
	ASSERT_EQ(0, serve_one(self->dev, CB_DATA));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	/* Not cached: the next begin records. */
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(0, snpu_graph_end(self->dev));
}

TEST_F(graph, fallback_wait_outside)
{
	uint32_t ev;

	ASSERT_EQ(0, snpu_event_create(self->dev, &ev));
	ASSERT_EQ(0, snpu_event_record(self->dev, ev, self->s));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, snpu_stream_wait_event(self->dev, self->s, ev));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/* A record and a wait inside the body are order; the event is recorded. */
TEST_F(graph, event_pair_inside)
{
	struct snpu_event_query q;
	uint32_t ev;
	uint64_t seq;

	ASSERT_EQ(0, snpu_event_create(self->dev, &ev));
	seq = submitted(self->dev, self->s);
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_event_record(self->dev, ev, self->s));
	ASSERT_EQ(0, snpu_stream_wait_event(self->dev, self->s, ev));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	/* The launch, then the event's record. */
	EXPECT_EQ(seq + 2, submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_event_synchronize(self->dev, ev, -1));
	ASSERT_EQ(0, snpu_event_query(self->dev, ev, &q));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

TEST_F(graph, fallback_host_copy)
{
	struct snpu_host_buf hb;
	int32_t *p;
	unsigned int i;

	ASSERT_EQ(0, snpu_host_alloc(self->dev, NB, &hb));
	p = hb.ptr;
	for (i = 0; i < NE; i++)
		p[i] = 5;
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s, SNPU_COPY_H2D,
				       self->set[1][BB], (uintptr_t)p, NB));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
}

/*
 * Past SNPU_GRAPH_MAX_NODES: NOP launches (they complete as they are
 * queued on an idle stream, so the fallback never fills the quota of
 * tasks in flight), then the body, whose first task is one node too many.
 */
TEST_F(graph, fallback_node_limit)
{
	uint64_t seq = submitted(self->dev, self->s);
	unsigned int i;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	for (i = 0; i < SNPU_GRAPH_MAX_NODES; i++)
		ASSERT_EQ(0, snpu_launch(self->dev, self->s, SNPU_KERNEL_NOP,
					 1, NULL, 0));
	EXPECT_EQ(seq, submitted(self->dev, self->s));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + SNPU_GRAPH_MAX_NODES + BODY_TASKS,
		  submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/*
 * Past SNPU_GRAPH_MAX_EDGES: 2048 memsets of 4 bytes each, then copies
 * that each read all 8 KiB, so depend on every memset (2048 edges each):
 * the 33rd copy is one edge too many. Then the body.
 */
TEST_F(graph, fallback_edge_limit)
{
	static uint8_t host[8192];
	uint64_t src, dst, seq;
	unsigned int i, copies = SNPU_GRAPH_MAX_EDGES / 2048 + 1;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192, 0, 0, &src));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 8192ULL * copies, 0, 0,
				    &dst));
	seq = submitted(self->dev, self->s);
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	for (i = 0; i < 2048; i++)
		ASSERT_EQ(0, snpu_memset_async(self->dev, self->s, src + 4 * i,
					       i % 251, 4));
	for (i = 0; i < copies; i++)
		ASSERT_EQ(0, snpu_memcpy_async(self->dev, self->s,
					       SNPU_COPY_D2D, dst + 8192 * i,
					       src, 8192));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(seq + 2048 + copies + BODY_TASKS,
		  submitted(self->dev, self->s));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host,
				     dst + 8192ULL * (copies - 1), 8192));
	for (i = 0; i < 8192; i++)
		ASSERT_EQ(i / 4 % 251, host[i]);
}

/* The context's graph quota is full: GRAPH_CREATE's ENOSPC. */
TEST_F(graph, fallback_create_enospc)
{
	struct snpu_graph_node node;
	struct snpu_graph_desc desc;
	uint32_t g, first = 0;
	unsigned int n;
	int ret = 0;

	memset(&node, 0, sizeof(node));
	fill(&node.task, 0, self->set[0][BA], 1);
	memset(&desc, 0, sizeof(desc));
	desc.nodes = &node;
	desc.nodes_count = 1;
	for (n = 0; n < 4096; n++) {
		ret = snpu_graph_create(self->dev, &desc, &g);
		if (ret)
			break;
		if (!n)
			first = g;
	}
	ASSERT_EQ(-ENOSPC, ret);
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	/* With room again, it is recorded. */
	ASSERT_EQ(0, snpu_graph_destroy(self->dev, first));
	ASSERT_EQ(0, garble(self->dev, self->set[1]));
	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	ASSERT_EQ(0, body(self->dev, self->s, self->set[1]));
	EXPECT_EQ(0, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
}

/*
 * An address outside the allocations is not checked while recording:
 * create refuses it, and the ordinary path gives SUBMIT's EFAULT for
 * that task; the tasks before and after it run.
 */
TEST_F(graph, fallback_bad_address)
{
	static int32_t host[NE];
	struct snpu_task t;

	ASSERT_EQ(0, snpu_graph_begin(self->dev, self->s, 1));
	fill(&t, self->s, self->set[1][BA], 4);
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	snpu_prep_memset(&t, self->s, 0x10, 0, NB);
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	fill(&t, self->s, self->set[1][BB], 6);
	ASSERT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	EXPECT_EQ(-EFAULT, snpu_graph_end(self->dev));
	snpu_prep_memset(&t, self->s, 0x10, 0, NB);
	EXPECT_EQ(-EFAULT, snpu_submit(self->dev, &t, 1, NULL));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host, self->set[1][BA], NB));
	EXPECT_EQ(4, host[NE - 1]);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host, self->set[1][BB], NB));
	EXPECT_EQ(6, host[0]);
}

/* ---- capture through the ring ------------------------------------------- */

/* Take one CQE; it must carry @user_data and success. */
static int one_cqe(struct snpu_ring *ring, uint64_t user_data)
{
	struct snpu_cqe *cqe;
	int ret;

	ret = snpu_ring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->user_data != user_data ? -EBADMSG : cqe->result;
	snpu_ring_cqe_seen(ring, cqe);
	return ret;
}

TEST_F(graph, ring_first_and_replay_one_entry)
{
	struct snpu_cqe *cqe;
	struct snpu_ring ring;
	uint32_t head;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, 0, &ring));
	ASSERT_EQ(0, ring_body(&ring, self->s, self->set[0]));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	while (!snpu_ring_peek_cqe(&ring, &cqe))
		snpu_ring_cqe_seen(&ring, cqe);

	head = __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, self->s, 1,
					   0x77));
	ASSERT_EQ(0, ring_body(&ring, self->s, self->set[1]));
	ASSERT_EQ(0, snpu_graph_end(self->dev));
	EXPECT_EQ(head + 1, __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, one_cqe(&ring, 0x77));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&ring, &cqe));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	EXPECT_TRUE(sets_equal(self->dev, self->set[0], self->set[1]));

	ASSERT_EQ(0, garble(self->dev, self->set[1]));
	head = __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE);
	ASSERT_EQ(SNPU_GRAPH_CACHED,
		  snpu_graph_begin_ring(self->dev, &ring, self->s, 1, 0x78));
	EXPECT_EQ(head + 1, __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, one_cqe(&ring, 0x78));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&ring, &cqe));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	snpu_ring_exit(&ring);
}

/* A host callback in a ring body: every entry goes to the SQ, in order. */
TEST_F(graph, ring_fallback_host_callback)
{
	struct snpu_task *sqe;
	struct snpu_ring ring;
	struct snpu_cqe *cqe;
	uint32_t head;
	int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, 0, &ring));
	head = __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE);
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, self->s, 1, 0));
	ASSERT_EQ(0, ring_body(&ring, self->s, self->set[1]));
	sqe = snpu_ring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	snpu_prep_host_func(sqe, self->s, CB_DATA);
	ASSERT_EQ(1, snpu_ring_submit(&ring));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(head + BODY_TASKS + 1,
		  __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, serve_one(self->dev, CB_DATA));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	for (i = 0; i < BODY_TASKS; i++)
		EXPECT_EQ(0, one_cqe(&ring, 0));
	EXPECT_EQ(0, one_cqe(&ring, CB_DATA));
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&ring, &cqe));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	snpu_ring_exit(&ring);
}

struct server {
	struct snpu_device *dev;
	uint32_t s;
	uint64_t buf;
	int ret;
};

/* Serve the callback, submitting work of another stream from it. */
static void *serve_and_submit(void *arg)
{
	struct server *sv = arg;
	struct snpu_callback_info cb;
	struct snpu_task t;

	sv->ret = snpu_callback_wait(sv->dev, -1, &cb);
	if (!sv->ret && cb.user_data != CB_DATA)
		sv->ret = -EBADMSG;
	if (!sv->ret) {
		fill(&t, sv->s, sv->buf, 12);
		sv->ret = snpu_submit(sv->dev, &t, 1, NULL);
	}
	if (!sv->ret)
		sv->ret = snpu_callback_done(sv->dev, cb.cookie, 0);
	return NULL;
}

/*
 * A ring body that waits for a completion which needs another thread,
 * whose callback submits work: the wait holds no lock that thread needs.
 */
TEST_F(graph, ring_wait_needs_another_thread)
{
	struct server sv = { .dev = self->dev, .buf = self->set[0][BA] };
	static int32_t host[NE];
	struct snpu_task *sqe;
	struct snpu_ring ring;
	pthread_t th;
	int i;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&sv.s));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, 0, &ring));
	ASSERT_EQ(0, pthread_create(&th, NULL, serve_and_submit, &sv));
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, self->s, 1, 0));
	sqe = snpu_ring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	snpu_prep_host_func(sqe, self->s, CB_DATA);
	sqe = snpu_ring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	snpu_prep_launch(sqe, self->s, SNPU_KERNEL_NOP, 1, NULL, 0);
	/*
	 * The host callback is first: no CQE before the thread served it.
	 * The wait breaks the capture (the callback alone would too).
	 */
	ASSERT_EQ(2, snpu_ring_submit_and_wait(&ring, 1));
	ASSERT_EQ(0, ring_body(&ring, self->s, self->set[1]));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, sv.ret);
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, sv.s, -1));
	EXPECT_EQ(0, one_cqe(&ring, CB_DATA));
	for (i = 0; i < BODY_TASKS + 1; i++)
		EXPECT_EQ(0, one_cqe(&ring, 0));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, host, sv.buf, NB));
	EXPECT_EQ(12, host[0]);
	snpu_ring_exit(&ring);
}

/* A refused entry in a ring body: its CQE has the error, the rest runs. */
TEST_F(graph, ring_refused_entry)
{
	struct snpu_task *sqe;
	struct snpu_ring ring;
	int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 64, 0, &ring));
	ASSERT_EQ(0, snpu_graph_begin_ring(self->dev, &ring, self->s, 1, 0));
	sqe = snpu_ring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	fill(sqe, self->s, self->set[1][BA], 1);
	sqe->launch.block_dim = 0;
	sqe->user_data = 0xbad;
	ASSERT_EQ(1, snpu_ring_submit(&ring));
	ASSERT_EQ(0, ring_body(&ring, self->s, self->set[1]));
	EXPECT_EQ(SNPU_GRAPH_NOT_RECORDED, snpu_graph_end(self->dev));
	EXPECT_EQ(-EINVAL, one_cqe(&ring, 0xbad));
	for (i = 0; i < BODY_TASKS; i++)
		EXPECT_EQ(0, one_cqe(&ring, 0));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
	EXPECT_TRUE(results_ok(self->dev, self->set[1]));
	snpu_ring_exit(&ring);
}

/* ---- random bodies: captured equals task by task ------------------------ */

#define FZ_BYTES	16384ULL	/* one allocation per set */
#define FZ_MAX		40		/* nodes of a body */

/* A random 4-byte aligned range of @bytes in a set, as an offset. */
static uint64_t fz_off(unsigned int *seed, uint64_t bytes)
{
	return 4 * (rand_r(seed) % ((FZ_BYTES - bytes) / 4 + 1));
}

/* Do [a, a + n) and [b, b + n) share a byte? */
static int fz_overlap(uint64_t a, uint64_t b, uint64_t n)
{
	return a < b + n && b < a + n;
}

/*
 * A random body as offsets: memsets, device copies, FILL, COPY, ADD_I32
 * and MUL_I32 launches of 1 to 4 blocks on overlapping ranges. Within a
 * node, what it writes is disjoint from what it reads, or (ADD, MUL) the
 * same range, so that its blocks never race with each other.
 */
static unsigned int fz_body(unsigned int *seed, struct snpu_task *t)
{
	unsigned int i, n = 1 + rand_r(seed) % FZ_MAX;
	uint64_t bytes, c, a, b;
	uint32_t bd;

	for (i = 0; i < n; i++) {
		bytes = 4 * (1 + rand_r(seed) % 256);
		bd = 1 + rand_r(seed) % 4;
		c = fz_off(seed, bytes);
		do {
			a = fz_off(seed, bytes);
		} while (fz_overlap(a, c, bytes));
		b = rand_r(seed) % 2 ? c : a;
		switch (rand_r(seed) % 6) {
		case 0:
			snpu_prep_memset(&t[i], 0, c, rand_r(seed) % 256,
					 bytes);
			break;
		case 1:
			snpu_prep_copy(&t[i], 0, SNPU_COPY_D2D, c, a, bytes);
			break;
		case 2:
			fill(&t[i], 0, c, (uint32_t)rand_r(seed));
			t[i].launch.args[0].bytes = bytes;
			t[i].launch.block_dim = bd;
			break;
		case 3: {
			struct snpu_kernel_arg args[2] = {
				snpu_arg_buf(c, bytes), snpu_arg_buf(a, bytes),
			};

			snpu_prep_launch(&t[i], 0, SNPU_KERNEL_COPY, bd,
					 args, 2);
			break;
		}
		default: {
			struct snpu_kernel_arg args[3] = {
				snpu_arg_buf(c, bytes), snpu_arg_buf(a, bytes),
				snpu_arg_buf(b, bytes),
			};

			/* c = c op a, or c = a op a. */
			if (b == a)
				args[1] = snpu_arg_buf(c, bytes);
			snpu_prep_launch(&t[i], 0, rand_r(seed) % 2 ?
					 SNPU_KERNEL_ADD_I32 :
					 SNPU_KERNEL_MUL_I32, bd, args, 3);
		}
		}
	}
	return n;
}

/* Task @t of a body on @stream over the set at @base. */
static struct snpu_task fz_at(const struct snpu_task *t, uint32_t stream,
			      uint64_t base)
{
	struct snpu_task u = *t;
	unsigned int i;

	u.stream = stream;
	switch (u.op) {
	case SNPU_OP_MEMSET:
		u.memset.addr += base;
		break;
	case SNPU_OP_COPY:
		u.copy.dst += base;
		u.copy.src += base;
		break;
	default:
		for (i = 0; i < SNPU_KERNEL_MAX_ARGS; i++)
			if (u.launch.args[i].bytes)
				u.launch.args[i].value += base;
	}
	return u;
}

/* Both sets hold the same random bytes. */
static int fz_init(struct snpu_device *dev, unsigned int *seed,
		   const uint64_t *base)
{
	static uint8_t host[FZ_BYTES];
	unsigned int i;
	int ret;

	for (i = 0; i < FZ_BYTES; i++)
		host[i] = (uint8_t)rand_r(seed);
	ret = snpu_memcpy_h2d(dev, base[0], host, FZ_BYTES);
	return ret ? ret : snpu_memcpy_h2d(dev, base[1], host, FZ_BYTES);
}

static int fz_same(struct snpu_device *dev, const uint64_t *base)
{
	static uint8_t x[FZ_BYTES], y[FZ_BYTES];

	if (snpu_memcpy_d2h(dev, x, base[0], FZ_BYTES) ||
	    snpu_memcpy_d2h(dev, y, base[1], FZ_BYTES))
		return 0;
	return !memcmp(x, y, FZ_BYTES);
}

/* The body task by task on set 0, @times over. */
static int fz_plain(struct snpu_device *dev, uint32_t s,
		    const struct snpu_task *t, unsigned int n,
		    uint64_t base, int times)
{
	struct snpu_task u;
	unsigned int i;
	int ret;

	while (times--)
		for (i = 0; i < n; i++) {
			u = fz_at(&t[i], s, base);
			ret = snpu_submit(dev, &u, 1, NULL);
			if (ret)
				return ret;
		}
	return snpu_stream_synchronize(dev, s, -1);
}

/* The body on set 1 through @ring, or through snpu_submit() without. */
static int fz_captured_body(struct snpu_device *dev, struct snpu_ring *ring,
			    uint32_t s, const struct snpu_task *t,
			    unsigned int n, uint64_t base)
{
	struct snpu_task u, *sqe;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		u = fz_at(&t[i], s, base);
		if (!ring) {
			ret = snpu_submit(dev, &u, 1, NULL);
			if (ret)
				return ret;
			continue;
		}
		sqe = snpu_ring_get_sqe(ring);
		if (!sqe) {
			ret = snpu_ring_submit(ring);
			if (ret < 0)
				return ret;
			sqe = snpu_ring_get_sqe(ring);
			if (!sqe)
				return -EBUSY;
		}
		*sqe = u;
	}
	ret = ring ? snpu_ring_submit(ring) : 0;
	return ret < 0 ? ret : 0;
}

/* Begin on @ring (launches with user_data 1), or on SUBMIT without. */
static int fz_begin(struct snpu_device *dev, struct snpu_ring *ring,
		    uint32_t s, uint64_t key)
{
	if (ring)
		return snpu_graph_begin_ring(dev, ring, s, key, 1);
	return snpu_graph_begin(dev, s, key);
}

/* Drain the CQ: every CQE must be a success. */
static int fz_drain(struct snpu_ring *ring, unsigned int *count)
{
	struct snpu_cqe *cqe;
	int ret = 0;

	while (ring && !snpu_ring_peek_cqe(ring, &cqe)) {
		if (cqe->result && !ret)
			ret = cqe->result;
		(*count)++;
		snpu_ring_cqe_seen(ring, cqe);
	}
	return ret;
}

/*
 * 24 random bodies, half through SUBMIT and half through the ring: the
 * first invocation (recorded, one launch) and then two back-to-back
 * replays (stitched) leave set 1 as the body task by task leaves set 0.
 */
TEST_F(graph, random_bodies_both_transports)
{
	struct snpu_task body[FZ_MAX];
	struct snpu_ring ring, *r;
	unsigned int seed = 7, iter, n, cqes;
	uint64_t base[2], seq;
	int launches;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, FZ_BYTES, 0, 0, &base[0]));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, FZ_BYTES, 0, 0, &base[1]));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &ring));
	for (iter = 0; iter < 24; iter++) {
		r = iter % 2 ? &ring : NULL;
		n = fz_body(&seed, body);

		ASSERT_EQ(0, fz_init(self->dev, &seed, base));
		ASSERT_EQ(0, fz_plain(self->dev, self->s, body, n, base[0],
				      1));
		seq = submitted(self->dev, self->s);
		cqes = 0;
		ASSERT_EQ(0, fz_begin(self->dev, r, self->s, iter));
		ASSERT_EQ(0, fz_captured_body(self->dev, r, self->s, body, n,
					      base[1]));
		ASSERT_EQ(0, snpu_graph_end(self->dev));
		ASSERT_EQ(seq + 1, submitted(self->dev, self->s));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		ASSERT_EQ(0, fz_drain(r, &cqes));
		ASSERT_TRUE(fz_same(self->dev, base));

		ASSERT_EQ(0, fz_init(self->dev, &seed, base));
		ASSERT_EQ(0, fz_plain(self->dev, self->s, body, n, base[0],
				      2));
		for (launches = 0; launches < 2; launches++)
			ASSERT_EQ(SNPU_GRAPH_CACHED,
				  fz_begin(self->dev, r, self->s, iter));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		ASSERT_EQ(0, fz_drain(r, &cqes));
		ASSERT_EQ(r ? 3U : 0U, cqes);
		ASSERT_TRUE(fz_same(self->dev, base));
		ASSERT_EQ(0, snpu_graph_forget(self->dev, iter));
	}
	snpu_ring_exit(&ring);
}

/*
 * Random bodies recorded with their allocation as slot 0, then replayed
 * twice (back to back) with the slot on another allocation: that one
 * ends as the reference allocation does under the body task by task.
 */
TEST_F(graph, random_bodies_slots_elsewhere)
{
	struct snpu_task body[FZ_MAX];
	struct snpu_ring ring, *r;
	unsigned int seed = 11, iter, n, cqes = 0;
	const uint64_t bytes = FZ_BYTES;
	uint64_t base[2], other[2];
	int launches;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, FZ_BYTES, 0, 0, &base[0]));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, FZ_BYTES, 0, 0, &base[1]));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, FZ_BYTES, 0, 0, &other[1]));
	other[0] = base[0];
	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &ring));
	for (iter = 0; iter < 12; iter++) {
		r = iter % 2 ? &ring : NULL;
		n = fz_body(&seed, body);

		ASSERT_EQ(0, fz_init(self->dev, &seed, base));
		ASSERT_EQ(0, fz_plain(self->dev, self->s, body, n, base[0],
				      1));
		ASSERT_EQ(0, snpu_graph_begin_slots(self->dev, r, self->s,
						    iter, 1, &base[1], &bytes,
						    1));
		ASSERT_EQ(0, fz_captured_body(self->dev, r, self->s, body, n,
					      base[1]));
		ASSERT_EQ(0, snpu_graph_end(self->dev));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		ASSERT_EQ(0, fz_drain(r, &cqes));
		ASSERT_TRUE(fz_same(self->dev, base));

		ASSERT_EQ(0, fz_init(self->dev, &seed, other));
		ASSERT_EQ(0, fz_plain(self->dev, self->s, body, n, other[0],
				      2));
		for (launches = 0; launches < 2; launches++)
			ASSERT_EQ(SNPU_GRAPH_CACHED,
				  snpu_graph_begin_slots(self->dev, r, self->s,
							 iter, 1, &other[1],
							 &bytes, 1));
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->s, -1));
		ASSERT_EQ(0, fz_drain(r, &cqes));
		ASSERT_TRUE(fz_same(self->dev, other));
		ASSERT_EQ(0, snpu_graph_forget(self->dev, iter));
	}
	/* The ring's launches: 3 CQEs for each of its 6 bodies. */
	EXPECT_EQ(18U, cqes);
	snpu_ring_exit(&ring);
}

TEST_HARNESS_MAIN
