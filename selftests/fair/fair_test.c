// SPDX-License-Identifier: GPL-2.0
/*
 * snpu fairness and progress on a shared device: one user cannot stall
 * another.
 *
 *   flood     another user (uid 65534, not root) floods several contexts
 *             and streams with the longest work it may ask for (SPIN at
 *             its bound, the largest block_dim, as many tasks as its quota
 *             takes, at normal priority); a victim in its own context
 *             still gets a small FILL done within 5 s, its close() with
 *             its own tasks queued returns within 2 s, and the flooding
 *             process, once killed, is reaped within 5 s. These are the
 *             bounds of issue 12 and the only timing the tests gate on.
 *   watchdog  the module parameter task_timeout_ms fails a task whose
 *             block runs past it with ETIMEDOUT and puts its stream in
 *             its error state; the blocks not started are dropped; time
 *             a task waits for cores does not count.
 *   sqpoll    kernel pollers are bounded per user and device, an
 *             unprivileged poller's idle spin is clamped, and a poller
 *             whose SQ waits for task slots sleeps until one frees.
 *   publish   a RING_SETUP that fails (its caller killed while the poller
 *             is being created) never showed its rings to ENTER or mmap.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * and the test kernels (SPIN) enabled; the unprivileged parts drop to
 * nobody (65534) themselves.
 */
#include <dirent.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define NOBODY		SNPU_TEST_NOBODY
#define PARAM_TIMEOUT		"/sys/module/snpu/parameters/task_timeout_ms"

/* The bounds the issue gives. */
#define VICTIM_FILL_NS		(5 * NS_PER_SEC)
#define VICTIM_CLOSE_NS		(2 * NS_PER_SEC)
#define REAP_NS			(5 * NS_PER_SEC)

/* The longest block any user may ask for: SPIN's bound (uapi header). */
#define SPIN_BOUND_NS		NS_PER_SEC

/* The flood: contexts x streams x tasks per stream. */
#define FLOOD_CTX		4
#define FLOOD_STREAMS		4
#define FLOOD_TASKS		8

/* Unprivileged pollers per user and device; clamp of their idle spin. */
#define USER_POLLERS		4
#define USER_IDLE_MS		100

/* ---- the flooding user --------------------------------------------------- */

/* (Re)fill a stream with the longest tasks; a failed one is reset first. */
static void flood_stream(int fd, uint32_t s, uint32_t blocks)
{
	struct snpu_stream_query q;
	struct snpu_task t[FLOOD_TASKS];
	unsigned int i;

	if (snpu_stream_query(fd, s, &q) ||
	    (q.submitted - q.completed >= FLOOD_TASKS / 2 && !q.error))
		return;
	if (q.error)
		snpu_stream_reset(fd, s);
	for (i = 0; i < FLOOD_TASKS; i++)
		t[i] = snpu_t_spin(s, SPIN_BOUND_NS, blocks);
	snpu_submit(fd, t, FLOOD_TASKS, NULL);
}

/*
 * The flooder's body, in a child: as nobody, open the contexts, fill
 * every stream, tell the parent through @ready, then keep every stream
 * full (the watchdog fails the tasks that run too long) until killed.
 */
static void __attribute__((noreturn)) flooder(int ready)
{
	uint32_t s[FLOOD_CTX][FLOOD_STREAMS], blocks;
	int fd[FLOOD_CTX];
	struct snpu_info info;
	unsigned int c, i;
	char ok = 1;

	if (snpu_drop_to_nobody())
		_exit(2);
	for (c = 0; c < FLOOD_CTX; c++) {
		fd[c] = snpu_open_dev();
		if (fd[c] < 0)
			_exit(3);
		for (i = 0; i < FLOOD_STREAMS; i++)
			if (snpu_stream_create(fd[c], SNPU_PRIO_NORMAL,
					       &s[c][i]))
				_exit(4);
	}
	if (snpu_get_info(fd[0], &info))
		_exit(5);
	blocks = info.max_block_dim;
	for (c = 0; c < FLOOD_CTX; c++)
		for (i = 0; i < FLOOD_STREAMS; i++)
			if (snpu_submit1(fd[c], snpu_t_spin(s[c][i],
							    SPIN_BOUND_NS,
							    blocks)))
				_exit(6);
	if (write(ready, &ok, 1) != 1)
		_exit(7);
	for (;;) {
		for (c = 0; c < FLOOD_CTX; c++)
			for (i = 0; i < FLOOD_STREAMS; i++)
				flood_stream(fd[c], s[c][i], blocks);
		usleep(20000);
	}
}

/* Return: the flooder's pid once its work is queued, or -errno. */
static pid_t flood_start(void)
{
	int p[2], err;
	pid_t pid;
	char ok;

	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!pid) {
		close(p[0]);
		flooder(p[1]);
	}
	close(p[1]);
	err = read(p[0], &ok, 1) == 1 ? 0 : -EIO;
	close(p[0]);
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return err;
	}
	return pid;
}

/*
 * Kill the flooder and reap it, waiting at most @bound_ns.
 * Return: 0, or -ETIMEDOUT when it was not reaped in time.
 */
static int flood_kill(pid_t pid, uint64_t bound_ns)
{
	uint64_t end = snpu_now_ns() + bound_ns;

	kill(pid, SIGKILL);
	while (snpu_now_ns() < end) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

FIXTURE(flood) {
	pid_t pid;
};

FIXTURE_SETUP(flood)
{
	self->pid = flood_start();
	ASSERT_GT(self->pid, 0) TH_LOG("flooder: %s", strerror(-self->pid));
}

FIXTURE_TEARDOWN(flood)
{
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
}

/* Kill the flooder: it is reaped within REAP_NS. */
static void flood_end(struct __test_metadata *_metadata,
		      FIXTURE_DATA(flood) *self)
{
	pid_t pid = self->pid;

	self->pid = 0;
	ASSERT_EQ(0, flood_kill(pid, REAP_NS))
		TH_LOG("the killed flooder was not reaped within 5 s");
}

/* The victim's small FILL completes within 5 s, and is right. */
TEST_F_TIMEOUT(flood, victim_fill_within_5s, 120)
{
	uint32_t s, got[1024];
	uint64_t buf, t0;
	int32_t err = 1;
	unsigned int i;
	int fd;

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(fd, sizeof(got), 0, &buf));
	t0 = snpu_now_ns();
	ASSERT_EQ(0, snpu_submit1(fd, snpu_t_fill(s, buf, sizeof(got),
						  0x5eed, 1)));
	ASSERT_EQ(0, snpu_stream_sync(fd, s, VICTIM_FILL_NS, &err))
		TH_LOG("the FILL did not complete within 5 s of a flood");
	TH_LOG("FILL done after %llu ms",
	       (unsigned long long)(snpu_now_ns() - t0) / NS_PER_MS);
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(fd, got, buf, sizeof(got)));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(0x5eedU, got[i]);
	close(fd);
	flood_end(_metadata, self);
}

/* The victim's close() with its own tasks queued returns within 2 s. */
TEST_F_TIMEOUT(flood, victim_close_within_2s, 120)
{
	struct snpu_task t[17];
	uint64_t buf, t0, ns;
	unsigned int i;
	uint32_t s;
	int fd;

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(fd, 4096, 0, &buf));
	t[0] = snpu_t_spin(s, SPIN_BOUND_NS, 4);
	for (i = 1; i < 17; i++)
		t[i] = snpu_t_fill(s, buf, 4096, i, 2);
	ASSERT_EQ(0, snpu_submit(fd, t, 17, NULL));
	t0 = snpu_now_ns();
	ASSERT_EQ(0, close(fd));
	ns = snpu_now_ns() - t0;
	TH_LOG("close took %llu ms", (unsigned long long)ns / NS_PER_MS);
	EXPECT_LE(ns, (uint64_t)VICTIM_CLOSE_NS)
		TH_LOG("close() with queued tasks took more than 2 s");
	flood_end(_metadata, self);
}

/* ---- watchdog ------------------------------------------------------------ */

static int param_rw(const char *path, char *old, size_t len, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (old) {
		n = read(fd, old, len - 1);
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		old[n] = 0;
	}
	n = pwrite(fd, val, strlen(val), 0);
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -errno;
}

FIXTURE(watchdog) {
	char old[32];
	bool set;
	int fd;
	uint32_t s;
};

FIXTURE_SETUP(watchdog)
{
	self->set = false;
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->s));
}

FIXTURE_TEARDOWN(watchdog)
{
	if (self->set)
		param_rw(PARAM_TIMEOUT, NULL, 0, self->old);
	close(self->fd);
}

static void watchdog_set(struct __test_metadata *_metadata,
			 FIXTURE_DATA(watchdog) *self, const char *ms)
{
	int ret = param_rw(PARAM_TIMEOUT, self->old, sizeof(self->old), ms);

	ASSERT_EQ(0, ret) TH_LOG("%s: %s", PARAM_TIMEOUT, strerror(-ret));
	self->set = true;
}

/* The default is documented: 10 s. */
TEST_F(watchdog, default_10s)
{
	char buf[32];
	int fd = open(PARAM_TIMEOUT, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	ASSERT_GE(fd, 0) TH_LOG("no parameter task_timeout_ms");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_GT(n, 0);
	buf[n] = 0;
	EXPECT_EQ(10000, atoi(buf));
}

/*
 * A task running past task_timeout_ms fails with ETIMEDOUT, whatever its
 * blocks would still do; its stream takes the error, the tasks behind it
 * are cancelled, and a reset makes the stream usable again.
 */
TEST_F_TIMEOUT(watchdog, spin_past_timeout_fails_etimedout, 60)
{
	struct snpu_stream_query q;
	uint32_t got[16];
	int32_t err = 0;
	unsigned int i;
	uint64_t buf;

	watchdog_set(_metadata, self, "200");
	ASSERT_EQ(0, snpu_alloc(self->fd, sizeof(got), 0, &buf));
	ASSERT_EQ(0, snpu_memset(self->fd, buf, 0, sizeof(got)));
	struct snpu_task t[2] = {
		/* 64 blocks of 1 s on a few cores: the first ones time
		 * out, the ones not started are dropped. */
		snpu_t_spin(self->s, SPIN_BOUND_NS, 64),
		snpu_t_fill(self->s, buf, sizeof(got), 0x77, 1),
	};
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, &err));
	EXPECT_EQ(-ETIMEDOUT, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, self->s, &q));
	EXPECT_EQ(-ETIMEDOUT, q.error);
	EXPECT_EQ(2U, q.completed);
	ASSERT_EQ(0, snpu_d2h(self->fd, got, buf, sizeof(got)));
	for (i = 0; i < 16; i++)
		EXPECT_EQ(0U, got[i]) TH_LOG("a task behind it ran");
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(self->s)));
	ASSERT_EQ(0, snpu_stream_reset(self->fd, self->s));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(self->s, buf,
							sizeof(got), 7, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, &err));
	EXPECT_EQ(0, err);
}

/*
 * The watchdog times blocks, not tasks: a task of 16 blocks of 100 ms per
 * core takes at least 1.6 s, past a 1 s timeout, but none of its blocks
 * holds a core that long, so it succeeds. (Timed from its first block, it
 * would fail: it spends most of that time waiting for cores.)
 */
TEST_F_TIMEOUT(watchdog, waiting_for_cores_is_not_running, 60)
{
	struct snpu_info info;
	int32_t err = 1;
	uint64_t t0;

	watchdog_set(_metadata, self, "1000");
	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	t0 = snpu_now_ns();
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_spin(self->s,
							100 * NS_PER_MS,
							16 * info.cores)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, &err));
	EXPECT_EQ(0, err);
	/* It really outlasted the timeout: the case is the one meant. */
	EXPECT_GT((int64_t)(snpu_now_ns() - t0), 1000 * NS_PER_MS);
}

/* A task that ends before the deadline is not touched. */
TEST_F(watchdog, task_within_timeout_succeeds)
{
	int32_t err = 1;

	watchdog_set(_metadata, self, "5000");
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_spin(self->s,
							10 * NS_PER_MS, 4)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->s, -1, &err));
	EXPECT_EQ(0, err);
}

/* ---- SQ pollers ---------------------------------------------------------- */

static int ring_setup(int fd, uint32_t flags, uint32_t idle_ms,
		      struct snpu_ring_setup *out)
{
	struct snpu_ring_setup s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	s.flags = flags;
	s.sq_entries = 8;
	s.idle_ms = idle_ms;
	ret = snpu_ioc(fd, SNPU_IOC_RING_SETUP, &s);
	if (!ret && out)
		*out = s;
	return ret;
}

struct ring {
	void *mem;
	size_t bytes;
	struct snpu_ring_setup s;
};

static int ring_map(int fd, uint32_t flags, uint32_t idle_ms, struct ring *r)
{
	int ret = ring_setup(fd, flags, idle_ms, &r->s);

	if (ret)
		return ret;
	r->bytes = r->s.mmap_bytes;
	r->mem = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      r->s.mmap_offset);
	return r->mem == MAP_FAILED ? -errno : 0;
}

static uint32_t *ring_word(struct ring *r, uint32_t off)
{
	return (uint32_t *)((char *)r->mem + off);
}

/*
 * Put @t in the SQ and publish it; wake the poller if it asks to be
 * (SNPU_SQ_NEED_WAKEUP: it went to sleep on an empty SQ, on a slow
 * machine even while the test was still queueing its work).
 */
static void ring_push(int fd, struct ring *r, const struct snpu_task *t)
{
	uint32_t tail = *ring_word(r, r->s.sq.tail);
	uint32_t mask = *ring_word(r, r->s.sq.mask);
	struct snpu_task *sqes = (void *)((char *)r->mem + r->s.sq.array);
	struct snpu_enter e = {
		.size = sizeof(e), .flags = SNPU_ENTER_SQ_WAKEUP,
	};

	sqes[tail & mask] = *t;
	__atomic_store_n(ring_word(r, r->s.sq.tail), tail + 1,
			 __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(ring_word(r, r->s.sq.flags), __ATOMIC_RELAXED) &
	    SNPU_SQ_NEED_WAKEUP)
		snpu_ioc(fd, SNPU_IOC_ENTER, &e);
}

/* Wait (forever) for one CQE and return its result. */
static int ring_reap(int fd, struct ring *r, int32_t *result)
{
	struct snpu_enter e = {
		.size = sizeof(e), .flags = SNPU_ENTER_GETEVENTS,
		.min_complete = 1, .timeout_ns = -1,
	};
	uint32_t head = *ring_word(r, r->s.cq.head);
	uint32_t mask = *ring_word(r, r->s.cq.mask);
	struct snpu_cqe *cqes = (void *)((char *)r->mem + r->s.cq.array);
	int ret = snpu_ioc(fd, SNPU_IOC_ENTER, &e);

	if (ret)
		return ret;
	*result = cqes[head & mask].result;
	__atomic_store_n(ring_word(r, r->s.cq.head), head + 1,
			 __ATOMIC_RELEASE);
	return 0;
}

/* A user without CAP_SYS_NICE runs at most 4 pollers on a device. */
TEST(sqpoll_pollers_per_user_bounded)
{
	int fd[USER_POLLERS + 1], i;

	ASSERT_EQ(0, snpu_drop_to_nobody());
	for (i = 0; i <= USER_POLLERS; i++) {
		fd[i] = snpu_open_dev();
		ASSERT_GE(fd[i], 0);
	}
	for (i = 0; i < USER_POLLERS; i++)
		ASSERT_EQ(0, ring_setup(fd[i], SNPU_RING_SQPOLL, 0, NULL));
	EXPECT_EQ(-EAGAIN, ring_setup(fd[USER_POLLERS], SNPU_RING_SQPOLL, 0,
				      NULL));
	/* Rings without a poller are not limited. */
	EXPECT_EQ(0, ring_setup(fd[USER_POLLERS], 0, 0, NULL));
	close(fd[USER_POLLERS]);
	fd[USER_POLLERS] = snpu_open_dev();
	ASSERT_GE(fd[USER_POLLERS], 0);
	/* A closed file's poller no longer counts. */
	close(fd[0]);
	EXPECT_EQ(0, ring_setup(fd[USER_POLLERS], SNPU_RING_SQPOLL, 0, NULL));
	for (i = 1; i <= USER_POLLERS; i++)
		close(fd[i]);
}

/* CAP_SYS_NICE (root here) is not bound by the per-user count. */
TEST(sqpoll_privileged_not_bounded)
{
	int fd[USER_POLLERS + 1], i;

	for (i = 0; i <= USER_POLLERS; i++) {
		fd[i] = snpu_open_dev();
		ASSERT_GE(fd[i], 0);
		ASSERT_EQ(0, ring_setup(fd[i], SNPU_RING_SQPOLL, 0, NULL));
	}
	for (i = 0; i <= USER_POLLERS; i++)
		close(fd[i]);
}

/*
 * An unprivileged poller asking for 10 s of idle spin gets 100 ms: after
 * its SQ goes empty it asks for a wake-up long before 10 s (the test
 * allows 2 s).
 */
TEST(sqpoll_unprivileged_idle_clamped)
{
	uint64_t buf, end;
	int32_t res = 1;
	struct ring r;
	uint32_t s;
	int fd;

	ASSERT_EQ(0, snpu_drop_to_nobody());
	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(fd, 4096, 0, &buf));
	ASSERT_EQ(0, ring_map(fd, SNPU_RING_SQPOLL, 10000, &r));
	struct snpu_task t = snpu_t_memset(s, buf, 1, 4096);

	ring_push(fd, &r, &t);
	ASSERT_EQ(0, ring_reap(fd, &r, &res));
	EXPECT_EQ(0, res);
	end = snpu_now_ns() + 2 * NS_PER_SEC;
	while (!(__atomic_load_n(ring_word(&r, r.s.sq.flags),
				 __ATOMIC_ACQUIRE) & SNPU_SQ_NEED_WAKEUP) &&
	       snpu_now_ns() < end)
		usleep(10000);
	EXPECT_NE(0UL, *ring_word(&r, r.s.sq.flags) & SNPU_SQ_NEED_WAKEUP)
		TH_LOG("the poller still spins 2 s after its SQ went empty");
	munmap(r.mem, r.bytes);
	close(fd);
}

FIXTURE(fair) {
	int unused;
};

FIXTURE_SETUP(fair)
{
}

FIXTURE_TEARDOWN(fair)
{
}

/* Voluntary context switches of the (only) poller thread of snpu0. */
static long long poller_switches(void)
{
	char path[300], buf[4096], *p;
	struct dirent *d;
	long long v = -1;
	DIR *dir = opendir("/proc");
	ssize_t n;
	int fd;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		if (strcmp(buf, "snpu0/sq\n"))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			break;
		buf[n] = 0;
		p = strstr(buf, "\nvoluntary_ctxt_switches:");
		if (p)
			v = atoll(p + strlen("\nvoluntary_ctxt_switches:"));
		break;
	}
	closedir(dir);
	return v;
}

/*
 * With every task slot taken (a callback nobody answers holds its stream)
 * a poller with SQEs left sleeps: it does not wake on a timer to retry.
 * A freed slot wakes it, and the SQE then completes.
 */
TEST_F_TIMEOUT(fair, sqpoll_sleeps_without_task_slots, 240)
{
	struct snpu_ctx_query cq;
	struct snpu_task *t;
	long long before, after;
	uint32_t s, s2;
	int32_t res = 1;
	uint64_t buf;
	struct ring r;
	unsigned int i;
	int fd;

	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_stream_create(fd, SNPU_PRIO_NORMAL, &s2));
	ASSERT_EQ(0, snpu_alloc(fd, 4096, 0, &buf));
	ASSERT_EQ(0, ring_map(fd, SNPU_RING_SQPOLL, 0, &r));
	/* The whole quota of tasks in flight, held up by a callback. */
	t = calloc(SNPU_TEST_TASKS, sizeof(*t));
	ASSERT_NE(NULL, t);
	t[0] = snpu_t_host_func(s, 1);
	for (i = 1; i < SNPU_TEST_TASKS; i++)
		t[i] = snpu_t_memset(s, buf, i & 0xff, 4);
	ASSERT_EQ(0, snpu_submit_all(fd, t, SNPU_TEST_TASKS));
	free(t);
	ASSERT_EQ(0, snpu_ctx_query(fd, &cq));
	ASSERT_EQ((uint32_t)SNPU_TEST_TASKS, cq.tasks);

	struct snpu_task m = snpu_t_memset(s2, buf, 0xab, 4);

	ring_push(fd, &r, &m);
	/* Let the poller find no slot and settle (idle is 100 ms). */
	usleep(500000);
	before = poller_switches();
	ASSERT_GE(before, 0) TH_LOG("no snpu0/sq thread");
	usleep(1000000);
	after = poller_switches();
	EXPECT_EQ(before, after)
		TH_LOG("the poller woke %lld times in 1 s with nothing it could do",
		       after - before);
	EXPECT_EQ(0U, *ring_word(&r, r.s.sq.head))
		TH_LOG("the SQE was consumed without a task slot");

	/* The callback's answer frees the slots: the SQE goes through. */
	ASSERT_EQ(0, snpu_callback_answer(fd, -1, 0, NULL));
	ASSERT_EQ(0, ring_reap(fd, &r, &res));
	EXPECT_EQ(0, res);
	ASSERT_EQ(0, snpu_stream_sync(fd, s, -1, NULL));
	munmap(r.mem, r.bytes);
	close(fd);
}

/* ---- RING_SETUP publishes only complete rings ---------------------------- */

/* The rings' mmap(2) offset, as RING_SETUP returns it. */
#define RING_MMAP_OFF		SNPU_RING_MMAP_OFFSET
#define PUBLISH_ROUNDS		400
#define PUBLISH_FAILED		40

struct racer {
	int fd;
	int running;
	int stop;
	unsigned int seen;	/* ENTER or mmap found rings */
	int err;		/* an errno other than ENXIO */
};

/* Use the file's rings in a loop: while it has none, all is ENXIO. */
static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	struct snpu_enter e;
	void *p;
	int ret;

	__atomic_store_n(&r->running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		memset(&e, 0, sizeof(e));
		e.size = sizeof(e);
		ret = snpu_ioc(r->fd, SNPU_IOC_ENTER, &e);
		if (!ret)
			r->seen++;
		else if (ret != -ENXIO)
			r->err = -ret;
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, r->fd,
			 (off_t)RING_MMAP_OFF);
		if (p != MAP_FAILED) {
			r->seen++;
			munmap(p, 4096);
		} else if (errno != ENXIO) {
			r->err = errno;
		}
	}
	return NULL;
}

/*
 * One round: a child sets up rings with a poller on a file it shares with
 * this process and is killed at a random moment, while a thread of this
 * process uses the file's rings. Return: 1 when the setup failed (the
 * file has no rings afterwards), 0 when it succeeded, or -errno; *@seen
 * gets what the thread found.
 */
static int publish_round(uint64_t *rng, unsigned int *seen, int *err)
{
	struct snpu_ring_setup s = {
		.size = sizeof(s), .sq_entries = 8, .flags = SNPU_RING_SQPOLL,
	};
	struct racer r = { 0 };
	uint64_t end;
	pthread_t th;
	int p[2], fd, ret;
	pid_t pid;
	char go;
	void *m;

	fd = snpu_open_dev();
	if (fd < 0)
		return fd;
	if (pipe(p)) {
		close(fd);
		return -errno;
	}
	r.fd = fd;
	if (pthread_create(&th, NULL, racer_fn, &r)) {
		close(fd);
		return -EAGAIN;
	}
	while (!__atomic_load_n(&r.running, __ATOMIC_ACQUIRE))
		;
	pid = fork();
	if (!pid) {
		close(p[0]);
		if (write(p[1], "g", 1) != 1)
			_exit(1);
		snpu_ioc(fd, SNPU_IOC_RING_SETUP, &s);
		_exit(0);
	}
	close(p[1]);
	ret = pid < 0 ? -errno : 0;
	if (!ret && read(p[0], &go, 1) == 1) {
		/* Somewhere in the call, or before or after it. */
		end = snpu_now_ns() + snpu_rand(rng) % 3000000;
		while (snpu_now_ns() < end)
			;
	}
	close(p[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	*seen = r.seen;
	*err = r.err;
	if (!ret) {
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
			 (off_t)RING_MMAP_OFF);
		if (m != MAP_FAILED)
			munmap(m, 4096);
		ret = m == MAP_FAILED;
	}
	close(fd);
	return ret;
}

/*
 * A setup that fails never showed its rings: another thread's ENTER and
 * mmap of the same file saw none while it ran (never rings that were
 * then freed under them). The poller is the last thing a setup creates;
 * its caller killed meanwhile makes it fail (EINTR).
 */
TEST_F_TIMEOUT(fair, ring_setup_failed_never_published, 300)
{
	unsigned int round, failed = 0, bad = 0, seen = 0;
	uint64_t rng = 0x5eed1234;
	int ret, err = 0;

	for (round = 0; round < PUBLISH_ROUNDS && failed < PUBLISH_FAILED;
	     round++) {
		ret = publish_round(&rng, &seen, &err);
		ASSERT_GE(ret, 0) TH_LOG("round %u: %s", round, strerror(-ret));
		ASSERT_EQ(0, err) TH_LOG("round %u: %s", round, strerror(err));
		if (ret) {
			failed++;
			bad += !!seen;
		}
	}
	TH_LOG("%u rounds, %u failed setups", round, failed);
	if (!failed)
		SKIP(return, "no setup failed: nothing checked");
	EXPECT_EQ(0U, bad)
		TH_LOG("%u of %u failed setups showed their rings", bad,
		       failed);
}

TEST_HARNESS_MAIN
