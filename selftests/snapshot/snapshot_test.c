// SPDX-License-Identifier: GPL-2.0
/*
 * snpu process snapshot through the raw ioctls (ABI 0.5): the state
 * machine RUNNING / LOCKED / BACKED_UP and every refused transition, the
 * argument checks, the state shared by every file of the process (two
 * files of one device, and two devices), the read-only state page, the
 * gate that blocks modifying calls of a locked process (real threads,
 * signals, ENTER and the kernel poller), background threads, backup and
 * restore of device memory and objects across a device reset (the
 * fault-injection knob <debugfs>/snpu/snpuN/reset), and processes that
 * die while locked.
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (devices=1). The test of two devices reloads the module with devices=2
 * and the parameters it had, and reloads it as it was afterwards.
 *
 * "Still blocked" is checked after a short wait (BLOCK_CHECK_NS): a call
 * that is wrongly not blocked completes well within it. "Completes" is
 * checked with a deadline far above what it needs (DONE_NS), so a slow
 * VM never makes a correct kernel fail.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define DEBUGFS			"/sys/kernel/debug"
#define BLOCK_CHECK_NS		(300 * NS_PER_MS)
#define DONE_NS			(20 * NS_PER_SEC)
#define LOCK_TIMEOUT_NS		(10 * NS_PER_SEC)
#define PAGE			4096

/* ---- snapshot calls ------------------------------------------------------ */

static void snap_arg(struct snpu_snapshot *s, int64_t timeout_ns)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->timeout_ns = timeout_ns;
}

/* One snapshot or BG command; *@out (if given) gets what it wrote. */
static int snap(int fd, unsigned long cmd, int64_t timeout_ns,
		struct snpu_snapshot *out)
{
	struct snpu_snapshot s;
	int ret;

	snap_arg(&s, timeout_ns);
	ret = snpu_ioc(fd, cmd, &s);
	if (out)
		*out = s;
	return ret;
}

static int snap_lock(int fd, int64_t timeout_ns)
{
	return snap(fd, SNPU_IOC_SNAPSHOT_LOCK, timeout_ns, NULL);
}

static int snap_backup(int fd, uint64_t *image_bytes)
{
	struct snpu_snapshot s;
	int ret = snap(fd, SNPU_IOC_SNAPSHOT_BACKUP, 0, &s);

	if (!ret && image_bytes)
		*image_bytes = s.image_bytes;
	return ret;
}

static int snap_restore(int fd)
{
	return snap(fd, SNPU_IOC_SNAPSHOT_RESTORE, 0, NULL);
}

static int snap_unlock(int fd)
{
	return snap(fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, NULL);
}

/* Return: the process's SNPU_STATE_*, or -errno. */
static int snap_state(int fd)
{
	struct snpu_snapshot s;
	int ret = snap(fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s);

	return ret ? ret : (int)s.state;
}

/* The state page of @fd, mapped read-only; NULL on failure. */
static const struct snpu_state_page *map_state(int fd)
{
	void *p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
		       SNPU_STATE_MMAP_OFFSET);

	return p == MAP_FAILED ? NULL : p;
}

static uint32_t page_state(const struct snpu_state_page *sp)
{
	return __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE);
}

static uint32_t page_seq(const struct snpu_state_page *sp)
{
	return __atomic_load_n(&sp->seq, __ATOMIC_ACQUIRE);
}

/* ---- debugfs and sysfs ----------------------------------------------------- */

/* Mount debugfs at /sys/kernel/debug unless the reset knob is there. */
static int debugfs_ready(unsigned int dev)
{
	char path[128];

	snprintf(path, sizeof(path), DEBUGFS "/snpu/snpu%u/reset", dev);
	if (!access(path, W_OK))
		return 0;
	if (mount("debugfs", DEBUGFS, "debugfs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(path, W_OK) ? -errno : 0;
}

/* The fault-injection reset of /dev/snpu@dev: wipe memory, fail streams. */
static int dev_reset(unsigned int dev)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), DEBUGFS "/snpu/snpu%u/reset", dev);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1\n", 2) != 2)
		ret = -errno;
	close(fd);
	return ret;
}

static long long sysfs_val(const char *attr)
{
	long long v = -1;

	if (snpu_sysfs_read(attr, &v))
		return -1;
	return v;
}

/* ---- calls on other threads ---------------------------------------------- */

/*
 * One ioctl on a thread of its own: @ret, and @t_end (CLOCK_MONOTONIC)
 * when it returned; @done is set last.
 */
struct call {
	pthread_t th;
	int fd;
	unsigned long cmd;
	void *arg;
	int ret;
	uint64_t t_start;
	uint64_t t_end;
	atomic_int started;
	atomic_int done;
};

static void *call_fn(void *p)
{
	struct call *c = p;

	c->t_start = snpu_now_ns();
	atomic_store(&c->started, 1);
	c->ret = snpu_ioc(c->fd, c->cmd, c->arg);
	c->t_end = snpu_now_ns();
	atomic_store(&c->done, 1);
	return NULL;
}

static int call_start(struct call *c, int fd, unsigned long cmd, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->cmd = cmd;
	c->arg = arg;
	return -pthread_create(&c->th, NULL, call_fn, c);
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / NS_PER_SEC, ns % NS_PER_SEC };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait until *@flag is set, up to @ns. Return: whether it was set. */
static bool wait_flag(atomic_int *flag, int64_t ns)
{
	uint64_t end = snpu_now_ns() + ns;

	while (!atomic_load(flag)) {
		if (snpu_now_ns() > end)
			return false;
		sleep_ns(NS_PER_MS);
	}
	return true;
}

/* The call is running (started) and, after a while, still not done. */
static bool call_blocked(struct call *c)
{
	if (!wait_flag(&c->started, DONE_NS))
		return false;
	sleep_ns(BLOCK_CHECK_NS);
	return !atomic_load(&c->done);
}

static bool call_join(struct call *c, int64_t ns)
{
	if (!wait_flag(&c->done, ns))
		return false;
	pthread_join(c->th, NULL);
	return true;
}

static void mem_alloc_arg(struct snpu_mem_alloc *a, uint64_t bytes)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->bytes = bytes;
}

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t sig_count;

static void sig_handler(int sig)
{
	sig_count++;
}

static int sig_install(int sig, bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sig_count = 0;
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}

/* ---- the fixture ------------------------------------------------------------ */

FIXTURE(snap) {
	int fd;
};

FIXTURE_SETUP(snap)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
}

FIXTURE_TEARDOWN(snap)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- the state machine ---------------------------------------------------- */

TEST_F(snap, fresh_process_is_running)
{
	struct snpu_snapshot s;
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->fd, &info));
	EXPECT_EQ((uint32_t)SNPU_ABI_MINOR, info.abi_minor);
	EXPECT_NE(0ULL, info.caps & SNPU_CAP_SNAPSHOT);
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ((uint32_t)sizeof(s), s.size);
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	EXPECT_EQ(0U, s.bg_threads);
	EXPECT_EQ(0ULL, s.image_bytes);
	EXPECT_EQ((uint32_t)getpid(), s.pid);
}

TEST_F(snap, lock_unlock)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, LOCK_TIMEOUT_NS, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, s.state);
	EXPECT_EQ((uint32_t)getpid(), s.pid);
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	/* And again: the cycle repeats. */
	ASSERT_EQ(0, snap_lock(self->fd, -1));
	ASSERT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, lock_backup_restore_unlock)
{
	struct snpu_snapshot s;
	uint64_t a;

	ASSERT_EQ(0, snpu_alloc(self->fd, 8192, 0, &a));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_BACKED_UP, s.state);
	EXPECT_GE(s.image_bytes, 8192ULL);
	EXPECT_EQ(SNPU_STATE_BACKED_UP, snap_state(self->fd));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_RESTORE, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, s.state);
	/* The image stays until UNLOCK: it may be restored again. */
	EXPECT_GE(s.image_bytes, 8192ULL);
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	EXPECT_EQ(0ULL, s.image_bytes);
}

TEST_F(snap, backed_up_unlock)
{
	struct snpu_snapshot s;
	uint64_t bytes;

	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, &bytes));
	EXPECT_GT(bytes, 0ULL);
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(bytes, s.image_bytes);
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, s.state);
	/* The image went with the unlock. */
	EXPECT_EQ(0ULL, s.image_bytes);
}

TEST_F(snap, backup_twice_last_wins)
{
	const struct snpu_state_page *sp = map_state(self->fd);
	uint64_t a, b, first, second;
	uint32_t seq;

	ASSERT_NE(NULL, sp);
	ASSERT_EQ(0, snpu_alloc(self->fd, 3 * PAGE, 0, &a));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, &first));
	seq = page_seq(sp);
	ASSERT_EQ(0, snap_backup(self->fd, &second));
	EXPECT_EQ(SNPU_STATE_BACKED_UP, snap_state(self->fd));
	/* Same memory, same image size; BACKED_UP -> BACKED_UP is no step. */
	EXPECT_EQ(first, second);
	EXPECT_EQ(seq, page_seq(sp));
	ASSERT_EQ(0, snap_unlock(self->fd));

	/* More memory: the next image is bigger by at least that much. */
	ASSERT_EQ(0, snpu_alloc(self->fd, 5 * PAGE, 0, &b));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, &second));
	EXPECT_GE(second, first + 5 * PAGE);
	ASSERT_EQ(0, snap_unlock(self->fd));
}

/* A refused step: EBADFD, and neither the state nor its counter moved. */
#define EXPECT_REFUSED(fd, sp, cmd, timeout) do {			\
	int __before = snap_state(fd);					\
	uint32_t __seq = page_seq(sp);					\
									\
	EXPECT_EQ(-EBADFD, snap(fd, cmd, timeout, NULL))		\
		TH_LOG("%s in state %d", #cmd, __before);		\
	EXPECT_EQ(__before, snap_state(fd));				\
	EXPECT_EQ(__seq, page_seq(sp));					\
} while (0)

TEST_F(snap, refused_while_running)
{
	const struct snpu_state_page *sp = map_state(self->fd);

	ASSERT_NE(NULL, sp);
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_BACKUP, 0);
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_RESTORE, 0);
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_UNLOCK, 0);
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
}

TEST_F(snap, refused_while_locked)
{
	const struct snpu_state_page *sp = map_state(self->fd);

	ASSERT_NE(NULL, sp);
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_LOCK, LOCK_TIMEOUT_NS);
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_LOCK, 0);
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_RESTORE, 0);
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	EXPECT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, refused_while_backed_up)
{
	const struct snpu_state_page *sp = map_state(self->fd);

	ASSERT_NE(NULL, sp);
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_LOCK, -1);
	EXPECT_EQ(SNPU_STATE_BACKED_UP, snap_state(self->fd));
	/* After RESTORE the process is LOCKED: a second RESTORE is refused. */
	ASSERT_EQ(0, snap_restore(self->fd));
	EXPECT_REFUSED(self->fd, sp, SNPU_IOC_SNAPSHOT_RESTORE, 0);
	EXPECT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, lock_timeout_zero_polls)
{
	/* Nothing to wait for: a zero timeout locks at once. */
	EXPECT_EQ(0, snap_lock(self->fd, 0));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	EXPECT_EQ(0, snap_unlock(self->fd));
}

/* ---- argument checks -------------------------------------------------------- */

static const unsigned long snap_cmds[] = {
	SNPU_IOC_SNAPSHOT_LOCK, SNPU_IOC_SNAPSHOT_BACKUP,
	SNPU_IOC_SNAPSHOT_RESTORE, SNPU_IOC_SNAPSHOT_UNLOCK,
	SNPU_IOC_SNAPSHOT_STATE, SNPU_IOC_BG_REGISTER,
	SNPU_IOC_BG_UNREGISTER, SNPU_IOC_BG_PARK,
};

#define NCMDS	(sizeof(snap_cmds) / sizeof(snap_cmds[0]))

TEST_F(snap, nonzero_fields_einval)
{
	const struct snpu_state_page *sp = map_state(self->fd);
	struct snpu_snapshot s;
	uint32_t seq;
	unsigned int i, f;

	ASSERT_NE(NULL, sp);
	seq = page_seq(sp);
	for (i = 0; i < NCMDS; i++) {
		/* state, bg_threads, image_bytes, pid: outputs, unchecked. */
		for (f = 0; f < 5; f++) {
			snap_arg(&s, 0);
			switch (f) {
			case 0: s.flags = 1; break;
			case 1: s.flags = 1U << 31; break;
			case 2: s.pad = 1; break;
			case 3: s.reserved[0] = 1; break;
			case 4: s.reserved[1] = 1ULL << 63; break;
			}
			EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, snap_cmds[i], &s))
				TH_LOG("command %u, field case %u", i, f);
		}
	}
	/* Nothing was done: no registration, no transition. */
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	EXPECT_EQ(seq, page_seq(sp));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(0U, s.bg_threads);
}

TEST_F(snap, timeout_only_for_lock)
{
	struct snpu_snapshot s;
	unsigned int i;

	for (i = 1; i < NCMDS; i++) {
		EXPECT_EQ(-EINVAL, snap(self->fd, snap_cmds[i], 1, NULL))
			TH_LOG("command %u with a timeout", i);
		EXPECT_EQ(-EINVAL, snap(self->fd, snap_cmds[i], -1, NULL))
			TH_LOG("command %u with timeout -1", i);
	}
	/* LOCK: -1 is for ever, below that is refused. */
	EXPECT_EQ(-EINVAL, snap_lock(self->fd, -2));
	EXPECT_EQ(-EINVAL, snap_lock(self->fd, INT64_MIN));
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(0U, s.bg_threads);
}

TEST_F(snap, size_rules)
{
	struct {
		struct snpu_snapshot s;
		uint64_t extra;
	} big;
	struct snpu_snapshot s;

	snap_arg(&s, 0);
	s.size = SNPU_SNAPSHOT_SIZE_VER0 - 8;
	EXPECT_EQ(-EINVAL, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &s));
	/* A bigger struct with zeros past the kernel's is fine... */
	memset(&big, 0, sizeof(big));
	big.s.size = sizeof(big);
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &big));
	EXPECT_EQ((uint32_t)sizeof(s), big.s.size);
	/* ... non-zero bytes there are not. */
	memset(&big, 0, sizeof(big));
	big.s.size = sizeof(big);
	big.extra = 1;
	EXPECT_EQ(-E2BIG, snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_LOCK, &big));
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
}

/* ---- one state per process -------------------------------------------------- */

TEST_F(snap, shared_by_every_file)
{
	const struct snpu_state_page *sp2;
	int fd2 = snpu_open_dev();
	struct call c;
	struct snpu_mem_alloc a;

	ASSERT_GE(fd2, 0);
	sp2 = map_state(fd2);
	ASSERT_NE(NULL, sp2);
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(fd2));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, page_state(sp2));
	/* The locker gets EDEADLK on the other file too. */
	mem_alloc_arg(&a, PAGE);
	EXPECT_EQ(-EDEADLK, snpu_ioc(fd2, SNPU_IOC_MEM_ALLOC, &a));
	/* Another thread's call on the other file blocks. */
	mem_alloc_arg(&a, PAGE);
	ASSERT_EQ(0, call_start(&c, fd2, SNPU_IOC_MEM_ALLOC, &a));
	EXPECT_TRUE(call_blocked(&c));
	/* Any file may make the next step. */
	ASSERT_EQ(0, snap_backup(fd2, NULL));
	EXPECT_EQ(SNPU_STATE_BACKED_UP, snap_state(self->fd));
	ASSERT_EQ(0, snap_unlock(fd2));
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(0, snpu_mem_query(fd2, a.addr, NULL, NULL));
	close(fd2);
}

TEST_F(snap, last_close_unlocks)
{
	int fd2 = snpu_open_dev();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, snap_lock(fd2, LOCK_TIMEOUT_NS));
	/* One file left: still locked. */
	close(fd2);
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	close(self->fd);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	/* The state went with the last file: a new file starts RUNNING. */
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
}

/* ---- the state page ---------------------------------------------------------- */

TEST_F(snap, state_page_follows_transitions)
{
	const struct snpu_state_page *sp = map_state(self->fd);
	uint32_t seq;

	ASSERT_NE(NULL, sp) TH_LOG("mmap: %s", strerror(errno));
	seq = page_seq(sp);
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, page_state(sp));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, page_state(sp));
	EXPECT_EQ(seq + 1, page_seq(sp));
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	EXPECT_EQ((uint32_t)SNPU_STATE_BACKED_UP, page_state(sp));
	EXPECT_EQ(seq + 2, page_seq(sp));
	ASSERT_EQ(0, snap_restore(self->fd));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, page_state(sp));
	EXPECT_EQ(seq + 3, page_seq(sp));
	ASSERT_EQ(0, snap_unlock(self->fd));
	EXPECT_EQ((uint32_t)SNPU_STATE_RUNNING, page_state(sp));
	EXPECT_EQ(seq + 4, page_seq(sp));
	EXPECT_EQ(0, munmap((void *)sp, PAGE));
}

TEST_F(snap, state_page_write_eperm)
{
	void *p;

	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 SNPU_STATE_MMAP_OFFSET);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 SNPU_STATE_MMAP_OFFSET);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* A read-only mapping cannot be made writable afterwards. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
		 SNPU_STATE_MMAP_OFFSET);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_NE(0, mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, PAGE));
}

TEST_F(snap, state_page_wrong_size_einval)
{
	void *p;

	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd,
		 SNPU_STATE_MMAP_OFFSET);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, 2 * PAGE);
}

/* ---- the gate ---------------------------------------------------------------- */

TEST_F(snap, alloc_blocks_until_unlock)
{
	struct snpu_mem_alloc a;
	struct snpu_ctx_query q;
	uint64_t t_unlock;
	struct call c;

	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	mem_alloc_arg(&a, 3 * PAGE);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_MEM_ALLOC, &a));
	ASSERT_TRUE(call_blocked(&c));
	/* Nothing was allocated while it waits. */
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0ULL, q.mem_used);
	t_unlock = snpu_now_ns();
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	EXPECT_EQ(0, c.ret);
	EXPECT_GE(c.t_end, t_unlock);
	EXPECT_EQ(0, snpu_mem_query(self->fd, a.addr, NULL, NULL));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(3ULL * PAGE, q.mem_used);
}

TEST_F(snap, other_modifying_calls_block)
{
	struct snpu_stream_create sc = { .size = sizeof(sc) };
	struct snpu_task t = snpu_t_nop(0);
	struct snpu_submit sub = {
		.size = sizeof(sub), .count = 1, .task_size = sizeof(t),
		.tasks = (uintptr_t)&t,
	};
	struct call c[2];
	uint32_t s;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	t.stream = s;
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, call_start(&c[0], self->fd, SNPU_IOC_STREAM_CREATE, &sc));
	ASSERT_EQ(0, call_start(&c[1], self->fd, SNPU_IOC_SUBMIT, &sub));
	EXPECT_TRUE(call_blocked(&c[0]));
	EXPECT_TRUE(call_blocked(&c[1]));
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(call_join(&c[0], DONE_NS));
	ASSERT_TRUE(call_join(&c[1], DONE_NS));
	EXPECT_EQ(0, c[0].ret);
	EXPECT_EQ(0, c[1].ret);
	EXPECT_EQ(0, snpu_stream_sync(self->fd, s, DONE_NS, NULL));
}

TEST_F(snap, locker_gets_edeadlk)
{
	struct snpu_stream_create sc = { .size = sizeof(sc) };
	struct snpu_ring_setup rs = {
		.size = sizeof(rs), .sq_entries = 4,
	};
	struct snpu_ctx_query before, after;
	struct snpu_mem_alloc a;
	uint8_t buf[64] = { 0 };
	uint32_t s, h;
	uint64_t addr, off;

	ASSERT_EQ(0, snpu_alloc(self->fd, PAGE, 0, &addr));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &before));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	mem_alloc_arg(&a, PAGE);
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_MEM_ALLOC, &a));
	EXPECT_EQ(-EDEADLK, snpu_free(self->fd, addr));
	EXPECT_EQ(-EDEADLK, snpu_h2d(self->fd, addr, buf, sizeof(buf)));
	EXPECT_EQ(-EDEADLK, snpu_d2h(self->fd, buf, addr, sizeof(buf)));
	EXPECT_EQ(-EDEADLK, snpu_memset(self->fd, addr, 1, sizeof(buf)));
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_STREAM_CREATE, &sc));
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_EVENT_CREATE, &sc));
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_OWNER_CREATE, &sc));
	EXPECT_EQ(-EDEADLK, snpu_stream_destroy(self->fd, s, 0));
	EXPECT_EQ(-EDEADLK, snpu_stream_abort(self->fd, s));
	EXPECT_EQ(-EDEADLK, snpu_stream_reset(self->fd, s));
	EXPECT_EQ(-EDEADLK, snpu_submit1(self->fd, snpu_t_nop(s)));
	EXPECT_EQ(-EDEADLK, snpu_host_alloc(self->fd, PAGE, &h, &off));
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &rs));
	/* Also when backed up. */
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_MEM_ALLOC, &a));
	EXPECT_EQ(-EDEADLK, snpu_submit1(self->fd, snpu_t_nop(s)));
	ASSERT_EQ(0, snap_unlock(self->fd));
	/* Nothing of it happened. */
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &after));
	EXPECT_EQ(before.mem_used, after.mem_used);
	EXPECT_EQ(before.streams, after.streams);
	EXPECT_EQ(before.events, after.events);
	EXPECT_EQ(before.host_used, after.host_used);
	EXPECT_EQ(0, snpu_mem_query(self->fd, addr, NULL, NULL));
	/* And everything works again. */
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(s)));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, s, DONE_NS, NULL));
}

/* The queries of a locked process, made by a thread that did not lock. */
struct queries {
	int fd;
	uint64_t addr;
	uint32_t stream, event;
	int ret[10];
	atomic_int done;
};

static void *queries_fn(void *p)
{
	struct queries *q = p;
	struct snpu_stream_query sq;
	struct snpu_event_query eq;
	struct snpu_ctx_query cq;
	struct snpu_info info;
	struct snpu_snapshot s;
	struct snpu_callback cb;
	int n = 0;

	q->ret[n++] = snpu_get_info(q->fd, &info);
	q->ret[n++] = snpu_ctx_query(q->fd, &cq);
	q->ret[n++] = snpu_mem_query(q->fd, q->addr, NULL, NULL);
	q->ret[n++] = snpu_stream_query(q->fd, q->stream, &sq);
	q->ret[n++] = snpu_stream_sync(q->fd, q->stream, DONE_NS, NULL);
	q->ret[n++] = snpu_event_query(q->fd, q->event, &eq);
	q->ret[n++] = snpu_event_sync(q->fd, q->event, DONE_NS, NULL);
	q->ret[n++] = snap(q->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s);
	q->ret[n++] = snpu_ioc(q->fd, SNPU_IOC_NOP, NULL);
	/* No callback is pending: a zero timeout polls. */
	q->ret[n++] = snpu_callback_wait(q->fd, 0, &cb) == -ETIMEDOUT ? 0 : -1;
	atomic_store(&q->done, 1);
	return NULL;
}

TEST_F(snap, queries_do_not_block)
{
	struct queries q = { .fd = self->fd };
	pthread_t th;
	unsigned int i;

	ASSERT_EQ(0, snpu_alloc(self->fd, PAGE, 0, &q.addr));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &q.stream));
	ASSERT_EQ(0, snpu_event_create(self->fd, &q.event));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(q.stream, q.event)));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, pthread_create(&th, NULL, queries_fn, &q));
	ASSERT_TRUE(wait_flag(&q.done, DONE_NS));
	pthread_join(th, NULL);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, q.ret[i]) TH_LOG("query %u", i);
	/* The same from the locking thread (not EDEADLK). */
	memset(q.ret, 0xff, sizeof(q.ret));
	atomic_store(&q.done, 0);
	queries_fn(&q);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, q.ret[i]) TH_LOG("query %u from the locker", i);
	ASSERT_EQ(0, snap_unlock(self->fd));
}

/* Signal @c's thread every 20 ms until it is done or @ns passed. */
static bool signal_until_done(struct call *c, int64_t ns)
{
	uint64_t end = snpu_now_ns() + ns;

	while (!atomic_load(&c->done)) {
		if (snpu_now_ns() > end)
			return false;
		pthread_kill(c->th, SIGUSR1);
		sleep_ns(20 * NS_PER_MS);
	}
	pthread_join(c->th, NULL);
	return true;
}

TEST_F(snap, signal_interrupts_blocked_alloc)
{
	struct snpu_mem_alloc a;
	struct snpu_ctx_query q;
	struct call c;

	ASSERT_EQ(0, sig_install(SIGUSR1, false));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	mem_alloc_arg(&a, PAGE);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_MEM_ALLOC, &a));
	ASSERT_TRUE(call_blocked(&c));
	ASSERT_TRUE(signal_until_done(&c, DONE_NS));
	EXPECT_EQ(-EINTR, c.ret);
	EXPECT_GT(sig_count, 0);
	/* Still locked, and nothing was allocated. */
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0ULL, q.mem_used);
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0ULL, q.mem_used);
}

TEST_F(snap, signal_with_sa_restart_restarts)
{
	struct snpu_mem_alloc a;
	uint64_t t_unlock;
	struct call c;
	int i;

	ASSERT_EQ(0, sig_install(SIGUSR1, true));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	mem_alloc_arg(&a, PAGE);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_MEM_ALLOC, &a));
	ASSERT_TRUE(call_blocked(&c));
	for (i = 0; i < 5; i++) {
		pthread_kill(c.th, SIGUSR1);
		sleep_ns(20 * NS_PER_MS);
	}
	sleep_ns(BLOCK_CHECK_NS);
	EXPECT_GT(sig_count, 0);
	/* The handler ran, the call went back to waiting. */
	EXPECT_FALSE(atomic_load(&c.done));
	t_unlock = snpu_now_ns();
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	EXPECT_EQ(0, c.ret);
	EXPECT_GE(c.t_end, t_unlock);
	EXPECT_EQ(0, snpu_mem_query(self->fd, a.addr, NULL, NULL));
}

TEST_F(snap, locker_thread_gone_other_thread_unlocks)
{
	struct call c;
	struct snpu_snapshot s;

	/* Lock on a thread that then exits; the process stays locked. */
	snap_arg(&s, LOCK_TIMEOUT_NS);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	/* Any thread of the process may unlock. */
	EXPECT_EQ(0, snap_unlock(self->fd));
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
}

/* ---- the command queues ----------------------------------------------------- */

struct rring {
	void *mem;
	size_t bytes;
	struct snpu_ring_setup s;
};

#define RU32(r, off)	((uint32_t *)((char *)(r)->mem + (off)))

static int rring_setup(int fd, uint32_t flags, struct rring *r)
{
	memset(r, 0, sizeof(*r));
	r->s.size = sizeof(r->s);
	r->s.flags = flags;
	r->s.sq_entries = 8;
	r->s.idle_ms = flags & SNPU_RING_SQPOLL ? 10 : 0;
	if (ioctl(fd, SNPU_IOC_RING_SETUP, &r->s))
		return -errno;
	r->bytes = r->s.mmap_bytes;
	r->mem = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      r->s.mmap_offset);
	return r->mem == MAP_FAILED ? -errno : 0;
}

static uint32_t rring_sq_head(struct rring *r)
{
	return __atomic_load_n(RU32(r, r->s.sq.head), __ATOMIC_ACQUIRE);
}

static void rring_push(struct rring *r, const struct snpu_task *t)
{
	uint32_t tail = *RU32(r, r->s.sq.tail);
	uint32_t mask = *RU32(r, r->s.sq.mask);
	struct snpu_task *sqes = (void *)((char *)r->mem + r->s.sq.array);

	sqes[tail & mask] = *t;
	__atomic_store_n(RU32(r, r->s.sq.tail), tail + 1, __ATOMIC_RELEASE);
}

/* The CQ's newest completions: how many there are. */
static uint32_t rring_cq_ready(struct rring *r)
{
	return __atomic_load_n(RU32(r, r->s.cq.tail), __ATOMIC_ACQUIRE) -
	       *RU32(r, r->s.cq.head);
}

static const struct snpu_cqe *rring_cqe(struct rring *r)
{
	const struct snpu_cqe *cqes = (void *)((char *)r->mem + r->s.cq.array);
	uint32_t head = *RU32(r, r->s.cq.head);

	return &cqes[head & *RU32(r, r->s.cq.mask)];
}

TEST_F(snap, enter_submission_blocks_while_locked)
{
	struct snpu_enter e;
	struct snpu_task t;
	struct rring r;
	struct call c;
	uint32_t s;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	ASSERT_EQ(0, rring_setup(self->fd, 0, &r));
	t = snpu_t_nop(s);
	t.user_data = 0x5eed;
	rring_push(&r, &t);
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	/* Waiting for completions is not gated. */
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	/* The locker's own submission: EDEADLK. */
	e.to_submit = 1;
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	/* Another thread's submission blocks and takes nothing. */
	memset(&e, 0, sizeof(e));
	e.size = sizeof(e);
	e.to_submit = 1;
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_ENTER, &e));
	EXPECT_TRUE(call_blocked(&c));
	EXPECT_EQ(0U, rring_sq_head(&r));
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(1U, e.submitted);
	EXPECT_EQ(1U, rring_sq_head(&r));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, DONE_NS, NULL));
	ASSERT_EQ(1U, rring_cq_ready(&r));
	EXPECT_EQ(0x5eedULL, rring_cqe(&r)->user_data);
	EXPECT_EQ(0, rring_cqe(&r)->result);
	munmap(r.mem, r.bytes);
}

TEST_F(snap, sqpoll_takes_nothing_while_locked)
{
	struct snpu_enter e = {
		.size = sizeof(e), .flags = SNPU_ENTER_SQ_WAKEUP,
	};
	uint64_t end;
	struct snpu_task t;
	struct rring r;
	uint32_t s;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	ASSERT_EQ(0, rring_setup(self->fd, SNPU_RING_SQPOLL, &r));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	t = snpu_t_nop(s);
	t.user_data = 77;
	rring_push(&r, &t);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Wake the poller: it must still leave the entry alone. */
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ENTER, &e));
	sleep_ns(BLOCK_CHECK_NS);
	EXPECT_EQ(0U, rring_sq_head(&r));
	EXPECT_EQ(0U, rring_cq_ready(&r));
	ASSERT_EQ(0, snap_unlock(self->fd));
	/* Unlocked: the poller takes it without another doorbell. */
	end = snpu_now_ns() + DONE_NS;
	while (rring_cq_ready(&r) < 1 && snpu_now_ns() < end)
		sleep_ns(NS_PER_MS);
	EXPECT_EQ(1U, rring_sq_head(&r));
	ASSERT_EQ(1U, rring_cq_ready(&r));
	EXPECT_EQ(77ULL, rring_cqe(&r)->user_data);
	EXPECT_EQ(0, rring_cqe(&r)->result);
	munmap(r.mem, r.bytes);
}

/* ---- background threads ----------------------------------------------------- */

TEST_F(snap, bg_register_unregister)
{
	struct snpu_snapshot s;

	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_BG_REGISTER, 0, &s));
	EXPECT_EQ(1U, s.bg_threads);
	EXPECT_EQ(-EEXIST, snap(self->fd, SNPU_IOC_BG_REGISTER, 0, NULL));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(1U, s.bg_threads);
	/* Running: parking returns at once. */
	EXPECT_EQ(0, snap(self->fd, SNPU_IOC_BG_PARK, 0, NULL));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_BG_UNREGISTER, 0, &s));
	EXPECT_EQ(0U, s.bg_threads);
	EXPECT_EQ(-ENOENT, snap(self->fd, SNPU_IOC_BG_UNREGISTER, 0, NULL));
}

TEST_F(snap, bg_park_unregistered_enoent)
{
	EXPECT_EQ(-ENOENT, snap(self->fd, SNPU_IOC_BG_PARK, 0, NULL));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	/* Also when locked: it would never be counted, so it must not wait. */
	EXPECT_EQ(-ENOENT, snap(self->fd, SNPU_IOC_BG_PARK, 0, NULL));
	ASSERT_EQ(0, snap_unlock(self->fd));
}

/* A background thread: registers, then loops until told to stop. */
struct bg {
	pthread_t th;
	int fd;
	atomic_int parks;		/* calls BG_PARK at its safe points */
	const struct snpu_state_page *sp;
	atomic_int tid;
	atomic_int registered;
	atomic_int stop;
	atomic_int in_park;		/* inside BG_PARK while not running */
	atomic_int parks_done;		/* BG_PARK calls that waited */
	int err;
};

static void *bg_fn(void *p)
{
	struct bg *b = p;

	b->err = snap(b->fd, SNPU_IOC_BG_REGISTER, 0, NULL);
	atomic_store(&b->tid, (int)syscall(SYS_gettid));
	atomic_store(&b->registered, 1);
	if (b->err)
		return NULL;
	while (!atomic_load(&b->stop)) {
		if (atomic_load(&b->parks) && page_state(b->sp) != SNPU_STATE_RUNNING) {
			atomic_store(&b->in_park, 1);
			b->err = snap(b->fd, SNPU_IOC_BG_PARK, 0, NULL);
			atomic_store(&b->in_park, 0);
			atomic_fetch_add(&b->parks_done, 1);
			if (b->err)
				break;
		}
		sleep_ns(NS_PER_MS);
	}
	return NULL;
}

static int bg_start(struct bg *b, int fd, bool parks)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->fd = fd;
	atomic_store(&b->parks, parks);
	b->sp = map_state(fd);
	if (!b->sp)
		return -errno;
	ret = pthread_create(&b->th, NULL, bg_fn, b);
	if (ret)
		return -ret;
	return wait_flag(&b->registered, DONE_NS) ? b->err : -ETIMEDOUT;
}

static void bg_stop(struct bg *b)
{
	atomic_store(&b->stop, 1);
	pthread_join(b->th, NULL);
}

TEST_F(snap, lock_waits_for_parking_bg_thread)
{
	struct snpu_snapshot s;
	struct bg b;

	ASSERT_EQ(0, bg_start(&b, self->fd, true));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, LOCK_TIMEOUT_NS,
			  &s));
	EXPECT_EQ(1U, s.bg_threads);
	/* LOCK returned: the thread is parked, and stays so. */
	EXPECT_EQ(1, atomic_load(&b.in_park));
	sleep_ns(BLOCK_CHECK_NS);
	EXPECT_EQ(1, atomic_load(&b.in_park));
	EXPECT_EQ(0, atomic_load(&b.parks_done));
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(wait_flag(&b.parks_done, DONE_NS));
	EXPECT_EQ(0, b.err);
	bg_stop(&b);
}

static bool task_gone(pid_t tid, int64_t ns);

/* Waits until the process is locked, then allocates (not registered). */
struct locked_alloc {
	int fd;
	const struct snpu_state_page *sp;
	struct snpu_mem_alloc a;
	int saw_locked;
	int ret;
	uint64_t t_end;
	atomic_int done;
};

static void *locked_alloc_fn(void *p)
{
	struct locked_alloc *w = p;
	uint64_t end = snpu_now_ns() + DONE_NS;

	while (page_state(w->sp) == SNPU_STATE_RUNNING && snpu_now_ns() < end)
		sched_yield();
	w->saw_locked = page_state(w->sp) != SNPU_STATE_RUNNING;
	mem_alloc_arg(&w->a, PAGE);
	w->ret = snpu_ioc(w->fd, SNPU_IOC_MEM_ALLOC, &w->a);
	w->t_end = snpu_now_ns();
	atomic_store(&w->done, 1);
	return NULL;
}

TEST_F(snap, lock_times_out_on_bg_thread_that_never_parks)
{
	const struct snpu_state_page *sp = map_state(self->fd);
	struct locked_alloc w;
	uint64_t t0, dt;
	pthread_t th;
	uint32_t seq;
	struct bg b;

	ASSERT_NE(NULL, sp);
	ASSERT_EQ(0, bg_start(&b, self->fd, false));
	seq = page_seq(sp);
	t0 = snpu_now_ns();
	EXPECT_EQ(-ETIMEDOUT, snap_lock(self->fd, 50 * NS_PER_MS));
	dt = snpu_now_ns() - t0;
	EXPECT_GE(dt, 50ULL * NS_PER_MS);
	/* Back to RUNNING: two transitions, LOCKED and back. */
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	EXPECT_EQ(seq + 2, page_seq(sp));

	/* A call that blocked during the attempt resumes when it fails. */
	memset(&w, 0, sizeof(w));
	w.fd = self->fd;
	w.sp = sp;
	ASSERT_EQ(0, pthread_create(&th, NULL, locked_alloc_fn, &w));
	t0 = snpu_now_ns();
	EXPECT_EQ(-ETIMEDOUT, snap_lock(self->fd, 500 * NS_PER_MS));
	ASSERT_TRUE(wait_flag(&w.done, DONE_NS));
	pthread_join(th, NULL);
	EXPECT_EQ(1, w.saw_locked);
	EXPECT_EQ(0, w.ret);
	EXPECT_GE(w.t_end, t0 + 500 * NS_PER_MS);
	EXPECT_EQ(0, snpu_mem_query(self->fd, w.a.addr, NULL, NULL));
	bg_stop(&b);
	/* The thread is gone without unregistering: it no longer counts. */
	ASSERT_TRUE(task_gone(atomic_load(&b.tid), DONE_NS));
	EXPECT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	EXPECT_EQ(0, snap_unlock(self->fd));
}

/*
 * A background thread that waits in a modifying call's gate: registers,
 * waits for the process to be locked, then allocates.
 */
struct bg_alloc {
	int fd;
	const struct snpu_state_page *sp;
	struct snpu_mem_alloc a;
	atomic_int registered;
	atomic_int saw_locked;
	atomic_int done;
	int ret;
	uint64_t t_end;
};

static void *bg_alloc_fn(void *p)
{
	struct bg_alloc *b = p;
	uint64_t end = snpu_now_ns() + DONE_NS;

	b->ret = snap(b->fd, SNPU_IOC_BG_REGISTER, 0, NULL);
	atomic_store(&b->registered, 1);
	if (b->ret)
		goto out;
	while (page_state(b->sp) == SNPU_STATE_RUNNING && snpu_now_ns() < end)
		sched_yield();
	atomic_store(&b->saw_locked, page_state(b->sp) != SNPU_STATE_RUNNING);
	mem_alloc_arg(&b->a, PAGE);
	b->ret = snpu_ioc(b->fd, SNPU_IOC_MEM_ALLOC, &b->a);
out:
	b->t_end = snpu_now_ns();
	atomic_store(&b->done, 1);
	return NULL;
}

TEST_F(snap, bg_thread_blocked_in_gate_counts_as_parked)
{
	struct bg_alloc b = { .fd = self->fd };
	uint64_t t_unlock;
	pthread_t th;

	b.sp = map_state(self->fd);
	ASSERT_NE(NULL, b.sp);
	ASSERT_EQ(0, pthread_create(&th, NULL, bg_alloc_fn, &b));
	ASSERT_TRUE(wait_flag(&b.registered, DONE_NS));
	ASSERT_EQ(0, b.ret);
	/* The thread never parks: its blocked allocation lets LOCK return. */
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	sleep_ns(BLOCK_CHECK_NS);
	EXPECT_EQ(1, atomic_load(&b.saw_locked));
	EXPECT_EQ(0, atomic_load(&b.done));
	t_unlock = snpu_now_ns();
	ASSERT_EQ(0, snap_unlock(self->fd));
	ASSERT_TRUE(wait_flag(&b.done, DONE_NS));
	pthread_join(th, NULL);
	EXPECT_EQ(0, b.ret);
	EXPECT_GE(b.t_end, t_unlock);
}

/* Wait until /proc/self/task has no entry for @tid. */
static bool task_gone(pid_t tid, int64_t ns)
{
	uint64_t end = snpu_now_ns() + ns;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	while (!access(path, F_OK)) {
		if (snpu_now_ns() > end)
			return false;
		sleep_ns(NS_PER_MS);
	}
	return true;
}

TEST_F(snap, dead_bg_thread_does_not_block_lock)
{
	struct snpu_snapshot s;
	struct bg b[2];
	int i;

	/* Two threads register, never park, exit without unregistering. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, bg_start(&b[i], self->fd, false));
		bg_stop(&b[i]);
		ASSERT_TRUE(task_gone(atomic_load(&b[i].tid), DONE_NS));
	}
	/* The second registration dropped the first thread's. */
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(1U, s.bg_threads);
	EXPECT_EQ(0, snap_lock(self->fd, 2 * NS_PER_SEC));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	/* And LOCK dropped the second's. */
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ(0U, s.bg_threads);
	EXPECT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, bg_thread_exit_during_lock_wakes_it)
{
	struct snpu_snapshot s;
	uint64_t t_exit;
	struct call c;
	struct bg b;

	/* A registered thread that never parks... */
	ASSERT_EQ(0, bg_start(&b, self->fd, false));
	/* ... while a LOCK waits for it ... */
	snap_arg(&s, 15 * NS_PER_SEC);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	ASSERT_TRUE(call_blocked(&c));
	/* ... exits: the LOCK completes without waiting for its timeout. */
	t_exit = snpu_now_ns();
	bg_stop(&b);
	ASSERT_TRUE(call_join(&c, 20 * NS_PER_SEC));
	EXPECT_EQ(0, c.ret);
	EXPECT_LT(c.t_end - t_exit, 5ULL * NS_PER_SEC)
		TH_LOG("LOCK returned %.3f s after the thread exited",
		       (c.t_end - t_exit) / 1e9);
	if (snap_state(self->fd) != SNPU_STATE_RUNNING)
		EXPECT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, lock_interrupted_by_signal_rolls_back)
{
	const struct snpu_state_page *sp = map_state(self->fd);
	struct snpu_snapshot s;
	uint32_t seq;
	struct call c;
	struct bg b;

	ASSERT_NE(NULL, sp);
	ASSERT_EQ(0, sig_install(SIGUSR1, true));
	ASSERT_EQ(0, bg_start(&b, self->fd, false));
	seq = page_seq(sp);
	snap_arg(&s, -1);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	ASSERT_TRUE(call_blocked(&c));
	/* Even with SA_RESTART: a LOCK is never restarted. */
	ASSERT_TRUE(signal_until_done(&c, DONE_NS));
	EXPECT_EQ(-EINTR, c.ret);
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	EXPECT_EQ(seq + 2, page_seq(sp));
	bg_stop(&b);
}

TEST_F(snap, lock_waits_for_modifying_call_in_progress)
{
	struct snpu_handle_op op = { .size = sizeof(op) };
	struct snpu_stream_query q;
	struct snpu_snapshot s;
	uint64_t ud;
	struct call d, l;
	uint32_t st;

	/* A stream held by a host callback: destroying it waits. */
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &st));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(st, 42)));
	op.handle = st;
	ASSERT_EQ(0, call_start(&d, self->fd, SNPU_IOC_STREAM_DESTROY, &op));
	ASSERT_TRUE(call_blocked(&d));
	/* LOCK waits for the destroy, which is in progress. */
	snap_arg(&s, LOCK_TIMEOUT_NS);
	ASSERT_EQ(0, call_start(&l, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	ASSERT_TRUE(call_blocked(&l));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	/* Answering the callback is not gated; the destroy then ends. */
	ASSERT_EQ(0, snpu_callback_answer(self->fd, DONE_NS, 0, &ud));
	EXPECT_EQ(42ULL, ud);
	/*
	 * LOCK returns only once the destroy is done in the driver: the
	 * stream is gone then (QUERY is not gated). The destroying thread
	 * may not be back in user space yet, so its clock says nothing.
	 */
	ASSERT_TRUE(call_join(&l, DONE_NS));
	EXPECT_EQ(0, l.ret);
	EXPECT_EQ(-ENOENT, snpu_stream_query(self->fd, st, &q));
	ASSERT_TRUE(call_join(&d, DONE_NS));
	EXPECT_EQ(0, d.ret);
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	ASSERT_EQ(0, snap_unlock(self->fd));
}

/* ---- backup and restore ----------------------------------------------------- */

/* Read @bytes at @addr into a new buffer (NULL on failure). */
static uint8_t *dev_read(int fd, uint64_t addr, size_t bytes)
{
	uint8_t *p = malloc(bytes);

	if (p && snpu_d2h(fd, p, addr, bytes)) {
		free(p);
		return NULL;
	}
	return p;
}

static size_t count_not(const uint8_t *p, size_t n, uint8_t v)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		bad += p[i] != v;
	return bad;
}

TEST_F_TIMEOUT(snap, reset_wipes_memory_and_fails_streams, 60)
{
	struct snpu_stream_query q;
	uint64_t a;
	int32_t err = 0;
	uint8_t *p;
	uint32_t s;

	ASSERT_EQ(0, debugfs_ready(0));
	ASSERT_EQ(0, snpu_alloc(self->fd, 3 * PAGE, 0, &a));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(s, a, 3 * PAGE,
							0x01020304, 2)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, DONE_NS, NULL));
	ASSERT_EQ(0, dev_reset(0));
	p = dev_read(self->fd, a, 3 * PAGE);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0U, count_not(p, 3 * PAGE, 0xa5));
	free(p);
	ASSERT_EQ(0, snpu_stream_query(self->fd, s, &q));
	EXPECT_EQ(-EIO, q.error);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, DONE_NS, &err));
	EXPECT_EQ(-EIO, err);
	EXPECT_EQ(-EIO, snpu_submit1(self->fd, snpu_t_nop(s)));
	EXPECT_EQ(0, snpu_stream_reset(self->fd, s));
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(s)));
}

/* Sizes of the test's allocations: one of them odd. */
#define SZ_A	(64 * 1024)
#define SZ_B	12345
#define SZ_C	(256 * 1024)

struct work {
	uint64_t a, b, c;
	uint32_t s1, s2, ev, owner, att;
	uint8_t *orig_a, *orig_b, *orig_c;
};

static int owner_create(int fd, uint32_t *owner)
{
	struct snpu_stream_create c = { .size = sizeof(c) };
	int ret = snpu_ioc(fd, SNPU_IOC_OWNER_CREATE, &c);

	if (!ret)
		*owner = c.handle;
	return ret;
}

static int attached_get(int fd, uint32_t owner, const char *key,
			uint32_t *stream, uint32_t *created)
{
	struct snpu_attached_stream a = {
		.size = sizeof(a), .owner = owner,
	};
	int ret;

	strncpy(a.key, key, sizeof(a.key) - 1);
	ret = snpu_ioc(fd, SNPU_IOC_ATTACHED_STREAM_GET, &a);
	if (!ret) {
		*stream = a.handle;
		if (created)
			*created = a.created;
	}
	return ret;
}

/*
 * Memory filled by kernels and copies, two streams joined by an event,
 * an owner with an attached stream; the bytes are read back into orig_*.
 */
static int work_build(int fd, struct work *w)
{
	uint8_t *rnd = malloc(SZ_B);
	struct snpu_task t[6];
	int ret;

	if (!rnd)
		return -ENOMEM;
	snpu_fill_random(rnd, SZ_B, 0x5eed);
	ret = snpu_alloc(fd, SZ_A, 0, &w->a);
	ret = ret ?: snpu_alloc(fd, SZ_B, 0, &w->b);
	ret = ret ?: snpu_alloc(fd, SZ_C, 0, &w->c);
	ret = ret ?: snpu_stream_create(fd, SNPU_PRIO_NORMAL, &w->s1);
	ret = ret ?: snpu_stream_create(fd, SNPU_PRIO_HIGH, &w->s2);
	ret = ret ?: snpu_event_create(fd, &w->ev);
	ret = ret ?: owner_create(fd, &w->owner);
	ret = ret ?: attached_get(fd, w->owner, "comm", &w->att, NULL);
	ret = ret ?: snpu_h2d(fd, w->b, rnd, SZ_B);
	free(rnd);
	if (ret)
		return ret;
	/* A on s1; C on the attached stream after s1's event; C += A. */
	t[0] = snpu_t_fill(w->s1, w->a, SZ_A, 0x5a5a1234, 4);
	t[1] = snpu_t_record(w->s1, w->ev);
	t[2] = snpu_t_fill(w->att, w->c, SZ_C, 7, 3);
	t[3] = snpu_t_wait(w->att, w->ev);
	t[4] = snpu_t_binop(w->att, SNPU_KERNEL_ADD_I32, w->c, w->c, w->a,
			    SZ_A, 2);
	t[5] = snpu_t_copy(w->s2, SNPU_COPY_D2D, w->c + SZ_A, w->b, SZ_B);
	ret = snpu_submit(fd, t, 5, NULL);
	ret = ret ?: snpu_stream_sync(fd, w->att, DONE_NS, NULL);
	/* The copy reads B (host-written) into C past A's part. */
	ret = ret ?: snpu_submit(fd, &t[5], 1, NULL);
	ret = ret ?: snpu_stream_sync(fd, w->s1, DONE_NS, NULL);
	ret = ret ?: snpu_stream_sync(fd, w->s2, DONE_NS, NULL);
	if (ret)
		return ret;
	w->orig_a = dev_read(fd, w->a, SZ_A);
	w->orig_b = dev_read(fd, w->b, SZ_B);
	w->orig_c = dev_read(fd, w->c, SZ_C);
	return w->orig_a && w->orig_b && w->orig_c ? 0 : -EIO;
}

static void work_free(struct work *w)
{
	free(w->orig_a);
	free(w->orig_b);
	free(w->orig_c);
}

/* The bytes now equal the saved ones. Return: bytes that differ. */
static size_t work_diff(int fd, struct work *w)
{
	uint8_t *a = dev_read(fd, w->a, SZ_A);
	uint8_t *b = dev_read(fd, w->b, SZ_B);
	uint8_t *c = dev_read(fd, w->c, SZ_C);
	size_t bad = SZ_A + SZ_B + SZ_C, i;

	if (a && b && c) {
		bad = 0;
		for (i = 0; i < SZ_A; i++)
			bad += a[i] != w->orig_a[i];
		for (i = 0; i < SZ_B; i++)
			bad += b[i] != w->orig_b[i];
		for (i = 0; i < SZ_C; i++)
			bad += c[i] != w->orig_c[i];
	}
	free(a);
	free(b);
	free(c);
	return bad;
}

TEST_F_TIMEOUT(snap, backup_restore_survives_reset, 120)
{
	struct snpu_stream_query q;
	struct snpu_event_query eq;
	uint32_t handle, created = 1;
	uint64_t image;
	int32_t err = -1;
	struct work w;
	uint32_t *c;
	size_t i;

	ASSERT_EQ(0, debugfs_ready(0));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, work_build(self->fd, &w));
	/* Sanity of the work itself: C = 7 + A's pattern, then B's bytes. */
	c = (uint32_t *)w.orig_c;
	EXPECT_EQ(7U + 0x5a5a1234U, c[0]);
	EXPECT_EQ(0, memcmp(w.orig_c + SZ_A, w.orig_b, SZ_B));
	EXPECT_EQ(7U, c[SZ_C / 4 - 1]);

	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, &image));
	EXPECT_GE(image, (uint64_t)SZ_A + SZ_B + SZ_C);
	/* The device loses memory and streams while the process is locked. */
	ASSERT_EQ(0, dev_reset(0));
	ASSERT_EQ(0, snpu_stream_query(self->fd, w.s1, &q));
	EXPECT_EQ(-EIO, q.error);
	ASSERT_EQ(0, snpu_stream_query(self->fd, w.att, &q));
	EXPECT_EQ(-EIO, q.error);
	ASSERT_EQ(0, snap_restore(self->fd));
	/* The errors are gone already while locked (queries do not block). */
	ASSERT_EQ(0, snpu_stream_query(self->fd, w.s1, &q));
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snap_unlock(self->fd));

	EXPECT_EQ(0U, work_diff(self->fd, &w));
	ASSERT_EQ(0, snpu_stream_query(self->fd, w.s2, &q));
	EXPECT_EQ(0, q.error);
	ASSERT_EQ(0, snpu_stream_query(self->fd, w.att, &q));
	EXPECT_EQ(0, q.error);
	/* The attached stream of the same owner and key is the same one. */
	ASSERT_EQ(0, attached_get(self->fd, w.owner, "comm", &handle, &created));
	EXPECT_EQ(w.att, handle);
	EXPECT_EQ(0U, created);
	/* The same handles take new work: A += A on s1, event to s2. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_binop(w.s1,
				  SNPU_KERNEL_ADD_I32, w.a, w.a, w.a, SZ_A, 4)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(w.s1, w.ev)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_wait(w.s2, w.ev)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_fill(w.att, w.c, SZ_C, 9,
							2)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, w.ev, DONE_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_event_query(self->fd, w.ev, &eq));
	EXPECT_EQ((uint32_t)SNPU_EVENT_COMPLETE, eq.state);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, w.s2, DONE_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, w.att, DONE_NS, &err));
	EXPECT_EQ(0, err);
	free(w.orig_c);
	w.orig_c = dev_read(self->fd, w.c, SZ_C);
	ASSERT_NE(NULL, w.orig_c);
	for (i = 0; i < SZ_C / 4; i++)
		if (((uint32_t *)w.orig_c)[i] != 9U)
			break;
	EXPECT_EQ((size_t)SZ_C / 4, i);
	free(w.orig_a);
	w.orig_a = dev_read(self->fd, w.a, SZ_A);
	ASSERT_NE(NULL, w.orig_a);
	for (i = 0; i < SZ_A / 4; i++)
		if (((uint32_t *)w.orig_a)[i] != 2U * 0x5a5a1234U)
			break;
	EXPECT_EQ((size_t)SZ_A / 4, i);
	work_free(&w);
}

TEST_F_TIMEOUT(snap, restore_twice_from_one_image, 120)
{
	struct work w;

	ASSERT_EQ(0, debugfs_ready(0));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, work_build(self->fd, &w));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	ASSERT_EQ(0, dev_reset(0));
	ASSERT_EQ(0, snap_restore(self->fd));
	/* Backed up again (same bytes), wiped again, restored again. */
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	ASSERT_EQ(0, dev_reset(0));
	ASSERT_EQ(0, snap_restore(self->fd));
	ASSERT_EQ(0, snap_unlock(self->fd));
	EXPECT_EQ(0U, work_diff(self->fd, &w));
	work_free(&w);
}

TEST_F_TIMEOUT(snap, restore_skips_closed_context, 120)
{
	int fd2 = snpu_open_dev();
	uint8_t buf[PAGE];
	struct work w;
	uint64_t a2, image, image2;

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, debugfs_ready(0));
	memset(&w, 0, sizeof(w));
	ASSERT_EQ(0, work_build(self->fd, &w));
	memset(buf, 0x3c, sizeof(buf));
	ASSERT_EQ(0, snpu_alloc(fd2, PAGE, 0, &a2));
	ASSERT_EQ(0, snpu_h2d(fd2, a2, buf, PAGE));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, snap_backup(self->fd, &image));
	/* Both contexts are in the image. */
	EXPECT_GE(image, (uint64_t)SZ_A + SZ_B + SZ_C + PAGE);
	/* One closes while the process is locked; the other gets reset. */
	close(fd2);
	ASSERT_EQ(0, dev_reset(0));
	EXPECT_EQ(0, snap_restore(self->fd));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd));
	/* A backup now holds only what is left. */
	ASSERT_EQ(0, snap_backup(self->fd, &image2));
	EXPECT_LT(image2, image);
	ASSERT_EQ(0, snap_unlock(self->fd));
	EXPECT_EQ(0U, work_diff(self->fd, &w));
	EXPECT_EQ(1LL, sysfs_val("contexts"));
	work_free(&w);
}

/* A thread answering one callback after a delay. */
struct answer {
	int fd;
	int64_t delay_ns;
	int ret;
	uint64_t t;
};

static void *answer_fn(void *p)
{
	struct answer *a = p;

	sleep_ns(a->delay_ns);
	a->t = snpu_now_ns();
	a->ret = snpu_callback_answer(a->fd, DONE_NS, 0, NULL);
	return NULL;
}

TEST_F_TIMEOUT(snap, backup_waits_for_queued_tasks, 60)
{
	struct answer ans = { .fd = self->fd, .delay_ns = BLOCK_CHECK_NS };
	struct snpu_task t[2];
	uint64_t a, t_done;
	pthread_t th;
	uint8_t *p;
	uint32_t s;

	ASSERT_EQ(0, debugfs_ready(0));
	ASSERT_EQ(0, snpu_alloc(self->fd, 2 * PAGE, 0, &a));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &s));
	/* A fill held behind a callback nobody has answered yet. */
	t[0] = snpu_t_host_func(s, 1);
	t[1] = snpu_t_fill(s, a, 2 * PAGE, 0x77777777, 2);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 2, NULL));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	ASSERT_EQ(0, pthread_create(&th, NULL, answer_fn, &ans));
	/* BACKUP drains the process's tasks first: the fill is in it. */
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	t_done = snpu_now_ns();
	pthread_join(th, NULL);
	EXPECT_EQ(0, ans.ret);
	EXPECT_GE(t_done, ans.t);
	ASSERT_EQ(0, dev_reset(0));
	ASSERT_EQ(0, snap_restore(self->fd));
	ASSERT_EQ(0, snap_unlock(self->fd));
	p = dev_read(self->fd, a, 2 * PAGE);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0U, count_not(p, 2 * PAGE, 0x77));
	free(p);
}

TEST_F(snap, backup_interrupted_by_signal)
{
	struct snpu_snapshot s;
	struct call c;
	uint32_t st;

	ASSERT_EQ(0, sig_install(SIGUSR1, true));
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &st));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(st, 5)));
	ASSERT_EQ(0, snap_lock(self->fd, LOCK_TIMEOUT_NS));
	snap_arg(&s, 0);
	ASSERT_EQ(0, call_start(&c, self->fd, SNPU_IOC_SNAPSHOT_BACKUP, &s));
	ASSERT_TRUE(call_blocked(&c));
	ASSERT_TRUE(signal_until_done(&c, DONE_NS));
	EXPECT_EQ(-EINTR, c.ret);
	/* Nothing saved: still LOCKED, no image. */
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_STATE, 0, &s));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, s.state);
	EXPECT_EQ(0ULL, s.image_bytes);
	ASSERT_EQ(0, snpu_callback_answer(self->fd, DONE_NS, 0, NULL));
	ASSERT_EQ(0, snap_backup(self->fd, NULL));
	ASSERT_EQ(0, snap_unlock(self->fd));
}

TEST_F(snap, snapshot_call_waiting_for_another_is_interruptible)
{
	struct snpu_snapshot s1, s2;
	struct call l, u;
	struct bg b;

	ASSERT_EQ(0, sig_install(SIGUSR1, false));
	/* A LOCK that waits for a thread that does not park yet... */
	ASSERT_EQ(0, bg_start(&b, self->fd, false));
	snap_arg(&s1, 15 * NS_PER_SEC);
	ASSERT_EQ(0, call_start(&l, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s1));
	ASSERT_TRUE(call_blocked(&l));
	/* ... holds up an UNLOCK of another thread; a signal must end it. */
	snap_arg(&s2, 0);
	ASSERT_EQ(0, call_start(&u, self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, &s2));
	EXPECT_TRUE(call_blocked(&u));
	pthread_kill(u.th, SIGUSR1);
	EXPECT_TRUE(wait_flag(&u.done, 2 * NS_PER_SEC))
		TH_LOG("UNLOCK still in the kernel after a signal");
	/* Let the LOCK finish: the thread parks now. */
	atomic_store(&b.parks, 1);
	ASSERT_TRUE(call_join(&l, 20 * NS_PER_SEC));
	ASSERT_TRUE(call_join(&u, 20 * NS_PER_SEC));
	EXPECT_EQ(0, l.ret);
	EXPECT_EQ(-EINTR, u.ret);
	if (snap_state(self->fd) != SNPU_STATE_RUNNING)
		EXPECT_EQ(0, snap_unlock(self->fd));
	bg_stop(&b);
}

/* open(2) of the device on a thread of its own. */
struct opener {
	pthread_t th;
	int fd;
	atomic_int done;
};

static void *opener_fn(void *p)
{
	struct opener *o = p;

	o->fd = snpu_open_dev();
	atomic_store(&o->done, 1);
	return NULL;
}

TEST_F(snap, open_does_not_wait_for_a_transition)
{
	struct snpu_snapshot s;
	struct opener o;
	struct call l;
	struct bg b;

	/* A LOCK waiting for a thread that does not park yet... */
	ASSERT_EQ(0, bg_start(&b, self->fd, false));
	snap_arg(&s, 15 * NS_PER_SEC);
	ASSERT_EQ(0, call_start(&l, self->fd, SNPU_IOC_SNAPSHOT_LOCK, &s));
	ASSERT_TRUE(call_blocked(&l));
	/* ... must not hold up an open(2) of the process. */
	memset(&o, 0, sizeof(o));
	ASSERT_EQ(0, pthread_create(&o.th, NULL, opener_fn, &o));
	EXPECT_TRUE(wait_flag(&o.done, 2 * NS_PER_SEC))
		TH_LOG("open(2) still in the kernel while LOCK waits");
	atomic_store(&b.parks, 1);
	ASSERT_TRUE(call_join(&l, 20 * NS_PER_SEC));
	EXPECT_EQ(0, l.ret);
	ASSERT_TRUE(wait_flag(&o.done, DONE_NS));
	pthread_join(o.th, NULL);
	ASSERT_GE(o.fd, 0);
	/* The new file is the same process's: locked too. */
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(o.fd));
	EXPECT_EQ(0, snap_unlock(o.fd));
	close(o.fd);
	bg_stop(&b);
}

/* ---- processes ----------------------------------------------------------------- */

/* Wait for @pid up to @ns; Return: its wait status, or -1. */
static int wait_child(pid_t pid, int64_t ns)
{
	uint64_t end = snpu_now_ns() + ns;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 || snpu_now_ns() > end)
			return -1;
		sleep_ns(NS_PER_MS);
	}
}

/* In a child: exit 0 when a fresh open of the device is RUNNING. */
static void child_check_running(void)
{
	int fd = snpu_open_dev();

	_exit(fd >= 0 && snap_state(fd) == SNPU_STATE_RUNNING ? 0 : 1);
}

TEST_F(snap, child_exits_while_locked)
{
	long long ctx0 = sysfs_val("contexts"), mem0 = sysfs_val("mem_used");
	int pfd[2], status;
	char ch = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int fd = snpu_open_dev();
		uint64_t a;

		if (fd < 0 || snpu_alloc(fd, 16 * PAGE, 0, &a) ||
		    snap_lock(fd, LOCK_TIMEOUT_NS))
			_exit(2);
		if (write(pfd[1], "L", 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &ch, 1));
	EXPECT_EQ('L', ch);
	status = wait_child(pid, DONE_NS);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Its file, memory and lock are gone; this process was never locked. */
	EXPECT_EQ(ctx0, sysfs_val("contexts"));
	EXPECT_EQ(mem0, sysfs_val("mem_used"));
	EXPECT_EQ(SNPU_STATE_RUNNING, snap_state(self->fd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		child_check_running();
	status = wait_child(pid, DONE_NS);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static void *child_alloc_fn(void *p)
{
	struct snpu_mem_alloc a;
	int *fd = p;

	mem_alloc_arg(&a, PAGE);
	snpu_ioc(*fd, SNPU_IOC_MEM_ALLOC, &a);
	return NULL;
}

TEST_F(snap, child_killed_while_locked_with_blocked_thread)
{
	long long ctx0 = sysfs_val("contexts");
	int pfd[2], status;
	char ch = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		static int fd;
		pthread_t th;

		fd = snpu_open_dev();
		if (fd < 0 || snap_lock(fd, LOCK_TIMEOUT_NS))
			_exit(2);
		if (pthread_create(&th, NULL, child_alloc_fn, &fd))
			_exit(3);
		sleep_ns(BLOCK_CHECK_NS);
		if (write(pfd[1], "L", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &ch, 1));
	EXPECT_EQ(0, kill(pid, SIGKILL));
	status = wait_child(pid, DONE_NS);
	ASSERT_NE(-1, status);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(ctx0, sysfs_val("contexts"));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		child_check_running();
	status = wait_child(pid, DONE_NS);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * A process whose pid once belonged to a process with an snpu file still
 * open (held by a descendant) starts with a state of its own.
 */
TEST_F_TIMEOUT(snap, reused_pid_gets_fresh_state, 60)
{
	int pfd[2], status, tries;
	pid_t a, holder = 0, b = 0;
	char buf[32];

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(pfd));
	a = fork();
	ASSERT_GE(a, 0);
	if (!a) {
		/* A: open, lock, leave the file to a child, exit. */
		int fd = snpu_open_dev();
		pid_t h;

		if (fd < 0 || snap_lock(fd, LOCK_TIMEOUT_NS))
			_exit(2);
		h = fork();
		if (h < 0)
			_exit(3);
		if (!h) {
			for (;;)
				pause();
		}
		if (write(pfd[1], &h, sizeof(h)) != sizeof(h))
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ((ssize_t)sizeof(holder), read(pfd[0], &holder, sizeof(holder)));
	status = wait_child(a, DONE_NS);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	/* B gets A's pid (ns_last_pid), opens the device, reports its state. */
	for (tries = 0; tries < 5; tries++) {
		snprintf(buf, sizeof(buf), "%d", a - 1);
		ASSERT_EQ(0, write_str("/proc/sys/kernel/ns_last_pid", buf));
		b = fork();
		ASSERT_GE(b, 0);
		if (!b) {
			int fd = snpu_open_dev();

			if (getpid() != a)
				_exit(100);
			_exit(fd < 0 ? 101 : snap_state(fd));
		}
		status = wait_child(b, DONE_NS);
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) != 100)
			break;
	}
	ASSERT_NE(100, WEXITSTATUS(status)) TH_LOG("pid %d not reused", a);
	EXPECT_EQ(SNPU_STATE_RUNNING, WEXITSTATUS(status))
		TH_LOG("pid %d reused: the new process got the old state", a);
	kill(holder, SIGKILL);
	wait_child(holder, DONE_NS);
}

/* ---- two devices (reloads the module) ------------------------------------- */

static const char *const mod_params[] = {
	"devices", "cores", "mem_mb", "ctx_mem_mb", "ctx_host_mb",
	"ctx_streams", "ctx_events", "ctx_tasks", "test_hooks",
};

/* The loaded module's parameters as "name=value ..." (all of them). */
static int mod_params_now(char *buf, size_t len)
{
	char path[128], val[32];
	size_t i, off = 0;
	ssize_t n;
	int fd;

	buf[0] = 0;
	for (i = 0; i < sizeof(mod_params) / sizeof(mod_params[0]); i++) {
		snprintf(path, sizeof(path), "/sys/module/snpu/parameters/%s",
			 mod_params[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		n = read(fd, val, sizeof(val) - 1);
		close(fd);
		if (n <= 0)
			return -EIO;
		val[n] = 0;
		val[strcspn(val, "\n")] = 0;
		off += snprintf(buf + off, len - off, "%s%s=%s", off ? " " : "",
				mod_params[i], val);
		if (off >= len)
			return -E2BIG;
	}
	return 0;
}

static int mod_unload(void)
{
	uint64_t end = snpu_now_ns() + DONE_NS;

	/* Files of earlier tests' children may take a moment to go. */
	while (syscall(__NR_delete_module, "snpu", O_NONBLOCK)) {
		if (errno != EAGAIN && errno != EBUSY)
			return -errno;
		if (snpu_now_ns() > end)
			return -errno;
		sleep_ns(10 * NS_PER_MS);
	}
	return 0;
}

FIXTURE(two) {
	char params[512];
	bool reloaded;
	int fd0, fd1;
	const struct snpu_state_page *sp1;
};

FIXTURE_SETUP(two)
{
	char p[600];

	self->fd0 = self->fd1 = -1;
	ASSERT_EQ(0, mod_params_now(self->params, sizeof(self->params)));
	ASSERT_EQ(0, mod_unload());
	self->reloaded = true;
	snprintf(p, sizeof(p), "%s devices=2", self->params);
	ASSERT_EQ(0, snpu_module_load(p)) TH_LOG("insmod %s", p);
	self->fd0 = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
	self->fd1 = open("/dev/snpu1", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd0, 0);
	ASSERT_GE(self->fd1, 0);
}

FIXTURE_TEARDOWN(two)
{
	if (self->sp1)
		munmap((void *)self->sp1, PAGE);
	if (self->fd0 >= 0)
		close(self->fd0);
	if (self->fd1 >= 0)
		close(self->fd1);
	if (!self->reloaded)
		return;
	/* Back to what the runner loaded. */
	EXPECT_EQ(0, mod_unload());
	EXPECT_EQ(0, snpu_module_load(self->params)) TH_LOG("insmod %s", self->params);
}

TEST_F_TIMEOUT(two, state_shared_across_devices, 120)
{
	const struct snpu_state_page *sp1;
	uint8_t b0[PAGE], b1[3 * PAGE], r0[PAGE], r1[3 * PAGE];
	struct snpu_mem_alloc a;
	uint64_t x0, x1, image;
	struct call c;

	/* A mapping holds its file, and the module: the teardown unmaps. */
	sp1 = self->sp1 = map_state(self->fd1);
	ASSERT_NE(NULL, sp1);
	ASSERT_EQ(0, debugfs_ready(0));
	ASSERT_EQ(0, debugfs_ready(1));
	snpu_fill_random(b0, sizeof(b0), 1);
	snpu_fill_random(b1, sizeof(b1), 2);
	ASSERT_EQ(0, snpu_alloc(self->fd0, sizeof(b0), 0, &x0));
	ASSERT_EQ(0, snpu_alloc(self->fd1, sizeof(b1), 0, &x1));
	ASSERT_EQ(0, snpu_h2d(self->fd0, x0, b0, sizeof(b0)));
	ASSERT_EQ(0, snpu_h2d(self->fd1, x1, b1, sizeof(b1)));

	/* Locked through snpu0: snpu1's file is locked too. */
	ASSERT_EQ(0, snap_lock(self->fd0, LOCK_TIMEOUT_NS));
	EXPECT_EQ(SNPU_STATE_LOCKED, snap_state(self->fd1));
	EXPECT_EQ((uint32_t)SNPU_STATE_LOCKED, page_state(sp1));
	mem_alloc_arg(&a, PAGE);
	EXPECT_EQ(-EDEADLK, snpu_ioc(self->fd1, SNPU_IOC_MEM_ALLOC, &a));
	mem_alloc_arg(&a, PAGE);
	ASSERT_EQ(0, call_start(&c, self->fd1, SNPU_IOC_MEM_ALLOC, &a));
	EXPECT_TRUE(call_blocked(&c));

	/* One image holds both devices' memory. */
	ASSERT_EQ(0, snap_backup(self->fd1, &image));
	EXPECT_GE(image, (uint64_t)sizeof(b0) + sizeof(b1));
	ASSERT_EQ(0, dev_reset(0));
	ASSERT_EQ(0, dev_reset(1));
	ASSERT_EQ(0, snap_restore(self->fd0));
	ASSERT_EQ(0, snap_unlock(self->fd1));
	ASSERT_TRUE(call_join(&c, DONE_NS));
	EXPECT_EQ(0, c.ret);
	ASSERT_EQ(0, snpu_d2h(self->fd0, r0, x0, sizeof(r0)));
	ASSERT_EQ(0, snpu_d2h(self->fd1, r1, x1, sizeof(r1)));
	EXPECT_EQ(0, memcmp(b0, r0, sizeof(b0)));
	EXPECT_EQ(0, memcmp(b1, r1, sizeof(b1)));
}

TEST_HARNESS_MAIN
