// SPDX-License-Identifier: GPL-2.0
/*
 * snpu command queues against the real driver: SNPU_IOC_RING_SETUP, the
 * mapped submission (SQ) and completion (CQ) rings, SNPU_IOC_ENTER and the
 * kernel poller (SNPU_RING_SQPOLL), as uapi/linux/snpu.h documents them.
 *
 * The normal path goes through libsnpu (snpu_ring_*). Where a test has to
 * break the protocol (a garbage SQ tail, a bogus CQ head, an unmapped
 * ring, fields the library never sets) it issues the ioctls and maps the
 * rings itself ("raw"), on the same file as the library's device.
 *
 * Runs as root in the test VM with the module loaded with its default
 * parameters (devices=1 cores=4 mem_mb=256 ctx_tasks=4096). Every test
 * runs in its own process; the fixture opens /dev/snpu0 with snpu_open()
 * and creates one stream, and sets up no ring.
 *
 * No test depends on how fast the VM is: work is waited for with stream
 * synchronize or with ENTER, never with a sleep, and the few loops that
 * poll the shared memory (the poller's flag, a context that only a mapping
 * keeps) have deadlines far above what they need.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "snpu.h"

#include "kselftest_harness.h"

#define NS_PER_MS	1000000LL
#define NS_PER_SEC	1000000000LL

/* mmap(2) offset of the rings that RING_SETUP reports. */
#define RING_MMAP_OFFSET	SNPU_RING_MMAP_OFFSET
#define SYSFS_CONTEXTS		"/sys/class/misc/snpu0/contexts"

/* A handle no object of a fresh context has. */
#define BAD_HANDLE	0x7ffffff0U
/* A device address no allocation of a fresh context covers. */
#define BAD_ADDR	0x1000ULL

#define MAX_STREAMS	4
/* user_data of the i-th task of stream number s (not handle) of a test. */
#define UD(s, i)	(((uint64_t)(s) << 32) | (uint32_t)(i))
#define UD_STREAM(u)	((unsigned int)((u) >> 32))
#define UD_INDEX(u)	((uint32_t)(u))

/* Deadline of the loops that poll shared memory. */
#define POLL_DEADLINE_NS	(10 * NS_PER_SEC)
/* Timeout of ENTER waits that must be satisfied (a hang fails instead). */
#define WAIT_NS			(10 * NS_PER_SEC)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Return: 0 or -errno; the ioctl(2) of @cmd on @fd with @arg. */
static int rioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* Return: 0 or -errno; *@val: the device's number of open contexts. */
static int sysfs_contexts(long long *val)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = open(SYSFS_CONTEXTS, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	*val = strtoll(buf, NULL, 10);
	return 0;
}

/* ---- raw ioctls ------------------------------------------------------- */

static void setup_args(struct snpu_ring_setup *s, uint32_t flags,
		       uint32_t sq, uint32_t cq, uint32_t idle_ms)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->flags = flags;
	s->sq_entries = sq;
	s->cq_entries = cq;
	s->idle_ms = idle_ms;
}

static void enter_args(struct snpu_enter *e, uint32_t to_submit,
		       uint32_t min_complete, uint32_t flags,
		       int64_t timeout_ns)
{
	memset(e, 0, sizeof(*e));
	e->size = sizeof(*e);
	e->flags = flags;
	e->to_submit = to_submit;
	e->min_complete = min_complete;
	e->timeout_ns = timeout_ns;
}

/* Return: 0 or -errno; *@submitted (if given) set on success. */
static int raw_enter(int fd, uint32_t to_submit, uint32_t min_complete,
		     uint32_t flags, int64_t timeout_ns, uint32_t *submitted)
{
	struct snpu_enter e;
	int ret;

	enter_args(&e, to_submit, min_complete, flags, timeout_ns);
	ret = rioc(fd, SNPU_IOC_ENTER, &e);
	if (!ret && submitted)
		*submitted = e.submitted;
	return ret;
}

/*
 * The rings as the kernel lays them out, mapped by the test itself. The
 * test owns the SQ tail and the CQ head and may write anything there.
 */
struct rawring {
	int fd;
	void *mem;
	size_t bytes;
	struct snpu_ring_setup p;
	uint32_t *sq_head, *sq_tail, *sq_flags, *sq_counter;
	uint32_t sq_mask, sq_entries;
	struct snpu_task *sqes;
	uint32_t *cq_head, *cq_tail, *cq_flags, *cq_counter;
	uint32_t cq_mask, cq_entries;
	struct snpu_cqe *cqes;
};

static uint32_t *word_at(void *mem, uint32_t off)
{
	return (uint32_t *)((char *)mem + off);
}

/* Point @rr at a mapping @mem of the rings that @rr->p describes. */
static void rr_bind(struct rawring *rr, void *mem)
{
	const struct snpu_ring_setup *p = &rr->p;

	rr->mem = mem;
	rr->bytes = p->mmap_bytes;
	rr->sq_head = word_at(mem, p->sq.head);
	rr->sq_tail = word_at(mem, p->sq.tail);
	rr->sq_flags = word_at(mem, p->sq.flags);
	rr->sq_counter = word_at(mem, p->sq.counter);
	rr->sq_mask = *word_at(mem, p->sq.mask);
	rr->sq_entries = *word_at(mem, p->sq.entries);
	rr->sqes = (struct snpu_task *)((char *)mem + p->sq.array);
	rr->cq_head = word_at(mem, p->cq.head);
	rr->cq_tail = word_at(mem, p->cq.tail);
	rr->cq_flags = word_at(mem, p->cq.flags);
	rr->cq_counter = word_at(mem, p->cq.counter);
	rr->cq_mask = *word_at(mem, p->cq.mask);
	rr->cq_entries = *word_at(mem, p->cq.entries);
	rr->cqes = (struct snpu_cqe *)((char *)mem + p->cq.array);
}

/* Map the rings of @rr->p on @rr->fd. Return: 0 or -errno. */
static int rr_map(struct rawring *rr)
{
	void *mem;

	mem = mmap(NULL, rr->p.mmap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		   rr->fd, (off_t)rr->p.mmap_offset);
	if (mem == MAP_FAILED)
		return -errno;
	rr_bind(rr, mem);
	return 0;
}

/* RING_SETUP of @s on @fd, then map. Return: 0 or -errno. */
static int rr_init(int fd, struct snpu_ring_setup *s, struct rawring *rr)
{
	int ret;

	memset(rr, 0, sizeof(*rr));
	rr->fd = fd;
	ret = rioc(fd, SNPU_IOC_RING_SETUP, s);
	if (ret)
		return ret;
	rr->p = *s;
	return rr_map(rr);
}

static void rr_unmap(struct rawring *rr)
{
	if (rr->mem)
		munmap(rr->mem, rr->bytes);
	rr->mem = NULL;
}

/* Append @t to the SQ and publish it. Return: 0 or -ENOSPC when full. */
static int rr_push(struct rawring *rr, const struct snpu_task *t)
{
	uint32_t tail = *rr->sq_tail;

	if (tail - __atomic_load_n(rr->sq_head, __ATOMIC_ACQUIRE) >=
	    rr->sq_entries)
		return -ENOSPC;
	rr->sqes[tail & rr->sq_mask] = *t;
	__atomic_store_n(rr->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Copy up to @max completions out of the CQ and hand them back. */
static unsigned int rr_reap(struct rawring *rr, struct snpu_cqe *out,
			    unsigned int max)
{
	uint32_t head = *rr->cq_head;
	uint32_t tail = __atomic_load_n(rr->cq_tail, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	while (head != tail && n < max)
		out[n++] = rr->cqes[head++ & rr->cq_mask];
	__atomic_store_n(rr->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

/* ---- tasks ------------------------------------------------------------ */

static void prep_nop(struct snpu_task *t, uint32_t stream, uint64_t ud)
{
	snpu_prep_launch(t, stream, SNPU_KERNEL_NOP, 1, NULL, 0);
	t->user_data = ud;
}

static void prep_spin(struct snpu_task *t, uint32_t stream, uint64_t ns,
		      uint64_t ud)
{
	struct snpu_kernel_arg a = snpu_arg_u64(ns);

	snpu_prep_launch(t, stream, SNPU_KERNEL_SPIN, 1, &a, 1);
	t->user_data = ud;
}

static void prep_fail(struct snpu_task *t, uint32_t stream, int err,
		      uint64_t ud)
{
	struct snpu_kernel_arg a = snpu_arg_u64((uint64_t)err);

	snpu_prep_launch(t, stream, SNPU_KERNEL_FAIL, 1, &a, 1);
	t->user_data = ud;
}

static struct snpu_task task_nop(uint32_t stream, uint64_t ud)
{
	struct snpu_task t;

	prep_nop(&t, stream, ud);
	return t;
}

static struct snpu_task task_spin(uint32_t stream, uint64_t ns, uint64_t ud)
{
	struct snpu_task t;

	prep_spin(&t, stream, ns, ud);
	return t;
}

/* A NOP in the next free SQE of @ring. Return: 0 or -ENOSPC (SQ full). */
static int sqe_nop(struct snpu_ring *ring, uint32_t stream, uint64_t ud)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(ring);

	if (!sqe)
		return -ENOSPC;
	prep_nop(sqe, stream, ud);
	return 0;
}

static int sqe_spin(struct snpu_ring *ring, uint32_t stream, uint64_t ns,
		    uint64_t ud)
{
	struct snpu_task *sqe = snpu_ring_get_sqe(ring);

	if (!sqe)
		return -ENOSPC;
	prep_spin(sqe, stream, ns, ud);
	return 0;
}

/* The next free SQE of @ring; the test fails when the SQ is full. */
#define GET_SQE(ring) ({						\
	struct snpu_task *__sqe = snpu_ring_get_sqe(ring);		\
									\
	ASSERT_NE(NULL, __sqe) TH_LOG("SQ full");			\
	__sqe;								\
})

/* Copy up to @max completions out of @ring with peek/seen. */
static unsigned int reap(struct snpu_ring *ring, struct snpu_cqe *out,
			 unsigned int max)
{
	struct snpu_cqe *cqe;
	unsigned int n = 0;

	while (n < max && !snpu_ring_peek_cqe(ring, &cqe)) {
		out[n++] = *cqe;
		snpu_ring_cqe_seen(ring, cqe);
	}
	return n;
}

/* Wait for and copy exactly @n completions. Return: 0 or -errno. */
static int reap_n(struct snpu_ring *ring, struct snpu_cqe *out, unsigned int n)
{
	struct snpu_cqe *cqe;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = snpu_ring_wait_cqe(ring, &cqe);
		if (ret)
			return ret;
		out[i] = *cqe;
		snpu_ring_cqe_seen(ring, cqe);
	}
	return 0;
}

/* Return: the index in @c[0..n) of the completion of @ud, or -1. */
static int find_ud(const struct snpu_cqe *c, unsigned int n, uint64_t ud)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (c[i].user_data == ud)
			return (int)i;
	return -1;
}

/*
 * Completions of tasks UD(s, i), i = 0, 1, ... per stream s, every task
 * expected to succeed: each must come exactly once, in stream order, with
 * the stream's sequence number (the first task of the test on a stream has
 * seq0[s] + 0) and a completion time that does not go backwards.
 */
struct order {
	unsigned int nstreams;
	uint64_t next[MAX_STREAMS];
	uint64_t seq0[MAX_STREAMS];
	uint64_t last_ns[MAX_STREAMS];
};

static void order_init(struct order *o, unsigned int nstreams)
{
	unsigned int s;

	memset(o, 0, sizeof(*o));
	o->nstreams = nstreams;
	for (s = 0; s < MAX_STREAMS; s++)
		o->seq0[s] = 1;
}

/* Return: NULL, or what is wrong with @c. */
static const char *order_check(struct order *o, const struct snpu_cqe *c)
{
	unsigned int s = UD_STREAM(c->user_data);
	uint64_t i = UD_INDEX(c->user_data);

	if (s >= o->nstreams)
		return "user_data names no stream of the test";
	if (c->result)
		return "result is not 0";
	if (c->flags)
		return "flags are not 0";
	if (i != o->next[s])
		return "not the next task of its stream (lost, repeated or out of order)";
	if (c->seq != o->seq0[s] + i)
		return "seq is not the task's sequence number in its stream";
	if (c->time_ns < o->last_ns[s])
		return "time_ns is before the previous completion of its stream";
	o->next[s]++;
	o->last_ns[s] = c->time_ns;
	return NULL;
}

#define ASSERT_ORDER(o, c) do {						\
	const struct snpu_cqe *__c = (c);				\
	const char *__why = order_check(o, __c);			\
									\
	ASSERT_TRUE(__why == NULL)					\
		TH_LOG("cqe user_data %#llx result %d seq %llu: %s",	\
		       (unsigned long long)__c->user_data, __c->result,	\
		       (unsigned long long)__c->seq, __why);		\
} while (0)

/* ---- the fixture ------------------------------------------------------- */

FIXTURE(ring) {
	struct snpu_device *dev;
	int fd;
	uint32_t stream;
	struct snpu_ring ring;		/* set up by the test, if at all */
	struct rawring rr;		/* mapped by the test, if at all */
};

FIXTURE_SETUP(ring)
{
	ASSERT_EQ(0, snpu_open(0, 0, &self->dev));
	self->fd = snpu_device_fd(self->dev);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&self->stream));
}

FIXTURE_TEARDOWN(ring)
{
	snpu_ring_exit(&self->ring);
	rr_unmap(&self->rr);
	if (self->dev)
		snpu_close(self->dev);
}

/* ---- setup: errors, one variant per rule ------------------------------ */

FIXTURE(setup_bad) {
	int fd;
};

FIXTURE_VARIANT(setup_bad) {
	uint32_t size;
	uint32_t flags;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t idle_ms;
	uint32_t pad;
	int reserved;		/* index of a reserved word to set, or -1 */
	int error;
};

FIXTURE_VARIANT_ADD(setup_bad, sq_zero) {
	.sq_entries = 0, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, sq_not_power_of_two) {
	.sq_entries = 3, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, sq_above_max) {
	.sq_entries = 8192, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, cq_below_sq) {
	.sq_entries = 8, .cq_entries = 4, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, cq_not_power_of_two) {
	.sq_entries = 8, .cq_entries = 24, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, cq_above_max) {
	.sq_entries = 4096, .cq_entries = 16384, .reserved = -1,
	.error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, idle_ms_without_sqpoll) {
	.sq_entries = 8, .idle_ms = 10, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, idle_ms_above_max) {
	.flags = SNPU_RING_SQPOLL, .sq_entries = 8, .idle_ms = 10001,
	.reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, flags_unknown_bit) {
	.flags = 1U << 2, .sq_entries = 8, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, flags_top_bit) {
	.flags = 1U << 31, .sq_entries = 8, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, pad_nonzero) {
	.sq_entries = 8, .pad = 1, .reserved = -1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, reserved0_nonzero) {
	.sq_entries = 8, .reserved = 0, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, reserved1_nonzero) {
	.sq_entries = 8, .reserved = 1, .error = EINVAL,
};

FIXTURE_VARIANT_ADD(setup_bad, size_below_ver0) {
	.size = SNPU_RING_SETUP_SIZE_VER0 - 8, .sq_entries = 8,
	.reserved = -1, .error = EINVAL,
};

FIXTURE_SETUP(setup_bad)
{
	self->fd = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/snpu0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(setup_bad)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The setup is refused with the variant's errno, and consumes nothing: the
 * file still has no rings (ENTER and mmap say ENXIO) and a valid setup
 * afterwards succeeds.
 */
TEST_F(setup_bad, refused)
{
	struct snpu_ring_setup s, good;
	void *mem;

	setup_args(&s, variant->flags, variant->sq_entries,
		   variant->cq_entries, variant->idle_ms);
	if (variant->size)
		s.size = variant->size;
	s.pad = variant->pad;
	if (variant->reserved >= 0)
		s.reserved[variant->reserved] = 1;
	ASSERT_EQ(-variant->error, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));

	EXPECT_EQ(-ENXIO, raw_enter(self->fd, 0, 0, 0, 0, NULL));
	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   (off_t)RING_MMAP_OFFSET);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(ENXIO, errno);

	setup_args(&good, 0, 8, 0, 0);
	ASSERT_EQ(0, rioc(self->fd, SNPU_IOC_RING_SETUP, &good));
	EXPECT_EQ(RING_MMAP_OFFSET, good.mmap_offset);
}

/* ---- setup: valid shapes and the layout they report ------------------- */

FIXTURE(setup_ok) {
	int fd;
	void *mem;
	size_t bytes;
};

FIXTURE_VARIANT(setup_ok) {
	uint32_t flags;
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t idle_ms;
	uint32_t want_cq;
};

FIXTURE_VARIANT_ADD(setup_ok, sq1_cq_default) {
	.sq_entries = 1, .want_cq = 2,
};

FIXTURE_VARIANT_ADD(setup_ok, sq8_cq_default) {
	.sq_entries = 8, .want_cq = 16,
};

FIXTURE_VARIANT_ADD(setup_ok, sq8_cq8) {
	.sq_entries = 8, .cq_entries = 8, .want_cq = 8,
};

FIXTURE_VARIANT_ADD(setup_ok, sq4_cq64) {
	.sq_entries = 4, .cq_entries = 64, .want_cq = 64,
};

FIXTURE_VARIANT_ADD(setup_ok, sq_max_cq_max) {
	.sq_entries = 4096, .cq_entries = 8192, .want_cq = 8192,
};

FIXTURE_VARIANT_ADD(setup_ok, sq_max_cq_default) {
	.sq_entries = 4096, .want_cq = 8192,
};

FIXTURE_VARIANT_ADD(setup_ok, sqpoll_idle_default) {
	.flags = SNPU_RING_SQPOLL, .sq_entries = 16, .want_cq = 32,
};

FIXTURE_VARIANT_ADD(setup_ok, sqpoll_idle_1) {
	.flags = SNPU_RING_SQPOLL, .sq_entries = 16, .idle_ms = 1,
	.want_cq = 32,
};

FIXTURE_VARIANT_ADD(setup_ok, sqpoll_idle_max) {
	.flags = SNPU_RING_SQPOLL, .sq_entries = 16, .idle_ms = 10000,
	.want_cq = 32,
};

FIXTURE_SETUP(setup_ok)
{
	self->fd = open("/dev/snpu0", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/snpu0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(setup_ok)
{
	if (self->mem)
		munmap(self->mem, self->bytes);
	if (self->fd >= 0)
		close(self->fd);
}

/* Return: 1 when [a, a + an) and [b, b + bn) overlap. */
static int overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

/*
 * Every offset lies inside the mapping, the header words are distinct and
 * outside both arrays, the arrays hold their entries without overlapping,
 * and the words read through the mapping are what was asked for.
 */
TEST_F(setup_ok, offsets_sane)
{
	struct snpu_ring_setup s;
	const struct snpu_ring_offsets *o[2];
	uint32_t words[12], n = 0, i, j, k;
	uint64_t sq_bytes, cq_bytes;
	long page = sysconf(_SC_PAGESIZE);

	setup_args(&s, variant->flags, variant->sq_entries,
		   variant->cq_entries, variant->idle_ms);
	ASSERT_EQ(0, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));
	EXPECT_EQ((uint32_t)sizeof(s), s.size);
	EXPECT_EQ(RING_MMAP_OFFSET, s.mmap_offset);
	ASSERT_GT(s.mmap_bytes, 0ULL);
	EXPECT_EQ(0ULL, s.mmap_bytes % (uint64_t)page);
	EXPECT_EQ(0U, s.sq.pad);
	EXPECT_EQ(0U, s.cq.pad);
	/* Inputs come back as they were given. */
	EXPECT_EQ(variant->sq_entries, s.sq_entries);
	EXPECT_EQ(variant->cq_entries, s.cq_entries);

	o[0] = &s.sq;
	o[1] = &s.cq;
	sq_bytes = (uint64_t)variant->sq_entries * sizeof(struct snpu_task);
	cq_bytes = (uint64_t)variant->want_cq * sizeof(struct snpu_cqe);
	EXPECT_LE(s.sq.array + sq_bytes, s.mmap_bytes);
	EXPECT_LE(s.cq.array + cq_bytes, s.mmap_bytes);
	EXPECT_EQ(0U, s.sq.array % 8);
	EXPECT_EQ(0U, s.cq.array % 8);
	EXPECT_FALSE(overlap(s.sq.array, sq_bytes, s.cq.array, cq_bytes));

	for (k = 0; k < 2; k++) {
		words[n++] = o[k]->head;
		words[n++] = o[k]->tail;
		words[n++] = o[k]->mask;
		words[n++] = o[k]->entries;
		words[n++] = o[k]->flags;
		words[n++] = o[k]->counter;
	}
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0U, words[i] % 4) TH_LOG("word %u at %u", i, words[i]);
		EXPECT_LE((uint64_t)words[i] + 4, s.mmap_bytes);
		EXPECT_FALSE(overlap(words[i], 4, s.sq.array, sq_bytes))
			TH_LOG("word %u inside the SQ entries", i);
		EXPECT_FALSE(overlap(words[i], 4, s.cq.array, cq_bytes))
			TH_LOG("word %u inside the CQ entries", i);
		for (j = i + 1; j < n; j++) {
			EXPECT_NE(words[i], words[j])
				TH_LOG("words %u and %u share offset %u", i, j,
				       words[i]);
		}
	}

	self->bytes = s.mmap_bytes;
	self->mem = mmap(NULL, self->bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->fd, (off_t)s.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->mem) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_EQ(variant->sq_entries, *word_at(self->mem, s.sq.entries));
	EXPECT_EQ(variant->sq_entries - 1, *word_at(self->mem, s.sq.mask));
	EXPECT_EQ(variant->want_cq, *word_at(self->mem, s.cq.entries));
	EXPECT_EQ(variant->want_cq - 1, *word_at(self->mem, s.cq.mask));
	for (k = 0; k < 2; k++) {
		EXPECT_EQ(0U, *word_at(self->mem, o[k]->head));
		EXPECT_EQ(0U, *word_at(self->mem, o[k]->tail));
		EXPECT_EQ(0U, *word_at(self->mem, o[k]->counter));
	}
	EXPECT_EQ(0U, *word_at(self->mem, s.cq.flags));
}

/* A mapping of less than the rings is allowed; more is EINVAL. */
TEST_F(setup_ok, mmap_length)
{
	struct snpu_ring_setup s;
	long page = sysconf(_SC_PAGESIZE);
	void *mem;

	setup_args(&s, variant->flags, variant->sq_entries,
		   variant->cq_entries, variant->idle_ms);
	ASSERT_EQ(0, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));

	mem = mmap(NULL, s.mmap_bytes + page, PROT_READ | PROT_WRITE,
		   MAP_SHARED, self->fd, (off_t)s.mmap_offset);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(EINVAL, errno);

	/* The header page alone: the sizes are readable through it. */
	mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   (off_t)s.mmap_offset);
	ASSERT_NE(MAP_FAILED, mem) TH_LOG("mmap: %s", strerror(errno));
	if (s.sq.entries + 4 <= (uint32_t)page) {
		EXPECT_EQ(variant->sq_entries, *word_at(mem, s.sq.entries));
	}
	munmap(mem, page);
}

/* The driver would never see the writes of a private mapping: EINVAL. */
TEST_F(setup_ok, mmap_private_einval)
{
	struct snpu_ring_setup s;
	void *mem;

	setup_args(&s, variant->flags, variant->sq_entries,
		   variant->cq_entries, variant->idle_ms);
	ASSERT_EQ(0, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));
	mem = mmap(NULL, s.mmap_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		   self->fd, (off_t)s.mmap_offset);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(EINVAL, errno);
	mem = mmap(NULL, s.mmap_bytes, PROT_READ, MAP_PRIVATE, self->fd,
		   (off_t)s.mmap_offset);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(EINVAL, errno);
}

/* ---- ring: setup and ENTER errors -------------------------------------- */

TEST_F(ring, caps_report_rings)
{
	struct snpu_info info;

	ASSERT_EQ(0, snpu_get_info(self->dev, &info));
	EXPECT_NE(0ULL, info.caps & SNPU_CAP_RING);
	EXPECT_EQ(0U, info.abi_major);
	EXPECT_GE(info.abi_minor, 3U);
}

TEST_F(ring, enter_before_setup_enxio)
{
	EXPECT_EQ(-ENXIO, raw_enter(self->fd, 0, 0, 0, 0, NULL));
	EXPECT_EQ(-ENXIO, raw_enter(self->fd, 1, 1, SNPU_ENTER_GETEVENTS, -1,
				    NULL));
}

TEST_F(ring, mmap_before_setup_enxio)
{
	void *mem;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   (off_t)RING_MMAP_OFFSET);
	ASSERT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(ENXIO, errno);
}

/* Once per file: raw and through the library, and the rings stay usable. */
TEST_F(ring, setup_twice_ebusy)
{
	struct snpu_ring_setup s;
	struct snpu_ring second;
	struct snpu_cqe c;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	setup_args(&s, 0, 8, 0, 0);
	EXPECT_EQ(-EBUSY, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));
	setup_args(&s, SNPU_RING_SQPOLL, 16, 0, 0);
	EXPECT_EQ(-EBUSY, rioc(self->fd, SNPU_IOC_RING_SETUP, &s));
	memset(&second, 0, sizeof(second));
	EXPECT_EQ(-EBUSY, snpu_ring_init(self->dev, 8, 0, &second));
	EXPECT_EQ(NULL, second.mem);

	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 7));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, &c, 1));
	EXPECT_EQ(7ULL, c.user_data);
	EXPECT_EQ(0, c.result);
}

/* snpu_ring_exit() unmaps; the rings live on with the file: EBUSY again. */
TEST_F(ring, exit_then_init_ebusy)
{
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	snpu_ring_exit(&self->ring);
	EXPECT_EQ(NULL, self->ring.mem);
	snpu_ring_exit(&self->ring);
	EXPECT_EQ(-EBUSY, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(-EBUSY, snpu_ring_init(self->dev, 16, SNPU_RING_SQPOLL,
					 &self->ring));
}

TEST_F(ring, lib_null_arguments)
{
	struct snpu_ring_setup s;
	struct snpu_cqe *cqe;

	setup_args(&s, 0, 8, 0, 0);
	EXPECT_EQ(-EINVAL, snpu_ring_init(NULL, 8, 0, &self->ring));
	EXPECT_EQ(-EINVAL, snpu_ring_init(self->dev, 8, 0, NULL));
	EXPECT_EQ(-EINVAL, snpu_ring_init_params(self->dev, NULL, &self->ring));
	EXPECT_EQ(-EINVAL, snpu_ring_init_params(NULL, &s, &self->ring));
	EXPECT_EQ(-EINVAL, snpu_ring_enter(NULL, 0, 0, 0, 0));
	EXPECT_EQ(-EINVAL, snpu_ring_submit(NULL));
	EXPECT_EQ(-EINVAL, snpu_ring_submit_and_wait(NULL, 1));
	EXPECT_EQ(-EINVAL, snpu_ring_wait_cqe(NULL, &cqe));
	snpu_ring_exit(NULL);
	/* None of them set the rings up. */
	EXPECT_EQ(-ENXIO, raw_enter(self->fd, 0, 0, 0, 0, NULL));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(-EINVAL, snpu_ring_wait_cqe(&self->ring, NULL));
}

TEST_F(ring, enter_reserved_einval)
{
	struct snpu_enter e;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	enter_args(&e, 0, 0, 0, 0);
	e.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, rioc(self->fd, SNPU_IOC_ENTER, &e));
	enter_args(&e, 0, 0, 0, 0);
	e.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, rioc(self->fd, SNPU_IOC_ENTER, &e));
}

TEST_F(ring, enter_pad_einval)
{
	struct snpu_enter e;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	enter_args(&e, 0, 0, 0, 0);
	e.pad = 1;
	EXPECT_EQ(-EINVAL, rioc(self->fd, SNPU_IOC_ENTER, &e));
}

/* @submitted is output only: an input value is ignored, then replaced. */
TEST_F(ring, enter_submitted_ignored)
{
	struct snpu_enter e;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 1));
	/* Publish without ENTER, then ENTER consumes the one SQE. */
	__atomic_store_n(self->ring.sq.ktail, self->ring.sq.sqe_tail,
			 __ATOMIC_RELEASE);
	enter_args(&e, 1, 0, 0, 0);
	e.submitted = 77;
	EXPECT_EQ(0, rioc(self->fd, SNPU_IOC_ENTER, &e));
	EXPECT_EQ(1U, e.submitted);
	EXPECT_EQ(1U, __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE));
}

TEST_F(ring, enter_unknown_flags_einval)
{
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, 0, 1U << 2, 0, NULL));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, 0, 1U << 31, 0, NULL));
}

/* Timeouts are -1 (for ever), 0 (poll) or positive: below -1 is EINVAL. */
TEST_F(ring, enter_timeout_below_minus_one_einval)
{
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, 1, SNPU_ENTER_GETEVENTS, -2,
				     NULL));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, 0, 0, INT64_MIN, NULL));
	EXPECT_EQ(-EINVAL, snpu_ring_enter(&self->ring, 0, 1,
					   SNPU_ENTER_GETEVENTS, -1000));
}

TEST_F(ring, enter_min_complete_above_cq_einval)
{
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(16U, self->ring.cq.entries);
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, 17, SNPU_ENTER_GETEVENTS, 0,
				     NULL));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 0, UINT32_MAX,
				     SNPU_ENTER_GETEVENTS, -1, NULL));
	/* The CQ size itself is fine (times out: nothing completes). */
	EXPECT_EQ(-ETIMEDOUT, raw_enter(self->fd, 0, 16, SNPU_ENTER_GETEVENTS,
					0, NULL));
}

TEST_F(ring, enter_sqpoll_to_submit_einval)
{
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, SNPU_RING_SQPOLL,
				    &self->ring));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 1, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, raw_enter(self->fd, 1, 0, SNPU_ENTER_SQ_WAKEUP, 0,
				     NULL));
	EXPECT_EQ(-EINVAL, snpu_ring_enter(&self->ring, 8, 0, 0, 0));
	EXPECT_EQ(0, raw_enter(self->fd, 0, 0, SNPU_ENTER_SQ_WAKEUP, 0, NULL));
}

TEST_F(ring, enter_getevents_times_out)
{
	uint64_t t0;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 1,
					      SNPU_ENTER_GETEVENTS, 0));
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 1,
					      SNPU_ENTER_GETEVENTS,
					      20 * NS_PER_MS));
	/* A lower bound only: the timeout did run. */
	EXPECT_GE(now_ns() - t0, (uint64_t)(20 * NS_PER_MS));
	/* Without GETEVENTS, or with min_complete 0, nothing is waited for. */
	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 0, 1, 0, 0));
	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 0, 0, SNPU_ENTER_GETEVENTS,
				     0));
}

/*
 * GETEVENTS waits until the CQ holds min_complete, counted from the head:
 * completions already there count, handed-back ones do not.
 */
TEST_F(ring, getevents_counts_from_head)
{
	struct snpu_cqe c;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 1));
	ASSERT_EQ(1, snpu_ring_submit_and_wait(&self->ring, 1));
	ASSERT_EQ(1U, snpu_ring_cq_ready(&self->ring));

	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 0, 1, SNPU_ENTER_GETEVENTS,
				     0));
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 2,
					      SNPU_ENTER_GETEVENTS, 0));
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 2,
					      SNPU_ENTER_GETEVENTS,
					      10 * NS_PER_MS));
	ASSERT_EQ(1U, reap(&self->ring, &c, 1));
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 1,
					      SNPU_ENTER_GETEVENTS,
					      10 * NS_PER_MS));

	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 2));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 3));
	ASSERT_EQ(2, snpu_ring_submit_and_wait(&self->ring, 2));
	EXPECT_EQ(2U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(-ETIMEDOUT, snpu_ring_enter(&self->ring, 0, 3,
					      SNPU_ENTER_GETEVENTS, 0));
}

/* to_submit larger than the SQ holds: what is there, 0 when empty. */
TEST_F(ring, enter_more_than_queued)
{
	uint32_t submitted = 99;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, raw_enter(self->fd, 8, 0, 0, 0, &submitted));
	EXPECT_EQ(0U, submitted);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 1));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 2));
	__atomic_store_n(self->ring.sq.ktail, self->ring.sq.sqe_tail,
			 __ATOMIC_RELEASE);
	self->ring.sq.sqe_head = self->ring.sq.sqe_tail;
	ASSERT_EQ(0, raw_enter(self->fd, 1000, 0, 0, 0, &submitted));
	EXPECT_EQ(2U, submitted);
	EXPECT_EQ(2U, __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE));
}

/* to_submit smaller than the SQ holds: exactly that many, head follows. */
TEST_F(ring, enter_partial_consume)
{
	struct snpu_ring_setup s;
	struct snpu_cqe c[8];
	struct order o;
	uint32_t submitted, i;

	setup_args(&s, 0, 8, 0, 0);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	for (i = 0; i < 8; i++) {
		struct snpu_task t = task_nop(self->stream, UD(0, i));

		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	{
		struct snpu_task t = task_nop(self->stream, 99);

		EXPECT_EQ(-ENOSPC, rr_push(&self->rr, &t));
	}
	ASSERT_EQ(0, raw_enter(self->fd, 3, 0, 0, 0, &submitted));
	EXPECT_EQ(3U, submitted);
	EXPECT_EQ(3U, __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, raw_enter(self->fd, 100, 0, 0, 0, &submitted));
	EXPECT_EQ(5U, submitted);
	EXPECT_EQ(8U, __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0U, *self->rr.sq_counter);

	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(8U, rr_reap(&self->rr, c, 8));
	order_init(&o, 1);
	for (i = 0; i < 8; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
}

/* ---- ring: the normal path --------------------------------------------- */

TEST_F(ring, single_nop_cqe)
{
	struct snpu_cqe *cqe;
	uint64_t t0, t1;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	EXPECT_EQ(8U, self->ring.sq.entries);
	EXPECT_EQ(16U, self->ring.cq.entries);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));

	t0 = now_ns();
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 0xfeedf00d12345678ULL));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
	t1 = now_ns();
	EXPECT_EQ(0xfeedf00d12345678ULL, cqe->user_data);
	EXPECT_EQ(0, cqe->result);
	EXPECT_EQ(0U, cqe->flags);
	EXPECT_EQ(1ULL, cqe->seq);
	EXPECT_GE(cqe->time_ns, t0);
	EXPECT_LE(cqe->time_ns, t1);
	EXPECT_EQ(1U, snpu_ring_cq_ready(&self->ring));
	snpu_ring_cqe_seen(&self->ring, cqe);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&self->ring, &cqe));
	/* Nothing pending: submit has nothing to do. */
	EXPECT_EQ(0, snpu_ring_submit(&self->ring));
}

/*
 * NOP launches on an idle stream complete while the SQ is consumed: their
 * CQEs are there when submit returns, in order, with the stream's
 * sequence numbers, and the stream shows them complete.
 */
TEST_F(ring, nop_on_idle_stream_cqe_at_submit)
{
	struct snpu_stream_query q;
	struct snpu_cqe c[3];
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, i)));
	ASSERT_EQ(3, snpu_ring_submit(&self->ring));
	ASSERT_EQ(3U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(3U, reap(&self->ring, c, 3));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(UD(0, i), c[i].user_data);
		EXPECT_EQ(0, c[i].result);
		EXPECT_EQ(i + 1ULL, c[i].seq);
	}
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->stream, &q));
	EXPECT_EQ(3ULL, q.submitted);
	EXPECT_EQ(3ULL, q.completed);
}

/*
 * A NOP behind a held task of its stream waits for it, while a NOP of
 * another, idle stream in the same submission completes at once.
 */
TEST_F(ring, nop_waits_behind_its_stream_only)
{
	struct snpu_callback_info cb;
	struct snpu_cqe c[2], *cqe;
	struct snpu_task *t;
	uint32_t other;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&other));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	t = GET_SQE(&self->ring);
	snpu_prep_host_func(t, self->stream, 1);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 2));
	ASSERT_EQ(0, sqe_nop(&self->ring, other, 3));
	ASSERT_EQ(3, snpu_ring_submit(&self->ring));

	ASSERT_EQ(0, snpu_callback_wait(self->dev, WAIT_NS, &cb));
	ASSERT_EQ(1U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_ring_peek_cqe(&self->ring, &cqe));
	EXPECT_EQ(3ULL, cqe->user_data);
	EXPECT_EQ(1ULL, cqe->seq);
	snpu_ring_cqe_seen(&self->ring, cqe);

	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	ASSERT_EQ(0, reap_n(&self->ring, c, 2));
	EXPECT_EQ(1ULL, c[0].user_data);
	EXPECT_EQ(1ULL, c[0].seq);
	EXPECT_EQ(2ULL, c[1].user_data);
	EXPECT_EQ(2ULL, c[1].seq);
	EXPECT_EQ(0, c[1].result);
}

/*
 * Work and NOPs of one stream in one submission: each NOP completes after
 * the work before it, whichever way the race with the core goes.
 */
TEST_F(ring, nop_after_work_in_one_submit_keeps_order)
{
	struct snpu_cqe c[4];
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 1));
	ASSERT_EQ(0, sqe_spin(&self->ring, self->stream, 2000000, 2));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 3));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 4));
	ASSERT_EQ(4, snpu_ring_submit_and_wait(&self->ring, 4));
	ASSERT_EQ(4U, reap(&self->ring, c, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(i + 1ULL, c[i].user_data);
		EXPECT_EQ(0, c[i].result);
		EXPECT_EQ(i + 1ULL, c[i].seq);
	}
	EXPECT_LE(c[1].time_ns, c[2].time_ns);
}

/* cq_ready counts, cq_advance hands several back at once. */
TEST_F(ring, cq_ready_and_advance)
{
	struct snpu_cqe *cqe;
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, i)));
	}
	ASSERT_EQ(5, snpu_ring_submit_and_wait(&self->ring, 5));
	EXPECT_EQ(5U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_ring_peek_cqe(&self->ring, &cqe));
	EXPECT_EQ(UD(0, 0), cqe->user_data);
	snpu_ring_cq_advance(&self->ring, 3);
	EXPECT_EQ(2U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_ring_peek_cqe(&self->ring, &cqe));
	EXPECT_EQ(UD(0, 3), cqe->user_data);
	snpu_ring_cq_advance(&self->ring, 2);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&self->ring, &cqe));
}

/* get_sqe hands out exactly sq_entries unsubmitted entries. */
TEST_F(ring, sq_full_get_sqe_null)
{
	struct snpu_cqe c[8];
	struct order o;
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, i)));
	}
	EXPECT_EQ(NULL, snpu_ring_get_sqe(&self->ring));
	EXPECT_EQ(NULL, snpu_ring_get_sqe(&self->ring));
	/* Nothing was published: the kernel has seen no tail. */
	EXPECT_EQ(0U, *self->ring.sq.ktail);

	ASSERT_EQ(8, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, 8)));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, c, 8));
	order_init(&o, 1);
	for (i = 0; i < 8; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
	ASSERT_EQ(0, reap_n(&self->ring, c, 1));
	ASSERT_ORDER(&o, &c[0]);
}

/*
 * An 8-entry SQ wraps over a thousand times: 10000 tasks on three streams,
 * every completion once, in order per stream, with its sequence number.
 * At most a CQ's worth is outstanding, so nothing ever has to wait for
 * room in the CQ.
 */
#define WRAP_TASKS	10000
#define WRAP_STREAMS	3

TEST_F(ring, wrap_around)
{
	uint32_t streams[WRAP_STREAMS], per[WRAP_STREAMS] = { 0 };
	struct snpu_stream_query q;
	struct snpu_cqe c[32], *cqe;
	unsigned int sent = 0, done = 0, i, n, s;
	struct order o;
	int ret;

	streams[0] = self->stream;
	for (s = 1; s < WRAP_STREAMS; s++) {
		ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
						&streams[s]));
	}
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	order_init(&o, WRAP_STREAMS);

	while (done < WRAP_TASKS) {
		while (sent < WRAP_TASKS && sent - done < self->ring.cq.entries) {
			s = sent % WRAP_STREAMS;
			if (sqe_nop(&self->ring, streams[s], UD(s, per[s])))
				break;
			per[s]++;
			sent++;
		}
		ret = snpu_ring_submit(&self->ring);
		ASSERT_GE(ret, 0) TH_LOG("submit: %s", strerror(-ret));
		n = reap(&self->ring, c, 32);
		for (i = 0; i < n; i++) {
			ASSERT_ORDER(&o, &c[i]);
		}
		done += n;
		if (!n && done < sent) {
			ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
		}
	}
	EXPECT_EQ(0U, *self->ring.cq.koverflow);
	EXPECT_EQ(0U, *self->ring.cq.kflags);
	EXPECT_EQ(0U, *self->ring.sq.kdropped);
	EXPECT_EQ((uint32_t)WRAP_TASKS, *self->ring.sq.khead);
	for (s = 0; s < WRAP_STREAMS; s++) {
		EXPECT_EQ(per[s], o.next[s]);
		ASSERT_EQ(0, snpu_stream_query(self->dev, streams[s], &q));
		EXPECT_EQ((uint64_t)per[s], q.submitted);
		EXPECT_EQ((uint64_t)per[s], q.completed);
	}
}

/*
 * sq 8, cq 16: 64 tasks on two streams in rounds of 8, never reaped. Once
 * all are complete the CQ holds exactly 16, the other 48 wait (flag and
 * counter); each ENTER then moves 16 into the room reaping made, in
 * order, until all 64 came exactly once and the flag is clear.
 */
TEST_F(ring, cq_overflow_recovery)
{
	uint32_t streams[2], per[2] = { 0 };
	struct snpu_cqe c[16];
	unsigned int round, i, n, total = 0, s;
	uint64_t t_sync;
	struct order o;

	streams[0] = self->stream;
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&streams[1]));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(16U, self->ring.cq.entries);

	for (round = 0; round < 8; round++) {
		for (i = 0; i < 8; i++) {
			s = i % 2;
			ASSERT_EQ(0, sqe_nop(&self->ring, streams[s],
					     UD(s, per[s])));
			per[s]++;
		}
		ASSERT_EQ(8, snpu_ring_submit(&self->ring))
			TH_LOG("round %u", round);
	}
	for (s = 0; s < 2; s++) {
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, streams[s], -1));
	}
	t_sync = now_ns();

	EXPECT_EQ(16U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(SNPU_CQ_OVERFLOW, *self->ring.cq.kflags & SNPU_CQ_OVERFLOW);
	EXPECT_EQ(48U, *self->ring.cq.koverflow);

	order_init(&o, 2);
	for (round = 0; round < 4; round++) {
		n = reap(&self->ring, c, 16);
		ASSERT_EQ(16U, n) TH_LOG("round %u", round);
		for (i = 0; i < n; i++) {
			ASSERT_ORDER(&o, &c[i]);
			/* The completion's time, not when it was moved in. */
			EXPECT_LE(c[i].time_ns, t_sync) TH_LOG("round %u", round);
		}
		total += n;
		/* The flag stays while completions still wait. */
		if (round < 3) {
			EXPECT_EQ(SNPU_CQ_OVERFLOW,
				  *self->ring.cq.kflags & SNPU_CQ_OVERFLOW)
				TH_LOG("round %u", round);
		}
		ASSERT_EQ(0, snpu_ring_enter(&self->ring, 0, 0, 0, 0));
		EXPECT_EQ(round < 3 ? 16U : 0U,
			  snpu_ring_cq_ready(&self->ring))
			TH_LOG("round %u", round);
	}
	EXPECT_EQ(64U, total);
	EXPECT_EQ(32U, o.next[0]);
	EXPECT_EQ(32U, o.next[1]);
	EXPECT_EQ(0U, *self->ring.cq.kflags);
	/* The counter counts history: it does not go down. */
	EXPECT_EQ(48U, *self->ring.cq.koverflow);

	/* Recovered: the next completion goes straight into the CQ. */
	ASSERT_EQ(0, sqe_nop(&self->ring, streams[0], UD(0, per[0])));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, streams[0], -1));
	ASSERT_EQ(1U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(1U, reap(&self->ring, c, 16));
	ASSERT_ORDER(&o, &c[0]);
	EXPECT_EQ(48U, *self->ring.cq.koverflow);
	EXPECT_EQ(0U, *self->ring.cq.kflags);
}

/* wait_cqe on a reaped-empty CQ with completions waiting moves them in. */
TEST_F(ring, wait_cqe_flushes_overflow)
{
	struct snpu_cqe c[16], *cqe;
	unsigned int i, round;
	struct order o;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 8; i++) {
			ASSERT_EQ(0, sqe_nop(&self->ring, self->stream,
					     UD(0, round * 8 + i)));
		}
		ASSERT_EQ(8, snpu_ring_submit(&self->ring));
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(16U, reap(&self->ring, c, 16));
	order_init(&o, 1);
	for (i = 0; i < 16; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
	EXPECT_EQ(-EAGAIN, snpu_ring_peek_cqe(&self->ring, &cqe));
	EXPECT_EQ(SNPU_CQ_OVERFLOW, *self->ring.cq.kflags);
	EXPECT_EQ(8U, *self->ring.cq.koverflow);

	ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
	ASSERT_ORDER(&o, cqe);
	snpu_ring_cqe_seen(&self->ring, cqe);
	EXPECT_EQ(7U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(0U, *self->ring.cq.kflags);
	ASSERT_EQ(7U, reap(&self->ring, c, 16));
	for (i = 0; i < 7; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
}

/* CQ full, completions waiting, empty SQ: ENTER to submit is EBUSY. */
TEST_F(ring, enter_ebusy_while_overflowed)
{
	struct snpu_cqe c[16];
	unsigned int i, round;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 8; i++) {
			ASSERT_EQ(0, sqe_nop(&self->ring, self->stream,
					     round * 8 + i));
		}
		ASSERT_EQ(8, snpu_ring_submit(&self->ring));
	}
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(SNPU_CQ_OVERFLOW, *self->ring.cq.kflags);

	EXPECT_EQ(-EBUSY, snpu_ring_enter(&self->ring, 1, 0, 0, 0));
	EXPECT_EQ(-EBUSY, snpu_ring_enter(&self->ring, 8, 0, 0, 0));
	/* Not an error without to_submit: it only tried to flush. */
	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 0, 0, 0, 0));
	EXPECT_EQ(24U, __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE));

	/* Room for all: the flush empties the list, no EBUSY any more. */
	ASSERT_EQ(16U, reap(&self->ring, c, 16));
	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 1, 0, 0, 0));
	EXPECT_EQ(8U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(0U, *self->ring.cq.kflags);
}

/*
 * A process that never reaps runs out of task slots: completions waiting
 * for room keep theirs. Then SUBMIT says ENOSPC and ENTER EBUSY with SQEs
 * left in the SQ. Reaping gives the slots back and everything, the SQEs
 * left behind included, completes exactly once and in order.
 */
#define EXHAUST_MAX	20000U

TEST_F_TIMEOUT(ring, overflow_exhausts_task_slots, 60)
{
	struct snpu_ring_setup s;
	struct snpu_ctx_query cq;
	struct snpu_cqe c[64];
	struct snpu_task t;
	unsigned int filled = 0, consumed, reaped = 0, i, n, spins = 0;
	uint32_t pending;
	struct order o;
	int ret;

	setup_args(&s, 0, 256, 256, 0);
	ASSERT_EQ(0, snpu_ring_init_params(self->dev, &s, &self->ring));
	for (;;) {
		while (filled < EXHAUST_MAX &&
		       !sqe_nop(&self->ring, self->stream, UD(0, filled)))
			filled++;
		ASSERT_LT(filled, EXHAUST_MAX) TH_LOG("slots never ran out");
		ret = snpu_ring_submit(&self->ring);
		if (ret == -EBUSY) {
			/* Maybe only the quota of tasks in flight: drain. */
			ASSERT_EQ(0, snpu_stream_synchronize(self->dev,
							    self->stream, -1));
			ret = snpu_ring_submit(&self->ring);
			if (ret == -EBUSY)
				break;
		}
		ASSERT_GE(ret, 0) TH_LOG("submit: %s", strerror(-ret));
	}
	consumed = __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE);
	pending = filled - consumed;
	EXPECT_GT(pending, 0U);
	/* More than the quota of tasks in flight went through. */
	EXPECT_GT(consumed, 4096U);
	EXPECT_EQ(SNPU_CQ_OVERFLOW, *self->ring.cq.kflags);
	EXPECT_EQ(consumed - self->ring.cq.entries, *self->ring.cq.koverflow);
	EXPECT_EQ(self->ring.cq.entries, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_ctx_query(self->dev, &cq));
	EXPECT_EQ(0U, cq.tasks);

	/* Both ways of submitting are stopped, and nothing moved. */
	prep_nop(&t, self->stream, 0xdead);
	EXPECT_EQ(-ENOSPC, snpu_submit(self->dev, &t, 1, NULL));
	EXPECT_EQ(-EBUSY, snpu_ring_enter(&self->ring, pending, 0, 0, 0));
	EXPECT_EQ(consumed,
		  __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE));

	/* Recover: reap, flush and submit the rest, until all came. */
	order_init(&o, 1);
	while (reaped < filled) {
		ASSERT_LT(spins++, 10 * EXHAUST_MAX);
		n = reap(&self->ring, c, 64);
		for (i = 0; i < n; i++) {
			ASSERT_ORDER(&o, &c[i]);
		}
		reaped += n;
		pending = *self->ring.sq.ktail -
			  __atomic_load_n(self->ring.sq.khead, __ATOMIC_ACQUIRE);
		/* EBUSY: still no slot this time (all in flight); go on. */
		ret = snpu_ring_enter(&self->ring, pending, 0, 0, 0);
		ASSERT_TRUE(ret >= 0 || ret == -EBUSY)
			TH_LOG("enter: %s", strerror(-ret));
		if (!n && ret <= 0 && reaped < filled &&
		    !snpu_ring_cq_ready(&self->ring)) {
			ret = snpu_ring_enter(&self->ring, 0, 1,
					      SNPU_ENTER_GETEVENTS, WAIT_NS);
			ASSERT_EQ(0, ret) TH_LOG("%u of %u reaped, none comes",
						 reaped, filled);
		}
	}
	EXPECT_EQ(filled, o.next[0]);
	EXPECT_EQ(0U, *self->ring.cq.kflags);
	EXPECT_EQ(0, snpu_submit(self->dev, &t, 1, NULL));
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
}

/* ---- bad SQEs ----------------------------------------------------------- */

/*
 * Each bad SQE is consumed and gets one CQE with its user_data and its
 * error (seq 0); the good ones around it run with consecutive sequence
 * numbers; the stream is not failed.
 */
TEST_F(ring, bad_sqes_each_get_cqe)
{
	static const struct {
		uint64_t ud;
		int result;
	} want[] = {
		{ 1, 0 }, { 2, -EINVAL }, { 3, 0 }, { 4, -ENOENT },
		{ 5, -EFAULT }, { 6, -EINVAL }, { 7, -EINVAL }, { 8, -EINVAL },
		{ 9, -ENOENT }, { 10, 0 }, { 11, -EFAULT }, { 12, -EINVAL },
		{ 13, -EINVAL }, { 14, 0 },
	};
	const unsigned int nwant = sizeof(want) / sizeof(want[0]);
	struct snpu_kernel_arg args[3];
	struct snpu_cqe c[16];
	struct snpu_task *t;
	uint64_t buf, good_seq = 0;
	unsigned int i;
	int k;

	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &buf));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &self->ring));

	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 1));
	t = GET_SQE(&self->ring);		/* unknown op */
	prep_nop(t, self->stream, 2);
	t->op = 99;
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 3));
	ASSERT_EQ(0, sqe_nop(&self->ring, BAD_HANDLE, 4));
	t = GET_SQE(&self->ring);		/* no such memory */
	snpu_prep_memset(t, self->stream, BAD_ADDR, 0, 64);
	t->user_data = 5;
	t = GET_SQE(&self->ring);		/* flags */
	prep_nop(t, self->stream, 6);
	t->flags = 1;
	t = GET_SQE(&self->ring);		/* reserved0 */
	prep_nop(t, self->stream, 7);
	t->reserved0 = 1;
	t = GET_SQE(&self->ring);		/* an unused word */
	snpu_prep_memset(t, self->stream, buf, 0, 64);
	t->user_data = 8;
	t->raw[12] = 1;
	t = GET_SQE(&self->ring);		/* no such event */
	snpu_prep_event_record(t, self->stream, BAD_HANDLE);
	t->user_data = 9;
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 10));
	t = GET_SQE(&self->ring);		/* past the allocation */
	args[0] = snpu_arg_buf(buf + 2048, 4096);
	args[1] = snpu_arg_buf(buf, 4096);
	args[2] = snpu_arg_buf(buf, 4096);
	snpu_prep_launch(t, self->stream, SNPU_KERNEL_ADD_I32, 1, args, 3);
	t->user_data = 11;
	t = GET_SQE(&self->ring);		/* memset value > 255 */
	snpu_prep_memset(t, self->stream, buf, 300, 64);
	t->user_data = 12;
	t = GET_SQE(&self->ring);		/* block_dim 0 */
	snpu_prep_launch(t, self->stream, SNPU_KERNEL_NOP, 0, NULL, 0);
	t->user_data = 13;
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 14));

	ASSERT_EQ((int)nwant, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, c, nwant));
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));

	for (i = 0; i < nwant; i++) {
		k = find_ud(c, nwant, want[i].ud);
		ASSERT_GE(k, 0) TH_LOG("no CQE for user_data %llu",
				       (unsigned long long)want[i].ud);
		EXPECT_EQ(want[i].result, c[k].result)
			TH_LOG("user_data %llu", (unsigned long long)want[i].ud);
		EXPECT_EQ(0U, c[k].flags);
		if (want[i].result) {
			EXPECT_EQ(0ULL, c[k].seq)
				TH_LOG("user_data %llu",
				       (unsigned long long)want[i].ud);
		} else {
			EXPECT_EQ(++good_seq, c[k].seq)
				TH_LOG("user_data %llu",
				       (unsigned long long)want[i].ud);
		}
	}
	/* Each user_data exactly once. */
	for (i = 0; i < nwant; i++) {
		unsigned int j, seen = 0;

		for (j = 0; j < nwant; j++)
			seen += c[j].user_data == want[i].ud;
		EXPECT_EQ(1U, seen);
	}
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
}

/*
 * A task that fails puts its stream in the error state: the tasks behind
 * it are cancelled, the stream refuses new SQEs with EIO (a CQE each)
 * until reset, and other streams on the ring go on.
 */
TEST_F(ring, stream_error_through_ring)
{
	struct snpu_cqe c[4];
	struct snpu_task *t;
	uint32_t other;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&other));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	t = GET_SQE(&self->ring);
	prep_fail(t, self->stream, EDOM, 1);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 2));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 3));
	ASSERT_EQ(3, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, c, 3));
	EXPECT_EQ(1ULL, c[0].user_data);
	EXPECT_EQ(-EDOM, c[0].result);
	EXPECT_EQ(1ULL, c[0].seq);
	EXPECT_EQ(2ULL, c[1].user_data);
	EXPECT_EQ(-ECANCELED, c[1].result);
	EXPECT_EQ(2ULL, c[1].seq);
	EXPECT_EQ(3ULL, c[2].user_data);
	EXPECT_EQ(-ECANCELED, c[2].result);
	EXPECT_EQ(3ULL, c[2].seq);
	EXPECT_EQ(-EDOM, snpu_stream_synchronize(self->dev, self->stream, -1));

	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 4));
	ASSERT_EQ(0, sqe_nop(&self->ring, other, 5));
	ASSERT_EQ(2, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, c, 2));
	ASSERT_GE(find_ud(c, 2, 4), 0);
	ASSERT_GE(find_ud(c, 2, 5), 0);
	EXPECT_EQ(-EIO, c[find_ud(c, 2, 4)].result);
	EXPECT_EQ(0ULL, c[find_ud(c, 2, 4)].seq);
	EXPECT_EQ(0, c[find_ud(c, 2, 5)].result);
	EXPECT_EQ(1ULL, c[find_ud(c, 2, 5)].seq);

	ASSERT_EQ(0, snpu_stream_reset(self->dev, self->stream));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 6));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, c, 1));
	EXPECT_EQ(6ULL, c[0].user_data);
	EXPECT_EQ(0, c[0].result);
	EXPECT_EQ(4ULL, c[0].seq);
}

/* Abort cancels a stream's queued ring tasks: a CQE each, in order. */
TEST_F(ring, stream_abort_cancels_ring_tasks)
{
	struct snpu_cqe c[4];
	struct snpu_task *t;
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	/* A callback nobody takes holds the stream. */
	t = GET_SQE(&self->ring);
	snpu_prep_host_func(t, self->stream, 100);
	for (i = 1; i < 4; i++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 100 + i));
	}
	ASSERT_EQ(4, snpu_ring_submit(&self->ring));
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_stream_abort(self->dev, self->stream));
	ASSERT_EQ(0, reap_n(&self->ring, c, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(100ULL + i, c[i].user_data);
		EXPECT_EQ(-ECANCELED, c[i].result);
		EXPECT_EQ(1ULL + i, c[i].seq);
	}
	EXPECT_EQ(-ECANCELED,
		  snpu_stream_synchronize(self->dev, self->stream, -1));
}

/* A host function through the ring: its CQE carries the DONE status. */
TEST_F(ring, host_func_through_ring)
{
	struct snpu_callback_info cb;
	struct snpu_cqe c[2];
	struct snpu_task *t;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	t = GET_SQE(&self->ring);
	snpu_prep_host_func(t, self->stream, 0xc0ffee);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 2));
	ASSERT_EQ(2, snpu_ring_submit(&self->ring));

	ASSERT_EQ(0, snpu_callback_wait(self->dev, WAIT_NS, &cb));
	EXPECT_EQ(0xc0ffeeULL, cb.user_data);
	EXPECT_EQ(self->stream, cb.stream);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
	ASSERT_EQ(0, reap_n(&self->ring, c, 2));
	EXPECT_EQ(0xc0ffeeULL, c[0].user_data);
	EXPECT_EQ(0, c[0].result);
	EXPECT_EQ(1ULL, c[0].seq);
	EXPECT_EQ(2ULL, c[1].user_data);
	EXPECT_EQ(0, c[1].result);
	EXPECT_EQ(2ULL, c[1].seq);

	t = GET_SQE(&self->ring);
	snpu_prep_host_func(t, self->stream, 0xbad);
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, snpu_callback_wait(self->dev, WAIT_NS, &cb));
	ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, -EPERM));
	ASSERT_EQ(0, reap_n(&self->ring, c, 1));
	EXPECT_EQ(0xbadULL, c[0].user_data);
	EXPECT_EQ(-EPERM, c[0].result);
	EXPECT_EQ(3ULL, c[0].seq);
}

/* ---- protocol breakers -------------------------------------------------- */

/*
 * A tail a million entries ahead of the head: the kernel takes one ring's
 * worth (the entries there, good or not), counts the clamp, and the ring
 * works again once the tail is sane.
 */
TEST_F(ring, garbage_sq_tail_clamped)
{
	struct snpu_ring_setup s;
	struct snpu_cqe c[32];
	struct snpu_task t;
	uint32_t submitted, head, i;
	int k;

	setup_args(&s, 0, 8, 32, 0);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	/* Entries 0-2 good, 3-7 garbage (op 0), user_data 100 + index. */
	for (i = 0; i < 8; i++) {
		if (i < 3) {
			t = task_nop(self->stream, 100 + i);
		} else {
			memset(&t, 0, sizeof(t));
			t.user_data = 100 + i;
		}
		self->rr.sqes[i] = t;
	}
	head = __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE);
	__atomic_store_n(self->rr.sq_tail, head + 1000000, __ATOMIC_RELEASE);

	ASSERT_EQ(0, raw_enter(self->fd, UINT32_MAX, 0, 0, 0, &submitted));
	EXPECT_EQ(8U, submitted);
	EXPECT_EQ(head + 8, __atomic_load_n(self->rr.sq_head,
					    __ATOMIC_ACQUIRE));
	EXPECT_EQ(1U, *self->rr.sq_counter);

	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(8U, rr_reap(&self->rr, c, 32));
	for (i = 0; i < 8; i++) {
		k = find_ud(c, 8, 100 + i);
		ASSERT_GE(k, 0) TH_LOG("no CQE for entry %u", i);
		EXPECT_EQ(i < 3 ? 0 : -EINVAL, c[k].result) TH_LOG("entry %u", i);
		EXPECT_EQ(i < 3 ? i + 1ULL : 0ULL, c[k].seq) TH_LOG("entry %u", i);
	}

	/* A sane tail again: normal service, no further count. */
	head = __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE);
	__atomic_store_n(self->rr.sq_tail, head, __ATOMIC_RELEASE);
	t = task_nop(self->stream, 200);
	ASSERT_EQ(0, rr_push(&self->rr, &t));
	ASSERT_EQ(0, raw_enter(self->fd, 8, 1, SNPU_ENTER_GETEVENTS, WAIT_NS,
			       &submitted));
	EXPECT_EQ(1U, submitted);
	ASSERT_EQ(1U, rr_reap(&self->rr, c, 32));
	EXPECT_EQ(200ULL, c[0].user_data);
	EXPECT_EQ(0, c[0].result);
	EXPECT_EQ(4ULL, c[0].seq);
	EXPECT_EQ(1U, *self->rr.sq_counter);
}

/* A tail behind the head claims 2^32 - 1 entries: clamped the same way. */
TEST_F(ring, sq_tail_behind_head_clamped)
{
	struct snpu_ring_setup s;
	struct snpu_cqe c[32];
	struct snpu_task t;
	uint32_t submitted, head, i;

	setup_args(&s, 0, 8, 32, 0);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	for (i = 0; i < 4; i++) {
		t = task_nop(self->stream, i);
		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	ASSERT_EQ(0, raw_enter(self->fd, 8, 0, 0, 0, &submitted));
	ASSERT_EQ(4U, submitted);
	ASSERT_EQ(0U, *self->rr.sq_counter);

	/* Make every entry a NOP, then move the tail back by one. */
	for (i = 0; i < 8; i++)
		self->rr.sqes[i] = task_nop(self->stream, 50 + i);
	head = __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE);
	__atomic_store_n(self->rr.sq_tail, head - 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, raw_enter(self->fd, UINT32_MAX, 0, 0, 0, &submitted));
	EXPECT_EQ(8U, submitted);
	EXPECT_EQ(1U, *self->rr.sq_counter);
	EXPECT_EQ(head + 8, __atomic_load_n(self->rr.sq_head,
					    __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	EXPECT_EQ(12U, rr_reap(&self->rr, c, 32));
}

/*
 * A CQ head that makes the CQ look full only delays completions: they
 * wait (flag, counter) and come, in order, once the head is sane again.
 */
TEST_F(ring, garbage_cq_head_delays)
{
	struct snpu_ring_setup s;
	struct snpu_cqe c[16];
	struct snpu_task t;
	struct order o;
	uint32_t submitted, i;

	setup_args(&s, 0, 8, 16, 0);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	__atomic_store_n(self->rr.cq_head, 1000, __ATOMIC_RELEASE);
	for (i = 0; i < 4; i++) {
		t = task_nop(self->stream, UD(0, i));
		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	ASSERT_EQ(0, raw_enter(self->fd, 4, 0, 0, 0, &submitted));
	ASSERT_EQ(4U, submitted);
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	EXPECT_EQ(0U, __atomic_load_n(self->rr.cq_tail, __ATOMIC_ACQUIRE));
	EXPECT_EQ(SNPU_CQ_OVERFLOW, *self->rr.cq_flags);
	EXPECT_EQ(4U, *self->rr.cq_counter);
	/* Still bogus: ENTER cannot move them. */
	ASSERT_EQ(0, raw_enter(self->fd, 0, 0, 0, 0, NULL));
	EXPECT_EQ(0U, __atomic_load_n(self->rr.cq_tail, __ATOMIC_ACQUIRE));

	__atomic_store_n(self->rr.cq_head, 0, __ATOMIC_RELEASE);
	ASSERT_EQ(0, raw_enter(self->fd, 0, 4, SNPU_ENTER_GETEVENTS, 0, NULL));
	EXPECT_EQ(0U, *self->rr.cq_flags);
	ASSERT_EQ(4U, rr_reap(&self->rr, c, 16));
	order_init(&o, 1);
	for (i = 0; i < 4; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
}

/*
 * The rings unmapped while tasks are in flight: the kernel writes through
 * its own view, the work completes, and a new mapping shows the CQEs.
 */
TEST_F(ring, munmap_in_flight)
{
	struct snpu_stream_query q;
	struct snpu_ring_setup s;
	struct snpu_cqe c[64];
	struct snpu_task t;
	struct order o;
	uint32_t submitted, i;

	setup_args(&s, 0, 64, 0, 0);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	t = task_spin(self->stream, 200 * NS_PER_MS, UD(0, 0));
	ASSERT_EQ(0, rr_push(&self->rr, &t));
	for (i = 1; i <= 50; i++) {
		t = task_nop(self->stream, UD(0, i));
		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	ASSERT_EQ(0, raw_enter(self->fd, 51, 0, 0, 0, &submitted));
	ASSERT_EQ(51U, submitted);
	rr_unmap(&self->rr);

	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->stream, &q));
	EXPECT_EQ(51ULL, q.completed);
	/* ENTER works without a mapping. */
	EXPECT_EQ(0, raw_enter(self->fd, 0, 51, SNPU_ENTER_GETEVENTS, 0, NULL));

	ASSERT_EQ(0, rr_map(&self->rr));
	EXPECT_EQ(51U, __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE));
	ASSERT_EQ(51U, rr_reap(&self->rr, c, 64));
	order_init(&o, 1);
	for (i = 0; i < 51; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
	t = task_nop(self->stream, UD(0, 51));
	ASSERT_EQ(0, rr_push(&self->rr, &t));
	ASSERT_EQ(0, raw_enter(self->fd, 1, 1, SNPU_ENTER_GETEVENTS, WAIT_NS,
			       &submitted));
	ASSERT_EQ(1U, rr_reap(&self->rr, c, 64));
	ASSERT_ORDER(&o, &c[0]);
}

/*
 * The file closed while its rings are mapped and tasks run: the mapping
 * keeps the context, the completions arrive in the mapping, and the
 * context goes away with the munmap.
 */
TEST_F(ring, close_while_mapped)
{
	struct snpu_device *dev2;
	struct snpu_ring_setup s;
	struct snpu_cqe c[32];
	struct snpu_task t;
	long long before, during, after;
	uint32_t stream2, submitted, i;
	struct order o;
	uint64_t end;

	ASSERT_EQ(0, snpu_open(0, 0, &dev2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &stream2));
	setup_args(&s, 0, 32, 0, 0);
	ASSERT_EQ(0, rr_init(snpu_device_fd(dev2), &s, &self->rr));
	ASSERT_EQ(0, sysfs_contexts(&before));

	t = task_spin(stream2, 100 * NS_PER_MS, UD(0, 0));
	ASSERT_EQ(0, rr_push(&self->rr, &t));
	for (i = 1; i <= 20; i++) {
		t = task_nop(stream2, UD(0, i));
		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	ASSERT_EQ(0, raw_enter(snpu_device_fd(dev2), 21, 0, 0, 0, &submitted));
	ASSERT_EQ(21U, submitted);
	snpu_close(dev2);
	self->rr.fd = -1;
	ASSERT_EQ(0, sysfs_contexts(&during));
	EXPECT_EQ(before, during);

	end = now_ns() + POLL_DEADLINE_NS;
	while (__atomic_load_n(self->rr.cq_tail, __ATOMIC_ACQUIRE) < 21 &&
	       now_ns() < end)
		usleep(1000);
	ASSERT_EQ(21U, rr_reap(&self->rr, c, 32));
	order_init(&o, 1);
	for (i = 0; i < 21; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}

	rr_unmap(&self->rr);
	ASSERT_EQ(0, sysfs_contexts(&after));
	EXPECT_EQ(before - 1, after);
}

/* snpu_ring_exit() with tasks in flight: they complete, the stream syncs. */
TEST_F(ring, exit_with_tasks_in_flight)
{
	struct snpu_stream_query q;
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &self->ring));
	ASSERT_EQ(0, sqe_spin(&self->ring, self->stream, 100 * NS_PER_MS, 0));
	for (i = 1; i < 11; i++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, i));
	}
	ASSERT_EQ(11, snpu_ring_submit(&self->ring));
	snpu_ring_exit(&self->ring);
	EXPECT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(0, snpu_stream_query(self->dev, self->stream, &q));
	EXPECT_EQ(11ULL, q.completed);
	EXPECT_EQ(0, q.error);
}

/*
 * A process killed with thousands of 1 ms tasks in flight on its ring:
 * the context goes away with it, and the device serves a new one.
 */
#define FLOOD_TASKS	3000
#define FLOOD_STREAMS	4

static void flood_child(int wfd, unsigned int flags)
{
	uint32_t streams[FLOOD_STREAMS];
	struct snpu_device *dev;
	struct snpu_ring ring;
	struct snpu_cqe *cqe;
	unsigned int i = 0, s;
	int ret;

	if (snpu_open(0, 0, &dev))
		_exit(10);
	for (s = 0; s < FLOOD_STREAMS; s++)
		if (snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &streams[s]))
			_exit(11);
	if (snpu_ring_init(dev, 1024, flags, &ring))
		_exit(12);
	while (i < FLOOD_TASKS) {
		if (sqe_spin(&ring, streams[i % FLOOD_STREAMS], NS_PER_MS, i)) {
			ret = snpu_ring_submit(&ring);
			if (ret < 0)
				_exit(13);
			if (!ret)
				sched_yield();
			continue;
		}
		i++;
	}
	if (snpu_ring_submit(&ring) < 0)
		_exit(14);
	if (snpu_ring_wait_cqe(&ring, &cqe) || cqe->result)
		_exit(15);
	if (write(wfd, "k", 1) != 1)
		_exit(16);
	for (;;)
		pause();
}

static void kill_mid_flight(struct __test_metadata *_metadata,
			    unsigned int flags)
{
	struct snpu_device *dev2;
	struct snpu_ring ring2;
	struct snpu_cqe *cqe;
	long long before, after;
	int pfd[2], status;
	uint32_t stream2;
	pid_t pid;
	char ch;

	ASSERT_EQ(0, sysfs_contexts(&before));
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pfd[0]);
		flood_child(pfd[1], flags);
	}
	close(pfd[1]);
	if (read(pfd[0], &ch, 1) != 1) {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(0) TH_LOG("child failed: exit status %d",
				      WIFEXITED(status) ?
				      WEXITSTATUS(status) : -1);
	}
	close(pfd[0]);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGKILL, WTERMSIG(status));

	/* The file was released by the child's exit, before waitpid. */
	ASSERT_EQ(0, sysfs_contexts(&after));
	EXPECT_EQ(before, after);

	ASSERT_EQ(0, snpu_open(0, 0, &dev2));
	ASSERT_EQ(0, snpu_stream_create(dev2, SNPU_PRIO_NORMAL, 0, &stream2));
	ASSERT_EQ(0, snpu_ring_init(dev2, 8, flags, &ring2));
	ASSERT_EQ(0, sqe_nop(&ring2, stream2, 77));
	ASSERT_GE(snpu_ring_submit(&ring2), 0);
	ASSERT_EQ(0, snpu_ring_wait_cqe(&ring2, &cqe));
	EXPECT_EQ(77ULL, cqe->user_data);
	EXPECT_EQ(0, cqe->result);
	snpu_ring_exit(&ring2);
	snpu_close(dev2);
	ASSERT_EQ(0, sysfs_contexts(&after));
	EXPECT_EQ(before, after);
}

TEST_F(ring, killed_child_mid_flight)
{
	kill_mid_flight(_metadata, 0);
}

TEST_F(ring, killed_child_mid_flight_sqpoll)
{
	kill_mid_flight(_metadata, SNPU_RING_SQPOLL);
}

/* ---- concurrency --------------------------------------------------------- */

#define CONC_THREADS	4
#define CONC_TASKS	1500

struct own_ring_arg {
	int ret;		/* 0, or -errno / -EBADMSG (order broken) */
	unsigned int done;
	uint64_t bad_ud;
};

/* A thread with its own context and ring: CONC_TASKS NOPs, checked. */
static void *own_ring_thread(void *p)
{
	struct own_ring_arg *a = p;
	struct snpu_device *dev;
	struct snpu_ring ring;
	struct snpu_cqe c[32], *cqe;
	unsigned int sent = 0, i, n;
	struct order o;
	uint32_t stream;
	int ret;

	ret = snpu_open(0, 0, &dev);
	if (ret)
		goto out;
	ret = snpu_stream_create(dev, SNPU_PRIO_NORMAL, 0, &stream);
	if (!ret)
		ret = snpu_ring_init(dev, 16, 0, &ring);
	if (ret)
		goto close;
	order_init(&o, 1);
	while (!ret && a->done < CONC_TASKS) {
		while (sent < CONC_TASKS && sent - a->done < ring.cq.entries &&
		       !sqe_nop(&ring, stream, UD(0, sent)))
			sent++;
		ret = snpu_ring_submit(&ring);
		if (ret < 0)
			break;
		ret = 0;
		n = reap(&ring, c, 32);
		for (i = 0; i < n && !ret; i++) {
			if (order_check(&o, &c[i])) {
				a->bad_ud = c[i].user_data;
				ret = -EBADMSG;
			}
		}
		a->done += n;
		if (!ret && !n && a->done < sent)
			ret = snpu_ring_wait_cqe(&ring, &cqe);
	}
	snpu_ring_exit(&ring);
close:
	snpu_close(dev);
out:
	a->ret = ret;
	return NULL;
}

TEST_F(ring, concurrent_own_rings)
{
	struct own_ring_arg a[CONC_THREADS];
	pthread_t th[CONC_THREADS];
	unsigned int i;

	memset(a, 0, sizeof(a));
	for (i = 0; i < CONC_THREADS; i++) {
		ASSERT_EQ(0, pthread_create(&th[i], NULL, own_ring_thread,
					    &a[i]));
	}
	for (i = 0; i < CONC_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	}
	for (i = 0; i < CONC_THREADS; i++) {
		EXPECT_EQ(0, a[i].ret) TH_LOG("thread %u: %s (user_data %#llx)",
					      i, strerror(-a[i].ret),
					      (unsigned long long)a[i].bad_ud);
		EXPECT_EQ((unsigned int)CONC_TASKS, a[i].done);
	}
}

/* Two threads share one ring, taking turns under a mutex. */
struct shared_ring {
	pthread_mutex_t lock;
	struct snpu_ring *ring;
	uint32_t streams[2];
	unsigned int sent, reaped, total;
	unsigned char seen[2][CONC_TASKS];
	struct order o;
	int ret[2];
	uint64_t bad_ud;
};

struct shared_arg {
	struct shared_ring *sh;
	unsigned int id;
};

static void *shared_ring_thread(void *p)
{
	struct shared_arg *a = p;
	struct shared_ring *sh = a->sh;
	struct snpu_cqe c[32], *cqe;
	unsigned int mine = 0, i, n, progress;
	int ret = 0;

	for (;;) {
		pthread_mutex_lock(&sh->lock);
		if (sh->reaped == sh->total || sh->ret[!a->id]) {
			pthread_mutex_unlock(&sh->lock);
			break;
		}
		progress = 0;
		while (mine < CONC_TASKS &&
		       sh->sent - sh->reaped < sh->ring->cq.entries &&
		       !sqe_nop(sh->ring, sh->streams[a->id],
				UD(a->id, mine))) {
			mine++;
			sh->sent++;
			progress++;
		}
		ret = snpu_ring_submit(sh->ring);
		if (ret < 0)
			goto unlock;
		ret = 0;
		n = reap(sh->ring, c, 32);
		for (i = 0; i < n; i++) {
			unsigned int s = UD_STREAM(c[i].user_data);

			if (order_check(&sh->o, &c[i]) ||
			    sh->seen[s][UD_INDEX(c[i].user_data)]++) {
				sh->bad_ud = c[i].user_data;
				ret = -EBADMSG;
				goto unlock;
			}
		}
		sh->reaped += n;
		if (!n && !progress && sh->reaped < sh->sent) {
			ret = snpu_ring_wait_cqe(sh->ring, &cqe);
			if (ret)
				goto unlock;
		}
		pthread_mutex_unlock(&sh->lock);
		if (!n && !progress)
			sched_yield();
	}
	return NULL;
unlock:
	sh->ret[a->id] = ret;
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

TEST_F(ring, concurrent_shared_ring_mutex)
{
	struct shared_ring *sh;
	struct shared_arg a[2];
	pthread_t th[2];
	unsigned int i, j;

	sh = calloc(1, sizeof(*sh));
	ASSERT_NE(NULL, sh);
	pthread_mutex_init(&sh->lock, NULL);
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	sh->ring = &self->ring;
	sh->streams[0] = self->stream;
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&sh->streams[1]));
	sh->total = 2 * CONC_TASKS;
	order_init(&sh->o, 2);
	for (i = 0; i < 2; i++) {
		a[i].sh = sh;
		a[i].id = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, shared_ring_thread,
					    &a[i]));
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	}
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, sh->ret[i]) TH_LOG("thread %u: %s (user_data %#llx)",
						i, strerror(-sh->ret[i]),
						(unsigned long long)sh->bad_ud);
	}
	EXPECT_EQ(sh->total, sh->reaped);
	for (i = 0; i < 2; i++)
		for (j = 0; j < CONC_TASKS; j++) {
			ASSERT_EQ(1, sh->seen[i][j])
				TH_LOG("stream %u task %u", i, j);
		}
	free(sh);
}

/* One thread on the SQ side, another on the CQ side of the same ring. */
#define SPLIT_TASKS	3000

struct split_arg {
	struct snpu_ring *ring;
	uint32_t stream;
	int ret;
};

static void *split_producer(void *p)
{
	struct split_arg *a = p;
	unsigned int i = 0;
	int ret;

	while (i < SPLIT_TASKS) {
		if (sqe_nop(a->ring, a->stream, UD(0, i))) {
			ret = snpu_ring_submit(a->ring);
			if (ret < 0) {
				a->ret = ret;
				return NULL;
			}
			continue;
		}
		i++;
	}
	ret = snpu_ring_submit(a->ring);
	a->ret = ret < 0 ? ret : 0;
	return NULL;
}

TEST_F(ring, sq_and_cq_in_two_threads)
{
	struct split_arg a;
	struct snpu_cqe *cqe;
	unsigned int done;
	struct order o;
	pthread_t th;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &self->ring));
	a.ring = &self->ring;
	a.stream = self->stream;
	a.ret = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, split_producer, &a));
	order_init(&o, 1);
	for (done = 0; done < SPLIT_TASKS; done++) {
		ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
		ASSERT_ORDER(&o, cqe);
		snpu_ring_cqe_seen(&self->ring, cqe);
	}
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, a.ret) TH_LOG("producer: %s", strerror(-a.ret));
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(0, snpu_ring_enter(&self->ring, 0, 0, 0, 0));
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
	EXPECT_EQ(0U, *self->ring.cq.kflags);
}

/* Two threads wait in ENTER for different counts: both are woken. */
struct waiter_arg {
	struct snpu_ring *ring;
	unsigned int want;
	unsigned int ready;	/* CQ entries seen when the wait returned */
	int ret;
};

static void *waiter_thread(void *p)
{
	struct waiter_arg *a = p;

	a->ret = snpu_ring_enter(a->ring, 0, a->want, SNPU_ENTER_GETEVENTS,
				 WAIT_NS);
	a->ready = snpu_ring_cq_ready(a->ring);
	return NULL;
}

TEST_F(ring, two_waiters)
{
	struct waiter_arg w[2] = {
		{ .ring = &self->ring, .want = 3 },
		{ .ring = &self->ring, .want = 1 },
	};
	pthread_t th[2];
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_create(&th[i], NULL, waiter_thread, &w[i]));
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, sqe_spin(&self->ring, self->stream,
				      20 * NS_PER_MS, i));
	}
	ASSERT_EQ(3, snpu_ring_submit(&self->ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	}
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, w[i].ret) TH_LOG("waiter %u: %s", i,
					      strerror(-w[i].ret));
		EXPECT_GE(w[i].ready, w[i].want) TH_LOG("waiter %u", i);
	}
}

/* submit_and_wait returns once the CQ holds wait_nr completions. */
TEST_F(ring, submit_and_wait_min_complete)
{
	struct snpu_cqe c[4];
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, sqe_spin(&self->ring, self->stream, 50 * NS_PER_MS,
			      UD(0, 0)));
	for (i = 1; i < 4; i++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, i)));
	}
	ASSERT_EQ(4, snpu_ring_submit_and_wait(&self->ring, 4));
	ASSERT_EQ(4U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(4U, reap(&self->ring, c, 4));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(UD(0, i), c[i].user_data);
	}
	/* Waiting for what already is there returns at once. */
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, UD(0, 4)));
	ASSERT_EQ(1, snpu_ring_submit_and_wait(&self->ring, 1));
	EXPECT_EQ(0, snpu_ring_submit_and_wait(&self->ring, 1));
}

/* SQEs consumed by an ENTER whose wait times out are still reported. */
TEST_F(ring, enter_timed_out_wait_reports_submitted)
{
	struct snpu_cqe c;
	uint32_t submitted = 0;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 5));
	__atomic_store_n(self->ring.sq.ktail, self->ring.sq.sqe_tail,
			 __ATOMIC_RELEASE);
	self->ring.sq.sqe_head = self->ring.sq.sqe_tail;
	/* Two completions can never come: the wait times out. */
	ASSERT_EQ(0, raw_enter(self->fd, 1, 2, SNPU_ENTER_GETEVENTS,
			       10 * NS_PER_MS, &submitted));
	EXPECT_EQ(1U, submitted);
	ASSERT_EQ(0, reap_n(&self->ring, &c, 1));
	EXPECT_EQ(5ULL, c.user_data);
	/* Nothing to consume: the timeout is reported. */
	EXPECT_EQ(-ETIMEDOUT, raw_enter(self->fd, 1, 1, SNPU_ENTER_GETEVENTS,
					10 * NS_PER_MS, NULL));
}

/*
 * A stream synchronize that returns means its tasks are complete, and a
 * complete ring task has its completion posted: the CQE is in the CQ (or
 * waits for room). The record task's completion resolves many STREAM_WAIT
 * tasks of another stream before it is posted, so a synchronize that
 * looks in between would see the task complete without its CQE.
 */
#define SYNC_ROUNDS	20
#define SYNC_WAITERS	1000

struct sync_poll_arg {
	struct snpu_device *dev;
	uint32_t stream;
	const uint32_t *cq_tail;
	uint32_t tail;		/* CQ tail read right after the sync */
	int ret;
};

static void *sync_poll_thread(void *p)
{
	struct sync_poll_arg *a = p;
	int ret;

	/*
	 * Short timed waits: each sleeps on its timer and looks at the task
	 * again when the timer fires, whenever that is.
	 */
	do {
		ret = snpu_stream_synchronize(a->dev, a->stream, 20000);
	} while (ret == -ETIMEDOUT);
	a->tail = __atomic_load_n(a->cq_tail, __ATOMIC_ACQUIRE);
	a->ret = ret;
	return NULL;
}

TEST_F_TIMEOUT(ring, sync_implies_cqe_posted, 60)
{
	static struct snpu_task waits[SYNC_WAITERS];
	struct snpu_callback_info cb;
	struct sync_poll_arg a;
	struct snpu_cqe c[2];
	struct snpu_task *t;
	uint32_t other, event, before;
	unsigned int round, i;
	pthread_t th;

	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&other));
	ASSERT_EQ(0, snpu_event_create(self->dev, &event));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < SYNC_WAITERS; i++)
		snpu_prep_stream_wait(&waits[i], other, event);

	for (round = 0; round < SYNC_ROUNDS; round++) {
		before = *self->ring.cq.ktail;
		/* A callback holds the stream, the record waits behind it. */
		t = GET_SQE(&self->ring);
		snpu_prep_host_func(t, self->stream, UD(0, 2 * round));
		t = GET_SQE(&self->ring);
		snpu_prep_event_record(t, self->stream, event);
		t->user_data = UD(0, 2 * round + 1);
		ASSERT_EQ(2, snpu_ring_submit(&self->ring));
		for (i = 0; i < SYNC_WAITERS; i += SNPU_SUBMIT_MAX) {
			unsigned int n = SYNC_WAITERS - i;

			if (n > SNPU_SUBMIT_MAX)
				n = SNPU_SUBMIT_MAX;
			ASSERT_EQ(0, snpu_submit(self->dev, waits + i, n, NULL));
		}

		a.dev = self->dev;
		a.stream = self->stream;
		a.cq_tail = self->ring.cq.ktail;
		a.ret = 1;
		ASSERT_EQ(0, pthread_create(&th, NULL, sync_poll_thread, &a));
		ASSERT_EQ(0, snpu_callback_wait(self->dev, WAIT_NS, &cb));
		ASSERT_EQ(UD(0, 2 * round), cb.user_data);
		ASSERT_EQ(0, snpu_callback_done(self->dev, cb.cookie, 0));
		ASSERT_EQ(0, pthread_join(th, NULL));
		ASSERT_EQ(0, a.ret);
		EXPECT_EQ(2U, a.tail - before)
			TH_LOG("round %u: synchronize returned with %u of the 2 CQEs posted",
			       round, a.tail - before);

		ASSERT_EQ(0, reap_n(&self->ring, c, 2));
		EXPECT_EQ(UD(0, 2 * round), c[0].user_data);
		EXPECT_EQ(UD(0, 2 * round + 1), c[1].user_data);
		ASSERT_EQ(0, snpu_stream_synchronize(self->dev, other, -1));
	}
}

/* ---- the poller ------------------------------------------------------- */

/* Wait until the SQ flags have @bit. Return: 0, or -ETIMEDOUT. */
static int wait_sq_flag(const uint32_t *flags, uint32_t bit)
{
	uint64_t end = now_ns() + POLL_DEADLINE_NS;

	while (!(__atomic_load_n(flags, __ATOMIC_ACQUIRE) & bit)) {
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

/*
 * An idle poller sleeps and says so; snpu_ring_submit() sees the flag,
 * wakes it, and the work gets done; it sleeps again afterwards.
 */
TEST_F(ring, poller_need_wakeup)
{
	struct snpu_ring_setup s;
	struct snpu_cqe *cqe;
	unsigned int round;
	int ret;

	setup_args(&s, SNPU_RING_SQPOLL, 8, 0, 10);
	ASSERT_EQ(0, snpu_ring_init_params(self->dev, &s, &self->ring));
	EXPECT_EQ((unsigned int)SNPU_RING_SQPOLL, self->ring.flags);
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, wait_sq_flag(self->ring.sq.kflags,
					  SNPU_SQ_NEED_WAKEUP))
			TH_LOG("round %u: the poller never slept", round);
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, round));
		/* Entries the poller had not taken yet: 1, or 0 if it
		 * looked at the tail once more before sleeping. */
		ret = snpu_ring_submit(&self->ring);
		ASSERT_TRUE(ret == 0 || ret == 1) TH_LOG("submit: %d", ret);
		ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
		EXPECT_EQ((uint64_t)round, cqe->user_data);
		EXPECT_EQ(0, cqe->result);
		EXPECT_EQ(round + 1ULL, cqe->seq);
		snpu_ring_cqe_seen(&self->ring, cqe);
	}
}

/*
 * An awake poller takes what is published without any ENTER: a poller
 * that has not set NEED_WAKEUP (checked after a full barrier following the
 * tail store) must see the tail. idle_ms is the maximum, so the poller
 * cannot have gone to sleep in the microseconds since the setup.
 */
TEST_F(ring, poller_consumes_without_enter)
{
	struct snpu_ring_setup s;
	struct snpu_cqe c[8];
	struct snpu_task t;
	struct order o;
	unsigned int i;

	setup_args(&s, SNPU_RING_SQPOLL, 8, 0, 10000);
	ASSERT_EQ(0, rr_init(self->fd, &s, &self->rr));
	for (i = 0; i < 8; i++) {
		t = task_nop(self->stream, UD(0, i));
		ASSERT_EQ(0, rr_push(&self->rr, &t));
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ASSERT_EQ(0U, __atomic_load_n(self->rr.sq_flags, __ATOMIC_RELAXED) &
		  SNPU_SQ_NEED_WAKEUP);
	/* Only wait: no SQ_WAKEUP, and to_submit must be 0. */
	ASSERT_EQ(0, raw_enter(self->fd, 0, 8, SNPU_ENTER_GETEVENTS, WAIT_NS,
			       NULL));
	EXPECT_EQ(8U, __atomic_load_n(self->rr.sq_head, __ATOMIC_ACQUIRE));
	ASSERT_EQ(8U, rr_reap(&self->rr, c, 8));
	order_init(&o, 1);
	for (i = 0; i < 8; i++) {
		ASSERT_ORDER(&o, &c[i]);
	}
}

/* Many batches through a poller, waited for with submit_and_wait. */
TEST_F(ring, poller_batches)
{
	struct snpu_cqe c[64];
	unsigned int round, i, n;
	struct order o;
	int ret;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 32, SNPU_RING_SQPOLL,
				    &self->ring));
	order_init(&o, 1);
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 32; i++) {
			ASSERT_EQ(0, sqe_nop(&self->ring, self->stream,
					     UD(0, round * 32 + i)));
		}
		/* With a poller: the entries it had not taken yet. */
		ret = snpu_ring_submit_and_wait(&self->ring, 32);
		ASSERT_TRUE(ret >= 0 && ret <= 32)
			TH_LOG("round %u: %d", round, ret);
		n = reap(&self->ring, c, 64);
		ASSERT_EQ(32U, n) TH_LOG("round %u", round);
		for (i = 0; i < n; i++) {
			ASSERT_ORDER(&o, &c[i]);
		}
	}
	EXPECT_EQ(0U, *self->ring.cq.koverflow);
}

/*
 * With a poller, a CQE in the CQ means its SQ entry is free again: the
 * head passed it before the task could complete. One NOP at a time, so
 * that the poller races the reader on every round.
 */
TEST_F_TIMEOUT(ring, poller_cqe_implies_sqe_free, 300)
{
	struct snpu_cqe *cqe;
	unsigned int round;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 4, SNPU_RING_SQPOLL,
				    &self->ring));
	for (round = 0; round < 2000; round++) {
		ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, round));
		ASSERT_LE(0, snpu_ring_submit(&self->ring));
		ASSERT_EQ(0, snpu_ring_wait_cqe(&self->ring, &cqe));
		ASSERT_EQ(round, cqe->user_data);
		ASSERT_EQ(self->ring.sq.sqe_tail,
			  __atomic_load_n(self->ring.sq.khead,
					  __ATOMIC_ACQUIRE))
			TH_LOG("round %u", round);
		snpu_ring_cqe_seen(&self->ring, cqe);
	}
}

/*
 * A poller on a ring whose CQ keeps overflowing. The process reaps only
 * once the CQ is full or completions are parked, so completions park, and
 * the parked ones hold task slots the poller may be waiting for. With
 * @enter, the process then enters (ENTER moves them in and gives their
 * slots back). Without it, the process never enters on its own: it reaps
 * the CQ from memory and submits with snpu_ring_submit(), which enters
 * only when the poller asks to be woken; the poller, waiting for a slot,
 * moves the parked completions in itself once the process has made room.
 * Either way every task completes exactly once, in order.
 */
#define POLL_OV_TASKS	8000

static void poller_overflow(struct __test_metadata *_metadata,
			    FIXTURE_DATA(ring) *self, bool enter)
{
	const struct timespec pause = { .tv_nsec = 100000 };
	struct snpu_cqe c[64];
	unsigned int sent = 0, reaped = 0, i, n;
	struct order o;
	int ret;

	ASSERT_EQ(0, snpu_ring_init_params(self->dev,
		&(struct snpu_ring_setup){ .flags = SNPU_RING_SQPOLL,
					   .sq_entries = 64,
					   .cq_entries = 64 }, &self->ring));
	order_init(&o, 1);
	while (reaped < POLL_OV_TASKS) {
		while (sent < POLL_OV_TASKS &&
		       !sqe_nop(&self->ring, self->stream, UD(0, sent)))
			sent++;
		ret = snpu_ring_submit(&self->ring);
		ASSERT_GE(ret, 0) TH_LOG("submit: %s", strerror(-ret));
		if (sent < POLL_OV_TASKS &&
		    snpu_ring_cq_ready(&self->ring) < self->ring.cq.entries &&
		    !(__atomic_load_n(self->ring.cq.kflags, __ATOMIC_ACQUIRE) &
		      SNPU_CQ_OVERFLOW))
			continue;
		n = reap(&self->ring, c, 64);
		for (i = 0; i < n; i++)
			ASSERT_ORDER(&o, &c[i]);
		reaped += n;
		if (!enter) {
			if (!n)
				nanosleep(&pause, NULL);
		} else if (!n && reaped < POLL_OV_TASKS) {
			/* Flushes what waits for room, else waits. */
			ret = snpu_ring_enter(&self->ring, 0, 1,
					      SNPU_ENTER_GETEVENTS, WAIT_NS);
			ASSERT_EQ(0, ret) TH_LOG("%u of %u reaped: %s", reaped,
						 sent, strerror(-ret));
		} else {
			ASSERT_EQ(0, snpu_ring_enter(&self->ring, 0, 0, 0, 0));
		}
	}
	EXPECT_EQ((uint64_t)POLL_OV_TASKS, o.next[0]);
	if (enter)
		EXPECT_EQ(0U, *self->ring.cq.kflags);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
}

TEST_F_TIMEOUT(ring, poller_overflow_recovery, 60)
{
	poller_overflow(_metadata, self, true);
}

TEST_F_TIMEOUT(ring, poller_overflow_recovery_without_enter, 60)
{
	poller_overflow(_metadata, self, false);
}

/* ---- work through the ring ---------------------------------------------- */

#define ADD_N	4096

TEST_F(ring, launch_add_i32)
{
	static int32_t a[ADD_N], b[ADD_N], out[ADD_N];
	struct snpu_kernel_arg args[3];
	uint64_t da, db, dc, st = 0x9e3779b97f4a7c15ULL;
	const size_t bytes = sizeof(a);
	struct snpu_cqe c;
	struct snpu_task *t;
	unsigned int i;

	for (i = 0; i < ADD_N; i++) {
		st ^= st << 13;
		st ^= st >> 7;
		st ^= st << 17;
		a[i] = (int32_t)st;
		b[i] = (int32_t)(st >> 32);
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, bytes, 0, 0, &da));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, bytes, 0, 0, &db));
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, bytes, 0, 0, &dc));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, da, a, bytes));
	ASSERT_EQ(0, snpu_memcpy_h2d(self->dev, db, b, bytes));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));

	t = GET_SQE(&self->ring);
	args[0] = snpu_arg_buf(dc, bytes);
	args[1] = snpu_arg_buf(da, bytes);
	args[2] = snpu_arg_buf(db, bytes);
	ASSERT_EQ(0, snpu_prep_launch(t, self->stream, SNPU_KERNEL_ADD_I32, 7,
				      args, 3));
	t->user_data = 0xadd;
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, reap_n(&self->ring, &c, 1));
	EXPECT_EQ(0xaddULL, c.user_data);
	ASSERT_EQ(0, c.result);
	ASSERT_EQ(0, snpu_memcpy_d2h(self->dev, out, dc, bytes));
	for (i = 0; i < ADD_N; i++) {
		ASSERT_EQ((int32_t)((uint32_t)a[i] + (uint32_t)b[i]), out[i])
			TH_LOG("element %u", i);
	}
}

/* Queued copies and a memset through the ring, in one batch, in order. */
TEST_F(ring, copy_memset_through_ring)
{
	struct snpu_host_buf hb;
	struct snpu_cqe c[3];
	struct snpu_task *t;
	unsigned char *src, *dst;
	uint64_t dev_buf;
	unsigned int i;

	ASSERT_EQ(0, snpu_host_alloc(self->dev, 8192, &hb));
	src = hb.ptr;
	dst = src + 4096;
	for (i = 0; i < 4096; i++) {
		src[i] = (unsigned char)(i * 7 + 3);
		dst[i] = 0;
	}
	ASSERT_EQ(0, snpu_mem_alloc(self->dev, 4096, 0, 0, &dev_buf));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));

	t = GET_SQE(&self->ring);
	snpu_prep_copy(t, self->stream, SNPU_COPY_H2D, dev_buf,
		       (uintptr_t)src, 4096);
	t->user_data = 1;
	t = GET_SQE(&self->ring);
	snpu_prep_memset(t, self->stream, dev_buf + 1000, 0x5a, 500);
	t->user_data = 2;
	t = GET_SQE(&self->ring);
	snpu_prep_copy(t, self->stream, SNPU_COPY_D2H, (uintptr_t)dst,
		       dev_buf, 4096);
	t->user_data = 3;
	ASSERT_EQ(3, snpu_ring_submit_and_wait(&self->ring, 3));
	ASSERT_EQ(3U, reap(&self->ring, c, 3));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(i + 1ULL, c[i].user_data);
		EXPECT_EQ(0, c[i].result);
		EXPECT_EQ(i + 1ULL, c[i].seq);
	}
	for (i = 0; i < 4096; i++) {
		ASSERT_EQ(i >= 1000 && i < 1500 ? 0x5a : src[i], dst[i])
			TH_LOG("byte %u", i);
	}
	EXPECT_EQ(0, snpu_host_free(self->dev, &hb));
}

/* SNPU_IOC_SUBMIT tasks post no CQE; both paths share the sequence. */
TEST_F(ring, submit_ioctl_posts_no_cqe)
{
	struct snpu_task tasks[5];
	struct snpu_cqe c[2];
	uint64_t seq;
	unsigned int i;

	ASSERT_EQ(0, snpu_ring_init(self->dev, 8, 0, &self->ring));
	for (i = 0; i < 5; i++)
		prep_nop(&tasks[i], self->stream, 1000 + i);
	ASSERT_EQ(0, snpu_submit(self->dev, tasks, 5, &seq));
	EXPECT_EQ(5ULL, seq);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 6));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(1U, snpu_ring_cq_ready(&self->ring));
	ASSERT_EQ(1U, reap(&self->ring, c, 2));
	EXPECT_EQ(6ULL, c[0].user_data);
	EXPECT_EQ(6ULL, c[0].seq);

	ASSERT_EQ(0, snpu_submit(self->dev, tasks, 1, &seq));
	EXPECT_EQ(7ULL, seq);
	ASSERT_EQ(0, sqe_nop(&self->ring, self->stream, 8));
	ASSERT_EQ(1, snpu_ring_submit(&self->ring));
	ASSERT_EQ(0, snpu_stream_synchronize(self->dev, self->stream, -1));
	ASSERT_EQ(1U, reap(&self->ring, c, 2));
	EXPECT_EQ(8ULL, c[0].user_data);
	EXPECT_EQ(8ULL, c[0].seq);
	EXPECT_EQ(0U, snpu_ring_cq_ready(&self->ring));
}

/*
 * Completion times: within [submit, reap], non-decreasing per stream, and
 * one SPIN of 2 ms after the previous task of its stream at least 2 ms
 * later (a spin starts after its predecessor completed).
 */
TEST_F(ring, cqe_time_and_seq)
{
	uint32_t streams[2];
	struct snpu_stream_query q;
	struct snpu_cqe c[10];
	uint64_t t0, t1, prev_spin = 0;
	unsigned int i, s;
	struct order o;

	streams[0] = self->stream;
	ASSERT_EQ(0, snpu_stream_create(self->dev, SNPU_PRIO_NORMAL, 0,
					&streams[1]));
	ASSERT_EQ(0, snpu_ring_init(self->dev, 16, 0, &self->ring));
	t0 = now_ns();
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, sqe_spin(&self->ring, streams[0], 2 * NS_PER_MS,
				      UD(0, i)));
		ASSERT_EQ(0, sqe_nop(&self->ring, streams[1], UD(1, i)));
	}
	ASSERT_EQ(10, snpu_ring_submit_and_wait(&self->ring, 10));
	t1 = now_ns();
	ASSERT_EQ(10U, reap(&self->ring, c, 10));
	order_init(&o, 2);
	for (i = 0; i < 10; i++) {
		ASSERT_ORDER(&o, &c[i]);
		EXPECT_GE(c[i].time_ns, t0);
		EXPECT_LE(c[i].time_ns, t1);
		if (UD_STREAM(c[i].user_data) == 0) {
			if (prev_spin) {
				EXPECT_GE(c[i].time_ns - prev_spin,
					  (uint64_t)(2 * NS_PER_MS));
			}
			prev_spin = c[i].time_ns;
		}
	}
	for (s = 0; s < 2; s++) {
		ASSERT_EQ(0, snpu_stream_query(self->dev, streams[s], &q));
		EXPECT_EQ(5ULL, q.completed);
	}
}

TEST_HARNESS_MAIN
