// SPDX-License-Identifier: GPL-2.0
/*
 * Checkpoint to a file, restore into a new process
 * (Documentation/checkpoint.rst), through the raw ioctls.
 *
 * A process makes one of every kind of object the image holds (two
 * allocations, driver-allocated host memory with its mapping, an owner
 * and its attached stream, a stream with work done, an event), locks
 * itself, writes its image into a memfd and unlocks. A new process (a
 * forked child that opens the device itself) restores the image into a
 * fresh file and finds the same handles, device addresses, bytes, mmap
 * offsets and stream timeline; on another device too (the device map).
 * Corrupt images (each chunk cut short, each chunk's CRC broken, a wrong
 * magic, version or count) are refused with their errno and leave the
 * file and the device as they were. Another user's process is refused.
 * Rings come back with their unreaped CQEs, submitted SQEs, completions
 * parked for room and their poller; corrupt RING chunks are refused.
 * Graphs: a process launches its graphs (kernel nodes, copies, memsets,
 * slots, scratch, plain addresses) on streams ordered by an event, is
 * checkpointed, and a new process launches the restored graphs by the
 * same handles and gets the same bytes; corrupt GRAPH chunks and
 * definitions the create ioctl refuses leave nothing made.
 * The module runs with devices=4 (run_vm.sh).
 */
#include <sys/wait.h>

#include "snpu_test.h"
#include "graph_util.h"

#include "kselftest_harness.h"

#define DEV0	"/dev/snpu0"
#define DEV1	"/dev/snpu1"

#define MEM_A_BYTES	5000
#define MEM_B_BYTES	(3 << 20)	/* three DATA chunks */
#define HOST_BYTES	8192
#define KEY		"ckpt-key"
#define WORK_SEQ	3		/* tasks run on the stream */

/* What a process made, as the restored one must find it. */
struct world {
	uint64_t mem_a, mem_b;
	uint32_t host, owner, attached, stream, event;
	uint64_t host_off;
	uint64_t completed;
	struct snpu_ctx_query usage;
};

static int open_dev(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static uint8_t pattern(uint64_t i, unsigned int salt)
{
	return (uint8_t)(i * 131 + salt * 7 + (i >> 9));
}

static int owner_create(int fd, uint32_t *handle)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	int ret = snpu_ioc(fd, SNPU_IOC_OWNER_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static int attached_get(int fd, uint32_t owner, const char *key,
			uint32_t *handle, uint32_t *created)
{
	struct snpu_attached_stream a = { .size = sizeof(a), .owner = owner };
	int ret;

	strncpy(a.key, key, sizeof(a.key) - 1);
	ret = snpu_ioc(fd, SNPU_IOC_ATTACHED_STREAM_GET, &a);
	if (!ret) {
		*handle = a.handle;
		*created = a.created;
	}
	return ret;
}

static int ckpt_proc(int fd, uint32_t op, pid_t pid, int imgfd,
		     struct snpu_ckpt_proc *out)
{
	struct snpu_ckpt_proc a = {
		.size = sizeof(a), .op = op, .pid = (uint32_t)pid,
		.timeout_ns = op == SNPU_CKPT_OP_LOCK ? -1 : 0,
		.fd = op == SNPU_CKPT_OP_CHECKPOINT ? imgfd : 0,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a);

	if (out)
		*out = a;
	return ret;
}

static int ckpt_restore(int fd, int imgfd, uint32_t index,
			struct snpu_ckpt_restore *out)
{
	struct snpu_ckpt_restore a = {
		.size = sizeof(a), .fd = imgfd, .index = index,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_CKPT_RESTORE, &a);

	if (out)
		*out = a;
	return ret;
}

/* Make one of every kind of object; 0 or a negative step number. */
static int make_world(int fd, struct world *w)
{
	static uint8_t buf[MEM_B_BYTES];
	struct snpu_stream_query q;
	uint32_t created;
	uint8_t *host;
	uint64_t i;
	void *p;

	memset(w, 0, sizeof(*w));
	if (snpu_alloc(fd, MEM_A_BYTES, 0, &w->mem_a) ||
	    snpu_alloc(fd, MEM_B_BYTES, 0, &w->mem_b))
		return -1;
	for (i = 0; i < MEM_B_BYTES; i++)
		buf[i] = pattern(i, 1);
	if (snpu_h2d(fd, w->mem_a, buf, MEM_A_BYTES) ||
	    snpu_h2d(fd, w->mem_b, buf, MEM_B_BYTES))
		return -2;
	if (snpu_host_alloc(fd, HOST_BYTES, &w->host, &w->host_off))
		return -3;
	p = mmap(NULL, HOST_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)w->host_off);
	if (p == MAP_FAILED)
		return -4;
	host = p;
	for (i = 0; i < HOST_BYTES; i++)
		host[i] = pattern(i, 2);
	munmap(p, HOST_BYTES);
	if (owner_create(fd, &w->owner) ||
	    attached_get(fd, w->owner, KEY, &w->attached, &created) ||
	    !created)
		return -5;
	if (snpu_stream_create(fd, SNPU_PRIO_NORMAL, &w->stream) ||
	    snpu_event_create(fd, &w->event))
		return -6;
	/* Work on the stream: its timeline stands at WORK_SEQ. */
	if (snpu_submit1(fd, snpu_t_nop(w->stream)) ||
	    snpu_submit1(fd, snpu_t_record(w->stream, w->event)) ||
	    snpu_submit1(fd, snpu_t_nop(w->stream)) ||
	    snpu_stream_sync(fd, w->stream, -1, NULL))
		return -7;
	if (snpu_stream_query(fd, w->stream, &q))
		return -8;
	w->completed = q.completed;
	if (snpu_ctx_query(fd, &w->usage))
		return -9;
	return 0;
}

/* Check a restored file against @w; 0 or a step number. */
static int check_world(int fd, const struct world *w)
{
	static uint8_t buf[MEM_B_BYTES];
	struct snpu_stream_query q;
	struct snpu_ctx_query u;
	uint32_t handle, created;
	const uint8_t *host;
	uint64_t i;
	void *p;

	if (snpu_d2h(fd, buf, w->mem_a, MEM_A_BYTES))
		return 1;
	for (i = 0; i < MEM_A_BYTES; i++)
		if (buf[i] != pattern(i, 1))
			return 2;
	if (snpu_d2h(fd, buf, w->mem_b, MEM_B_BYTES))
		return 3;
	for (i = 0; i < MEM_B_BYTES; i++)
		if (buf[i] != pattern(i, 1))
			return 4;
	/* The host memory at the image's mmap offset, with its bytes. */
	p = mmap(NULL, HOST_BYTES, PROT_READ, MAP_SHARED, fd,
		 (off_t)w->host_off);
	if (p == MAP_FAILED)
		return 5;
	host = p;
	for (i = 0; i < HOST_BYTES; i++)
		if (host[i] != pattern(i, 2))
			break;
	munmap(p, HOST_BYTES);
	if (i != HOST_BYTES)
		return 6;
	/* The same attached stream for the same owner and key. */
	if (attached_get(fd, w->owner, KEY, &handle, &created) ||
	    handle != w->attached || created)
		return 7;
	if (snpu_stream_query(fd, w->stream, &q) || q.completed != w->completed)
		return 8;
	/* The event comes back unrecorded (its capture is not in images). */
	if (snpu_event_sync(fd, w->event, 0, NULL) != -EINVAL)
		return 9;
	/* Work goes on on the restored stream, after its timeline. */
	if (snpu_submit1(fd, snpu_t_fill(w->stream, w->mem_a, 16, 0x5a, 1)) ||
	    snpu_submit1(fd, snpu_t_record(w->stream, w->event)) ||
	    snpu_event_sync(fd, w->event, -1, NULL) ||
	    snpu_stream_query(fd, w->stream, &q) ||
	    q.completed != w->completed + 2)
		return 10;
	if (snpu_ctx_query(fd, &u) || u.mem_used != w->usage.mem_used ||
	    u.host_used != w->usage.host_used ||
	    u.streams != w->usage.streams || u.events != w->usage.events)
		return 11;
	/* A new object gets a handle past the restored ones. */
	if (snpu_event_create(fd, &handle) || handle <= w->event)
		return 12;
	return 0;
}

/* Lock, checkpoint into a new memfd, unlock; the memfd or -errno. */
static int checkpoint_self(int fd, uint64_t *bytes)
{
	struct snpu_ckpt_proc out;
	int img, ret;

	img = memfd_create("snpu-ckpt", MFD_CLOEXEC);
	if (img < 0)
		return -errno;
	ret = ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, -1, NULL);
	if (!ret)
		ret = ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, 0, img, &out);
	if (!ret && bytes)
		*bytes = out.bytes;
	if (!ret)
		ret = ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, -1, NULL);
	if (ret) {
		close(img);
		return ret;
	}
	return img;
}

/*
 * In a new process: open @path, restore context 0 of @img, check it.
 * Return: the child's exit status: 0, 100 + restore errno, or a step.
 */
static int restore_in_child(const char *path, int img, const struct world *w,
			    bool nobody)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd, ret;

		if (nobody && snpu_drop_to_nobody())
			_exit(99);
		fd = open_dev(path);
		if (fd < 0)
			_exit(98);
		ret = ckpt_restore(fd, img, 0, NULL);
		if (ret)
			_exit(100 + (-ret & 0x7f));
		_exit(check_world(fd, w));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static bool empty_ctx(int fd)
{
	struct snpu_ctx_query u;

	return !snpu_ctx_query(fd, &u) && !u.mem_used && !u.host_used &&
	       !u.streams && !u.events && !u.graphs && !u.graph_mem;
}

/* The file has no rings: ENTER and their mmap say ENXIO. */
static bool no_rings(int fd)
{
	struct snpu_enter e = { .size = sizeof(e) };
	struct snpu_ring_query q = { .size = sizeof(q) };
	void *p;

	if (snpu_ioc(fd, SNPU_IOC_ENTER, &e) != -ENXIO ||
	    snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q) != -ENXIO)
		return false;
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, SNPU_RING_MMAP_OFFSET);
	if (p != MAP_FAILED) {
		munmap(p, 4096);
		return false;
	}
	return errno == ENXIO;
}

static uint64_t dev_mem_used(int fd)
{
	struct snpu_info info;

	return snpu_get_info(fd, &info) ? ~0ULL : info.mem_used;
}

TEST(roundtrip_into_new_process)
{
	struct world w;
	uint64_t bytes = 0;
	int fd, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, &bytes);
	ASSERT_LE(0, img);
	EXPECT_LT((uint64_t)MEM_A_BYTES + MEM_B_BYTES + HOST_BYTES, bytes);
	EXPECT_EQ((off_t)bytes, lseek(img, 0, SEEK_END));
	/* The process's device state is gone: its window is free again. */
	close(fd);
	EXPECT_EQ(0, restore_in_child(DEV0, img, &w, false));
	close(img);
}

TEST(roundtrip_as_nobody)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct world w;
		int fd, img;

		if (snpu_drop_to_nobody())
			_exit(99);
		fd = open_dev(DEV0);
		if (fd < 0 || make_world(fd, &w))
			_exit(98);
		img = checkpoint_self(fd, NULL);
		if (img < 0)
			_exit(97);
		close(fd);
		/* Already nobody: the new process is nobody's too. */
		_exit(restore_in_child(DEV0, img, &w, false));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* The device map: the image of a file of snpu0 restored onto snpu1. */
TEST(restore_onto_other_device)
{
	struct snpu_ckpt_restore out;
	struct world w;
	int fd, fd1, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, NULL);
	ASSERT_LE(0, img);
	/* The original still lives on snpu0; snpu1 has the window free. */
	EXPECT_EQ(0, restore_in_child(DEV1, img, &w, false));
	fd1 = open_dev(DEV1);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ckpt_restore(fd1, img, 0, &out));
	EXPECT_EQ(0u, out.dev_index);
	EXPECT_EQ(1u, out.contexts);
	EXPECT_EQ(0, check_world(fd1, &w));
	close(fd1);
	close(fd);
	close(img);
}

TEST(window_in_use_is_eaddrinuse)
{
	struct world w;
	uint64_t used;
	int fd, fd2, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, NULL);
	ASSERT_LE(0, img);
	fd2 = open_dev(DEV0);
	ASSERT_LE(0, fd2);
	used = dev_mem_used(fd2);
	EXPECT_EQ(-EADDRINUSE, ckpt_restore(fd2, img, 0, NULL));
	EXPECT_TRUE(empty_ctx(fd2));
	EXPECT_EQ(used, dev_mem_used(fd2));
	close(fd2);
	close(fd);
	close(img);
}

TEST(restore_into_used_file_is_enotempty)
{
	struct world w;
	uint64_t addr;
	int fd, fd1, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, NULL);
	ASSERT_LE(0, img);
	fd1 = open_dev(DEV1);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, snpu_alloc(fd1, 4096, 0, &addr));
	EXPECT_EQ(-ENOTEMPTY, ckpt_restore(fd1, img, 0, NULL));
	close(fd1);
	close(fd);
	close(img);
}

TEST(restore_from_pipe_is_espipe)
{
	int fds[2], fd;

	ASSERT_EQ(0, pipe(fds));
	fd = open_dev(DEV1);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ESPIPE, ckpt_restore(fd, fds[0], 0, NULL));
	EXPECT_EQ(-EBADF, ckpt_restore(fd, fds[1], 0, NULL));
	EXPECT_TRUE(empty_ctx(fd));
	close(fd);
	close(fds[0]);
	close(fds[1]);
}

TEST(index_out_of_range_is_enoent)
{
	struct world w;
	int fd, fd1, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, NULL);
	ASSERT_LE(0, img);
	fd1 = open_dev(DEV1);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(-ENOENT, ckpt_restore(fd1, img, 1, NULL));
	EXPECT_TRUE(empty_ctx(fd1));
	close(fd1);
	close(fd);
	close(img);
}

TEST(checkpoint_running_is_ebadfd)
{
	int fd, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	img = memfd_create("img", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	EXPECT_EQ(-EBADFD, ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, 0, img, NULL));
	EXPECT_EQ(-EBADFD, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, -1, NULL));
	EXPECT_EQ(0, lseek(img, 0, SEEK_END));
	close(img);
	close(fd);
}

TEST(state_lock_unlock_steps)
{
	struct snpu_ckpt_proc out;
	int fd, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_STATE, 0, -1, &out));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, out.state);
	EXPECT_EQ(1u, out.contexts);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, -1, &out));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, out.state);
	EXPECT_EQ(-EBADFD, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, -1, NULL));
	/* The locking thread's own gated calls: EDEADLK, as for LOCK. */
	EXPECT_EQ(-EDEADLK, snpu_event_create(fd, &(uint32_t){ 0 }));
	img = memfd_create("img", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, getpid(), img,
			       &out));
	EXPECT_EQ(1u, out.contexts);
	EXPECT_EQ((off_t)out.bytes, lseek(img, 0, SEEK_CUR));
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, -1, &out));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, out.state);
	close(img);
	close(fd);
}

TEST(bad_arguments_are_einval)
{
	struct snpu_ckpt_proc a = { .size = sizeof(a) };
	struct snpu_ckpt_restore r = { .size = sizeof(r) };
	int fd;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	a.op = SNPU_CKPT_OP_UNLOCK + 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	a.op = SNPU_CKPT_OP_STATE;
	a.timeout_ns = 5;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	a.timeout_ns = 0;
	a.fd = 3;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	a.fd = 0;
	a.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	a.reserved[1] = 0;
	a.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	a.flags = 0;
	a.op = SNPU_CKPT_OP_LOCK;
	a.timeout_ns = -2;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_PROC, &a));
	r.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_CKPT_RESTORE, &r));
	r.reserved[0] = 0;
	r.fd = -1;
	EXPECT_EQ(-EBADF, snpu_ioc(fd, SNPU_IOC_CKPT_RESTORE, &r));
	EXPECT_TRUE(empty_ctx(fd));
	close(fd);
}

TEST(pid_without_snpu_file_is_esrch)
{
	int fd;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	/* init has no snpu file open. */
	EXPECT_EQ(-ESRCH, ckpt_proc(fd, SNPU_CKPT_OP_STATE, 1, -1, NULL));
	close(fd);
}

/* ---- rings ------------------------------------------------------------ */

/*
 * Rings mapped by the test: the layout RING_SETUP reported, which the
 * new process knows from the old one (it is the same for the same
 * entries). The test owns the SQ tail and the CQ head.
 */
struct rring {
	uint8_t *mem;
	struct snpu_ring_setup p;
};

static uint32_t *rw(struct rring *r, uint32_t off)
{
	return (uint32_t *)(r->mem + off);
}

static int rr_map(int fd, const struct snpu_ring_setup *p, struct rring *r)
{
	void *mem = mmap(NULL, p->mmap_bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, (off_t)p->mmap_offset);

	if (mem == MAP_FAILED)
		return -errno;
	r->mem = mem;
	r->p = *p;
	return 0;
}

static void rr_unmap(struct rring *r)
{
	munmap(r->mem, r->p.mmap_bytes);
}

/* Put a NOP with @user_data in the SQ and publish the tail. */
static void rr_push_nop(struct rring *r, uint32_t stream, uint64_t user_data)
{
	uint32_t tail = *rw(r, r->p.sq.tail);
	struct snpu_task *sqes = (void *)(r->mem + r->p.sq.array);
	struct snpu_task t = snpu_t_nop(stream);

	t.user_data = user_data;
	sqes[tail & *rw(r, r->p.sq.mask)] = t;
	__atomic_store_n(rw(r, r->p.sq.tail), tail + 1, __ATOMIC_RELEASE);
}

/* Take the next CQE: 0, or -EAGAIN when there is none. */
static int rr_pop(struct rring *r, struct snpu_cqe *cqe)
{
	uint32_t head = *rw(r, r->p.cq.head);
	struct snpu_cqe *cqes = (void *)(r->mem + r->p.cq.array);

	if (__atomic_load_n(rw(r, r->p.cq.tail), __ATOMIC_ACQUIRE) == head)
		return -EAGAIN;
	*cqe = cqes[head & *rw(r, r->p.cq.mask)];
	__atomic_store_n(rw(r, r->p.cq.head), head + 1, __ATOMIC_RELEASE);
	return 0;
}

static int rr_enter(int fd, uint32_t to_submit, uint32_t min_complete,
		    uint32_t flags, uint32_t *submitted)
{
	struct snpu_enter e = {
		.size = sizeof(e), .flags = flags, .to_submit = to_submit,
		.min_complete = min_complete, .timeout_ns = 10 * NS_PER_SEC,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_ENTER, &e);

	if (!ret && submitted)
		*submitted = e.submitted;
	return ret;
}

/* Wait for @n CQEs with the poller (waking it if it sleeps). */
static int rr_wait_sqpoll(int fd, struct rring *r, uint32_t n)
{
	uint32_t flags = SNPU_ENTER_GETEVENTS;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(rw(r, r->p.sq.flags), __ATOMIC_RELAXED) &
	    SNPU_SQ_NEED_WAKEUP)
		flags |= SNPU_ENTER_SQ_WAKEUP;
	return rr_enter(fd, 0, n, flags, NULL);
}

/* Reap CQEs of user_data @from..@to with sequence numbers equal to them. */
static int rr_expect(struct rring *r, uint64_t from, uint64_t to)
{
	struct snpu_cqe c;
	uint64_t u;

	for (u = from; u <= to; u++) {
		if (rr_pop(r, &c))
			return 1;
		if (c.user_data != u || c.result || c.flags || c.seq != u)
			return 2;
	}
	return 0;
}

/* What the old process left in its rings, as the new one must find it. */
struct ring_world {
	uint32_t stream;
	struct snpu_ring_setup p;
	bool sqpoll;
};

#define R_SQ	4
#define R_CQ	8

/*
 * Without SQPOLL: NOPs 1..8 fill the CQ, 9 and 10 park for room, 1 is
 * reaped; 11..13 are submitted (the tail published) and not entered.
 * With SQPOLL: the poller completes 1..3, 1 is reaped; the process is
 * locked before 4 and 5 are submitted, so the poller leaves them.
 * Then the checkpoint. Return: an image fd, or a negative step.
 */
static int ring_make_image(bool sqpoll, struct ring_world *w)
{
	struct snpu_ckpt_proc out;
	struct snpu_cqe c;
	struct rring r;
	uint32_t n, u;
	int fd, img;

	memset(w, 0, sizeof(*w));
	w->sqpoll = sqpoll;
	fd = open_dev(DEV0);
	if (fd < 0)
		return -1;
	if (snpu_stream_create(fd, SNPU_PRIO_NORMAL, &w->stream))
		return -2;
	w->p = (struct snpu_ring_setup){
		.size = sizeof(w->p), .sq_entries = R_SQ, .cq_entries = R_CQ,
		.flags = sqpoll ? SNPU_RING_SQPOLL : 0,
	};
	if (snpu_ioc(fd, SNPU_IOC_RING_SETUP, &w->p) || rr_map(fd, &w->p, &r))
		return -3;
	if (!sqpoll) {
		for (u = 1; u <= 10; u++) {
			rr_push_nop(&r, w->stream, u);
			if (u % R_SQ && u != 10)
				continue;
			if (rr_enter(fd, R_SQ, 0, 0, &n) || n != (u - 1) % R_SQ + 1)
				return -4;
		}
		/* Two completions wait for room. */
		if (*rw(&r, w->p.cq.counter) != 2 ||
		    !(*rw(&r, w->p.cq.flags) & SNPU_CQ_OVERFLOW))
			return -5;
	} else {
		for (u = 1; u <= 3; u++)
			rr_push_nop(&r, w->stream, u);
		if (rr_wait_sqpoll(fd, &r, 3))
			return -4;
	}
	if (rr_pop(&r, &c) || c.user_data != 1)
		return -6;
	if (!sqpoll)
		for (u = 11; u <= 13; u++)
			rr_push_nop(&r, w->stream, u);
	img = memfd_create("snpu-ckpt", MFD_CLOEXEC);
	if (img < 0 || ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, img, NULL))
		return -7;
	if (sqpoll)
		for (u = 4; u <= 5; u++)
			rr_push_nop(&r, w->stream, u);
	if (ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, 0, img, &out))
		return -8;
	if (ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, img, NULL))
		return -9;
	rr_unmap(&r);
	close(fd);
	return img;
}

/*
 * The new process: restore, map the rings at the same offset, find the
 * counters where they were, reap the old CQEs, have the parked and the
 * submitted ones complete, submit more. Return: 0 or a step number.
 */
static int ring_check_restored(const char *path, int img,
			       const struct ring_world *w)
{
	struct snpu_ring_setup again = {
		.size = sizeof(again), .sq_entries = R_SQ,
	};
	struct snpu_ring_query q = { .size = sizeof(q) };
	struct rring r;
	uint32_t n;
	int fd;

	fd = open_dev(path);
	if (fd < 0)
		return 30;
	if (ckpt_restore(fd, img, 0, NULL))
		return 31;
	/* RING_QUERY says what RING_SETUP said to the old process. */
	if (snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q) ||
	    q.ring_flags != w->p.flags || q.sq_entries != R_SQ ||
	    q.cq_entries != R_CQ || (!w->sqpoll && q.idle_ms) ||
	    (w->sqpoll && q.idle_ms != 100) ||
	    q.mmap_offset != w->p.mmap_offset ||
	    q.mmap_bytes != w->p.mmap_bytes ||
	    memcmp(&q.sq, &w->p.sq, sizeof(q.sq)) ||
	    memcmp(&q.cq, &w->p.cq, sizeof(q.cq)))
		return 41;
	if (rr_map(fd, &w->p, &r))
		return 32;
	/* The geometry is the kernel's: the same for the same entries. */
	if (*rw(&r, w->p.sq.entries) != R_SQ || *rw(&r, w->p.cq.entries) != R_CQ ||
	    *rw(&r, w->p.sq.mask) != R_SQ - 1 || *rw(&r, w->p.cq.mask) != R_CQ - 1)
		return 33;
	if (!w->sqpoll) {
		if (*rw(&r, w->p.sq.head) != 10 || *rw(&r, w->p.sq.tail) != 13 ||
		    *rw(&r, w->p.cq.head) != 1 || *rw(&r, w->p.cq.tail) != 8 ||
		    *rw(&r, w->p.cq.counter) != 2 ||
		    !(*rw(&r, w->p.cq.flags) & SNPU_CQ_OVERFLOW))
			return 34;
		/* The CQEs not reaped before. */
		if (rr_expect(&r, 2, 8))
			return 35;
		/* The parked ones come in first, then the submitted ones run. */
		if (rr_enter(fd, 3, 5, SNPU_ENTER_GETEVENTS, &n) || n != 3)
			return 36;
		if (rr_expect(&r, 9, 13))
			return 37;
		if (*rw(&r, w->p.cq.flags) & SNPU_CQ_OVERFLOW)
			return 38;
		rr_push_nop(&r, w->stream, 14);
		if (rr_enter(fd, 1, 1, SNPU_ENTER_GETEVENTS, &n) || n != 1 ||
		    rr_expect(&r, 14, 14))
			return 39;
	} else {
		/* The poller runs from the restore on: it may have taken 4, 5. */
		if (*rw(&r, w->p.sq.tail) != 5 || *rw(&r, w->p.cq.head) != 1 ||
		    *rw(&r, w->p.sq.head) - 3 > 2 ||
		    *rw(&r, w->p.cq.tail) - 3 > 2)
			return 34;
		if (rr_expect(&r, 2, 3))
			return 35;
		/* The new poller takes the SQEs the old one left. */
		if (rr_wait_sqpoll(fd, &r, 2) || rr_expect(&r, 4, 5))
			return 36;
		rr_push_nop(&r, w->stream, 6);
		if (rr_wait_sqpoll(fd, &r, 1) || rr_expect(&r, 6, 6))
			return 37;
		/* ENTER does not submit for a poller: it is one. */
		if (rr_enter(fd, 1, 0, 0, NULL) != -EINVAL)
			return 38;
	}
	/* A file has one pair of rings: the restored ones. */
	if (snpu_ioc(fd, SNPU_IOC_RING_SETUP, &again) != -EBUSY)
		return 40;
	rr_unmap(&r);
	close(fd);
	return 0;
}

/* Make the image and restore it in a forked process; as nobody, both. */
static int ring_roundtrip(bool sqpoll, bool nobody)
{
	struct ring_world w;
	int status, img;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (nobody && snpu_drop_to_nobody())
			_exit(99);
		img = ring_make_image(sqpoll, &w);
		if (img < 0)
			_exit(50 - img);
		pid = fork();
		if (pid < 0)
			_exit(97);
		if (!pid)
			_exit(ring_check_restored(DEV0, img, &w));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			_exit(96);
		_exit(WEXITSTATUS(status));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST(ring_roundtrip_into_new_process)
{
	EXPECT_EQ(0, ring_roundtrip(false, false));
}

TEST(ring_roundtrip_as_nobody)
{
	EXPECT_EQ(0, ring_roundtrip(false, true));
}

TEST(sqpoll_ring_roundtrip_into_new_process)
{
	EXPECT_EQ(0, ring_roundtrip(true, false));
}

TEST(sqpoll_ring_roundtrip_as_nobody)
{
	EXPECT_EQ(0, ring_roundtrip(true, true));
}

TEST(ring_query_arguments)
{
	struct snpu_ring_query q = { .size = sizeof(q) };
	struct snpu_ring_setup rs = { .size = sizeof(rs), .sq_entries = 2,
				      .cq_entries = 8 };
	int fd;

	fd = open_dev(DEV1);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENXIO, snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q));
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_RING_SETUP, &rs));
	q.flags = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q));
	q.flags = 0;
	q.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q));
	q.reserved[1] = 0;
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_RING_QUERY, &q));
	EXPECT_EQ(0u, q.ring_flags);
	EXPECT_EQ(2u, q.sq_entries);
	EXPECT_EQ(8u, q.cq_entries);
	EXPECT_EQ(0u, q.idle_ms);
	EXPECT_EQ(rs.mmap_offset, q.mmap_offset);
	EXPECT_EQ(rs.mmap_bytes, q.mmap_bytes);
	EXPECT_EQ(0, memcmp(&rs.sq, &q.sq, sizeof(q.sq)));
	EXPECT_EQ(0, memcmp(&rs.cq, &q.cq, sizeof(q.cq)));
	close(fd);
}

/* A file with rings is not fresh. */
TEST(restore_into_file_with_rings_is_enotempty)
{
	struct snpu_ring_setup rs = { .size = sizeof(rs), .sq_entries = 4 };
	struct world w;
	int fd, fd1, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_world(fd, &w));
	img = checkpoint_self(fd, NULL);
	ASSERT_LE(0, img);
	fd1 = open_dev(DEV1);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, snpu_ioc(fd1, SNPU_IOC_RING_SETUP, &rs));
	EXPECT_EQ(-ENOTEMPTY, ckpt_restore(fd1, img, 0, NULL));
	close(fd1);
	close(fd);
	close(img);
}

/*
 * An imported dma-buf is another owner's memory: an image cannot hold it
 * as shared memory, so the checkpoint is refused, and nothing changes.
 */
TEST(dmabuf_import_is_eopnotsupp)
{
	struct snpu_mem_export x = { .size = sizeof(x), .bytes = 4096 };
	struct snpu_mem_import im = { .size = sizeof(im) };
	uint64_t addr;
	int fd, fd2, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	fd2 = open_dev(DEV0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, snpu_alloc(fd2, 4096, 0, &addr));
	x.addr = addr;
	ASSERT_EQ(0, snpu_ioc(fd2, SNPU_IOC_MEM_EXPORT, &x));
	im.fd = x.fd;
	ASSERT_EQ(0, snpu_ioc(fd, SNPU_IOC_MEM_IMPORT, &im));
	EXPECT_EQ(4096ULL, im.bytes);
	img = memfd_create("img", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, -1, NULL));
	EXPECT_EQ(-EOPNOTSUPP,
		  ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, 0, img, NULL));
	EXPECT_EQ(0, lseek(img, 0, SEEK_END));
	EXPECT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, -1, NULL));
	close(img);
	close(x.fd);
	close(fd2);
	close(fd);
}

/* A root process holds a file; nobody may not touch it, root may. */
TEST(other_users_pid_is_eperm)
{
	int sync_pipe[2], fd, status;
	pid_t holder, prober;
	char c;

	ASSERT_EQ(0, pipe(sync_pipe));
	holder = fork();
	ASSERT_LE(0, holder);
	if (!holder) {
		fd = open_dev(DEV0);
		close(sync_pipe[1]);
		if (fd < 0)
			_exit(1);
		/* Until the parent closes its end. */
		if (read(sync_pipe[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(sync_pipe[0]);
	/* The holder has its file once the device lists its process. */
	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	for (int i = 0; i < 1000; i++) {
		if (!ckpt_proc(fd, SNPU_CKPT_OP_STATE, holder, -1, NULL))
			break;
		usleep(1000);
	}
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_STATE, holder, -1, NULL));
	prober = fork();
	ASSERT_LE(0, prober);
	if (!prober) {
		int pfd;

		if (snpu_drop_to_nobody())
			_exit(99);
		pfd = open_dev(DEV0);
		if (pfd < 0)
			_exit(98);
		if (ckpt_proc(pfd, SNPU_CKPT_OP_STATE, holder, -1, NULL) != -EPERM)
			_exit(1);
		if (ckpt_proc(pfd, SNPU_CKPT_OP_LOCK, holder, -1, NULL) != -EPERM)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(prober, waitpid(prober, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Root (CAP_SYS_PTRACE) may lock and unlock it from outside. */
	EXPECT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, holder, -1, NULL));
	EXPECT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, holder, -1, NULL));
	close(sync_pipe[1]);
	ASSERT_EQ(holder, waitpid(holder, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/* ---- the snpu-checkpoint CLI -------------------------------------------- */

/* Run @cmd; its first output line in @out; its exit status. */
static int run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	int st;

	if (!p)
		return -1;
	out[0] = 0;
	if (!fgets(out, (int)len, p))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(cli_drives_another_process)
{
	int go[2], ready[2], status;
	char cmd[512], out[256];
	const char *img = "/tmp/ckpt-cli.img";
	struct world w;
	pid_t target;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	target = fork();
	ASSERT_LE(0, target);
	if (!target) {
		int fd = open_dev(DEV0);
		char c = 0;

		if (fd < 0 || make_world(fd, &w))
			c = 1;
		if (write(ready[1], &c, 1) != 1 || write(ready[1], &w, sizeof(w)) !=
		    sizeof(w))
			_exit(3);
		/* Blocked here (not at the gate) while locked. */
		if (read(go[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	{
		char c = 1;

		ASSERT_EQ(1, read(ready[0], &c, 1));
		ASSERT_EQ(0, c);
		ASSERT_EQ((ssize_t)sizeof(w), read(ready[0], &w, sizeof(w)));
	}
	snprintf(cmd, sizeof(cmd), "snpu-checkpoint --get-state -p %d", target);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_STREQ("running", out);
	snprintf(cmd, sizeof(cmd),
		 "snpu-checkpoint --toggle -p %d --timeout 5000 --image %s",
		 target, img);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_EQ(0, strncmp(out, "checkpointed ", 13)) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "snpu-checkpoint --get-state -p %d", target);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_STREQ("locked", out);
	snprintf(cmd, sizeof(cmd), "snpu-checkpoint --toggle -p %d", target);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	snprintf(cmd, sizeof(cmd), "snpu-checkpoint --get-state -p %d", target);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_STREQ("running", out);
	/* Its window on snpu0 is the target's: restored onto snpu1. */
	snprintf(cmd, sizeof(cmd),
		 "snpu-checkpoint --action restore --image %s 2>&1", img);
	EXPECT_EQ(1, run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "Address already in use")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd),
		 "snpu-checkpoint --action restore --image %s --device-map 0=1",
		 img);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_STREQ("restored context 0 of snpu0 onto snpu1", out);
	/* With a command: it runs with the restored file open. */
	snprintf(cmd, sizeof(cmd),
		 "snpu-checkpoint --action restore --image %s --device-map 0=2 "
		 "-- sh -c 'ls -l /proc/self/fd/$SNPU_CKPT_FDS' | tail -1", img);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "/dev/snpu2")) TH_LOG("%s", out);
	EXPECT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(target, waitpid(target, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	unlink(img);
}

/* ---- corrupt images ---------------------------------------------------- */

static uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1));
	}
	return crc;
}

/* The image in memory, and where each chunk starts. */
struct image {
	uint8_t *p;
	size_t n;
	size_t at[64];
	unsigned int chunks;
};

static int read_image(int img, struct image *im)
{
	struct snpu_ckpt_chunk c;
	size_t pos = sizeof(struct snpu_ckpt_header);

	im->n = (size_t)lseek(img, 0, SEEK_END);
	im->p = malloc(im->n);
	if (!im->p || pread(img, im->p, im->n, 0) != (ssize_t)im->n)
		return -1;
	im->chunks = 0;
	while (pos < im->n && im->chunks < 64) {
		im->at[im->chunks++] = pos;
		memcpy(&c, im->p + pos, sizeof(c));
		pos += sizeof(c) + c.len;
	}
	return pos == im->n ? 0 : -1;
}

static void fix_chunk_crc(struct image *im, unsigned int i)
{
	struct snpu_ckpt_chunk c;
	uint32_t crc;

	memcpy(&c, im->p + im->at[i], sizeof(c));
	c.crc = 0;
	crc = crc32c_sw(~0U, &c, sizeof(c));
	crc = crc32c_sw(crc, im->p + im->at[i] + sizeof(c), c.len) ^ ~0U;
	c.crc = crc;
	memcpy(im->p + im->at[i], &c, sizeof(c));
}

/* Restore @len bytes of @buf into a fresh file of snpu1: the errno. */
static int try_image(const void *buf, size_t len, bool *clean)
{
	int fd, img, ret;
	uint64_t used;

	img = memfd_create("bad", MFD_CLOEXEC);
	if (img < 0 || write(img, buf, len) != (ssize_t)len)
		return 1;
	fd = open_dev(DEV1);
	if (fd < 0)
		return 2;
	used = dev_mem_used(fd);
	ret = ckpt_restore(fd, img, 0, NULL);
	*clean = empty_ctx(fd) && dev_mem_used(fd) == used && no_rings(fd);
	close(fd);
	close(img);
	return ret;
}

FIXTURE(corrupt) {
	struct image im;
	int fd;
};

FIXTURE_SETUP(corrupt)
{
	struct world w;
	int img;

	self->fd = open_dev(DEV0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, make_world(self->fd, &w));
	img = checkpoint_self(self->fd, NULL);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, read_image(img, &self->im));
	close(img);
	/*
	 * 0 CTX, 1 MEM, 2 DATA, 3 MEM, 4-6 DATA, 7 OWNER, 8 HOST, 9 DATA,
	 * 10 the attached STREAM, 11 the STREAM, 12 EVENT, 13 END.
	 */
	ASSERT_EQ(14u, self->im.chunks);
}

FIXTURE_TEARDOWN(corrupt)
{
	free(self->im.p);
	close(self->fd);
}

TEST_F(corrupt, whole_image_restores)
{
	bool clean;

	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
	/* Restored: the file held the context until it was closed. */
	EXPECT_FALSE(clean);
}

TEST_F(corrupt, every_chunk_truncated_is_enodata)
{
	unsigned int i;
	bool clean;
	struct snpu_ckpt_chunk c;

	for (i = 0; i < self->im.chunks; i++) {
		memcpy(&c, self->im.p + self->im.at[i], sizeof(c));
		/* Cut inside its header, and inside its payload. */
		EXPECT_EQ(-ENODATA, try_image(self->im.p, self->im.at[i] + 7,
					      &clean)) TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
		EXPECT_EQ(-ENODATA,
			  try_image(self->im.p, self->im.at[i] + sizeof(c) +
				    c.len / 2, &clean)) TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
	}
	EXPECT_EQ(-ENODATA, try_image(self->im.p, 10, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt, every_chunk_crc_is_ebadmsg)
{
	unsigned int i;
	bool clean;

	for (i = 0; i < self->im.chunks; i++) {
		/* The last byte of the chunk: its payload's. */
		size_t end = i + 1 < self->im.chunks ? self->im.at[i + 1] :
						       self->im.n;

		self->im.p[end - 1] ^= 0x10;
		EXPECT_EQ(-EBADMSG, try_image(self->im.p, self->im.n, &clean))
			TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
		self->im.p[end - 1] ^= 0x10;
	}
}

TEST_F(corrupt, wrong_magic_and_version_are_enoexec)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;
	bool clean;

	h->magic ^= 1;
	EXPECT_EQ(-ENOEXEC, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	h->magic ^= 1;
	h->version++;
	EXPECT_EQ(-ENOEXEC, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	h->version--;
	h->abi_major++;
	h->crc = 0;
	h->crc = crc32c_sw(~0U, h, sizeof(*h)) ^ ~0U;
	EXPECT_EQ(-ENOEXEC, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt, header_crc_is_ebadmsg)
{
	struct snpu_ckpt_header *h = (void *)self->im.p;
	bool clean;

	h->contexts = 2;	/* without a new CRC */
	EXPECT_EQ(-EBADMSG, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt, counts_and_lengths_out_of_range_are_eproto)
{
	struct snpu_ckpt_ctx *ctx = (void *)(self->im.p + self->im.at[0] +
					     sizeof(struct snpu_ckpt_chunk));
	struct snpu_ckpt_mem *mem = (void *)(self->im.p + self->im.at[3] +
					     sizeof(struct snpu_ckpt_chunk));
	struct snpu_ckpt_chunk *c = (void *)(self->im.p + self->im.at[12]);
	bool clean;

	/* One MEM fewer than the image has: the second one is refused. */
	ctx->nmem--;
	fix_chunk_crc(&self->im, 0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	ctx->nmem++;
	/* One object more than it has: END comes too early. */
	ctx->nobj++;
	fix_chunk_crc(&self->im, 0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	ctx->nobj--;
	fix_chunk_crc(&self->im, 0);
	/* An allocation outside the context's window. */
	mem->addr += 1ULL << 40;
	fix_chunk_crc(&self->im, 3);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	mem->addr -= 1ULL << 40;
	fix_chunk_crc(&self->im, 3);
	/* An event's chunk longer than an event. */
	c->len += 8;
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	c->len -= 8;
	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
}

TEST_F(corrupt, duplicate_handle_is_eproto)
{
	struct snpu_ckpt_stream *s1 = (void *)(self->im.p + self->im.at[10] +
					       sizeof(struct snpu_ckpt_chunk));
	struct snpu_ckpt_owner *o = (void *)(self->im.p + self->im.at[7] +
					     sizeof(struct snpu_ckpt_chunk));
	bool clean;

	/* The attached stream under its owner's handle. */
	ASSERT_NE(0u, s1->owner);
	s1->handle = o->handle;
	fix_chunk_crc(&self->im, 10);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

/* ---- corrupt rings ----------------------------------------------------- */

FIXTURE(corrupt_ring) {
	struct image im;
	struct ring_world w;
};

FIXTURE_SETUP(corrupt_ring)
{
	int img = ring_make_image(false, &self->w);

	ASSERT_LE(0, img);
	ASSERT_EQ(0, read_image(img, &self->im));
	close(img);
	/* 0 CTX, 1 STREAM, 2 RING, 3 DATA (the mapping), 4 DATA (parked), 5 END. */
	ASSERT_EQ(6u, self->im.chunks);
}

FIXTURE_TEARDOWN(corrupt_ring)
{
	free(self->im.p);
}

static void *chunk_rec(struct image *im, unsigned int i)
{
	return im->p + im->at[i] + sizeof(struct snpu_ckpt_chunk);
}

TEST_F(corrupt_ring, whole_image_restores)
{
	bool clean;

	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
	EXPECT_FALSE(clean);
}

TEST_F(corrupt_ring, ring_fields_out_of_range_are_eproto)
{
	struct snpu_ckpt_ring *r = chunk_rec(&self->im, 2);
	struct snpu_ckpt_ring keep = *r;
	bool clean;
	int i;

	for (i = 0; i < 7; i++) {
		*r = keep;
		switch (i) {
		case 0: r->sq_entries = 3; break;
		case 1: r->cq_entries = 2; break;
		case 2: r->bytes += 4096; break;
		case 3: r->sq_tail = r->sq_head + R_SQ + 1; break;
		case 4: r->cq_head = r->cq_tail + 1; break;
		case 5: r->flags |= 1u << 7; break;
		case 6: r->idle_ms = 100; break;	/* without SQPOLL */
		}
		fix_chunk_crc(&self->im, 2);
		EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean))
			TH_LOG("case %d", i);
		EXPECT_TRUE(clean) TH_LOG("case %d", i);
	}
	*r = keep;
	fix_chunk_crc(&self->im, 2);
	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
}

TEST_F(corrupt_ring, ring_not_announced_is_eproto)
{
	struct snpu_ckpt_ctx *ctx = chunk_rec(&self->im, 0);
	bool clean;

	ctx->nring = 0;
	fix_chunk_crc(&self->im, 0);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt_ring, parked_count_off_is_eproto)
{
	struct snpu_ckpt_ring *r = chunk_rec(&self->im, 2);
	bool clean;

	r->noverflow++;		/* END comes while bytes are owed */
	fix_chunk_crc(&self->im, 2);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	r->noverflow -= 2;	/* the last DATA carries more than owed */
	fix_chunk_crc(&self->im, 2);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

/* A parked completion that is a callback's entry: refused at the end. */
TEST_F(corrupt_ring, parked_cqe_flags_is_eproto)
{
	uint8_t *d = chunk_rec(&self->im, 4);
	struct snpu_cqe *c = (void *)(d + sizeof(struct snpu_ckpt_data));
	bool clean;

	c->flags = SNPU_CQE_F_CALLBACK;
	fix_chunk_crc(&self->im, 4);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	c->flags = 0;
	c->result = 1;
	fix_chunk_crc(&self->im, 4);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

TEST_F(corrupt_ring, truncated_ring_is_enodata)
{
	unsigned int i;
	bool clean;

	for (i = 2; i <= 5; i++) {
		EXPECT_EQ(-ENODATA, try_image(self->im.p, self->im.at[i] + 20,
					      &clean)) TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
	}
}

TEST_F(corrupt_ring, ring_crc_is_ebadmsg)
{
	unsigned int i;
	bool clean;

	for (i = 2; i <= 4; i++) {
		size_t end = self->im.at[i + 1];

		self->im.p[end - 1] ^= 0x01;
		EXPECT_EQ(-EBADMSG, try_image(self->im.p, self->im.n, &clean))
			TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
		self->im.p[end - 1] ^= 0x01;
	}
}

/*
 * A refused SQPOLL image made a poller before its last chunk failed: it
 * is stopped and no longer counted. As nobody, after five such failures,
 * the four pollers a user may run on a device still start.
 */
TEST(corrupt_sqpoll_ring_leaves_poller_count)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct ring_world w;
		struct image im;
		struct snpu_ring_setup rs;
		bool clean;
		int img, i, fds[4];

		if (snpu_drop_to_nobody())
			_exit(99);
		img = ring_make_image(true, &w);
		if (img < 0 || read_image(img, &im))
			_exit(98);
		/* The END chunk's CRC. */
		im.p[im.n - 1] ^= 0x01;
		for (i = 0; i < 5; i++) {
			if (try_image(im.p, im.n, &clean) != -EBADMSG)
				_exit(10 + i);
			if (!clean)
				_exit(20 + i);
		}
		for (i = 0; i < 4; i++) {
			fds[i] = open_dev(DEV1);
			rs = (struct snpu_ring_setup){
				.size = sizeof(rs), .sq_entries = 2,
				.flags = SNPU_RING_SQPOLL,
			};
			if (fds[i] < 0 || snpu_ioc(fds[i], SNPU_IOC_RING_SETUP, &rs))
				_exit(30 + i);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- graphs ------------------------------------------------------------ */

#define GB		4096		/* bytes of each graph buffer */
#define GW		(GB / 4)

/*
 * What a process with graphs made: the input (slot 0's), a constant, the
 * scratch, the outputs; two streams ordered by an event; three graphs
 * (one destroyed before them, so the handles have a hole), and the
 * outputs their launches produced before the checkpoint.
 */
struct gworld {
	uint64_t in, k, scratch, out1, out2, out3, out4;
	uint32_t s1, s2, ev;
	uint32_t g_main, g_flat, g_gone;
	struct snpu_ctx_query usage;	/* after the creates, before launches */
	uint32_t want1[GW], want2[GW], want3[GW], want4[GW];
};

/*
 * The main graph, 5 nodes, 4 edges: scratch = slot 0 (a copy node);
 * out1 = scratch + k (ADD_I32 kernel, after it); out2 = 0x77.. (FILL, a
 * root); out3 = out1 (the COPY kernel, after the add); out3[0..64) =
 * 0x3c (memset, after that copy).
 */
static int gw_main(int fd, const struct gworld *w, uint32_t *h)
{
	struct gdef g;
	int ret = -ENOMEM;

	if (g_init(&g, 1, (uint64_t[]){ GB }, GB))
		return -ENOMEM;
	if (g_copy(&g, g_scratch(0), g_slot(0, 0), GB) < 0 ||
	    g_binop(&g, SNPU_KERNEL_ADD_I32, g_addr(w->out1), g_scratch(0),
		    g_addr(w->k), GB, 2) < 0 || g_pred(&g, 0) ||
	    g_fill(&g, g_addr(w->out2), GB, 0x77777777, 2) < 0 ||
	    g_copyk(&g, g_addr(w->out3), g_addr(w->out1), GB, 1) < 0 ||
	    g_pred(&g, 1) ||
	    g_memset(&g, g_addr(w->out3), 0x3c, 64) < 0 || g_pred(&g, 3))
		goto out;
	ret = g_create(fd, &g, h);
out:
	g_free(&g);
	return ret;
}

/* A graph without edges: slot 1 = slot 0 + slot 0 (ADD_I32). */
static int gw_flat(int fd, uint32_t *h)
{
	struct gdef g;
	int ret = -ENOMEM;

	if (g_init(&g, 2, (uint64_t[]){ GB, GB }, 0))
		return -ENOMEM;
	if (g_binop(&g, SNPU_KERNEL_ADD_I32, g_slot(1, 0), g_slot(0, 0),
		    g_slot(0, 0), GB, 1) >= 0)
		ret = g_create(fd, &g, h);
	g_free(&g);
	return ret;
}

/*
 * Launch: main on s1, the event recorded after it, s2 waits for it and
 * launches flat (in -> out4); both synchronized.
 */
static int gw_run(int fd, const struct gworld *w)
{
	uint64_t flat_slots[2] = { w->out1, w->out4 };
	int32_t err = 1;

	if (g_launch(fd, w->s1, w->g_main, &w->in, 1, w->scratch, NULL) ||
	    snpu_submit1(fd, snpu_t_record(w->s1, w->ev)) ||
	    snpu_submit1(fd, snpu_t_wait(w->s2, w->ev)) ||
	    g_launch(fd, w->s2, w->g_flat, flat_slots, 2, 0, NULL) ||
	    snpu_stream_sync(fd, w->s2, -1, &err) || err ||
	    snpu_stream_sync(fd, w->s1, -1, &err) || err)
		return -1;
	return 0;
}

/* The outputs zeroed (so a run must write them again). */
static int gw_clear(int fd, const struct gworld *w)
{
	static const uint32_t zero[GW];

	return snpu_h2d(fd, w->out1, zero, GB) ||
	       snpu_h2d(fd, w->out2, zero, GB) ||
	       snpu_h2d(fd, w->out3, zero, GB) ||
	       snpu_h2d(fd, w->out4, zero, GB);
}

static int gw_make(int fd, struct gworld *w)
{
	uint32_t buf[GW], i;

	memset(w, 0, sizeof(*w));
	if (snpu_alloc(fd, GB, 0, &w->in) || snpu_alloc(fd, GB, 0, &w->k) ||
	    snpu_alloc(fd, GB, 0, &w->scratch) ||
	    snpu_alloc(fd, GB, 0, &w->out1) || snpu_alloc(fd, GB, 0, &w->out2) ||
	    snpu_alloc(fd, GB, 0, &w->out3) || snpu_alloc(fd, GB, 0, &w->out4))
		return -1;
	for (i = 0; i < GW; i++)
		buf[i] = i * 2654435761u;
	if (snpu_h2d(fd, w->in, buf, GB))
		return -2;
	for (i = 0; i < GW; i++)
		buf[i] = i + 17;
	if (snpu_h2d(fd, w->k, buf, GB))
		return -3;
	if (snpu_stream_create(fd, SNPU_PRIO_NORMAL, &w->s1) ||
	    snpu_stream_create(fd, SNPU_PRIO_NORMAL, &w->s2) ||
	    snpu_event_create(fd, &w->ev))
		return -4;
	/* A handle freed before the graphs: the restored ones skip it too. */
	if (gw_flat(fd, &w->g_gone) || g_destroy(fd, w->g_gone))
		return -5;
	if (gw_main(fd, w, &w->g_main) || gw_flat(fd, &w->g_flat))
		return -6;
	if (snpu_ctx_query(fd, &w->usage))
		return -7;
	if (gw_run(fd, w))
		return -8;
	if (snpu_d2h(fd, w->want1, w->out1, GB) ||
	    snpu_d2h(fd, w->want2, w->out2, GB) ||
	    snpu_d2h(fd, w->want3, w->out3, GB) ||
	    snpu_d2h(fd, w->want4, w->out4, GB))
		return -9;
	/* The results are what the nodes compute, not zeros. */
	for (i = 0; i < GW; i++)
		if (w->want1[i] != i * 2654435761u + i + 17 ||
		    w->want2[i] != 0x77777777 ||
		    w->want3[i] != (i < 16 ? 0x3c3c3c3c : w->want1[i]) ||
		    w->want4[i] != 2 * w->want1[i])
			return -10;
	if (gw_clear(fd, w))
		return -11;
	return 0;
}

/* A restored file: the same graphs under the same handles, the same bytes. */
static int gw_check(int fd, const struct gworld *w)
{
	static uint32_t got[GW];
	struct snpu_ctx_query u;
	uint32_t h;

	/* The definitions, charged as their creates were; no instance yet. */
	if (snpu_ctx_query(fd, &u) || u.graphs != 2 ||
	    u.graph_mem != w->usage.graph_mem)
		return 1;
	/* The destroyed handle is not a graph; the others are. */
	if (g_destroy(fd, w->g_gone) != -ENOENT)
		return 2;
	if (gw_run(fd, w))
		return 3;
	if (snpu_d2h(fd, got, w->out1, GB) || memcmp(got, w->want1, GB))
		return 4;
	if (snpu_d2h(fd, got, w->out2, GB) || memcmp(got, w->want2, GB))
		return 5;
	if (snpu_d2h(fd, got, w->out3, GB) || memcmp(got, w->want3, GB))
		return 6;
	if (snpu_d2h(fd, got, w->out4, GB) || memcmp(got, w->want4, GB))
		return 7;
	/* Again (instances reused), and a new graph gets a new handle. */
	if (gw_clear(fd, w) || gw_run(fd, w) ||
	    snpu_d2h(fd, got, w->out3, GB) || memcmp(got, w->want3, GB))
		return 8;
	if (gw_flat(fd, &h) || h <= w->g_flat)
		return 9;
	/* Graphs go like any: destroyed, they no longer launch. */
	if (g_destroy(fd, w->g_main) ||
	    g_launch(fd, w->s1, w->g_main, &w->in, 1, w->scratch, NULL) !=
	    -ENOENT)
		return 10;
	return 0;
}

/* In a new process: open @path, restore context 0 of @img, check it. */
static int grestore_in_child(const char *path, int img, const struct gworld *w)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd, ret;

		fd = open_dev(path);
		if (fd < 0)
			_exit(98);
		ret = ckpt_restore(fd, img, 0, NULL);
		if (ret)
			_exit(100 + (-ret & 0x7f));
		_exit(gw_check(fd, w));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Make, checkpoint, close, restore on @path in a new process: its status. */
static int graph_roundtrip(const char *path, bool close_first)
{
	static struct gworld w;
	int fd, img, ret;

	fd = open_dev(DEV0);
	if (fd < 0)
		return 90;
	ret = gw_make(fd, &w);
	if (ret)
		return 60 - ret;
	img = checkpoint_self(fd, NULL);
	if (img < 0)
		return 80 + (-img & 0xf);
	if (close_first)
		close(fd);
	ret = grestore_in_child(path, img, &w);
	if (!close_first)
		close(fd);
	close(img);
	return ret;
}

TEST(graph_roundtrip_into_new_process)
{
	EXPECT_EQ(0, graph_roundtrip(DEV0, true));
}

TEST(graph_roundtrip_as_nobody)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (snpu_drop_to_nobody())
			_exit(99);
		_exit(graph_roundtrip(DEV0, true));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* The device map: graphs of a file of snpu0 rebuilt on snpu1. */
TEST(graph_restore_onto_other_device)
{
	EXPECT_EQ(0, graph_roundtrip(DEV1, false));
}

/*
 * A graph launch still running at checkpoint (a SPIN node, a test hook):
 * the checkpoint waits for it, and its definition is in the image.
 */
TEST(graph_in_flight_is_drained_at_checkpoint)
{
	struct snpu_stream_query q;
	struct snpu_ckpt_proc out;
	struct gdef g;
	uint32_t s, h;
	int fd, img;

	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, g_init(&g, 0, NULL, 0));
	ASSERT_LE(0, g_spin(&g, 20 * 1000 * 1000, 1));
	ASSERT_EQ(0, g_create(fd, &g, &h));
	g_free(&g);
	/* Launched and not waited for: the checkpoint waits for it. */
	ASSERT_EQ(0, g_launch(fd, s, h, NULL, 0, 0, NULL));
	img = memfd_create("img", MFD_CLOEXEC);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_LOCK, 0, -1, NULL));
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_CHECKPOINT, 0, img, &out));
	ASSERT_EQ(0, ckpt_proc(fd, SNPU_CKPT_OP_UNLOCK, 0, -1, NULL));
	ASSERT_EQ(0, snpu_stream_query(fd, s, &q));
	EXPECT_EQ(1ULL, q.completed);
	close(fd);
	fd = open_dev(DEV0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ckpt_restore(fd, img, 0, NULL));
	ASSERT_EQ(0, g_launch(fd, s, h, NULL, 0, 0, NULL));
	EXPECT_EQ(0, snpu_stream_sync(fd, s, -1, NULL));
	close(fd);
	close(img);
}

/* ---- corrupt GRAPH chunks ----------------------------------------------- */

FIXTURE(gcorrupt) {
	struct image im;
	struct gworld w;
	unsigned int graph;	/* chunk of the first GRAPH (g_main) */
	int fd;
};

FIXTURE_SETUP(gcorrupt)
{
	struct snpu_ckpt_chunk c;
	unsigned int i;
	int img;

	self->fd = open_dev(DEV0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, gw_make(self->fd, &self->w));
	img = checkpoint_self(self->fd, NULL);
	ASSERT_LE(0, img);
	ASSERT_EQ(0, read_image(img, &self->im));
	close(img);
	/*
	 * CTX, 7 x (MEM, DATA), 2 STREAM, EVENT, then the graphs last:
	 * GRAPH, DATA (main), GRAPH, DATA (flat), END.
	 */
	ASSERT_EQ(1u + 14 + 3 + 4 + 1, self->im.chunks);
	self->graph = self->im.chunks - 5;
	for (i = self->graph; i < self->im.chunks - 1; i++) {
		memcpy(&c, self->im.p + self->im.at[i], sizeof(c));
		EXPECT_EQ((i - self->graph) % 2 ? (uint32_t)SNPU_CKPT_DATA :
			  (uint32_t)SNPU_CKPT_GRAPH, c.type) TH_LOG("chunk %u", i);
	}
}

FIXTURE_TEARDOWN(gcorrupt)
{
	free(self->im.p);
	close(self->fd);
}

static struct snpu_ckpt_graph *grec(struct image *im, unsigned int i)
{
	return (void *)(im->p + im->at[i] + sizeof(struct snpu_ckpt_chunk));
}

/* The nodes of the definition in the DATA chunk @i. */
static struct snpu_graph_node *gnodes(struct image *im, unsigned int i)
{
	return (void *)(im->p + im->at[i] + sizeof(struct snpu_ckpt_chunk) +
			sizeof(struct snpu_ckpt_data));
}

TEST_F(gcorrupt, whole_image_restores)
{
	bool clean;

	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
	EXPECT_FALSE(clean);
}

TEST_F(gcorrupt, graph_chunks_truncated_are_enodata)
{
	struct snpu_ckpt_chunk c;
	unsigned int i;
	bool clean;

	for (i = self->graph; i < self->im.chunks; i++) {
		memcpy(&c, self->im.p + self->im.at[i], sizeof(c));
		EXPECT_EQ(-ENODATA, try_image(self->im.p, self->im.at[i] + 7,
					      &clean)) TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
		EXPECT_EQ(-ENODATA,
			  try_image(self->im.p, self->im.at[i] + sizeof(c) +
				    c.len / 2, &clean)) TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
	}
}

TEST_F(gcorrupt, graph_chunks_crc_is_ebadmsg)
{
	unsigned int i;
	bool clean;

	for (i = self->graph; i < self->im.chunks - 1; i++) {
		/* A byte in the middle of the chunk's payload. */
		size_t mid = self->im.at[i] + sizeof(struct snpu_ckpt_chunk) +
			     8;

		self->im.p[mid] ^= 0x01;
		EXPECT_EQ(-EBADMSG, try_image(self->im.p, self->im.n, &clean))
			TH_LOG("chunk %u", i);
		EXPECT_TRUE(clean);
		self->im.p[mid] ^= 0x01;
	}
}

/* A GRAPH record out of range (CRC fixed): refused by the validator. */
TEST_F(gcorrupt, graph_record_out_of_range_is_eproto)
{
	struct snpu_ckpt_graph *r = grec(&self->im, self->graph);
	struct snpu_ckpt_graph keep = *r;
	bool clean;

	r->nodes = SNPU_GRAPH_MAX_NODES + 1;
	fix_chunk_crc(&self->im, self->graph);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	*r = keep;
	r->def_bytes += 4;
	fix_chunk_crc(&self->im, self->graph);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	*r = keep;
	r->slots = 2;		/* a slot without an extent */
	fix_chunk_crc(&self->im, self->graph);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	*r = keep;
	fix_chunk_crc(&self->im, self->graph);
	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
}

/*
 * A definition that passes the validator and the CRC, but that the create
 * ioctl refuses: the rebuild refuses it too, and the graphs, streams and
 * memory made before it are gone.
 */
TEST_F(gcorrupt, definition_the_create_refuses_is_eproto)
{
	unsigned int d = self->graph + 1;
	struct snpu_graph_node *n = gnodes(&self->im, d);
	struct snpu_graph_node keep[2];
	uint32_t *fanin;
	bool clean;

	memcpy(keep, n, sizeof(keep));
	/* A node that is no task a graph takes. */
	n[0].task.op = SNPU_OP_EVENT_RECORD;
	fix_chunk_crc(&self->im, d);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	memcpy(n, keep, sizeof(keep));
	/* A plain address outside the restored memory. */
	n[1].task.launch.args[0].value += 1ULL << 30;
	fix_chunk_crc(&self->im, d);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	memcpy(n, keep, sizeof(keep));
	/* A slot offset past the slot's extent. */
	n[0].task.copy.src = GB;
	fix_chunk_crc(&self->im, d);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	memcpy(n, keep, sizeof(keep));
	/* An edge from a later node: a cycle could close. */
	fanin = (uint32_t *)(n + 5) + 6;
	EXPECT_EQ(0u, fanin[0]);
	fanin[0] = 4;
	fix_chunk_crc(&self->im, d);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
	fanin[0] = 0;
	fix_chunk_crc(&self->im, d);
	EXPECT_EQ(0, try_image(self->im.p, self->im.n, &clean));
}

/*
 * The first graph under a stream's handle (still first in its phase, so
 * in order for the validator): the driver finds the handle taken.
 */
TEST_F(gcorrupt, graph_under_a_streams_handle_is_eproto)
{
	struct snpu_ckpt_graph *r = grec(&self->im, self->graph);
	bool clean;

	ASSERT_EQ(self->w.g_main, r->handle);
	r->handle = self->w.s2;
	fix_chunk_crc(&self->im, self->graph);
	EXPECT_EQ(-EPROTO, try_image(self->im.p, self->im.n, &clean));
	EXPECT_TRUE(clean);
}

TEST_HARNESS_MAIN
