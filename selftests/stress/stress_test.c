// SPDX-License-Identifier: GPL-2.0
/*
 * snpu under load: threads sharing one context (its events) with random
 * cross-stream waits, abort and callbacks racing with submission, several
 * processes at once, and processes killed with work queued and running.
 *
 * Random choices come from a seeded generator; the seed is printed, and
 * SNPU_STRESS_SEED=<n> replays a run. Counts are bounded so that each
 * test takes a few seconds under QEMU TCG with 2 vCPUs; every wait has a
 * 30 s timeout and a timeout is a failure (no hang).
 *
 * Runs as root in the test VM with the module loaded with its defaults
 * (ctx_tasks=4096, mem_mb=256). No other program uses the device
 * meanwhile, so the device-wide sysfs counters are this test's alone.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define SYNC_TIMEOUT	(30 * NS_PER_SEC)

static uint64_t stress_seed(void)
{
	const char *env = getenv("SNPU_STRESS_SEED");

	if (env && *env)
		return strtoull(env, NULL, 0);
	return snpu_now_ns() ^ ((uint64_t)getpid() << 32);
}

/* ---- threads with cross-stream waits ------------------------------------ */

#define NTHREADS	4
#define NSTREAMS	2	/* per thread */
#define NEVENTS		16	/* shared by all threads */
#define TASKS_PER_THREAD 10000
#define BATCH		32
#define SYNC_EVERY	512
#define CHAIN_N		16U	/* u32 elements of each stream's chain */

struct shared {
	int fd;
	uint32_t events[NEVENTS];
	uint64_t one, three;	/* CHAIN_N u32 of 1 and of 3 */
};

struct worker {
	struct shared *sh;
	int id;
	uint64_t seed;
	uint32_t streams[NSTREAMS];
	uint64_t chain[NSTREAMS];	/* device buffers */
	uint64_t scratch;		/* 4 KiB device buffer */
	uint32_t want[NSTREAMS][CHAIN_N];
	uint64_t submitted[NSTREAMS];
	unsigned int waits, records;
	char failure[256];		/* empty: no failure */
};

#define FAILED(w, ...) do {						\
	if (!(w)->failure[0])						\
		snprintf((w)->failure, sizeof((w)->failure), __VA_ARGS__); \
} while (0)

static int worker_sync_all(struct worker *w)
{
	struct snpu_stream_query q;
	unsigned int i;
	int32_t err;
	int ret;

	for (i = 0; i < NSTREAMS; i++) {
		err = 0;
		ret = snpu_stream_sync(w->sh->fd, w->streams[i], SYNC_TIMEOUT,
				       &err);
		if (ret || err) {
			FAILED(w, "thread %d stream %u: sync %d error %d",
			       w->id, w->streams[i], ret, err);
			return -1;
		}
		ret = snpu_stream_query(w->sh->fd, w->streams[i], &q);
		if (ret || q.submitted != w->submitted[i] ||
		    q.completed != q.submitted) {
			FAILED(w, "thread %d stream %u: query %d submitted %llu/%llu completed %llu",
			       w->id, w->streams[i], ret,
			       (unsigned long long)q.submitted,
			       (unsigned long long)w->submitted[i],
			       (unsigned long long)q.completed);
			return -1;
		}
	}
	return 0;
}

static void *worker_fn(void *p)
{
	struct worker *w = p;
	struct shared *sh = w->sh;
	struct snpu_task batch[BATCH];
	unsigned int nb = 0, done = 0, since_sync = 0, i, j;
	uint64_t rng = w->seed;

	while (done < TASKS_PER_THREAD && !w->failure[0]) {
		unsigned int si = snpu_rand(&rng) % NSTREAMS;
		uint32_t s = w->streams[si];
		uint32_t ev = sh->events[snpu_rand(&rng) % NEVENTS];
		unsigned int r = snpu_rand(&rng) % 100;
		struct snpu_task t;

		if (r < 35) {
			bool add = snpu_rand(&rng) & 1;

			t = snpu_t_binop(s, add ? SNPU_KERNEL_ADD_I32 :
					 SNPU_KERNEL_MUL_I32, w->chain[si],
					 w->chain[si],
					 add ? sh->one : sh->three,
					 CHAIN_N * 4, 1 + snpu_rand(&rng) % 4);
			for (j = 0; j < CHAIN_N; j++)
				w->want[si][j] = add ? w->want[si][j] + 1 :
						 w->want[si][j] * 3;
		} else if (r < 50) {
			t = snpu_t_record(s, ev);
			w->records++;
		} else if (r < 65) {
			t = snpu_t_wait(s, ev);
			w->waits++;
		} else if (r < 75) {
			t = snpu_t_copy(s, SNPU_COPY_D2D, w->scratch,
					w->scratch + 2048, 1024);
		} else if (r < 85) {
			t = snpu_t_launch(s, SNPU_KERNEL_NOP,
					  1 + snpu_rand(&rng) % 8);
		} else if (r < 95) {
			t = snpu_t_memset(s, w->scratch + 2048, r, 2048);
		} else {
			t = snpu_t_spin(s, 20000 + snpu_rand(&rng) % 100000,
					1 + snpu_rand(&rng) % 3);
		}
		batch[nb++] = t;
		w->submitted[si]++;
		done++;
		since_sync++;

		if (nb == BATCH || done == TASKS_PER_THREAD) {
			int ret = snpu_submit(sh->fd, batch, nb, NULL);

			if (ret) {
				FAILED(w, "thread %d: submit of %u: %d",
				       w->id, nb, ret);
				break;
			}
			nb = 0;
			/* Poke at the shared events meanwhile. */
			for (i = 0; i < 2; i++) {
				struct snpu_event_query q;

				ev = sh->events[snpu_rand(&rng) % NEVENTS];
				ret = snpu_event_query(sh->fd, ev, &q);
				if (ret ||
				    q.state == SNPU_EVENT_NEVER_RECORDED) {
					FAILED(w, "thread %d: event query %d state %u",
					       w->id, ret, q.state);
					break;
				}
				ret = snpu_event_sync(sh->fd, ev, 0, NULL);
				if (ret && ret != -ETIMEDOUT) {
					FAILED(w, "thread %d: event sync %d",
					       w->id, ret);
					break;
				}
			}
		}
		if (since_sync >= SYNC_EVERY && !nb) {
			if (worker_sync_all(w))
				break;
			since_sync = 0;
		}
	}
	if (!w->failure[0])
		worker_sync_all(w);
	return NULL;
}

/*
 * Alongside the workers: one thread churns device memory (alloc, copy in,
 * check, free) and one creates streams, runs a little on them and
 * destroys them, so that lookups and the handle and address tables change
 * under the submissions.
 */
struct churn {
	int fd;
	uint64_t seed;
	volatile int stop;
	unsigned long rounds;
	char failure[256];
};

static void *mem_churn_fn(void *p)
{
	struct churn *c = p;
	unsigned char in[3000], out[3000];
	uint64_t rng = c->seed, a[4] = { 0 };
	unsigned int i;

	while (!c->stop && !c->failure[0]) {
		for (i = 0; i < 4; i++) {
			uint64_t len = 1 + snpu_rand(&rng) % sizeof(in);
			int ret = snpu_alloc(c->fd, len + 5000 * i,
					     1ULL << (12 + i), &a[i]);

			if (ret) {
				FAILED(c, "mem churn: alloc %d", ret);
				return NULL;
			}
			snpu_fill_random(in, len, snpu_rand(&rng));
			memset(out, 0, len);
			if (snpu_h2d(c->fd, a[i], in, len) ||
			    snpu_d2h(c->fd, out, a[i], len) ||
			    memcmp(in, out, len)) {
				FAILED(c, "mem churn: data mismatch");
				return NULL;
			}
		}
		for (i = 0; i < 4; i++)
			if (snpu_free(c->fd, a[i])) {
				FAILED(c, "mem churn: free failed");
				return NULL;
			}
		c->rounds++;
	}
	return NULL;
}

static void *stream_churn_fn(void *p)
{
	struct churn *c = p;
	uint64_t rng = c->seed, buf;
	uint32_t s, v;
	int32_t err;
	int ret;

	if (snpu_alloc(c->fd, 4096, 0, &buf)) {
		FAILED(c, "stream churn: alloc");
		return NULL;
	}
	while (!c->stop && !c->failure[0]) {
		bool force = snpu_rand(&rng) & 1;

		ret = snpu_stream_create(c->fd, (int)(snpu_rand(&rng) % 3) - 1,
					 &s);
		if (ret) {
			FAILED(c, "stream churn: create %d", ret);
			return NULL;
		}
		struct snpu_task t[3] = {
			snpu_t_spin(s, 10000, 2),
			snpu_t_fill(s, buf, 4096, (uint32_t)c->rounds, 3),
			snpu_t_nop(s),
		};
		ret = snpu_submit(c->fd, t, 3, NULL);
		if (ret) {
			FAILED(c, "stream churn: submit %d", ret);
			return NULL;
		}
		if (!force) {
			err = 1;
			ret = snpu_stream_sync(c->fd, s, SYNC_TIMEOUT, &err);
			v = 0;
			if (ret || err || snpu_d2h(c->fd, &v, buf, 4) ||
			    v != (uint32_t)c->rounds) {
				FAILED(c, "stream churn: sync %d err %d v %u",
				       ret, err, v);
				return NULL;
			}
		}
		ret = snpu_stream_destroy(c->fd, s, force ?
					  SNPU_STREAM_DESTROY_FORCE : 0);
		if (ret) {
			FAILED(c, "stream churn: destroy %d", ret);
			return NULL;
		}
		c->rounds++;
	}
	return NULL;
}

FIXTURE(stress) {
	int fd;
	uint64_t seed;
};

FIXTURE_SETUP(stress)
{
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0) TH_LOG("open " SNPU_TEST_DEV ": %s",
				      strerror(-self->fd));
	self->seed = stress_seed();
	/* stderr: unbuffered, so the seed is in the log whatever happens. */
	TH_LOG("seed %llu (SNPU_STRESS_SEED=%llu replays it)",
	       (unsigned long long)self->seed,
	       (unsigned long long)self->seed);
}

FIXTURE_TEARDOWN(stress)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int dev_fill_u32(int fd, size_t n, uint32_t v, uint64_t *addr)
{
	uint32_t tmp[256];
	size_t i;
	int ret;

	if (n > 256)
		return -EINVAL;
	for (i = 0; i < n; i++)
		tmp[i] = v;
	ret = snpu_alloc(fd, n * 4, 0, addr);
	return ret ? ret : snpu_h2d(fd, *addr, tmp, n * 4);
}

TEST_F_TIMEOUT(stress, threads_random_cross_waits, 120)
{
	struct worker *w = calloc(NTHREADS, sizeof(*w));
	struct churn mc = { 0 }, sc = { 0 };
	pthread_t th[NTHREADS], mth, sth;
	struct snpu_ctx_query cq;
	struct shared sh = { .fd = self->fd };
	unsigned int i, j, k, waits = 0, records = 0;
	uint64_t arena;
	uint32_t setup, got[CHAIN_N];

	ASSERT_NE(NULL, w);
	/*
	 * One arena holds every buffer of the workers (the test is about
	 * concurrency, not about how many allocations a context may hold):
	 * per thread 4 KiB of scratch and a 64-byte chain per stream, then
	 * the shared vectors of ones and threes.
	 */
	ASSERT_EQ(0, snpu_alloc(self->fd, NTHREADS * 8192 + 8192, 0, &arena));
	sh.one = arena + NTHREADS * 8192;
	sh.three = sh.one + 4096;
	for (k = 0; k < CHAIN_N; k++) {
		got[k] = 1;
		ASSERT_EQ(0, snpu_h2d(self->fd, sh.one + 4 * k, &got[k], 4));
		got[k] = 3;
		ASSERT_EQ(0, snpu_h2d(self->fd, sh.three + 4 * k, &got[k], 4));
	}
	/* Every event recorded once, so that any wait is valid. */
	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &setup));
	for (i = 0; i < NEVENTS; i++) {
		ASSERT_EQ(0, snpu_event_create(self->fd, &sh.events[i]));
		ASSERT_EQ(0, snpu_submit1(self->fd,
				snpu_t_record(setup, sh.events[i])));
	}
	for (i = 0; i < NTHREADS; i++) {
		w[i].sh = &sh;
		w[i].id = i;
		w[i].seed = self->seed + 0x9e3779b97f4a7c15ULL * (i + 1);
		w[i].scratch = arena + i * 8192;
		for (j = 0; j < NSTREAMS; j++) {
			ASSERT_EQ(0, snpu_stream_create(self->fd,
					(int)((i + j) % 3) - 1,
					&w[i].streams[j]));
			for (k = 0; k < CHAIN_N; k++)
				w[i].want[j][k] = i * 1000 + j * 100 + k;
			w[i].chain[j] = arena + i * 8192 + 4096 + j * 256;
			ASSERT_EQ(0, snpu_h2d(self->fd, w[i].chain[j],
					      w[i].want[j], CHAIN_N * 4));
		}
	}
	mc.fd = sc.fd = self->fd;
	mc.seed = self->seed ^ 0x1111;
	sc.seed = self->seed ^ 0x2222;
	ASSERT_EQ(0, pthread_create(&mth, NULL, mem_churn_fn, &mc));
	ASSERT_EQ(0, pthread_create(&sth, NULL, stream_churn_fn, &sc));
	for (i = 0; i < NTHREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_fn, &w[i]));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	mc.stop = sc.stop = 1;
	pthread_join(mth, NULL);
	pthread_join(sth, NULL);
	EXPECT_EQ(0, mc.failure[0]) TH_LOG("%s", mc.failure);
	EXPECT_EQ(0, sc.failure[0]) TH_LOG("%s", sc.failure);
	EXPECT_GT(mc.rounds, 0U);
	EXPECT_GT(sc.rounds, 0U);
	TH_LOG("memory churn rounds %lu, stream churn rounds %lu", mc.rounds,
	       sc.rounds);

	for (i = 0; i < NTHREADS; i++) {
		EXPECT_EQ(0, w[i].failure[0]) TH_LOG("%s", w[i].failure);
		waits += w[i].waits;
		records += w[i].records;
		for (j = 0; j < NSTREAMS; j++) {
			ASSERT_EQ(0, snpu_d2h(self->fd, got, w[i].chain[j],
					      sizeof(got)));
			for (k = 0; k < CHAIN_N; k++)
				if (got[k] != w[i].want[j][k])
					break;
			EXPECT_EQ(CHAIN_N, k)
				TH_LOG("thread %u stream %u element %u: 0x%08x, want 0x%08x",
				       i, j, k, got[k % CHAIN_N],
				       w[i].want[j][k % CHAIN_N]);
		}
	}
	EXPECT_GT(waits, 100U);
	EXPECT_GT(records, 100U);
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &cq));
	EXPECT_EQ(0U, cq.tasks);
	free(w);
}

/* ---- abort racing with submission --------------------------------------- */

struct submitter {
	int fd;
	uint32_t s;
	uint64_t buf;
	volatile int stop;
	unsigned long ok, eio, other;
	int other_err;
};

static void *submit_loop(void *p)
{
	struct submitter *sb = p;

	while (!sb->stop) {
		struct snpu_task t[3] = {
			snpu_t_spin(sb->s, 200000, 1),
			snpu_t_fill(sb->s, sb->buf, 4096, 0x5a5a, 2),
			snpu_t_memset(sb->s, sb->buf, 1, 64),
		};
		int ret = snpu_submit(sb->fd, t, 3, NULL);

		if (!ret)
			sb->ok++;
		else if (ret == -EIO)
			sb->eio++;
		else if (ret == -ENOSPC)
			sched_yield();
		else {
			sb->other++;
			sb->other_err = ret;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(stress, abort_reset_while_submitting, 90)
{
	struct submitter sb = { .fd = self->fd };
	struct snpu_stream_query q;
	uint64_t rng = self->seed;
	unsigned int i;
	pthread_t th;
	int32_t err;
	int ret;

	ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &sb.s));
	ASSERT_EQ(0, snpu_alloc(self->fd, 4096, 0, &sb.buf));
	ASSERT_EQ(0, pthread_create(&th, NULL, submit_loop, &sb));
	for (i = 0; i < 60; i++) {
		struct timespec ts = { 0, (snpu_rand(&rng) % 5000) * 1000 };

		nanosleep(&ts, NULL);
		ASSERT_EQ(0, snpu_stream_abort(self->fd, sb.s));
		/* The aborted stream settles; then it can be reset. */
		err = 0;
		ASSERT_EQ(0, snpu_stream_sync(self->fd, sb.s, SYNC_TIMEOUT,
					      &err));
		EXPECT_EQ(-ECANCELED, err);
		/*
		 * From the abort on, submissions are refused (EIO), so the
		 * stream that synchronized has nothing left: reset works.
		 */
		ret = snpu_stream_reset(self->fd, sb.s);
		ASSERT_EQ(0, ret) TH_LOG("reset after sync: %d", ret);
	}
	sb.stop = 1;
	pthread_join(th, NULL);
	ASSERT_EQ(0, snpu_stream_sync(self->fd, sb.s, SYNC_TIMEOUT, &err));
	EXPECT_EQ(0U, sb.other) TH_LOG("unexpected submit error %d",
				       sb.other_err);
	EXPECT_GT(sb.ok, 0U);
	ASSERT_EQ(0, snpu_stream_query(self->fd, sb.s, &q));
	EXPECT_EQ(q.submitted, q.completed);
	EXPECT_EQ(3 * sb.ok, q.submitted);
}

/* ---- callbacks answered by a thread while others submit ----------------- */

#define CB_STREAMS	4
#define CB_PER_STREAM	200

struct cb_answerer {
	int fd;
	unsigned int answered;
	unsigned char seen[CB_STREAMS][CB_PER_STREAM];
	uint32_t streams[CB_STREAMS];
	char failure[200];
};

static void *answer_loop(void *p)
{
	struct cb_answerer *a = p;
	struct snpu_callback cb;
	unsigned int si;

	while (a->answered < CB_STREAMS * CB_PER_STREAM) {
		int ret = snpu_callback_wait(a->fd, SYNC_TIMEOUT, &cb);
		uint64_t ud;

		if (ret) {
			FAILED(a, "callback wait: %d after %u", ret,
			       a->answered);
			return NULL;
		}
		ud = cb.user_data;
		si = ud >> 32;
		if (si >= CB_STREAMS || (uint32_t)ud >= CB_PER_STREAM ||
		    a->streams[si] != cb.stream ||
		    a->seen[si][(uint32_t)ud]++) {
			FAILED(a, "bad or repeated callback 0x%llx stream %u",
			       (unsigned long long)ud, cb.stream);
			return NULL;
		}
		/* In stream order: the previous one was seen. */
		if ((uint32_t)ud && !a->seen[si][(uint32_t)ud - 1]) {
			FAILED(a, "callback 0x%llx before its predecessor",
			       (unsigned long long)ud);
			return NULL;
		}
		ret = snpu_callback_done(a->fd, cb.cookie, 0);
		if (ret) {
			FAILED(a, "callback done: %d", ret);
			return NULL;
		}
		a->answered++;
	}
	return NULL;
}

TEST_F_TIMEOUT(stress, callbacks_with_concurrent_submitters, 90)
{
	struct cb_answerer a = { .fd = self->fd };
	struct snpu_task t[4];
	unsigned int i, si;
	uint64_t data[CB_STREAMS];
	pthread_t th;
	int32_t err;

	for (si = 0; si < CB_STREAMS; si++) {
		ASSERT_EQ(0, snpu_stream_create(self->fd, 0, &a.streams[si]));
		ASSERT_EQ(0, snpu_alloc(self->fd, 64, 0, &data[si]));
	}
	ASSERT_EQ(0, pthread_create(&th, NULL, answer_loop, &a));
	for (i = 0; i < CB_PER_STREAM; i++) {
		for (si = 0; si < CB_STREAMS; si++) {
			t[si] = snpu_t_host_func(a.streams[si],
						 ((uint64_t)si << 32) | i);
		}
		ASSERT_EQ(0, snpu_submit(self->fd, t, CB_STREAMS, NULL));
		for (si = 0; si < CB_STREAMS; si++)
			t[si] = snpu_t_fill(a.streams[si], data[si], 64, i, 1);
		ASSERT_EQ(0, snpu_submit(self->fd, t, CB_STREAMS, NULL));
	}
	pthread_join(th, NULL);
	EXPECT_EQ(0, a.failure[0]) TH_LOG("%s", a.failure);
	EXPECT_EQ((unsigned int)(CB_STREAMS * CB_PER_STREAM), a.answered);
	for (si = 0; si < CB_STREAMS; si++) {
		uint32_t v = 0;

		err = 1;
		ASSERT_EQ(0, snpu_stream_sync(self->fd, a.streams[si],
					      SYNC_TIMEOUT, &err));
		EXPECT_EQ(0, err);
		ASSERT_EQ(0, snpu_d2h(self->fd, &v, data[si], 4));
		EXPECT_EQ(CB_PER_STREAM - 1U, v);
	}
}

/* ---- several processes at once ------------------------------------------ */

/* A child's whole run: its own context, a chain, checked. Exit 0 if right. */
static int child_chain(uint64_t seed)
{
	const unsigned int n = 32, steps = 1500;
	struct snpu_task *t = calloc(steps, sizeof(*t));
	uint32_t want[32], got[32], s;
	uint64_t x, one, three, rng = seed;
	unsigned int i, j;
	int32_t err = 1;
	int fd = snpu_open_dev();

	if (fd < 0 || !t)
		return 10;
	for (j = 0; j < n; j++)
		want[j] = seed + j;
	if (snpu_stream_create(fd, (int)(seed % 3) - 1, &s) ||
	    snpu_alloc(fd, n * 4, 0, &x) || snpu_h2d(fd, x, want, n * 4) ||
	    dev_fill_u32(fd, n, 1, &one) || dev_fill_u32(fd, n, 3, &three))
		return 11;
	for (i = 0; i < steps; i++) {
		bool add = snpu_rand(&rng) & 1;

		t[i] = snpu_t_binop(s, add ? SNPU_KERNEL_ADD_I32 :
				    SNPU_KERNEL_MUL_I32, x, x,
				    add ? one : three, n * 4, 3);
		for (j = 0; j < n; j++)
			want[j] = add ? want[j] + 1 : want[j] * 3;
	}
	if (snpu_submit_all(fd, t, steps))
		return 12;
	if (snpu_stream_sync(fd, s, SYNC_TIMEOUT, &err) || err)
		return 13;
	if (snpu_d2h(fd, got, x, n * 4) || memcmp(got, want, n * 4))
		return 14;
	close(fd);
	free(t);
	return 0;
}

TEST_F_TIMEOUT(stress, concurrent_processes, 90)
{
	pid_t pid[4];
	int i, st;
	long long used = -1;

	for (i = 0; i < 4; i++) {
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (!pid[i])
			_exit(child_chain(self->seed + i * 1000003));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("child %d: status 0x%x", i, st);
	}
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(0, used);
}

/* ---- processes killed with work queued ---------------------------------- */

/*
 * The child fills the task quota with 1 ms spins on four streams (plus a
 * callback it takes and never answers, memory of both kinds, host memory
 * mapped and registered), tells the parent, then blocks in a sync.
 */
static void child_busy(int ready_fd, bool full)
{
	struct snpu_task *t = calloc(SNPU_SUBMIT_MAX, sizeof(*t));
	long page = sysconf(_SC_PAGESIZE);
	struct snpu_callback cb;
	uint32_t s[4], h;
	uint64_t a;
	unsigned int i, k, total = 0;
	void *p = NULL, *reg = NULL;
	char c = 'r';
	int fd = snpu_open_dev();

	if (fd < 0 || !t)
		_exit(20);
	if (snpu_alloc(fd, 8 << 20, 0, &a) ||
	    snpu_host_map(fd, 4 * page, &h, &p) ||
	    posix_memalign(&reg, page, 4 * page))
		_exit(21);
	memset(reg, 0, 4 * page);
	if (snpu_host_register(fd, reg, 4 * page, &h))
		_exit(22);
	for (i = 0; i < 4; i++)
		if (snpu_stream_create(fd, (int)i % 3 - 1, &s[i]))
			_exit(23);
	/* A delivered callback holds stream 3. */
	if (snpu_submit1(fd, snpu_t_host_func(s[3], 1)) ||
	    snpu_callback_wait(fd, SYNC_TIMEOUT, &cb))
		_exit(24);
	total = 1;
	for (i = 0; i < 4 && total < SNPU_TEST_TASKS; i++) {
		unsigned int n = SNPU_SUBMIT_MAX;

		if (!full)
			n = 256;
		if (total + n > SNPU_TEST_TASKS)
			n = SNPU_TEST_TASKS - total;
		for (k = 0; k < n; k++) {
			switch (k % 4) {
			case 0:
				t[k] = snpu_t_copy(s[i], SNPU_COPY_H2D, a,
						   (uintptr_t)p, 4 * page);
				break;
			case 1:
				t[k] = snpu_t_copy(s[i], SNPU_COPY_D2H,
						   (uintptr_t)reg, a, 4 * page);
				break;
			default:
				t[k] = snpu_t_spin(s[i], NS_PER_MS, 2);
				break;
			}
		}
		if (snpu_submit(fd, t, n, NULL))
			_exit(25);
		total += n;
	}
	if (write(ready_fd, &c, 1) != 1)
		_exit(26);
	snpu_stream_sync(fd, s[0], -1, NULL);
	_exit(27);	/* not reached: killed first */
}

static void check_device_healthy(struct __test_metadata *_metadata,
				 long long contexts0)
{
	long long used = -1, ctxs = -1;
	struct snpu_ctx_query cq;
	uint32_t s, v = 0;
	uint64_t a;
	int32_t err = 1;
	int fd;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &ctxs));
	EXPECT_EQ(contexts0, ctxs);
	ASSERT_EQ(0, snpu_sysfs_read("mem_used", &used));
	EXPECT_EQ(0, used);
	fd = snpu_open_dev();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, snpu_ctx_query(fd, &cq));
	EXPECT_EQ(0U, cq.tasks);
	EXPECT_EQ(0U, cq.mem_used);
	ASSERT_EQ(0, snpu_stream_create(fd, 0, &s));
	ASSERT_EQ(0, snpu_alloc(fd, 4096, 0, &a));
	ASSERT_EQ(0, snpu_submit1(fd, snpu_t_fill(s, a, 4096, 0xfeed, 4)));
	ASSERT_EQ(0, snpu_stream_sync(fd, s, SYNC_TIMEOUT, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, snpu_d2h(fd, &v, a + 4092, 4));
	EXPECT_EQ(0xfeedU, v);
	close(fd);
}

static void kill_busy_child(struct __test_metadata *_metadata, bool full,
			    unsigned int delay_us)
{
	int pfd[2], st;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pfd[0]);
		child_busy(pfd[1], full);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1)) TH_LOG("the child failed early");
	close(pfd[0]);
	if (delay_us)
		usleep(delay_us);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		TH_LOG("child status 0x%x", st);
}

TEST_F_TIMEOUT(stress, killed_with_full_queue, 90)
{
	long long c0 = -1;

	/* The fixture's own context stays open: count it. */
	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	kill_busy_child(_metadata, true, 0);
	check_device_healthy(_metadata, c0);
}

TEST_F_TIMEOUT(stress, killed_repeatedly_at_random_times, 120)
{
	uint64_t rng = self->seed;
	long long c0 = -1;
	int i;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	for (i = 0; i < 6; i++) {
		kill_busy_child(_metadata, i & 1, snpu_rand(&rng) % 30000);
		check_device_healthy(_metadata, c0);
	}
}

/* Killed in the middle of submitting (no handshake: any moment). */
static void child_submit_forever(void)
{
	struct snpu_task t[64];
	uint32_t s;
	uint64_t a;
	int i, fd = snpu_open_dev();

	if (fd < 0 || snpu_stream_create(fd, 0, &s) ||
	    snpu_alloc(fd, 4096, 0, &a))
		_exit(30);
	for (i = 0; i < 64; i++)
		t[i] = i % 2 ? snpu_t_spin(s, 50000, 1) :
			       snpu_t_fill(s, a, 4096, i, 2);
	for (;;) {
		if (snpu_submit(fd, t, 64, NULL) == -ENOSPC)
			snpu_stream_sync(fd, s, NS_PER_MS, NULL);
	}
}

TEST_F_TIMEOUT(stress, killed_while_submitting, 90)
{
	uint64_t rng = self->seed ^ 0xabcdef;
	long long c0 = -1;
	int i, st;

	ASSERT_EQ(0, snpu_sysfs_read("contexts", &c0));
	for (i = 0; i < 6; i++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (!pid)
			child_submit_forever();
		usleep(20000 + snpu_rand(&rng) % 100000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st)) TH_LOG("child status 0x%x", st);
		check_device_healthy(_metadata, c0);
	}
}

TEST_HARNESS_MAIN
