// SPDX-License-Identifier: GPL-2.0
/*
 * snpu graphs: lifetime. GRAPH_DESTROY with launches in flight returns at
 * once, the handle is gone, the launches still complete with the right
 * result; a process killed in the middle of long launches is reaped and
 * the module then unloads; the process snapshot (lock, backup, restore,
 * unlock) keeps graphs and their handles, drains a launch in flight, and
 * refuses graph calls from the locking thread (EDEADLK); the graph
 * quotas are given back by destroy and by close, also when the destroy
 * was deferred by a launch in flight.
 *
 * What holds a launch in flight is a host callback in front of it on its
 * stream that the test answers when it wants, or long SPIN nodes where a
 * launch must really run (the test hooks are on in the VM).
 *
 * Runs as root in the test VM, module loaded with test_hooks=1 and its
 * defaults; some tests reload the module (with other parameters, or to
 * check that it unloads) and load it back as it was. Raw ioctls only.
 */
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "graph_util.h"
#include "snpu_cgroup.h"

#define WAIT_NS		(60 * NS_PER_SEC)
#define BYTES		4096
#define LOCK_NS		(30 * NS_PER_SEC)

static bool all_u32(const uint32_t *p, size_t bytes, uint32_t v)
{
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* slot0 <- FILL @pat after @spin_ns of SPIN (none when 0). */
static int fill_graph(int fd, uint64_t spin_ns, uint32_t pat, uint32_t *h)
{
	struct gdef g;
	int ret;

	if (g_init(&g, 1, (uint64_t[]){ BYTES }, 0))
		return -ENOMEM;
	if (spin_ns && g_spin(&g, spin_ns, 2) < 0)
		return -ENOMEM;
	if (g_fill(&g, g_slot(0, 0), BYTES, pat, 2) < 0 ||
	    (spin_ns && g_pred(&g, 0)))
		return -ENOMEM;
	ret = g_create(fd, &g, h);
	g_free(&g);
	return ret;
}

FIXTURE(life) {
	int fd;
	uint32_t stream;
	uint64_t a, b;
};

FIXTURE_SETUP(life)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->a));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->b));
}

FIXTURE_TEARDOWN(life)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * CTX_QUERY reports the graphs and their memory against their quotas: a
 * create and a launch (its instance) add, a destroy with nothing in
 * flight gives all of it back at once.
 */
TEST_F_TIMEOUT(life, ctx_query_counts_graphs, 60)
{
	struct snpu_ctx_query q0, q1, q2, q3;
	int32_t err = 1;
	uint32_t h;

	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q0));
	EXPECT_EQ(0U, q0.graphs);
	EXPECT_EQ(0ULL, q0.graph_mem);
	EXPECT_EQ(64U, q0.graphs_limit);
	EXPECT_EQ(64ULL << 20, q0.graph_mem_limit);

	ASSERT_EQ(0, fill_graph(self->fd, 0, 0x1234, &h));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q1));
	EXPECT_EQ(1U, q1.graphs);
	EXPECT_LT(0ULL, q1.graph_mem);

	ASSERT_EQ(0, g_launch(self->fd, self->stream, h, &self->a, 1, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q2));
	EXPECT_EQ(1U, q2.graphs);
	EXPECT_LT(q1.graph_mem, q2.graph_mem) TH_LOG("the launch's instance");

	ASSERT_EQ(0, g_destroy(self->fd, h));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q3));
	EXPECT_EQ(0U, q3.graphs);
	EXPECT_EQ(0ULL, q3.graph_mem);
}

/*
 * An unprivileged user (the device node is 0666) creates and launches
 * graphs like root does, and is bounded the same way: the graph quota
 * stops creates with ENOSPC, and every graph byte the kernel keeps is
 * charged to the context. The child reports the first failed step.
 */
static int nobody_graphs(void)
{
	struct snpu_ctx_query q;
	uint32_t buf[BYTES / 4], h, stream, n;
	uint64_t a;
	int32_t err = 1;
	int fd, ret;

	if (snpu_drop_to_nobody())
		return 1;
	fd = snpu_open_dev();
	if (fd < 0 || snpu_stream_create(fd, 0, &stream) ||
	    snpu_alloc(fd, BYTES, 0, &a))
		return 2;
	for (n = 0; (ret = fill_graph(fd, 0, 0xabcd0000 + n, &h)) == 0; n++)
		;
	if (ret != -ENOSPC || snpu_ctx_query(fd, &q) || n != q.graphs_limit ||
	    q.graphs != n || !q.graph_mem || q.graph_mem > q.graph_mem_limit)
		return 3;
	if (g_launch(fd, stream, h, &a, 1, 0, NULL) ||
	    snpu_stream_sync(fd, stream, WAIT_NS, &err) || err)
		return 4;
	if (snpu_d2h(fd, buf, a, BYTES) ||
	    !all_u32(buf, BYTES, 0xabcd0000 + n - 1))
		return 5;
	if (g_destroy(fd, h) || fill_graph(fd, 0, 1, &h))
		return 6;
	close(fd);
	return 0;
}

TEST(unprivileged_user_bounded_by_graph_quota)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid)
		_exit(nobody_graphs());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("failed step %d",
						 WEXITSTATUS(status));
}

/*
 * Held behind a callback: DESTROY returns (it would never return if it
 * waited for the launch), the handle is gone for DESTROY and for new
 * launches, and the launch runs when the callback is answered.
 */
TEST_F_TIMEOUT(life, destroy_with_launch_queued, 60)
{
	struct snpu_stream_query q;
	struct snpu_task t[3];
	uint32_t buf[BYTES / 4], h;
	int32_t err = 1;

	ASSERT_EQ(0, fill_graph(self->fd, 0, 0x600d600d, &h));
	t[0] = snpu_t_host_func(self->stream, 42);
	t[1] = g_launch_task(self->stream, h, &self->a, 1, 0);
	t[2] = g_launch_task(self->stream, h, &self->b, 1, 0);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	ASSERT_EQ(0, g_destroy(self->fd, h));
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q));
	EXPECT_LT(q.completed, q.submitted) TH_LOG("held by the callback");
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, h));
	t[1] = g_launch_task(self->stream, h, &self->a, 1, 0);
	EXPECT_EQ(-ENOENT, snpu_submit(self->fd, &t[1], 1, NULL));

	ASSERT_EQ(0, snpu_callback_answer(self->fd, WAIT_NS, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, BYTES));
	EXPECT_TRUE(all_u32(buf, BYTES, 0x600d600d));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, BYTES));
	EXPECT_TRUE(all_u32(buf, BYTES, 0x600d600d));
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, h));
}

/* Running (SPIN nodes): DESTROY returns, the launches finish right. */
TEST_F_TIMEOUT(life, destroy_while_running, 60)
{
	uint32_t buf[BYTES / 4], h;
	struct snpu_task t[4];
	int32_t err = 1;
	int i;

	ASSERT_EQ(0, fill_graph(self->fd, 100 * NS_PER_MS, 0x0ddba11, &h));
	for (i = 0; i < 4; i++)
		t[i] = g_launch_task(self->stream, h, i & 1 ? &self->b :
				     &self->a, 1, 0);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 4, NULL));
	ASSERT_EQ(0, g_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, g_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, snpu_submit(self->fd, t, 1, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, BYTES));
	EXPECT_TRUE(all_u32(buf, BYTES, 0x0ddba11));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, BYTES));
	EXPECT_TRUE(all_u32(buf, BYTES, 0x0ddba11));
}

/* Same bindings: stitched launches in flight when the graph goes. */
TEST_F_TIMEOUT(life, destroy_while_stitched, 60)
{
	uint32_t buf[BYTES / 4], h;
	struct snpu_task t[6];
	int32_t err = 1;
	int i;

	ASSERT_EQ(0, fill_graph(self->fd, 50 * NS_PER_MS, 0x5717c4ed, &h));
	for (i = 0; i < 6; i++)
		t[i] = g_launch_task(self->stream, h, &self->a, 1, 0);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 6, NULL));
	ASSERT_EQ(0, g_destroy(self->fd, h));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, BYTES));
	EXPECT_TRUE(all_u32(buf, BYTES, 0x5717c4ed));
}

/*
 * Launches cancelled by STREAM_ABORT, queued (behind a callback) and
 * running (in their SPIN): after RESET the same graph launches again and
 * every node runs (its kept state is as new).
 *   n0 SPIN 30 ms;  n1 a <- FILL pat (pred n0);  n2 b <- copy of a (pred n1)
 */
TEST_F_TIMEOUT(life, abort_then_relaunch, 60)
{
	uint32_t buf[BYTES / 4], h, pat;
	uint64_t slots[2] = { self->a, self->b };
	struct snpu_task t[4];
	struct gdef g;
	int32_t err = 1;
	int round;

	ASSERT_EQ(0, g_init(&g, 2, (uint64_t[]){ BYTES, BYTES }, 0));
	ASSERT_LE(0, g_spin(&g, 30 * NS_PER_MS, 1));
	ASSERT_LE(0, g_fill(&g, g_slot(0, 0), BYTES, 0xabcdef01, 2));
	ASSERT_EQ(0, g_pred(&g, 0));
	ASSERT_LE(0, g_copy(&g, g_slot(1, 0), g_slot(0, 0), BYTES));
	ASSERT_EQ(0, g_pred(&g, 1));
	ASSERT_EQ(0, g_create(self->fd, &g, &h));
	g_free(&g);

	for (round = 0; round < 4; round++) {
		if (round & 1) {
			/* queued behind an unanswered callback */
			t[0] = snpu_t_host_func(self->stream, round);
			t[1] = g_launch_task(self->stream, h, slots, 2, 0);
			t[2] = g_launch_task(self->stream, h, slots, 2, 0);
			ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
		} else {
			/* running, or about to */
			t[0] = g_launch_task(self->stream, h, slots, 2, 0);
			t[1] = g_launch_task(self->stream, h, slots, 2, 0);
			ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
		}
		ASSERT_EQ(0, snpu_stream_abort(self->fd, self->stream));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      &err));
		if (round & 1) {
			/* held: certainly cancelled */
			EXPECT_EQ(-ECANCELED, err);
			/* the callback was cancelled or is still delivered */
			struct snpu_callback cb;

			if (!snpu_callback_wait(self->fd, 0, &cb))
				snpu_callback_done(self->fd, cb.cookie, 0);
		}
		ASSERT_EQ(0, snpu_stream_reset(self->fd, self->stream));
		ASSERT_EQ(0, snpu_memset(self->fd, self->a, 0, BYTES));
		ASSERT_EQ(0, snpu_memset(self->fd, self->b, 0, BYTES));
		ASSERT_EQ(0, snpu_submit(self->fd, t + (round & 1), 1, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS,
					      &err));
		EXPECT_EQ(0, err) TH_LOG("round %d", round);
		pat = 0xabcdef01;
		ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, BYTES));
		EXPECT_TRUE(all_u32(buf, BYTES, pat)) TH_LOG("round %d", round);
		ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->b, BYTES));
		EXPECT_TRUE(all_u32(buf, BYTES, pat)) TH_LOG("round %d", round);
	}
	EXPECT_EQ(0, g_destroy(self->fd, h));
}

/* Closing the file with launches queued and a graph destroyed. */
TEST_F_TIMEOUT(life, close_with_launches_queued, 60)
{
	struct snpu_task t[3];
	uint32_t h, h2, s;
	uint64_t a;
	int fd2;

	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, snpu_stream_create(fd2, 0, &s));
	ASSERT_EQ(0, snpu_alloc(fd2, BYTES, 0, &a));
	ASSERT_EQ(0, fill_graph(fd2, 0, 1, &h));
	ASSERT_EQ(0, fill_graph(fd2, 10 * NS_PER_MS, 2, &h2));
	t[0] = snpu_t_host_func(s, 1);
	t[1] = g_launch_task(s, h, &a, 1, 0);
	t[2] = g_launch_task(s, h2, &a, 1, 0);
	ASSERT_EQ(0, snpu_submit(fd2, t, 3, NULL));
	ASSERT_EQ(0, g_destroy(fd2, h));
	ASSERT_EQ(0, close(fd2));
	/* The device still works for the other file. */
	ASSERT_EQ(0, fill_graph(self->fd, 0, 3, &h));
	ASSERT_EQ(0, g_launch(self->fd, self->stream, h, &self->a, 1, 0,
			      NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, NULL));
}

/* ---- a process killed mid-launch, then rmmod ------------------------------------------ */

static void child_launch(int wfd)
{
	struct snpu_task t[8];
	uint64_t a;
	uint32_t s, h;
	struct gdef g;
	int fd, i;
	char ok = 'x';

	fd = snpu_open_dev();
	if (fd < 0 || snpu_stream_create(fd, 0, &s) ||
	    snpu_alloc(fd, BYTES, 0, &a) ||
	    g_init(&g, 1, (uint64_t[]){ BYTES }, 0))
		_exit(1);
	/* A chain of 8 SPIN nodes of 200 ms with a FILL at the end. */
	for (i = 0; i < 8; i++) {
		if (g_spin(&g, 200 * NS_PER_MS, 2) < 0 ||
		    (i && g_pred(&g, i - 1)))
			_exit(1);
	}
	if (g_fill(&g, g_slot(0, 0), BYTES, 7, 1) < 0 || g_pred(&g, 7) ||
	    g_create(fd, &g, &h))
		_exit(1);
	for (i = 0; i < 8; i++)
		t[i] = g_launch_task(s, h, &a, 1, 0);
	if (snpu_submit(fd, t, 8, NULL))
		_exit(1);
	ok = 'L';
	if (write(wfd, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

FIXTURE(reload) {
	char saved[1024];
	bool reloaded;
};

FIXTURE_SETUP(reload)
{
	ASSERT_EQ(0, g_params_now(self->saved, sizeof(self->saved)));
}

FIXTURE_TEARDOWN(reload)
{
	if (self->reloaded) {
		g_unload();
		EXPECT_EQ(0, snpu_module_load(self->saved))
			TH_LOG("insmod %s", self->saved);
	}
}

TEST_F_TIMEOUT(reload, killed_mid_launch_then_rmmod, 120)
{
	struct snpu_stream_query q;
	int p[2], st = 0, fd;
	uint32_t s, h;
	uint64_t a;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[0]);
		child_launch(p[1]);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	close(p[0]);
	ASSERT_EQ('L', c);
	/* Let the first launch get going, then kill. */
	usleep(50000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st));

	/* The parent opens again and works with graphs. */
	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, 0, &s));
	ASSERT_EQ(0, snpu_alloc(fd, BYTES, 0, &a));
	ASSERT_EQ(0, fill_graph(fd, 0, 9, &h));
	ASSERT_EQ(0, g_launch(fd, s, h, &a, 1, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(fd, s, WAIT_NS, NULL));
	ASSERT_EQ(0, snpu_stream_query(fd, s, &q));
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, close(fd));

	/* Nothing of the killed process holds the module. */
	self->reloaded = true;
	ASSERT_EQ(0, g_unload()) TH_LOG("rmmod after the kill");
	ASSERT_EQ(0, snpu_module_load(self->saved));
	self->reloaded = false;
}

/*
 * The module unloads after a process closed with a destroyed graph's
 * launches still queued behind an unanswered callback.
 */
TEST_F_TIMEOUT(reload, rmmod_after_close_with_deferred_destroy, 120)
{
	struct snpu_task t[2];
	uint32_t s, h;
	uint64_t a;
	int fd;

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, 0, &s));
	ASSERT_EQ(0, snpu_alloc(fd, BYTES, 0, &a));
	ASSERT_EQ(0, fill_graph(fd, 0, 9, &h));
	t[0] = snpu_t_host_func(s, 5);
	t[1] = g_launch_task(s, h, &a, 1, 0);
	ASSERT_EQ(0, snpu_submit(fd, t, 2, NULL));
	ASSERT_EQ(0, g_destroy(fd, h));
	ASSERT_EQ(0, close(fd));
	self->reloaded = true;
	ASSERT_EQ(0, g_unload());
	ASSERT_EQ(0, snpu_module_load(self->saved));
	self->reloaded = false;
}

/* ---- quotas given back ------------------------------------------------------------------ */

FIXTURE(quota) {
	char saved[1024];
	bool reloaded;
	int fd;
	uint32_t stream;
	uint64_t a;
	struct gdef big;
};

FIXTURE_VARIANT(quota) {
	const char *params;
	uint32_t nodes;		/* of each graph */
};

FIXTURE_VARIANT_ADD(quota, count) {
	.params = "ctx_graphs=5", .nodes = 1,
};

/* Graphs of 512 nodes: a few fit in 1 MiB, with their instances. */
FIXTURE_VARIANT_ADD(quota, memory) {
	.params = "ctx_graphs=1000 ctx_graph_mb=1", .nodes = 512,
};

FIXTURE_SETUP(quota)
{
	uint32_t i;

	self->fd = -1;
	ASSERT_EQ(0, g_params_now(self->saved, sizeof(self->saved)));
	self->reloaded = true;
	ASSERT_EQ(0, g_reload(self->saved, variant->params));
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->a));
	ASSERT_EQ(0, g_init(&self->big, 1, (uint64_t[]){ BYTES }, 0));
	for (i = 0; i < variant->nodes; i++) {
		ASSERT_LE(0, g_memset(&self->big, g_slot(0, 4 * (i % 64)),
				      (i & 0xff) | 1, 4));
	}
}

FIXTURE_TEARDOWN(quota)
{
	g_free(&self->big);
	if (self->fd >= 0)
		close(self->fd);
	if (self->reloaded) {
		g_unload();
		EXPECT_EQ(0, snpu_module_load(self->saved))
			TH_LOG("insmod %s", self->saved);
	}
}

/* Create until ENOSPC. Return: how many (handles in @h). */
static uint32_t fill_quota(int fd, const struct gdef *g, uint32_t *h,
			   uint32_t max, int *last)
{
	uint32_t n = 0;

	*last = 0;
	while (n < max) {
		*last = g_create(fd, g, &h[n]);
		if (*last)
			break;
		n++;
	}
	return n;
}

TEST_F_TIMEOUT(quota, destroy_gives_back, 120)
{
	uint32_t h[1000], n, n2, i, extra;
	int last;

	n = fill_quota(self->fd, &self->big, h, 1000, &last);
	ASSERT_EQ(-ENOSPC, last);
	ASSERT_GT(n, 1U);
	TH_LOG("%u graphs of %u nodes", n, variant->nodes);
	/* Destroy/create cycles never leak quota. */
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, g_destroy(self->fd, h[i % n]));
		ASSERT_EQ(0, g_create(self->fd, &self->big, &h[i % n]))
			TH_LOG("cycle %u", i);
		ASSERT_EQ(-ENOSPC, g_create(self->fd, &self->big, &extra));
	}
	/* All destroyed: the whole quota again. */
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, g_destroy(self->fd, h[i]));
	}
	n2 = fill_quota(self->fd, &self->big, h, 1000, &last);
	EXPECT_EQ(-ENOSPC, last);
	EXPECT_EQ(n, n2);
	for (i = 0; i < n2; i++) {
		EXPECT_EQ(0, g_destroy(self->fd, h[i]));
	}
}

/* A file closed with its graphs: a new file has the whole quota. */
TEST_F_TIMEOUT(quota, close_gives_back, 120)
{
	uint32_t h[1000], n, n2, i;
	int last, fd2;

	n = fill_quota(self->fd, &self->big, h, 1000, &last);
	ASSERT_EQ(-ENOSPC, last);
	ASSERT_GT(n, 0U);
	ASSERT_EQ(0, close(self->fd));
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	n2 = fill_quota(self->fd, &self->big, h, 1000, &last);
	EXPECT_EQ(-ENOSPC, last);
	EXPECT_EQ(n, n2);
	/* A second file of the process: its own quota. */
	fd2 = snpu_open_dev();
	ASSERT_GE(fd2, 0);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, g_create(fd2, &self->big, &h[i]));
	}
	close(fd2);
}

/*
 * A graph destroyed while its launch is queued still counts until the
 * launch is done (or is already given back): once the stream is
 * synchronized, the room is there for sure. The graph is launched once
 * before the quota is filled: a launch may take memory of the quota for
 * its run (a warm graph has it already).
 */
TEST_F_TIMEOUT(quota, deferred_destroy_gives_back, 120)
{
	uint32_t h[1000], n, m, i;
	struct snpu_task t[2];
	uint32_t buf[BYTES / 4];
	int last;
	int32_t err = 1;

	ASSERT_EQ(0, g_create(self->fd, &self->big, &h[0]));
	ASSERT_EQ(0, g_launch(self->fd, self->stream, h[0], &self->a, 1, 0,
			      NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, snpu_memset(self->fd, self->a, 0, BYTES));
	n = 1 + fill_quota(self->fd, &self->big, h + 1, 999, &last);
	ASSERT_EQ(-ENOSPC, last);
	t[0] = snpu_t_host_func(self->stream, 3);
	t[1] = g_launch_task(self->stream, h[0], &self->a, 1, 0);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, g_destroy(self->fd, h[0]));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, WAIT_NS, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	/* The destroyed graph's launch ran: the last memset (node n-1). */
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, self->a, BYTES));
	EXPECT_NE(0U, buf[0] | buf[1]);
	/* Its room is back (with that of its run, for the memory quota). */
	m = fill_quota(self->fd, &self->big, h, 1, &last);
	EXPECT_EQ(1U, m);
	EXPECT_EQ(0, last);
	m += fill_quota(self->fd, &self->big, h + n, 1000 - n, &last);
	EXPECT_EQ(-ENOSPC, last);
	for (i = 0; i < n + m - 1; i++) {
		EXPECT_EQ(0, g_destroy(self->fd, h[i]));
	}
}

/*
 * The quota full, a launch of a graph never launched may be refused
 * (ENOSPC: it would need memory of the quota for its run); if so,
 * nothing is queued, and once room is made it goes.
 */
TEST_F_TIMEOUT(quota, cold_launch_quota_full, 120)
{
	struct snpu_stream_query q0, q1;
	uint32_t h[1000], n, i;
	int last, ret;
	int32_t err = 1;

	n = fill_quota(self->fd, &self->big, h, 1000, &last);
	ASSERT_EQ(-ENOSPC, last);
	ASSERT_GT(n, 1U);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q0));
	ret = g_launch(self->fd, self->stream, h[0], &self->a, 1, 0, NULL);
	TH_LOG("cold launch with the quota full: %s", strerror(-ret));
	if (ret) {
		EXPECT_EQ(-ENOSPC, ret);
		ASSERT_EQ(0, snpu_stream_query(self->fd, self->stream, &q1));
		EXPECT_EQ(q0.submitted, q1.submitted);
		ASSERT_EQ(0, g_destroy(self->fd, h[n - 1]));
		n--;
		ASSERT_EQ(0, g_launch(self->fd, self->stream, h[0], &self->a,
				      1, 0, NULL));
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, g_destroy(self->fd, h[i]));
	}
}

/* ---- process snapshot ----------------------------------------------------------------------- */

static int snap(int fd, unsigned long cmd, int64_t timeout_ns)
{
	struct snpu_snapshot s = { .size = sizeof(s), .timeout_ns = timeout_ns };

	return snpu_ioc(fd, cmd, &s);
}

/* acc = acc + inc (slots 0, 1), then out (plain) <- acc. */
static int acc_graph(int fd, uint64_t out, uint32_t *h)
{
	struct gdef g;
	int ret;

	if (g_init(&g, 2, (uint64_t[]){ BYTES, BYTES }, 0) ||
	    g_spin(&g, 20 * NS_PER_MS, 1) < 0 ||
	    g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(0, 0), g_slot(0, 0),
		    g_slot(1, 0), BYTES, 2) < 0 || g_pred(&g, 0) ||
	    g_copy(&g, g_addr(out), g_slot(0, 0), BYTES) < 0 || g_pred(&g, 1))
		return -ENOMEM;
	ret = g_create(fd, &g, h);
	g_free(&g);
	return ret;
}

FIXTURE(snap) {
	int fd;
	uint32_t stream, h;
	uint64_t acc, inc, out;
	uint32_t a0[BYTES / 4], i0[BYTES / 4];
	bool locked;
};

FIXTURE_SETUP(snap)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &self->stream));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->acc));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->inc));
	ASSERT_EQ(0, snpu_alloc(self->fd, BYTES, 0, &self->out));
	snpu_fill_random(self->a0, BYTES, 11);
	snpu_fill_random(self->i0, BYTES, 12);
	ASSERT_EQ(0, snpu_h2d(self->fd, self->acc, self->a0, BYTES));
	ASSERT_EQ(0, snpu_h2d(self->fd, self->inc, self->i0, BYTES));
	ASSERT_EQ(0, acc_graph(self->fd, self->out, &self->h));
}

FIXTURE_TEARDOWN(snap)
{
	if (self->locked)
		snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0);
	if (self->fd >= 0)
		close(self->fd);
}

static int snap_launch(FIXTURE_DATA(snap) *self, unsigned int n)
{
	uint64_t slots[2] = { self->acc, self->inc };
	struct snpu_task t[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		t[i] = g_launch_task(self->stream, self->h, slots, 2, 0);
	return snpu_submit(self->fd, t, n, NULL);
}

/* acc after @n launches from the initial values. */
static void snap_ref(FIXTURE_DATA(snap) *self, unsigned int n, uint32_t *acc)
{
	unsigned int i, k;

	memcpy(acc, self->a0, BYTES);
	for (k = 0; k < n; k++)
		for (i = 0; i < BYTES / 4; i++)
			acc[i] += self->i0[i];
}

/*
 * Launches in flight when LOCK is taken are drained by BACKUP; RESTORE
 * keeps the graph; after UNLOCK the same handle launches and computes
 * from the restored bytes.
 */
TEST_F_TIMEOUT(snap, backup_restore_keeps_graph, 120)
{
	uint32_t want[BYTES / 4], got[BYTES / 4];
	int32_t err = 1;

	ASSERT_EQ(0, snap_launch(self, 3));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, LOCK_NS));
	self->locked = true;
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_RESTORE, 0));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0));
	self->locked = false;

	/* The backup came after the 3 launches: restored with them. */
	snap_ref(self, 3, want);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, BYTES));
	EXPECT_EQ(0, memcmp(want, got, BYTES));
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->out, BYTES));
	EXPECT_EQ(0, memcmp(want, got, BYTES));

	ASSERT_EQ(0, snap_launch(self, 2));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	snap_ref(self, 5, want);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, BYTES));
	EXPECT_EQ(0, memcmp(want, got, BYTES));
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->out, BYTES));
	EXPECT_EQ(0, memcmp(want, got, BYTES));
	EXPECT_EQ(0, g_destroy(self->fd, self->h));
}

/*
 * RESTORE puts back the bytes of the backup: launches after RESTORE
 * start from them, whatever ran between BACKUP and the lock... (nothing
 * may run while locked, so the image is what the next launch sees),
 * and a graph created after an UNLOCK/LOCK cycle coexists.
 */
TEST_F_TIMEOUT(snap, two_cycles_and_new_graph, 120)
{
	uint32_t want[BYTES / 4], got[BYTES / 4], h2;
	int32_t err = 1;
	int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, snap_launch(self, 1));
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, LOCK_NS));
		self->locked = true;
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0));
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_RESTORE, 0));
		ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0));
		self->locked = false;
	}
	ASSERT_EQ(0, fill_graph(self->fd, 0, 0x31337, &h2));
	ASSERT_NE(self->h, h2);
	ASSERT_EQ(0, snap_launch(self, 1));
	ASSERT_EQ(0, g_launch(self->fd, self->stream, h2, &self->inc, 1, 0,
			      NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, &err));
	EXPECT_EQ(0, err);
	snap_ref(self, 3, want);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->acc, BYTES));
	EXPECT_EQ(0, memcmp(want, got, BYTES));
	ASSERT_EQ(0, snpu_d2h(self->fd, got, self->inc, BYTES));
	EXPECT_TRUE(all_u32(got, BYTES, 0x31337));
}

/* While locked, the locking thread's graph calls are EDEADLK. */
TEST_F_TIMEOUT(snap, locked_calls_edeadlk, 60)
{
	uint64_t slots[2] = { self->acc, self->inc };
	struct snpu_task t;
	uint32_t h2;

	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, LOCK_NS));
	self->locked = true;
	EXPECT_EQ(-EDEADLK, fill_graph(self->fd, 0, 1, &h2));
	EXPECT_EQ(-EDEADLK, g_destroy(self->fd, self->h));
	t = g_launch_task(self->stream, self->h, slots, 2, 0);
	EXPECT_EQ(-EDEADLK, snpu_submit(self->fd, &t, 1, NULL));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0));
	self->locked = false;
	/* Nothing of it happened: the graph is there, launches work. */
	ASSERT_EQ(0, snap_launch(self, 1));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, WAIT_NS, NULL));
	EXPECT_EQ(0, g_destroy(self->fd, self->h));
}

/* ---- memory cgroup: launches through the kernel poller ----------------------------- */

#define CG_LAUNCHES	12

/* A graph of @nodes memsets into slot 0: its instances are big. */
static int big_graph(int fd, uint32_t nodes, uint32_t *h)
{
	struct gdef g;
	uint32_t i;
	int ret;

	ret = g_init(&g, 1, (uint64_t[]){ BYTES }, 0);
	for (i = 0; !ret && i < nodes; i++)
		if (g_memset(&g, g_slot(0, 4 * (i % 64)), (i & 0xff) | 1, 4) < 0)
			ret = -ENOMEM;
	if (!ret)
		ret = g_create(fd, &g, h);
	g_free(&g);
	return ret;
}

/*
 * As nobody, in the test's memory cgroup: CG_LAUNCHES launches of a fresh
 * graph held in flight behind a callback, once through SUBMIT and once
 * through the SQ poller (a kernel thread, outside every cgroup). Each
 * launch in flight takes an instance of its own, allocated on the way in.
 * Writes the cgroup's growth of each way to @wfd. Return: 0 or a step.
 */
static int cg_launches(struct snpu_cg *cg, int wfd)
{
	struct snpu_task t[CG_LAUNCHES + 1];
	long long grew[2], before;
	struct gring r;
	uint32_t s, h[2], i;
	uint64_t a;
	int fd, way, step = 0;

	if (snpu_drop_to_nobody())
		return 1;
	fd = snpu_open_dev();
	if (fd < 0 || snpu_stream_create(fd, 0, &s) ||
	    snpu_alloc(fd, BYTES, 0, &a))
		return 2;
	if (big_graph(fd, G_MAX_NODES, &h[0]) ||
	    big_graph(fd, G_MAX_NODES, &h[1]))
		return 3;
	if (gr_init_flags(fd, 64, SNPU_RING_SQPOLL, &r))
		return 4;
	for (way = 0; way < 2; way++) {
		t[0] = snpu_t_host_func(s, way + 1);
		for (i = 1; i <= CG_LAUNCHES; i++)
			t[i] = g_launch_task(s, h[way], &a, 1, 0);
		before = snpu_cg_current(cg);
		if (way == 0) {
			step = snpu_submit(fd, t, CG_LAUNCHES + 1, NULL) ? 5 : 0;
		} else {
			for (i = 0; !step && i <= CG_LAUNCHES; i++)
				step = gr_push(&r, &t[i]) ? 6 : 0;
			if (!step)
				step = gr_enter_flags(fd, 0, 0,
						      SNPU_ENTER_SQ_WAKEUP,
						      NULL) ? 7 : 0;
			/* Consumed: the poller has taken every instance. */
			for (i = 0; !step && i < 60000 &&
			     __atomic_load_n(r.sq_head, __ATOMIC_ACQUIRE) !=
			     *r.sq_tail; i++)
				usleep(1000);
			if (*r.sq_head != *r.sq_tail)
				step = 8;
		}
		if (step)
			return step;
		grew[way] = snpu_cg_current(cg) - before;
		if (snpu_callback_answer(fd, WAIT_NS, 0, NULL) ||
		    snpu_stream_sync(fd, s, WAIT_NS, NULL))
			return 9;
	}
	gr_fini(&r);
	close(fd);
	return write(wfd, grew, sizeof(grew)) == sizeof(grew) ? 0 : 10;
}

/*
 * What the poller allocates for a process is charged to the process's
 * cgroup as when the process submits itself: SQPOLL must not be a way
 * around memory.max.
 */
TEST_F_TIMEOUT(life, sqpoll_launches_charged_like_submit, 300)
{
	struct snpu_cg cg;
	long long grew[2];
	int pfd[2], status;
	pid_t kid;

	ASSERT_EQ(0, snpu_cg_enter(&cg, "glife"));
	ASSERT_EQ(0, pipe(pfd));
	kid = fork();
	if (!kid)
		_exit(cg_launches(&cg, pfd[1]));
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	snpu_cg_leave(&cg);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("nobody's side failed at step %d",
						 WEXITSTATUS(status));
	ASSERT_EQ((ssize_t)sizeof(grew), read(pfd[0], grew, sizeof(grew)));
	TH_LOG("%d launches in flight: the cgroup grew %lld KiB through SUBMIT, %lld KiB through SQPOLL",
	       CG_LAUNCHES, grew[0] / 1024, grew[1] / 1024);
	/* An instance of G_MAX_NODES nodes takes far more than 64 KiB. */
	EXPECT_GT(grew[0], CG_LAUNCHES * 64 * 1024LL);
	EXPECT_GT(grew[1] * 4, grew[0] * 3);
}

TEST_HARNESS_MAIN
