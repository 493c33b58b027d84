// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of snpu_task_check(): the checks a task descriptor
 * passes before any handle or address is looked up.
 */
#include <string.h>

#include "core/core.h"

#include "kselftest_harness.h"

FIXTURE(task) {
	struct snpu_task t;
};

FIXTURE_SETUP(task)
{
	memset(&self->t, 0, sizeof(self->t));
	self->t.stream = 1;
}

FIXTURE_TEARDOWN(task)
{
}

static void make_launch(struct snpu_task *t)
{
	t->op = SNPU_OP_LAUNCH;
	t->launch.kernel = SNPU_KERNEL_ADD_I32;
	t->launch.block_dim = 4;
	t->launch.args[0].value = 0x1000;
	t->launch.args[0].bytes = 64;
	t->launch.args[1].value = 0x2000;
	t->launch.args[1].bytes = 64;
	t->launch.args[2].value = 0x3000;
	t->launch.args[2].bytes = 64;
}

static void make_copy(struct snpu_task *t)
{
	t->op = SNPU_OP_COPY;
	t->copy.dir = SNPU_COPY_D2D;
	t->copy.dst = 0x1000;
	t->copy.src = 0x2000;
	t->copy.bytes = 16;
}

TEST_F(task, valid_tasks_accepted)
{
	make_launch(&self->t);
	ASSERT_EQ(0, snpu_task_check(&self->t));

	memset(&self->t, 0, sizeof(self->t));
	make_copy(&self->t);
	ASSERT_EQ(0, snpu_task_check(&self->t));

	memset(&self->t, 0, sizeof(self->t));
	self->t.op = SNPU_OP_MEMSET;
	self->t.memset.addr = 0x1000;
	self->t.memset.bytes = 1;
	self->t.memset.value = 255;
	ASSERT_EQ(0, snpu_task_check(&self->t));

	memset(&self->t, 0, sizeof(self->t));
	self->t.op = SNPU_OP_EVENT_RECORD;
	self->t.event.event = 7;
	ASSERT_EQ(0, snpu_task_check(&self->t));
	self->t.op = SNPU_OP_STREAM_WAIT;
	ASSERT_EQ(0, snpu_task_check(&self->t));

	memset(&self->t, 0, sizeof(self->t));
	self->t.op = SNPU_OP_HOST_FUNC;
	self->t.user_data = ~0ULL;
	ASSERT_EQ(0, snpu_task_check(&self->t));
}

TEST_F(task, unknown_op_refused)
{
	self->t.op = 0;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.op = SNPU_OP_GRAPH + 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.op = SNPU_OP_FENCE_WAIT + 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

/* FENCE_WAIT: one word, the fd (checked at prepare) and a zero pad. */
TEST_F(task, fence_wait_words)
{
	self->t.op = SNPU_OP_FENCE_WAIT;
	self->t.fence.fd = 3;
	ASSERT_EQ(0, snpu_task_check(&self->t));
	self->t.fence.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.fence.pad = 0;
	self->t.raw[1] = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

TEST_F(task, graph_launch_words)
{
	self->t.op = SNPU_OP_GRAPH;
	self->t.graph.graph = 1;
	self->t.graph.scratch = 0x1000;
	self->t.graph.slots[7] = 0x2000;
	ASSERT_EQ(0, snpu_task_check(&self->t));
	self->t.graph.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.graph.pad = 0;
	self->t.raw[10] = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

TEST_F(task, flags_and_reserved_refused)
{
	make_copy(&self->t);
	self->t.flags = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.flags = 0;
	self->t.reserved0 = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

/* Every union word an op does not use must be zero, one word at a time. */
TEST_F(task, unused_words_refused)
{
	static const struct { __u32 op; unsigned int used; } ops[] = {
		{ SNPU_OP_COPY, 4 },
		{ SNPU_OP_MEMSET, 3 },
		{ SNPU_OP_EVENT_RECORD, 1 },
		{ SNPU_OP_STREAM_WAIT, 1 },
		{ SNPU_OP_HOST_FUNC, 0 },
	};
	unsigned int i, w;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		for (w = ops[i].used; w < ARRAY_SIZE(self->t.raw); w++) {
			memset(&self->t, 0, sizeof(self->t));
			if (ops[i].op == SNPU_OP_COPY) {
				make_copy(&self->t);
			} else if (ops[i].op == SNPU_OP_MEMSET) {
				self->t.memset.bytes = 1;
			}
			self->t.op = ops[i].op;
			ASSERT_EQ(0, snpu_task_check(&self->t));
			self->t.raw[w] = 1;
			ASSERT_EQ(-EINVAL, snpu_task_check(&self->t))
				TH_LOG("op %u word %u", ops[i].op, w);
		}
	}
}

TEST_F(task, copy_rules)
{
	make_copy(&self->t);
	self->t.copy.dir = 0;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.copy.dir = SNPU_COPY_D2D + 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.copy.dir = SNPU_COPY_H2D;
	self->t.copy.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.copy.pad = 0;
	self->t.copy.bytes = 0;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

TEST_F(task, memset_rules)
{
	self->t.op = SNPU_OP_MEMSET;
	self->t.memset.bytes = 8;
	self->t.memset.value = 256;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.memset.value = 0;
	self->t.memset.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.memset.pad = 0;
	self->t.memset.bytes = 0;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

TEST_F(task, event_pad_refused)
{
	self->t.op = SNPU_OP_STREAM_WAIT;
	self->t.event.pad = 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

/* A launch is checked by the kernel table: a bad block_dim is refused. */
TEST_F(task, launch_goes_through_kernel_check)
{
	make_launch(&self->t);
	self->t.launch.block_dim = 0;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.launch.block_dim = SNPU_MAX_BLOCK_DIM + 1;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
	self->t.launch.block_dim = 1;
	self->t.launch.kernel = SNPU_KERNEL_COUNT;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

/* CALLBACK_DONE is an SQE only: snpu_task_check() refuses it. */
TEST_F(task, callback_done_not_a_task)
{
	self->t.op = SNPU_OP_CALLBACK_DONE;
	ASSERT_EQ(-EINVAL, snpu_task_check(&self->t));
}

/* Its own check: a cookie and a status, everything else zero. */
TEST_F(task, callback_done_rules)
{
	struct snpu_task d;

	memset(&d, 0, sizeof(d));
	d.op = SNPU_OP_CALLBACK_DONE;
	d.callback.cookie = 0xffffffff;
	d.user_data = 42;
	EXPECT_EQ(0, snpu_task_check_callback_done(&d));
	d.callback.status = -4095;
	EXPECT_EQ(0, snpu_task_check_callback_done(&d));
	d.callback.status = -4096;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.callback.status = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.callback.status = 0;
	d.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.flags = 0;
	d.stream = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.stream = 0;
	d.reserved0 = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.reserved0 = 0;
	d.raw[12] = 1;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
	d.raw[12] = 0;
	d.op = SNPU_OP_HOST_FUNC;
	EXPECT_EQ(-EINVAL, snpu_task_check_callback_done(&d));
}

TEST_HARNESS_MAIN
