// SPDX-License-Identifier: GPL-2.0
/*
 * Output-only fields accept any value on input, so a struct can be reused
 * for a second call: for every command that returns data, a call with
 * garbage (0xa5 bytes) in each field documented "out" succeeds and
 * overwrites those fields with the right values. Fields that are only
 * the other command's (CALLBACK_WAIT's outputs for CALLBACK_DONE, DONE's
 * status for WAIT) are ignored too: one struct serves a WAIT/DONE loop.
 * Reserved and pad fields stay checked (see ioctl_test and the suites of
 * each command).
 *
 * Runs as root in the test VM with the module loaded with its defaults.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define PAGE		4096
#define GARBAGE(f)	memset(&(f), 0xa5, sizeof(f))
#define G32		0xa5a5a5a5U
#define G64		0xa5a5a5a5a5a5a5a5ULL

FIXTURE(out) {
	int fd;
	uint32_t stream;
};

FIXTURE_SETUP(out)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->stream));
}

FIXTURE_TEARDOWN(out)
{
	struct snpu_snapshot s = { .size = sizeof(s) };

	snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, &s);
	close(self->fd);
}

/* ---- device, context, memory ------------------------------------------ */

TEST_F(out, get_info)
{
	struct snpu_info want, got;

	ASSERT_EQ(0, snpu_get_info(self->fd, &want));
	memset(&got, 0, sizeof(got));
	got.size = sizeof(got);
	GARBAGE(got.abi_major);
	GARBAGE(got.abi_minor);
	GARBAGE(got.caps);
	GARBAGE(got.dev_index);
	GARBAGE(got.cores);
	GARBAGE(got.mem_total);
	GARBAGE(got.mem_used);
	GARBAGE(got.max_block_dim);
	GARBAGE(got.mem_align);
	GARBAGE(got.max_block_work);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_GET_INFO, &got));
	EXPECT_EQ(0, memcmp(&want, &got, sizeof(got)));
}

TEST_F(out, ctx_query)
{
	struct snpu_ctx_query want, got;

	ASSERT_EQ(0, snpu_ctx_query(self->fd, &want));
	memset(&got, 0xa5, sizeof(got));
	got.size = sizeof(got);
	got.flags = 0;
	got.reserved = 0;
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_CTX_QUERY, &got));
	EXPECT_EQ(0, memcmp(&want, &got, sizeof(got)));
}

TEST_F(out, mem_alloc)
{
	struct snpu_mem_alloc a = { .size = sizeof(a), .bytes = PAGE };
	uint64_t base = 0;

	GARBAGE(a.addr);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_MEM_ALLOC, &a));
	EXPECT_NE(G64, a.addr);
	ASSERT_EQ(0, snpu_mem_query(self->fd, a.addr, &base, NULL));
	EXPECT_EQ(a.addr, base);
	EXPECT_EQ(0, snpu_free(self->fd, a.addr));
}

TEST_F(out, mem_query)
{
	struct snpu_mem_query q = { .size = sizeof(q) };
	uint64_t addr;

	ASSERT_EQ(0, snpu_alloc(self->fd, 3 * PAGE, 0, &addr));
	q.addr = addr + PAGE;
	GARBAGE(q.base);
	GARBAGE(q.bytes);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_MEM_QUERY, &q));
	EXPECT_EQ(addr, q.base);
	EXPECT_EQ(3ULL * PAGE, q.bytes);
}

TEST_F(out, host_alloc)
{
	struct snpu_host_alloc a = { .size = sizeof(a), .bytes = PAGE };
	void *p;

	GARBAGE(a.handle);
	GARBAGE(a.mmap_offset);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_HOST_ALLOC, &a));
	EXPECT_NE(G32, a.handle);
	EXPECT_NE(G64, a.mmap_offset);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 a.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, PAGE);
	EXPECT_EQ(0, snpu_host_free(self->fd, a.handle));
}

TEST_F(out, host_register)
{
	struct snpu_host_register r = { .size = sizeof(r), .bytes = PAGE };
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, p);
	r.addr = (uintptr_t)p;
	GARBAGE(r.handle);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_HOST_REGISTER, &r));
	EXPECT_NE(G32, r.handle);
	EXPECT_EQ(0, snpu_host_free(self->fd, r.handle));
	munmap(p, PAGE);
}

/* ---- streams, events, owners ------------------------------------------- */

TEST_F(out, stream_create)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	GARBAGE(c.handle);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_STREAM_CREATE, &c));
	EXPECT_NE(G32, c.handle);
	EXPECT_EQ(0, snpu_stream_destroy(self->fd, c.handle, 0));
}

TEST_F(out, event_create)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	GARBAGE(c.handle);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_CREATE, &c));
	EXPECT_NE(G32, c.handle);
	EXPECT_EQ(0, snpu_event_destroy(self->fd, c.handle));
}

TEST_F(out, owner_create)
{
	struct snpu_stream_create c = { .size = sizeof(c) };

	GARBAGE(c.handle);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	EXPECT_NE(G32, c.handle);
	EXPECT_EQ(0, snpu_handle_op(self->fd, SNPU_IOC_OWNER_DESTROY,
				    c.handle, 0));
}

TEST_F(out, attached_stream_get_reused)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	struct snpu_attached_stream a = { .size = sizeof(a) };
	uint32_t first;

	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &c));
	a.owner = c.handle;
	strcpy(a.key, "reuse");
	GARBAGE(a.handle);
	GARBAGE(a.created);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1U, a.created);
	EXPECT_NE(G32, a.handle);
	first = a.handle;
	/* The same struct again: outputs of the first call in it. */
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(0U, a.created);
	EXPECT_EQ(first, a.handle);
	/* Garbage in created on a lookup: overwritten with 0. */
	GARBAGE(a.created);
	GARBAGE(a.handle);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(0U, a.created);
	EXPECT_EQ(first, a.handle);
}

TEST_F(out, submit)
{
	struct snpu_task t = snpu_t_nop(self->stream);
	struct snpu_submit s = {
		.size = sizeof(s), .count = 1, .task_size = sizeof(t),
		.tasks = (uintptr_t)&t,
	};

	GARBAGE(s.seq);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SUBMIT, &s));
	EXPECT_EQ(1ULL, s.seq);
	/* Reused: the returned sequence number in it. */
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SUBMIT, &s));
	EXPECT_EQ(2ULL, s.seq);
}

TEST_F(out, stream_sync)
{
	struct snpu_wait w = {
		.size = sizeof(w), .handle = self->stream, .timeout_ns = -1,
	};

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->stream)));
	GARBAGE(w.error);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_STREAM_SYNC, &w));
	EXPECT_EQ(0, w.error);
}

TEST_F(out, stream_query)
{
	struct snpu_stream_query q = { .size = sizeof(q) };

	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(self->stream)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, -1, NULL));
	q.handle = self->stream;
	GARBAGE(q.error);
	GARBAGE(q.submitted);
	GARBAGE(q.completed);
	GARBAGE(q.priority);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_STREAM_QUERY, &q));
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(1ULL, q.submitted);
	EXPECT_EQ(1ULL, q.completed);
	EXPECT_EQ(SNPU_PRIO_NORMAL, q.priority);
}

static void event_query_garbage(struct snpu_event_query *q, uint32_t event)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->handle = event;
	GARBAGE(q->state);
	GARBAGE(q->stream);
	GARBAGE(q->error);
	GARBAGE(q->seq);
	GARBAGE(q->time_ns);
}

TEST_F(out, event_query_never_recorded)
{
	struct snpu_event_query q;
	uint32_t e;

	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	event_query_garbage(&q, e);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_QUERY, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_NEVER_RECORDED, q.state);
	EXPECT_EQ(0U, q.stream);
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(0ULL, q.seq);
	EXPECT_EQ(0ULL, q.time_ns);
}

TEST_F(out, event_query_complete)
{
	struct snpu_event_query q;
	struct snpu_task t;
	uint64_t seq;
	uint32_t e;

	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	t = snpu_t_record(self->stream, e);
	ASSERT_EQ(0, snpu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, -1, NULL));
	event_query_garbage(&q, e);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_QUERY, &q));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, q.state);
	EXPECT_EQ(self->stream, q.stream);
	EXPECT_EQ(0, q.error);
	EXPECT_EQ(seq, q.seq);
	EXPECT_NE(G64, q.time_ns);
	EXPECT_GE(snpu_now_ns(), q.time_ns);
}

TEST_F(out, event_sync)
{
	struct snpu_wait w = { .size = sizeof(w), .timeout_ns = -1 };
	uint32_t e;

	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(self->stream, e)));
	w.handle = e;
	GARBAGE(w.error);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_SYNC, &w));
	EXPECT_EQ(0, w.error);
}

TEST_F(out, event_elapsed)
{
	struct snpu_event_elapsed el = { .size = sizeof(el) };
	struct snpu_task t[2];
	uint32_t a, b;

	ASSERT_EQ(0, snpu_event_create(self->fd, &a));
	ASSERT_EQ(0, snpu_event_create(self->fd, &b));
	t[0] = snpu_t_record(self->stream, a);
	t[1] = snpu_t_record(self->stream, b);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, -1, NULL));
	el.start = a;
	el.end = b;
	GARBAGE(el.ns);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_EVENT_ELAPSED, &el));
	EXPECT_GE(el.ns, 0);
	EXPECT_NE((int64_t)G64, el.ns);
}

/* ---- callbacks --------------------------------------------------------- */

TEST_F(out, callback_wait_garbage)
{
	struct snpu_callback cb = { .size = sizeof(cb), .timeout_ns = -1 };

	ASSERT_EQ(0, snpu_submit1(self->fd,
				  snpu_t_host_func(self->stream, 1234)));
	GARBAGE(cb.user_data);
	GARBAGE(cb.cookie);
	GARBAGE(cb.stream);
	GARBAGE(cb.status);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, &cb));
	EXPECT_EQ(1234ULL, cb.user_data);
	EXPECT_EQ(self->stream, cb.stream);
	EXPECT_NE(G32, cb.cookie);
	EXPECT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, self->stream, -1, NULL));
}

/* WAIT, DONE, WAIT, DONE with one struct, as a host callback loop would. */
TEST_F(out, callback_wait_done_loop_one_struct)
{
	struct snpu_callback cb = { .size = sizeof(cb), .timeout_ns = -1 };
	struct snpu_task t[2];
	int32_t err = 1;
	int i;

	t[0] = snpu_t_host_func(self->stream, 1);
	t[1] = snpu_t_host_func(self->stream, 2);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	for (i = 1; i <= 2; i++) {
		ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, &cb))
			TH_LOG("wait %d", i);
		EXPECT_EQ((uint64_t)i, cb.user_data);
		EXPECT_EQ(self->stream, cb.stream);
		/* timeout_ns, user_data and stream are still set. */
		cb.status = 0;
		ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_DONE, &cb))
			TH_LOG("done %d", i);
	}
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, -1, &err));
	EXPECT_EQ(0, err);
}

/* ---- command queues ---------------------------------------------------- */

static int ring_setup(int fd, struct snpu_ring_setup *s, bool garbage)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->sq_entries = 8;
	if (garbage) {
		GARBAGE(s->mmap_offset);
		GARBAGE(s->mmap_bytes);
		GARBAGE(s->sq);
		GARBAGE(s->cq);
	}
	return snpu_ioc(fd, SNPU_IOC_RING_SETUP, s);
}

TEST_F(out, ring_setup)
{
	struct snpu_ring_setup want, got;
	int fd2 = snpu_open_dev();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, ring_setup(fd2, &want, false));
	ASSERT_EQ(0, ring_setup(self->fd, &got, true));
	EXPECT_EQ(want.mmap_offset, got.mmap_offset);
	EXPECT_EQ(want.mmap_bytes, got.mmap_bytes);
	EXPECT_EQ(0, memcmp(&want.sq, &got.sq, sizeof(got.sq)));
	EXPECT_EQ(0, memcmp(&want.cq, &got.cq, sizeof(got.cq)));
	close(fd2);
}

TEST_F(out, enter_submitted)
{
	struct snpu_ring_setup rs;
	struct snpu_enter e = { .size = sizeof(e) };

	ASSERT_EQ(0, ring_setup(self->fd, &rs, false));
	GARBAGE(e.submitted);
	ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	EXPECT_EQ(0U, e.submitted);
}

/* Garbage in submitted does not pass for SQEs consumed: the wait's error. */
TEST_F(out, enter_getevents_timeout_not_hidden)
{
	struct snpu_ring_setup rs;
	struct snpu_enter e = {
		.size = sizeof(e), .flags = SNPU_ENTER_GETEVENTS,
		.min_complete = 1, .timeout_ns = NS_PER_MS,
	};

	ASSERT_EQ(0, ring_setup(self->fd, &rs, false));
	GARBAGE(e.submitted);
	EXPECT_EQ(-ETIMEDOUT, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
}

/* ---- process snapshot -------------------------------------------------- */

static int snap_garbage(int fd, unsigned long cmd, int64_t timeout_ns,
			struct snpu_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->timeout_ns = timeout_ns;
	GARBAGE(s->state);
	GARBAGE(s->bg_threads);
	GARBAGE(s->image_bytes);
	GARBAGE(s->pid);
	return snpu_ioc(fd, cmd, s);
}

static int snap0(int fd, unsigned long cmd, int64_t timeout_ns)
{
	struct snpu_snapshot s = { .size = sizeof(s), .timeout_ns = timeout_ns };

	return snpu_ioc(fd, cmd, &s);
}

#define EXPECT_SNAP(s, st, nbg, has_image) do {				\
	EXPECT_EQ((uint32_t)(st), (s).state);				\
	EXPECT_EQ((uint32_t)(nbg), (s).bg_threads);			\
	EXPECT_EQ((bool)(has_image), (s).image_bytes != 0);		\
	EXPECT_NE(G64, (s).image_bytes);				\
	EXPECT_EQ((uint32_t)getpid(), (s).pid);				\
} while (0)

TEST_F(out, snapshot_state)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_RUNNING, 0, false);
}

TEST_F(out, snapshot_lock)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_SNAPSHOT_LOCK,
				  NS_PER_SEC, &s));
	EXPECT_SNAP(s, SNPU_STATE_LOCKED, 0, false);
}

TEST_F(out, snapshot_backup)
{
	struct snpu_snapshot s;
	uint64_t addr;

	ASSERT_EQ(0, snpu_alloc(self->fd, PAGE, 0, &addr));
	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC));
	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_BACKED_UP, 0, true);
}

TEST_F(out, snapshot_restore)
{
	struct snpu_snapshot s;
	uint64_t addr;

	ASSERT_EQ(0, snpu_alloc(self->fd, PAGE, 0, &addr));
	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC));
	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0));
	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_SNAPSHOT_RESTORE, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_LOCKED, 0, true);
}

TEST_F(out, snapshot_unlock)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_SNAPSHOT_LOCK, NS_PER_SEC));
	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_RUNNING, 0, false);
}

TEST_F(out, bg_register)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_BG_REGISTER, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_RUNNING, 1, false);
	EXPECT_EQ(0, snap0(self->fd, SNPU_IOC_BG_UNREGISTER, 0));
}

TEST_F(out, bg_park)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_BG_REGISTER, 0));
	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_BG_PARK, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_RUNNING, 1, false);
	EXPECT_EQ(0, snap0(self->fd, SNPU_IOC_BG_UNREGISTER, 0));
}

TEST_F(out, bg_unregister)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap0(self->fd, SNPU_IOC_BG_REGISTER, 0));
	ASSERT_EQ(0, snap_garbage(self->fd, SNPU_IOC_BG_UNREGISTER, 0, &s));
	EXPECT_SNAP(s, SNPU_STATE_RUNNING, 0, false);
}

TEST_HARNESS_MAIN
