// SPDX-License-Identifier: GPL-2.0
/*
 * snpu object and context lifetimes through the raw ioctls:
 *
 *  - handles are handed out cyclically: a destroyed object's handle is not
 *    given to the next object, a stale DESTROY or FREE fails with ENOENT
 *    and leaves the new object alone, and a STREAM_SYNC racing a destroy
 *    reports on the stream it waited on, never on a new one;
 *  - results are not lost after side effects: a CALLBACK_WAIT that cannot
 *    write its result leaves the callback for the next CALLBACK_WAIT, and
 *    a SUBMIT that cannot write its result queues nothing;
 *  - a BACKUP waiting for a task does not hold up the process's opens and
 *    closes, not even those of the thread that would answer the callback
 *    the backup waits for;
 *  - host memory freed while a queued task uses it is released (pinned
 *    pages included) when the task completes, off the core.
 *
 * Runs as root in the test VM with the module's defaults (test hooks on).
 * Nothing here depends on timing except the explicit bound within which a
 * call that must not wait completes (PROMPT_MS; a wrong kernel blocks it
 * for ever, and the test then unblocks it and fails).
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "snpu_proc.h"
#include "snpu_test.h"

#define PAGE		4096
#define PROMPT_MS	5000
#define ROUNDS		20

/* Wait until thread @tid sleeps interruptibly (in the call it makes). */
static void wait_sleeping(pid_t tid)
{
	while (snpu_thread_state(tid) != 'S')
		usleep(1000);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static int owner_create(int fd, uint32_t *handle)
{
	struct snpu_stream_create c = {
		.size = sizeof(c), .priority = SNPU_PRIO_NORMAL,
	};
	int ret = snpu_ioc(fd, SNPU_IOC_OWNER_CREATE, &c);

	if (!ret)
		*handle = c.handle;
	return ret;
}

static int owner_destroy(int fd, uint32_t handle)
{
	return snpu_handle_op(fd, SNPU_IOC_OWNER_DESTROY, handle, 0);
}

FIXTURE(lifetime) {
	int fd;
};

FIXTURE_SETUP(lifetime)
{
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lifetime)
{
	close(self->fd);
}

/* ---- handles are not reused at once ------------------------------------- */

TEST_F(lifetime, stream_handle_not_reused)
{
	uint32_t a, b, c;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &a));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, a, 0));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &b));
	EXPECT_NE(a, b);
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, b, 0));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &c));
	EXPECT_NE(a, c);
	EXPECT_NE(b, c);
}

TEST_F(lifetime, event_handle_not_reused)
{
	uint32_t a, b;

	ASSERT_EQ(0, snpu_event_create(self->fd, &a));
	ASSERT_EQ(0, snpu_event_destroy(self->fd, a));
	ASSERT_EQ(0, snpu_event_create(self->fd, &b));
	EXPECT_NE(a, b);
}

TEST_F(lifetime, host_alloc_handle_not_reused)
{
	uint32_t a, b;
	uint64_t off;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, PAGE, &a, &off));
	ASSERT_EQ(0, snpu_host_free(self->fd, a));
	ASSERT_EQ(0, snpu_host_alloc(self->fd, PAGE, &b, &off));
	EXPECT_NE(a, b);
}

TEST_F(lifetime, host_register_handle_not_reused)
{
	void *buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t a, b;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, snpu_host_register(self->fd, buf, PAGE, &a));
	ASSERT_EQ(0, snpu_host_free(self->fd, a));
	ASSERT_EQ(0, snpu_host_register(self->fd, buf, PAGE, &b));
	EXPECT_NE(a, b);
	EXPECT_EQ(0, snpu_host_free(self->fd, b));
	munmap(buf, PAGE);
}

TEST_F(lifetime, owner_handle_not_reused)
{
	uint32_t a, b;

	ASSERT_EQ(0, owner_create(self->fd, &a));
	ASSERT_EQ(0, owner_destroy(self->fd, a));
	ASSERT_EQ(0, owner_create(self->fd, &b));
	EXPECT_NE(a, b);
}

/* Any type: the handle of a destroyed stream does not name a new event. */
TEST_F(lifetime, handle_not_reused_across_types)
{
	uint32_t s, e;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, s, 0));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	EXPECT_NE(s, e);
}

/* ---- a stale destroy finds nothing -------------------------------------- */

TEST_F(lifetime, stale_stream_destroy_enoent)
{
	struct snpu_stream_query q;
	uint32_t old, s;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &old));
	ASSERT_EQ(0, snpu_stream_destroy(self->fd, old, 0));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	EXPECT_EQ(-ENOENT, snpu_stream_destroy(self->fd, old, 0));
	/* The new stream still works. */
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_spin(s, 1000, 1)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, s, &q));
	EXPECT_EQ(1U, q.submitted);
	EXPECT_EQ(1U, q.completed);
}

TEST_F(lifetime, stale_event_destroy_enoent)
{
	uint32_t old, e, s;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_event_create(self->fd, &old));
	ASSERT_EQ(0, snpu_event_destroy(self->fd, old));
	ASSERT_EQ(0, snpu_event_create(self->fd, &e));
	EXPECT_EQ(-ENOENT, snpu_event_destroy(self->fd, old));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_record(s, e)));
	ASSERT_EQ(0, snpu_event_sync(self->fd, e, -1, &err));
	EXPECT_EQ(0, err);
}

TEST_F(lifetime, stale_host_free_enoent)
{
	uint32_t old, h, s;
	uint64_t dev, off;
	unsigned char *p = NULL;
	int32_t err = 1;

	ASSERT_EQ(0, snpu_host_alloc(self->fd, PAGE, &old, &off));
	ASSERT_EQ(0, snpu_host_free(self->fd, old));
	ASSERT_EQ(0, snpu_host_map(self->fd, PAGE, &h, (void **)&p));
	EXPECT_EQ(-ENOENT, snpu_host_free(self->fd, old));
	/* The new host memory still takes queued copies. */
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(self->fd, PAGE, 0, &dev));
	ASSERT_EQ(0, snpu_memset(self->fd, dev, 0x5a, PAGE));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(s, SNPU_COPY_D2H,
							(uintptr_t)p, dev,
							PAGE)));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0x5a, p[0]);
	EXPECT_EQ(0x5a, p[PAGE - 1]);
	munmap(p, PAGE);
}

TEST_F(lifetime, stale_owner_destroy_enoent)
{
	struct snpu_attached_stream a;
	uint32_t old, o;

	ASSERT_EQ(0, owner_create(self->fd, &old));
	ASSERT_EQ(0, owner_destroy(self->fd, old));
	ASSERT_EQ(0, owner_create(self->fd, &o));
	EXPECT_EQ(-ENOENT, owner_destroy(self->fd, old));
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.owner = o;
	strcpy(a.key, "k");
	EXPECT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_ATTACHED_STREAM_GET, &a));
	EXPECT_EQ(1U, a.created);
}

/* ---- a sync reports on the stream it waited on --------------------------- */

struct syncer {
	int fd;
	uint32_t stream;
	pid_t tid;
	atomic_int started;
	int ret;
	int32_t error;
};

static void *sync_thread(void *arg)
{
	struct syncer *sy = arg;

	sy->tid = gettid_();
	atomic_store(&sy->started, 1);
	sy->ret = snpu_stream_sync(sy->fd, sy->stream, -1, &sy->error);
	return NULL;
}

/*
 * A sync waits on a stream held up by a callback; the stream is destroyed
 * with FORCE (its callback is cancelled, the stream fails -ECANCELED) and
 * a new stream is created at once. The sync reports the stream it waited
 * on: -ECANCELED, never the new stream's 0 nor "gone, so clean".
 */
TEST_F(lifetime, sync_racing_destroy_create)
{
	int round;

	for (round = 0; round < ROUNDS; round++) {
		struct syncer sy = { .fd = self->fd, .error = 1 };
		pthread_t t;
		uint32_t s;

		ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
						&sy.stream));
		ASSERT_EQ(0, snpu_submit1(self->fd,
					  snpu_t_host_func(sy.stream, 1)));
		ASSERT_EQ(0, pthread_create(&t, NULL, sync_thread, &sy));
		while (!atomic_load(&sy.started))
			usleep(1000);
		wait_sleeping(sy.tid);

		ASSERT_EQ(0, snpu_stream_destroy(self->fd, sy.stream,
						 SNPU_STREAM_DESTROY_FORCE));
		ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
						&s));
		ASSERT_EQ(0, pthread_join(t, NULL));
		ASSERT_EQ(0, sy.ret);
		EXPECT_EQ(-ECANCELED, sy.error) {
			TH_LOG("round %d: the sync reported %d", round,
			       sy.error);
		}
		ASSERT_EQ(0, snpu_stream_destroy(self->fd, s, 0));
	}
}

/* ---- results are not lost after side effects ----------------------------- */

/* A read-only page holding a copy of @len bytes of @arg; NULL on error. */
static void *ro_copy(const void *arg, size_t len)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, arg, len);
	if (mprotect(p, PAGE, PROT_READ)) {
		munmap(p, PAGE);
		return NULL;
	}
	return p;
}

/*
 * A CALLBACK_WAIT whose argument cannot be written fails with EFAULT and
 * leaves the callback queued: the next CALLBACK_WAIT gets it, and the
 * stream completes once it is answered.
 */
TEST_F(lifetime, callback_wait_efault_requeues)
{
	struct snpu_callback cb = {
		.size = sizeof(cb), .timeout_ns = -1,
	};
	struct snpu_stream_query q;
	int32_t err = 1;
	uint32_t s;
	void *ro;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(s, 77)));
	ro = ro_copy(&cb, sizeof(cb));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, ro));
	munmap(ro, PAGE);

	ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(77U, cb.user_data);
	EXPECT_EQ(s, cb.stream);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_stream_query(self->fd, s, &q));
	EXPECT_EQ(1U, q.submitted);
	EXPECT_EQ(1U, q.completed);
}

/* The requeued callback keeps its place: it comes before later ones. */
TEST_F(lifetime, callback_wait_efault_keeps_order)
{
	struct snpu_callback cb = {
		.size = sizeof(cb), .timeout_ns = -1,
	};
	uint32_t a, b;
	void *ro;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &a));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &b));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(a, 1)));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(b, 2)));
	ro = ro_copy(&cb, sizeof(cb));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, snpu_ioc(self->fd, SNPU_IOC_CALLBACK_WAIT, ro));
	munmap(ro, PAGE);

	ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(1U, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
	EXPECT_EQ(2U, cb.user_data);
	ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, a, -1, NULL));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, b, -1, NULL));
}

/*
 * A SUBMIT whose argument cannot be written fails with EFAULT and queues
 * nothing (documented in the uapi header): no sequence number taken, the
 * memset never ran.
 */
TEST_F(lifetime, submit_efault_queues_nothing)
{
	struct snpu_task t;
	struct snpu_submit sub;
	struct snpu_stream_query q;
	unsigned char buf[64];
	uint64_t dev, seq = 0;
	uint32_t s;
	void *ro;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(self->fd, sizeof(buf), 0, &dev));
	ASSERT_EQ(0, snpu_memset(self->fd, dev, 0, sizeof(buf)));

	t = snpu_t_memset(s, dev, 0x77, sizeof(buf));
	memset(&sub, 0, sizeof(sub));
	sub.size = sizeof(sub);
	sub.count = 1;
	sub.task_size = sizeof(t);
	sub.tasks = (uintptr_t)&t;
	ro = ro_copy(&sub, sizeof(sub));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, snpu_ioc(self->fd, SNPU_IOC_SUBMIT, ro));
	munmap(ro, PAGE);

	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, s, &q));
	EXPECT_EQ(0U, q.submitted);
	EXPECT_EQ(0U, q.completed);
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, dev, sizeof(buf)));
	EXPECT_EQ(0, buf[0]);
	EXPECT_EQ(0, buf[sizeof(buf) - 1]);

	/* The same task from a writable argument is queued as number 1. */
	ASSERT_EQ(0, snpu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(1U, seq);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, NULL));
	ASSERT_EQ(0, snpu_d2h(self->fd, buf, dev, sizeof(buf)));
	EXPECT_EQ(0x77, buf[0]);
}

/* The sequence number written before the commit is the one queued. */
TEST_F(lifetime, submit_seq_across_streams)
{
	struct snpu_task t[5];
	struct snpu_stream_query q;
	uint32_t a, b;
	uint64_t seq;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &a));
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &b));
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_nop(b)));
	t[0] = snpu_t_nop(a);
	t[1] = snpu_t_spin(b, 1000, 1);
	t[2] = snpu_t_nop(a);
	t[3] = snpu_t_nop(b);
	t[4] = snpu_t_spin(b, 1000, 1);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 5, &seq));
	EXPECT_EQ(4U, seq);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, b, -1, NULL));
	ASSERT_EQ(0, snpu_stream_query(self->fd, b, &q));
	EXPECT_EQ(4U, q.submitted);
}

/* ---- contexts: a backup does not hold up opens and closes ------------------ */

/* Return: 1 when @efd was signalled within @ms, else 0. */
static int wait_efd(int efd, int ms)
{
	struct pollfd p = { .fd = efd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, ms) != 1)
		return 0;
	return read(efd, &v, sizeof(v)) == sizeof(v);
}

static void signal_efd(int efd)
{
	uint64_t one = 1;

	if (write(efd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static int snap(int fd, unsigned long cmd, int64_t timeout_ns)
{
	struct snpu_snapshot s = { .size = sizeof(s), .timeout_ns = timeout_ns };

	return snpu_ioc(fd, cmd, &s);
}

struct backup_helper {
	int fd;
	pid_t tid;
	atomic_int started;
	atomic_int done;
	int ret;
	int efd;		/* signalled when the backup returns */
};

static void on_usr1(int sig)
{
}

static void *backup_thread(void *arg)
{
	struct backup_helper *b = arg;

	b->tid = gettid_();
	atomic_store(&b->started, 1);
	b->ret = snap(b->fd, SNPU_IOC_SNAPSHOT_BACKUP, 0);
	atomic_store(&b->done, 1);
	signal_efd(b->efd);
	return NULL;
}

/* Start a BACKUP of a locked process in a thread; wait until it waits. */
static int backup_start(struct backup_helper *b, pthread_t *t, int fd)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->efd = eventfd(0, EFD_CLOEXEC);
	if (b->efd < 0 || sigaction(SIGUSR1, &sa, NULL))
		return -errno;
	if (pthread_create(t, NULL, backup_thread, b))
		return -EAGAIN;
	while (!atomic_load(&b->started))
		usleep(1000);
	wait_sleeping(b->tid);
	return 0;
}

/*
 * A wrong kernel leaves the backup holding what opens and closes wait
 * for: interrupt the backup (its drain is interruptible) so that the
 * test ends instead of hanging.
 */
static void backup_break(struct backup_helper *b, pthread_t t)
{
	while (!atomic_load(&b->done)) {
		pthread_kill(t, SIGUSR1);
		usleep(10000);
	}
}

struct opener {
	int fd_close;		/* closed by the helper */
	int efd;		/* signalled when done */
	int ret;
};

static void *open_close_thread(void *arg)
{
	struct opener *o = arg;
	int fd = snpu_open_dev();

	o->ret = fd < 0 ? fd : 0;
	if (fd >= 0)
		close(fd);
	close(o->fd_close);
	signal_efd(o->efd);
	return NULL;
}

/*
 * While a BACKUP waits for a task (a callback nobody answers yet), an
 * open() and a close() of other files of the process complete: the
 * backup is still waiting when they return, since the callback is only
 * answered after them.
 */
TEST_F(lifetime, backup_wait_lets_open_close_through)
{
	struct backup_helper b;
	struct opener o = { 0 };
	struct snpu_callback cb;
	pthread_t bt, ot;
	uint32_t s;
	int ok;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	o.fd_close = snpu_open_dev();
	ASSERT_LE(0, o.fd_close);
	o.efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, o.efd);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(s, 5)));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, -1));
	ASSERT_EQ(0, backup_start(&b, &bt, self->fd));

	ASSERT_EQ(0, pthread_create(&ot, NULL, open_close_thread, &o));
	ok = wait_efd(o.efd, PROMPT_MS);
	/* By order: nothing answered the callback, the backup still waits. */
	EXPECT_EQ(0, atomic_load(&b.done));
	if (!ok)
		backup_break(&b, bt);
	EXPECT_EQ(1, ok) {
		TH_LOG("open()/close() waited for the backup's drain");
	}
	ASSERT_EQ(0, pthread_join(ot, NULL));
	EXPECT_EQ(0, o.ret);

	if (ok) {
		ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
		ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
		EXPECT_EQ(1, wait_efd(b.efd, PROMPT_MS));
	}
	ASSERT_EQ(0, pthread_join(bt, NULL));
	if (ok)
		EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0));
	if (!ok) {
		ASSERT_EQ(0, snpu_callback_wait(self->fd, 0, &cb));
		ASSERT_EQ(0, snpu_callback_done(self->fd, cb.cookie, 0));
	}
	EXPECT_EQ(0, snpu_stream_sync(self->fd, s, -1, NULL));
	close(o.efd);
	close(b.efd);
}

struct answerer {
	int fd;			/* answers the callback of this file */
	int fd_close;		/* after closing this one */
	int efd;
	int ret;
};

static void *close_then_answer(void *arg)
{
	struct answerer *a = arg;

	close(a->fd_close);
	a->ret = snpu_callback_answer(a->fd, -1, 0, NULL);
	signal_efd(a->efd);
	return NULL;
}

/*
 * The thread that answers the callback a BACKUP waits for first closes
 * another file of the process: the close must not wait for the backup,
 * or neither would ever finish.
 */
TEST_F(lifetime, backup_callback_answerer_closes_other_fd)
{
	struct answerer a = { .fd = self->fd };
	struct backup_helper b;
	pthread_t bt, at;
	uint32_t s;
	int ok;

	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	a.fd_close = snpu_open_dev();
	ASSERT_LE(0, a.fd_close);
	a.efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, a.efd);
	ASSERT_EQ(0, snpu_submit1(self->fd, snpu_t_host_func(s, 9)));
	ASSERT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_LOCK, -1));
	ASSERT_EQ(0, backup_start(&b, &bt, self->fd));

	ASSERT_EQ(0, pthread_create(&at, NULL, close_then_answer, &a));
	ok = wait_efd(b.efd, PROMPT_MS);
	if (!ok)
		backup_break(&b, bt);
	EXPECT_EQ(1, ok) {
		TH_LOG("the backup and the answerer's close deadlocked");
	}
	ASSERT_EQ(0, pthread_join(bt, NULL));
	ASSERT_EQ(0, pthread_join(at, NULL));
	EXPECT_EQ(0, a.ret);
	if (ok)
		EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, snap(self->fd, SNPU_IOC_SNAPSHOT_UNLOCK, 0));
	EXPECT_EQ(0, snpu_stream_sync(self->fd, s, -1, NULL));
	close(a.efd);
	close(b.efd);
}

/* ---- releases left by jobs ------------------------------------------------ */

/*
 * Host memory (registered and driver-allocated) freed while a queued copy
 * uses it: the copy still succeeds, the quota is free once the copy is
 * complete, and the pinned pages are unpinned (VmLck back where it was)
 * once the file is closed.
 */
TEST_F(lifetime, host_free_while_queued_released)
{
	const size_t bytes = 16 * PAGE;
	struct snpu_ctx_query cq;
	long long lck0;
	uint64_t dev;
	uint32_t s;
	int round;

	lck0 = snpu_proc_kb("/proc/self/status", "VmLck");
	ASSERT_LE(0, lck0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL, &s));
	ASSERT_EQ(0, snpu_alloc(self->fd, bytes, 0, &dev));

	for (round = 0; round < ROUNDS; round++) {
		bool reg = round & 1;
		unsigned char *p = NULL;
		int32_t err = 1;
		uint32_t h;

		if (reg) {
			p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			ASSERT_NE(MAP_FAILED, p);
			memset(p, round, bytes);
			ASSERT_EQ(0, snpu_host_register(self->fd, p, bytes,
							&h));
		} else {
			ASSERT_EQ(0, snpu_host_map(self->fd, bytes, &h,
						   (void **)&p));
			memset(p, round, bytes);
		}
		/* Held up by a callback, then a copy from the host memory. */
		ASSERT_EQ(0, snpu_submit1(self->fd,
					  snpu_t_host_func(s, round)));
		ASSERT_EQ(0, snpu_submit1(self->fd,
					  snpu_t_copy(s, SNPU_COPY_H2D, dev,
						      (uintptr_t)p, bytes)));
		ASSERT_EQ(0, snpu_host_free(self->fd, h));
		if (!reg)
			ASSERT_EQ(0, munmap(p, bytes));
		ASSERT_EQ(0, snpu_callback_answer(self->fd, -1, 0, NULL));
		ASSERT_EQ(0, snpu_stream_sync(self->fd, s, -1, &err));
		EXPECT_EQ(0, err);
		ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
		EXPECT_EQ(0U, cq.host_used);
		if (reg)
			ASSERT_EQ(0, munmap(p, bytes));
	}
	close(self->fd);
	self->fd = snpu_open_dev();
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(lck0, snpu_proc_kb("/proc/self/status", "VmLck"));
}

TEST_HARNESS_MAIN
