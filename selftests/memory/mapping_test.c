// SPDX-License-Identifier: GPL-2.0
/*
 * Mappings of the device file against what a process may do to them:
 * mremap() (grow, shrink, move, MREMAP_FIXED, MREMAP_DONTUNMAP), fork()
 * with and without MADV_DOFORK, partial munmap(), mprotect() of all or
 * part, and MADV_DONTNEED. For each kind of mapping (driver host memory,
 * the command queues, the state page) the kernel may refuse the call or
 * carry it out, but the process's own mapping must keep working
 * afterwards (host memory: queued copies from and to it still succeed;
 * rings: a task still goes through them; state page: it still shows the
 * state), and once everything is unmapped and freed, nothing is left
 * charged. A copy of a mapping that the kernel makes and drops (an
 * mremap() target it unmaps again, a child's inherited mapping) must
 * never take the parent's mapping or its reference with it.
 */
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "snpu_test.h"

#define LONG_TIMEOUT	(30 * NS_PER_SEC)
#define HOST_PAGES	4
#define RING_SQ		8

enum { KIND_HOST, KIND_RINGS, KIND_STATE };

FIXTURE(map) {
	int fd;
	long page;
	uint32_t stream;
	uint64_t dev;		/* device memory for the host copies */
	uint32_t host;		/* KIND_HOST: the handle */
	struct snpu_ring_setup rs;
	char *p;		/* the process's own mapping */
	size_t len;
	char *spare;		/* a reserved range to mremap into */
	uint32_t round;
};

FIXTURE_VARIANT(map) {
	int kind;
};

FIXTURE_VARIANT_ADD(map, host) {
	.kind = KIND_HOST,
};

FIXTURE_VARIANT_ADD(map, rings) {
	.kind = KIND_RINGS,
};

FIXTURE_VARIANT_ADD(map, state) {
	.kind = KIND_STATE,
};

FIXTURE_SETUP(map)
{
	uint64_t off = 0;
	int prot = PROT_READ | PROT_WRITE;

	self->page = sysconf(_SC_PAGESIZE);
	self->fd = snpu_open_dev();
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, snpu_stream_create(self->fd, SNPU_PRIO_NORMAL,
					&self->stream));
	switch (variant->kind) {
	case KIND_HOST:
		self->len = HOST_PAGES * self->page;
		ASSERT_EQ(0, snpu_host_alloc(self->fd, self->len, &self->host,
					     &off));
		ASSERT_GE(off, SNPU_HOST_MMAP_OFFSET);
		ASSERT_EQ(0, snpu_alloc(self->fd, self->len, 0, &self->dev));
		break;
	case KIND_RINGS:
		self->rs.size = sizeof(self->rs);
		self->rs.sq_entries = RING_SQ;
		ASSERT_EQ(0, snpu_ioc(self->fd, SNPU_IOC_RING_SETUP, &self->rs));
		ASSERT_EQ(SNPU_RING_MMAP_OFFSET, self->rs.mmap_offset);
		off = self->rs.mmap_offset;
		self->len = self->rs.mmap_bytes;
		break;
	case KIND_STATE:
		off = SNPU_STATE_MMAP_OFFSET;
		self->len = self->page;
		prot = PROT_READ;
		break;
	}
	self->p = mmap(NULL, self->len, prot, MAP_SHARED, self->fd, off);
	ASSERT_NE(MAP_FAILED, self->p);
	self->spare = mmap(NULL, 2 * self->len + 2 * self->page, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->spare);
}

FIXTURE_TEARDOWN(map)
{
	if (self->p)
		munmap(self->p, self->len);
	munmap(self->spare, 2 * self->len + 2 * self->page);
	close(self->fd);
}

/*
 * Host memory works: a pattern written through the mapping goes to the
 * device and comes back into the other half by queued copies.
 */
static int host_works(FIXTURE_DATA(map) *self)
{
	size_t half = self->len / 2, i;
	uint32_t seed = ++self->round * 2654435761u;
	int32_t err = 1;
	int ret;

	for (i = 0; i < half; i++)
		self->p[i] = (char)(seed >> (i % 24));
	memset(self->p + half, 0, half);
	struct snpu_task t[2] = {
		snpu_t_copy(self->stream, SNPU_COPY_H2D, self->dev,
			    (uintptr_t)self->p, half),
		snpu_t_copy(self->stream, SNPU_COPY_D2H,
			    (uintptr_t)self->p + half, self->dev, half),
	};
	ret = snpu_submit(self->fd, t, 2, NULL);
	if (ret)
		return ret;
	ret = snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT, &err);
	if (ret || err)
		return ret ?: err;
	return memcmp(self->p, self->p + half, half) ? -EILSEQ : 0;
}

static uint32_t *ring_word(FIXTURE_DATA(map) *self, uint32_t off)
{
	return (uint32_t *)(self->p + off);
}

/*
 * The rings work: one NOP through the SQ, its CQE in the CQ (read only
 * where the process still maps it).
 */
static int rings_works(FIXTURE_DATA(map) *self)
{
	const struct snpu_ring_setup *rs = &self->rs;
	uint32_t tail, head, cq_tail;
	struct snpu_enter e = { .size = sizeof(e) };
	struct snpu_task *sqe;
	uint64_t ud = 0x5eed0000ULL + ++self->round;
	int ret;

	if (*ring_word(self, rs->sq.entries) != RING_SQ ||
	    *ring_word(self, rs->sq.mask) != RING_SQ - 1)
		return -EILSEQ;
	tail = *ring_word(self, rs->sq.tail);
	sqe = (struct snpu_task *)(self->p + rs->sq.array) +
		(tail & (RING_SQ - 1));
	if ((char *)(sqe + 1) > self->p + self->len)
		return -ERANGE;
	*sqe = snpu_t_nop(self->stream);
	sqe->user_data = ud;
	__atomic_store_n(ring_word(self, rs->sq.tail), tail + 1,
			 __ATOMIC_RELEASE);
	e.flags = SNPU_ENTER_GETEVENTS;
	e.to_submit = 1;
	e.min_complete = 1;
	e.timeout_ns = LONG_TIMEOUT;
	ret = snpu_ioc(self->fd, SNPU_IOC_ENTER, &e);
	if (ret)
		return ret;
	if (e.submitted != 1)
		return -EIO;
	head = *ring_word(self, rs->cq.head);
	cq_tail = __atomic_load_n(ring_word(self, rs->cq.tail),
				  __ATOMIC_ACQUIRE);
	if (cq_tail != head + 1)
		return -EILSEQ;
	if (rs->cq.array + 2 * RING_SQ * sizeof(struct snpu_cqe) <= self->len) {
		struct snpu_cqe *cqe = (struct snpu_cqe *)(self->p +
			rs->cq.array) + (head & (2 * RING_SQ - 1));

		if (cqe->user_data != ud || cqe->result)
			return -EILSEQ;
	}
	__atomic_store_n(ring_word(self, rs->cq.head), head + 1,
			 __ATOMIC_RELEASE);
	return 0;
}

/* The state page works: it shows what SNAPSHOT_STATE reports. */
static int state_works(FIXTURE_DATA(map) *self)
{
	struct snpu_state_page *sp = (struct snpu_state_page *)self->p;
	struct snpu_snapshot s = { .size = sizeof(s) };
	int ret = snpu_ioc(self->fd, SNPU_IOC_SNAPSHOT_STATE, &s);

	if (ret)
		return ret;
	return __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE) == s.state ?
		0 : -EILSEQ;
}

static int works(FIXTURE_DATA(map) *self, int kind)
{
	switch (kind) {
	case KIND_HOST:
		return host_works(self);
	case KIND_RINGS:
		return rings_works(self);
	default:
		return state_works(self);
	}
}

/*
 * Unmap and free: nothing stays charged (a reference taken by a copy of
 * the mapping and never dropped would keep the host memory).
 */
static int released(FIXTURE_DATA(map) *self, int kind)
{
	struct snpu_ctx_query q;
	int ret;

	if (munmap(self->p, self->len))
		return -errno;
	self->p = NULL;
	if (kind == KIND_HOST) {
		ret = snpu_host_free(self->fd, self->host);
		if (ret)
			return ret;
	}
	ret = snpu_ctx_query(self->fd, &q);
	if (ret)
		return ret;
	return q.host_used ? -EBUSY : 0;
}

/* Growing in place or by a move is refused: the size is the object's. */
TEST_F(map, mremap_grow_refused)
{
	void *q;

	ASSERT_EQ(0, works(self, variant->kind));
	q = mremap(self->p, self->len, self->len + self->page, 0);
	EXPECT_EQ(MAP_FAILED, q);
	q = mremap(self->p, self->len, self->len + self->page,
		   MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * Shrinking: host memory stays one whole range (refused); the rings and
 * the state page may shrink, and what is left still works.
 */
TEST_F(map, mremap_shrink)
{
	void *q;

	ASSERT_EQ(0, works(self, variant->kind));
	if (self->len <= (size_t)self->page) {
		/* One page: nothing to shrink to. */
		q = mremap(self->p, self->len, 0, 0);
		EXPECT_EQ(MAP_FAILED, q);
	} else {
		q = mremap(self->p, self->len, self->len - self->page, 0);
		if (variant->kind == KIND_HOST) {
			EXPECT_EQ(MAP_FAILED, q);
		} else {
			ASSERT_EQ(self->p, q);
			munmap(self->p + self->len - self->page, self->page);
			self->len -= self->page;
		}
	}
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * A move to a fixed address: refused for host memory (the kernel makes a
 * copy, the driver refuses it, the kernel unmaps the copy), carried out
 * for the others. Either way the process's mapping works.
 */
TEST_F(map, mremap_fixed_move)
{
	char *dst = self->spare + self->len + self->page;
	void *q;

	ASSERT_EQ(0, works(self, variant->kind));
	q = mremap(self->p, self->len, self->len,
		   MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (variant->kind == KIND_HOST) {
		ASSERT_EQ(MAP_FAILED, q);
		EXPECT_EQ(EINVAL, errno);
	} else {
		ASSERT_EQ(dst, q);
		self->p = dst;
	}
	EXPECT_EQ(0, works(self, variant->kind));
	/* Twice: a second refused copy must not take more than the first. */
	q = mremap(self->p, self->len, self->len,
		   MREMAP_MAYMOVE | MREMAP_FIXED, self->spare);
	if (variant->kind == KIND_HOST) {
		ASSERT_EQ(MAP_FAILED, q);
	} else {
		ASSERT_EQ(self->spare, q);
		self->p = self->spare;
	}
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/* MREMAP_DONTUNMAP: refused (the mappings cannot be expanded or copied). */
TEST_F(map, mremap_dontunmap_refused)
{
	void *q;

	ASSERT_EQ(0, works(self, variant->kind));
	q = mremap(self->p, self->len, self->len,
		   MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * MADV_DOFORK on a mapping of the device has two documented outcomes
 * (Documentation/userspace-api.rst, "Mappings"), and both are
 * the contract:
 * - up to 6.12 the kernel refuses it only for VM_IO mappings, so it
 *   succeeds: host memory, which the driver maps VM_DONTCOPY, is then
 *   inherited by a child like the rings and the state page always are;
 * - 7.x (mm/madvise.c, madvise_vma_behavior()) refuses it with EINVAL for
 *   every mapping with one of the VM_SPECIAL flags (VM_IO, VM_DONTEXPAND,
 *   VM_PFNMAP, VM_MIXEDMAP), and every snpu mapping is VM_DONTEXPAND (its
 *   size is the object's). The mapping is left as it was: a child gets no
 *   host memory, and the rings and state page as without the call.
 * Return: 1 when the kernel did it, 0 when it refused with EINVAL, -errno
 * for any other outcome (a failure).
 */
static int madv_dofork(FIXTURE_DATA(map) *self)
{
	if (!madvise(self->p, self->len, MADV_DOFORK))
		return 1;
	return errno == EINVAL ? 0 : -errno;
}

/*
 * A child runs @kind's check on its inherited mapping. Host memory is
 * inherited only when @inherited (after a MADV_DOFORK the kernel carried
 * out): then the child reads and writes it; otherwise the child checks
 * that the range is not mapped in it at all. Then it exits. Return: the
 * child's exit status.
 */
static int fork_child(FIXTURE_DATA(map) *self, int kind, bool inherited)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		if (kind == KIND_HOST) {
			if (inherited) {
				self->p[0] ^= 1;
				self->p[self->len - 1] ^= 1;
				_exit(0);
			}
			/* madvise() of a range with no mapping: ENOMEM. */
			if (!madvise(self->p, self->len, MADV_NORMAL))
				_exit(4);
			_exit(errno == ENOMEM ? 0 : 5);
		}
		if (kind == KIND_STATE)
			_exit(((volatile struct snpu_state_page *)self->p)->state ==
			      SNPU_STATE_RUNNING ? 0 : 1);
		_exit(works(self, kind) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* fork(): the child's exit leaves the parent's mapping working. */
TEST_F(map, fork_child_exits)
{
	ASSERT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, fork_child(self, variant->kind, false));
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * MADV_DOFORK, then fork(): where the kernel carries it out, the child
 * inherits even host memory, and its copy holds a reference of its own
 * and never unpublishes the parent's; where it refuses (7.x, see
 * madv_dofork()), the child has no host memory and the parent's mapping
 * is unchanged. Either way the parent's mapping works after each child.
 */
TEST_F(map, madv_dofork_child_exits)
{
	int done;

	ASSERT_EQ(0, works(self, variant->kind));
	done = madv_dofork(self);
	ASSERT_LE(0, done);
	EXPECT_EQ(0, fork_child(self, variant->kind, done));
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, fork_child(self, variant->kind, done));
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * The parent unmaps first; the child's copy keeps the memory alive. Where
 * the kernel refuses MADV_DOFORK (7.x, see madv_dofork()), the child has
 * no host memory, and its rings or state page still read after the
 * parent let go; either way nothing stays charged once both are gone.
 */
TEST_F(map, madv_dofork_parent_unmaps_first)
{
	struct snpu_ctx_query q;
	int pipefd[2], status, done;
	char c = 0;
	pid_t pid;

	done = madv_dofork(self);
	ASSERT_LE(0, done);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(2);
		if (variant->kind == KIND_HOST && !done) {
			/* Not inherited: no mapping at all in the child. */
			if (!madvise(self->p, self->len, MADV_NORMAL))
				_exit(4);
			_exit(errno == ENOMEM ? 0 : 5);
		}
		/* Still readable after the parent let go. */
		c = self->p[self->len - 1];
		_exit(c == 0x5a || variant->kind != KIND_HOST ? 0 : 3);
	}
	close(pipefd[0]);
	if (variant->kind == KIND_HOST)
		self->p[self->len - 1] = 0x5a;
	ASSERT_EQ(0, munmap(self->p, self->len));
	self->p = NULL;
	if (variant->kind == KIND_HOST)
		ASSERT_EQ(0, snpu_host_free(self->fd, self->host));
	ASSERT_EQ(1, write(pipefd[1], &c, 1));
	close(pipefd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The child's exit dropped the last reference. */
	ASSERT_EQ(0, snpu_ctx_query(self->fd, &q));
	EXPECT_EQ(0U, q.host_used);
}

/* Unmapping a part: refused for host memory; the rest works. */
TEST_F(map, munmap_part)
{
	int ret;

	ASSERT_EQ(0, works(self, variant->kind));
	if (self->len <= (size_t)self->page) {
		/* One page: a part is the whole; unmap and map again. */
		ASSERT_EQ(0, munmap(self->p, self->len));
		self->p = mmap(NULL, self->len, PROT_READ, MAP_SHARED,
			       self->fd, SNPU_STATE_MMAP_OFFSET);
		ASSERT_NE(MAP_FAILED, self->p);
	} else {
		/* The last page: the CQ of the rings, the tail of host memory. */
		ret = munmap(self->p + self->len - self->page, self->page);
		if (variant->kind == KIND_HOST) {
			EXPECT_EQ(-1, ret);
			EXPECT_EQ(EINVAL, errno);
		} else {
			EXPECT_EQ(0, ret);
			self->len -= self->page;
		}
	}
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/* mprotect() of the whole mapping, read-only and back. */
TEST_F(map, mprotect_whole)
{
	int rw = variant->kind == KIND_STATE ? PROT_READ :
		PROT_READ | PROT_WRITE;

	ASSERT_EQ(0, works(self, variant->kind));
	ASSERT_EQ(0, mprotect(self->p, self->len, PROT_READ));
	ASSERT_EQ(0, mprotect(self->p, self->len, rw));
	EXPECT_EQ(0, works(self, variant->kind));
	if (variant->kind == KIND_STATE) {
		/* Never writable. */
		EXPECT_EQ(-1, mprotect(self->p, self->len,
				       PROT_READ | PROT_WRITE));
		EXPECT_EQ(EACCES, errno);
	}
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * mprotect() of one page: refused for host memory (it would split the
 * mapping); the rings split and both parts keep working. The state page
 * is one page: its part is the whole.
 */
TEST_F(map, mprotect_part)
{
	int ret;

	ASSERT_EQ(0, works(self, variant->kind));
	if (variant->kind == KIND_STATE) {
		EXPECT_EQ(0, mprotect(self->p, self->page, PROT_NONE));
		EXPECT_EQ(0, mprotect(self->p, self->page, PROT_READ));
		EXPECT_EQ(0, works(self, variant->kind));
		EXPECT_EQ(0, released(self, variant->kind));
		return;
	}
	ret = mprotect(self->p + self->page, self->page, PROT_READ);
	if (variant->kind == KIND_HOST) {
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(EINVAL, errno);
	} else {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, mprotect(self->p + self->page, self->page,
				      PROT_READ | PROT_WRITE));
	}
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/* MADV_DONTNEED drops the pages; the next access finds the same memory. */
TEST_F(map, madv_dontneed)
{
	ASSERT_EQ(0, works(self, variant->kind));
	if (variant->kind == KIND_HOST)
		self->p[7] = 0x77;
	ASSERT_EQ(0, madvise(self->p, self->len, MADV_DONTNEED));
	if (variant->kind == KIND_HOST)
		EXPECT_EQ(0x77, self->p[7]);	/* shared: not zeroed */
	EXPECT_EQ(0, works(self, variant->kind));
	ASSERT_EQ(0, madvise(self->p, self->len, MADV_DONTNEED));
	EXPECT_EQ(0, works(self, variant->kind));
	EXPECT_EQ(0, released(self, variant->kind));
}

/*
 * Host memory only: copies queued before a refused move and a child's
 * exit complete against the process's mapping. The child inherits the
 * mapping where the kernel carries out MADV_DOFORK and does not where it
 * refuses it (7.x, see madv_dofork()): the queued copies complete either
 * way.
 */
TEST_F(map, queued_copies_survive_copies_of_the_mapping)
{
	char *dst = self->spare + self->page;
	int32_t err = 1;
	int done;
	void *q;

	if (variant->kind != KIND_HOST) {
		/* The other kinds hold no reference: nothing queued uses them. */
		ASSERT_EQ(0, works(self, variant->kind));
		return;
	}
	struct snpu_task t[3] = {
		snpu_t_host_func(self->stream, 1),
		snpu_t_copy(self->stream, SNPU_COPY_H2D, self->dev,
			    (uintptr_t)self->p, self->len),
		snpu_t_copy(self->stream, SNPU_COPY_D2H, (uintptr_t)self->p,
			    self->dev, self->len),
	};
	memset(self->p, 0x3c, self->len);
	ASSERT_EQ(0, snpu_submit(self->fd, t, 3, NULL));
	q = mremap(self->p, self->len, self->len,
		   MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	EXPECT_EQ(MAP_FAILED, q);
	done = madv_dofork(self);
	ASSERT_LE(0, done);
	EXPECT_EQ(0, fork_child(self, KIND_HOST, done));
	/* New tasks may still name the range. */
	EXPECT_EQ(0, snpu_submit1(self->fd, snpu_t_copy(self->stream,
			SNPU_COPY_H2D, self->dev, (uintptr_t)self->p,
			self->page)));
	ASSERT_EQ(0, snpu_callback_answer(self->fd, LONG_TIMEOUT, 0, NULL));
	ASSERT_EQ(0, snpu_stream_sync(self->fd, self->stream, LONG_TIMEOUT,
				      &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0, works(self, KIND_HOST));
	EXPECT_EQ(0, released(self, KIND_HOST));
}

TEST_HARNESS_MAIN
